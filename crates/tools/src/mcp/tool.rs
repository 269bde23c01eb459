//! One MCP server tool as a catalog tool. It goes through the same steps as every other tool: the
//! agent validates the arguments against the server's own input schema, the preview names the
//! server, the tool and the exact arguments (what the person approves), policy decides (MCP tools
//! ask unless configured otherwise), and commit sends exactly those arguments.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::{Server, ToolEntry};
use crate::{Tool, ToolContext, ToolResult};
use pablo_core::{ErrorCode, ToolFailure, ToolKind, ToolSpec};
use pablo_protocol::{McpCallPreview, Preview};

/// The longest tool description offered to the model (a server's text, not ours).
const MAX_DESCRIPTION: usize = 2_000;

pub(crate) struct McpTool {
    server: Arc<Server>,
    entry: ToolEntry,
}

impl McpTool {
    pub(crate) fn new(server: Arc<Server>, entry: ToolEntry) -> Self {
        Self { server, entry }
    }
}

/// What the model is offered for `entry` of `server`.
pub(crate) fn spec_of(server: &str, entry: &ToolEntry) -> ToolSpec {
    ToolSpec {
        name: entry.offered.clone(),
        description: description(server, entry),
        parameters: entry.schema.clone(),
    }
}

fn description(server: &str, entry: &ToolEntry) -> String {
    let mut text: String = entry.description.chars().take(MAX_DESCRIPTION).collect();
    if entry.description.chars().count() > MAX_DESCRIPTION {
        text.push('…');
    }
    if text.trim().is_empty() {
        text = entry.title.clone().unwrap_or_else(|| entry.real.clone());
    }
    format!("{text} (tool {} of the MCP server {server})", entry.real)
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.entry.offered
    }

    fn provider_name(&self) -> &str {
        &self.entry.offered
    }

    /// Whatever the server claims, a call runs someone else's code: policy treats it as one.
    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }

    fn description(&self) -> String {
        description(self.server.name(), &self.entry)
    }

    fn schema(&self) -> Value {
        self.entry.schema.clone()
    }

    async fn preview(&self, args: &Value, _ctx: &ToolContext) -> Result<Preview, ToolFailure> {
        Ok(Preview::Mcp(McpCallPreview {
            server: self.server.name().to_string(),
            tool: self.entry.real.clone(),
            arguments: args.clone(),
            read_only_hint: self.entry.read_only_hint,
            title: self.entry.title.clone(),
        }))
    }

    async fn commit_result(
        &self,
        _args: &Value,
        preview: &Preview,
        ctx: &ToolContext,
    ) -> Result<ToolResult, ToolFailure> {
        // The previewed arguments are what the person approved; they are what is sent.
        let Preview::Mcp(call) = preview else {
            return Err(ToolFailure::new(
                ErrorCode::Internal,
                format!("{}: the preview is not an MCP call", self.entry.offered),
            ));
        };
        let arguments = match &call.arguments {
            Value::Object(m) => m.clone(),
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(ToolFailure::new(
                    ErrorCode::InvalidArguments,
                    format!(
                        "{}: MCP tool arguments must be an object, not {other}",
                        self.entry.offered
                    ),
                ));
            }
        };
        let server = self.server.name().to_string();
        let value = self
            .server
            .call(&self.entry.real, arguments, &ctx.cancel)
            .await
            .map_err(|e| super::failure(&server, e))?;
        super::result::outcome(&server, &self.entry.real, &value).map(ToolResult::from)
    }
}
