//! `lsp.query` (provider name `lsp_query`): ask the language servers about the code — where a
//! name is defined and used, what it is, the symbols of a file or of the workspace, a file's
//! diagnostics. Read-only: the servers get the files' current text, nothing is written.
//!
//! A position is a path, a 1-based line and column, or a symbol name (looked up in the file's
//! symbols, or the workspace's when no path is given). Answers are bounded like `fs.search`'s:
//! at most `limit` places, each with its workspace path and the text of its line; places the
//! file tools may not show are left out and counted, and places outside the workspace (a
//! library's source) are named without their text.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::wording::{self, Args as CallArgs};
use super::{Tool, ToolContext, ToolResult, parse_args};
use pablo_core::{ErrorCode, ToolFailure, ToolKind, ToolName};
use pablo_lsp::{LocateKind, LocationHit, SymbolHit};
use pablo_protocol::describe::{CallView, ResultView};
use pablo_protocol::{Diagnostic, Preview};
use pablo_workspace::Workspace;

/// Default and largest number of places one answer lists.
const DEFAULT_LIMIT: usize = 50;
const MAX_LIMIT: usize = 200;
/// The longest line text shown with a place.
const MAX_LINE_CHARS: usize = 200;

pub struct LspQuery {
    workspace: Arc<Workspace>,
}

impl LspQuery {
    pub fn new(workspace: Arc<Workspace>) -> Self {
        Self { workspace }
    }
}

#[derive(Deserialize)]
struct Args {
    operation: String,
    path: Option<String>,
    line: Option<u32>,
    column: Option<u32>,
    symbol: Option<String>,
    limit: Option<usize>,
}

/// One place in an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Place {
    /// Workspace-relative; absolute when outside the workspace.
    pub(crate) path: String,
    pub(crate) line: u32,
    pub(crate) column: u32,
    /// The line's text (none for a place outside the workspace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) text: Option<String>,
    /// For symbols: the name, its kind and its container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) container: Option<String>,
}

/// What `lsp.query` returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LspQueryResult {
    pub(crate) operation: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) places: Vec<Place>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) hover: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) diagnostics: Vec<Diagnostic>,
    /// More places than `limit`, or places the file tools may not show, were left out.
    #[serde(default)]
    pub(crate) truncated: bool,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) hidden: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

const OPERATIONS: &[&str] = &[
    "definition",
    "references",
    "hover",
    "document_symbols",
    "workspace_symbols",
    "diagnostics",
];

fn failure(message: impl Into<String>) -> ToolFailure {
    ToolFailure::new(ErrorCode::LspUnavailable, message)
}

#[async_trait]
impl Tool for LspQuery {
    fn name(&self) -> &'static str {
        ToolName::LspQuery.native()
    }

    fn provider_name(&self) -> &'static str {
        ToolName::LspQuery.provider()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn description(&self) -> String {
        "Ask the language servers about the code. operation: definition, references or hover \
         of a name (path with line and column, 1-based; or path and symbol; or symbol alone to \
         look it up in the workspace), document_symbols of a path, workspace_symbols matching \
         symbol, diagnostics (errors and warnings) of a path. Read-only; answers list at most \
         limit places (default 50) with the text of each line."
            .to_string()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "operation": {"type": "string", "enum": OPERATIONS},
                "path": {"type": "string", "description": "File path relative to the workspace."},
                "line": {"type": "integer", "minimum": 1},
                "column": {"type": "integer", "minimum": 1, "description": "1-based; default: the symbol's column on the line, else its first non-blank character."},
                "symbol": {"type": "string", "minLength": 1, "description": "A name to find (instead of a line and column), or the query of workspace_symbols."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}
            },
            "required": ["operation"],
            "additionalProperties": false
        })
    }

    async fn preview(&self, args: &Value, _ctx: &ToolContext) -> Result<Preview, ToolFailure> {
        let args: Args = parse_args(self.name(), args)?;
        let path = match &args.path {
            Some(p) => {
                let rel = self.workspace.parse_file(p)?;
                self.workspace.check_not_credential(&rel)?;
                rel.to_string()
            }
            None => String::new(),
        };
        Ok(Preview::Read { path })
    }

    async fn commit_result(
        &self,
        args: &Value,
        _preview: &Preview,
        ctx: &ToolContext,
    ) -> Result<ToolResult, ToolFailure> {
        let args: Args = parse_args(self.name(), args)?;
        let q = Query {
            ws: &self.workspace,
            ctx,
            limit: args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT),
        };
        q.run(args).await.map(ToolResult::LspQuery)
    }
}

struct Query<'a> {
    ws: &'a Arc<Workspace>,
    ctx: &'a ToolContext,
    limit: usize,
}

impl Query<'_> {
    async fn run(&self, args: Args) -> Result<LspQueryResult, ToolFailure> {
        let lsp = self.ctx.host.lsp.clone();
        let mut out = LspQueryResult {
            operation: args.operation.clone(),
            places: Vec::new(),
            hover: None,
            diagnostics: Vec::new(),
            truncated: false,
            hidden: 0,
        };
        let op = args.operation.as_str();
        if op == "workspace_symbols" || (args.path.is_none() && op != "diagnostics") {
            let symbol = args.symbol.clone().ok_or_else(|| {
                failure(format!(
                    "lsp.query {op}: give a path, or a symbol to look up"
                ))
            })?;
            let found = lsp.workspace_symbols(&symbol).await.map_err(failure)?;
            if op == "workspace_symbols" {
                let found: Vec<SymbolHit> = found;
                self.places_of_symbols(found, &mut out);
                return Ok(out);
            }
            // A name with no path: the place of the first symbol of exactly that name.
            let at = found
                .into_iter()
                .find(|s| s.name == symbol)
                .ok_or_else(|| failure(format!("no symbol named {symbol:?} in the workspace")))?
                .at;
            let rel = self
                .relative(&at)
                .ok_or_else(|| failure(format!("{symbol:?} is defined outside the workspace")))?;
            return self
                .at_position(op, &rel, at.line, Some(at.column), None, out)
                .await;
        }
        let Some(path) = &args.path else {
            return Err(failure("lsp.query diagnostics: give a path"));
        };
        let rel = self.ws.parse_file(path)?;
        if !self.readable(rel.as_str()) {
            return Err(ToolFailure::new(
                ErrorCode::Denied,
                format!("lsp.query: {rel} is outside what policy lets the file tools read"),
            ));
        }
        let rel = rel.to_string();
        match op {
            "document_symbols" => {
                let text = self.text(&rel).await?;
                let found = lsp.document_symbols(&rel, &text).await.map_err(failure)?;
                self.places_of_symbols(found, &mut out);
                Ok(out)
            }
            "diagnostics" => {
                let text = self.text(&rel).await?;
                let found = lsp
                    .file_diagnostics(
                        &rel,
                        &text,
                        lsp.wait_for(&rel).max(std::time::Duration::from_secs(5)),
                    )
                    .await;
                if found.servers.is_empty() {
                    return Err(failure(if found.unavailable.is_empty() {
                        format!("no language server covers {rel}")
                    } else {
                        found.unavailable.join("; ")
                    }));
                }
                out.truncated = found.omitted > 0;
                out.diagnostics = found.diagnostics;
                Ok(out)
            }
            _ => match args.line {
                Some(line) => {
                    self.at_position(op, &rel, line, args.column, args.symbol.as_deref(), out)
                        .await
                }
                None => {
                    let symbol = args.symbol.as_deref().ok_or_else(|| {
                        failure(format!(
                            "lsp.query {op}: give a line and column, or a symbol"
                        ))
                    })?;
                    let text = self.text(&rel).await?;
                    let found = lsp.document_symbols(&rel, &text).await.map_err(failure)?;
                    let at = found
                        .into_iter()
                        .find(|s| s.name == symbol)
                        .ok_or_else(|| failure(format!("no symbol named {symbol:?} in {rel}")))?
                        .at;
                    self.at_position(op, &rel, at.line, Some(at.column), None, out)
                        .await
                }
            },
        }
    }

    /// definition, references or hover at a line (and column, or the symbol on that line).
    async fn at_position(
        &self,
        op: &str,
        rel: &str,
        line: u32,
        column: Option<u32>,
        symbol: Option<&str>,
        mut out: LspQueryResult,
    ) -> Result<LspQueryResult, ToolFailure> {
        let text = self.text(rel).await?;
        let line_text = text
            .lines()
            .nth(line.saturating_sub(1) as usize)
            .ok_or_else(|| {
                ToolFailure::new(
                    ErrorCode::InvalidArguments,
                    format!("{rel} has no line {line}"),
                )
            })?;
        let chars = match (column, symbol) {
            (Some(c), _) => c.saturating_sub(1) as usize,
            (None, Some(s)) => line_text
                .find(s)
                .map_or(0, |b| line_text[..b].chars().count()),
            (None, None) => line_text.chars().take_while(|c| c.is_whitespace()).count(),
        };
        // Servers count columns in UTF-16 units.
        let utf16: usize = line_text.chars().take(chars).map(char::len_utf16).sum();
        let col = utf16 as u32 + 1;
        let lsp = &self.ctx.host.lsp;
        match op {
            "hover" => {
                out.hover = lsp.hover(rel, &text, line, col).await.map_err(failure)?;
                Ok(out)
            }
            "definition" | "references" => {
                let kind = if op == "definition" {
                    LocateKind::Definition
                } else {
                    LocateKind::References
                };
                let found = lsp
                    .locate(kind, rel, &text, line, col)
                    .await
                    .map_err(failure)?;
                for at in found {
                    if out.places.len() >= self.limit {
                        out.truncated = true;
                        break;
                    }
                    match self.place(&at).await {
                        Some(p) => out.places.push(p),
                        None => out.hidden += 1,
                    }
                }
                out.truncated |= out.hidden > 0;
                Ok(out)
            }
            other => Err(ToolFailure::new(
                ErrorCode::InvalidArguments,
                format!("lsp.query: unknown operation {other:?}"),
            )),
        }
    }

    fn places_of_symbols(&self, found: Vec<SymbolHit>, out: &mut LspQueryResult) {
        for s in found {
            if out.places.len() >= self.limit {
                out.truncated = true;
                break;
            }
            let path = match self.relative(&s.at) {
                Some(rel) if self.readable(&rel) => rel,
                Some(_) => {
                    out.hidden += 1;
                    continue;
                }
                None => s.at.path.display().to_string(),
            };
            out.places.push(Place {
                path,
                line: s.at.line,
                column: s.at.column,
                text: None,
                name: Some(s.name),
                kind: Some(s.kind),
                container: s.container,
            });
        }
        out.truncated |= out.hidden > 0;
    }

    /// A place with its line's text; `None` when the file tools may not show it.
    async fn place(&self, at: &LocationHit) -> Option<Place> {
        let Some(rel) = self.relative(at) else {
            return Some(Place {
                path: at.path.display().to_string(),
                line: at.line,
                column: at.column,
                text: None,
                name: None,
                kind: None,
                container: None,
            });
        };
        if !self.readable(&rel) {
            return None;
        }
        let text = self.text(&rel).await.ok().and_then(|t| {
            t.lines()
                .nth(at.line.saturating_sub(1) as usize)
                .map(|l| l.trim().chars().take(MAX_LINE_CHARS).collect())
        });
        Some(Place {
            path: rel,
            line: at.line,
            column: at.column,
            text,
            name: None,
            kind: None,
            container: None,
        })
    }

    fn relative(&self, at: &LocationHit) -> Option<String> {
        let rel = at.path.strip_prefix(self.ws.root()).ok()?;
        let rel = rel.to_str()?.to_string();
        self.ws.parse_file(&rel).ok().map(|r| r.to_string())
    }

    fn readable(&self, rel: &str) -> bool {
        self.ctx.host.readable.as_ref().is_none_or(|f| f(rel))
    }

    async fn text(&self, rel: &str) -> Result<String, ToolFailure> {
        let rel = self.ws.parse_file(rel)?;
        self.ws.check_not_credential(&rel)?;
        super::editor::current_text(self.ctx, self.ws, &rel)
            .await?
            .map(|(t, _)| t)
            .ok_or_else(|| ToolFailure::new(ErrorCode::NotFound, format!("{rel} does not exist")))
    }
}

pub(crate) fn show_call(args: CallArgs<'_>) -> CallView {
    let op = args.text("operation").unwrap_or_default();
    let what = args
        .clipped("symbol")
        .or_else(|| args.clipped("path"))
        .unwrap_or_default();
    wording::call(args, format!("LSP {op} {what}"), args.text("path"))
}

/// `3 places`, `hover`, `2 diagnostics`.
pub(crate) fn show_result(data: &Value) -> Option<ResultView> {
    let r: LspQueryResult = wording::typed(data)?;
    let mut headline = if let Some(h) = &r.hover {
        h.lines().next().unwrap_or_default().to_string()
    } else if r.operation == "diagnostics" {
        format!("{} diagnostics", r.diagnostics.len())
    } else {
        format!("{} places", r.places.len())
    };
    if r.truncated {
        headline.push_str(" (cut at a limit)");
    }
    let mut view = ResultView::line(headline);
    view.body = r
        .places
        .iter()
        .take(10)
        .map(|p| {
            format!(
                "{}:{}  {}",
                p.path,
                p.line,
                p.name.as_deref().or(p.text.as_deref()).unwrap_or_default()
            )
        })
        .collect();
    Some(view)
}
