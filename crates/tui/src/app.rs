//! The one loop that owns the state and draws.
//!
//! It `select!`s over terminal input, agent events, a frame timer and a termination signal. Every
//! input is applied to the state at once (everything pending is drained), but a frame is drawn at
//! most once per 16 ms and only when something changed, or every 100 ms while a spinner turns;
//! an idle TUI draws nothing and uses no CPU. The loop is generic over the backend and the input
//! stream, so tests run the whole app on `TestBackend` with a scripted stream of keys.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::crossterm::event::{
    Event as TermEvent, KeyCode, KeyEventKind, KeyModifiers, MouseEventKind,
};
use ratatui::layout::Rect;
use tokio::sync::{mpsc, oneshot};

use super::TuiError;
use super::state::{AppState, Effect};
use super::view;
use pablo_protocol::{Event, Op};

/// Minimum time between two frames (60 fps).
pub(crate) const FRAME: Duration = Duration::from_millis(16);
/// Frame interval while something animates.
pub(crate) const TICK: Duration = Duration::from_millis(100);
/// How long to wait for the agent to confirm shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// What a backend can do besides drawing cells. No-ops for `TestBackend`.
pub(crate) trait Screen: Backend {
    /// Start of a frame: the terminal holds its output until `end_frame` (no tearing).
    fn begin_frame(&mut self) {}
    fn end_frame(&mut self) {}
    fn bell(&mut self) {}
    fn write_raw(&mut self, _bytes: &[u8]) {}
    fn set_mouse_capture(&mut self, _on: bool) {}
    /// Lends the terminal to another program (the person's editor): normal screen, cooked mode.
    fn lend(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// Takes the terminal back after [`Screen::lend`].
    fn take_back(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Screen for ratatui::backend::TestBackend {}

impl<W: io::Write> Screen for ratatui::backend::CrosstermBackend<W> {
    fn begin_frame(&mut self) {
        let _ =
            ratatui::crossterm::queue!(self, ratatui::crossterm::terminal::BeginSynchronizedUpdate);
    }

    fn end_frame(&mut self) {
        let _ =
            ratatui::crossterm::execute!(self, ratatui::crossterm::terminal::EndSynchronizedUpdate);
    }

    fn bell(&mut self) {
        self.write_raw(b"\x07");
    }

    fn write_raw(&mut self, bytes: &[u8]) {
        use std::io::Write;
        let _ = self.write_all(bytes);
        let _ = Write::flush(self);
    }

    fn set_mouse_capture(&mut self, on: bool) {
        use ratatui::crossterm::event::{DisableMouseCapture, EnableMouseCapture};
        let _ = if on {
            ratatui::crossterm::execute!(self, EnableMouseCapture)
        } else {
            ratatui::crossterm::execute!(self, DisableMouseCapture)
        };
    }

    // The input modes are popped on the screen they were pushed on (terminals such as kitty
    // keep the key flags per screen), so before leaving the alternate screen and after entering
    // it again.
    fn lend(&mut self) -> io::Result<()> {
        super::term::lend_modes()?;
        ratatui::crossterm::execute!(self, ratatui::crossterm::terminal::LeaveAlternateScreen)
    }

    fn take_back(&mut self) -> io::Result<()> {
        ratatui::crossterm::execute!(self, ratatui::crossterm::terminal::EnterAlternateScreen)?;
        super::term::take_back_modes()
    }
}

/// Where frames go: the whole screen (a ratatui `Terminal`), or the inline viewport under the
/// terminal's scrollback ([`InlineSurface`]). The loop is generic over it.
pub(crate) trait Surface {
    /// Draws one frame of `state`.
    fn frame(&mut self, state: &mut AppState) -> Result<(), TuiError>;
    /// The terminal is now `cols` x `rows`.
    fn resized(&mut self, _cols: u16, _rows: u16) -> Result<(), TuiError> {
        Ok(())
    }
    fn bell(&mut self) {}
    /// Writes an escape sequence of its own (a notification, the clipboard) outside a frame.
    fn write_raw(&mut self, _bytes: &[u8]) {}
    fn set_mouse_capture(&mut self, _on: bool) {}
    /// Lends the terminal to the person's editor; the next frame after
    /// [`Surface::take_back`] redraws everything.
    fn lend(&mut self) -> Result<(), TuiError> {
        Ok(())
    }
    fn take_back(&mut self) -> Result<(), TuiError> {
        Ok(())
    }
    /// `/clear`: the visible screen is cleared (inline: what it showed moves into the
    /// scrollback, which stays).
    fn clear_screen(&mut self) -> Result<(), TuiError> {
        Ok(())
    }
}

impl<B: Screen> Surface for Terminal<B> {
    fn frame(&mut self, state: &mut AppState) -> Result<(), TuiError> {
        draw(self, state)
    }

    fn bell(&mut self) {
        self.backend_mut().bell();
    }

    fn write_raw(&mut self, bytes: &[u8]) {
        self.backend_mut().write_raw(bytes);
    }

    fn set_mouse_capture(&mut self, on: bool) {
        self.backend_mut().set_mouse_capture(on);
    }

    fn lend(&mut self) -> Result<(), TuiError> {
        self.backend_mut().lend().map_err(terminal_error)
    }

    fn take_back(&mut self) -> Result<(), TuiError> {
        self.backend_mut().take_back().map_err(terminal_error)?;
        self.clear().map_err(|e| TuiError::Terminal(e.to_string()))
    }
}

/// The inline viewport: each frame first prints the transcript cells that finished into the
/// scrollback, then draws what is still live, the composer and the status line under them.
/// Full-screen overlays (pickers, the full diff) take the alternate screen while they are open.
pub(crate) struct InlineSurface<W: io::Write> {
    pub screen: super::inline::InlineScreen<W>,
    /// The welcome has been printed.
    greeted: bool,
    /// The terminal was resized: the next frame on the normal screen starts over and prints the
    /// conversation again at the new width.
    start_over: bool,
}

impl<W: io::Write> InlineSurface<W> {
    pub(crate) fn new(screen: super::inline::InlineScreen<W>) -> Self {
        Self {
            screen,
            greeted: false,
            start_over: false,
        }
    }

    /// Erases the viewport; the conversation stays in the scrollback.
    pub(crate) fn finish(&mut self) -> Result<(), TuiError> {
        self.screen.finish().map_err(terminal_error)
    }
}

fn terminal_error(e: io::Error) -> TuiError {
    TuiError::Terminal(e.to_string())
}

/// Transcript lines carry the one-column margin the full-screen view gives them.
fn with_margin(lines: Vec<ratatui::text::Line<'static>>) -> Vec<ratatui::text::Line<'static>> {
    lines
        .into_iter()
        .map(|mut l| {
            if !l.spans.is_empty() {
                l.spans.insert(0, ratatui::text::Span::raw(" "));
            }
            l
        })
        .collect()
}

impl<W: io::Write> Surface for InlineSurface<W> {
    fn frame(&mut self, state: &mut AppState) -> Result<(), TuiError> {
        let size = self.screen.size();
        let full = Rect::new(0, 0, size.width, size.height);
        if state.wants_full_screen() {
            view::prepare(state, full);
            let mut buf = ratatui::buffer::Buffer::empty(full);
            ratatui::widgets::Widget::render(&*state, full, &mut buf);
            let cursor = view::cursor_position(state, full);
            return self
                .screen
                .draw_alternate(&buf, cursor)
                .map_err(terminal_error);
        }
        self.screen.leave_alternate().map_err(terminal_error)?;
        let inner = size.width.saturating_sub(2) as usize;
        if self.start_over {
            self.start_over = false;
            self.screen.start_over().map_err(terminal_error)?;
            let mut lines = Vec::new();
            if self.greeted {
                lines.extend(view::welcome_lines(state, inner));
            }
            let now = state.now();
            lines.extend(state.transcript_mut().printed_lines(inner, now));
            self.screen
                .insert_history(&with_margin(lines))
                .map_err(terminal_error)?;
        }
        if !self.greeted {
            self.greeted = true;
            let welcome = with_margin(view::welcome_lines(state, inner));
            self.screen
                .insert_history(&welcome)
                .map_err(terminal_error)?;
        }
        // A settled conversation (no turn running) has nothing left that will change, but a
        // prompt that waits for an answer.
        let (now, settle) = (state.now(), !state.turn_running());
        let finished = state.transcript_mut().take_finished(inner, now, settle);
        if !finished.is_empty() {
            self.screen
                .insert_history(&with_margin(finished))
                .map_err(terminal_error)?;
        }
        view::prepare(state, full);
        let h = view::inline_height(state, size.width, size.height);
        let area = Rect::new(0, 0, size.width, h);
        view::prepare(state, area);
        let mut buf = ratatui::buffer::Buffer::empty(area);
        ratatui::widgets::Widget::render(&*state, area, &mut buf);
        let cursor = view::cursor_position(state, area);
        self.screen.draw(&buf, cursor).map_err(terminal_error)
    }

    fn resized(&mut self, cols: u16, rows: u16) -> Result<(), TuiError> {
        let size = ratatui::layout::Size::new(cols, rows);
        if size != self.screen.size() {
            self.screen.resize(size);
            self.start_over = true;
        }
        Ok(())
    }

    fn clear_screen(&mut self) -> Result<(), TuiError> {
        self.screen.clear_screen().map_err(terminal_error)
    }

    fn bell(&mut self) {
        self.write_raw(b"\x07");
    }

    fn write_raw(&mut self, bytes: &[u8]) {
        let w = self.screen.writer();
        let _ = w.write_all(bytes);
        let _ = w.flush();
    }

    fn lend(&mut self) -> Result<(), TuiError> {
        // The viewport goes; the conversation above it stays in the scrollback.
        self.screen.finish().map_err(terminal_error)?;
        super::term::lend_modes().map_err(terminal_error)
    }

    fn take_back(&mut self) -> Result<(), TuiError> {
        super::term::take_back_modes().map_err(terminal_error)?;
        // The editor may have left the cursor anywhere: the viewport starts where it is now.
        let rows = self.screen.size().height;
        let row = ratatui::crossterm::cursor::position()
            .map(|(_, r)| r)
            .unwrap_or(rows.saturating_sub(1));
        self.screen.reanchor(row);
        Ok(())
    }
}

/// The front-end's ends of the agent's channels.
pub(crate) struct AgentLink {
    pub(crate) ops: mpsc::UnboundedSender<Op>,
    pub(crate) events: mpsc::UnboundedReceiver<Event>,
}

/// Extra inputs of the loop.
pub(crate) struct LoopInputs {
    /// Resolves when the process is asked to stop (SIGTERM, SIGHUP).
    pub(crate) terminate: Pin<Box<dyn Future<Output = ()> + Send>>,
    /// Workspace files for `@path` completion, listed in the background.
    pub(crate) files: Option<oneshot::Receiver<Vec<String>>>,
    /// Opens terminal input anew after the terminal was lent to the person's editor (the old
    /// stream is dropped first so it stops reading keys meant for the editor). `None`: there is
    /// no terminal to lend (tests on `TestBackend`), and Ctrl-G and the `/artifacts` pager say so.
    pub(crate) reopen_input: Option<Box<dyn Fn() -> InputStream + Send>>,
    /// The person's status line command (`[tui] statusline_command`), run beside the loop.
    pub(crate) statusline: Option<pablo_launch::StatusLine>,
}

/// Terminal input as the loop holds it.
pub(crate) type InputStream = Pin<Box<dyn Stream<Item = io::Result<TermEvent>> + Send>>;

impl Default for LoopInputs {
    fn default() -> Self {
        Self {
            terminate: Box::pin(futures::future::pending()),
            files: None,
            reopen_input: None,
            statusline: None,
        }
    }
}

fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Draws one frame of `state`.
pub(crate) fn draw<B: Screen>(
    terminal: &mut Terminal<B>,
    state: &mut AppState,
) -> Result<(), TuiError> {
    let size = terminal
        .size()
        .map_err(|e| TuiError::Terminal(e.to_string()))?;
    let area = Rect::new(0, 0, size.width, size.height);
    view::prepare(state, area);
    terminal.backend_mut().begin_frame();
    let result = terminal
        .draw(|f| {
            f.render_widget(&*state, f.area());
            if let Some(p) = view::cursor_position(state, f.area()) {
                f.set_cursor_position(p);
            }
        })
        .map(|_| ())
        .map_err(|e| TuiError::Terminal(e.to_string()));
    terminal.backend_mut().end_frame();
    result?;
    Ok(())
}

/// Applies a batch of terminal events. A batch of two or more identical bare arrow keys is the
/// terminal's alternate-scroll mode translating a mouse-wheel notch: it scrolls the transcript
/// instead of walking the history.
fn apply_input(state: &mut AppState, batch: Vec<TermEvent>) {
    let arrows = batch
        .iter()
        .filter_map(|e| match e {
            TermEvent::Key(k)
                if k.kind != KeyEventKind::Release
                    && k.modifiers == KeyModifiers::NONE
                    && matches!(k.code, KeyCode::Up | KeyCode::Down) =>
            {
                Some(k.code)
            }
            _ => None,
        })
        .collect::<Vec<_>>();
    let key_events = batch
        .iter()
        .filter(|e| matches!(e, TermEvent::Key(k) if k.kind != KeyEventKind::Release))
        .count();
    if arrows.len() >= 2
        && arrows.len() == key_events
        && arrows.iter().all(|c| *c == arrows[0])
        && state.layers().is_empty()
    {
        let n = arrows.len() as isize;
        state.scroll(if arrows[0] == KeyCode::Up { -n } else { n });
        return;
    }
    for ev in batch {
        match ev {
            TermEvent::Key(k) if k.kind != KeyEventKind::Release => state.handle_key(k),
            TermEvent::Paste(text) => state.paste(&text),
            TermEvent::FocusGained => state.focus_changed(true),
            TermEvent::FocusLost => state.focus_changed(false),
            TermEvent::Mouse(m) => match m.kind {
                MouseEventKind::ScrollUp => state.scroll(-3),
                MouseEventKind::ScrollDown => state.scroll(3),
                _ => {}
            },
            _ => {}
        }
    }
}

/// Runs the app until the person quits (or input ends, or the agent stops, or `terminate` fires).
/// Returns the final state; the caller restores the terminal and prints the summary.
pub(crate) async fn run_loop<S, I>(
    terminal: &mut S,
    input: I,
    mut link: AgentLink,
    mut state: AppState,
    mut extra: LoopInputs,
) -> Result<AppState, TuiError>
where
    S: Surface,
    I: Stream<Item = io::Result<TermEvent>> + Send + 'static,
{
    let mut input: InputStream = Box::pin(input);
    let mut dirty = true;
    let mut last_draw: Option<Instant> = None;
    let mut first_drawn = false;
    let mut input_open = true;
    let mut events_open = true;
    let mut shutdown_deadline: Option<Instant> = None;
    let mut terminated = false;
    let mut files = extra.files.take();
    let mut statusline = StatuslineJob::of(&mut extra, &state);
    loop {
        let now = Instant::now();
        state.tick(now, wall_ms());
        // Quitting: ask the agent to stop, then wait (bounded) for it to confirm.
        if state.wants_quit() && shutdown_deadline.is_none() {
            let _ = link.ops.send(Op::Shutdown);
            shutdown_deadline = Some(now + SHUTDOWN_GRACE);
        }
        if let Some(d) = shutdown_deadline
            && (state.shutdown_complete() || !events_open || now >= d)
        {
            break;
        }
        let next_draw = if dirty {
            Some(last_draw.map_or(now, |t| (t + FRAME).max(now)))
        } else if state.is_animating() {
            Some(last_draw.map_or(now, |t| (t + TICK).max(now)))
        } else {
            None
        };
        let draw_at = next_draw.unwrap_or(now + Duration::from_secs(3600));
        let deadline = shutdown_deadline.unwrap_or(now + Duration::from_secs(3600));
        if dirty && !first_drawn {
            // The first frame is drawn at once: a timer due now still waits for the timer
            // driver's next tick (up to a millisecond), on the way to the first screen. The
            // agent's events already sent (`SessionStarted`) are in it; input is taken on the
            // next turn, as after any frame. It does not count as the last frame: when
            // `SessionStarted` comes just after it, the status line it fills is drawn at once
            // too, not a frame interval later.
            state.set_now(Instant::now());
            while let Ok(e) = link.events.try_recv() {
                state.apply(e);
            }
            draw_frame(terminal, &mut state)?;
            first_drawn = true;
            dirty = false;
        } else {
            tokio::select! {
                ev = input.next(), if input_open => {
                    match ev {
                        Some(Ok(first)) => {
                            // Drain what is already pending, polling with this task's own waker: a
                            // stream that parks a waker (crossterm's does) must never see a no-op one.
                            let mut batch = vec![first];
                            let more = std::future::poll_fn(|cx| {
                                let mut more = Vec::new();
                                while let std::task::Poll::Ready(Some(Ok(e))) = input.poll_next_unpin(cx) {
                                    more.push(e);
                                }
                                std::task::Poll::Ready(more)
                            })
                            .await;
                            batch.extend(more);
                            // The loop's `now` dates from before the wait (the last redraw); a key is
                            // stamped with the time it arrived (the double ctrl-c window).
                            state.set_now(Instant::now());
                            for e in &batch {
                                if let TermEvent::Resize(cols, rows) = e {
                                    terminal.resized(*cols, *rows)?;
                                }
                            }
                            apply_input(&mut state, batch);
                        }
                        Some(Err(_)) | None => {
                            input_open = false;
                            state.request_quit();
                        }
                    }
                    dirty = true;
                }
                ev = link.events.recv(), if events_open => {
                    match ev {
                        Some(e) => {
                            // Stamped with the time it arrived (a tool's duration starts and ends
                            // with its events), not with the last frame's.
                            state.set_now(Instant::now());
                            state.apply(e);
                            while let Ok(e) = link.events.try_recv() {
                                state.apply(e);
                            }
                        }
                        None => {
                            events_open = false;
                            state.request_quit();
                        }
                    }
                    dirty = true;
                }
                line = async { match statusline.as_mut() { Some(job) => job.lines.recv().await, None => futures::future::pending().await } }, if statusline.is_some() => {
                    match line {
                        Some(line) => state.set_custom_status(line),
                        // The runner stopped: the last line stays.
                        None => statusline = None,
                    }
                    dirty = true;
                }
                list = async { match files.as_mut() { Some(rx) => rx.await.ok(), None => futures::future::pending().await } }, if files.is_some() => {
                    files = None;
                    if let Some(list) = list {
                        state.files_listed(list);
                    }
                }
                // A finished future must not be polled again: the loop goes on after the signal,
                // until the agent confirms its shutdown.
                () = &mut extra.terminate, if !terminated => {
                    terminated = true;
                    state.request_quit();
                }
                () = tokio::time::sleep_until(draw_at.into()), if next_draw.is_some() => {
                    last_draw = Some(draw_frame(terminal, &mut state)?);
                    dirty = false;
                }
                () = tokio::time::sleep_until(deadline.into()), if shutdown_deadline.is_some() => {}
            }
        }
        for op in state.take_ops() {
            let _ = link.ops.send(op);
        }
        if dirty && let Some(job) = &statusline {
            job.offer(state.statusline_input());
        }
        if perform_effects(terminal, &mut state, &mut input, &extra).await? {
            dirty = true;
        }
    }
    Ok(state)
}

/// The status line command, run on a task of its own so that a slow or stuck program never holds
/// the screen: it is given the newest state when that changed since its last run, at most once
/// a second (a run that fails or times out sends nothing, so the line shown stays), and stops
/// when the loop drops this.
struct StatuslineJob {
    input: tokio::sync::watch::Sender<pablo_launch::statusline::StatuslineInput>,
    lines: mpsc::UnboundedReceiver<String>,
}

impl StatuslineJob {
    /// Once a second at most.
    const EVERY: Duration = Duration::from_secs(1);

    /// The job of the loop's status line command, if it has one, started on `state`.
    fn of(extra: &mut LoopInputs, state: &AppState) -> Option<Self> {
        let program = extra.statusline.take()?;
        Some(Self::start(program, state.statusline_input()))
    }

    fn start(
        program: pablo_launch::StatusLine,
        first: pablo_launch::statusline::StatuslineInput,
    ) -> Self {
        let (input, mut changes) = tokio::sync::watch::channel(first);
        // The first state runs at once.
        changes.mark_changed();
        let (tx, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                let now = changes.borrow_and_update().clone();
                let started = Instant::now();
                if let Some(line) = program.run(now).await
                    && tx.send(line).is_err()
                {
                    break;
                }
                tokio::time::sleep_until((started + Self::EVERY).into()).await;
            }
        });
        Self { input, lines }
    }

    /// The state now: run again if it differs from the last one given.
    fn offer(&self, now: pablo_launch::statusline::StatuslineInput) {
        self.input.send_if_modified(|last| {
            let changed = *last != now;
            if changed {
                *last = now;
            }
            changed
        });
    }
}

/// Draws a frame stamped with the time it is drawn; returns that time.
fn draw_frame<S: Surface>(terminal: &mut S, state: &mut AppState) -> Result<Instant, TuiError> {
    state.set_now(Instant::now());
    terminal.frame(state)?;
    Ok(state.now())
}

/// What another program needs to have the terminal for a while: the input stream stopped (so it
/// reads no key meant for that program), the terminal lent; afterwards both taken back.
async fn lend_while<S, F, T>(
    terminal: &mut S,
    input: &mut InputStream,
    reopen: &(dyn Fn() -> InputStream + Send),
    mouse_capture: bool,
    run: F,
) -> Result<T, TuiError>
where
    S: Surface,
    F: Future<Output = T>,
{
    drop(std::mem::replace(
        input,
        Box::pin(futures::stream::pending()),
    ));
    terminal.lend()?;
    let out = run.await;
    terminal.take_back()?;
    *input = reopen();
    if mouse_capture {
        terminal.set_mouse_capture(true);
    }
    Ok(out)
}

/// Performs the effects the state queued; true when the screen must be drawn again.
async fn perform_effects<S: Surface>(
    terminal: &mut S,
    state: &mut AppState,
    input: &mut InputStream,
    extra: &LoopInputs,
) -> Result<bool, TuiError> {
    let mut dirty = false;
    for effect in state.take_effects() {
        match effect {
            Effect::Bell => terminal.bell(),
            Effect::Notify(text) => terminal.write_raw(&super::term::notification(&text)),
            Effect::Copy(text) => terminal.write_raw(&super::term::clipboard(&text)),
            Effect::MouseCapture(on) => terminal.set_mouse_capture(on),
            Effect::ClearScreen => terminal.clear_screen()?,
            Effect::ListSavedSessions => match pablo_launch::list_sessions() {
                Ok(sessions) => state.open_resume(sessions, wall_ms()),
                Err(e) => state.sessions_unavailable(&e.to_string()),
            },
            // Without the saved sessions the picker still lists the current and known models.
            Effect::OpenModelPicker => {
                let recent = pablo_launch::list_sessions().unwrap_or_default();
                state.open_model_picker(&recent, wall_ms());
            }
            Effect::Export {
                session_id,
                path,
                dir,
            } => {
                dirty = true;
                let result =
                    pablo_launch::export::export_to(&session_id, path.as_deref(), dir.as_deref())
                        .map_err(|e| format!("{}: {e}", pablo_core::Coded::code(&e)));
                state.exported(result);
            }
            Effect::Fork { session_id, turn } => {
                dirty = true;
                let result = pablo_launch::export::fork_session(&session_id, turn)
                    .map(|(id, _)| id)
                    .map_err(|e| format!("{}: {e}", pablo_core::Coded::code(&e)));
                state.forked_to(result);
            }
            Effect::EditDraft => {
                dirty = true;
                let Some(reopen) = &extra.reopen_input else {
                    state.editor_unavailable("there is no terminal to lend to an editor");
                    continue;
                };
                let Some(command) = super::editor::editor_command() else {
                    state.editor_failed(&super::editor::EditorError::NoEditor);
                    continue;
                };
                let draft = state.composer().text().to_string();
                let edit = super::editor::edit(&command, &draft);
                match lend_while(terminal, input, reopen, state.mouse_capture(), edit).await? {
                    Ok(text) => state.set_draft(&text),
                    Err(e) => state.editor_failed(&e),
                }
            }
            Effect::Suspend => {
                dirty = true;
                if let Some(reopen) = &extra.reopen_input {
                    let capture = state.mouse_capture();
                    let stop = async { super::term::suspend_self() };
                    lend_while(terminal, input, reopen, capture, stop).await?;
                }
            }
            Effect::OpenPager(path) => {
                dirty = true;
                let Some(reopen) = &extra.reopen_input else {
                    state.warn(format!(
                        "pager_unavailable: there is no terminal to lend to a pager for {path}"
                    ));
                    continue;
                };
                let command = super::pager::pager_command();
                let page = super::pager::page(command.as_deref(), &path);
                let capture = state.mouse_capture();
                if let Err(e) = lend_while(terminal, input, reopen, capture, page).await? {
                    let code = pablo_core::Coded::code(&e);
                    state.warn(format!("{code}: cannot show {path}: {e}"));
                }
            }
        }
    }
    Ok(dirty)
}
