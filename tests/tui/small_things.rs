//! Issue 44 item 8, the small things a person meets in a first long session: quitting over a
//! running background command, `/fork`, `/review`'s echo, `$skill` completion, a refused key,
//! the `/resume` and `/model` pickers. Plain `pablo` (a config file, no flags) in a PTY.

use serde_json::json;

use crate::support::bin::Sandbox;
use crate::support::http::{ScriptedResponse, ScriptedServer};
use crate::support::run::{call, say};

use super::Terminal;

/// Every line the terminal holds, scrollback included, as one text with its spacing flattened
/// (long lines wrap between words).
fn flattened(t: &Terminal) -> String {
    t.all_lines()
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quitting_while_a_background_command_runs_warns_first_and_a_second_quit_confirms() {
    let server = ScriptedServer::start().await;
    server.push(call(
        "call_bg",
        "shell_run",
        &json!({"command": "sh wait.sh", "background": true}),
    ));
    server.push(say("The watcher runs."));
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("wait.sh"), "sleep 120\n").unwrap();
    super::configure_scripted(&sandbox, &server, "");
    let mut t = super::spawn_plain(&sandbox, &[]);
    t.send("start the watcher\r");
    t.wait_for("Start this background command?");
    t.wait_for("[y] Allow once");
    t.send("y");
    t.wait_for("The watcher runs.");
    t.wait_for("1 bg");
    t.wait_for("Ask pablo to do something");
    t.send("/quit\r");
    t.wait_for("1 background session is running and ends when pablo quits: /quit again");
    assert!(t.child.try_wait().unwrap().is_none(), "pablo quit unwarned");
    // ctrl-c says the same when it arms.
    t.send("\x03");
    t.wait_for("ends when pablo quits: press ctrl-c again to quit");
    t.send("x\x7f");
    t.send("/quit\r");
    assert!(t.wait_exit().success());
}

/// The word after the first `marker` in `text`.
fn word_after(text: &str, marker: &str) -> String {
    let at = text
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker:?} in:\n{text}"));
    text[at + marker.len()..]
        .split(|c: char| c.is_whitespace() || c == ',')
        .next()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_says_which_session_the_screen_now_shows_and_how_to_go_back() {
    let server = ScriptedServer::start().await;
    server.push(say("Hello there."));
    let sandbox = Sandbox::new();
    super::configure_scripted(&sandbox, &server, "");
    let mut t = super::spawn_plain(&sandbox, &[]);
    t.send("hello\r");
    t.wait_for("Hello there.");
    t.wait_for("Ask pablo to do something");
    t.send("/fork\r");
    t.wait_for("you are now in session");
    t.wait_for("Ask pablo to do something");
    let all = flattened(&t);
    let old = word_after(&all, "pablo: session ");
    let new = word_after(&all, "you are now in session ");
    assert_ne!(old, new);
    assert!(
        all.contains(&format!("continuing in the fork, session {new}")),
        "{all}"
    );
    assert!(all.contains(&format!("a fork of session {old}")), "{all}");
    assert!(
        all.contains(&format!("`pablo resume {old}`, goes back to it")),
        "{all}"
    );
    // The fork holds the conversation: its transcript is on the new screen.
    assert!(t.screen().contains("Hello there."), "{}", t.screen());
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tab_completes_a_skill_name_after_a_dollar_sign() {
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    let skill = sandbox
        .root()
        .join("home/.agents/skills/tidy-imports/SKILL.md");
    std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
    std::fs::write(
        &skill,
        "---\nname: tidy-imports\ndescription: Sorts and prunes the imports\n---\nSteps.\n",
    )
    .unwrap();
    super::configure_scripted(&sandbox, &server, "");
    let mut t = super::spawn_plain(&sandbox, &[]);
    t.wait_for("Ask pablo to do something");
    t.send("please $tid");
    t.wait_for("Sorts and prunes the imports");
    t.send("\t");
    t.wait_for("please $tidy-imports");
    // Completion ends the name with a space: what follows is typed after it.
    t.send("now");
    t.wait_for("please $tidy-imports now");
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_key_names_the_variable_it_was_read_from() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::error(
        401,
        "invalid_request_error",
        "Incorrect API key provided",
    ));
    let sandbox = Sandbox::new();
    super::configure_scripted(&sandbox, &server, "api_key_env = \"TEAM_LLM_KEY\"\n");
    let mut t = Terminal::spawn_with(&sandbox, &[], &[("TEAM_LLM_KEY", "sk-not-valid-here")]);
    t.wait_for("Ask pablo to do something");
    t.send("hello\r");
    t.wait_for("model_auth_failed");
    t.wait_for("Ask pablo to do something");
    let all = flattened(&t);
    assert!(all.contains("Incorrect API key provided"), "{all}");
    assert!(
        all.contains("read from the environment variable TEAM_LLM_KEY"),
        "{all}"
    );
    assert!(!all.contains("sk-not-valid-here"), "{all}");
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}
