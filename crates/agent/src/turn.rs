//! The turn loop: [`run_turn`] is one turn from the person's prompt to the model's last answer:
//! each model call, then each tool call it asked for (validate → preview → decide → commit, one
//! at a time), until the model stops asking for tools. A cancelled turn is never dropped
//! half-way: it still awaits the tool that is running (tools watch the token and clean up),
//! answers every pending call with a result, and ends as `Cancelled`. [`super::task`] runs it as
//! a task of its own.
//!
//! This is the one place that takes a [`Conversation`] whole and lends each stage the parts it
//! uses ([`exchange`] for a model call or a compaction, [`pipeline`] for tool calls, [`hooks`]
//! for the person's hooks); the same lending serves what the dispatcher asks of the idle
//! conversation between turns ([`compact_now`], [`session_start`], [`switch_model`]).
//!
//! A turn may start subagents, whose turns run this loop again: the loop is handed the
//! [`Subagents`] that starts them by its caller and passes it to the pipeline, so this module
//! never names the subagent runner ([`super::call::subagents`] says why).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::Limits;
use super::attach;
use super::call::subagents::Subagents;
use super::call::{Delegation, Pipeline};
use super::checkpoints;
use super::compaction;
use super::conversation::Conversation;
use super::hooks::{HookRunner, PromptGate};
use super::limits::{self, Budget};
use super::mode;
use super::model_call::{Exchange, ModelTurn, TurnEnd};
use super::shared::Shared;
use pablo_core::{Coded, ErrorCode, ToolFailure};
use pablo_hooks::HookEvent;
use pablo_model::{Message, ModelClient, ModelStopReason};
use pablo_protocol::{Event, ImageAttachment, StopReason};

/// The prompt with hooks' text after it, one paragraph each (resume appends it the same way).
fn with_hook_text(text: String, notes: Vec<String>) -> String {
    if notes.is_empty() {
        return text;
    }
    format!("{text}\n\n{}", notes.join("\n\n"))
}

/// What the person sent to start a turn.
#[derive(Debug, Clone)]
pub(crate) struct TurnInput {
    pub(crate) text: String,
    pub(crate) images: Vec<ImageAttachment>,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TurnOutcome {
    /// Nothing was sent: an attachment could not go. The person gets the prompt back.
    Refused {
        code: String,
        message: String,
        text: String,
    },
    /// The turn ran (its error, if any, was already sent as `Event::Error`). `model_calls`
    /// counts every request it sent to the model: its own calls, its subagents', a summary's,
    /// and each one sent again after a transient failure or a cut stream.
    Completed {
        stop_reason: StopReason,
        model_calls: u64,
    },
}

impl TurnOutcome {
    /// The event that closes the turn for a front-end.
    pub(crate) fn into_event(self, usage: pablo_protocol::Usage) -> Event {
        match self {
            TurnOutcome::Refused {
                code,
                message,
                text,
            } => Event::TurnRefused {
                code,
                message,
                text,
            },
            TurnOutcome::Completed {
                stop_reason,
                model_calls,
            } => Event::TurnCompleted {
                stop_reason,
                usage,
                model_calls: Some(model_calls),
            },
        }
    }
}

/// Runs one turn of `c` to its end: attachments, the prompt, then model calls and tool calls
/// until the model stops, the budget is spent or `cancel` fires; `subagents` starts the
/// subagents of its `agent.task` calls. The event that closes the turn for a front-end
/// ([`TurnOutcome::into_event`]) is the caller's to send: a subagent's turn does not end the
/// person's.
pub(crate) async fn run_turn(
    c: &mut Conversation,
    subagents: &dyn Subagents,
    input: TurnInput,
    cancel: CancellationToken,
) -> TurnOutcome {
    let span = pablo_telemetry::turn_span();
    let started = Instant::now();
    let calls_before = (c.spend.budget.model_requests(), c.spend.budget.tool_calls());
    if let Err(refused) = send_prompt(c, input).await {
        return refused;
    }
    // The run deadline bounds each turn (`pablo run` has exactly one; an interactive session
    // that sat idle for an hour must not have its next turn cut at once). It cancels like an
    // interrupt, so the running tool is awaited, and then ends the turn as a spent budget.
    let (deadline_hit, timer) = deadline_timer(&cancel, c.limits.run_deadline);
    let mut end = turn_steps(c, subagents, &cancel)
        .instrument(span.clone())
        .await;
    // The person's `stop` hooks may send the model back to work, a few times at most.
    let mut continuations = 0;
    while matches!(end, Ok(StopReason::EndTurn)) && !cancel.is_cancelled() {
        let Some(reason) = hooks(c).stop(continuations).await else {
            break;
        };
        continuations += 1;
        c.messages.push(Message::user(reason));
        end = turn_steps(c, subagents, &cancel)
            .instrument(span.clone())
            .await;
    }
    // Every path the turn changed, whoever changed it, before the turn ends.
    let changed = std::mem::take(&mut c.turn_changed);
    let notes = hooks(c).file_changed(changed).await;
    c.hook_notes.extend(notes);
    timer.abort();
    if deadline_hit.load(Ordering::Relaxed)
        && matches!(&end, Err(e) if e.stop_reason == StopReason::Cancelled)
    {
        end = Err(TurnEnd::budget(
            ErrorCode::DeadlineExceeded,
            format!(
                "the run deadline of {} s was reached; the turn was stopped",
                c.limits.run_deadline.as_secs()
            ),
        ));
    }
    let stop_reason = match end {
        Ok(r) => r,
        Err(end) => {
            if let Some((code, message)) = end.error {
                c.outlet.emit(Event::Error {
                    code: code.into(),
                    message,
                });
            }
            end.stop_reason
        }
    };
    let model_calls = c.spend.budget.model_requests() - calls_before.0;
    span.record("model_calls", model_calls);
    span.record("tool_calls", c.spend.budget.tool_calls() - calls_before.1);
    span.record("stop_reason", format!("{stop_reason:?}"));
    span.record("duration_ms", started.elapsed().as_millis() as u64);
    hooks(c).notify("turn_ended", format!("the turn ended ({stop_reason:?})"));
    TurnOutcome::Completed {
        stop_reason,
        model_calls,
    }
}

/// The prompt joins the conversation: its attachments read, the person's `user_prompt_submit`
/// hooks asked, the notes that ride with it added and the turn's checkpoint opened. `Err` is
/// the refusal that ends the turn before anything is sent.
async fn send_prompt(c: &mut Conversation, input: TurnInput) -> Result<(), TurnOutcome> {
    let TurnInput {
        text,
        images: given_images,
    } = input;
    // Attachments are read before anything is sent: an image that cannot go refuses the turn,
    // and the person gets the prompt back to change it.
    let profile = c.model.client.profile();
    let target = attach::Target {
        provider: c.model.client.provider(),
        model: c.model.client.model(),
        takes_images: profile.images,
    };
    let shared = c.outlet.shared();
    let attached = attach::attach(&shared.host, &shared.policy, &text, &target)
        .and_then(|a| attach::with_given_images(a, given_images, &target));
    let attached = match attached {
        Ok(a) => a,
        Err(e) => {
            tracing::info!(code = e.code().as_str(), "turn refused");
            return Err(TurnOutcome::Refused {
                code: e.code().to_string(),
                message: e.to_string(),
                text,
            });
        }
    };
    // The person's `user_prompt_submit` hooks may stop the prompt (it comes back to them) or
    // add context to it.
    let (hook_context, hook_runs) = match hooks(c).prompt(&text).await {
        PromptGate::Blocked { hook, reason } => {
            return Err(TurnOutcome::Refused {
                code: ErrorCode::HookBlocked.as_str().into(),
                message: format!("the prompt was blocked by hook {hook}: {reason}"),
                text,
            });
        }
        PromptGate::Go { context, runs } => (context, runs),
    };
    c.outlet.emit(Event::UserMessage { text: text.clone() });
    // The turn's checkpoint keeps the prompt as the person wrote it (a rewind gives it back).
    let prompt = text.clone();
    // Notes of hooks since the last prompt (`session_start`, `file_changed`) ride with it.
    let text = with_hook_text(text, std::mem::take(&mut c.hook_notes));
    let attach::Attached {
        files,
        images,
        notes,
    } = attached;
    for message in notes {
        c.outlet.emit(Event::Warning { message });
    }
    let text = attach::with_images(&attach::with_attachments(&text, &files), &images);
    let message_images: Vec<pablo_model::Image> = images.iter().map(|i| i.image.clone()).collect();
    if !files.is_empty() || !images.is_empty() {
        c.outlet.emit(Event::Attachments { files, images });
    }
    for ran in &hook_runs {
        let context = ran.answer.context.clone();
        hooks(c).emit_hook(HookEvent::UserPromptSubmit, ran, None, None, context);
    }
    let text = with_hook_text(text, hook_context);
    let now = c.place.policy().mode();
    let mut text = text;
    // The mode's change since the last turn, and `$NAME` of an installed skill (the model is
    // asked to load it): notes after the prompt, journaled for resume.
    let notes = [
        mode::turn_note(c.last_turn_mode, now).map(str::to_string),
        pablo_tools::skill_load::mention_note(&prompt, c.catalog.skills()),
    ];
    for note in notes.into_iter().flatten() {
        text = format!("{text}\n\n{note}");
        c.outlet.emit(Event::PromptNote { note });
    }
    c.last_turn_mode = now;
    // A subagent's changes belong to the parent's turn: it opens no checkpoint of its own.
    let text = if c.outlet.scope().is_some() {
        text
    } else {
        checkpoints::open(c.outlet.shared().checkpoints.as_ref(), &prompt, text)
    };
    c.messages.push(Message::User {
        text,
        images: message_images,
    });
    pablo_model::drop_repeated_prompt(&mut c.messages);
    Ok(())
}

/// Model call, tools, model call, … until the model stops asking for tools.
async fn turn_steps(
    c: &mut Conversation,
    subagents: &dyn Subagents,
    cancel: &CancellationToken,
) -> Result<StopReason, TurnEnd> {
    // A "context too long" refusal is answered once per step: make room, try again.
    let mut retried_overflow = false;
    loop {
        if cancel.is_cancelled() {
            return Err(TurnEnd::cancelled());
        }
        check_events(c.outlet.shared(), &c.limits)?;
        if let Some(spent) = spent_before_model_call(&c.spend.budget, &c.limits) {
            return Err(spent);
        }
        let (mut x, h) = exchange(c);
        compaction::fit_context(&mut x, &h, cancel, false).await;
        let ModelTurn {
            text,
            calls,
            stop,
            reasoning,
            searches,
        } = match x.call_model(cancel).await {
            Ok(t) => t,
            Err(TurnEnd {
                overflow: Some(message),
                ..
            }) if !retried_overflow => {
                retried_overflow = true;
                compaction::recover_overflow(&mut x, &h, &message, cancel).await;
                continue;
            }
            Err(end) => return Err(end),
        };
        retried_overflow = false;
        if !reasoning.is_empty() {
            c.outlet.emit(Event::ReasoningCompleted {
                blocks: reasoning.clone(),
            });
        }
        c.outlet.emit(Event::MessageCompleted {
            text: text.clone(),
            tool_calls: calls.clone(),
        });
        c.messages.push(Message::Assistant {
            text,
            tool_calls: calls.clone(),
            reasoning,
            searches,
        });
        if calls.is_empty() {
            return Ok(match stop {
                ModelStopReason::MaxTokens => StopReason::MaxTokens,
                _ => StopReason::EndTurn,
            });
        }
        run_calls(pipeline(c, subagents), calls, cancel).await?;
        if cancel.is_cancelled() {
            return Err(TurnEnd::cancelled());
        }
    }
}

/// The tool calls of one model response, in order; each one the turn stopped before is
/// answered as not run. `Err` is the turn's end (an interrupt, a budget spent).
async fn run_calls(
    mut calls_of: Pipeline<'_>,
    calls: Vec<pablo_protocol::ToolCall>,
    cancel: &CancellationToken,
) -> Result<(), TurnEnd> {
    let mut end: Option<TurnEnd> = None;
    // The response's subagents start at once and run side by side; their results are awaited
    // in order below.
    let mut early = calls_of.begin_subagents(&calls, cancel).await;
    for call in calls {
        let tool = calls_of.tool_label(&call);
        let outcome = if let Some(begun) = early.remove(&call.id) {
            calls_of.finish_call(&call, begun).await
        } else if end.is_some() {
            calls_of.report_unrun(
                &call,
                ToolFailure::new(
                    ErrorCode::NotRun,
                    format!("{tool} was not run because the turn stopped before it"),
                ),
            )
        } else if cancel.is_cancelled() {
            end = Some(TurnEnd::cancelled());
            calls_of.report_unrun(
                &call,
                ToolFailure::new(
                    ErrorCode::Cancelled,
                    format!("{tool} was not run: the turn was interrupted"),
                ),
            )
        } else if let Some((stop, f)) =
            no_model_call_to_read(&calls_of.spend.budget, calls_of.limits, &tool)
        {
            end = Some(stop);
            calls_of.report_unrun(&call, f)
        } else {
            calls_of.run_call(&call, cancel).await
        };
        // A session budget spent (by this call, or by a subagent) is the turn's end.
        if end.is_none()
            && let Some((code, message)) = limits::spent_budget(&outcome)
        {
            end = Some(TurnEnd::budget(code, message));
        }
    }
    match end {
        Some(end) => Err(end),
        None => Ok(()),
    }
}

/// The budget that allows no further model call, if one is spent: the model-call budget or the
/// spend cap.
fn spent_before_model_call(budget: &Budget, limits: &Limits) -> Option<TurnEnd> {
    if let Some(spent) = budget.model_calls_exhausted(limits) {
        return Some(TurnEnd::budget(
            ErrorCode::ModelCallBudgetExhausted,
            format!("{} is used up", spent.describe("model-call")),
        ));
    }
    let reached = budget.spend_cap_reached(limits)?;
    Some(TurnEnd::budget(
        ErrorCode::CostBudgetExhausted,
        reached.describe(),
    ))
}

/// When no model call is left to read `tool`'s result (the model-call budget or the spend cap
/// is spent), the turn's end and the tool's refusal: nobody would read what it returns, so it
/// is not started.
fn no_model_call_to_read(
    budget: &Budget,
    limits: &Limits,
    tool: &str,
) -> Option<(TurnEnd, ToolFailure)> {
    if !budget.model_calls_left(limits) {
        return Some((
            TurnEnd::budget(
                ErrorCode::ModelCallBudgetExhausted,
                "the model-call budget is used up, so no further tool is started".to_string(),
            ),
            ToolFailure::new(
                ErrorCode::ModelCallBudgetExhausted,
                format!("{tool} was not run: no model call is left to read its result"),
            ),
        ));
    }
    let reached = budget.spend_cap_reached(limits)?;
    Some((
        TurnEnd::budget(
            ErrorCode::CostBudgetExhausted,
            format!("{}, so no further tool is started", reached.describe()),
        ),
        ToolFailure::new(
            ErrorCode::CostBudgetExhausted,
            format!("{tool} was not run: the spend cap leaves no model call to read its result"),
        ),
    ))
}

fn check_events(shared: &Shared, limits: &Limits) -> Result<(), TurnEnd> {
    let n = shared.emitted();
    if n > limits.max_native_events {
        return Err(TurnEnd::budget(
            ErrorCode::EventLimitExceeded,
            format!(
                "the session emitted {n} events, over the limit of {}",
                limits.max_native_events
            ),
        ));
    }
    Ok(())
}

/// What a model call (or a compaction) borrows of `c`, and the hooks it may tell.
fn exchange(c: &mut Conversation) -> (Exchange<'_>, HookRunner<'_>) {
    let Conversation {
        session_id,
        outlet,
        place,
        model,
        catalog,
        limits,
        system_prompt,
        messages,
        spend,
        ..
    } = c;
    let (session_id, outlet): (&String, _) = (session_id, outlet);
    let x = Exchange {
        seat: model,
        messages,
        spend,
        session_id,
        system_prompt,
        catalog,
        limits,
        outlet,
    };
    (x, HookRunner::new(session_id, outlet, place))
}

/// What the tool calls of one model response borrow of `c`; `subagents` starts those of
/// `agent.task`.
fn pipeline<'a>(c: &'a mut Conversation, subagents: &'a dyn Subagents) -> Pipeline<'a> {
    let Conversation {
        session_id,
        outlet,
        place,
        model,
        catalog,
        limits,
        system_prompt,
        messages,
        spend,
        turn_changed,
        shell_reads_only,
        subagent_slots,
        ..
    } = c;
    let (outlet, place): (&_, &_) = (outlet, place);
    Pipeline {
        outlet,
        place,
        hooks: HookRunner::new(session_id, outlet, place),
        catalog,
        limits,
        spend,
        messages,
        changed: turn_changed,
        shell_reads_only: *shell_reads_only,
        subagents: Delegation {
            runner: subagents,
            model: &model.client,
            system_prompt,
            slots: subagent_slots,
        },
    }
}

/// The person's hooks as `c` runs them.
fn hooks(c: &Conversation) -> HookRunner<'_> {
    HookRunner::new(&c.session_id, &c.outlet, &c.place)
}

/// `/compact [focus]` on the idle conversation: its whole history becomes one summary, now.
pub(crate) async fn compact_now(c: &mut Conversation, focus: Option<&str>) {
    let (mut x, h) = exchange(c);
    compaction::compact_now(&mut x, &h, focus).await;
}

/// `session_start` hooks, before the session's first turn: their context goes with the first
/// prompt.
pub(crate) async fn session_start(c: &mut Conversation) {
    let notes = hooks(c).session_start(!c.messages.is_empty()).await;
    c.hook_notes.extend(notes);
}

/// The conversation answers with `model` from the next call on (its window and prices from
/// here on; the calls so far keep theirs), which the front-ends are shown at once.
pub(crate) fn switch_model(c: &mut Conversation, model: Arc<dyn ModelClient>) {
    c.model.switch(model);
    c.outlet.emit(c.estimated_usage());
}

/// Cancels the turn when `limit` has passed, and says so in the flag it returns (so the end can
/// be told from an interrupt); abort the task when the turn ends first.
fn deadline_timer(
    cancel: &CancellationToken,
    limit: std::time::Duration,
) -> (
    Arc<std::sync::atomic::AtomicBool>,
    tokio::task::JoinHandle<()>,
) {
    let hit = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (cancel, flag) = (cancel.clone(), hit.clone());
    let task = tokio::spawn(async move {
        tokio::time::sleep(limit).await;
        flag.store(true, Ordering::Relaxed);
        cancel.cancel();
    });
    (hit, task)
}
