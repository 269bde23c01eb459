//! `fs.read` (provider name `fs_read`): one UTF-8 page of a file, with the file's revision.
//!
//! The revision is the SHA-256 of the same bytes the page was cut from, so the model can hand it
//! straight to `fs.edit`/`fs.write` as the precondition for changing the file.

use std::borrow::Cow;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::editor::current_text;
use super::wording::{self, Args as CallArgs};
use super::{Tool, ToolContext, ToolResult, parse_args};
use pablo_core::{ToolFailure, ToolKind, ToolName};
use pablo_protocol::Preview;
use pablo_protocol::describe::{CallView, ResultView, plural};
use pablo_workspace::{Page, Workspace, WorkspaceError, page_of};

/// What `fs.read` returns: one page of the file and its revision, as the workspace cuts it.
pub(crate) type ReadResult = Page;

/// A [`ReadResult`] read back for its words, its text borrowed from the result rather than
/// copied (a resumed session shows every page it read). It accepts what `ReadResult` accepts:
/// the same fields, defaults and older name.
#[derive(Deserialize, Default)]
#[serde(default)]
struct PageShown<'a> {
    // Read, not shown: a result whose path or revision is not text is not a page.
    #[serde(borrow)]
    #[allow(dead_code)]
    path: Cow<'a, str>,
    #[serde(borrow, alias = "content")]
    text: Cow<'a, str>,
    offset: u64,
    next_offset: Option<u64>,
    total_bytes: u64,
    #[serde(borrow)]
    #[allow(dead_code)]
    revision: Cow<'a, str>,
}

/// Bytes per page when the model does not say.
pub(crate) const DEFAULT_PAGE_BYTES: usize = 64 * 1024;
/// The largest page the model may ask for.
pub(crate) const MAX_PAGE_BYTES: usize = 1024 * 1024;

pub(crate) struct FsRead {
    workspace: Arc<Workspace>,
}

impl FsRead {
    pub(crate) fn new(workspace: Arc<Workspace>) -> Self {
        Self { workspace }
    }
}

#[derive(Deserialize)]
struct Args {
    path: String,
    offset: Option<u64>,
    limit: Option<usize>,
}

#[async_trait]
impl Tool for FsRead {
    fn name(&self) -> &'static str {
        ToolName::FsRead.native()
    }

    fn provider_name(&self) -> &'static str {
        ToolName::FsRead.provider()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn description(&self) -> String {
        format!(
            "Read a UTF-8 text file in the workspace, one page at a time. Returns text, offset, \
             next_offset (null at the end; pass it as offset to continue), total_bytes and the \
             file's revision (SHA-256), which fs.edit and fs.write need. Offsets and limits are \
             in bytes; a page holds at most limit bytes (default {DEFAULT_PAGE_BYTES}) and never \
             splits a character. Paths are relative to the workspace."
        )
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path relative to the workspace."},
                "offset": {"type": "integer", "minimum": 0, "description": "Byte offset to start at (a next_offset from an earlier page)."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_BYTES, "description": "Most bytes to return."}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    async fn preview(&self, args: &Value, _ctx: &ToolContext) -> Result<Preview, ToolFailure> {
        let args: Args = parse_args(self.name(), args)?;
        let rel = self.workspace.parse_file(&args.path)?;
        self.workspace.check_not_credential(&rel)?;
        Ok(Preview::Read {
            path: rel.to_string(),
        })
    }

    async fn commit_result(
        &self,
        args: &Value,
        _preview: &Preview,
        ctx: &ToolContext,
    ) -> Result<ToolResult, ToolFailure> {
        let args: Args = parse_args(self.name(), args)?;
        let offset = args.offset.unwrap_or(0);
        let limit = args.limit.unwrap_or(DEFAULT_PAGE_BYTES).min(MAX_PAGE_BYTES);
        // From the editor's buffer when it has one (what the person sees), else from disk.
        let rel = self.workspace.parse_file(&args.path)?;
        // A file a language server covers was read: an edit may follow; start the server now.
        ctx.host.lsp.warm(rel.as_str());
        let (text, revision) =
            current_text(ctx, &self.workspace, &rel)
                .await?
                .ok_or_else(|| WorkspaceError::NotFound {
                    path: rel.to_string(),
                })?;
        let page: ReadResult = page_of(&rel, &text, revision, offset, limit)?;
        Ok(page.into())
    }
}

pub(crate) fn show_call(args: CallArgs<'_>) -> CallView {
    let title = format!("Read {}", args.clipped("path").unwrap_or_default());
    wording::call(args, title, args.text("path"))
}

/// `3 lines`, and where the page lies in the file when it is not the whole of it.
pub(crate) fn show_result(data: &Value) -> Option<ResultView> {
    let page: PageShown = wording::typed_borrowed(data)?;
    let lines = plural(wording::line_count(&page.text) as u64, "line");
    let (offset, total) = (page.offset, page.total_bytes);
    Some(ResultView::line(match page.next_offset {
        Some(next) => format!("{lines} (bytes {offset}–{next} of {total}; more to read)"),
        None if offset > 0 => format!("{lines} (bytes {offset}–{total}, the end)"),
        None => lines,
    }))
}
