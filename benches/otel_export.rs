//! What OpenTelemetry export costs a turn, and that a collector that is dead, silent or slow
//! costs it nothing more.
//!
//! One turn of the real agent loop in process: a model that asks for three tool calls (`fs.read`,
//! `fs.list`, `fs.search` over this repository's `src/`) and then answers, so a turn makes eight
//! exported spans (turn, four model calls, three tool calls). The same turn is timed under five
//! subscribers, each set for the bench's one thread (a current-thread runtime, so the exporter's
//! requests share the thread with the turn: any export work a turn waited for would show):
//! - `no_export`: no subscriber at all (what pablo does when nothing is asked for);
//! - `export_live`: OTLP/HTTP to a collector on 127.0.0.1 that answers at once;
//! - `export_dead`: to a port where nothing listens (connections refused);
//! - `export_silent`: to a listener that accepts and never answers;
//! - `export_slow`: to a collector that answers after 2 s.
//!
//! After each, the spans that ended and the spans the collector took are printed: a dead or
//! silent collector drops spans (counted), it does not hold turns.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use futures::StreamExt;
use pablo::agent::{AgentSetup, Limits, spawn};
use pablo::core::ApprovalMode;
use pablo::model::{
    EventStream, ModelClient, ModelError, ModelRequest, ModelStopReason, StreamEvent, ToolCall,
};
use pablo::policy::PolicyEngine;
use pablo::protocol::{AgentHandle, Event, Op, Usage};
use pablo::telemetry::otel::OtelRequest;
use pablo::tools::{Catalog, Host};
use pablo::workspace::Workspace;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Three tool steps, then the answer; again for every turn.
struct Model {
    steps: Mutex<VecDeque<Vec<ToolCall>>>,
}

fn steps() -> VecDeque<Vec<ToolCall>> {
    let call = |id: &str, name: &str, args: serde_json::Value| ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.to_string(),
    };
    VecDeque::from([
        vec![call("c1", "fs_read", json!({"path": "src/lib.rs"}))],
        vec![call("c2", "fs_list", json!({"path": "src/agent"}))],
        vec![call(
            "c3",
            "fs_search",
            json!({"path": "src/telemetry", "query": "fn "}),
        )],
        Vec::new(),
    ])
}

#[async_trait::async_trait]
impl ModelClient for Model {
    fn provider(&self) -> &str {
        "bench"
    }

    fn model(&self) -> &str {
        "bench-model"
    }

    async fn stream(
        &self,
        _request: &ModelRequest,
        _cancel: CancellationToken,
    ) -> Result<EventStream, ModelError> {
        let calls = {
            let mut steps = self.steps.lock().unwrap();
            if steps.is_empty() {
                *steps = self::steps();
            }
            steps.pop_front().unwrap()
        };
        let stop = if calls.is_empty() {
            ModelStopReason::EndTurn
        } else {
            ModelStopReason::ToolUse
        };
        let mut events = vec![Ok(StreamEvent::TextDelta("Looking.".into()))];
        events.extend(calls.into_iter().map(|c| Ok(StreamEvent::ToolCall(c))));
        events.push(Ok(StreamEvent::Usage(Usage {
            input_tokens: 1000,
            output_tokens: 40,
            ..Usage::default()
        })));
        events.push(Ok(StreamEvent::Completed { stop_reason: stop }));
        Ok(futures::stream::iter(events).boxed())
    }
}

fn agent(root: &Path, state: &Path) -> AgentHandle {
    let ws = Arc::new(Workspace::open(root).unwrap());
    let mut catalog = Catalog::new();
    pablo::tools::register_filesystem(&mut catalog, &ws, false).unwrap();
    spawn(AgentSetup {
        mode: Default::default(),
        model_switcher: None,
        session_id: "bench".into(),
        model: Arc::new(Model {
            steps: Mutex::new(steps()),
        }),
        catalog,
        policy: Arc::new(PolicyEngine::new(Default::default())),
        host: Arc::new(Host::new(ws, state.to_path_buf(), &Default::default())),
        limits: Limits::default(),
        approvals: ApprovalMode::RefuseAsks,
        system_prompt: "bench".into(),
        history: Vec::new(),
        recorder: None,
        checkpoints: None,
        hooks: pablo::hooks::Hooks::none(),
    })
}

async fn one_turn(handle: &mut AgentHandle) {
    handle.ops.send(Op::user_turn("look around")).unwrap();
    while let Some(ev) = handle.events.recv().await {
        if matches!(ev, Event::TurnCompleted { .. }) {
            break;
        }
    }
}

/// A collector on a thread of its own: reads each request whole, answers after `delay` (never,
/// when `None`), and keeps the connection for the next request.
fn collector(delay: Option<Duration>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let Some(delay) = delay else {
                    // Silent: hold the connection open, read, never answer.
                    let mut sink = [0u8; 65536];
                    while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
                    return;
                };
                while read_request(&mut stream) {
                    std::thread::sleep(delay);
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\n\
                                  content-length: 0\r\n\r\n";
                    if stream.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

/// Reads one HTTP request (headers, then `content-length` bytes); false at the end.
fn read_request(stream: &mut std::net::TcpStream) -> bool {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return false,
        }
    }
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).is_ok()
}

/// A port where nothing listens.
fn dead_endpoint() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

fn settings(endpoint: Option<String>) -> pablo::telemetry::Settings {
    let otel = endpoint.map(|e| {
        OtelRequest {
            endpoint: Some(e),
            // The SDK's metric reader sends on shutdown only; spans are what a turn makes.
            metric_interval_ms: Some(3_600_000),
            ..OtelRequest::default()
        }
        .resolve()
        .unwrap()
        .unwrap()
    });
    pablo::telemetry::Settings {
        otel,
        ..Default::default()
    }
}

fn bench(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let state = tempfile::tempdir().unwrap();
    let cases = [
        ("no_export", None),
        ("export_live", Some(collector(Some(Duration::ZERO)))),
        ("export_dead", Some(dead_endpoint())),
        ("export_silent", Some(collector(None))),
        ("export_slow", Some(collector(Some(Duration::from_secs(2))))),
    ];
    let mut group = c.benchmark_group("otel_turn");
    group.sample_size(30);
    for (name, endpoint) in cases {
        // One thread: the runtime, the agent and the subscriber all live on it.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (dispatch, export, notes) =
            runtime.block_on(async { pablo::telemetry::subscriber(&settings(endpoint)) });
        assert!(notes.is_empty(), "{notes:?}");
        let dispatch = dispatch.unwrap_or_else(tracing::Dispatch::none);
        tracing::dispatcher::with_default(&dispatch, || {
            let mut handle = runtime.block_on(async { agent(root, state.path()) });
            group.bench_function(name, |b| {
                b.iter(|| runtime.block_on(one_turn(&mut handle)));
            });
            runtime.block_on(async {
                handle.ops.send(Op::Shutdown).unwrap();
                while handle.events.recv().await.is_some() {}
            });
        });
        if let Some(export) = export {
            let (ended, exported) = export.counts();
            let note = runtime.block_on(export.finish(Duration::from_secs(2)));
            println!("{name}: {ended} spans ended, {exported} exported before the end; {note:?}");
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
