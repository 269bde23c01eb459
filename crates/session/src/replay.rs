//! From journaled events back to the state a resumed session starts with.
//!
//! The conversation is rebuilt the way the agent loop builds it (crates/agent/src/lib.rs):
//! `UserMessage` → a user message, `MessageCompleted` → one assistant message with its tool calls
//! (and the reasoning blocks of the `ReasoningCompleted` and the searches of the `WebSearch`s
//! just before it), `ToolCallEnd` → a tool
//! message whose content is `serde_json::to_string(&result)`; `ContextCleared` and
//! `ContextCompacted` make the same replacements the agent made, at the same point. Providers
//! refuse a history where a tool call has no result, so a call the crash cut off (announced by a
//! `MessageCompleted`, never ended) gets an [`INTERRUPTED_CODE`] result at the point where the
//! process stopped: when the next `SessionStarted` (the restart) or `UserMessage` appears, or at
//! the end of the journal. That rule is deterministic, so loading the same journal twice, before
//! and after a resumed session appended to it, rebuilds the same prefix.

use std::collections::BTreeMap;

use super::checkpoint::History;
use super::checkpoint::history::prompt_with_note;
use super::format_ms;
use super::load::{LoadWarning, LoadedJournal};
use pablo_core::{ErrorCode, ToolFailure, tool_message};
use pablo_model::{Message, apply_clearing, drop_repeated_prompt};
use pablo_policy::{PolicyEngine, PolicyError};
use pablo_protocol::{
    ApprovalAnswer, Event, PlanItem, Preview, ReasoningBlock, SessionSummary, ToolCall,
    ToolOutcome, Usage,
};

/// The error code given to tool calls that a crash or kill cut off.
/// Whether `event` comes after a prompt is whole (its attachments and notes joined it), so that
/// a prompt re-sent after a failed turn can be told from the one before it.
fn closes_a_prompt(event: &Event) -> bool {
    matches!(
        event,
        Event::UserMessage { .. }
            | Event::MessageCompleted { .. }
            | Event::TurnCompleted { .. }
            | Event::SessionStarted { .. }
            | Event::ContextCompacted { .. }
            | Event::ContextCleared { .. }
            | Event::Hook { .. }
    ) && !matches!(event, Event::Hook { event, .. } if event == "user_prompt_submit")
}

/// The error code of the results a resume gives the tool calls a crash cut off.
#[cfg(any(test, feature = "test-support"))]
pub const INTERRUPTED_CODE: &str = ErrorCode::Interrupted.as_str();

/// The todo checklist as last updated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub(crate) explanation: Option<String>,
    /// The checklist's items, in order.
    pub items: Vec<PlanItem>,
}

impl Plan {
    /// The event that shows this checklist (emit it when a resumed session starts).
    pub(crate) fn to_event(&self) -> Event {
        Event::PlanUpdate {
            explanation: self.explanation.clone(),
            items: self.items.clone(),
        }
    }
}

/// An "allow always" answer and the preview it was given for.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedApproval {
    pub(crate) call_id: String,
    pub(crate) tool: String,
    pub(crate) preview: Preview,
}

/// A tool call that never got its result because pablo stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterruptedCall {
    /// The call's id, as the model gave it.
    pub call_id: String,
    /// Provider name as the model called it.
    pub(crate) tool: String,
    /// Whether it had started (passed validation and was announced) before pablo stopped.
    pub began: bool,
}

/// Everything a resumed session starts from.
#[derive(Debug, Clone)]
pub struct ResumeState {
    /// Hand this to `AgentSetup::history` (take it: `Launch::resume_setup` does).
    pub history: Vec<Message>,
    /// The latest checklist, if the session had one.
    pub plan: Option<Plan>,
    /// Every journaled event in order, for front-ends to redraw the transcript (none when each
    /// was handed over as it was read: `Launch::resume_setup`).
    pub transcript: Vec<Event>,
    /// Calls cut off by the last stop (those of earlier restarts are in `history` already).
    pub interrupted: Vec<InterruptedCall>,
    /// Background sessions that were running when pablo stopped; their processes are gone.
    pub lost_background: Vec<SessionSummary>,
    /// "Allow always" answers given in this session, oldest first; re-apply them with
    /// [`ResumeState::restore_approvals`] so the resumed session does not ask again.
    pub approvals: Vec<SavedApproval>,
    /// Token usage over the whole session. No front-end reads it (they sum the replayed `Usage`
    /// events as they draw them); the journal tests check it.
    #[cfg_attr(not(test), allow(dead_code))]
    pub usage: Usage,
    /// Completed turns.
    pub turns: usize,
    /// What loading skipped (torn or malformed lines).
    pub warnings: Vec<LoadWarning>,
    /// The session's checkpoints: each turn's changed files and what they were before.
    pub checkpoints: History,
}

impl ResumeState {
    /// Sentences for the person about what resuming could not restore, in order: skipped journal
    /// lines, interrupted calls, background sessions that did not survive.
    pub fn notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = self
            .warnings
            .iter()
            .map(|w| format!("session journal {w}"))
            .collect();
        for c in &self.interrupted {
            notes.push(format!(
                "tool call {} ({}) was interrupted when pablo stopped; the model is told so",
                c.call_id, c.tool
            ));
        }
        for s in &self.lost_background {
            notes.push(format!(
                "background session {} (`{}`, started {}) did not survive the restart; its \
                 output log remains in the session directory",
                s.session_id,
                s.command,
                format_ms(s.started_ms)
            ));
        }
        notes
    }

    /// Gives the session's "allow always" answers back to the policy engine of the resumed
    /// session. Returns the rule ids saved.
    pub fn restore_approvals(&self, policy: &PolicyEngine) -> Result<Vec<String>, PolicyError> {
        let mut ids = Vec::new();
        for a in &self.approvals {
            ids.extend(policy.remember(&a.tool, &a.preview)?);
        }
        Ok(ids)
    }

    /// Events a front-end shows first when the resumed session starts: one warning per note,
    /// then the checklist.
    pub fn start_events(&self) -> Vec<Event> {
        let mut out: Vec<Event> = self
            .notes()
            .into_iter()
            .map(|message| Event::Warning { message })
            .collect();
        if let Some(plan) = &self.plan {
            out.push(plan.to_event());
        }
        out
    }
}

/// The result an interrupted call gets, exactly as the model will read it.
pub(crate) fn interrupted_outcome(tool: &str) -> ToolOutcome {
    ToolFailure::new(
        ErrorCode::Interrupted,
        format!(
            "{tool} was interrupted: pablo stopped before the call finished, so its result is \
             unknown; check the workspace before relying on its effects"
        ),
    )
    .into_outcome()
}

/// Rebuilds the resume state from a loaded journal, its events kept as the transcript.
pub(crate) fn replay(mut journal: LoadedJournal) -> ResumeState {
    let mut replaying = Replaying::default();
    let mut transcript = Vec::with_capacity(journal.events.len());
    for stamped in std::mem::take(&mut journal.events) {
        replaying.apply(&stamped.event);
        transcript.push(stamped.event);
    }
    replaying.finish(journal, transcript)
}

/// A resume state rebuilt an event at a time, in journal order ([`Replaying::apply`]), then
/// completed from what else the journal held ([`Replaying::finish`]).
#[derive(Default)]
pub(crate) struct Replaying(Replayer);

impl Replaying {
    pub(crate) fn apply(&mut self, event: &Event) {
        self.0.apply(event);
    }

    /// The state, with the warnings of `journal` (whose events were applied) and
    /// the events kept for a front-end.
    pub(crate) fn finish(self, journal: LoadedJournal, transcript: Vec<Event>) -> ResumeState {
        let mut r = self.0;
        drop_repeated_prompt(&mut r.history);
        let interrupted = r.close_pending();
        r.checkpoints
            .keep_hook_notes(std::mem::take(&mut r.hook_notes));
        let lost_background = r.background.into_values().filter(|s| s.running).collect();
        ResumeState {
            history: r.history,
            plan: r.plan,
            transcript,
            interrupted,
            lost_background,
            approvals: r.approvals,
            usage: r.usage,
            turns: r.turns,
            warnings: journal.warnings,
            checkpoints: r.checkpoints,
        }
    }
}

/// The conversation and checkpoints that `events` (a journal's, in order) build: what a forked
/// session continues from.
pub fn rebuild(events: &[Event]) -> (Vec<Message>, History) {
    let mut r = Replayer::default();
    for e in events {
        r.apply(e);
    }
    drop_repeated_prompt(&mut r.history);
    r.close_pending();
    r.checkpoints
        .keep_hook_notes(std::mem::take(&mut r.hook_notes));
    (r.history, r.checkpoints)
}

#[derive(Default)]
struct Replayer {
    history: Vec<Message>,
    /// Calls of the last assistant message still waiting for a result, in call order.
    pending: Vec<(ToolCall, bool)>,
    /// Reasoning announced for the next assistant message.
    reasoning: Vec<ReasoningBlock>,
    /// Searches the provider ran for the next assistant message.
    searches: Vec<pablo_protocol::WebSearch>,
    plan: Option<Plan>,
    background: BTreeMap<String, SessionSummary>,
    /// Approval prompts not yet answered, by call id.
    asked: BTreeMap<String, (String, Preview)>,
    approvals: Vec<SavedApproval>,
    usage: Usage,
    turns: usize,
    checkpoints: History,
    /// Hooks' notes (`session_start`, `file_changed`) that ride with the next prompt.
    hook_notes: Vec<String>,
    /// The last event was a `stop` hook's reason, sent as a message the next one joins.
    stop_open: bool,
}

impl Replayer {
    /// What a hook's context did to the conversation, done again (agent/hooks.rs).
    /// A prompt: what was pending is closed, and the restore's note and the hooks' notes that
    /// rode with it are put back in front of and after it, as the agent sent it.
    fn apply_user_message(&mut self, text: &str) {
        self.close_pending();
        self.reasoning.clear();
        self.searches.clear();
        let note = self.checkpoints.take_note();
        let mut text = prompt_with_note(note.as_deref(), text);
        for n in self.hook_notes.drain(..) {
            text.push_str("\n\n");
            text.push_str(&n);
        }
        self.history.push(Message::user(text));
    }

    /// The prompt's attachments, described in its text; an image whose bytes are gone is named
    /// instead of sent again.
    fn apply_attachments(
        &mut self,
        files: &[pablo_protocol::Attachment],
        images: &[pablo_protocol::ImageAttachment],
    ) {
        let Some(Message::User { text, images: sent }) = self.history.last_mut() else {
            return;
        };
        use pablo_protocol::describe::{with_attachments, with_images};
        *text = with_images(&with_attachments(text, files), images);
        for a in images {
            if a.image.is_loaded() {
                sent.push(a.image.clone());
            } else {
                text.push_str(&format!(
                    "\n[the image {} is no longer stored, so it is not shown again]",
                    a.path
                ));
            }
        }
    }

    fn apply_hook(&mut self, event: &str, context: Option<&str>) {
        let Some(context) = context else { return };
        match event {
            "user_prompt_submit" => {
                if let Some(Message::User { text, .. }) = self.history.last_mut() {
                    text.push_str("\n\n");
                    text.push_str(context);
                }
            }
            "stop" => match self.history.last_mut() {
                Some(Message::User { text, .. }) if self.stop_open => {
                    text.push('\n');
                    text.push_str(context);
                }
                _ => {
                    self.close_pending();
                    self.history.push(Message::user(context.to_string()));
                    self.stop_open = true;
                }
            },
            "session_start" | "file_changed" => self.hook_notes.push(context.to_string()),
            _ => {}
        }
    }

    /// An assistant message: with the reasoning and searches announced before it, and its calls
    /// waiting for their results.
    fn apply_message_completed(&mut self, text: &str, tool_calls: &[ToolCall]) {
        self.close_pending();
        self.history.push(Message::Assistant {
            text: text.to_string(),
            tool_calls: tool_calls.to_vec(),
            reasoning: std::mem::take(&mut self.reasoning),
            searches: std::mem::take(&mut self.searches),
        });
        self.pending = tool_calls.iter().map(|c| (c.clone(), false)).collect();
    }

    fn apply(&mut self, event: &Event) {
        // Once the prompt before is whole (its attachments and notes joined it), a copy of the
        // prompt before it goes, as the agent dropped it.
        if closes_a_prompt(event) {
            drop_repeated_prompt(&mut self.history);
        }
        self.checkpoints.apply(event);
        if !matches!(event, Event::Hook { .. }) {
            self.stop_open = false;
        }
        match event {
            Event::Hook { event, context, .. } => self.apply_hook(event, context.as_deref()),
            Event::SessionStarted { .. } => {
                // A restart: whatever was running died with the previous process.
                self.close_pending();
                self.background.clear();
                self.reasoning.clear();
                self.searches.clear();
            }
            Event::UserMessage { text } => self.apply_user_message(text),
            Event::PromptNote { note } => {
                if let Some(Message::User { text, .. }) = self.history.last_mut() {
                    text.push_str("\n\n");
                    text.push_str(note);
                }
            }
            Event::Attachments { files, images } => self.apply_attachments(files, images),
            Event::ReasoningCompleted { blocks } => self.reasoning = blocks.clone(),
            Event::WebSearch { search } => self.searches.push(search.clone()),
            Event::MessageCompleted { text, tool_calls } => {
                self.apply_message_completed(text, tool_calls)
            }
            Event::ToolCallBegin { call_id, .. } => {
                if let Some(p) = self.pending.iter_mut().find(|(c, _)| &c.id == call_id) {
                    p.1 = true;
                }
            }
            Event::ToolCallEnd {
                call_id, result, ..
            } => {
                if let Some(i) = self.pending.iter().position(|(c, _)| &c.id == call_id) {
                    // Results arrive in call order; anything before this one was skipped by a
                    // damaged line and still needs an answer for the history to be accepted.
                    for (c, began) in self.pending.drain(..i).collect::<Vec<_>>() {
                        self.push_interrupted(&c, began);
                    }
                    self.pending.remove(0);
                    self.history.push(Message::Tool {
                        call_id: call_id.clone(),
                        content: tool_message(result),
                    });
                }
            }
            Event::PlanUpdate { explanation, items } => {
                self.plan = Some(Plan {
                    explanation: explanation.clone(),
                    items: items.clone(),
                });
            }
            Event::Usage { total, .. } => self.usage = *total,
            Event::TurnCompleted { .. } => self.turns += 1,
            Event::Sessions { sessions } => {
                self.background = sessions
                    .iter()
                    .map(|s| (s.session_id.clone(), s.clone()))
                    .collect();
            }
            Event::SessionExited {
                session_id,
                exit_code,
            } => {
                if let Some(s) = self.background.get_mut(session_id) {
                    s.running = false;
                    s.exit_code = *exit_code;
                }
            }
            Event::ApprovalRequest {
                call_id,
                tool,
                preview,
                ..
            } => {
                self.asked
                    .insert(call_id.clone(), (tool.clone(), preview.clone()));
            }
            Event::ApprovalResolved { call_id, answer } => {
                if let Some((tool, preview)) = self.asked.remove(call_id)
                    && *answer == ApprovalAnswer::AllowAlways
                {
                    self.approvals.push(SavedApproval {
                        call_id: call_id.clone(),
                        tool,
                        preview,
                    });
                }
            }
            Event::ContextCompacted {
                summary,
                replaced_messages,
            } => {
                // The same replacement the agent made; pending calls cannot straddle it (it
                // happens between model calls, after every result is in).
                let n = (*replaced_messages).min(self.history.len());
                self.history.splice(..n, [Message::user(summary.clone())]);
            }
            Event::ContextCleared { cleared, .. } => apply_clearing(&mut self.history, cleared),
            // The provider refused an image: the agent dropped the conversation's images then,
            // and a resumed session must not send them again.
            Event::Error { code, .. } if *code == ErrorCode::ImageRefused => {
                pablo_model::drop_images(&mut self.history, pablo_model::IMAGE_REFUSED_NOTE);
            }
            Event::MessageDelta { .. }
            | Event::ReasoningDelta { .. }
            | Event::ContextUsage { .. }
            | Event::ToolCallRunning { .. }
            | Event::ToolOutputDelta { .. }
            | Event::ToolTerminal { .. }
            | Event::SessionOutput { .. }
            | Event::Rules { .. }
            | Event::Artifacts { .. }
            | Event::Memory { .. }
            | Event::FilesChanged { .. }
            | Event::Checkpoints { .. }
            | Event::RestorePlan { .. }
            | Event::Restored { .. }
            | Event::SessionForked { .. }
            | Event::McpServer { .. }
            | Event::McpQuestion { .. }
            | Event::McpQuestionClosed { .. }
            | Event::LanguageServers { .. }
            // What a server said of a change under review is for the reviewer; the model
            // reads the committed file's diagnostics in the result.
            | Event::PreviewDiagnostics { .. }
            | Event::Warning { .. }
            | Event::ModeChanged { .. }
            | Event::ModelChanged { .. }
            | Event::Error { .. }
            | Event::TurnRefused { .. }
            | Event::Retry { .. }
            | Event::AnswerRetried { .. }
            // A subagent's conversation is its own: the parent's history has its answer as the
            // result of its call, and its usage in the parent's next `Usage`.
            | Event::SubagentStarted { .. }
            | Event::Subagent { .. }
            | Event::SubagentFinished { .. }
            | Event::ShutdownComplete => {}
        }
    }

    fn push_interrupted(&mut self, call: &ToolCall, began: bool) -> InterruptedCall {
        self.history.push(Message::Tool {
            call_id: call.id.clone(),
            content: tool_message(&interrupted_outcome(&call.name)),
        });
        InterruptedCall {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            began,
        }
    }

    fn close_pending(&mut self) -> Vec<InterruptedCall> {
        let pending = std::mem::take(&mut self.pending);
        pending
            .into_iter()
            .map(|(c, began)| self.push_interrupted(&c, began))
            .collect()
    }
}
