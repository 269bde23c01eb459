//! Language-model providers behind one streaming interface.
//!
//! The agent loop speaks [`ModelRequest`] and consumes a stream of [`StreamEvent`]s; each provider
//! turns that into its wire format (OpenAI-compatible Chat Completions, OpenAI Responses,
//! Anthropic Messages) and back. Tool-call fragments are accumulated inside the provider, so the
//! loop only ever sees whole calls; reasoning arrives as its own deltas and blocks, never mixed
//! into the answer text. What a model can hold and costs is its [`profile::ModelProfile`]. The
//! scripted provider replays a recorded conversation for the demo.

pub mod anthropic;
pub mod http;
pub mod openai;
pub mod profile;
pub mod responses;
pub mod scripted;
pub mod search;
pub mod select;
pub mod sse;
pub mod sse_frame;
pub mod think;

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use pablo_core::{Coded, ErrorCode, ToolSpec};
use pablo_protocol::Usage;
pub use pablo_protocol::{Image, ReasoningBlock, SearchProvider, WebSearch, WebSearchResult};
pub use profile::ModelProfile;
pub use profile::ReasoningLevel;

/// One message of the conversation, provider-neutral.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// The person's words (with attached files' text), and the images attached to them. A
    /// text-only message has no images, and an empty `Vec` costs no allocation.
    User {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
    Assistant {
        text: String,
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
        /// The call's reasoning, sent back verbatim to the provider that wrote it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reasoning: Vec<ReasoningBlock>,
        /// The searches the provider ran for this message, sent back to the provider that ran
        /// them (Anthropic requires its search blocks in the assistant message).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        searches: Vec<WebSearch>,
    },
    /// The result of one tool call, as the JSON text the model reads.
    Tool { call_id: String, content: String },
}

pub use pablo_protocol::ToolCall;

impl Message {
    /// A user message of text alone.
    pub fn user(text: impl Into<String>) -> Self {
        Message::User {
            text: text.into(),
            images: Vec::new(),
        }
    }
}

/// A prompt sent again after its turn failed with no answer is the same message right after
/// itself: the two are one message, so the earlier copy goes. The agent does it as it sends the
/// prompt; resume does it again from the journal, so both send the same conversation.
pub fn drop_repeated_prompt(messages: &mut Vec<Message>) {
    let n = messages.len();
    if n >= 2
        && matches!(messages[n - 1], Message::User { .. })
        && messages[n - 1] == messages[n - 2]
    {
        messages.remove(n - 2);
    }
}

/// Replaces every image of `messages` by a note in its message's text that says it was there
/// and `why` it is not sent (the model does not take images; the provider refused one).
pub fn drop_images(messages: &mut [Message], why: &str) {
    for m in messages {
        if let Message::User { text, images } = m
            && !images.is_empty()
        {
            for i in images.drain(..) {
                text.push_str(&format!("\n[an image ({}) was here; {why}]", i.summary()));
            }
        }
    }
}

/// Why the images of a conversation a provider refused are no longer sent (the agent drops them
/// when the provider refuses; resume drops them again from the journal's `image_refused`).
pub const IMAGE_REFUSED_NOTE: &str =
    "the provider refused the conversation's images, so it is no longer sent";

/// Puts the notes of cleared tool results in place of the results (the agent does it to make
/// room; resume does it again from the journal, so both send the same conversation). Results no
/// longer in the conversation (compacted away) are skipped.
pub fn apply_clearing(messages: &mut [Message], cleared: &[pablo_protocol::ClearedResult]) {
    for c in cleared {
        if let Some(Message::Tool { content, .. }) = messages
            .iter_mut()
            .find(|m| matches!(m, Message::Tool { call_id, .. } if *call_id == c.call_id))
        {
            *content = c.content.clone();
        }
    }
}

/// Everything one model call needs.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModelRequest {
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    /// Upper bound on output tokens, when the provider needs one (Anthropic does).
    pub max_output_tokens: u32,
    /// The reasoning asked for; `None` leaves it to the provider's default.
    #[serde(skip)]
    pub reasoning: Option<ReasoningLevel>,
    /// Whether this request's prefix is worth caching (Anthropic breakpoints). Off for one-off
    /// calls such as a compaction summary, whose prefix no later call repeats.
    #[serde(skip)]
    pub cache: bool,
    /// A key stable for the session, so a provider routes its calls to the same prompt cache
    /// (OpenAI's `prompt_cache_key`).
    #[serde(skip)]
    pub cache_key: Option<String>,
}

/// What a provider streams back.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    TextDelta(String),
    /// A piece of reasoning text as it streams (never part of the answer).
    ReasoningDelta(String),
    /// A whole reasoning block, emitted once complete, to keep with the assistant message.
    Reasoning(ReasoningBlock),
    /// A whole tool call, emitted once its arguments are complete.
    ToolCall(ToolCall),
    /// A search the provider ran on its servers, emitted once its results (or error) came.
    WebSearch(WebSearch),
    Usage(Usage),
    /// The last event of a successful stream.
    Completed {
        stop_reason: ModelStopReason,
    },
    /// The request failed in a way another attempt may fix, before anything of it streamed; it
    /// is sent again after the wait. Not output: the stream goes on.
    Retry(RetryNotice),
}

/// One retry of a model request, as the person is told of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNotice {
    /// The attempt that comes next (2 for the first retry).
    pub attempt: u32,
    /// How many attempts there are in all.
    pub max_attempts: u32,
    /// How long until it.
    pub wait: std::time::Duration,
    /// What failed, in a few words (`503 from api.example.com`).
    pub reason: String,
    /// The failed attempt's error code (`model_http_error`, `model_unreachable`).
    pub code: pablo_core::ErrorCode,
}

/// Why the model stopped, normalised across providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelStopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    /// A provider-specific reason we do not know (`content_filter`, …).
    Other,
}

/// Errors of a model call. Messages name the provider, the HTTP status and the provider's text.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ModelError {
    #[error(
        "{provider}: cannot connect to {url}: {message}; check the base URL (`base_url` in the \
         config, or --base-url) and that a server answers there"
    )]
    Connect {
        provider: String,
        url: String,
        message: String,
    },
    /// The request did not fit the model's context window (the provider said so).
    #[error("{provider}: the request is too long for the model's context window: {message}")]
    ContextTooLong { provider: String, message: String },
    #[error("{provider}: HTTP {status}: {message}")]
    Http {
        provider: String,
        status: u16,
        message: String,
    },
    #[error("{provider}: {message}")]
    Provider { provider: String, message: String },
    #[error("{provider}: the stream ended before the response was complete")]
    StreamCut { provider: String },
    #[error("{provider}: no data for {seconds} s; the stream was abandoned")]
    IdleTimeout { provider: String, seconds: u64 },
    #[error(
        "{provider}: the stream delivered none of the answer for {seconds} s (only keep-alive \
         comments or bytes that decode to nothing); it was abandoned"
    )]
    Stalled { provider: String, seconds: u64 },
    #[error("{provider}: malformed response: {message}")]
    Malformed { provider: String, message: String },
    #[error("model output exceeded {limit} bytes")]
    OutputTooLarge { limit: usize },
    #[error("model call cancelled")]
    Cancelled,
    #[error("{0}")]
    Config(String),
    /// The provider needs a key and its variable is unset or empty (a config problem, coded as
    /// one; `pablo doctor` names the variable).
    #[error("{provider} needs an API key: set the environment variable {var}{hint}")]
    MissingKey {
        provider: String,
        var: String,
        hint: &'static str,
    },
}

impl Coded for ModelError {
    fn code(&self) -> ErrorCode {
        match self {
            ModelError::Connect { .. } => ErrorCode::ModelUnreachable,
            ModelError::ContextTooLong { .. } => ErrorCode::ModelContextTooLong,
            ModelError::Http { status: 429, .. } => ErrorCode::ModelRateLimited,
            ModelError::Http { status: 401, .. } | ModelError::Http { status: 403, .. } => {
                ErrorCode::ModelAuthFailed
            }
            ModelError::Http { .. } => ErrorCode::ModelHttpError,
            ModelError::Provider { .. } => ErrorCode::ModelError,
            ModelError::StreamCut { .. } => ErrorCode::ModelStreamCut,
            ModelError::IdleTimeout { .. } => ErrorCode::ModelIdleTimeout,
            ModelError::Stalled { .. } => ErrorCode::ModelStreamStalled,
            ModelError::Malformed { .. } => ErrorCode::ModelMalformedResponse,
            ModelError::OutputTooLarge { .. } => ErrorCode::ModelOutputTooLarge,
            ModelError::Cancelled => ErrorCode::Cancelled,
            ModelError::Config(_) | ModelError::MissingKey { .. } => ErrorCode::ModelConfig,
        }
    }
}

pub type EventStream = BoxStream<'static, Result<StreamEvent, ModelError>>;

/// A provider. Implementations stream; retries happen inside, before any output is streamed.
#[async_trait::async_trait]
pub trait ModelClient: Send + Sync {
    /// `openai`, `anthropic`, `ollama`, `scripted`.
    fn provider(&self) -> &str;
    fn model(&self) -> &str;
    /// What the model holds and costs, and the reasoning asked of it. By default the entry of
    /// the known-models table for [`ModelClient::model`]; clients built from config carry the
    /// config's overrides.
    fn profile(&self) -> ModelProfile {
        ModelProfile::lookup(self.model())
    }
    /// Starts one model call. The stream ends after `Completed` or an error.
    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<EventStream, ModelError>;
}
