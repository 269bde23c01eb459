//! The in-process agent the agent benches share (`context`, `hooks`, `otel_export`,
//! `subagent`), included by each (`#[path]`) with the support file of its own that sets up its
//! case; it names the public API of `pablo-agent` and the crates beneath it only.
//!
//! The real agent loop in process: a model that answers every request at once with what a
//! function of the request says, and the agent set up around it (no approvals, no journal, no
//! checkpoints: the loop and its tools alone). The benches keep their scripts (which calls to ask
//! for, when to answer). A script sees a request through [`AgentRequest`], which reads only when
//! asked, so a request nobody looks at costs what it did when the benches held the engine's
//! request themselves; it answers with an [`AgentReply`] of [`AgentCall`]s, serialized when the
//! script builds them, as before.

// A bench whose set-up fails should stop loudly; each target that includes this uses part of it.
#![allow(clippy::expect_used, dead_code)]

use std::path::Path;
use std::sync::Arc;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use pablo_agent::{AgentSetup, Limits, spawn, window};
use pablo_core::ApprovalMode;
use pablo_hooks::Hooks;
use pablo_model::{
    EventStream, Message, ModelClient, ModelError, ModelRequest, ModelStopReason, StreamEvent,
    ToolCall,
};
use pablo_policy::PolicyEngine;
use pablo_protocol::{AgentHandle, Event, Op, Usage};
use pablo_tools::{Catalog, Host};
use pablo_workspace::Workspace;

/// A tool call a script asks for: its id, the tool's provider name (`fs_read`) and its
/// arguments, serialized here, when the script builds it.
pub struct AgentCall(ToolCall);

impl AgentCall {
    pub fn new(id: &str, name: &str, args: serde_json::Value) -> Self {
        Self(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.to_string(),
        })
    }
}

/// One model answer: its text, the calls it asks for, and the usage it reports.
pub struct AgentReply {
    text: String,
    calls: Vec<AgentCall>,
    input_tokens: u64,
    output_tokens: u64,
}

impl AgentReply {
    /// `text` and the `calls` (none: the turn ends), 100 tokens in and 10 out.
    pub fn new(text: impl Into<String>, calls: Vec<AgentCall>) -> Self {
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

/// A model request as a script sees it. Each fact is read when asked for: the measured turns
/// pay for what their script reads and nothing more.
pub struct AgentRequest<'a> {
    pub request: &'a ModelRequest,
}

impl AgentRequest<'_> {
    /// Whether the request offers tools (a compaction summary offers none).
    pub fn offers_tools(&self) -> bool {
        !self.request.tools.is_empty()
    }

    /// The request's size as the agent's window measures it.
    pub fn bytes(&self) -> usize {
        window::request_bytes(
            &self.request.system,
            &self.request.tools,
            &self.request.messages,
        )
    }

    /// The system prompt.
    pub fn system(&self) -> &str {
        &self.request.system
    }

    /// Whether the last message is a tool's result (the model is asked to go on after a call).
    pub fn follows_tool_result(&self) -> bool {
        matches!(self.request.messages.last(), Some(Message::Tool { .. }))
    }
}

/// The stream of `reply`, whole: the agent reads it at once.
fn stream_of(reply: AgentReply) -> EventStream {
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
            .map(|c| Ok(StreamEvent::ToolCall(c.0))),
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
struct InstantModel<F> {
    name: &'static str,
    respond: F,
}

/// The model `name`, answering every request at once with `respond(request)`.
pub fn instant_model<F>(name: &'static str, respond: F) -> Arc<dyn ModelClient>
where
    F: Fn(&AgentRequest<'_>) -> AgentReply + Send + Sync + 'static,
{
    Arc::new(InstantModel { name, respond })
}

#[async_trait::async_trait]
impl<F> ModelClient for InstantModel<F>
where
    F: Fn(&AgentRequest<'_>) -> AgentReply + Send + Sync + 'static,
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
        Ok(stream_of((self.respond)(&AgentRequest { request })))
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

/// The real agent loop over `agent`, asks refused (no person), nothing recorded. Call from
/// inside a tokio runtime: the loop is a task on it.
pub fn spawn_agent(agent: Agent<'_>) -> AgentLoop {
    AgentLoop(spawn(AgentSetup {
        mode: Default::default(),
        model_switcher: None,
        isolator: None,
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
    }))
}

/// The workspace at `root`.
pub fn workspace(root: &Path) -> Arc<Workspace> {
    Arc::new(Workspace::open(root).expect("the bench's workspace opens"))
}

/// The file tools over `workspace` (no write tools).
pub fn reading_catalog(workspace: &Arc<Workspace>) -> Catalog {
    let mut catalog = Catalog::new();
    pablo_tools::register_filesystem(&mut catalog, workspace, false)
        .expect("the file tools register in an empty catalog");
    catalog
}

/// A running agent loop.
pub struct AgentLoop(AgentHandle);

impl AgentLoop {
    /// Sends `text` as a turn and waits for it to end.
    pub async fn turn(&mut self, text: &str) {
        self.0
            .ops
            .send(Op::user_turn(text.to_string()))
            .expect("the agent takes ops until it is shut down");
        while let Some(ev) = self.0.events.recv().await {
            if matches!(ev, Event::TurnCompleted { .. }) {
                break;
            }
        }
    }

    /// Ends the agent and waits until it has stopped.
    pub async fn shut_down(mut self) {
        self.0
            .ops
            .send(Op::Shutdown)
            .expect("the agent takes ops until it is shut down");
        while self.0.events.recv().await.is_some() {}
    }
}
