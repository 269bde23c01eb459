//! OpenAI's Responses API (`POST /responses`), streaming.
//!
//! Reasoning models keep their reasoning across the calls of a tool loop only through this API:
//! each response's `reasoning` items come back encrypted (`include:
//! ["reasoning.encrypted_content"]`, with `store: false` so OpenAI keeps nothing) and go back in
//! the next request's `input`, just before the function calls they led to. Chat Completions
//! cannot carry them, so `provider = "openai"` speaks Responses to `api.openai.com` and Chat
//! Completions to every compatible server (`wire_api` overrides either way).
//!
//! The conversation maps item by item: a user message is a `message` with `input_text`, an
//! assistant message is its reasoning items, a `message` with `output_text` and one
//! `function_call` per tool call, and a tool result is a `function_call_output`. Item ids are not
//! sent: with `store: false` the API cannot look them up.
//!
//! The stream is a sequence of typed events; the ones used here are `response.output_text.delta`,
//! `response.reasoning_summary_text.delta` / `response.reasoning_text.delta` (shown as
//! reasoning), `response.output_item.added` / `response.function_call_arguments.delta` /
//! `response.output_item.done` (tool calls and reasoning items), and the terminal
//! `response.completed`, `response.incomplete` or `response.failed`. Others are ignored.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::http::{HttpModel, WireFormat};
use super::openai::OpenAiConfig;
use super::profile::ReasoningLevel;
use super::search::{self, WebSearchTool};
use super::sse::{DecodeFailure, SseDecoder, SseEvent};
use super::{
    Message, ModelError, ModelRequest, ModelStopReason, ReasoningBlock, StreamEvent, ToolCall,
};
use pablo_protocol::Usage;

/// A Responses client.
pub type ResponsesClient = HttpModel<Responses>;

/// The Responses wire.
#[derive(Debug, Clone)]
pub struct Responses {
    options: BodyOptions,
    web_search: Option<WebSearchTool>,
}

impl WireFormat for Responses {
    type Decoder = ResponsesDecoder;

    fn body(&self, model: &str, request: &ModelRequest) -> Value {
        let mut body = request_body(model, request, self.options);
        if let (Some(tool), Some(tools)) = (&self.web_search, body["tools"].as_array_mut()) {
            tools.push(search::responses_tool(tool));
            // The pages a search found are reported only when asked for.
            match body["include"].as_array_mut() {
                Some(include) => include.push(json!(search::RESPONSES_SOURCES)),
                None => body["include"] = json!([search::RESPONSES_SOURCES]),
            }
        }
        body
    }

    fn decoder(provider: &str) -> ResponsesDecoder {
        ResponsesDecoder::new(provider)
    }
}

/// What shapes a request body besides the request itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BodyOptions {
    /// OpenAI's own API: send `prompt_cache_key`.
    pub official: bool,
    /// A reasoning model: ask for encrypted reasoning and summaries even with no level set.
    pub reasoning_model: bool,
}

impl ResponsesClient {
    pub fn new(config: OpenAiConfig) -> Result<Self, ModelError> {
        let options = BodyOptions {
            official: config.official,
            reasoning_model: config.profile.reasoning_model,
        };
        let web_search = config.options.web_search.clone();
        config.into_client(
            "responses",
            Responses {
                options,
                web_search,
            },
        )
    }
}

/// Arguments as sent back: malformed JSON (already answered with `invalid_arguments`) becomes
/// `{}`, as in Chat Completions.
fn replayable_arguments(arguments: &str) -> String {
    if arguments.trim().is_empty()
        || serde_json::from_str::<serde::de::IgnoredAny>(arguments).is_err()
    {
        "{}".to_string()
    } else {
        arguments.to_string()
    }
}

/// The JSON body of a streaming Responses request.
pub fn request_body(model: &str, request: &ModelRequest, options: BodyOptions) -> Value {
    let mut input: Vec<Value> = Vec::with_capacity(request.messages.len() + 4);
    for m in &request.messages {
        match m {
            Message::User { text, images } => {
                // Images first (`input_image` with a `data:` URL), then the text.
                let mut content: Vec<Value> = images
                    .iter()
                    .filter(|i| i.is_loaded())
                    .map(|i| json!({"type": "input_image", "image_url": i.data_url(), "detail": "auto"}))
                    .collect();
                if !text.is_empty() {
                    content.push(json!({"type": "input_text", "text": text}));
                }
                if !content.is_empty() {
                    input.push(json!({"type": "message", "role": "user", "content": content}));
                }
            }
            Message::Assistant {
                text,
                tool_calls,
                reasoning,
                searches,
            } => {
                // A reasoning item must be followed by the output it led to.
                if !text.is_empty() || !tool_calls.is_empty() {
                    for r in reasoning {
                        if let ReasoningBlock::Encrypted {
                            summary,
                            encrypted_content: Some(encrypted),
                            ..
                        } = r
                        {
                            let summary: Vec<Value> = summary
                                .iter()
                                .map(|s| json!({"type": "summary_text", "text": s}))
                                .collect();
                            input.push(json!({"type": "reasoning", "summary": summary,
                                "encrypted_content": encrypted}));
                        }
                    }
                }
                input.extend(search::responses_items(searches));
                if !text.is_empty() {
                    input.push(json!({"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": text}]}));
                }
                for c in tool_calls {
                    input.push(
                        json!({"type": "function_call", "call_id": c.id, "name": c.name,
                        "arguments": replayable_arguments(&c.arguments)}),
                    );
                }
            }
            Message::Tool { call_id, content } => {
                input.push(
                    json!({"type": "function_call_output", "call_id": call_id, "output": content}),
                );
            }
        }
    }
    let mut body = json!({
        "model": model,
        "input": input,
        "stream": true,
        "store": false,
    });
    if !request.system.is_empty() {
        body["instructions"] = Value::String(request.system.clone());
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "name": t.name, "description": t.description,
                       "parameters": t.parameters, "strict": false})
            })
            .collect();
        body["tool_choice"] = Value::String("auto".into());
        body["parallel_tool_calls"] = Value::Bool(true);
    }
    let asked = request.reasoning.filter(|l| *l != ReasoningLevel::Off);
    if options.reasoning_model || asked.is_some() {
        let mut reasoning = json!({"summary": "auto"});
        if let Some(level) = asked {
            reasoning["effort"] = Value::String(level.name().to_string());
        }
        body["reasoning"] = reasoning;
        body["include"] = json!(["reasoning.encrypted_content"]);
    }
    if options.official
        && let Some(key) = &request.cache_key
    {
        body["prompt_cache_key"] = Value::String(key.clone());
    }
    body
}

/// A function call being streamed.
#[derive(Debug, Default)]
struct PendingCall {
    call_id: String,
    name: String,
    arguments: String,
}

/// The Responses stream decoder. Text and reasoning deltas go out as they come; a function call
/// and a reasoning item go out whole at their `response.output_item.done`; usage and `Completed`
/// at the terminal event.
#[derive(Debug)]
pub struct ResponsesDecoder {
    provider: String,
    calls: BTreeMap<u64, PendingCall>,
    emitted_calls: usize,
    /// The summary part last streamed, per reasoning item, to separate parts.
    summary_part: BTreeMap<String, u64>,
    /// Searches reported so far.
    searches: u64,
    done: bool,
}

impl ResponsesDecoder {
    pub fn new(provider: &str) -> Self {
        Self {
            provider: provider.to_string(),
            calls: BTreeMap::new(),
            emitted_calls: 0,
            summary_part: BTreeMap::new(),
            searches: 0,
            done: false,
        }
    }

    fn failure(&self, error: &Value) -> DecodeFailure {
        let code = error["code"].as_str().unwrap_or("");
        let message = error["message"].as_str().unwrap_or("the response failed");
        let message = if code.is_empty() || message.contains(code) {
            message.to_string()
        } else {
            format!("{code}: {message}")
        };
        if code == "context_length_exceeded" || super::http::is_context_overflow(&message) {
            return DecodeFailure::Fatal(ModelError::ContextTooLong {
                provider: self.provider.clone(),
                message,
            });
        }
        let e = ModelError::Provider {
            provider: self.provider.clone(),
            message,
        };
        if matches!(code, "server_error" | "rate_limit_exceeded") {
            DecodeFailure::Retryable(e)
        } else {
            DecodeFailure::Fatal(e)
        }
    }

    fn item_done(&mut self, index: u64, item: &Value, out: &mut Vec<StreamEvent>) {
        match item["type"].as_str() {
            Some("function_call") => {
                let pending = self.calls.remove(&index).unwrap_or_default();
                let arguments = match item["arguments"].as_str() {
                    Some(a) if !a.is_empty() => a.to_string(),
                    _ => pending.arguments,
                };
                let id = item["call_id"]
                    .as_str()
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .unwrap_or(if pending.call_id.is_empty() {
                        format!("call_{}", self.emitted_calls)
                    } else {
                        pending.call_id
                    });
                let name = item["name"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or(pending.name);
                self.emitted_calls += 1;
                out.push(StreamEvent::ToolCall(ToolCall {
                    id,
                    name,
                    arguments,
                }));
            }
            Some("reasoning") => {
                let texts = |key: &str| -> Vec<String> {
                    item[key]
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(|p| p["text"].as_str().map(str::to_string))
                                .collect()
                        })
                        .unwrap_or_default()
                };
                let summary = texts("summary");
                let encrypted = item["encrypted_content"].as_str().map(str::to_string);
                let block = match encrypted {
                    Some(e) => ReasoningBlock::Encrypted {
                        id: item["id"].as_str().unwrap_or_default().to_string(),
                        summary,
                        encrypted_content: Some(e),
                    },
                    // Open models served through Responses return their reasoning as text.
                    None => {
                        let mut all = summary;
                        all.extend(texts("content"));
                        if all.is_empty() {
                            return;
                        }
                        ReasoningBlock::Text {
                            text: all.join("\n\n"),
                        }
                    }
                };
                out.push(StreamEvent::Reasoning(block));
            }
            Some("web_search_call") => {
                if let Some((s, billed)) = search::responses_search(item) {
                    self.searches += u64::from(billed);
                    out.push(StreamEvent::WebSearch(s));
                }
            }
            _ => {}
        }
    }

    fn finish(
        &mut self,
        response: &Value,
        stop: Option<ModelStopReason>,
        out: &mut Vec<StreamEvent>,
    ) {
        // Calls whose `output_item.done` never came still count, as streamed.
        let rest = std::mem::take(&mut self.calls);
        for (_, c) in rest {
            self.emitted_calls += 1;
            out.push(StreamEvent::ToolCall(ToolCall {
                id: c.call_id,
                name: c.name,
                arguments: c.arguments,
            }));
        }
        let usage = &response["usage"];
        if usage.is_object() {
            out.push(StreamEvent::Usage(Usage {
                input_tokens: usage["input_tokens"].as_u64().unwrap_or(0),
                output_tokens: usage["output_tokens"].as_u64().unwrap_or(0),
                cached_input_tokens: usage["input_tokens_details"]["cached_tokens"]
                    .as_u64()
                    .unwrap_or(0),
                cache_write_input_tokens: 0,
                // OpenAI bills each search call; its usage does not count them.
                web_searches: self.searches,
            }));
        }
        let stop_reason = match stop {
            Some(s) => s,
            None if self.emitted_calls > 0 => ModelStopReason::ToolUse,
            None => ModelStopReason::EndTurn,
        };
        out.push(StreamEvent::Completed { stop_reason });
        self.done = true;
    }
}

impl SseDecoder for ResponsesDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), DecodeFailure> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            DecodeFailure::Fatal(ModelError::Malformed {
                provider: self.provider.clone(),
                message: format!("a Responses event is not JSON: {e}"),
            })
        })?;
        let kind = v["type"].as_str().unwrap_or(event.event.as_str());
        let index = v["output_index"].as_u64().unwrap_or(0);
        match kind {
            "response.output_text.delta" => {
                if let Some(d) = v["delta"].as_str().filter(|d| !d.is_empty()) {
                    out.push(StreamEvent::TextDelta(d.to_string()));
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let item = v["item_id"].as_str().unwrap_or_default().to_string();
                let part = v["summary_index"].as_u64().unwrap_or(0);
                let previous = self.summary_part.insert(item, part);
                if previous.is_some_and(|p| p != part) {
                    out.push(StreamEvent::ReasoningDelta("\n\n".into()));
                }
                if let Some(d) = v["delta"].as_str().filter(|d| !d.is_empty()) {
                    out.push(StreamEvent::ReasoningDelta(d.to_string()));
                }
            }
            "response.output_item.added" => {
                let item = &v["item"];
                if item["type"] == "function_call" {
                    self.calls.insert(
                        index,
                        PendingCall {
                            call_id: item["call_id"].as_str().unwrap_or_default().to_string(),
                            name: item["name"].as_str().unwrap_or_default().to_string(),
                            arguments: item["arguments"].as_str().unwrap_or_default().to_string(),
                        },
                    );
                }
            }
            "response.function_call_arguments.delta" => {
                if let (Some(call), Some(d)) = (self.calls.get_mut(&index), v["delta"].as_str()) {
                    call.arguments.push_str(d);
                }
            }
            "response.output_item.done" => self.item_done(index, &v["item"], out),
            "response.completed" => self.finish(&v["response"], None, out),
            "response.incomplete" => {
                let reason = v["response"]["incomplete_details"]["reason"].as_str();
                let stop = match reason {
                    Some("max_output_tokens") => ModelStopReason::MaxTokens,
                    _ => ModelStopReason::Other,
                };
                self.finish(&v["response"], Some(stop), out);
            }
            "response.failed" => return Err(self.failure(&v["response"]["error"])),
            "error" => {
                let err = if v["error"].is_object() {
                    v["error"].clone()
                } else {
                    v.clone()
                };
                return Err(self.failure(&err));
            }
            _ => {}
        }
        Ok(())
    }

    fn finished(&self) -> bool {
        self.done
    }

    fn provider(&self) -> &str {
        &self.provider
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pablo_core::ToolSpec;

    fn feed(d: &mut ResponsesDecoder, data: Value) -> Vec<StreamEvent> {
        let ev = SseEvent {
            event: data["type"].as_str().unwrap_or_default().to_string(),
            data: data.to_string(),
        };
        let mut out = Vec::new();
        d.event(&ev, &mut out)
            .map_err(|e| format!("{e:?}"))
            .unwrap();
        out
    }

    #[test]
    fn the_history_maps_to_items_with_encrypted_reasoning_before_its_calls() {
        let req = ModelRequest {
            system: "be brief".into(),
            messages: vec![
                Message::user("go"),
                Message::Assistant {
                    searches: Vec::new(),
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "fs_read".into(),
                        arguments: "{\"path\":".into(),
                    }],
                    reasoning: vec![ReasoningBlock::Encrypted {
                        id: "rs_1".into(),
                        summary: vec!["look first".into()],
                        encrypted_content: Some("gAAA".into()),
                    }],
                },
                Message::Tool {
                    call_id: "call_1".into(),
                    content: "{\"ok\":true}".into(),
                },
            ],
            tools: vec![ToolSpec {
                name: "fs_read".into(),
                description: "read".into(),
                parameters: json!({"type": "object"}),
            }],
            cache_key: Some("sess".into()),
            ..ModelRequest::default()
        };
        let b = request_body(
            "gpt-5",
            &req,
            BodyOptions {
                official: true,
                reasoning_model: true,
            },
        );
        assert_eq!(b["store"], false);
        assert_eq!(b["instructions"], "be brief");
        assert_eq!(b["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(b["prompt_cache_key"], "sess");
        let input = b["input"].as_array().unwrap();
        assert_eq!(input[1]["type"], "reasoning");
        assert_eq!(input[1]["encrypted_content"], "gAAA");
        assert!(
            input[1].get("id").is_none(),
            "ids are not sent with store: false"
        );
        assert_eq!(input[2]["type"], "function_call");
        assert_eq!(input[2]["arguments"], "{}");
        assert_eq!(
            input[3],
            json!({"type": "function_call_output", "call_id": "call_1", "output": "{\"ok\":true}"})
        );
        assert_eq!(b["tools"][0]["name"], "fs_read");
        // A plain model with no reasoning asked for gets neither reasoning nor include.
        let b = request_body("gpt-4.1", &req, BodyOptions::default());
        assert!(b.get("reasoning").is_none() && b.get("include").is_none());
        assert!(b.get("prompt_cache_key").is_none());
    }

    #[test]
    fn a_streamed_response_yields_reasoning_text_calls_and_usage() {
        let mut d = ResponsesDecoder::new("openai");
        let mut out = Vec::new();
        out.extend(feed(&mut d, json!({"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_1"}})));
        out.extend(feed(&mut d, json!({"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"Plan"})));
        out.extend(feed(&mut d, json!({"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":1,"delta":"Then"})));
        out.extend(feed(&mut d, json!({"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Plan"},{"type":"summary_text","text":"Then"}],"encrypted_content":"gAAA"}})));
        out.extend(feed(&mut d, json!({"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"fs_read","arguments":""}})));
        out.extend(feed(&mut d, json!({"type":"response.function_call_arguments.delta","output_index":1,"delta":"{\"path\":"})));
        out.extend(feed(&mut d, json!({"type":"response.function_call_arguments.delta","output_index":1,"delta":"\"a\"}"})));
        out.extend(feed(&mut d, json!({"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"fs_read","arguments":"{\"path\":\"a\"}"}})));
        out.extend(feed(&mut d, json!({"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":120,"input_tokens_details":{"cached_tokens":100},"output_tokens":30}}})));
        assert_eq!(
            out,
            vec![
                StreamEvent::ReasoningDelta("Plan".into()),
                StreamEvent::ReasoningDelta("\n\n".into()),
                StreamEvent::ReasoningDelta("Then".into()),
                StreamEvent::Reasoning(ReasoningBlock::Encrypted {
                    id: "rs_1".into(),
                    summary: vec!["Plan".into(), "Then".into()],
                    encrypted_content: Some("gAAA".into()),
                }),
                StreamEvent::ToolCall(ToolCall {
                    id: "call_1".into(),
                    name: "fs_read".into(),
                    arguments: "{\"path\":\"a\"}".into(),
                }),
                StreamEvent::Usage(Usage {
                    web_searches: 0,
                    input_tokens: 120,
                    output_tokens: 30,
                    cached_input_tokens: 100,
                    cache_write_input_tokens: 0,
                }),
                StreamEvent::Completed {
                    stop_reason: ModelStopReason::ToolUse
                },
            ]
        );
        assert!(d.finished());
    }

    #[test]
    fn failures_and_incomplete_responses_are_reported() {
        let mut d = ResponsesDecoder::new("openai");
        let ev = SseEvent {
            data: json!({"type":"response.failed","response":{"error":{"code":"context_length_exceeded","message":"Your input exceeds the context window of this model."}}}).to_string(),
            ..Default::default()
        };
        let mut out = Vec::new();
        assert!(matches!(
            d.event(&ev, &mut out),
            Err(DecodeFailure::Fatal(ModelError::ContextTooLong { .. }))
        ));
        let mut d = ResponsesDecoder::new("openai");
        let out = feed(
            &mut d,
            json!({"type":"response.incomplete","response":{"incomplete_details":{"reason":"max_output_tokens"}}}),
        );
        assert_eq!(
            out,
            vec![StreamEvent::Completed {
                stop_reason: ModelStopReason::MaxTokens
            }]
        );
    }
}
