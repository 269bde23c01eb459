//! Integration tests: providers through `pablo run` against a scripted HTTP server on 127.0.0.1.
//! The tests that drive the model clients and the agent loop by hand are in
//! `tests/engine/providers_stream.rs` and `tests/engine/providers_select.rs`.

const KEY: &str = "sk-test-SECRET-0123456789";

mod binary {
    use std::time::Duration;

    use super::KEY;
    use crate::support::bin::{Sandbox, json_lines, types};
    use crate::support::http::{ScriptedResponse, ScriptedServer, anthropic, openai};

    async fn output(mut cmd: tokio::process::Command) -> std::process::Output {
        tokio::time::timeout(Duration::from_secs(30), cmd.output())
            .await
            .expect("pablo did not finish within 30 s")
            .expect("pablo runs")
    }

    #[tokio::test]
    async fn pablo_run_json_streams_from_an_openai_compatible_server() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer("All done here.")));
        let sandbox = Sandbox::new();
        let out = output(sandbox.run_json(&server.base_url(), "say hi")).await;
        let lines = json_lines(&out.stdout);
        assert!(
            out.status.success(),
            "{:?}\n{}",
            types(&lines),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            lines
                .iter()
                .any(|l| l["type"] == "message" && l["text"] == "All done here."),
            "{lines:?}"
        );
        assert_eq!(
            types(&lines).last().map(String::as_str),
            Some("turn_completed")
        );
        let req = &server.requests()[0];
        assert_eq!(req.json()["model"], "test-model");
        assert_eq!(req.header("authorization"), Some("Bearer sk-test-key"));
    }

    #[tokio::test]
    async fn a_stream_of_keep_alive_comments_and_trickles_is_abandoned_as_stalled() {
        let server = ScriptedServer::start().await;
        // Never idle (a byte every 100 ms), never an answer: comments, then a data line that
        // grows by one byte at a time and never ends. Some 30 s of it, far past the limit.
        let mut stream = ScriptedResponse::new(200).header("content-type", "text/event-stream");
        for _ in 0..10 {
            stream = stream.delayed(Duration::from_millis(100), ": keep-alive\n\n");
        }
        stream = stream.delayed(Duration::from_millis(100), "data: {");
        for _ in 0..300 {
            stream = stream.delayed(Duration::from_millis(100), " ");
        }
        server.push(stream);
        let sandbox = Sandbox::new();
        sandbox.user_config("[limits]\nstream_progress_timeout_seconds = 2\n");
        let out = output(sandbox.run_json(&server.base_url(), "say hi")).await;
        let lines = json_lines(&out.stdout);
        assert!(!out.status.success(), "{lines:?}");
        let error = lines
            .iter()
            .find(|l| l["type"] == "error")
            .unwrap_or_else(|| panic!("no error line: {lines:?}"));
        assert_eq!(error["code"], "model_stream_stalled", "{error}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("none of the answer for 2 s"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn pablo_run_without_any_provider_says_what_to_set_and_fails() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let sandbox = Sandbox::new();
        let mut cmd = sandbox.command();
        cmd.args(["--base-url", &format!("http://127.0.0.1:{port}/v1")])
            .args(["run", "--json", "hi"]);
        let out = output(cmd).await;
        assert!(!out.status.success());
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            all.contains("ANTHROPIC_API_KEY") && all.contains("OPENAI_API_KEY"),
            "{all}"
        );
        assert!(all.contains("--provider"), "{all}");
    }

    #[tokio::test]
    async fn the_key_appears_nowhere_in_output_or_the_most_verbose_trace() {
        let server = ScriptedServer::start().await;
        // First call: overloaded before output, echoing the key (retried); then a clean answer.
        server.push(ScriptedResponse::sse(
            anthropic::Stream::new(3)
                .error("overloaded_error", &format!("overloaded, key {KEY}"))
                .events(),
        ));
        server.push(ScriptedResponse::error(
            401,
            "authentication_error",
            &format!("invalid x-api-key {KEY}"),
        ));
        let sandbox = Sandbox::new();
        let trace = sandbox.root().join("trace.log");
        let mut cmd = sandbox.command();
        cmd.env("ANTHROPIC_API_KEY", KEY)
            .env("PABLO_LOG", "trace")
            .env("PABLO_LOG_FILE", &trace)
            .args(["--base-url", &server.base_url()])
            .args(["run", "--json", "hi"]);
        let out = output(cmd).await;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "{stdout}");
        // The run got as far as the provider's refusal, with the key scrubbed from it.
        assert!(
            stdout.contains("invalid x-api-key <redacted>"),
            "{stdout}\n{stderr}"
        );
        assert_eq!(server.requests().len(), 2);
        assert_eq!(server.requests()[1].header("x-api-key"), Some(KEY));
        let trace = std::fs::read_to_string(&trace).unwrap_or_default();
        assert!(trace.contains("model_call"), "trace: {trace}");
        for (name, text) in [("stdout", &stdout), ("stderr", &stderr), ("trace", &trace)] {
            assert!(!text.contains(KEY), "the key leaked into {name}: {text}");
        }
    }
}
