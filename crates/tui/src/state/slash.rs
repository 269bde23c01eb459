//! What a sent message or a slash command does.

use super::super::cells::{CellKind, NoticeLevel};
use super::super::commands::{self, CommandId};
use super::super::info::Info;
use super::{AppState, Effect};
use pablo_protocol::{Op, RestoreScope, Subtask, WorkMode};

/// `/model PROVIDER/NAME` names a provider only when the part before the slash is one pablo
/// speaks (model names such as `meta-llama/Llama-3` have slashes of their own).
fn split_model_choice(text: &str) -> (Option<&str>, &str) {
    match text.split_once('/') {
        Some((p, m)) if matches!(p, "openai" | "anthropic" | "ollama") && !m.is_empty() => {
            (Some(p), m)
        }
        _ => (None, text),
    }
}

impl AppState {
    /// Sends a user turn, or runs a slash command.
    pub(crate) fn submit(&mut self, text: String) {
        // A message typed while a turn runs waits, in sight, for it to end; a built-in command
        // acts now.
        let builtin = text
            .strip_prefix('/')
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|name| commands::find(name).is_some());
        if !builtin && (self.turns.running || self.turns.sent) {
            self.turns.queued.push(text);
            return;
        }
        if let Some(rest) = text.strip_prefix('/') {
            let mut parts = rest.split_whitespace();
            let name = parts.next().unwrap_or("");
            let args: Vec<&str> = parts.collect();
            // `/SERVER:PROMPT`: the agent runs the server's prompt and sends its text.
            if let Some((server, _)) = name.split_once(':')
                && self.mcp.iter().any(|s| s.name == server)
            {
                self.turns.sent = true;
                self.outbox.push(Op::user_turn(text));
                self.transcript.scroll_to_bottom();
                return;
            }
            if let Some(cmd) = commands::find(name) {
                self.run_command(cmd.id, &args);
            } else if let Some(custom) = self.composer.custom.iter().find(|c| c.name == name) {
                let rest = rest[name.len()..].trim();
                self.turns.sent = true;
                self.outbox.push(Op::user_turn(custom.expand(rest)));
                self.transcript.scroll_to_bottom();
            } else {
                self.notice(
                    NoticeLevel::Error,
                    format!("unknown command /{name}; /help lists the commands"),
                );
            }
            return;
        }
        self.turns.sent = true;
        self.outbox.push(Op::user_turn(text));
        self.transcript.scroll_to_bottom();
    }

    /// The queued messages go back into the composer, before what is typed there, to be
    /// edited and sent by hand; true when there were any.
    pub(super) fn take_back_queued(&mut self) -> bool {
        if self.turns.queued.is_empty() {
            return false;
        }
        let mut parts = std::mem::take(&mut self.turns.queued);
        let typed = self.composer.text().to_string();
        if !typed.is_empty() {
            parts.push(typed);
        }
        self.composer.set_text(&parts.join("\n"));
        true
    }

    /// The turn ended: the next queued message goes when it ended by itself; after an
    /// interrupt or a failure they wait in the composer instead.
    pub(super) fn release_queued(&mut self, ended_by_itself: bool) {
        if self.from_replay || self.turns.queued.is_empty() {
            return;
        }
        if ended_by_itself {
            let next = self.turns.queued.remove(0);
            self.submit(next);
        } else if self.take_back_queued() {
            self.notice(
                NoticeLevel::Info,
                "the turn did not finish, so your queued messages were not sent: they are back \
                 in the composer",
            );
        }
    }

    fn run_command(&mut self, id: CommandId, args: &[&str]) {
        let arg = args.first().copied();
        match id {
            CommandId::Help => {
                let custom = self.composer.custom.clone();
                self.transcript.push(CellKind::Info(Info::Help { custom }));
            }
            CommandId::Todo => self.plan.toggled = !self.plan.toggled,
            CommandId::Sessions => self.open_sessions(),
            CommandId::Ps => {
                let info = Info::Background {
                    sessions: self.background.sessions.clone(),
                    wall_ms: self.clock.wall_ms,
                };
                self.transcript.push(CellKind::Info(info));
            }
            CommandId::Kill => match arg {
                Some(id) => self.outbox.push(Op::KillSession {
                    session_id: id.to_string(),
                }),
                None => self.notice(NoticeLevel::Error, "/kill needs a session id (see /ps)"),
            },
            // Reading the journal directory is the loop's to do; it answers with
            // `open_resume` (or `sessions_unavailable`).
            CommandId::Resume => self.effects.push(Effect::ListSavedSessions),
            CommandId::Rules => match args {
                [] | ["list"] => self.outbox.push(Op::ListRules),
                ["remove", id] => self.outbox.push(Op::RemoveRule {
                    id: (*id).to_string(),
                }),
                _ => self.notice(
                    NoticeLevel::Error,
                    "usage: /rules, or /rules remove ID (the ids are listed by /rules)",
                ),
            },
            CommandId::Artifacts => self.outbox.push(Op::ListArtifacts),
            CommandId::Memory => match args {
                [] | ["list"] => self.outbox.push(Op::ListMemory),
                [verb @ ("accept" | "dismiss"), id] => self.outbox.push(Op::ResolveMemory {
                    proposal_id: (*id).to_string(),
                    accept: *verb == "accept",
                }),
                _ => self.notice(
                    NoticeLevel::Error,
                    "usage: /memory, or /memory accept ID, or /memory dismiss ID",
                ),
            },
            CommandId::Undo => self.outbox.push(Op::PlanRestore {
                scope: RestoreScope::Undo { turns: 1 },
            }),
            CommandId::Rewind => self.outbox.push(Op::ListCheckpoints),
            CommandId::Diff => self.outbox.push(Op::PlanRestore {
                scope: RestoreScope::Session { path: None },
            }),
            CommandId::Mcp => {
                let servers = self.mcp.clone();
                self.transcript.push(CellKind::Info(Info::Mcp { servers }));
            }
            CommandId::Skills => {
                let skills = self.skills.clone();
                self.transcript
                    .push(CellKind::Info(Info::Skills { skills }));
            }
            CommandId::Status => {
                let report = self.status_report();
                self.transcript.push(CellKind::Info(Info::Status(Box::new(report))));
            }
            CommandId::Review => {
                self.outbox.push(Op::Subtask {
                    task: Subtask::Review {
                        base: arg.map(str::to_string),
                    },
                });
                self.transcript.scroll_to_bottom();
            }
            CommandId::Init => {
                self.outbox.push(Op::Subtask {
                    task: Subtask::Init,
                });
                self.transcript.scroll_to_bottom();
            }
            CommandId::Export => {
                let session_id = self.status.session_id.clone();
                let path = arg.map(str::to_string);
                let dir = self.workspace_dir.clone();
                self.effects.push(Effect::Export {
                    session_id,
                    path,
                    dir,
                });
            }
            CommandId::Fork => match arg.map(str::parse::<u32>) {
                Some(Err(_)) => self.notice(
                    NoticeLevel::Error,
                    "usage: /fork, or /fork TURN (a turn number: the new session holds turns 1 to TURN)",
                ),
                turn => {
                    let session_id = self.status.session_id.clone();
                    let turn = turn.and_then(Result::ok);
                    self.effects.push(Effect::Fork { session_id, turn });
                }
            },
            CommandId::Model => self.model_command(arg),
            CommandId::Mode => self.mode_command(arg),
            CommandId::Vim => self.vim_command(),
            CommandId::Compact => {
                if self.turns.running {
                    self.notice(
                        NoticeLevel::Error,
                        "/compact runs between turns: wait for this one to end (or interrupt it)",
                    );
                } else {
                    let focus = args.join(" ");
                    self.outbox.push(Op::Compact {
                        focus: (!focus.is_empty()).then_some(focus),
                    });
                    self.notice(NoticeLevel::Info, "compacting the conversation…");
                }
            }
            CommandId::Copy => {
                if let Some(answer) = self.transcript.last_answer().map(str::to_string) {
                    let n = answer.chars().count();
                    self.effects.push(Effect::Copy(answer));
                    self.notice(
                        NoticeLevel::Info,
                        format!("copied the last answer ({n} characters) with OSC 52; a terminal that refuses clipboard writes ignores it"),
                    );
                } else {
                    self.notice(NoticeLevel::Error, "nothing to copy: no answer yet");
                }
            }
            // Inline, the conversation on screen moves up into the scrollback (which stays);
            // full screen, the transcript view starts empty. The conversation itself is kept.
            CommandId::Clear if self.screen.inline => self.effects.push(Effect::ClearScreen),
            CommandId::Clear => {
                self.transcript.clear();
                self.turns.cells.clear();
            }
            CommandId::Quit => self.quit_command(),
            // The screen closes and a fresh session opens in the same workspace; this one stays
            // saved (when anything was said in it) and resumable.
            CommandId::New => {
                self.exit.new_session = true;
                self.exit.quit = true;
            }
        }
    }

    /// `/quit`: at once, unless background sessions run, which end with pablo: then it says so
    /// first, and a second `/quit` confirms.
    fn quit_command(&mut self) {
        if let Some(running) = self.background_warning()
            && !self.exit.quit_warned
        {
            self.exit.quit_warned = true;
            self.notice(
                NoticeLevel::Warning,
                format!("{running}: /quit again to quit anyway (/ps lists them)"),
            );
            return;
        }
        self.exit.quit = true;
    }

    /// `1 background session is running and ends when pablo quits`, when any runs.
    pub(super) fn background_warning(&self) -> Option<String> {
        match self.background.running() {
            0 => None,
            1 => Some("1 background session is running and ends when pablo quits".into()),
            n => Some(format!(
                "{n} background sessions are running and end when pablo quits"
            )),
        }
    }

    /// `/model` shows the model; `/model NAME` (or `PROVIDER/NAME`) switches from the next turn.
    fn model_command(&mut self, arg: Option<&str>) {
        match arg {
            None => self.effects.push(Effect::OpenModelPicker),
            Some(name) => {
                let (provider, model) = split_model_choice(name);
                self.outbox.push(Op::SetModel {
                    model: model.to_string(),
                    provider: provider.map(str::to_string),
                });
            }
        }
    }

    /// `/vim`: vim keys in the composer, on or off, for this screen (`[tui] vim = true` starts
    /// with them).
    fn vim_command(&mut self) {
        let on = self.composer.vim().is_none();
        self.composer.set_vim(on);
        self.notice(
            NoticeLevel::Info,
            if on {
                "vim mode on: esc for normal mode, i to type again; enter sends in both modes; \
                 /vim turns it off"
            } else {
                "vim mode off"
            },
        );
    }

    /// `/mode` shows the mode; `/mode NAME` sets it.
    fn mode_command(&mut self, arg: Option<&str>) {
        match arg.map(WorkMode::parse) {
            None => self.notice(
                NoticeLevel::Info,
                format!(
                    "{} mode (ask, auto-edit or plan; shift-tab cycles)",
                    self.status.mode.name()
                ),
            ),
            Some(Some(mode)) => self.outbox.push(Op::SetMode { mode }),
            Some(None) => self.notice(
                NoticeLevel::Error,
                format!(
                    "unknown mode {}: the modes are ask, auto-edit and plan",
                    arg.unwrap_or_default()
                ),
            ),
        }
    }
}

impl AppState {
    /// `/status`: what the session runs on and has spent, as of now.
    pub(super) fn status_report(&self) -> super::super::info::StatusReport {
        super::super::info::StatusReport {
            session_id: self.status.session_id.clone(),
            resume_command: self.status.resume_command.clone(),
            provider: self.status.provider.clone(),
            model: self.status.model.clone(),
            context: self.status.context,
            usage: self.usage(),
            turns: self.turns.count,
            cost_usd: self.status.cost_usd,
            mode: self.status.mode,
            authority: self.status.policy_mode.clone(),
            mcp: self.mcp.clone(),
            lsp: self.lsp.clone(),
            workspace: self.status.workspace.clone(),
        }
    }

    /// The loop wrote the export (or could not).
    pub(crate) fn exported(&mut self, result: Result<String, String>) {
        match result {
            Ok(path) => self.notice(NoticeLevel::Info, format!("session exported to {path}")),
            Err(why) => self.notice(NoticeLevel::Error, format!("cannot export: {why}")),
        }
    }

    /// The fork exists: the screen closes and reopens on it (this session stays resumable).
    pub(crate) fn forked_to(&mut self, result: Result<String, String>) {
        match result {
            Ok(id) => {
                self.exit.forked_from = Some(self.status.session_id.clone());
                self.exit.resume_requested = Some(id);
                self.exit.quit = true;
            }
            Err(why) => self.notice(NoticeLevel::Error, format!("cannot fork: {why}")),
        }
    }
}
