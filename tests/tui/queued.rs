//! A message typed while a turn runs, in plain `pablo` (a config file, no flags): it is shown
//! above the composer as queued and goes when the turn ends; `esc` interrupts the turn and gives
//! it back to the composer, unsent.

use std::time::Duration;

use crate::support::bin::Sandbox;
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

use super::Terminal;

fn quit(t: &mut Terminal) {
    t.wait_for("Ask pablo to do something");
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_typed_during_a_turn_is_shown_as_queued_and_sent_when_the_turn_ends() {
    let server = ScriptedServer::start().await;
    // A slow answer, so the turn is still running while the next message is typed.
    server.push(
        ScriptedResponse::sse(openai::text_answer(
            "one two three four five six seven eight nine ten eleven twelve thirteen fourteen \
             fifteen sixteen seventeen eighteen nineteen twenty done.",
        ))
        .pace(Duration::from_millis(150)),
    );
    server.push(ScriptedResponse::sse(openai::text_answer("Second answer.")));
    let sandbox = Sandbox::new();
    super::configure_scripted(&sandbox, &server, "");
    let mut t = super::spawn_plain(&sandbox, &[]);
    t.send("count slowly\r");
    t.wait_for("one two");
    t.send("and then the docs\r");
    t.wait_for("↳ queued  and then the docs");
    t.wait_for("esc interrupts and takes them back to edit");
    assert_eq!(server.requests().len(), 1);
    t.wait_for("Second answer.");
    assert!(!t.screen().contains("↳ queued"), "{}", t.screen());
    assert_eq!(server.last_user_text(), "and then the docs");
    quit(&mut t);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn esc_interrupts_the_turn_and_gives_the_queued_message_back_to_the_composer_unsent() {
    let server = ScriptedServer::start().await;
    server.push(
        ScriptedResponse::sse(openai::Stream::new().text(&["Thinking ", "aloud"]).events())
            .hang_after(3),
    );
    server.push(ScriptedResponse::sse(openai::text_answer(
        "Edited and sent.",
    )));
    let sandbox = Sandbox::new();
    super::configure_scripted(&sandbox, &server, "");
    let mut t = super::spawn_plain(&sandbox, &[]);
    t.send("start\r");
    t.wait_for("Thinking aloud");
    t.send("fix the typo too\r");
    t.wait_for("↳ queued  fix the typo too");
    t.send("\x1b");
    t.wait_for("interrupted");
    // Back in the composer, to edit: nothing was sent for it.
    t.wait_for("› fix the typo too");
    assert!(!t.screen().contains("↳ queued"), "{}", t.screen());
    t.send(" and the test\r");
    t.wait_for("Edited and sent.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(server.last_user_text(), "fix the typo too and the test");
    quit(&mut t);
}
