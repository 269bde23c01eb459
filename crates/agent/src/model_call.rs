//! One model call: the request (the conversation, the tools, the output allowance), the stream
//! decoded as it arrives (text and reasoning passed on as deltas, tool calls collected, the output
//! bounded), and the usage that corrects the window's estimate and the session's cost.
//!
//! A call works on an [`Exchange`]: the parts of a conversation that talking to its model reads
//! and changes (its model, messages and spending, its system prompt and tools), lent by the turn
//! loop for one call. Compaction ([`super::compaction`]) sends its summary request through one
//! too.

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::Limits;
use super::limits::Spend;
use super::outlet::Outlet;
use super::window::{self, ContextWindow};
use pablo_core::{Coded, ErrorCode};
use pablo_model::ModelProfile;
use pablo_model::profile::thinking_budget;
use pablo_model::{Message, ModelClient, ModelStopReason};
use pablo_model::{ModelError, ModelRequest, ReasoningBlock, StreamEvent};
use pablo_protocol::{Event, StopReason, ToolCall, Usage};
use pablo_tools::Catalog;

/// The answer tokens asked for by default (reasoning budgets come on top).
const ANSWER_TOKENS: u32 = 16_384;
/// The fewest output tokens a request asks for, however full the window.
const MIN_OUTPUT_TOKENS: u32 = 1_024;
/// What follows the shown part of an answer the person stopped, in the conversation.
pub(crate) const INTERRUPTED_BY_USER: &str = "[interrupted by the user]";

/// What a model call has streamed so far: the text the person saw, and the tool calls that came
/// whole.
#[derive(Default)]
struct Shown {
    text: String,
    calls: usize,
}

/// The model a conversation talks to, with what is known of it: its profile (window, prices,
/// reasoning) and its context window as observed so far.
pub(crate) struct ModelSeat {
    pub(crate) client: Arc<dyn ModelClient>,
    pub(crate) profile: ModelProfile,
    pub(crate) window: ContextWindow,
}

impl ModelSeat {
    pub(crate) fn new(client: Arc<dyn ModelClient>) -> Self {
        let profile = client.profile();
        Self {
            window: ContextWindow::new(profile.context_window),
            profile,
            client,
        }
    }

    /// Answers with `client` from the next call on: its window and prices from here on (the
    /// calls so far keep theirs).
    pub(crate) fn switch(&mut self, client: Arc<dyn ModelClient>) {
        self.profile = client.profile();
        self.window = ContextWindow::new(self.profile.context_window);
        self.client = client;
    }

    /// The window figure the front-ends show, estimated for a request of `request_bytes` (after
    /// a switch or a compaction, until the next call reports what it counted).
    pub(crate) fn estimated_usage(&self, request_bytes: usize, cost_usd: Option<f64>) -> Event {
        Event::ContextUsage {
            used_tokens: self.window.estimate(request_bytes),
            window_tokens: self.window.window_tokens(),
            cost_usd,
        }
    }
}

/// What a model call borrows of its conversation, lent by the turn loop.
pub(crate) struct Exchange<'a> {
    pub(crate) seat: &'a mut ModelSeat,
    pub(crate) messages: &'a mut Vec<Message>,
    pub(crate) spend: &'a mut Spend,
    pub(crate) session_id: &'a str,
    pub(crate) system_prompt: &'a str,
    pub(crate) catalog: &'a Catalog,
    pub(crate) limits: &'a Limits,
    pub(crate) outlet: &'a Outlet,
}

/// Why a turn stopped early.
pub(crate) struct TurnEnd {
    pub(crate) stop_reason: StopReason,
    pub(crate) error: Option<(ErrorCode, String)>,
    /// The provider refused the request as too long for the context window (its message).
    pub(crate) overflow: Option<String>,
}

impl TurnEnd {
    pub(crate) fn cancelled() -> Self {
        Self {
            stop_reason: StopReason::Cancelled,
            error: None,
            overflow: None,
        }
    }

    pub(crate) fn budget(code: ErrorCode, message: String) -> Self {
        Self {
            stop_reason: StopReason::BudgetExhausted,
            error: Some((code, message)),
            overflow: None,
        }
    }

    pub(crate) fn error(code: ErrorCode, message: String) -> Self {
        Self {
            stop_reason: StopReason::Error,
            error: Some((code, message)),
            overflow: None,
        }
    }
}

/// What one model call produced.
pub(crate) struct ModelTurn {
    pub(crate) text: String,
    pub(crate) calls: Vec<ToolCall>,
    pub(crate) stop: ModelStopReason,
    pub(crate) reasoning: Vec<ReasoningBlock>,
    /// The searches the provider ran for this answer.
    pub(crate) searches: Vec<pablo_protocol::WebSearch>,
}

impl Exchange<'_> {
    /// The request's serialized size (system, tools, messages), the measure of the window
    /// estimate.
    pub(crate) fn request_bytes(&self) -> usize {
        window::request_bytes(self.system_prompt, &self.catalog.specs(), self.messages)
    }

    /// The output tokens to ask for: the answer allowance plus the thinking budget, within the
    /// model's bound and what the window leaves after the input.
    fn max_output_tokens(&self, input_bytes: usize) -> u32 {
        let thinking = self
            .seat
            .profile
            .reasoning
            .and_then(thinking_budget)
            .unwrap_or(0);
        let wanted = ANSWER_TOKENS
            .saturating_add(thinking)
            .min(self.seat.profile.max_output_tokens);
        let room = self
            .seat
            .window
            .window_tokens()
            .saturating_sub(self.seat.window.estimate(input_bytes));
        let room = u32::try_from(room).unwrap_or(u32::MAX);
        wanted.min(room).max(MIN_OUTPUT_TOKENS)
    }

    /// One streamed model call: the text, the tool calls, why the model stopped, and its
    /// reasoning.
    pub(crate) async fn call_model(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<ModelTurn, TurnEnd> {
        // `--max-tool-calls 0`: a tool the model may not call is not offered at all.
        let tools = if self.limits.max_tool_calls == Some(0) {
            Vec::new()
        } else {
            self.catalog.specs()
        };
        let mut request = ModelRequest {
            system: self.system_prompt.to_string(),
            messages: self.messages.clone(),
            tools,
            max_output_tokens: 0,
            reasoning: self.seat.profile.reasoning,
            cache: true,
            cache_key: Some(self.session_id.to_string()),
        };
        if !self.seat.client.profile().images {
            window::drop_images(&mut request.messages);
        }
        let size = self.request_bytes();
        request.max_output_tokens = self.max_output_tokens(size);
        if size > self.limits.max_request_context_bytes {
            return Err(TurnEnd::error(
                ErrorCode::ContextTooLarge,
                format!(
                    "the request context is {size} bytes, over the limit of {} bytes",
                    self.limits.max_request_context_bytes
                ),
            ));
        }
        // A cap counts in dollars: a model whose price is unknown would spend uncounted (the
        // launch refuses such a model at start; this is a model switched to later, or a
        // subagent's own).
        if self.spend.budget.spend_capped(self.limits) && self.seat.profile.prices.is_none() {
            return Err(TurnEnd::error(
                ErrorCode::ModelPriceUnknown,
                format!(
                    "{} has no known price, so its calls cannot be counted against the spend \
                     cap (--max-budget-usd); set [model.prices] input and output for it",
                    self.seat.client.model()
                ),
            ));
        }
        if let Some(reached) = self.spend.budget.spend_cap_reached(self.limits) {
            return Err(TurnEnd::budget(
                ErrorCode::CostBudgetExhausted,
                reached.describe(),
            ));
        }
        if let Err(spent) = self.spend.budget.take_model_call(self.limits) {
            return Err(TurnEnd::budget(
                ErrorCode::ModelCallBudgetExhausted,
                format!("{} is used up", spent.describe("model-call")),
            ));
        }
        let span = pablo_telemetry::model_call_span(
            self.seat.client.provider(),
            self.seat.client.model(),
            size,
        );
        let started = Instant::now();
        let mut shown = Shown::default();
        let mut result = self
            .stream_model(&request, size, cancel, &mut shown)
            .instrument(span.clone())
            .await;
        // A stream the server cut is asked for once more while nothing of it can have acted: no
        // tool call came whole yet. The person sees the cut and the new answer; what the cut one
        // showed is not the model's answer, so it does not join the conversation.
        if let Err(e @ ModelError::StreamCut { .. }) = &result
            && shown.calls == 0
            && !cancel.is_cancelled()
            && self.spend.budget.spend_cap_reached(self.limits).is_none()
            && self.spend.budget.take_model_call(self.limits).is_ok()
        {
            self.outlet.emit(Event::AnswerRetried {
                reason: format!("{}: {e}", e.code()),
                shown_chars: shown.text.chars().count(),
            });
            shown = Shown::default();
            result = self
                .stream_model(&request, size, cancel, &mut shown)
                .instrument(span.clone())
                .await;
        }
        span.record("duration_ms", started.elapsed().as_millis() as u64);
        match &result {
            Ok(t) => {
                let out: usize =
                    t.text.len() + t.calls.iter().map(|c| c.arguments.len()).sum::<usize>();
                span.record("output_bytes", out);
                span.record("tool_calls", t.calls.len());
                span.record("outcome", "ok");
            }
            Err(e) => {
                span.record("outcome", e.code().as_str());
            }
        }
        if let Err(e) = &result
            && !shown.text.is_empty()
        {
            self.keep_interrupted(shown.text, e);
        }
        match result {
            Ok(r) => Ok(r),
            Err(ModelError::Cancelled) => Err(TurnEnd::cancelled()),
            Err(e @ ModelError::ContextTooLong { .. }) => {
                let mut end = TurnEnd::error(e.code(), e.to_string());
                end.overflow = Some(e.to_string());
                Err(end)
            }
            Err(e @ ModelError::OutputTooLarge { .. }) => {
                Err(TurnEnd::budget(e.code(), e.to_string()))
            }
            // A refused image would be refused again at every later call (and after resume):
            // the conversation's images go, each leaving a note, and the journal's error says so
            // for resume.
            Err(ModelError::Http {
                status, message, ..
            }) if refuses_images(status, &message) && carries_images(self.messages) => {
                pablo_model::drop_images(self.messages, pablo_model::IMAGE_REFUSED_NOTE);
                Err(TurnEnd::error(
                    ErrorCode::ImageRefused,
                    format!(
                        "the provider refused an image of the conversation (HTTP {status}: \
                         {message}); the images were dropped from it, so the next prompt goes \
                         without them"
                    ),
                ))
            }
            Err(e) => Err(TurnEnd::error(e.code(), e.to_string())),
        }
    }

    /// An answer that stopped before its end (the person interrupted it, the stream broke)
    /// after some of its text was shown: that text joins the conversation as the assistant's
    /// message with a note saying it was cut, so "continue" has something to continue and the
    /// journal (which rebuilds the history from `MessageCompleted`) keeps it for a resume.
    fn keep_interrupted(&mut self, shown: String, error: &ModelError) {
        let note = match error {
            ModelError::Cancelled => INTERRUPTED_BY_USER.to_string(),
            other => format!("[the answer was cut off: {}]", other.code()),
        };
        let text = format!("{}\n\n{note}", shown.trim_end());
        self.outlet.emit(Event::MessageCompleted {
            text: text.clone(),
            tool_calls: Vec::new(),
        });
        self.messages.push(pablo_model::Message::Assistant {
            text,
            tool_calls: Vec::new(),
            reasoning: Vec::new(),
            searches: Vec::new(),
        });
    }

    async fn stream_model(
        &mut self,
        request: &ModelRequest,
        request_bytes: usize,
        cancel: &CancellationToken,
        shown: &mut Shown,
    ) -> Result<ModelTurn, ModelError> {
        let mut stream = tokio::select! {
            s = self.seat.client.stream(request, cancel.clone()) => s?,
            () = cancel.cancelled() => return Err(ModelError::Cancelled),
        };
        let mut text = String::new();
        let mut calls = Vec::new();
        let mut reasoning: Vec<ReasoningBlock> = Vec::new();
        let mut searches = Vec::new();
        let mut streamed_reasoning = String::new();
        let mut out_bytes = 0usize;
        let mut stop = None;
        let mut call_usage = Usage::default();
        loop {
            let next = tokio::select! {
                n = stream.next() => n,
                () = cancel.cancelled() => return Err(ModelError::Cancelled),
            };
            let Some(event) = next else { break };
            match event? {
                StreamEvent::TextDelta(delta) => {
                    out_bytes += delta.len();
                    self.check_output(out_bytes)?;
                    text.push_str(&delta);
                    shown.text.push_str(&delta);
                    self.outlet.emit(Event::MessageDelta { text: delta });
                }
                StreamEvent::ReasoningDelta(delta) => {
                    out_bytes += delta.len();
                    self.check_output(out_bytes)?;
                    streamed_reasoning.push_str(&delta);
                    self.outlet.emit(Event::ReasoningDelta { text: delta });
                }
                StreamEvent::Reasoning(block) => reasoning.push(block),
                StreamEvent::ToolCall(call) => {
                    out_bytes += call.arguments.len();
                    self.check_output(out_bytes)?;
                    shown.calls += 1;
                    calls.push(call);
                }
                // The provider ran it: front-ends show it now, the message keeps it.
                StreamEvent::WebSearch(search) => {
                    self.outlet.emit(Event::WebSearch {
                        search: search.clone(),
                    });
                    searches.push(search);
                }
                StreamEvent::Usage(u) => call_usage = u,
                StreamEvent::Completed { stop_reason } => {
                    stop = Some(stop_reason);
                    break;
                }
                StreamEvent::Retry(r) => {
                    // The failed attempt reached the provider: the turn's count has it.
                    self.spend.budget.count_retry();
                    self.outlet.emit(super::forward::retry_event(r));
                }
            }
        }
        let Some(stop) = stop else {
            return Err(ModelError::StreamCut {
                provider: self.seat.client.provider().to_string(),
            });
        };
        // A provider that streamed reasoning without a closing block still gets it journaled.
        if reasoning.is_empty() && !streamed_reasoning.is_empty() {
            reasoning.push(ReasoningBlock::Text {
                text: streamed_reasoning,
            });
        }
        if call_usage != Usage::default() {
            let call_cost = self.seat.profile.prices.map(|p| p.cost(&call_usage));
            pablo_telemetry::record_usage(&tracing::Span::current(), &call_usage, call_cost);
            self.spend.add(&call_usage, call_cost);
            if let Some(cost) = call_cost {
                self.spend.budget.add_cost(cost);
            }
            self.seat
                .window
                .observe(request_bytes, call_usage.input_tokens);
            self.outlet.emit(Event::Usage {
                last: call_usage,
                total: self.spend.usage,
            });
        }
        let used_tokens = match call_usage.input_tokens {
            0 => self.seat.window.estimate(request_bytes),
            n => n,
        };
        self.outlet.emit(Event::ContextUsage {
            used_tokens,
            window_tokens: self.seat.window.window_tokens(),
            cost_usd: self.spend.cost_usd,
        });
        Ok(ModelTurn {
            text,
            calls,
            stop,
            reasoning,
            searches,
        })
    }

    /// Refuses a model call's output once `bytes` of it are over `max_model_output_bytes`.
    pub(crate) fn check_output(&self, bytes: usize) -> Result<(), ModelError> {
        if bytes > self.limits.max_model_output_bytes {
            return Err(ModelError::OutputTooLarge {
                limit: self.limits.max_model_output_bytes,
            });
        }
        Ok(())
    }
}

/// Whether an HTTP refusal is about an image: a client error (not a key, rate or time-out
/// problem) whose message names one.
fn refuses_images(status: u16, message: &str) -> bool {
    (400..500).contains(&status)
        && ![401, 403, 408, 429].contains(&status)
        && message.to_ascii_lowercase().contains("image")
}

fn carries_images(messages: &[pablo_model::Message]) -> bool {
    messages
        .iter()
        .any(|m| matches!(m, pablo_model::Message::User { images, .. } if !images.is_empty()))
}
