//! The agent: it owns the conversation, calls the model, and runs each tool call through one
//! pipeline ([`call`]: admit → pre-hooks → judge → approve → commit → post-hooks → report).
//!
//! Front-ends talk to it only through [`Op`](pablo_protocol::Op) and
//! [`Event`](pablo_protocol::Event). Three parts, each in its file:
//!
//! - [`shared`]: what the turns and the op dispatcher share (events, host, policy, checkpoints,
//!   the approvals waiting for an answer), behind an `Arc`, with locks that do not poison;
//! - [`dispatch`]: the one place every op is answered, during a turn or between turns;
//! - [`turn`]: the turn loop over one [`conversation`]; [`task`] makes one turn a unit with a
//!   handle that the dispatcher drives, interrupts (a cancellation token) and awaits (it hands
//!   the conversation back).
//!
//! Approvals and interrupts reach a running turn through the shared table of one-shot channels
//! and the token, so a turn never needs to be dropped half-way. Before every model call, also
//! between the steps of one turn, the request is kept inside the model's context window
//! ([`window`], [`compaction`]). Each call's usage corrects the token estimate and feeds the
//! session's cost ([`model_call`]); each tool call, subagents' included, goes through the one
//! pipeline of [`call`].

pub mod attach;
mod call;
mod checkpoints;
mod compaction;
pub mod context;
mod conversation;
mod diagnostics;
mod dispatch;
mod forward;
mod hooks;
mod isolation;
mod limits;
mod mcp_input;
mod mode;
mod model_call;
mod outlet;
mod scope;
mod shared;
mod subagent;
mod subtask;
mod task;
mod turn;
pub mod window;
mod workplace;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use parking_lot::Mutex;
use tokio::sync::mpsc;
use tracing::Instrument;

pub use isolation::{Isolated, Isolation, Isolator};
pub(crate) use limits::Budget;
pub use limits::Limits;

use conversation::{Conversation, ConversationSetup};
use pablo_core::{ApprovalMode, EventRecorder, EventSink};
use pablo_model::{Message, ModelClient, ModelError};
use pablo_policy::PolicyEngine;
use pablo_protocol::AgentHandle;
use pablo_tools::{Catalog, Host};
use shared::Shared;

/// Everything needed to start an agent.
pub struct AgentSetup {
    /// The session's id.
    pub session_id: String,
    /// The model the turns call.
    pub model: Arc<dyn ModelClient>,
    /// The tools the model may call.
    pub catalog: Catalog,
    /// The policy engine that judges each call.
    pub policy: Arc<PolicyEngine>,
    /// The host the tools work through.
    pub host: Arc<Host>,
    /// What the session may consume.
    pub limits: Limits,
    /// How calls that need an approval are answered.
    pub approvals: ApprovalMode,
    /// The system prompt, sent first in every request.
    pub system_prompt: String,
    /// The conversation so far (resume); empty for a new session.
    pub history: Vec<Message>,
    /// The session's journal, which records every event; `None` records nothing.
    pub recorder: Option<Box<dyn EventRecorder>>,
    /// The session's checkpoints (undo, rewind, `/diff`); `None` keeps none.
    pub checkpoints: Option<Arc<pablo_session::checkpoint::Checkpoints>>,
    /// The working mode at start (`--mode`, `[tui] mode`); `Op::SetMode` switches it.
    pub mode: pablo_protocol::WorkMode,
    /// Builds another model client for `Op::SetModel`; `None` refuses the switch.
    pub model_switcher: Option<ModelSwitcher>,
    /// The person's hooks (`pablo_hooks::Hooks::none()` for none).
    pub hooks: Arc<pablo_hooks::Hooks>,
    /// Makes the worktree of each task of an `isolation: worktree` agent; `None` refuses such
    /// tasks.
    pub isolator: Option<Isolator>,
}

/// Builds a model client for a model name and an optional provider (the launch's settings
/// fill in the rest).
pub type ModelSwitcher = Arc<
    dyn Fn(
            Option<String>,
            String,
        ) -> futures::future::BoxFuture<'static, Result<Arc<dyn ModelClient>, ModelError>>
        + Send
        + Sync,
>;

/// Starts the agent task. It announces itself with `SessionStarted` and ends after
/// [`pablo_protocol::Op::Shutdown`] (or when every op sender is dropped) with
/// `ShutdownComplete`.
pub fn spawn(setup: AgentSetup) -> AgentHandle {
    let (ops_tx, ops_rx) = mpsc::unbounded_channel();
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let (inner_tx, inner_rx) = mpsc::unbounded_channel();
    let (control_tx, control_rx) = mpsc::unbounded_channel();
    let recorder = setup.recorder;
    let journaled = recorder.is_some();
    let forwarder = tokio::spawn(forward::forward_events(
        inner_rx, control_rx, out_tx, recorder,
    ));
    setup.policy.set_mode(setup.mode);
    let shared = Arc::new(Shared {
        events: EventSink::new(inner_tx),
        emitted: AtomicU64::new(0),
        host: setup.host,
        policy: setup.policy,
        approvals: setup.approvals,
        checkpoints: setup.checkpoints,
        journaled,
        control: control_tx,
        model_switcher: setup.model_switcher,
        switched_model: Arc::new(Mutex::new(None)),
        hooks: setup.hooks,
        isolator: setup.isolator,
        waiting: Mutex::new(HashMap::new()),
        asking: tokio::sync::Mutex::new(()),
        checks: Mutex::new(HashMap::new()),
    });
    let conversation = Conversation::new(
        shared.clone(),
        ConversationSetup {
            session_id: setup.session_id,
            model: setup.model,
            catalog: setup.catalog,
            limits: setup.limits,
            system_prompt: setup.system_prompt,
            history: setup.history,
        },
    );
    let session = pablo_telemetry::session_span(
        &conversation.session_id,
        conversation.model.client.provider(),
        conversation.model.client.model(),
    );
    let dispatcher = dispatch::Dispatcher::new(shared, conversation);
    let task = tokio::spawn(
        async move {
            dispatcher.run(ops_rx).await;
            // The forwarder ends once every sender (ours and the tools') is gone.
            let _ = forwarder.await;
        }
        .instrument(session),
    );
    AgentHandle {
        ops: ops_tx,
        events: out_rx,
        task,
    }
}

/// The first line of a compaction summary, so it is recognisable in the conversation.
pub const COMPACT_MARK: &str = "[Summary of the earlier conversation, written when it was compacted to fit the context window]";
