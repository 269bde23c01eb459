//! `fs.list` (provider name `fs_list`): the entries of one directory, in byte-wise name order.
//!
//! With `depth` above 1 it descends into subdirectories (never through links), depth-first, each
//! level sorted the same way, so the same tree always lists the same way.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::wording::{self, Args as CallArgs};
use super::{Tool, ToolContext, ToolResult, blocking, parse_args};
use pablo_core::{ToolFailure, ToolKind, ToolName};
use pablo_protocol::Preview;
use pablo_protocol::describe::{CallView, ResultView, plural};
use pablo_workspace::{EntryKind, Listing, Workspace};

/// What `fs.list` returns: the entries of the directory as the workspace lists them.
pub(crate) type ListResult = Listing;

pub(crate) const DEFAULT_MAX_ENTRIES: usize = 1000;
pub const MAX_DEPTH: usize = 6;

pub(crate) struct FsList {
    workspace: Arc<Workspace>,
}

impl FsList {
    pub(crate) fn new(workspace: Arc<Workspace>) -> Self {
        Self { workspace }
    }
}

#[derive(Deserialize)]
struct Args {
    path: Option<String>,
    depth: Option<usize>,
    max_entries: Option<usize>,
}

#[async_trait]
impl Tool for FsList {
    fn name(&self) -> &'static str {
        ToolName::FsList.native()
    }

    fn provider_name(&self) -> &'static str {
        ToolName::FsList.provider()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn description(&self) -> String {
        format!(
            "List a directory of the workspace (default: the workspace root). Each entry has \
             path, kind (file, dir, symlink, other) and size for files. depth 1 (the default) \
             lists direct children; up to {MAX_DEPTH} descends into subdirectories, except \
             .git (listed as one entry; pass path .git to list git's internals). At most \
             max_entries (default {DEFAULT_MAX_ENTRIES}) are returned; truncated is true when \
             the list was cut."
        )
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory relative to the workspace; empty or . for the root."},
                "depth": {"type": "integer", "minimum": 1, "maximum": MAX_DEPTH, "description": "Levels to list; a .git directory is not descended into."},
                "max_entries": {"type": "integer", "minimum": 1, "maximum": 100000}
            },
            "additionalProperties": false
        })
    }

    async fn preview(&self, args: &Value, _ctx: &ToolContext) -> Result<Preview, ToolFailure> {
        let args: Args = parse_args(self.name(), args)?;
        let rel = self.workspace.parse(args.path.as_deref().unwrap_or(""))?;
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
        let ws = self.workspace.clone();
        // With read roots, a listing shows only what the roots let the tools read (and the way
        // to it): the names of what is out of bounds stay out of the conversation too.
        let readable = ctx.host.readable.clone();
        let listing = blocking(move || {
            let rel = ws.parse(args.path.as_deref().unwrap_or(""))?;
            let depth = args.depth.unwrap_or(1).clamp(1, MAX_DEPTH);
            let max = args.max_entries.unwrap_or(DEFAULT_MAX_ENTRIES);
            match &readable {
                Some(r) => ws.list_visible(&rel, depth, max, r.as_ref()),
                None => ws.list(&rel, depth, max),
            }
        })
        .await?;
        Ok(listing.into())
    }
}

pub(crate) fn show_call(args: CallArgs<'_>) -> CallView {
    let title = format!(
        "List {}",
        args.clipped("path").unwrap_or_else(|| ".".into())
    );
    wording::call(args, title, args.text("path"))
}

/// `3 entries`, then one line per entry (directories end in `/`).
pub(crate) fn show_result(data: &Value) -> Option<ResultView> {
    let listing: ListResult = wording::typed(data)?;
    let mut headline = plural(listing.entries.len() as u64, "entry").replace("entrys", "entries");
    if listing.truncated {
        headline.push_str(" (cut at the entry limit)");
    }
    let body = listing
        .entries
        .iter()
        .map(|e| match e.kind {
            EntryKind::Dir => format!("{}/", e.path),
            _ => e.path.clone(),
        })
        .collect();
    Some(ResultView::lines(headline, body))
}
