//! An answer that does not reach its end, in plain `pablo` (a config file, no flags): cut by the
//! server it is asked for once more, in sight; stopped with esc, or cut twice, what was shown
//! stays in the conversation marked as cut, so "continue" has something to continue, and a resume
//! sends it again. A prompt sent again after its turn failed is in the history once.

use serde_json::Value;

use crate::support::bin::Sandbox;
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

use super::Terminal;

/// The texts of the messages of `role` in a request's body, in order.
fn texts(body: &Value, role: &str) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == role)
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        })
        .collect()
}

/// A streamed answer whose socket closes after `parts` of text (the role chunk first).
fn cut_answer(parts: &[&str]) -> ScriptedResponse {
    ScriptedResponse::sse(openai::Stream::new().text(parts).events()).cut_after(parts.len() + 1)
}

fn idle(t: &Terminal) {
    t.wait_for("Ask pablo to do something");
}

/// No line the terminal holds still has the streaming cursor after `text`.
fn no_stale_cursor(t: &Terminal, text: &str) {
    for line in t.all_lines() {
        assert!(
            !(line.contains(text) && line.contains('▍')),
            "a finished answer kept its cursor: {line:?}"
        );
    }
}

fn quit(t: &mut Terminal) {
    idle(t);
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_the_server_cuts_is_asked_for_once_more_and_only_the_new_one_is_kept() {
    let server = ScriptedServer::start().await;
    server.push(cut_answer(&["The first ", "half of it"]));
    server.push(ScriptedResponse::sse(openai::text_answer(
        "The whole answer.",
    )));
    server.push(ScriptedResponse::sse(openai::text_answer("Next.")));
    let sandbox = Sandbox::new();
    super::configure_scripted(&sandbox, &server, "");
    let mut t = super::spawn_plain(&sandbox, &[]);
    t.send("explain\r");
    t.wait_for("asking again, once");
    t.wait_for("The whole answer.");
    idle(&t);
    no_stale_cursor(&t, "half of it");
    t.send("more\r");
    t.wait_for("Next.");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // The retry is the same request; the cut text never joins the conversation.
    assert_eq!(
        requests[0].json()["messages"],
        requests[1].json()["messages"]
    );
    let said = texts(&requests[2].json(), "assistant");
    assert_eq!(said, ["The whole answer."], "{said:?}");
    quit(&mut t);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_cut_twice_stays_in_the_conversation_marked_as_cut_and_a_resume_sends_it() {
    let server = ScriptedServer::start().await;
    server.push(cut_answer(&["Part one ", "of the answer"]));
    server.push(cut_answer(&["Part one ", "again"]));
    server.push(ScriptedResponse::sse(openai::text_answer("Continuing.")));
    let sandbox = Sandbox::new();
    super::configure_scripted(&sandbox, &server, "");
    let mut t = super::spawn_plain(&sandbox, &[]);
    t.send("explain\r");
    t.wait_for("model_stream_cut");
    idle(&t);
    no_stale_cursor(&t, "Part one");
    t.send("continue\r");
    t.wait_for("Continuing.");
    let kept = "Part one again\n\n[the answer was cut off: model_stream_cut]";
    let said = texts(&server.requests()[2].json(), "assistant");
    assert_eq!(said, [kept], "{said:?}");
    quit(&mut t);

    // The journal keeps it: the resumed conversation sends it again.
    server.push(ScriptedResponse::sse(openai::text_answer("After resume.")));
    let mut t = Terminal::spawn_with(
        &sandbox,
        &["resume", "--last"],
        &[("OPENAI_API_KEY", "sk-test-key")],
    );
    idle(&t);
    t.send("go on\r");
    t.wait_for("After resume.");
    let said = texts(&server.requests()[3].json(), "assistant");
    assert_eq!(said, [kept, "Continuing."], "{said:?}");
    quit(&mut t);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_stopped_with_esc_is_kept_marked_as_interrupted_so_continue_has_it() {
    let server = ScriptedServer::start().await;
    server.push(
        ScriptedResponse::sse(
            openai::Stream::new()
                .text(&["Halfway ", "through"])
                .events(),
        )
        .hang_after(3),
    );
    server.push(ScriptedResponse::sse(openai::text_answer("Resumed.")));
    let sandbox = Sandbox::new();
    super::configure_scripted(&sandbox, &server, "");
    let mut t = super::spawn_plain(&sandbox, &[]);
    t.send("write it\r");
    t.wait_for("Halfway through");
    t.send("\x1b");
    t.wait_for("interrupted");
    idle(&t);
    t.wait_for("[interrupted by the user]");
    no_stale_cursor(&t, "Halfway through");
    t.send("continue\r");
    t.wait_for("Resumed.");
    let body = server.requests()[1].json();
    let said = texts(&body, "assistant");
    assert_eq!(
        said,
        ["Halfway through\n\n[interrupted by the user]"],
        "{said:?}"
    );
    assert_eq!(texts(&body, "user"), ["write it", "continue"]);
    quit(&mut t);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_sent_again_after_its_turn_failed_is_in_the_history_once() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::error(
        400,
        "invalid_request_error",
        "the server had a bad moment",
    ));
    server.push(ScriptedResponse::sse(openai::text_answer("Fine now.")));
    server.push(ScriptedResponse::sse(openai::text_answer("Still fine.")));
    let sandbox = Sandbox::new();
    super::configure_scripted(&sandbox, &server, "");
    let mut t = super::spawn_plain(&sandbox, &[]);
    t.send("do the thing\r");
    t.wait_for("the server had a bad moment");
    idle(&t);
    t.send("do the thing\r");
    t.wait_for("Fine now.");
    assert_eq!(
        texts(&server.requests()[1].json(), "user"),
        ["do the thing"]
    );
    quit(&mut t);

    // A resume rebuilds the same history from the journal.
    let mut t = Terminal::spawn_with(
        &sandbox,
        &["resume", "--last"],
        &[("OPENAI_API_KEY", "sk-test-key")],
    );
    idle(&t);
    t.send("and again\r");
    t.wait_for("Still fine.");
    assert_eq!(
        texts(&server.requests()[2].json(), "user"),
        ["do the thing", "and again"]
    );
    quit(&mut t);
}
