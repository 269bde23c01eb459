//! Integration tests: MCP servers, against the reference servers from npm.
//!
//! `server-everything` over stdio and over streamable HTTP, `server-filesystem` on a temporary
//! directory, and programs that fail in the three ways a server fails at start (it exits, it never
//! answers `initialize`, it prints garbage on stdout). Everything goes through the real `pablo`
//! binary against a scripted provider on 127.0.0.1; the cancellation test, which drives the engine's
//! hub directly so it can cancel a call at a moment of its choosing, is in `tests/engine/mcp.rs`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::bin::Sandbox;
use crate::support::http::ScriptedServer;
use crate::support::mcp::{HttpEverything, everything_table, node_or_skip, toml_str};
use crate::support::run::{Run, call, run_within, say};

/// The last state reported for each server, by name.
fn servers(run: &Run) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for l in run.of_type("mcp_server") {
        let s = l["server"].clone();
        out.retain(|o| o["name"] != s["name"]);
        out.push(s);
    }
    out.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    out
}

async fn run(cmd: tokio::process::Command) -> Run {
    run_within(cmd, Duration::from_secs(120)).await
}

/// The tools the model was offered in its first request.
fn offered(server: &ScriptedServer) -> Vec<Value> {
    server.requests()[0].json()["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The tool message the model read for `call_id` (in the request after the call).
fn tool_message(server: &ScriptedServer, call_id: &str) -> String {
    for r in server.requests() {
        let body = r.json();
        if let Some(m) = body["messages"]
            .as_array()
            .and_then(|ms| ms.iter().find(|m| m["tool_call_id"] == call_id))
        {
            return m["content"].as_str().unwrap_or_default().to_string();
        }
    }
    panic!("the model never read a result for {call_id}");
}

// ---------------------------------------------------------------- server-everything over stdio

#[tokio::test]
async fn everything_over_stdio_is_offered_as_mcp_tools_and_echo_and_sum_answer() {
    let Some(node) = node_or_skip("everything_over_stdio_…") else {
        return;
    };
    let model = ScriptedServer::start().await;
    model.push(call(
        "c1",
        "mcp__everything__echo",
        &json!({"message": "hello from pablo"}),
    ));
    model.push(call(
        "c2",
        "mcp__everything__get-sum",
        &json!({"a": 2, "b": 40}),
    ));
    model.push(say("Echoed and summed."));
    let sandbox = Sandbox::new();
    sandbox.user_config(&everything_table(
        &node,
        "everything",
        "tools.echo = \"auto\"\ntools.\"get-sum\" = \"auto\"",
    ));
    let r = run(sandbox.run_json(&model.base_url(), "echo, then add")).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // `pablo run` waits for its servers before the first turn: the first request offers them,
    // with the server's own input schema.
    let tools = offered(&model);
    let echo = tools
        .iter()
        .find(|t| t["function"]["name"] == "mcp__everything__echo")
        .unwrap_or_else(|| panic!("echo not offered: {tools:?}"));
    assert!(
        echo["function"]["parameters"]["properties"]["message"].is_object(),
        "{echo}"
    );
    let results = r.results();
    assert_eq!(results.len(), 2, "{:?}", r.lines);
    assert_eq!(results[0]["ok"], true, "{}", results[0]);
    assert_eq!(results[0]["data"]["server"], "everything");
    assert_eq!(results[0]["data"]["tool"], "echo");
    assert!(
        results[0]["data"]["text"]
            .as_str()
            .unwrap()
            .contains("hello from pablo"),
        "{}",
        results[0]
    );
    assert!(
        results[1]["data"]["text"].as_str().unwrap().contains("42"),
        "{}",
        results[1]
    );
    assert!(tool_message(&model, "c2").contains("42"));
    let servers = servers(&r);
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0]["state"], "ready", "{}", servers[0]);
}

#[tokio::test]
async fn structured_content_and_a_tiny_image_come_back_bounded_and_described() {
    let Some(node) = node_or_skip("structured_content_and_a_tiny_image_…") else {
        return;
    };
    let model = ScriptedServer::start().await;
    model.push(call(
        "c1",
        "mcp__everything__get-structured-content",
        &json!({"location": "Chicago"}),
    ));
    model.push(call("c2", "mcp__everything__get-tiny-image", &json!({})));
    model.push(say("Weather and a picture."));
    let sandbox = Sandbox::new();
    sandbox.user_config(&everything_table(
        &node,
        "everything",
        "tools.\"get-structured-content\" = \"auto\"\ntools.\"get-tiny-image\" = \"auto\"",
    ));
    let r = run(sandbox.run_json(&model.base_url(), "weather in Chicago, and an image")).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let results = r.results();
    assert_eq!(results.len(), 2, "{:?}", r.lines);
    let structured = &results[0]["data"]["structured_content"];
    assert!(structured["temperature"].is_number(), "{}", results[0]);
    assert!(structured["conditions"].is_string(), "{}", results[0]);
    // The image is described by type and size; its base64 never reaches the model as text.
    let parts = results[1]["data"]["content"].as_array().unwrap();
    let image = parts
        .iter()
        .find(|p| p["type"] == "image")
        .unwrap_or_else(|| panic!("no image part: {}", results[1]));
    assert_eq!(image["mime_type"], "image/png");
    assert!(image["bytes"].as_u64().unwrap() > 0, "{image}");
    let read = tool_message(&model, "c2");
    assert!(read.contains("image/png"), "{read}");
    assert!(
        !read.contains("iVBORw0KGgo"),
        "base64 reached the model: {read}"
    );
}

#[tokio::test]
async fn a_call_past_tool_timeout_fails_with_mcp_timeout_and_the_server_still_answers() {
    let Some(node) = node_or_skip("a_call_past_tool_timeout_…") else {
        return;
    };
    let model = ScriptedServer::start().await;
    model.push(call(
        "c1",
        "mcp__everything__trigger-long-running-operation",
        &json!({"duration": 30, "steps": 3}),
    ));
    model.push(call(
        "c2",
        "mcp__everything__echo",
        &json!({"message": "still here"}),
    ));
    model.push(say("The long one timed out."));
    let sandbox = Sandbox::new();
    sandbox.user_config(&everything_table(
        &node,
        "everything",
        "tool_timeout_seconds = 1\ntools.echo = \"auto\"\n\
         tools.\"trigger-long-running-operation\" = \"auto\"",
    ));
    let r = run(sandbox.run_json(&model.base_url(), "run the long operation")).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let results = r.results();
    assert_eq!(results.len(), 2, "{:?}", r.lines);
    assert_eq!(results[0]["ok"], false, "{}", results[0]);
    assert_eq!(results[0]["error"]["code"], "mcp_timeout", "{}", results[0]);
    let message = results[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("everything"), "{message}");
    assert!(message.contains("1 s"), "{message}");
    assert_eq!(results[1]["ok"], true, "{}", results[1]);
    assert!(
        results[1]["data"]["text"]
            .as_str()
            .unwrap()
            .contains("still here")
    );
}

#[tokio::test]
async fn an_mcp_tool_asks_by_default_so_pablo_run_refuses_it_without_a_person() {
    let Some(node) = node_or_skip("an_mcp_tool_asks_by_default_…") else {
        return;
    };
    let model = ScriptedServer::start().await;
    model.push(call(
        "c1",
        "mcp__everything__echo",
        &json!({"message": "hi"}),
    ));
    model.push(say("I was not allowed."));
    let sandbox = Sandbox::new();
    sandbox.user_config(&everything_table(&node, "everything", ""));
    let r = run(sandbox.run_json(&model.base_url(), "echo hi")).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let results = r.results();
    assert_eq!(
        results[0]["error"]["code"], "approval_required",
        "{}",
        results[0]
    );
    let message = results[0]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("echo of the MCP server everything"),
        "{message}"
    );
}

#[tokio::test]
async fn a_tool_set_to_deny_is_refused_naming_the_setting_and_a_project_auto_does_not_loosen_ask() {
    let Some(node) = node_or_skip("a_tool_set_to_deny_…") else {
        return;
    };
    let model = ScriptedServer::start().await;
    model.push(call(
        "c1",
        "mcp__everything__get-sum",
        &json!({"a": 1, "b": 2}),
    ));
    model.push(call(
        "c2",
        "mcp__everything__echo",
        &json!({"message": "hi"}),
    ));
    model.push(say("Refused twice."));
    let sandbox = Sandbox::new();
    sandbox.user_config(&everything_table(
        &node,
        "everything",
        "tools.\"get-sum\" = \"deny\"",
    ));
    // The repository (not trusted) tries to let echo run without asking.
    let dir = sandbox.workspace().join(".pablo");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        "[mcp_servers.everything]\ntools.echo = \"auto\"\n",
    )
    .unwrap();
    let r = run(sandbox.run_json(&model.base_url(), "add, then echo")).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let results = r.results();
    assert_eq!(results[0]["error"]["code"], "denied", "{}", results[0]);
    let message = results[0]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("mcp_servers.everything.tools.get-sum"),
        "{message}"
    );
    assert_eq!(
        results[1]["error"]["code"], "approval_required",
        "{}",
        results[1]
    );
}

#[tokio::test]
async fn arguments_that_break_the_servers_input_schema_are_refused_before_the_call() {
    let Some(node) = node_or_skip("arguments_that_break_…") else {
        return;
    };
    let model = ScriptedServer::start().await;
    model.push(call(
        "c1",
        "mcp__everything__get-sum",
        &json!({"a": "two", "b": 3}),
    ));
    model.push(say("Bad arguments."));
    let sandbox = Sandbox::new();
    sandbox.user_config(&everything_table(
        &node,
        "everything",
        "tools.\"get-sum\" = \"auto\"",
    ));
    let r = run(sandbox.run_json(&model.base_url(), "add")).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let results = r.results();
    assert_eq!(results[0]["ok"], false, "{}", results[0]);
    assert_eq!(
        results[0]["error"]["code"], "invalid_arguments",
        "{}",
        results[0]
    );
}

#[tokio::test]
async fn the_server_gets_a_clean_environment_without_the_provider_key() {
    let Some(node) = node_or_skip("the_server_gets_a_clean_environment_…") else {
        return;
    };
    let model = ScriptedServer::start().await;
    model.push(call("c1", "mcp__everything__get-env", &json!({})));
    model.push(say("Looked."));
    let sandbox = Sandbox::new();
    sandbox.user_config(&everything_table(
        &node,
        "everything",
        "env = { GREETING = \"listed\" }\ntools.\"get-env\" = \"auto\"",
    ));
    let mut cmd = sandbox.run_json(&model.base_url(), "show the env");
    cmd.env("SOME_TOKEN", "tok-secret-value");
    let r = run(cmd).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let text = r.results()[0]["data"]["text"].as_str().unwrap().to_string();
    assert!(text.contains("GREETING"), "{text}");
    assert!(text.contains("listed"), "{text}");
    assert!(
        !text.contains("sk-test-key"),
        "the provider key reached the server: {text}"
    );
    assert!(!text.contains("OPENAI_API_KEY"), "{text}");
    assert!(!text.contains("tok-secret-value"), "{text}");
}

#[tokio::test]
async fn a_secret_looking_variable_that_env_vars_names_reaches_the_server_with_its_value() {
    let Some(node) = node_or_skip("a_secret_looking_variable_that_env_vars_names_…") else {
        return;
    };
    let model = ScriptedServer::start().await;
    model.push(call("c1", "mcp__everything__get-env", &json!({})));
    model.push(say("Looked."));
    let sandbox = Sandbox::new();
    sandbox.user_config(&everything_table(
        &node,
        "everything",
        "env_vars = [\"NOTES_TOKEN\"]\ntools.\"get-env\" = \"auto\"",
    ));
    let mut cmd = sandbox.run_json(&model.base_url(), "show the env");
    cmd.env("NOTES_TOKEN", "notes-token-value-42");
    let r = run(cmd).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let text = r.results()[0]["data"]["text"].as_str().unwrap().to_string();
    let env: Value = serde_json::from_str(&text).unwrap_or_else(|_| {
        // The tool may wrap the JSON in prose; take the object.
        let start = text.find('{').unwrap();
        serde_json::from_str(&text[start..=text.rfind('}').unwrap()]).unwrap()
    });
    // The value reached the server: what the model reads is the redaction of it, not "".
    assert_eq!(env["NOTES_TOKEN"], "[redacted]", "{text}");
    assert!(!text.contains("notes-token-value-42"), "{text}");
}

#[tokio::test]
async fn a_prompt_of_the_server_becomes_the_turn_and_a_resource_is_attached() {
    let Some(node) = node_or_skip("a_prompt_of_the_server_…") else {
        return;
    };
    let model = ScriptedServer::start().await;
    model.push(say("Prompt read."));
    let sandbox = Sandbox::new();
    sandbox.user_config(&everything_table(&node, "everything", ""));
    let list = run({
        let mut c = sandbox.command();
        c.args(["mcp", "list", "--json"]);
        c
    })
    .await;
    assert_eq!(list.code, Some(0), "{}", list.stderr);
    let server = &list.lines[0];
    let prompt = server["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["arguments"].as_array().is_some_and(|a| a.is_empty()))
        .unwrap_or_else(|| panic!("a prompt without arguments: {server}"))["name"]
        .as_str()
        .unwrap()
        .to_string();
    let resource = server["resources"][0]["uri"].as_str().unwrap().to_string();
    let task = format!("/everything:{prompt}");
    let r = run(sandbox.run_json(&model.base_url(), &task)).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let first = model.requests()[0].json();
    let user = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .to_string();
    assert!(!user.contains(&task), "the prompt was not run: {user}");
    assert!(!user.trim_matches('"').is_empty());

    model.push(say("Resource read."));
    let task = format!("what does @everything:{resource} say?");
    let r = run(sandbox.run_json(&model.base_url(), &task)).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let body = model.requests().last().unwrap().json();
    let user = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .to_string();
    assert!(
        user.contains(&format!(
            "<resource server=\\\"everything\\\" uri=\\\"{resource}\\\">"
        )),
        "{user}"
    );
}

// ---------------------------------------------------------------- server-everything over HTTP

#[tokio::test]
async fn everything_over_streamable_http_answers_echo_and_sum() {
    let Some(node) = node_or_skip("everything_over_streamable_http_…") else {
        return;
    };
    let http = HttpEverything::start(&node).await;
    let model = ScriptedServer::start().await;
    model.push(call(
        "c1",
        "mcp__web__echo",
        &json!({"message": "over http"}),
    ));
    model.push(call("c2", "mcp__web__get-sum", &json!({"a": 20, "b": 22})));
    model.push(say("Done over HTTP."));
    let sandbox = Sandbox::new();
    sandbox.user_config(&format!(
        "[mcp_servers.web]\nurl = {}\ntools.echo = \"auto\"\ntools.\"get-sum\" = \"auto\"\n",
        toml_str(&http.url())
    ));
    let r = run(sandbox.run_json(&model.base_url(), "echo and add over http")).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let servers = servers(&r);
    assert_eq!(servers[0]["transport"], "http", "{}", servers[0]);
    assert_eq!(servers[0]["state"], "ready", "{}", servers[0]);
    let results = r.results();
    assert_eq!(results.len(), 2, "{:?}", r.lines);
    assert!(
        results[0]["data"]["text"]
            .as_str()
            .unwrap()
            .contains("over http"),
        "{}",
        results[0]
    );
    assert!(
        results[1]["data"]["text"].as_str().unwrap().contains("42"),
        "{}",
        results[1]
    );
}

// ---------------------------------------------------------------- pablo mcp

#[tokio::test]
async fn mcp_list_and_mcp_tools_show_the_servers_state_and_tools() {
    let Some(node) = node_or_skip("mcp_list_and_mcp_tools_…") else {
        return;
    };
    let sandbox = Sandbox::new();
    sandbox.user_config(&everything_table(
        &node,
        "everything",
        "disabled_tools = [\"get-env\"]",
    ));
    let out = run_text(&sandbox, &["mcp", "list"]).await;
    assert!(out.starts_with("everything  ready  stdio"), "{out}");
    assert!(
        out.contains("  tool    mcp__everything__echo  (echo)"),
        "{out}"
    );
    assert!(
        !out.contains("get-env"),
        "a disabled tool was listed: {out}"
    );
    assert!(out.contains("  prompt  /everything:"), "{out}");
    let tools = run_text(&sandbox, &["mcp", "tools", "everything"]).await;
    assert!(
        tools.contains("mcp__everything__get-sum  (get-sum)"),
        "{tools}"
    );
    let unknown = sandbox
        .command()
        .args(["mcp", "tools", "nosuch"])
        .output()
        .await
        .unwrap();
    assert!(!unknown.status.success());
    let err = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        err.contains("no MCP server named \"nosuch\" (configured: everything)"),
        "{err}"
    );
}

async fn run_text(sandbox: &Sandbox, args: &[&str]) -> String {
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        sandbox.command().args(args).output(),
    )
    .await
    .unwrap()
    .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

// ---------------------------------------------------------------- servers that fail

/// Three programs that are not working servers: one exits, one never answers, one prints prose.
fn broken_servers() -> String {
    let sh = |name: &str, script: &str, extra: &str| {
        format!(
            "[mcp_servers.{name}]\ncommand = \"sh\"\nargs = [\"-c\", {}]\n{extra}\n",
            toml_str(script)
        )
    };
    [
        sh("quits", "echo 'cannot find my config' >&2; exit 3", ""),
        sh("silent", "sleep 60", "startup_timeout_seconds = 1"),
        sh("chatty", "echo 'Welcome to my server!'; sleep 60", ""),
    ]
    .concat()
}

#[tokio::test]
async fn servers_that_exit_stay_silent_or_print_garbage_are_failed_with_reasons_and_the_run_goes_on()
 {
    let model = ScriptedServer::start().await;
    model.push(say("Carrying on without them."));
    let sandbox = Sandbox::new();
    sandbox.user_config(&broken_servers());
    let r = run(sandbox.run_json(&model.base_url(), "hello")).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let last = r.lines.last().unwrap();
    assert_eq!(last["type"], "turn_completed", "{last}");
    let servers = servers(&r);
    let by = |name: &str| {
        servers
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("{name} not reported: {servers:?}"))
    };
    for s in &servers {
        assert_eq!(s["state"], "failed", "{s}");
    }
    let reason = |name: &str| by(name)["reason"].as_str().unwrap().to_string();
    let quits = reason("quits");
    assert!(quits.contains("exited (exit status 3)"), "{quits}");
    assert!(quits.contains("cannot find my config"), "{quits}");
    let silent = reason("silent");
    assert!(
        silent.contains("did not answer initialize within 1 s"),
        "{silent}"
    );
    let chatty = reason("chatty");
    assert!(chatty.contains("not JSON-RPC"), "{chatty}");
    assert!(chatty.contains("Welcome to my server!"), "{chatty}");
    // The model was offered no tool of theirs, and the server's stderr went to its log, never to
    // the terminal.
    assert!(
        !offered(&model)
            .iter()
            .any(|t| t["function"]["name"].as_str().unwrap().starts_with("mcp__"))
    );
    assert!(!r.stderr.contains("cannot find my config"), "{}", r.stderr);
    let log = sandbox.root().join("state/pablo/mcp/quits.log");
    assert!(
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("cannot find my config"),
        "{}",
        log.display()
    );
}

#[tokio::test]
async fn a_required_server_that_fails_stops_the_run_with_its_reason() {
    let model = ScriptedServer::start().await;
    model.push(say("never sent"));
    let sandbox = Sandbox::new();
    sandbox.user_config(
        "[mcp_servers.needed]\ncommand = \"sh\"\nargs = [\"-c\", \"exit 7\"]\nrequired = true\n",
    );
    let r = run(sandbox.run_json(&model.base_url(), "hello")).await;
    assert_ne!(r.code, Some(0));
    let error = r
        .lines
        .iter()
        .find(|l| l["type"] == "error")
        .unwrap_or_else(|| panic!("no error line: {:?}", r.lines));
    assert_eq!(error["code"], "mcp_required_server_failed", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("the required MCP server needed failed: exited (exit status 7)"),
        "{error}"
    );
    assert!(model.requests().is_empty(), "the model was called");
}

#[tokio::test]
async fn mcp_list_shows_each_broken_server_failed_and_exits_with_failure() {
    let sandbox = Sandbox::new();
    sandbox.user_config(&broken_servers());
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        sandbox.command().args(["mcp", "list"]).output(),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("quits  failed  stdio  exited (exit status 3)"),
        "{text}"
    );
    assert!(
        text.contains("silent  failed  stdio  did not answer initialize within 1 s"),
        "{text}"
    );
    assert!(
        text.contains("chatty  failed  stdio  printed something that is not JSON-RPC"),
        "{text}"
    );
}

#[tokio::test]
async fn a_project_config_starts_no_server_until_the_folder_is_trusted() {
    let sandbox = Sandbox::new();
    let marker = sandbox.root().join("started");
    let dir = sandbox.workspace().join(".pablo");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "[mcp_servers.repo]\ncommand = \"sh\"\nargs = [\"-c\", {}]\n",
            toml_str(&format!("touch {}; exit 1", marker.display()))
        ),
    )
    .unwrap();
    let out = sandbox
        .command()
        .args(["mcp", "list"])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("no MCP servers configured"), "{text}");
    // One note says what the untrusted project config would have done, and that it did not.
    assert!(err.contains("this folder is not trusted"), "{err}");
    assert!(
        err.contains("mcp_servers.repo (starts the program `sh -c"),
        "{err}"
    );
    assert!(
        !marker.exists(),
        "an untrusted repository started a program"
    );
    let trust = sandbox
        .command()
        .args(["policy", "trust"])
        .output()
        .await
        .unwrap();
    assert!(
        trust.status.success(),
        "{}",
        String::from_utf8_lossy(&trust.stderr)
    );
    let out = sandbox
        .command()
        .args(["mcp", "list"])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("repo  failed  stdio"), "{text}");
    assert!(
        marker.exists(),
        "the trusted project's server was not started"
    );
}

#[tokio::test]
async fn an_unknown_key_in_an_mcp_server_table_is_an_error_with_file_line_and_key() {
    let sandbox = Sandbox::new();
    sandbox.user_config("[mcp_servers.x]\ncommand = \"true\"\ncomand_args = []\n");
    let out = sandbox
        .command()
        .args(["mcp", "list"])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("config.toml"), "{err}");
    assert!(err.contains(":3"), "{err}");
    assert!(err.contains("comand_args"), "{err}");
}

// ---------------------------------------------------------------- nothing outlives pablo

/// The pids of live processes whose command line holds `marker`.
///
/// A shell that forks to run `sleep` leaves a child with its own command line until the child's
/// `exec`: such a child (same command line as its parent) is the parent still, not a process of
/// its own, and counting it made the count one more than the programs started, now and then.
fn processes_marked(marker: &str) -> Vec<i32> {
    let cmdline_of = |pid: &str| std::fs::read(format!("/proc/{pid}/cmdline")).ok();
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let zombie = state
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        let parent = state
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1).map(str::to_string));
        let unexeced_fork = parent.is_some_and(|ppid| cmdline_of(&ppid).as_ref() == Some(&cmdline));
        if !zombie && !unexeced_fork && String::from_utf8_lossy(&cmdline).contains(marker) {
            out.push(pid);
        }
    }
    out
}

/// Polls until `done(processes_marked(marker))` (a safety net of 20 s, not a timing assertion).
async fn wait_for_marked(marker: &str, done: impl Fn(&[i32]) -> bool) -> Vec<i32> {
    for _ in 0..400 {
        let found = processes_marked(marker);
        if done(&found) {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    processes_marked(marker)
}

/// Two servers that never answer: one starts a `setsid` daemon, the other ignores end of file
/// and TERM. Every process they start has `marker` in its command line.
fn stubborn_servers(marker: &str) -> String {
    let server = |name: &str, script: &str| {
        format!(
            "[mcp_servers.{name}]\ncommand = \"sh\"\nargs = [\"-c\", {}, \"{marker}-{name}\"]\n\
             startup_timeout_seconds = 120\n",
            toml_str(script)
        )
    };
    let daemon = format!(
        "setsid sh -c 'while :; do sleep 1; done' {marker}-daemon </dev/null >/dev/null 2>&1 & \
         while :; do sleep 1; done"
    );
    [
        server("forks", &daemon),
        server("deaf", "trap '' TERM HUP INT; while :; do sleep 1; done"),
    ]
    .concat()
}

/// Starts `pablo run` (wrapped by `wrap`, which must exec pablo in its own process) with the
/// stubborn servers, waits until all three marked processes run, SIGKILLs pablo, and returns
/// the marked processes still alive afterwards.
async fn survivors_of_a_killed_pablo(wrap: &[&str]) -> Vec<i32> {
    let model = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    let marker = format!("pablo-contained-{}", std::process::id());
    let marker = format!("{marker}-{}", wrap.len());
    sandbox.user_config(&stubborn_servers(&marker));
    let cmd = sandbox.run_json(&model.base_url(), "hello");
    let mut cmd = if wrap.is_empty() {
        cmd
    } else {
        let std = cmd.as_std();
        let mut wrapped = tokio::process::Command::new(wrap[0]);
        wrapped
            .args(&wrap[1..])
            .arg(std.get_program())
            .args(std.get_args());
        wrapped.env_clear();
        for (k, v) in std.get_envs() {
            if let Some(v) = v {
                wrapped.env(k, v);
            }
        }
        wrapped.current_dir(sandbox.workspace()).kill_on_drop(true);
        wrapped
    };
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut pablo = cmd.spawn().unwrap();
    let running = wait_for_marked(&marker, |p| p.len() >= 3).await;
    assert_eq!(
        running.len(),
        3,
        "the two servers and the daemon did not all start: {running:?}"
    );
    pablo.start_kill().unwrap(); // SIGKILL
    pablo.wait().await.unwrap();
    let left = wait_for_marked(&marker, <[i32]>::is_empty).await;
    // Do not leave them running for the next test, whatever the outcome.
    for pid in &left {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    assert!(model.requests().is_empty(), "the model was called");
    left
}

#[tokio::test]
async fn a_killed_pablo_leaves_no_server_and_no_daemon_of_a_server_behind() {
    let left = survivors_of_a_killed_pablo(&[]).await;
    assert!(
        left.is_empty(),
        "still running after kill -9 of pablo: {left:?}"
    );
}

#[tokio::test]
async fn without_user_namespaces_a_killed_pablo_still_leaves_nothing_behind() {
    // A user namespace of its own in which no further one may be created: pablo's probe fails
    // there, and it falls back to its supervising init.
    let probe = std::process::Command::new("unshare")
        .args([
            "-U",
            "-r",
            "sh",
            "-c",
            "echo 0 > /proc/sys/user/max_user_namespaces",
        ])
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("skipped: this kernel does not let a test forbid user namespaces");
        return;
    }
    let left = survivors_of_a_killed_pablo(&[
        "unshare",
        "-U",
        "-r",
        "sh",
        "-c",
        "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$@\"",
        "sh",
    ])
    .await;
    assert!(
        left.is_empty(),
        "still running after kill -9 of pablo: {left:?}"
    );
}

#[tokio::test]
async fn a_server_that_floods_stderr_fills_a_bounded_log_not_the_disk() {
    let model = ScriptedServer::start().await;
    model.push(say("ok"));
    let sandbox = Sandbox::new();
    // 40 MB of stderr, then a last word, then it exits.
    sandbox.user_config(
        "[mcp_servers.flood]\ncommand = \"sh\"\n\
         args = [\"-c\", \"head -c 40000000 /dev/zero | tr '\\\\0' x >&2; echo done >&2; exit 3\"]\n",
    );
    let r = run(sandbox.run_json(&model.base_url(), "hello")).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let log = sandbox.root().join("state/pablo/mcp/flood.log");
    let len = std::fs::metadata(&log).unwrap().len();
    assert!(len <= 8 * 1024 * 1024 + 512, "the log grew to {len} bytes");
    assert!(len >= 8 * 1024 * 1024, "the log holds only {len} bytes");
}

/// A stdio server in Python that answers every request with an empty result; `before` is
/// printed just before its answer to `initialize`, `after` just after it, in the same write.
fn stub_server(name: &str, before: &str, after: &str) -> String {
    let script = format!(
        r#"
import json, sys
for raw in sys.stdin:
    msg = json.loads(raw)
    if "id" not in msg:
        continue
    if msg.get("method") == "initialize":
        result = {{"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {{"tools": {{}}}},
                  "serverInfo": {{"name": "stub", "version": "1"}}}}
        answer = json.dumps({{"jsonrpc": "2.0", "id": msg["id"], "result": result}})
        sys.stdout.write({before:?} + answer + "\n" + {after:?})
    else:
        result = {{"tools": []}} if msg.get("method") == "tools/list" else {{}}
        sys.stdout.write(json.dumps({{"jsonrpc": "2.0", "id": msg["id"], "result": result}}) + "\n")
    sys.stdout.flush()
"#
    );
    format!(
        "[mcp_servers.{name}]\ncommand = \"python3\"\nargs = [\"-c\", {}]\n",
        toml_str(&script).replace('\n', "\\n")
    )
}

#[tokio::test]
async fn a_server_that_prints_prose_before_its_first_message_fails_every_time_and_after_it_never() {
    let sandbox = Sandbox::new();
    let mut config = String::new();
    for i in 0..4 {
        config.push_str(&stub_server(&format!("chatty{i}"), "Welcome!\n", ""));
        config.push_str(&stub_server(&format!("late{i}"), "", "Ready to serve.\n"));
    }
    sandbox.user_config(&config);
    for _ in 0..3 {
        let list = run({
            let mut c = sandbox.command();
            c.args(["mcp", "list", "--json"]);
            c
        })
        .await;
        assert_eq!(list.lines.len(), 8, "{}\n{:?}", list.stderr, list.lines);
        for server in &list.lines {
            let name = server["name"].as_str().unwrap();
            if name.starts_with("chatty") {
                assert_eq!(server["state"], "failed", "{server}");
                assert!(
                    server["reason"].as_str().unwrap().contains(
                        "printed something that is not JSON-RPC on stdout (\"Welcome!\")"
                    ),
                    "{server}"
                );
            } else {
                assert_eq!(server["state"], "ready", "{server}");
            }
        }
        assert_eq!(list.code, Some(1), "{}", list.stderr);
    }
}
