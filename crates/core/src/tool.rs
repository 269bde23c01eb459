//! What a tool is outside the catalog: the spec a provider offers the model, the kind policy
//! defaults and editors read, the per-tool mode config sets, and who answers an "ask".

use serde_json::Value;

/// What a tool does to the world, for policy defaults and for editors (ACP tool kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolKind {
    Read,
    Search,
    Edit,
    Execute,
    /// Reaches the network (`web.fetch`): asks by default, once per URL.
    Fetch,
    Think,
}

/// What providers need to offer a tool.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// A per-tool setting of `[options.tools]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolMode {
    Auto,
    Ask,
    Deny,
}

/// How "ask" decisions are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalMode {
    /// A person answers through [`pablo_protocol::Op::Approval`] (TUI, ACP).
    Interactive,
    /// Nobody can answer (headless): an ask is refused with `approval_required`.
    RefuseAsks,
    /// The host granted the authority up front (`pablo run --auto-approve`): an ask is allowed.
    ApproveAsks,
}
