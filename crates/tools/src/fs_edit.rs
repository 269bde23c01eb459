//! `fs.edit` (provider name `fs_edit`): replace exactly one literal occurrence of a text.
//!
//! Zero or several occurrences are refused rather than guessed at: the model must quote enough
//! context to name one place. In a CRLF file the model's `\n` line breaks are matched and written
//! as `\r\n`, so an edit never mixes line endings into a file.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::editor::current_text;
use super::fs_write::{commit_file_change, narrow_file_change};
use super::{Tool, ToolContext, ToolResult, parse_args};
use pablo_core::{ErrorCode, ToolFailure, ToolKind, ToolName};
use pablo_protocol::{FileChangePreview, Preview};
use pablo_workspace::diff::file_change_preview;
use pablo_workspace::{RelPath, Workspace, WorkspaceError, occurrences, to_crlf, uses_crlf};

pub(crate) struct FsEdit {
    workspace: Arc<Workspace>,
}

impl FsEdit {
    pub(crate) fn new(workspace: Arc<Workspace>) -> Self {
        Self { workspace }
    }
}

#[derive(Deserialize)]
struct Args {
    path: String,
    old_text: String,
    new_text: String,
    expected_revision: String,
}

/// The change `args` makes to `old` (whose revision is `revision`), checked against the model's
/// expected revision.
fn prepare(
    rel: &RelPath,
    old: String,
    revision: String,
    args: Args,
) -> Result<FileChangePreview, ToolFailure> {
    if !revision.eq_ignore_ascii_case(&args.expected_revision) {
        return Err(WorkspaceError::RevisionMismatch {
            path: rel.to_string(),
            detail: super::wording::revision_mismatch(&args.expected_revision, &revision),
            current: Some(revision),
        }
        .into());
    }
    let crlf = uses_crlf(&old);
    let mut find = args.old_text.clone();
    let mut hits = occurrences(&old, &find);
    if hits.is_empty() && crlf {
        find = to_crlf(&args.old_text);
        hits = occurrences(&old, &find);
    }
    let replacement = if crlf {
        to_crlf(&args.new_text)
    } else {
        args.new_text
    };
    match hits.as_slice() {
        [] => Err(WorkspaceError::NoMatch {
            path: rel.to_string(),
        }
        .into()),
        [at] => {
            let mut new = String::with_capacity(old.len() + replacement.len());
            new.push_str(&old[..*at]);
            new.push_str(&replacement);
            new.push_str(&old[*at + find.len()..]);
            Ok(file_change_preview(
                rel.as_str(),
                Some(&old),
                Some(revision),
                new,
            ))
        }
        many => Err(WorkspaceError::AmbiguousMatch {
            path: rel.to_string(),
            count: many.len(),
        }
        .into()),
    }
}

#[async_trait]
impl Tool for FsEdit {
    fn name(&self) -> &'static str {
        ToolName::FsEdit.native()
    }

    fn provider_name(&self) -> &'static str {
        ToolName::FsEdit.provider()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn description(&self) -> String {
        "Replace one exact piece of text in a workspace file. old_text must occur exactly once \
         (no_match when it does not occur, ambiguous_match with the count when it occurs more \
         often: then quote more surrounding lines). expected_revision is the revision fs.read \
         returned; the edit is refused if the file changed since."
            .to_string()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path relative to the workspace."},
                "old_text": {"type": "string", "minLength": 1, "description": "The exact text to replace, occurring once."},
                "new_text": {"type": "string", "description": "The replacement."},
                "expected_revision": {"type": "string", "description": "The file's revision from fs.read."}
            },
            "required": ["path", "old_text", "new_text", "expected_revision"],
            "additionalProperties": false
        })
    }

    async fn preview(&self, args: &Value, ctx: &ToolContext) -> Result<Preview, ToolFailure> {
        let args: Args = parse_args(self.name(), args)?;
        let rel = self.workspace.parse_file(&args.path)?;
        self.workspace.check_not_credential(&rel)?;
        if args.old_text.is_empty() {
            return Err(ToolFailure::new(
                ErrorCode::InvalidArguments,
                "fs.edit: old_text is empty; quote the text to replace",
            ));
        }
        ctx.host.lsp.warm(rel.as_str());
        let (old, revision) = current_text(ctx, &self.workspace, &rel)
            .await?
            .ok_or_else(|| WorkspaceError::NotFound {
                path: rel.to_string(),
            })?;
        let p = prepare(&rel, old, revision, args)?;
        Ok(Preview::FileChange(p))
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
