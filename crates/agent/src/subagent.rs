//! Subagents: an `agent.task` call runs a conversation of its own and its final answer is the
//! call's result.
//!
//! An `agent.task` call goes through the tool-call pipeline like any other ([`super::call`]:
//! admission, hooks, policy, approval, the final check); its commit starts the subagent here,
//! through the [`SubagentRunner`] the turn loop was handed ([`super::call::subagents`] says why
//! it is handed in rather than named), and its result is awaited when its turn in the order
//! comes. A subagent is the same unit as the session's turn ([`turn::run_turn`], handed this
//! runner again for its own calls) over the same [`super::shared::Shared`] (so its
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

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::call::subagents::{Parent, SubagentEnd, SubagentRun, Subagents, TaskPlan};
use super::conversation::{Conversation, ConversationSetup};
use super::hooks::with_notes;
use super::isolation::Isolated;
use super::limits::Budget;
use super::outlet::Outlet;
use super::scope::SubScope;
use super::turn::{self, TurnInput, TurnOutcome};
use super::workplace::Workplace;
use pablo_core::{ErrorCode, ToolFailure};
use pablo_model::Message;
use pablo_protocol::{Event, Preview, StopReason, ToolCall, ToolOutcome};
use pablo_tools::agent_task::{AgentDefinition, SubagentResult};

/// Starts the subagents of `agent.task` calls: the [`Subagents`] every turn loop is handed, the
/// session's by its turn task and each subagent's by the runner itself.
pub(crate) struct SubagentRunner;

impl Subagents for SubagentRunner {
    fn start<'a>(
        &'a self,
        parent: Parent<'a>,
        plan: TaskPlan,
        call: &'a ToolCall,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<SubagentRun, ToolFailure>> {
        Box::pin(start_subagent(parent, plan, call, cancel))
    }
}

/// A subagent ready to start.
struct Admitted {
    conversation: Conversation,
    input: TurnInput,
    agent: AgentDefinition,
    description: String,
}

/// Starts the subagent of an admitted, approved `agent.task` call (the commit of such a call):
/// its worktree when its agent works in one, its conversation, and its task, which waits for a
/// free slot of its parent's (`max_parallel_subagents`).
async fn start_subagent(
    parent: Parent<'_>,
    plan: TaskPlan,
    call: &ToolCall,
    cancel: &CancellationToken,
) -> Result<SubagentRun, ToolFailure> {
    let TaskPlan { agent, args } = plan;
    let isolated = if agent.worktree {
        Some(isolate(parent.outlet, &agent).await?)
    } else {
        None
    };
    let mut conversation = child(&parent, &agent, Placement::Call(call.id.clone()));
    if let Some(isolated) = isolated {
        enter_worktree(&mut conversation, &agent, isolated);
    }
    parent.outlet.emit(Event::ToolCallRunning {
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
        parent.slots.clone(),
    ))))
}

/// A fresh worktree for a task of `agent` (`isolation: worktree`), made off the turn's thread
/// (git runs).
async fn isolate(outlet: &Outlet, agent: &AgentDefinition) -> Result<Isolated, ToolFailure> {
    let shared = outlet.shared();
    let isolator = shared.isolator.clone().ok_or_else(|| {
        ToolFailure::new(
            ErrorCode::SubagentFailed,
            format!(
                "the {} agent works in a worktree of its own (isolation: worktree), which this \
                 session cannot make",
                agent.name
            ),
        )
    })?;
    let (name, host) = (agent.name.clone(), shared.host.clone());
    tokio::task::spawn_blocking(move || isolator(&name, &host))
        .await
        .map_err(|e| {
            ToolFailure::new(
                ErrorCode::Internal,
                format!("making the worktree stopped: {e}"),
            )
        })?
}

/// The conversation `agent` works in, beside its parent's over the same shared state: a fresh
/// history and the agent's narrower catalog, placed as `placement` says.
pub(crate) fn child(
    parent: &Parent<'_>,
    agent: &AgentDefinition,
    placement: Placement,
) -> Conversation {
    let names: Vec<&str> = agent.tool_names().iter().map(|t| t.native()).collect();
    let catalog = parent.catalog.narrowed(&names, agent.mcp_scope());
    let (session_id, limits, system_prompt) = match &placement {
        Placement::Call(call_id) => {
            let mut limits = parent.limits.clone();
            // Its own limits; the parent's budget bounds the total (`Budget::below`), and the
            // parent's turn its time: the turn's deadline cancels it with the turn.
            limits.max_tool_calls = Some(parent.limits.subagent_max_tool_calls);
            limits.max_model_calls = None;
            limits.max_budget_usd = None;
            limits.run_deadline = parent
                .limits
                .run_deadline
                .min(parent.limits.subagent_deadline);
            let mut prompt = parent.system_prompt.to_string();
            prompt.push_str(&subagent_note(agent));
            (format!("{}-{call_id}", parent.session_id), limits, prompt)
        }
        Placement::Inline => (
            parent.session_id.to_string(),
            parent.limits.clone(),
            parent.system_prompt.to_string(),
        ),
    };
    let shared = parent.outlet.shared().clone();
    let mut child = Conversation::new(
        shared.clone(),
        ConversationSetup {
            session_id,
            model: parent.model.clone(),
            catalog,
            limits,
            system_prompt,
            history: Vec::new(),
        },
    );
    child.shell_reads_only = agent.read_only();
    match placement {
        Placement::Call(call_id) => {
            child.spend.budget = parent.budget.below(parent.limits);
            child.last_turn_mode = shared.policy.mode();
            child.outlet = Outlet::new(shared, Some(Arc::new(SubScope::new(call_id))));
        }
        // The subtask brings what it shares with the session (`subtask::subcontext`).
        Placement::Inline => {}
    }
    child
}

/// Moves a subagent's conversation into the worktree of `isolated`: its tools are `agent`'s,
/// taken from the worktree's catalog (no MCP tool: the servers work in the checkout), and it is
/// told where it works.
fn enter_worktree(conversation: &mut Conversation, agent: &AgentDefinition, isolated: Isolated) {
    let names: Vec<&str> = agent.tool_names().iter().map(|t| t.native()).collect();
    conversation.catalog = isolated.catalog.narrowed(&names, None);
    let w = &isolated.isolation.worktree;
    conversation.system_prompt.push_str(&format!(
        "\nYou work in a git worktree of your own, {}, on the branch {}: your file tools and \
         commands act there, not in the person's checkout. What you change stays on that branch \
         until someone merges it; do not commit unless your task says so.\n",
        w.path.display(),
        w.branch
    ));
    let shared = conversation.outlet.shared().clone();
    conversation.place = Workplace::new(shared, Some(isolated.isolation));
}

/// Where a child conversation ([`child`]) works.
pub(crate) enum Placement {
    /// The subagent of the `agent.task` call of this id: its events go out under the call, it
    /// has limits of its own within what the parent has left, and it answers with one message.
    Call(String),
    /// A subtask (`/review`, `/init`): the person's own turn in a fresh context, whose events
    /// are the session's, which spends the session's budget and whose messages join the
    /// session's conversation when it ends ([`super::subtask::absorb`]).
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
/// `SubagentFinished`, once a slot is free. Its turn is the same loop as the one that started it;
/// the compiler proves the spawned future `Send` without going round that cycle because the
/// pipeline reaches this runner only as a boxed `dyn` future ([`Subagents::start`]).
async fn run_subagent(
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
    let shared = conversation.outlet.shared().clone();
    if let (Some(model), Some(switcher)) = (&agent.model, shared.model_switcher.clone()) {
        match switcher(None, model.clone()).await {
            // Its window and prices are its own model's, not the parent's.
            Ok(client) => conversation.model.switch(client),
            Err(e) => conversation.outlet.emit(Event::Warning {
                message: format!(
                    "the {} agent asks for the model {model}, which could not be used ({e}); \
                     it runs with the session's",
                    agent.name
                ),
            }),
        }
    }
    shared.emit(Event::SubagentStarted {
        call_id: call_id.clone(),
        agent: agent.name.clone(),
        description,
        model: conversation.model.client.model().to_string(),
    });
    let outcome = if cancel.is_cancelled() {
        TurnOutcome::Completed {
            stop_reason: StopReason::Cancelled,
            model_calls: 0,
        }
    } else {
        turn::run_turn(&mut conversation, &SubagentRunner, input, cancel).await
    };
    // A task whose attachment cannot go (an image this model does not take) sent nothing; the
    // parent reads why, as it would any failure.
    let (stop_reason, refusal) = match outcome {
        TurnOutcome::Completed { stop_reason, .. } => (stop_reason, None),
        TurnOutcome::Refused { message, .. } => (StopReason::Error, Some(message)),
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
    let spend = &conversation.spend;
    shared.emit(Event::SubagentFinished {
        call_id,
        stop_reason,
        usage: spend.usage,
        tool_calls: spend.budget.tool_calls(),
        elapsed_ms: started.elapsed().as_millis() as u64,
    });
    let error = match refusal {
        Some(message) => Some((String::new(), message)),
        None => conversation.outlet.scope().and_then(|s| s.take_error()),
    };
    let left = conversation.place.leave_worktree().await;
    let ending = Ending {
        stop_reason,
        answer,
        error,
        left,
    };
    // What its hooks left for a next prompt (a `file_changed` hook that rewrote a file it wrote)
    // has no next prompt here: it goes with the result, to the parent's model.
    let notes = std::mem::take(&mut conversation.hook_notes);
    let notes = notes.into_iter().map(serde_json::Value::from).collect();
    SubagentEnd {
        outcome: with_notes(subagent_outcome(&agent.name, ending, &spend.budget), notes),
        usage: spend.usage,
        cost_usd: spend.cost_usd,
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
fn subagent_outcome(agent: &str, ending: Ending, budget: &Budget) -> ToolOutcome {
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
                tool_calls: budget.tool_calls(),
                model_calls: budget.model_calls(),
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
                Some(ErrorCode::ToolCallBudgetExhausted) if budget.parent_refused_a_tool_call() => {
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
