//! OpenAI-compatible Chat Completions, streaming.
//!
//! One client serves OpenAI itself and the servers that copy its wire format: Ollama
//! (`http://localhost:11434/v1`), llama.cpp's server, vLLM, LM Studio, OpenRouter. They differ in
//! small ways this module absorbs: some repeat the tool-call `id` in every fragment, some reuse
//! `index` 0 for every call (a new `id` at a seen index is then a new call), some send usage
//! inside the finishing chunk, some put an `error` object in the stream.
//!
//! Reasoning arrives three ways and leaves as reasoning, never as answer text: a
//! `reasoning_content` delta (DeepSeek, vLLM, llama.cpp), a `reasoning` delta (OpenRouter,
//! Ollama), or `<think>…</think>` inline in the content ([`super::think`]). It is kept as text
//! for the journal and not sent back: these servers do not expect it in the history.
//! OpenAI's own API gets `prompt_cache_key` (the session id), so the calls of one session land
//! on the same prompt cache.

use reqwest::header::HeaderMap;
use serde::Deserialize;
use serde_json::{Value, json};

use super::http::{ApiKey, Endpoint, HttpModel, HttpOptions, WireFormat};
use super::profile::{ModelProfile, ReasoningLevel};
use super::sse::{DecodeFailure, SseDecoder, SseEvent};
use super::think::{Piece, ThinkSplitter};
use super::{
    Message, ModelError, ModelRequest, ModelStopReason, ReasoningBlock, StreamEvent, ToolCall,
};
use pablo_protocol::Usage;

/// The settings of one OpenAI-compatible endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// The name reported to the agent and in messages (`openai`, `ollama`).
    pub provider: String,
    /// Up to and including the version segment: `https://api.openai.com/v1`.
    pub base_url: String,
    pub model: String,
    /// Sent as `Authorization: Bearer …` when present (local servers need none).
    pub api_key: Option<ApiKey>,
    pub options: HttpOptions,
    /// The endpoint is OpenAI's own API (`api.openai.com`): it takes `prompt_cache_key`.
    pub official: bool,
    pub profile: ModelProfile,
}

/// Which server speaks: it decides the reasoning and caching parameters a request may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// OpenAI's own API.
    OpenAi,
    /// Ollama's OpenAI-compatible endpoint (reasoning through `reasoning_effort` → `think`).
    Ollama,
    /// Any other compatible server.
    Compatible,
}

impl Dialect {
    fn of(config: &OpenAiConfig) -> Self {
        if config.provider == "ollama" {
            Dialect::Ollama
        } else if config.official {
            Dialect::OpenAi
        } else {
            Dialect::Compatible
        }
    }
}

/// A Chat Completions client.
pub type OpenAiClient = HttpModel<ChatCompletions>;

/// The Chat Completions wire, in the dialect of the server at the other end.
#[derive(Debug, Clone, Copy)]
pub struct ChatCompletions {
    dialect: Dialect,
}

impl WireFormat for ChatCompletions {
    type Decoder = OpenAiDecoder;

    fn body(&self, model: &str, request: &ModelRequest) -> Value {
        request_body(model, request, self.dialect)
    }

    fn decoder(provider: &str) -> OpenAiDecoder {
        OpenAiDecoder::new(provider)
    }
}

impl OpenAiClient {
    pub fn new(config: OpenAiConfig) -> Result<Self, ModelError> {
        let dialect = Dialect::of(&config);
        config.into_client("chat/completions", ChatCompletions { dialect })
    }
}

impl OpenAiConfig {
    /// A client of the endpoint `path` under the base URL (OpenAI's two APIs share the key,
    /// the base URL and the options), speaking `wire`.
    pub fn into_client<W>(self, path: &str, wire: W) -> Result<HttpModel<W>, ModelError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.api_key {
            headers.insert(reqwest::header::AUTHORIZATION, key.header("Bearer ")?);
        }
        let url = format!("{}/{path}", self.base_url.trim_end_matches('/'));
        Ok(HttpModel::from_parts(
            Endpoint {
                provider: self.provider,
                url,
                headers,
                key: self.api_key,
                options: self.options,
            },
            self.model,
            self.profile,
            wire,
        ))
    }
}

/// The JSON body of a streaming Chat Completions request.
///
/// No output-token cap is sent: OpenAI's reasoning models refuse `max_tokens` and older local
/// servers ignore `max_completion_tokens`; the agent bounds output bytes itself.
///
/// Reasoning: OpenAI and other servers get `reasoning_effort` when a level is asked for. Ollama
/// turns `reasoning_effort` into its `think` option: `none` switches thinking off; a level string
/// is accepted only by its gpt-oss models, so other models get nothing and think as they do by
/// default.
pub fn request_body(model: &str, request: &ModelRequest, dialect: Dialect) -> Value {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    for m in &request.messages {
        messages.push(match m {
            Message::User { text, images } if images.is_empty() => {
                json!({"role": "user", "content": text})
            }
            Message::User { text, images } => {
                json!({"role": "user", "content": user_parts(text, images)})
            }
            Message::Assistant {
                text, tool_calls, ..
            } => {
                let mut msg = json!({"role": "assistant"});
                msg["content"] = if text.is_empty() && !tool_calls.is_empty() {
                    Value::Null
                } else {
                    Value::String(text.clone())
                };
                if !tool_calls.is_empty() {
                    msg["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| {
                            json!({"id": c.id, "type": "function",
                                   "function": {"name": c.name,
                                                "arguments": replayable_arguments(&c.arguments)}})
                        })
                        .collect();
                }
                msg
            }
            Message::Tool { call_id, content } => {
                json!({"role": "tool", "tool_call_id": call_id, "content": content})
            }
        });
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    let effort = match (dialect, request.reasoning) {
        (_, None) => None,
        (Dialect::Ollama, Some(ReasoningLevel::Off)) => Some("none"),
        (Dialect::Ollama, Some(level)) => super::profile::normalize(model)
            .starts_with("gpt-oss")
            .then_some(level.name()),
        (_, Some(ReasoningLevel::Off)) => None,
        (_, Some(level)) => Some(level.name()),
    };
    if let Some(effort) = effort {
        body["reasoning_effort"] = Value::String(effort.to_string());
    }
    if dialect == Dialect::OpenAi
        && let Some(key) = &request.cache_key
    {
        body["prompt_cache_key"] = Value::String(key.clone());
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters}})
            })
            .collect();
    }
    body
}

/// Arguments as sent back in the history. Malformed JSON (which the model already got an
/// `invalid_arguments` result for) is replaced by `{}`, because Ollama and vLLM parse the
/// arguments of past calls and reject the whole request otherwise.
fn replayable_arguments(arguments: &str) -> String {
    if arguments.trim().is_empty()
        || serde_json::from_str::<serde::de::IgnoredAny>(arguments).is_err()
    {
        "{}".to_string()
    } else {
        arguments.to_string()
    }
}

/// `null` where a list is expected (some servers send `"tool_calls": null`) reads as empty.
fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default, deserialize_with = "null_as_empty")]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    /// DeepSeek, vLLM, llama.cpp.
    #[serde(default)]
    reasoning_content: Option<String>,
    /// OpenRouter, Ollama.
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    tool_calls: Vec<ToolCallDelta>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// A tool call being assembled from fragments.
#[derive(Debug)]
struct Partial {
    index: u32,
    id: String,
    name: String,
    arguments: String,
}

/// The Chat Completions stream decoder. Tool calls are emitted whole when the choice finishes
/// (or at `[DONE]` for servers that never say why they stopped), usage and `Completed` at
/// `[DONE]`.
#[derive(Debug)]
pub struct OpenAiDecoder {
    provider: String,
    splitter: ThinkSplitter,
    reasoning: String,
    calls: Vec<Partial>,
    finish: Option<String>,
    flushed: bool,
    emitted_calls: usize,
    usage: Option<Usage>,
    done: bool,
}

impl OpenAiDecoder {
    pub fn new(provider: &str) -> Self {
        Self {
            provider: provider.to_string(),
            splitter: ThinkSplitter::new(),
            reasoning: String::new(),
            calls: Vec::new(),
            finish: None,
            flushed: false,
            emitted_calls: 0,
            usage: None,
            done: false,
        }
    }

    fn malformed(&self, message: String) -> DecodeFailure {
        DecodeFailure::Fatal(ModelError::Malformed {
            provider: self.provider.clone(),
            message,
        })
    }

    fn tool_delta(&mut self, d: ToolCallDelta) {
        let index = d.index.unwrap_or(0);
        let id = d.id.filter(|s| !s.is_empty());
        let (name, args) = match d.function {
            Some(f) => (f.name.filter(|s| !s.is_empty()), f.arguments),
            None => (None, None),
        };
        // The newest call at this index, unless this delta names a different id.
        let current = self.calls.iter().rposition(|c| c.index == index);
        let pos = match (current, &id) {
            (Some(p), Some(id)) if !self.calls[p].id.is_empty() && self.calls[p].id != *id => None,
            (Some(p), _) => Some(p),
            (None, _) => None,
        };
        let pos = match pos {
            Some(p) => p,
            None => {
                self.calls.push(Partial {
                    index,
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[pos];
        if let Some(id) = id
            && call.id.is_empty()
        {
            call.id = id;
        }
        if let Some(n) = name
            && call.name.is_empty()
        {
            call.name = n;
        }
        if let Some(a) = args {
            call.arguments.push_str(&a);
        }
    }

    fn route(&mut self, pieces: Vec<Piece>, out: &mut Vec<StreamEvent>) {
        for p in pieces {
            match p {
                Piece::Text(t) => out.push(StreamEvent::TextDelta(t)),
                Piece::Reasoning(r) => self.reasoning_delta(r, out),
            }
        }
    }

    fn reasoning_delta(&mut self, text: String, out: &mut Vec<StreamEvent>) {
        if text.is_empty() {
            return;
        }
        self.reasoning.push_str(&text);
        out.push(StreamEvent::ReasoningDelta(text));
    }

    fn flush_calls(&mut self, out: &mut Vec<StreamEvent>) {
        if self.flushed {
            return;
        }
        self.flushed = true;
        let mut pieces = Vec::new();
        self.splitter.finish(&mut pieces);
        self.route(pieces, out);
        if !self.reasoning.is_empty() {
            out.push(StreamEvent::Reasoning(ReasoningBlock::Text {
                text: std::mem::take(&mut self.reasoning),
            }));
        }
        self.emitted_calls += self.calls.len();
        for (n, c) in self.calls.drain(..).enumerate() {
            let id = if c.id.is_empty() {
                format!("call_{n}")
            } else {
                c.id
            };
            out.push(StreamEvent::ToolCall(ToolCall {
                id,
                name: c.name,
                arguments: c.arguments,
            }));
        }
    }
}

impl SseDecoder for OpenAiDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), DecodeFailure> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.flush_calls(out);
            let had_calls = self.emitted_calls > 0;
            if let Some(u) = self.usage.take() {
                out.push(StreamEvent::Usage(u));
            }
            let stop_reason = match self.finish.as_deref() {
                Some("stop") | None if had_calls => ModelStopReason::ToolUse,
                Some("stop") | None => ModelStopReason::EndTurn,
                Some("tool_calls") | Some("function_call") => ModelStopReason::ToolUse,
                Some("length") => ModelStopReason::MaxTokens,
                Some(_) => ModelStopReason::Other,
            };
            out.push(StreamEvent::Completed { stop_reason });
            self.done = true;
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|e| self.malformed(format!("a stream chunk is not the expected JSON: {e}")))?;
        if let Some(err) = chunk.error {
            let (_, message) = super::http::error_message(err.to_string().as_bytes());
            let message = match err.get("message").and_then(Value::as_str) {
                Some(m) => m.to_string(),
                None => message.unwrap_or_else(|| err.to_string()),
            };
            if super::http::is_context_overflow(&message) {
                return Err(DecodeFailure::Fatal(ModelError::ContextTooLong {
                    provider: self.provider.clone(),
                    message,
                }));
            }
            return Err(DecodeFailure::Fatal(ModelError::Provider {
                provider: self.provider.clone(),
                message,
            }));
        }
        if let Some(u) = chunk.usage {
            self.usage = Some(Usage {
                input_tokens: u.prompt_tokens.unwrap_or(0),
                output_tokens: u.completion_tokens.unwrap_or(0),
                cached_input_tokens: u
                    .prompt_tokens_details
                    .and_then(|d| d.cached_tokens)
                    .unwrap_or(0),
                cache_write_input_tokens: 0,
                web_searches: 0,
            });
        }
        for choice in chunk
            .choices
            .into_iter()
            .filter(|c| c.index.unwrap_or(0) == 0)
        {
            if let Some(delta) = choice.delta {
                for r in [delta.reasoning_content, delta.reasoning]
                    .into_iter()
                    .flatten()
                {
                    self.reasoning_delta(r, out);
                }
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    let mut pieces = Vec::new();
                    self.splitter.push(&text, &mut pieces);
                    self.route(pieces, out);
                }
                for d in delta.tool_calls {
                    self.tool_delta(d);
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(reason);
                self.flush_calls(out);
            }
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

/// A user message with images as Chat Completions content parts: the images first (as `data:`
/// URLs in `image_url` parts), then the text.
fn user_parts(text: &str, images: &[crate::Image]) -> Vec<Value> {
    let mut parts: Vec<Value> = images
        .iter()
        .filter(|i| i.is_loaded())
        .map(|i| json!({"type": "image_url", "image_url": {"url": i.data_url()}}))
        .collect();
    if !text.is_empty() {
        parts.push(json!({"type": "text", "text": text}));
    }
    parts
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pablo_core::ToolSpec;

    fn feed(d: &mut OpenAiDecoder, data: &str) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        let ev = SseEvent {
            data: data.to_string(),
            ..Default::default()
        };
        d.event(&ev, &mut out)
            .map_err(|e| format!("{e:?}"))
            .unwrap();
        out
    }

    fn call(id: &str, name: &str, args: &str) -> StreamEvent {
        StreamEvent::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.into(),
        })
    }

    #[test]
    fn repeated_ids_continue_a_call_and_a_new_id_at_a_seen_index_starts_another() {
        let mut d = OpenAiDecoder::new("openai");
        let tc = |id: &str, name: &str, args: &str| {
            format!(
                r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"id":"{id}","function":{{"name":"{name}","arguments":{args:?}}}}}]}}}}]}}"#
            )
        };
        assert!(feed(&mut d, &tc("a", "fs_read", "{\"pa")).is_empty());
        assert!(feed(&mut d, &tc("a", "", "th\":1}")).is_empty());
        assert!(feed(&mut d, &tc("b", "fs_list", "{}")).is_empty());
        let out = feed(
            &mut d,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        );
        assert_eq!(
            out,
            vec![
                call("a", "fs_read", "{\"path\":1}"),
                call("b", "fs_list", "{}")
            ]
        );
        let out = feed(&mut d, "[DONE]");
        assert_eq!(
            out,
            vec![StreamEvent::Completed {
                stop_reason: ModelStopReason::ToolUse
            }]
        );
    }

    #[test]
    fn nulls_where_servers_put_them_are_read_as_absent() {
        let mut d = OpenAiDecoder::new("vllm");
        let out = feed(
            &mut d,
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":null},"finish_reason":null}],"usage":null}"#,
        );
        assert!(out.is_empty());
        let out = feed(
            &mut d,
            r#"{"choices":null,"usage":{"prompt_tokens":3,"completion_tokens":null,"prompt_tokens_details":null}}"#,
        );
        assert!(out.is_empty());
        let out = feed(&mut d, "[DONE]");
        assert_eq!(
            out,
            vec![
                StreamEvent::Usage(Usage {
                    web_searches: 0,
                    input_tokens: 3,
                    output_tokens: 0,
                    cached_input_tokens: 0,
                    cache_write_input_tokens: 0,
                }),
                StreamEvent::Completed {
                    stop_reason: ModelStopReason::EndTurn
                }
            ]
        );
    }

    #[test]
    fn calls_without_ids_get_positional_ids_and_are_flushed_at_done() {
        let mut d = OpenAiDecoder::new("llama");
        feed(
            &mut d,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"x","arguments":"{}"}}]}}]}"#,
        );
        let out = feed(&mut d, "[DONE]");
        assert_eq!(
            out,
            vec![
                call("call_0", "x", "{}"),
                StreamEvent::Completed {
                    stop_reason: ModelStopReason::ToolUse
                }
            ]
        );
    }

    #[test]
    fn a_mid_stream_error_object_is_a_provider_error_with_its_message() {
        let mut d = OpenAiDecoder::new("openrouter");
        let ev = SseEvent {
            data: r#"{"error":{"message":"upstream timed out","code":502}}"#.into(),
            ..Default::default()
        };
        let mut out = Vec::new();
        match d.event(&ev, &mut out) {
            Err(DecodeFailure::Fatal(ModelError::Provider { message, .. })) => {
                assert_eq!(message, "upstream timed out")
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn request_maps_roles_tool_calls_and_tool_specs() {
        let req = ModelRequest {
            system: "be brief".into(),
            messages: vec![
                Message::user("hi"),
                Message::Assistant {
                    searches: Vec::new(),
                    reasoning: Vec::new(),
                    text: String::new(),
                    tool_calls: vec![
                        ToolCall {
                            id: "c1".into(),
                            name: "fs_read".into(),
                            arguments: r#"{"path":"a"}"#.into(),
                        },
                        ToolCall {
                            id: "c2".into(),
                            name: "fs_read".into(),
                            arguments: r#"{"path":"#.into(),
                        },
                    ],
                },
                Message::Tool {
                    call_id: "c1".into(),
                    content: r#"{"ok":true,"data":1}"#.into(),
                },
            ],
            tools: vec![ToolSpec {
                name: "fs_read".into(),
                description: "read".into(),
                parameters: json!({"type":"object"}),
            }],
            max_output_tokens: 100,
            cache_key: Some("session-1".into()),
            ..ModelRequest::default()
        };
        let b = request_body("gpt-x", &req, Dialect::Compatible);
        assert!(
            b.get("prompt_cache_key").is_none(),
            "only OpenAI's API gets the key"
        );
        assert!(b.get("reasoning_effort").is_none());
        assert_eq!(b["model"], "gpt-x");
        assert_eq!(b["stream"], true);
        assert_eq!(b["stream_options"]["include_usage"], true);
        assert_eq!(
            b["messages"][0],
            json!({"role":"system","content":"be brief"})
        );
        assert_eq!(b["messages"][1], json!({"role":"user","content":"hi"}));
        assert_eq!(b["messages"][2]["content"], Value::Null);
        assert_eq!(
            b["messages"][2]["tool_calls"][0],
            json!({"id":"c1","type":"function","function":{"name":"fs_read","arguments":"{\"path\":\"a\"}"}})
        );
        assert_eq!(
            b["messages"][2]["tool_calls"][1]["function"]["arguments"],
            "{}"
        );
        assert_eq!(
            b["messages"][3],
            json!({"role":"tool","tool_call_id":"c1","content":"{\"ok\":true,\"data\":1}"})
        );
        assert_eq!(
            b["tools"][0],
            json!({"type":"function","function":{"name":"fs_read","description":"read","parameters":{"type":"object"}}})
        );
    }

    #[test]
    fn reasoning_deltas_and_inline_think_become_reasoning_never_text() {
        let mut d = OpenAiDecoder::new("deepseek");
        let out = feed(
            &mut d,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"weigh a"}}]}"#,
        );
        assert_eq!(out, vec![StreamEvent::ReasoningDelta("weigh a".into())]);
        let out = feed(
            &mut d,
            r#"{"choices":[{"index":0,"delta":{"reasoning":" and b"}}]}"#,
        );
        assert_eq!(out, vec![StreamEvent::ReasoningDelta(" and b".into())]);
        feed(
            &mut d,
            r#"{"choices":[{"index":0,"delta":{"content":"The answer."}}]}"#,
        );
        let out = feed(&mut d, "[DONE]");
        assert_eq!(
            out[0],
            StreamEvent::Reasoning(ReasoningBlock::Text {
                text: "weigh a and b".into()
            })
        );

        let mut d = OpenAiDecoder::new("llama.cpp");
        let mut all = Vec::new();
        for part in ["<thi", "nk>plan</th", "ink>\n\nHi"] {
            let chunk = json!({"choices":[{"index":0,"delta":{"content":part}}]}).to_string();
            all.extend(feed(&mut d, &chunk));
        }
        all.extend(feed(&mut d, "[DONE]"));
        let text: String = all
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "Hi");
        assert!(all.contains(&StreamEvent::Reasoning(ReasoningBlock::Text {
            text: "plan".into()
        })));
    }

    #[test]
    fn reasoning_effort_and_the_cache_key_follow_the_dialect() {
        let mut req = ModelRequest {
            messages: vec![Message::user("hi")],
            reasoning: Some(ReasoningLevel::High),
            cache_key: Some("s1".into()),
            ..ModelRequest::default()
        };
        let b = request_body("gpt-5", &req, Dialect::OpenAi);
        assert_eq!(b["reasoning_effort"], "high");
        assert_eq!(b["prompt_cache_key"], "s1");
        assert!(
            request_body("qwen3:8b", &req, Dialect::Ollama)
                .get("reasoning_effort")
                .is_none()
        );
        assert_eq!(
            request_body("gpt-oss:20b", &req, Dialect::Ollama)["reasoning_effort"],
            "high"
        );
        req.reasoning = Some(ReasoningLevel::Off);
        assert_eq!(
            request_body("qwen3:8b", &req, Dialect::Ollama)["reasoning_effort"],
            "none"
        );
        assert!(
            request_body("gpt-5", &req, Dialect::OpenAi)
                .get("reasoning_effort")
                .is_none()
        );
    }
}
