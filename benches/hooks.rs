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
use std::sync::{Arc, Mutex};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use pablo::config::HookEntry;
use pablo::hooks::{Hook, HookEvent, Hooks};
use pablo::model::ModelRequest;
use pablo::workspace::Workspace;
use serde_json::json;
use support::{Agent, InstantModel, Reply, spawn_agent};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod support;

const CALLS_PER_TURN: usize = 20;

fn entry(matcher: &str, command_matcher: Option<&str>, command: &str) -> HookEntry {
    HookEntry {
        name: None,
        matcher: Some(matcher.into()),
        command_matcher: command_matcher.map(str::to_string),
        command: command.into(),
        timeout_ms: None,
        on_failure: None,
    }
}

/// Eight hooks, none of them for `fs.read`.
fn non_matching() -> Hooks {
    let mut hooks = Hooks::default();
    for event in [HookEvent::PreToolUse, HookEvent::PostToolUse] {
        hooks
            .push(event, &entry(r"shell\.run", Some("^git push"), "exit 2"))
            .unwrap();
        hooks
            .push(event, &entry(r"fs\.(write|edit)", None, "exit 2"))
            .unwrap();
        hooks
            .push(event, &entry("mcp__.*", None, "exit 2"))
            .unwrap();
        hooks
            .push(event, &entry(r"web\.fetch|agent\.task", None, "exit 2"))
            .unwrap();
    }
    hooks
}

/// What the agent does at both seams for one call to `tool` (agent/hooks.rs): any hook for the
/// event, then the ones whose matcher takes the tool, then whether one needs the parsed command.
fn seam(hooks: &Hooks, tool: &str) -> usize {
    let mut n = 0;
    if hooks.any(HookEvent::PreToolUse) {
        let needs_parse = hooks
            .matching_tool(HookEvent::PreToolUse, tool)
            .any(Hook::looks_into_commands);
        n += hooks
            .matching_tool(HookEvent::PreToolUse, tool)
            .filter(|h| h.matches(None, None))
            .count()
            + usize::from(needs_parse);
    }
    if hooks.any(HookEvent::PostToolUse) {
        n += hooks
            .matching(HookEvent::PostToolUse, Some(tool), None)
            .count();
    }
    n
}

/// One turn of `CALLS_PER_TURN` reads of a small file through the real agent loop: the model
/// asks for them all at once, then answers.
async fn one_turn(hooks: Arc<Hooks>, ws: &Arc<Workspace>, state: &std::path::Path) {
    let calls = (0..CALLS_PER_TURN)
        .map(|i| support::call(&format!("c{i}"), "fs_read", json!({"path": "a.txt"})))
        .collect();
    let steps = Mutex::new(VecDeque::from([calls, Vec::new()]));
    let model = InstantModel::new("bench-model", move |_: &ModelRequest| {
        Reply::new("ok", steps.lock().unwrap().pop_front().unwrap_or_default())
    });
    let handle = spawn_agent(Agent {
        model,
        catalog: support::reading_catalog(ws),
        workspace: ws.clone(),
        state,
        hooks,
        system_prompt: "bench",
    });
    let mut handle = handle;
    support::one_turn(&mut handle, "read").await;
    let _ = tokio::time::timeout(Duration::from_secs(10), support::shut_down(handle)).await;
}

fn bench(c: &mut Criterion) {
    let none = Hooks::default();
    let eight = non_matching();
    assert_eq!(seam(&eight, "fs.read"), 0);
    assert!(seam(&eight, "shell.run") > 0);
    let mut g = c.benchmark_group("seam");
    g.bench_function("no_hooks", |b| {
        b.iter(|| seam(std::hint::black_box(&none), "fs.read"))
    });
    g.bench_function("eight_non_matching", |b| {
        b.iter(|| seam(std::hint::black_box(&eight), "fs.read"))
    });
    g.finish();

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello\n".repeat(50)).unwrap();
    let ws = Arc::new(Workspace::open(dir.path()).unwrap());
    let state = tempfile::tempdir().unwrap();
    let none = Arc::new(Hooks::default());
    let eight = Arc::new(non_matching());
    let mut g = c.benchmark_group("tool_call");
    g.sample_size(30);
    g.bench_function("turn_of_20_reads_no_hooks", |b| {
        b.to_async(&runtime)
            .iter(|| one_turn(none.clone(), &ws, state.path()))
    });
    g.bench_function("turn_of_20_reads_eight_non_matching", |b| {
        b.to_async(&runtime)
            .iter(|| one_turn(eight.clone(), &ws, state.path()))
    });
    g.finish();

    let path = std::env::var("PATH").unwrap_or_default();
    let mut noop = Hooks::new(vec![("PATH".into(), path)], dir.path().to_path_buf());
    noop.push(HookEvent::PreToolUse, &entry(".*", None, "true"))
        .unwrap();
    let hook = noop.of(HookEvent::PreToolUse)[0].clone();
    let input = json!({
        "session_id": "bench", "cwd": "/tmp", "hook_event_name": "PreToolUse",
        "tool_name": "fs.read", "tool_provider_name": "fs_read", "tool_use_id": "c1",
        "tool_input": {"path": "a.txt"},
    });
    let body = serde_json::to_vec(&input).unwrap();
    let mut g = c.benchmark_group("spawn");
    g.sample_size(50);
    g.bench_function("hook_noop", |b| {
        b.to_async(&runtime).iter(|| noop.run(&hook, &input))
    });
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
