//! `/review`, `/init` and `/status` in plain `pablo` (a config file, no flags) against a scripted
//! OpenAI-compatible server: what the model is offered and told is checked on the wire, what
//! lands on disk in the workspace.

use serde_json::Value;

use crate::support::bin::Sandbox;
use crate::support::git::git;
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

use super::Terminal;

fn start(sandbox: &Sandbox, server: &ScriptedServer) -> Terminal {
    sandbox.user_config(&format!(
        "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n",
        server.base_url()
    ));
    let t = Terminal::spawn_with(sandbox, &[], &[("OPENAI_API_KEY", "sk-test-key")]);
    t.wait_for("Ask pablo to do something");
    t
}

fn call(id: &str, name: &str, args: &Value) -> ScriptedResponse {
    let args = args.to_string();
    ScriptedResponse::sse(openai::tool_call_answer(id, name, &[args.as_str()]))
}

fn say(words: &str) -> ScriptedResponse {
    ScriptedResponse::sse(openai::text_answer(words))
}

/// The names of the tools a request offered.
fn offered(body: &Value) -> Vec<String> {
    let mut names: Vec<String> = body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn quit(t: &mut Terminal) {
    t.wait_for("Ask pablo to do something");
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_lists_the_finding_for_a_planted_bug_offers_only_reading_tools_and_changes_nothing()
{
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    let ws = sandbox.workspace();
    std::fs::write(ws.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "."]);
    git(&ws, &["commit", "-qm", "add"]);
    // The planted bug, uncommitted.
    std::fs::write(ws.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
    let status_before = git(&ws, &["status", "--porcelain"]);
    server.push(say("Hello."));
    server.push(call(
        "r1",
        "fs_read",
        &serde_json::json!({"path": "calc.py"}),
    ));
    server.push(say("high calc.py:2: add subtracts b instead of adding it"));
    let mut t = start(&sandbox, &server);
    // A turn first, so the review is seen to start from a fresh context.
    t.send("hi there\r");
    t.wait_for("Hello.");
    t.send("/review\r");
    t.wait_for("high calc.py:2: add subtracts b instead of adding it");
    // The transcript shows the review's one line as the person's message, not the instructions
    // pablo wrote for the model (which the request below still carries).
    let shown = t.all_lines().join("\n");
    assert!(
        shown.contains("/review: review the uncommitted changes"),
        "{shown}"
    );
    assert!(!shown.contains("SEVERITY path:line"), "{shown}");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let review = requests[1].json();
    assert!(
        review.to_string().contains("SEVERITY path:line"),
        "{review}"
    );
    assert_eq!(
        offered(&review),
        ["fs_list", "fs_read", "fs_search", "shell_run"],
        "a review offers only reading tools and shell.run"
    );
    let texts: Vec<String> = review["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect();
    assert_eq!(
        texts.len(),
        1,
        "the review starts without the conversation: {texts:?}"
    );
    assert!(texts[0].contains("git diff HEAD"), "{}", texts[0]);
    assert!(texts[0].contains("path:line"), "{}", texts[0]);
    // Nothing changed: the file still holds the bug, git sees what it saw.
    assert_eq!(
        std::fs::read_to_string(ws.join("calc.py")).unwrap(),
        "def add(a, b):\n    return a - b\n"
    );
    assert_eq!(git(&ws, &["status", "--porcelain"]), status_before);
    // The findings joined the conversation: the next prompt's request has them.
    server.push(say("Fixed."));
    t.wait_for("Ask pablo to do something");
    t.send("thanks\r");
    t.wait_for("Fixed.");
    let last = server.requests().last().unwrap().json();
    let all = last["messages"].to_string();
    assert!(all.contains("hi there"), "{all}");
    assert!(
        all.contains("add subtracts b instead of adding it"),
        "{all}"
    );
    quit(&mut t);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_runs_a_command_and_proposes_an_agents_md_naming_it_as_a_diff_that_is_asked() {
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    let ws = sandbox.workspace();
    std::fs::write(ws.join("Makefile"), "test:\n\t@echo all 3 tests passed\n").unwrap();
    server.push(call(
        "i1",
        "shell_run",
        &serde_json::json!({"command": "make test"}),
    ));
    let agents =
        "# AGENTS.md\n\n## Commands\n\n- `make test`: runs the tests (checked: all 3 pass)\n";
    server.push(call(
        "i2",
        "fs_write",
        &serde_json::json!({"path": "AGENTS.md", "text": agents, "expected_revision": null}),
    ));
    server.push(say("Wrote AGENTS.md with the test command."));
    let mut t = start(&sandbox, &server);
    t.send("/init\r");
    // The command is judged like any other: here the person allows it.
    t.wait_for("Run this command?");
    t.wait_for("make test");
    t.send("y");
    // The proposal is a diff, asked like any edit.
    t.wait_for("Create AGENTS.md?");
    t.wait_for("new file");
    t.wait_for("+ - `make test`: runs the tests (checked: all 3 pass)");
    assert!(
        !ws.join("AGENTS.md").exists(),
        "written before it was allowed"
    );
    t.send("y");
    t.wait_for("Wrote AGENTS.md with the test command.");
    assert_eq!(
        std::fs::read_to_string(ws.join("AGENTS.md")).unwrap(),
        agents
    );
    let requests = server.requests();
    let first = requests[0].json();
    assert_eq!(
        offered(&first),
        [
            "fs_edit",
            "fs_list",
            "fs_read",
            "fs_search",
            "fs_write",
            "shell_run"
        ]
    );
    assert!(first["messages"].to_string().contains("AGENTS.md"));
    // The command really ran: its output went back to the model before the proposal.
    let second = requests[1].json();
    assert!(
        second["messages"]
            .to_string()
            .contains("all 3 tests passed"),
        "{}",
        second["messages"]
    );
    quit(&mut t);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_in_plain_pablo_names_the_model_the_session_and_the_workspace() {
    let server = ScriptedServer::start().await;
    server.push(say("Hi."));
    let sandbox = Sandbox::new();
    let mut t = start(&sandbox, &server);
    t.send("hello\r");
    t.wait_for("Hi.");
    t.send("/status\r");
    t.wait_for("test-model · openai");
    t.wait_for("1 turn");
    t.wait_for("ask: file changes and commands");
    t.wait_for("pablo resume ");
    quit(&mut t);
}
