//! Waiting is never silent: plain `pablo` (a config file, no flags) says when a model request is
//! retried, which attempt it is, how long until it and why, and what to check when no server
//! answers.

use crate::support::bin::Sandbox;
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

use super::Terminal;

fn start(sandbox: &Sandbox, base_url: &str) -> Terminal {
    sandbox.user_config(&format!(
        "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{base_url}\"\n"
    ));
    let t = Terminal::spawn_with(sandbox, &[], &[("OPENAI_API_KEY", "sk-test-key")]);
    t.wait_for("Ask pablo to do something");
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_503s_then_an_answer_show_each_retry_in_the_status_line_with_its_attempt_and_host() {
    let server = ScriptedServer::start().await;
    for _ in 0..2 {
        server.push(
            ScriptedResponse::error(503, "overloaded", "try later").header("retry-after", "3"),
        );
    }
    server.push(ScriptedResponse::sse(openai::text_answer("Here at last.")));
    let sandbox = Sandbox::new();
    let mut t = start(&sandbox, &server.base_url());
    let host = server
        .base_url()
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_string();
    t.send("hello\r");
    t.wait_for(&format!("attempt 2 of 5: 503 from {host}"));
    t.wait_for("retrying in ");
    t.wait_for("esc gives up");
    t.wait_for(&format!("attempt 3 of 5: 503 from {host}"));
    t.wait_for("Here at last.");
    t.wait_for("Ask pablo to do something");
    assert!(!t.screen().contains("retrying"), "{}", t.screen());
    assert_eq!(server.requests().len(), 3);
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn esc_while_a_retry_waits_gives_up_the_turn() {
    let server = ScriptedServer::start().await;
    server
        .push(ScriptedResponse::error(503, "overloaded", "try later").header("retry-after", "30"));
    let sandbox = Sandbox::new();
    let mut t = start(&sandbox, &server.base_url());
    t.send("hello\r");
    t.wait_for("attempt 2 of 5");
    t.send("\x1b");
    t.wait_for("interrupted");
    t.wait_for("Ask pablo to do something");
    assert_eq!(server.requests().len(), 1);
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_server_at_the_base_url_the_retries_show_and_the_error_says_what_to_check() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let sandbox = Sandbox::new();
    let mut t = start(&sandbox, &format!("http://127.0.0.1:{port}/v1"));
    t.send("hello\r");
    t.wait_for(&format!("no answer from 127.0.0.1:{port}"));
    t.wait_for("check the base URL");
    t.wait_for("that a server answers there");
    t.wait_for("Ask pablo to do something");
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}
