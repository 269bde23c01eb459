//! Background sessions: commands that outlive the tool call that started them.
//!
//! A session keeps a rolling window of its raw output with exact byte offsets, so the model can
//! page through it (`read`) without ever holding more than the window, and knows exactly how much
//! was dropped. A PTY session also feeds a terminal emulator, which tells `send_keys` whether the
//! program switched the arrow keys to application mode. The manager owns every session and kills
//! them all when it is dropped, so no command outlives pablo.

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::ProcessError;
use super::capture::{LiveBuffer, utf8_prefix_len, utf8_skip_len};
use super::group::{CleanupTimes, ExitInfo, signal_group, terminate_group, watch_exit};
use super::run::{LIVE_INTERVAL, pump};
use super::spawn::{PTY_COLS, PTY_ROWS, SpawnSpec, spawn};
use pablo_core::EventSink;
use pablo_protocol::{Event, SessionSummary};

/// The rolling window of a session's output: 1 MiB.
pub const WINDOW_BYTES: usize = 1 << 20;

/// Bytes of new output shown by `poll`.
pub const POLL_PREVIEW_BYTES: usize = 2_000;

/// Bytes of output shown by `wait` and `kill`.
pub const TAIL_BYTES: usize = 8_000;

/// How long a write to a session's stdin may block before it is reported.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// A session's output: a window over the stream with absolute byte offsets.
#[derive(Debug)]
pub struct OutputLog {
    buf: VecDeque<u8>,
    cap: usize,
    dropped: u64,
}

/// One page of an [`OutputLog`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogPage {
    pub bytes: Vec<u8>,
    /// Absolute offset of the first byte of `bytes`.
    pub offset: u64,
    /// Absolute offset just after the last byte: where the next page starts.
    pub next_offset: u64,
    /// Bytes the stream has produced since the session started.
    pub total_bytes: u64,
    pub has_more: bool,
    /// Bytes evicted from the window since the session started.
    pub dropped_bytes: u64,
    /// Bytes between the asked offset and the oldest byte still held.
    pub skipped_bytes: u64,
}

impl OutputLog {
    pub fn new(cap: usize) -> Self {
        Self {
            buf: VecDeque::new(),
            cap,
            dropped: 0,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        if bytes.len() >= self.cap {
            self.dropped += (self.buf.len() + bytes.len() - self.cap) as u64;
            self.buf.clear();
            self.buf.extend(&bytes[bytes.len() - self.cap..]);
            return;
        }
        let overflow = (self.buf.len() + bytes.len()).saturating_sub(self.cap);
        if overflow > 0 {
            self.buf.drain(..overflow);
            self.dropped += overflow as u64;
        }
        self.buf.extend(bytes);
    }

    pub fn total(&self) -> u64 {
        self.dropped + self.buf.len() as u64
    }

    #[cfg(any(test, feature = "test-support"))]
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The last `n` bytes held (fewer when the window holds fewer), exactly as written.
    pub fn latest(&self, n: usize) -> Vec<u8> {
        let total = self.total();
        self.slice(total - n.min(self.buf.len()) as u64, total)
    }

    fn slice(&self, start: u64, end: u64) -> Vec<u8> {
        let a = (start - self.dropped) as usize;
        let b = (end - self.dropped) as usize;
        self.buf.range(a..b).copied().collect()
    }

    /// Up to `limit` bytes from `offset`, or the latest `limit` bytes when `offset` is `None`.
    ///
    /// An offset older than the window starts at the oldest byte held (and says how many bytes
    /// were skipped); an offset past the end gives an empty page at the end. A page never ends
    /// inside a UTF-8 sequence unless that sequence alone is longer than the page.
    pub fn read(&self, offset: Option<u64>, limit: usize) -> LogPage {
        let total = self.total();
        let limit = limit as u64;
        let (mut start, skipped) = match offset {
            None => (total.saturating_sub(limit).max(self.dropped), 0),
            Some(o) if o < self.dropped => (self.dropped, self.dropped - o),
            Some(o) => (o.min(total), 0),
        };
        let mut end = (start + limit).min(total);
        if offset.is_none() && end > start {
            // The latest bytes: do not begin in the middle of a character.
            let head = self.slice(start, (start + 3).min(end));
            start += utf8_skip_len(&head) as u64;
        }
        if end < total && end > start {
            let tail_from = end.saturating_sub(3).max(start);
            let tail = self.slice(tail_from, end);
            let keep = utf8_prefix_len(&tail) as u64;
            if tail_from + keep > start {
                end = tail_from + keep;
            }
        }
        LogPage {
            bytes: self.slice(start, end),
            offset: start,
            next_offset: end,
            total_bytes: total,
            has_more: end < total,
            dropped_bytes: self.dropped,
            skipped_bytes: skipped,
        }
    }
}

/// Whether a session is still running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionStatus {
    Running,
    Exited(ExitInfo),
}

impl SessionStatus {
    pub fn label(&self) -> &'static str {
        match self {
            SessionStatus::Running => "running",
            SessionStatus::Exited(_) => "exited",
        }
    }

    pub fn exit(&self) -> Option<ExitInfo> {
        match self {
            SessionStatus::Running => None,
            SessionStatus::Exited(e) => Some(*e),
        }
    }
}

/// Keys `send_keys` understands.
pub const KEY_NAMES: &[&str] = &[
    "up",
    "down",
    "left",
    "right",
    "enter",
    "tab",
    "escape",
    "backspace",
    "ctrl-c",
    "ctrl-d",
    "home",
    "end",
    "pageup",
    "pagedown",
    "f1",
    "f2",
    "f3",
    "f4",
    "f5",
    "f6",
    "f7",
    "f8",
    "f9",
    "f10",
    "f11",
    "f12",
];

/// The bytes a terminal sends for `key`. Arrows, Home and End differ in application cursor mode.
pub fn key_bytes(key: &str, application_cursor: bool) -> Option<&'static [u8]> {
    let app = application_cursor;
    Some(match key {
        "up" if app => b"\x1bOA",
        "down" if app => b"\x1bOB",
        "right" if app => b"\x1bOC",
        "left" if app => b"\x1bOD",
        "home" if app => b"\x1bOH",
        "end" if app => b"\x1bOF",
        "up" => b"\x1b[A",
        "down" => b"\x1b[B",
        "right" => b"\x1b[C",
        "left" => b"\x1b[D",
        "home" => b"\x1b[H",
        "end" => b"\x1b[F",
        "enter" => b"\r",
        "tab" => b"\t",
        "escape" => b"\x1b",
        "backspace" => b"\x7f",
        "ctrl-c" => b"\x03",
        "ctrl-d" => b"\x04",
        "pageup" => b"\x1b[5~",
        "pagedown" => b"\x1b[6~",
        "f1" => b"\x1bOP",
        "f2" => b"\x1bOQ",
        "f3" => b"\x1bOR",
        "f4" => b"\x1bOS",
        "f5" => b"\x1b[15~",
        "f6" => b"\x1b[17~",
        "f7" => b"\x1b[18~",
        "f8" => b"\x1b[19~",
        "f9" => b"\x1b[20~",
        "f10" => b"\x1b[21~",
        "f11" => b"\x1b[23~",
        "f12" => b"\x1b[24~",
        _ => return None,
    })
}

/// Text for the model: PTY output loses its escape sequences and carriage returns before
/// newlines; pipe output is decoded as it is.
pub fn model_text(bytes: &[u8], pty: bool) -> String {
    if pty {
        let stripped = strip_ansi_escapes::strip(bytes);
        String::from_utf8_lossy(&stripped).replace("\r\n", "\n")
    } else {
        String::from_utf8_lossy(bytes).into_owned()
    }
}

struct OutputState {
    log: OutputLog,
    live: LiveBuffer,
    vt: Option<vt100::Parser>,
    /// Offset up to which poll/wait have shown output.
    seen: u64,
    /// Consecutive poll/wait calls that found nothing new.
    quiet_checks: u32,
}

type Input = Arc<Mutex<Option<Box<dyn Write + Send>>>>;

struct Session {
    id: String,
    command: String,
    cwd: String,
    pty: bool,
    started_ms: u64,
    pgid: i32,
    notify: AtomicBool,
    killed: AtomicBool,
    out: Mutex<OutputState>,
    status: watch::Sender<SessionStatus>,
    input: Input,
    master: Mutex<Option<std::os::fd::OwnedFd>>,
    events: EventSink,
}

impl Session {
    fn status(&self) -> SessionStatus {
        *self.status.borrow()
    }

    fn summary(&self) -> SessionSummary {
        let status = self.status();
        SessionSummary {
            session_id: self.id.clone(),
            command: self.command.clone(),
            running: status == SessionStatus::Running,
            exit_code: status.exit().and_then(|e| e.code),
            pty: self.pty,
            started_ms: self.started_ms,
        }
    }

    fn flush_live(&self) {
        let chunk = {
            let mut o = self.out.lock();
            let OutputState { log, live, .. } = &mut *o;
            live.flush_from(|n| log.latest(n))
        };
        if let Some(chunk) = chunk.filter(|c| !c.is_empty()) {
            self.events.send(Event::SessionOutput {
                session_id: self.id.clone(),
                chunk,
            });
        }
    }
}

/// One entry of `list` (read back leniently for the words of a listing).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SessionInfo {
    pub session_id: String,
    pub command: String,
    pub cwd: String,
    /// `running` or `exited`.
    pub status: String,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub pty: bool,
    pub started_ms: u64,
    pub total_bytes: u64,
}

/// What `poll`, `wait` and `kill` report.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionView {
    pub status: SessionStatus,
    /// New output since the previous poll/wait (its tail, at most the view's size).
    pub output: String,
    /// Absolute offset where `output` begins.
    pub output_offset: u64,
    pub new_bytes: u64,
    pub total_bytes: u64,
    pub dropped_bytes: u64,
    /// Two checks in a row found nothing new: notification was switched on.
    pub notify_enabled_now: bool,
    pub pty: bool,
    /// The PTY's current screen (what a person would see), for PTY sessions.
    pub screen: Option<String>,
}

/// A new session's request.
#[derive(Debug, Clone)]
pub struct SessionRequest {
    pub spawn: SpawnSpec,
    /// Workspace-relative, for listings.
    pub cwd_label: String,
    pub notify: bool,
}

struct Inner {
    sessions: Mutex<BTreeMap<String, Arc<Session>>>,
    order: Mutex<VecDeque<String>>,
    max_sessions: usize,
    cleanup: CleanupTimes,
    next_id: AtomicU64,
}

impl Inner {
    fn summaries(&self) -> Vec<SessionSummary> {
        self.sessions.lock().values().map(|x| x.summary()).collect()
    }
}

/// The background sessions of one pablo session.
pub struct SessionManager {
    inner: Arc<Inner>,
}

impl SessionManager {
    /// `max_sessions` bounds the live sessions; as many exited ones are kept readable.
    pub fn new(max_sessions: usize, cleanup: CleanupTimes) -> Self {
        Self {
            inner: Arc::new(Inner {
                sessions: Mutex::new(BTreeMap::new()),
                order: Mutex::new(VecDeque::new()),
                max_sessions: max_sessions.max(1),
                cleanup,
                next_id: AtomicU64::new(1),
            }),
        }
    }

    fn get(&self, id: &str) -> Result<Arc<Session>, ProcessError> {
        self.inner
            .sessions
            .lock()
            .get(id)
            .cloned()
            .ok_or_else(|| ProcessError::UnknownSession { id: id.to_string() })
    }

    /// Whether a session with this id exists (running or kept after exit).
    pub fn exists(&self, id: &str) -> bool {
        self.get(id).is_ok()
    }

    pub fn running_count(&self) -> usize {
        self.inner
            .sessions
            .lock()
            .values()
            .filter(|x| x.status() == SessionStatus::Running)
            .count()
    }

    /// The sessions as front-ends list them.
    pub fn summaries(&self) -> Vec<SessionSummary> {
        self.inner.summaries()
    }

    /// Starts a command in the background. Must be called inside a tokio runtime.
    pub fn start(&self, req: SessionRequest, events: EventSink) -> Result<String, ProcessError> {
        if self.running_count() >= self.inner.max_sessions {
            return Err(ProcessError::TooManySessions {
                max: self.inner.max_sessions,
            });
        }
        let started = spawn(&req.spawn)?;
        let id = format!("s{}", self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let (status, _) = watch::channel(SessionStatus::Running);
        let vt = req.spawn.pty.then(|| {
            vt100::Parser::new(
                std::num::NonZeroU16::new(PTY_ROWS).unwrap_or(std::num::NonZeroU16::MIN),
                std::num::NonZeroU16::new(PTY_COLS).unwrap_or(std::num::NonZeroU16::MIN),
                0,
            )
        });
        let session = Arc::new(Session {
            id: id.clone(),
            command: req.spawn.command.clone(),
            cwd: req.cwd_label.clone(),
            pty: req.spawn.pty,
            started_ms: unix_ms(),
            pgid: started.pid,
            notify: AtomicBool::new(req.notify),
            killed: AtomicBool::new(false),
            out: Mutex::new(OutputState {
                log: OutputLog::new(WINDOW_BYTES),
                live: LiveBuffer::default(),
                vt,
                seen: 0,
                quiet_checks: 0,
            }),
            status,
            input: Arc::new(Mutex::new(started.input)),
            master: Mutex::new(started.master),
            events: events.clone(),
        });
        let reader = {
            let s = session.clone();
            pump(started.output, move |bytes| {
                let mut o = s.out.lock();
                o.log.push(bytes);
                // The live view is taken from the log's window at flush time.
                o.live.count(bytes.len());
                if let Some(vt) = o.vt.as_mut() {
                    vt.process(bytes);
                }
                true
            })
        };
        let done = match reader {
            Ok(rx) => rx,
            Err(e) => {
                signal_group(started.pid, rustix::process::Signal::KILL);
                let mut leader = started.leader;
                leader.reap();
                return Err(ProcessError::Spawn {
                    launcher: req.spawn.launcher,
                    message: format!("cannot start the output reader: {e}"),
                });
            }
        };
        self.inner
            .sessions
            .lock()
            .insert(id.clone(), session.clone());
        self.inner.order.lock().push_back(id.clone());
        self.evict_exited();
        tokio::spawn(supervise(
            session,
            started.leader,
            started.status,
            done,
            Arc::downgrade(&self.inner),
        ));
        events.send(Event::Sessions {
            sessions: self.summaries(),
        });
        Ok(id)
    }

    /// Forgets the oldest exited sessions beyond the retention count.
    fn evict_exited(&self) {
        let (mut map, mut order) = (self.inner.sessions.lock(), self.inner.order.lock());
        let exited: Vec<String> = order
            .iter()
            .filter(|id| {
                map.get(*id)
                    .is_some_and(|s| s.status() != SessionStatus::Running)
            })
            .cloned()
            .collect();
        let excess = exited.len().saturating_sub(self.inner.max_sessions);
        for id in exited.into_iter().take(excess) {
            map.remove(&id);
            order.retain(|x| *x != id);
        }
    }

    pub fn list(&self) -> Vec<SessionInfo> {
        let sessions: Vec<Arc<Session>> = self.inner.sessions.lock().values().cloned().collect();
        sessions
            .iter()
            .map(|s| {
                let status = s.status();
                SessionInfo {
                    session_id: s.id.clone(),
                    command: s.command.clone(),
                    cwd: s.cwd.clone(),
                    status: status.label().to_string(),
                    exit_code: status.exit().and_then(|e| e.code),
                    signal: status
                        .exit()
                        .and_then(|e| e.signal)
                        .map(super::group::signal_name),
                    pty: s.pty,
                    started_ms: s.started_ms,
                    total_bytes: s.out.lock().log.total(),
                }
            })
            .collect()
    }

    /// The state and the new output since the last check, without blocking.
    pub fn poll(&self, id: &str) -> Result<SessionView, ProcessError> {
        let s = self.get(id)?;
        Ok(view(&s, POLL_PREVIEW_BYTES, true))
    }

    /// Blocks until the session exits, `timeout` passes or `cancel` fires. A session still
    /// running at the end is reported as such, not as an error.
    pub async fn wait(
        &self,
        id: &str,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<SessionView, ProcessError> {
        let s = self.get(id)?;
        let mut rx = s.status.subscribe();
        tokio::select! {
            _ = rx.wait_for(|st| *st != SessionStatus::Running) => {}
            () = tokio::time::sleep(timeout) => {}
            () = cancel.cancelled() => {
                return Err(ProcessError::Cancelled { id: id.to_string() });
            }
        }
        Ok(view(&s, TAIL_BYTES, true))
    }

    /// A page of the retained output.
    pub fn read(
        &self,
        id: &str,
        offset: Option<u64>,
        limit: usize,
    ) -> Result<(LogPage, SessionStatus, bool), ProcessError> {
        let s = self.get(id)?;
        let page = s.out.lock().log.read(offset, limit);
        Ok((page, s.status(), s.pty))
    }

    /// Writes to the session's stdin (the PTY for PTY sessions). With `eof`, stdin is closed
    /// afterwards (a PTY gets Ctrl-D instead, as a terminal would).
    pub async fn write(&self, id: &str, data: &[u8], eof: bool) -> Result<usize, ProcessError> {
        let s = self.get(id)?;
        if s.status() != SessionStatus::Running {
            return Err(ProcessError::SessionNotRunning { id: id.to_string() });
        }
        let mut bytes = data.to_vec();
        if eof && s.pty {
            bytes.push(0x04);
        }
        let written = write_input(&s, bytes).await?;
        if eof && !s.pty {
            let input = s.input.clone();
            let closed = tokio::task::spawn_blocking(move || {
                input.lock().take();
            });
            let _ = tokio::time::timeout(WRITE_TIMEOUT, closed).await;
        }
        Ok(written)
    }

    /// Sends named keys to a PTY session. Returns whether application cursor mode was on.
    pub async fn send_keys(&self, id: &str, keys: &[String]) -> Result<bool, ProcessError> {
        let s = self.get(id)?;
        if !s.pty {
            return Err(ProcessError::NotAPty { id: id.to_string() });
        }
        if s.status() != SessionStatus::Running {
            return Err(ProcessError::SessionNotRunning { id: id.to_string() });
        }
        let app = s
            .out
            .lock()
            .vt
            .as_ref()
            .is_some_and(|v| v.screen().application_cursor());
        let mut bytes = Vec::new();
        for key in keys {
            let b =
                key_bytes(key, app).ok_or_else(|| ProcessError::UnknownKey { key: key.clone() })?;
            bytes.extend_from_slice(b);
        }
        write_input(&s, bytes).await?;
        Ok(app)
    }

    /// Kills the session's whole group and returns the final view. The session stays readable.
    pub async fn kill(&self, id: &str, events: &EventSink) -> Result<SessionView, ProcessError> {
        let s = self.get(id)?;
        s.killed.store(true, Ordering::Relaxed);
        let survivors = if s.status() == SessionStatus::Running {
            terminate_group(s.pgid, self.inner.cleanup).await
        } else {
            Vec::new()
        };
        // The supervisor records the exit once the leader is gone and the output drained.
        let mut rx = s.status.subscribe();
        let _ = tokio::time::timeout(
            self.inner.cleanup.allowance,
            rx.wait_for(|st| *st != SessionStatus::Running),
        )
        .await;
        if !survivors.is_empty() {
            return Err(ProcessError::SessionCleanupFailed {
                id: id.to_string(),
                pgid: s.pgid,
                survivors,
            });
        }
        events.send(Event::Sessions {
            sessions: self.summaries(),
        });
        Ok(view(&s, TAIL_BYTES, true))
    }

    /// Kills every running session and waits (within the cleanup allowance) for each to end.
    pub async fn kill_all(&self) {
        let running: Vec<Arc<Session>> = self
            .inner
            .sessions
            .lock()
            .values()
            .filter(|x| x.status() == SessionStatus::Running)
            .cloned()
            .collect();
        let cleanup = self.inner.cleanup;
        let waits = running.into_iter().map(|s| async move {
            s.killed.store(true, Ordering::Relaxed);
            terminate_group(s.pgid, cleanup).await
        });
        futures::future::join_all(waits).await;
    }
}

impl Drop for SessionManager {
    fn drop(&mut self) {
        // No runtime may be left to wait on: KILL every running group at once.
        for s in self.inner.sessions.lock().values() {
            if s.status() == SessionStatus::Running {
                s.killed.store(true, Ordering::Relaxed);
                signal_group(s.pgid, rustix::process::Signal::KILL);
            }
        }
    }
}

/// Writes to a session's input on a blocking thread, with a bound on how long it may block.
async fn write_input(s: &Session, bytes: Vec<u8>) -> Result<usize, ProcessError> {
    let input = s.input.clone();
    let len = bytes.len();
    let id = s.id.clone();
    let job = tokio::task::spawn_blocking(move || -> Result<(), String> {
        let mut guard = input.lock();
        let w = guard
            .as_mut()
            .ok_or_else(|| "stdin is already closed".to_string())?;
        w.write_all(&bytes).map_err(|e| e.to_string())?;
        w.flush().map_err(|e| e.to_string())
    });
    match tokio::time::timeout(WRITE_TIMEOUT, job).await {
        Ok(Ok(Ok(()))) => Ok(len),
        Ok(Ok(Err(message))) => Err(ProcessError::Input { id, message }),
        Ok(Err(e)) => Err(ProcessError::Internal(e.to_string())),
        Err(_) => Err(ProcessError::Input {
            id,
            message: format!(
                "the write did not complete within {} s; the program is not reading its input",
                WRITE_TIMEOUT.as_secs()
            ),
        }),
    }
}

/// Builds the view of new output since the last check and advances the check position.
fn view(s: &Session, max_bytes: usize, advance: bool) -> SessionView {
    let status = s.status();
    let mut o = s.out.lock();
    let total = o.log.total();
    let new_bytes = total - o.seen.min(total);
    let from = o.seen.max(total.saturating_sub(max_bytes as u64));
    let page = o.log.read(Some(from), max_bytes);
    let mut notify_enabled_now = false;
    if advance {
        if new_bytes == 0 && status == SessionStatus::Running {
            o.quiet_checks += 1;
            if o.quiet_checks >= 2 && !s.notify.swap(true, Ordering::Relaxed) {
                notify_enabled_now = true;
            }
        } else {
            o.quiet_checks = 0;
        }
        o.seen = total;
    }
    let screen = o.vt.as_ref().map(|v| v.screen().contents());
    SessionView {
        status,
        output: model_text(&page.bytes, s.pty),
        output_offset: page.offset,
        new_bytes,
        total_bytes: total,
        dropped_bytes: page.dropped_bytes,
        notify_enabled_now,
        pty: s.pty,
        screen,
    }
}

/// Follows one session from start to recorded exit: live output, group cleanup, reaping, drain.
async fn supervise(
    s: Arc<Session>,
    mut leader: super::spawn::Leader,
    status: Option<std::os::fd::OwnedFd>,
    mut done: tokio::sync::oneshot::Receiver<()>,
    inner: Weak<Inner>,
) {
    let mut exit_rx = watch_exit(s.pgid, status);
    let mut tick = tokio::time::interval(LIVE_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = exit_rx.wait_for(Option::is_some) => break,
            _ = tick.tick() => s.flush_live(),
        }
    }
    let cleanup = inner.upgrade().map(|i| i.cleanup).unwrap_or_default();
    let deadline = Instant::now() + cleanup.allowance;
    // What the leader left behind in its group goes with it.
    let _ = terminate_group(s.pgid, cleanup).await;
    let exit = (*exit_rx.borrow()).unwrap_or_default();
    leader.reap();
    loop {
        tokio::select! {
            _ = &mut done => break,
            () = tokio::time::sleep_until(deadline.into()) => break,
            _ = tick.tick() => s.flush_live(),
        }
    }
    s.flush_live();
    s.input.lock().take();
    s.master.lock().take();
    s.status.send_replace(SessionStatus::Exited(exit));
    if s.notify.load(Ordering::Relaxed) && !s.killed.load(Ordering::Relaxed) {
        s.events.send(Event::SessionExited {
            session_id: s.id.clone(),
            exit_code: exit.code,
        });
    }
    if let Some(inner) = inner.upgrade() {
        s.events.send(Event::Sessions {
            sessions: inner.summaries(),
        });
    }
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_keeps_exact_offsets_across_the_window() {
        let mut log = OutputLog::new(10);
        log.push(b"0123456789");
        log.push(b"abcde");
        assert_eq!(log.total(), 15);
        assert_eq!(log.dropped(), 5);
        let p = log.read(Some(0), 4);
        assert_eq!(p.skipped_bytes, 5);
        assert_eq!(p.offset, 5);
        assert_eq!(p.bytes, b"5678");
        assert_eq!(p.next_offset, 9);
        assert!(p.has_more);
        let p = log.read(None, 3);
        assert_eq!(p.bytes, b"cde");
        assert!(!p.has_more);
        let p = log.read(Some(99), 3);
        assert!(p.bytes.is_empty());
        assert_eq!(p.offset, 15);
    }

    #[test]
    fn latest_is_the_raw_end_of_the_window_even_mid_character() {
        let mut log = OutputLog::new(6);
        log.push("ab€".as_bytes());
        assert_eq!(log.latest(2), &"€".as_bytes()[1..]);
        log.push(b"xyz");
        // The window holds the last 6 bytes; asking for more gives what is held.
        assert_eq!(log.latest(100), "€xyz".as_bytes());
        assert_eq!(log.latest(0), b"");
    }

    /// The live view of a session, taken from its log at flush time, is what copying every
    /// chunk into a separate live ring showed.
    #[test]
    fn live_view_from_the_log_equals_the_copied_live_view() {
        let mut log = OutputLog::new(WINDOW_BYTES);
        let (mut copied, mut counted) = (LiveBuffer::default(), LiveBuffer::default());
        let data = "x€y😀\n".repeat(20_000).into_bytes();
        let mut at = 0;
        for (i, n) in [1usize, 3, 5000, 17, 40_000, 2, 65_536, 9]
            .iter()
            .cycle()
            .take(40)
            .enumerate()
        {
            let chunk = &data[at..(at + n).min(data.len())];
            at = (at + n).min(data.len());
            log.push(chunk);
            copied.push(chunk);
            counted.count(chunk.len());
            if i % 3 == 0 {
                assert_eq!(
                    counted.flush_from(|n| log.latest(n)),
                    copied.flush(),
                    "flush {i}"
                );
            }
        }
        assert_eq!(counted.flush_from(|n| log.latest(n)), copied.flush());
    }

    #[test]
    fn a_page_does_not_end_inside_a_character() {
        let mut log = OutputLog::new(100);
        log.push("a€b".as_bytes());
        let p = log.read(Some(0), 2);
        assert_eq!(p.bytes, b"a");
        assert_eq!(p.next_offset, 1);
        let p = log.read(Some(1), 2);
        // A single character longer than the page is returned whole rather than never.
        assert_eq!(p.bytes, &"€".as_bytes()[..2]);
    }

    #[test]
    fn keys_follow_application_cursor_mode() {
        assert_eq!(key_bytes("up", false), Some(&b"\x1b[A"[..]));
        assert_eq!(key_bytes("up", true), Some(&b"\x1bOA"[..]));
        assert_eq!(key_bytes("ctrl-c", true), Some(&b"\x03"[..]));
        assert_eq!(key_bytes("f12", false), Some(&b"\x1b[24~"[..]));
        assert_eq!(key_bytes("hyper", false), None);
        for k in KEY_NAMES {
            assert!(key_bytes(k, false).is_some(), "{k}");
        }
    }

    #[test]
    fn pty_text_for_the_model_has_no_escapes() {
        assert_eq!(model_text(b"\x1b[31mred\x1b[0m\r\n", true), "red\n");
        assert_eq!(model_text(b"\x1b[31m", false), "\x1b[31m");
    }
}
