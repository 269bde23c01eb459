//! The agent loop and `pablo run`, end to end: the real binary against a scripted
//! OpenAI-compatible server on 127.0.0.1.

use std::time::Duration;

use serde_json::Value;

use crate::support::bin::{Sandbox, json_lines, types};
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

const PLAN_ARGS: &[&str] = &[
    r#"{"items": [{"content": "read the "#,
    r#"code", "status": "in_progress"}, "#,
    r#"{"content": "fix it", "status": "pending"}]}"#,
];

async fn run(sandbox: &Sandbox, server: &ScriptedServer, task: &str, extra: &[&str]) -> Output {
    let mut cmd = sandbox.run_json(&server.base_url(), task);
    cmd.args(extra);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("pablo run finished within 60 s")
        .expect("pablo runs");
    Output {
        code: out.status.code(),
        lines: json_lines(&out.stdout),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

struct Output {
    code: Option<i32>,
    lines: Vec<Value>,
    stderr: String,
}

impl Output {
    fn of_type(&self, t: &str) -> Vec<&Value> {
        self.lines.iter().filter(|l| l["type"] == t).collect()
    }
}

/// One `plan.update` call (then a closing answer) under the user config `config`.
async fn plan_call_under(config: &str, flags: &[&str]) -> (ScriptedServer, Output) {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "a",
        "update_plan",
        PLAN_ARGS,
    )));
    server.push(ScriptedResponse::sse(openai::text_answer("ok")));
    let sandbox = Sandbox::new();
    sandbox.user_config(config);
    let out = run(&sandbox, &server, "plan", flags).await;
    (server, out)
}

/// The content of the tool message the model received in request `n`.
fn tool_messages(server: &ScriptedServer, n: usize) -> Vec<Value> {
    let body = server.requests()[n].json();
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str(m["content"].as_str().expect("content")).expect("json"))
        .collect()
}

#[tokio::test]
async fn run_json_prints_the_contract_lines_for_a_tool_turn() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "call_1",
        "update_plan",
        PLAN_ARGS,
    )));
    server.push(ScriptedResponse::sse(openai::text_answer("Plan made.")));
    let sandbox = Sandbox::new();
    let out = run(&sandbox, &server, "make a plan", &[]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    assert_eq!(
        types(&out.lines),
        [
            "session_started",
            "usage",
            "tool_call",
            "plan",
            "tool_result",
            "usage",
            "message",
            "turn_completed"
        ]
    );
    let call = out.of_type("tool_call")[0];
    assert_eq!(call["tool"], "plan.update");
    assert_eq!(call["call_id"], "call_1");
    assert_eq!(call["arguments"]["items"][0]["content"], "read the code");
    assert_eq!(out.of_type("plan")[0]["items"][0]["status"], "in_progress");
    let result = &out.of_type("tool_result")[0]["result"];
    assert_eq!(result["ok"], true);
    assert_eq!(out.of_type("message")[0]["text"], "Plan made.");
    let done = out.of_type("turn_completed")[0];
    assert_eq!(done["stop_reason"], "end_turn");
    assert_eq!(done["usage"]["input_tokens"], 20);
    // What the model got back is exactly what was printed.
    assert_eq!(&tool_messages(&server, 1)[0], result);
    // The first request carried the task, the system prompt and the tool specs.
    let first = server.requests()[0].json();
    assert_eq!(first["model"], "test-model");
    assert!(first["stream"].as_bool().unwrap_or(false));
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"update_plan"), "{tools:?}");
}

#[tokio::test]
async fn malformed_arguments_reach_the_model_as_invalid_arguments_and_the_run_goes_on() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "call_bad",
        "update_plan",
        &[r#"{"items": [{"content": "#, r#""x", "status"#],
    )));
    server.push(ScriptedResponse::sse(openai::text_answer("Sorry.")));
    let sandbox = Sandbox::new();
    let out = run(&sandbox, &server, "plan", &[]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let result = &out.of_type("tool_result")[0]["result"];
    assert_eq!(result["ok"], false);
    assert_eq!(result["error"]["code"], "invalid_arguments");
    // The raw text is shown since it is not JSON.
    assert!(out.of_type("tool_call")[0]["arguments"].is_string());
    assert_eq!(server.requests().len(), 2);
    assert_eq!(
        tool_messages(&server, 1)[0]["error"]["code"],
        "invalid_arguments"
    );
}

#[tokio::test]
async fn an_unknown_argument_key_is_named_in_invalid_arguments() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "c1",
        "update_plan",
        &[r#"{"items": [], "itmes": []}"#],
    )));
    server.push(ScriptedResponse::sse(openai::text_answer("ok")));
    let sandbox = Sandbox::new();
    let out = run(&sandbox, &server, "plan", &[]).await;
    let error = &out.of_type("tool_result")[0]["result"]["error"];
    assert_eq!(error["code"], "invalid_arguments");
    assert!(
        error["message"].as_str().unwrap().contains("itmes"),
        "{error}"
    );
}

#[tokio::test]
async fn two_parallel_tool_calls_run_in_order_and_both_results_go_back() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(
        openai::Stream::new()
            .tool_call(0, "a", "update_plan", &[r#"{"items": ["#])
            .tool_call(1, "b", "update_plan", &[r#"{"items": []}"#])
            .fragments(0, &[r#"{"content": "x", "status": "pending"}]}"#])
            .finish("tool_calls")
            .done(),
    ));
    server.push(ScriptedResponse::sse(openai::text_answer("done")));
    let sandbox = Sandbox::new();
    let out = run(&sandbox, &server, "plan twice", &[]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let ids: Vec<&str> = out
        .of_type("tool_result")
        .iter()
        .map(|l| l["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a", "b"]);
    let plans = out.of_type("plan");
    assert_eq!(plans[0]["items"].as_array().unwrap().len(), 1);
    assert_eq!(plans[1]["items"].as_array().unwrap().len(), 0);
    assert_eq!(tool_messages(&server, 1).len(), 2);
}

#[tokio::test]
async fn zero_model_calls_sends_no_request_and_fails_clearly() {
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    let out = run(&sandbox, &server, "anything", &["--max-model-calls", "0"]).await;
    assert_ne!(out.code, Some(0));
    assert_eq!(
        out.of_type("error")[0]["code"],
        "model_call_budget_exhausted"
    );
    assert_eq!(
        out.of_type("turn_completed")[0]["stop_reason"],
        "budget_exhausted"
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn one_tool_call_budget_refuses_the_second_call_and_ends_the_turn() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(
        openai::Stream::new()
            .tool_call(0, "a", "update_plan", &[r#"{"items": []}"#])
            .tool_call(1, "b", "update_plan", &[r#"{"items": []}"#])
            .finish("tool_calls")
            .done(),
    ));
    server.push(ScriptedResponse::sse(openai::text_answer("never read")));
    let sandbox = Sandbox::new();
    let out = run(&sandbox, &server, "plan", &["--max-tool-calls", "1"]).await;
    assert_eq!(out.code, Some(1), "stderr: {}", out.stderr);
    let results = out.of_type("tool_result");
    assert_eq!(results[0]["result"]["ok"], true);
    assert_eq!(
        results[1]["result"]["error"]["code"],
        "tool_call_budget_exhausted"
    );
    assert_eq!(out.of_type("plan").len(), 1, "the second call never ran");
    assert_eq!(
        out.of_type("error")[0]["code"],
        "tool_call_budget_exhausted"
    );
    assert_eq!(
        out.of_type("turn_completed")[0]["stop_reason"],
        "budget_exhausted"
    );
    assert_eq!(server.requests().len(), 1, "the model was asked again");
}

/// A model that asks for one more `update_plan` in every answer, forever.
fn endless_tool_calls(server: &ScriptedServer) {
    server.respond_with(|_, i| {
        ScriptedResponse::sse(openai::tool_call_answer(
            &format!("c{i}"),
            "update_plan",
            &[r#"{"items": []}"#],
        ))
    });
}

#[tokio::test]
async fn a_spent_tool_call_budget_ends_the_turn_and_the_model_is_not_asked_again() {
    let server = ScriptedServer::start().await;
    endless_tool_calls(&server);
    let sandbox = Sandbox::new();
    let out = run(
        &sandbox,
        &server,
        "plan forever",
        &["--max-tool-calls", "5"],
    )
    .await;
    assert_eq!(out.code, Some(1), "stderr: {}", out.stderr);
    // Five calls ran; the sixth was refused, and that refusal ended the turn.
    assert_eq!(server.requests().len(), 6);
    let codes: Vec<Value> = out
        .of_type("tool_result")
        .iter()
        .map(|r| r["result"]["error"]["code"].clone())
        .collect();
    assert_eq!(codes.len(), 6);
    assert!(codes[..5].iter().all(Value::is_null), "{codes:?}");
    assert_eq!(codes[5], "tool_call_budget_exhausted");
    let error = out.of_type("error")[0];
    assert_eq!(error["code"], "tool_call_budget_exhausted");
    assert!(
        error["message"].as_str().unwrap().contains("budget (5)"),
        "{error}"
    );
    assert_eq!(
        out.of_type("turn_completed")[0]["stop_reason"],
        "budget_exhausted"
    );
    // The model is told: the refusal is in the conversation the next turn sends.
    let id = out.of_type("session_started")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let again = run(
        &sandbox,
        &server,
        "what happened?",
        &["--resume", &id, "--max-model-calls", "1"],
    )
    .await;
    assert_eq!(server.requests().len(), 7, "{:?}", again.lines);
    let told = tool_messages(&server, 6);
    assert_eq!(told.len(), 6);
    assert_eq!(told[5]["error"]["code"], "tool_call_budget_exhausted");
}

#[tokio::test]
async fn a_spent_network_budget_ends_the_turn_with_its_code() {
    let server = ScriptedServer::start().await;
    server.respond_with(|_, i| {
        ScriptedResponse::sse(openai::tool_call_answer(
            &format!("c{i}"),
            "fetch_url",
            &[r#"{"url": "http://no-such-host.invalid/"}"#],
        ))
    });
    let sandbox = Sandbox::new();
    sandbox.user_config("[limits]\nmax_network_requests = 1\n");
    let out = run(&sandbox, &server, "fetch", &["--auto-approve"]).await;
    assert_eq!(out.code, Some(1), "stderr: {}", out.stderr);
    // The first fetch spent the one request (its name does not resolve); the second was refused
    // for the budget, and the model was not asked a third time.
    let results = out.of_type("tool_result");
    assert_eq!(results.len(), 2, "{:?}", out.lines);
    assert_eq!(
        results[1]["result"]["error"]["code"],
        "network_budget_exhausted"
    );
    assert_eq!(out.of_type("error")[0]["code"], "network_budget_exhausted");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn one_endless_sse_line_fails_with_model_output_too_large_at_the_output_limit() {
    // `data: xxxx…`, 5 MiB without a line end, in 1 MiB chunks: more than the whole answer may
    // be (4 MiB by default), so it is refused as too large, not read to the end and called cut.
    let server = ScriptedServer::start().await;
    let mut chunks = vec![format!("data: {}", "x".repeat(1024 * 1024 - 6))];
    chunks.extend((0..4).map(|_| "x".repeat(1024 * 1024)));
    server.push(ScriptedResponse::sse(chunks));
    let sandbox = Sandbox::new();
    let out = run(&sandbox, &server, "hi", &[]).await;
    assert_eq!(out.code, Some(1), "stderr: {}", out.stderr);
    let error = out.of_type("error")[0];
    assert_eq!(error["code"], "model_output_too_large", "{error}");
    assert_eq!(
        out.of_type("turn_completed")[0]["stop_reason"],
        "budget_exhausted"
    );
    assert_eq!(
        server.requests().len(),
        1,
        "a refused answer is not retried"
    );
}

#[tokio::test]
async fn no_tool_starts_when_no_model_call_is_left_to_read_its_result() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "a",
        "update_plan",
        PLAN_ARGS,
    )));
    let sandbox = Sandbox::new();
    let out = run(&sandbox, &server, "plan", &["--max-model-calls", "1"]).await;
    assert_ne!(out.code, Some(0));
    assert!(out.of_type("plan").is_empty(), "the tool must not run");
    assert_eq!(
        out.of_type("tool_result")[0]["result"]["error"]["code"],
        "model_call_budget_exhausted"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn an_ask_in_headless_mode_is_refused_with_approval_required() {
    const ASK: &str = "[options.tools]\n\"plan.update\" = \"ask\"\n";
    let (_, out) = plan_call_under(ASK, &[]).await;
    assert_eq!(
        out.of_type("tool_result")[0]["result"]["error"]["code"],
        "approval_required"
    );
    assert!(out.of_type("plan").is_empty());

    // The same ask with --auto-approve runs.
    let (_, out) = plan_call_under(ASK, &["--auto-approve"]).await;
    assert_eq!(out.of_type("tool_result")[0]["result"]["ok"], true);
}

#[tokio::test]
async fn a_denied_tool_is_refused_with_the_rule_that_denied_it() {
    let (_, out) = plan_call_under(
        "[options.tools]\n\"plan.update\" = \"deny\"\n",
        &["--auto-approve"],
    )
    .await;
    let error = &out.of_type("tool_result")[0]["result"]["error"];
    assert_eq!(error["code"], "denied");
    assert!(error["message"].as_str().unwrap().contains("plan.update"));
}

#[tokio::test]
async fn a_server_failing_with_500_ends_the_run_with_the_status_and_message() {
    let server = ScriptedServer::start().await;
    for _ in 0..8 {
        server.push(ScriptedResponse::error(
            500,
            "server_error",
            "the oven is on fire",
        ));
    }
    let sandbox = Sandbox::new();
    sandbox.user_config("[limits]\nstream_idle_timeout_seconds = 5\n");
    let out = run(&sandbox, &server, "hi", &[]).await;
    assert_eq!(out.code, Some(1));
    let error = out.of_type("error")[0];
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("500"), "{message}");
    assert!(message.contains("the oven is on fire"), "{message}");
    assert_eq!(out.of_type("turn_completed")[0]["stop_reason"], "error");
}

#[tokio::test]
async fn a_stream_cut_mid_way_is_an_error_not_a_silent_answer() {
    let server = ScriptedServer::start().await;
    server.push(
        ScriptedResponse::sse(openai::Stream::new().text(&["Hel", "lo"]).events()).cut_after(2),
    );
    let sandbox = Sandbox::new();
    let out = run(&sandbox, &server, "hi", &[]).await;
    assert_ne!(out.code, Some(0));
    assert!(!out.of_type("error").is_empty(), "{:?}", out.lines);
}

#[tokio::test]
async fn sigint_during_a_stream_cancels_the_turn_and_exits_130() {
    let server = ScriptedServer::start().await;
    server.push(
        ScriptedResponse::sse(openai::Stream::new().text(&["thinking"]).events()).hang_after(1),
    );
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.run_json(&server.base_url(), "hi");
    cmd.stdout(std::process::Stdio::piped());
    let child = cmd.spawn().expect("spawn");
    server.wait_for_requests(1).await;
    // Let the first chunk arrive, then interrupt like Ctrl-C does.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let pid = child.id().expect("pid") as i32;
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).expect("pid"),
        rustix::process::Signal::INT,
    )
    .expect("kill");
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("pablo stopped after SIGINT")
        .expect("wait");
    assert_eq!(out.status.code(), Some(130));
    let lines = json_lines(&out.stdout);
    let kinds = types(&lines);
    assert_eq!(kinds.last().map(String::as_str), Some("turn_completed"));
    let done = lines.last().unwrap();
    assert_eq!(done["stop_reason"], "cancelled");
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "error" && l["code"] == "cancelled")
    );
}

/// The session directories (`pablo-…`) under `tmp`.
fn session_dirs(tmp: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("pablo-"))
        .collect()
}

/// `pablo run --json` with its own `TMPDIR`, started against a model whose answer never ends;
/// returns once the model was asked.
async fn hanging_run(
    sandbox: &Sandbox,
    server: &ScriptedServer,
    tmp: &std::path::Path,
) -> tokio::process::Child {
    server.push(
        ScriptedResponse::sse(openai::Stream::new().text(&["thinking"]).events()).hang_after(1),
    );
    let mut cmd = sandbox.run_json(&server.base_url(), "hi");
    cmd.env("TMPDIR", tmp).stdout(std::process::Stdio::piped());
    let child = cmd.spawn().expect("spawn");
    server.wait_for_requests(server.requests().len() + 1).await;
    child
}

fn signal(child: &tokio::process::Child, signal: rustix::process::Signal) {
    let pid = child.id().expect("pid") as i32;
    rustix::process::kill_process(rustix::process::Pid::from_raw(pid).expect("pid"), signal)
        .expect("kill");
}

#[tokio::test]
async fn sigterm_cancels_the_turn_ends_with_an_error_line_exits_143_and_removes_its_temp_dir() {
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    let tmp = sandbox.root().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let child = hanging_run(&sandbox, &server, &tmp).await;
    assert_eq!(session_dirs(&tmp).len(), 1, "the session has its directory");
    signal(&child, rustix::process::Signal::TERM);
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("pablo stopped after SIGTERM")
        .expect("wait");
    assert_eq!(out.status.code(), Some(143));
    let lines = json_lines(&out.stdout);
    let error = lines
        .iter()
        .find(|l| l["type"] == "error")
        .unwrap_or_else(|| panic!("no error line: {lines:?}"));
    assert_eq!(error["code"], "terminated", "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("SIGTERM"),
        "{error}"
    );
    let done = lines.last().unwrap();
    assert_eq!(done["type"], "turn_completed");
    assert_eq!(done["stop_reason"], "cancelled");
    assert_eq!(session_dirs(&tmp), Vec::<String>::new());
}

#[tokio::test]
async fn the_temp_dir_a_killed_run_left_is_removed_by_the_next_start() {
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    let tmp = sandbox.root().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut child = hanging_run(&sandbox, &server, &tmp).await;
    signal(&child, rustix::process::Signal::KILL);
    child.wait().await.unwrap();
    let left = session_dirs(&tmp);
    assert_eq!(left.len(), 1, "kill -9 leaves the directory: {left:?}");
    // A directory of another session that still runs (its lock is held) must stay.
    let live = tmp.join("pablo-0123456789abcdef0123456789abcdef");
    std::fs::create_dir(&live).unwrap();
    let owner = std::fs::File::create(live.join(".owner")).unwrap();
    rustix::fs::flock(&owner, rustix::fs::FlockOperation::LockExclusive).unwrap();
    server.push(ScriptedResponse::sse(openai::text_answer("hello")));
    let mut cmd = sandbox.run_json(&server.base_url(), "hi");
    cmd.env("TMPDIR", &tmp);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        session_dirs(&tmp),
        vec!["pablo-0123456789abcdef0123456789abcdef".to_string()]
    );
}

#[tokio::test]
async fn traces_at_the_most_verbose_level_never_hold_keys_arguments_or_content() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "a",
        "update_plan",
        &[r#"{"items": [{"content": "ARGUMENT-SECRET-2", "status": "pending"}]}"#],
    )));
    server.push(ScriptedResponse::sse(openai::text_answer(
        "MODEL-SECRET-3 done",
    )));
    let sandbox = Sandbox::new();
    let log = sandbox.root().join("trace.log");
    let mut cmd = sandbox.run_json(&server.base_url(), "TASK-SECRET-1");
    cmd.env("OPENAI_API_KEY", "sk-KEY-SECRET-0")
        .env("PABLO_LOG", "trace")
        .env("PABLO_LOG_FILE", &log);
    let out = cmd.output().await.expect("run");
    assert_eq!(out.status.code(), Some(0));
    // The key did reach the server, so the test would see it if it leaked.
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer sk-KEY-SECRET-0")
    );
    let trace = std::fs::read_to_string(&log).expect("trace written");
    for span in ["\"turn\"", "\"model_call\"", "\"tool_call\""] {
        assert!(trace.contains(span), "no {span} span in trace:\n{trace}");
    }
    for secret in [
        "KEY-SECRET-0",
        "TASK-SECRET-1",
        "ARGUMENT-SECRET-2",
        "MODEL-SECRET-3",
        sandbox.workspace().to_str().unwrap(),
    ] {
        assert!(!trace.contains(secret), "{secret} leaked into the trace");
    }
    // Spans record decisions and counts.
    assert!(trace.contains("\"decision\":\"allow\""), "{trace}");
}

#[tokio::test]
async fn an_untrusted_project_config_cannot_choose_the_shell_launcher() {
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    let project = sandbox.workspace().join(".pablo");
    std::fs::create_dir_all(&project).unwrap();
    // A repository that tries to run every command through a program of its choosing.
    std::fs::write(
        project.join("config.toml"),
        "[options.shell]\nlauncher = \"/bin/false\"\n",
    )
    .unwrap();
    let call = |id: &str| {
        ScriptedResponse::sse(openai::tool_call_answer(
            id,
            "shell_run",
            &[r#"{"command": "echo launched-by-sh"}"#],
        ))
    };
    server.push(call("a"));
    server.push(ScriptedResponse::sse(openai::text_answer("ok")));
    let out = run(&sandbox, &server, "echo", &["--auto-approve"]).await;
    let result = &out.of_type("tool_result")[0]["result"];
    assert_eq!(result["data"]["exit_code"], 0, "{result}");
    assert!(
        result["data"]["output"]
            .as_str()
            .unwrap()
            .contains("launched-by-sh"),
        "{result}"
    );
    // The ignored setting is reported once, on stderr (stdout is the run's JSON lines).
    assert_eq!(
        out.stderr.matches("options.shell.launcher").count(),
        1,
        "the ignored setting is reported: {}",
        out.stderr
    );
    assert!(out.stderr.contains("not trusted"), "{}", out.stderr);
    assert!(
        !out.lines
            .iter()
            .any(|l| l["type"] == "warning" && l["message"].as_str().unwrap().contains("launcher")),
        "{:?}",
        out.lines
    );

    // The same setting in the person's own config is obeyed (and /bin/false runs nothing).
    sandbox.user_config("[options.shell]\nlauncher = \"/bin/false\"\n");
    std::fs::remove_file(project.join("config.toml")).unwrap();
    server.push(call("b"));
    server.push(ScriptedResponse::sse(openai::text_answer("ok")));
    let out = run(&sandbox, &server, "echo", &["--auto-approve"]).await;
    let result = &out.of_type("tool_result")[0]["result"];
    assert_eq!(result["data"]["exit_code"], 1, "{result}");
}

#[tokio::test]
async fn a_call_to_a_tool_that_does_not_exist_is_refused_with_unknown_tool() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "a",
        "rm_everything",
        &[r#"{}"#],
    )));
    server.push(ScriptedResponse::sse(openai::text_answer("ok")));
    let sandbox = Sandbox::new();
    let out = run(&sandbox, &server, "go", &[]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let error = &out.of_type("tool_result")[0]["result"]["error"];
    assert_eq!(error["code"], "unknown_tool");
    assert!(error["message"].as_str().unwrap().contains("rm_everything"));
}

#[tokio::test]
async fn arguments_over_the_limit_are_refused_before_the_tool_runs() {
    let (_, out) = plan_call_under("[limits]\nmax_tool_argument_bytes = 16\n", &[]).await;
    assert_eq!(
        out.of_type("tool_result")[0]["result"]["error"]["code"],
        "arguments_too_large"
    );
    assert!(out.of_type("plan").is_empty(), "the tool must not run");
}

#[tokio::test]
async fn a_result_over_the_serialized_bound_reaches_the_model_as_result_too_large() {
    let (server, out) = plan_call_under("[limits]\nmax_tool_result_bytes = 20\n", &[]).await;
    let result = &out.of_type("tool_result")[0]["result"];
    assert_eq!(result["error"]["code"], "result_too_large", "{result}");
    assert_eq!(
        tool_messages(&server, 1)[0]["error"]["code"],
        "result_too_large"
    );
}

#[tokio::test]
async fn a_request_context_over_the_limit_sends_nothing_and_fails_clearly() {
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    sandbox.user_config("[limits]\nmax_request_context_bytes = 100\n");
    let out = run(&sandbox, &server, "hello", &[]).await;
    assert_ne!(out.code, Some(0));
    assert_eq!(out.of_type("error")[0]["code"], "context_too_large");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn the_run_deadline_stops_a_hanging_turn_with_deadline_exceeded() {
    let server = ScriptedServer::start().await;
    server.push(
        ScriptedResponse::sse(openai::Stream::new().text(&["thinking"]).events()).hang_after(1),
    );
    let sandbox = Sandbox::new();
    sandbox.user_config("[limits]\nrun_deadline_seconds = 1\n");
    let out = run(&sandbox, &server, "hello", &[]).await;
    // A spent budget, not an interrupt: exit 1 (not 130) and no `cancelled` line.
    assert_eq!(out.code, Some(1), "{:?}", out.lines);
    let codes: Vec<&str> = out
        .of_type("error")
        .iter()
        .map(|e| e["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["deadline_exceeded"]);
    assert_eq!(
        out.of_type("turn_completed")[0]["stop_reason"],
        "budget_exhausted"
    );
}

#[tokio::test]
async fn a_model_server_on_loopback_is_reached_directly_whatever_the_proxy_variables_say() {
    // Nothing listens on port 9 (discard) here: a request routed through this "proxy" fails.
    let dead_proxy = "http://127.0.0.1:9";
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::text_answer("direct")));
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.run_json(&server.base_url(), "hello");
    for var in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        cmd.env(var, dead_proxy);
    }
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("pablo run finished within 60 s")
        .expect("pablo runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(server.requests().len(), 1);
    let lines = json_lines(&out.stdout);
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "message" && l["text"] == "direct"),
        "{lines:?}"
    );
}

#[tokio::test]
async fn max_tool_calls_zero_offers_no_tool_to_the_model() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::text_answer(
        "No tools, fine.",
    )));
    let sandbox = Sandbox::new();
    let out = run(&sandbox, &server, "look around", &["--max-tool-calls", "0"]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let body = server.requests()[0].json();
    assert!(
        body.get("tools")
            .is_none_or(|t| t.as_array().is_some_and(|a| a.is_empty())),
        "tools were offered: {}",
        body["tools"]
    );
}

#[tokio::test]
async fn result_too_large_after_a_command_says_it_already_ran_with_its_exit_code() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "call_1",
        "shell_run",
        &[r#"{"command": "seq 1 3000; exit 3"}"#],
    )));
    server.push(ScriptedResponse::sse(openai::text_answer("ok")));
    let sandbox = Sandbox::new();
    sandbox.user_config("[limits]\nmax_tool_result_bytes = 2000\n");
    let out = run(&sandbox, &server, "count", &["--auto-approve"]).await;
    let result = &tool_messages(&server, 1)[0];
    assert_eq!(result["error"]["code"], "result_too_large", "{result}");
    let message = result["error"]["message"].as_str().unwrap();
    assert!(message.contains("already ran"), "{message}");
    assert!(message.contains("exited with code 3"), "{message}");
    assert!(message.contains("do not run it again"), "{message}");
    assert!(
        message.contains("Its result serialized to") && !message.contains("Its the"),
        "{message}"
    );
    assert_eq!(result["error"]["data"]["exit_code"], 3, "{result}");
    assert_eq!(&out.of_type("tool_result")[0]["result"], result);
}

/// Values planted in pablo's environment: a provider key and a secret-looking variable.
const PLANTED_KEY: &str = "sk-planted-7a3f91c2e4";
const PLANTED_TOKEN: &str = "ghp_planted0d5e8b71c3";

#[tokio::test]
async fn an_approved_command_cannot_read_the_key_from_pablo_and_echoed_secrets_are_redacted() {
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    // Under the default sandbox the read of pablo's environment block is refused outright
    // (Landlock keeps a command out of every process outside its sandbox, and the command's user
    // namespace holds no right over a non-dumpable pablo); the block's wipe itself is what a
    // command without namespaces would meet.
    // pablo's own environment block, upper-cased so redaction could not hide a value found there.
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "call_1",
        "shell_run",
        &[r#"{"command": "tr '\\0' '\\n' < /proc/$PPID/environ | tr a-z A-Z"}"#],
    )));
    // The secrets assembled at run time: the command line itself holds neither.
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "call_2",
        "shell_run",
        &[r#"{"command": "printf '%s%s\\n' sk-planted- 7a3f91c2e4 ghp_planted 0d5e8b71c3"}"#],
    )));
    server.push(ScriptedResponse::sse(openai::text_answer("done")));
    let mut cmd = sandbox.command();
    cmd.env("OPENAI_API_KEY", PLANTED_KEY)
        .env("GITHUB_TOKEN", PLANTED_TOKEN)
        .args([
            "--provider",
            "openai",
            "--model",
            "test-model",
            "--base-url",
        ])
        .arg(server.base_url())
        .args(["run", "--auto-approve", "read the environment"]);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The key still reached the provider, where it belongs.
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some(format!("Bearer {PLANTED_KEY}").as_str())
    );
    let results = tool_messages(&server, 2);
    let environ = results[0]["data"]["output"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", results[0]));
    // The read was attempted and refused...
    assert!(environ.contains("Permission denied"), "{environ}");
    // ...and neither value is in what came back, in any case.
    for secret in [PLANTED_KEY, PLANTED_TOKEN] {
        assert!(!environ.contains(&secret.to_uppercase()), "{environ}");
    }
    // What a command prints of a secret is redacted before the model sees it...
    let echoed = results[1]["data"]["output"].as_str().unwrap();
    assert_eq!(echoed, "[redacted]\n[redacted]\n", "{}", results[1]);
    // ...and neither the answer nor the progress (stderr) ever holds the value.
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    for secret in [PLANTED_KEY, PLANTED_TOKEN] {
        assert!(!stdout.contains(secret), "{stdout}");
        assert!(!stderr.contains(secret), "{stderr}");
    }
    let sessions = sandbox.data_dir().join("sessions");
    let mut journals = 0;
    for entry in std::fs::read_dir(&sessions).unwrap().flatten() {
        if entry.path().extension().is_some_and(|e| e == "jsonl") {
            journals += 1;
            let text = std::fs::read_to_string(entry.path()).unwrap();
            assert!(text.contains("[redacted]"), "{text}");
            for secret in [PLANTED_KEY, PLANTED_TOKEN] {
                assert!(!text.contains(secret), "the journal holds {secret}");
            }
        }
    }
    assert_eq!(journals, 1);
    for secret in [PLANTED_KEY, PLANTED_TOKEN] {
        assert!(
            !stdout.contains(secret),
            "the screen shows {secret}: {stdout}"
        );
        for r in server.requests() {
            assert!(
                !r.json()["messages"].to_string().contains(secret),
                "the model got {secret}"
            );
        }
    }
}

#[tokio::test]
async fn with_read_roots_listing_and_searching_the_root_show_nothing_outside_them() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "call_1",
        "fs_list",
        &[r#"{"path": "."}"#],
    )));
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "call_2",
        "fs_search",
        &[r#"{"query": "needle"}"#],
    )));
    server.push(ScriptedResponse::sse(openai::text_answer("ok")));
    let sandbox = Sandbox::new();
    let ws = sandbox.workspace();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(ws.join("acquisition-plans")).unwrap();
    std::fs::write(ws.join("src/lib.rs"), "// needle in the code\n").unwrap();
    std::fs::write(ws.join("acquisition-plans/target.md"), "needle: buy them\n").unwrap();
    std::fs::write(ws.join("payroll.csv"), "needle,100\n").unwrap();
    sandbox.user_config("[options.filesystem]\nread_roots = [\"src\"]\n");
    let out = run(&sandbox, &server, "look", &[]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let results = tool_messages(&server, 2);
    let listing = results[0].to_string();
    assert!(listing.contains("\"src\""), "{listing}");
    assert!(!listing.contains("acquisition-plans"), "{listing}");
    assert!(!listing.contains("payroll"), "{listing}");
    let search = &results[1];
    let paths: Vec<&str> = search["data"]["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["src/lib.rs"], "{search}");
}

#[tokio::test]
async fn agents_md_over_the_cap_is_cut_from_the_root_side_so_the_nearest_file_reaches_the_model() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::text_answer("ok")));
    let sandbox = Sandbox::new();
    let repo = sandbox.workspace();
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(repo.join("crate")).unwrap();
    // Well over the 32 KiB cap on its own.
    let root_rules: String = (0..4_000).map(|i| format!("root rule {i}\n")).collect();
    std::fs::write(repo.join("AGENTS.md"), &root_rules).unwrap();
    std::fs::write(repo.join("crate/AGENTS.md"), "nearest rule: use tabs\n").unwrap();
    let mut cmd = sandbox.run_json(&server.base_url(), "hello");
    cmd.current_dir(repo.join("crate"));
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .unwrap()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let body = server.requests()[0].json();
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert_eq!(body["messages"][0]["role"], "system");
    assert!(
        system.trim_end().ends_with("nearest rule: use tabs"),
        "{}",
        &system[system.len().saturating_sub(200)..]
    );
    assert!(
        system.contains("root rule 3999"),
        "the end of the root file stays"
    );
    assert!(
        !system.contains("root rule 0\n"),
        "the start of the root file goes"
    );
    // And the person is told what was left out.
    let lines = json_lines(&out.stdout);
    let warned = lines.iter().any(|l| {
        l["type"] == "warning"
            && l["message"]
                .as_str()
                .is_some_and(|m| m.contains("AGENTS.md") && m.contains("nearest file"))
    });
    assert!(warned, "{lines:?}");
}

#[tokio::test]
async fn a_project_tui_mode_is_ignored_with_a_warning_like_other_ignored_settings() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::text_answer("ok")));
    let sandbox = Sandbox::new();
    let dir = sandbox.workspace().join(".pablo");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), "[tui]\nmode = \"plan\"\n").unwrap();
    let out = run(&sandbox, &server, "hi", &[]).await;
    assert_eq!(out.code, Some(0), "stderr: {}", out.stderr);
    let warnings: Vec<&str> = out
        .of_type("warning")
        .iter()
        .map(|w| w["message"].as_str().unwrap())
        .collect();
    assert!(
        warnings.iter().any(|w| w.contains("[tui] mode ignored")),
        "{warnings:?}"
    );
}

#[tokio::test]
async fn a_mention_spelled_like_a_file_that_is_not_there_is_warned_about_and_a_word_is_not() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::text_answer("ok")));
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "a note\n").unwrap();
    let out = run(
        &sandbox,
        &server,
        "compare @notes.txt with @missing.txt and @src/gone, mind @property",
        &[],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let warnings: Vec<&str> = out
        .lines
        .iter()
        .filter(|l| l["type"] == "warning")
        .map(|l| l["message"].as_str().unwrap())
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].contains("@missing.txt was not attached"),
        "{warnings:?}"
    );
    assert!(
        warnings[1].contains("@src/gone was not attached"),
        "{warnings:?}"
    );
    // The file that is there went with the prompt.
    let sent = server.requests()[0].json().to_string();
    assert!(sent.contains("a note"), "{sent}");
}

#[tokio::test]
async fn the_calls_a_spent_budget_stops_are_named_by_their_native_names() {
    let server = ScriptedServer::start().await;
    let read = serde_json::json!({"path": "notes.txt"}).to_string();
    server.push(ScriptedResponse::sse(
        openai::Stream::new()
            .tool_call(0, "r1", "fs_read", &[&read])
            .tool_call(1, "r2", "fs_read", &[&read])
            .tool_call(2, "r3", "fs_read", &[&read])
            .finish("tool_calls")
            .usage(10, 5)
            .done(),
    ));
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "a note\n").unwrap();
    let out = run(&sandbox, &server, "read thrice", &["--max-tool-calls", "1"]).await;
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let results: Vec<&Value> = out
        .lines
        .iter()
        .filter(|l| l["type"] == "tool_result")
        .map(|l| &l["result"])
        .collect();
    assert_eq!(results.len(), 3, "{results:#?}");
    assert_eq!(results[1]["error"]["code"], "tool_call_budget_exhausted");
    assert_eq!(results[2]["error"]["code"], "not_run");
    for r in &results[1..] {
        let message = r["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("fs.read was not run"), "{message}");
        assert!(!message.contains("fs_read"), "{message}");
    }
}
