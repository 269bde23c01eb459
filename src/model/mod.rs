//! Language-model providers behind one streaming interface.
//!
//! The agent loop speaks [`ModelRequest`] and consumes a stream of [`StreamEvent`]s; each provider
//! turns that into its wire format (OpenAI-compatible Chat Completions, Anthropic Messages) and
//! back. Tool-call fragments are accumulated inside the provider, so the loop only ever sees whole
//! calls. The scripted provider replays a recorded conversation for the demo.

pub mod anthropic;
pub mod http;
pub mod openai;
pub mod scripted;
pub mod select;
pub mod sse;

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::core::{Coded, ToolSpec};
use crate::protocol::Usage;

/// One message of the conversation, provider-neutral.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    User {
        text: String,
    },
    Assistant {
        text: String,
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call, as the JSON text the model reads.
    Tool {
        call_id: String,
        content: String,
    },
}

pub use crate::protocol::ToolCall;

/// Everything one model call needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelRequest {
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    /// Upper bound on output tokens, when the provider needs one (Anthropic does).
    pub max_output_tokens: u32,
}

/// What a provider streams back.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    TextDelta(String),
    /// A whole tool call, emitted once its arguments are complete.
    ToolCall(ToolCall),
    Usage(Usage),
    /// The last event of a successful stream.
    Completed {
        stop_reason: ModelStopReason,
    },
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
    #[error("{provider}: cannot connect to {url}: {message}")]
    Connect {
        provider: String,
        url: String,
        message: String,
    },
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
    #[error("{provider}: malformed response: {message}")]
    Malformed { provider: String, message: String },
    #[error("model output exceeded {limit} bytes")]
    OutputTooLarge { limit: usize },
    #[error("model call cancelled")]
    Cancelled,
    #[error("{0}")]
    Config(String),
}

impl Coded for ModelError {
    fn code(&self) -> &'static str {
        match self {
            ModelError::Connect { .. } => "model_unreachable",
            ModelError::Http { status: 429, .. } => "model_rate_limited",
            ModelError::Http { status: 401, .. } | ModelError::Http { status: 403, .. } => {
                "model_auth_failed"
            }
            ModelError::Http { .. } => "model_http_error",
            ModelError::Provider { .. } => "model_error",
            ModelError::StreamCut { .. } => "model_stream_cut",
            ModelError::IdleTimeout { .. } => "model_idle_timeout",
            ModelError::Malformed { .. } => "model_malformed_response",
            ModelError::OutputTooLarge { .. } => "model_output_too_large",
            ModelError::Cancelled => "cancelled",
            ModelError::Config(_) => "model_config",
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
    /// Starts one model call. The stream ends after `Completed` or an error.
    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<EventStream, ModelError>;
}
