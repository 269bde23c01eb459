//! The exact JSON of what crosses to the model, pinned byte for byte: every native tool's result
//! (ok, and its typical refusals) as the agent hands it to the model. The result JSON is a
//! contract (DESIGN.md), so a refactor of how results are built must leave this snapshot as it
//! is; later work may add fields and update it (additions only). The `pablo run --json` lines are
//! pinned in `tests/pin.rs`, through the binary.
//!
//! What differs from run to run (temp paths, ports, durations, start times, session ids) is
//! replaced by a placeholder in the text of the line, so key order and every other byte stay
//! pinned.

use std::sync::Arc;
use std::time::Duration;

use pablo::core::ApprovalMode;
use pablo::model::scripted::ScriptedModel;
use pablo::policy::PolicyEngine;
use pablo::protocol::{ApprovalAnswer, Event, Op};
use pablo::workspace::Workspace;
use pablo_agent::{AgentSetup, Limits, spawn};
use pablo_tools::fetch_rules::Reach;
use pablo_tools::memory_propose::{MemoryPropose, MemoryStore};
use pablo_tools::web_fetch::{FetchSettings, WebFetch};
use pablo_tools::{Catalog, CatalogLimits, Host};
use serde_json::{Value, json};

use crate::support::http::{ScriptedResponse, ScriptedServer};
use crate::support::pinning::normalize;

fn snapshot(name: &str, text: &str) {
    insta::with_settings!({snapshot_path => "snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!(name, text);
    });
}

const HUNKS_BEFORE: &str =
    "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17\n18\n19\n20\n";
const HUNKS_AFTER: &str =
    "1\nTWO\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17\n18\nNINETEEN\n20\n";

/// The person's answer to one approval request: the first hunk of `hunks.txt`, a rejection with
/// a note for `reject-me.txt`, no second run for `refused-rerun`, once for everything else.
fn answer(arguments: &Value, verdict: &pablo::protocol::Verdict) -> ApprovalAnswer {
    let text = arguments.to_string();
    let retry = verdict.rule_ids == [pablo::protocol::SANDBOX_RETRY_RULE];
    if text.contains("hunks.txt") {
        ApprovalAnswer::AllowHunks {
            hunks: vec![0],
            notes: vec![],
        }
    } else if text.contains("reject-me") || (retry && text.contains("refused-rerun")) {
        ApprovalAnswer::Reject {
            note: Some("not now".into()),
        }
    } else {
        ApprovalAnswer::AllowOnce
    }
}

/// One scripted model call per tool call, in order, each step leading to the next.
fn script(calls: &[(&str, Value)]) -> String {
    let mut steps = serde_json::Map::new();
    for (i, (tool, arguments)) in calls.iter().enumerate() {
        let mut step = json!({"calls": [{"tool": tool, "arguments": arguments}]});
        if i + 1 < calls.len() {
            step["next"] = json!(format!("s{}", i + 1));
        } else {
            step["next"] = json!("end");
        }
        steps.insert(format!("s{i}"), step);
    }
    steps.insert("end".into(), json!({"text": "done"}));
    json!({"model": "scripted", "start": "s0", "after_end": "end", "steps": steps}).to_string()
}

/// Every native tool, called through the real agent loop (schema, preview, policy, the person's
/// answer, commit), ok and refused.
fn calls(fetch_url: &str, port: u16) -> Vec<(&'static str, Value)> {
    let mut calls = file_calls();
    calls.extend(other_calls(fetch_url, port));
    calls
}

/// The filesystem tools' calls, first in the session.
fn file_calls() -> Vec<(&'static str, Value)> {
    vec![
        ("fs_read", json!({"path": "a.txt"})),
        (
            "fs_write",
            json!({"path": "a.txt", "text": "one\nTWO\nthree\n",
                   "expected_revision": "{{result.0/revision}}"}),
        ),
        (
            "fs_edit",
            json!({"path": "a.txt", "old_text": "TWO", "new_text": "two",
                   "expected_revision": "{{result.0/revision}}"}),
        ),
        (
            "fs_write",
            json!({"path": "dir/new.txt", "text": "new\n", "expected_revision": null}),
        ),
        (
            "fs_write",
            json!({"path": "a.txt", "text": "x", "expected_revision": null}),
        ),
        (
            "fs_write",
            json!({"path": "a.txt", "text": "x", "expected_revision": "0000"}),
        ),
        (
            "fs_edit",
            json!({"path": "a.txt", "old_text": "absent", "new_text": "y",
                   "expected_revision": "0000"}),
        ),
        ("fs_read", json!({"path": "a.txt"})),
        (
            "fs_edit",
            json!({"path": "a.txt", "old_text": "absent", "new_text": "y",
                   "expected_revision": "{{result.0/revision}}"}),
        ),
        (
            "fs_read",
            json!({"path": "long.txt", "offset": 2, "limit": 5}),
        ),
        ("fs_read", json!({"path": "missing.txt"})),
        ("fs_read", json!({"path": "../outside.txt"})),
        ("fs_list", json!({})),
        ("fs_list", json!({"path": "dir", "depth": 2})),
        ("fs_list", json!({"path": "missing"})),
        ("fs_search", json!({"query": "two"})),
        ("fs_search", json!({"query": "nowhere to be found"})),
        ("fs_search", json!({"query": 7})),
    ]
}

/// Commands, sessions, the plan, csv, artifacts, fetches and memory, then the reruns.
fn other_calls(fetch_url: &str, port: u16) -> Vec<(&'static str, Value)> {
    // Relative to the workspace, so that the output is the same length wherever the test runs.
    let touch = |name: &str| json!({"command": format!("touch ../outside/{name}")});
    vec![
        ("shell_run", json!({"command": "printf 'hi\\n'"})),
        ("shell_run", json!({"command": "printf 'bad\\n'; exit 3"})),
        (
            "shell_run",
            json!({"command": "sleep 5", "timeout_ms": 200}),
        ),
        (
            "shell_run",
            json!({"command": "printf x", "max_output_bytes": 0}),
        ),
        ("shell_run", json!({"command": "true", "cwd": "missing"})),
        (
            "shell_run",
            json!({"command": "printf 'one\\ntwo\\n'", "background": true}),
        ),
        (
            "shell_session",
            json!({"action": "wait", "session_id": "s1", "timeout_ms": 20000}),
        ),
        (
            "shell_session",
            json!({"action": "poll", "session_id": "s1"}),
        ),
        (
            "shell_session",
            json!({"action": "read", "session_id": "s1", "offset": 0}),
        ),
        (
            "shell_session",
            json!({"action": "write", "session_id": "s1", "data": "x"}),
        ),
        (
            "shell_session",
            json!({"action": "send_keys", "session_id": "s1", "keys": ["enter"]}),
        ),
        (
            "shell_run",
            json!({"command": "sleep 30", "background": true}),
        ),
        (
            "shell_session",
            json!({"action": "wait", "session_id": "s2", "timeout_ms": 100}),
        ),
        (
            "shell_session",
            json!({"action": "write", "session_id": "s2", "data": "x\n"}),
        ),
        ("shell_session", json!({"action": "list"})),
        (
            "shell_session",
            json!({"action": "kill", "session_id": "s2"}),
        ),
        (
            "shell_session",
            json!({"action": "poll", "session_id": "s9"}),
        ),
        ("shell_session", json!({"action": "poll"})),
        (
            "update_plan",
            json!({"explanation": "start", "items": [
                {"content": "read", "status": "completed"},
                {"content": "fix", "status": "in_progress"},
                {"content": "test", "status": "pending"}]}),
        ),
        (
            "update_plan",
            json!({"items": [{"content": "a", "status": "in_progress"},
                             {"content": "b", "status": "in_progress"}]}),
        ),
        ("analyze_csv", json!({"path": "prices.csv"})),
        ("analyze_csv", json!({"path": "empty.csv"})),
        ("analyze_csv", json!({"path": "a.txt", "delimiter": ";"})),
        (
            "write_artifact",
            json!({"name": "summary.md", "content": "# Summary\n"}),
        ),
        (
            "write_artifact",
            json!({"name": "../escape.md", "content": "x"}),
        ),
        (
            "write_artifact",
            json!({"name": "data.json", "content": "{"}),
        ),
        ("fetch_url", json!({"url": format!("{fetch_url}/page")})),
        ("fetch_url", json!({"url": format!("{fetch_url}/data")})),
        ("fetch_url", json!({"url": "ftp://example.org/x"})),
        (
            "fetch_url",
            json!({"url": format!("http://10.0.0.1:{port}/")}),
        ),
        (
            "propose_memory",
            json!({"text": "The person prefers tabs."}),
        ),
        ("propose_memory", json!({"text": "   "})),
        // Answered by the person: two hunks of which one is accepted, a rejection with a note,
        // and commands the sandbox stopped, run again without it once and refused once.
        ("fs_read", json!({"path": "hunks.txt"})),
        (
            "fs_write",
            json!({"path": "hunks.txt", "text": HUNKS_AFTER,
                   "expected_revision": "{{result.0/revision}}"}),
        ),
        (
            "fs_write",
            json!({"path": "reject-me.txt", "text": "x\n", "expected_revision": null}),
        ),
        ("shell_run", touch("rerun")),
        ("shell_run", touch("refused-rerun")),
        // Over the result limit of this session (4096 bytes): a read, and a command that ran.
        ("fs_read", json!({"path": "big.txt"})),
        (
            "shell_run",
            json!({"command": "cat big.txt big.txt", "max_output_bytes": 9000}),
        ),
        (
            "shell_run",
            json!({"command": "cat big.txt big.txt", "max_output_bytes": 4500}),
        ),
    ]
}

#[tokio::test]
async fn every_tool_result_reaches_the_model_exactly_as_pinned() {
    let server = ScriptedServer::start().await;
    server.push(
        ScriptedResponse::new(200)
            .header("content-type", "text/html; charset=utf-8")
            .body(
                "<html><head><title>Docs</title></head><body><main><h1>Install</h1>\
                 <p>Run the <b>installer</b>.</p></main></body></html>",
            ),
    );
    server.push(ScriptedResponse::json(200, &json!({"a": [1, 2]})));
    // Not under /tmp (even in a clone under /tmp): commands may write there, and one command
    // here must be stopped by the sandbox for writing outside the workspace.
    let tmp = tempfile::tempdir_in(super::sandbox::outside_base()).unwrap();
    let ws_dir = tmp.path().join("ws");
    let state = tmp.path().join("state");
    std::fs::create_dir_all(&ws_dir).unwrap();
    std::fs::create_dir_all(&state).unwrap();
    let ws_dir = ws_dir.canonicalize().unwrap();
    let state = state.canonicalize().unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let outside = outside.canonicalize().unwrap();
    for (name, text) in [
        ("a.txt", "one\ntwo\nthree\n"),
        ("long.txt", "0123456789abcdef\n"),
        (
            "prices.csv",
            "item,price,ok\nbolt,10,true\nnut,20,false\nscrew,30,true\n",
        ),
        ("empty.csv", ""),
        ("dir/inner.txt", "inside\n"),
        ("hunks.txt", HUNKS_BEFORE),
        ("big.txt", &format!("{}\n", "a".repeat(4999))),
    ] {
        let path = ws_dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let workspace = Arc::new(Workspace::open(&ws_dir).unwrap());
    let options = pablo::config::ShellOptions::default();
    let mut catalog = Catalog::new();
    catalog
        .register(Arc::new(pablo_tools::plan::PlanUpdate))
        .unwrap();
    pablo_tools::register_filesystem(&mut catalog, &workspace, true).unwrap();
    pablo_tools::register_shell(&mut catalog, &options, Default::default()).unwrap();
    pablo_tools::register_catalog_tools(
        &mut catalog,
        Some(&workspace),
        &CatalogLimits {
            max_network_requests: 0,
            max_artifact_bytes: 1 << 20,
        },
        FetchSettings::default(),
        false,
    )
    .unwrap();
    catalog
        .register(Arc::new(WebFetch::with_reach(
            FetchSettings {
                allowed_ports: vec![server.addr().port()],
                ..FetchSettings::default()
            },
            Reach::PublicAndTestLoopback,
        )))
        .unwrap();
    catalog.register(Arc::new(MemoryPropose)).unwrap();
    // Schemas compile at a tool's first call; every one of them must compile.
    catalog.compile_schemas().unwrap();
    let mut host = Host::new(workspace, state.clone(), &options);
    host.memory = Some(Arc::new(MemoryStore::new(
        &state,
        tmp.path().join("memory.md"),
    )));
    let port = server.addr().port();
    let calls = calls(&server.url(), port);
    let model = ScriptedModel::from_json(&script(&calls)).unwrap();
    let mut handle = spawn(AgentSetup {
        mode: Default::default(),
        model_switcher: None,
        isolator: None,
        hooks: pablo_hooks::Hooks::none(),
        session_id: "pin".into(),
        model: Arc::new(model),
        catalog,
        policy: Arc::new(PolicyEngine::new(Default::default())),
        host: Arc::new(host),
        limits: Limits {
            max_tool_result_bytes: 4096,
            ..Limits::default()
        },
        approvals: ApprovalMode::Interactive,
        system_prompt: "pin".into(),
        history: Vec::new(),
        recorder: None,
        checkpoints: None,
    });
    handle.ops.send(Op::user_turn("call every tool")).unwrap();
    let mut lines = Vec::new();
    let mut arguments = std::collections::HashMap::new();
    let collect = async {
        while let Some(ev) = handle.events.recv().await {
            match ev {
                Event::ToolCallBegin {
                    call_id,
                    arguments: a,
                    ..
                } => {
                    arguments.insert(call_id, a);
                }
                Event::ApprovalRequest {
                    call_id, verdict, ..
                } => {
                    let answer = answer(&arguments[&call_id], &verdict);
                    handle.ops.send(Op::Approval { call_id, answer }).unwrap();
                }
                Event::ToolCallEnd { tool, result, .. } => {
                    lines.push(format!(
                        "{tool} {}",
                        serde_json::to_string(&result).unwrap()
                    ));
                }
                Event::TurnCompleted { .. } => break,
                _ => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(120), collect)
        .await
        .expect("the scripted turn ended within 120 s");
    handle.ops.send(Op::Shutdown).unwrap();
    let _ = tokio::time::timeout(Duration::from_secs(10), handle.task).await;
    assert_eq!(lines.len(), calls.len(), "{lines:#?}");
    assert!(
        outside.join("rerun").exists() && !outside.join("refused-rerun").exists(),
        "{lines:#?}"
    );
    let text = normalize(
        &lines.join("\n"),
        &[
            (&ws_dir, "[WS]"),
            (&state, "[STATE]"),
            (tmp.path(), "[TMP]"),
        ],
    );
    snapshot("tool_results", &text);
}
