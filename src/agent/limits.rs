//! Host limits and call budgets, with the defaults the product is specified by.

use std::time::Duration;

use crate::config::LimitsConfig;
use crate::core::ErrorCode;
use crate::protocol::ToolOutcome;

pub(crate) const MIB: usize = 1024 * 1024;

/// What one session may consume. `None` budgets are unlimited; `Some(0)` disables that kind of
/// call entirely.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    pub run_deadline: Duration,
    pub max_tool_argument_bytes: usize,
    /// Bound on a tool result after JSON serialization (escaping counts).
    pub max_tool_result_bytes: usize,
    pub max_request_context_bytes: usize,
    pub max_model_output_bytes: usize,
    pub max_native_events: u64,
    pub max_model_calls: Option<u64>,
    pub max_tool_calls: Option<u64>,
    pub stream_idle_timeout: Duration,
    /// When the request (system prompt, tools and messages, serialized) grows past this many
    /// bytes, the conversation is summarized even if the context window has room. Unbounded by
    /// default: the window decides (`agent::window`); set it to keep requests small on purpose.
    pub compact_at_bytes: usize,
    /// HTTP requests `web.fetch` may send in the session, each redirect counted (0 removes the
    /// tool from the catalog).
    pub max_network_requests: u64,
    /// Largest artifact `artifact.write` stores.
    pub max_artifact_bytes: usize,
    /// Subagents of one model response that run at the same time.
    pub max_parallel_subagents: usize,
    /// Tool calls one subagent may make (the session's budget still bounds the total).
    pub subagent_max_tool_calls: u64,
    /// How long one subagent may run (the turn's deadline still bounds it).
    pub subagent_deadline: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            run_deadline: Duration::from_secs(60 * 60),
            max_tool_argument_bytes: MIB,
            max_tool_result_bytes: 8 * MIB,
            max_request_context_bytes: 32 * MIB,
            max_model_output_bytes: 4 * MIB,
            max_native_events: 1_000_000,
            max_model_calls: None,
            max_tool_calls: None,
            stream_idle_timeout: Duration::from_secs(120),
            compact_at_bytes: usize::MAX,
            max_network_requests: 50,
            max_artifact_bytes: 5 * MIB,
            max_parallel_subagents: 4,
            subagent_max_tool_calls: 50,
            subagent_deadline: Duration::from_secs(600),
        }
    }
}

impl Limits {
    /// Applies a config layer's overrides.
    pub(crate) fn apply(&mut self, c: &LimitsConfig) {
        if let Some(s) = c.run_deadline_seconds {
            self.run_deadline = Duration::from_secs(s);
        }
        if let Some(v) = c.max_tool_argument_bytes {
            self.max_tool_argument_bytes = v;
        }
        if let Some(v) = c.max_tool_result_bytes {
            self.max_tool_result_bytes = v;
        }
        if let Some(v) = c.max_request_context_bytes {
            self.max_request_context_bytes = v;
        }
        if let Some(v) = c.max_model_output_bytes {
            self.max_model_output_bytes = v;
        }
        if let Some(v) = c.max_native_events {
            self.max_native_events = v;
        }
        if c.max_model_calls.is_some() {
            self.max_model_calls = c.max_model_calls;
        }
        if c.max_tool_calls.is_some() {
            self.max_tool_calls = c.max_tool_calls;
        }
        if let Some(v) = c.compact_at_bytes {
            self.compact_at_bytes = v;
        }
        if let Some(v) = c.max_network_requests {
            self.max_network_requests = v;
        }
        if let Some(v) = c.max_artifact_bytes {
            self.max_artifact_bytes = v;
        }
        if let Some(s) = c.stream_idle_timeout_seconds {
            self.stream_idle_timeout = Duration::from_secs(s);
        }
        if let Some(v) = c.max_parallel_subagents {
            self.max_parallel_subagents = v.max(1);
        }
        if let Some(v) = c.subagent_max_tool_calls {
            self.subagent_max_tool_calls = v;
        }
        if let Some(s) = c.subagent_deadline_seconds {
            self.subagent_deadline = Duration::from_secs(s);
        }
    }
}

/// Counts what has been spent against [`Limits`].
#[derive(Debug, Clone, Default)]
pub struct Budget {
    pub(crate) model_calls: u64,
    pub(crate) tool_calls: u64,
}

impl Budget {
    pub(crate) fn model_calls_left(&self, limits: &Limits) -> bool {
        limits
            .max_model_calls
            .is_none_or(|max| self.model_calls < max)
    }

    pub(crate) fn tool_calls_left(&self, limits: &Limits) -> bool {
        limits
            .max_tool_calls
            .is_none_or(|max| self.tool_calls < max)
    }
}

/// The codes of tool results that mean a session budget is spent (the tool-call budget; the
/// network requests of `web.fetch`).
pub(crate) const SPENT_BUDGET_CODES: [ErrorCode; 2] = [
    ErrorCode::ToolCallBudgetExhausted,
    ErrorCode::NetworkBudgetExhausted,
];

/// The code and message that end the turn when `outcome` says a session budget is spent.
///
/// A spent budget stays spent for the rest of the session, so a model that is called again only
/// asks again: `--max-tool-calls 5` once made 502 model calls, each answered with the same
/// refusal, until the run deadline. So the refusal is the model's last word on tools: it is in
/// the conversation (the model is told), and the turn ends with the budget's code instead of
/// calling the model once more.
pub(crate) fn spent_budget(outcome: &ToolOutcome) -> Option<(ErrorCode, String)> {
    let ToolOutcome::Err { error, .. } = outcome else {
        return None;
    };
    let code = ErrorCode::parse(&error.code).filter(|c| SPENT_BUDGET_CODES.contains(c))?;
    Some((code, format!("{}; the turn ends here", error.message)))
}
