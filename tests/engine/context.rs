//! Context economy of the model clients against scripted servers: prompt-cache breakpoints and a
//! byte-stable prefix per provider and wire format, reasoning kept apart from the answer and sent
//! back where the provider needs it, and cache reads and writes reported per call.

use std::sync::Arc;
use std::time::Duration;

use pablo::config::ReasoningLevel;
use pablo::model::anthropic::{AnthropicClient, AnthropicConfig};
use pablo::model::http::{ApiKey, HttpOptions};
use pablo::model::openai::{OpenAiClient, OpenAiConfig};
use pablo::model::responses::ResponsesClient;
use pablo::model::{ModelClient, ModelProfile};
use pablo::protocol::{Event, ReasoningBlock, StopReason};
use pablo_agent::Limits;
use pablo_tools::Catalog;
use pablo_tools::plan::PlanUpdate;
use serde_json::{Value, json};

use crate::support::http::{ScriptedResponse, ScriptedServer, anthropic, openai, responses};
use crate::support::prompt::assert_prefix_stable;

const KEY: &str = "sk-test-context-0123456789";
const SESSION: &str = "ctx-session";
const PLAN: &str = r#"{"items": [{"content": "look", "status": "in_progress"}]}"#;

fn opts() -> HttpOptions {
    HttpOptions {
        web_search: None,
        idle_timeout: Duration::from_secs(5),
        max_retries: 0,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(20),
        max_retry_after: Duration::from_secs(1),
        max_event_bytes: 4 * 1024 * 1024,
        progress_timeout: pablo::model::http::DEFAULT_PROGRESS_TIMEOUT,
    }
}

fn anthropic_client(server: &ScriptedServer, profile: ModelProfile) -> Arc<dyn ModelClient> {
    Arc::new(
        AnthropicClient::new(AnthropicConfig {
            base_url: server.base_url(),
            model: "claude-sonnet-4-5".into(),
            api_key: ApiKey::new(KEY),
            options: opts(),
            profile,
        })
        .unwrap(),
    )
}

fn openai_config(server: &ScriptedServer, model: &str, official: bool) -> OpenAiConfig {
    OpenAiConfig {
        provider: "openai".into(),
        base_url: server.base_url(),
        model: model.into(),
        api_key: Some(ApiKey::new(KEY)),
        options: opts(),
        official,
        profile: ModelProfile::lookup(model),
    }
}

fn stop_reason(events: &[Event]) -> Option<StopReason> {
    events.iter().rev().find_map(|e| match e {
        Event::TurnCompleted { stop_reason, .. } => Some(*stop_reason),
        _ => None,
    })
}

/// `(message, block)` of every breakpoint in an Anthropic body's messages.
fn breakpoints(body: &Value) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (i, m) in body["messages"].as_array().unwrap().iter().enumerate() {
        for (j, b) in m["content"].as_array().unwrap().iter().enumerate() {
            if b.get("cache_control").is_some() {
                out.push((i, j));
            }
        }
    }
    out
}

fn last_block(body: &Value) -> (usize, usize) {
    let m = body["messages"].as_array().unwrap();
    (
        m.len() - 1,
        m[m.len() - 1]["content"].as_array().unwrap().len() - 1,
    )
}

mod anthropic_caching {
    use super::*;

    #[tokio::test]
    async fn a_three_call_turn_moves_its_breakpoints_forward_on_a_byte_stable_prefix() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(anthropic::tool_call_answer(
            "t1",
            "update_plan",
            &[PLAN],
        )));
        // The second step makes 25 calls at once: more blocks than the cache looks back over.
        let mut many = anthropic::Stream::new(10);
        for i in 0..25 {
            many = many.tool_use(&format!("m{i}"), "update_plan", &[PLAN]);
        }
        server.push(ScriptedResponse::sse(many.stop("tool_use", 5)));
        server.push(ScriptedResponse::sse(anthropic::text_answer("Planned.")));
        let profile = ModelProfile::lookup("claude-sonnet-4-5");
        let events = turns(
            anthropic_client(&server, profile),
            Limits::default(),
            &["plan"],
        )
        .await;
        assert_eq!(stop_reason(&events), Some(StopReason::EndTurn));
        let b = server.request_bodies();
        assert_eq!(b.len(), 3);
        for body in &b {
            // The stable prefix: tools and system, cached together by the system's breakpoint.
            assert_eq!(
                body["system"][0]["cache_control"],
                json!({"type": "ephemeral"})
            );
            assert!(body.to_string().matches("cache_control").count() <= 4);
            // The end of the conversation always carries one.
            assert!(breakpoints(body).contains(&last_block(body)), "{body}");
        }
        // Each later request also marks exactly where the request before it ended, so what
        // that call wrote is read back even 25 blocks further on.
        for k in 1..3 {
            let previous_end = last_block(&b[k - 1]);
            assert!(
                breakpoints(&b[k]).contains(&previous_end),
                "request {k}: {:?} does not mark {previous_end:?}",
                breakpoints(&b[k])
            );
        }
        let (prev, end) = (last_block(&b[1]), last_block(&b[2]));
        assert!(
            prev.0 < end.0 && end.1 >= 24,
            "25 results lie between the two"
        );
        assert_prefix_stable(&b);
    }

    #[tokio::test]
    async fn a_compaction_summary_call_carries_no_breakpoint() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(anthropic::text_answer(
            "a long first answer that makes the conversation grow past the byte bound",
        )));
        server.push(ScriptedResponse::sse(anthropic::text_answer("SUMMARY")));
        server.push(ScriptedResponse::sse(anthropic::text_answer("second")));
        let limits = Limits {
            compact_at_bytes: 600,
            ..Limits::default()
        };
        let profile = ModelProfile::lookup("claude-sonnet-4-5");
        let events = turns(anthropic_client(&server, profile), limits, &["one", "two"]).await;
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::ContextCompacted { .. })),
            "{events:?}"
        );
        let b = server.request_bodies();
        assert_eq!(b.len(), 3);
        assert!(b[1].to_string().contains("Write a summary"), "{}", b[1]);
        assert!(!b[1].to_string().contains("cache_control"), "{}", b[1]);
        assert!(b[2].to_string().contains("cache_control"));
    }

    #[tokio::test]
    async fn cache_reads_and_writes_are_reported_per_call_with_the_session_cost() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(
            anthropic::Stream::with_cache(100, 1000, 500)
                .text(&["ok"])
                .stop("end_turn", 10),
        ));
        let profile = ModelProfile::lookup("claude-sonnet-4-5");
        let events = turns(
            anthropic_client(&server, profile),
            Limits::default(),
            &["hi"],
        )
        .await;
        let usage = events
            .iter()
            .find_map(|e| match e {
                Event::Usage { last, .. } => Some(*last),
                _ => None,
            })
            .unwrap();
        assert_eq!(usage.input_tokens, 1600);
        assert_eq!(usage.cached_input_tokens, 1000);
        assert_eq!(usage.cache_write_input_tokens, 500);
        let (used, window, cost) = events
            .iter()
            .find_map(|e| match e {
                Event::ContextUsage {
                    used_tokens,
                    window_tokens,
                    cost_usd,
                } => Some((*used_tokens, *window_tokens, *cost_usd)),
                _ => None,
            })
            .unwrap();
        assert_eq!((used, window), (1600, 200_000));
        // Sonnet: $3 input, $0.30 cache read, $3.75 cache write, $15 output per million.
        let expected = (100.0 * 3.0 + 1000.0 * 0.3 + 500.0 * 3.75 + 10.0 * 15.0) / 1e6;
        assert!((cost.unwrap() - expected).abs() < 1e-12, "{cost:?}");
    }
}

mod anthropic_thinking {
    use super::*;

    #[tokio::test]
    async fn thinking_streams_as_reasoning_and_goes_back_verbatim_with_its_signature() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(
            anthropic::Stream::new(10)
                .thinking(&["I should ", "plan first."], "sig-abc==")
                .redacted_thinking("opaque-data")
                .tool_use("t1", "update_plan", &[PLAN])
                .stop("tool_use", 30),
        ));
        server.push(ScriptedResponse::sse(anthropic::text_answer("Planned.")));
        let mut profile = ModelProfile::lookup("claude-sonnet-4-5");
        profile.reasoning = Some(ReasoningLevel::High);
        let events = turns(
            anthropic_client(&server, profile),
            Limits::default(),
            &["plan"],
        )
        .await;
        assert_eq!(stop_reason(&events), Some(StopReason::EndTurn));

        let b = server.request_bodies();
        assert_eq!(b[0]["thinking"]["type"], "enabled");
        assert!(b[0]["thinking"]["budget_tokens"].as_u64().unwrap() >= 1024);
        assert!(b[0]["max_tokens"].as_u64() > b[0]["thinking"]["budget_tokens"].as_u64());
        let assistant = &b[1]["messages"][1];
        assert_eq!(assistant["role"], "assistant");
        assert_eq!(
            assistant["content"][0],
            json!({"type": "thinking", "thinking": "I should plan first.", "signature": "sig-abc=="})
        );
        assert_eq!(
            assistant["content"][1],
            json!({"type": "redacted_thinking", "data": "opaque-data"})
        );
        assert_eq!(assistant["content"][2]["type"], "tool_use");

        // Shown as reasoning, never as the answer.
        let reasoning: String = events
            .iter()
            .filter_map(|e| match e {
                Event::ReasoningDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(reasoning, "I should plan first.");
        for e in &events {
            if let Event::MessageDelta { text } | Event::MessageCompleted { text, .. } = e {
                assert!(!text.contains("plan first"), "{e:?}");
            }
        }
        let blocks = events
            .iter()
            .find_map(|e| match e {
                Event::ReasoningCompleted { blocks } => Some(blocks.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(
            blocks,
            vec![
                ReasoningBlock::Thinking {
                    text: "I should plan first.".into(),
                    signature: "sig-abc==".into()
                },
                ReasoningBlock::Redacted {
                    data: "opaque-data".into()
                }
            ]
        );
    }
}

mod openai_chat {
    use super::*;

    fn plan_call(id: &str) -> ScriptedResponse {
        ScriptedResponse::sse(openai::tool_call_answer(id, "update_plan", &[PLAN]))
    }

    #[tokio::test]
    async fn a_three_call_turn_keeps_the_prefix_byte_stable_and_sends_the_session_as_cache_key() {
        let server = ScriptedServer::start().await;
        server.push(plan_call("c1"));
        server.push(plan_call("c2"));
        server.push(ScriptedResponse::sse(openai::text_answer("Planned.")));
        let client = OpenAiClient::new(openai_config(&server, "gpt-4.1", true)).unwrap();
        let events = turns(Arc::new(client), Limits::default(), &["plan"]).await;
        assert_eq!(stop_reason(&events), Some(StopReason::EndTurn));
        let b = server.request_bodies();
        assert_eq!(b.len(), 3);
        for body in &b {
            assert_eq!(body["prompt_cache_key"], SESSION);
        }
        assert_prefix_stable(&b);
        // Byte for byte, as serialized on the wire: the earlier messages are a prefix.
        let first = serde_json::to_string(&b[1]["messages"]).unwrap();
        let second = serde_json::to_string(&b[2]["messages"]).unwrap();
        assert!(second.starts_with(first.trim_end_matches(']')));
    }

    #[tokio::test]
    async fn a_compatible_server_gets_no_cache_key() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer("hi")));
        let client = OpenAiClient::new(openai_config(&server, "local", false)).unwrap();
        turns(Arc::new(client), Limits::default(), &["hi"]).await;
        assert!(server.request_bodies()[0].get("prompt_cache_key").is_none());
    }

    #[tokio::test]
    async fn reasoning_content_reasoning_and_inline_think_stay_out_of_the_answer() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(
            openai::Stream::new()
                .reasoning("reasoning_content", &["weigh ", "it"])
                .text(&["Answer one."])
                .finish("stop")
                .done(),
        ));
        server.push(ScriptedResponse::sse(
            openai::Stream::new()
                .text(&["<think>", "inline thought</th", "ink>\n\nAnswer two."])
                .finish("stop")
                .done(),
        ));
        let client = OpenAiClient::new(openai_config(&server, "local", false)).unwrap();
        let events = turns(Arc::new(client), Limits::default(), &["one", "two"]).await;
        let answers: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                Event::MessageCompleted { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(answers, ["Answer one.", "Answer two."]);
        let thoughts: Vec<String> = events
            .iter()
            .filter_map(|e| match e {
                Event::ReasoningCompleted { blocks } => {
                    Some(pablo::protocol::reasoning_text(blocks))
                }
                _ => None,
            })
            .collect();
        assert_eq!(thoughts, ["weigh it", "inline thought"]);
        // Kept for the person, not sent back: the second request's history has the answer only.
        let second = &server.request_bodies()[1];
        assert!(!second.to_string().contains("weigh"), "{second}");
        assert!(second.to_string().contains("Answer one."));
    }
}

mod openai_responses {
    use super::*;

    #[tokio::test]
    async fn streamed_function_calls_carry_encrypted_reasoning_to_the_next_call() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(
            responses::Stream::new()
                .reasoning("rs_1", &["Look at ", "the plan."], "enc-ONE")
                .function_call("call_1", "update_plan", &[&PLAN[..10], &PLAN[10..]])
                .completed(200, 0, 40),
        ));
        server.push(ScriptedResponse::sse(
            responses::Stream::new()
                .reasoning("rs_2", &["Now finish."], "enc-TWO")
                .function_call("call_2", "update_plan", &[PLAN])
                .completed(260, 180, 30),
        ));
        server.push(ScriptedResponse::sse(
            responses::Stream::new()
                .text(&["Plan", "ned."])
                .completed(320, 240, 5),
        ));
        let client = ResponsesClient::new(openai_config(&server, "gpt-5", true)).unwrap();
        let events = turns(Arc::new(client), Limits::default(), &["plan"]).await;
        assert_eq!(stop_reason(&events), Some(StopReason::EndTurn));

        let reqs = server.requests();
        assert_eq!(reqs[0].path, "/v1/responses");
        let b = server.request_bodies();
        for body in &b {
            assert_eq!(body["store"], false);
            assert_eq!(body["stream"], true);
            assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
            assert_eq!(body["prompt_cache_key"], SESSION);
            assert_eq!(body["instructions"], "you plan");
        }
        let types = |body: &Value| -> Vec<String> {
            body["input"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["type"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(
            types(&b[2]),
            [
                "message",
                "reasoning",
                "function_call",
                "function_call_output",
                "reasoning",
                "function_call",
                "function_call_output"
            ]
        );
        let input = b[2]["input"].as_array().unwrap();
        assert_eq!(input[1]["encrypted_content"], "enc-ONE");
        assert_eq!(input[1]["summary"][0]["text"], "Look at the plan.");
        assert_eq!(input[2]["call_id"], "call_1");
        assert_eq!(input[2]["arguments"], PLAN);
        assert_eq!(input[3]["call_id"], "call_1");
        assert_eq!(input[4]["encrypted_content"], "enc-TWO");
        assert_prefix_stable(&b);

        // The summaries were shown as reasoning; the answer is only the answer.
        let answer = events.iter().find_map(|e| match e {
            Event::MessageCompleted { text, .. } if !text.is_empty() => Some(text.clone()),
            _ => None,
        });
        assert_eq!(answer.as_deref(), Some("Planned."));
        assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::ReasoningDelta { text } if text == "Look at "))
        );
        let usage = events
            .iter()
            .rev()
            .filter_map(|e| match e {
                Event::Usage { last, .. } => Some(*last),
                _ => None,
            })
            .next()
            .unwrap();
        assert_eq!((usage.input_tokens, usage.cached_input_tokens), (320, 240));
    }
}

/// Runs user turns through the real agent loop, with `plan.update` as its one tool.
async fn turns(model: Arc<dyn ModelClient>, limits: Limits, texts: &[&str]) -> Vec<Event> {
    let mut catalog = Catalog::new();
    catalog.register(Arc::new(PlanUpdate)).unwrap();
    let setup = crate::support::agent::Turns {
        session_id: SESSION,
        catalog,
        limits,
        ..Default::default()
    };
    crate::support::agent::run(model, setup, texts).await
}
