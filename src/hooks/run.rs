//! Running one hook: `sh -c COMMAND` in the workspace, in a process group of its own, with the
//! clean environment commands get (no provider key, nothing that looks secret), its input as
//! JSON on stdin, its output read up to a bound and redacted, and the whole group killed when
//! its time is up. A hook runs outside the command sandbox: it is the person's program, like
//! their editor, not the model's.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::Hook;

/// The most of a hook's stdout (and, apart, of its stderr) that is read; the rest is drained
/// and dropped.
pub(crate) const MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// How a hook's process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RunEnd {
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
    pub(crate) end: RunEnd,
    /// Redacted, bounded, lossy UTF-8.
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) duration: Duration,
}

pub(super) async fn run(
    hook: &Hook,
    input: &serde_json::Value,
    env: &[(String, String)],
    cwd: &Path,
) -> HookRun {
    let started = Instant::now();
    let done = |end: RunEnd, stdout: Vec<u8>, stderr: Vec<u8>| HookRun {
        end,
        stdout: clean(&stdout),
        stderr: clean(&stderr),
        duration: started.elapsed(),
    };
    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(&hook.command)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("TERM", "dumb")
        .env("PABLO_PROJECT_DIR", cwd)
        .env("CLAUDE_PROJECT_DIR", cwd)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return done(RunEnd::NotStarted(e.to_string()), vec![], vec![]),
    };
    let pid = child.id();
    let body = serde_json::to_vec(input).unwrap_or_default();
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let write = async move {
        if let Some(mut s) = stdin {
            // A hook that does not read its input is fine: a broken pipe is not its failure.
            let _ = s.write_all(&body).await;
            let _ = s.shutdown().await;
        }
    };
    let work = async {
        let (_, out, err, status) =
            tokio::join!(write, bounded(stdout), bounded(stderr), child.wait());
        (out, err, status)
    };
    match tokio::time::timeout(hook.timeout, work).await {
        Ok((out, err, Ok(status))) => {
            let end = match status.code() {
                Some(c) => RunEnd::Exited(c),
                None => RunEnd::Killed,
            };
            kill_group(pid);
            done(end, out, err)
        }
        Ok((out, err, Err(e))) => done(RunEnd::NotStarted(e.to_string()), out, err),
        Err(_) => {
            kill_group(pid);
            done(RunEnd::TimedOut(hook.timeout), vec![], vec![])
        }
    }
}

/// Whatever the hook left running in its group goes with it.
fn kill_group(pid: Option<u32>) {
    if let Some(p) = pid.and_then(|p| rustix::process::Pid::from_raw(p as i32)) {
        let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
    }
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
    crate::core::secrets::redact(&text).into_owned()
}
