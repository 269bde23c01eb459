//! Stage 7, report: the outcome as the model reads it: bounded in size (a call that acted says
//! so, so the model does not run it twice), its secrets redacted, announced to the front-ends
//! and added to the conversation. Also the announcement that opens a call, and the report of a
//! call that was never run.

use serde_json::{Value, json};

use super::{Pipeline, parse_arguments};
use pablo_core::{ErrorCode, ToolFailure, ToolKind};
use pablo_model::Message;
use pablo_protocol::{Event, ToolCall, ToolOutcome, Verdict};
use pablo_tools::ToolResult;

/// What a result too large for the model must still say of a call that acted: how its command
/// ended and where its whole output is.
#[derive(Debug, Default)]
pub(crate) struct AlreadyRan {
    exit_code: Option<Option<i32>>,
    artifact: Option<String>,
}

impl AlreadyRan {
    pub(crate) fn of(result: &ToolResult) -> Self {
        Self {
            exit_code: result.exit_code(),
            artifact: result.artifact().map(str::to_string),
        }
    }
}

impl Pipeline<'_> {
    /// The tool's own name for `call` (what events and hooks name it), or the name the model
    /// used when no tool has it.
    pub(crate) fn tool_label(&self, call: &ToolCall) -> String {
        self.catalog
            .get(&call.name)
            .map(|t| t.name().to_string())
            .unwrap_or_else(|| call.name.clone())
    }

    /// `ToolCallBegin`: the call as the model made it.
    pub(super) fn announce(&self, call: &ToolCall) {
        self.outlet.emit(Event::ToolCallBegin {
            call_id: call.id.clone(),
            tool: self.tool_label(call),
            arguments: parse_arguments(&call.arguments)
                .unwrap_or_else(|_| Value::String(call.arguments.clone())),
        });
    }

    /// A call that is not run (the turn stopped before it): announced and reported with
    /// `failure`, no stage in between.
    pub(crate) fn report_unrun(&mut self, call: &ToolCall, failure: ToolFailure) -> ToolOutcome {
        self.announce(call);
        self.report(call, failure.into_outcome(), &AlreadyRan::default())
    }

    /// Bounds, redacts, announces and keeps the outcome; returns it as the model reads it.
    pub(super) fn report(
        &mut self,
        call: &ToolCall,
        outcome: ToolOutcome,
        ran: &AlreadyRan,
    ) -> ToolOutcome {
        let tool = self.tool_label(call);
        // The model gets what the journal and the screen get: no secret value.
        let outcome = pablo_core::secrets::redact_serde(self.bound_result(&tool, outcome, ran));
        let content = pablo_core::tool_message(&outcome);
        self.outlet.emit(Event::ToolCallEnd {
            call_id: call.id.clone(),
            tool,
            result: outcome.clone(),
        });
        self.messages.push(Message::Tool {
            call_id: call.id.clone(),
            content,
        });
        outcome
    }

    /// Replaces a result whose serialization exceeds the bound with an error that says so. When
    /// the call had already acted (a command ran, a file was written), the error says that too,
    /// with the command's exit code, so the model does not run it a second time.
    fn bound_result(&self, tool: &str, outcome: ToolOutcome, ran: &AlreadyRan) -> ToolOutcome {
        let size = serde_json::to_vec(&outcome).map(|v| v.len()).unwrap_or(0);
        if size <= self.limits.max_tool_result_bytes {
            return outcome;
        }
        let acted = self
            .catalog
            .get(tool)
            .is_some_and(|t| matches!(t.kind(), ToolKind::Execute | ToolKind::Edit));
        let limit = self.limits.max_tool_result_bytes;
        let mut message =
            format!("the result serialized to {size} bytes, over the limit of {limit} bytes");
        let mut failure_data = serde_json::Map::new();
        if acted && outcome.is_ok() {
            let how = match ran.exit_code {
                Some(Some(code)) => {
                    format!("{tool} already ran: the command exited with code {code}")
                }
                Some(None) => format!("{tool} already ran: the command ended without an exit code"),
                None => format!("{tool} already ran"),
            };
            message = format!(
                "{how}; do not run it again. Its result serialized to {size} bytes, over the \
                 limit of {limit} bytes"
            );
            if let Some(a) = &ran.artifact {
                message.push_str(&format!("; the full output is in {a}"));
            }
            message.push_str("; next time ask for less output (max_output_bytes, head, grep)");
            failure_data.insert("already_ran".into(), json!(true));
            if let Some(code) = ran.exit_code {
                failure_data.insert("exit_code".into(), json!(code));
            }
            if let Some(a) = &ran.artifact {
                failure_data.insert("artifact".into(), json!(a));
            }
        } else {
            message.push_str("; ask for less (a smaller page, a narrower search, fewer lines)");
        }
        let failure = ToolFailure::new(ErrorCode::ResultTooLarge, message);
        if failure_data.is_empty() {
            failure.into_outcome()
        } else {
            failure
                .with_data(Value::Object(failure_data))
                .into_outcome()
        }
    }
}

/// The failure of a call the policy denied, with the rules that denied it.
pub(super) fn denied(tool: &str, verdict: &Verdict) -> ToolFailure {
    ToolFailure::new(
        ErrorCode::Denied,
        format!(
            "{tool} was denied by policy: {}",
            verdict.reasons.join("; ")
        ),
    )
    .with_data(json!({"rule_ids": verdict.rule_ids}))
}
