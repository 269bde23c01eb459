//! Process groups: waiting for the leader without reaping it, signalling the whole group, and
//! proving that nothing of it survived.
//!
//! Every command pablo starts leads its own process group (its own session with a PTY), so
//! `sleep 300 &` inside a command cannot outlive the call unnoticed. Cleanup is TERM, a short
//! grace, KILL, and then a check through `/proc` that no member of the group is still alive; a
//! survivor is reported, never ignored.

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};

/// How the leader of a group ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExitInfo {
    /// The exit status, when the leader exited normally.
    pub code: Option<i32>,
    /// The signal number that ended the leader, when one did.
    pub signal: Option<i32>,
}

/// Blocks until the process `pid` (a child of ours) has exited, without reaping it: while the
/// zombie exists its pid, and so the group id, cannot be reused by an unrelated process.
///
/// With `status` (the leader is the init of the command's PID namespace) the exit reported is
/// the command's, as init wrote it before exiting; init's own exit counts only when it wrote
/// nothing (it was killed first).
pub fn wait_exit_no_reap(pid: i32, status: Option<&OwnedFd>) -> ExitInfo {
    let Some(p) = Pid::from_raw(pid) else {
        return ExitInfo::default();
    };
    let own = loop {
        match rustix::process::waitid(
            WaitId::Pid(p),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
        ) {
            Ok(Some(status)) => {
                break ExitInfo {
                    code: status.exit_status(),
                    signal: status.terminating_signal(),
                };
            }
            Ok(None) => continue,
            Err(rustix::io::Errno::INTR) => continue,
            // ECHILD: already reaped elsewhere; nothing more to learn.
            Err(_) => break ExitInfo::default(),
        }
    };
    match status.and_then(super::child::read_reported_status) {
        Some(raw) => ExitInfo::from_wait_status(raw),
        None => own,
    }
}

impl ExitInfo {
    /// From a raw `wait(2)` status.
    pub fn from_wait_status(raw: i32) -> Self {
        if libc::WIFEXITED(raw) {
            Self {
                code: Some(libc::WEXITSTATUS(raw)),
                signal: None,
            }
        } else if libc::WIFSIGNALED(raw) {
            Self {
                code: None,
                signal: Some(libc::WTERMSIG(raw)),
            }
        } else {
            Self::default()
        }
    }
}

/// Spawns a thread that waits for `pid` to exit (without reaping) and reports on the channel.
pub fn watch_exit(
    pid: i32,
    status: Option<OwnedFd>,
) -> tokio::sync::watch::Receiver<Option<ExitInfo>> {
    let (tx, rx) = tokio::sync::watch::channel(None);
    let spawned = std::thread::Builder::new()
        .name(format!("pablo-wait-{pid}"))
        .spawn(move || {
            let info = wait_exit_no_reap(pid, status.as_ref());
            let _ = tx.send(Some(info));
        });
    if spawned.is_err() {
        // Without a thread we cannot wait; report "unknown exit" so callers clean up at once.
        let (tx, rx) = tokio::sync::watch::channel(Some(ExitInfo::default()));
        drop(tx);
        return rx;
    }
    rx
}

/// The pids of live (non-zombie) processes whose process group is `pgid`.
///
/// Zombies are dead: they hold no resources but a pid and wait for a parent that may not reap
/// promptly (an init that does not reap, a parent that is itself gone), so they do not count.
pub fn live_group_members(pgid: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return fallback_members(pgid);
    };
    let mut out = Vec::new();
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue; // gone in the meantime
        };
        if let Some((state, pgrp)) = parse_stat(&stat)
            && pgrp == pgid
            && state != 'Z'
            && state != 'X'
        {
            out.push(pid);
        }
    }
    out
}

/// Without `/proc`, the kernel can only say whether the group has any member at all.
fn fallback_members(pgid: i32) -> Vec<i32> {
    match Pid::from_raw(pgid) {
        Some(p) if rustix::process::test_kill_process_group(p).is_ok() => vec![pgid],
        _ => Vec::new(),
    }
}

/// State letter and process group from the text of `/proc/PID/stat`.
fn parse_stat(stat: &str) -> Option<(char, i32)> {
    // The command name is in parentheses and may itself contain spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Sends `signal` to every process of the group; a group that no longer exists is not an error.
pub fn signal_group(pgid: i32, signal: Signal) {
    if let Some(p) = Pid::from_raw(pgid) {
        let _ = rustix::process::kill_process_group(p, signal);
    }
}

/// Timings of the cleanup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanupTimes {
    /// Between TERM and KILL.
    pub grace: Duration,
    /// The whole cleanup, TERM to the last check, separate from the command's own timeout.
    pub allowance: Duration,
}

impl Default for CleanupTimes {
    fn default() -> Self {
        Self {
            grace: Duration::from_millis(300),
            allowance: Duration::from_secs(5),
        }
    }
}

/// Ends the group `pgid`: TERM, up to `grace` for it to go, KILL, then up to the rest of the
/// allowance for the kernel to finish. Returns the pids still alive at the end (empty on success).
///
/// The leader is not reaped here; its zombie is not counted as alive.
pub async fn terminate_group(pgid: i32, times: CleanupTimes) -> Vec<i32> {
    let started = Instant::now();
    if live_group_members(pgid).is_empty() {
        return Vec::new();
    }
    signal_group(pgid, Signal::TERM);
    // Stopped processes cannot act on TERM until they continue.
    signal_group(pgid, Signal::CONT);
    if wait_until_gone(pgid, started + times.grace).await {
        return Vec::new();
    }
    signal_group(pgid, Signal::KILL);
    let _ = wait_until_gone(pgid, started + times.allowance).await;
    live_group_members(pgid)
}

/// Polls the group until it has no live member or `deadline` passes.
async fn wait_until_gone(pgid: i32, deadline: Instant) -> bool {
    let mut step = Duration::from_millis(2);
    loop {
        if live_group_members(pgid).is_empty() {
            return true;
        }
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        tokio::time::sleep(step.min(deadline - now)).await;
        step = (step * 2).min(Duration::from_millis(25));
    }
}

/// The conventional name of a signal number, for results the model reads.
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        _ => return format!("SIG{signal}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parsing_survives_parentheses_in_the_command_name() {
        let stat = "4242 (we ird) (x)) S 1 4200 4200 0 -1 4194304";
        assert_eq!(parse_stat(stat), Some(('S', 4200)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn own_process_group_is_seen_alive() {
        let me = std::process::id() as i32;
        let stat = std::fs::read_to_string(format!("/proc/{me}/stat")).unwrap();
        let (_, pgrp) = parse_stat(&stat).unwrap();
        assert!(live_group_members(pgrp).contains(&me));
    }

    #[test]
    fn signal_names_are_conventional() {
        assert_eq!(signal_name(15), "SIGTERM");
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(40), "SIG40");
    }
}
