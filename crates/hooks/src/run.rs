//! Running one hook: `sh -c COMMAND` in the workspace, with the clean environment commands get
//! (no provider key, nothing that looks secret), its input as JSON on stdin, its output read up
//! to a bound and redacted. A hook runs outside the command sandbox: it is the person's
//! program, like their editor, not the model's.
//!
//! Whatever a hook starts ends with it: a `setsid` child leaves the hook's process group, so
//! killing the group is not enough. A hook is started the way MCP and language servers are
//! (`process::server`): under an init that is the first process of a PID namespace where the
//! kernel allows one (its end ends every process in it), or a subreaper that kills every
//! descendant. When the hook exits, runs past its time, or pablo dies, nothing it started stays.

use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::{Duration, Instant};

use tokio::net::unix::pipe;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::Hook;
use pablo_process::sandbox::Sandbox;
use pablo_process::server::{ServerPipes, ServerProcess, ServerSpawn, spawn_server};

/// The most of a hook's stdout (and, apart, of its stderr) that is read; the rest is drained
/// and dropped.
pub(crate) const MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// How a hook's process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// It exited with this status.
    Exited(i32),
    /// A signal ended it.
    Killed,
    /// It ran past its timeout and was killed.
    TimedOut(Duration),
    /// It could not be started.
    NotStarted(String),
}

/// What one run of a hook gave.
#[derive(Debug, Clone)]
pub struct HookRun {
    pub end: RunEnd,
    /// Redacted, bounded, lossy UTF-8.
    pub stdout: String,
    pub stderr: String,
    pub duration: Duration,
}

pub(super) async fn run(
    hook: &Hook,
    input: &impl serde::Serialize,
    env: &[(String, String)],
    cwd: &Path,
    sandbox: Sandbox,
) -> HookRun {
    let started = Instant::now();
    let done = |end: RunEnd, stdout: Vec<u8>, stderr: Vec<u8>| HookRun {
        end,
        stdout: clean(&stdout),
        stderr: clean(&stderr),
        duration: started.elapsed(),
    };
    let (process, pipes, stderr) = match start(hook, env, cwd, sandbox).await {
        Ok(started) => started,
        Err(e) => return done(RunEnd::NotStarted(e), vec![], vec![]),
    };
    let body = serde_json::to_vec(input).unwrap_or_default();
    let mut stdin = pipes.stdin;
    let write = async move {
        // A hook that does not read its input is fine: a broken pipe is not its failure.
        let _ = stdin.write_all(&body).await;
        let _ = stdin.shutdown().await;
    };
    let work = async {
        let (_, out, err, exit) = tokio::join!(
            write,
            bounded(Some(pipes.stdout)),
            bounded(Some(stderr)),
            process.exited()
        );
        (out, err, exit)
    };
    let ran = tokio::time::timeout(hook.timeout, work).await;
    // Whatever the hook left running goes with it (its namespace, or every descendant).
    process.kill();
    match ran {
        Ok((out, err, exit)) => {
            let end = match (exit.code, exit.signal) {
                (Some(c), _) => RunEnd::Exited(c),
                _ => RunEnd::Killed,
            };
            done(end, out, err)
        }
        Err(_) => done(RunEnd::TimedOut(hook.timeout), vec![], vec![]),
    }
}

/// Starts `sh -c COMMAND` as a server is started: its process, its stdin and stdout, and the
/// read end of its stderr.
async fn start(
    hook: &Hook,
    env: &[(String, String)],
    cwd: &Path,
    sandbox: Sandbox,
) -> Result<(ServerProcess, ServerPipes, pipe::Receiver), String> {
    let (err_ours, err_child) = std::io::pipe().map_err(|e| format!("stderr pipe: {e}"))?;
    let project = cwd.to_string_lossy().into_owned();
    let mut vars: Vec<(String, String)> = env
        .iter()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "TERM" | "PABLO_PROJECT_DIR" | "CLAUDE_PROJECT_DIR"
            )
        })
        .cloned()
        .collect();
    vars.push(("TERM".into(), "dumb".into()));
    vars.push(("PABLO_PROJECT_DIR".into(), project.clone()));
    vars.push(("CLAUDE_PROJECT_DIR".into(), project));
    let spec = ServerSpawn {
        argv: vec!["/bin/sh".into(), "-c".into(), hook.command.clone()],
        env: vars,
        cwd: cwd.to_path_buf(),
        stderr: std::fs::File::from(OwnedFd::from(err_child)),
        sandbox,
    };
    let (process, pipes) = tokio::task::spawn_blocking(move || spawn_server(spec))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let stderr = pipe::Receiver::from_owned_fd(OwnedFd::from(err_ours))
        .map_err(|e| format!("stderr pipe: {e}"))?;
    Ok((process, pipes, stderr))
}

/// Reads up to [`MAX_OUTPUT_BYTES`] and drains the rest, so a chatty hook never blocks on a
/// full pipe and never fills pablo's memory.
async fn bounded(stream: Option<impl AsyncRead + Unpin>) -> Vec<u8> {
    let Some(mut s) = stream else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_OUTPUT_BYTES.saturating_sub(out.len());
                out.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    out
}

/// Lossy UTF-8 with every secret value pablo knows replaced.
fn clean(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    pablo_core::secrets::redact(&text).into_owned()
}
