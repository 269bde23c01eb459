//! Anthropic Messages, streaming.
//!
//! The stream is a sequence of named events: `message_start` (input usage), content blocks
//! (`content_block_start` / `_delta` / `_stop`, for text, `tool_use`, `thinking` and
//! `redacted_thinking`), `message_delta` (stop reason, output usage), `message_stop`. `ping`
//! keeps the connection alive, `error` may arrive mid-stream (`overloaded_error` is worth a retry
//! while nothing was streamed), and event types added later are ignored, as Anthropic's
//! versioning policy asks of clients.
//!
//! **Caching.** A request carries up to three `cache_control` breakpoints (the API allows four):
//! on the system prompt, which caches tools and system together; on the last block of the
//! conversation, which writes the whole request to the cache for the next call; and on the block
//! where the previous request ended (the one before the latest assistant message), which reads
//! back what that call wrote. The cache finds an earlier entry only within 20 blocks before a
//! breakpoint, so when one step appends many tool results the end-of-conversation breakpoint
//! alone would miss the previous entry; the second breakpoint sits exactly on it. One-off
//! requests (a compaction summary) carry none.
//!
//! **Thinking.** With reasoning asked for, extended thinking is enabled with a budget per level.
//! Thinking blocks are kept whole (text and signature, or the redacted data) and sent back
//! verbatim at the head of their assistant message, which the API requires while a tool loop
//! runs; the text streams as reasoning, never as answer text.

use std::collections::HashMap;

use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};

use super::http::{ApiKey, Endpoint, HttpModel, HttpOptions, WireFormat};
use super::profile::{ModelProfile, thinking_budget};
use super::search::{self, WebSearchTool};
use super::sse::{DecodeFailure, SseDecoder, SseEvent};
use super::{
    Message, ModelError, ModelRequest, ModelStopReason, ReasoningBlock, StreamEvent, ToolCall,
};
use pablo_protocol::Usage;

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
    pub profile: ModelProfile,
}

/// A Messages client.
pub type AnthropicClient = HttpModel<Messages>;

/// The Messages wire, with the web search it offers.
#[derive(Debug, Clone)]
pub struct Messages {
    web_search: Option<WebSearchTool>,
}

impl WireFormat for Messages {
    type Decoder = AnthropicDecoder;

    fn body(&self, model: &str, request: &ModelRequest) -> Value {
        let mut body = request_body(model, request);
        // After the tools' breakpoint: the search tool is the same in every request, but the
        // function tools end the cached prefix as they always did.
        if let (Some(search), Some(tools)) = (&self.web_search, body["tools"].as_array_mut()) {
            tools.push(search::anthropic_tool(search));
        }
        body
    }

    fn decoder(_provider: &str) -> AnthropicDecoder {
        AnthropicDecoder::new()
    }
}

impl AnthropicClient {
    pub fn new(config: AnthropicConfig) -> Result<Self, ModelError> {
        let mut headers = HeaderMap::new();
        headers.insert("x-api-key", config.api_key.header("")?);
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        let url = format!("{}/messages", config.base_url.trim_end_matches('/'));
        let wire = Messages {
            web_search: config.options.web_search.clone(),
        };
        Ok(HttpModel::from_parts(
            Endpoint {
                provider: "anthropic".to_string(),
                url,
                headers,
                key: Some(config.api_key),
                options: config.options,
            },
            config.model,
            config.profile,
            wire,
        ))
    }
}

/// The `cache_control` marker of a breakpoint (the default five-minute cache).
fn breakpoint() -> Value {
    json!({"type": "ephemeral"})
}

/// The thinking budget of a request, when thinking is on and `max_tokens` leaves room for it
/// (the budget must be at least 1024 tokens and below `max_tokens`).
fn thinking_for(request: &ModelRequest) -> Option<u32> {
    let budget = thinking_budget(request.reasoning?)?;
    let room = request.max_output_tokens.saturating_sub(1_024);
    let budget = budget.min(room);
    (budget >= 1_024).then_some(budget)
}

/// The JSON body of a streaming Messages request.
///
/// Messages must alternate user/assistant, so consecutive user-side items (tool results, then
/// perhaps a new user text) are merged into one user message, tool results first as the API
/// requires. Empty text blocks are dropped (the API refuses them). Breakpoints and thinking as
/// the module docs say.
pub fn request_body(model: &str, request: &ModelRequest) -> Value {
    let thinking = thinking_for(request);
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
            Message::User { text, images } => {
                // Images first (Anthropic finds them best placed before the words about them).
                let mut blocks: Vec<Value> = images
                    .iter()
                    .filter(|i| i.is_loaded())
                    .map(|i| {
                        json!({"type": "image", "source": {"type": "base64",
                            "media_type": i.media_type, "data": &*i.base64}})
                    })
                    .collect();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                push("user", blocks);
            }
            Message::Assistant {
                text,
                tool_calls,
                reasoning,
                searches,
            } => {
                let mut blocks = Vec::new();
                // Thinking goes back only while thinking is on; without it the API has no use
                // for the blocks.
                if thinking.is_some() {
                    for r in reasoning {
                        match r {
                            ReasoningBlock::Thinking { text, signature } => blocks.push(
                                json!({"type": "thinking", "thinking": text, "signature": signature}),
                            ),
                            ReasoningBlock::Redacted { data } => {
                                blocks.push(json!({"type": "redacted_thinking", "data": data}))
                            }
                            ReasoningBlock::Encrypted { .. } | ReasoningBlock::Text { .. } => {}
                        }
                    }
                }
                // The searches before the answer that read them, as the API requires.
                blocks.extend(search::anthropic_blocks(searches));
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
    if request.cache {
        mark_conversation_breakpoints(&mut messages);
    }
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_output_tokens.max(1),
        "messages": messages,
        "stream": true,
    });
    if let Some(budget) = thinking {
        body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
    }
    if !request.system.is_empty() {
        let mut block = json!({"type": "text", "text": request.system});
        if request.cache {
            block["cache_control"] = breakpoint();
        }
        body["system"] = json!([block]);
    }
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        // Without a system prompt the stable prefix ends with the tools.
        if request.cache
            && request.system.is_empty()
            && let Some(last) = tools.last_mut()
        {
            last["cache_control"] = breakpoint();
        }
        body["tools"] = Value::Array(tools);
    }
    body
}

/// Puts the conversation's breakpoints: on the last block, and on the last block before the
/// latest assistant message (where the previous request of a tool loop, or the last call of the
/// previous turn, ended).
fn mark_conversation_breakpoints(messages: &mut [Value]) {
    let Some(last) = messages.len().checked_sub(1) else {
        return;
    };
    let mut targets = vec![last];
    if let Some(a) = messages.iter().rposition(|m| m["role"] == "assistant")
        && a > 0
        && a - 1 != last
    {
        targets.push(a - 1);
    }
    for i in targets {
        if let Some(block) = messages[i]["content"]
            .as_array_mut()
            .and_then(|c| c.last_mut())
            // Thinking blocks cannot carry a breakpoint (and never end a user message).
            && !matches!(block["type"].as_str(), Some("thinking" | "redacted_thinking"))
        {
            block["cache_control"] = breakpoint();
        }
    }
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
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    ServerToolUse {
        id: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        input: Option<Value>,
    },
    WebSearchToolResult {
        tool_use_id: String,
        content: search::AnthropicResultContent,
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
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
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
    #[serde(default)]
    server_tool_use: Option<WireServerToolUse>,
}

#[derive(Deserialize, Default)]
struct WireServerToolUse {
    #[serde(default)]
    web_search_requests: u64,
}

#[derive(Deserialize)]
struct WireError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

/// The Messages stream decoder. Text and thinking deltas go out as they come; a tool call and a
/// thinking block go out whole at their `content_block_stop`; usage and `Completed` at
/// `message_stop`.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    tools: HashMap<u32, ToolCall>,
    thinking: HashMap<u32, ReasoningBlock>,
    searches: search::AnthropicSearches,
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
            let written = u.cache_creation_input_tokens.unwrap_or(0);
            self.usage.input_tokens = i + cached + written;
            self.usage.cached_input_tokens = cached;
            self.usage.cache_write_input_tokens = written;
        }
        // `output_tokens` in `message_delta` is cumulative.
        if let Some(o) = u.output_tokens {
            self.usage.output_tokens = o;
        }
        // Cumulative too, like the output count.
        if let Some(s) = u.server_tool_use {
            self.usage.web_searches = s.web_search_requests;
        }
    }

    /// A content block begins: text goes out; a tool call, thinking and a search's query are
    /// collected until their stop; a search's result completes the search.
    fn block_start(&mut self, index: u32, content_block: WireBlock, out: &mut Vec<StreamEvent>) {
        match content_block {
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
            WireBlock::Thinking {
                thinking,
                signature,
            } => {
                if !thinking.is_empty() {
                    out.push(StreamEvent::ReasoningDelta(thinking.clone()));
                }
                self.thinking.insert(
                    index,
                    ReasoningBlock::Thinking {
                        text: thinking,
                        signature,
                    },
                );
            }
            WireBlock::RedactedThinking { data } => {
                self.thinking
                    .insert(index, ReasoningBlock::Redacted { data });
            }
            // Another server tool (none is offered) is not a search.
            WireBlock::ServerToolUse { id, name, input } if name == search::TOOL_NAME => {
                self.searches.begin(index, id, input.as_ref());
            }
            WireBlock::WebSearchToolResult {
                tool_use_id,
                content,
            } => out.push(StreamEvent::WebSearch(
                self.searches.result(tool_use_id, content),
            )),
            WireBlock::ServerToolUse { .. } | WireBlock::Other => {}
        }
    }
}

impl SseDecoder for AnthropicDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), DecodeFailure> {
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
            } => self.block_start(index, content_block, out),
            Wire::ContentBlockDelta { index, delta } => match delta {
                WireDelta::TextDelta { text } => {
                    if !text.is_empty() {
                        out.push(StreamEvent::TextDelta(text));
                    }
                }
                WireDelta::InputJsonDelta { partial_json } => {
                    if let Some(call) = self.tools.get_mut(&index) {
                        call.arguments.push_str(&partial_json);
                    } else {
                        self.searches.input(index, &partial_json);
                    }
                }
                WireDelta::ThinkingDelta { thinking } => {
                    if let Some(ReasoningBlock::Thinking { text, .. }) =
                        self.thinking.get_mut(&index)
                    {
                        text.push_str(&thinking);
                    }
                    if !thinking.is_empty() {
                        out.push(StreamEvent::ReasoningDelta(thinking));
                    }
                }
                WireDelta::SignatureDelta { signature } => {
                    if let Some(ReasoningBlock::Thinking { signature: s, .. }) =
                        self.thinking.get_mut(&index)
                    {
                        s.push_str(&signature);
                    }
                }
                WireDelta::Other => {}
            },
            Wire::ContentBlockStop { index } => {
                self.searches.stop(index);
                if let Some(call) = self.tools.remove(&index) {
                    out.push(StreamEvent::ToolCall(call));
                }
                if let Some(block) = self.thinking.remove(&index) {
                    out.push(StreamEvent::Reasoning(block));
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
                let mut thoughts: Vec<_> = self.thinking.drain().collect();
                thoughts.sort_by_key(|(i, _)| *i);
                out.extend(thoughts.into_iter().map(|(_, b)| StreamEvent::Reasoning(b)));
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
                let message = if error.message.is_empty() {
                    error.kind.clone()
                } else {
                    format!("{}: {}", error.kind, error.message)
                };
                if super::http::is_context_overflow(&message) {
                    return Err(DecodeFailure::Fatal(ModelError::ContextTooLong {
                        provider: "anthropic".into(),
                        message,
                    }));
                }
                let e = ModelError::Provider {
                    provider: "anthropic".into(),
                    message,
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
    use pablo_core::ToolSpec;

    fn feed(d: &mut AnthropicDecoder, name: &str, data: Value) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        let ev = SseEvent {
            event: name.to_string(),
            data: data.to_string(),
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
        assert!(feed(&mut d, "content_block_start", json!({"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"s"}})).is_empty());
        assert!(feed(&mut d, "content_block_delta", json!({"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}})).is_empty());
        assert!(
            feed(
                &mut d,
                "content_block_stop",
                json!({"type":"content_block_stop","index":0})
            )
            .is_empty()
        );
        assert!(!d.finished());
    }

    #[test]
    fn a_search_comes_whole_with_its_streamed_query_and_usage_counts_it() {
        let mut d = AnthropicDecoder::new();
        feed(
            &mut d,
            "content_block_start",
            json!({"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srv_1","name":"web_search","input":{}}}),
        );
        for part in [r#"{"query": "ru"#, r#"st"}"#] {
            let out = feed(
                &mut d,
                "content_block_delta",
                json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":part}}),
            );
            assert!(out.is_empty(), "a search's input is no tool call");
        }
        assert!(
            feed(
                &mut d,
                "content_block_stop",
                json!({"type":"content_block_stop","index":1})
            )
            .is_empty()
        );
        let out = feed(
            &mut d,
            "content_block_start",
            json!({"type":"content_block_start","index":2,"content_block":{"type":"web_search_tool_result","tool_use_id":"srv_1","content":[{"type":"web_search_result","url":"https://rust-lang.org/","title":"Rust","encrypted_content":"e1","page_age":null}]}}),
        );
        let [StreamEvent::WebSearch(s)] = out.as_slice() else {
            panic!("{out:?}")
        };
        assert_eq!((s.id.as_str(), s.query.as_str()), ("srv_1", "rust"));
        assert_eq!(s.results[0].url, "https://rust-lang.org/");
        assert_eq!(s.results[0].encrypted_content, "e1");
        feed(
            &mut d,
            "message_delta",
            json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3,"server_tool_use":{"web_search_requests":1}}}),
        );
        let out = feed(&mut d, "message_stop", json!({"type":"message_stop"}));
        assert!(
            matches!(
                out[0],
                StreamEvent::Usage(Usage {
                    web_searches: 1,
                    ..
                })
            ),
            "{out:?}"
        );
    }

    #[test]
    fn thinking_streams_as_reasoning_and_the_block_keeps_its_signature() {
        let mut d = AnthropicDecoder::new();
        let start = feed(
            &mut d,
            "content_block_start",
            json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}),
        );
        assert!(start.is_empty());
        let delta = feed(
            &mut d,
            "content_block_delta",
            json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"let me see"}}),
        );
        assert_eq!(
            delta,
            vec![StreamEvent::ReasoningDelta("let me see".into())]
        );
        feed(
            &mut d,
            "content_block_delta",
            json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig=="}}),
        );
        let stop = feed(
            &mut d,
            "content_block_stop",
            json!({"type":"content_block_stop","index":0}),
        );
        assert_eq!(
            stop,
            vec![StreamEvent::Reasoning(ReasoningBlock::Thinking {
                text: "let me see".into(),
                signature: "sig==".into()
            })]
        );
        feed(
            &mut d,
            "content_block_start",
            json!({"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"opaque"}}),
        );
        let stop = feed(
            &mut d,
            "content_block_stop",
            json!({"type":"content_block_stop","index":1}),
        );
        assert_eq!(
            stop,
            vec![StreamEvent::Reasoning(ReasoningBlock::Redacted {
                data: "opaque".into()
            })]
        );
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
                    web_searches: 0,
                    input_tokens: 105,
                    output_tokens: 42,
                    cached_input_tokens: 100,
                    cache_write_input_tokens: 0,
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
                Message::user("go"),
                Message::Assistant {
                    searches: Vec::new(),
                    reasoning: Vec::new(),
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
                Message::user("and then?"),
            ],
            tools: vec![ToolSpec {
                name: "fs_read".into(),
                description: "read".into(),
                parameters: json!({"type":"object"}),
            }],
            max_output_tokens: 1000,
            ..ModelRequest::default()
        };
        let b = request_body("claude-x", &req);
        assert_eq!(b["max_tokens"], 1000);
        assert_eq!(b["system"], json!([{"type": "text", "text": "sys"}]));
        assert!(
            !b.to_string().contains("cache_control"),
            "no breakpoints unless caching"
        );
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

    fn tool_loop(results: usize) -> ModelRequest {
        let mut messages = vec![Message::user("go")];
        for step in 0..2 {
            let calls: Vec<ToolCall> = (0..results)
                .map(|i| ToolCall {
                    id: format!("t{step}_{i}"),
                    name: "fs_read".into(),
                    arguments: "{}".into(),
                })
                .collect();
            messages.push(Message::Assistant {
                searches: Vec::new(),
                text: String::new(),
                tool_calls: calls.clone(),
                reasoning: vec![ReasoningBlock::Thinking {
                    text: format!("thought {step}"),
                    signature: format!("sig{step}"),
                }],
            });
            for c in calls {
                messages.push(Message::Tool {
                    call_id: c.id,
                    content: r#"{"ok":true,"data":1}"#.into(),
                });
            }
        }
        ModelRequest {
            system: "sys".into(),
            messages,
            tools: vec![ToolSpec {
                name: "fs_read".into(),
                description: "read".into(),
                parameters: json!({"type":"object"}),
            }],
            max_output_tokens: 20_000,
            cache: true,
            ..ModelRequest::default()
        }
    }

    /// `(message index, block index)` of every block carrying a breakpoint.
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

    #[test]
    fn breakpoints_sit_on_the_system_the_previous_end_and_the_end_even_after_25_results() {
        let b = request_body("claude-x", &tool_loop(25));
        assert_eq!(
            b["system"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert!(b["tools"][0].get("cache_control").is_none());
        // user, assistant, user(25 results), assistant, user(25 results)
        assert_eq!(breakpoints(&b), vec![(2, 24), (4, 24)]);
        let total = b.to_string().matches("cache_control").count();
        assert!(total <= 4, "{total} breakpoints");
    }

    #[test]
    fn without_a_system_prompt_the_last_tool_carries_the_prefix_breakpoint() {
        let mut req = tool_loop(1);
        req.system = String::new();
        let b = request_body("claude-x", &req);
        assert_eq!(b["tools"][0]["cache_control"], json!({"type": "ephemeral"}));
    }

    #[test]
    fn thinking_is_enabled_with_a_budget_and_blocks_go_back_first_with_signatures() {
        let mut req = tool_loop(1);
        req.reasoning = Some(pablo_config::ReasoningLevel::Medium);
        let b = request_body("claude-x", &req);
        assert_eq!(
            b["thinking"],
            json!({"type": "enabled", "budget_tokens": 12_288})
        );
        let first = &b["messages"][1]["content"][0];
        assert_eq!(
            first,
            &json!({"type": "thinking", "thinking": "thought 0", "signature": "sig0"})
        );
        assert_eq!(b["messages"][1]["content"][1]["type"], "tool_use");
        // Without reasoning asked for, neither the setting nor the blocks are sent.
        let b = request_body("claude-x", &tool_loop(1));
        assert!(b.get("thinking").is_none());
        assert!(!b.to_string().contains("\"thinking\""));
    }

    #[test]
    fn a_budget_that_does_not_fit_max_tokens_is_cut_and_a_tiny_one_turns_thinking_off() {
        let mut req = tool_loop(1);
        req.reasoning = Some(pablo_config::ReasoningLevel::High);
        req.max_output_tokens = 10_000;
        assert_eq!(request_body("m", &req)["thinking"]["budget_tokens"], 8_976);
        req.max_output_tokens = 1_500;
        assert!(request_body("m", &req).get("thinking").is_none());
    }
}
