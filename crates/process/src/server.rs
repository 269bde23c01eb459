//! Programs pablo talks to over their stdin and stdout for as long as a session lasts: MCP
//! servers over stdio.
//!
//! Such a program runs for minutes or hours and may start programs of its own (a `setsid`
//! daemon, a language server, a browser). The promise is the one every command gets: nothing it
//! starts outlives pablo, however pablo ends, `kill -9` included. A parent-death signal reaches
//! one process, and a subreaper inside pablo dies with pablo; neither is enough. So a server
//! starts exactly like a command (`start`, `child`): from the spawner thread, as the child of an
//! *init* that gets the parent-death signal. Where the kernel allows user namespaces, init is the
//! first process of a new PID namespace, and when it dies the kernel kills every process in the
//! namespace, whatever session or group they moved to. Where it does not, init is a subreaper
//! that, when pablo dies or the server exits, kills every process that descends from it
//! (`child::supervise`). An MCP server gets no other sandbox: it is the person's own program,
//! with the environment the config gave it. A language server runs the project's code (build
//! scripts, proc macros, plugins), so it gets the command sandbox ([`ServerSpawn::sandbox`]).

use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::time::Duration;

use tokio::net::unix::pipe;
use tokio::sync::watch;

use super::ProcessError;
use super::child::above_stdio;
use super::group::{self, ExitInfo};
use super::sandbox::{self, Sandbox};
use super::start::{Exec, on_spawner, start};

/// What to start.
#[derive(Debug)]
pub struct ServerSpawn {
    /// The program (found on `env`'s `PATH` when it has no slash) and its arguments.
    pub argv: Vec<String>,
    /// The whole environment it gets.
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    /// Where its stderr goes (a log file).
    pub stderr: std::fs::File,
    /// The OS sandbox it runs in: none for an MCP server (the person's own program); a language
    /// server's is the command sandbox, since it may run the project's code.
    pub sandbox: Sandbox,
}

/// pablo's ends of a started server's stdin and stdout.
#[derive(Debug)]
pub struct ServerPipes {
    pub stdin: pipe::Sender,
    pub stdout: pipe::Receiver,
}

/// A started server: the leader of its process group (its init), watched until it exits.
///
/// Dropping it kills the group (with a PID namespace, killing init ends everything in it); the
/// leader is reaped by its watcher once nobody can signal the group any more, so its group id
/// cannot be reused while pablo might still send it a signal.
#[derive(Debug)]
pub struct ServerProcess {
    pid: i32,
    exit: watch::Receiver<Option<ExitInfo>>,
    /// Dropped when the group will not be signalled again: the watcher then reaps the leader.
    release: Option<std::sync::mpsc::Sender<()>>,
}

/// Starts `spec` (see the module docs). Blocks briefly, until the program has been executed.
pub fn spawn_server(spec: ServerSpawn) -> Result<(ServerProcess, ServerPipes), ProcessError> {
    let name = spec.argv.first().cloned().unwrap_or_default();
    let failed = |m: String| ProcessError::Spawn {
        launcher: name.clone(),
        message: m,
    };
    let prepared = sandbox::prepare(&spec.sandbox, sandbox::support())
        .map_err(|e| ProcessError::sandbox(&name, e))?;
    let exec = Exec::new(&spec.argv, &spec.env, &spec.cwd).map_err(&failed)?;
    let pipe_pair = || -> Result<(OwnedFd, OwnedFd), String> {
        let (r, w) = std::io::pipe().map_err(|e| format!("pipe: {e}"))?;
        Ok((OwnedFd::from(r), OwnedFd::from(w)))
    };
    let (stdin_child, stdin_ours) = pipe_pair().map_err(&failed)?;
    let (stdout_ours, stdout_child) = pipe_pair().map_err(&failed)?;
    let raise = |fd: OwnedFd| above_stdio(fd).map_err(|e| e.to_string());
    let stdin_child = raise(stdin_child).map_err(&failed)?;
    let stdout_child = raise(stdout_child).map_err(&failed)?;
    let stderr_child = raise(OwnedFd::from(spec.stderr)).map_err(&failed)?;
    let started = on_spawner(move || {
        use std::os::fd::AsRawFd;
        let fds = [
            Some(stdin_child.as_raw_fd()),
            Some(stdout_child.as_raw_fd()),
            Some(stderr_child.as_raw_fd()),
        ];
        // The child's ends are closed here, on return: ours must be the only ones left, or the
        // server's stdout never reports end of file.
        start(&exec, None, fds, None, &prepared).map_err(|e| e.to_string())
    })
    .unwrap_or_else(|| Err("the spawner thread stopped".into()))
    .map_err(&failed)?;
    let process = ServerProcess::watch(started.pid, started.status);
    let pipes = ServerPipes {
        stdin: pipe::Sender::from_owned_fd(stdin_ours)
            .map_err(|e| failed(format!("stdin pipe: {e}")))?,
        stdout: pipe::Receiver::from_owned_fd(stdout_ours)
            .map_err(|e| failed(format!("stdout pipe: {e}")))?,
    };
    Ok((process, pipes))
}

impl ServerProcess {
    fn watch(pid: i32, status: Option<OwnedFd>) -> Self {
        let (tx, rx) = watch::channel(None);
        let (release, released) = std::sync::mpsc::channel::<()>();
        let spawned = std::thread::Builder::new()
            .name(format!("pablo-server-{pid}"))
            .spawn(move || {
                let info = group::wait_exit_no_reap(pid, status.as_ref());
                let _ = tx.send(Some(info));
                // Returns when the owner lets go (the sender is dropped).
                let _ = released.recv();
                if let Some(p) = rustix::process::Pid::from_raw(pid) {
                    let _ = rustix::process::waitpid(Some(p), rustix::process::WaitOptions::NOHANG);
                }
            });
        let exit = match spawned {
            Ok(_) => rx,
            // Without a watcher the exit cannot be learnt: report it unknown at once, so the
            // caller stops the server rather than waiting forever.
            Err(_) => watch::channel(Some(ExitInfo::default())).1,
        };
        Self {
            pid,
            exit,
            release: Some(release),
        }
    }

    /// How the server ended, once it has.
    pub fn exit_info(&self) -> Option<ExitInfo> {
        *self.exit.borrow()
    }

    /// Waits until the server has ended.
    pub async fn exited(&self) -> ExitInfo {
        let mut rx = self.exit.clone();
        match rx.wait_for(Option::is_some).await {
            Ok(info) => info.unwrap_or_default(),
            Err(_) => ExitInfo::default(),
        }
    }

    /// Sends `signal` to the whole group, unless the server has already ended.
    pub fn signal(&self, signal: rustix::process::Signal) {
        if self.exit_info().is_none() {
            group::signal_group(self.pid, signal);
        }
    }

    /// Ends the server: TERM to its group, up to `grace` for it to go, then KILL (which, with a
    /// PID namespace, ends everything in it at once).
    pub async fn stop(&self, grace: Duration) {
        self.signal(rustix::process::Signal::TERM);
        self.signal(rustix::process::Signal::CONT);
        if tokio::time::timeout(grace, self.exited()).await.is_err() {
            self.kill();
            let _ = tokio::time::timeout(Duration::from_secs(5), self.exited()).await;
        }
    }

    /// KILL to the group and to the leader (with a PID namespace, its init: the namespace ends).
    pub fn kill(&self) {
        if self.exit_info().is_none() {
            group::signal_group(self.pid, rustix::process::Signal::KILL);
            if let Some(p) = rustix::process::Pid::from_raw(self.pid) {
                let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
            }
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
        // No signal is sent after this: the watcher may reap the leader once it has exited.
        self.release.take();
    }
}
