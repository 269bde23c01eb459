//! `fs.write` (provider name `fs_write`): create a file, or replace one at a known revision.
//!
//! The preview is the complete change (new text, revisions, diff); the commit installs exactly
//! that text atomically, after checking once more that the file is still at the revision the
//! preview replaced. `expected_revision: null` only ever creates.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::editor::current_text;
use super::wording::{self, Args as CallArgs};
use super::{Tool, ToolContext, ToolResult, blocking, parse_args};
use pablo_core::{ErrorCode, ToolFailure, ToolKind, ToolName};
use pablo_protocol::describe::{CallView, ResultView};
use pablo_protocol::{FileChangePreview, Preview};
use pablo_workspace::diff::{apply_hunks, file_change_preview};
use pablo_workspace::{RelPath, Workspace, WorkspaceError, match_text_shape, revision_of};

pub(crate) struct FsWrite {
    workspace: Arc<Workspace>,
}

impl FsWrite {
    pub(crate) fn new(workspace: Arc<Workspace>) -> Self {
        Self { workspace }
    }
}

#[derive(Deserialize)]
struct Args {
    path: String,
    text: String,
    expected_revision: Option<String>,
}

/// The change `args` makes, given the file's current text and revision (`None`: no file).
fn prepare(
    rel: &RelPath,
    current: Option<(String, String)>,
    args: Args,
) -> Result<FileChangePreview, ToolFailure> {
    match (&args.expected_revision, &current) {
        (None, Some((_, rev))) => {
            return Err(WorkspaceError::AlreadyExists {
                path: rel.to_string(),
                current: rev.clone(),
            }
            .into());
        }
        (Some(_), None) => {
            return Err(WorkspaceError::RevisionMismatch {
                path: rel.to_string(),
                detail: "the file does not exist; to create it, pass expected_revision: null"
                    .into(),
                current: None,
            }
            .into());
        }
        (Some(exp), Some((_, rev))) if !exp.eq_ignore_ascii_case(rev) => {
            return Err(WorkspaceError::RevisionMismatch {
                path: rel.to_string(),
                detail: super::wording::revision_mismatch(exp, rev),
                current: Some(rev.clone()),
            }
            .into());
        }
        _ => {}
    }
    Ok(match current {
        Some((old, rev)) => {
            let new = match_text_shape(&old, &args.text);
            file_change_preview(rel.as_str(), Some(&old), Some(rev), new)
        }
        None => file_change_preview(rel.as_str(), None, None, args.text),
    })
}

/// What `fs.write` and `fs.edit` return: the change that landed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FileChangeResult {
    pub(crate) path: String,
    pub(crate) committed: bool,
    pub(crate) created: bool,
    /// The file's revision now.
    pub(crate) revision: String,
    pub(crate) added: usize,
    pub(crate) removed: usize,
    /// Whether the rename is on disk for sure (`false` when the directory could not be synced,
    /// or when the editor holds the text).
    pub(crate) durable: bool,
    /// `editor` when the editor applied the change to its buffer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) written_by: Option<String>,
    /// After a per-hunk review: which hunks landed and which did not.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub(crate) partial: Option<PartialChange>,
    /// What the language servers covering the file report for it as it now is: its errors and
    /// warnings, bounded (docs/lsp.md). Absent when no server covers the file.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub(crate) lsp: Option<CommittedDiagnostics>,
}

/// A committed file's diagnostics as the model reads them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CommittedDiagnostics {
    /// Errors first, then warnings, by line.
    pub(crate) diagnostics: Vec<pablo_protocol::Diagnostic>,
    /// How many more there were.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) diagnostics_omitted: usize,
    /// The servers that checked the file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) diagnostics_from: Vec<String>,
    /// The servers that did not answer, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) diagnostics_unavailable: Vec<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What the person decided about the hunks of a change when they accepted only some.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartialChange {
    /// Always `true`: only part of the change was written.
    pub partial: bool,
    pub hunks_applied: Vec<usize>,
    pub hunks_not_applied: Vec<HunkNotApplied>,
    pub note: String,
}

/// One hunk the person rejected: where it was, where those lines are now, and its text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HunkNotApplied {
    pub hunk: usize,
    pub old_start: usize,
    pub old_len: usize,
    pub lines_now: LineRange,
    /// The hunk as unified-diff text (its header, then its lines).
    pub text: String,
    /// Why the person rejected it, when they said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Lines of the file as it is now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineRange {
    pub start: i64,
    pub len: usize,
}

/// Installs a previewed file change. Shared by `fs.write` and `fs.edit`.
pub(crate) async fn commit_file_change(
    ws: &Arc<Workspace>,
    tool: &str,
    args_path: &str,
    preview: &Preview,
    ctx: &ToolContext,
) -> Result<FileChangeResult, ToolFailure> {
    let mut result = install_file_change(ws, tool, args_path, preview, ctx).await?;
    if let Preview::FileChange(p) = preview
        && ctx.host.lsp.covers(&p.path)
    {
        // The change landed: the wait for the servers' verdict on it is bounded like the
        // preview's, and what they say goes to the model with the result.
        let lsp = &ctx.host.lsp;
        let found = lsp
            .file_diagnostics(&p.path, &p.new_text, lsp.wait_for(&p.path))
            .await;
        result.lsp = Some(CommittedDiagnostics {
            diagnostics: found.diagnostics,
            diagnostics_omitted: found.omitted,
            diagnostics_from: found.servers,
            diagnostics_unavailable: found.unavailable,
        });
    }
    Ok(result)
}

/// Installs the previewed file change (on disk, or through the editor that holds the file).
async fn install_file_change(
    ws: &Arc<Workspace>,
    tool: &str,
    args_path: &str,
    preview: &Preview,
    ctx: &ToolContext,
) -> Result<FileChangeResult, ToolFailure> {
    let Preview::FileChange(p) = preview else {
        return Err(ToolFailure::new(
            ErrorCode::InvalidPreview,
            format!("{tool} can only commit a file change preview"),
        ));
    };
    if revision_of(p.new_text.as_bytes()) != p.new_revision {
        return Err(ToolFailure::new(
            ErrorCode::InvalidPreview,
            format!(
                "{}: the preview's new_revision does not match its new_text; nothing written",
                p.path
            ),
        ));
    }
    let rel = ws.parse_file(&p.path)?;
    if ws.parse_file(args_path)? != rel {
        return Err(ToolFailure::new(
            ErrorCode::InvalidPreview,
            format!("{tool}: the preview is for {}, not {args_path}", p.path),
        ));
    }
    // A change to an existing file goes to the editor when it takes writes: the person may have
    // the file open, and a write behind the editor's back would fight their buffer. A new file
    // has no buffer yet; it is installed on disk like any other.
    if p.old_revision.is_some() && ctx.host.editor_for(|c| c.write_files).is_some() {
        return commit_through_editor(ws, &rel, p, ctx).await;
    }
    let ws = ws.clone();
    let p = p.clone();
    let cancel = ctx.cancel.clone();
    let changes = ctx.host.changes.clone();
    // Once the blocking install starts it runs to its end: a cancellation after the rename
    // cannot turn a committed change into a reported failure.
    let installed = blocking(move || {
        if p.old_revision.is_none()
            && let Some(c) = &changes
        {
            c.will_create(&rel);
        }
        // The checkpoint gets the bytes the install checked and is about to replace.
        let mut keep = |previous: Option<&pablo_workspace::FileBytes>| match &changes {
            Some(c) => {
                c.before_write(&rel, previous)
                    .map_err(|message| WorkspaceError::Checkpoint {
                        path: rel.to_string(),
                        message,
                    })
            }
            None => Ok(()),
        };
        let installed = ws.install_with(
            &rel,
            p.new_text.as_bytes(),
            p.old_revision.as_deref(),
            &cancel,
            &mut keep,
        )?;
        if let Some(c) = &changes {
            c.after_write(&rel, p.new_text.as_bytes());
        }
        Ok::<_, WorkspaceError>((installed, p))
    })
    .await?;
    let (installed, p) = installed;
    Ok(FileChangeResult {
        path: p.path,
        committed: true,
        created: installed.created,
        revision: installed.revision,
        added: p.added,
        removed: p.removed,
        durable: installed.durable,
        written_by: None,
        partial: None,
        lsp: None,
    })
}

/// Applies a previewed change to an existing file through the editor: the current text (from the
/// editor when it reads files) must still have the revision the preview replaced, then the new
/// text is handed over. See [`super::editor`] for the one round trip this cannot close.
async fn commit_through_editor(
    ws: &Arc<Workspace>,
    rel: &RelPath,
    p: &FileChangePreview,
    ctx: &ToolContext,
) -> Result<FileChangeResult, ToolFailure> {
    let Some(editor) = ctx.host.editor_for(|c| c.write_files) else {
        return Err(ToolFailure::new(
            ErrorCode::Internal,
            "the editor stopped taking writes during the call",
        ));
    };
    let expected = p.old_revision.as_deref().unwrap_or_default();
    let Some((editor_text, current)) = current_text(ctx, ws, rel).await? else {
        return Err(WorkspaceError::RevisionMismatch {
            path: rel.to_string(),
            detail: "the file was removed after the preview; nothing written".into(),
            current: None,
        }
        .into());
    };
    if !current.eq_ignore_ascii_case(expected) {
        return Err(WorkspaceError::RevisionMismatch {
            path: rel.to_string(),
            detail: format!(
                "the file changed after the preview (expected {expected}, now {current}); \
                 nothing written"
            ),
            current: Some(current),
        }
        .into());
    }
    if ctx.cancel.is_cancelled() {
        return Err(WorkspaceError::Cancelled {
            path: rel.to_string(),
        }
        .into());
    }
    if let Some(c) = &ctx.host.changes {
        // What the editor holds is what its write replaces.
        let text = editor_text;
        let mode = match ws.node(rel) {
            Ok(pablo_workspace::Node::File { mode, .. }) => mode,
            _ => 0o644,
        };
        let previous = pablo_workspace::FileBytes {
            revision: revision_of(text.as_bytes()),
            bytes: text.into_bytes(),
            mode,
        };
        c.before_write(rel, Some(&previous))
            .map_err(|message| WorkspaceError::Checkpoint {
                path: rel.to_string(),
                message,
            })?;
    }
    // Once sent, the write is awaited whatever happens to the turn: the editor may already have
    // applied it, and a change that landed must not be reported as a failure.
    editor
        .write_text(&ws.root().join(rel.as_str()), &p.new_text)
        .await?;
    if let Some(c) = &ctx.host.changes {
        c.after_write(rel, p.new_text.as_bytes());
    }
    Ok(FileChangeResult {
        path: p.path.clone(),
        committed: true,
        created: false,
        revision: p.new_revision.clone(),
        added: p.added,
        removed: p.removed,
        // The editor holds the text now; whether and when it reaches the disk is its call.
        durable: false,
        written_by: Some("editor".into()),
        partial: None,
        lsp: None,
    })
}

/// Rebuilds a file change from only the accepted hunks. Shared by `fs.write` and `fs.edit`.
pub(crate) fn narrow_file_change(
    ws: &Workspace,
    preview: &Preview,
    hunks: &[usize],
) -> Result<Preview, ToolFailure> {
    let Preview::FileChange(p) = preview else {
        return Err(ToolFailure::new(
            ErrorCode::HunksUnsupported,
            "only a file change can be narrowed to hunks",
        ));
    };
    let rel = ws.parse_file(&p.path)?;
    let old = match &p.old_revision {
        None => None,
        Some(expected) => {
            let (text, file) = ws.read_text(&rel)?;
            if !file.revision.eq_ignore_ascii_case(expected) {
                return Err(WorkspaceError::RevisionMismatch {
                    path: rel.to_string(),
                    detail: format!(
                        "the file changed during review (expected {expected}, now {})",
                        file.revision
                    ),
                    current: Some(file.revision),
                }
                .into());
            }
            Some(text)
        }
    };
    let new = apply_hunks(old.as_deref().unwrap_or(""), &p.new_text, hunks)?;
    Ok(Preview::FileChange(file_change_preview(
        &p.path,
        old.as_deref(),
        p.old_revision.clone(),
        new,
    )))
}

#[async_trait]
impl Tool for FsWrite {
    fn name(&self) -> &'static str {
        ToolName::FsWrite.native()
    }

    fn provider_name(&self) -> &'static str {
        ToolName::FsWrite.provider()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn description(&self) -> String {
        "Create a file, or replace a whole file, in the workspace. To create, pass \
         expected_revision: null (refused with already_exists if the file exists). To replace, \
         pass the revision fs.read returned (refused with revision_mismatch if the file changed \
         since). Missing parent directories are created. The file keeps its mode, its CRLF line \
         endings and a missing final newline. Prefer fs.edit for small changes."
            .to_string()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path relative to the workspace."},
                "text": {"type": "string", "description": "The complete new content."},
                "expected_revision": {
                    "type": ["string", "null"],
                    "description": "The file's current revision from fs.read, or null to create a new file."
                }
            },
            "required": ["path", "text", "expected_revision"],
            "additionalProperties": false
        })
    }

    async fn preview(&self, args: &Value, ctx: &ToolContext) -> Result<Preview, ToolFailure> {
        let args: Args = parse_args(self.name(), args)?;
        let rel = self.workspace.parse_file(&args.path)?;
        self.workspace.check_not_credential(&rel)?;
        ctx.host.lsp.warm(rel.as_str());
        let current = current_text(ctx, &self.workspace, &rel).await?;
        Ok(Preview::FileChange(prepare(&rel, current, args)?))
    }

    async fn commit_result(
        &self,
        args: &Value,
        preview: &Preview,
        ctx: &ToolContext,
    ) -> Result<ToolResult, ToolFailure> {
        let args: Args = parse_args(self.name(), args)?;
        commit_file_change(&self.workspace, self.name(), &args.path, preview, ctx)
            .await
            .map(ToolResult::from)
    }

    fn narrow(&self, preview: &Preview, hunks: &[usize]) -> Result<Preview, ToolFailure> {
        narrow_file_change(&self.workspace, preview, hunks)
    }

    fn write_target(&self, args: &Value) -> Option<String> {
        let path = args.get("path")?.as_str()?;
        self.workspace
            .parse_file(path)
            .ok()
            .map(|rel| rel.to_string())
    }
}

pub(crate) fn show_call(tool: ToolName, args: CallArgs<'_>) -> CallView {
    let verb = if tool == ToolName::FsEdit {
        "Edit"
    } else {
        "Write"
    };
    let title = format!("{verb} {}", args.clipped("path").unwrap_or_default());
    wording::call(args, title, args.text("path"))
}

/// `edited src/a.rs (+1 −1)`, and who wrote it when it was not pablo.
pub(crate) fn show_result(tool: ToolName, data: &Value) -> Option<ResultView> {
    let r: FileChangeResult = wording::typed(data)?;
    let verb = if r.created {
        "created"
    } else if tool == ToolName::FsEdit {
        "edited"
    } else {
        "replaced"
    };
    let path = if r.path.is_empty() { "?" } else { &r.path };
    let mut headline = format!("{verb} {path} (+{} −{})", r.added, r.removed);
    if let Some(by) = &r.written_by {
        headline.push_str(&format!(", written by the {by}"));
    }
    Some(ResultView::line(headline))
}
