//! Vim mode in plain `pablo` (a config file, no flags), in a real terminal: `/vim` turns it on,
//! vim keys edit the draft, the composer's border shows the mode, and Enter sends from normal
//! mode; `[tui] vim = true` in the user's config starts with it, and a project's config cannot.

use crate::support::bin::Sandbox;
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

use super::Terminal;

const ESC: &str = "\x1b";

fn quit(t: &mut Terminal) {
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}

/// The composer's line (`› …`) as the screen shows it, trailing blanks cut.
fn draft(t: &Terminal) -> String {
    let screen = t.screen();
    let line = screen
        .lines()
        .rev()
        .find(|l| l.starts_with("› "))
        .unwrap_or("");
    line.trim_end().to_string()
}

/// Waits until the composer's line is `expected`.
fn wait_for_draft(t: &Terminal, expected: &str) {
    t.wait_until(|t| draft(t) == expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_vim_turns_on_vim_keys_that_edit_the_draft_with_the_mode_in_the_border() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::text_answer("Tests fixed.")));
    let sandbox = Sandbox::new();
    super::configure_scripted(&sandbox, &server, "");
    let mut t = super::spawn_plain(&sandbox, &[]);
    assert!(!t.screen().contains("INSERT"), "{}", t.screen());
    t.send("/vim\r");
    t.wait_for("vim mode on");
    t.wait_for("─ INSERT ─");
    t.send("fix the flaky tests now");
    wait_for_draft(&t, "› fix the flaky tests now");
    t.send(ESC);
    t.wait_for("─ NORMAL ─");
    // To the start, a word on, delete two words: `the flaky` goes.
    t.send("0");
    t.send("w");
    t.send("d2");
    t.wait_for("─ NORMAL d2 ─");
    t.send("w");
    wait_for_draft(&t, "› fix tests now");
    // `x` at the end, undone with `u`, redone with ctrl-r, undone again.
    t.send("$x");
    wait_for_draft(&t, "› fix tests no");
    t.send("u");
    wait_for_draft(&t, "› fix tests now");
    t.send("\x12");
    wait_for_draft(&t, "› fix tests no");
    t.send("u");
    wait_for_draft(&t, "› fix tests now");
    // `A` types at the end of the line, in insert mode again.
    t.send("A");
    t.wait_for("─ INSERT ─");
    t.send(" please");
    wait_for_draft(&t, "› fix tests now please");
    t.send(ESC);
    t.wait_for("─ NORMAL ─");
    // Enter sends from normal mode; the next draft starts in insert mode.
    t.send("\r");
    t.wait_for("Tests fixed.");
    t.wait_for("─ INSERT ─");
    assert_eq!(server.last_user_text(), "fix tests now please");
    quit(&mut t);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vim_true_in_the_users_config_starts_the_composer_in_vim_mode() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::text_answer("Hello to you.")));
    let sandbox = Sandbox::new();
    super::configure_scripted(&sandbox, &server, "[tui]\nvim = true\n");
    let mut t = super::spawn_plain(&sandbox, &[]);
    t.wait_for("─ INSERT ─");
    t.send("hello world");
    wait_for_draft(&t, "› hello world");
    t.send(ESC);
    t.wait_for("─ NORMAL ─");
    // `cw` on the last word, typed over, then `.` on the first word does the same.
    t.send("b");
    t.send("cw");
    t.wait_for("─ INSERT ─");
    t.send("there");
    t.send(ESC);
    wait_for_draft(&t, "› hello there");
    t.send("0.");
    wait_for_draft(&t, "› there there");
    t.send("\r");
    t.wait_for("Hello to you.");
    assert_eq!(server.last_user_text(), "there there");
    quit(&mut t);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projects_config_cannot_turn_on_vim_mode_and_says_it_was_ignored() {
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    super::configure_scripted(&sandbox, &server, "");
    let dir = sandbox.workspace().join(".pablo");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), "[tui]\nvim = true\n").unwrap();
    let mut t = super::spawn_plain(&sandbox, &[]);
    t.wait_for("[tui] vim ignored");
    assert!(!t.screen().contains("INSERT"), "{}", t.screen());
    // Esc is not vim's: the letters typed after it are text.
    t.send("ab");
    t.send(ESC);
    t.send("dd");
    wait_for_draft(&t, "› abdd");
    quit(&mut t);
}
