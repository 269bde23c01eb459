//! What `benches/subagent.rs` measures; see [`super`].
//!
//! The parent agent whose spans it times, set up here so the bench names no engine type; its
//! script and its clock stay in the bench.

use std::path::Path;
use std::sync::Arc;

use super::agent::{Agent, AgentLoop, AgentReply, AgentRequest, instant_model, reading_catalog};
use super::agent::{spawn_agent, workspace};
use crate::tools::agent_task::AgentRoster;

/// The parent agent over the repository at `root`: pablo's system prompt, the file tools,
/// `update_plan` and `agent_task` (the built-in agents only), a model (`claude-sonnet-4-5`)
/// answering with `respond`. Call from inside a tokio runtime.
pub fn subagent_spawn<F>(root: &Path, state: &Path, respond: F) -> AgentLoop
where
    F: Fn(&AgentRequest<'_>) -> AgentReply + Send + Sync + 'static,
{
    let model = instant_model("claude-sonnet-4-5", respond);
    let ws = workspace(root);
    let mut catalog = reading_catalog(&ws);
    catalog
        .register(Arc::new(crate::tools::plan::PlanUpdate))
        .expect("update_plan registers once");
    catalog
        .register_agents(Arc::new(AgentRoster::new(Vec::new())))
        .expect("agent_task registers once");
    spawn_agent(Agent {
        model,
        catalog,
        workspace: ws,
        state,
        hooks: crate::hooks::Hooks::none(),
        system_prompt: crate::agent::context::SYSTEM_PROMPT,
    })
}
