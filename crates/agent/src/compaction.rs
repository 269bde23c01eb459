//! Keeping the conversation inside the model's context window: old tool results are cleared
//! first, then older turns are summarized by the model and replaced by the summary (also on
//! `/compact`, with the person's focus). A provider that still answers "context too long" gets one
//! more try after the same treatment.
//!
//! Each step works on the [`Exchange`] the turn loop (or, for `/compact`, the dispatcher) lends
//! it, and tells the person's `pre_compact` hooks through a [`HookRunner`].

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::COMPACT_MARK;
use super::hooks::HookRunner;
use super::model_call::Exchange;
use super::window::{self, ContextWindow};
use pablo_model::{Message, ModelError, ModelRequest, StreamEvent};
use pablo_protocol::Event;

/// What the model is asked when older turns are compacted.
const COMPACT_REQUEST: &str = "The conversation is getting too long for the context window. \
Write a summary of everything above that lets you continue the work without it: the person's \
requests and constraints, decisions made, files read or changed (with paths), commands run and \
their outcomes, the current state of the todo checklist, and what remains to be done. Be \
specific and complete; do not call tools.";

/// Keeps the next request inside the context window, as the module docs say: when its
/// estimate passes the fill limit (or `force`, after a refusal), old tool results are cleared
/// (`ContextCleared`), then, if that is not enough, the conversation is summarized
/// (`ContextCompacted`). `limits.compact_at_bytes`, when set, also triggers a summary by size.
pub(crate) async fn fit_context(
    x: &mut Exchange<'_>,
    hooks: &HookRunner<'_>,
    cancel: &CancellationToken,
    force: bool,
) {
    let bytes = x.request_bytes();
    let over =
        |x: &Exchange<'_>, bytes: usize| x.seat.window.estimate(bytes) > x.seat.window.limit();
    if force || over(x, bytes) {
        let cleared = window::plan_clearing(x.messages, bytes, &x.seat.window);
        if !cleared.is_empty() {
            window::apply_clearing(x.messages, &cleared);
            let after = x.request_bytes();
            x.outlet.emit(Event::ContextCleared {
                cleared,
                tokens_before: x.seat.window.estimate(bytes),
                tokens_after: x.seat.window.estimate(after),
            });
        }
    }
    let bytes = x.request_bytes();
    if over(x, bytes) || bytes > x.limits.compact_at_bytes {
        compact(x, hooks, cancel).await;
    }
}

/// The provider refused the last request as too long: learn what did not fit, make room by
/// force, and say so.
pub(crate) async fn recover_overflow(
    x: &mut Exchange<'_>,
    hooks: &HookRunner<'_>,
    message: &str,
    cancel: &CancellationToken,
) {
    let bytes = x.request_bytes();
    x.seat
        .window
        .refused(bytes, pablo_model::http::overflow_tokens(message));
    x.outlet.emit(Event::Warning {
        message: format!(
            "the model refused the request as too long for its context window; pablo made \
                 room and tries once more (the window is now taken as {} tokens)",
            x.seat.window.window_tokens()
        ),
    });
    fit_context(x, hooks, cancel, true).await;
}

/// Summarizes the conversation before a cut ([`window::compaction_cut`]) and replaces it by
/// one user message holding the summary (`ContextCompacted`). The journal keeps the original
/// events, and resume replays the same replacement. A failed or cancelled summary leaves the
/// conversation as it was; the turn goes on.
async fn compact(x: &mut Exchange<'_>, hooks: &HookRunner<'_>, cancel: &CancellationToken) {
    let fixed = x.system_prompt.len()
        + serde_json::to_vec(&x.catalog.specs())
            .map(|v| v.len())
            .unwrap_or(0);
    let Some(split) = window::compaction_cut(x.messages, fixed, &x.seat.window) else {
        return;
    };
    // The summary must not take the model call the turn itself needs.
    let calls_left = x.spend.budget.model_calls_remaining(x.limits);
    if calls_left.is_some_and(|left| left < 2) {
        return;
    }
    hooks.pre_compact("auto").await;
    compact_before(x, split, None, cancel).await;
}

/// `/compact [focus]`: the whole conversation so far becomes one summary, now, with the
/// person's focus (what the summary must keep) added to the request.
pub(crate) async fn compact_now(x: &mut Exchange<'_>, hooks: &HookRunner<'_>, focus: Option<&str>) {
    let turns = x
        .messages
        .iter()
        .filter(|m| matches!(m, Message::Assistant { .. }))
        .count();
    if turns == 0 {
        x.outlet.emit(Event::Warning {
            message: "nothing to compact yet: the conversation has no answer".into(),
        });
        return;
    }
    if !x.spend.budget.model_calls_left(x.limits) {
        x.outlet.emit(Event::Warning {
            message: "the conversation was not compacted: the model-call budget is used up".into(),
        });
        return;
    }
    let cancel = CancellationToken::new();
    let before = x.messages.len();
    hooks.pre_compact("manual").await;
    compact_before(x, before, focus, &cancel).await;
}

/// Summarizes `messages[..split]` (with `focus` as the person's instruction, when given) and
/// replaces it by the summary.
async fn compact_before(
    x: &mut Exchange<'_>,
    split: usize,
    focus: Option<&str>,
    cancel: &CancellationToken,
) {
    let mut older = x.messages[..split].to_vec();
    // The summary request must fit too: if the part to summarize is itself too large, its
    // tool results are cleared for the summary (the model still sees the calls).
    let older_bytes = window::request_bytes(x.system_prompt, &[], &older);
    if x.seat.window.estimate(older_bytes) > x.seat.window.limit() {
        let all = ContextWindow::new(1);
        let cleared = window::plan_clearing(&older, older_bytes, &all);
        window::apply_clearing(&mut older, &cleared);
    }
    let request_text = match focus.map(str::trim).filter(|f| !f.is_empty()) {
        Some(f) => {
            format!("{COMPACT_REQUEST}\n\nThe person asks the summary to keep in particular: {f}")
        }
        None => COMPACT_REQUEST.to_string(),
    };
    older.push(Message::user(request_text));
    if !x.seat.client.profile().images {
        window::drop_images(&mut older);
    }
    let request = ModelRequest {
        system: x.system_prompt.to_string(),
        messages: older,
        tools: Vec::new(),
        max_output_tokens: 4_096,
        // A one-off call: no breakpoints, no session cache routing, no thinking.
        reasoning: None,
        cache: false,
        cache_key: None,
    };
    if x.spend.budget.take_model_call(x.limits).is_err() {
        return;
    }
    let summary = match summarize(x, &request, cancel).await {
        Ok(s) if !s.trim().is_empty() => s,
        Ok(_) => return,
        Err(e) => {
            if !matches!(e, ModelError::Cancelled) {
                x.outlet.emit(Event::Warning {
                    message: format!(
                        "the conversation could not be summarized ({e}); it continues in full"
                    ),
                });
            }
            return;
        }
    };
    let text = format!("{COMPACT_MARK}\n\n{}", summary.trim());
    x.messages.splice(..split, [Message::user(text.clone())]);
    x.outlet.emit(Event::ContextCompacted {
        summary: text,
        replaced_messages: split,
    });
    // The figure the front-ends show was the last call's; until the next call, the estimate
    // of the shorter conversation is the better one (`/compact` has no call after it).
    x.outlet
        .emit(x.seat.estimated_usage(x.request_bytes(), x.spend.cost_usd));
}

/// One model call whose text is collected, not streamed to the front-end.
async fn summarize(
    x: &Exchange<'_>,
    request: &ModelRequest,
    cancel: &CancellationToken,
) -> Result<String, ModelError> {
    let mut stream = tokio::select! {
        s = x.seat.client.stream(request, cancel.clone()) => s?,
        () = cancel.cancelled() => return Err(ModelError::Cancelled),
    };
    let mut text = String::new();
    loop {
        let next = tokio::select! {
            n = stream.next() => n,
            () = cancel.cancelled() => return Err(ModelError::Cancelled),
        };
        match next {
            None => {
                return Err(ModelError::StreamCut {
                    provider: x.seat.client.provider().to_string(),
                });
            }
            Some(Err(e)) => return Err(e),
            Some(Ok(StreamEvent::TextDelta(d))) => {
                text.push_str(&d);
                x.check_output(text.len())?;
            }
            Some(Ok(StreamEvent::Completed { .. })) => return Ok(text),
            Some(Ok(StreamEvent::Retry(r))) => {
                x.spend.budget.count_retry();
                x.outlet.emit(super::forward::retry_event(r));
            }
            Some(Ok(
                StreamEvent::ToolCall(_)
                | StreamEvent::Usage(_)
                | StreamEvent::ReasoningDelta(_)
                | StreamEvent::Reasoning(_)
                | StreamEvent::WebSearch(_),
            )) => {}
        }
    }
}
