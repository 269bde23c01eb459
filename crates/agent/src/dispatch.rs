//! The one place where every [`Op`] is answered, whether a turn runs or not.
//!
//! The dispatcher owns the session's conversation between turns and hands it to the running
//! turn ([`task::start`]), which it drives while it keeps reading ops, so an approval, an
//! interrupt or a `/rules` reaches it at once. An op that needs the conversation itself
//! (`/compact`, a restore that rewinds it) is answered from the idle conversation, and while a
//! turn has it gets the answer that says so. Prompts that arrive during a turn wait their turn,
//! in order.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::checkpoints::{self, Rewindable};
use super::conversation::Conversation;
use super::mcp_input;
use super::shared::Shared;
use super::subtask;
use super::task::{self, RunningTurn};
use super::turn::{self, TurnInput};
use pablo_core::ErrorCode;
use pablo_protocol::{Event, Op, StopReason, Subtask, WorkMode};

/// What waits for the running turn to end, in order.
enum Pending {
    Prompt(TurnInput),
    Subtask(Subtask),
}

/// The op loop of one agent session.
pub(super) struct Dispatcher {
    shared: Arc<Shared>,
    /// The conversation while no turn runs; the running turn's task holds it otherwise.
    idle: Option<Conversation>,
    running: Option<RunningTurn>,
    /// The session's conversation while a subtask's runs (`/review`, `/init`); the subtask's
    /// joins it when it ends.
    parked: Option<Conversation>,
    /// Prompts and subtasks that arrived while a turn ran, in order.
    queued: VecDeque<Pending>,
    /// After `Op::Shutdown` (or when no front-end is left): the running turn is interrupted and
    /// the session ends when it has.
    shutting_down: bool,
    /// The first prompt may wait for the MCP servers to settle.
    first_turn: bool,
}

impl Dispatcher {
    pub(super) fn new(shared: Arc<Shared>, conversation: Conversation) -> Self {
        Self {
            shared,
            idle: Some(conversation),
            running: None,
            parked: None,
            queued: VecDeque::new(),
            shutting_down: false,
            first_turn: true,
        }
    }

    /// Announces the session, answers ops until `Op::Shutdown` (or until every op sender is
    /// gone) and the running turn has ended, then closes the session.
    pub(super) async fn run(mut self, mut ops: mpsc::UnboundedReceiver<Op>) {
        self.announce();
        if let Some(conversation) = self.idle.as_mut() {
            turn::session_start(conversation).await;
        }
        let mut ops_open = true;
        loop {
            if self.running.is_none() {
                if self.shutting_down {
                    break;
                }
                // A waiting prompt starts before the next op is read.
                match self.queued.pop_front() {
                    Some(Pending::Prompt(input)) => {
                        self.start_turn(input).await;
                        continue;
                    }
                    Some(Pending::Subtask(task)) => {
                        self.start_subtask(&task);
                        continue;
                    }
                    None => {}
                }
            }
            tokio::select! {
                // A finished turn first: the ops read after it find the session idle.
                biased;
                conversation = finished(&mut self.running) => {
                    self.running = None;
                    self.idle = Some(match self.parked.take() {
                        Some(mut session) => {
                            subtask::absorb(&mut session, conversation);
                            session
                        }
                        None => conversation,
                    });
                }
                op = ops.recv(), if ops_open => match op {
                    Some(op) => self.answer(op).await,
                    None => {
                        ops_open = false;
                        self.answer(Op::Shutdown).await;
                    }
                },
            }
        }
        self.shared.close().await;
    }

    /// `SessionStarted`, the working mode when it is not the default, and the MCP servers
    /// starting in the background (their states arrive as events).
    fn announce(&self) {
        let Some(conversation) = self.idle.as_ref() else {
            return;
        };
        self.shared.emit(Event::SessionStarted {
            session_id: conversation.session_id.clone(),
            provider: conversation.model.client.provider().to_string(),
            model: conversation.model.client.model().to_string(),
            workspace: self.shared.host.workspace_root.display().to_string(),
        });
        let start_mode = self.shared.policy.mode();
        if start_mode != WorkMode::Ask {
            self.shared.emit(Event::ModeChanged { mode: start_mode });
        }
        self.shared.host.mcp.start(Some(self.shared.events.clone()));
        self.shared.host.lsp.report_to(self.shared.events.clone());
    }

    /// Every op, answered once.
    async fn answer(&mut self, op: Op) {
        match op {
            Op::UserTurn { text, images } => self
                .queued
                .push_back(Pending::Prompt(TurnInput { text, images })),
            Op::Subtask { task } => self.queued.push_back(Pending::Subtask(task)),
            Op::Interrupt => {
                if let Some(turn) = &self.running {
                    turn.interrupt();
                }
            }
            Op::Approval { call_id, answer } => {
                // During a turn an answer to a call no longer waiting (interrupted a moment
                // ago) is dropped without a word.
                if self.running.is_none() {
                    self.shared.emit(Event::Warning {
                        message: format!("no tool call {call_id} is waiting for approval"),
                    });
                } else {
                    self.shared.answer_approval(&call_id, answer);
                }
            }
            Op::AnswerMcpQuestion { id, answer } => {
                // A question withdrawn a moment ago (its call ended) has nobody to answer.
                if let Err(message) = self.shared.host.mcp.answer_question(&id, answer) {
                    self.shared.emit(Event::Warning { message });
                }
            }
            Op::CheckHunks { call_id, hunks } => {
                // A check that ended (the approval was answered a moment ago) has nothing to
                // say: the toggle is dropped without a word.
                self.shared.check_hunks(&call_id, hunks);
            }
            Op::Shutdown => {
                self.shutting_down = true;
                if let Some(turn) = &self.running {
                    turn.interrupt();
                }
            }
            Op::SessionInput { .. } | Op::KillSession { .. } => self.shared.run_session_op(op),
            Op::ListRules | Op::RemoveRule { .. } => self.shared.answer_rules(op),
            Op::ListArtifacts | Op::ListMemory | Op::ResolveMemory { .. } => {
                self.shared.answer_store(op)
            }
            Op::ListCheckpoints | Op::PlanRestore { .. } | Op::Restore { .. } => {
                let idle = self.idle.as_mut().map(|c| Rewindable {
                    messages: &mut c.messages,
                    session_id: &mut c.session_id,
                });
                checkpoints::answer(&self.shared, idle, op).await
            }
            Op::SetMode { mode } => self.shared.set_mode(mode),
            Op::SetModel { model, provider } => self.shared.switch_model(provider, model),
            Op::Compact { focus } => match self.idle.as_mut() {
                Some(conversation) => turn::compact_now(conversation, focus.as_deref()).await,
                None => self.shared.emit(Event::Warning {
                    message: "/compact runs between turns: wait for this one to end (or \
                              interrupt it) and compact then"
                        .into(),
                }),
            },
        }
    }

    /// Readies a prompt and starts its turn: the MCP servers it may need, its `@server:`
    /// mentions expanded, the model a `/model` switch built. A required server that failed ends
    /// the session; a mention that cannot be expanded ends only this turn, before anything is
    /// sent.
    async fn start_turn(&mut self, input: TurnInput) {
        let Some(mut conversation) = self.idle.take() else {
            return;
        };
        let mcp = &self.shared.host.mcp;
        if std::mem::take(&mut self.first_turn) && mcp.waits_for_first_turn() {
            mcp.settled().await;
        }
        if let Err(message) = mcp.required_ready().await {
            // A required server is part of the session: without it there is none.
            self.shared.emit(Event::Error {
                code: ErrorCode::McpRequiredServerFailed.into(),
                message,
            });
            self.end_unstarted(conversation);
            self.shutting_down = true;
            return;
        }
        let text = match mcp_input::expand(mcp, &input.text).await {
            Ok(t) => t,
            Err(f) => {
                // Nothing was sent: the person reads why and types again.
                self.shared.emit(Event::Error {
                    code: f.code.into(),
                    message: f.message,
                });
                self.end_unstarted(conversation);
                return;
            }
        };
        if let Some(model) = self.shared.take_switched_model() {
            turn::switch_model(&mut conversation, model);
        }
        let input = TurnInput {
            text,
            images: input.images,
        };
        self.running = Some(task::start(conversation, input, CancellationToken::new()));
    }

    /// Starts `task` in a subcontext of the idle conversation, which waits parked until the
    /// subtask's turn ends. A task that cannot start (a review base that is no revision name)
    /// ends at once, as a turn that sent nothing.
    fn start_subtask(&mut self, task: &Subtask) {
        let Some(mut conversation) = self.idle.take() else {
            return;
        };
        if let Some(model) = self.shared.take_switched_model() {
            turn::switch_model(&mut conversation, model);
        }
        let text = match subtask::prompt(task) {
            Ok(text) => text,
            Err(subtask::Refused(message)) => {
                self.shared.emit(Event::Error {
                    code: ErrorCode::InvalidArguments.into(),
                    message,
                });
                self.end_unstarted(conversation);
                return;
            }
        };
        let sub = subtask::subcontext(&conversation, task);
        self.parked = Some(conversation);
        let input = TurnInput {
            text,
            images: Vec::new(),
        };
        self.running = Some(task::start(sub, input, CancellationToken::new()));
    }

    /// A turn that ended before it started: closed as an error, the conversation unchanged.
    fn end_unstarted(&mut self, conversation: Conversation) {
        self.shared.emit(Event::TurnCompleted {
            stop_reason: StopReason::Error,
            usage: conversation.spend.usage,
            model_calls: Some(0),
        });
        self.idle = Some(conversation);
    }
}

/// The running turn's end; never, when none runs.
async fn finished(running: &mut Option<RunningTurn>) -> Conversation {
    match running {
        Some(turn) => turn.finished().await,
        None => std::future::pending().await,
    }
}
