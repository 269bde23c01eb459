//! What hooks cost a tool call (docs/hooks.md, BENCHMARKS.md).
//!
//! **A configured hook that does not match.** Every tool call passes the `pre_tool_use` and
//! `post_tool_use` seams. With hooks configured for other tools, what the call pays is the
//! matching: the tool-name matchers of each event's hooks. Measured two ways:
//!
//! - `seam/*`: the matching the agent does at both seams for an `fs.read` call, with no hook, and
//!   with eight hooks (four per event) whose matchers name other tools, one of them with a
//!   `command_matcher` (a shell hook, which must not make other calls parse anything);
//! - `tool_call/*`: the real agent loop in process, one turn of 20 `fs.read` calls answered by an
//!   in-process model, with no hook and with the same eight non-matching hooks. The difference of
//!   the two, over 20, is the cost per call, within the noise of a whole turn.
//!
//! **A matching hook that does nothing.** `spawn/hook_noop` runs a hook whose command is `true`
//! with a `pre_tool_use` input on its stdin, through `Hooks::run` (clean environment, process
//! group, bounded reads, timeout, redaction); `spawn/bare_sh` is the bound: `/bin/sh -c true`
//! spawned with tokio, the same input written to it, its pipes read and its status awaited.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "support/agent.rs"]
mod agent;
#[path = "support/hook_cases.rs"]
mod hook_cases;

use agent::{AgentCall, AgentReply, AgentRequest};
use hook_cases::{HooksCase, HooksNoop, HooksSeam, HooksTurn};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const CALLS_PER_TURN: usize = 20;

/// One turn of `CALLS_PER_TURN` reads of a small file through the real agent loop: the model
/// asks for them all at once, then answers.
async fn one_turn(agents: &HooksTurn, case: HooksCase) {
    let calls = (0..CALLS_PER_TURN)
        .map(|i| AgentCall::new(&format!("c{i}"), "fs_read", json!({"path": "a.txt"})))
        .collect();
    let steps = Mutex::new(VecDeque::from([calls, Vec::new()]));
    let mut handle = agents.spawn(case, move |_: &AgentRequest<'_>| {
        AgentReply::new("ok", steps.lock().unwrap().pop_front().unwrap_or_default())
    });
    handle.turn("read").await;
    let _ = tokio::time::timeout(Duration::from_secs(10), handle.shut_down()).await;
}

fn bench(c: &mut Criterion) {
    let none = HooksSeam::new(HooksCase::NoHooks);
    let eight = HooksSeam::new(HooksCase::EightNonMatching);
    assert_eq!(eight.seam("fs.read"), 0);
    assert!(eight.seam("shell.run") > 0);
    let mut g = c.benchmark_group("seam");
    g.bench_function("no_hooks", |b| {
        b.iter(|| std::hint::black_box(&none).seam("fs.read"))
    });
    g.bench_function("eight_non_matching", |b| {
        b.iter(|| std::hint::black_box(&eight).seam("fs.read"))
    });
    g.finish();

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello\n".repeat(50)).unwrap();
    let state = tempfile::tempdir().unwrap();
    let agents = HooksTurn::new(dir.path(), state.path());
    let mut g = c.benchmark_group("tool_call");
    g.sample_size(30);
    g.bench_function("turn_of_20_reads_no_hooks", |b| {
        b.to_async(&runtime)
            .iter(|| one_turn(&agents, HooksCase::NoHooks))
    });
    g.bench_function("turn_of_20_reads_eight_non_matching", |b| {
        b.to_async(&runtime)
            .iter(|| one_turn(&agents, HooksCase::EightNonMatching))
    });
    g.finish();

    let input = json!({
        "session_id": "bench", "cwd": "/tmp", "hook_event_name": "PreToolUse",
        "tool_name": "fs.read", "tool_provider_name": "fs_read", "tool_use_id": "c1",
        "tool_input": {"path": "a.txt"},
    });
    let body = serde_json::to_vec(&input).unwrap();
    let noop = HooksNoop::new(dir.path(), input);
    let mut g = c.benchmark_group("spawn");
    g.sample_size(50);
    g.bench_function("hook_noop", |b| b.to_async(&runtime).iter(|| noop.run()));
    g.bench_function("bare_sh", |b| {
        b.to_async(&runtime).iter(|| async {
            let mut child = tokio::process::Command::new("/bin/sh")
                .args(["-c", "true"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            let _ = stdin.write_all(&body).await;
            drop(stdin);
            let mut out = Vec::new();
            let _ = child.stdout.take().unwrap().read_to_end(&mut out).await;
            child.wait().await.unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
