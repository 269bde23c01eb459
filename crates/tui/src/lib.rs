//! The full-screen terminal front-end (ratatui). It speaks only `protocol`: agent events in, ops
//! out. One loop ([`app`]) owns the state ([`state`]) and is the only thing that draws ([`view`]).

pub(crate) mod cells;
pub(crate) mod commands;
pub(crate) mod composer;
pub(crate) mod diagnostics;
pub(crate) mod diff;
pub(crate) mod editor;
pub(crate) mod info;
pub(crate) mod inline;
pub(crate) mod layers;
pub(crate) mod markdown;
pub(crate) mod memo;
pub(crate) mod model_picker;
pub(crate) mod pager;
pub(crate) mod question;
pub(crate) mod restore;
// The whole app loop over a real agent and a scripted model.
#[cfg(test)]
mod loop_tests;
#[cfg(test)]
mod screen_tests;
#[cfg(test)]
mod snapshot_tests;
pub(crate) mod state;
pub(crate) mod status;
#[cfg(test)]
mod status_tests;
pub(crate) mod text;
pub(crate) mod theme;
pub(crate) mod transcript;
pub(crate) mod view;
pub(crate) mod vim;
pub(crate) mod word_diff;

pub(crate) mod app;
// The scene `benches/tui_render.rs` draws; a bench may not name the private modules.
#[cfg(feature = "bench-support")]
#[doc(hidden)]
pub mod bench;
pub(crate) mod term;

use std::sync::Arc;

use pablo_core::{Coded, ErrorCode};
use pablo_protocol::AgentHandle;
use pablo_protocol::{Event, Usage};

/// Why the TUI could not run.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error("terminal: {0}")]
    Terminal(String),
    #[error(
        "the TUI needs a terminal, and {0} is not one; for a run without a terminal use \
         `pablo run TASK` (or `pablo acp` for an editor)"
    )]
    NotATerminal(&'static str),
    #[error(transparent)]
    Launch(#[from] pablo_launch::LaunchError),
}

impl Coded for TuiError {
    fn code(&self) -> ErrorCode {
        match self {
            TuiError::Terminal(_) => ErrorCode::TerminalFailed,
            TuiError::NotATerminal(_) => ErrorCode::NotATerminal,
            TuiError::Launch(e) => e.code(),
        }
    }
}

/// What is printed on the normal screen after the TUI closes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExitSummary {
    pub(crate) session_id: String,
    pub(crate) turns: u64,
    pub(crate) usage: Usage,
    /// The exact command that resumes the session, when it is journaled.
    pub(crate) resume_command: Option<String>,
    /// Extra lines (the demo says where its project copy was).
    pub notes: Vec<String>,
    /// A saved session picked with `/resume`: the caller resumes it next.
    pub(crate) resume_requested: Option<String>,
    /// `/new`: the caller starts a fresh session in this workspace next.
    pub(crate) new_session_in: Option<std::path::PathBuf>,
    /// `/fork`: the session `resume_requested` was forked from (this one).
    pub(crate) forked_from: Option<String>,
}

/// What the person asked for as the screen closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    Quit,
    /// `/resume`: this saved session.
    Resume(String),
    /// `/fork`: the new session `id`, forked from `from`.
    Forked {
        id: String,
        from: String,
    },
    /// `/new`: a fresh session in this workspace.
    New(Option<std::path::PathBuf>),
}

impl ExitSummary {
    pub fn next(&self) -> Next {
        match (&self.resume_requested, &self.new_session_in) {
            (Some(id), _) => match &self.forked_from {
                Some(from) => Next::Forked {
                    id: id.clone(),
                    from: from.clone(),
                },
                None => Next::Resume(id.clone()),
            },
            (None, Some(ws)) => Next::New(Some(ws.clone())),
            (None, None) => Next::Quit,
        }
    }
}

impl std::fmt::Display for ExitSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A session is named only when it was saved (and so can be resumed).
        let session = match &self.resume_command {
            Some(_) if !self.session_id.is_empty() => format!("session {}", self.session_id),
            _ if self.turns == 0 => "session not saved (nothing was sent)".to_string(),
            _ => "session not saved".to_string(),
        };
        write!(
            f,
            "pablo: {session} · {} turn{} · {} tokens in, {} out",
            self.turns,
            if self.turns == 1 { "" } else { "s" },
            self.usage.input_tokens,
            self.usage.output_tokens
        )?;
        for n in &self.notes {
            write!(f, "\n{n}")?;
        }
        if let Some(cmd) = &self.resume_command {
            write!(f, "\nresume with: {cmd}")?;
        }
        if let (Some(id), Some(_)) = (&self.resume_requested, &self.forked_from) {
            write!(f, "\ncontinuing in the fork, session {id}")?;
        }
        Ok(())
    }
}

/// Options of the interactive TUI beyond the agent itself.
#[derive(Debug, Clone, Default)]
pub struct TuiOptions {
    /// Sent as the first user turn once the screen is up.
    pub initial_prompt: Option<String>,
    /// Shown in the status line (e.g. `writes ask · shell ask`).
    pub policy_mode: String,
    /// The command that resumes this session (`pablo resume ID`), when it is journaled.
    pub resume_command: Option<String>,
    /// Events shown before the agent's own (launch warnings).
    pub startup_events: Vec<Event>,
    /// Full-screen mode on the alternate screen (`--alt-screen`); inline under the terminal's
    /// scrollback otherwise.
    pub alt_screen: bool,
    /// The person's slash commands (`launch::commands`).
    pub custom_commands: Vec<pablo_protocol::CustomCommand>,
    /// The installed Agent Skills, for `/skills`.
    pub skills: Vec<pablo_protocol::SkillSummary>,
    /// `[tui] notifications`.
    pub notifications: pablo_protocol::Notifications,
    /// Lines said once the screen is up, after the startup events (which session a fork is).
    pub notes: Vec<String>,
    /// The spend cap in US dollars (`--max-budget-usd`), shown as spent/limit.
    pub spend_cap_usd: Option<f64>,
    /// `[tui] statusline_command`: the person's program whose first line the status line shows.
    pub statusline: Option<pablo_launch::StatusLine>,
    /// `[tui] vim = true`: the composer starts in vim mode (`/vim` toggles it).
    pub vim: bool,
}

/// Runs the full-screen TUI for a started agent (its approvals must be
/// `ApprovalMode::Interactive`) working in `workspace`: takes over the terminal, and gives it back
/// on exit, error, panic or SIGTERM. The caller prints the returned summary.
pub async fn run(
    handle: AgentHandle,
    workspace: std::path::PathBuf,
    options: TuiOptions,
) -> Result<ExitSummary, TuiError> {
    require_terminal()?;
    run_with_agent(handle, workspace, options).await
}

/// Refuses to start the full-screen view without a terminal on stdin and stdout, before
/// anything is written: raw mode on a pipe fails, and the restore sequences would land in the
/// file or the pipe.
pub fn require_terminal() -> Result<(), TuiError> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        return Err(TuiError::NotATerminal("stdin"));
    }
    if !std::io::stdout().is_terminal() {
        return Err(TuiError::NotATerminal("stdout"));
    }
    Ok(())
}

/// Shortens a path under the home directory to `~/…` for the status line.
fn display_path(p: &std::path::Path) -> String {
    if let Some(home) = std::env::var_os("HOME").map(std::path::PathBuf::from)
        && let Ok(rest) = p.strip_prefix(&home)
    {
        return format!("~/{}", rest.display());
    }
    p.display().to_string()
}

/// Lists workspace files (respecting ignore files) for `@path` completion.
fn list_files(root: &std::path::Path, max: usize) -> Vec<String> {
    let mut out = Vec::new();
    for entry in ignore::WalkBuilder::new(root)
        .max_depth(Some(8))
        .build()
        .flatten()
    {
        if entry.file_type().is_some_and(|t| t.is_file())
            && let Ok(rel) = entry.path().strip_prefix(root)
        {
            out.push(rel.to_string_lossy().replace('\\', "/"));
            if out.len() >= max {
                break;
            }
        }
    }
    out.sort();
    out
}

/// The state's settings from the options, for a screen in `workspace`.
fn setup_of(workspace: &std::path::Path, options: &TuiOptions) -> state::Setup {
    state::Setup {
        workspace: display_path(workspace),
        workspace_dir: Some(workspace.to_path_buf()),
        policy_mode: options.policy_mode.clone(),
        resume_command: options.resume_command.clone(),
        custom_commands: options.custom_commands.clone(),
        skills: options.skills.clone(),
        notifications: options.notifications,
        inline: !options.alt_screen,
        spend_cap_usd: options.spend_cap_usd,
        vim: options.vim,
    }
}

/// A resumed session's screen, built from its journal while the journal is read: each event is
/// [`Replay::push`]ed as the resume reads it (`Launch::resume_setup`), then [`Replay::run`] opens
/// the screen with it. A long session's events are thus never all held at once beside the
/// conversation the agent gets back (issue 46 item 5); the screen is the one [`run`] would show
/// with the events among its `startup_events`.
pub struct Replay {
    state: state::AppState,
}

impl Replay {
    /// The screen of a session resumed in `workspace`, with the settings of `options` (those
    /// known before the agent is composed; [`Replay::run`] takes the rest).
    pub fn new(workspace: &std::path::Path, options: &TuiOptions) -> Self {
        let mut state =
            state::AppState::with_setup(std::time::Instant::now(), setup_of(workspace, options));
        // What was pending then (a prompt, a running turn, a shutdown) is history now, not
        // something to answer.
        state.begin_replay();
        Self { state }
    }

    /// The next event of the journal.
    pub fn push(&mut self, event: Event) {
        self.state.apply(event);
    }

    /// [`run`] on this screen: `options.startup_events` are replayed after the journal's.
    pub async fn run(
        self,
        handle: AgentHandle,
        workspace: std::path::PathBuf,
        options: TuiOptions,
    ) -> Result<ExitSummary, TuiError> {
        require_terminal()?;
        let mut state = self.state;
        state.settle_setup(std::time::Instant::now(), &setup_of(&workspace, &options));
        run_state(state, handle, workspace, options).await
    }
}

async fn run_with_agent(
    handle: AgentHandle,
    workspace: std::path::PathBuf,
    options: TuiOptions,
) -> Result<ExitSummary, TuiError> {
    let mut state =
        state::AppState::with_setup(std::time::Instant::now(), setup_of(&workspace, &options));
    // Startup events may replay a journaled transcript: what was pending then (a prompt, a
    // running turn, a shutdown) is history now, not something to answer.
    state.begin_replay();
    run_state(state, handle, workspace, options).await
}

/// The screen from `state`, which is replaying: the startup events end the replay.
async fn run_state(
    mut state: state::AppState,
    handle: AgentHandle,
    workspace: std::path::PathBuf,
    options: TuiOptions,
) -> Result<ExitSummary, TuiError> {
    let AgentHandle { ops, events, task } = handle;
    for event in options.startup_events {
        state.apply(event);
    }
    state.end_replay();
    state.say_notes(&options.notes);
    if let Some(p) = options.initial_prompt {
        state.submit(p);
    }
    let (files_tx, files_rx) = tokio::sync::oneshot::channel();
    let root = Arc::new(workspace);
    tokio::task::spawn_blocking(move || {
        let _ = files_tx.send(list_files(&root, 20_000));
    });
    let extra = app::LoopInputs {
        terminate: Box::pin(term::termination()),
        files: Some(files_rx),
        reopen_input: Some(Box::new(|| {
            Box::pin(ratatui::crossterm::event::EventStream::new())
        })),
        statusline: options.statusline.clone(),
    };
    let link = app::AgentLink {
        ops: ops.clone(),
        events,
    };
    let result = if options.alt_screen {
        let (mut terminal, guard) = term::enter()?;
        let input = ratatui::crossterm::event::EventStream::new();
        let result = app::run_loop(&mut terminal, input, link, state, extra).await;
        drop(terminal);
        drop(guard);
        result
    } else {
        let (screen, guard) = term::enter_inline()?;
        let mut surface = app::InlineSurface::new(screen);
        let input = ratatui::crossterm::event::EventStream::new();
        let result = app::run_loop(&mut surface, input, link, state, extra).await;
        let finished = surface.finish();
        drop(guard);
        result.and_then(|s| finished.map(|()| s))
    };
    // The agent was asked to shut down by the loop; give it a moment to finish its task.
    drop(ops);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(3), task).await;
    let state = result?;
    Ok(ExitSummary {
        session_id: state.status().session_id.clone(),
        turns: state.turns(),
        usage: state.usage(),
        // A session nobody spoke in was never journaled: there is nothing to resume.
        resume_command: state
            .status()
            .resume_command
            .clone()
            .filter(|_| state.turns() > 0),
        notes: state
            .fatal()
            .iter()
            .map(|f| format!("pablo stopped: {f}"))
            .collect(),
        resume_requested: state.resume_requested().map(str::to_string),
        forked_from: state.forked_from().map(str::to_string),
        new_session_in: state
            .new_session_requested()
            .then(|| state.workspace_dir().map(std::path::Path::to_path_buf))
            .flatten(),
    })
}
