//! An approval prompt over a 20,000-line new file in plain `pablo`: it opens, pages down through
//! the diff (the range in its border follows), back up, and is answered; the file lands whole.
//! Not timed (issue 29's figure for this path is CPU per PageDown, in BENCHMARKS.md); it keeps
//! the path that lays out only the visible rows of a long diff covered end to end.

use serde_json::json;

use crate::support::bin::Sandbox;
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

const LINES: usize = 20_000;

fn long_file() -> String {
    (1..=LINES)
        .map(|i| format!("line {i:05} of the long file\n"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_20000_line_new_file_is_paged_through_in_its_approval_prompt_and_lands_when_allowed() {
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    super::configure_scripted(&sandbox, &server, "");
    let text = long_file();
    let args = json!({"path": "long.txt", "text": text, "expected_revision": null}).to_string();
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "w1",
        "fs_write",
        &[&args],
    )));
    server.push(ScriptedResponse::sse(openai::text_answer("Written.")));
    let mut t = super::spawn_plain(&sandbox, &[]);
    t.send("write the long file\r");
    t.wait_for("Create long.txt?");
    t.wait_for("[y] Allow once");
    t.wait_for("line 00001 of the long file");
    // The border says which rows show, of how many: a row per file line and a few of its own.
    t.wait_for("1-");
    t.wait_for(" of 200");
    for _ in 0..3 {
        t.send("\x1b[6~");
    }
    t.wait_for(" 31-");
    t.wait_for("line 00030 of the long file");
    for _ in 0..200 {
        t.send("\x1b[6~");
    }
    t.wait_for(" 2031-");
    t.wait_for("line 02030 of the long file");
    assert!(
        !t.screen().contains("line 00001 of the long file"),
        "{}",
        t.screen()
    );
    t.send("\x1b[5~");
    t.wait_for(" 2021-");
    t.wait_for("line 02020 of the long file");
    t.send("y");
    t.wait_for("Written.");
    t.wait_for("allowed once");
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace().join("long.txt")).unwrap(),
        text
    );
}
