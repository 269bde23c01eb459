//! One foreground command, start to proven end: spawn, capture, timeout or cancel, group cleanup,
//! drain.
//!
//! The order matters. The command ends (its leader exits, the timeout fires or the turn is
//! cancelled); then the whole group is signalled and checked; then the leader is reaped; then the
//! pipe is drained until every writer has closed it. Each wait after the command's end comes out
//! of one cleanup allowance, so a call never hangs on a process that refuses to go.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::ProcessError;
use super::capture::{Capture, InlineView, LIVE_MAX_BYTES, LiveBuffer};
use super::group::{CleanupTimes, ExitInfo, terminate_group, watch_exit};
use super::spawn::{SpawnSpec, spawn};

/// How often live output is flushed to the front-end, at most.
pub const LIVE_INTERVAL: Duration = Duration::from_millis(50);

/// Size of one read from the command's output.
const READ_CHUNK: usize = 1 << 20;

/// Reads `output` on its own thread until end of file, handing each chunk to `on_data`. When
/// `on_data` returns `false` the thread stops reading. The receiver fires when the thread ends.
pub fn pump(
    mut output: Box<dyn Read + Send>,
    mut on_data: impl FnMut(&[u8]) -> bool + Send + 'static,
) -> Result<oneshot::Receiver<()>, std::io::Error> {
    let (tx, rx) = oneshot::channel();
    std::thread::Builder::new()
        .name("pablo-output".into())
        .spawn(move || {
            let mut buf = vec![0u8; READ_CHUNK];
            loop {
                match output.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if !on_data(&buf[..n]) {
                            break;
                        }
                        // Let the writer get ahead before the next read. A reader that goes
                        // straight back into read() finds the pipe almost empty, takes a few KiB,
                        // and trades the pipe's lock and wake-ups with the writer once per write.
                        // Measured on 1 GB (BENCHMARKS.md, Shell): a bare read loop ran 2x faster
                        // with this yield; pablo's loop, which already does some work between
                        // reads, gained ~10% (modest, near the noise). The yield only
                        // follows a read that returned data, and returns at once when nothing
                        // else wants the CPU, so a quiet command sees no delay.
                        std::thread::yield_now();
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    // EIO on a PTY master means every slave is closed: the end.
                    Err(_) => break,
                }
            }
            let _ = tx.send(());
        })?;
    Ok(rx)
}

/// A foreground command to run.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub spawn: SpawnSpec,
    pub timeout: Duration,
    pub max_output_bytes: usize,
    /// Where the full stream is spilled if it exceeds `max_output_bytes`.
    pub artifact_path: PathBuf,
    pub cleanup: CleanupTimes,
}

/// How a foreground command ended.
#[derive(Debug)]
pub struct RunReport {
    pub exit: ExitInfo,
    pub timed_out: bool,
    pub cancelled: bool,
    /// From start to the end of the command (its exit, the timeout or the cancellation).
    pub duration: Duration,
    pub view: InlineView,
    pub artifact: Option<PathBuf>,
    pub artifact_error: Option<String>,
    /// False when a process outside the group still held the output open at the end of the
    /// cleanup allowance; the output may then be incomplete.
    pub drained: bool,
    /// The hosts the sandbox's network proxy refused the command, each once.
    pub network_refused: Vec<String>,
}

struct Shared {
    capture: Option<Capture>,
    live: LiveBuffer,
}

/// When the capture's tail holds a live flush's worth of bytes, the live view is taken from it at
/// flush time instead of from a second copy of every chunk.
fn live_from(capture: &Capture) -> bool {
    capture.tail_capacity() >= LIVE_MAX_BYTES
}

impl Shared {
    fn push(&mut self, bytes: &[u8]) -> bool {
        let Some(capture) = self.capture.as_mut() else {
            return false;
        };
        capture.push(bytes);
        if live_from(capture) {
            self.live.count(bytes.len());
        } else {
            self.live.push(bytes);
        }
        true
    }

    fn flush_live(&mut self) -> Option<String> {
        match self.capture.as_ref() {
            Some(c) if live_from(c) => self.live.flush_from(|n| c.latest(n)),
            _ => self.live.flush(),
        }
    }
}

fn flush_live(shared: &Mutex<Shared>, live: &mut impl FnMut(String)) {
    let chunk = shared.lock().flush_live();
    if let Some(chunk) = chunk.filter(|c| !c.is_empty()) {
        live(chunk);
    }
}

enum End {
    Exited,
    TimedOut,
    Cancelled,
}

/// Runs one command to its proven end. `live` receives coalesced output while it runs.
///
/// Returns [`ProcessError::CleanupFailed`] (with the report inside) when a member of the group
/// survived the cleanup.
pub async fn run_foreground(
    req: RunRequest,
    cancel: &CancellationToken,
    mut live: impl FnMut(String),
) -> Result<RunReport, ProcessError> {
    let started = Instant::now();
    let spawned = spawn(&req.spawn)?;
    let pid = spawned.pid;
    let mut leader = spawned.leader;
    // Stdin is closed: for a pipe it is /dev/null; a PTY gets end-of-file (Ctrl-D at the start
    // of a line) at once. The writer itself stays open until the end: dropping it would also send
    // a newline, which the terminal would echo into the output.
    let mut input = spawned.input;
    if let Some(w) = input.as_mut() {
        let _ = w.write_all(&[0x04]).and_then(|()| w.flush());
    }
    let master = spawned.master;
    let shared = Arc::new(Mutex::new(Shared {
        capture: Some(Capture::new(
            req.max_output_bytes,
            req.artifact_path.clone(),
        )),
        live: LiveBuffer::default(),
    }));
    let stop = Arc::new(AtomicBool::new(false));
    let mut exit_rx = watch_exit(pid, spawned.status);
    let pumped = {
        let shared = shared.clone();
        let stop = stop.clone();
        pump(spawned.output, move |bytes| {
            if stop.load(Ordering::Relaxed) {
                return false;
            }
            shared.lock().push(bytes)
        })
    };
    let mut done = match pumped {
        Ok(rx) => rx,
        Err(e) => {
            // No reader: stop the command rather than let it block on a full pipe.
            let _ = terminate_group(pid, req.cleanup).await;
            leader.reap();
            return Err(ProcessError::Spawn {
                launcher: req.spawn.launcher.clone(),
                message: format!("cannot start the output reader: {e}"),
            });
        }
    };
    let mut tick = tokio::time::interval(LIVE_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let deadline = tokio::time::sleep(req.timeout);
    tokio::pin!(deadline);
    let end = loop {
        tokio::select! {
            r = exit_rx.wait_for(Option::is_some) => {
                let _ = r;
                break End::Exited;
            }
            () = &mut deadline => break End::TimedOut,
            () = cancel.cancelled() => break End::Cancelled,
            _ = tick.tick() => flush_live(&shared, &mut live),
        }
    };
    let duration = started.elapsed();
    let cleanup_started = Instant::now();
    let cleanup_deadline = cleanup_started + req.cleanup.allowance;
    let survivors = terminate_group(pid, req.cleanup).await;
    // The leader is normally gone with its group; if it left the group, end it directly.
    let exit = match wait_exit(&mut exit_rx, cleanup_deadline).await {
        Some(info) => info,
        None => {
            if let Some(p) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
            }
            wait_exit(&mut exit_rx, Instant::now() + Duration::from_secs(1))
                .await
                .unwrap_or_default()
        }
    };
    leader.reap();
    // The command has ended: its proxy stops, and says what it refused.
    let network_refused = leader
        .proxy
        .take()
        .map(|p| p.refused_hosts())
        .unwrap_or_default();
    // Drain what the group wrote before it ended.
    let drained = loop {
        tokio::select! {
            _ = &mut done => break true,
            () = tokio::time::sleep_until(cleanup_deadline.into()) => break false,
            _ = tick.tick() => flush_live(&shared, &mut live),
        }
    };
    if !drained {
        stop.store(true, Ordering::Relaxed);
    }
    flush_live(&shared, &mut live);
    drop(input);
    drop(master);
    let capture = shared
        .lock()
        .capture
        .take()
        .ok_or_else(|| ProcessError::Internal("the output capture was lost".into()))?;
    let result = capture.finish();
    let report = RunReport {
        exit,
        timed_out: matches!(end, End::TimedOut),
        cancelled: matches!(end, End::Cancelled),
        duration,
        view: result.view,
        artifact: result.artifact,
        artifact_error: result.artifact_error,
        drained,
        network_refused,
    };
    if !survivors.is_empty() {
        return Err(ProcessError::CleanupFailed {
            pgid: pid,
            survivors,
            report: Box::new(report),
        });
    }
    Ok(report)
}

/// Waits for the exit watcher until `deadline`.
async fn wait_exit(
    rx: &mut tokio::sync::watch::Receiver<Option<ExitInfo>>,
    deadline: Instant,
) -> Option<ExitInfo> {
    let waited = tokio::time::timeout_at(deadline.into(), rx.wait_for(Option::is_some))
        .await
        .ok()
        .and_then(|r| r.ok().and_then(|v| *v));
    waited.or_else(|| *rx.borrow())
}
