//! The names of the tools, in one table: every native tool with its two spellings, and the shape
//! of an MCP tool's name. Policy, config, events and journals use the native name (`fs.read`);
//! providers reject dots, so the model calls the provider name (`fs_read`). Nothing outside this
//! file and the catalog spells a tool's name; everyone else asks [`ToolName`].

use strum::IntoEnumIterator;

/// A tool of pablo's own catalog (MCP tools are named at run time: [`MCP_PREFIX`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::EnumIter)]
pub enum ToolName {
    FsRead,
    FsList,
    FsSearch,
    FsWrite,
    FsEdit,
    ShellRun,
    ShellSession,
    PlanUpdate,
    WebFetch,
    CsvAnalyze,
    ArtifactWrite,
    MemoryPropose,
    AgentTask,
    SkillLoad,
    LspQuery,
}

impl ToolName {
    /// The name policy, config, events and journals use (`fs.read`).
    pub const fn native(self) -> &'static str {
        match self {
            ToolName::FsRead => "fs.read",
            ToolName::FsList => "fs.list",
            ToolName::FsSearch => "fs.search",
            ToolName::FsWrite => "fs.write",
            ToolName::FsEdit => "fs.edit",
            ToolName::ShellRun => "shell.run",
            ToolName::ShellSession => "shell.session",
            ToolName::PlanUpdate => "plan.update",
            ToolName::WebFetch => "web.fetch",
            ToolName::CsvAnalyze => "csv.analyze",
            ToolName::ArtifactWrite => "artifact.write",
            ToolName::MemoryPropose => "memory.propose",
            ToolName::AgentTask => "agent.task",
            ToolName::SkillLoad => "skill.load",
            ToolName::LspQuery => "lsp.query",
        }
    }

    /// The name the model calls (`fs_read`): providers accept `[A-Za-z0-9_-]` only.
    pub const fn provider(self) -> &'static str {
        match self {
            ToolName::FsRead => "fs_read",
            ToolName::FsList => "fs_list",
            ToolName::FsSearch => "fs_search",
            ToolName::FsWrite => "fs_write",
            ToolName::FsEdit => "fs_edit",
            ToolName::ShellRun => "shell_run",
            ToolName::ShellSession => "shell_session",
            ToolName::PlanUpdate => "update_plan",
            ToolName::WebFetch => "fetch_url",
            ToolName::CsvAnalyze => "analyze_csv",
            ToolName::ArtifactWrite => "write_artifact",
            ToolName::MemoryPropose => "propose_memory",
            ToolName::AgentTask => "agent_task",
            ToolName::SkillLoad => "load_skill",
            ToolName::LspQuery => "lsp_query",
        }
    }

    /// The tool whose native name is `name`.
    pub fn from_native(name: &str) -> Option<Self> {
        Self::iter().find(|t| t.native() == name)
    }

    /// The tool whose provider name is `name`.
    pub fn from_provider(name: &str) -> Option<Self> {
        Self::iter().find(|t| t.provider() == name)
    }

    /// The tool named `name` in either spelling.
    pub fn parse(name: &str) -> Option<Self> {
        Self::from_native(name).or_else(|| Self::from_provider(name))
    }

    /// Whether `name` (either spelling) is this tool.
    pub fn is(self, name: &str) -> bool {
        name == self.native() || name == self.provider()
    }
}

impl std::fmt::Display for ToolName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.native())
    }
}

/// Every MCP tool is offered as `mcp__SERVER__TOOL` (`tools::mcp::names` builds the rest), in the
/// same spelling natively and to providers.
pub const MCP_PREFIX: &str = "mcp__";

/// Whether `name` is an MCP server's tool.
pub fn is_mcp(name: &str) -> bool {
    name.starts_with(MCP_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tool_has_two_spellings_that_lead_back_to_it_and_no_spelling_is_shared() {
        let mut seen = std::collections::HashSet::new();
        for t in ToolName::iter() {
            assert_eq!(ToolName::from_native(t.native()), Some(t));
            assert_eq!(ToolName::from_provider(t.provider()), Some(t));
            assert_eq!(ToolName::parse(t.provider()), Some(t));
            assert!(
                t.provider()
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_')
            );
            assert!(seen.insert(t.native()) && seen.insert(t.provider()), "{t}");
        }
        assert_eq!(ToolName::parse("mcp__files__read"), None);
        assert!(is_mcp("mcp__files__read") && !is_mcp("fs.read"));
    }
}
