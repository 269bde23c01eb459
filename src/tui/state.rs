//! The TUI's state and how events and keys change it.
//!
//! Nothing here draws or does I/O: agent [`Event`]s and terminal keys go in; the state changes and
//! queues what must leave it (ops for the agent in `outbox`, terminal effects in `effects`). The
//! app loop owns one `AppState`, feeds it, and draws it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Span};

use super::cells::{CellKind, NoticeLevel, ToolCell, ToolStatus};
use super::commands::{self, CommandId};
use super::composer::{Composer, ComposerAction};
use super::layers::{
    ApprovalView, ArtifactsView, Intent, Layer, MemoryView, ResumeView, SessionsView,
};
use super::restore::{self, RestoreView, RewindView};
use super::text::Output;
use super::theme;
use super::transcript::Transcript;
use crate::core::ErrorCode;
use crate::protocol::describe::ResultFact;
use crate::protocol::{
    ApprovalAnswer, ArtifactSummary, CustomCommand, Event, McpServerView, McpState, MemoryProposal,
    MemoryStatus, Op, PlanItem, PlanStatus, Preview, RestoreAction, RestoreReport, RestoreScope,
    RuleSummary, SessionSummary, StopReason, Usage, WorkMode,
};

/// Side effects on the terminal that only the loop can perform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Bell,
    MouseCapture(bool),
    /// Hand the terminal to `$PAGER` on this file, then take it back.
    OpenPager(String),
    /// Ctrl-G: open the draft in the person's editor.
    EditDraft,
    /// A desktop notification (OSC 9 / OSC 777), sent only while the terminal is not focused.
    Notify(String),
    /// Put text on the clipboard (OSC 52).
    Copy(String),
}

/// Facts for the status line.
#[derive(Debug, Clone, Default)]
pub struct StatusInfo {
    pub session_id: String,
    pub provider: String,
    pub model: String,
    pub workspace: String,
    pub policy_mode: String,
    /// The working mode in force (Shift-Tab switches it).
    pub mode: crate::protocol::WorkMode,
    /// The command that resumes this session (shown by `/resume` and printed on exit).
    pub resume_command: Option<String>,
    /// Tokens of the last request and the model's window, once a call reported them.
    pub context: Option<(u64, u64)>,
    /// What the session has cost, when the model's prices are known.
    pub cost_usd: Option<f64>,
}

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

/// How long a first Ctrl-C on an idle prompt stays armed.
const QUIT_WINDOW: Duration = Duration::from_secs(2);

#[derive(Debug)]
pub struct AppState {
    pub transcript: Transcript,
    pub composer: Composer,
    pub layers: Vec<Layer>,
    pub plan: Vec<PlanItem>,
    pub plan_explanation: Option<String>,
    /// Flips the default visibility of the checklist (side panel shown, strip collapsed).
    pub todo_toggled: bool,
    pub sessions: Vec<SessionSummary>,
    pub session_output: HashMap<String, Output>,
    pub status: StatusInfo,
    pub usage: Usage,
    pub turn_running: bool,
    pub turns: u64,
    pub mouse_capture: bool,
    /// The clock used for spinners and elapsed times (set by the loop; fixed in tests).
    pub now: Instant,
    /// Wall clock in Unix milliseconds (session runtimes).
    pub wall_ms: u64,
    pub started: Instant,
    quit_armed: Option<Instant>,
    pub hint: Option<String>,
    pub quit: bool,
    pub shutdown_complete: bool,
    pub outbox: Vec<Op>,
    pub effects: Vec<Effect>,
    /// The workspace directory (which saved sessions `/resume` offers).
    pub workspace_dir: Option<std::path::PathBuf>,
    /// A saved session picked in `/resume`: the TUI closes so the caller can resume it.
    pub resume_requested: Option<String>,
    /// The transcript cell of each prompt, by turn number (a rewind cuts the transcript there).
    turn_cells: Vec<(u64, usize)>,
    /// `[tui] notifications`.
    pub notifications: crate::protocol::Notifications,
    /// The terminal window has the focus (as its focus events say; true until one says not).
    pub focused: bool,
    /// Inline: the whole transcript, expanded, on the alternate screen (ctrl-o).
    pub transcript_overlay: bool,
    /// Inline mode: finished cells live in the terminal's scrollback; the view draws only the live
    /// part (see `tui::inline`). Off in the full-screen (`--alt-screen`) mode.
    pub inline: bool,
    /// The session's MCP servers as last reported, by name.
    pub mcp: Vec<McpServerView>,
    /// The error that ended the session, when the agent stopped by itself (a required MCP
    /// server failed): printed after the screen is given back.
    pub fatal: Option<String>,
    /// Reasoning deltas arrived for the model call in progress.
    live_reasoning: bool,
}

impl AppState {
    pub fn new(now: Instant) -> Self {
        Self {
            transcript: Transcript::default(),
            composer: Composer::default(),
            layers: Vec::new(),
            plan: Vec::new(),
            plan_explanation: None,
            todo_toggled: false,
            sessions: Vec::new(),
            session_output: HashMap::new(),
            status: StatusInfo::default(),
            usage: Usage::default(),
            turn_running: false,
            turns: 0,
            mouse_capture: false,
            now,
            wall_ms: 0,
            started: now,
            quit_armed: None,
            hint: None,
            quit: false,
            shutdown_complete: false,
            outbox: Vec::new(),
            effects: Vec::new(),
            workspace_dir: None,
            resume_requested: None,
            turn_cells: Vec::new(),
            notifications: Default::default(),
            focused: true,
            transcript_overlay: false,
            inline: false,
            mcp: Vec::new(),
            fatal: None,
            live_reasoning: false,
        }
    }

    /// Gets the person's attention: an approval rings the bell even while they look (as it always
    /// did); a finished turn only when they are elsewhere. `desktop` adds a notification when the
    /// terminal is not focused.
    fn alert(&mut self, always_ring: bool, message: &str) {
        use crate::protocol::Notifications;
        if self.notifications == Notifications::Off || (!always_ring && self.focused) {
            return;
        }
        self.effects.push(Effect::Bell);
        if self.notifications == Notifications::Desktop && !self.focused {
            self.effects.push(Effect::Notify(message.to_string()));
        }
    }

    /// Appends a streamed piece to the last cell when it is still streaming text of that kind
    /// (reasoning or the answer); false when a new cell must start.
    fn append_streaming(&mut self, reasoning: bool, piece: &str) -> bool {
        let Some(cell) = self.transcript.last_mut() else {
            return false;
        };
        match &mut cell.kind {
            CellKind::Reasoning {
                text,
                streaming: true,
            } if reasoning => text.push_str(piece),
            CellKind::Assistant {
                text,
                streaming: true,
            } if !reasoning => text.push_str(piece),
            _ => return false,
        }
        cell.touch();
        true
    }

    /// The editor could not take the draft (it stays in the composer).
    pub fn editor_failed(&mut self, e: &super::editor::EditorError) {
        let code = crate::core::Coded::code(e);
        self.notice(NoticeLevel::Error, format!("{code}: {e}"));
    }

    pub fn editor_unavailable(&mut self, why: &str) {
        self.notice(NoticeLevel::Error, format!("editor_unavailable: {why}"));
    }

    /// Installs the person's slash commands (popup, `/help`, dispatch).
    pub fn set_custom_commands(&mut self, commands: Vec<CustomCommand>) {
        self.composer.custom = commands;
    }

    /// Whether the screen belongs to a full-screen overlay (pickers, the full diff), which inline
    /// mode shows on the alternate screen.
    pub fn wants_full_screen(&self) -> bool {
        (self.inline && self.transcript_overlay)
            || self.layers.iter().any(|l| match l {
                Layer::Approval(v) => v.fullscreen,
                // The artifact and memory pickers are overlays too: in inline mode they take the
                // alternate screen, as the other pickers do, and give it back when they close.
                Layer::Sessions(_)
                | Layer::Resume(_)
                | Layer::Artifacts(_)
                | Layer::Memory(_)
                | Layer::Rewind(_)
                | Layer::Restore(_) => true,
            })
    }

    /// Whether something on screen moves by itself (spinners), so frames must keep coming.
    pub fn is_animating(&self) -> bool {
        self.turn_running || self.transcript.has_live_cells()
    }

    fn finish_streaming(&mut self) {
        if let Some(cell) = self.transcript.last_mut()
            && let CellKind::Assistant { streaming, .. } | CellKind::Reasoning { streaming, .. } =
                &mut cell.kind
            && *streaming
        {
            *streaming = false;
            cell.touch();
        }
    }

    /// A warning in the transcript, for what the loop itself could not do.
    pub fn warn(&mut self, text: impl Into<String>) {
        self.notice(NoticeLevel::Warning, text);
    }

    /// Whether the last cell is reasoning that is still streaming.
    fn reasoning_streaming(&mut self) -> bool {
        matches!(
            self.transcript.last_mut().map(|c| &c.kind),
            Some(CellKind::Reasoning {
                streaming: true,
                ..
            })
        )
    }

    fn notice(&mut self, level: NoticeLevel, text: impl Into<String>) {
        self.transcript.push(CellKind::Notice {
            level,
            text: text.into(),
        });
    }

    pub fn apply(&mut self, event: Event) {
        match event {
            Event::SessionStarted {
                session_id,
                provider,
                model,
                workspace,
            } => {
                self.status.session_id = session_id;
                self.status.provider = provider;
                self.status.model = model;
                if self.status.workspace.is_empty() {
                    self.status.workspace = workspace;
                }
            }
            Event::UserMessage { text } => {
                self.finish_streaming();
                let cell = self.transcript.push(CellKind::User(text));
                self.turn_running = true;
                self.turns += 1;
                self.turn_cells.push((self.turns, cell));
                self.transcript.scroll_to_bottom();
            }
            Event::ReasoningDelta { text } => {
                if !self.append_streaming(true, &text) {
                    self.finish_streaming();
                    self.transcript.push(CellKind::Reasoning {
                        text,
                        streaming: true,
                    });
                }
                self.live_reasoning = true;
            }
            Event::ReasoningCompleted { blocks } => {
                // Live, the reasoning has streamed in already; from a journal (resume) it has
                // not, and the cell is made here.
                if self.live_reasoning {
                    if self.reasoning_streaming() {
                        self.finish_streaming();
                    }
                } else {
                    let text = crate::protocol::reasoning_text(&blocks);
                    if !text.is_empty() {
                        self.finish_streaming();
                        self.transcript.push(CellKind::Reasoning {
                            text,
                            streaming: false,
                        });
                    }
                }
                self.live_reasoning = false;
            }
            Event::MessageDelta { text } => {
                if self.reasoning_streaming() {
                    self.finish_streaming();
                }
                if !self.append_streaming(false, &text) {
                    self.transcript.push(CellKind::Assistant {
                        text,
                        streaming: true,
                    });
                }
            }
            Event::MessageCompleted { text, .. } => {
                self.live_reasoning = false;
                if self.reasoning_streaming() {
                    self.finish_streaming();
                }
                let replaced = match self.transcript.last_mut() {
                    Some(cell) => match &mut cell.kind {
                        CellKind::Assistant {
                            text: t,
                            streaming: s @ true,
                        } => {
                            *t = text.clone();
                            *s = false;
                            cell.touch();
                            true
                        }
                        _ => false,
                    },
                    None => false,
                };
                if !replaced && !text.trim().is_empty() {
                    self.transcript.push(CellKind::Assistant {
                        text,
                        streaming: false,
                    });
                }
            }
            Event::ToolCallBegin {
                call_id,
                tool,
                arguments,
            } => {
                self.finish_streaming();
                self.transcript.push(CellKind::Tool(Box::new(ToolCell::new(
                    call_id, tool, &arguments, self.now,
                ))));
            }
            Event::ApprovalRequest {
                call_id,
                tool,
                preview,
                verdict,
            } => {
                let mut summary = String::new();
                if let Some(t) = self.transcript.tool_mut(&call_id) {
                    t.status = ToolStatus::AwaitingApproval;
                    summary = t.summary.clone();
                }
                self.layers.push(Layer::Approval(Box::new(ApprovalView::new(
                    call_id, tool.clone(), summary, preview, verdict,
                ))));
                self.alert(true, &format!("pablo: {tool} waits for your approval"));
            }
            Event::ApprovalResolved { call_id, answer } => {
                // The saved rule itself is listed by `/rules`, which asks the policy store.
                self.take_approval(&call_id);
                if let Some(t) = self.transcript.tool_mut(&call_id) {
                    t.status = match answer {
                        ApprovalAnswer::Reject { .. } => ToolStatus::Rejected,
                        _ => ToolStatus::Pending,
                    };
                }
            }
            Event::ToolCallRunning { call_id, preview } => {
                let now = self.now;
                if let Some(t) = self.transcript.tool_mut(&call_id) {
                    t.status = ToolStatus::Running;
                    t.running_since = Some(now);
                    if let Preview::Command(c) = &preview {
                        t.output = Some(if c.pty { Output::pty() } else { Output::pipe() });
                    }
                    t.preview = Some(preview);
                }
            }
            Event::ToolOutputDelta { call_id, chunk } => {
                if let Some(t) = self.transcript.tool_mut(&call_id) {
                    t.output.get_or_insert_with(Output::pipe).push(&chunk);
                }
            }
            Event::ToolCallEnd {
                call_id, result, ..
            } => {
                self.take_approval(&call_id);
                let now = self.now;
                if let Some(t) = self.transcript.tool_mut(&call_id) {
                    t.status = match result.error_code() {
                        None => ToolStatus::Done,
                        Some(code) if code == ErrorCode::Rejected => ToolStatus::Rejected,
                        Some(_) => ToolStatus::Failed,
                    };
                    t.elapsed = t.running_since.map(|s| now.saturating_duration_since(s));
                    match t.finish(result) {
                        Some(ResultFact::ArtifactSaved) => {
                            self.hint =
                                Some("/artifacts lists the saved files and opens one".into());
                        }
                        Some(ResultFact::MemoryProposed { proposal_id: id }) => {
                            let text = format!(
                                "the model proposed a memory ({id}); it stays inactive unless \
                                 you accept it: /memory to review"
                            );
                            self.notice(NoticeLevel::Info, text);
                        }
                        None => {}
                    }
                }
            }
            Event::PlanUpdate { explanation, items } => {
                self.plan = items;
                self.plan_explanation = explanation;
            }
            Event::Usage { total, .. } => self.usage = total,
            Event::ContextUsage {
                used_tokens,
                window_tokens,
                cost_usd,
            } => {
                self.status.context = Some((used_tokens, window_tokens));
                if cost_usd.is_some() {
                    self.status.cost_usd = cost_usd;
                }
            }
            Event::ContextCleared {
                cleared,
                tokens_before,
                tokens_after,
            } => self.notice(
                NoticeLevel::Info,
                format!(
                    "{} old tool result{} cleared to fit the context window (~{tokens_before} → ~{tokens_after} tokens)",
                    cleared.len(),
                    if cleared.len() == 1 { " was" } else { "s were" }
                ),
            ),
            Event::SessionOutput { session_id, chunk } => {
                let pty = self
                    .sessions
                    .iter()
                    .find(|s| s.session_id == session_id)
                    .is_some_and(|s| s.pty);
                self.session_output
                    .entry(session_id)
                    .or_insert_with(|| if pty { Output::pty() } else { Output::pipe() })
                    .push(&chunk);
            }
            Event::SessionExited {
                session_id,
                exit_code,
            } => {
                if let Some(s) = self
                    .sessions
                    .iter_mut()
                    .find(|s| s.session_id == session_id)
                {
                    s.running = false;
                    s.exit_code = exit_code;
                }
            }
            Event::Sessions { sessions } => {
                for s in &sessions {
                    if !self.session_output.contains_key(&s.session_id) {
                        let out = if s.pty { Output::pty() } else { Output::pipe() };
                        self.session_output.insert(s.session_id.clone(), out);
                    }
                }
                self.sessions = sessions;
            }
            Event::Rules { rules, removed } => self.show_rules(&rules, removed.as_deref()),
            Event::Artifacts { artifacts } => self.open_artifacts(artifacts),
            Event::Memory {
                proposals,
                resolved,
                file,
            } => self.show_memory(proposals, resolved, file),
            // The record of what each call changed is for the journal and for undo.
            Event::FilesChanged { .. } => {}
            Event::Checkpoints { turns } => {
                self.layers.retain(|l| !matches!(l, Layer::Rewind(_)));
                self.layers.push(Layer::Rewind(RewindView::new(turns)));
            }
            Event::RestorePlan { plan } => {
                self.layers
                    .retain(|l| !matches!(l, Layer::Rewind(_) | Layer::Restore(_)));
                if matches!(plan.scope, RestoreScope::Session { .. }) && plan.files.is_empty() {
                    self.notice(
                        NoticeLevel::Info,
                        "this session has not changed any file (or every change was undone)",
                    );
                } else {
                    self.layers
                        .push(Layer::Restore(Box::new(RestoreView::new(plan))));
                }
            }
            Event::Restored { report } => {
                self.layers.retain(|l| !matches!(l, Layer::Restore(_)));
                self.show_restored(&report);
            }
            Event::SessionForked {
                session_id,
                from_session,
                turn,
                text,
            } => self.forked(session_id, from_session, turn, text),
            Event::McpServer { server } => self.mcp_changed(server),
            Event::Warning { message } => self.notice(NoticeLevel::Warning, message),
            Event::Attachments { files, images } => {
                let names: Vec<String> = files
                    .iter()
                    .map(|f| {
                        let cut = if f.truncated { ", cut" } else { "" };
                        format!("@{} ({} bytes{cut})", f.path, f.bytes)
                    })
                    .chain(
                        images
                            .iter()
                            .map(|i| format!("@{} ({})", i.path, i.image.summary())),
                    )
                    .collect();
                self.notice(
                    NoticeLevel::Info,
                    format!("attached {}", names.join(", ")),
                );
            }
            Event::ModelChanged { provider, model } => {
                self.notice(
                    NoticeLevel::Info,
                    format!("the next turn uses {model} from provider {provider}"),
                );
                self.status.model = model;
                self.status.provider = provider;
            }
            Event::ModeChanged { mode } => {
                self.status.mode = mode;
                self.hint = Some(format!("{} mode · shift-tab switches", mode.name()));
            }
            Event::TurnRefused {
                code,
                message,
                text,
            } => {
                self.notice(NoticeLevel::Error, format!("{code}: {message}"));
                // The prompt comes back to be changed; anything typed since stays after it.
                let typed = self.composer.text().to_string();
                if typed.is_empty() {
                    self.composer.set_text(&text);
                } else if typed != text {
                    self.composer.set_text(&format!("{text}\n{typed}"));
                }
            }
            Event::Error { code, message } => {
                if code == ErrorCode::McpRequiredServerFailed {
                    self.fatal = Some(message.clone());
                }
                self.notice(NoticeLevel::Error, format!("{code}: {message}"));
            }
            Event::TurnCompleted { stop_reason, usage } => {
                self.finish_streaming();
                self.turn_running = false;
                self.alert(false, "pablo: the turn is done");
                self.usage = usage;
                self.hint = None;
                match stop_reason {
                    StopReason::Cancelled => self.notice(NoticeLevel::Warning, "interrupted"),
                    StopReason::MaxTokens => self.notice(
                        NoticeLevel::Warning,
                        "the answer hit the output-token limit",
                    ),
                    StopReason::EndTurn | StopReason::BudgetExhausted | StopReason::Error => {}
                }
            }
            Event::ContextCompacted {
                replaced_messages, ..
            } => self.notice(
                NoticeLevel::Info,
                format!(
                    "the conversation was compacted: its first {replaced_messages} messages were replaced by a summary"
                ),
            ),
            // The terminal shell runs only with an editor front-end; the TUI never offers one.
            Event::ToolTerminal { .. } => {}
            Event::ShutdownComplete => self.shutdown_complete = true,
        }
    }

    fn take_approval(&mut self, call_id: &str) -> Option<ApprovalView> {
        let pos = self
            .layers
            .iter()
            .position(|l| matches!(l, Layer::Approval(a) if a.call_id == call_id))?;
        match self.layers.remove(pos) {
            Layer::Approval(a) => Some(*a),
            Layer::Sessions(_)
            | Layer::Resume(_)
            | Layer::Artifacts(_)
            | Layer::Memory(_)
            | Layer::Rewind(_)
            | Layer::Restore(_) => None,
        }
    }

    /// Width the approval body is laid out at, for hunk jumps (approximate is fine).
    pub fn modal_width(&self) -> usize {
        80
    }

    fn run_intent(&mut self, intent: Intent) {
        match intent {
            Intent::None | Intent::Ignored => {}
            Intent::Answer { call_id, answer } => {
                self.outbox.push(Op::Approval { call_id, answer });
            }
            Intent::Interrupt => self.interrupt(),
            Intent::SessionInput { session_id, data } => {
                self.outbox.push(Op::SessionInput { session_id, data });
            }
            Intent::KillSession { session_id } => {
                self.outbox.push(Op::KillSession { session_id });
            }
            Intent::Close => {
                self.layers.pop();
            }
            Intent::OpenArtifact(path) => self.effects.push(Effect::OpenPager(path)),
            Intent::ResolveMemory { id, accept } => self.outbox.push(Op::ResolveMemory {
                proposal_id: id,
                accept,
            }),
            Intent::Resume(id) => {
                self.layers.pop();
                // Picking the session already open just closes the picker.
                if id != self.status.session_id {
                    self.resume_requested = Some(id);
                    self.quit = true;
                }
            }
        }
    }

    fn run_restore_intent(&mut self, intent: restore::Intent) {
        match intent {
            restore::Intent::None => {}
            restore::Intent::Close => {
                self.layers.pop();
            }
            restore::Intent::Plan(scope) => self.outbox.push(Op::PlanRestore { scope }),
            restore::Intent::Restore {
                plan_id,
                files,
                rewind,
            } => {
                self.hint = Some(if rewind {
                    "rewinding…".into()
                } else {
                    "restoring…".into()
                });
                self.outbox.push(Op::Restore { plan_id, files });
            }
        }
    }

    /// What a restore did, in the transcript.
    fn show_restored(&mut self, report: &RestoreReport) {
        self.hint = None;
        let what = match &report.scope {
            RestoreScope::Undo { .. } | RestoreScope::Rewind { .. } if !report.turns.is_empty() => {
                let t: Vec<String> = report.turns.iter().map(u32::to_string).collect();
                format!(
                    "Undid turn{} {}",
                    if t.len() == 1 { "" } else { "s" },
                    t.join(", ")
                )
            }
            _ => "Reverted".to_string(),
        };
        let mut lines = vec![Line::from(Span::styled(what, theme::heading(2)))];
        if report.restored.is_empty() {
            lines.push(Line::from(Span::styled(
                "  no file was changed",
                theme::dim(),
            )));
        }
        for r in &report.restored {
            let verb = match (r.action, &r.hunks) {
                (_, Some(h)) => format!(
                    "restored {} hunk{}",
                    h.len(),
                    if h.len() == 1 { "" } else { "s" }
                ),
                (RestoreAction::Delete, None) => "deleted".into(),
                (RestoreAction::Recreate, None) => "recreated".into(),
                (RestoreAction::Rewrite, None) => "restored".into(),
            };
            lines.push(Line::from(vec![
                Span::styled(format!("  ✓ {verb:<12} "), theme::ok()),
                Span::raw(r.path.clone()),
            ]));
        }
        for s in &report.skipped {
            let style = if s.code == ErrorCode::Deselected {
                theme::dim()
            } else {
                theme::warn()
            };
            lines.push(Line::from(vec![
                Span::styled(format!("  · {:<12} ", s.code.replace('_', " ")), style),
                Span::raw(s.path.clone()),
                Span::styled(format!("  {}", s.message), theme::dim()),
            ]));
        }
        self.transcript.push(CellKind::Info(lines));
        self.transcript.scroll_to_bottom();
    }

    /// A rewind: the transcript is cut before the prompt of `turn`, which goes back into the
    /// composer; the session continues under its new id.
    fn forked(&mut self, session_id: String, from: String, turn: u32, text: String) {
        if let Some(pos) = self
            .turn_cells
            .iter()
            .position(|(t, _)| *t >= u64::from(turn))
        {
            let cell = self.turn_cells[pos].1;
            self.turn_cells.truncate(pos);
            // The restore report comes after the prompt's cell; keep it under the cut.
            let report = self.transcript.take_last_info();
            self.transcript.truncate(cell);
            if let Some(lines) = report {
                self.transcript.push(CellKind::Info(lines));
            }
        }
        self.turns = u64::from(turn.saturating_sub(1));
        if self.status.resume_command.is_some() {
            self.status.resume_command = Some(format!("pablo resume {session_id}"));
        }
        self.status.session_id = session_id.clone();
        self.notice(
            NoticeLevel::Info,
            format!(
                "rewound to the start of turn {turn}: this conversation continues as session \
                 {session_id}; the later turns stay in session {from}. The prompt is back in the \
                 composer to edit or send."
            ),
        );
        if self.composer.is_empty() {
            self.composer.insert_str(&text);
        }
        self.transcript.scroll_to_bottom();
    }

    fn interrupt(&mut self) {
        if self.turn_running {
            self.outbox.push(Op::Interrupt);
            self.hint = Some("interrupting…".into());
        }
    }

    /// A key from the terminal.
    pub fn handle_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        // Keys that work everywhere.
        match key.code {
            KeyCode::Char('c') if ctrl => return self.ctrl_c(),
            KeyCode::Char('g') if ctrl => {
                if self.layers.is_empty() {
                    self.effects.push(Effect::EditDraft);
                }
                return;
            }
            KeyCode::BackTab if self.layers.is_empty() => {
                self.outbox.push(Op::SetMode {
                    mode: self.status.mode.next(),
                });
                return;
            }
            KeyCode::F(2) => {
                self.mouse_capture = !self.mouse_capture;
                self.effects.push(Effect::MouseCapture(self.mouse_capture));
                self.hint = Some(if self.mouse_capture {
                    "mouse captured: the wheel scrolls; f2 gives it back for selection".into()
                } else {
                    "mouse released: select and copy as usual".into()
                });
                return;
            }
            KeyCode::Char('o') if ctrl => {
                if self.inline {
                    // What is in the scrollback is printed for good: the expanded transcript is a
                    // full-screen view of its own, closed again by ctrl-o or esc.
                    self.transcript_overlay = !self.transcript_overlay;
                    self.transcript.expanded = self.transcript_overlay;
                    self.transcript.show_all = self.transcript_overlay;
                    if self.transcript_overlay {
                        self.hint =
                            Some("the whole transcript, expanded · ctrl-o or esc closes".into());
                    } else {
                        self.hint = None;
                    }
                } else {
                    self.transcript.expanded = !self.transcript.expanded;
                }
                return;
            }
            KeyCode::Char('t') if ctrl => {
                self.todo_toggled = !self.todo_toggled;
                return;
            }
            KeyCode::PageUp if self.layers.is_empty() => return self.transcript.scroll_up(10),
            KeyCode::PageDown if self.layers.is_empty() => return self.transcript.scroll_down(10),
            KeyCode::Up if shift && self.layers.is_empty() => return self.transcript.scroll_up(1),
            KeyCode::Down if shift && self.layers.is_empty() => {
                return self.transcript.scroll_down(1);
            }
            _ => {}
        }
        self.quit_armed = None;
        let width = self.modal_width();
        let ids: Vec<String> = self.sessions.iter().map(|s| s.session_id.clone()).collect();
        if let Some(top) = self.layers.last_mut() {
            let intent = match top {
                Layer::Approval(a) => Ok(a.handle_key(key, width)),
                Layer::Sessions(s) => Ok(s.handle_key(key, &ids)),
                Layer::Resume(r) => Ok(r.handle_key(key)),
                Layer::Artifacts(a) => Ok(a.handle_key(key)),
                Layer::Memory(m) => Ok(m.handle_key(key)),
                Layer::Rewind(r) => Err(r.handle_key(key)),
                Layer::Restore(r) => Err(r.handle_key(key, width)),
            };
            return match intent {
                Ok(i) => self.run_intent(i),
                Err(i) => self.run_restore_intent(i),
            };
        }
        match key.code {
            KeyCode::Char('b') if ctrl => return self.open_sessions(),
            KeyCode::Esc if self.transcript_overlay => {
                self.transcript_overlay = false;
                self.transcript.expanded = false;
                self.transcript.show_all = false;
                self.hint = None;
                return;
            }
            KeyCode::Esc => {
                self.hint = None;
                return self.interrupt();
            }
            _ => {}
        }
        match self.composer.handle_key(key) {
            ComposerAction::Submit(text) => self.submit(text),
            ComposerAction::Handled | ComposerAction::Ignored => {}
        }
    }

    pub fn paste(&mut self, text: &str) {
        match self.layers.last_mut() {
            Some(Layer::Approval(a)) => {
                if let super::layers::ApprovalMode::Note(n) = &mut a.mode {
                    n.push_str(&text.replace('\n', " "));
                }
            }
            Some(Layer::Sessions(s)) => {
                if let Some(i) = &mut s.input {
                    i.push_str(text);
                }
            }
            Some(
                Layer::Resume(_)
                | Layer::Artifacts(_)
                | Layer::Memory(_)
                | Layer::Rewind(_)
                | Layer::Restore(_),
            ) => {}
            None => self.composer.insert_str(text),
        }
    }

    fn ctrl_c(&mut self) {
        if self.turn_running {
            return self.interrupt();
        }
        if !self.layers.is_empty() {
            self.layers.pop();
            return;
        }
        if !self.composer.is_empty() {
            // The composer is empty now: the next ctrl-c quits, as on an idle prompt.
            self.composer.clear();
            self.quit_armed = Some(self.now);
            self.hint = Some("press ctrl-c again to quit".into());
            return;
        }
        match self.quit_armed {
            Some(t) if self.now.saturating_duration_since(t) <= QUIT_WINDOW => self.quit = true,
            _ => {
                self.quit_armed = Some(self.now);
                self.hint = Some("press ctrl-c again to quit".into());
            }
        }
    }

    /// Opens the `/resume` picker on saved sessions (most recent first), keeping those of this
    /// workspace when the workspace is known.
    pub fn open_resume(&mut self, mut rows: Vec<crate::launch::SessionInfo>) {
        if let Some(dir) = &self.workspace_dir {
            rows.retain(|r| r.is_for_workspace(dir));
        }
        rows.sort_by(|a, b| b.updated_ms.cmp(&a.updated_ms).then(b.id.cmp(&a.id)));
        self.layers.retain(|l| !matches!(l, Layer::Resume(_)));
        self.layers
            .push(Layer::Resume(ResumeView { rows, selected: 0 }));
    }

    /// Opens (or refreshes) the `/artifacts` picker.
    fn open_artifacts(&mut self, rows: Vec<ArtifactSummary>) {
        for l in &mut self.layers {
            if let Layer::Artifacts(v) = l {
                v.selected = v.selected.min(rows.len().saturating_sub(1));
                v.rows = rows;
                return;
            }
        }
        self.layers
            .push(Layer::Artifacts(ArtifactsView { rows, selected: 0 }));
    }

    /// Opens (or refreshes) the `/memory` list, and says what a decision did.
    fn show_memory(
        &mut self,
        rows: Vec<MemoryProposal>,
        resolved: Option<String>,
        file: Option<String>,
    ) {
        if let Some(id) = resolved {
            let accepted = rows
                .iter()
                .any(|p| p.id == id && p.status == MemoryStatus::Accepted);
            let text = match (accepted, file) {
                (true, Some(f)) => {
                    format!("accepted {id}: appended to {f}; later sessions will read it")
                }
                _ => format!("dismissed {id}; it will not be used"),
            };
            self.notice(NoticeLevel::Info, text);
        }
        for l in &mut self.layers {
            if let Layer::Memory(v) = l {
                v.selected = v.selected.min(rows.len().saturating_sub(1));
                v.rows = rows;
                return;
            }
        }
        self.layers
            .push(Layer::Memory(MemoryView { rows, selected: 0 }));
    }

    fn open_sessions(&mut self) {
        if !self.layers.iter().any(|l| matches!(l, Layer::Sessions(_))) {
            self.layers.push(Layer::Sessions(SessionsView::default()));
        }
    }

    /// A server's new state: remembered for the status line, `/mcp` and completion; becoming
    /// ready or failing is also said in the transcript, once.
    fn mcp_changed(&mut self, server: McpServerView) {
        let before = self
            .mcp
            .iter()
            .find(|s| s.name == server.name)
            .map(|s| s.state);
        if before != Some(server.state) {
            match server.state {
                McpState::Ready | McpState::Failed => {
                    if let Some(line) = crate::protocol::describe::mcp_server(&server) {
                        let level = if server.state == McpState::Failed {
                            NoticeLevel::Warning
                        } else {
                            NoticeLevel::Info
                        };
                        self.notice(level, line);
                    }
                }
                McpState::Starting | McpState::Stopped => {}
            }
        }
        self.mcp.retain(|s| s.name != server.name);
        self.mcp.push(server);
        self.mcp.sort_by(|a, b| a.name.cmp(&b.name));
        self.composer.mcp_commands = self
            .mcp
            .iter()
            .flat_map(|s| {
                s.prompts.iter().map(move |p| {
                    let args: Vec<String> = p
                        .arguments
                        .iter()
                        .map(|a| {
                            if a.required {
                                a.name.to_uppercase()
                            } else {
                                format!("[{}]", a.name.to_uppercase())
                            }
                        })
                        .collect();
                    let mut detail = args.join(" ");
                    if !p.description.is_empty() {
                        if !detail.is_empty() {
                            detail.push_str("  ");
                        }
                        detail.push_str(&p.description);
                    }
                    (format!("{}:{}", s.name, p.name), detail)
                })
            })
            .collect();
        self.composer.mcp_resources = self
            .mcp
            .iter()
            .flat_map(|s| {
                s.resources
                    .iter()
                    .map(move |r| (format!("{}:{}", s.name, r.uri), r.name.clone()))
            })
            .collect();
    }

    /// `/mcp`: every server with its state, tools, prompts and resources.
    fn show_mcp(&mut self) {
        let mut lines = vec![Line::from(Span::styled("MCP servers", theme::heading(2)))];
        if self.mcp.is_empty() {
            lines.push(Line::from(Span::styled(
                "  none configured ([mcp_servers.NAME] in the config; see docs/mcp.md)",
                theme::dim(),
            )));
        }
        for s in &self.mcp {
            let (word, style) = match s.state {
                McpState::Starting => ("starting".to_string(), theme::warn()),
                McpState::Ready => (
                    match s.tools.len() {
                        1 => "ready, 1 tool".to_string(),
                        n => format!("ready, {n} tools"),
                    },
                    theme::ok(),
                ),
                McpState::Failed => ("failed".to_string(), theme::error()),
                McpState::Stopped => ("stopped".to_string(), theme::dim()),
            };
            let mut head = vec![
                Span::styled(format!("  {}", s.name), theme::key()),
                Span::styled(format!("  {} ", s.transport), theme::dim()),
                Span::styled(word, style),
            ];
            if s.required {
                head.push(Span::styled("  required", theme::dim()));
            }
            lines.push(Line::from(head));
            if let Some(r) = &s.reason {
                lines.push(Line::from(Span::styled(format!("    {r}"), theme::error())));
            }
            for t in &s.tools {
                lines.push(Line::from(vec![
                    Span::styled(format!("    {}", t.name), theme::inline_code()),
                    Span::styled(format!("  {}", t.description), theme::dim()),
                ]));
            }
            for p in &s.prompts {
                lines.push(Line::from(vec![
                    Span::styled(format!("    /{}:{}", s.name, p.name), theme::key()),
                    Span::styled(format!("  {}", p.description), theme::dim()),
                ]));
            }
            for r in s.resources.iter().take(20) {
                lines.push(Line::from(vec![
                    Span::styled(format!("    @{}:{}", s.name, r.uri), theme::key()),
                    Span::styled(format!("  {}", r.name), theme::dim()),
                ]));
            }
            if s.resources.len() > 20 {
                lines.push(Line::from(Span::styled(
                    format!("    … {} more resources", s.resources.len() - 20),
                    theme::dim(),
                )));
            }
            if let Some(log) = &s.log {
                lines.push(Line::from(Span::styled(
                    format!("    log {log}"),
                    theme::dim(),
                )));
            }
        }
        self.transcript.push(CellKind::Info(lines));
    }

    /// `(ready, starting, failed)` MCP servers, for the status line.
    pub fn mcp_counts(&self) -> (usize, usize, usize) {
        let n = |st: McpState| self.mcp.iter().filter(|s| s.state == st).count();
        (
            n(McpState::Ready),
            n(McpState::Starting),
            n(McpState::Failed),
        )
    }

    /// Sends a user turn, or runs a slash command.
    pub fn submit(&mut self, text: String) {
        if let Some(rest) = text.strip_prefix('/') {
            let mut parts = rest.split_whitespace();
            let name = parts.next().unwrap_or("");
            let args: Vec<&str> = parts.collect();
            // `/SERVER:PROMPT`: the agent runs the server's prompt and sends its text.
            if let Some((server, _)) = name.split_once(':')
                && self.mcp.iter().any(|s| s.name == server)
            {
                self.outbox.push(Op::user_turn(text));
                self.transcript.scroll_to_bottom();
                return;
            }
            if let Some(cmd) = commands::find(name) {
                self.run_command(cmd.id, &args);
            } else if let Some(custom) = self.composer.custom.iter().find(|c| c.name == name) {
                let rest = rest[name.len()..].trim();
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
        self.outbox.push(Op::user_turn(text));
        self.transcript.scroll_to_bottom();
    }

    /// The answer to `/rules` (and `/rules remove ID`): every saved rule with its id.
    fn show_rules(&mut self, rules: &[RuleSummary], removed: Option<&str>) {
        let mut lines = Vec::new();
        if let Some(id) = removed {
            lines.push(Line::from(vec![
                Span::raw("removed "),
                Span::styled(id.to_string(), theme::key()),
            ]));
        }
        lines.push(Line::from(Span::styled(
            "Saved with \"allow always\" in this workspace",
            theme::heading(2),
        )));
        if rules.is_empty() {
            lines.push(Line::from(Span::styled("  none", theme::dim())));
        }
        for r in rules {
            lines.push(Line::from(vec![
                Span::styled(format!("  {}", r.id), theme::key()),
                Span::raw("  "),
                Span::styled(r.allows.clone(), theme::inline_code()),
            ]));
        }
        if !rules.is_empty() {
            lines.push(Line::from(Span::styled(
                "  /rules remove ID forgets one",
                theme::dim(),
            )));
        }
        self.transcript.push(CellKind::Info(lines));
    }

    fn run_command(&mut self, id: CommandId, args: &[&str]) {
        let arg = args.first().copied();
        match id {
            CommandId::Help => {
                let mut lines = vec![Line::from(Span::styled("Commands", theme::heading(2)))];
                for c in commands::COMMANDS {
                    let name = if c.args.is_empty() {
                        format!("/{}", c.name)
                    } else {
                        format!("/{} {}", c.name, c.args)
                    };
                    lines.push(Line::from(vec![
                        Span::styled(format!("  {name:<12}"), theme::key()),
                        Span::raw(c.help),
                    ]));
                }
                if !self.composer.custom.is_empty() {
                    lines.push(Line::from(Span::styled("Your commands", theme::heading(2))));
                    for c in &self.composer.custom {
                        lines.push(Line::from(vec![
                            Span::styled(format!("  /{:<11}", c.name), theme::key()),
                            Span::raw(c.description.clone()),
                            Span::styled(format!("  ({})", c.source), theme::dim()),
                        ]));
                    }
                }
                lines.push(Line::from(Span::styled("Keys", theme::heading(2))));
                for (k, what) in commands::KEYS {
                    lines.push(Line::from(vec![
                        Span::styled(format!("  {k:<36}"), theme::key()),
                        Span::raw(*what),
                    ]));
                }
                self.transcript.push(CellKind::Info(lines));
            }
            CommandId::Todo => self.todo_toggled = !self.todo_toggled,
            CommandId::Sessions => self.open_sessions(),
            CommandId::Ps => {
                let mut lines = vec![Line::from(Span::styled(
                    "Background sessions",
                    theme::heading(2),
                ))];
                if self.sessions.is_empty() {
                    lines.push(Line::from(Span::styled("  none", theme::dim())));
                }
                for s in &self.sessions {
                    lines.push(self.session_line(s, false));
                }
                self.transcript.push(CellKind::Info(lines));
            }
            CommandId::Kill => match arg {
                Some(id) => self.outbox.push(Op::KillSession {
                    session_id: id.to_string(),
                }),
                None => self.notice(NoticeLevel::Error, "/kill needs a session id (see /ps)"),
            },
            CommandId::Resume => {
                // Reading the journal directory is a read-only library call; a failure just
                // leaves the picker empty with a notice.
                match crate::launch::list_sessions() {
                    Ok(sessions) => self.open_resume(sessions),
                    Err(e) => self.notice(NoticeLevel::Error, format!("cannot list sessions: {e}")),
                }
            }
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
            CommandId::Mcp => self.show_mcp(),
            CommandId::Model => match arg {
                None => {
                    let text = format!(
                        "model {} from provider {} (/model NAME switches, PROVIDER/NAME for another provider)",
                        self.status.model, self.status.provider
                    );
                    self.notice(NoticeLevel::Info, text);
                }
                Some(name) => {
                    let (provider, model) = split_model_choice(name);
                    self.outbox.push(Op::SetModel {
                        model: model.to_string(),
                        provider: provider.map(str::to_string),
                    });
                }
            },
            CommandId::Mode => match arg.map(WorkMode::parse) {
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
            },
            CommandId::Compact => {
                if self.turn_running {
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
            CommandId::Clear => {
                self.transcript.clear();
                self.turn_cells.clear();
            }
            CommandId::Quit => self.quit = true,
        }
    }

    /// One row of the session list.
    pub fn session_line(&self, s: &SessionSummary, selected: bool) -> Line<'static> {
        let state = if s.running {
            Span::styled("running", theme::ok())
        } else {
            match s.exit_code {
                Some(c) => Span::styled(
                    format!("exit {c}"),
                    if c == 0 { theme::dim() } else { theme::error() },
                ),
                None => Span::styled("killed", theme::warn()),
            }
        };
        let secs = self.wall_ms.saturating_sub(s.started_ms) / 1000;
        let runtime = if s.running {
            format!("{}m{:02}s", secs / 60, secs % 60)
        } else {
            String::new()
        };
        let style = if selected {
            theme::selected()
        } else {
            Default::default()
        };
        Line::from(vec![
            Span::styled(if selected { "▶ " } else { "  " }, theme::key()),
            Span::styled(format!("{:<10}", s.session_id), style),
            Span::raw(" "),
            state,
            Span::styled(format!(" {runtime:>6} "), theme::dim()),
            Span::styled(if s.pty { "pty " } else { "    " }, theme::dim()),
            Span::styled(s.command.clone(), theme::inline_code()),
        ])
    }

    /// Progress of the checklist: (completed, total).
    pub fn plan_progress(&self) -> (usize, usize) {
        let done = self
            .plan
            .iter()
            .filter(|i| i.status == PlanStatus::Completed)
            .count();
        (done, self.plan.len())
    }

    pub fn running_sessions(&self) -> usize {
        self.sessions.iter().filter(|s| s.running).count()
    }
}
