//! What a committed call returns, typed: one variant per tool, each the tool's own result type,
//! serialized to exactly the JSON the model receives (a contract: `pablo run --json` prints it and
//! journals keep it). Code outside a tool reads its result through the methods here, never by key.

use serde::Serialize;
use serde_json::Value;

use super::{
    artifact_write, csv_analyze, fs_list, fs_read, fs_search, fs_write, lsp_query, mcp,
    memory_propose, plan, shell_run, shell_session, skill_load, web_fetch,
};

/// The result of one committed call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ToolResult {
    Read(fs_read::ReadResult),
    List(fs_list::ListResult),
    Search(fs_search::SearchResult),
    /// `fs.write` and `fs.edit`.
    FileChange(fs_write::FileChangeResult),
    Command(shell_run::ShellRunResult),
    Session(shell_session::SessionResult),
    Plan(plan::PlanResult),
    Csv(csv_analyze::CsvResult),
    Artifact(artifact_write::ArtifactResult),
    Fetch(web_fetch::FetchResult),
    Memory(memory_propose::MemoryResult),
    Mcp(mcp::result::McpResult),
    Skill(skill_load::SkillResult),
    LspQuery(lsp_query::LspQueryResult),
}

impl ToolResult {
    /// The JSON the model receives (the `data` of `{"ok": true, "data": …}`).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// For a result that reports how a command ended: its exit code (`Some(None)` when it ended
    /// without one, on a signal). `None` for results that report no command.
    pub fn exit_code(&self) -> Option<Option<i32>> {
        match self {
            ToolResult::Command(r) => r.exit_code(),
            ToolResult::Session(r) => r.exit_code(),
            _ => None,
        }
    }

    /// The file that holds a command's whole output, when it was kept.
    pub fn artifact(&self) -> Option<&str> {
        match self {
            ToolResult::Command(r) => r.artifact(),
            _ => None,
        }
    }

    /// What traces may say of this result: numbers and flags, never its content.
    pub fn trace_facts(&self) -> pablo_telemetry::ToolFacts {
        let truncated = match self {
            ToolResult::Command(super::shell_run::ShellRunResult::Finished(r)) => {
                r.truncated || r.editor_truncated == Some(true)
            }
            ToolResult::Fetch(r) => r.truncated,
            _ => false,
        };
        pablo_telemetry::ToolFacts {
            exit_code: self.exit_code().flatten(),
            truncated,
            lines: match self {
                ToolResult::FileChange(r) if r.committed => Some((r.added, r.removed)),
                _ => None,
            },
        }
    }

    /// What the sandbox refused, when a finished command's failure looks like its doing.
    pub fn sandbox_denied(&self) -> Option<&super::shell_report::SandboxDenied> {
        match self {
            ToolResult::Command(r) => r.sandbox_denied(),
            _ => None,
        }
    }

    /// Says that this is the result of a second run, without the sandbox, that the person
    /// approved after the first failed in it. Only a command's result has such a run.
    pub fn mark_unsandboxed_rerun(&mut self) {
        if let ToolResult::Command(r) = self {
            r.mark_unsandboxed_rerun();
        }
    }

    /// Adds what the person decided about the hunks of a file change (only some were accepted).
    pub fn with_partial(mut self, partial: fs_write::PartialChange) -> Self {
        if let ToolResult::FileChange(r) = &mut self {
            r.partial = Some(partial);
        }
        self
    }
}

macro_rules! from_results {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        $(impl From<$ty> for ToolResult {
            fn from(r: $ty) -> Self {
                ToolResult::$variant(r)
            }
        })*
    };
}

from_results!(
    Read(fs_read::ReadResult),
    List(fs_list::ListResult),
    Search(fs_search::SearchResult),
    FileChange(fs_write::FileChangeResult),
    Command(shell_run::ShellRunResult),
    Session(shell_session::SessionResult),
    Plan(plan::PlanResult),
    Csv(csv_analyze::CsvResult),
    Artifact(artifact_write::ArtifactResult),
    Fetch(web_fetch::FetchResult),
    Memory(memory_propose::MemoryResult),
    Mcp(mcp::result::McpResult),
    Skill(skill_load::SkillResult),
    LspQuery(lsp_query::LspQueryResult),
);
