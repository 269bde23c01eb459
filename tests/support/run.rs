//! One `pablo run --json` of the real binary against a scripted provider, and what it printed:
//! the setup the areas that test through headless runs (hooks, MCP, subagents) share.

use std::time::Duration;

use serde_json::Value;

use super::bin::{Sandbox, json_lines};
use super::http::{ScriptedResponse, ScriptedServer, openai};

/// The model asks for one call of `name` with `args`.
pub fn call(id: &str, name: &str, args: &Value) -> ScriptedResponse {
    ScriptedResponse::sse(openai::tool_call_answer(id, name, &[&args.to_string()]))
}

/// The model answers `text` and asks for nothing.
pub fn say(text: &str) -> ScriptedResponse {
    ScriptedResponse::sse(openai::text_answer(text))
}

/// What one `pablo run --json` printed.
pub struct Run {
    pub code: Option<i32>,
    pub lines: Vec<Value>,
    pub stderr: String,
}

impl Run {
    /// The lines of type `t`, in order.
    pub fn of_type(&self, t: &str) -> Vec<&Value> {
        self.lines.iter().filter(|l| l["type"] == t).collect()
    }

    /// The results of the main conversation's tool calls, in order.
    pub fn results(&self) -> Vec<&Value> {
        self.of_type("tool_result")
            .into_iter()
            .map(|l| &l["result"])
            .collect()
    }

    /// The run, after checking that it exited with status 0 (else its stderr and lines).
    pub fn succeeded(self) -> Self {
        assert_eq!(
            self.code,
            Some(0),
            "stderr: {}\n{:#?}",
            self.stderr,
            self.lines
        );
        self
    }
}

/// Runs `cmd` (a `pablo run --json`) to its end, within `limit` (a safety net, not a timing
/// assertion).
pub async fn run_within(mut cmd: tokio::process::Command, limit: Duration) -> Run {
    let out = tokio::time::timeout(limit, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("pablo run finished within {} s", limit.as_secs()))
        .expect("pablo runs");
    Run {
        code: out.status.code(),
        lines: json_lines(&out.stdout),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `pablo run --json TASK` against `server` with `flags`, no other flag.
pub async fn run_json(
    sandbox: &Sandbox,
    server: &ScriptedServer,
    task: &str,
    flags: &[&str],
) -> Run {
    let mut cmd = sandbox.run_json(&server.base_url(), task);
    cmd.args(flags);
    run_within(cmd, Duration::from_secs(60)).await
}

/// Runs a `pablo` command to its end (at most 60 s): its exit code, stdout and stderr.
pub async fn output(mut cmd: tokio::process::Command) -> (Option<i32>, String, String) {
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("pablo finished within 60 s")
        .expect("pablo runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
