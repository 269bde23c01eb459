//! A note per dropped hunk: in plain `pablo`, the reviewer drops a hunk of an edit, says why
//! with `e`, and the model reads which hunk did not land, where its lines are in the new text,
//! and the reason.

use serde_json::{Value, json};

use crate::support::bin::Sandbox;
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

fn write(id: &str, path: &str, text: &str, before: &str) -> ScriptedResponse {
    let args = json!({
        "path": path,
        "text": text,
        "expected_revision": crate::support::revision_of(before.as_bytes()),
    })
    .to_string();
    ScriptedResponse::sse(openai::tool_call_answer(id, "fs_write", &[&args]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_hunks_note_reaches_the_model_with_the_hunk_and_where_its_lines_are() {
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    super::configure_scripted(&sandbox, &server, "");
    let ws = sandbox.workspace();
    let super::TwoHunks {
        original,
        first_only,
        both,
    } = super::two_hunk_notes(&ws);
    server.push(write("w1", "notes.txt", &both, &original));
    server.push(ScriptedResponse::sse(openai::text_answer("Understood.")));
    let mut t = super::spawn_plain(&sandbox, &[]);
    t.send("spell out two numbers\r");
    t.wait_for("Apply this change to notes.txt?");
    t.send("]");
    t.send(" ");
    t.wait_for("Allow once (1 of 2 hunks)");
    t.wait_for("e why dropped");
    t.send("e");
    t.wait_for("Why is hunk 2 dropped?");
    t.send("nineteen stays a digit, the parser reads it\r");
    t.wait_for("hunk 2 dropped: nineteen stays a digit");
    t.send("y");
    t.wait_for("Understood.");
    t.wait_for("allowed 1 of 2 hunks");
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        first_only
    );
    let body = server.requests().last().unwrap().json();
    let result: Value = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .map(|c| serde_json::from_str(c).unwrap())
        .unwrap();
    let dropped = &result["data"]["hunks_not_applied"][0];
    assert_eq!(dropped["hunk"], 1, "{result}");
    assert_eq!(
        dropped["note"], "nineteen stays a digit, the parser reads it",
        "{result}"
    );
    // Line 19 is where it was: the hunk kept above it changed no line count.
    assert_eq!(
        dropped["lines_now"]["start"], dropped["old_start"],
        "{result}"
    );
    let note = result["data"]["note"].as_str().unwrap();
    assert!(
        note.contains("a hunk's note is the person's reason"),
        "{note}"
    );
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}

/// The tool result the model read in the last request.
fn last_tool_result(server: &ScriptedServer) -> Value {
    let body = server.requests().last().unwrap().json();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .map(|c| serde_json::from_str(c).unwrap())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hunk_keys_stop_at_the_last_hunk_and_e_drops_it_so_a_y_in_the_note_stays_in_the_note() {
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    super::configure_scripted(&sandbox, &server, "");
    let ws = sandbox.workspace();
    let super::TwoHunks {
        original,
        first_only,
        both,
    } = super::two_hunk_notes(&ws);
    server.push(write("w1", "notes.txt", &both, &original));
    server.push(ScriptedResponse::sse(openai::text_answer("Understood.")));
    let mut t = super::spawn_plain(&sandbox, &[]);
    t.send("spell out two numbers\r");
    t.wait_for("Apply this change to notes.txt?");
    // Past the last hunk is not the first one again.
    t.send("]");
    t.send("]");
    t.send("e");
    t.wait_for("Why is hunk 2 dropped?");
    // Every key of the note is the note's, `y` and `n` too.
    t.send("typo: y is nineteen, no\r");
    t.wait_for("hunk 2 dropped: typo: y is nineteen, no");
    t.wait_for("Allow once (1 of 2 hunks)");
    t.send("y");
    t.wait_for("Understood.");
    // The decision keeps the reason in the transcript.
    t.wait_for("allowed 1 of 2 hunks · hunk 2 dropped: typo: y is nineteen, no");
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        first_only
    );
    let result = last_tool_result(&server);
    let dropped = &result["data"]["hunks_not_applied"][0];
    assert_eq!(dropped["hunk"], 1, "{result}");
    assert_eq!(dropped["note"], "typo: y is nineteen, no", "{result}");
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejection_note_is_printed_once_in_the_tools_cell() {
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    super::configure_scripted(&sandbox, &server, "");
    let ws = sandbox.workspace();
    let super::TwoHunks { original, both, .. } = super::two_hunk_notes(&ws);
    server.push(write("w1", "notes.txt", &both, &original));
    server.push(ScriptedResponse::sse(openai::text_answer("Understood.")));
    let mut t = super::spawn_plain(&sandbox, &[]);
    t.send("spell out two numbers\r");
    t.wait_for("Apply this change to notes.txt?");
    t.send("n");
    t.send("digits read better\r");
    t.wait_for("Understood.");
    t.wait_for("Ask pablo to do something");
    let shown = t
        .all_lines()
        .iter()
        .filter(|l| l.contains("digits read better"))
        .count();
    assert_eq!(shown, 1, "{}", t.all_lines().join("\n"));
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        original
    );
    let result = last_tool_result(&server);
    assert_eq!(result["error"]["code"], "rejected", "{result}");
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_session_shows_its_answered_prompts_as_they_were_answered() {
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    super::configure_scripted(&sandbox, &server, "");
    let ws = sandbox.workspace();
    let super::TwoHunks { original, both, .. } = super::two_hunk_notes(&ws);
    server.push(write("w1", "notes.txt", &both, &original));
    server.push(ScriptedResponse::sse(openai::text_answer("Half done.")));
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "s1",
        "shell_run",
        &[&json!({"command": "touch made.txt"}).to_string()],
    )));
    server.push(ScriptedResponse::sse(openai::text_answer("Touched.")));
    let mut t = super::spawn_plain(&sandbox, &[]);
    t.send("spell out two numbers\r");
    t.wait_for("Apply this change to notes.txt?");
    t.send("]");
    t.send(" ");
    t.wait_for("Allow once (1 of 2 hunks)");
    t.send("y");
    t.wait_for("Half done.");
    t.send("make a file\r");
    t.wait_for("Run this command?");
    t.send("a");
    t.wait_for("Touched.");
    t.wait_for("Ask pablo to do something");
    let always = t
        .all_lines()
        .into_iter()
        .find(|l| l.contains("allowed always: "))
        .expect("the record names the rule");
    let always = always.trim_start_matches(|c: char| c != 'a').to_string();
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());

    let t = super::Terminal::spawn_with(
        &sandbox,
        &["resume", "--last"],
        &[("OPENAI_API_KEY", "sk-test-key")],
    );
    t.wait_for("Touched.");
    t.wait_for("allowed 1 of 2 hunks");
    t.wait_for(&always);
    assert!(!t.screen().contains("of 0 hunks"), "{}", t.screen());
}
