//! Integration tests: the provider's own web search (`[options.web_search]`, docs/web.md) through
//! `pablo run --json` against a scripted Anthropic or OpenAI Responses server on 127.0.0.1: the
//! tool is offered only when configured, the searches are printed, priced, kept in the
//! conversation and sent back (in the same session and after a resume), and a provider without
//! server-side search says so.

use serde_json::{Value, json};

use crate::support::bin::Sandbox;
use crate::support::http::{ScriptedResponse, ScriptedServer, anthropic, openai};
use crate::support::run::{Run, output, run_within};
use crate::support::web_search::{
    anthropic_answer, anthropic_error, anthropic_search, anthropic_stop, responses_answer,
};

const PAGES: &[(&str, &str)] = &[
    (
        "Rust 1.90 released",
        "https://blog.rust-lang.org/2025/09/18/Rust-1.90.0/",
    ),
    ("Releases", "https://github.com/rust-lang/rust/releases"),
];

/// A user config for `provider` at `server`, with `extra` appended.
fn config(sandbox: &Sandbox, server: &ScriptedServer, provider: &str, extra: &str) {
    let model = match provider {
        "anthropic" => "model = \"claude-sonnet-4-5\"",
        _ => "[model]\nname = \"gpt-5\"\nwire_api = \"responses\"",
    };
    sandbox.user_config(&format!(
        "provider = \"{provider}\"\nbase_url = \"{}\"\n{model}\n{extra}\n",
        server.base_url()
    ));
}

const SEARCH_ON: &str = "[options.web_search]\nenabled = true\nmax_uses = 2\n";

/// `pablo run --json [FLAGS] TASK` with the sandbox's config and keys.
async fn run(sandbox: &Sandbox, flags: &[&str], task: &str) -> Run {
    let mut cmd = sandbox.command();
    cmd.env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env("OPENAI_API_KEY", "sk-test")
        .args(["run", "--json"])
        .args(flags)
        .arg(task);
    run_within(cmd, std::time::Duration::from_secs(60)).await
}

fn tools(body: &Value) -> Vec<Value> {
    body["tools"].as_array().cloned().unwrap_or_default()
}

fn search_tools(body: &Value) -> Vec<Value> {
    tools(body)
        .into_iter()
        .filter(|t| {
            t["type"]
                .as_str()
                .is_some_and(|t| t.starts_with("web_search"))
        })
        .collect()
}

/// The blocks of every assistant message of an Anthropic request, in order.
fn assistant_blocks(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn without_configuration_no_search_is_offered() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(anthropic::text_answer("Hello.")));
    let sandbox = Sandbox::new();
    config(&sandbox, &server, "anthropic", "");
    run(&sandbox, &[], "hi").await.succeeded();
    let body = &server.request_bodies()[0];
    assert!(!tools(body).is_empty(), "pablo's own tools are offered");
    assert_eq!(search_tools(body), Vec::<Value>::new());
}

#[tokio::test]
async fn anthropic_searches_when_configured_and_the_search_is_printed_and_priced() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(anthropic_answer(
        "srvtoolu_1",
        "rust latest release",
        PAGES,
        "Rust 1.90 is the latest.",
    )));
    let sandbox = Sandbox::new();
    config(&sandbox, &server, "anthropic", SEARCH_ON);
    let run = run(&sandbox, &[], "what is the latest rust?")
        .await
        .succeeded();
    let body = &server.request_bodies()[0];
    assert_eq!(
        search_tools(body),
        vec![json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 2})]
    );
    let searches = run.of_type("web_search");
    assert_eq!(searches.len(), 1, "{:#?}", run.lines);
    assert_eq!(searches[0]["query"], "rust latest release");
    assert_eq!(
        searches[0]["results"][0],
        json!({"url": PAGES[0].1, "title": PAGES[0].0})
    );
    assert_eq!(searches[0]["results"][1]["url"], PAGES[1].1);
    assert!(
        !searches[0].to_string().contains("enc:"),
        "the encrypted content is not printed: {}",
        searches[0]
    );
    // The answer is the text after the search; the text before it is part of the message.
    let answer = run.of_type("message");
    assert_eq!(
        answer.last().map(|m| m["text"].clone()),
        Some(json!("Let me look that up. Rust 1.90 is the latest."))
    );
    let usage = run.of_type("usage");
    assert_eq!(usage[0]["last"]["web_searches"], 1, "{:#?}", usage);
    // claude-sonnet-4-5: 10 input tokens at $3/M, 20 output at $15/M, one search at $10/1000.
    let cost = usage[0]["cost_usd"].as_f64().unwrap_or(0.0);
    let expected = 10.0 * 3.0 / 1e6 + 20.0 * 15.0 / 1e6 + 0.01;
    assert!(
        (cost - expected).abs() < 1e-9,
        "cost {cost}, expected {expected}"
    );
}

#[tokio::test]
async fn the_search_blocks_go_back_with_their_message_in_the_session_and_after_a_resume() {
    let server = ScriptedServer::start().await;
    // The model searches, then reads a file in the same response; then answers.
    let first = anthropic_search(
        "srvtoolu_1",
        "rust latest release",
        crate::support::web_search::anthropic_pages(PAGES),
    )
    .tool_use("toolu_1", "fs_read", &[r#"{"path": "notes.txt"}"#]);
    server.push(ScriptedResponse::sse(anthropic_stop(first, "tool_use", 1)));
    server.push(ScriptedResponse::sse(anthropic::text_answer("Done.")));
    server.push(ScriptedResponse::sse(anthropic::text_answer("Still 1.90.")));
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "notes").unwrap_or_default();
    config(&sandbox, &server, "anthropic", SEARCH_ON);
    let first_run = run(&sandbox, &[], "look it up").await.succeeded();
    let expected = [
        json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
            "input": {"query": "rust latest release"}}),
        json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
            {"type": "web_search_result", "url": PAGES[0].1, "title": PAGES[0].0,
                "encrypted_content": format!("enc:{}", PAGES[0].1), "page_age": "1 day ago"},
            {"type": "web_search_result", "url": PAGES[1].1, "title": PAGES[1].0,
                "encrypted_content": format!("enc:{}", PAGES[1].1), "page_age": "1 day ago"},
        ]}),
    ];
    let in_session = assistant_blocks(&server.request_bodies()[1]);
    assert_eq!(in_session[..2], expected, "{in_session:#?}");
    assert_eq!(in_session[2]["type"], "text");
    assert_eq!(in_session[3]["type"], "tool_use");
    let id = first_run.of_type("session_started")[0]["session_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    run(&sandbox, &["--resume", &id], "and now?")
        .await
        .succeeded();
    let resumed = assistant_blocks(&server.request_bodies()[2]);
    assert_eq!(resumed[..2], expected, "{resumed:#?}");
}

#[tokio::test]
async fn a_failed_anthropic_search_is_printed_with_its_error_code() {
    let server = ScriptedServer::start().await;
    let s = anthropic_search(
        "srvtoolu_9",
        "too much",
        anthropic_error("max_uses_exceeded"),
    )
    .text(&["I could not search."]);
    server.push(ScriptedResponse::sse(anthropic_stop(s, "end_turn", 0)));
    let sandbox = Sandbox::new();
    config(&sandbox, &server, "anthropic", SEARCH_ON);
    let run = run(&sandbox, &[], "search").await.succeeded();
    let search = run.of_type("web_search");
    assert_eq!(search[0]["error"], "max_uses_exceeded", "{:#?}", run.lines);
    assert_eq!(search[0]["results"], json!([]));
}

#[tokio::test]
async fn responses_searches_when_configured_and_its_call_goes_back_after_a_resume() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(responses_answer(
        "ws_1",
        "rust latest release",
        PAGES,
        "Rust 1.90.",
    )));
    server.push(ScriptedResponse::sse(responses_answer(
        "ws_2",
        "rust 1.91",
        &[],
        "Not yet.",
    )));
    let sandbox = Sandbox::new();
    config(&sandbox, &server, "openai", SEARCH_ON);
    let first = run(&sandbox, &[], "latest rust?").await.succeeded();
    let body = &server.request_bodies()[0];
    assert_eq!(search_tools(body), vec![json!({"type": "web_search"})]);
    assert!(
        body["include"]
            .as_array()
            .is_some_and(|i| i.contains(&json!("web_search_call.action.sources"))),
        "{body:#}"
    );
    let search = first.of_type("web_search");
    assert_eq!(
        search[0]["query"], "rust latest release",
        "{:#?}",
        first.lines
    );
    assert_eq!(search[0]["results"][0]["url"], PAGES[0].1);
    let usage = first.of_type("usage");
    assert_eq!(usage[0]["last"]["web_searches"], 1, "{usage:#?}");
    // gpt-5: 100 input tokens at $1.25/M, 20 output at $10/M, one search at $10/1000.
    let cost = usage[0]["cost_usd"].as_f64().unwrap_or(0.0);
    let expected = 100.0 * 1.25 / 1e6 + 20.0 * 10.0 / 1e6 + 0.01;
    assert!(
        (cost - expected).abs() < 1e-9,
        "cost {cost}, expected {expected}"
    );
    // max_uses has no equivalent at OpenAI: the person is told it is ignored.
    assert!(
        first.stderr.contains("max_uses")
            || first
                .lines
                .iter()
                .any(|l| l.to_string().contains("max_uses")),
        "{}\n{:#?}",
        first.stderr,
        first.lines
    );
    let id = first.of_type("session_started")[0]["session_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    run(&sandbox, &["--resume", &id], "and 1.91?")
        .await
        .succeeded();
    let input = server.request_bodies()[1]["input"].clone();
    let items: Vec<&Value> = input.as_array().into_iter().flatten().collect();
    let call = items.iter().position(|i| i["type"] == "web_search_call");
    let answer = items
        .iter()
        .position(|i| i["role"] == "assistant" && i["type"] == "message");
    assert_eq!(
        call.map(|c| items[c].clone()),
        Some(
            json!({"type": "web_search_call", "id": "ws_1", "status": "completed",
            "action": {"type": "search", "query": "rust latest release"}})
        )
    );
    assert!(call < answer, "the search goes before the answer it led to");
}

#[tokio::test]
async fn chat_completions_is_not_offered_a_search_and_the_person_is_told_why() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::text_answer("Hi.")));
    let sandbox = Sandbox::new();
    sandbox.user_config(&format!(
        "provider = \"openai\"\nbase_url = \"{}\"\nmodel = \"test-model\"\n{SEARCH_ON}",
        server.base_url()
    ));
    let run = run(&sandbox, &[], "hi").await.succeeded();
    assert_eq!(
        search_tools(&server.request_bodies()[0]),
        Vec::<Value>::new()
    );
    let all = format!("{}{:?}", run.stderr, run.lines);
    assert!(
        all.contains("Chat Completions, which has no server-side web search"),
        "{all}"
    );
    // `pablo config show` says it too.
    let mut cmd = sandbox.command();
    cmd.args(["config", "show"]);
    let (_, _, stderr) = output(cmd).await;
    assert!(stderr.contains("no server-side web search"), "{stderr}");
}

#[tokio::test]
async fn an_untrusted_project_cannot_turn_search_on_but_validate_catches_bad_values() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(anthropic::text_answer("Hello.")));
    let sandbox = Sandbox::new();
    config(&sandbox, &server, "anthropic", "");
    let project = sandbox.workspace().join(".pablo");
    std::fs::create_dir_all(&project).unwrap_or_default();
    std::fs::write(
        project.join("config.toml"),
        "[options.web_search]\nenabled = true\nallowed_domains = [\"evil.example\"]\n",
    )
    .unwrap_or_default();
    let run = run(&sandbox, &[], "hi").await.succeeded();
    assert_eq!(
        search_tools(&server.request_bodies()[0]),
        Vec::<Value>::new()
    );
    let all = format!("{}{:?}", run.stderr, run.lines);
    assert!(all.contains("options.web_search.enabled = true"), "{all}");

    let bad = sandbox.root().join("bad.toml");
    std::fs::write(
        &bad,
        "[options.web_search]\nenabled = true\nmax_uses = 0\nallowed_domains = [\"a.com\"]\n\
         blocked_domains = [\"https://b.com/x\"]\n",
    )
    .unwrap_or_default();
    let mut cmd = sandbox.command();
    cmd.args(["config", "validate"]).arg(&bad);
    let (code, stdout, stderr) = output(cmd).await;
    assert_ne!(code, Some(0), "{stdout}");
    for needle in [
        "options.web_search.max_uses",
        "not both",
        "\"https://b.com/x\" is not a domain name",
    ] {
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
}
