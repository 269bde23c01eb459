//! The one tool-call pipeline (crates/agent/src/call), through the real binary: every call, an
//! `agent.task` included, visits admit, pre-hooks, judge, approve, commit, post-hooks and report
//! once each and in that order, a command is parsed once per call (however many looks the hooks,
//! the judgement and the final check take at it), and the hooks of an `agent.task` call fire
//! as they do for any other tool.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::bin::Sandbox;
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};
use crate::support::run::{Run, call, run_within, say};

const SUBAGENT_MARK: &str = "# You are a subagent";
const STAGES: [&str; 7] = [
    "admit",
    "pre_hooks",
    "judge",
    "approve",
    "commit",
    "post_hooks",
    "report",
];

/// A hook program outside the workspace.
fn script(sandbox: &Sandbox, name: &str, body: &str) -> PathBuf {
    let path = sandbox.root().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn toml_path(p: &Path) -> String {
    format!("{:?}", p.display().to_string())
}

fn is_subagent(body: &Value) -> bool {
    body["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.contains(SUBAGENT_MARK))
}

fn tool_results_so_far(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count())
}

/// Plain `pablo run --json TASK` with a debug trace written to `trace`.
async fn run_traced(sandbox: &Sandbox, server: &ScriptedServer, trace: &Path) -> Run {
    let mut cmd = sandbox.run_json(&server.base_url(), "look, then delegate");
    cmd.env("PABLO_LOG", "debug").env("PABLO_LOG_FILE", trace);
    run_within(cmd, std::time::Duration::from_secs(60)).await
}

/// The trace's events about `call_id`: the stages it entered, in order, and its parse count.
fn stages_of(trace: &str, call_id: &str) -> (Vec<String>, Option<u64>) {
    let mut stages = Vec::new();
    let mut parses = None;
    for line in trace.lines() {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let fields = &event["fields"];
        if fields["call_id"] != call_id {
            continue;
        }
        if let Some(stage) = fields["stage"].as_str() {
            stages.push(stage.to_string());
        }
        if let Some(n) = fields["parses"].as_u64() {
            parses = Some(n);
        }
    }
    (stages, parses)
}

#[tokio::test]
async fn a_command_and_an_agent_task_each_visit_every_stage_once_and_the_command_is_parsed_once() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "needle\nhay\n").unwrap();
    let inputs = sandbox.root().join("pre-inputs.jsonl");
    // A guard that looks into commands (so the matcher reads the command too) and lets all pass.
    let pre = script(
        &sandbox,
        "pre.sh",
        &format!("cat >> {0}\necho >> {0}", inputs.display()),
    );
    let post = script(
        &sandbox,
        "post.sh",
        "cat > /dev/null\necho '{\"hookSpecificOutput\":{\"hookEventName\":\"PostToolUse\",\
         \"additionalContext\":\"checked by post\"}}'",
    );
    sandbox.user_config(&format!(
        "[[hooks.pre_tool_use]]\nname = \"watch-commands\"\nmatcher = 'shell\\.run'\n\
         command_matcher = '^grep'\ncommand = {0}\n\n\
         [[hooks.pre_tool_use]]\nname = \"watch-tasks\"\nmatcher = 'agent\\.task'\n\
         command = {0}\n\n\
         [[hooks.post_tool_use]]\nname = \"note\"\nmatcher = 'agent\\.task|shell\\.run'\n\
         command = {1}\n",
        toml_path(&pre),
        toml_path(&post)
    ));
    let server = ScriptedServer::start().await;
    server.respond_with(|r, _| {
        let body = r.json();
        if is_subagent(&body) {
            return ScriptedResponse::sse(openai::text_answer("The needle is on line 1."));
        }
        match tool_results_so_far(&body) {
            0 => call(
                "c1",
                "shell_run",
                &json!({"command": "grep -c needle notes.txt"}),
            ),
            1 => call(
                "c2",
                "agent_task",
                &json!({"description": "find it", "prompt": "Where is the needle?"}),
            ),
            _ => say("done"),
        }
    });
    let trace = sandbox.root().join("trace.jsonl");
    let out = run_traced(&sandbox, &server, &trace).await.succeeded();
    let trace = std::fs::read_to_string(&trace).unwrap();

    let results = out.results();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0]["ok"], true, "{}", results[0]);
    assert_eq!(results[1]["ok"], true, "{}", results[1]);
    assert_eq!(results[1]["data"]["answer"], "The needle is on line 1.");

    for id in ["c1", "c2"] {
        let (stages, parses) = stages_of(&trace, id);
        assert_eq!(stages, STAGES, "call {id}");
        let expected = if id == "c1" { 1 } else { 0 };
        assert_eq!(parses, Some(expected), "call {id}");
    }

    // The agent.task call met both hooks: the pre hook read it, the post hook's note is in the
    // result the parent model read.
    let seen = std::fs::read_to_string(&inputs).unwrap();
    let tools: Vec<String> = seen
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["tool_name"].to_string())
        .collect();
    assert_eq!(tools, ["\"shell.run\"", "\"agent.task\""], "{seen}");
    assert_eq!(results[1]["data"]["hook_notes"][0]["hook"], "note");
    assert_eq!(
        results[1]["data"]["hook_notes"][0]["note"],
        "checked by post"
    );
    let hooks: Vec<(String, String)> = out
        .of_type("hook")
        .iter()
        .filter(|h| h["call_id"] == "c2")
        .map(|h| {
            (
                h["event"].as_str().unwrap().to_string(),
                h["hook"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        hooks,
        [
            ("pre_tool_use".to_string(), "watch-tasks".to_string()),
            ("post_tool_use".to_string(), "note".to_string())
        ]
    );
}

#[tokio::test]
async fn a_guard_blocks_an_agent_task_call_and_no_subagent_starts() {
    let sandbox = Sandbox::new();
    let guard = script(
        &sandbox,
        "guard.sh",
        "cat > /dev/null\necho 'no delegation in this repository' >&2\nexit 2",
    );
    sandbox.user_config(&format!(
        "[[hooks.pre_tool_use]]\nname = \"no-tasks\"\nmatcher = 'agent\\.task'\ncommand = {}\n",
        toml_path(&guard)
    ));
    let server = ScriptedServer::start().await;
    server.push(call(
        "c1",
        "agent_task",
        &json!({"description": "find it", "prompt": "Where is the needle?"}),
    ));
    server.push(say("ok, I will look myself"));
    let trace = sandbox.root().join("trace.jsonl");
    let out = run_traced(&sandbox, &server, &trace).await.succeeded();
    let result = out.results()[0];
    assert_eq!(result["error"]["code"], "hook_blocked", "{result}");
    let message = result["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("agent.task was blocked by hook no-tasks: no delegation"),
        "{message}"
    );
    assert!(out.of_type("subagent_started").is_empty());
    assert!(
        server.requests().iter().all(|r| !is_subagent(&r.json())),
        "a subagent asked the model"
    );
    // The call stopped at the hooks and was reported.
    let trace = std::fs::read_to_string(&trace).unwrap();
    let (stages, _) = stages_of(&trace, "c1");
    assert_eq!(stages, ["admit", "pre_hooks", "report"]);
}
