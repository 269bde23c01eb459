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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resume_picker_shows_each_sessions_first_prompt_age_and_turns_not_raw_ids_and_times() {
    let server = ScriptedServer::start().await;
    server.push(say("Fixed the parser."));
    let sandbox = Sandbox::new();
    super::configure_scripted(&sandbox, &server, "");
    let mut t = super::spawn_plain(&sandbox, &[]);
    t.wait_for("Ask pablo to do something");
    t.send("fix the csv parser\r");
    t.wait_for("Fixed the parser.");
    t.wait_for("Ask pablo to do something");
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
    let id = word_after(&flattened(&t), "pablo: session ");
    assert!(id.len() > 8, "a full session id: {id}");

    let mut t = super::spawn_plain(&sandbox, &[]);
    t.wait_for("Ask pablo to do something");
    t.send("/resume\r");
    t.wait_for("Resume a session");
    t.wait_for("fix the csv parser");
    t.wait_for("just now");
    t.wait_for("1 turn");
    let screen = t.screen();
    assert!(screen.contains(&id[..8]), "the short id: {screen}");
    assert!(!screen.contains(&id), "no raw full id: {screen}");
    let iso = regex_lite_iso(&screen);
    assert!(!iso, "no ISO time: {screen}");
    t.send("\x1b");
    t.wait_until(|t| !t.screen().contains("Resume a session"));
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}

/// Whether `text` holds an RFC 3339 time such as `2026-12-05T09:14:50Z`.
fn regex_lite_iso(text: &str) -> bool {
    text.as_bytes().windows(20).any(|w| {
        w[4] == b'-'
            && w[7] == b'-'
            && w[10] == b'T'
            && w[13] == b':'
            && w[16] == b':'
            && w[19] == b'Z'
            && w[..4].iter().all(u8::is_ascii_digit)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_picker_lists_models_with_window_and_price_and_enter_switches_the_next_turn() {
    let server = ScriptedServer::start().await;
    server.push(say("On gpt-5-mini now."));
    let sandbox = Sandbox::new();
    super::configure_scripted(&sandbox, &server, "");
    let mut t = super::spawn_plain(&sandbox, &[]);
    t.wait_for("Ask pablo to do something");
    t.send("/model\r");
    t.wait_for("Models · window · price per million tokens");
    t.wait_for("in use");
    // The known names of this provider, with what pablo's table says of them.
    t.wait_for("gpt-5-mini");
    let screen = t.screen();
    let row = screen
        .lines()
        .find(|l| l.contains("gpt-5-mini"))
        .unwrap()
        .to_string();
    assert!(
        row.contains("400k") && row.contains("$0.25 in / $2 out"),
        "{row}"
    );
    assert!(screen.contains("test-model"), "{screen}");
    // test-model (in use), gpt-5, gpt-5-mini.
    t.send("\x1b[B");
    t.send("\x1b[B");
    t.send("\r");
    t.wait_for("the next turn uses gpt-5-mini");
    t.send("hello\r");
    t.wait_for("On gpt-5-mini now.");
    assert_eq!(
        server.requests().last().unwrap().json()["model"],
        "gpt-5-mini"
    );
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}
