//! `[tui] statusline_command` as a person meets it in plain `pablo` (a config file, no flags): the
//! line their script prints is in the status line, a slow script holds nothing, and a
//! repository's own script runs only once the folder is trusted. Also the line that ends each
//! turn with its model calls.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::bin::Sandbox;
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

use super::Terminal;

/// A status line script as a person writes one: it reads the JSON on stdin, keeps a copy (and
/// the environment it was given) for the test, and prints the model's id and the turns so far,
/// in green, with a window-title escape that must not reach the terminal.
fn script(dir: &Path) -> String {
    format!(
        r#"input=$(cat)
printf '%s' "$input" > '{dir}/input.json'
env > '{dir}/env.txt'
model=$(printf '%s' "$input" | sed -n 's/.*"model":{{"id":"\([^"]*\)".*/\1/p')
turns=$(printf '%s' "$input" | sed -n 's/.*"turns":\([0-9]*\).*/\1/p')
printf '\033[32mSL-MARK %s turns=%s\033[0m\033]0;pwned-title\007\n' "$model" "$turns"
echo 'second line is not shown'
"#,
        dir = dir.display()
    )
}

fn config(server: &ScriptedServer, statusline: &str) -> String {
    format!(
        "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n\n[tui]\n\
         statusline_command = {statusline:?}\n",
        server.base_url()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_line_script_in_the_user_config_shows_its_first_line_and_refreshes_after_a_turn() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::text_answer("Hello there.")));
    let sandbox = Sandbox::new();
    let dir = sandbox.root().join("line");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("line.sh"), script(&dir)).unwrap();
    sandbox.user_config(&config(
        &server,
        &format!("sh {}", dir.join("line.sh").display()),
    ));
    let mut t = Terminal::spawn_with(&sandbox, &[], &[("OPENAI_API_KEY", "sk-test-key")]);
    t.wait_for("SL-MARK test-model turns=0");
    t.send("hi\r");
    t.wait_for("Hello there.");
    t.wait_for("SL-MARK test-model turns=1");
    assert!(!t.screen().contains("second line"), "{}", t.screen());
    // Its colour is drawn; its other escapes never reach the terminal.
    assert!(!t.raw_text().contains("pwned-title"));
    // Claude Code's fields, and pablo's under `pablo`.
    let input: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("input.json")).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "Status");
    assert_eq!(input["model"]["id"], "test-model");
    assert_eq!(input["pablo"]["provider"], "openai");
    assert_eq!(input["pablo"]["last_turn_model_calls"], 1);
    let ws = sandbox.workspace().canonicalize().unwrap();
    assert_eq!(input["workspace"]["current_dir"], ws.display().to_string());
    let transcript = input["transcript_path"].as_str().unwrap();
    assert!(
        Path::new(transcript).is_file(),
        "{transcript} is the journal"
    );
    // The environment commands get: no provider key.
    let env = std::fs::read_to_string(dir.join("env.txt")).unwrap();
    assert!(!env.contains("sk-test-key"), "{env}");
    assert!(env.contains("HOME="), "{env}");
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}

/// Types `text` a key at a time; each must be on the screen within half a second.
fn type_promptly(t: &mut Terminal, text: &str) {
    let start = t.screen();
    let mut typed = String::new();
    for c in text.chars() {
        typed.push(c);
        let sent = Instant::now();
        t.send(&c.to_string());
        t.wait_until(|t| t.screen().contains(&typed) || sent.elapsed() > Duration::from_secs(5));
        assert!(
            sent.elapsed() < Duration::from_millis(500),
            "{c:?} took {:?} to show; before typing the screen was:\n{start}",
            sent.elapsed()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_line_script_that_takes_five_seconds_holds_neither_the_screen_nor_a_turn() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::text_answer("Still quick.")));
    let sandbox = Sandbox::new();
    sandbox.user_config(&config(&server, "sleep 5; echo SLOW-LINE"));
    let mut t = Terminal::spawn_with(&sandbox, &[], &[("OPENAI_API_KEY", "sk-test-key")]);
    t.wait_for("Ask pablo to do something");
    // The script runs at once, and for its whole second: each key shows as it is typed.
    type_promptly(&mut t, "zqxjv");
    t.send("\r");
    t.wait_for("Still quick.");
    // The turn's end ran it again: the screen still answers at once.
    type_promptly(&mut t, "vjxqz");
    // Killed at its time limit each run: its line never comes, the built-in facts stay.
    std::thread::sleep(Duration::from_millis(2500));
    let screen = t.screen();
    assert!(!screen.contains("SLOW-LINE"), "{screen}");
    assert!(screen.contains("test-model · openai"), "{screen}");
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_projects_status_line_script_does_not_run_and_is_reported_until_trusted() {
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    sandbox.user_config(&format!(
        "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n",
        server.base_url()
    ));
    let ran = sandbox.root().join("project-script-ran");
    let project = sandbox.workspace().join(".pablo");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("config.toml"),
        format!(
            "[tui]\nstatusline_command = \"touch {}; echo PROJECT-LINE\"\n",
            ran.display()
        ),
    )
    .unwrap();
    let mut t = Terminal::spawn_with(&sandbox, &[], &[("OPENAI_API_KEY", "sk-test-key")]);
    t.wait_for("Ask pablo to do something");
    t.wait_for("tui.statusline_command");
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        !ran.exists(),
        "the project's script ran in an untrusted folder"
    );
    // The warning names the command; the status line does not show its line.
    let screen = t.screen();
    let status = screen.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    assert!(status.contains("test-model · openai"), "{screen}");
    assert!(!status.contains("PROJECT-LINE"), "{screen}");
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());

    // Trusting the folder says what the script would do, and then it runs.
    let mut cmd = sandbox.command();
    cmd.args(["policy", "trust"]);
    let out = cmd.output().await.unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("tui.statusline_command (runs the program `touch"),
        "{said}"
    );
    let mut t = Terminal::spawn_with(&sandbox, &[], &[("OPENAI_API_KEY", "sk-test-key")]);
    t.wait_until(|_| ran.exists());
    t.wait_for("PROJECT-LINE │");
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_that_read_a_file_then_answered_ends_with_two_model_calls() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "c1",
        "fs_read",
        &[&json!({"path": "a.txt"}).to_string()],
    )));
    server.push(ScriptedResponse::sse(openai::text_answer("It says one.")));
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("a.txt"), "one\n").unwrap();
    sandbox.user_config(&format!(
        "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n",
        server.base_url()
    ));
    let mut t = Terminal::spawn_with(&sandbox, &[], &[("OPENAI_API_KEY", "sk-test-key")]);
    t.wait_for("Ask pablo to do something");
    t.send("what does a.txt say?\r");
    t.wait_for("It says one.");
    t.wait_for("─ 2 model calls ·");
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}
