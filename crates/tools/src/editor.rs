//! The tools' side of an editor front-end: which reads go to the editor's buffers, and how a
//! request to the editor gives way to a cancelled turn. The seam itself ([`Editor`]) is in
//! [`pablo_core::editor`], so the front-end that implements it (ACP) needs nothing of the tools.

use tokio_util::sync::CancellationToken;

use super::{Host, ToolContext, blocking};
use pablo_core::editor::{Editor, EditorCapabilities, EditorError};
use pablo_core::{ErrorCode, ToolFailure};
use pablo_workspace::{RelPath, Workspace, WorkspaceError, revision_of};

impl Host {
    /// The editor, if the front-end has one offering `wanted`.
    pub(crate) fn editor_for(
        &self,
        wanted: impl Fn(&EditorCapabilities) -> bool,
    ) -> Option<&dyn Editor> {
        self.editor.as_deref().filter(|e| wanted(&e.capabilities()))
    }
}

/// The current text of `rel` and its revision: from the editor when it reads files (after pablo
/// admitted the name on disk), from disk otherwise. `None` when the file does not exist.
pub async fn current_text(
    ctx: &ToolContext,
    ws: &std::sync::Arc<Workspace>,
    rel: &RelPath,
) -> Result<Option<(String, String)>, ToolFailure> {
    let Some(editor) = ctx.host.editor_for(|c| c.read_files) else {
        let (ws, rel) = (ws.clone(), rel.clone());
        return blocking(move || match ws.read_text(&rel) {
            Ok((text, file)) => Ok(Some((text, file.revision))),
            Err(WorkspaceError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        })
        .await;
    };
    let admitted = {
        let (ws, rel) = (ws.clone(), rel.clone());
        blocking(move || match ws.admit_file(&rel) {
            Ok(()) => Ok(true),
            Err(WorkspaceError::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        })
        .await?
    };
    if !admitted {
        return Ok(None);
    }
    let text =
        unless_cancelled(&ctx.cancel, editor.read_text(&ws.root().join(rel.as_str()))).await?;
    ws.admit_text(rel, &text)?;
    let revision = revision_of(text.as_bytes());
    Ok(Some((text, revision)))
}

/// Awaits one editor request unless the turn is cancelled first: an editor that never answers
/// must not hold up an interrupted turn.
pub(crate) async fn unless_cancelled<T>(
    cancel: &CancellationToken,
    request: impl std::future::Future<Output = Result<T, EditorError>>,
) -> Result<T, ToolFailure> {
    tokio::select! {
        r = request => r.map_err(ToolFailure::from),
        () = cancel.cancelled() => Err(ToolFailure::new(ErrorCode::Cancelled,
            "the turn was interrupted while waiting for the editor",
        )),
    }
}
