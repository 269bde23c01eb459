//! How agent events change the state.

use super::super::cells::{Asked, CellKind, NoticeLevel, ToolCell, ToolStatus};
use super::super::info::Info;
use super::super::layers::{ApprovalView, ArtifactsView, Layer, MemoryView};
use super::super::restore::{RestoreView, RewindView};
use super::super::text::Output;
use super::AppState;
use pablo_core::ErrorCode;
use pablo_protocol::describe::ResultFact;
use pablo_protocol::{
    ApprovalAnswer, ArtifactSummary, Event, McpServerView, McpState, MemoryProposal, MemoryStatus,
    Preview, RestoreScope, StopReason, ToolOutcome,
};

/// What stays of an answered approval prompt: the answer in the past tense.
fn approval_record(answer: &ApprovalAnswer, asked: &Asked) -> String {
    match answer {
        ApprovalAnswer::AllowOnce => "allowed once".into(),
        ApprovalAnswer::AllowAlways => match asked.always_rule.as_deref() {
            Some(rule) => format!("allowed always: {rule}"),
            None => "allowed always".into(),
        },
        ApprovalAnswer::AllowHunks { hunks, notes } => {
            let of = asked.hunks;
            let mut record = format!(
                "allowed {} of {of} hunk{}",
                hunks.len(),
                if of == 1 { "" } else { "s" }
            );
            // The reasons given for the hunks left out stay with the decision.
            for n in notes {
                record.push_str(&format!(" · hunk {} dropped: {}", n.hunk + 1, n.note));
            }
            record
        }
        // The word is the code the call then gets.
        ApprovalAnswer::Reject { note: Some(note) } => format!("{}: {note}", ErrorCode::Rejected),
        ApprovalAnswer::Reject { note: None } => ErrorCode::Rejected.to_string(),
    }
}

impl AppState {
    pub(crate) fn apply(&mut self, event: Event) {
        // Anything that comes from the model ends the wait for a retry.
        if !matches!(
            event,
            Event::Retry { .. }
                | Event::SessionOutput { .. }
                | Event::Sessions { .. }
                | Event::SessionExited { .. }
                | Event::McpServer { .. }
                | Event::LanguageServers { .. }
        ) {
            self.turns.retry = None;
        }
        match event {
            Event::SessionStarted {
                session_id,
                provider,
                model,
                workspace,
            } => {
                self.figures.new_run();
                self.status.session_id = session_id;
                self.status.provider = provider;
                self.status.model = model;
                if self.status.workspace.is_empty() {
                    self.status.workspace = workspace;
                }
            }
            Event::UserMessage { text } => {
                self.finish_streaming();
                // `/review` and `/init` show their one line, not the instructions pablo wrote.
                let shown = match pablo_protocol::subtask_echo(&text) {
                    Some(line) => line.to_string(),
                    None => text,
                };
                let cell = self.transcript.push(CellKind::User(shown));
                if !self.from_replay {
                    self.turns.running = true;
                    self.turns.sent = false;
                    self.turns.started_at = Some(self.clock.now);
                }
                self.turns.count += 1;
                self.turns.cells.push((self.turns.count, cell));
                self.transcript.scroll_to_bottom();
            }
            e @ (Event::ReasoningDelta { .. }
            | Event::ReasoningCompleted { .. }
            | Event::WebSearch { .. }
            | Event::MessageDelta { .. }
            | Event::MessageCompleted { .. }) => self.apply_message(e),
            e @ (Event::ToolCallBegin { .. }
            | Event::ApprovalRequest { .. }
            | Event::ApprovalResolved { .. }
            | Event::PreviewDiagnostics { .. }
            | Event::ToolCallRunning { .. }
            | Event::ToolOutputDelta { .. }
            | Event::ToolCallEnd { .. }) => self.apply_tool(e),
            e @ (Event::SessionOutput { .. }
            | Event::SessionExited { .. }
            | Event::Sessions { .. }) => self.apply_background(e),
            e @ (Event::SubagentStarted { .. }
            | Event::Subagent { .. }
            | Event::SubagentFinished { .. }) => self.apply_subagent(e),
            e @ (Event::Rules { .. }
            | Event::Artifacts { .. }
            | Event::Memory { .. }
            | Event::FilesChanged { .. }
            | Event::Checkpoints { .. }
            | Event::RestorePlan { .. }
            | Event::Restored { .. }
            | Event::SessionForked { .. }) => self.apply_listing(e),
            e @ (Event::McpQuestion { .. } | Event::McpQuestionClosed { .. }) => {
                self.apply_question(e)
            }
            e => self.apply_session(e),
        }
    }

    /// An MCP server's question opens its form; one closed elsewhere (withdrawn) closes it.
    fn apply_question(&mut self, event: Event) {
        match event {
            Event::McpQuestion { question } => {
                let server = question.server.clone();
                let view = super::super::question::QuestionView::new(question);
                self.open_layer(Layer::Question(Box::new(view)));
                self.alert(
                    true,
                    &format!("pablo: the MCP server {server} asks you something"),
                );
            }
            Event::McpQuestionClosed { id, server, action } => {
                // Still open: the server or the end of its call withdrew it.
                let before = self.layers.len();
                self.layers
                    .retain(|l| !matches!(l, Layer::Question(q) if q.id() == id));
                if self.layers.len() < before {
                    self.notice(
                        NoticeLevel::Info,
                        format!("mcp {server}: its question was withdrawn ({action})"),
                    );
                }
            }
            _ => {}
        }
    }

    /// The session's figures, its settings and its end.
    /// The context report of a model call: the window's use and the session's cost so far.
    fn context_usage(&mut self, used_tokens: u64, window_tokens: u64, cost_usd: Option<f64>) {
        // The figure after a compaction: said beside the one before, so the gain is seen.
        if let Some((before, before_window)) = self.figures.before_compaction.take() {
            self.notice(
                NoticeLevel::Info,
                format!(
                    "context: {before} tokens before, about {used_tokens} after ({}% → {}% of \
                     the {window_tokens}-token window)",
                    super::context_percent(before, before_window),
                    super::context_percent(used_tokens, window_tokens),
                ),
            );
        }
        self.status.context = Some((used_tokens, window_tokens));
        if cost_usd.is_some() {
            self.figures.cost_run = cost_usd;
        }
        self.status.cost_usd = self.figures.cost();
    }

    /// The files and images `@path` attached to a prompt, said in one line.
    fn attached(
        &mut self,
        files: &[pablo_protocol::Attachment],
        images: &[pablo_protocol::ImageAttachment],
    ) {
        let names: Vec<String> = files
            .iter()
            .map(|f| {
                let cut = if f.truncated { ", cut" } else { "" };
                format!("@{} ({} bytes{cut})", f.path, f.bytes)
            })
            .chain(
                images
                    .iter()
                    .map(|i| format!("@{} ({})", i.path, i.image.summary())),
            )
            .collect();
        self.notice(NoticeLevel::Info, format!("attached {}", names.join(", ")));
    }

    fn apply_session(&mut self, event: Event) {
        match event {
            Event::PlanUpdate { explanation, items } => {
                self.plan.items = items;
                self.plan.explanation = explanation;
            }
            Event::Usage { total, .. } => self.figures.run = total,
            Event::ContextUsage {
                used_tokens,
                window_tokens,
                cost_usd,
            } => self.context_usage(used_tokens, window_tokens, cost_usd),
            Event::ContextCleared {
                cleared,
                tokens_before,
                tokens_after,
            } => self.notice(
                NoticeLevel::Info,
                format!(
                    "{} old tool result{} cleared to fit the context window (~{tokens_before} → ~{tokens_after} tokens)",
                    cleared.len(),
                    if cleared.len() == 1 { " was" } else { "s were" }
                ),
            ),
            Event::McpServer { server } => self.mcp_changed(server),
            Event::LanguageServers { servers } => self.lsp = servers,
            Event::Warning { message } => self.notice(NoticeLevel::Warning, message),
            // A guard's block is the tool cell's own error (`blocked by hook NAME: …`, so it has
            // no words here); the rest of what hooks decide is a line of the transcript.
            ref hook @ Event::Hook { ref decision, .. } => {
                if let Some(words) = pablo_protocol::describe::hook_words(hook) {
                    let level = if decision.starts_with("failed") || decision == "block" {
                        NoticeLevel::Warning
                    } else {
                        NoticeLevel::Info
                    };
                    self.notice(level, words);
                }
            }
            Event::Attachments { files, images } => self.attached(&files, &images),
            Event::ModelChanged { provider, model } => {
                self.notice(
                    NoticeLevel::Info,
                    format!("the next turn uses {model} from provider {provider}"),
                );
                self.status.model = model;
                self.status.provider = provider;
            }
            // The mode is the agent's now, not the journal's: a resumed session starts in the
            // mode of its flags and config (the agent says so at start when that is not ask).
            Event::ModeChanged { mode } if !self.from_replay => {
                self.status.mode = mode;
                self.hint = Some(format!("{} mode · shift-tab switches", mode.name()));
            }
            Event::TurnRefused {
                code,
                message,
                text,
            } => {
                self.notice(NoticeLevel::Error, format!("{code}: {message}"));
                self.turns.sent = false;
                self.turns.running = false;
                // What was queued behind it comes back too, after it.
                self.take_back_queued();
                // The prompt comes back to be changed; anything typed since stays after it.
                let typed = self.composer.text().to_string();
                if typed.is_empty() {
                    self.composer.set_text(&text);
                } else if typed != text {
                    self.composer.set_text(&format!("{text}\n{typed}"));
                }
            }
            Event::Error { code, message } => {
                if code == ErrorCode::McpRequiredServerFailed {
                    self.exit.fatal = Some(message.clone());
                }
                self.notice(NoticeLevel::Error, format!("{code}: {message}"));
            }
            Event::TurnCompleted {
                stop_reason,
                usage,
                model_calls,
            } => {
                self.finish_streaming();
                self.close_turn(model_calls);
                self.turns.running = false;
                self.alert(false, "pablo: the turn is done");
                self.figures.run = usage;
                self.set_hint(None);
                match stop_reason {
                    StopReason::Cancelled => self.notice(NoticeLevel::Warning, "interrupted"),
                    StopReason::MaxTokens => self.notice(
                        NoticeLevel::Warning,
                        "the answer hit the output-token limit",
                    ),
                    StopReason::EndTurn | StopReason::BudgetExhausted | StopReason::Error => {}
                }
                self.turns.sent = false;
                self.release_queued(matches!(
                    stop_reason,
                    StopReason::EndTurn | StopReason::MaxTokens
                ));
            }
            Event::ContextCompacted {
                replaced_messages, ..
            } => {
                self.figures.before_compaction = self.status.context;
                self.notice(
                    NoticeLevel::Info,
                    format!(
                        "the conversation was compacted: its first {replaced_messages} messages were replaced by a summary"
                    ),
                );
            }
            Event::ShutdownComplete if !self.from_replay => self.exit.shutdown_complete = true,
            Event::Retry {
                attempt,
                max_attempts,
                wait_ms,
                reason,
                ..
            } if !self.from_replay => {
                self.turns.retry = Some(super::Waiting {
                    attempt,
                    max_attempts,
                    until: self.clock.now + std::time::Duration::from_millis(wait_ms),
                    reason,
                });
            }
            Event::AnswerRetried {
                reason,
                shown_chars,
            } => self.notice(
                NoticeLevel::Warning,
                format!(
                    "the answer above was cut off after {shown_chars} characters ({reason}); \
                     asking again, once: the new answer replaces it"
                ),
            ),
            // The terminal shell runs only with an editor front-end; the TUI never offers one.
            // The other kinds are handled by the `apply_*` of their group.
            _ => {}
        }
    }

    /// The streamed answer and reasoning of a model call.
    fn apply_message(&mut self, event: Event) {
        match event {
            Event::ReasoningDelta { text } => {
                if !self.append_streaming(true, &text) {
                    self.finish_streaming();
                    self.transcript.push(CellKind::Reasoning {
                        text,
                        streaming: true,
                    });
                }
                self.turns.live_reasoning = true;
            }
            Event::ReasoningCompleted { blocks } => {
                // Live, the reasoning has streamed in already; from a journal (resume) it has
                // not, and the cell is made here.
                if self.turns.live_reasoning {
                    if self.reasoning_streaming() {
                        self.finish_streaming();
                    }
                } else {
                    let text = pablo_protocol::reasoning_text(&blocks);
                    if !text.is_empty() {
                        self.finish_streaming();
                        self.transcript.push(CellKind::Reasoning {
                            text,
                            streaming: false,
                        });
                    }
                }
                self.turns.live_reasoning = false;
            }
            Event::MessageDelta { text } => {
                if self.reasoning_streaming() {
                    self.finish_streaming();
                }
                if !self.append_streaming(false, &text) {
                    self.transcript.push(CellKind::Assistant {
                        text,
                        streaming: true,
                    });
                }
            }
            // A search splits the streaming answer: what came before stays above it.
            Event::WebSearch { search } => {
                if let Some(cell) = self.transcript.last_mut()
                    && let CellKind::Assistant {
                        text,
                        streaming: true,
                    } = &cell.kind
                {
                    self.turns.answer_before_search.push_str(text);
                }
                self.finish_streaming();
                self.transcript.push(CellKind::WebSearch(Box::new(search)));
            }
            Event::MessageCompleted { text, .. } => {
                self.turns.live_reasoning = false;
                if self.reasoning_streaming() {
                    self.finish_streaming();
                }
                let before = std::mem::take(&mut self.turns.answer_before_search);
                let text = match text.strip_prefix(&before) {
                    Some(rest) if !before.is_empty() => rest.trim_start().to_string(),
                    _ => text,
                };
                let replaced = match self.transcript.last_mut() {
                    Some(cell) => match &mut cell.kind {
                        CellKind::Assistant {
                            text: t,
                            streaming: s @ true,
                        } => {
                            *t = text.clone();
                            *s = false;
                            cell.touch();
                            true
                        }
                        _ => false,
                    },
                    None => false,
                };
                if !replaced && !text.trim().is_empty() {
                    self.transcript.push(CellKind::Assistant {
                        text,
                        streaming: false,
                    });
                }
            }
            _ => {}
        }
    }

    /// A tool call from its start to its result.
    fn apply_tool(&mut self, event: Event) {
        match event {
            Event::ToolCallBegin {
                call_id,
                tool,
                arguments,
            } => {
                self.finish_streaming();
                let now = self.clock.now;
                self.transcript.push(CellKind::Tool(Box::new(ToolCell::new(
                    call_id, tool, &arguments, now,
                ))));
            }
            Event::ApprovalRequest {
                call_id,
                tool,
                preview,
                verdict,
            } => {
                let mut summary = String::new();
                let mut from = None;
                let asked = Asked {
                    hunks: match &preview {
                        Preview::FileChange(fc) => fc.hunks.len(),
                        _ => 0,
                    },
                    always_rule: verdict.always_rule.clone(),
                };
                if let Some(t) = self.transcript.tool_mut(&call_id) {
                    t.status = ToolStatus::AwaitingApproval;
                    t.asked = Some(asked);
                    summary = t.summary.clone();
                } else if let Some((agent, call)) = self.subagent_call_label(&call_id) {
                    summary = call;
                    from = Some(agent);
                }
                let mut view = ApprovalView::new(call_id, tool.clone(), summary, preview, verdict);
                view.from = from;
                self.open_layer(Layer::Approval(Box::new(view)));
                self.alert(true, &format!("pablo: {tool} waits for your approval"));
            }
            Event::PreviewDiagnostics {
                call_id,
                hunks,
                diagnostics,
            } => {
                for layer in &mut self.layers {
                    if let Layer::Approval(a) = layer
                        && a.call_id == call_id
                    {
                        a.diagnostics.update(hunks.clone(), diagnostics.clone());
                    }
                }
            }
            Event::ApprovalResolved { call_id, answer } => {
                // The saved rule itself is listed by `/rules`, which asks the policy store.
                let view = self.take_approval(&call_id);
                if let Some(t) = self.transcript.tool_mut(&call_id) {
                    let asked = match &view {
                        Some(v) => Asked {
                            hunks: v.accepted.len(),
                            always_rule: v.verdict.always_rule.clone(),
                        },
                        None => t.asked.clone().unwrap_or_default(),
                    };
                    t.approval = Some(approval_record(&answer, &asked));
                    t.status = match answer {
                        ApprovalAnswer::Reject { .. } => ToolStatus::Rejected,
                        _ => ToolStatus::Pending,
                    };
                }
            }
            Event::ToolCallRunning { call_id, preview } => {
                let now = self.clock.now;
                if let Some(t) = self.transcript.tool_mut(&call_id) {
                    t.status = ToolStatus::Running;
                    t.running_since = Some(now);
                    if let Preview::Command(c) = &preview {
                        t.output = Some(if c.pty { Output::pty() } else { Output::pipe() });
                    }
                    t.preview = Some(preview);
                }
            }
            Event::ToolOutputDelta { call_id, chunk } => {
                if let Some(t) = self.transcript.tool_mut(&call_id) {
                    t.output.get_or_insert_with(Output::pipe).push(&chunk);
                }
            }
            Event::ToolCallEnd {
                call_id, result, ..
            } => self.tool_ended(&call_id, result),
            _ => {}
        }
    }

    /// The line that ends a turn: its model calls and, live, how long it ran. A journal of
    /// before the count says nothing, rather than a wrong 0.
    fn close_turn(&mut self, model_calls: Option<u64>) {
        self.turns.last_model_calls = model_calls;
        if let Some(model_calls) = model_calls {
            let elapsed = self
                .turn_started()
                .filter(|_| !self.from_replay)
                .map(|t| self.clock.now.saturating_duration_since(t));
            self.transcript.push(CellKind::TurnEnd {
                model_calls,
                elapsed,
            });
        }
    }

    fn tool_ended(&mut self, call_id: &str, result: ToolOutcome) {
        self.take_approval(call_id);
        let now = self.clock.now;
        let Some(t) = self.transcript.tool_mut(call_id) else {
            return;
        };
        // A file change that landed is the diff its preview showed.
        if let (None, Some(Preview::FileChange(change))) = (result.error_code(), &t.preview) {
            self.figures.lines_added += change.added as u64;
            self.figures.lines_removed += change.removed as u64;
        }
        t.status = match result.error_code() {
            None => ToolStatus::Done,
            Some(code) if code == ErrorCode::Rejected => ToolStatus::Rejected,
            Some(_) => ToolStatus::Failed,
        };
        t.elapsed = t.running_since.map(|s| now.saturating_duration_since(s));
        match t.finish(result) {
            Some(ResultFact::ArtifactSaved) => {
                self.set_hint(Some(
                    "/artifacts lists the saved files and opens one".into(),
                ));
            }
            Some(ResultFact::MemoryProposed { proposal_id: id }) => {
                let text = format!(
                    "the model proposed a memory ({id}); it stays inactive unless you accept \
                     it: /memory to review"
                );
                self.notice(NoticeLevel::Info, text);
            }
            None => {}
        }
    }

    /// Background sessions.
    fn apply_background(&mut self, event: Event) {
        match event {
            Event::SessionOutput { session_id, chunk } => {
                let pty = self
                    .background
                    .sessions
                    .iter()
                    .find(|s| s.session_id == session_id)
                    .is_some_and(|s| s.pty);
                self.background
                    .output
                    .entry(session_id)
                    .or_insert_with(|| if pty { Output::pty() } else { Output::pipe() })
                    .push(&chunk);
            }
            Event::SessionExited {
                session_id,
                exit_code,
            } => {
                if let Some(s) = self
                    .background
                    .sessions
                    .iter_mut()
                    .find(|s| s.session_id == session_id)
                {
                    s.running = false;
                    s.exit_code = exit_code;
                }
            }
            Event::Sessions { sessions } => {
                for s in &sessions {
                    if !self.background.output.contains_key(&s.session_id) {
                        let out = if s.pty { Output::pty() } else { Output::pipe() };
                        self.background.output.insert(s.session_id.clone(), out);
                    }
                }
                self.background.sessions = sessions;
            }
            _ => {}
        }
    }

    /// Answers to the person's listings and the restores they asked for.
    fn apply_listing(&mut self, event: Event) {
        match event {
            Event::Rules { rules, removed } => {
                self.transcript
                    .push(CellKind::Info(Info::Rules { rules, removed }));
            }
            Event::Artifacts { artifacts } => self.open_artifacts(artifacts),
            Event::Memory {
                proposals,
                resolved,
                file,
            } => self.show_memory(proposals, resolved, file),
            // The record of what each call changed is for the journal and for undo.
            Event::FilesChanged { .. } => {}
            Event::Checkpoints { turns } => {
                self.layers.retain(|l| !matches!(l, Layer::Rewind(_)));
                self.open_layer(Layer::Rewind(RewindView::new(turns)));
            }
            Event::RestorePlan { plan } => {
                self.layers
                    .retain(|l| !matches!(l, Layer::Rewind(_) | Layer::Restore(_)));
                if matches!(plan.scope, RestoreScope::Session { .. }) && plan.files.is_empty() {
                    self.notice(
                        NoticeLevel::Info,
                        "this session has not changed any file (or every change was undone)",
                    );
                } else {
                    self.open_layer(Layer::Restore(Box::new(RestoreView::new(plan))));
                }
            }
            Event::Restored { report } => {
                self.layers.retain(|l| !matches!(l, Layer::Restore(_)));
                self.set_hint(None);
                self.transcript.push(CellKind::Info(Info::Restored(report)));
                self.transcript.scroll_to_bottom();
            }
            Event::SessionForked {
                session_id,
                from_session,
                turn,
                text,
            } => self.forked(session_id, from_session, turn, text),
            _ => {}
        }
    }

    /// Appends a streamed piece to the last cell when it is still streaming text of that kind
    /// (reasoning or the answer); false when a new cell must start.
    fn append_streaming(&mut self, reasoning: bool, piece: &str) -> bool {
        let Some(cell) = self.transcript.last_mut() else {
            return false;
        };
        match &mut cell.kind {
            CellKind::Reasoning {
                text,
                streaming: true,
            } if reasoning => text.push_str(piece),
            CellKind::Assistant {
                text,
                streaming: true,
            } if !reasoning => text.push_str(piece),
            _ => return false,
        }
        cell.touch();
        true
    }

    pub(super) fn finish_streaming(&mut self) {
        if let Some(cell) = self.transcript.last_mut()
            && let CellKind::Assistant { streaming, .. } | CellKind::Reasoning { streaming, .. } =
                &mut cell.kind
            && *streaming
        {
            *streaming = false;
            cell.touch();
        }
    }

    /// Whether the last cell is reasoning that is still streaming.
    fn reasoning_streaming(&mut self) -> bool {
        matches!(
            self.transcript.last_mut().map(|c| &c.kind),
            Some(CellKind::Reasoning {
                streaming: true,
                ..
            })
        )
    }

    pub(super) fn take_approval(&mut self, call_id: &str) -> Option<ApprovalView> {
        let pos = self
            .layers
            .iter()
            .position(|l| matches!(l, Layer::Approval(a) if a.call_id == call_id))?;
        match self.layers.remove(pos) {
            Layer::Approval(a) => Some(*a),
            Layer::Question(_)
            | Layer::Sessions(_)
            | Layer::Resume(_)
            | Layer::Model(_)
            | Layer::Artifacts(_)
            | Layer::Memory(_)
            | Layer::Rewind(_)
            | Layer::Restore(_) => None,
        }
    }

    /// A rewind: the transcript is cut before the prompt of `turn`, which goes back into the
    /// composer; the session continues under its new id.
    fn forked(&mut self, session_id: String, from: String, turn: u32, text: String) {
        if let Some(pos) = self
            .turns
            .cells
            .iter()
            .position(|(t, _)| *t >= u64::from(turn))
        {
            let cell = self.turns.cells[pos].1;
            self.turns.cells.truncate(pos);
            // The restore report comes after the prompt's cell; keep it under the cut.
            let report = self.transcript.take_last_info();
            self.transcript.truncate(cell);
            if let Some(info) = report {
                self.transcript.push(CellKind::Info(info));
            }
        }
        self.turns.count = u64::from(turn.saturating_sub(1));
        if self.status.resume_command.is_some() {
            self.status.resume_command = Some(format!("pablo resume {session_id}"));
        }
        self.status.session_id = session_id.clone();
        self.notice(
            NoticeLevel::Info,
            format!(
                "rewound to the start of turn {turn}: this conversation continues as session \
                 {session_id}; the later turns stay in session {from}. The prompt is back in the \
                 composer to edit or send."
            ),
        );
        if self.composer.is_empty() {
            self.composer.insert_str(&text);
        }
        self.transcript.scroll_to_bottom();
    }

    /// Opens (or refreshes) the `/artifacts` picker.
    fn open_artifacts(&mut self, rows: Vec<ArtifactSummary>) {
        for l in &mut self.layers {
            if let Layer::Artifacts(v) = l {
                v.selected = v.selected.min(rows.len().saturating_sub(1));
                v.rows = rows;
                return;
            }
        }
        self.open_layer(Layer::Artifacts(ArtifactsView { rows, selected: 0 }));
    }

    /// Opens (or refreshes) the `/memory` list, and says what a decision did.
    fn show_memory(
        &mut self,
        rows: Vec<MemoryProposal>,
        resolved: Option<String>,
        file: Option<String>,
    ) {
        if let Some(id) = resolved {
            let accepted = rows
                .iter()
                .any(|p| p.id == id && p.status == MemoryStatus::Accepted);
            let text = match (accepted, file) {
                (true, Some(f)) => {
                    format!("accepted {id}: appended to {f}; later sessions will read it")
                }
                _ => format!("dismissed {id}; it will not be used"),
            };
            self.notice(NoticeLevel::Info, text);
        }
        for l in &mut self.layers {
            if let Layer::Memory(v) = l {
                v.selected = v.selected.min(rows.len().saturating_sub(1));
                v.rows = rows;
                return;
            }
        }
        self.open_layer(Layer::Memory(MemoryView { rows, selected: 0 }));
    }

    /// A server's new state: remembered for the status line, `/mcp` and completion; becoming
    /// ready or failing is also said in the transcript, once.
    fn mcp_changed(&mut self, server: McpServerView) {
        let before = self
            .mcp
            .iter()
            .find(|s| s.name == server.name)
            .map(|s| s.state);
        if before != Some(server.state) {
            match server.state {
                McpState::Ready | McpState::Failed => {
                    if let Some(line) = pablo_protocol::describe::mcp_server(&server) {
                        let level = if server.state == McpState::Failed {
                            NoticeLevel::Warning
                        } else {
                            NoticeLevel::Info
                        };
                        self.notice(level, line);
                    }
                }
                McpState::Starting | McpState::Stopped => {}
            }
        }
        self.mcp.retain(|s| s.name != server.name);
        self.mcp.push(server);
        self.mcp.sort_by(|a, b| a.name.cmp(&b.name));
        self.composer.mcp_commands = self
            .mcp
            .iter()
            .flat_map(|s| {
                s.prompts.iter().map(move |p| {
                    let args: Vec<String> = p
                        .arguments
                        .iter()
                        .map(|a| {
                            if a.required {
                                a.name.to_uppercase()
                            } else {
                                format!("[{}]", a.name.to_uppercase())
                            }
                        })
                        .collect();
                    let mut detail = args.join(" ");
                    if !p.description.is_empty() {
                        if !detail.is_empty() {
                            detail.push_str("  ");
                        }
                        detail.push_str(&p.description);
                    }
                    (format!("{}:{}", s.name, p.name), detail)
                })
            })
            .collect();
        self.composer.mcp_resources = self
            .mcp
            .iter()
            .flat_map(|s| {
                s.resources
                    .iter()
                    .map(move |r| (format!("{}:{}", s.name, r.uri), r.name.clone()))
            })
            .collect();
    }
}
