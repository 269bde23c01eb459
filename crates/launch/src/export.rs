//! A session taken out of pablo or branched, for every front-end: Markdown a person can read or
//! paste into a pull request, the JSON document that `pablo import` turns back into a session,
//! and a fork at a turn. The journal is the source of each; tool calls read as they do on screen
//! (each tool's own [`describe_result`]).

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use super::{LaunchError, describe_result};
use pablo_protocol::{Event, Preview, ToolOutcome, summarize_arguments};
use pablo_session::ExportDocument;

/// What an export is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Markdown,
    Json,
}

impl ExportFormat {
    /// `md` (or `markdown`) and `json`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "md" | "markdown" => Some(Self::Markdown),
            "json" => Some(Self::Json),
            _ => None,
        }
    }
}

/// The session `id` of the default store, written as `format`.
pub fn export_session(id: &str, format: ExportFormat) -> Result<String, LaunchError> {
    let store = pablo_session::default_store()?;
    let doc = store.export(id)?;
    Ok(match format {
        ExportFormat::Json => {
            let mut text = serde_json::to_string_pretty(&doc)
                .map_err(|e| LaunchError::Setup(format!("cannot encode the session: {e}")))?;
            text.push('\n');
            text
        }
        ExportFormat::Markdown => markdown(&doc),
    })
}

/// Imports an export document (the text of `source_name`) as a new session of the default
/// store working in `workspace`; returns the new id.
pub fn import_session(
    source_name: &str,
    text: &str,
    workspace: &Path,
) -> Result<String, LaunchError> {
    let doc = ExportDocument::parse(source_name, text)?;
    let workspace = workspace
        .canonicalize()
        .map_err(|e| LaunchError::Workspace {
            path: workspace.to_path_buf(),
            message: e.to_string(),
        })?;
    Ok(pablo_session::default_store()?.import(doc, &workspace.to_string_lossy())?)
}

/// Forks the session `id` of the default store after turn `at` (all of it when `None`); returns
/// the new session's id and how many turns it holds.
pub fn fork_session(id: &str, at: Option<u32>) -> Result<(String, u32), LaunchError> {
    Ok(pablo_session::default_store()?.fork(id, at)?)
}

/// `/export [PATH]`: the session written to PATH (relative to `dir`, the workspace), as JSON when
/// PATH ends in `.json` and as Markdown otherwise; without PATH to `pablo-session-ID.md` in
/// pablo's data directory (`exports/`), never into the repository unasked. Written beside the
/// file and renamed over it. Returns the path written.
pub fn export_to(id: &str, path: Option<&str>, dir: Option<&Path>) -> Result<String, LaunchError> {
    let name = path
        .map(str::to_string)
        .unwrap_or_else(|| format!("pablo-session-{}.md", id.get(..8).unwrap_or(id)));
    let target = match (path, dir) {
        (None, _) => {
            let dirs = pablo_config::Dirs::discover().map_err(|e| {
                LaunchError::Setup(format!("cannot find pablo's data directory: {e}"))
            })?;
            let exports = dirs.data.join("exports");
            std::fs::create_dir_all(&exports).map_err(|e| {
                LaunchError::Setup(format!("cannot create {}: {e}", exports.display()))
            })?;
            exports.join(&name)
        }
        (Some(_), Some(d)) => d.join(&name),
        (Some(_), None) => std::path::PathBuf::from(&name),
    };
    let format = if name.ends_with(".json") {
        ExportFormat::Json
    } else {
        ExportFormat::Markdown
    };
    let text = export_session(id, format)?;
    let failed = |e: std::io::Error| LaunchError::Setup(format!("cannot write {name}: {e}"));
    let tmp = target.with_extension(format!("pablo-{}.tmp", std::process::id()));
    // A new file, never one that is there already (a link the repository planted).
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
        .and_then(|()| std::fs::rename(&tmp, &target))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            failed(e)
        })?;
    Ok(target.display().to_string())
}

/// A code fence that `body` cannot close: one backtick longer than the longest run in it.
fn fence(body: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in body.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat((longest + 1).max(3))
}

/// Arguments in one line, cut: enough to see what was asked, never a whole file's content.
fn short_arguments(arguments: &Value) -> String {
    let text = arguments.to_string();
    if text.chars().count() <= 160 {
        return text;
    }
    let cut: String = text.chars().take(160).collect();
    format!("{cut}…")
}

/// The session as Markdown: a heading with what it was, then each turn: the prompt, the model's
/// messages, each tool call with its arguments and a short result, and the diff of every file
/// change that landed.
pub(crate) fn markdown(doc: &ExportDocument) -> String {
    let h = &doc.header;
    let mut out = String::new();
    let title = doc
        .events
        .iter()
        .find_map(|e| match &e.event {
            Event::UserMessage { text } => Some(text.lines().next().unwrap_or("").to_string()),
            _ => None,
        })
        .unwrap_or_else(|| "(no prompt)".into());
    let _ = writeln!(out, "# {title}\n");
    let _ = writeln!(
        out,
        "pablo session `{}` · {}/{} · {} · started {}",
        h.id, h.provider, h.model, h.workspace, h.created
    );
    if let Some(origin) = &h.forked_from {
        let _ = writeln!(
            out,
            "\nforked from session `{}` before turn {}",
            origin.session, origin.turn
        );
    }
    let mut turn = 0;
    let mut arguments: std::collections::HashMap<String, Value> = Default::default();
    let mut previews: std::collections::HashMap<String, String> = Default::default();
    for e in &doc.events {
        match &e.event {
            Event::UserMessage { text } => {
                turn += 1;
                let _ = writeln!(out, "\n## Turn {turn}\n\n**You:**\n\n{}", text.trim_end());
            }
            Event::MessageCompleted { text, .. } if !text.trim().is_empty() => {
                let _ = writeln!(out, "\n**pablo:**\n\n{}", text.trim_end());
            }
            Event::ToolCallBegin {
                call_id,
                arguments: args,
                ..
            } => {
                arguments.insert(call_id.clone(), args.clone());
            }
            Event::ToolCallRunning {
                call_id,
                preview: Preview::FileChange(change),
            } => {
                previews.insert(call_id.clone(), change.diff.clone());
            }
            Event::ToolCallEnd {
                call_id,
                tool,
                result,
            } => {
                let args = arguments.remove(call_id).unwrap_or(Value::Null);
                let headline = describe_result(tool, &args, result).headline(None);
                let (mark, landed) = match result {
                    ToolOutcome::Ok { .. } => ("✓", true),
                    ToolOutcome::Err { .. } => ("✗", false),
                };
                let what = summarize_arguments(&args);
                let _ = writeln!(
                    out,
                    "\n- `{tool}` {what} {mark} {headline}\n  arguments: `{}`",
                    short_arguments(&args).replace('`', "'")
                );
                if let Some(diff) = previews.remove(call_id).filter(|_| landed) {
                    let f = fence(&diff);
                    let _ = writeln!(out, "\n{f}diff\n{}\n{f}", diff.trim_end());
                }
            }
            Event::PlanUpdate { items, .. } => {
                let _ = writeln!(out, "\nchecklist:");
                for item in items {
                    let mark = match item.status {
                        pablo_protocol::PlanStatus::Completed => "x",
                        _ => " ",
                    };
                    let _ = writeln!(out, "- [{mark}] {}", item.content);
                }
            }
            Event::Error { code, message } => {
                let _ = writeln!(out, "\n> error ({code}): {message}");
            }
            Event::ContextCompacted {
                replaced_messages, ..
            } => {
                let _ = writeln!(
                    out,
                    "\n> the {replaced_messages} earlier messages were summarized to fit the \
                     context window"
                );
            }
            _ => {}
        }
    }
    out
}
