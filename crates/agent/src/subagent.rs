//! Subagents: an `agent.task` call runs a conversation of its own and its final answer is the
//! call's result.
//!
//! An `agent.task` call goes through the tool-call pipeline like any other ([`super::call`]:
//! admission, hooks, policy, approval, the final check); its commit starts the subagent here and
//! its result is awaited when its turn in the order comes. A subagent is the same unit as the
//! session's turn ([`Conversation::run_turn`]) over the same [`super::shared::Shared`] (so its
//! approvals reach the same front-end and its file changes the same checkpoints), built with a
//! fresh history, the narrower catalog of its agent and limits of its own, and spawned as a
//! task. The `agent.task` calls of one model response all start before the response's other
//! calls run, so they work at the same time, at most `max_parallel_subagents` at once. The
//! subagent's events go out wrapped in [`Event::Subagent`], except its approvals (labelled by a
//! call id under the parent's, and asked one at a time) and the files it changed, which
//! front-ends and `/undo` treat like the main conversation's. Its token usage and cost are added
//! to the parent's when it ends; its calls are taken from the parent's budget as it makes them,
//! so subagents side by side never spend more than the parent had left.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::conversation::{Conversation, ConversationSetup};
use super::scope::SubScope;
use super::turn::TurnInput;
use pablo_core::{ErrorCode, ToolFailure, ToolName};
use pablo_model::Message;
use pablo_protocol::{Event, Preview, StopReason, ToolCall, ToolOutcome, Usage};
use pablo_tools::agent_task::{AgentDefinition, AgentTaskArgs, DEFAULT_AGENT, SubagentResult};

/// What a finished subagent hands its parent.
struct SubagentEnd {
    outcome: ToolOutcome,
    usage: Usage,
    cost_usd: Option<f64>,
}

/// An `agent.task` call's plan: its agent, and the task handed to it.
pub(super) struct TaskPlan {
    agent: AgentDefinition,
    args: AgentTaskArgs,
}

impl TaskPlan {
    /// The agent the call names (the default one without a name) from `catalog`'s roster; an
    /// agent that is not defined is refused with the names of those that are.
    pub(super) fn new(catalog: &pablo_tools::Catalog, args: &Value) -> Result<Self, ToolFailure> {
        let name = ToolName::AgentTask.native();
        let args: AgentTaskArgs = pablo_tools::parse_args(name, args)?;
        let roster = catalog.agents().cloned().unwrap_or_default();
        let agent_name = args.agent.as_deref().unwrap_or(DEFAULT_AGENT);
        let agent = roster.get(agent_name).cloned().ok_or_else(|| {
            ToolFailure::new(
                ErrorCode::UnknownAgent,
                format!(
                    "there is no agent named {agent_name:?}; defined: {}",
                    roster.names().join(", ")
                ),
            )
        })?;
        Ok(Self { agent, args })
    }
}

/// A subagent ready to start.
struct Admitted {
    conversation: Conversation,
    input: TurnInput,
    agent: AgentDefinition,
    description: String,
}

/// A subagent at work, awaited with [`Conversation::finish_subagent`].
pub(super) struct SubagentRun(JoinHandle<SubagentEnd>);

impl Conversation {
    /// Starts the subagent of an admitted, approved `agent.task` call (the commit of such a
    /// call): its worktree when its agent works in one, its conversation, and its task, which
    /// waits for a free slot (`max_parallel_subagents`).
    pub(super) async fn start_subagent(
        &mut self,
        plan: TaskPlan,
        call: &ToolCall,
        cancel: &CancellationToken,
    ) -> Result<SubagentRun, ToolFailure> {
        let TaskPlan { agent, args } = plan;
        let isolated = if agent.worktree {
            Some(self.isolate(&agent).await?)
        } else {
            None
        };
        let mut conversation = self.child(&agent, Placement::Call(call.id.clone()));
        if let Some(isolated) = isolated {
            conversation.enter_worktree(&agent, isolated);
        }
        self.emit(Event::ToolCallRunning {
            call_id: call.id.clone(),
            preview: Preview::Internal,
        });
        let admitted = Admitted {
            conversation,
            input: TurnInput {
                text: args.prompt,
                images: Vec::new(),
            },
            agent,
            description: args.description,
        };
        Ok(SubagentRun(tokio::spawn(run_subagent(
            admitted,
            call.id.clone(),
            cancel.child_token(),
            self.subagent_slots.clone(),
        ))))
    }

    /// The result of a subagent, once it has ended; what it spent is added to this
    /// conversation's usage, cost and budget.
    pub(super) async fn finish_subagent(&mut self, run: SubagentRun) -> ToolOutcome {
        let end = match run.0.await {
            Ok(end) => end,
            Err(e) => {
                return ToolFailure::new(
                    ErrorCode::Internal,
                    format!("the subagent stopped unexpectedly: {e}"),
                )
                .into_outcome();
            }
        };
        // Its calls were taken from this conversation's budget as it made them.
        self.usage.add(&end.usage);
        if let Some(c) = end.cost_usd {
            self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + c);
        }
        self.emit(Event::Usage {
            last: end.usage,
            total: self.usage,
        });
        end.outcome
    }

    /// A fresh worktree for a task of `agent` (`isolation: worktree`), made off the turn's
    /// thread (git runs).
    async fn isolate(&self, agent: &AgentDefinition) -> Result<super::Isolated, ToolFailure> {
        let isolator = self.shared.isolator.clone().ok_or_else(|| {
            ToolFailure::new(
                ErrorCode::SubagentFailed,
                format!(
                    "the {} agent works in a worktree of its own (isolation: worktree), which \
                     this session cannot make",
                    agent.name
                ),
            )
        })?;
        let (name, host) = (agent.name.clone(), self.shared.host.clone());
        tokio::task::spawn_blocking(move || isolator(&name, &host))
            .await
            .map_err(|e| {
                ToolFailure::new(
                    ErrorCode::Internal,
                    format!("making the worktree stopped: {e}"),
                )
            })?
    }

    /// The conversation `agent` works in, beside this one over the same shared state: a fresh
    /// history and the agent's narrower catalog, placed as `placement` says.
    pub(super) fn child(&self, agent: &AgentDefinition, placement: Placement) -> Conversation {
        let names: Vec<&str> = agent.tool_names().iter().map(|t| t.native()).collect();
        let catalog = self.catalog.narrowed(&names, agent.mcp_scope());
        let (session_id, limits, system_prompt) = match &placement {
            Placement::Call(call_id) => {
                let mut limits = self.limits.clone();
                // Its own limits; the parent's budget bounds the total (`Budget::below`), and
                // the parent's turn its time: the turn's deadline cancels it with the turn.
                limits.max_tool_calls = Some(self.limits.subagent_max_tool_calls);
                limits.max_model_calls = None;
                limits.max_budget_usd = None;
                limits.run_deadline = self.limits.run_deadline.min(self.limits.subagent_deadline);
                let mut prompt = self.system_prompt.clone();
                prompt.push_str(&subagent_note(agent));
                (format!("{}-{call_id}", self.session_id), limits, prompt)
            }
            Placement::Inline => (
                self.session_id.clone(),
                self.limits.clone(),
                self.system_prompt.clone(),
            ),
        };
        let mut child = Conversation::new(
            self.shared.clone(),
            ConversationSetup {
                session_id,
                model: self.model.clone(),
                catalog,
                limits,
                system_prompt,
                history: Vec::new(),
            },
        );
        child.shell_reads_only = agent.read_only();
        match placement {
            Placement::Call(call_id) => {
                child.budget = self.budget.below(&self.limits);
                child.last_turn_mode = self.shared.policy.mode();
                child.scope = Some(Arc::new(SubScope::new(call_id)));
            }
            Placement::Inline => {
                // The same budget, and totals that stay totals.
                child.budget = self.budget.clone();
                child.usage = self.usage;
                child.cost_usd = self.cost_usd;
                child.last_turn_mode = self.last_turn_mode;
            }
        }
        child
    }
}

impl Conversation {
    /// Moves this (subagent's) conversation into the worktree of `isolated`: its tools are
    /// `agent`'s, taken from the worktree's catalog (no MCP tool: the servers work in the
    /// checkout), and it is told where it works.
    fn enter_worktree(&mut self, agent: &AgentDefinition, isolated: super::Isolated) {
        let names: Vec<&str> = agent.tool_names().iter().map(|t| t.native()).collect();
        self.catalog = isolated.catalog.narrowed(&names, None);
        let w = &isolated.isolation.worktree;
        self.system_prompt.push_str(&format!(
            "\nYou work in a git worktree of your own, {}, on the branch {}: your file tools and \
             commands act there, not in the person's checkout. What you change stays on that \
             branch until someone merges it; do not commit unless your task says so.\n",
            w.path.display(),
            w.branch
        ));
        self.isolation = Some(isolated.isolation);
    }
}

/// Where a child conversation ([`Conversation::child`]) works.
pub(super) enum Placement {
    /// The subagent of the `agent.task` call of this id: its events go out under the call, it
    /// has limits of its own within what the parent has left, and it answers with one message.
    Call(String),
    /// A subtask (`/review`, `/init`): the person's own turn in a fresh context, whose events
    /// are the session's, which spends the session's budget and whose messages join the
    /// session's conversation when it ends ([`Conversation::absorb`]).
    Inline,
}

/// What a subagent is told after the session's own system prompt.
fn subagent_note(agent: &AgentDefinition) -> String {
    let mut s = format!(
        "\n# You are a subagent\n\nAnother agent handed you the task in the next message; you \
         do not see its conversation, and it sees only your final answer. Work with the tools \
         you have, then answer with what it asked for: complete, specific (paths, names, line \
         numbers) and short. You are the `{}` agent.\n",
        agent.name
    );
    if agent.read_only() {
        s.push_str(
            "You change nothing: you have no write tool, and only commands known to just read \
             are run.\n",
        );
    }
    if !agent.instructions.is_empty() {
        s.push_str("\n# Your instructions\n\n");
        s.push_str(&agent.instructions);
        s.push('\n');
    }
    s
}

/// Runs one admitted subagent to its end, announced with `SubagentStarted` and
/// `SubagentFinished`, once a slot is free. Boxed as a `Send` future by its signature: a
/// subagent's turn is the same code as the one that starts it, and the compiler proves such a
/// cycle `Send` only through a named type.
fn run_subagent(
    admitted: Admitted,
    call_id: String,
    cancel: CancellationToken,
    slots: Arc<Semaphore>,
) -> futures::future::BoxFuture<'static, SubagentEnd> {
    Box::pin(run_subagent_inner(admitted, call_id, cancel, slots))
}

async fn run_subagent_inner(
    admitted: Admitted,
    call_id: String,
    cancel: CancellationToken,
    slots: Arc<Semaphore>,
) -> SubagentEnd {
    let Admitted {
        mut conversation,
        input,
        agent,
        description,
    } = admitted;
    let _slot = tokio::select! {
        slot = slots.acquire_owned() => slot.ok(),
        () = cancel.cancelled() => None,
    };
    let started = Instant::now();
    if let (Some(model), Some(switcher)) =
        (&agent.model, conversation.shared.model_switcher.clone())
    {
        match switcher(None, model.clone()).await {
            Ok(client) => conversation.model = client,
            Err(e) => conversation.emit(Event::Warning {
                message: format!(
                    "the {} agent asks for the model {model}, which could not be used ({e}); \
                     it runs with the session's",
                    agent.name
                ),
            }),
        }
        conversation.profile = conversation.model.profile();
    }
    conversation.shared.emit(Event::SubagentStarted {
        call_id: call_id.clone(),
        agent: agent.name.clone(),
        description,
        model: conversation.model.model().to_string(),
    });
    let outcome = if cancel.is_cancelled() {
        super::turn::TurnOutcome::Completed {
            stop_reason: StopReason::Cancelled,
            model_calls: 0,
        }
    } else {
        conversation.run_turn(input, cancel).await
    };
    // A task whose attachment cannot go (an image this model does not take) sent nothing; the
    // parent reads why, as it would any failure.
    let (stop_reason, refusal) = match outcome {
        super::turn::TurnOutcome::Completed { stop_reason, .. } => (stop_reason, None),
        super::turn::TurnOutcome::Refused { message, .. } => (StopReason::Error, Some(message)),
    };
    let answer = conversation
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Assistant { text, .. } if !text.trim().is_empty() => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_default();
    conversation.shared.emit(Event::SubagentFinished {
        call_id,
        stop_reason,
        usage: conversation.usage,
        tool_calls: conversation.budget.tool_calls(),
        elapsed_ms: started.elapsed().as_millis() as u64,
    });
    let error = match refusal {
        Some(message) => Some((String::new(), message)),
        None => conversation.scope.as_ref().and_then(|s| s.take_error()),
    };
    let left = conversation.leave_worktree().await;
    let ending = Ending {
        stop_reason,
        answer,
        error,
        left,
    };
    SubagentEnd {
        outcome: subagent_outcome(&agent.name, ending, &conversation),
        usage: conversation.usage,
        cost_usd: conversation.cost_usd,
    }
}

/// How a subagent's task ended, for its result.
struct Ending {
    stop_reason: StopReason,
    answer: String,
    error: Option<(String, String)>,
    /// An isolated subagent's worktree, as it left it.
    left: Option<pablo_tools::agent_task::WorktreeLeft>,
}

/// The parent's tool result: the answer when the subagent finished, else why it did not (and
/// what it had written by then). A subagent stopped by a budget of the session's (the parent's
/// tool calls, the session's network requests) fails with that budget's code, so the parent's
/// turn ends on it exactly as on a call of its own that the budget refused; a subagent that spent
/// only its own budget fails as `subagent_failed`, and the parent goes on.
fn subagent_outcome(agent: &str, ending: Ending, conversation: &Conversation) -> ToolOutcome {
    let Ending {
        stop_reason,
        answer,
        error,
        left,
    } = ending;
    // A failed task's worktree is said too: what it changed there is still there.
    let kept = left
        .as_ref()
        .filter(|l| l.changed)
        .map(|l| {
            format!(
                "; its changes are left in the worktree {} on the branch {}",
                l.path, l.branch
            )
        })
        .unwrap_or_default();
    match stop_reason {
        StopReason::EndTurn | StopReason::MaxTokens => {
            let result = SubagentResult {
                agent: agent.to_string(),
                answer,
                tool_calls: conversation.budget.tool_calls(),
                model_calls: conversation.budget.model_calls(),
                worktree: left,
            };
            ToolOutcome::ok(serde_json::to_value(result).unwrap_or(Value::Null))
        }
        StopReason::Cancelled => ToolFailure::new(
            ErrorCode::Cancelled,
            format!("the {agent} subagent was stopped before it answered{kept}"),
        )
        .into_outcome(),
        StopReason::BudgetExhausted | StopReason::Error => {
            let (code, why) = error.unwrap_or_else(|| (String::new(), "it stopped".into()));
            let code = match ErrorCode::parse(&code) {
                Some(ErrorCode::ToolCallBudgetExhausted)
                    if conversation.budget.parent_refused_a_tool_call() =>
                {
                    ErrorCode::ToolCallBudgetExhausted
                }
                Some(ErrorCode::NetworkBudgetExhausted) => ErrorCode::NetworkBudgetExhausted,
                // A subagent has no cap of its own: the one it reached is the session's.
                Some(ErrorCode::CostBudgetExhausted) => ErrorCode::CostBudgetExhausted,
                _ => ErrorCode::SubagentFailed,
            };
            let mut message = format!("the {agent} subagent did not finish: {why}{kept}");
            if !answer.trim().is_empty() {
                message.push_str("; what it had written: ");
                message.push_str(&answer);
            }
            ToolFailure::new(code, message).into_outcome()
        }
    }
}
