//! How a subagent's events show in its call's cell: what it does now, its tokens, the calls it
//! made; and which subagent an approval comes from.

use super::super::cells::SubagentProgress;
use super::AppState;
use pablo_launch::describe_call;
use pablo_protocol::{Event, ToolOutcome};

impl AppState {
    pub(super) fn apply_subagent(&mut self, event: Event) {
        match event {
            Event::SubagentStarted { call_id, .. } => {
                if let Some(t) = self.transcript.tool_mut(&call_id) {
                    t.subagent = Some(SubagentProgress::default());
                }
            }
            Event::Subagent { call_id, event } => {
                let Some(sa) = self
                    .transcript
                    .tool_mut(&call_id)
                    .and_then(|t| t.subagent.as_mut())
                else {
                    return;
                };
                match *event {
                    Event::ToolCallBegin {
                        call_id,
                        tool,
                        arguments,
                    } => {
                        let call = describe_call(&tool, &arguments);
                        let title = if call.summary.is_empty() {
                            tool
                        } else {
                            format!("{tool} {}", call.summary)
                        };
                        sa.log.push(format!("→ {title}"));
                        sa.activity = Some(title.clone());
                        sa.calls.insert(call_id, title);
                        sa.tool_calls += 1;
                    }
                    Event::ToolCallEnd { result, .. } => {
                        if let ToolOutcome::Err { error, .. } = result {
                            sa.log
                                .push(format!("  ✗ {}: {}", error.code, error.message));
                        }
                        sa.activity = None;
                    }
                    Event::Usage { total, .. } => {
                        sa.tokens = total.input_tokens + total.output_tokens;
                    }
                    Event::Error { code, message } => {
                        sa.log.push(format!("✗ {code}: {message}"));
                    }
                    _ => {}
                }
            }
            Event::SubagentFinished {
                call_id,
                usage,
                tool_calls,
                ..
            } => {
                if let Some(sa) = self
                    .transcript
                    .tool_mut(&call_id)
                    .and_then(|t| t.subagent.as_mut())
                {
                    sa.tokens = usage.input_tokens + usage.output_tokens;
                    sa.tool_calls = tool_calls;
                    sa.activity = None;
                }
            }
            _ => {}
        }
    }

    /// For an approval a subagent asks (its call id is `PARENT/INNER`): the subagent's label
    /// (`general: map the parser`) and the call's title.
    pub(super) fn subagent_call_label(&mut self, call_id: &str) -> Option<(String, String)> {
        let (parent, inner) = call_id.split_once('/')?;
        let t = self.transcript.tool_mut(parent)?;
        let sa = t.subagent.as_ref()?;
        let call = sa.calls.get(inner).cloned().unwrap_or_default();
        Some((t.summary.clone(), call))
    }
}
