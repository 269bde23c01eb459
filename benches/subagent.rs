//! What starting a subagent costs: the time from the moment the model's response asking for
//! `agent_task` has streamed to the moment the subagent's first request reaches the model (the
//! call admitted, the subagent's catalog, limits and system prompt built, its task spawned, its
//! turn opened and its first request built). Target: at most 5 ms.
//!
//! The peer in the same run: the same span for an ordinary tool step, from a response asking for
//! `update_plan` to the next request of the same conversation (the call validated, decided,
//! committed, its result bounded and added, the request built).
//!
//! The real agent (`pablo::agent::spawn`) runs in process with the real catalog tools over this
//! repository, against a model that answers at once and notes when each stream ended and when
//! each request arrived.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use futures::StreamExt;
use pablo::agent::{AgentSetup, Limits, spawn};
use pablo::core::ApprovalMode;
use pablo::model::{
    EventStream, ModelClient, ModelError, ModelRequest, ModelStopReason, StreamEvent, ToolCall,
};
use pablo::policy::PolicyEngine;
use pablo::protocol::{Event, Op, Usage};
use pablo::tools::agent_task::AgentRoster;
use pablo::tools::{Catalog, Host};
use pablo::workspace::Workspace;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const SUBAGENT_MARK: &str = "# You are a subagent";

/// Which call the parent asks for first.
#[derive(Clone, Copy)]
enum Step {
    Delegate,
    Plan,
}

/// Answers at once; notes when the parent's tool-asking stream ended and when the next request
/// (the subagent's, or the parent's own after a plain tool) arrived.
struct Timed {
    step: Step,
    asked_at: Mutex<Option<Instant>>,
    spans: Mutex<Vec<Duration>>,
}

fn answer(text: &str, calls: Vec<ToolCall>) -> EventStream {
    let stop = if calls.is_empty() {
        ModelStopReason::EndTurn
    } else {
        ModelStopReason::ToolUse
    };
    let mut events = vec![Ok(StreamEvent::TextDelta(text.into()))];
    events.extend(calls.into_iter().map(|c| Ok(StreamEvent::ToolCall(c))));
    events.push(Ok(StreamEvent::Usage(Usage {
        input_tokens: 100,
        output_tokens: 10,
        ..Usage::default()
    })));
    events.push(Ok(StreamEvent::Completed { stop_reason: stop }));
    futures::stream::iter(events).boxed()
}

#[async_trait::async_trait]
impl ModelClient for Timed {
    fn provider(&self) -> &str {
        "timed"
    }

    fn model(&self) -> &str {
        "claude-sonnet-4-5"
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        _cancel: CancellationToken,
    ) -> Result<EventStream, ModelError> {
        let now = Instant::now();
        if let Some(asked) = self.asked_at.lock().unwrap().take() {
            self.spans.lock().unwrap().push(now - asked);
        }
        let subagent = request.system.contains(SUBAGENT_MARK);
        let answered = matches!(
            request.messages.last(),
            Some(pablo::model::Message::Tool { .. })
        );
        if subagent || answered {
            return Ok(answer("Found it in src/lib.rs.", Vec::new()));
        }
        let call = match self.step {
            Step::Delegate => ToolCall {
                id: "call_task".into(),
                name: "agent_task".into(),
                arguments: json!({"description": "find it", "prompt": "Where is the entry point?"})
                    .to_string(),
            },
            Step::Plan => ToolCall {
                id: "call_plan".into(),
                name: "update_plan".into(),
                arguments: json!({"items": [{"content": "look", "status": "in_progress"}]})
                    .to_string(),
            },
        };
        // The stream is handed over whole: the agent reads it at once, so its end is now.
        *self.asked_at.lock().unwrap() = Some(Instant::now());
        Ok(answer("", vec![call]))
    }
}

/// The mean span over `iters` turns of a fresh agent.
fn measure(step: Step, iters: u64) -> Duration {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let model = Arc::new(Timed {
            step,
            asked_at: Mutex::new(None),
            spans: Mutex::new(Vec::new()),
        });
        let ws = Arc::new(Workspace::open(root).unwrap());
        let mut catalog = Catalog::new();
        pablo::tools::register_filesystem(&mut catalog, &ws, false).unwrap();
        catalog
            .register(Arc::new(pablo::tools::plan::PlanUpdate))
            .unwrap();
        catalog
            .register_agents(Arc::new(AgentRoster::new(Vec::new())))
            .unwrap();
        let state = tempfile::tempdir().unwrap();
        let mut handle = spawn(AgentSetup {
            mode: Default::default(),
            model_switcher: None,
            session_id: "bench".into(),
            model: model.clone(),
            catalog,
            policy: Arc::new(PolicyEngine::new(Default::default())),
            host: Arc::new(Host::new(
                ws,
                state.path().to_path_buf(),
                &Default::default(),
            )),
            limits: Limits::default(),
            approvals: ApprovalMode::RefuseAsks,
            system_prompt: pablo::agent::context::SYSTEM_PROMPT.to_string(),
            history: Vec::new(),
            recorder: None,
            checkpoints: None,
            hooks: pablo::hooks::Hooks::none(),
        });
        for _ in 0..iters {
            handle.ops.send(Op::user_turn("go")).unwrap();
            while let Some(ev) = handle.events.recv().await {
                if matches!(ev, Event::TurnCompleted { .. }) {
                    break;
                }
            }
        }
        handle.ops.send(Op::Shutdown).unwrap();
        while handle.events.recv().await.is_some() {}
        let spans = model.spans.lock().unwrap();
        assert_eq!(spans.len() as u64, iters, "one span per turn");
        spans.iter().sum::<Duration>()
    })
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("subagent");
    g.sample_size(20);
    g.bench_function("start_to_first_request", |b| {
        b.iter_custom(|iters| measure(Step::Delegate, iters))
    });
    g.bench_function("peer_plain_tool_step", |b| {
        b.iter_custom(|iters| measure(Step::Plan, iters))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
