//! What every turn of a session shares with the op dispatcher: the event sink, the host, the
//! policy engine, the checkpoints, the approvals waiting for an answer, and the model a `/model`
//! switch built for the next turn.
//!
//! It sits behind an `Arc`, so a turn running as a task of its own and the dispatcher answering
//! ops meanwhile see the same state, and so would a second turn loop (a subagent) started beside
//! the first. Its locks do not poison and none is held across an await. The ops answered here
//! need nothing but this shared state, so they get the same answer whether a turn runs or not.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use tokio::sync::{mpsc, oneshot};

use super::ModelSwitcher;
use super::forward::Control;
use pablo_core::{ApprovalMode, Coded, ErrorCode, EventSink};
use pablo_model::ModelClient;
use pablo_policy::PolicyEngine;
use pablo_protocol::{ApprovalAnswer, Event, Op, RuleSummary, WorkMode};
use pablo_session::checkpoint::Checkpoints;
use pablo_tools::Host;

/// A model client built by a switch, taken by the next turn.
type SwitchedModel = Arc<Mutex<Option<Arc<dyn ModelClient>>>>;

/// The state of one agent session that its turns and its op dispatcher share.
pub(crate) struct Shared {
    /// Where events go: the forwarder journals them, then the front-end gets them.
    pub(super) events: EventSink,
    /// Events the agent itself sent, against `limits.max_native_events`.
    pub(super) emitted: AtomicU64,
    pub(super) host: Arc<Host>,
    pub(super) policy: Arc<PolicyEngine>,
    /// Who answers an ask: the person through the front-end, or a headless rule.
    pub(super) approvals: ApprovalMode,
    /// The session's checkpoints (undo, rewind, `/diff`); `None` keeps none.
    pub(super) checkpoints: Option<Arc<Checkpoints>>,
    /// Whether a journal records the session (a rewind forks it).
    pub(super) journaled: bool,
    /// Requests to the event forwarder (a rewind forks the journal).
    pub(super) control: mpsc::UnboundedSender<Control>,
    pub(super) model_switcher: Option<ModelSwitcher>,
    pub(super) switched_model: SwitchedModel,
    /// The person's hooks (docs/hooks.md); none configured: an empty set.
    pub(super) hooks: Arc<pablo_hooks::Hooks>,
    /// Makes the worktree of an `isolation: worktree` agent's task ([`super::isolation`]).
    pub(super) isolator: Option<super::Isolator>,
    /// The tool calls waiting for the person's answer, by call id.
    pub(super) waiting: Mutex<HashMap<String, oneshot::Sender<ApprovalAnswer>>>,
    /// Held by the call whose question the person is shown: subagents running side by side ask
    /// one at a time. An async lock, held across the wait for the answer.
    pub(super) asking: tokio::sync::Mutex<()>,
    /// The approvals whose file change the language servers are checking, by call id: where a
    /// hunk subset to check again goes (`Op::CheckHunks`).
    pub(super) checks: Mutex<HashMap<String, mpsc::UnboundedSender<Vec<usize>>>>,
}

impl Shared {
    /// Sends an event of the agent's own (counted against the event limit).
    pub(crate) fn emit(&self, event: Event) {
        self.emitted.fetch_add(1, Ordering::Relaxed);
        self.events.send(event);
    }

    /// How many events the agent has sent so far.
    pub(crate) fn emitted(&self) -> u64 {
        self.emitted.load(Ordering::Relaxed)
    }

    /// Registers `call_id` as waiting for the person's answer, which arrives on the receiver.
    pub(crate) fn await_approval(&self, call_id: &str) -> oneshot::Receiver<ApprovalAnswer> {
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().insert(call_id.to_string(), tx);
        rx
    }

    /// `call_id` no longer waits (answered, or its turn was interrupted).
    pub(crate) fn withdraw_approval(&self, call_id: &str) {
        self.waiting.lock().remove(call_id);
    }

    /// Hands the person's answer to the call waiting for it; false when none waits.
    pub(crate) fn answer_approval(&self, call_id: &str, answer: ApprovalAnswer) -> bool {
        let waiter = self.waiting.lock().remove(call_id);
        waiter.is_some_and(|w| w.send(answer).is_ok())
    }

    /// `call_id`'s file change is being checked; hunk subsets for it go to `tx`.
    pub(super) fn begin_preview_check(&self, call_id: &str, tx: mpsc::UnboundedSender<Vec<usize>>) {
        self.checks.lock().insert(call_id.to_string(), tx);
    }

    /// The check of `call_id` ended (its approval was answered or withdrawn).
    pub(super) fn end_preview_check(&self, call_id: &str) {
        self.checks.lock().remove(call_id);
    }

    /// Asks for `hunks` of `call_id`'s change to be checked; false when nothing checks it.
    pub(crate) fn check_hunks(&self, call_id: &str, hunks: Vec<usize>) -> bool {
        self.checks
            .lock()
            .get(call_id)
            .is_some_and(|tx| tx.send(hunks).is_ok())
    }

    /// The client a `/model` switch built since the last turn, if any.
    pub(crate) fn take_switched_model(&self) -> Option<Arc<dyn ModelClient>> {
        self.switched_model.lock().take()
    }

    /// `Op::SetMode`: takes effect at the next decision, also in a running turn.
    pub(super) fn set_mode(&self, mode: WorkMode) {
        self.policy.set_mode(mode);
        self.emit(Event::ModeChanged { mode });
    }

    /// Builds the client for `Op::SetModel` without holding up the dispatcher; the next turn
    /// takes it.
    pub(super) fn switch_model(&self, provider: Option<String>, model: String) {
        let Some(switcher) = self.model_switcher.clone() else {
            self.events.send(Event::Error {
                code: ErrorCode::ModelSwitchUnavailable.into(),
                message: format!(
                    "the model cannot be switched to {model} here; start pablo with --model"
                ),
            });
            return;
        };
        let (pending, events) = (self.switched_model.clone(), self.events.clone());
        tokio::spawn(async move {
            match switcher(provider, model.clone()).await {
                Ok(client) => {
                    let (provider, model) =
                        (client.provider().to_string(), client.model().to_string());
                    *pending.lock() = Some(client);
                    events.send(Event::ModelChanged { provider, model });
                }
                Err(e) => events.send(Event::Error {
                    code: e.code().into(),
                    message: format!("the model was not switched to {model}: {e}"),
                }),
            }
        });
    }

    /// Runs a front-end's input or kill for a background session without holding up the
    /// dispatcher; a failure becomes a warning the person sees.
    pub(super) fn run_session_op(&self, op: Op) {
        let (host, events) = (self.host.clone(), self.events.clone());
        tokio::spawn(async move {
            let result = match &op {
                Op::SessionInput { session_id, data } => host
                    .sessions
                    .write(session_id, data.as_bytes(), false)
                    .await
                    .map(|_| ()),
                Op::KillSession { session_id } => {
                    host.sessions.kill(session_id, &events).await.map(|_| ())
                }
                _ => Ok(()),
            };
            if let Err(e) = result {
                events.send(Event::Warning {
                    message: e.to_string(),
                });
            }
        });
    }

    /// Answers `/rules` and `/rules remove ID` from the policy store; a failed removal becomes a
    /// warning and the list is sent anyway so the front-end shows what is really saved.
    pub(super) fn answer_rules(&self, op: Op) {
        let removed = match op {
            Op::RemoveRule { id } => match self.policy.forget(&id) {
                Ok(rule) => Some(rule.id),
                Err(e) => {
                    self.events.send(Event::Warning {
                        message: format!("rule {id} was not removed: {e}"),
                    });
                    None
                }
            },
            _ => None,
        };
        let rules = self
            .policy
            .saved_rules()
            .into_iter()
            .map(|r| RuleSummary {
                allows: r.kind.describe(),
                id: r.id,
            })
            .collect();
        self.events.send(Event::Rules { rules, removed });
    }

    /// Answers `/artifacts` and `/memory` (list, accept, dismiss) from the session's stores; a
    /// failed decision becomes a warning and the list is sent anyway, as it really is.
    pub(super) fn answer_store(&self, op: Op) {
        let events = &self.events;
        match op {
            Op::ListArtifacts => events.send(Event::Artifacts {
                artifacts: self.host.artifacts(),
            }),
            Op::ListMemory | Op::ResolveMemory { .. } => {
                let Some(store) = self.host.memory.as_ref() else {
                    events.send(Event::Warning {
                        message: "memory is not enabled in this session ([memory] enabled = true \
                                  turns it on)"
                            .into(),
                    });
                    return;
                };
                let mut resolved = None;
                let mut file = None;
                if let Op::ResolveMemory {
                    proposal_id,
                    accept,
                } = op
                {
                    match store.resolve(&proposal_id, accept) {
                        Ok(p) => {
                            resolved = Some(p.id);
                            if accept {
                                file = Some(store.memory_file().display().to_string());
                            }
                        }
                        Err(e) => events.send(Event::Warning {
                            message: format!("memory proposal {proposal_id}: {e}"),
                        }),
                    }
                }
                match store.proposals() {
                    Ok(proposals) => events.send(Event::Memory {
                        proposals,
                        resolved,
                        file,
                    }),
                    Err(e) => events.send(Event::Warning {
                        message: e.to_string(),
                    }),
                }
            }
            _ => {}
        }
    }

    /// The end of the session: no background command or MCP server outlives the agent.
    pub(super) async fn close(&self) {
        self.host.sessions.kill_all().await;
        self.host.mcp.shutdown().await;
        self.emit(Event::ShutdownComplete);
    }
}
