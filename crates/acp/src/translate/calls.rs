//! A call's first update: the editor is shown it pending, with its title, kind, arguments and
//! the file it is about, before policy or the person has answered.

use agent_client_protocol::v1::schema as acp;
use serde_json::Value;

use super::{CallView, Translator};
use pablo_launch::describe_call;

impl Translator {
    /// A call the model made: remembered for its later updates, and shown pending with its
    /// title, kind, arguments and the file it is about.
    pub(super) fn call_began(
        &mut self,
        call_id: &str,
        tool: &str,
        arguments: &Value,
    ) -> Vec<acp::SessionUpdate> {
        self.calls.insert(
            call_id.to_string(),
            CallView {
                tool: tool.to_string(),
                ..CallView::default()
            },
        );
        let view = describe_call(tool, arguments);
        let mut call = acp::ToolCall::new(call_id.to_string(), view.title)
            .kind(self.kind_of(tool))
            .status(acp::ToolCallStatus::Pending)
            .raw_input(arguments.clone());
        if let Some(at) = view.location {
            let mut loc = acp::ToolCallLocation::new(self.workspace.join(at.path));
            if let Some(line) = at.line {
                loc = loc.line(line);
            }
            call = call.locations(vec![loc]);
        }
        vec![acp::SessionUpdate::ToolCall(call)]
    }
}
