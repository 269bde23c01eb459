//! Session journal speed: resuming a long session and listing many sessions.
//!
//! Targets (issue 7): resume of a 20,000-event journal and listing of 1,000 sessions, each within
//! 200 ms on the 2-core build machine. Each figure comes with its comparison measured in the same
//! run: listing without the summaries (every journal scanned), and loading without the replay.

// Test code: a failed unwrap is a failed test, which is what it should be.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use pablo::core::EventRecorder;
use pablo::protocol::{Event, PlanItem, PlanStatus, StopReason, ToolCall, ToolOutcome, Usage};
use pablo::session::{Header, Store, load_journal};
use serde_json::json;

/// One realistic turn: a prompt, a model call with two tool calls, their results, the answer.
fn turn(i: usize) -> Vec<Event> {
    let calls = vec![
        ToolCall {
            id: format!("c{i}a"),
            name: "fs_read".into(),
            arguments: format!(r#"{{"path":"src/module_{i}.rs"}}"#),
        },
        ToolCall {
            id: format!("c{i}b"),
            name: "update_plan".into(),
            arguments: r#"{"items":[{"content":"step","status":"completed"}]}"#.into(),
        },
    ];
    let body = "fn example() -> u32 { 42 }\n".repeat(20);
    vec![
        Event::UserMessage {
            text: format!("please look at module {i} and fix what is wrong"),
        },
        Event::MessageCompleted {
            text: "Let me read it.".into(),
            tool_calls: calls,
        },
        Event::ToolCallBegin {
            call_id: format!("c{i}a"),
            tool: "fs.read".into(),
            arguments: json!({"path": format!("src/module_{i}.rs")}),
        },
        Event::ToolCallEnd {
            call_id: format!("c{i}a"),
            tool: "fs.read".into(),
            result: ToolOutcome::ok(
                json!({"path": format!("src/module_{i}.rs"), "text": body, "revision": "ab".repeat(32)}),
            ),
        },
        Event::PlanUpdate {
            explanation: None,
            items: vec![PlanItem {
                content: "step".into(),
                status: PlanStatus::Completed,
            }],
        },
        Event::ToolCallEnd {
            call_id: format!("c{i}b"),
            tool: "plan.update".into(),
            result: ToolOutcome::ok(json!({"updated": true, "completed": 1, "total": 1})),
        },
        Event::Usage {
            last: Usage {
                input_tokens: 1000,
                output_tokens: 50,
                cached_input_tokens: 0,
                cache_write_input_tokens: 0,
            },
            total: Usage {
                input_tokens: 1000 * i as u64,
                output_tokens: 50 * i as u64,
                cached_input_tokens: 0,
                cache_write_input_tokens: 0,
            },
        },
        Event::MessageCompleted {
            text: "Fixed: the function now returns the right value.".into(),
            tool_calls: vec![],
        },
        Event::ApprovalResolved {
            call_id: format!("c{i}a"),
            answer: pablo::protocol::ApprovalAnswer::AllowOnce,
        },
        Event::TurnCompleted {
            stop_reason: StopReason::EndTurn,
            usage: Usage::default(),
        },
    ]
}

fn write_session(store: &Store, events: usize) -> String {
    let id = pablo::session::new_session_id();
    let mut j = store
        .create(&Header::new(&id, "/work/project", "gpt-test", "openai"))
        .expect("create journal");
    let mut written = 0;
    let mut i = 0;
    while written < events {
        for e in turn(i) {
            if written == events {
                break;
            }
            j.record(&e).expect("record");
            written += 1;
        }
        i += 1;
    }
    j.sync().expect("sync");
    id
}

fn resume(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = Store::at(tmp.path().join("sessions"));
    let id = write_session(&store, 20_000);
    let path = store.dir().join(format!("{id}.jsonl"));
    let mut g = c.benchmark_group("resume");
    g.sample_size(20);
    g.bench_function("load_and_replay_20000_events", |b| {
        b.iter(|| {
            let state = store.load(black_box(&id)).expect("load");
            assert_eq!(state.transcript.len(), 20_000);
            black_box(state)
        })
    });
    g.bench_function("load_only_20000_events", |b| {
        b.iter(|| black_box(load_journal(black_box(&path)).expect("load")))
    });
    g.finish();
}

fn list(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = Store::at(tmp.path().join("sessions"));
    for _ in 0..1_000 {
        write_session(&store, 40);
    }
    let mut g = c.benchmark_group("list");
    g.sample_size(20);
    g.bench_function("list_1000_sessions_with_summaries", |b| {
        b.iter(|| {
            let l = store.list();
            assert_eq!(l.sessions.len(), 1_000);
            black_box(l)
        })
    });
    // The comparison: the same listing when no summary can be trusted, so every journal is read.
    let scan = Store::at(tmp.path().join("scan"));
    std::fs::create_dir_all(scan.dir()).expect("mkdir");
    for entry in std::fs::read_dir(store.dir()).expect("read_dir") {
        let p = entry.expect("entry").path();
        if p.extension().is_some_and(|e| e == "jsonl") {
            std::fs::copy(&p, scan.dir().join(p.file_name().expect("name"))).expect("copy");
        }
    }
    g.bench_function("list_1000_sessions_scanning_journals", |b| {
        b.iter(|| {
            // Drop the summaries the previous iteration wrote, so each one scans.
            for entry in std::fs::read_dir(scan.dir()).expect("read_dir") {
                let p = entry.expect("entry").path();
                if p.to_string_lossy().ends_with(".meta.json") {
                    std::fs::remove_file(p).expect("rm");
                }
            }
            let l = scan.list();
            assert_eq!(l.sessions.len(), 1_000);
            black_box(l)
        })
    });
    g.finish();
}

criterion_group!(benches, resume, list);
criterion_main!(benches);
