//! Sessions: the append-only journal, listing, and resume.
//!
//! A session is worth keeping because a crash, a closed terminal or a laptop lid should not cost
//! the conversation. Every event that matters for resuming is appended to a JSONL file under the
//! XDG data directory as it happens (one whole line per write, fsync at turn boundaries), so after
//! a SIGKILL every line but possibly the last is intact. Loading tolerates a torn last line and
//! skips malformed lines with a warning naming the line; nothing that was written completely is
//! lost.
//!
//! Resume rebuilds the model conversation from the journal exactly as the agent loop built it
//! (`MessageCompleted` is one assistant message, `ToolCallEnd` one tool message), pairs every tool
//! call with a result (calls cut off by the crash get an `interrupted` result so providers accept
//! the history), restores the latest todo checklist, and says which background processes did not
//! survive. Listing reads a small summary file kept beside each journal, so `pablo sessions` does
//! not parse whole journals.
//!
//! A session leaves pablo and comes back whole ([`transfer`]: `pablo export --format json`,
//! `pablo import`), and can be forked at a turn into a new session.
//!
//! Each turn's checkpoint (what the files it changed were before it) is journaled with the
//! session too; [`checkpoint`] restores from it (undo, rewind, `/diff`).
//!
//! Layout (see docs/sessions.md): `$XDG_DATA_HOME/pablo/sessions/<id>.jsonl` (the journal),
//! `<id>.meta.json` (the listing summary, a cache rebuilt from the journal when stale) and `<id>/`
//! (spilled shell output and background-session logs, referenced by path from tool results).
//! Attached images are stored once each under `images/<sha256>.<ext>`, shared by all sessions.

pub mod checkpoint;
mod images;
mod info;
mod journal;
mod load;
mod replay;
pub mod stats;
mod store;
mod transfer;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use info::SessionInfo;
#[cfg(any(test, feature = "test-support"))]
pub use journal::Journal;
pub use load::load_journal;
pub use load::{LoadWarning, LoadedJournal, Stamped, WarningKind};
#[cfg(any(test, feature = "test-support"))]
pub use replay::INTERRUPTED_CODE;
pub use replay::{ResumeState, rebuild};
pub use store::{Listing, Store};
pub use transfer::ExportDocument;

use pablo_core::{Coded, ErrorCode};

/// The journal format this build writes and the newest it reads.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// The first line of every journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always `"header"`; tells the header apart from event lines.
    #[serde(rename = "type")]
    pub(crate) kind: HeaderTag,
    pub(crate) format: u32,
    /// The session's id (a UUID v7 for sessions pablo began).
    pub id: String,
    /// RFC 3339, UTC.
    pub created: String,
    /// The canonical workspace directory the session worked in.
    pub workspace: String,
    /// The model the session began with.
    pub model: String,
    /// The provider of that model.
    pub provider: String,
    pub(crate) pablo_version: String,
    /// Set when the session began as a rewind of another: the conversation up to the start of
    /// `turn` of `session` was copied, the rest stays there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkOrigin>,
    /// How many of the first events were copied from another session (a fork, an import):
    /// history, not usage of this one, so `pablo stats` does not count them again.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) copied_events: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Which session and turn a forked session began from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkOrigin {
    /// The session's id.
    pub session: String,
    /// The turn at whose start it was forked.
    pub turn: u32,
}

/// Serde helper: the literal `"header"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum HeaderTag {
    #[default]
    Header,
}

impl Header {
    /// A header for a new session, stamped now with this build's version.
    pub fn new(
        id: impl Into<String>,
        workspace: impl Into<String>,
        model: impl Into<String>,
        provider: impl Into<String>,
    ) -> Self {
        Self {
            kind: HeaderTag::Header,
            format: FORMAT_VERSION,
            id: id.into(),
            created: format_ms(now_ms()),
            workspace: workspace.into(),
            model: model.into(),
            provider: provider.into(),
            pablo_version: env!("CARGO_PKG_VERSION").to_string(),
            forked_from: None,
            copied_events: 0,
        }
    }
}

/// Errors of the session store. Messages name the session or the file.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("no session {id:?} was found in {dir}")]
    NotFound { id: String, dir: PathBuf },
    #[error("session id {prefix:?} is ambiguous: it matches {}", matches.join(", "))]
    Ambiguous {
        prefix: String,
        matches: Vec<String>,
    },
    #[error(
        "{id:?} is not a session id: ids are 1 to 64 letters, digits, '-' or '_' (so that they \
         cannot name a path outside the session directory)"
    )]
    InvalidId { id: String },
    #[error("no session was found for workspace {workspace}")]
    NoneForWorkspace { workspace: String },
    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },
    #[error("{path}: the journal header is unreadable ({message}); the session cannot be resumed")]
    BadHeader { path: PathBuf, message: String },
    #[error(
        "{path}: journal format {found} is newer than this pablo understands ({FORMAT_VERSION}); \
         upgrade pablo to resume it"
    )]
    UnsupportedFormat { path: PathBuf, found: u32 },
    #[error("{path}: a session with id {id:?} already exists")]
    Exists { path: PathBuf, id: String },
    #[error(
        "session {id} is open in another pablo process ({path} is locked); close it there first"
    )]
    Busy { id: String, path: PathBuf },
    #[error("cannot locate the session directory: {0}")]
    Dirs(String),
    #[error(
        "{source_name}: not a session export ({message}); `pablo export --format json` writes one"
    )]
    ImportInvalid {
        source_name: String,
        message: String,
    },
    #[error("session {id} has {turns} turn(s); there is no turn {turn} to fork at")]
    TurnOutOfRange { id: String, turn: u32, turns: u32 },
}

impl Coded for SessionError {
    fn code(&self) -> ErrorCode {
        match self {
            SessionError::NotFound { .. } => ErrorCode::SessionNotFound,
            SessionError::Ambiguous { .. } => ErrorCode::SessionIdAmbiguous,
            SessionError::InvalidId { .. } => ErrorCode::SessionInvalidId,
            SessionError::NoneForWorkspace { .. } => ErrorCode::SessionNoneForWorkspace,
            SessionError::Io { .. } => ErrorCode::SessionIo,
            SessionError::BadHeader { .. } => ErrorCode::SessionHeaderInvalid,
            SessionError::UnsupportedFormat { .. } => ErrorCode::SessionFormatUnsupported,
            SessionError::Exists { .. } => ErrorCode::SessionExists,
            SessionError::Busy { .. } => ErrorCode::SessionBusy,
            SessionError::Dirs(_) => ErrorCode::SessionDirsUnavailable,
            SessionError::ImportInvalid { .. } => ErrorCode::SessionImportInvalid,
            SessionError::TurnOutOfRange { .. } => ErrorCode::SessionTurnOutOfRange,
        }
    }
}

impl SessionError {
    fn io(path: impl Into<PathBuf>, e: std::io::Error) -> Self {
        SessionError::Io {
            path: path.into(),
            message: e.to_string(),
        }
    }
}

/// A fresh session id: a UUID v7, so ids sort by creation time.
pub fn new_session_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Ids name files, so only a safe alphabet is accepted.
pub(crate) fn validate_id(id: &str) -> Result<(), SessionError> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(SessionError::InvalidId { id: id.to_string() })
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// RFC 3339 (UTC, seconds) for Unix milliseconds; the epoch when out of range.
pub(crate) fn format_ms(ms: u64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| t.replace_nanosecond(0).ok())
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_string())
}

/// The store in the XDG data directory (`$XDG_DATA_HOME/pablo/sessions`).
pub fn default_store() -> Result<Store, SessionError> {
    let dirs = pablo_config::Dirs::discover().map_err(|e| SessionError::Dirs(e.to_string()))?;
    Ok(Store::at(dirs.data.join("sessions")))
}

/// Every session in the default store, most recently updated first.
pub fn list() -> Result<Listing, SessionError> {
    Ok(default_store()?.list())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_could_escape_the_directory_are_refused() {
        for bad in ["", "../x", "a/b", "a.b", &"x".repeat(65), "é"] {
            let e = validate_id(bad).unwrap_err();
            assert_eq!(e.code(), "session_invalid_id", "{bad:?}");
        }
        validate_id(&new_session_id()).unwrap();
    }

    #[test]
    fn timestamps_format_as_rfc3339_utc() {
        assert_eq!(format_ms(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_ms(1_700_000_000_123), "2023-11-14T22:13:20Z");
    }
}
