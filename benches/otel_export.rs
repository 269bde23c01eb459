//! What OpenTelemetry export costs a turn, and that a collector that is dead, silent or slow
//! costs it nothing more.
//!
//! One turn of the real agent loop in process: a model that asks for three tool calls (`fs.read`,
//! `fs.list`, `fs.search` over this repository) and then answers, so a turn makes eight
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
use std::sync::Mutex;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "support/agent.rs"]
mod agent;
#[path = "support/otel_agent.rs"]
mod otel_agent;

use agent::{AgentCall, AgentLoop, AgentReply, AgentRequest};
use otel_agent::{otel_spawn, otel_subscriber};
use serde_json::json;

/// Three tool steps, then the answer.
fn steps() -> VecDeque<Vec<AgentCall>> {
    VecDeque::from([
        vec![AgentCall::new(
            "c1",
            "fs_read",
            json!({"path": "src/lib.rs"}),
        )],
        vec![AgentCall::new(
            "c2",
            "fs_list",
            json!({"path": "src/agent"}),
        )],
        vec![AgentCall::new(
            "c3",
            "fs_search",
            json!({"path": "crates/telemetry/src", "query": "fn "}),
        )],
        Vec::new(),
    ])
}

fn agent(root: &Path, state: &Path) -> AgentLoop {
    // The steps again for every turn.
    let script = Mutex::new(steps());
    otel_spawn(root, state, move |_: &AgentRequest<'_>| {
        let mut steps = script.lock().unwrap();
        if steps.is_empty() {
            *steps = self::steps();
        }
        AgentReply::new("Looking.", steps.pop_front().unwrap()).tokens(1000, 40)
    })
}

async fn one_turn(handle: &mut AgentLoop) {
    handle.turn("look around").await;
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
        let (dispatch, export, notes) = runtime.block_on(async { otel_subscriber(endpoint) });
        assert!(notes.is_empty(), "{notes:?}");
        let dispatch = dispatch.unwrap_or_else(tracing::Dispatch::none);
        tracing::dispatcher::with_default(&dispatch, || {
            let mut handle = runtime.block_on(async { agent(root, state.path()) });
            group.bench_function(name, |b| {
                b.iter(|| runtime.block_on(one_turn(&mut handle)));
            });
            runtime.block_on(handle.shut_down());
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
