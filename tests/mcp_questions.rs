//! Integration tests: an MCP server's questions (`elicitation/create`, docs/mcp.md *Questions
//! from a server*) where nobody can answer them: `pablo run` declines, says so, and the server
//! goes on with what it has. The TUI's form is tested in `tui/questions.rs`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::bin::Sandbox;
use crate::support::http::ScriptedServer;
use crate::support::mcp::asking_server_table;
use crate::support::run::{call, run_within, say};

#[tokio::test]
async fn pablo_run_declines_a_servers_question_and_says_so() {
    let sandbox = Sandbox::new();
    let dir = sandbox.root().join("hotel");
    std::fs::create_dir_all(&dir).unwrap();
    sandbox.user_config(&asking_server_table(&dir));
    let model = ScriptedServer::start().await;
    model.push(call("c1", "mcp__hotel__book", &json!({"hotel": "Lumière"})));
    model.push(say("Could not book without details."));
    let r = run_within(
        sandbox.run_json(&model.base_url(), "book me a room"),
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(r.code, Some(0), "{}\n{:?}", r.stderr, r.lines);

    // pablo said it can ask (forms), so the server asked; the answer it got was `decline`.
    let caps: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("capabilities.json")).unwrap())
            .unwrap();
    assert!(caps["elicitation"].is_object(), "{caps}");
    let answer: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("answer.json")).unwrap()).unwrap();
    assert_eq!(answer["result"]["action"], "decline", "{answer}");
    assert!(answer["result"].get("content").is_none(), "{answer}");

    // The run says why, and the call's result is what the server made of it.
    let warnings: Vec<&str> = r
        .of_type("warning")
        .iter()
        .filter_map(|w| w["message"].as_str())
        .collect();
    assert!(
        warnings.iter().any(|w| w.contains(
            "hotel asked: \"Which city, and for how many nights?\"; only the TUI shows a \
             server's questions, so it was declined"
        )),
        "{warnings:?}"
    );
    let results = r.results();
    assert_eq!(results[0]["ok"], true, "{}", results[0]);
    assert_eq!(results[0]["data"]["text"], "booking: decline null");
}
