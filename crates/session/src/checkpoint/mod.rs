//! Checkpoints: every turn can be taken back, exactly.
//!
//! A checkpoint is what the workspace was at the start of a turn, for every file the turn
//! changed. pablo's own writes (`fs.write`, `fs.edit`) hand over the bytes they replace from
//! inside the revision-checked install, so the recorded "before" is byte for byte what was
//! replaced. For shell commands, whose changes pablo cannot see coming, the workspace's followed
//! files (git's rules: `.gitignore`, excludes) are kept in a content store outside the workspace
//! and an inotify watch tells which of them a command changed ([`scan`]). Each call's changes are
//! journaled as a `files_changed` event, so the checkpoints live with the session and come back
//! with it ([`History`]); the bytes live once in the content store
//! (`$XDG_DATA_HOME/pablo/checkpoints/objects`, [`objects`]).
//!
//! Undo, rewind and `/diff` are restore plans ([`plan`]): per file, what it is now, what the
//! restore makes it, a conflict when it changed since pablo left it, and the diff of what would
//! be lost. A plan is reviewed, then carried out file by file, atomically ([`restore`]).

pub mod history;
mod ignore;
pub(crate) mod live;
pub mod objects;
pub(crate) mod plan;
pub(crate) mod restore;
pub mod scan;

pub use history::{History, RangeError};
pub use live::{CheckpointSettings, Checkpoints, DEFAULT_MAX_BYTES, DEFAULT_MAX_FILE_BYTES};
pub use objects::ObjectStore;

use pablo_core::{Coded, ErrorCode};

/// Why a restore could not be planned or carried out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    #[error(transparent)]
    Range(#[from] RangeError),
    #[error(
        "restore plan {plan_id} is not the one under review (another was planned since, or it \
         was already carried out); plan it again"
    )]
    PlanUnknown { plan_id: String },
    #[error("{0}")]
    Unavailable(String),
}

impl Coded for CheckpointError {
    fn code(&self) -> ErrorCode {
        match self {
            CheckpointError::Range(e) => e.code(),
            CheckpointError::PlanUnknown { .. } => ErrorCode::RestorePlanUnknown,
            CheckpointError::Unavailable(_) => ErrorCode::CheckpointsUnavailable,
        }
    }
}

/// Where the content store of the data directory `data` is.
pub fn objects_dir(data: &std::path::Path) -> std::path::PathBuf {
    data.join("checkpoints").join("objects")
}
