//! A subagent's tool calls as calls of their own: an editor shows each as a tool call under the
//! id its approvals are asked with (`PARENT/INNER`), so a permission request names a call the
//! editor already shows.

use super::Event;

/// The subagent event `event` of the `agent.task` call `parent`, as a tool-call event of its
/// own; `None` for what is not a tool call (its messages, its usage).
pub fn as_own_call(parent: &str, event: &Event) -> Option<Event> {
    let id = |inner: &str| format!("{parent}/{inner}");
    Some(match event {
        Event::ToolCallBegin {
            call_id,
            tool,
            arguments,
        } => Event::ToolCallBegin {
            call_id: id(call_id),
            tool: tool.clone(),
            arguments: arguments.clone(),
        },
        Event::ToolCallRunning { call_id, preview } => Event::ToolCallRunning {
            call_id: id(call_id),
            preview: preview.clone(),
        },
        Event::ToolCallEnd {
            call_id,
            tool,
            result,
        } => Event::ToolCallEnd {
            call_id: id(call_id),
            tool: tool.clone(),
            result: result.clone(),
        },
        _ => return None,
    })
}
