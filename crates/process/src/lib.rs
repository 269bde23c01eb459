//! Running commands for `shell.run` and `shell.session`: process groups, bounded capture, PTYs,
//! background sessions.
//!
//! Everything a command can do to pablo is bounded here: how long it runs (timeout, then a
//! separate cleanup allowance), how much of its output is held in memory (a fixed inline budget, a
//! fixed live buffer, a fixed session window), what it inherits (a clean environment, stdin
//! closed) and what it leaves behind (nothing: its whole group is killed and checked).

pub mod addresses;
pub mod capture;
pub mod child;
pub mod env;
pub mod gitconfig;
pub mod gitrepo;
pub mod group;
pub mod log;
pub mod mask;
pub mod mounts;
pub mod nested;
pub mod netproxy;
pub mod npm;
pub mod protect;
pub mod proxyport;
pub mod run;
pub mod sandbox;
pub mod server;
pub mod session;
pub mod shield;
pub mod spawn;
pub mod stage;
pub mod start;
pub mod temp;
pub mod worktree;

use std::time::Duration;

use serde_json::{Value, json};

pub use env::{CommandEnv, EnvSettings};
pub use group::{CleanupTimes, ExitInfo, signal_name};
pub use nested::{CredentialRule, Tracking, track};
pub use run::{RunReport, RunRequest, run_foreground};
pub use sandbox::{
    Sandbox, Support, assume_namespaces_until_a_start_fails, probe_namespaces_soon, support,
};
#[cfg(any(test, feature = "test-support"))]
pub use session::OutputLog;
pub use session::{SessionManager, SessionRequest, SessionStatus, WINDOW_BYTES};
pub use spawn::{SpawnSpec, run_inherited};
pub use start::run_prepared;

use pablo_config::ShellOptions;
use pablo_core::Coded;
use pablo_core::ErrorCode;

/// The launcher when config names none.
pub const DEFAULT_LAUNCHER: &str = "/bin/sh";
/// Foreground timeout when config and call name none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest any foreground command or `wait` may run, whatever config or the model ask.
pub const HOST_MAX_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// Inline output budget when config names none.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 50_000;
/// The largest inline budget a call may ask for.
pub const HOST_MAX_OUTPUT_BYTES: usize = 1_000_000;
/// Live background sessions when config names none.
pub const DEFAULT_MAX_SESSIONS: usize = 16;

/// The shell settings of one pablo session, from `[options.shell]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ShellSettings {
    pub launcher: String,
    pub default_timeout: Duration,
    pub max_output_bytes: usize,
    pub max_sessions: usize,
    pub cleanup: CleanupTimes,
    /// The base environment of every command (computed once per launch).
    pub env: std::sync::Arc<CommandEnv>,
}

impl Default for ShellSettings {
    fn default() -> Self {
        Self::from_options(&ShellOptions::default(), Default::default())
    }
}

impl ShellSettings {
    /// Zero means "the default" for the numbers, as in the seed's config.
    pub fn from_options(o: &ShellOptions, env: std::sync::Arc<CommandEnv>) -> Self {
        let timeout = match o.timeout_seconds {
            Some(0) | None => DEFAULT_TIMEOUT,
            Some(s) => Duration::from_secs(s).min(HOST_MAX_TIMEOUT),
        };
        let max_output_bytes = match o.max_output_chars {
            Some(0) | None => DEFAULT_MAX_OUTPUT_BYTES,
            Some(n) => n.min(HOST_MAX_OUTPUT_BYTES),
        };
        let max_sessions = match o.max_sessions {
            Some(0) | None => DEFAULT_MAX_SESSIONS,
            Some(n) => n,
        };
        Self {
            launcher: o
                .launcher
                .clone()
                .filter(|l| !l.trim().is_empty())
                .unwrap_or_else(|| DEFAULT_LAUNCHER.to_string()),
            default_timeout: timeout,
            max_output_bytes,
            max_sessions,
            cleanup: CleanupTimes::default(),
            env,
        }
    }

    /// Whether the launcher is a plain POSIX shell (dash on Debian), not bash or zsh.
    pub fn launcher_is_posix_sh(&self) -> bool {
        let name = self.launcher.rsplit('/').next().unwrap_or(&self.launcher);
        matches!(name, "sh" | "dash" | "ash" | "posh")
    }
}

/// Why a command could not be run or finished badly. Exit codes are not errors.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("environment variable {name} refused: {reason}")]
    InvalidEnv { name: String, reason: String },
    #[error("cannot start {launcher}: {message}")]
    Spawn { launcher: String, message: String },
    /// The sandbox cannot find every `.git` and `.pablo` to protect; nothing ran.
    #[error("{0}")]
    TooLargeToProtect(String),
    /// `network_allow` is set and the command cannot get a network namespace; nothing ran.
    #[error("cannot start {launcher}: {message}")]
    NetworkAllowUnsupported { launcher: String, message: String },
    #[error(
        "the command ended but {} process(es) of its group {pgid} survived TERM and KILL (pids {survivors:?}); they may still be running",
        survivors.len()
    )]
    CleanupFailed {
        pgid: i32,
        survivors: Vec<i32>,
        report: Box<RunReport>,
    },
    #[error(
        "session {id} was killed but {} process(es) of its group {pgid} survived (pids {survivors:?})",
        survivors.len()
    )]
    SessionCleanupFailed {
        id: String,
        pgid: i32,
        survivors: Vec<i32>,
    },
    #[error("there is no background session {id:?}; list the sessions to see their ids")]
    UnknownSession { id: String },
    #[error("session {id} is not running any more; its output can still be read")]
    SessionNotRunning { id: String },
    #[error("session {id} has no terminal; send_keys needs a session started with pty: true")]
    NotAPty { id: String },
    #[error("unknown key {key:?}")]
    UnknownKey { key: String },
    #[error("cannot write to session {id}: {message}")]
    Input { id: String, message: String },
    #[error(
        "{max} background sessions are already running, the most allowed; wait for one or kill one first"
    )]
    TooManySessions { max: usize },
    #[error("waiting on session {id} was interrupted; the session keeps running")]
    Cancelled { id: String },
    #[error("internal error: {0}")]
    Internal(String),
}

impl ProcessError {
    /// Why the sandbox of `launcher` could not be prepared.
    pub fn sandbox(launcher: &str, e: sandbox::SandboxError) -> Self {
        match e {
            e @ sandbox::SandboxError::TooLargeToProtect { .. } => {
                ProcessError::TooLargeToProtect(e.to_string())
            }
            e @ sandbox::SandboxError::NetworkAllowNeedsNamespaces(_) => {
                ProcessError::NetworkAllowUnsupported {
                    launcher: launcher.to_string(),
                    message: e.to_string(),
                }
            }
            e => ProcessError::Spawn {
                launcher: launcher.to_string(),
                message: e.to_string(),
            },
        }
    }
}

impl Coded for ProcessError {
    fn code(&self) -> ErrorCode {
        match self {
            ProcessError::InvalidEnv { .. } | ProcessError::UnknownKey { .. } => {
                ErrorCode::InvalidArguments
            }
            ProcessError::Spawn { .. } => ErrorCode::SpawnFailed,
            ProcessError::TooLargeToProtect(_) => ErrorCode::WorkspaceTooLarge,
            ProcessError::NetworkAllowUnsupported { .. } => ErrorCode::NetworkAllowUnsupported,
            ProcessError::CleanupFailed { .. } | ProcessError::SessionCleanupFailed { .. } => {
                ErrorCode::ToolCleanupFailed
            }
            ProcessError::UnknownSession { .. } => ErrorCode::UnknownSession,
            ProcessError::SessionNotRunning { .. } => ErrorCode::SessionNotRunning,
            ProcessError::NotAPty { .. } => ErrorCode::NotAPty,
            ProcessError::Input { .. } => ErrorCode::SessionInputFailed,
            ProcessError::TooManySessions { .. } => ErrorCode::TooManySessions,
            ProcessError::Cancelled { .. } => ErrorCode::Cancelled,
            ProcessError::Internal(_) => ErrorCode::Internal,
        }
    }

    fn data(&self) -> Option<Value> {
        match self {
            ProcessError::CleanupFailed {
                pgid, survivors, ..
            }
            | ProcessError::SessionCleanupFailed {
                pgid, survivors, ..
            } => Some(json!({"pgid": pgid, "survivors": survivors})),
            _ => None,
        }
    }
}
