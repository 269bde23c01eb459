//! Providers, against a scripted HTTP server on 127.0.0.1: both wire formats (OpenAI chat
//! completions, Anthropic messages) through the real clients (reqwest, SSE decoding, retries,
//! cancellation), and the scripted server itself.

pub(super) mod support_common {
    use std::time::Duration;

    use futures::StreamExt;
    use pablo::core::ToolSpec;
    use pablo::model::anthropic::{AnthropicClient, AnthropicConfig};
    use pablo::model::http::{ApiKey, HttpOptions};
    use pablo::model::openai::{OpenAiClient, OpenAiConfig};
    use pablo::model::{Message, ModelClient, ModelError, ModelRequest, StreamEvent, ToolCall};
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    use crate::support::http::ScriptedServer;

    pub(crate) const KEY: &str = "sk-test-SECRET-0123456789";

    /// Quick retries and a short idle timeout, so failure paths finish fast.
    pub(crate) fn opts() -> HttpOptions {
        HttpOptions {
            web_search: None,
            idle_timeout: Duration::from_secs(2),
            max_retries: 2,
            initial_backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(40),
            max_retry_after: Duration::from_secs(2),
            max_event_bytes: 4 * 1024 * 1024,
            progress_timeout: pablo::model::http::DEFAULT_PROGRESS_TIMEOUT,
        }
    }

    pub(crate) fn openai(server: &ScriptedServer) -> OpenAiClient {
        OpenAiClient::new(OpenAiConfig {
            provider: "openai".into(),
            base_url: server.base_url(),
            model: "gpt-test".into(),
            api_key: Some(ApiKey::new(KEY)),
            options: opts(),
            official: false,
            profile: pablo::model::ModelProfile::lookup("m"),
        })
        .unwrap()
    }

    pub(crate) fn anthropic(server: &ScriptedServer) -> AnthropicClient {
        AnthropicClient::new(AnthropicConfig {
            base_url: server.base_url(),
            model: "claude-test".into(),
            api_key: ApiKey::new(KEY),
            options: opts(),
            profile: pablo::model::ModelProfile::lookup("claude-test"),
        })
        .unwrap()
    }

    pub(crate) fn request(text: &str) -> ModelRequest {
        ModelRequest {
            system: "you are a test".into(),
            messages: vec![Message::user(text)],
            tools: vec![ToolSpec {
                name: "fs_read".into(),
                description: "read a file".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            }],
            max_output_tokens: 1024,
            ..ModelRequest::default()
        }
    }

    /// Runs one call to its end: the events, and the error that ended it, if any.
    pub(crate) async fn run(client: &dyn ModelClient) -> (Vec<StreamEvent>, Option<ModelError>) {
        run_with(client, CancellationToken::new()).await
    }

    /// The call's output events (a retry notice is not output: [`run_all`] keeps those).
    pub(crate) async fn run_with(
        client: &dyn ModelClient,
        cancel: CancellationToken,
    ) -> (Vec<StreamEvent>, Option<ModelError>) {
        let (mut events, err) = run_all(client, cancel).await;
        events.retain(|e| !matches!(e, StreamEvent::Retry(_)));
        (events, err)
    }

    /// Every event of the call, retry notices included.
    pub(crate) async fn run_all(
        client: &dyn ModelClient,
        cancel: CancellationToken,
    ) -> (Vec<StreamEvent>, Option<ModelError>) {
        let all = async {
            let mut events = Vec::new();
            let mut stream = match client.stream(&request("hello"), cancel).await {
                Ok(s) => s,
                Err(e) => return (events, Some(e)),
            };
            while let Some(item) = stream.next().await {
                match item {
                    Ok(ev) => events.push(ev),
                    Err(e) => return (events, Some(e)),
                }
            }
            (events, None)
        };
        tokio::time::timeout(Duration::from_secs(20), all)
            .await
            .expect("the call did not end within 20 s")
    }

    pub(crate) fn text_of(events: &[StreamEvent]) -> String {
        events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn calls_of(events: &[StreamEvent]) -> Vec<ToolCall> {
        events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCall(c) => Some(c.clone()),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

mod scripted_server {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

    async fn raw_exchange(server: &ScriptedServer, body: &str) -> String {
        let mut sock = TcpStream::connect(server.addr()).await.unwrap();
        let req = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        sock.write_all(req.as_bytes()).await.unwrap();
        let mut out = String::new();
        tokio::time::timeout(Duration::from_secs(10), sock.read_to_string(&mut out))
            .await
            .unwrap()
            .unwrap();
        out
    }

    #[tokio::test]
    async fn scripted_server_records_the_request_and_streams_chunked_sse() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer("hi there")));
        let out = raw_exchange(&server, r#"{"model":"m"}"#).await;
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
        assert!(out.contains("transfer-encoding: chunked"));
        assert!(out.contains(r#""content":"hi ""#), "{out}");
        assert!(out.ends_with("data: [DONE]\n\n\r\n0\r\n\r\n"), "{out}");
        let reqs = server.requests();
        assert_eq!(reqs.len(), 1);
        assert_eq!(reqs[0].method, "POST");
        assert_eq!(reqs[0].path, "/v1/chat/completions");
        assert_eq!(reqs[0].header("Content-Type"), Some("application/json"));
        assert_eq!(reqs[0].json()["model"], "m");
    }

    #[tokio::test]
    async fn scripted_server_cut_stops_before_the_final_chunk() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer("a b c d")).cut_after(2));
        let out = raw_exchange(&server, "{}").await;
        assert!(out.contains(r#""content":"""#), "{out}");
        assert!(!out.contains("[DONE]"), "{out}");
        assert!(!out.ends_with("0\r\n\r\n"), "{out}");
    }

    #[tokio::test]
    async fn scripted_server_without_a_queued_response_answers_500_naming_the_request() {
        let server = ScriptedServer::start().await;
        let out = raw_exchange(&server, "{}").await;
        assert!(out.starts_with("HTTP/1.1 500"), "{out}");
        assert!(
            out.contains("no response queued for POST /v1/chat/completions"),
            "{out}"
        );
    }
}

mod openai_stream {
    use std::time::Duration;

    use futures::StreamExt;
    use pablo::core::Coded;
    use pablo::model::{ModelClient, ModelError, ModelStopReason, StreamEvent};
    use pablo::protocol::Usage;
    use tokio_util::sync::CancellationToken;

    use super::support_common::*;
    use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

    #[tokio::test]
    async fn text_only_answer_streams_deltas_then_usage_and_completion() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer(
            "Hello there, friend.",
        )));
        let (events, err) = run(&openai(&server)).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(text_of(&events), "Hello there, friend.");
        let n = events.len();
        assert_eq!(
            events[n - 2..],
            [
                StreamEvent::Usage(Usage {
                    web_searches: 0,
                    input_tokens: 10,
                    output_tokens: 3,
                    cached_input_tokens: 0,
                    cache_write_input_tokens: 0,
                }),
                StreamEvent::Completed {
                    stop_reason: ModelStopReason::EndTurn
                }
            ]
        );
        let reqs = server.requests();
        assert_eq!(reqs.len(), 1);
        assert_eq!(reqs[0].path, "/v1/chat/completions");
        assert_eq!(
            reqs[0].header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        let body = reqs[0].json();
        assert_eq!(body["model"], "gpt-test");
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["messages"][0]["role"], "system");
        assert_eq!(body["messages"][1]["content"], "hello");
        assert_eq!(body["tools"][0]["type"], "function");
        assert_eq!(body["tools"][0]["function"]["name"], "fs_read");
    }

    #[tokio::test]
    async fn tool_call_streamed_in_fragments_arrives_whole() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_1",
            "fs_read",
            &["{\"pa", "th\": \"src/", "main.rs\"", "}"],
        )));
        let (events, err) = run(&openai(&server)).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(
            calls_of(&events),
            vec![call("call_1", "fs_read", r#"{"path": "src/main.rs"}"#)]
        );
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Completed {
                stop_reason: ModelStopReason::ToolUse
            })
        );
    }

    #[tokio::test]
    async fn two_parallel_tool_calls_arrive_in_index_order() {
        let server = ScriptedServer::start().await;
        let events = openai::Stream::new()
            .text(&["Reading both."])
            .tool_call(0, "call_a", "fs_read", &["{\"path\":", "\"a\"}"])
            .tool_call(1, "call_b", "fs_read", &["{\"path\":"])
            // Interleaved: the first call gets no more, the second its tail.
            .fragments(1, &["\"b\"}"])
            .finish("tool_calls")
            .usage(20, 8)
            .done();
        server.push(ScriptedResponse::sse(events));
        let (events, err) = run(&openai(&server)).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(text_of(&events), "Reading both.");
        assert_eq!(
            calls_of(&events),
            vec![
                call("call_a", "fs_read", r#"{"path":"a"}"#),
                call("call_b", "fs_read", r#"{"path":"b"}"#)
            ]
        );
    }

    #[tokio::test]
    async fn a_new_id_at_a_reused_index_starts_a_new_call() {
        let server = ScriptedServer::start().await;
        let events = openai::Stream::new()
            .tool_call(0, "call_a", "fs_read", &["{\"path\":\"a\"}"])
            .tool_call(0, "call_b", "fs_list", &["{}"])
            .finish("tool_calls")
            .done();
        server.push(ScriptedResponse::sse(events));
        let (events, err) = run(&openai(&server)).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(
            calls_of(&events),
            vec![
                call("call_a", "fs_read", r#"{"path":"a"}"#),
                call("call_b", "fs_list", "{}")
            ]
        );
    }

    #[tokio::test]
    async fn malformed_json_arguments_are_delivered_exactly_as_streamed() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_1",
            "fs_read",
            &["{\"path\": ", "src/main.rs"],
        )));
        let (events, err) = run(&openai(&server)).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(
            calls_of(&events),
            vec![call("call_1", "fs_read", "{\"path\": src/main.rs")]
        );
    }

    #[tokio::test]
    async fn stream_cut_after_output_is_a_stream_cut_error_and_is_not_retried() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer("one two three four")).cut_after(3));
        server.push(ScriptedResponse::sse(openai::text_answer(
            "must not be fetched",
        )));
        let (events, err) = run(&openai(&server)).await;
        let err = err.expect("a cut stream is an error");
        assert_eq!(err.code(), "model_stream_cut", "{err}");
        assert_eq!(text_of(&events), "one two ");
        assert_eq!(server.requests().len(), 1);
        assert_eq!(server.pending(), 1);
    }

    #[tokio::test]
    async fn a_body_that_ends_cleanly_without_done_is_a_stream_cut() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(
            openai::Stream::new()
                .text(&["partial"])
                .finish("stop")
                .events(),
        ));
        let (events, err) = run(&openai(&server)).await;
        assert_eq!(text_of(&events), "partial");
        assert_eq!(err.map(|e| e.code().as_str()), Some("model_stream_cut"));
    }

    #[tokio::test]
    async fn rate_limited_with_retry_after_is_retried_then_succeeds() {
        let server = ScriptedServer::start().await;
        server.push(
            ScriptedResponse::error(429, "rate_limit_exceeded", "Rate limit reached")
                .header("retry-after", "1"),
        );
        server.push(ScriptedResponse::sse(openai::text_answer("finally")));
        let (events, err) = run(&openai(&server)).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(text_of(&events), "finally");
        assert_eq!(server.requests().len(), 2);
    }

    #[tokio::test]
    async fn each_retry_is_announced_before_its_wait_with_the_attempt_the_status_and_the_host() {
        let server = ScriptedServer::start().await;
        for _ in 0..2 {
            server.push(
                ScriptedResponse::error(503, "overloaded", "try later").header("retry-after", "1"),
            );
        }
        server.push(ScriptedResponse::sse(openai::text_answer("at last")));
        let (events, err) = run_all(&openai(&server), CancellationToken::new()).await;
        assert!(err.is_none(), "{err:?}");
        let host = server.base_url();
        let host = host.trim_start_matches("http://").trim_end_matches("/v1");
        let notices: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::Retry(r) => Some(r.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(notices.len(), 2, "{events:?}");
        for (n, attempt) in notices.iter().zip([2, 3]) {
            assert_eq!(n.attempt, attempt);
            assert_eq!(n.max_attempts, 3);
            assert_eq!(n.wait, Duration::from_secs(1));
            assert_eq!(n.reason, format!("503 from {host}"));
            assert_eq!(n.code, "model_http_error");
        }
        // The notices come first; the answer after them.
        assert!(matches!(events[0], StreamEvent::Retry(_)));
        assert!(matches!(events[1], StreamEvent::Retry(_)));
        assert_eq!(text_of(&events), "at last");
    }

    #[tokio::test]
    async fn a_refused_connection_is_retried_with_a_notice_and_its_error_says_what_to_check() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        use pablo::model::http::ApiKey;
        use pablo::model::openai::{OpenAiClient, OpenAiConfig};
        let client = OpenAiClient::new(OpenAiConfig {
            provider: "openai".into(),
            base_url: format!("http://127.0.0.1:{port}/v1"),
            model: "gpt-test".into(),
            api_key: Some(ApiKey::new(KEY)),
            options: opts(),
            official: false,
            profile: pablo::model::ModelProfile::lookup("m"),
        })
        .unwrap();
        let (events, err) = run_all(&client, CancellationToken::new()).await;
        let reasons: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::Retry(r) => Some((r.attempt, r.reason.clone(), r.code.as_str())),
                _ => None,
            })
            .collect();
        let host = format!("127.0.0.1:{port}");
        assert_eq!(
            reasons,
            vec![
                (2, format!("no answer from {host}"), "model_unreachable"),
                (3, format!("no answer from {host}"), "model_unreachable"),
            ]
        );
        let m = err.expect("nobody listens").to_string();
        assert!(
            m.ends_with(
                "check the base URL (`base_url` in the config, or --base-url) and that a server \
                 answers there"
            ),
            "{m}"
        );
    }

    #[tokio::test]
    async fn server_errors_three_times_end_with_an_error_naming_status_and_message() {
        let server = ScriptedServer::start().await;
        for _ in 0..3 {
            server.push(ScriptedResponse::error(
                500,
                "server_error",
                "The server had an error processing your request",
            ));
        }
        server.push(ScriptedResponse::sse(openai::text_answer("too late")));
        let (events, err) = run(&openai(&server)).await;
        assert!(events.is_empty());
        let err = err.expect("three 500s are an error");
        assert!(
            matches!(err, ModelError::Http { status: 500, .. }),
            "{err:?}"
        );
        assert_eq!(err.code(), "model_http_error");
        let m = err.to_string();
        assert!(m.contains("HTTP 500"), "{m}");
        assert!(
            m.contains("The server had an error processing your request"),
            "{m}"
        );
        assert!(m.starts_with("openai:"), "{m}");
        // max_retries = 2: three requests, the fourth response is never asked for.
        assert_eq!(server.requests().len(), 3);
    }

    #[tokio::test]
    async fn a_json_answer_instead_of_a_stream_is_a_malformed_response_with_its_message() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::error(
            200,
            "invalid_model",
            "no such model here",
        ));
        let (events, err) = run(&openai(&server)).await;
        assert!(events.is_empty());
        let err = err.expect("JSON instead of SSE is an error");
        assert_eq!(err.code(), "model_malformed_response");
        assert!(err.to_string().contains("no such model here"), "{err}");
        assert_eq!(server.requests().len(), 1);
    }

    #[tokio::test]
    async fn a_client_error_is_not_retried_and_auth_failures_have_their_own_code() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::error(
            401,
            "invalid_request_error",
            "Incorrect API key provided",
        ));
        let (_, err) = run(&openai(&server)).await;
        let err = err.expect("401 is an error");
        assert_eq!(err.code(), "model_auth_failed");
        assert!(err.to_string().contains("Incorrect API key provided"));
        assert_eq!(server.requests().len(), 1);
    }

    #[tokio::test]
    async fn cancellation_during_a_stream_ends_the_call_promptly() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer("first second third")).hang_after(2));
        let client = openai(&server);
        let cancel = CancellationToken::new();
        let mut stream = client.stream(&request("hi"), cancel.clone()).await.unwrap();
        let first = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .unwrap();
        assert!(
            matches!(first, Some(Ok(StreamEvent::TextDelta(_)))),
            "{first:?}"
        );
        cancel.cancel();
        // The idle timeout (2 s) is the other way out; the safety net below is longer, and the
        // outcome tells which one fired.
        let next = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .unwrap();
        assert!(matches!(next, Some(Err(ModelError::Cancelled))), "{next:?}");
        assert!(stream.next().await.is_none());
    }

    #[tokio::test]
    async fn a_silent_stream_is_abandoned_after_the_idle_timeout() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer("a b c")).hang_after(2));
        let (events, err) = run(&openai(&server)).await;
        assert_eq!(text_of(&events), "a ");
        let err = err.expect("idle is an error");
        assert_eq!(err.code(), "model_idle_timeout");
        assert!(err.to_string().contains("no data for 2 s"), "{err}");
        assert_eq!(server.requests().len(), 1);
    }

    #[tokio::test]
    async fn an_unreachable_server_is_retried_then_named_in_the_error() {
        // Bind and drop a listener: the port is free and refuses connections.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let client = pablo::model::openai::OpenAiClient::new(pablo::model::openai::OpenAiConfig {
            provider: "ollama".into(),
            base_url: format!("http://127.0.0.1:{port}/v1"),
            model: "m".into(),
            api_key: None,
            options: opts(),
            official: false,
            profile: pablo::model::ModelProfile::lookup("m"),
        })
        .unwrap();
        let (_, err) = run(&client).await;
        let err = err.expect("connection refused is an error");
        assert_eq!(err.code(), "model_unreachable");
        let m = err.to_string();
        assert!(
            m.starts_with(&format!(
                "ollama: cannot connect to http://127.0.0.1:{port}/v1/chat/completions"
            )),
            "{m}"
        );
        // Named once: the transport's own text does not repeat it.
        assert_eq!(m.matches("127.0.0.1").count(), 1, "{m}");
        assert_eq!(client.provider(), "ollama");
    }
}

mod anthropic_stream {
    use std::time::Duration;

    use futures::StreamExt;
    use pablo::core::Coded;
    use pablo::model::{ModelClient, ModelError, ModelStopReason, StreamEvent};
    use pablo::protocol::Usage;
    use tokio_util::sync::CancellationToken;

    use super::support_common::*;
    use crate::support::http::{ScriptedResponse, ScriptedServer, anthropic};

    #[tokio::test]
    async fn text_only_answer_streams_deltas_then_usage_and_completion() {
        let server = ScriptedServer::start().await;
        let events = anthropic::Stream::new(42)
            .ping()
            .text(&["Hello", " there"])
            .raw(crate::support::http::named_event(
                "brand_new_event",
                r#"{"type":"brand_new_event"}"#,
            ))
            .stop("end_turn", 7);
        server.push(ScriptedResponse::sse(events));
        let (events, err) = run(&anthropic(&server)).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(text_of(&events), "Hello there");
        let n = events.len();
        assert_eq!(
            events[n - 2..],
            [
                StreamEvent::Usage(Usage {
                    web_searches: 0,
                    input_tokens: 42,
                    output_tokens: 7,
                    cached_input_tokens: 0,
                    cache_write_input_tokens: 0,
                }),
                StreamEvent::Completed {
                    stop_reason: ModelStopReason::EndTurn
                }
            ]
        );
        let reqs = server.requests();
        assert_eq!(reqs[0].path, "/v1/messages");
        assert_eq!(reqs[0].header("x-api-key"), Some(KEY));
        assert_eq!(reqs[0].header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(reqs[0].header("authorization"), None);
        let body = reqs[0].json();
        assert_eq!(body["model"], "claude-test");
        assert_eq!(body["max_tokens"], 1024);
        // A block, so that it can carry the prompt-cache breakpoint when the agent asks for one.
        assert_eq!(
            body["system"],
            serde_json::json!([{"type": "text", "text": "you are a test"}])
        );
        assert_eq!(body["stream"], true);
        assert_eq!(body["tools"][0]["name"], "fs_read");
        assert!(body["tools"][0]["input_schema"].is_object());
    }

    #[tokio::test]
    async fn tool_call_streamed_in_fragments_arrives_whole() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(anthropic::tool_call_answer(
            "toolu_1",
            "fs_read",
            &["", "{\"path\"", ": \"src/main.rs\"}"],
        )));
        let (events, err) = run(&anthropic(&server)).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(
            calls_of(&events),
            vec![call("toolu_1", "fs_read", r#"{"path": "src/main.rs"}"#)]
        );
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Completed {
                stop_reason: ModelStopReason::ToolUse
            })
        );
    }

    #[tokio::test]
    async fn two_parallel_tool_calls_arrive_in_block_order() {
        let server = ScriptedServer::start().await;
        let events = anthropic::Stream::new(10)
            .text(&["Both."])
            .tool_use("toolu_a", "fs_read", &["{\"path\":\"a\"}"])
            .tool_use("toolu_b", "fs_read", &["{\"path\":", "\"b\"}"])
            .stop("tool_use", 30);
        server.push(ScriptedResponse::sse(events));
        let (events, err) = run(&anthropic(&server)).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(text_of(&events), "Both.");
        assert_eq!(
            calls_of(&events),
            vec![
                call("toolu_a", "fs_read", r#"{"path":"a"}"#),
                call("toolu_b", "fs_read", r#"{"path":"b"}"#)
            ]
        );
    }

    #[tokio::test]
    async fn malformed_json_arguments_are_delivered_exactly_as_streamed() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(anthropic::tool_call_answer(
            "toolu_1",
            "fs_read",
            &["{\"path\": [", "1,"],
        )));
        let (events, err) = run(&anthropic(&server)).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(
            calls_of(&events),
            vec![call("toolu_1", "fs_read", "{\"path\": [1,")]
        );
    }

    #[tokio::test]
    async fn stream_cut_after_output_is_a_stream_cut_error_and_is_not_retried() {
        let server = ScriptedServer::start().await;
        // message_start, block start, first delta, then the socket closes.
        server.push(
            ScriptedResponse::sse(
                anthropic::Stream::new(5)
                    .text(&["Hel", "lo"])
                    .stop("end_turn", 2),
            )
            .cut_after(3),
        );
        server.push(ScriptedResponse::sse(anthropic::text_answer("never")));
        let (events, err) = run(&anthropic(&server)).await;
        assert_eq!(text_of(&events), "Hel");
        assert_eq!(err.map(|e| e.code().as_str()), Some("model_stream_cut"));
        assert_eq!(server.requests().len(), 1);
    }

    #[tokio::test]
    async fn overloaded_error_before_any_output_is_retried() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(
            anthropic::Stream::new(5)
                .ping()
                .error("overloaded_error", "Overloaded")
                .events(),
        ));
        server.push(ScriptedResponse::sse(anthropic::text_answer("second try")));
        let (events, err) = run(&anthropic(&server)).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(text_of(&events), "second try");
        assert_eq!(server.requests().len(), 2);
    }

    #[tokio::test]
    async fn overloaded_error_after_output_is_final() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(
            anthropic::Stream::new(5)
                .text(&["partial"])
                .error("overloaded_error", "Overloaded")
                .events(),
        ));
        server.push(ScriptedResponse::sse(anthropic::text_answer("never")));
        let (events, err) = run(&anthropic(&server)).await;
        assert_eq!(text_of(&events), "partial");
        let err = err.expect("an error after output is final");
        assert!(matches!(err, ModelError::Provider { .. }), "{err:?}");
        assert_eq!(err.to_string(), "anthropic: overloaded_error: Overloaded");
        assert_eq!(server.requests().len(), 1);
    }

    #[tokio::test]
    async fn http_529_overloaded_is_retried_then_succeeds() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::error(
            529,
            "overloaded_error",
            "Overloaded",
        ));
        server.push(ScriptedResponse::sse(anthropic::text_answer("ok")));
        let (events, err) = run(&anthropic(&server)).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(text_of(&events), "ok");
        assert_eq!(server.requests().len(), 2);
    }

    #[tokio::test]
    async fn rate_limited_with_retry_after_is_retried_then_succeeds() {
        let server = ScriptedServer::start().await;
        server.push(
            ScriptedResponse::error(429, "rate_limit_error", "Number of requests exceeded")
                .header("retry-after", "1"),
        );
        server.push(ScriptedResponse::sse(anthropic::text_answer(
            "after waiting",
        )));
        let (events, err) = run(&anthropic(&server)).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(text_of(&events), "after waiting");
        assert_eq!(server.requests().len(), 2);
    }

    #[tokio::test]
    async fn server_errors_three_times_end_with_an_error_naming_status_and_message() {
        let server = ScriptedServer::start().await;
        for _ in 0..3 {
            server.push(ScriptedResponse::error(
                500,
                "api_error",
                "Internal server error",
            ));
        }
        let (events, err) = run(&anthropic(&server)).await;
        assert!(events.is_empty());
        let err = err.expect("three 500s are an error");
        assert_eq!(
            err.to_string(),
            "anthropic: HTTP 500: api_error: Internal server error"
        );
        assert_eq!(server.requests().len(), 3);
    }

    #[tokio::test]
    async fn a_mid_stream_prompt_too_long_is_a_context_overflow_and_is_not_retried() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(
            anthropic::Stream::new(5)
                .error(
                    "invalid_request_error",
                    "prompt is too long: 210000 tokens > 200000 maximum",
                )
                .events(),
        ));
        let (_, err) = run(&anthropic(&server)).await;
        let err = err.expect("an error event is an error");
        assert_eq!(err.code(), "model_context_too_long");
        assert!(err.to_string().contains("210000 tokens"), "{err}");
        assert_eq!(server.requests().len(), 1);
    }

    #[tokio::test]
    async fn a_fatal_mid_stream_error_is_not_retried() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(
            anthropic::Stream::new(5)
                .error(
                    "invalid_request_error",
                    "messages: text content blocks must be non-empty",
                )
                .events(),
        ));
        let (_, err) = run(&anthropic(&server)).await;
        let err = err.expect("an error event is an error");
        assert_eq!(err.code(), "model_error");
        assert!(err.to_string().contains("must be non-empty"));
        assert_eq!(server.requests().len(), 1);
    }

    #[tokio::test]
    async fn cancellation_during_a_stream_ends_the_call_promptly() {
        let server = ScriptedServer::start().await;
        server.push(
            ScriptedResponse::sse(
                anthropic::Stream::new(5)
                    .text(&["a", "b"])
                    .stop("end_turn", 2),
            )
            .hang_after(3),
        );
        let client = anthropic(&server);
        let cancel = CancellationToken::new();
        let mut stream = client.stream(&request("hi"), cancel.clone()).await.unwrap();
        let first = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .unwrap();
        assert!(
            matches!(first, Some(Ok(StreamEvent::TextDelta(_)))),
            "{first:?}"
        );
        cancel.cancel();
        let next = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .unwrap();
        assert!(matches!(next, Some(Err(ModelError::Cancelled))), "{next:?}");
    }
}
