//! What `benches/hooks.rs` measures, included by it (`#[path]`) beside `support/agent.rs`.
//!
//! The hooks it compares, the matching the agent does at the tool seams, the agents whose turns
//! it times and the hook it spawns; its script and its bare `/bin/sh` bound stay in the bench.

// A bench whose set-up fails should stop loudly.
#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::agent::{Agent, AgentLoop, AgentReply, AgentRequest, instant_model, reading_catalog};
use super::agent::{spawn_agent, workspace};
use pablo_config::HookEntry;
use pablo_hooks::{Hook, HookEvent, Hooks};
use pablo_workspace::Workspace;

/// The hooks a case runs with.
#[derive(Clone, Copy)]
pub enum HooksCase {
    /// None configured.
    NoHooks,
    /// Eight hooks, four per tool event, none of them for `fs.read`; one has a
    /// `command_matcher` (a shell hook, which must not make other calls parse anything).
    EightNonMatching,
}

fn entry(matcher: &str, command_matcher: Option<&str>, command: &str) -> HookEntry {
    HookEntry {
        name: None,
        matcher: Some(matcher.into()),
        command_matcher: command_matcher.map(str::to_string),
        command: command.into(),
        timeout_ms: None,
        on_failure: None,
    }
}

fn hooks_of(case: HooksCase) -> Hooks {
    let mut hooks = Hooks::default();
    if let HooksCase::EightNonMatching = case {
        for event in [HookEvent::PreToolUse, HookEvent::PostToolUse] {
            for (matcher, command_matcher) in [
                (r"shell\.run", Some("^git push")),
                (r"fs\.(write|edit)", None),
                ("mcp__.*", None),
                (r"web\.fetch|agent\.task", None),
            ] {
                hooks
                    .push(event, &entry(matcher, command_matcher, "exit 2"))
                    .expect("the bench's hooks are valid");
            }
        }
    }
    hooks
}

/// A case's hooks, for the matching at the seams.
pub struct HooksSeam(Hooks);

impl HooksSeam {
    pub fn new(case: HooksCase) -> Self {
        Self(hooks_of(case))
    }

    /// What the agent does at both seams for one call to `tool` (`Hooks::pre_tool_matching`, as
    /// agent/hooks.rs calls it, and the `post_tool_use` matching). Returns how many hooks would run, plus one if the command would be parsed.
    pub fn seam(&self, tool: &str) -> usize {
        let hooks = &self.0;
        let mut n = 0;
        if hooks.any(HookEvent::PreToolUse) {
            let mut parsed = 0;
            let matching = hooks.pre_tool_matching(tool, || {
                parsed = 1;
                None
            });
            n += matching.len() + parsed;
        }
        if hooks.any(HookEvent::PostToolUse) {
            n += hooks
                .matching(HookEvent::PostToolUse, Some(tool), None)
                .count();
        }
        n
    }
}

/// The agents of the timed turns: one workspace and one state directory for all, each case's
/// hooks made once.
pub struct HooksTurn {
    ws: Arc<Workspace>,
    state: PathBuf,
    no_hooks: Arc<Hooks>,
    eight_non_matching: Arc<Hooks>,
}

impl HooksTurn {
    /// Over the workspace `dir`, with `state` as the agent's state directory.
    pub fn new(dir: &Path, state: &Path) -> Self {
        Self {
            ws: workspace(dir),
            state: state.to_path_buf(),
            no_hooks: Arc::new(hooks_of(HooksCase::NoHooks)),
            eight_non_matching: Arc::new(hooks_of(HooksCase::EightNonMatching)),
        }
    }

    /// An agent with `case`'s hooks: the file tools, a model (`bench-model`) answering with
    /// `respond`, a one-word system prompt. Call from inside a tokio runtime.
    pub fn spawn<F>(&self, case: HooksCase, respond: F) -> AgentLoop
    where
        F: Fn(&AgentRequest<'_>) -> AgentReply + Send + Sync + 'static,
    {
        let hooks = match case {
            HooksCase::NoHooks => &self.no_hooks,
            HooksCase::EightNonMatching => &self.eight_non_matching,
        };
        let model = instant_model("bench-model", respond);
        spawn_agent(Agent {
            model,
            catalog: reading_catalog(&self.ws),
            workspace: self.ws.clone(),
            state: &self.state,
            hooks: hooks.clone(),
            system_prompt: "bench",
        })
    }
}

/// A hook that matches every tool and whose command is `true`, run with the `PATH` of the
/// bench's environment in `cwd`.
pub struct HooksNoop {
    hooks: Hooks,
    hook: Hook,
    input: serde_json::Value,
}

impl HooksNoop {
    /// The hook, to be given `input` on its stdin.
    pub fn new(cwd: &Path, input: serde_json::Value) -> Self {
        let path = std::env::var("PATH").unwrap_or_default();
        let mut hooks = Hooks::new(vec![("PATH".into(), path)], cwd.to_path_buf());
        hooks
            .push(HookEvent::PreToolUse, &entry(".*", None, "true"))
            .expect("a hook for every tool is valid");
        let hook = hooks.of(HookEvent::PreToolUse)[0].clone();
        Self { hooks, hook, input }
    }

    /// Runs the hook through `Hooks::run` (clean environment, process group, bounded reads,
    /// timeout, redaction) and waits for it.
    pub async fn run(&self) {
        self.hooks.run(&self.hook, &self.input).await;
    }
}
