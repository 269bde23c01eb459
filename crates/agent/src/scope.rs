//! What makes a conversation a subagent's: its events go out under the call it answers
//! ([`SubScope::wrap`]), its approvals are asked under that call's id, and a read-only one runs
//! only commands known to just read ([`check_read_only`]). Apart from [`super::subagent`] so
//! the conversation and its tool calls can use it without depending on how subagents start.

use std::sync::Arc;

use parking_lot::Mutex;

use pablo_core::{ErrorCode, EventSink, ToolFailure, ToolName};
use pablo_protocol::{Decision, Event, Preview, Verdict};

/// What marks a conversation as a subagent's: the call it answers, and what its events say.
pub(crate) struct SubScope {
    parent_call: String,
    /// The last error the subagent reported (its code and message), for the failure its call
    /// returns.
    last_error: Mutex<Option<(String, String)>>,
}

impl SubScope {
    pub(crate) fn new(parent_call: String) -> Self {
        Self {
            parent_call,
            last_error: Mutex::new(None),
        }
    }

    /// The last error the subagent reported, code and message (taken).
    pub(crate) fn take_error(&self) -> Option<(String, String)> {
        self.last_error.lock().take()
    }

    /// How the subagent's `event` goes out: approvals and file changes as themselves (under a
    /// call id of the parent's), live deltas and window figures not at all, the rest wrapped.
    pub(crate) fn wrap(&self, event: Event) -> Option<Event> {
        match event {
            // The diagnostics of a change under review go with its prompt (their call id is
            // already the approval's).
            Event::ApprovalRequest { .. }
            | Event::ApprovalResolved { .. }
            | Event::PreviewDiagnostics { .. } => Some(event),
            Event::FilesChanged {
                turn,
                call_id,
                tool,
                changes,
            } => Some(Event::FilesChanged {
                turn,
                call_id: self.call_id(&call_id),
                tool,
                changes,
            }),
            Event::MessageDelta { .. }
            | Event::ReasoningDelta { .. }
            | Event::ToolOutputDelta { .. }
            | Event::ToolTerminal { .. }
            | Event::ContextUsage { .. }
            | Event::TurnCompleted { .. } => None,
            event => {
                if let Event::Error { code, message } = &event {
                    *self.last_error.lock() = Some((code.clone(), message.clone()));
                }
                Some(Event::Subagent {
                    call_id: self.parent_call.clone(),
                    event: Box::new(event),
                })
            }
        }
    }

    /// The id under which the subagent's call `inner` is shown and answered: under the parent's
    /// call, so two subagents' calls never share one.
    pub(crate) fn call_id(&self, inner: &str) -> String {
        format!("{}/{inner}", self.parent_call)
    }
}

/// The sink a scoped conversation's tools send through.
pub(super) fn scoped_sink(events: &EventSink, scope: &Arc<SubScope>) -> EventSink {
    let scope = scope.clone();
    events.mapped(Arc::new(move |e| scope.wrap(e)))
}

/// A read-only subagent runs commands only when policy knows them as safe reads and allows
/// them without asking.
pub(super) fn check_read_only(
    tool: &str,
    preview: &Preview,
    verdict: &Verdict,
) -> Result<(), ToolFailure> {
    if !ToolName::ShellRun.is(tool) && !ToolName::ShellSession.is(tool) {
        return Ok(());
    }
    let known_safe = match preview {
        Preview::Command(cp) => cp.sandbox.as_ref().is_some_and(|s| s.known_safe),
        _ => false,
    };
    if known_safe && verdict.decision == Decision::Allow && ToolName::ShellRun.is(tool) {
        return Ok(());
    }
    Err(ToolFailure::new(
        ErrorCode::NotReadOnly,
        format!(
            "{tool} was not run: this subagent is read-only and may run only commands known to \
             just read (ls, cat, grep, git log…); ask for the change in your answer instead"
        ),
    ))
}
