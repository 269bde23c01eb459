//! One conversation and what its turn loop keeps between model calls: the messages, the model
//! and its window, the catalog it may call, its limits and what it has spent of them.
//!
//! A conversation is owned by whoever runs its turn: the dispatcher between turns, the turn's
//! task while one runs (it is moved in and handed back at the end, so no lock guards it). What it
//! shares with the rest of the session is behind [`Shared`]. The session's main conversation is
//! built from the [`super::AgentSetup`]; another one (a subagent's, with a fresh history, a
//! narrower catalog and limits of its own) is built the same way over the same [`Shared`], so its
//! approvals reach the same front-end.

use std::sync::Arc;

use super::scope::SubScope;
use super::shared::Shared;
use super::window::ContextWindow;
use super::{Budget, Limits};
use pablo_core::ErrorCode;
use pablo_model::{Message, ModelClient, ModelProfile, ModelStopReason, ReasoningBlock};
use pablo_protocol::{Event, StopReason, ToolCall, Usage, WorkMode};
use pablo_tools::Catalog;

/// What a conversation starts from.
pub(crate) struct ConversationSetup {
    /// The conversation's id: the session id for the main one (the providers' cache key).
    pub(crate) session_id: String,
    pub(crate) model: Arc<dyn ModelClient>,
    /// The tools this conversation may call.
    pub(crate) catalog: Catalog,
    pub(crate) limits: Limits,
    pub(crate) system_prompt: String,
    /// The conversation so far (resume); empty for a new one.
    pub(crate) history: Vec<Message>,
}

/// One conversation with the model and the state its turns change.
pub(crate) struct Conversation {
    pub(super) shared: Arc<Shared>,
    pub(super) session_id: String,
    pub(super) model: Arc<dyn ModelClient>,
    pub(super) profile: ModelProfile,
    pub(super) window: ContextWindow,
    pub(super) catalog: Catalog,
    pub(super) limits: Limits,
    pub(super) system_prompt: String,
    pub(super) messages: Vec<Message>,
    pub(super) budget: Budget,
    pub(super) usage: Usage,
    /// What the calls so far cost, each at the prices of the model that answered it (`None`
    /// while no model with known prices has answered).
    pub(super) cost_usd: Option<f64>,
    /// The mode of the previous turn, to tell the model when planning starts or ends.
    pub(super) last_turn_mode: WorkMode,
    /// Hooks' notes for the model that go with the next prompt (`session_start`,
    /// `file_changed`).
    pub(super) hook_notes: Vec<String>,
    /// The paths the running turn changed, whoever changed them, and how (`created`,
    /// `modified`, `deleted`), for `file_changed` hooks.
    pub(super) turn_changed: parking_lot::Mutex<std::collections::BTreeMap<String, &'static str>>,
    /// Set for a subagent's conversation: its events go out wrapped ([`super::subagent`]).
    pub(super) scope: Option<Arc<SubScope>>,
    /// A read-only subagent: commands run only when known to just read.
    pub(super) shell_reads_only: bool,
    /// Set for a subagent that works in a worktree of its own ([`super::isolation`]).
    pub(super) isolation: Option<super::Isolation>,
    /// The slots of this conversation's subagents: at most `max_parallel_subagents` work at
    /// once.
    pub(super) subagent_slots: Arc<tokio::sync::Semaphore>,
}

impl Conversation {
    pub(crate) fn new(shared: Arc<Shared>, setup: ConversationSetup) -> Self {
        let profile = setup.model.profile();
        let slots = setup.limits.max_parallel_subagents.max(1);
        Self {
            window: ContextWindow::new(profile.context_window),
            profile,
            session_id: setup.session_id,
            model: setup.model,
            catalog: setup.catalog,
            limits: setup.limits,
            system_prompt: setup.system_prompt,
            messages: setup.history,
            budget: Budget::default(),
            usage: Usage::default(),
            cost_usd: None,
            last_turn_mode: WorkMode::Ask,
            // A resumed session's hooks' notes that no prompt carried yet.
            hook_notes: shared
                .checkpoints
                .as_ref()
                .map(|c| c.take_hook_notes())
                .unwrap_or_default(),
            turn_changed: Default::default(),
            shared,
            scope: None,
            shell_reads_only: false,
            isolation: None,
            subagent_slots: Arc::new(tokio::sync::Semaphore::new(slots)),
        }
    }

    pub(super) fn emit(&self, event: Event) {
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
    pub(super) fn tool_events(&self) -> pablo_core::EventSink {
        match &self.scope {
            None => self.shared.events.clone(),
            Some(scope) => super::scope::scoped_sink(&self.shared.events, scope),
        }
    }

    /// The id a call's approval is asked and answered under (a subagent's under its parent's
    /// call, so that two subagents never share one).
    pub(super) fn approval_id(&self, call_id: &str) -> String {
        match &self.scope {
            None => call_id.to_string(),
            Some(scope) => scope.call_id(call_id),
        }
    }

    /// Answers with `model` from the next call on: its window and prices from here on (the
    /// calls so far keep theirs), which the front-ends are shown at once.
    pub(super) fn switch_model(&mut self, model: Arc<dyn ModelClient>) {
        self.profile = model.profile();
        self.window = ContextWindow::new(self.profile.context_window);
        self.model = model;
        self.emit(Event::ContextUsage {
            used_tokens: self.window.estimate(self.request_bytes()),
            window_tokens: self.window.window_tokens(),
            cost_usd: self.cost_usd,
        });
    }
}

/// Tool arguments as JSON; empty text means no arguments.
pub(super) fn parse_arguments(raw: &str) -> Result<serde_json::Value, String> {
    if raw.trim().is_empty() {
        Ok(serde_json::json!({}))
    } else {
        serde_json::from_str(raw).map_err(|e| e.to_string())
    }
}

/// Why a turn stopped early.
pub(super) struct TurnEnd {
    pub(super) stop_reason: StopReason,
    pub(super) error: Option<(ErrorCode, String)>,
    /// The provider refused the request as too long for the context window (its message).
    pub(super) overflow: Option<String>,
}

impl TurnEnd {
    pub(super) fn cancelled() -> Self {
        Self {
            stop_reason: StopReason::Cancelled,
            error: None,
            overflow: None,
        }
    }

    pub(super) fn budget(code: ErrorCode, message: String) -> Self {
        Self {
            stop_reason: StopReason::BudgetExhausted,
            error: Some((code, message)),
            overflow: None,
        }
    }

    pub(super) fn error(code: ErrorCode, message: String) -> Self {
        Self {
            stop_reason: StopReason::Error,
            error: Some((code, message)),
            overflow: None,
        }
    }
}

/// What one model call produced.
pub(super) struct ModelTurn {
    pub(super) text: String,
    pub(super) calls: Vec<ToolCall>,
    pub(super) stop: ModelStopReason,
    pub(super) reasoning: Vec<ReasoningBlock>,
    /// The searches the provider ran for this answer.
    pub(super) searches: Vec<pablo_protocol::WebSearch>,
}
