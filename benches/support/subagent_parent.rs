//! What `benches/subagent.rs` measures, included by it (`#[path]`) beside `support/agent.rs`.
//!
//! The parent agent whose spans it times; its script and its clock stay in the bench.

// A bench whose set-up fails should stop loudly.
#![allow(clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use super::agent::{Agent, AgentLoop, AgentReply, AgentRequest, instant_model, reading_catalog};
use super::agent::{spawn_agent, workspace};
use pablo_tools::agent_task::AgentRoster;

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
        .register(Arc::new(pablo_tools::plan::PlanUpdate))
        .expect("update_plan registers once");
    catalog
        .register_agents(Arc::new(AgentRoster::new(Vec::new())))
        .expect("agent_task registers once");
    spawn_agent(Agent {
        model,
        catalog,
        workspace: ws,
        state,
        hooks: pablo_hooks::Hooks::none(),
        system_prompt: pablo_agent::context::SYSTEM_PROMPT,
    })
}
