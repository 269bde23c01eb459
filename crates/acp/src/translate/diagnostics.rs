//! What the language servers say of a file change waiting for approval, as an update of the
//! pending tool call: its content so far, with the verdict beneath it.

use agent_client_protocol::v1::schema as acp;

use super::{Translator, call_content, text_content};
use pablo_protocol::PreviewDiagnostics;

impl Translator {
    pub(crate) fn diagnostics_update(
        &self,
        call_id: &str,
        diagnostics: &PreviewDiagnostics,
    ) -> acp::SessionUpdate {
        let mut content = self
            .calls
            .get(call_id)
            .map(call_content)
            .unwrap_or_default();
        content.push(text_content(diagnostics.describe()));
        let fields = acp::ToolCallUpdateFields::new().content(content);
        acp::SessionUpdate::ToolCallUpdate(acp::ToolCallUpdate::new(call_id.to_string(), fields))
    }
}
