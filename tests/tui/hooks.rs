//! Hooks as a person meets them in plain `pablo` (a config file, no flags): a guard's block in
//! the tool's cell, and what the other hooks decided as a line of the transcript.

use serde_json::json;

use crate::support::bin::Sandbox;
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

use super::Terminal;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_that_exits_2_shows_blocked_by_hook_in_the_tool_cell_and_nothing_runs() {
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    sandbox.user_config(&format!(
        "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n\n\
         [[hooks.pre_tool_use]]\nname = \"lint-guard\"\nmatcher = 'shell\\.run'\n\
         command = \"cat > /dev/null; echo 'no touching files' >&2; exit 2\"\n\n\
         [[hooks.user_prompt_submit]]\nname = \"branch\"\n\
         command = \"cat > /dev/null; echo 'current branch: feature-x'\"\n",
        server.base_url()
    ));
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "call_1",
        "shell_run",
        &[&json!({"command": "touch hooked.txt"}).to_string()],
    )));
    server.push(ScriptedResponse::sse(openai::text_answer("Understood.")));
    let mut t = Terminal::spawn_with(&sandbox, &[], &[("OPENAI_API_KEY", "sk-test-key")]);
    t.wait_for("Ask pablo to do something");
    t.send("touch a file\r");
    t.wait_for("blocked by hook lint-guard: no touching files");
    t.wait_for("Understood.");
    t.wait_for("hook branch (user_prompt_submit) added context for the model");
    // Asked for nothing: the guard decided before policy would have asked.
    assert!(!t.screen().contains("Run this command?"), "{}", t.screen());
    assert!(!sandbox.workspace().join("hooked.txt").exists());
    let first = server.requests()[0].json();
    assert!(
        first.to_string().contains("current branch: feature-x"),
        "the prompt's context did not reach the request"
    );
    t.wait_for("Ask pablo to do something");
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}
