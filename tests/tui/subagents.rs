//! A subagent in plain `pablo` (a config file, no flags) in a real terminal: its cell shows its
//! label and what it does, its command is asked for under its name, and Esc stops it with the
//! turn, leaving no process behind.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::bin::Sandbox;
use crate::support::http::{RecordedRequest, ScriptedResponse, ScriptedServer, openai};

use super::Terminal;

/// A command line no other test runs, to find its process.
const SLEEP: &str = "sleep 47.31";

fn is_subagent(r: &RecordedRequest) -> bool {
    r.json()["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.contains("# You are a subagent"))
}

/// Whether a process runs `SLEEP` now.
fn sleep_runs() -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).replace('\0', " ").trim() == SLEEP)
    })
}

fn wait_until(what: &str, f: impl Fn() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn esc_during_a_subagents_command_stops_it_and_leaves_no_process() {
    let server = ScriptedServer::start().await;
    server.respond_with(|r, _| {
        let answered = r.json()["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        if is_subagent(r) {
            ScriptedResponse::sse(openai::tool_call_answer(
                "s1",
                "shell_run",
                &[&json!({"command": SLEEP}).to_string()],
            ))
        } else if answered {
            ScriptedResponse::sse(openai::text_answer("stopped"))
        } else {
            ScriptedResponse::sse(openai::tool_call_answer(
                "call_task",
                "agent_task",
                &[
                    &json!({"description": "wait a while", "prompt": "run the long check",
                    "agent": "runner"})
                    .to_string(),
                ],
            ))
        }
    });
    let sandbox = Sandbox::new();
    sandbox.user_config(&format!(
        "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n",
        server.base_url()
    ));
    let agents = sandbox.config_dir().join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("runner.md"),
        "---\nname: runner\ndescription: Runs checks\ntools: Bash\n---\nRun what you are asked.\n",
    )
    .unwrap();
    let mut t = Terminal::spawn_with(&sandbox, &[], &[("OPENAI_API_KEY", "sk-test-key")]);
    t.wait_for("Ask pablo to do something");
    t.send("check it\r");
    t.wait_for("runner: wait a while");
    t.wait_for("asked by the subagent runner: wait a while");
    t.wait_for(SLEEP);
    t.send("y");
    wait_until("the subagent's command started", sleep_runs);
    t.wait_for(&format!("shell.run {SLEEP}"));
    t.send("\x1b");
    t.wait_for("Ask pablo to do something");
    wait_until("the subagent's command is gone", || !sleep_runs());
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}
