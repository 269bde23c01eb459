//! Where one conversation's events go out: the session's sink, as they are for the session's own
//! conversation, or wrapped under the call a subagent answers ([`SubScope`]).
//!
//! Every stage that says something (the turn loop, a model call, a tool call, a hook, a preview
//! check) is handed the outlet of the conversation it works for, so none of them needs to know
//! whether that conversation is a subagent's. It also names the ids approvals are asked under,
//! which a subagent's prefix with the call it answers.

use std::sync::Arc;

use super::scope::{self, SubScope};
use super::shared::Shared;
use pablo_core::EventSink;
use pablo_protocol::Event;

/// One conversation's way out to the front-ends: the session's shared state, and the scope of
/// the subagent call it answers, if it does.
#[derive(Clone)]
pub(crate) struct Outlet {
    shared: Arc<Shared>,
    scope: Option<Arc<SubScope>>,
}

impl Outlet {
    /// The outlet of the session's own conversation (`scope: None`) or of a subagent's.
    pub(crate) fn new(shared: Arc<Shared>, scope: Option<Arc<SubScope>>) -> Self {
        Self { shared, scope }
    }

    /// Sends `event` as this conversation's (a subagent's goes out wrapped, or not at all).
    pub(crate) fn emit(&self, event: Event) {
        match &self.scope {
            None => self.shared.emit(event),
            Some(scope) => {
                if let Some(event) = scope.wrap(event) {
                    self.shared.emit(event);
                }
            }
        }
    }

    /// Where this conversation's tools send their events (a subagent's go out wrapped).
    pub(crate) fn tool_events(&self) -> EventSink {
        match &self.scope {
            None => self.shared.events.clone(),
            Some(scope) => scope::scoped_sink(&self.shared.events, scope),
        }
    }

    /// The id a call's approval is asked and answered under (a subagent's under its parent's
    /// call, so that two subagents never share one).
    pub(crate) fn approval_id(&self, call_id: &str) -> String {
        match &self.scope {
            None => call_id.to_string(),
            Some(scope) => scope.call_id(call_id),
        }
    }

    /// The session's shared state behind this outlet.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The subagent call this conversation answers; `None` for the session's own.
    pub(crate) fn scope(&self) -> Option<&Arc<SubScope>> {
        self.scope.as_ref()
    }
}
