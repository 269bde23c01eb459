//! Starting a command: the clean environment, the working directory check, pipes or a PTY.
//!
//! A command never sees pablo's own environment block: it gets exactly the variables
//! [`super::env::CommandEnv`] chose (the toolchain, no secrets). Its working directory is resolved
//! by the workspace before it gets here.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::OnceLock;

use super::ProcessError;

/// What to start.
#[derive(Debug, Clone)]
pub struct SpawnSpec {
    /// The program that receives `-c COMMAND`.
    pub launcher: String,
    pub command: String,
    /// Absolute, already resolved inside the workspace.
    pub cwd: PathBuf,
    /// The same directory, opened beneath the workspace when it was checked. When present the
    /// command starts in this very directory (through `/proc/self/fd`), so a name swapped for a
    /// link between the check and the start is not followed.
    pub cwd_handle: Option<Arc<OwnedFd>>,
    pub env: Vec<(String, String)>,
    pub pty: bool,
    /// Keep a writable stdin (background sessions); otherwise stdin is `/dev/null` (or the PTY).
    pub stdin: bool,
}

/// The leader process, as started by std or by portable-pty.
pub enum Leader {
    Plain(std::process::Child),
    Pty(Box<dyn portable_pty::Child + Send + Sync>),
}

impl Leader {
    /// Reaps the leader if it has exited; never blocks.
    pub fn reap(&mut self) {
        match self {
            Leader::Plain(c) => {
                let _ = c.try_wait();
            }
            Leader::Pty(c) => {
                let _ = c.try_wait();
            }
        }
    }
}

/// A started command.
pub struct Started {
    /// The leader's pid, which is also the process group id.
    pub pid: i32,
    pub leader: Leader,
    /// Merged stdout and stderr (or the PTY master).
    pub output: Box<dyn Read + Send>,
    pub input: Option<Box<dyn Write + Send>>,
    /// Kept open for the life of a PTY command.
    pub master: Option<Box<dyn portable_pty::MasterPty + Send>>,
}

/// Starts `launcher -c command` in a new process group (a new session with a PTY).
///
/// Without a PTY the leader also gets the parent-death signal (see [`spawn_tied`]): if pablo is
/// killed outright, the kernel kills the leader. Only the leader: the kernel clears the setting
/// in every process the leader forks, so a child it started (`sleep 300 &`) outlives a killed
/// pablo; normal exits and cancellations still end the whole group (see `group.rs`). The PTY
/// path (portable-pty) offers no hook to run code in the child before exec; there the kernel
/// hangs up the terminal when pablo's master end closes, which sends SIGHUP to the session's
/// foreground group.
pub fn spawn(spec: &SpawnSpec) -> Result<Started, ProcessError> {
    if spec.pty {
        spawn_pty(spec)
    } else {
        spawn_tied(spec)
    }
}

type SpawnJob = Box<dyn FnOnce() + Send>;

/// The thread every plain command is forked from; `None` when it could not be started.
///
/// The kernel sends the parent-death signal when the *thread* that forked the child ends, not
/// when the process does. Callers run on tokio threads, and blocking-pool threads retire after a
/// few idle seconds: forking there would kill a background job at a random later moment. This
/// thread lives as long as pablo (its sender is never dropped), so the signal means "pablo died".
fn spawner() -> Option<&'static std::sync::mpsc::Sender<SpawnJob>> {
    static SPAWNER: OnceLock<Option<std::sync::mpsc::Sender<SpawnJob>>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::channel::<SpawnJob>();
            std::thread::Builder::new()
                .name("pablo-spawner".into())
                .spawn(move || {
                    while let Ok(job) = rx.recv() {
                        job();
                    }
                })
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

/// A plain spawn on the spawner thread, with the parent-death signal. If that thread is not
/// available the command still runs, without the signal, rather than not at all.
fn spawn_tied(spec: &SpawnSpec) -> Result<Started, ProcessError> {
    let Some(spawner) = spawner() else {
        return spawn_plain(spec, false);
    };
    let (done_tx, done_rx) = std::sync::mpsc::sync_channel(1);
    let owned = spec.clone();
    let job: SpawnJob = Box::new(move || {
        let _ = done_tx.send(spawn_plain(&owned, true));
    });
    if spawner.send(job).is_err() {
        return spawn_plain(spec, false);
    }
    done_rx
        .recv()
        .unwrap_or_else(|_| Err(spawn_failed(spec, "the spawner thread stopped")))
}

/// Asks the kernel to SIGKILL the child when the thread that forks it (the spawner) ends, which
/// happens only when pablo ends.
#[cfg(any(target_os = "linux", target_os = "android"))]
#[allow(unsafe_code)]
fn die_with_pablo(cmd: &mut Command) {
    let parent = rustix::process::getpid();
    // SAFETY: the closure runs in the forked child before exec, where only async-signal-safe
    // work is allowed. It makes two plain system calls (prctl, getppid), allocates nothing
    // (the error is built from a raw errno), and touches no lock or shared state.
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
            // pablo may have died between the fork and the prctl: then no signal will ever come.
            if rustix::process::getppid() != Some(parent) {
                return Err(rustix::io::Errno::SRCH.into());
            }
            Ok(())
        });
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn die_with_pablo(_cmd: &mut Command) {}

/// Where the child changes directory: the checked handle through `/proc/self/fd` (the child
/// inherits the descriptor across the fork and changes directory before exec), or the path when
/// there is no handle or no `/proc`.
fn working_dir(spec: &SpawnSpec) -> PathBuf {
    match &spec.cwd_handle {
        Some(fd) if Path::new("/proc/self/fd").is_dir() => {
            PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        }
        _ => spec.cwd.clone(),
    }
}

fn spawn_failed(spec: &SpawnSpec, e: impl std::fmt::Display) -> ProcessError {
    ProcessError::Spawn {
        launcher: spec.launcher.clone(),
        message: e.to_string(),
    }
}

fn spawn_plain(spec: &SpawnSpec, tied: bool) -> Result<Started, ProcessError> {
    // One pipe for both streams: the kernel keeps the order in which the command wrote.
    let (reader, writer) = std::io::pipe().map_err(|e| spawn_failed(spec, e))?;
    widen_pipe(&writer);
    let writer2 = writer.try_clone().map_err(|e| spawn_failed(spec, e))?;
    let mut cmd = Command::new(&spec.launcher);
    cmd.arg("-c")
        .arg(&spec.command)
        .current_dir(working_dir(spec))
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(if spec.stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(writer)
        .stderr(writer2)
        .process_group(0);
    if tied {
        die_with_pablo(&mut cmd);
    }
    let mut child = cmd.spawn().map_err(|e| spawn_failed(spec, e))?;
    // Our copies of the write end must go, or the pipe never reports end of file.
    drop(cmd);
    let pid = child.id() as i32;
    let input = child
        .stdin
        .take()
        .map(|s| Box::new(s) as Box<dyn Write + Send>);
    Ok(Started {
        pid,
        leader: Leader::Plain(child),
        output: Box::new(reader),
        input,
        master: None,
    })
}

/// The capture pipe's buffer: with 1 MiB instead of the default 64 KiB a fast writer blocks (and
/// wakes the reader) far less often, which roughly halves the cost of capturing a large output.
const PIPE_BYTES: i32 = 1 << 20;

/// Best effort: a system limit (`/proc/sys/fs/pipe-max-size`, per-user pipe quotas) may refuse,
/// and the default size still works.
fn widen_pipe(pipe: &std::io::PipeWriter) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use std::os::fd::AsRawFd;
        let _ = nix::fcntl::fcntl(
            pipe.as_raw_fd(),
            nix::fcntl::FcntlArg::F_SETPIPE_SZ(PIPE_BYTES),
        );
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = pipe;
}

/// Rows and columns of every PTY pablo opens.
pub const PTY_ROWS: u16 = 24;
pub const PTY_COLS: u16 = 80;

fn spawn_pty(spec: &SpawnSpec) -> Result<Started, ProcessError> {
    let system = portable_pty::native_pty_system();
    let pair = system
        .openpty(portable_pty::PtySize {
            rows: PTY_ROWS,
            cols: PTY_COLS,
            pixel_width: 0,
            pixel_height: 0,
        })
        .map_err(|e| spawn_failed(spec, e))?;
    let mut cb = portable_pty::CommandBuilder::new(&spec.launcher);
    cb.env_clear();
    // portable-pty always exports SHELL; make it the launcher rather than pablo's own login shell.
    cb.env("SHELL", &spec.launcher);
    for (k, v) in &spec.env {
        cb.env(k, v);
    }
    cb.arg("-c");
    cb.arg(&spec.command);
    cb.cwd(working_dir(spec));
    let child = pair
        .slave
        .spawn_command(cb)
        .map_err(|e| spawn_failed(spec, e))?;
    // The slave end belongs to the child now; holding it would hide the end of the output.
    drop(pair.slave);
    let pid = child.process_id().map(|p| p as i32).unwrap_or(0);
    if pid == 0 {
        return Err(spawn_failed(spec, "the PTY child has no process id"));
    }
    let output = pair
        .master
        .try_clone_reader()
        .map_err(|e| spawn_failed(spec, e))?;
    let input = pair
        .master
        .take_writer()
        .map_err(|e| spawn_failed(spec, e))?;
    Ok(Started {
        pid,
        leader: Leader::Pty(child),
        output,
        input: Some(input),
        master: Some(pair.master),
    })
}
