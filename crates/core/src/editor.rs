//! Files and terminals that belong to the front-end.
//!
//! An editor driving pablo (over ACP) holds buffers the person has not saved yet, and can show a
//! command running in a terminal of its own. When the front-end offers these, the file tools read
//! and write through it and `shell.run` may run a foreground command in the editor's terminal.
//!
//! What pablo decides does not move to the editor. A name is admitted by pablo's own path rules,
//! on disk, before the editor is asked about it (so a link or a FIFO in the workspace is refused
//! exactly as without an editor); the text the editor returns passes the same size and NUL-byte
//! checks as a file read; the preview is still what the person approves; and a commit still reads
//! the current text once more and refuses with `revision_mismatch` when it is no longer the text
//! the preview replaced. The one thing pablo cannot do through an editor is make the write atomic
//! with that last check: between the check and the editor applying the text, the person could
//! type. The window is one round trip.

use std::path::{Path, PathBuf};

use crate::ErrorCode;

use async_trait::async_trait;

use super::Coded;

/// What a front-end offers, as it said when it connected.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EditorCapabilities {
    /// Reads go to the editor (`fs/read_text_file`): unsaved buffers are what the model sees.
    pub read_files: bool,
    /// Changes to existing files go to the editor (`fs/write_text_file`).
    pub write_files: bool,
    /// Foreground commands may run in the editor's terminals.
    pub terminals: bool,
}

impl EditorCapabilities {
    pub fn any(&self) -> bool {
        self.read_files || self.write_files || self.terminals
    }
}

/// A command for an editor terminal: a program and its arguments, never a shell line, so the
/// editor runs exactly what the policy judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalCommand {
    pub program: String,
    pub args: Vec<String>,
    /// Absolute, inside the workspace (checked by the caller).
    pub cwd: PathBuf,
    /// The most output the editor should keep (it keeps the end).
    pub output_byte_limit: u64,
}

/// How a command in an editor terminal ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TerminalExit {
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
}

/// What an editor terminal holds now.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TerminalOutput {
    pub output: String,
    /// The editor dropped the beginning to stay within the byte limit.
    pub truncated: bool,
    /// Set once the command has exited.
    pub exit: Option<TerminalExit>,
}

/// A request the editor refused or could not answer.
#[derive(Debug, thiserror::Error)]
pub enum EditorError {
    #[error("the editor could not read {path}: {message}")]
    Read { path: String, message: String },
    #[error("the editor could not write {path}: {message}; the file was not changed by pablo")]
    Write { path: String, message: String },
    #[error("the editor's terminal failed to {action}: {message}")]
    Terminal {
        action: &'static str,
        message: String,
    },
}

impl Coded for EditorError {
    fn code(&self) -> ErrorCode {
        match self {
            EditorError::Read { .. } => ErrorCode::EditorReadFailed,
            EditorError::Write { .. } => ErrorCode::EditorWriteFailed,
            EditorError::Terminal { .. } => ErrorCode::EditorTerminalFailed,
        }
    }
}

/// The front-end's files and terminals. Paths are absolute; every method is one request to the
/// editor and may take as long as the editor takes.
#[async_trait]
pub trait Editor: Send + Sync {
    fn capabilities(&self) -> EditorCapabilities;
    /// The text the person sees for `path`, unsaved changes included.
    async fn read_text(&self, path: &Path) -> Result<String, EditorError>;
    /// Replaces the text of `path` (the editor decides whether and when to save it).
    async fn write_text(&self, path: &Path, text: &str) -> Result<(), EditorError>;
    /// Starts `command` in a new terminal; returns the terminal's id.
    async fn create_terminal(&self, command: &TerminalCommand) -> Result<String, EditorError>;
    /// Waits until the command of `terminal` exits.
    async fn wait_for_exit(&self, terminal: &str) -> Result<TerminalExit, EditorError>;
    async fn terminal_output(&self, terminal: &str) -> Result<TerminalOutput, EditorError>;
    /// Kills the command; the terminal stays readable.
    async fn kill_terminal(&self, terminal: &str) -> Result<(), EditorError>;
    /// Frees the terminal (the editor may keep showing it); its id is invalid afterwards.
    async fn release_terminal(&self, terminal: &str) -> Result<(), EditorError>;
}
