//! The data of checkpoints, undo, rewind and `/diff` as it crosses between the engine and the
//! front-ends (and into the journal): what a file was before and after a change, the list of
//! turns that can be taken back, a restore plan the person reviews, their choices, and the report
//! of what was restored.
//!
//! The same preview-then-commit rule as for edits holds: a [`RestorePlan`] names, for each file,
//! the revision it has now; [`crate::Op::Restore`] restores only files still at that
//! revision, so what lands is what the person saw.

use serde::{Deserialize, Serialize};

use super::DiffHunk;

/// A file at one moment, as a checkpoint records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FileState {
    /// No file by that name.
    Absent,
    /// A regular file: its SHA-256, size and permission bits. `stored` says whether its bytes are
    /// kept in the checkpoint store (false for a file over the size caps, or a credential file
    /// pablo never reads): such a state is recorded but cannot be restored.
    File {
        hash: String,
        size: u64,
        mode: u32,
        #[serde(default)]
        stored: bool,
    },
    /// A symbolic link and the path it points to (links are restored as links, never followed).
    Symlink { target: String },
    /// A directory (recorded when a turn creates or removes one, so an undo can remove the
    /// directories a turn created once their files are gone).
    Directory,
}

impl FileState {
    pub fn is_absent(&self) -> bool {
        matches!(self, FileState::Absent)
    }

    /// Whether two states hold the same thing (mode and storage aside).
    pub fn same_content(&self, other: &FileState) -> bool {
        match (self, other) {
            (FileState::Absent, FileState::Absent) => true,
            (FileState::File { hash: a, .. }, FileState::File { hash: b, .. }) => {
                a.eq_ignore_ascii_case(b)
            }
            (FileState::Symlink { target: a }, FileState::Symlink { target: b }) => a == b,
            (FileState::Directory, FileState::Directory) => true,
            _ => false,
        }
    }

    /// Whether two states are the same file: the same content and, for a regular file, the same
    /// permission bits (a command that only changes a mode changed the file).
    pub fn same(&self, other: &FileState) -> bool {
        match (self, other) {
            (FileState::File { mode: a, .. }, FileState::File { mode: b, .. }) => {
                a & 0o7777 == b & 0o7777 && self.same_content(other)
            }
            _ => self.same_content(other),
        }
    }

    /// Whether a restore can bring this state back.
    pub fn restorable(&self) -> bool {
        match self {
            FileState::File { stored, .. } => *stored,
            FileState::Absent | FileState::Symlink { .. } | FileState::Directory => true,
        }
    }
}

/// One change to one file, by one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// Workspace-relative, forward slashes.
    pub path: String,
    pub before: FileState,
    pub after: FileState,
}

/// One turn as `/rewind` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnCheckpoint {
    /// 1-based, counting every prompt of the session.
    pub turn: u32,
    /// The first words of the prompt.
    pub title: String,
    /// Files the turn changed, in path order.
    pub files: Vec<String>,
    /// Taken back already (by `/undo`, `/rewind` or `pablo undo`).
    #[serde(default)]
    pub undone: bool,
    /// Files whose earlier bytes the checkpoint does not hold (over a size cap, credentials).
    #[serde(default)]
    pub unrestorable: Vec<String>,
}

/// What a restore plan covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "scope", rename_all = "snake_case")]
pub enum RestoreScope {
    /// The last `turns` turns not yet taken back (`/undo`, `pablo undo --turns N`).
    Undo { turns: u32 },
    /// Back to the start of `turn`: the workspace, and the conversation (it forks).
    Rewind { turn: u32 },
    /// Everything the session changed (`/diff`), or only `path`.
    Session {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    },
}

/// What restoring a file does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RestoreAction {
    /// Put the earlier bytes back.
    Rewrite,
    /// The file did not exist before: remove it.
    Delete,
    /// The file was removed since: create it again.
    Recreate,
}

/// Whether a file can be restored as planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RestoreStatus {
    /// Still as pablo left it: selected by default.
    Ready,
    /// Changed since pablo last saw it (by the person or another program): not selected unless
    /// the person chooses it.
    Conflict,
    /// Already as it was before (an earlier restore, or changed back by hand).
    AlreadyRestored,
    /// The checkpoint does not hold the earlier bytes.
    Unrestorable,
}

/// Who made a hunk: the turns, and whether something outside pablo changed it too.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HunkSource {
    pub turns: Vec<u32>,
    #[serde(default)]
    pub outside: bool,
}

/// One file of a restore plan: what it is now, what it would become, and the diff of what would
/// be lost (old side: the earlier text that comes back; new side: the current text that goes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RestoreFile {
    pub path: String,
    pub action: RestoreAction,
    pub status: RestoreStatus,
    /// Why it is a conflict or cannot be restored, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The file now: a restore goes ahead only while it is still this.
    pub current: FileState,
    /// What the restore makes it.
    pub target: FileState,
    /// No line diff (binary, not UTF-8, or too large): only the whole file can be restored.
    #[serde(default)]
    pub binary: bool,
    #[serde(default)]
    pub hunks: Vec<DiffHunk>,
    /// Per hunk, who made it.
    #[serde(default)]
    pub hunk_sources: Vec<HunkSource>,
    pub added: usize,
    pub removed: usize,
    /// The turns that changed this file.
    pub turns: Vec<u32>,
}

/// A restore the person reviews before anything is written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RestorePlan {
    pub plan_id: String,
    pub scope: RestoreScope,
    /// `Undo turn 3`, `Rewind to the start of turn 2`, `Changes in this session`.
    pub title: String,
    /// The turns the plan takes back (empty for `/diff`).
    pub turns: Vec<u32>,
    pub files: Vec<RestoreFile>,
}

/// The person's choice for one file of a plan. Files not named are left alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreChoice {
    pub path: String,
    /// Restore only these hunks (indices into [`RestoreFile::hunks`]); `None`: the whole file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hunks: Option<Vec<usize>>,
}

/// A file that was restored, and what it is now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoredFile {
    pub path: String,
    pub action: RestoreAction,
    /// Only these hunks were restored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hunks: Option<Vec<usize>>,
    pub now: FileState,
}

/// A file of the plan that was not restored, and why (`code`: `deselected`, `conflict`,
/// `unrestorable`, `changed_since_preview`, `already_restored`, `restore_failed`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedFile {
    pub path: String,
    pub code: String,
    pub message: String,
}

/// What a restore did. Journaled, so a resumed session (and the next request to the model) knows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreReport {
    pub scope: RestoreScope,
    /// Turns taken back; later `/undo`s go further back.
    pub turns: Vec<u32>,
    pub restored: Vec<RestoredFile>,
    pub skipped: Vec<SkippedFile>,
    /// What the model is told with the next prompt.
    pub note: String,
}
