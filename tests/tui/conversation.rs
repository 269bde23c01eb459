//! Conversation commands and the exit line: `/new` starts a fresh session in the same workspace,
//! `/clear` clears the screen and keeps the scrollback, ctrl-z hands the terminal to the shell,
//! the exit line names a session only when one was saved, the demo keeps no journal.

use std::time::{Duration, Instant};

use crate::support::bin::Sandbox;
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

use super::Terminal;
use super::scrollback::{Emulator, Tmux};

fn say(text: &str) -> ScriptedResponse {
    ScriptedResponse::sse(openai::text_answer(text))
}

fn configure(sandbox: &Sandbox, server: &ScriptedServer) {
    sandbox.user_config(&format!(
        "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n",
        server.base_url()
    ));
}

fn start(sandbox: &Sandbox, server: &ScriptedServer) -> Terminal {
    configure(sandbox, server);
    let t = Terminal::spawn_with(sandbox, &[], &[("OPENAI_API_KEY", "sk-test-key")]);
    t.wait_for("Ask pablo to do something");
    t
}

/// `pablo sessions`, with this sandbox's directories.
fn sessions(sandbox: &Sandbox) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pablo"))
        .arg("sessions")
        .env_clear()
        .env("XDG_CONFIG_HOME", sandbox.root().join("config"))
        .env("XDG_DATA_HOME", sandbox.root().join("data"))
        .env("XDG_STATE_HOME", sandbox.root().join("state"))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The user messages of the last request the server received.
fn user_messages(server: &ScriptedServer) -> Vec<String> {
    let body = server.requests().last().unwrap().json();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_new_starts_a_fresh_conversation_and_the_old_one_stays_resumable() {
    let server = ScriptedServer::start().await;
    server.push(say("The first answer."));
    server.push(say("The second answer."));
    let sandbox = Sandbox::new();
    let mut t = start(&sandbox, &server);
    t.send("remember the word pelican\r");
    t.wait_for("The first answer.");
    t.wait_for("Ask pablo to do something");
    t.send("/new\r");
    // The old session's exit line names it; a fresh screen follows.
    t.wait_until(|t| {
        t.all_lines()
            .iter()
            .any(|l| l.contains("resume with: pablo resume"))
    });
    t.wait_until(|t| {
        t.all_lines()
            .iter()
            .filter(|l| l.contains("pablo  a terminal coding agent"))
            .count()
            == 2
    });
    t.wait_for("Ask pablo to do something");
    t.send("what word?\r");
    t.wait_for("The second answer.");
    let users = user_messages(&server);
    assert!(users.iter().any(|m| m.contains("what word?")), "{users:?}");
    assert!(!users.iter().any(|m| m.contains("pelican")), "{users:?}");
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
    let listed = sessions(&sandbox);
    // A header and two sessions, both saved.
    assert_eq!(listed.lines().count(), 3, "{listed}");
    assert!(listed.contains("what word?"), "{listed}");
    assert!(listed.contains("remember the word pelican"), "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_clear_clears_the_screen_inline_and_the_scrollback_keeps_the_conversation_once() {
    let server = ScriptedServer::start().await;
    server.push(say("An answer worth keeping."));
    server.push(say("After the clear."));
    let sandbox = Sandbox::new();
    let mut t = start(&sandbox, &server);
    t.send("say something\r");
    t.wait_for("An answer worth keeping.");
    t.wait_for("Ask pablo to do something");
    t.send("/clear\r");
    t.wait_until(|t| !t.screen().contains("An answer worth keeping."));
    assert!(t.screen().contains("Ask pablo to do something"));
    let lines = t.all_lines();
    let kept = lines
        .iter()
        .filter(|l| l.contains("An answer worth keeping."))
        .count();
    assert_eq!(kept, 1, "{}", lines.join("\n"));
    // The conversation goes on where it was.
    t.send("more\r");
    t.wait_for("After the clear.");
    assert!(
        user_messages(&server)
            .iter()
            .any(|m| m.contains("say something"))
    );
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}

#[test]
fn the_exit_line_names_no_session_when_nothing_was_saved() {
    let sandbox = Sandbox::new();
    sandbox.user_config(
        "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    );
    let mut t = Terminal::spawn_with(&sandbox, &[], &[("OPENAI_API_KEY", "sk-test-key")]);
    t.wait_for("Ask pablo to do something");
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
    let screen = t.screen();
    assert!(
        screen.contains("pablo: session not saved (nothing was sent) · 0 turns"),
        "{screen}"
    );
}

#[test]
fn the_demo_keeps_no_journal_so_it_is_not_listed_and_its_exit_line_names_no_session() {
    let sandbox = Sandbox::new();
    let dir = sandbox.root().join("demo");
    let mut t = Terminal::spawn(&sandbox, &["demo", "--dir", dir.to_str().unwrap()]);
    t.wait_for("[y] Allow once");
    t.send("y");
    t.wait_for("[y] Allow once");
    t.send("\x03");
    t.wait_for("interrupted");
    t.wait_for("Ask pablo to do something");
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
    let lines = t.all_lines().join("\n");
    assert!(lines.contains("pablo: session not saved ·"), "{lines}");
    assert!(!lines.contains("resume with"), "{lines}");
    assert_eq!(sessions(&sandbox), "no sessions yet\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_z_gives_the_terminal_to_the_shell_and_fg_brings_pablo_back_with_the_scrollback_once()
{
    let server = ScriptedServer::start().await;
    server.push(say("Before the suspension."));
    server.push(say("After the suspension."));
    let sandbox = Sandbox::new();
    configure(&sandbox, &server);
    let mut t = Tmux::start_program(
        &sandbox,
        &[("OPENAI_API_KEY", "sk-test-key"), ("PS1", "shell$ ")],
        120,
        40,
        "bash --norc --noprofile -i",
    );
    t.wait_until_visible("shell$");
    t.keys(&format!("{:?}\r", env!("CARGO_BIN_EXE_pablo")));
    t.wait_until_visible("Ask pablo to do something");
    t.keys("hello\r");
    t.wait_until_visible("Before the suspension.");
    t.wait_until_visible("Ask pablo to do something");
    t.keys("\x1a");
    t.wait_until_visible("Stopped");
    let deadline = Instant::now() + Duration::from_secs(10);
    while t.visible().contains("Ask pablo to do something") {
        assert!(Instant::now() < deadline, "{}", t.visible());
        std::thread::sleep(Duration::from_millis(50));
    }
    t.keys("fg\r");
    t.wait_until_visible("Ask pablo to do something");
    t.keys("again\r");
    t.wait_until_visible("After the suspension.");
    t.wait_until_visible("Ask pablo to do something");
    let lines = t.every_line();
    let all = lines.join("\n");
    for once in ["Before the suspension.", "After the suspension.", "› hello"] {
        assert_eq!(
            lines.iter().filter(|l| l.contains(once)).count(),
            1,
            "{once}:\n{all}"
        );
    }
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("Ask pablo to do something"))
            .count(),
        1,
        "{all}"
    );
}
