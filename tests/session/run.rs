//! `pablo run` against a scripted OpenAI-compatible server on 127.0.0.1: journals written by the
//! real binary, killed with SIGKILL at random points, and resumed with `pablo run --resume`.

use std::process::Stdio;

use pablo::model::ModelRequest;
use pablo::model::openai::request_body;
use tokio::io::{AsyncBufReadExt, BufReader};

use super::*;
use crate::support::bin::{Sandbox, json_lines};
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

const PLAN_FRAGMENTS: [&str; 3] = [
    r#"{"items":[{"content":"read","status":"completed"},"#,
    r#"{"content":"fix","status":"in_progress"},"#,
    r#"{"content":"test","status":"pending"}]}"#,
];

/// A turn with two tool calls and a closing answer, streamed slowly enough for kills to land in
/// every phase.
fn push_turn(server: &ScriptedServer, pace: Duration) {
    server.push(
        ScriptedResponse::sse(openai::tool_call_answer(
            "call_plan",
            "update_plan",
            &PLAN_FRAGMENTS,
        ))
        .pace(pace),
    );
    // A command that takes a while, so kills also land while a tool runs.
    server.push(
        ScriptedResponse::sse(openai::tool_call_answer(
            "call_sleep",
            "shell_run",
            &[r#"{"command":"#, r#""sleep 0.1"}"#],
        ))
        .pace(pace),
    );
    server
        .push(ScriptedResponse::sse(openai::text_answer("all done here, see the plan")).pace(pace));
}

/// `pablo run --json --auto-approve` (the scripted turn runs a shell command) against the server.
fn run_cmd(sb: &Sandbox, base_url: &str, extra: &[&str], task: &str) -> tokio::process::Command {
    let mut cmd = sb.command();
    cmd.env("OPENAI_API_KEY", "sk-test-key")
        .args([
            "--provider",
            "openai",
            "--model",
            "test-model",
            "--base-url",
        ])
        .arg(base_url)
        .args(["run", "--json", "--auto-approve"])
        .args(extra)
        .arg(task);
    cmd
}

fn resume_cmd(sb: &Sandbox, base_url: &str, id: &str, task: &str) -> tokio::process::Command {
    run_cmd(sb, base_url, &["--resume", id], task)
}

/// The `messages` the OpenAI client sends for `history` followed by a user turn.
fn expected_messages(system: &str, history: &[Message], task: &str) -> serde_json::Value {
    let mut messages = history.to_vec();
    messages.push(Message::user(task));
    let body = request_body(
        "test-model",
        &ModelRequest {
            system: system.to_string(),
            messages,
            tools: vec![],
            max_output_tokens: 0,
            ..ModelRequest::default()
        },
        pablo::model::openai::Dialect::Compatible,
    );
    body["messages"].clone()
}

#[tokio::test]
async fn request_after_resume_equals_the_conversation_before_the_restart() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    push_turn(&server, Duration::ZERO);
    let out = run_cmd(&sb, &server.base_url(), &[], "first task")
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&out.stdout);
    let id = lines[0]["session_id"].as_str().unwrap().to_string();
    let before = server.requests();
    assert_eq!(before.len(), 3);
    let last = before[2].json();

    let server2 = ScriptedServer::start().await;
    server2.push(ScriptedResponse::sse(openai::text_answer("second answer")));
    let out = resume_cmd(&sb, &server2.base_url(), &id[..20], "second task")
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&out.stdout);
    assert_eq!(lines[0]["session_id"], id.as_str());
    // The restored checklist is shown right after the session starts.
    assert_eq!(lines[1]["type"], "plan");
    assert_eq!(lines[1]["items"].as_array().unwrap().len(), 3);

    let after = server2.requests()[0].json();
    let old = last["messages"].as_array().unwrap();
    let new = after["messages"].as_array().unwrap();
    assert_eq!(new.len(), old.len() + 2);
    assert_eq!(new[..old.len()], old[..]);
    assert_eq!(
        new[old.len()],
        serde_json::json!({"role": "assistant", "content": "all done here, see the plan"})
    );
    assert_eq!(
        new[old.len() + 1],
        serde_json::json!({"role": "user", "content": "second task"})
    );
    assert_eq!(after["tools"], last["tools"]);
    assert_eq!(after["model"], last["model"]);
}

#[tokio::test]
async fn a_provider_key_in_the_environment_never_reaches_the_journal() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    push_turn(&server, Duration::ZERO);
    let canary = "sk-canary-7f3a9c21e8b44d0b";
    let out = sb
        .run_json(&server.base_url(), "first task")
        .env("OPENAI_API_KEY", canary)
        .env("PABLO_EXTRA_SECRET", canary)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The key did go to the server, so it was in play.
    assert!(
        server.requests()[0]
            .header("authorization")
            .is_some_and(|h| h.contains(canary))
    );
    let mut files = 0;
    for dir in ["data", "state", "config"] {
        for entry in crate::support::bin::files_below(&sb.root().join(dir)) {
            files += 1;
            let bytes = std::fs::read(&entry).unwrap();
            assert!(
                !bytes.windows(canary.len()).any(|w| w == canary.as_bytes()),
                "{} holds the key",
                entry.display()
            );
        }
    }
    assert!(files >= 2, "no journal was written");
}

/// SIGKILL at random points of a scripted multi-call session, many times: every journal loads,
/// and `pablo run --resume` sends exactly the conversation rebuilt from the complete events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pablo_run_killed_at_random_points_leaves_journals_that_resume_exactly() {
    let sb = Sandbox::new();
    let store = Store::at(sb.data_dir().join("sessions"));
    let mut rng = fastrand::Rng::with_seed(0x5e55);
    let mut interrupted_seen = 0;
    let mut lengths = Vec::new();
    for round in 0..20 {
        let server = ScriptedServer::start().await;
        push_turn(&server, Duration::from_millis(4));
        let mut child = run_cmd(&sb, &server.base_url(), &[], "first task")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Wait until the session exists, then let it run for a random while.
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let started: serde_json::Value = serde_json::from_str(&first).unwrap();
        let id = started["session_id"].as_str().unwrap().to_string();
        tokio::time::sleep(Duration::from_millis(rng.u64(0..150))).await;
        child.start_kill().unwrap();
        child.wait().await.unwrap();

        let state = store.load(&id).unwrap();
        assert!(
            state
                .warnings
                .iter()
                .all(|w| w.kind == WarningKind::TornTail),
            "round {round}: {:?}",
            state.warnings
        );
        assert_paired(&state.history);
        interrupted_seen += state.interrupted.len();
        lengths.push(state.history.len());

        let server2 = ScriptedServer::start().await;
        server2.push(ScriptedResponse::sse(openai::text_answer("resumed fine")));
        let out = resume_cmd(&sb, &server2.base_url(), &id, "continue")
            .output()
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "round {round}: {}\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let sent = server2.requests()[0].json();
        let system = sent["messages"][0]["content"].as_str().unwrap().to_string();
        assert_eq!(
            sent["messages"],
            expected_messages(&system, &state.history, "continue"),
            "round {round}"
        );
        // And the journal, continued, loads whole.
        let later = store.load(&id).unwrap();
        assert!(
            later.warnings.is_empty(),
            "round {round}: {:?}",
            later.warnings
        );
        assert_paired(&later.history);
    }
    // Not an assertion on timing: a report of where the kills landed.
    eprintln!(
        "history lengths at the kill: {lengths:?}; interrupted calls answered: {interrupted_seen}"
    );
}
