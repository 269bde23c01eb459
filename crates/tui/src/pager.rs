//! `/artifacts`: an artifact opens in the person's own pager (`$PAGER`, else `less`, else
//! `more`), on the terminal the TUI lends it for as long as the pager runs, as Ctrl-G lends it to
//! the editor.

use pablo_core::ErrorCode;

/// Why an artifact could not be shown; the TUI goes on as it was.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PagerError {
    #[error("the pager could not be started: {message}")]
    Spawn { message: String },
    #[error("the pager exited with {status} (set $PAGER to choose another)")]
    Failed { status: String },
}

impl pablo_core::Coded for PagerError {
    fn code(&self) -> ErrorCode {
        match self {
            PagerError::Spawn { .. } => ErrorCode::PagerSpawnFailed,
            PagerError::Failed { .. } => ErrorCode::PagerFailed,
        }
    }
}

/// `$PAGER` when set and not blank (it may hold arguments, as `less -R` does).
pub(crate) fn pager_command() -> Option<String> {
    std::env::var("PAGER")
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// Runs `command` (else `less`, else `more`) on `path` and waits for it. The terminal must
/// already be lent (raw mode off).
pub(crate) async fn page(command: Option<&str>, path: &str) -> Result<(), PagerError> {
    // Through the shell, so a pager with arguments works as it does at the prompt.
    let status = tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(
            "if [ -n \"$1\" ]; then exec $1 \"$2\"; \
             elif command -v less >/dev/null 2>&1; then exec less \"$2\"; \
             else exec more \"$2\"; fi",
        )
        .arg("pablo-pager")
        .arg(command.unwrap_or_default())
        .arg(path)
        .status()
        .await
        .map_err(|e| PagerError::Spawn {
            message: e.to_string(),
        })?;
    if status.success() {
        Ok(())
    } else {
        Err(PagerError::Failed {
            status: status.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_pager_gets_the_file_and_its_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.md");
        let seen = dir.path().join("seen.txt");
        let script = dir.path().join("pager.sh");
        std::fs::write(&file, "# shown\n").unwrap();
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\necho \"$1\" > '{}'\ncat \"$2\" >> '{}'\n",
                seen.display(),
                seen.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let command = format!("{} -R", script.display());
        page(Some(&command), &file.display().to_string())
            .await
            .unwrap();
        assert_eq!(std::fs::read_to_string(&seen).unwrap(), "-R\n# shown\n");
    }

    #[tokio::test]
    async fn a_pager_that_fails_is_reported_with_its_status() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.md");
        std::fs::write(&file, "x").unwrap();
        let e = page(Some("false"), &file.display().to_string())
            .await
            .unwrap_err();
        assert_eq!(pablo_core::Coded::code(&e), "pager_failed");
        assert!(e.to_string().contains("set $PAGER"), "{e}");
    }
}
