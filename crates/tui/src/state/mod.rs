//! The TUI's state and how events and keys change it.
//!
//! A pure reducer: agent [`Event`]s ([`AppState::apply`]) and terminal keys
//! ([`AppState::handle_key`]) go in; the state changes and queues what must leave it: ops for the
//! agent ([`AppState::take_ops`]) and effects only the loop can perform ([`AppState::take_effects`]:
//! the bell, the clipboard, the editor, the pager, listing the saved sessions). Nothing here draws,
//! builds styled lines or touches the terminal, a file or the clock: the loop tells the state the
//! time, the view ([`super::view`], [`super::info`]) decides how everything looks.
//!
//! The fields are private; the view reads them through accessors, and only the reducer's own
//! methods change them. A journaled transcript is replayed through the same reducer with
//! [`AppState::replay`]: what was pending then (a prompt, a running turn, a shutdown) is history
//! now, so replayed events change the transcript and the figures but open nothing, ring nothing
//! and start no turn.

mod events;
mod input;
mod slash;
mod statusline;
mod subagents;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use super::cells::{CellKind, NoticeLevel};
use super::composer::Composer;
use super::layers::Layer;
use super::text::Output;
use super::transcript::Transcript;
#[cfg(doc)]
use pablo_protocol::Event;

/// The most cells a resumed session replays into the screen (the newest; a note stands for the
/// rest): about a hundred turns, more than most terminals keep in their scrollback.
const REPLAYED_CELLS: usize = 600;
use pablo_protocol::{
    CustomCommand, McpServerView, McpState, Notifications, Op, PlanItem, PlanStatus,
    SessionSummary, Usage, WorkMode,
};

/// Side effects on the terminal (or the disk) that only the loop can perform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Effect {
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
    /// `/clear`: clear the visible screen (inline, what it showed moves into the scrollback).
    ClearScreen,
    /// Ctrl-Z: give the terminal back and stop until the shell continues pablo.
    Suspend,
    /// `/resume`: list the saved sessions and hand them to [`AppState::open_resume`] (or the
    /// failure to [`AppState::sessions_unavailable`]).
    ListSavedSessions,
    /// `/model`: list the saved sessions (for the models they used) and hand them to
    /// [`AppState::open_model_picker`].
    OpenModelPicker,
    /// `/export [PATH]`: write this session (the loop answers with [`AppState::exported`]).
    Export {
        session_id: String,
        path: Option<String>,
        /// The workspace, where a relative PATH (and the default name) lands.
        dir: Option<PathBuf>,
    },
    /// `/fork [TURN]`: a new session from this one (answered with [`AppState::forked_to`]).
    Fork {
        session_id: String,
        turn: Option<u32>,
    },
}

/// The share of the context window `used` tokens take, in whole percent (rounded): one number
/// for the status line and `/status` alike.
pub(crate) fn context_percent(used: u64, window: u64) -> u64 {
    (used as f64 * 100.0 / window.max(1) as f64).round() as u64
}

/// Facts for the status line.
#[derive(Debug, Clone, Default)]
pub(crate) struct StatusInfo {
    pub(crate) session_id: String,
    pub(crate) provider: String,
    pub(crate) model: String,
    pub(crate) workspace: String,
    pub(crate) policy_mode: String,
    /// The working mode in force (Shift-Tab switches it).
    pub(crate) mode: WorkMode,
    /// The command that resumes this session (shown by `/resume` and printed on exit).
    pub(crate) resume_command: Option<String>,
    /// Tokens of the last request and the model's window, once a call reported them.
    pub(crate) context: Option<(u64, u64)>,
    /// What the session has cost, when the model's prices are known (all of its runs).
    pub(crate) cost_usd: Option<f64>,
    /// The spend cap (`--max-budget-usd`), in US dollars.
    pub(crate) spend_cap: Option<f64>,
    /// The first line the person's status line command last printed (`[tui]
    /// statusline_command`), as printed: its colours are the view's to draw, every other escape
    /// its to drop. `None` until it printed one, and when it printed an empty line.
    pub(crate) custom: Option<String>,
}

/// The checklist the model keeps with `plan.update`.
#[derive(Debug, Default)]
pub(crate) struct PlanState {
    pub(crate) items: Vec<PlanItem>,
    pub(crate) explanation: Option<String>,
    /// Flips the default visibility of the checklist (side panel shown, strip collapsed).
    pub(crate) toggled: bool,
}

impl PlanState {
    /// Progress of the checklist: (completed, total).
    pub(crate) fn progress(&self) -> (usize, usize) {
        let done = self
            .items
            .iter()
            .filter(|i| i.status == PlanStatus::Completed)
            .count();
        (done, self.items.len())
    }
}

/// The background shell sessions and what each printed.
#[derive(Debug, Default)]
pub(crate) struct Background {
    pub(crate) sessions: Vec<SessionSummary>,
    pub(crate) output: HashMap<String, Output>,
}

impl Background {
    pub(crate) fn running(&self) -> usize {
        self.sessions.iter().filter(|s| s.running).count()
    }
}

/// A model request that failed and is tried again at `until` ([`Event::Retry`]).
#[derive(Debug, Clone)]
pub(crate) struct Waiting {
    pub(crate) attempt: u32,
    pub(crate) max_attempts: u32,
    pub(crate) until: Instant,
    pub(crate) reason: String,
}

/// The session's tokens and cost. The agent counts from its own start, and a resumed session's
/// agent starts again from nothing (its journal holds one such run after another, each opened
/// by `SessionStarted`): the figures of the runs before the current one are added up here, so
/// what is shown is the whole session's.
#[derive(Debug, Default)]
struct Figures {
    /// The runs that ended (a resumed session's earlier ones).
    before: Usage,
    cost_before: Option<f64>,
    /// The current run, as its agent last reported.
    run: Usage,
    cost_run: Option<f64>,
    /// The context figure when the conversation was compacted, until the figure after it comes.
    before_compaction: Option<(u64, u64)>,
    /// Lines the file changes that landed added and removed (their diffs' counts).
    lines_added: u64,
    lines_removed: u64,
}

impl Figures {
    /// A new run of the agent begins.
    fn new_run(&mut self) {
        self.before.add(&self.run);
        self.cost_before = sum(self.cost_before, self.cost_run);
        self.run = Usage::default();
        self.cost_run = None;
    }

    fn usage(&self) -> Usage {
        let mut u = self.before;
        u.add(&self.run);
        u
    }

    fn cost(&self) -> Option<f64> {
        sum(self.cost_before, self.cost_run)
    }
}

fn sum(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, None) => a,
        (None, b) => b,
    }
}

/// Where the conversation is.
#[derive(Debug, Default)]
struct Turns {
    running: bool,
    /// When the running turn began (the status line counts from it).
    started_at: Option<Instant>,
    /// The retry the running turn waits for.
    retry: Option<Waiting>,
    count: u64,
    /// The transcript cell of each prompt, by turn number (a rewind cuts the transcript there).
    cells: Vec<(u64, usize)>,
    /// Reasoning deltas arrived for the model call in progress.
    live_reasoning: bool,
    /// The answer text of the model call in progress shown above its web searches: the cell
    /// of the rest of the answer gets the message's text without it.
    answer_before_search: String,
    /// The model calls of the last turn that ended, when it said.
    last_model_calls: Option<u64>,
    /// A prompt was sent and its turn has not begun yet (the agent has not echoed it).
    sent: bool,
    /// Messages typed while a turn runs, oldest first: each is sent when the turn before it
    /// ends by itself; an interrupt gives them back to the composer.
    queued: Vec<String>,
}

/// How the loop comes to an end.
#[derive(Debug, Default)]
struct Exit {
    /// A first Ctrl-C on an idle prompt, and when.
    quit_armed: Option<Instant>,
    /// `/quit` said once that background sessions run (the next `/quit` confirms).
    quit_warned: bool,
    quit: bool,
    shutdown_complete: bool,
    /// A saved session picked in `/resume`: the TUI closes so the caller can resume it.
    resume_requested: Option<String>,
    /// `/fork`: the session the requested one was forked from (this one).
    forked_from: Option<String>,
    /// `/new`: the TUI closes so the caller can start a fresh session.
    new_session: bool,
    /// The error that ended the session, when the agent stopped by itself (a required MCP
    /// server failed): printed after the screen is given back.
    fatal: Option<String>,
}

/// What the state knows of the terminal.
#[derive(Debug)]
struct Screen {
    mouse_capture: bool,
    /// The terminal window has the focus (as its focus events say; true until one says not).
    focused: bool,
    /// Inline mode: finished cells live in the terminal's scrollback; the view draws only the
    /// live part (see `tui::inline`). Off in the full-screen (`--alt-screen`) mode.
    inline: bool,
    /// Inline: the whole transcript, expanded, on the alternate screen (ctrl-o).
    transcript_overlay: bool,
    notifications: Notifications,
}

/// The clock, as the loop last set it.
#[derive(Debug)]
struct Clock {
    /// For spinners and elapsed times (set by the loop; fixed in tests).
    now: Instant,
    /// Wall clock in Unix milliseconds (session runtimes).
    wall_ms: u64,
    /// When the state was made (the status line's spinner turns from it).
    started: Instant,
}

/// What the TUI is started with, besides the agent.
#[derive(Debug, Clone, Default)]
pub(crate) struct Setup {
    /// The workspace as the status line shows it (`~/src/stats`).
    pub workspace: String,
    /// The workspace directory (which saved sessions `/resume` offers).
    pub workspace_dir: Option<PathBuf>,
    /// Shown in the status line (`edits ask · commands ask`).
    pub policy_mode: String,
    /// The command that resumes this session, when it is journaled.
    pub resume_command: Option<String>,
    /// The person's slash commands.
    pub custom_commands: Vec<CustomCommand>,
    /// The installed Agent Skills, for `/skills`.
    pub skills: Vec<pablo_protocol::SkillSummary>,
    /// `[tui] notifications`.
    pub notifications: Notifications,
    /// Inline mode (the default) rather than `--alt-screen`.
    pub inline: bool,
    /// The spend cap in US dollars, when one is set.
    pub spend_cap_usd: Option<f64>,
    /// `[tui] vim = true`: the composer starts in vim mode.
    pub vim: bool,
}

#[derive(Debug)]
pub(crate) struct AppState {
    transcript: Transcript,
    composer: Composer,
    layers: Vec<Layer>,
    plan: PlanState,
    background: Background,
    status: StatusInfo,
    figures: Figures,
    turns: Turns,
    clock: Clock,
    exit: Exit,
    screen: Screen,
    hint: Option<String>,
    workspace_dir: Option<PathBuf>,
    /// The session's MCP servers as last reported, by name.
    mcp: Vec<McpServerView>,
    /// The session's language servers as last reported, for `/status`.
    lsp: Vec<pablo_protocol::LspServerView>,
    /// The installed Agent Skills (`/skills`).
    skills: Vec<pablo_protocol::SkillSummary>,
    outbox: Vec<Op>,
    effects: Vec<Effect>,
    /// The event being applied comes from a replayed journal, not from the agent now.
    from_replay: bool,
    /// When an Esc last took vim's composer from insert to normal mode.
    vim_left_insert: Option<Instant>,
}

impl AppState {
    pub(crate) fn new(now: Instant) -> Self {
        Self {
            transcript: Transcript::default(),
            composer: Composer::default(),
            layers: Vec::new(),
            plan: PlanState::default(),
            background: Background::default(),
            status: StatusInfo::default(),
            figures: Figures::default(),
            turns: Turns::default(),
            clock: Clock {
                now,
                wall_ms: 0,
                started: now,
            },
            exit: Exit::default(),
            screen: Screen {
                mouse_capture: false,
                focused: true,
                inline: false,
                transcript_overlay: false,
                notifications: Notifications::default(),
            },
            hint: None,
            workspace_dir: None,
            mcp: Vec::new(),
            lsp: Vec::new(),
            skills: Vec::new(),
            outbox: Vec::new(),
            effects: Vec::new(),
            from_replay: false,
            vim_left_insert: None,
        }
    }

    /// A state for a session started with `setup`.
    pub(crate) fn with_setup(now: Instant, setup: Setup) -> Self {
        let mut s = Self::new(now);
        s.status.workspace = setup.workspace;
        s.workspace_dir = setup.workspace_dir;
        s.status.policy_mode = setup.policy_mode;
        s.status.resume_command = setup.resume_command;
        s.status.spend_cap = setup.spend_cap_usd;
        s.composer.custom = setup.custom_commands;
        s.composer.skills = setup
            .skills
            .iter()
            .map(|k| (k.name.clone(), k.description.clone()))
            .collect();
        s.skills = setup.skills;
        // A built-in runs when a person's command has its name: said once, not found out later.
        let shadowed: Vec<String> = s
            .composer
            .custom
            .iter()
            .filter(|c| super::commands::find(&c.name).is_some())
            .map(|c| format!("/{} ({} commands)", c.name, c.source))
            .collect();
        for name in shadowed {
            s.notice(
                NoticeLevel::Warning,
                format!(
                    "your command {name} has the name of a built-in command, which runs instead; \
                     rename its file to use it"
                ),
            );
        }
        s.screen.notifications = setup.notifications;
        s.screen.inline = setup.inline;
        s.composer.set_vim(setup.vim);
        s
    }

    /// Applies events that happened before this screen opened (a resumed session's journal,
    /// launch warnings): their cells and figures, but no prompt, no bell, no running turn.
    #[cfg(test)]
    pub(crate) fn replay(&mut self, events: impl IntoIterator<Item = pablo_protocol::Event>) {
        self.begin_replay();
        for e in events {
            self.apply(e);
        }
        self.end_replay();
    }

    /// From here on events are replayed ([`AppState::replay`] in parts: a resumed session's
    /// journal applied as it is read, the launch's warnings after it).
    pub(crate) fn begin_replay(&mut self) {
        self.from_replay = true;
    }

    /// The replay is over: only its newest cells stay.
    pub(crate) fn end_replay(&mut self) {
        self.from_replay = false;
        // Its figures (tokens, cost, checklist) count every event; its cells only the newest.
        self.transcript
            .keep_last(REPLAYED_CELLS, |gone| CellKind::Notice {
                level: NoticeLevel::Info,
                text: format!(
                    "… {gone} earlier entries of this session are not shown here; /export writes \
                 the whole session"
                ),
            });
    }

    /// The settings known only once the agent is composed (its policy, the workspace it works
    /// in), for a state that replayed a journal before: as [`AppState::with_setup`] sets them,
    /// with the clock starting now, as if it were made now.
    pub(crate) fn settle_setup(&mut self, now: Instant, setup: &Setup) {
        self.status.workspace = setup.workspace.clone();
        self.workspace_dir = setup.workspace_dir.clone();
        self.status.policy_mode = setup.policy_mode.clone();
        self.clock.now = now;
        self.clock.started = now;
    }

    /// The loop's clock: monotonic `now`, and the wall clock in Unix milliseconds.
    pub(crate) fn tick(&mut self, now: Instant, wall_ms: u64) {
        self.clock.now = now;
        self.clock.wall_ms = wall_ms;
    }

    /// Moves the monotonic clock only (a key stamped with the time it arrived).
    pub(crate) fn set_now(&mut self, now: Instant) {
        self.clock.now = now;
    }

    /// The ops queued for the agent, in order; the queue is empty afterwards.
    pub(crate) fn take_ops(&mut self) -> Vec<Op> {
        std::mem::take(&mut self.outbox)
    }

    #[cfg(test)]
    /// The ops queued so far (without taking them).
    pub(crate) fn ops(&self) -> &[Op] {
        &self.outbox
    }

    /// The effects queued for the loop, in order; the queue is empty afterwards.
    pub(crate) fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// The loop must end (input closed, the agent gone, a termination signal).
    pub(crate) fn request_quit(&mut self) {
        self.exit.quit = true;
    }

    /// The terminal window gained or lost the focus.
    pub(crate) fn focus_changed(&mut self, focused: bool) {
        self.screen.focused = focused;
    }

    /// Scrolls the transcript by `lines` (negative: up), as the wheel does.
    pub(crate) fn scroll(&mut self, lines: isize) {
        if lines < 0 {
            self.transcript.scroll_up(lines.unsigned_abs());
        } else {
            self.transcript.scroll_down(lines.unsigned_abs());
        }
    }

    /// The workspace files for `@path` completion, listed in the background.
    pub(crate) fn files_listed(&mut self, files: Vec<String>) {
        self.composer.files = files;
    }

    /// Replaces the draft (what the person saved in their editor).
    pub(crate) fn set_draft(&mut self, text: &str) {
        self.composer.set_text(text);
    }

    /// Listing the saved sessions for `/resume` failed.
    pub(crate) fn sessions_unavailable(&mut self, why: &str) {
        self.notice(NoticeLevel::Error, format!("cannot list sessions: {why}"));
    }

    /// The editor could not take the draft (it stays in the composer).
    pub(crate) fn editor_failed(&mut self, e: &super::editor::EditorError) {
        let code = pablo_core::Coded::code(e);
        self.notice(NoticeLevel::Error, format!("{code}: {e}"));
    }

    pub(crate) fn editor_unavailable(&mut self, why: &str) {
        self.notice(NoticeLevel::Error, format!("editor_unavailable: {why}"));
    }

    /// Lines for the person, said once as the screen opens (after a replayed transcript).
    pub(crate) fn say_notes(&mut self, notes: &[String]) {
        for n in notes {
            self.notice(NoticeLevel::Info, n.clone());
        }
    }

    /// A warning in the transcript, for what the loop itself could not do.
    pub(crate) fn warn(&mut self, text: impl Into<String>) {
        self.notice(NoticeLevel::Warning, text);
    }

    // ---- what the view and the loop read ----

    pub(crate) fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    /// The transcript's render cache and inline flushing: the view lays it out for a size, and
    /// the inline surface takes the finished cells into the scrollback. Nothing else.
    pub(crate) fn transcript_mut(&mut self) -> &mut Transcript {
        &mut self.transcript
    }

    pub(crate) fn composer(&self) -> &Composer {
        &self.composer
    }

    pub(crate) fn layers(&self) -> &[Layer] {
        &self.layers
    }

    pub(crate) fn plan(&self) -> &PlanState {
        &self.plan
    }

    pub(crate) fn background(&self) -> &Background {
        &self.background
    }

    /// What this run has spent against the spend cap, and the cap, when one is set: the cap
    /// counts the agent's run, not a resumed session's earlier ones.
    pub(crate) fn spend(&self) -> Option<(f64, f64)> {
        let cap = self.status.spend_cap?;
        Some((self.figures.cost_run.unwrap_or(0.0), cap))
    }

    pub(crate) fn status(&self) -> &StatusInfo {
        &self.status
    }

    /// The session's tokens (all of its runs, a resumed session's earlier ones too).
    pub(crate) fn usage(&self) -> Usage {
        self.figures.usage()
    }

    pub(crate) fn turn_running(&self) -> bool {
        self.turns.running
    }

    /// The messages waiting for the running turn to end, oldest first.
    pub(crate) fn queued(&self) -> &[String] {
        &self.turns.queued
    }

    pub(crate) fn turns(&self) -> u64 {
        self.turns.count
    }

    /// When the running turn began.
    pub(crate) fn turn_started(&self) -> Option<Instant> {
        self.turns.started_at.filter(|_| self.turns.running)
    }

    /// The retry the running turn waits for, if it waits for one.
    pub(crate) fn retry(&self) -> Option<&Waiting> {
        self.turns.retry.as_ref().filter(|_| self.turns.running)
    }

    pub(crate) fn now(&self) -> Instant {
        self.clock.now
    }

    pub(crate) fn wall_ms(&self) -> u64 {
        self.clock.wall_ms
    }

    pub(crate) fn started(&self) -> Instant {
        self.clock.started
    }

    pub(crate) fn todo_toggled(&self) -> bool {
        self.plan.toggled
    }

    pub(crate) fn hint(&self) -> Option<&str> {
        self.hint.as_deref()
    }

    pub(crate) fn mcp(&self) -> &[McpServerView] {
        &self.mcp
    }

    pub(crate) fn mouse_capture(&self) -> bool {
        self.screen.mouse_capture
    }

    pub(crate) fn is_inline(&self) -> bool {
        self.screen.inline
    }

    pub(crate) fn wants_quit(&self) -> bool {
        self.exit.quit
    }

    pub(crate) fn shutdown_complete(&self) -> bool {
        self.exit.shutdown_complete
    }

    pub(crate) fn resume_requested(&self) -> Option<&str> {
        self.exit.resume_requested.as_deref()
    }

    /// After `/fork`, the session the fork was made from (the one closing).
    pub(crate) fn forked_from(&self) -> Option<&str> {
        self.exit.forked_from.as_deref()
    }

    pub(crate) fn new_session_requested(&self) -> bool {
        self.exit.new_session
    }

    pub(crate) fn workspace_dir(&self) -> Option<&std::path::Path> {
        self.workspace_dir.as_deref()
    }

    pub(crate) fn fatal(&self) -> Option<&str> {
        self.exit.fatal.as_deref()
    }

    /// Whether the screen belongs to a full-screen overlay (pickers, the full diff), which inline
    /// mode shows on the alternate screen.
    pub(crate) fn wants_full_screen(&self) -> bool {
        (self.screen.inline && self.screen.transcript_overlay)
            || self.layers.iter().any(|l| match l {
                Layer::Approval(v) => v.fullscreen,
                Layer::Question(_) => false,
                // The artifact and memory pickers are overlays too: in inline mode they take the
                // alternate screen, as the other pickers do, and give it back when they close.
                Layer::Sessions(_)
                | Layer::Resume(_)
                | Layer::Model(_)
                | Layer::Artifacts(_)
                | Layer::Memory(_)
                | Layer::Rewind(_)
                | Layer::Restore(_) => true,
            })
    }

    /// Whether something on screen moves by itself (spinners), so frames must keep coming.
    pub(crate) fn is_animating(&self) -> bool {
        self.turns.running || self.transcript.has_live_cells()
    }

    /// Width the approval body is laid out at, for hunk jumps (approximate is fine).
    pub(crate) fn modal_width(&self) -> usize {
        80
    }

    /// `(ready, starting, failed)` MCP servers, for the status line.
    pub(crate) fn mcp_counts(&self) -> (usize, usize, usize) {
        let n = |st: McpState| self.mcp.iter().filter(|s| s.state == st).count();
        (
            n(McpState::Ready),
            n(McpState::Starting),
            n(McpState::Failed),
        )
    }

    /// Clears the hint (tests that snapshot the status line without it).
    #[cfg(test)]
    pub(crate) fn clear_hint(&mut self) {
        self.hint = None;
    }

    // ---- small helpers of the reducer ----

    /// Gets the person's attention: an approval rings the bell even while they look (as it always
    /// did); a finished turn only when they are elsewhere. `desktop` adds a notification when the
    /// terminal is not focused. Never for a replayed event.
    fn alert(&mut self, always_ring: bool, message: &str) {
        let n = self.screen.notifications;
        if self.from_replay || n == Notifications::Off || (!always_ring && self.screen.focused) {
            return;
        }
        self.effects.push(Effect::Bell);
        if n == Notifications::Desktop && !self.screen.focused {
            self.effects.push(Effect::Notify(message.to_string()));
        }
    }

    /// Opens a layer, unless the event that asks for it is replayed (a prompt or a picker of
    /// then is not something to answer now).
    fn open_layer(&mut self, layer: Layer) {
        if !self.from_replay {
            self.layers.push(layer);
        }
    }

    /// Sets the hint of the status line, unless replaying.
    fn set_hint(&mut self, hint: Option<String>) {
        if !self.from_replay {
            self.hint = hint;
        }
    }

    fn notice(&mut self, level: NoticeLevel, text: impl Into<String>) {
        // A line under an answer ends it: its cursor must not stay behind in the scrollback.
        self.finish_streaming();
        self.transcript.push(super::cells::CellKind::Notice {
            level,
            text: text.into(),
        });
    }
}
