//! What front-ends are shown of MCP: a call's preview, and each server with its state, tools,
//! prompts and resources (the TUI's `/mcp`, ACP's tool calls).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One call of an MCP server's tool, as the person approves it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpCallPreview {
    /// The server's name in the config (`[mcp_servers.NAME]`).
    pub server: String,
    /// The tool's real name on that server (what goes on the wire).
    pub tool: String,
    /// The arguments exactly as they will be sent.
    pub arguments: Value,
    /// What the server says of the tool (`readOnlyHint`); a claim, never a grant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The server's human-readable title for the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// Where an MCP server is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpState {
    Starting,
    Ready,
    Failed,
    /// Switched off (`enabled = false`) or closed at the end of the session.
    Stopped,
}

/// One MCP server as front-ends show it (`pablo mcp list`, the TUI's status, `/mcp`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServerView {
    pub name: String,
    pub state: McpState,
    /// `stdio` or `http`.
    pub transport: String,
    pub required: bool,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The stable code of a failure that has one (`mcp_needs_login`: sign in with `pablo mcp
    /// login NAME`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The offered tool names (`mcp__SERVER__TOOL`) with the real name each stands for.
    #[serde(default)]
    pub tools: Vec<McpToolView>,
    #[serde(default)]
    pub prompts: Vec<McpPromptView>,
    #[serde(default)]
    pub resources: Vec<McpResourceView>,
    /// Where the server's stderr is kept (stdio servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpToolView {
    pub name: String,
    pub real_name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpPromptView {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub arguments: Vec<McpPromptArgument>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpPromptArgument {
    pub name: String,
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpResourceView {
    pub uri: String,
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}
