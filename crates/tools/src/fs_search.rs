//! `fs.search` (provider name `fs_search`): literal, case-sensitive text search in the workspace.
//!
//! The search itself lives in [`pablo_workspace::search`]; this file is the model-facing shape:
//! the schema, the defaults and the caps.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::wording::{self, Args as CallArgs};
use super::{Tool, ToolContext, ToolResult, blocking, parse_args};
use pablo_core::{ErrorCode, ToolFailure, ToolKind, ToolName};
use pablo_protocol::Preview;
use pablo_protocol::describe::{CallView, ResultView, plural};
use pablo_workspace::Workspace;
use pablo_workspace::search::{SearchOutcome, SearchRequest, search, search_visible};

/// What `fs.search` returns: the matching lines and what the search passed over.
pub(crate) type SearchResult = SearchOutcome;

pub(crate) const DEFAULT_MAX_RESULTS: usize = 200;
pub(crate) const MAX_RESULTS: usize = 10_000;

pub(crate) struct FsSearch {
    workspace: Arc<Workspace>,
}

impl FsSearch {
    pub(crate) fn new(workspace: Arc<Workspace>) -> Self {
        Self { workspace }
    }
}

#[derive(Deserialize)]
struct Args {
    query: String,
    path: Option<String>,
    max_results: Option<usize>,
    include_ignored: Option<bool>,
}

#[async_trait]
impl Tool for FsSearch {
    fn name(&self) -> &'static str {
        ToolName::FsSearch.native()
    }

    fn provider_name(&self) -> &'static str {
        ToolName::FsSearch.provider()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn description(&self) -> String {
        format!(
            "Find lines containing an exact text (literal and case-sensitive, not a regular \
             expression) in the files under a directory of the workspace (default: all of it). \
             Returns path, line_number, column and the line (long lines are cut around the \
             match), sorted by path and line. Skips binary files, symbolic links and files \
             ignored by .gitignore/.ignore (unless include_ignored). At most max_results \
             (default {DEFAULT_MAX_RESULTS}); truncated and limits_hit say when a cap was hit."
        )
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "The exact text to find."},
                "path": {"type": "string", "description": "Directory or file to search, relative to the workspace."},
                "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS},
                "include_ignored": {"type": "boolean", "description": "Also search files that .gitignore/.ignore exclude."}
            },
            "required": ["query"],
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
        if args.query.is_empty() {
            return Err(ToolFailure::new(
                ErrorCode::InvalidArguments,
                "fs.search: query is empty; give the exact text to find",
            ));
        }
        let ws = self.workspace.clone();
        let readable = ctx.host.readable.clone();
        let outcome = blocking(move || {
            let rel = ws.parse(args.path.as_deref().unwrap_or(""))?;
            let req = SearchRequest {
                query: args.query,
                path: rel,
                max_results: args
                    .max_results
                    .unwrap_or(DEFAULT_MAX_RESULTS)
                    .clamp(1, MAX_RESULTS),
                include_ignored: args.include_ignored.unwrap_or(false),
                max_files: ws.options().max_search_files,
                max_bytes: ws.options().max_search_bytes,
            };
            match &readable {
                Some(r) => search_visible(&ws, &req, r.as_ref()),
                None => search(&ws, &req),
            }
        })
        .await?;
        Ok(outcome.into())
    }
}

pub(crate) fn show_call(args: CallArgs<'_>) -> CallView {
    let title = format!(
        "Search {}",
        args.clipped("query")
            .or(args.clipped("pattern"))
            .unwrap_or_default()
    );
    let summary = match (
        args.text("pattern").or_else(|| args.text("query")),
        args.text("path"),
    ) {
        (Some(p), Some(path)) => Some(format!("{p:?} in {path}")),
        (Some(p), None) => Some(format!("{p:?}")),
        _ => None,
    };
    wording::call(args, title, summary)
}

/// `2 matches in 1 file`, then `path:line: text` for each match.
pub(crate) fn show_result(data: &Value) -> Option<ResultView> {
    let outcome: SearchResult = wording::typed(data)?;
    let mut files: Vec<&str> = outcome.matches.iter().map(|m| m.path.as_str()).collect();
    files.sort_unstable();
    files.dedup();
    let mut headline = format!(
        "{} in {}",
        plural(outcome.matches.len() as u64, "match").replace("matchs", "matches"),
        plural(files.len() as u64, "file")
    );
    if outcome.truncated {
        headline.push_str(" (cut at a limit)");
    }
    let body = outcome
        .matches
        .iter()
        .map(|m| format!("{}:{}: {}", m.path, m.line_number, m.line.trim()))
        .collect();
    Some(ResultView::lines(headline, body))
}
