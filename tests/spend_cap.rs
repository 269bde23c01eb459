//! The spend cap (`--max-budget-usd`, `[limits] max_budget_usd`) through the binary: a scripted
//! OpenAI-compatible server reports 200,000 input tokens a call, and the model's price is $1 a
//! million, so every call costs $0.20.

use std::time::Duration;

use serde_json::json;

use crate::support::bin::{Sandbox, files_below};
use crate::support::http::{RecordedRequest, ScriptedResponse, ScriptedServer, openai};
use crate::support::run::{Run, run_json, run_within};

const PRICED: &str = "[model.prices]\ninput = 1.0\noutput = 1.0\n";
const TOKENS_PER_CALL: u64 = 200_000;

async fn run(sandbox: &Sandbox, server: &ScriptedServer, extra: &[&str]) -> Run {
    run_json(sandbox, server, "keep planning", extra).await
}

/// One answer asking for one more `update_plan`, costing $0.20.
fn priced_tool_call(id: &str, tool: &str, args: &str) -> ScriptedResponse {
    ScriptedResponse::sse(
        openai::Stream::new()
            .tool_call(0, id, tool, &[args])
            .finish("tool_calls")
            .usage(TOKENS_PER_CALL, 0)
            .done(),
    )
}

/// The session journals pablo wrote (none, for a run refused at start).
fn journals(sandbox: &Sandbox) -> usize {
    files_below(&sandbox.data_dir())
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .count()
}

/// The one `error` line of a run refused at start (exit status 2).
fn refused_at_start(out: &Run) -> Vec<&serde_json::Value> {
    assert_eq!(out.code, Some(2), "stderr: {}", out.stderr);
    let errors = out.of_type("error");
    assert_eq!(errors.len(), 1, "{:?}", out.lines);
    errors
}

/// A refused start called no model and left no session behind, nor anything in the workspace.
fn refused_before_anything(sandbox: &Sandbox, server: &ScriptedServer) {
    assert!(server.requests().is_empty());
    assert_eq!(journals(sandbox), 0, "a session was left behind");
    assert_eq!(
        std::fs::read_dir(sandbox.workspace()).unwrap().count(),
        0,
        "something was written into the workspace"
    );
}

fn is_subagent(r: &RecordedRequest) -> bool {
    r.json()["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.contains("# You are a subagent"))
}

#[tokio::test]
async fn a_cap_of_fifty_cents_ends_the_turn_with_cost_budget_exhausted_after_three_calls() {
    let server = ScriptedServer::start().await;
    server
        .respond_with(|_, i| priced_tool_call(&format!("c{i}"), "update_plan", r#"{"items": []}"#));
    let sandbox = Sandbox::new();
    sandbox.user_config(PRICED);
    let out = run(&sandbox, &server, &["--max-budget-usd", "0.50"]).await;
    assert_eq!(out.code, Some(1), "stderr: {}", out.stderr);
    // $0.20, $0.40, $0.60: the third call passes the cap, and no fourth is made.
    assert_eq!(server.requests().len(), 3);
    let errors = out.of_type("error");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["code"], "cost_budget_exhausted");
    let message = errors[0]["message"].as_str().unwrap();
    assert!(
        message.contains("spend cap of $0.500")
            && message.contains("$0.600 spent")
            && message.contains("--max-budget-usd AMOUNT"),
        "{message}"
    );
    assert_eq!(
        out.of_type("turn_completed")[0]["stop_reason"],
        "budget_exhausted"
    );
    // The third call's tool is not started: no model call is left to read its result.
    let results = out.of_type("tool_result");
    assert_eq!(results.len(), 3, "{results:?}");
    assert_eq!(
        results[2]["result"]["error"]["code"],
        "cost_budget_exhausted"
    );
    // The session stays saved and resumable (and `journals` finds what a run writes).
    assert_eq!(journals(&sandbox), 1);
}

#[tokio::test]
async fn a_cap_set_in_the_config_or_the_environment_holds_as_the_flag_does() {
    for (config, env) in [
        (format!("{PRICED}\n[limits]\nmax_budget_usd = 0.3\n"), None),
        (
            PRICED.to_string(),
            Some(("PABLO_LIMITS_MAX_BUDGET_USD", "0.3")),
        ),
    ] {
        let server = ScriptedServer::start().await;
        server.respond_with(|_, i| {
            priced_tool_call(&format!("c{i}"), "update_plan", r#"{"items": []}"#)
        });
        let sandbox = Sandbox::new();
        sandbox.user_config(&config);
        let mut cmd = sandbox.run_json(&server.base_url(), "keep planning");
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        let out = run_within(cmd, Duration::from_secs(60)).await;
        assert_eq!(out.code, Some(1), "{config} {env:?}");
        assert_eq!(server.requests().len(), 2, "{config} {env:?}");
        let errors = out.of_type("error");
        assert_eq!(errors.len(), 1, "{:?}", out.lines);
        assert_eq!(errors[0]["code"], "cost_budget_exhausted");
    }
}

#[tokio::test]
async fn a_cap_with_a_model_of_unknown_price_is_refused_at_start_and_no_call_is_made() {
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    let out = run(&sandbox, &server, &["--max-budget-usd", "2"]).await;
    let errors = refused_at_start(&out);
    assert_eq!(errors[0]["code"], "model_price_unknown");
    let message = errors[0]["message"].as_str().unwrap();
    assert!(
        message.contains("test-model") && message.contains("[model.prices]"),
        "{message}"
    );
    refused_before_anything(&sandbox, &server);
}

#[tokio::test]
async fn a_cap_that_is_no_amount_of_dollars_is_refused() {
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    sandbox.user_config(PRICED);
    let out = run(&sandbox, &server, &["--max-budget-usd=-1"]).await;
    let errors = refused_at_start(&out);
    assert_eq!(errors[0]["code"], "config_invalid");
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("spend cap -1"),
        "{errors:?}"
    );
    refused_before_anything(&sandbox, &server);
}

#[tokio::test]
async fn what_a_subagent_spends_counts_toward_the_sessions_cap_and_ends_the_parents_turn() {
    let server = ScriptedServer::start().await;
    server.respond_with(|r, i| {
        if is_subagent(r) {
            // The subagent keeps working: each of its calls costs $0.20 too.
            priced_tool_call(&format!("s{i}"), "update_plan", r#"{"items": []}"#)
        } else {
            let task = json!({"description": "look", "prompt": "look around"}).to_string();
            priced_tool_call(&format!("p{i}"), "agent_task", &task)
        }
    });
    let sandbox = Sandbox::new();
    sandbox.user_config(PRICED);
    let out = run(&sandbox, &server, &["--max-budget-usd", "0.50"]).await;
    assert_eq!(out.code, Some(1), "stderr: {}", out.stderr);
    let requests = server.requests();
    // The parent's call ($0.20), then the subagent's two ($0.40, $0.60): then nobody calls.
    assert_eq!(requests.len(), 3, "{} requests", requests.len());
    assert_eq!(requests.iter().filter(|r| is_subagent(r)).count(), 2);
    let errors = out.of_type("error");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["code"], "cost_budget_exhausted");
}
