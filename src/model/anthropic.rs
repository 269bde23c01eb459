//! Anthropic Messages, streaming.
//!
//! The stream is a sequence of named events: `message_start` (input usage), content blocks
//! (`content_block_start` / `_delta` / `_stop`, for text and `tool_use`), `message_delta` (stop
//! reason, output usage), `message_stop`. `ping` keeps the connection alive, `error` may arrive
//! mid-stream (`overloaded_error` is worth a retry while nothing was streamed), and event types
//! added later are ignored, as Anthropic's versioning policy asks of clients.

use std::collections::HashMap;
use std::sync::Arc;

use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::http::{ApiKey, Endpoint, HttpOptions, start_call};
use super::sse::{DecodeFailure, SseDecoder};
use super::{
    EventStream, Message, ModelClient, ModelError, ModelRequest, ModelStopReason, StreamEvent,
    ToolCall,
};
use crate::protocol::Usage;

/// The `anthropic-version` header this client speaks.
pub const API_VERSION: &str = "2023-06-01";

/// The settings of one Anthropic endpoint.
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// Up to and including the version segment: `https://api.anthropic.com/v1`.
    pub base_url: String,
    pub model: String,
    pub api_key: ApiKey,
    pub options: HttpOptions,
}

/// A Messages client.
#[derive(Debug)]
pub struct AnthropicClient {
    endpoint: Arc<Endpoint>,
    model: String,
}

impl AnthropicClient {
    pub fn new(config: AnthropicConfig) -> Result<Self, ModelError> {
        let mut headers = HeaderMap::new();
        headers.insert("x-api-key", config.api_key.header("")?);
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        let url = format!("{}/messages", config.base_url.trim_end_matches('/'));
        let client = super::http::client_for(&url)?;
        Ok(Self {
            endpoint: Arc::new(Endpoint {
                provider: "anthropic".to_string(),
                url,
                headers,
                key: Some(config.api_key),
                options: config.options,
                client,
            }),
            model: config.model,
        })
    }
}

#[async_trait::async_trait]
impl ModelClient for AnthropicClient {
    fn provider(&self) -> &str {
        &self.endpoint.provider
    }

    fn model(&self) -> &str {
        &self.model
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<EventStream, ModelError> {
        start_call(
            self.endpoint.clone(),
            &request_body(&self.model, request),
            AnthropicDecoder::new,
            cancel,
        )
    }
}

/// The JSON body of a streaming Messages request.
///
/// Messages must alternate user/assistant, so consecutive user-side items (tool results, then
/// perhaps a new user text) are merged into one user message, tool results first as the API
/// requires. Empty text blocks are dropped (the API refuses them).
pub fn request_body(model: &str, request: &ModelRequest) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    let mut push = |role: &str, blocks: Vec<Value>| {
        if blocks.is_empty() {
            return;
        }
        if let Some(last) = messages.last_mut()
            && last["role"] == role
            && let Some(content) = last["content"].as_array_mut()
        {
            content.extend(blocks);
            return;
        }
        messages.push(json!({"role": role, "content": blocks}));
    };
    for m in &request.messages {
        match m {
            Message::User { text } => {
                let blocks = if text.is_empty() {
                    Vec::new()
                } else {
                    vec![json!({"type": "text", "text": text})]
                };
                push("user", blocks);
            }
            Message::Assistant { text, tool_calls } => {
                let mut blocks = Vec::new();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for c in tool_calls {
                    // The API wants an object; malformed arguments (already answered with
                    // `invalid_arguments`) are replayed as an empty one.
                    let input = serde_json::from_str::<Value>(&c.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({}));
                    blocks.push(
                        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}),
                    );
                }
                push("assistant", blocks);
            }
            Message::Tool { call_id, content } => {
                let is_error = content.trim_start().starts_with(r#"{"ok":false"#);
                let mut block =
                    json!({"type": "tool_result", "tool_use_id": call_id, "content": content});
                if is_error {
                    block["is_error"] = Value::Bool(true);
                }
                push("user", vec![block]);
            }
        }
    }
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_output_tokens,
        "messages": messages,
        "stream": true,
    });
    if !request.system.is_empty() {
        body["system"] = Value::String(request.system.clone());
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
    }
    body
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Wire {
    MessageStart {
        message: WireMessage,
    },
    ContentBlockStart {
        index: u32,
        content_block: WireBlock,
    },
    ContentBlockDelta {
        index: u32,
        delta: WireDelta,
    },
    ContentBlockStop {
        index: u32,
    },
    MessageDelta {
        #[serde(default)]
        delta: WireMessageDelta,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: WireError,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Default)]
struct WireMessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct WireError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

/// The Messages stream decoder. Text deltas go out as they come; a tool call goes out whole at
/// its `content_block_stop`; usage and `Completed` at `message_stop`.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    tools: HashMap<u32, ToolCall>,
    usage: Usage,
    saw_usage: bool,
    stop_reason: Option<String>,
    done: bool,
}

impl AnthropicDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    fn add_usage(&mut self, u: WireUsage) {
        self.saw_usage = true;
        // Our `input_tokens` counts every input token; `cached_input_tokens` is the cached part.
        let cached = u.cache_read_input_tokens.unwrap_or(0);
        if let Some(i) = u.input_tokens {
            self.usage.input_tokens = i + cached + u.cache_creation_input_tokens.unwrap_or(0);
            self.usage.cached_input_tokens = cached;
        }
        // `output_tokens` in `message_delta` is cumulative.
        if let Some(o) = u.output_tokens {
            self.usage.output_tokens = o;
        }
    }
}

impl SseDecoder for AnthropicDecoder {
    fn event(
        &mut self,
        event: &eventsource_stream::Event,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeFailure> {
        if event.data.trim().is_empty() {
            return Ok(());
        }
        let wire: Wire = serde_json::from_str(&event.data).map_err(|e| {
            DecodeFailure::Fatal(ModelError::Malformed {
                provider: "anthropic".into(),
                message: format!("a `{}` event is not the expected JSON: {e}", event.event),
            })
        })?;
        match wire {
            Wire::MessageStart { message } => {
                if let Some(u) = message.usage {
                    self.add_usage(u);
                }
            }
            Wire::ContentBlockStart {
                index,
                content_block,
            } => match content_block {
                WireBlock::Text { text } => {
                    if !text.is_empty() {
                        out.push(StreamEvent::TextDelta(text));
                    }
                }
                WireBlock::ToolUse { id, name } => {
                    self.tools.insert(
                        index,
                        ToolCall {
                            id,
                            name,
                            arguments: String::new(),
                        },
                    );
                }
                WireBlock::Other => {}
            },
            Wire::ContentBlockDelta { index, delta } => match delta {
                WireDelta::TextDelta { text } => {
                    if !text.is_empty() {
                        out.push(StreamEvent::TextDelta(text));
                    }
                }
                WireDelta::InputJsonDelta { partial_json } => {
                    if let Some(call) = self.tools.get_mut(&index) {
                        call.arguments.push_str(&partial_json);
                    }
                }
                WireDelta::Other => {}
            },
            Wire::ContentBlockStop { index } => {
                if let Some(call) = self.tools.remove(&index) {
                    out.push(StreamEvent::ToolCall(call));
                }
            }
            Wire::MessageDelta { delta, usage } => {
                if let Some(r) = delta.stop_reason {
                    self.stop_reason = Some(r);
                }
                if let Some(u) = usage {
                    self.add_usage(u);
                }
            }
            Wire::MessageStop => {
                // Blocks never stopped (a server bug) still count: their JSON is as streamed.
                let mut rest: Vec<_> = self.tools.drain().collect();
                rest.sort_by_key(|(i, _)| *i);
                out.extend(rest.into_iter().map(|(_, c)| StreamEvent::ToolCall(c)));
                if self.saw_usage {
                    out.push(StreamEvent::Usage(self.usage));
                }
                let stop_reason = match self.stop_reason.as_deref() {
                    Some("end_turn") | Some("stop_sequence") | None => ModelStopReason::EndTurn,
                    Some("tool_use") => ModelStopReason::ToolUse,
                    Some("max_tokens") => ModelStopReason::MaxTokens,
                    Some(_) => ModelStopReason::Other,
                };
                out.push(StreamEvent::Completed { stop_reason });
                self.done = true;
            }
            Wire::Ping | Wire::Unknown => {}
            Wire::Error { error } => {
                let e = ModelError::Provider {
                    provider: "anthropic".into(),
                    message: if error.message.is_empty() {
                        error.kind.clone()
                    } else {
                        format!("{}: {}", error.kind, error.message)
                    },
                };
                return Err(
                    if error.kind == "overloaded_error" || error.kind == "api_error" {
                        DecodeFailure::Retryable(e)
                    } else {
                        DecodeFailure::Fatal(e)
                    },
                );
            }
        }
        Ok(())
    }

    fn finished(&self) -> bool {
        self.done
    }

    fn provider(&self) -> &str {
        "anthropic"
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::core::ToolSpec;

    fn feed(d: &mut AnthropicDecoder, name: &str, data: Value) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        let ev = eventsource_stream::Event {
            event: name.to_string(),
            data: data.to_string(),
            ..Default::default()
        };
        d.event(&ev, &mut out)
            .map_err(|e| format!("{e:?}"))
            .unwrap();
        out
    }

    #[test]
    fn unknown_events_blocks_and_deltas_are_ignored() {
        let mut d = AnthropicDecoder::new();
        assert!(
            feed(
                &mut d,
                "future_event",
                json!({"type": "future_event", "x": 1})
            )
            .is_empty()
        );
        assert!(feed(&mut d, "content_block_start", json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}})).is_empty());
        assert!(feed(&mut d, "content_block_delta", json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"x"}})).is_empty());
        assert!(!d.finished());
    }

    #[test]
    fn usage_counts_cached_input_and_takes_the_last_output_count() {
        let mut d = AnthropicDecoder::new();
        feed(
            &mut d,
            "message_start",
            json!({"type":"message_start","message":{"usage":{"input_tokens":5,"cache_read_input_tokens":100,"output_tokens":1}}}),
        );
        feed(
            &mut d,
            "message_delta",
            json!({"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":42}}),
        );
        let out = feed(&mut d, "message_stop", json!({"type":"message_stop"}));
        assert_eq!(
            out,
            vec![
                StreamEvent::Usage(Usage {
                    input_tokens: 105,
                    output_tokens: 42,
                    cached_input_tokens: 100
                }),
                StreamEvent::Completed {
                    stop_reason: ModelStopReason::MaxTokens
                }
            ]
        );
        assert!(d.finished());
    }

    #[test]
    fn request_merges_consecutive_tool_results_into_one_user_message() {
        let req = ModelRequest {
            system: "sys".into(),
            messages: vec![
                Message::User { text: "go".into() },
                Message::Assistant {
                    text: "reading".into(),
                    tool_calls: vec![
                        ToolCall {
                            id: "t1".into(),
                            name: "fs_read".into(),
                            arguments: r#"{"path":"a"}"#.into(),
                        },
                        ToolCall {
                            id: "t2".into(),
                            name: "fs_read".into(),
                            arguments: "{oops".into(),
                        },
                    ],
                },
                Message::Tool {
                    call_id: "t1".into(),
                    content: r#"{"ok":true,"data":1}"#.into(),
                },
                Message::Tool {
                    call_id: "t2".into(),
                    content: r#"{"ok":false,"error":{"code":"invalid_arguments","message":"m"}}"#
                        .into(),
                },
                Message::User {
                    text: "and then?".into(),
                },
            ],
            tools: vec![ToolSpec {
                name: "fs_read".into(),
                description: "read".into(),
                parameters: json!({"type":"object"}),
            }],
            max_output_tokens: 1000,
        };
        let b = request_body("claude-x", &req);
        assert_eq!(b["max_tokens"], 1000);
        assert_eq!(b["system"], "sys");
        assert_eq!(b["stream"], true);
        let m = b["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(
            m[0],
            json!({"role":"user","content":[{"type":"text","text":"go"}]})
        );
        assert_eq!(m[1]["content"][1]["input"], json!({"path":"a"}));
        assert_eq!(m[1]["content"][2]["input"], json!({}));
        assert_eq!(m[2]["role"], "user");
        let c = m[2]["content"].as_array().unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(c[0]["type"], "tool_result");
        assert_eq!(c[0]["tool_use_id"], "t1");
        assert!(c[0].get("is_error").is_none());
        assert_eq!(c[1]["tool_use_id"], "t2");
        assert_eq!(c[1]["is_error"], true);
        assert_eq!(c[2], json!({"type":"text","text":"and then?"}));
        assert_eq!(
            b["tools"][0],
            json!({"name":"fs_read","description":"read","input_schema":{"type":"object"}})
        );
    }
}
