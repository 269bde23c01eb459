//! `agent.task`: the model hands a task to a subagent, a conversation of its own with a fresh
//! context and a narrower catalog, and reads its final answer as the tool's result.
//!
//! The tool here is what the model is offered (its schema, and a description that lists the
//! agents it may name) and the agents themselves: the built-in `general` one, and custom agents
//! read from markdown files in the format Claude Code uses (a YAML front matter with `name`,
//! `description`, `tools`, `model`, `isolation`; the body is the agent's instructions). Running a subagent
//! needs the turn loop, so the agent layer runs the call; [`Tool::commit_result`] is never the
//! way it runs.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{McpScope, Tool, ToolContext, ToolResult};
use pablo_core::{ErrorCode, ToolFailure, ToolKind, ToolName};
use pablo_protocol::Preview;

/// The agent a call without `agent` gets.
pub const DEFAULT_AGENT: &str = "general";

/// Largest agent file read (instructions, not a document).
pub const MAX_AGENT_FILE_BYTES: u64 = 64 * 1024;

/// The tools a subagent gets when its agent names none: reads only, no write, no delegation.
/// `shell.run` is limited to known-safe reads in that catalog.
pub(crate) const READ_ONLY_TOOLS: &[ToolName] = &[
    ToolName::FsRead,
    ToolName::FsList,
    ToolName::FsSearch,
    ToolName::ShellRun,
    ToolName::WebFetch,
    ToolName::SkillLoad,
];

/// One agent the model may delegate to.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentDefinition {
    pub name: String,
    pub description: String,
    /// The tools it is given (native names); `None`: the read-only catalog.
    pub(crate) tools: Option<Vec<ToolName>>,
    /// The MCP tools it is given by name (`mcp__SERVER__TOOL`, or `mcp__SERVER` for all of a
    /// server's), with `tools`; the read-only catalog has those their server says only read.
    pub(crate) mcp_tools: Vec<String>,
    /// The model it answers with; `None`: the session's.
    pub model: Option<String>,
    /// What it is told beyond the task (the file's body).
    pub instructions: String,
    /// Where it was defined (`built-in`, or the file).
    pub(crate) source: String,
    /// `isolation: worktree`: each task runs in a fresh git worktree of its own.
    pub worktree: bool,
}

impl AgentDefinition {
    /// The agent every session has: reads and answers, with the read-only catalog.
    pub(crate) fn general() -> Self {
        Self {
            name: DEFAULT_AGENT.into(),
            description: "Explores and answers: reads files, searches, runs known-safe read \
                          commands; changes nothing."
                .into(),
            tools: None,
            mcp_tools: Vec::new(),
            model: None,
            instructions: String::new(),
            source: "built-in".into(),
            worktree: false,
        }
    }

    /// A built-in agent with exactly `tools` (no MCP tool) and no instructions of its own.
    pub fn built_in(name: &str, description: &str, tools: &[ToolName]) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            tools: Some(tools.to_vec()),
            mcp_tools: Vec::new(),
            model: None,
            instructions: String::new(),
            source: "built-in".into(),
            worktree: false,
        }
    }

    /// Whether its catalog is the read-only one (where commands must be known-safe reads).
    pub fn read_only(&self) -> bool {
        self.tools.is_none()
    }

    /// The native names of the tools it may call.
    pub fn tool_names(&self) -> Vec<ToolName> {
        self.tools
            .clone()
            .unwrap_or_else(|| READ_ONLY_TOOLS.to_vec())
    }

    /// The MCP tools its catalog holds (`None`: none).
    pub fn mcp_scope(&self) -> Option<McpScope> {
        if self.read_only() {
            Some(McpScope::ReadOnly)
        } else if self.mcp_tools.is_empty() {
            None
        } else {
            Some(McpScope::Named(self.mcp_tools.clone()))
        }
    }
}

/// `tools:` as Claude Code writes it: a comma-separated string or a list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ToolsField {
    Text(String),
    List(Vec<String>),
}

#[derive(Debug, Deserialize)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
    tools: Option<ToolsField>,
    model: Option<String>,
    /// Claude Code's field: `worktree` runs each task in a git worktree of its own.
    isolation: Option<String>,
}

/// Splits a markdown file into its YAML front matter (between `---` lines at the top) and the
/// body; `None` when it has none.
pub(crate) fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// Whether `name` can name an agent or a skill: lowercase letters, digits, `-` and `_`.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// The pablo tool a tool name of an agent file means: Claude Code's names (`Read`, `Grep`,
/// `Bash(git log:*)`…) or pablo's own, in either spelling. An error says why a name is dropped.
pub(crate) fn map_tool_name(raw: &str) -> Result<ToolName, String> {
    let name = raw.trim();
    // `Bash(git diff:*)` scopes a tool in Claude Code; here policy judges each command.
    let base = name.split('(').next().unwrap_or(name).trim();
    let mapped = match base {
        "Read" | "NotebookRead" => Some(ToolName::FsRead),
        "Grep" => Some(ToolName::FsSearch),
        "Glob" | "LS" => Some(ToolName::FsList),
        "Edit" | "MultiEdit" => Some(ToolName::FsEdit),
        "Write" => Some(ToolName::FsWrite),
        "Bash" => Some(ToolName::ShellRun),
        "WebFetch" => Some(ToolName::WebFetch),
        "TodoWrite" => Some(ToolName::PlanUpdate),
        "Skill" => Some(ToolName::SkillLoad),
        other => ToolName::parse(other),
    };
    match mapped {
        Some(ToolName::AgentTask) => Err(format!("{base}: a subagent cannot delegate further")),
        Some(t) => Ok(t),
        None if base == "Task" || base == "Agent" => {
            Err(format!("{base}: a subagent cannot delegate further"))
        }
        None => Err(format!("{base}: no such tool in pablo")),
    }
}

/// An MCP tool as an agent file names it (`mcp__SERVER__TOOL`, `mcp__SERVER`, `mcp__SERVER__*`),
/// as offered; `None` when `raw` names no MCP tool.
fn mcp_tool_name(raw: &str) -> Option<String> {
    let name = raw.trim();
    let rest = name.strip_prefix(pablo_core::MCP_PREFIX)?;
    let well_formed = !rest.is_empty()
        && name.len() <= 128
        && rest
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'*');
    well_formed.then(|| name.to_string())
}

/// Reads one agent file: `stem` is its file name without `.md` (the name when the front matter
/// has none). Returns the agent and notes on the tool names that were dropped.
pub fn parse_agent_file(
    text: &str,
    stem: &str,
    source: &str,
) -> Result<(AgentDefinition, Vec<String>), String> {
    let (yaml, body) = split_front_matter(text)
        .ok_or("no front matter (a `---` block with name and description at the top)")?;
    let front: FrontMatter =
        serde_yaml_ng::from_str(yaml).map_err(|e| format!("its front matter is not valid: {e}"))?;
    let name = front.name.unwrap_or_else(|| stem.to_string());
    if !valid_name(&name) {
        return Err(format!(
            "{name:?} is not an agent name (lowercase letters, digits, - and _)"
        ));
    }
    let description = front
        .description
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .ok_or("it has no description, which is what the model picks agents by")?;
    let mut notes = Vec::new();
    let mut mcp_tools = Vec::new();
    let tools = front.tools.map(|field| {
        let names: Vec<String> = match field {
            ToolsField::Text(t) => t.split(',').map(str::to_string).collect(),
            ToolsField::List(l) => l,
        };
        let mut tools = Vec::new();
        for raw in names.iter().filter(|n| !n.trim().is_empty()) {
            if let Some(mcp) = mcp_tool_name(raw) {
                if !mcp_tools.contains(&mcp) {
                    mcp_tools.push(mcp);
                }
                continue;
            }
            match map_tool_name(raw) {
                Ok(t) if !tools.contains(&t) => tools.push(t),
                Ok(_) => {}
                Err(why) => notes.push(format!("tool {why}; left out")),
            }
        }
        tools
    });
    // Claude Code's aliases for its own models mean "the session's" here.
    let model = front.model.map(|m| m.trim().to_string()).filter(|m| {
        !m.is_empty() && !matches!(m.as_str(), "inherit" | "sonnet" | "opus" | "haiku")
    });
    // An agent meant to work apart must never work in the checkout instead: an isolation
    // pablo does not know refuses the file.
    let worktree = match front.isolation.as_deref().map(str::trim) {
        None | Some("") | Some("none") => false,
        Some("worktree") => true,
        Some(other) => {
            return Err(format!(
                "isolation: {other:?} is not known (the one isolation is `worktree`)"
            ));
        }
    };
    let definition = AgentDefinition {
        name,
        description,
        tools,
        mcp_tools,
        model,
        instructions: body.trim().to_string(),
        source: source.to_string(),
        worktree,
    };
    Ok((definition, notes))
}

/// The agents of a session: `general` first, then the custom ones (a later one of the same name
/// does not replace an earlier one).
#[derive(Debug, Clone, Default)]
pub struct AgentRoster {
    agents: Vec<AgentDefinition>,
}

impl AgentRoster {
    /// `general`, then `custom` in order, first of each name kept.
    pub fn new(custom: Vec<AgentDefinition>) -> Self {
        let mut agents = vec![AgentDefinition::general()];
        for a in custom {
            if !agents.iter().any(|b| b.name == a.name) {
                agents.push(a);
            }
        }
        Self { agents }
    }

    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.agents.iter().find(|a| a.name == name)
    }

    pub(crate) fn agents(&self) -> &[AgentDefinition] {
        &self.agents
    }

    pub fn names(&self) -> Vec<&str> {
        self.agents.iter().map(|a| a.name.as_str()).collect()
    }
}

/// The arguments of one `agent.task` call.
#[derive(Debug, Clone, Deserialize)]
pub struct AgentTaskArgs {
    pub description: String,
    pub prompt: String,
    #[serde(default)]
    pub agent: Option<String>,
}

/// What a subagent's call returns: its final answer and what it spent.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
pub struct SubagentResult {
    pub agent: String,
    pub answer: String,
    pub tool_calls: u64,
    pub model_calls: u64,
    /// The worktree an `isolation: worktree` agent worked in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeLeft>,
}

/// The worktree an isolated subagent leaves: its branch and directory, and whether it changed
/// anything there (a worktree with no change and no commit is removed with its branch).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct WorktreeLeft {
    pub branch: String,
    pub path: String,
    pub changed: bool,
}

/// `agent: label` as the call's title.
pub(crate) fn show_call(args: super::wording::Args<'_>) -> pablo_protocol::describe::CallView {
    let agent = args
        .text("agent")
        .unwrap_or_else(|| DEFAULT_AGENT.to_string());
    let label = args.text("description").unwrap_or_default();
    let title = format!("{agent}: {label}");
    super::wording::call(args, title.clone(), Some(title))
}

/// The answer's first line, and the rest beneath it.
pub(crate) fn show_result(data: &Value) -> Option<pablo_protocol::describe::ResultView> {
    let r: SubagentResult = super::wording::typed(data)?;
    let mut lines = super::wording::lines_of(&r.answer).into_iter();
    let first = lines.next().unwrap_or_default();
    let mut rest: Vec<String> = lines.collect();
    match &r.worktree {
        Some(w) if w.changed => rest.push(format!(
            "its changes are on the branch {} in {}",
            w.branch, w.path
        )),
        Some(w) => rest.push(format!(
            "it changed nothing in its worktree, which was removed with {}",
            w.branch
        )),
        None => {}
    }
    Some(pablo_protocol::describe::ResultView::lines(
        format!(
            "{} answered after {}: {first}",
            r.agent,
            pablo_protocol::describe::plural(r.tool_calls, "tool call")
        ),
        rest,
    ))
}

/// The tool the model is offered.
pub(crate) struct AgentTask {
    roster: Arc<AgentRoster>,
}

impl AgentTask {
    pub(crate) fn new(roster: Arc<AgentRoster>) -> Self {
        Self { roster }
    }
}

#[async_trait]
impl Tool for AgentTask {
    fn name(&self) -> &'static str {
        ToolName::AgentTask.native()
    }

    fn provider_name(&self) -> &'static str {
        ToolName::AgentTask.provider()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Think
    }

    fn description(&self) -> String {
        let mut d = String::from(
            "Hand a self-contained task to a subagent: it starts with a fresh context (none of \
             this conversation), works with its own tools, and its final answer comes back as \
             this tool's result. Use it for searches and reading that would fill this \
             conversation, or for a second look from a fresh angle. Write the prompt so it \
             stands alone (what to find or do, and what to report). Several calls in one \
             response run at the same time. Agents:\n",
        );
        for a in self.roster.agents() {
            d.push_str(&format!("- {}: {}\n", a.name, a.description));
        }
        d
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "minLength": 1, "maxLength": 120,
                    "description": "A short label for the task (3-6 words), shown to the person."},
                "prompt": {"type": "string", "minLength": 1,
                    "description": "The task, complete in itself."},
                "agent": {"type": "string",
                    "description": format!("Which agent runs it (default {DEFAULT_AGENT}).")}
            },
            "required": ["description", "prompt"],
            "additionalProperties": false
        })
    }

    async fn preview(&self, _args: &Value, _ctx: &ToolContext) -> Result<Preview, ToolFailure> {
        Ok(Preview::Internal)
    }

    async fn commit_result(
        &self,
        _args: &Value,
        _preview: &Preview,
        _ctx: &ToolContext,
    ) -> Result<ToolResult, ToolFailure> {
        Err(ToolFailure::new(
            ErrorCode::Internal,
            "agent.task runs in the turn loop, not as a plain tool",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subagent_answer_counts_its_tool_calls_in_words_that_agree() {
        let headline = |n: u64| {
            let data = serde_json::json!({
                "agent": "explore", "answer": "done", "tool_calls": n, "model_calls": 1
            });
            show_result(&data).unwrap().headline
        };
        assert_eq!(headline(1), "explore answered after 1 tool call: done");
        assert_eq!(headline(3), "explore answered after 3 tool calls: done");
    }

    #[test]
    fn claude_code_agent_file_with_comma_separated_tools_maps_to_pablo_tools() {
        let text = "---\nname: reviewer\ndescription: Reviews a diff\ntools: Read, Grep, Glob, \
                    Bash(git diff:*), WebSearch, Task\nmodel: sonnet\n---\nYou review code.\n";
        let (a, notes) = parse_agent_file(text, "file-stem", "test").unwrap();
        assert_eq!(a.name, "reviewer");
        assert_eq!(
            a.tools,
            Some(vec![
                ToolName::FsRead,
                ToolName::FsSearch,
                ToolName::FsList,
                ToolName::ShellRun
            ])
        );
        assert_eq!(a.model, None);
        assert_eq!(a.instructions, "You review code.");
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[1].contains("cannot delegate"));
    }

    #[test]
    fn a_list_of_pablo_names_is_taken_as_is_and_the_stem_names_an_unnamed_agent() {
        let text = "---\ndescription: reads\ntools:\n  - fs.read\n  - fs_edit\n---\nbody";
        let (a, notes) = parse_agent_file(text, "reader", "test").unwrap();
        assert_eq!(a.name, "reader");
        assert_eq!(a.tools, Some(vec![ToolName::FsRead, ToolName::FsEdit]));
        assert!(notes.is_empty());
        assert!(!a.read_only());
    }

    #[test]
    fn mcp_tools_named_in_an_agent_file_are_kept_as_offered_and_scope_its_catalog() {
        let text = "---\ndescription: d\ntools: Read, mcp__docs__search, mcp__files, \
                    mcp__bad name\n---\n";
        let (a, notes) = parse_agent_file(text, "x", "t").unwrap();
        assert_eq!(a.tools, Some(vec![ToolName::FsRead]));
        assert_eq!(a.mcp_tools, ["mcp__docs__search", "mcp__files"]);
        assert_eq!(notes.len(), 1, "{notes:?}");
        let scope = a.mcp_scope().unwrap();
        assert!(scope.admits("mcp__docs__search", None));
        assert!(!scope.admits("mcp__docs__write", Some(true)));
        assert!(scope.admits("mcp__files__read_file", Some(false)));
        assert!(!scope.admits("mcp__filesystem__read_file", None));
        // The read-only catalog takes what a server says only reads, and nothing it does not.
        let general = AgentDefinition::general().mcp_scope().unwrap();
        assert!(general.admits("mcp__docs__search", Some(true)));
        assert!(!general.admits("mcp__docs__write", Some(false)));
        assert!(!general.admits("mcp__docs__other", None));
        // An agent given tools but no MCP tool has none.
        let (b, _) = parse_agent_file("---\ndescription: d\ntools: Read\n---\n", "b", "t").unwrap();
        assert_eq!(b.mcp_scope(), None);
    }

    #[test]
    fn isolation_worktree_is_read_and_an_isolation_pablo_does_not_know_refuses_the_file() {
        let (a, _) = parse_agent_file(
            "---\ndescription: d\nisolation: worktree\n---\n",
            "apart",
            "t",
        )
        .unwrap();
        assert!(a.worktree);
        let (b, _) = parse_agent_file("---\ndescription: d\n---\n", "here", "t").unwrap();
        assert!(!b.worktree);
        let why = parse_agent_file("---\ndescription: d\nisolation: container\n---\n", "x", "t")
            .unwrap_err();
        assert!(why.contains("isolation"), "{why}");
    }

    #[test]
    fn a_file_without_front_matter_or_description_is_refused_with_why() {
        assert!(
            parse_agent_file("just text", "x", "t")
                .unwrap_err()
                .contains("front matter")
        );
        assert!(
            parse_agent_file("---\nname: x\n---\n", "x", "t")
                .unwrap_err()
                .contains("description")
        );
        assert!(
            parse_agent_file("---\nname: ../x\ndescription: d\n---\n", "x", "t")
                .unwrap_err()
                .contains("not an agent name")
        );
    }

    #[test]
    fn the_roster_keeps_general_first_and_the_first_agent_of_a_name() {
        let mk = |name: &str, source: &str| AgentDefinition {
            source: source.into(),
            name: name.into(),
            ..AgentDefinition::general()
        };
        let r = AgentRoster::new(vec![
            mk("a", "user"),
            mk("a", "project"),
            mk("general", "x"),
        ]);
        assert_eq!(r.names(), ["general", "a"]);
        assert_eq!(r.get("a").unwrap().source, "user");
        assert_eq!(r.get("general").unwrap().source, "built-in");
    }
}
