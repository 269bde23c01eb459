//! How many model calls a turn made (issue 47, item 3), through the real binary: the
//! `turn_completed` line's `model_calls` counts every request the turn sent to the model — its
//! own calls, its subagents', and a request sent again after a 5xx or a cut stream — and
//! `pablo stats` sums them per turn from the journals.

use serde_json::{Value, json};

use crate::support::bin::Sandbox;
use crate::support::http::{RecordedRequest, ScriptedResponse, ScriptedServer, openai};
use crate::support::run::{call, run_json, run_within, say};

/// The `model_calls` of the run's one `turn_completed` line.
fn model_calls(lines: &[Value]) -> Value {
    let done: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "turn_completed")
        .collect();
    assert_eq!(done.len(), 1, "{lines:#?}");
    done[0]["model_calls"].clone()
}

#[tokio::test]
async fn a_turn_that_calls_a_tool_then_answers_made_two_model_calls() {
    let server = ScriptedServer::start().await;
    server.push(call("c1", "fs_read", &json!({"path": "a.txt"})));
    server.push(say("It says one."));
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("a.txt"), "one\n").unwrap();
    let run = run_json(&sandbox, &server, "what does a.txt say?", &[])
        .await
        .succeeded();
    assert_eq!(server.requests().len(), 2);
    assert_eq!(model_calls(&run.lines), json!(2));
}

const SUBAGENT_MARK: &str = "# You are a subagent";

fn is_subagent(r: &RecordedRequest) -> bool {
    r.json()["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.contains(SUBAGENT_MARK))
}

fn has_tool_result(r: &RecordedRequest) -> bool {
    r.json()["messages"]
        .as_array()
        .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"))
}

/// A model that delegates: the parent asks for a task, then answers (2 calls); the subagent
/// lists the workspace, then answers (2 calls). Every answer reports its usage (10 input tokens).
async fn delegating_server() -> ScriptedServer {
    let server = ScriptedServer::start().await;
    server.respond_with(|r, _| match (is_subagent(r), has_tool_result(r)) {
        (true, false) => ScriptedResponse::sse(openai::tool_call_answer("s1", "fs_list", &["{}"])),
        (true, true) => ScriptedResponse::sse(openai::text_answer("There is a.txt.")),
        (false, false) => ScriptedResponse::sse(openai::tool_call_answer(
            "task",
            "agent_task",
            &[&json!({"description": "look around", "prompt": "What is here?"}).to_string()],
        )),
        (false, true) => ScriptedResponse::sse(openai::text_answer("Done.")),
    });
    server
}

#[tokio::test]
async fn a_turn_with_a_subagent_counts_the_subagents_model_calls_too() {
    let server = delegating_server().await;
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("a.txt"), "one\n").unwrap();
    let run = run_json(&sandbox, &server, "delegate a look", &[])
        .await
        .succeeded();
    let requests = server.requests();
    assert_eq!(requests.iter().filter(|r| is_subagent(r)).count(), 2);
    assert_eq!(requests.len(), 4);
    assert_eq!(model_calls(&run.lines), json!(4));
}

#[tokio::test]
async fn a_request_retried_after_a_503_and_an_answer_asked_again_after_a_cut_stream_both_count() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::error(503, "overloaded", "try later").header("retry-after", "0"));
    server.push(
        ScriptedResponse::sse(openai::Stream::new().text(&["Hel", "lo"]).events()).cut_after(2),
    );
    server.push(say("Hello."));
    let sandbox = Sandbox::new();
    let run = run_json(&sandbox, &server, "hi", &[]).await.succeeded();
    assert_eq!(run.of_type("retry").len(), 1, "{:#?}", run.lines);
    assert_eq!(run.of_type("answer_retried").len(), 1, "{:#?}", run.lines);
    assert_eq!(server.requests().len(), 3);
    assert_eq!(model_calls(&run.lines), json!(3));
}

#[tokio::test]
async fn pablo_stats_says_the_model_calls_per_turn_of_the_journals() {
    let server = ScriptedServer::start().await;
    server.push(call("c1", "fs_list", &json!({})));
    server.push(say("Listed."));
    server.push(say("Hi."));
    let sandbox = Sandbox::new();
    // Plain `pablo run`: the provider comes from the config, no flag.
    sandbox.user_config(&format!(
        "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n",
        server.base_url()
    ));
    for task in ["list the files", "say hi"] {
        let mut cmd = sandbox.command();
        cmd.env("OPENAI_API_KEY", "sk-test-key")
            .args(["run", "--json", task]);
        run_within(cmd, std::time::Duration::from_secs(60))
            .await
            .succeeded();
    }
    let mut cmd = sandbox.command();
    cmd.args(["stats", "--json"]);
    let out = cmd.output().await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        stats["turn_model_calls"],
        json!({"turns": 2, "calls": 3, "most": 2}),
        "{stats}"
    );
    let mut cmd = sandbox.command();
    cmd.arg("stats");
    let out = cmd.output().await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("model calls per turn 1.5 on average, 2 at most (2 turns)"),
        "{text}"
    );
}

#[tokio::test]
async fn pablo_stats_counts_a_subagents_model_calls_one_by_one_as_the_turn_does() {
    let server = delegating_server().await;
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("a.txt"), "one\n").unwrap();
    sandbox.user_config(&format!(
        "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n",
        server.base_url()
    ));
    let mut cmd = sandbox.command();
    cmd.env("OPENAI_API_KEY", "sk-test-key")
        .args(["run", "--json", "delegate a look"]);
    run_within(cmd, std::time::Duration::from_secs(60))
        .await
        .succeeded();
    assert_eq!(server.requests().len(), 4);
    let mut cmd = sandbox.command();
    cmd.args(["stats", "--json"]);
    let out = cmd.output().await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        stats["turn_model_calls"],
        json!({"turns": 1, "calls": 4, "most": 4}),
        "{stats}"
    );
    // The model's calls agree with the turn's: the subagent's two, not the one `usage` line its
    // parent adds its spend with. Each answer reported 10 input tokens.
    let models = stats["models"].as_array().unwrap();
    assert_eq!(models.len(), 1, "{stats}");
    assert_eq!(models[0]["calls"], json!(4), "{stats}");
    assert_eq!(models[0]["input_tokens"], json!(40), "{stats}");
}
