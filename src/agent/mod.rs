//! The turn loop: it owns the conversation, calls the model, and runs each tool call through
//! validate → preview → decide → commit, one at a time.
//!
//! Front-ends talk to it only through [`Op`] and [`Event`]. The loop is a single task; approvals
//! and interrupts reach a running turn through a side table of one-shot channels and a
//! cancellation token, so a turn never needs to be dropped half-way: a cancelled turn still
//! awaits the tool that is running (tools watch the token and clean up), answers every pending
//! call with a result, and ends with `TurnCompleted { stop_reason: Cancelled }`.
//!
//! Before every model call, also between the steps of one turn, the request is kept inside the
//! model's context window ([`window`]): old tool results are cleared first, then the conversation
//! is summarized. A provider that still answers "context too long" gets one more try after the
//! same treatment. Each call's usage corrects the token estimate and feeds the session's cost.

pub mod attach;
mod checkpoints;
pub mod context;
pub mod limits;
pub mod mcp_input;
pub mod mode;
pub mod window;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

pub use limits::{Budget, Limits};

use crate::core::{ApprovalMode, ErrorCode, EventRecorder};
use crate::core::{Coded, EventSink, ToolFailure};
use crate::model::profile::thinking_budget;
use crate::model::{
    Message, ModelClient, ModelError, ModelProfile, ModelRequest, ModelStopReason, ReasoningBlock,
    StreamEvent,
};
use crate::policy::PolicyEngine;
use crate::protocol::{
    AgentHandle, ApprovalAnswer, Decision, Event, ImageAttachment, Op, Preview, RuleSummary,
    StopReason, ToolCall, ToolOutcome, Usage,
};
use crate::tools::fs_write::PartialChange;
use crate::tools::{Catalog, Host, Tool, ToolContext, ToolResult};
use window::ContextWindow;

/// Everything needed to start an agent.
pub struct AgentSetup {
    pub session_id: String,
    pub model: Arc<dyn ModelClient>,
    pub catalog: Catalog,
    pub policy: Arc<PolicyEngine>,
    pub host: Arc<Host>,
    pub limits: Limits,
    pub approvals: ApprovalMode,
    pub system_prompt: String,
    /// The conversation so far (resume); empty for a new session.
    pub history: Vec<Message>,
    pub recorder: Option<Box<dyn EventRecorder>>,
    /// The session's checkpoints (undo, rewind, `/diff`); `None` keeps none.
    pub checkpoints: Option<Arc<crate::session::checkpoint::Checkpoints>>,
    /// The working mode at start (`--mode`, `[tui] mode`); `Op::SetMode` switches it.
    pub mode: crate::protocol::WorkMode,
    /// Builds another model client for `Op::SetModel`; `None` refuses the switch.
    pub model_switcher: Option<ModelSwitcher>,
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

/// A model client built by a switch, taken by the next turn.
type PendingModel = Arc<Mutex<Option<Arc<dyn ModelClient>>>>;

/// Builds the client for `Op::SetModel` without holding up the loop; the next turn takes it.
fn spawn_model_switch(
    switcher: Option<ModelSwitcher>,
    pending: PendingModel,
    events: EventSink,
    provider: Option<String>,
    model: String,
) {
    let Some(switcher) = switcher else {
        events.send(Event::Error {
            code: ErrorCode::ModelSwitchUnavailable.into(),
            message: format!(
                "the model cannot be switched to {model} here; start pablo with --model"
            ),
        });
        return;
    };
    tokio::spawn(async move {
        match switcher(provider, model.clone()).await {
            Ok(client) => {
                let (provider, model) = (client.provider().to_string(), client.model().to_string());
                if let Ok(mut slot) = pending.lock() {
                    *slot = Some(client);
                }
                events.send(Event::ModelChanged { provider, model });
            }
            Err(e) => events.send(Event::Error {
                code: e.code().into(),
                message: format!("the model was not switched to {model}: {e}"),
            }),
        }
    });
}

/// Starts the agent task. It announces itself with `SessionStarted` and ends after
/// [`Op::Shutdown`] (or when every op sender is dropped) with `ShutdownComplete`.
pub fn spawn(setup: AgentSetup) -> AgentHandle {
    let (ops_tx, ops_rx) = mpsc::unbounded_channel();
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let (inner_tx, inner_rx) = mpsc::unbounded_channel();
    let (control_tx, control_rx) = mpsc::unbounded_channel();
    let recorder = setup.recorder;
    let journaled = recorder.is_some();
    let forwarder = tokio::spawn(forward_events(inner_rx, control_rx, out_tx, recorder));
    let profile = setup.model.profile();
    setup.policy.set_mode(setup.mode);
    let agent = Agent {
        window: ContextWindow::new(profile.context_window),
        profile,
        session_id: setup.session_id,
        model: setup.model,
        catalog: setup.catalog,
        policy: setup.policy,
        host: setup.host,
        limits: setup.limits,
        approvals: setup.approvals,
        system_prompt: setup.system_prompt,
        messages: setup.history,
        budget: Budget::default(),
        usage: Usage::default(),
        events: EventSink::new(inner_tx),
        emitted: Arc::new(AtomicU64::new(0)),
        pending: Arc::new(Mutex::new(HashMap::new())),
        checkpoints: setup.checkpoints,
        control: control_tx,
        journaled,
        model_switcher: setup.model_switcher,
        pending_model: Arc::new(Mutex::new(None)),
        last_turn_mode: crate::protocol::WorkMode::Ask,
    };
    let session = crate::telemetry::session_span(
        &agent.session_id,
        agent.model.provider(),
        agent.model.model(),
    );
    let task = tokio::spawn(
        async move {
            agent.run(ops_rx).await;
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

/// A request to the event forwarder, handled after every event sent before it.
enum Control {
    /// Continue journaling as a forked session (see [`EventRecorder::fork`]).
    Fork {
        new_id: String,
        before_turn: u32,
        carry: Vec<Event>,
        reply: oneshot::Sender<std::io::Result<Option<Vec<Event>>>>,
    },
}

/// Passes events to the recorder, then to the front-end, in order.
async fn forward_events(
    mut rx: mpsc::UnboundedReceiver<Event>,
    mut control: mpsc::UnboundedReceiver<Control>,
    tx: mpsc::UnboundedSender<Event>,
    mut recorder: Option<Box<dyn EventRecorder>>,
) {
    let mut control_open = true;
    loop {
        let event = tokio::select! {
            biased;
            e = rx.recv() => match e {
                Some(e) => e,
                None => break,
            },
            c = control.recv(), if control_open => {
                let Some(Control::Fork { new_id, before_turn, carry, reply }) = c else {
                    control_open = false;
                    continue;
                };
                // Whatever was sent before the request belongs to the old journal.
                while let Ok(e) = rx.try_recv() {
                    if forward_one(e, &tx, &mut recorder) {
                        return;
                    }
                }
                let forked = match recorder.as_mut() {
                    Some(r) => r.fork(&new_id, before_turn, &carry),
                    None => Ok(None),
                };
                let _ = reply.send(forked);
                continue;
            }
        };
        if forward_one(event, &tx, &mut recorder) {
            break;
        }
    }
}

/// Records one event and passes it on; true after the last one.
fn forward_one(
    event: Event,
    tx: &mpsc::UnboundedSender<Event>,
    recorder: &mut Option<Box<dyn EventRecorder>>,
) -> bool {
    // Live output and results may hold a secret a command found; neither the journal nor a
    // front-end gets it.
    let event = crate::core::secrets::redact_serde(event);
    {
        if let Some(r) = recorder.as_mut() {
            let boundary = matches!(
                event,
                Event::TurnCompleted { .. }
                    | Event::ShutdownComplete
                    | Event::ApprovalResolved { .. }
            );
            let written = r
                .record(&event)
                .and_then(|()| if boundary { r.sync() } else { Ok(()) });
            if let Err(e) = written {
                tracing::warn!(error = %e, "journal write failed; continuing without journal");
                *recorder = None;
                let _ = tx.send(Event::Warning {
                    message: format!("the session journal could not be written ({e}); this session will not be resumable from here on"),
                });
            }
        }
        let last = matches!(event, Event::ShutdownComplete);
        let _ = tx.send(event);
        last
    }
}

/// Runs a front-end's input or kill for a background session without holding up the loop; a
/// failure becomes a warning the person sees.
fn spawn_session_op(host: Arc<Host>, events: EventSink, op: Op) {
    tokio::spawn(async move {
        let result = match &op {
            Op::SessionInput { session_id, data } => host
                .sessions
                .write(session_id, data.as_bytes(), false)
                .await
                .map(|_| ()),
            Op::KillSession { session_id } => {
                host.sessions.kill(session_id, &events).await.map(|_| ())
            }
            _ => Ok(()),
        };
        if let Err(e) = result {
            events.send(Event::Warning {
                message: e.to_string(),
            });
        }
    });
}

/// Answers `/rules` and `/rules remove ID` from the policy store; a failed removal becomes a
/// warning and the list is sent anyway so the front-end shows what is really saved.
fn answer_rules_op(policy: &PolicyEngine, events: &EventSink, op: Op) {
    let removed = match op {
        Op::RemoveRule { id } => match policy.forget(&id) {
            Ok(rule) => Some(rule.id),
            Err(e) => {
                events.send(Event::Warning {
                    message: format!("rule {id} was not removed: {e}"),
                });
                None
            }
        },
        _ => None,
    };
    let rules = policy
        .saved_rules()
        .into_iter()
        .map(|r| RuleSummary {
            allows: r.kind.describe(),
            id: r.id,
        })
        .collect();
    events.send(Event::Rules { rules, removed });
}

/// Answers `/artifacts` and `/memory` (list, accept, dismiss) from the session's stores; a
/// failed decision becomes a warning and the list is sent anyway, as it really is.
fn answer_store_op(host: &Host, events: &EventSink, op: Op) {
    match op {
        Op::ListArtifacts => events.send(Event::Artifacts {
            artifacts: host.artifacts(),
        }),
        Op::ListMemory | Op::ResolveMemory { .. } => {
            let Some(store) = host.memory.as_ref() else {
                events.send(Event::Warning {
                    message: "memory is not enabled in this session ([memory] enabled = true \
                              turns it on)"
                        .into(),
                });
                return;
            };
            let mut resolved = None;
            let mut file = None;
            if let Op::ResolveMemory {
                proposal_id,
                accept,
            } = op
            {
                match store.resolve(&proposal_id, accept) {
                    Ok(p) => {
                        resolved = Some(p.id);
                        if accept {
                            file = Some(store.memory_file().display().to_string());
                        }
                    }
                    Err(e) => events.send(Event::Warning {
                        message: format!("memory proposal {proposal_id}: {e}"),
                    }),
                }
            }
            match store.proposals() {
                Ok(proposals) => events.send(Event::Memory {
                    proposals,
                    resolved,
                    file,
                }),
                Err(e) => events.send(Event::Warning {
                    message: e.to_string(),
                }),
            }
        }
        _ => {}
    }
}

type PendingApprovals = Arc<Mutex<HashMap<String, oneshot::Sender<ApprovalAnswer>>>>;

struct Agent {
    session_id: String,
    model: Arc<dyn ModelClient>,
    profile: ModelProfile,
    window: ContextWindow,
    catalog: Catalog,
    policy: Arc<PolicyEngine>,
    host: Arc<Host>,
    limits: Limits,
    approvals: ApprovalMode,
    system_prompt: String,
    messages: Vec<Message>,
    budget: Budget,
    usage: Usage,
    events: EventSink,
    emitted: Arc<AtomicU64>,
    pending: PendingApprovals,
    checkpoints: Option<Arc<crate::session::checkpoint::Checkpoints>>,
    control: mpsc::UnboundedSender<Control>,
    /// Whether a journal records the session (a rewind forks it).
    journaled: bool,
    model_switcher: Option<ModelSwitcher>,
    pending_model: PendingModel,
    /// The mode of the previous turn, to tell the model when planning starts or ends.
    last_turn_mode: crate::protocol::WorkMode,
}

/// Why a turn stopped early.
struct TurnEnd {
    stop_reason: StopReason,
    error: Option<(ErrorCode, String)>,
    /// The provider refused the request as too long for the context window (its message).
    overflow: Option<String>,
}

impl TurnEnd {
    fn cancelled() -> Self {
        Self {
            stop_reason: StopReason::Cancelled,
            error: None,
            overflow: None,
        }
    }

    fn budget(code: ErrorCode, message: String) -> Self {
        Self {
            stop_reason: StopReason::BudgetExhausted,
            error: Some((code, message)),
            overflow: None,
        }
    }

    fn error(code: ErrorCode, message: String) -> Self {
        Self {
            stop_reason: StopReason::Error,
            error: Some((code, message)),
            overflow: None,
        }
    }
}

/// What one model call produced.
struct ModelTurn {
    text: String,
    calls: Vec<ToolCall>,
    stop: ModelStopReason,
    reasoning: Vec<ReasoningBlock>,
}

/// The answer tokens asked for by default (reasoning budgets come on top).
const ANSWER_TOKENS: u32 = 16_384;
/// The fewest output tokens a request asks for, however full the window.
const MIN_OUTPUT_TOKENS: u32 = 1_024;

impl Agent {
    fn emit(&self, event: Event) {
        self.emitted.fetch_add(1, Ordering::Relaxed);
        self.events.send(event);
    }

    async fn run(mut self, mut ops: mpsc::UnboundedReceiver<Op>) {
        self.emit(Event::SessionStarted {
            session_id: self.session_id.clone(),
            provider: self.model.provider().to_string(),
            model: self.model.model().to_string(),
            workspace: self.host.workspace_root.display().to_string(),
        });
        let start_mode = self.policy.mode();
        if start_mode != crate::protocol::WorkMode::Ask {
            self.emit(Event::ModeChanged { mode: start_mode });
        }
        // MCP servers start in the background; their states arrive as events.
        self.host.mcp.start(Some(self.events.clone()));
        let mut queued: std::collections::VecDeque<(String, Vec<ImageAttachment>)> =
            Default::default();
        let mut shutting_down = false;
        let mut first_turn = true;
        while !shutting_down {
            let (text, images) = match queued.pop_front() {
                Some(t) => t,
                None => match ops.recv().await {
                    Some(Op::UserTurn { text, images }) => (text, images),
                    Some(Op::Shutdown) | None => break,
                    Some(Op::Compact { focus }) => {
                        self.compact_now(focus.as_deref()).await;
                        continue;
                    }
                    Some(op) => {
                        self.handle_idle_op(op).await;
                        continue;
                    }
                },
            };
            if std::mem::take(&mut first_turn) && self.host.mcp.waits_for_first_turn() {
                self.host.mcp.settled().await;
            }
            if let Err(message) = self.host.mcp.required_ready().await {
                // A required server is part of the session: without it there is none.
                self.emit(Event::Error {
                    code: ErrorCode::McpRequiredServerFailed.into(),
                    message,
                });
                self.emit(Event::TurnCompleted {
                    stop_reason: StopReason::Error,
                    usage: self.usage,
                });
                break;
            }
            let text = match mcp_input::expand(&self.host.mcp, &text).await {
                Ok(t) => t,
                Err(f) => {
                    // Nothing was sent: the person reads why and types again.
                    self.emit(Event::Error {
                        code: f.code.into(),
                        message: f.message,
                    });
                    self.emit(Event::TurnCompleted {
                        stop_reason: StopReason::Error,
                        usage: self.usage,
                    });
                    continue;
                }
            };
            let cancel = CancellationToken::new();
            let pending = self.pending.clone();
            let session_host = self.host.clone();
            let session_events = self.events.clone();
            let turn_cancel = cancel.clone();
            let turn_policy = self.policy.clone();
            let turn_checkpoints = self.checkpoints.clone();
            let (switcher, pending_model) =
                (self.model_switcher.clone(), self.pending_model.clone());
            {
                let turn = self.run_turn(text, images, cancel.clone());
                tokio::pin!(turn);
                loop {
                    tokio::select! {
                        () = &mut turn => break,
                        op = ops.recv() => match op {
                            Some(Op::Interrupt) => turn_cancel.cancel(),
                            Some(Op::Approval { call_id, answer }) => {
                                let waiter = pending.lock().ok().and_then(|mut p| p.remove(&call_id));
                                if let Some(w) = waiter {
                                    let _ = w.send(answer);
                                }
                            }
                            Some(Op::UserTurn { text, images }) => queued.push_back((text, images)),
                            Some(Op::Shutdown) | None => {
                                shutting_down = true;
                                turn_cancel.cancel();
                            }
                            Some(op @ (Op::SessionInput { .. } | Op::KillSession { .. })) => {
                                spawn_session_op(session_host.clone(), session_events.clone(), op);
                            }
                            Some(op @ (Op::ListRules | Op::RemoveRule { .. })) => {
                                answer_rules_op(&turn_policy, &session_events, op);
                            }
                            Some(op @ (Op::ListArtifacts | Op::ListMemory | Op::ResolveMemory { .. })) => {
                                answer_store_op(&session_host, &session_events, op);
                            }
                            Some(op @ (Op::ListCheckpoints | Op::PlanRestore { .. } | Op::Restore { .. })) => {
                                checkpoints::answer_during_turn(turn_checkpoints.as_deref(), &session_events, op);
                            }
                            Some(Op::SetMode { mode }) => {
                                turn_policy.set_mode(mode);
                                session_events.send(Event::ModeChanged { mode });
                            }
                            Some(Op::Compact { .. }) => session_events.send(Event::Warning {
                                message: "/compact runs between turns: wait for this one to end (or interrupt it) and compact then".into(),
                            }),
                            Some(Op::SetModel { model, provider }) => spawn_model_switch(
                                switcher.clone(),
                                pending_model.clone(),
                                session_events.clone(),
                                provider,
                                model,
                            ),
                        },
                    }
                }
            }
        }
        // No background command or MCP server outlives the agent.
        self.host.sessions.kill_all().await;
        self.host.mcp.shutdown().await;
        self.emit(Event::ShutdownComplete);
    }

    async fn handle_idle_op(&mut self, op: Op) {
        match op {
            Op::Approval { call_id, .. } => self.emit(Event::Warning {
                message: format!("no tool call {call_id} is waiting for approval"),
            }),
            Op::Interrupt => {}
            Op::SessionInput { .. } | Op::KillSession { .. } => {
                spawn_session_op(self.host.clone(), self.events.clone(), op);
            }
            Op::ListRules | Op::RemoveRule { .. } => {
                answer_rules_op(&self.policy, &self.events, op);
            }
            Op::ListArtifacts | Op::ListMemory | Op::ResolveMemory { .. } => {
                answer_store_op(&self.host, &self.events, op);
            }
            Op::ListCheckpoints | Op::PlanRestore { .. } | Op::Restore { .. } => {
                self.answer_checkpoint_op(op).await;
            }
            Op::SetMode { mode } => {
                self.policy.set_mode(mode);
                self.emit(Event::ModeChanged { mode });
            }
            Op::Compact { .. } => {}
            Op::SetModel { model, provider } => spawn_model_switch(
                self.model_switcher.clone(),
                self.pending_model.clone(),
                self.events.clone(),
                provider,
                model,
            ),
            Op::UserTurn { .. } | Op::Shutdown => {}
        }
    }

    async fn run_turn(
        &mut self,
        text: String,
        given_images: Vec<ImageAttachment>,
        cancel: CancellationToken,
    ) {
        let span = crate::telemetry::turn_span();
        let started = Instant::now();
        let calls_before = (self.budget.model_calls, self.budget.tool_calls);
        let switched = self.pending_model.lock().ok().and_then(|mut m| m.take());
        if let Some(model) = switched {
            self.model = model;
        }
        // Attachments are read before anything is sent: an image that cannot go refuses the
        // turn, and the person gets the prompt back to change it.
        let profile = self.model.profile();
        let target = attach::Target {
            provider: self.model.provider(),
            model: self.model.model(),
            takes_images: profile.images,
        };
        let attached = attach::attach(&self.host, &self.policy, &text, &target)
            .and_then(|a| attach::with_given_images(a, given_images, &target));
        let attached = match attached {
            Ok(a) => a,
            Err(e) => {
                tracing::info!(code = e.code().as_str(), "turn refused");
                self.emit(Event::TurnRefused {
                    code: e.code().to_string(),
                    message: e.to_string(),
                    text,
                });
                return;
            }
        };
        self.emit(Event::UserMessage { text: text.clone() });
        // The turn's checkpoint keeps the prompt as the person wrote it (a rewind gives it back).
        let prompt = text.clone();
        let attach::Attached {
            files,
            images,
            notes,
        } = attached;
        for message in notes {
            self.emit(Event::Warning { message });
        }
        let text = attach::with_images(&attach::with_attachments(&text, &files), &images);
        let message_images: Vec<crate::model::Image> =
            images.iter().map(|i| i.image.clone()).collect();
        if !files.is_empty() || !images.is_empty() {
            self.emit(Event::Attachments { files, images });
        }
        let now = self.policy.mode();
        let text = match mode::turn_note(self.last_turn_mode, now) {
            Some(note) => format!("{text}\n\n{note}"),
            None => text,
        };
        self.last_turn_mode = now;
        let text = self.open_checkpoint(&prompt, text);
        self.messages.push(Message::User {
            text,
            images: message_images,
        });
        // The run deadline bounds each turn (`pablo run` has exactly one; an interactive session
        // that sat idle for an hour must not have its next turn cut at once). It cancels like an
        // interrupt, so the running tool is awaited, and then ends the turn as a spent budget.
        let deadline_hit = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let timer = {
            let (cancel, hit, limit) = (
                cancel.clone(),
                deadline_hit.clone(),
                self.limits.run_deadline,
            );
            tokio::spawn(async move {
                tokio::time::sleep(limit).await;
                hit.store(true, Ordering::Relaxed);
                cancel.cancel();
            })
        };
        let mut end = self.turn_steps(&cancel).instrument(span.clone()).await;
        timer.abort();
        if deadline_hit.load(Ordering::Relaxed)
            && matches!(&end, Err(e) if e.stop_reason == StopReason::Cancelled)
        {
            end = Err(TurnEnd::budget(
                ErrorCode::DeadlineExceeded,
                format!(
                    "the run deadline of {} s was reached; the turn was stopped",
                    self.limits.run_deadline.as_secs()
                ),
            ));
        }
        let stop_reason = match end {
            Ok(r) => r,
            Err(end) => {
                if let Some((code, message)) = end.error {
                    self.emit(Event::Error {
                        code: code.into(),
                        message,
                    });
                }
                end.stop_reason
            }
        };
        span.record("model_calls", self.budget.model_calls - calls_before.0);
        span.record("tool_calls", self.budget.tool_calls - calls_before.1);
        span.record("stop_reason", format!("{stop_reason:?}"));
        span.record("duration_ms", started.elapsed().as_millis() as u64);
        self.emit(Event::TurnCompleted {
            stop_reason,
            usage: self.usage,
        });
    }

    /// Model call, tools, model call, … until the model stops asking for tools.
    async fn turn_steps(&mut self, cancel: &CancellationToken) -> Result<StopReason, TurnEnd> {
        // A "context too long" refusal is answered once per step: make room, try again.
        let mut retried_overflow = false;
        loop {
            if cancel.is_cancelled() {
                return Err(TurnEnd::cancelled());
            }
            self.check_events()?;
            if !self.budget.model_calls_left(&self.limits) {
                return Err(TurnEnd::budget(
                    ErrorCode::ModelCallBudgetExhausted,
                    format!(
                        "the model-call budget ({}) is used up",
                        self.limits.max_model_calls.unwrap_or(0)
                    ),
                ));
            }
            self.fit_context(cancel, false).await;
            let ModelTurn {
                text,
                calls,
                stop,
                reasoning,
            } = match self.call_model(cancel).await {
                Ok(t) => t,
                Err(TurnEnd {
                    overflow: Some(message),
                    ..
                }) if !retried_overflow => {
                    retried_overflow = true;
                    self.recover_overflow(&message, cancel).await;
                    continue;
                }
                Err(end) => return Err(end),
            };
            retried_overflow = false;
            if !reasoning.is_empty() {
                self.emit(Event::ReasoningCompleted {
                    blocks: reasoning.clone(),
                });
            }
            self.emit(Event::MessageCompleted {
                text: text.clone(),
                tool_calls: calls.clone(),
            });
            self.messages.push(Message::Assistant {
                text,
                tool_calls: calls.clone(),
                reasoning,
            });
            if calls.is_empty() {
                return Ok(match stop {
                    ModelStopReason::MaxTokens => StopReason::MaxTokens,
                    _ => StopReason::EndTurn,
                });
            }
            let mut end: Option<TurnEnd> = None;
            for call in calls {
                let tool = self
                    .catalog
                    .get(&call.name)
                    .map(|t| t.name().to_string())
                    .unwrap_or_else(|| call.name.clone());
                self.emit(Event::ToolCallBegin {
                    call_id: call.id.clone(),
                    tool: tool.clone(),
                    arguments: parse_arguments(&call.arguments)
                        .unwrap_or_else(|_| Value::String(call.arguments.clone())),
                });
                let (outcome, ran) = match &end {
                    Some(_) => (
                        ToolFailure::new(
                            ErrorCode::NotRun,
                            format!(
                                "{} was not run because the turn stopped before it",
                                call.name
                            ),
                        )
                        .into_outcome(),
                        AlreadyRan::default(),
                    ),
                    None => {
                        if cancel.is_cancelled() {
                            end = Some(TurnEnd::cancelled());
                            let f = ToolFailure::new(
                                ErrorCode::Cancelled,
                                format!("{} was not run: the turn was interrupted", call.name),
                            );
                            (f.into_outcome(), AlreadyRan::default())
                        } else if !self.budget.model_calls_left(&self.limits) {
                            // Nobody would read this tool's result: do not start it.
                            end = Some(TurnEnd::budget(
                                ErrorCode::ModelCallBudgetExhausted,
                                "the model-call budget is used up, so no further tool is started"
                                    .to_string(),
                            ));
                            let f = ToolFailure::new(
                                ErrorCode::ModelCallBudgetExhausted,
                                format!(
                                    "{} was not run: no model call is left to read its result",
                                    call.name
                                ),
                            );
                            (f.into_outcome(), AlreadyRan::default())
                        } else {
                            let (outcome, ran) = self.run_tool_call(&call, cancel).await;
                            if let Some((code, message)) = limits::spent_budget(&outcome) {
                                end = Some(TurnEnd::budget(code, message));
                            }
                            (outcome, ran)
                        }
                    }
                };
                // The model gets what the journal and the screen get: no secret value.
                let outcome =
                    crate::core::secrets::redact_serde(self.bound_result(&tool, outcome, &ran));
                let content = crate::core::tool_message(&outcome);
                self.emit(Event::ToolCallEnd {
                    call_id: call.id.clone(),
                    tool,
                    result: outcome,
                });
                self.messages.push(Message::Tool {
                    call_id: call.id.clone(),
                    content,
                });
            }
            if let Some(end) = end {
                return Err(end);
            }
            if cancel.is_cancelled() {
                return Err(TurnEnd::cancelled());
            }
        }
    }

    /// The request's serialized size (system, tools, messages), the measure of the window
    /// estimate.
    fn request_bytes(&self) -> usize {
        window::request_bytes(&self.system_prompt, &self.catalog.specs(), &self.messages)
    }

    /// Keeps the next request inside the context window, as the module docs say: when its
    /// estimate passes the fill limit (or `force`, after a refusal), old tool results are cleared
    /// (`ContextCleared`), then, if that is not enough, the conversation is summarized
    /// (`ContextCompacted`). `limits.compact_at_bytes`, when set, also triggers a summary by size.
    async fn fit_context(&mut self, cancel: &CancellationToken, force: bool) {
        let bytes = self.request_bytes();
        let over = |agent: &Self, bytes: usize| agent.window.estimate(bytes) > agent.window.limit();
        if force || over(self, bytes) {
            let cleared = window::plan_clearing(&self.messages, bytes, &self.window);
            if !cleared.is_empty() {
                window::apply_clearing(&mut self.messages, &cleared);
                let after = self.request_bytes();
                self.emit(Event::ContextCleared {
                    cleared,
                    tokens_before: self.window.estimate(bytes),
                    tokens_after: self.window.estimate(after),
                });
            }
        }
        let bytes = self.request_bytes();
        if over(self, bytes) || bytes > self.limits.compact_at_bytes {
            self.compact(cancel).await;
        }
    }

    /// The provider refused the last request as too long: learn what did not fit, make room by
    /// force, and say so.
    async fn recover_overflow(&mut self, message: &str, cancel: &CancellationToken) {
        let bytes = self.request_bytes();
        self.window
            .refused(bytes, crate::model::http::overflow_tokens(message));
        self.emit(Event::Warning {
            message: format!(
                "the model refused the request as too long for its context window; pablo made \
                 room and tries once more (the window is now taken as {} tokens)",
                self.window.window_tokens()
            ),
        });
        self.fit_context(cancel, true).await;
    }

    /// Summarizes the conversation before a cut ([`window::compaction_cut`]) and replaces it by
    /// one user message holding the summary (`ContextCompacted`). The journal keeps the original
    /// events, and resume replays the same replacement. A failed or cancelled summary leaves the
    /// conversation as it was; the turn goes on.
    async fn compact(&mut self, cancel: &CancellationToken) {
        let fixed = self.system_prompt.len()
            + serde_json::to_vec(&self.catalog.specs())
                .map(|v| v.len())
                .unwrap_or(0);
        let Some(split) = window::compaction_cut(&self.messages, fixed, &self.window) else {
            return;
        };
        // The summary must not take the model call the turn itself needs.
        let calls_left = self
            .limits
            .max_model_calls
            .map(|max| max.saturating_sub(self.budget.model_calls));
        if calls_left.is_some_and(|left| left < 2) {
            return;
        }
        self.compact_before(split, None, cancel).await;
    }

    /// `/compact [focus]`: the whole conversation so far becomes one summary, now, with the
    /// person's focus (what the summary must keep) added to the request.
    async fn compact_now(&mut self, focus: Option<&str>) {
        let turns = self
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        if turns == 0 {
            self.emit(Event::Warning {
                message: "nothing to compact yet: the conversation has no answer".into(),
            });
            return;
        }
        if !self.budget.model_calls_left(&self.limits) {
            self.emit(Event::Warning {
                message: "the conversation was not compacted: the model-call budget is used up"
                    .into(),
            });
            return;
        }
        let cancel = CancellationToken::new();
        let before = self.messages.len();
        self.compact_before(before, focus, &cancel).await;
    }

    /// Summarizes `messages[..split]` (with `focus` as the person's instruction, when given) and
    /// replaces it by the summary.
    async fn compact_before(
        &mut self,
        split: usize,
        focus: Option<&str>,
        cancel: &CancellationToken,
    ) {
        let mut older = self.messages[..split].to_vec();
        // The summary request must fit too: if the part to summarize is itself too large, its
        // tool results are cleared for the summary (the model still sees the calls).
        let older_bytes = window::request_bytes(&self.system_prompt, &[], &older);
        if self.window.estimate(older_bytes) > self.window.limit() {
            let all = ContextWindow::new(1);
            let cleared = window::plan_clearing(&older, older_bytes, &all);
            window::apply_clearing(&mut older, &cleared);
        }
        let request_text = match focus.map(str::trim).filter(|f| !f.is_empty()) {
            Some(f) => format!(
                "{COMPACT_REQUEST}\n\nThe person asks the summary to keep in particular: {f}"
            ),
            None => COMPACT_REQUEST.to_string(),
        };
        older.push(Message::user(request_text));
        if !self.model.profile().images {
            window::drop_images(&mut older);
        }
        let request = ModelRequest {
            system: self.system_prompt.clone(),
            messages: older,
            tools: Vec::new(),
            max_output_tokens: 4_096,
            // A one-off call: no breakpoints, no session cache routing, no thinking.
            reasoning: None,
            cache: false,
            cache_key: None,
        };
        self.budget.model_calls += 1;
        let summary = match self.summarize(&request, cancel).await {
            Ok(s) if !s.trim().is_empty() => s,
            Ok(_) => return,
            Err(e) => {
                if !matches!(e, ModelError::Cancelled) {
                    self.emit(Event::Warning {
                        message: format!(
                            "the conversation could not be summarized ({e}); it continues in full"
                        ),
                    });
                }
                return;
            }
        };
        let text = format!("{COMPACT_MARK}\n\n{}", summary.trim());
        self.messages.splice(..split, [Message::user(text.clone())]);
        self.emit(Event::ContextCompacted {
            summary: text,
            replaced_messages: split,
        });
        // The figure the front-ends show was the last call's; until the next call, the estimate
        // of the shorter conversation is the better one (`/compact` has no call after it).
        self.emit(Event::ContextUsage {
            used_tokens: self.window.estimate(self.request_bytes()),
            window_tokens: self.window.window_tokens(),
            cost_usd: self.profile.prices.map(|p| p.cost(&self.usage)),
        });
    }

    /// One model call whose text is collected, not streamed to the front-end.
    async fn summarize(
        &self,
        request: &ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<String, ModelError> {
        let mut stream = tokio::select! {
            s = self.model.stream(request, cancel.clone()) => s?,
            () = cancel.cancelled() => return Err(ModelError::Cancelled),
        };
        let mut text = String::new();
        loop {
            let next = tokio::select! {
                n = stream.next() => n,
                () = cancel.cancelled() => return Err(ModelError::Cancelled),
            };
            match next {
                None => {
                    return Err(ModelError::StreamCut {
                        provider: self.model.provider().to_string(),
                    });
                }
                Some(Err(e)) => return Err(e),
                Some(Ok(StreamEvent::TextDelta(d))) => {
                    text.push_str(&d);
                    self.check_output(text.len())?;
                }
                Some(Ok(StreamEvent::Completed { .. })) => return Ok(text),
                Some(Ok(
                    StreamEvent::ToolCall(_)
                    | StreamEvent::Usage(_)
                    | StreamEvent::ReasoningDelta(_)
                    | StreamEvent::Reasoning(_),
                )) => {}
            }
        }
    }

    fn check_events(&self) -> Result<(), TurnEnd> {
        let n = self.emitted.load(Ordering::Relaxed);
        if n > self.limits.max_native_events {
            return Err(TurnEnd::budget(
                ErrorCode::EventLimitExceeded,
                format!(
                    "the session emitted {n} events, over the limit of {}",
                    self.limits.max_native_events
                ),
            ));
        }
        Ok(())
    }

    /// The output tokens to ask for: the answer allowance plus the thinking budget, within the
    /// model's bound and what the window leaves after the input.
    fn max_output_tokens(&self, input_bytes: usize) -> u32 {
        let thinking = self
            .profile
            .reasoning
            .and_then(thinking_budget)
            .unwrap_or(0);
        let wanted = ANSWER_TOKENS
            .saturating_add(thinking)
            .min(self.profile.max_output_tokens);
        let room = self
            .window
            .window_tokens()
            .saturating_sub(self.window.estimate(input_bytes));
        let room = u32::try_from(room).unwrap_or(u32::MAX);
        wanted.min(room).max(MIN_OUTPUT_TOKENS)
    }

    /// One streamed model call: the text, the tool calls, why the model stopped, and its
    /// reasoning.
    async fn call_model(&mut self, cancel: &CancellationToken) -> Result<ModelTurn, TurnEnd> {
        // `--max-tool-calls 0`: a tool the model may not call is not offered at all.
        let tools = if self.limits.max_tool_calls == Some(0) {
            Vec::new()
        } else {
            self.catalog.specs()
        };
        let mut request = ModelRequest {
            system: self.system_prompt.clone(),
            messages: self.messages.clone(),
            tools,
            max_output_tokens: 0,
            reasoning: self.profile.reasoning,
            cache: true,
            cache_key: Some(self.session_id.clone()),
        };
        if !self.model.profile().images {
            window::drop_images(&mut request.messages);
        }
        let size = self.request_bytes();
        request.max_output_tokens = self.max_output_tokens(size);
        if size > self.limits.max_request_context_bytes {
            return Err(TurnEnd::error(
                ErrorCode::ContextTooLarge,
                format!(
                    "the request context is {size} bytes, over the limit of {} bytes",
                    self.limits.max_request_context_bytes
                ),
            ));
        }
        self.budget.model_calls += 1;
        let span =
            crate::telemetry::model_call_span(self.model.provider(), self.model.model(), size);
        let started = Instant::now();
        let result = self
            .stream_model(&request, size, cancel)
            .instrument(span.clone())
            .await;
        span.record("duration_ms", started.elapsed().as_millis() as u64);
        match &result {
            Ok(t) => {
                let out: usize =
                    t.text.len() + t.calls.iter().map(|c| c.arguments.len()).sum::<usize>();
                span.record("output_bytes", out);
                span.record("tool_calls", t.calls.len());
                span.record("outcome", "ok");
            }
            Err(e) => {
                span.record("outcome", e.code().as_str());
            }
        }
        match result {
            Ok(r) => Ok(r),
            Err(ModelError::Cancelled) => Err(TurnEnd::cancelled()),
            Err(e @ ModelError::ContextTooLong { .. }) => {
                let mut end = TurnEnd::error(e.code(), e.to_string());
                end.overflow = Some(e.to_string());
                Err(end)
            }
            Err(e @ ModelError::OutputTooLarge { .. }) => {
                Err(TurnEnd::budget(e.code(), e.to_string()))
            }
            Err(e) => Err(TurnEnd::error(e.code(), e.to_string())),
        }
    }

    async fn stream_model(
        &mut self,
        request: &ModelRequest,
        request_bytes: usize,
        cancel: &CancellationToken,
    ) -> Result<ModelTurn, ModelError> {
        let mut stream = tokio::select! {
            s = self.model.stream(request, cancel.clone()) => s?,
            () = cancel.cancelled() => return Err(ModelError::Cancelled),
        };
        let mut text = String::new();
        let mut calls = Vec::new();
        let mut reasoning: Vec<ReasoningBlock> = Vec::new();
        let mut streamed_reasoning = String::new();
        let mut out_bytes = 0usize;
        let mut stop = None;
        let mut call_usage = Usage::default();
        loop {
            let next = tokio::select! {
                n = stream.next() => n,
                () = cancel.cancelled() => return Err(ModelError::Cancelled),
            };
            let Some(event) = next else { break };
            match event? {
                StreamEvent::TextDelta(delta) => {
                    out_bytes += delta.len();
                    self.check_output(out_bytes)?;
                    text.push_str(&delta);
                    self.emit(Event::MessageDelta { text: delta });
                }
                StreamEvent::ReasoningDelta(delta) => {
                    out_bytes += delta.len();
                    self.check_output(out_bytes)?;
                    streamed_reasoning.push_str(&delta);
                    self.emit(Event::ReasoningDelta { text: delta });
                }
                StreamEvent::Reasoning(block) => reasoning.push(block),
                StreamEvent::ToolCall(call) => {
                    out_bytes += call.arguments.len();
                    self.check_output(out_bytes)?;
                    calls.push(call);
                }
                StreamEvent::Usage(u) => call_usage = u,
                StreamEvent::Completed { stop_reason } => {
                    stop = Some(stop_reason);
                    break;
                }
            }
        }
        let Some(stop) = stop else {
            return Err(ModelError::StreamCut {
                provider: self.model.provider().to_string(),
            });
        };
        // A provider that streamed reasoning without a closing block still gets it journaled.
        if reasoning.is_empty() && !streamed_reasoning.is_empty() {
            reasoning.push(ReasoningBlock::Text {
                text: streamed_reasoning,
            });
        }
        if call_usage != Usage::default() {
            crate::telemetry::record_usage(
                &tracing::Span::current(),
                &call_usage,
                self.profile.prices.map(|p| p.cost(&call_usage)),
            );
            self.usage.add(&call_usage);
            self.window.observe(request_bytes, call_usage.input_tokens);
            self.emit(Event::Usage {
                last: call_usage,
                total: self.usage,
            });
        }
        let used_tokens = match call_usage.input_tokens {
            0 => self.window.estimate(request_bytes),
            n => n,
        };
        self.emit(Event::ContextUsage {
            used_tokens,
            window_tokens: self.window.window_tokens(),
            cost_usd: self.profile.prices.map(|p| p.cost(&self.usage)),
        });
        Ok(ModelTurn {
            text,
            calls,
            stop,
            reasoning,
        })
    }

    /// Refuses a model call's output once `bytes` of it are over `max_model_output_bytes`.
    fn check_output(&self, bytes: usize) -> Result<(), ModelError> {
        if bytes > self.limits.max_model_output_bytes {
            return Err(ModelError::OutputTooLarge {
                limit: self.limits.max_model_output_bytes,
            });
        }
        Ok(())
    }

    /// Replaces a result whose serialization exceeds the bound with an error that says so. When
    /// the call had already acted (a command ran, a file was written), the error says that too,
    /// with the command's exit code, so the model does not run it a second time.
    fn bound_result(&self, tool: &str, outcome: ToolOutcome, ran: &AlreadyRan) -> ToolOutcome {
        let size = serde_json::to_vec(&outcome).map(|v| v.len()).unwrap_or(0);
        if size <= self.limits.max_tool_result_bytes {
            return outcome;
        }
        let acted = self.catalog.get(tool).is_some_and(|t| {
            matches!(
                t.kind(),
                crate::core::ToolKind::Execute | crate::core::ToolKind::Edit
            )
        });
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

    /// validate → preview → decide → commit for one call.
    async fn run_tool_call(
        &mut self,
        call: &ToolCall,
        cancel: &CancellationToken,
    ) -> (ToolOutcome, AlreadyRan) {
        let span = crate::telemetry::tool_call_span();
        let started = Instant::now();
        let result = self
            .dispatch(call, cancel, &span)
            .instrument(span.clone())
            .await;
        span.record("duration_ms", started.elapsed().as_millis() as u64);
        let (outcome, ran) = match result {
            Ok(result) => {
                span.record("outcome", "ok");
                crate::telemetry::record_tool_facts(&span, result.trace_facts(), None);
                let ran = AlreadyRan {
                    exit_code: result.exit_code(),
                    artifact: result.artifact().map(str::to_string),
                };
                (ToolOutcome::ok(result.to_json()), ran)
            }
            Err(f) => {
                span.record("outcome", f.code.as_str());
                (f.into_outcome(), AlreadyRan::default())
            }
        };
        crate::telemetry::content::tool_call(&span, &call.arguments, &outcome);
        (outcome, ran)
    }

    async fn dispatch(
        &mut self,
        call: &ToolCall,
        cancel: &CancellationToken,
        span: &tracing::Span,
    ) -> Result<ToolResult, ToolFailure> {
        let parsed = parse_arguments(&call.arguments);
        let tool = self.catalog.get(&call.name);
        let Some(tool) = tool else {
            let known: Vec<_> = self.catalog.specs().into_iter().map(|s| s.name).collect();
            return Err(ToolFailure::new(
                ErrorCode::UnknownTool,
                format!(
                    "there is no tool named {:?}; available: {}",
                    call.name,
                    known.join(", ")
                ),
            ));
        };
        span.record("tool", tool.name());
        if call.arguments.len() > self.limits.max_tool_argument_bytes {
            return Err(ToolFailure::new(
                ErrorCode::ArgumentsTooLarge,
                format!(
                    "the arguments of {} are {} bytes, over the limit of {} bytes",
                    tool.name(),
                    call.arguments.len(),
                    self.limits.max_tool_argument_bytes
                ),
            ));
        }
        let args = parsed.map_err(|e| {
            ToolFailure::new(
                ErrorCode::InvalidArguments,
                format!("the arguments of {} are not valid JSON: {e}", tool.name()),
            )
        })?;
        if let Some(v) = self.catalog.validator(tool.name()) {
            v.validate(tool.name(), &args)?;
        }
        if !self.budget.tool_calls_left(&self.limits) {
            return Err(ToolFailure::new(
                ErrorCode::ToolCallBudgetExhausted,
                format!(
                    "{} was not run: the tool-call budget ({}) is used up",
                    tool.name(),
                    self.limits.max_tool_calls.unwrap_or(0)
                ),
            ));
        }
        self.budget.tool_calls += 1;
        let mode = self.policy.mode();
        mode::refuse_before_preview(mode, tool.name(), tool.kind())?;
        let ctx = ToolContext {
            call_id: call.id.clone(),
            cancel: cancel.clone(),
            events: self.events.clone(),
            host: self.host.clone(),
        };
        let mut preview = tool.preview(&args, &ctx).await?;
        // After a per-hunk review: the hunks the person did not accept, for the result.
        let mut not_applied = None;
        let verdict = self.policy.decide(tool.name(), tool.kind(), &mut preview);
        let verdict = mode::apply(mode, tool.name(), verdict)?;
        crate::telemetry::record_verdict(
            span,
            crate::policy::decision_label(verdict.decision),
            &verdict.rule_ids,
            sandbox_label(&preview),
        );
        match verdict.decision {
            Decision::Allow => {}
            Decision::Deny => {
                return Err(ToolFailure::new(
                    ErrorCode::Denied,
                    format!(
                        "{} was denied by policy: {}",
                        tool.name(),
                        verdict.reasons.join("; ")
                    ),
                )
                .with_data(json!({"rule_ids": verdict.rule_ids})));
            }
            Decision::Ask => {
                let (accepted, partial) = self
                    .ask(tool.as_ref(), call, preview, verdict, cancel)
                    .await?;
                preview = accepted;
                not_applied = partial;
            }
        }
        if cancel.is_cancelled() {
            return Err(ToolFailure::new(
                ErrorCode::Cancelled,
                format!("{} was not run: the turn was interrupted", tool.name()),
            ));
        }
        // The decision is made on the preview that will be committed, once more, so a narrowed
        // preview or a rule removed in the meantime cannot slip through.
        let mut recheck = preview.clone();
        if self
            .policy
            .decide(tool.name(), tool.kind(), &mut recheck)
            .decision
            == Decision::Deny
        {
            return Err(ToolFailure::new(
                ErrorCode::Denied,
                format!("{} was denied by policy on the final check", tool.name()),
            ));
        }
        self.emit(Event::ToolCallRunning {
            call_id: call.id.clone(),
            preview: preview.clone(),
        });
        let committing = Instant::now();
        let result = self
            .commit_recorded(tool.as_ref(), call, &args, &preview, &ctx)
            .await;
        span.record("run_ms", committing.elapsed().as_millis() as u64);
        let result = match (&result, self.approvals) {
            (Ok(r), ApprovalMode::Interactive) => match sandbox_retry(&preview, r) {
                Some((retry, verdict)) => self
                    .retry_unsandboxed(tool.as_ref(), call, &args, &ctx, retry, verdict, cancel)
                    .await
                    .unwrap_or(result),
                None => result,
            },
            _ => result,
        };
        match (result, not_applied) {
            (Ok(r), Some(partial)) => Ok(r.with_partial(partial)),
            (result, _) => result,
        }
    }

    /// A sandboxed command failed the way the sandbox makes commands fail: the person may run
    /// it again without the sandbox. Always a new question, never automatic; `None` (keep the
    /// first result) when the answer is no.
    #[allow(clippy::too_many_arguments)]
    async fn retry_unsandboxed(
        &mut self,
        tool: &dyn Tool,
        call: &ToolCall,
        args: &Value,
        ctx: &ToolContext,
        retry: Preview,
        verdict: crate::protocol::Verdict,
        cancel: &CancellationToken,
    ) -> Option<Result<ToolResult, ToolFailure>> {
        let preview = match self.ask_once(tool, call, retry, verdict, cancel).await {
            Ok(p) => p,
            Err(f) if f.code == ErrorCode::Rejected => return None,
            Err(f) => return Some(Err(f)),
        };
        let mut recheck = preview.clone();
        if self
            .policy
            .decide(tool.name(), tool.kind(), &mut recheck)
            .decision
            == Decision::Deny
        {
            return Some(Err(ToolFailure::new(
                ErrorCode::Denied,
                format!("{} was denied by policy on the final check", tool.name()),
            )));
        }
        self.emit(Event::ToolCallRunning {
            call_id: call.id.clone(),
            preview: preview.clone(),
        });
        let committed = self.commit_recorded(tool, call, args, &preview, ctx).await;
        Some(committed.map(|mut r| {
            r.mark_unsandboxed_rerun();
            r
        }))
    }

    /// Like [`Self::ask`], but "allow always" counts as once: the answer saves no rule.
    async fn ask_once(
        &mut self,
        tool: &dyn Tool,
        call: &ToolCall,
        preview: Preview,
        verdict: crate::protocol::Verdict,
        cancel: &CancellationToken,
    ) -> Result<Preview, ToolFailure> {
        self.ask_with(tool, call, preview, verdict, cancel, false)
            .await
            .map(|(p, _)| p)
    }

    /// Handles an ask according to the approval mode; returns the preview to commit, and after a
    /// per-hunk review what the result must say about the hunks not accepted.
    async fn ask(
        &mut self,
        tool: &dyn Tool,
        call: &ToolCall,
        preview: Preview,
        verdict: crate::protocol::Verdict,
        cancel: &CancellationToken,
    ) -> Result<(Preview, Option<PartialChange>), ToolFailure> {
        self.ask_with(tool, call, preview, verdict, cancel, true)
            .await
    }

    async fn ask_with(
        &mut self,
        tool: &dyn Tool,
        call: &ToolCall,
        preview: Preview,
        verdict: crate::protocol::Verdict,
        cancel: &CancellationToken,
        rememberable: bool,
    ) -> Result<(Preview, Option<PartialChange>), ToolFailure> {
        match self.approvals {
            ApprovalMode::ApproveAsks => return Ok((preview, None)),
            ApprovalMode::RefuseAsks => {
                return Err(ToolFailure::new(
                    ErrorCode::ApprovalRequired,
                    format!(
                        "{} was not run: {}; nobody can answer an approval in headless mode \
                         (grant it with --allow-write for file changes, --auto-approve, or a \
                         policy rule)",
                        tool.name(),
                        verdict.reasons.join("; ")
                    ),
                ));
            }
            ApprovalMode::Interactive => {}
        }
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(call.id.clone(), tx);
        }
        self.emit(Event::ApprovalRequest {
            call_id: call.id.clone(),
            tool: tool.name().to_string(),
            preview: preview.clone(),
            verdict,
        });
        let answer = tokio::select! {
            a = rx => a.ok(),
            () = cancel.cancelled() => None,
        };
        if let Ok(mut p) = self.pending.lock() {
            p.remove(&call.id);
        }
        let Some(answer) = answer else {
            return Err(ToolFailure::new(
                ErrorCode::Cancelled,
                format!(
                    "{} was not run: the turn was interrupted during approval",
                    tool.name()
                ),
            ));
        };
        self.emit(Event::ApprovalResolved {
            call_id: call.id.clone(),
            answer: answer.clone(),
        });
        match answer {
            ApprovalAnswer::AllowOnce => Ok((preview, None)),
            ApprovalAnswer::AllowAlways => {
                if rememberable {
                    self.policy.remember(tool.name(), &preview)?;
                }
                Ok((preview, None))
            }
            ApprovalAnswer::AllowHunks { hunks } => {
                let narrowed = tool.narrow(&preview, &hunks)?;
                Ok((narrowed, checkpoints::not_applied(&preview, &hunks)))
            }
            ApprovalAnswer::Reject { note } => {
                let mut msg = format!("the person rejected {}", tool.name());
                if let Some(n) = note.as_deref().filter(|n| !n.trim().is_empty()) {
                    msg.push_str(": ");
                    msg.push_str(n.trim());
                }
                Err(ToolFailure::new(ErrorCode::Rejected, msg).with_data(json!({"note": note})))
            }
        }
    }
}

/// What a result too large for the model must still say of a call that acted: how its command
/// ended and where its whole output is.
#[derive(Debug, Default)]
struct AlreadyRan {
    exit_code: Option<Option<i32>>,
    artifact: Option<String>,
}

/// The sandbox profile a command's preview runs in (for its trace).
fn sandbox_label(preview: &Preview) -> Option<&'static str> {
    match preview {
        Preview::Command(cp) => cp.sandbox.as_ref().map(|s| s.profile.label()),
        _ => None,
    }
}

/// For a sandboxed command whose result says the sandbox refused something: the same command
/// with the sandbox off, and the question to ask about it.
fn sandbox_retry(
    preview: &Preview,
    result: &ToolResult,
) -> Option<(Preview, crate::protocol::Verdict)> {
    let Preview::Command(cp) = preview else {
        return None;
    };
    let denied = result.sandbox_denied()?;
    let choice = cp.sandbox.as_ref()?;
    if choice.profile == crate::protocol::SandboxProfile::Off {
        return None;
    }
    let mut retry = cp.clone();
    retry.sandbox = Some(crate::protocol::SandboxChoice {
        profile: crate::protocol::SandboxProfile::Off,
        network: true,
        known_safe: false,
        degraded: None,
    });
    let why = &denied.message;
    let verdict = crate::protocol::Verdict::ask(
        crate::protocol::SANDBOX_RETRY_RULE,
        format!(
            "{why}; run it again without the sandbox (full access to your files and the network)?"
        ),
    );
    Some((Preview::Command(retry), verdict))
}

/// What the model is asked when older turns are compacted.
const COMPACT_REQUEST: &str = "The conversation is getting too long for the context window. \
Write a summary of everything above that lets you continue the work without it: the person's \
requests and constraints, decisions made, files read or changed (with paths), commands run and \
their outcomes, the current state of the todo checklist, and what remains to be done. Be \
specific and complete; do not call tools.";

/// The first line of a compaction summary, so it is recognisable in the conversation.
pub const COMPACT_MARK: &str = "[Summary of the earlier conversation, written when it was compacted to fit the context window]";

/// Tool arguments as JSON; empty text means no arguments.
fn parse_arguments(raw: &str) -> Result<Value, String> {
    if raw.trim().is_empty() {
        Ok(json!({}))
    } else {
        serde_json::from_str(raw).map_err(|e| e.to_string())
    }
}
