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

/// A formatter as a person writes one for `file_changed`: it reads the hook's JSON on stdin and
/// rewrites the changed file in place (here: upper case).
const FORMATTER: &str = r#"input=$(cat)
f=$(printf '%s' "$input" | sed -n 's/.*"file_path":"\([^"]*\)".*/\1/p')
tr a-z A-Z < "$f" > "$f.fmt" && cat "$f.fmt" > "$f" && rm "$f.fmt"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_formatter_hooks_rewrite_belongs_to_the_turn_so_undo_restores_it_and_the_model_hears_of_it()
 {
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    let script = sandbox.root().join("fmt.sh");
    std::fs::write(&script, FORMATTER).unwrap();
    sandbox.user_config(&format!(
        "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n\n\
         [[hooks.file_changed]]\nname = \"fmt\"\ncommand = \"sh {}\"\n",
        server.base_url(),
        script.display()
    ));
    let ws = sandbox.workspace();
    std::fs::write(ws.join("notes.txt"), "hello\n").unwrap();
    let args = json!({
        "path": "notes.txt",
        "text": "hello world\n",
        "expected_revision": crate::support::revision_of(b"hello\n"),
    })
    .to_string();
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "w1",
        "fs_write",
        &[&args],
    )));
    server.push(ScriptedResponse::sse(openai::text_answer("Written.")));
    server.push(ScriptedResponse::sse(openai::text_answer("Noted.")));
    let mut t = Terminal::spawn_with(&sandbox, &[], &[("OPENAI_API_KEY", "sk-test-key")]);
    t.wait_for("Ask pablo to do something");
    t.send("greet the world\r");
    t.wait_for("Apply this change to notes.txt?");
    t.send("y");
    t.wait_for("Written.");
    t.wait_for("Ask pablo to do something");
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "HELLO WORLD\n",
        "the formatter ran"
    );
    // The formatter's rewrite is the turn's own: undo offers the file and takes both back.
    t.send("/undo\r");
    t.wait_for("restore 1 file");
    t.send("y");
    t.wait_for("Undid turn 1");
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "hello\n"
    );
    t.send("what now?\r");
    t.wait_for("Noted.");
    let asked = server.last_user_text();
    assert!(
        asked.contains("the file_changed hook rewrote notes.txt after this turn's change"),
        "{asked}"
    );
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}
