//! Ctrl-G: the draft goes to the person's own editor (`$VISUAL`, else `$EDITOR`) and comes back
//! into the composer when the editor exits. A long prompt is easier to write where the person
//! writes everything else; the TUI lends the terminal for the time the editor runs.

use std::path::PathBuf;

use pablo_core::ErrorCode;

/// Why the draft could not go through the editor; the draft itself is never lost.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EditorError {
    #[error("set $VISUAL or $EDITOR to compose the prompt in an editor")]
    NoEditor,
    #[error("the draft file {path} could not be written or read back: {message}")]
    DraftFile { path: PathBuf, message: String },
    #[error("the editor ({command}) could not be started: {message}")]
    Spawn { command: String, message: String },
    #[error("the editor ({command}) exited with {status}; the draft is unchanged")]
    Failed { command: String, status: String },
}

impl pablo_core::Coded for EditorError {
    fn code(&self) -> ErrorCode {
        match self {
            EditorError::NoEditor => ErrorCode::EditorNotSet,
            EditorError::DraftFile { .. } => ErrorCode::EditorDraftFile,
            EditorError::Spawn { .. } => ErrorCode::EditorSpawnFailed,
            EditorError::Failed { .. } => ErrorCode::EditorFailed,
        }
    }
}

/// The editor command from the environment: `$VISUAL`, else `$EDITOR` (either may hold
/// arguments, as `code --wait` does).
pub(crate) fn editor_command() -> Option<String> {
    ["VISUAL", "EDITOR"]
        .into_iter()
        .filter_map(|k| std::env::var(k).ok())
        .map(|v| v.trim().to_string())
        .find(|v| !v.is_empty())
}

/// A draft file of its own in the temporary directory, removed when dropped.
struct DraftFile {
    path: PathBuf,
}

impl Drop for DraftFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn draft_error(path: &std::path::Path, e: std::io::Error) -> EditorError {
    EditorError::DraftFile {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// Runs `command` on a file holding `draft` and returns what the person saved (one trailing
/// newline, which editors add, removed). The terminal must already be lent (raw mode off).
pub(crate) async fn edit(command: &str, draft: &str) -> Result<String, EditorError> {
    use std::io::Write;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let path =
        std::env::temp_dir().join(format!("pablo-prompt-{}-{nanos:x}.md", std::process::id()));
    let file = DraftFile { path: path.clone() };
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&file.path)
            .map_err(|e| draft_error(&path, e))?;
        f.write_all(draft.as_bytes())
            .map_err(|e| draft_error(&path, e))?;
    }
    // Through the shell, so `code --wait` and quoted paths work as they do at the prompt.
    let status = tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("{command} \"$1\""))
        .arg("sh")
        .arg(&file.path)
        .status()
        .await
        .map_err(|e| EditorError::Spawn {
            command: command.to_string(),
            message: e.to_string(),
        })?;
    if !status.success() {
        return Err(EditorError::Failed {
            command: command.to_string(),
            status: status.to_string(),
        });
    }
    let text = std::fs::read_to_string(&file.path).map_err(|e| draft_error(&path, e))?;
    let text = text.strip_suffix('\n').unwrap_or(&text);
    Ok(text.strip_suffix('\r').unwrap_or(text).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn what_the_editor_saves_comes_back_without_its_final_newline() {
        let text = edit("sed -i 's/draft/prompt/'", "a draft").await.unwrap();
        assert_eq!(text, "a prompt");
    }

    #[tokio::test]
    async fn an_editor_that_fails_leaves_the_draft_to_the_caller() {
        let e = edit("false", "keep me").await.unwrap_err();
        assert_eq!(pablo_core::Coded::code(&e), "editor_failed");
        assert!(e.to_string().contains("the draft is unchanged"), "{e}");
    }
}
