//! How keys and pasted text change the state; what the layers' intents do.

use std::time::Duration;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::super::composer::ComposerAction;
use super::super::layers::{Intent, Layer, ResumeView, SessionsView};
use super::super::model_picker::Pick;
use super::super::restore;
use super::{AppState, Effect};
use pablo_protocol::Op;

/// How long a first Ctrl-C on an idle prompt stays armed.
const QUIT_WINDOW: Duration = Duration::from_secs(2);

/// In vim mode, an Esc this soon after the Esc that left insert mode is the habit of pressing it
/// twice to be sure, not a request to interrupt the turn: it is dropped.
const VIM_ESC_GUARD: Duration = Duration::from_millis(500);

impl AppState {
    /// A key from the terminal.
    pub(crate) fn handle_key(&mut self, key: KeyEvent) {
        if self.global_key(key) {
            return;
        }
        self.exit.quit_armed = None;
        let width = self.modal_width();
        let ids: Vec<String> = self
            .background
            .sessions
            .iter()
            .map(|s| s.session_id.clone())
            .collect();
        if let Some(top) = self.layers.last_mut() {
            let intent = match top {
                Layer::Approval(a) => Ok(a.handle_key(key, width)),
                Layer::Question(q) => Ok(match q.handle_key(key) {
                    Some(answer) => Intent::AnswerQuestion {
                        id: q.id().to_string(),
                        server: q.question.server.clone(),
                        answer,
                    },
                    None => Intent::None,
                }),
                Layer::Sessions(s) => Ok(s.handle_key(key, &ids)),
                Layer::Resume(r) => Ok(r.handle_key(key)),
                Layer::Model(m) => Ok(match m.handle_key(key) {
                    Pick::None => Intent::None,
                    Pick::Close => Intent::Close,
                    Pick::Switch { provider, model } => Intent::SwitchModel { provider, model },
                }),
                Layer::Artifacts(a) => Ok(a.handle_key(key)),
                Layer::Memory(m) => Ok(m.handle_key(key)),
                Layer::Rewind(r) => Err(r.handle_key(key)),
                Layer::Restore(r) => Err(r.handle_key(key, width)),
            };
            return match intent {
                Ok(i) => self.run_intent(i),
                Err(i) => self.run_restore_intent(i),
            };
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('b') if ctrl => return self.open_sessions(),
            KeyCode::Esc if self.screen.transcript_overlay => {
                self.screen.transcript_overlay = false;
                self.transcript.expanded = false;
                self.transcript.show_all = false;
                self.hint = None;
                return;
            }
            // Vim mode: Esc leaves insert mode, or drops a command being typed; then it never
            // interrupts. In normal mode it keeps its meaning below.
            KeyCode::Esc if self.composer.takes_esc() => {
                let inserting = self
                    .composer
                    .vim()
                    .is_some_and(|v| v.mode() == super::super::vim::Mode::Insert);
                self.composer.handle_key(key);
                self.vim_left_insert = inserting.then_some(self.clock.now);
                return;
            }
            KeyCode::Esc => {
                if let Some(at) = self.vim_left_insert.take()
                    && self.clock.now.saturating_duration_since(at) < VIM_ESC_GUARD
                {
                    return;
                }
                self.hint = None;
                return self.interrupt();
            }
            _ => {}
        }
        self.vim_left_insert = None;
        match self.composer.handle_key(key) {
            ComposerAction::Submit(text) => self.submit(text),
            ComposerAction::Handled | ComposerAction::Ignored => {}
        }
    }

    /// Keys that work everywhere, over any layer; true when `key` was one of them.
    fn global_key(&mut self, key: KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        match key.code {
            KeyCode::Char('c') if ctrl => self.ctrl_c(),
            KeyCode::Char('g') if ctrl => {
                if self.layers.is_empty() {
                    self.effects.push(Effect::EditDraft);
                }
            }
            KeyCode::BackTab if self.layers.is_empty() => {
                self.outbox.push(Op::SetMode {
                    mode: self.status.mode.next(),
                });
            }
            KeyCode::F(2) => {
                self.screen.mouse_capture = !self.screen.mouse_capture;
                self.effects
                    .push(Effect::MouseCapture(self.screen.mouse_capture));
                self.hint = Some(if self.screen.mouse_capture {
                    "mouse captured: the wheel scrolls; f2 gives it back for selection".into()
                } else {
                    "mouse released: select and copy as usual".into()
                });
            }
            KeyCode::Char('o') if ctrl => self.toggle_expanded(),
            KeyCode::Char('z') if ctrl => self.effects.push(Effect::Suspend),
            KeyCode::Char('t') if ctrl => self.plan.toggled = !self.plan.toggled,
            KeyCode::PageUp if self.layers.is_empty() => self.transcript.scroll_up(10),
            KeyCode::PageDown if self.layers.is_empty() => self.transcript.scroll_down(10),
            KeyCode::Up if shift && self.layers.is_empty() => self.transcript.scroll_up(1),
            KeyCode::Down if shift && self.layers.is_empty() => self.transcript.scroll_down(1),
            _ => return false,
        }
        true
    }

    /// Ctrl-O: tool results, diffs and reasoning in full, or collapsed again.
    fn toggle_expanded(&mut self) {
        if self.screen.inline {
            // What is in the scrollback is printed for good: the expanded transcript is a
            // full-screen view of its own, closed again by ctrl-o or esc.
            self.screen.transcript_overlay = !self.screen.transcript_overlay;
            self.transcript.expanded = self.screen.transcript_overlay;
            self.transcript.show_all = self.screen.transcript_overlay;
            if self.screen.transcript_overlay {
                self.hint = Some("the whole transcript, expanded · ctrl-o or esc closes".into());
            } else {
                self.hint = None;
            }
        } else {
            self.transcript.expanded = !self.transcript.expanded;
        }
    }

    pub(crate) fn paste(&mut self, text: &str) {
        match self.layers.last_mut() {
            Some(Layer::Approval(a)) => {
                use super::super::layers::ApprovalMode;
                if let ApprovalMode::Note(n) | ApprovalMode::HunkNote(_, n) = &mut a.mode {
                    n.push_str(&text.replace('\n', " "));
                }
            }
            Some(Layer::Question(q)) => q.paste(text),
            Some(Layer::Sessions(s)) => {
                if let Some(i) = &mut s.input {
                    i.push_str(text);
                }
            }
            Some(
                Layer::Resume(_)
                | Layer::Model(_)
                | Layer::Artifacts(_)
                | Layer::Memory(_)
                | Layer::Rewind(_)
                | Layer::Restore(_),
            ) => {}
            None => self.composer.insert_str(text),
        }
    }

    fn ctrl_c(&mut self) {
        if self.turns.running {
            return self.interrupt();
        }
        if !self.layers.is_empty() {
            self.layers.pop();
            return;
        }
        let now = self.clock.now;
        // Background sessions end with pablo: the first ctrl-c says so, the second confirms.
        let armed_hint = match self.background_warning() {
            Some(running) => format!("{running}: press ctrl-c again to quit"),
            None => "press ctrl-c again to quit".to_string(),
        };
        if !self.composer.is_empty() {
            // The composer is empty now: the next ctrl-c quits, as on an idle prompt.
            self.composer.discard();
            self.exit.quit_armed = Some(now);
            self.hint = Some(armed_hint);
            return;
        }
        match self.exit.quit_armed {
            Some(t) if now.saturating_duration_since(t) <= QUIT_WINDOW => self.exit.quit = true,
            _ => {
                self.exit.quit_armed = Some(now);
                self.hint = Some(armed_hint);
            }
        }
    }

    pub(super) fn interrupt(&mut self) {
        if self.turns.running {
            self.outbox.push(Op::Interrupt);
            self.hint = Some(if self.take_back_queued() {
                "interrupting… your queued messages are back in the composer".into()
            } else {
                "interrupting…".into()
            });
        }
    }

    fn run_intent(&mut self, intent: Intent) {
        match intent {
            Intent::None => {}
            Intent::Answer { call_id, answer } => {
                self.outbox.push(Op::Approval { call_id, answer });
            }
            Intent::AnswerQuestion { id, server, answer } => {
                self.layers
                    .retain(|l| !matches!(l, Layer::Question(q) if q.id() == id));
                self.notice(
                    super::super::cells::NoticeLevel::Info,
                    pablo_protocol::describe::question_answered(&server, &answer),
                );
                self.outbox.push(Op::AnswerMcpQuestion { id, answer });
            }
            Intent::Interrupt => self.interrupt(),
            Intent::CheckHunks { call_id, hunks } => {
                self.outbox.push(Op::CheckHunks { call_id, hunks });
            }
            Intent::SessionInput { session_id, data } => {
                self.outbox.push(Op::SessionInput { session_id, data });
            }
            Intent::KillSession { session_id } => {
                self.outbox.push(Op::KillSession { session_id });
            }
            Intent::Close => {
                self.layers.pop();
            }
            Intent::OpenArtifact(path) => self.effects.push(Effect::OpenPager(path)),
            Intent::ResolveMemory { id, accept } => self.outbox.push(Op::ResolveMemory {
                proposal_id: id,
                accept,
            }),
            Intent::SwitchModel { provider, model } => {
                self.layers.pop();
                self.outbox.push(Op::SetModel { model, provider });
            }
            Intent::Resume(id) => {
                self.layers.pop();
                // Picking the session already open just closes the picker.
                if id != self.status.session_id {
                    self.exit.resume_requested = Some(id);
                    self.exit.quit = true;
                }
            }
        }
    }

    fn run_restore_intent(&mut self, intent: restore::Intent) {
        match intent {
            restore::Intent::None => {}
            restore::Intent::Close => {
                self.layers.pop();
            }
            restore::Intent::Plan(scope) => self.outbox.push(Op::PlanRestore { scope }),
            restore::Intent::Restore {
                plan_id,
                files,
                rewind,
            } => {
                self.hint = Some(if rewind {
                    "rewinding…".into()
                } else {
                    "restoring…".into()
                });
                self.outbox.push(Op::Restore { plan_id, files });
            }
        }
    }

    /// Opens the `/resume` picker on saved sessions (most recent first), keeping those of this
    /// workspace when the workspace is known. `now_ms` (Unix ms) is what "3 min ago" counts from.
    pub(crate) fn open_resume(&mut self, mut rows: Vec<pablo_launch::SessionInfo>, now_ms: u64) {
        if let Some(dir) = &self.workspace_dir {
            rows.retain(|r| r.is_for_workspace(dir));
        }
        rows.sort_by(|a, b| b.updated_ms.cmp(&a.updated_ms).then(b.id.cmp(&a.id)));
        self.layers.retain(|l| !matches!(l, Layer::Resume(_)));
        self.layers.push(Layer::Resume(ResumeView {
            rows,
            selected: 0,
            now_ms,
        }));
    }

    /// Opens the `/model` picker: the model in use, those of `recent` sessions, the known ones.
    pub(crate) fn open_model_picker(&mut self, recent: &[pablo_launch::SessionInfo], now_ms: u64) {
        let view = super::super::model_picker::ModelView::new(
            &self.status.provider,
            &self.status.model,
            recent,
            now_ms,
        );
        self.layers.retain(|l| !matches!(l, Layer::Model(_)));
        self.layers.push(Layer::Model(view));
    }

    pub(super) fn open_sessions(&mut self) {
        if !self.layers.iter().any(|l| matches!(l, Layer::Sessions(_))) {
            self.layers.push(Layer::Sessions(SessionsView::default()));
        }
    }
}
