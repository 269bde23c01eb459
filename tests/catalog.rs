//! Integration tests: the rest of the catalog — web.fetch, csv.analyze, artifact.write and
//! memory.propose — through the real binary, against a real HTTP server on 127.0.0.1. (The tools
//! called the way the agent calls them, on a fixture, are tested in the crate:
//! `tests/engine/catalog*.rs`.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use serde_json::Value;

mod csv;
mod fetch;
mod modes;

/// A user config that points `pablo` (with no flags) at a scripted OpenAI-compatible server.
fn provider_config(base_url: &str, extra: &str) -> String {
    format!("provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{base_url}\"\n{extra}")
}

/// Plain `pablo run TASK` in the sandbox (no flags; the provider in the user config, the key in
/// the environment); its stdout, once it has exited successfully.
async fn run_plain(sb: &crate::support::bin::Sandbox, task: &str) -> String {
    let out = sb
        .command()
        .env("OPENAI_API_KEY", "sk-test-key")
        .args(["run", task])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The tool message the model received for `call_id`, parsed, from a recorded request to the
/// OpenAI-compatible server (`{"role":"tool","tool_call_id":…,"content":"…"}`).
fn tool_result_seen_by_model(req: &crate::support::http::RecordedRequest, call_id: &str) -> Value {
    let body = req.json();
    let msg = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .unwrap_or_else(|| panic!("no tool message for {call_id} in {body}"));
    serde_json::from_str(msg["content"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn fs_list_shows_git_as_one_entry_and_spends_no_entry_on_its_internals() {
    use crate::support::run::{call, run_json, say};
    let server = crate::support::http::ScriptedServer::start().await;
    let sb = crate::support::bin::Sandbox::new();
    let ws = sb.workspace();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&ws)
        .status()
        .unwrap();
    assert!(git.success());
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/main.rs"), "fn main() {}\n").unwrap();
    server.push(call(
        "l1",
        "fs_list",
        &serde_json::json!({"path": ".", "depth": 3}),
    ));
    server.push(call("l2", "fs_list", &serde_json::json!({"path": ".git"})));
    server.push(say("listed"));
    let run = run_json(&sb, &server, "list the tree", &[])
        .await
        .succeeded();
    let results = run.results();
    let paths = |r: &Value| -> Vec<String> {
        r["data"]["entries"]
            .as_array()
            .unwrap_or_else(|| panic!("{r}"))
            .iter()
            .map(|e| e["path"].as_str().unwrap().to_string())
            .collect()
    };
    let tree = paths(results[0]);
    assert_eq!(tree, [".git", "src", "src/main.rs"], "{}", results[0]);
    // Asked for by name, git's internals are listed.
    let inside = paths(results[1]);
    assert!(inside.contains(&".git/HEAD".to_string()), "{inside:?}");
}
