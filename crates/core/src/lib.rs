//! The shared vocabulary of pablo: what every layer may name and that names nothing above
//! [`pablo_protocol`]. Error codes ([`ErrorCode`], [`Coded`], [`ToolFailure`]), the event sink
//! tools and the agent send through, what a tool is to a provider and to policy ([`ToolSpec`],
//! [`ToolKind`], [`ToolMode`]), every tool's name in both spellings ([`ToolName`]), who answers
//! approvals ([`ApprovalMode`]), and the seam to an editor's buffers and terminals
//! ([`editor::Editor`]), the secret values no tool output may carry ([`secrets`]), and the
//! bounded reader of newline-delimited JSON-RPC that ACP and MCP share ([`lines`]).
//!
//! It exists so that `config`, `workspace`, `process` and `model` can speak of errors and tools
//! without depending on the tool catalog, and so that front-ends can name these words without
//! reaching into the engine (docs/architecture.md).

mod codes;
pub mod diff;
pub mod editor;
mod error;
mod events;
pub mod lines;
mod names;
pub mod secrets;
mod tool;

pub use codes::ErrorCode;
pub use error::{Coded, ToolFailure, tool_message};
pub use events::{EventRecorder, EventSink};
pub use names::{MCP_PREFIX, ToolName, is_mcp};
pub use tool::{ApprovalMode, ToolKind, ToolMode, ToolSpec};

/// An amount of US dollars as pablo shows it: three decimals under a dollar (a cent is too coarse
/// for one model call), two from a dollar up: `$0.024`, `$2.50`.
pub fn dollars(usd: f64) -> String {
    if usd < 0.995 {
        format!("${usd:.3}")
    } else {
        format!("${usd:.2}")
    }
}
