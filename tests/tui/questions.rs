//! An MCP server asks a question during a tool call (`elicitation/create`): plain `pablo` shows
//! it as a form under the transcript, the person fills it in, and the server gets the values.

use serde_json::{Value, json};

use crate::support::bin::Sandbox;
use crate::support::http::ScriptedServer;
use crate::support::mcp::asking_server_table;
use crate::support::run::{call, say};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_question_is_answered_in_a_form_and_the_server_gets_the_typed_values() {
    let server = ScriptedServer::start().await;
    server.push(call("c1", "mcp__hotel__book", &json!({"hotel": "Lumière"})));
    server.push(say("Booked in Lyon."));
    let sandbox = Sandbox::new();
    let dir = sandbox.root().join("hotel");
    std::fs::create_dir_all(&dir).unwrap();
    super::configure_scripted(&sandbox, &server, &asking_server_table(&dir));
    let mut t = super::spawn_plain(&sandbox, &[]);
    // The TUI does not hold the first prompt for servers: wait until this one is ready.
    t.wait_for("mcp hotel: ready, 1 tool");
    t.send("book me a room\r");
    t.wait_for("The MCP server hotel asks");
    t.wait_for("Which city, and for how many nights?");
    // Enter with the required city empty: the form says so and stays.
    t.send("\r");
    t.wait_for("City is required");
    t.send("Lyon");
    t.send("\t");
    t.send("3");
    t.send("\r");
    t.wait_for("mcp hotel: question answered (2 fields)");
    t.wait_for("Booked in Lyon.");
    let answer: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("answer.json")).unwrap()).unwrap();
    assert_eq!(
        answer["result"],
        json!({"action": "accept", "content": {"city": "Lyon", "nights": 3}}),
        "{answer}"
    );
    // What the model read is the server's result for those values.
    let tool_message = server.requests().last().unwrap().json()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == "c1")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default();
    assert!(
        tool_message.contains(r#"booking: accept {\"city\": \"Lyon\", \"nights\": 3}"#),
        "{tool_message}"
    );
    t.wait_for("Ask pablo to do something");
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}
