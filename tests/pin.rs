//! The exact JSON of what crosses to scripts, pinned byte for byte: every `pablo run --json` line
//! of a scripted session. The `--json` lines are a contract (DESIGN.md), so a refactor must leave
//! this snapshot as it is; later work may add fields and update it (additions only). Every
//! tool's result as the model sees it is pinned in the crate (`src/tests/pin.rs`).
//!
//! What differs from run to run (temp paths, ports, durations, start times, session ids) is
//! replaced by a placeholder in the text of the line, so key order and every other byte stay
//! pinned.

use std::time::Duration;

use crate::support::bin::Sandbox;
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};
use crate::support::pinning::normalize;

fn snapshot(name: &str, text: &str) {
    insta::with_settings!({snapshot_path => "snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!(name, text);
    });
}

/// One scripted `pablo run --json` session through the real binary: tool calls that succeed,
/// are refused by policy, need an approval nobody can give, name no tool or carry broken JSON,
/// the checklist, the usage lines, the answer and the end of the turn.
#[tokio::test]
async fn every_run_json_line_of_a_scripted_session_is_pinned() {
    let server = ScriptedServer::start().await;
    let answers: Vec<Vec<String>> = vec![
        openai::tool_call_answer("c1", "fs_read", &[r#"{"path": "a.txt"}"#]),
        openai::tool_call_answer("c2", "fs_list", &[r#"{}"#]),
        openai::tool_call_answer("c3", "fs_search", &[r#"{"query": "two"}"#]),
        openai::tool_call_answer(
            "c4",
            "fs_write",
            &[r#"{"path": "b.txt", "text": "b\n", "expected_revision": null}"#],
        ),
        openai::tool_call_answer(
            "c5",
            "fs_edit",
            &[
                r#"{"path": "a.txt", "old_text": "two", "new_text": "2", "expected_revision": "bad"}"#,
            ],
        ),
        openai::tool_call_answer("c6", "shell_run", &[r#"{"command": "ls"}"#]),
        openai::tool_call_answer("c7", "shell_run", &[r#"{"command": "touch forbidden"}"#]),
        openai::tool_call_answer("c8", "shell_run", &[r#"{"command": "make"}"#]),
        openai::tool_call_answer(
            "c9",
            "update_plan",
            &[
                r#"{"items": [{"content": "read", "status": "completed"}, {"content": "fix", "status": "in_progress"}]}"#,
            ],
        ),
        openai::tool_call_answer("c10", "analyze_csv", &[r#"{"path": "p.csv"}"#]),
        openai::tool_call_answer(
            "c11",
            "write_artifact",
            &[r#"{"name": "notes.md", "content": "n\n"}"#],
        ),
        openai::tool_call_answer("c12", "fetch_url", &[r#"{"url": "http://127.0.0.1/"}"#]),
        openai::tool_call_answer("c13", "propose_memory", &[r#"{"text": "Use tabs."}"#]),
        openai::tool_call_answer("c14", "no_such_tool", &[r#"{}"#]),
        openai::tool_call_answer("c15", "fs_read", &[r#"{"path": "#]),
        openai::text_answer("All done."),
    ];
    for a in answers {
        server.push(ScriptedResponse::sse(a));
    }
    let sandbox = Sandbox::new();
    sandbox.user_config(
        "[memory]\nenabled = true\n\n[options.shell]\ncustom_deny_patterns = [\"forbidden\"]\n",
    );
    for (name, text) in [("a.txt", "one\ntwo\n"), ("p.csv", "x,y\n1,2\n3,4\n")] {
        std::fs::write(sandbox.workspace().join(name), text).unwrap();
    }
    let mut cmd = sandbox.run_json(&server.base_url(), "pin the lines");
    cmd.arg("--allow-write");
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("pablo run finished within 120 s")
        .expect("pablo runs");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let root = sandbox.root().canonicalize().unwrap();
    let text = normalize(
        stdout.trim_end(),
        &[(&root, "[ROOT]"), (sandbox.root(), "[ROOT]")],
    );
    snapshot("run_json_lines", &text);
}
