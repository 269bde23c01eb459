//! The pipeline's way to subagents, handed in from above.
//!
//! The recursion is inherent: the commit of an `agent.task` call starts a subagent, which runs
//! turns of a conversation of its own ([`crate::turn`]), whose calls come through this pipeline
//! again. If the pipeline named the code that starts subagents, the files of the agent would
//! import each other round that cycle (pipeline → subagent → turn → pipeline). So the pipeline
//! names only this trait; the turn loop is handed an implementation by whoever runs it (the
//! session's turn task, and the subagent runner for the turns of its children), and passes it
//! on to each call ([`super::Pipeline::subagents`]). The imports then point one way: the runner
//! ([`crate::subagent`]) knows the turn loop and this trait, the turn loop knows the pipeline,
//! and the pipeline knows neither.
//!
//! What a subagent inherits from its parent is the [`Parent`] the pipeline assembles from the
//! borrows it was given; what it hands back is a [`SubagentRun`], awaited by the pipeline's
//! finish, which adds the subagent's spending to the parent's.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::super::outlet::Outlet;
use super::super::{Budget, Limits};
use pablo_core::{ErrorCode, ToolFailure, ToolName};
use pablo_model::ModelClient;
use pablo_protocol::{ToolCall, ToolOutcome, Usage};
use pablo_tools::Catalog;
use pablo_tools::agent_task::{AgentDefinition, AgentTaskArgs, DEFAULT_AGENT};

/// Starts the subagent of an admitted, approved `agent.task` call. The only implementation is
/// [`crate::subagent::SubagentRunner`]; the trait exists so that the pipeline does not import it
/// (see the module docs).
pub(crate) trait Subagents: Send + Sync {
    /// Starts `plan`'s subagent for `call` beneath `parent`; it works until its run is awaited
    /// or `cancel` fires.
    fn start<'a>(
        &'a self,
        parent: Parent<'a>,
        plan: TaskPlan,
        call: &'a ToolCall,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<SubagentRun, ToolFailure>>;
}

/// What a subagent's conversation is made from: its parent's, borrowed for the start.
pub(crate) struct Parent<'a> {
    pub(crate) session_id: &'a str,
    pub(crate) model: &'a Arc<dyn ModelClient>,
    pub(crate) system_prompt: &'a str,
    pub(crate) catalog: &'a Catalog,
    pub(crate) limits: &'a Limits,
    /// The parent's budget, which the subagent's calls are taken from too.
    pub(crate) budget: &'a Budget,
    pub(crate) outlet: &'a Outlet,
    /// The parent's slots: at most `max_parallel_subagents` of its subagents work at once.
    pub(crate) slots: &'a Arc<Semaphore>,
}

/// An `agent.task` call's plan: its agent, and the task handed to it.
pub(crate) struct TaskPlan {
    pub(crate) agent: AgentDefinition,
    pub(crate) args: AgentTaskArgs,
}

impl TaskPlan {
    /// The agent the call names (the default one without a name) from `catalog`'s roster; an
    /// agent that is not defined is refused with the names of those that are.
    pub(crate) fn new(catalog: &Catalog, args: &Value) -> Result<Self, ToolFailure> {
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

/// What a finished subagent hands its parent.
pub(crate) struct SubagentEnd {
    pub(crate) outcome: ToolOutcome,
    pub(crate) usage: Usage,
    pub(crate) cost_usd: Option<f64>,
}

/// A subagent at work, awaited by the pipeline's finish.
pub(crate) struct SubagentRun(pub(crate) JoinHandle<SubagentEnd>);
