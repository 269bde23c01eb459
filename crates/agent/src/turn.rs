//! The turn loop: [`Conversation::run_turn`] is one turn from the person's prompt to the model's
//! last answer: each model call, then each tool call it asked for (validate → preview → decide →
//! commit, one at a time), until the model stops asking for tools. A cancelled turn is never
//! dropped half-way: it still awaits the tool that is running (tools watch the token and clean
//! up), answers every pending call with a result, and ends as `Cancelled`. [`super::task`] runs it
//! as a task of its own.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::attach;
use super::conversation::{Conversation, ModelTurn, TurnEnd};
use super::hooks::PromptGate;
use super::limits;
use super::mode;
use pablo_core::{Coded, ErrorCode, ToolFailure};
use pablo_hooks::HookEvent;
use pablo_model::{Message, ModelStopReason};
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

impl Conversation {
    /// Runs one turn of the conversation to its end: attachments, the prompt, then model calls
    /// and tool calls until the model stops, the budget is spent or `cancel` fires. The event
    /// that closes the turn for a front-end ([`TurnOutcome::into_event`]) is the caller's to
    /// send: a subagent's turn does not end the person's.
    pub(crate) async fn run_turn(
        &mut self,
        input: TurnInput,
        cancel: CancellationToken,
    ) -> TurnOutcome {
        let TurnInput {
            text,
            images: given_images,
        } = input;
        let span = pablo_telemetry::turn_span();
        let started = Instant::now();
        let calls_before = (self.budget.model_requests(), self.budget.tool_calls());
        // Attachments are read before anything is sent: an image that cannot go refuses the
        // turn, and the person gets the prompt back to change it.
        let profile = self.model.profile();
        let target = attach::Target {
            provider: self.model.provider(),
            model: self.model.model(),
            takes_images: profile.images,
        };
        let attached = attach::attach(&self.shared.host, &self.shared.policy, &text, &target)
            .and_then(|a| attach::with_given_images(a, given_images, &target));
        let attached = match attached {
            Ok(a) => a,
            Err(e) => {
                tracing::info!(code = e.code().as_str(), "turn refused");
                return TurnOutcome::Refused {
                    code: e.code().to_string(),
                    message: e.to_string(),
                    text,
                };
            }
        };
        // The person's `user_prompt_submit` hooks may stop the prompt (it comes back to them)
        // or add context to it.
        let (hook_context, hook_runs) = match self.prompt_hooks(&text).await {
            PromptGate::Blocked { hook, reason } => {
                return TurnOutcome::Refused {
                    code: ErrorCode::HookBlocked.as_str().into(),
                    message: format!("the prompt was blocked by hook {hook}: {reason}"),
                    text,
                };
            }
            PromptGate::Go { context, runs } => (context, runs),
        };
        self.emit(Event::UserMessage { text: text.clone() });
        // The turn's checkpoint keeps the prompt as the person wrote it (a rewind gives it back).
        let prompt = text.clone();
        // Notes of hooks since the last prompt (`session_start`, `file_changed`) ride with it.
        let text = with_hook_text(text, std::mem::take(&mut self.hook_notes));
        let attach::Attached {
            files,
            images,
            notes,
        } = attached;
        for message in notes {
            self.emit(Event::Warning { message });
        }
        let text = attach::with_images(&attach::with_attachments(&text, &files), &images);
        let message_images: Vec<pablo_model::Image> =
            images.iter().map(|i| i.image.clone()).collect();
        if !files.is_empty() || !images.is_empty() {
            self.emit(Event::Attachments { files, images });
        }
        for ran in &hook_runs {
            let context = ran.answer.context.clone();
            self.emit_hook(HookEvent::UserPromptSubmit, ran, None, None, context);
        }
        let text = with_hook_text(text, hook_context);
        let now = self.policy().mode();
        let mut text = text;
        // The mode's change since the last turn, and `$NAME` of an installed skill (the model
        // is asked to load it): notes after the prompt, journaled for resume.
        let notes = [
            mode::turn_note(self.last_turn_mode, now).map(str::to_string),
            pablo_tools::skill_load::mention_note(&prompt, self.catalog.skills()),
        ];
        for note in notes.into_iter().flatten() {
            text = format!("{text}\n\n{note}");
            self.emit(Event::PromptNote { note });
        }
        self.last_turn_mode = now;
        // A subagent's changes belong to the parent's turn: it opens no checkpoint of its own.
        let text = if self.scope.is_some() {
            text
        } else {
            self.open_checkpoint(&prompt, text)
        };
        self.messages.push(Message::User {
            text,
            images: message_images,
        });
        pablo_model::drop_repeated_prompt(&mut self.messages);
        // The run deadline bounds each turn (`pablo run` has exactly one; an interactive session
        // that sat idle for an hour must not have its next turn cut at once). It cancels like an
        // interrupt, so the running tool is awaited, and then ends the turn as a spent budget.
        let (deadline_hit, timer) = deadline_timer(&cancel, self.limits.run_deadline);
        let mut end = self.turn_steps(&cancel).instrument(span.clone()).await;
        // The person's `stop` hooks may send the model back to work, a few times at most.
        let mut continuations = 0;
        while matches!(end, Ok(StopReason::EndTurn)) && !cancel.is_cancelled() {
            let Some(reason) = self.stop_hooks(continuations).await else {
                break;
            };
            continuations += 1;
            self.messages.push(Message::user(reason));
            end = self.turn_steps(&cancel).instrument(span.clone()).await;
        }
        // Every path the turn changed, whoever changed it, before the turn ends.
        self.file_changed_hooks().await;
        timer.abort();
        if deadline_hit.load(Ordering::Relaxed)
            && matches!(&end, Err(e) if e.stop_reason == StopReason::Cancelled)
        {
            end = Err(TurnEnd::budget(
                ErrorCode::DeadlineExceeded,
                format!(
                    "the run deadline of {} s was reached; the turn was stopped",
                    self.limits.run_deadline.as_secs()
                ),
            ));
        }
        let stop_reason = match end {
            Ok(r) => r,
            Err(end) => {
                if let Some((code, message)) = end.error {
                    self.emit(Event::Error {
                        code: code.into(),
                        message,
                    });
                }
                end.stop_reason
            }
        };
        let model_calls = self.budget.model_requests() - calls_before.0;
        span.record("model_calls", model_calls);
        span.record("tool_calls", self.budget.tool_calls() - calls_before.1);
        span.record("stop_reason", format!("{stop_reason:?}"));
        span.record("duration_ms", started.elapsed().as_millis() as u64);
        self.notify_hooks("turn_ended", format!("the turn ended ({stop_reason:?})"));
        TurnOutcome::Completed {
            stop_reason,
            model_calls,
        }
    }

    /// Model call, tools, model call, … until the model stops asking for tools.
    async fn turn_steps(&mut self, cancel: &CancellationToken) -> Result<StopReason, TurnEnd> {
        // A "context too long" refusal is answered once per step: make room, try again.
        let mut retried_overflow = false;
        loop {
            if cancel.is_cancelled() {
                return Err(TurnEnd::cancelled());
            }
            self.check_events()?;
            if let Some(spent) = self.spent_before_model_call() {
                return Err(spent);
            }
            self.fit_context(cancel, false).await;
            let ModelTurn {
                text,
                calls,
                stop,
                reasoning,
                searches,
            } = match self.call_model(cancel).await {
                Ok(t) => t,
                Err(TurnEnd {
                    overflow: Some(message),
                    ..
                }) if !retried_overflow => {
                    retried_overflow = true;
                    self.recover_overflow(&message, cancel).await;
                    continue;
                }
                Err(end) => return Err(end),
            };
            retried_overflow = false;
            if !reasoning.is_empty() {
                self.emit(Event::ReasoningCompleted {
                    blocks: reasoning.clone(),
                });
            }
            self.emit(Event::MessageCompleted {
                text: text.clone(),
                tool_calls: calls.clone(),
            });
            self.messages.push(Message::Assistant {
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
            let mut end: Option<TurnEnd> = None;
            // The response's subagents start at once and run side by side; their results are
            // awaited in order below.
            let mut early = self.begin_subagents(&calls, cancel).await;
            for call in calls {
                let tool = self.tool_label(&call);
                let outcome = if let Some(begun) = early.remove(&call.id) {
                    self.finish_call(&call, begun).await
                } else if end.is_some() {
                    self.report_unrun(
                        &call,
                        ToolFailure::new(
                            ErrorCode::NotRun,
                            format!("{tool} was not run because the turn stopped before it"),
                        ),
                    )
                } else if cancel.is_cancelled() {
                    end = Some(TurnEnd::cancelled());
                    self.report_unrun(
                        &call,
                        ToolFailure::new(
                            ErrorCode::Cancelled,
                            format!("{tool} was not run: the turn was interrupted"),
                        ),
                    )
                } else if let Some((stop, f)) = self.no_model_call_to_read(&tool) {
                    end = Some(stop);
                    self.report_unrun(&call, f)
                } else {
                    self.run_call(&call, cancel).await
                };
                // A session budget spent (by this call, or by a subagent) is the turn's end.
                if end.is_none()
                    && let Some((code, message)) = limits::spent_budget(&outcome)
                {
                    end = Some(TurnEnd::budget(code, message));
                }
            }
            if let Some(end) = end {
                return Err(end);
            }
            if cancel.is_cancelled() {
                return Err(TurnEnd::cancelled());
            }
        }
    }

    /// The budget that allows no further model call, if one is spent: the model-call budget or
    /// the spend cap.
    fn spent_before_model_call(&self) -> Option<TurnEnd> {
        if let Some(spent) = self.budget.model_calls_exhausted(&self.limits) {
            return Some(TurnEnd::budget(
                ErrorCode::ModelCallBudgetExhausted,
                format!("{} is used up", spent.describe("model-call")),
            ));
        }
        let reached = self.budget.spend_cap_reached(&self.limits)?;
        Some(TurnEnd::budget(
            ErrorCode::CostBudgetExhausted,
            reached.describe(),
        ))
    }

    /// When no model call is left to read `tool`'s result (the model-call budget or the spend
    /// cap is spent), the turn's end and the tool's refusal: nobody would read what it returns,
    /// so it is not started.
    fn no_model_call_to_read(&self, tool: &str) -> Option<(TurnEnd, ToolFailure)> {
        if !self.budget.model_calls_left(&self.limits) {
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
        let reached = self.budget.spend_cap_reached(&self.limits)?;
        Some((
            TurnEnd::budget(
                ErrorCode::CostBudgetExhausted,
                format!("{}, so no further tool is started", reached.describe()),
            ),
            ToolFailure::new(
                ErrorCode::CostBudgetExhausted,
                format!(
                    "{tool} was not run: the spend cap leaves no model call to read its result"
                ),
            ),
        ))
    }

    fn check_events(&self) -> Result<(), TurnEnd> {
        let n = self.shared.emitted();
        if n > self.limits.max_native_events {
            return Err(TurnEnd::budget(
                ErrorCode::EventLimitExceeded,
                format!(
                    "the session emitted {n} events, over the limit of {}",
                    self.limits.max_native_events
                ),
            ));
        }
        Ok(())
    }
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
