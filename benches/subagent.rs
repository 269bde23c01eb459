//! What starting a subagent costs: the time from the moment the model's response asking for
//! `agent_task` has streamed to the moment the subagent's first request reaches the model (the
//! call admitted, the subagent's catalog, limits and system prompt built, its task spawned, its
//! turn opened and its first request built). Target: at most 5 ms.
//!
//! Two baselines in the same run, on the same agent:
//! - `peer_plain_tool_step`: the same span for an ordinary tool step, from a response asking for
//!   `update_plan` to the next request of the same conversation (the call validated, decided,
//!   committed, its result bounded and added, the request built);
//! - `peer_turn_start`: the parent turn's own start, from the person's prompt sent to the agent
//!   to its first request (the op read, the turn opened, its first request built).
//!
//! And what delegating costs beyond the model calls (issue 46 item 6): a whole turn in which the
//! model's one response asks for one `agent_task`, or four at once, and every model call answers
//! at once; against the same turn asking for one or four `update_plan` calls. The difference is
//! what a subagent costs beyond the calls it makes (each subagent makes one).
//!
//! The real agent (`pablo_agent::spawn`, set up by `support/subagent_parent.rs`) runs in
//! process with the real catalog tools over this repository, against a model that answers at once
//! and notes when each span started and ended.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "support/agent.rs"]
mod agent;
#[path = "support/subagent_parent.rs"]
mod subagent_parent;

use agent::{AgentCall, AgentReply, AgentRequest};
use serde_json::json;
use subagent_parent::subagent_spawn;

const SUBAGENT_MARK: &str = "# You are a subagent";

/// What is measured.
#[derive(Clone, Copy, PartialEq)]
enum Span {
    /// `agent_task` asked → the subagent's first request.
    Delegate,
    /// `update_plan` asked → the parent's next request.
    PlainTool,
    /// The prompt sent → the turn's first request.
    TurnStart,
}

/// Where a span started, and the spans measured so far.
#[derive(Default)]
struct Clock {
    started: Mutex<Option<Instant>>,
    spans: Mutex<Vec<Duration>>,
}

impl Clock {
    fn start(&self) {
        *self.started.lock().unwrap() = Some(Instant::now());
    }

    /// Ends the span under way, if one is.
    fn stop(&self) {
        let now = Instant::now();
        if let Some(started) = self.started.lock().unwrap().take() {
            self.spans.lock().unwrap().push(now - started);
        }
    }
}

/// The model: ends the span at each request, answers, and starts the next span as its answer
/// asking for a tool is handed over (whole: the agent reads it at once, so its end is now).
fn answer(span: Span, clock: &Clock, request: &AgentRequest<'_>) -> AgentReply {
    clock.stop();
    let subagent = request.system().contains(SUBAGENT_MARK);
    let answered = request.follows_tool_result();
    if span == Span::TurnStart || subagent || answered {
        return AgentReply::new("Found it in src/lib.rs.", Vec::new());
    }
    let call = match span {
        Span::Delegate => AgentCall::new(
            "call_task",
            "agent_task",
            json!({"description": "find it", "prompt": "Where is the entry point?"}),
        ),
        _ => AgentCall::new(
            "call_plan",
            "update_plan",
            json!({"items": [{"content": "look", "status": "in_progress"}]}),
        ),
    };
    clock.start();
    AgentReply::new("", vec![call])
}

/// What the parent's first response asks for in a whole-turn case.
#[derive(Clone, Copy)]
enum Asked {
    Subagents(usize),
    PlainTools(usize),
}

/// The model of a whole-turn case: the parent's first request gets the calls of `asked`;
/// every other request (a subagent's, the parent's after the results) a short answer.
fn answer_whole(asked: Asked, request: &AgentRequest<'_>) -> AgentReply {
    if request.system().contains(SUBAGENT_MARK) || request.follows_tool_result() {
        return AgentReply::new("Found it in src/lib.rs.", Vec::new());
    }
    let calls = match asked {
        Asked::Subagents(n) => (0..n)
            .map(|i| {
                AgentCall::new(
                    &format!("call_task_{i}"),
                    "agent_task",
                    json!({"description": format!("find part {i}"), "prompt": "Where is the entry point?"}),
                )
            })
            .collect(),
        Asked::PlainTools(n) => (0..n)
            .map(|i| {
                AgentCall::new(
                    &format!("call_plan_{i}"),
                    "update_plan",
                    json!({"items": [{"content": format!("look {i}"), "status": "in_progress"}]}),
                )
            })
            .collect(),
    };
    AgentReply::new("", calls)
}

/// The total time of `iters` whole turns of one agent.
fn measure_whole(asked: Asked, iters: u64) -> Duration {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let state = tempfile::tempdir().unwrap();
        let mut handle = subagent_spawn(root, state.path(), move |r: &AgentRequest<'_>| {
            answer_whole(asked, r)
        });
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            let started = Instant::now();
            handle.turn("go").await;
            total += started.elapsed();
        }
        handle.shut_down().await;
        total
    })
}

/// The total of `iters` spans, one per turn of one agent.
fn measure(span: Span, iters: u64) -> Duration {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let clock = Arc::new(Clock::default());
        let state = tempfile::tempdir().unwrap();
        let mut handle = {
            let clock = clock.clone();
            subagent_spawn(root, state.path(), move |r: &AgentRequest<'_>| {
                answer(span, &clock, r)
            })
        };
        for _ in 0..iters {
            if span == Span::TurnStart {
                clock.start();
            }
            handle.turn("go").await;
        }
        handle.shut_down().await;
        let spans = clock.spans.lock().unwrap();
        assert_eq!(spans.len() as u64, iters, "one span per turn");
        spans.iter().sum::<Duration>()
    })
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("subagent");
    g.sample_size(20);
    g.bench_function("start_to_first_request", |b| {
        b.iter_custom(|iters| measure(Span::Delegate, iters))
    });
    g.bench_function("peer_plain_tool_step", |b| {
        b.iter_custom(|iters| measure(Span::PlainTool, iters))
    });
    g.bench_function("peer_turn_start", |b| {
        b.iter_custom(|iters| measure(Span::TurnStart, iters))
    });
    for (name, asked) in [
        ("turn_with_one_subagent", Asked::Subagents(1)),
        ("turn_with_four_subagents", Asked::Subagents(4)),
        ("peer_turn_with_one_plain_tool", Asked::PlainTools(1)),
        ("peer_turn_with_four_plain_tools", Asked::PlainTools(4)),
    ] {
        g.bench_function(name, |b| b.iter_custom(|iters| measure_whole(asked, iters)));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
