//! Integration tests: the rest of the catalog — web.fetch, csv.analyze, artifact.write and
//! memory.propose — through the real binary, against a real HTTP server on 127.0.0.1. (The tools
//! called the way the agent calls them, on a fixture, are tested in the crate:
//! `src/tests/catalog*.rs`.)

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
