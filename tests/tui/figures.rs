//! Figures that add up: the session's tokens and cost, also after a resume; `/model` brings the
//! new model's window and prices; an unknown model's assumed window is said once at start, on
//! the screen or on stderr, never on `pablo run`'s stdout.

use crate::support::bin::Sandbox;
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

use super::Terminal;

/// An answer whose call used `input` tokens in and 1,000 out.
fn answer(text: &str, input: u64) -> ScriptedResponse {
    ScriptedResponse::sse(
        openai::Stream::new()
            .text(&[text])
            .finish("stop")
            .usage(input, 1_000)
            .done(),
    )
}

fn quit(t: &mut Terminal) {
    t.wait_for("Ask pablo to do something");
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_and_cost_are_the_sessions_also_after_a_resume() {
    let server = ScriptedServer::start().await;
    server.push(answer("First.", 9_000));
    server.push(answer("Second.", 19_000));
    let sandbox = Sandbox::new();
    // $1 per million in, $10 per million out: 10,000 tokens and $0.019 for the first call.
    sandbox.user_config(&format!(
        "provider = \"openai\"\nbase_url = \"{}\"\n[model]\nname = \"test-model\"\n\
         context_window = 100000\n[model.prices]\ninput = 1.0\noutput = 10.0\n",
        server.base_url()
    ));
    let env = [("OPENAI_API_KEY", "sk-test-key")];
    let mut t = Terminal::spawn_with(&sandbox, &[], &env);
    t.wait_for("Ask pablo to do something");
    t.send("one\r");
    t.wait_for("First.");
    t.wait_for("10.0k tok");
    t.wait_for("$0.019");
    quit(&mut t);
    assert!(
        t.screen().contains("1 turn · 9000 tokens in, 1000 out"),
        "{}",
        t.screen()
    );
    drop(t);

    let mut t = Terminal::spawn_with(&sandbox, &["resume", "--last"], &env);
    t.wait_for("Ask pablo to do something");
    // Before anything new: the figures the session had.
    t.wait_for("10.0k tok");
    t.wait_for("$0.019");
    t.send("two\r");
    t.wait_for("Second.");
    // 10,000 + 20,000 tokens; $0.019 + $0.029.
    t.wait_for("30.0k tok");
    t.wait_for("$0.048");
    quit(&mut t);
    let screen = t.screen();
    assert!(
        screen.contains("2 turns · 28000 tokens in, 2000 out"),
        "{screen}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_model_brings_the_new_models_window_and_prices() {
    let server = ScriptedServer::start().await;
    server.push(answer("On the first model.", 9_000));
    server.push(answer("On gpt-4o.", 64_000));
    let sandbox = Sandbox::new();
    sandbox.user_config(&format!(
        "provider = \"openai\"\nbase_url = \"{}\"\n[model]\nname = \"test-model\"\n\
         context_window = 20000\n[model.prices]\ninput = 1.0\noutput = 10.0\n",
        server.base_url()
    ));
    let mut t = Terminal::spawn_with(&sandbox, &[], &[("OPENAI_API_KEY", "sk-test-key")]);
    t.wait_for("Ask pablo to do something");
    t.send("one\r");
    t.wait_for("On the first model.");
    // 9,000 of 20,000.
    t.wait_for("ctx 45%");
    t.wait_for("$0.019");
    t.wait_for("Ask pablo to do something");
    t.send("/model gpt-4o\r");
    t.wait_for("the next turn uses gpt-4o");
    t.send("two\r");
    t.wait_for("On gpt-4o.");
    // 64,000 of gpt-4o's 128,000; the second call at gpt-4o's $2.50 / $10 per million:
    // $0.019 + 64,000 × 2.5 / 1e6 + 1,000 × 10 / 1e6 = $0.019 + $0.17.
    t.wait_for("ctx 50%");
    t.wait_for("$0.189");
    assert!(
        server.requests().last().unwrap().json()["model"] == "gpt-4o",
        "the request names the new model"
    );
    quit(&mut t);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_models_assumed_window_is_said_once_on_the_screen_and_on_run_stderr() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::text_answer("Hi.")));
    let sandbox = Sandbox::new();
    super::configure_scripted(&sandbox, &server, "");
    let mut t = super::spawn_plain(&sandbox, &[]);
    t.wait_for("is not in pablo's table of models");
    t.send("hello\r");
    t.wait_for("Hi.");
    quit(&mut t);
    let lines = t.all_lines();
    let said: Vec<_> = lines
        .iter()
        .filter(|l| l.contains("is not in pablo's table of models"))
        .collect();
    assert_eq!(said.len(), 1, "{}", lines.join("\n"));
    let all = lines
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(all.contains("32000 tokens"), "{all}");
    assert!(all.contains("`context_window` under `[model]`"), "{all}");

    server.push(ScriptedResponse::sse(openai::text_answer("Hi again.")));
    let out = sandbox
        .run_json(&server.base_url(), "hello")
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stdout.contains("table of models"), "{stdout}");
    assert_eq!(
        stderr.matches("is not in pablo's table of models").count(),
        1,
        "{stderr}"
    );
    // A window set in the config is not a guess: nothing is said.
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::text_answer("Hi.")));
    let sandbox = Sandbox::new();
    sandbox.user_config("[model]\ncontext_window = 50000\n");
    let out = sandbox
        .run_json(&server.base_url(), "hello")
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("table of models"));
}

/// The `ctx N%` figure of the status line.
fn status_line_percent(t: &Terminal) -> Option<u64> {
    let screen = t.screen();
    let at = screen.rfind("ctx ")?;
    screen[at + 4..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()
}

/// The percentage of the newest `/status` context line (`… tokens (N%)`).
fn slash_status_percent(t: &Terminal) -> u64 {
    let lines = t.all_lines();
    let line = lines
        .iter()
        .rev()
        .find(|l| l.trim_start().starts_with("context ") && l.contains("%)"))
        .unwrap_or_else(|| panic!("no /status context line:\n{}", lines.join("\n")));
    let open = line.rfind('(').unwrap();
    line[open + 1..line.rfind("%)").unwrap()].parse().unwrap()
}

/// Plain `pablo` (no flags) on `server`'s `test-model`, configured with a 20,000-token window,
/// at its first prompt.
fn twenty_thousand_token_window(server: &ScriptedServer) -> (Sandbox, Terminal) {
    let sandbox = Sandbox::new();
    sandbox.user_config(&format!(
        "provider = \"openai\"\nbase_url = \"{}\"\n[model]\nname = \"test-model\"\n\
         context_window = 20000\n",
        server.base_url()
    ));
    let t = Terminal::spawn_with(&sandbox, &[], &[("OPENAI_API_KEY", "sk-test-key")]);
    t.wait_for("Ask pablo to do something");
    (sandbox, t)
}

/// Issue 44 item 6: 2,700 of 20,000 tokens is 13.5 %, which the status line and `/status` say
/// alike; after `/review` (whose own request was 100 tokens) the figure is the conversation's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_review_ctx_is_the_conversations_figure_and_status_says_the_same_number() {
    let server = ScriptedServer::start().await;
    server.push(answer("First.", 2_700));
    server.push(answer("no findings", 100));
    let (_sandbox, mut t) = twenty_thousand_token_window(&server);
    t.send("one\r");
    t.wait_for("First.");
    t.wait_for("ctx 14%");
    t.send("/status\r");
    t.wait_for("Status");
    assert_eq!(slash_status_percent(&t), 14, "{}", t.screen());
    t.send("/review\r");
    t.wait_for("no findings");
    // The conversation now holds the first turn and the review: more than the 14 % of before,
    // never the review request's own 1 % (a safety-net timeout, not a timing assertion).
    t.wait_until(|t| status_line_percent(t).is_some_and(|p| p >= 14));
    t.wait_for("Ask pablo to do something");
    t.send("/status\r");
    t.wait_until(|t| {
        t.all_lines()
            .iter()
            .filter(|l| l.trim_start() == "Status")
            .count()
            == 2
    });
    let line = status_line_percent(&t).unwrap();
    assert_eq!(slash_status_percent(&t), line, "{}", t.screen());
    quit(&mut t);
}

/// Issue 44 item 6: `/compact` says the tokens before and after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_says_the_context_tokens_before_and_after() {
    let server = ScriptedServer::start().await;
    server.push(answer("First.", 9_000));
    server.push(answer("THE-SUMMARY", 9_100));
    let (_sandbox, mut t) = twenty_thousand_token_window(&server);
    t.send("one\r");
    t.wait_for("First.");
    t.wait_for("ctx 45%");
    t.send("/compact\r");
    t.wait_for("context: 9000 tokens before, about ");
    let all = t.all_lines().join(" ");
    let after: u64 = all
        .split("tokens before, about ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{all}"));
    // The scripted server's token counts are not a real tokenizer's, so how much the summary
    // saved is not asserted here: only that both figures are said, in tokens and in percent.
    assert!(after > 0, "{all}");
    assert!(all.contains("(45% → "), "{all}");
    quit(&mut t);
}
