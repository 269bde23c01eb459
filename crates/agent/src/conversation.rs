//! One conversation and what its turn loop keeps between model calls: the messages, the model
//! and its window, the catalog it may call, its limits and what it has spent of them.
//!
//! A conversation is plain state. It is owned by whoever runs its turn: the dispatcher between
//! turns, the turn's task while one runs (it is moved in and handed back at the end, so no lock
//! guards it). The turn loop ([`super::turn`]) is the one place that takes it whole and lends
//! each stage only the parts that stage uses: a model call an [`super::model_call::Exchange`], a
//! tool call a [`super::call::Pipeline`], a hook a [`super::hooks::HookRunner`]. So what each
//! stage depends on is in its signature and its `use` lines, not behind `self`.
//!
//! What it shares with the rest of the session is behind [`Shared`], reached through its
//! [`Outlet`] (where its events go) and its [`Workplace`] (where its tools act). The session's
//! main conversation is built from the [`super::AgentSetup`]; another one (a subagent's, with a
//! fresh history, a narrower catalog and limits of its own) is built the same way over the same
//! [`Shared`], so its approvals reach the same front-end.

use std::sync::Arc;

use tokio::sync::Semaphore;

use super::Limits;
use super::checkpoints::ChangedPaths;
use super::limits::Spend;
use super::model_call::ModelSeat;
use super::outlet::Outlet;
use super::shared::Shared;
use super::window::request_bytes;
use super::workplace::Workplace;
use pablo_model::{Message, ModelClient};
use pablo_protocol::{Event, WorkMode};
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
    /// The conversation's id (a rewind gives the session a new one).
    pub(crate) session_id: String,
    /// Where its events go: the session's own, or wrapped as a subagent's.
    pub(crate) outlet: Outlet,
    /// Where its tools act: the session's checkout, or an isolated subagent's worktree.
    pub(crate) place: Workplace,
    /// The model that answers, its profile and its context window.
    pub(crate) model: ModelSeat,
    pub(crate) catalog: Catalog,
    pub(crate) limits: Limits,
    pub(crate) system_prompt: String,
    pub(crate) messages: Vec<Message>,
    /// Its calls against the limits, its tokens and what they cost.
    pub(crate) spend: Spend,
    /// The mode of the previous turn, to tell the model when planning starts or ends.
    pub(crate) last_turn_mode: WorkMode,
    /// Hooks' notes for the model that go with the next prompt (`session_start`,
    /// `file_changed`).
    pub(crate) hook_notes: Vec<String>,
    /// The paths the running turn changed, whoever changed them, for `file_changed` hooks.
    pub(crate) turn_changed: ChangedPaths,
    /// A read-only subagent: commands run only when known to just read.
    pub(crate) shell_reads_only: bool,
    /// The slots of this conversation's subagents: at most `max_parallel_subagents` work at
    /// once.
    pub(crate) subagent_slots: Arc<Semaphore>,
}

impl Conversation {
    /// A conversation of the session's own over `shared` (not scoped, not isolated; a
    /// subagent's builder changes that).
    pub(crate) fn new(shared: Arc<Shared>, setup: ConversationSetup) -> Self {
        let slots = setup.limits.max_parallel_subagents.max(1);
        Self {
            model: ModelSeat::new(setup.model),
            session_id: setup.session_id,
            catalog: setup.catalog,
            limits: setup.limits,
            system_prompt: setup.system_prompt,
            messages: setup.history,
            spend: Spend::default(),
            last_turn_mode: WorkMode::Ask,
            // A resumed session's hooks' notes that no prompt carried yet.
            hook_notes: shared
                .checkpoints
                .as_ref()
                .map(|c| c.take_hook_notes())
                .unwrap_or_default(),
            turn_changed: ChangedPaths::new(),
            outlet: Outlet::new(shared.clone(), None),
            place: Workplace::new(shared, None),
            shell_reads_only: false,
            subagent_slots: Arc::new(Semaphore::new(slots)),
        }
    }
    /// The window figure the front-ends show for the conversation as it now stands, estimated
    /// (after a model switch or a subtask, until the next call reports what it counted).
    pub(crate) fn estimated_usage(&self) -> Event {
        let bytes = request_bytes(&self.system_prompt, &self.catalog.specs(), &self.messages);
        self.model.estimated_usage(bytes, self.spend.cost_usd)
    }
}
