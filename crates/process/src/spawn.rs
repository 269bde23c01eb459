//! Starting a command: the working directory, pipes or a PTY, the sandbox.
//!
//! A command never sees pablo's own environment block: it gets exactly the variables
//! [`super::env::CommandEnv`] chose (the toolchain, no secrets). Its working directory is resolved
//! by the workspace before it gets here.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::process::Pid;

use super::ProcessError;
use super::child::{self, Prepared};
use super::group::ExitInfo;
use super::sandbox::{self, Sandbox};
use super::start::{Exec, on_spawner, run_prepared_in, start};

/// What to start.
#[derive(Debug, Clone)]
pub struct SpawnSpec {
    /// The program that receives `-c COMMAND`.
    pub launcher: String,
    pub command: String,
    /// Absolute, already resolved inside the workspace.
    pub cwd: PathBuf,
    /// The same directory, opened beneath the workspace when it was checked. When present the
    /// command starts in this very directory (`fchdir`), so a name swapped for a link between the
    /// check and the start is not followed.
    pub cwd_handle: Option<Arc<OwnedFd>>,
    pub env: Vec<(String, String)>,
    pub pty: bool,
    /// Keep a writable stdin (background sessions); otherwise stdin is `/dev/null` (or the PTY).
    pub stdin: bool,
    /// The OS sandbox the command runs in.
    pub sandbox: Sandbox,
}

/// The leader process: pablo's child, the group leader (with namespaces, the command's init).
pub struct Leader {
    pid: i32,
    /// The network proxy the command reaches its allowed hosts through: it serves for as long
    /// as the leader is held, which is until the command has ended and been reaped.
    pub proxy: Option<super::netproxy::Proxy>,
}

impl Leader {
    /// Reaps the leader if it has exited; never blocks.
    pub fn reap(&mut self) {
        if let Some(p) = Pid::from_raw(self.pid) {
            let _ = rustix::process::waitpid(Some(p), rustix::process::WaitOptions::NOHANG);
        }
    }
}

/// A started command.
pub struct Started {
    /// The leader's pid, which is also the process group id.
    pub pid: i32,
    pub leader: Leader,
    /// With namespaces: the pipe the command's init reports the command's wait status on.
    pub status: Option<OwnedFd>,
    /// Merged stdout and stderr (or the PTY master).
    pub output: Box<dyn Read + Send>,
    pub input: Option<Box<dyn Write + Send>>,
    /// The PTY master, kept open for the life of a PTY command.
    pub master: Option<OwnedFd>,
}

/// Starts `launcher -c command` in a new process group (a new session with a PTY), inside its
/// sandbox and, where the kernel allows, its own user and PID namespaces.
///
/// Every start happens on one long-lived thread (see [`spawner`]), and the leader, an init of
/// pablo's, gets the parent-death signal. With a PID namespace the leader is the namespace's
/// init: if pablo is killed outright, the kernel kills it, and its death ends every process the
/// command started. Without one (user namespaces refused) it is a subreaper that kills what the
/// command started when pablo dies or the command ends (`child::supervise`). Normal exits and
/// cancellations end the whole group either way (see `group.rs`).
pub fn spawn(spec: &SpawnSpec) -> Result<Started, ProcessError> {
    let prepared = sandbox::prepare(&spec.sandbox, sandbox::support())
        .map_err(|e| ProcessError::sandbox(&spec.launcher, e))?;
    let mut owned = spec.clone();
    if prepared.proxy {
        super::netproxy::set_proxy_env(&mut owned.env);
    }
    on_spawner(move || {
        if owned.pty {
            spawn_pty(&owned, &prepared)
        } else {
            spawn_pipes(&owned, &prepared)
        }
    })
    .unwrap_or_else(|| Err(spawn_failed(spec, "the spawner thread stopped")))
}

fn spawn_failed(spec: &SpawnSpec, e: impl std::fmt::Display) -> ProcessError {
    ProcessError::Spawn {
        launcher: spec.launcher.clone(),
        message: e.to_string(),
    }
}

fn shell_exec(spec: &SpawnSpec) -> Result<Exec, ProcessError> {
    let argv = [spec.launcher.clone(), "-c".into(), spec.command.clone()];
    Exec::new(&argv, &spec.env, &spec.cwd).map_err(|e| spawn_failed(spec, e))
}

fn io_failed(spec: &SpawnSpec, what: &str, e: impl std::fmt::Display) -> ProcessError {
    spawn_failed(spec, format!("{what}: {e}"))
}

fn spawn_pipes(spec: &SpawnSpec, prepared: &Prepared) -> Result<Started, ProcessError> {
    let exec = shell_exec(spec)?;
    // One pipe for both streams: the kernel keeps the order in which the command wrote.
    let (reader, writer) = std::io::pipe().map_err(|e| io_failed(spec, "pipe", e))?;
    widen_pipe(&writer);
    let writer = child::above_stdio(OwnedFd::from(writer)).map_err(|e| spawn_failed(spec, e))?;
    let (stdin_child, stdin_ours) = if spec.stdin {
        let (r, w) = std::io::pipe().map_err(|e| io_failed(spec, "pipe", e))?;
        let r = child::above_stdio(OwnedFd::from(r)).map_err(|e| spawn_failed(spec, e))?;
        (r, Some(w))
    } else {
        let null = std::fs::File::open("/dev/null").map_err(|e| io_failed(spec, "/dev/null", e))?;
        let null = child::above_stdio(OwnedFd::from(null)).map_err(|e| spawn_failed(spec, e))?;
        (null, None)
    };
    let cwd_fd = spec.cwd_handle.as_ref().map(|h| h.as_raw_fd());
    let out = writer.as_raw_fd();
    let mut started = start(
        &exec,
        cwd_fd,
        [Some(stdin_child.as_raw_fd()), Some(out), Some(out)],
        None,
        prepared,
    )
    .map_err(|e| spawn_failed(spec, e))?;
    // Our copies of the child's ends must go, or the pipe never reports end of file.
    drop(writer);
    drop(stdin_child);
    Ok(Started {
        pid: started.pid,
        leader: leader(spec, &mut started),
        status: started.status,
        output: Box::new(reader),
        input: stdin_ours.map(|w| Box::new(w) as Box<dyn Write + Send>),
        master: None,
    })
}

/// The leader of a started command, with the proxy serving the port its init opened.
fn leader(spec: &SpawnSpec, started: &mut child::Spawned) -> Leader {
    Leader {
        pid: started.pid,
        proxy: super::netproxy::serve_sent(
            started.proxy_listener.take(),
            &spec.sandbox.network_allow,
        ),
    }
}

/// The capture pipe's buffer: with 1 MiB instead of the default 64 KiB a fast writer blocks (and
/// wakes the reader) far less often, which roughly halves the cost of capturing a large output.
const PIPE_BYTES: i32 = 1 << 20;

/// Best effort: a system limit (`/proc/sys/fs/pipe-max-size`, per-user pipe quotas) may refuse,
/// and the default size still works.
fn widen_pipe(pipe: &std::io::PipeWriter) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
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

/// A new PTY: the master (close-on-exec, pablo's) and the slave (for the child).
fn open_pty() -> std::io::Result<(OwnedFd, OwnedFd)> {
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
    grantpt(&master)?;
    unlockpt(&master)?;
    let name = ptsname(&master, Vec::new())?;
    let slave = rustix::fs::open(
        name.as_c_str(),
        rustix::fs::OFlags::RDWR | rustix::fs::OFlags::NOCTTY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    rustix::termios::tcsetwinsize(
        &master,
        rustix::termios::Winsize {
            ws_row: PTY_ROWS,
            ws_col: PTY_COLS,
            ws_xpixel: 0,
            ws_ypixel: 0,
        },
    )?;
    Ok((master, slave))
}

fn spawn_pty(spec: &SpawnSpec, prepared: &Prepared) -> Result<Started, ProcessError> {
    let mut spec = spec.clone();
    // Terminal programs read SHELL to start subshells; make it the launcher rather than the
    // person's login shell.
    spec.env.retain(|(k, _)| k != "SHELL");
    spec.env.push(("SHELL".into(), spec.launcher.clone()));
    let exec = shell_exec(&spec)?;
    let (master, slave) = open_pty().map_err(|e| io_failed(&spec, "cannot open a PTY", e))?;
    let slave = child::above_stdio(slave).map_err(|e| spawn_failed(&spec, e))?;
    let cwd_fd = spec.cwd_handle.as_ref().map(|h| h.as_raw_fd());
    let tty = slave.as_raw_fd();
    let mut started = start(
        &exec,
        cwd_fd,
        [Some(tty), Some(tty), Some(tty)],
        Some(tty),
        prepared,
    )
    .map_err(|e| spawn_failed(&spec, e))?;
    // The slave end belongs to the child now; holding it would hide the end of the output.
    drop(slave);
    let reader = master.try_clone().map_err(|e| io_failed(&spec, "PTY", e))?;
    let writer = master.try_clone().map_err(|e| io_failed(&spec, "PTY", e))?;
    Ok(Started {
        pid: started.pid,
        leader: leader(&spec, &mut started),
        status: started.status,
        output: Box::new(std::fs::File::from(reader)),
        input: Some(Box::new(std::fs::File::from(writer))),
        master: Some(master),
    })
}

/// Runs `argv` (resolved through `env`'s `PATH`) in `cwd` under `sandbox`, with pablo's own
/// stdin, stdout and stderr, and waits for it: `pablo sandbox`. Returns how it ended, and the
/// hosts its network proxy refused.
pub fn run_inherited(
    argv: &[String],
    cwd: &Path,
    env: &[(String, String)],
    sandbox: &Sandbox,
) -> Result<(ExitInfo, Vec<String>), ProcessError> {
    let name = argv.first().cloned().unwrap_or_default();
    let support = sandbox::support();
    let assumed = support.namespaces_assumed();
    let prepared =
        sandbox::prepare(sandbox, support).map_err(|e| ProcessError::sandbox(&name, e))?;
    match run_prepared_in(argv, cwd, env, prepared, &sandbox.network_allow) {
        // Namespaces were assumed and the start failed (before `execve`: the command did not
        // run). If the probe finds them refused, start again without; else the failure is the
        // command's own.
        Err(_) if assumed && support.namespace_support().is_err() => {
            let prepared =
                sandbox::prepare(sandbox, support).map_err(|e| ProcessError::sandbox(&name, e))?;
            run_prepared_in(argv, cwd, env, prepared, &sandbox.network_allow)
        }
        ran => ran,
    }
}
