//! Providers: the selection from flags and the environment, the API key kept out of debug
//! output, errors and traces, and the agent loop driven end to end over a scripted server.

mod selection {
    use std::collections::HashMap;

    use pablo::core::Coded;
    use pablo::model::http::HttpOptions;
    use pablo::model::select::{ProviderSettings, select_with_env};

    use crate::engine::providers_stream::support_common::*;
    use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + Sync + use<> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    fn closed_port_url() -> String {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        format!("http://127.0.0.1:{port}/v1")
    }

    #[tokio::test]
    async fn with_no_key_and_no_ollama_the_error_says_exactly_what_to_set() {
        let settings = ProviderSettings {
            base_url: Some(closed_port_url()),
            ..Default::default()
        };
        let err = match select_with_env(&settings, &HttpOptions::default(), &env_of(&[])).await {
            Ok(c) => panic!("selected {} without any provider", c.provider()),
            Err(e) => e,
        };
        assert_eq!(err.code(), "model_config");
        let m = err.to_string();
        for needle in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "Ollama",
            "--provider openai|anthropic|ollama",
            "--model",
            "--base-url",
            "api_key_env",
            "provider, model, base_url",
        ] {
            assert!(m.contains(needle), "{needle:?} missing from: {m}");
        }
    }

    #[tokio::test]
    async fn a_local_ollama_that_answers_is_autodetected_and_used() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::json(
            200,
            &serde_json::json!({"object": "list", "data": [{"id": "qwen3:8b"}]}),
        ));
        server.push(ScriptedResponse::sse(openai::text_answer("local hello")));
        let host = server.addr().to_string();
        let client = select_with_env(
            &ProviderSettings::default(),
            &opts(),
            &env_of(&[("OLLAMA_HOST", &host)]),
        )
        .await
        .unwrap();
        assert_eq!(client.provider(), "ollama");
        assert_eq!(client.model(), "qwen3:8b");
        let (events, err) = run(client.as_ref()).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(text_of(&events), "local hello");
        let reqs = server.requests();
        assert_eq!(reqs[0].method, "GET");
        assert_eq!(reqs[0].path, "/v1/models");
        assert_eq!(reqs[1].path, "/v1/chat/completions");
        assert_eq!(reqs[1].header("authorization"), None);
    }

    #[tokio::test]
    async fn an_anthropic_key_in_the_environment_selects_anthropic_at_the_given_url() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(
            crate::support::http::anthropic::text_answer("from claude"),
        ));
        let settings = ProviderSettings {
            base_url: Some(server.base_url()),
            model: Some("claude-x".into()),
            ..Default::default()
        };
        let client = select_with_env(
            &settings,
            &opts(),
            &env_of(&[("ANTHROPIC_API_KEY", KEY), ("OPENAI_API_KEY", "other")]),
        )
        .await
        .unwrap();
        assert_eq!(client.provider(), "anthropic");
        let (events, err) = run(client.as_ref()).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(text_of(&events), "from claude");
        assert_eq!(server.requests()[0].header("x-api-key"), Some(KEY));
    }
}

mod key_secrecy {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use pablo::model::ModelClient;
    use pablo::model::http::ApiKey;
    use pablo::model::openai::{OpenAiClient, OpenAiConfig};

    use crate::engine::providers_stream::support_common::*;
    use crate::support::http::{ScriptedResponse, ScriptedServer};

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn the_key_never_appears_in_debug_output_errors_or_traces() {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .finish();
        // Current-thread runtime: the provider's tasks run on this thread and see this default.
        let _guard = tracing::subscriber::set_default(subscriber);

        let server = ScriptedServer::start().await;
        // Providers sometimes echo what they were given; the echo must be scrubbed.
        server.push(ScriptedResponse::error(
            401,
            "invalid_request_error",
            &format!("Incorrect API key provided: {KEY}"),
        ));
        for _ in 0..3 {
            server.push(ScriptedResponse::error(
                500,
                "api_error",
                &format!("key {KEY} broke"),
            ));
        }
        server.push(ScriptedResponse::sse(
            crate::support::http::anthropic::Stream::new(1)
                .error("overloaded_error", &format!("overloaded for {KEY}"))
                .events(),
        ));
        for _ in 0..2 {
            server.push(ScriptedResponse::sse(
                crate::support::http::anthropic::Stream::new(1)
                    .error("overloaded_error", &format!("overloaded for {KEY}"))
                    .events(),
            ));
        }

        let oa = openai(&server);
        let an = anthropic(&server);
        let mut texts = vec![
            format!("{oa:?}"),
            format!("{an:?}"),
            format!("{:?}", ApiKey::new(KEY)),
        ];
        for client in [&oa as &dyn ModelClient, &oa, &an] {
            let (_, err) = run(client).await;
            let err = err.expect("every scripted call fails");
            texts.push(err.to_string());
            texts.push(format!("{err:?}"));
        }
        // An unreachable endpoint carrying the key.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let unreachable = OpenAiClient::new(OpenAiConfig {
            provider: "openai".into(),
            base_url: format!("http://127.0.0.1:{port}/v1"),
            model: "m".into(),
            api_key: Some(ApiKey::new(KEY)),
            options: opts(),
            official: false,
            profile: pablo::model::ModelProfile::lookup("m"),
        })
        .unwrap();
        let (_, err) = run(&unreachable).await;
        texts.push(err.expect("unreachable").to_string());
        texts.push(format!("{unreachable:?}"));

        assert_eq!(server.requests().len(), 7);
        assert!(
            texts[0].contains("Sensitive") || texts[0].contains("redacted"),
            "{}",
            texts[0]
        );
        for t in &texts {
            assert!(!t.contains(KEY), "the key leaked into: {t}");
        }
        assert!(
            texts[3].contains("Incorrect API key provided: <redacted>"),
            "{}",
            texts[3]
        );
        drop(_guard);
        let trace = String::from_utf8_lossy(&captured.0.lock().unwrap()).into_owned();
        assert!(
            trace.contains("model call"),
            "the trace captured nothing: {trace}"
        );
        assert!(!trace.contains(KEY), "the key leaked into the trace");
    }
}

mod agent_end_to_end {
    use std::sync::Arc;

    use pablo::model::ModelClient;

    use pablo::protocol::{Event, PlanStatus, StopReason, ToolOutcome};
    use pablo_tools::Catalog;
    use pablo_tools::plan::PlanUpdate;

    use crate::engine::providers_stream::support_common::*;
    use crate::support::http::{ScriptedResponse, ScriptedServer, anthropic, openai};

    /// Runs one user turn through the real agent loop, with `plan.update` as its one tool.
    async fn one_turn(model: Arc<dyn ModelClient>, text: &str) -> Vec<Event> {
        let mut catalog = Catalog::new();
        catalog.register(Arc::new(PlanUpdate)).unwrap();
        let setup = crate::support::agent::Turns {
            catalog,
            ..Default::default()
        };
        crate::support::agent::run(model, setup, &[text]).await
    }

    fn tool_results(events: &[Event]) -> Vec<(String, ToolOutcome)> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::ToolCallEnd {
                    call_id, result, ..
                } => Some((call_id.clone(), result.clone())),
                _ => None,
            })
            .collect()
    }

    const PLAN_FRAGMENTS: &[&str] = &[
        "{\"items\": [{\"content\": \"read the ",
        "code\", \"status\": \"in_pro",
        "gress\"}]}",
    ];

    #[tokio::test]
    async fn openai_tool_call_runs_and_its_result_goes_into_the_second_request() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_plan",
            "update_plan",
            PLAN_FRAGMENTS,
        )));
        server.push(ScriptedResponse::sse(openai::text_answer("Planned.")));
        let events = one_turn(Arc::new(openai(&server)), "make a plan").await;

        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::PlanUpdate { items, .. }
                if items.len() == 1 && items[0].status == PlanStatus::InProgress)),
            "{events:?}"
        );
        let results = tool_results(&events);
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].0, "call_plan");
        assert!(
            matches!(results[0].1, ToolOutcome::Ok { .. }),
            "{results:?}"
        );
        assert!(matches!(
            events.last(),
            Some(Event::TurnCompleted {
                stop_reason: StopReason::EndTurn,
                ..
            })
        ));

        let reqs = server.requests();
        assert_eq!(reqs.len(), 2);
        let messages = reqs[1].json()["messages"].as_array().unwrap().clone();
        let assistant = &messages[messages.len() - 2];
        assert_eq!(assistant["role"], "assistant");
        assert_eq!(assistant["tool_calls"][0]["id"], "call_plan");
        assert_eq!(
            assistant["tool_calls"][0]["function"]["name"],
            "update_plan"
        );
        let tool = &messages[messages.len() - 1];
        assert_eq!(tool["role"], "tool");
        assert_eq!(tool["tool_call_id"], "call_plan");
        let content: serde_json::Value =
            serde_json::from_str(tool["content"].as_str().unwrap()).unwrap();
        assert_eq!(content["ok"], true);
    }

    #[tokio::test]
    async fn anthropic_malformed_arguments_get_invalid_arguments_and_the_run_goes_on() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(anthropic::tool_call_answer(
            "toolu_bad",
            "update_plan",
            &["{\"items\": [", "{\"content\""],
        )));
        server.push(ScriptedResponse::sse(anthropic::text_answer(
            "Sorry, fixed.",
        )));
        let events = one_turn(Arc::new(anthropic(&server)), "make a plan").await;

        let results = tool_results(&events);
        assert_eq!(results.len(), 1);
        match &results[0].1 {
            ToolOutcome::Err { error, .. } => assert_eq!(error.code, "invalid_arguments"),
            other => panic!("expected invalid_arguments, got {other:?}"),
        }
        assert!(matches!(
            events.last(),
            Some(Event::TurnCompleted {
                stop_reason: StopReason::EndTurn,
                ..
            })
        ));
        let reqs = server.requests();
        assert_eq!(reqs.len(), 2);
        let messages = reqs[1].json()["messages"].as_array().unwrap().clone();
        let last = messages.last().unwrap();
        assert_eq!(last["role"], "user");
        assert_eq!(last["content"][0]["type"], "tool_result");
        assert_eq!(last["content"][0]["tool_use_id"], "toolu_bad");
        assert_eq!(last["content"][0]["is_error"], true);
        assert!(
            last["content"][0]["content"]
                .as_str()
                .unwrap()
                .contains("invalid_arguments")
        );
        // The malformed call is replayed with an empty input object, which the API accepts.
        assert_eq!(
            messages[messages.len() - 2]["content"][0]["input"],
            serde_json::json!({})
        );
    }
}
