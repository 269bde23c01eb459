//! What the benches that run the real agent loop in process share: a model that answers every
//! request at once, with what a function of the request says, and the agent set up around it
//! (no approvals, no journal, no checkpoints: the loop and its tools alone).

// Each bench uses the parts it needs.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use futures::StreamExt;
use pablo::agent::{AgentSetup, Limits, spawn};
use pablo::core::ApprovalMode;
use pablo::hooks::Hooks;
use pablo::model::{
    EventStream, ModelClient, ModelError, ModelRequest, ModelStopReason, StreamEvent, ToolCall,
};
use pablo::policy::PolicyEngine;
use pablo::protocol::{AgentHandle, Event, Op, Usage};
use pablo::tools::{Catalog, Host};
use pablo::workspace::Workspace;
use tokio_util::sync::CancellationToken;

/// One model answer: its text, the calls it asks for, and the usage it reports.
pub struct Reply {
    pub text: String,
    pub calls: Vec<ToolCall>,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Reply {
    /// `text` and the `calls` (none: the turn ends), 100 tokens in and 10 out.
    pub fn new(text: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        Self {
            text: text.into(),
            calls,
            input_tokens: 100,
            output_tokens: 10,
        }
    }

    pub fn tokens(mut self, input: u64, output: u64) -> Self {
        self.input_tokens = input;
        self.output_tokens = output;
        self
    }
}

/// A tool call of `name` (provider name) with `args`.
pub fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.to_string(),
    }
}

/// The stream of `reply`, whole: the agent reads it at once.
pub fn stream_of(reply: Reply) -> EventStream {
    let stop = if reply.calls.is_empty() {
        ModelStopReason::EndTurn
    } else {
        ModelStopReason::ToolUse
    };
    let mut events = vec![Ok(StreamEvent::TextDelta(reply.text))];
    events.extend(
        reply
            .calls
            .into_iter()
            .map(|c| Ok(StreamEvent::ToolCall(c))),
    );
    events.push(Ok(StreamEvent::Usage(Usage {
        input_tokens: reply.input_tokens,
        output_tokens: reply.output_tokens,
        ..Usage::default()
    })));
    events.push(Ok(StreamEvent::Completed { stop_reason: stop }));
    futures::stream::iter(events).boxed()
}

/// A model of `name` that answers every request at once with `respond(request)`.
pub struct InstantModel<F> {
    name: &'static str,
    respond: F,
}

impl<F> InstantModel<F>
where
    F: Fn(&ModelRequest) -> Reply + Send + Sync + 'static,
{
    pub fn new(name: &'static str, respond: F) -> Arc<Self> {
        Arc::new(Self { name, respond })
    }
}

#[async_trait::async_trait]
impl<F> ModelClient for InstantModel<F>
where
    F: Fn(&ModelRequest) -> Reply + Send + Sync + 'static,
{
    fn provider(&self) -> &str {
        "bench"
    }

    fn model(&self) -> &str {
        self.name
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        _cancel: CancellationToken,
    ) -> Result<EventStream, ModelError> {
        Ok(stream_of((self.respond)(request)))
    }
}

/// What differs between the benches' agents.
pub struct Agent<'a> {
    pub model: Arc<dyn ModelClient>,
    pub catalog: Catalog,
    pub workspace: Arc<Workspace>,
    pub state: &'a Path,
    pub hooks: Arc<Hooks>,
    pub system_prompt: &'a str,
}

/// The real agent loop over `agent`, asks refused (no person), nothing recorded.
pub fn spawn_agent(agent: Agent<'_>) -> AgentHandle {
    spawn(AgentSetup {
        mode: Default::default(),
        model_switcher: None,
        hooks: agent.hooks,
        session_id: "bench".into(),
        model: agent.model,
        catalog: agent.catalog,
        policy: Arc::new(PolicyEngine::new(Default::default())),
        host: Arc::new(Host::new(
            agent.workspace,
            agent.state.to_path_buf(),
            &Default::default(),
        )),
        limits: Limits::default(),
        approvals: ApprovalMode::RefuseAsks,
        system_prompt: agent.system_prompt.into(),
        history: Vec::new(),
        recorder: None,
        checkpoints: None,
    })
}

/// The file tools over `workspace` (no write tools).
pub fn reading_catalog(workspace: &Arc<Workspace>) -> Catalog {
    let mut catalog = Catalog::new();
    pablo::tools::register_filesystem(&mut catalog, workspace, false).unwrap();
    catalog
}

/// Sends `text` as a turn and waits for it to end.
pub async fn one_turn(handle: &mut AgentHandle, text: &str) {
    handle.ops.send(Op::user_turn(text.to_string())).unwrap();
    while let Some(ev) = handle.events.recv().await {
        if matches!(ev, Event::TurnCompleted { .. }) {
            break;
        }
    }
}

/// Ends the agent and waits until it has stopped.
pub async fn shut_down(mut handle: AgentHandle) {
    handle.ops.send(Op::Shutdown).unwrap();
    while handle.events.recv().await.is_some() {}
}
