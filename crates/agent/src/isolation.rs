//! `isolation: worktree`: a subagent that works in a git worktree of its own.
//!
//! Its agent file asks for it (Claude Code's front matter field); each of its tasks then gets a
//! fresh worktree of the session's repository on a branch `pablo/<agent>-<tag>`, made by the
//! launch ([`Isolator`]), with a host, a policy, hooks and a catalog rooted there: its file tools
//! open the worktree, its commands run there in the sandbox, its paths are judged against the
//! worktree. What it changes stays on that branch; the session's checkout, its checkpoints and
//! its `file_changed` hooks never see it, and it reaches the checkout only if the person (or the
//! parent) merges the branch. Approvals still go to the session's front-end, and the mode the
//! person chooses holds in the worktree too. When the task ends, a worktree with nothing in it
//! (no change, no commit) is removed with its branch; otherwise the result names both.

use std::sync::Arc;

use super::shared::Shared;
use pablo_core::ToolFailure;
use pablo_hooks::Hooks;
use pablo_policy::PolicyEngine;
use pablo_process::worktree::{Repository, Worktree};
use pablo_session::checkpoint::Checkpoints;
use pablo_tools::agent_task::WorktreeLeft;
use pablo_tools::{Catalog, Host};

/// The worktree an isolated subagent works in, and what its tools work through there.
pub struct Isolation {
    /// The host the task's tools work through, rooted in the worktree.
    pub host: Arc<Host>,
    /// The policy engine that judges the task's calls there.
    pub policy: Arc<PolicyEngine>,
    /// The person's hooks, as they run in the worktree.
    pub hooks: Arc<Hooks>,
    /// The repository the worktree was made from.
    pub repository: Repository,
    /// The worktree itself.
    pub worktree: Worktree,
}

/// What the launch makes for one isolated task: the worktree's parts and its whole catalog (the
/// agent's tools are narrowed from it).
pub struct Isolated {
    /// The worktree and what works through it.
    pub isolation: Isolation,
    /// The worktree's whole catalog.
    pub catalog: Catalog,
}

/// Makes the worktree of one task of the agent named by the first argument; the second is the
/// session's host (the worktree's host shares its count of web requests).
pub type Isolator = Arc<dyn Fn(&str, &Host) -> Result<Isolated, ToolFailure> + Send + Sync>;

/// Where one conversation's tools act and its calls are judged: the session's checkout, or the
/// worktree of an isolated subagent. Every stage that reaches the workspace (a preview, a
/// commit, a hook, the policy's verdict, a checkpoint) asks this, never [`Shared`] directly, so an
/// isolated subagent's calls never touch the checkout.
pub(crate) struct Workplace {
    shared: Arc<Shared>,
    isolation: Option<Isolation>,
}

impl Workplace {
    /// The session's checkout (`isolation: None`) or a worktree of its own.
    pub(crate) fn new(shared: Arc<Shared>, isolation: Option<Isolation>) -> Self {
        Self { shared, isolation }
    }

    /// The host this conversation's tools work through: the worktree's for an isolated
    /// subagent, else the session's.
    pub(crate) fn host(&self) -> &Arc<Host> {
        match &self.isolation {
            Some(i) => &i.host,
            None => &self.shared.host,
        }
    }

    /// The policy this conversation's calls are judged by. An isolated subagent's follows the
    /// mode the person set for the session, also when they switch it while it runs.
    pub(crate) fn policy(&self) -> &Arc<PolicyEngine> {
        match &self.isolation {
            Some(i) => {
                i.policy.set_mode(self.shared.policy.mode());
                &i.policy
            }
            None => &self.shared.policy,
        }
    }

    /// The hooks that run around this conversation's calls (in the worktree for an isolated
    /// subagent).
    pub(crate) fn hooks(&self) -> &Arc<Hooks> {
        match &self.isolation {
            Some(i) => &i.hooks,
            None => &self.shared.hooks,
        }
    }

    /// The session's hooks, wherever this conversation works: `file_changed`, `session_start`
    /// and `pre_compact` are matched against the session's set.
    pub(crate) fn session_hooks(&self) -> &Arc<Hooks> {
        &self.shared.hooks
    }

    /// The session's checkpoints, which hear of this conversation's changes; none for an
    /// isolated subagent, whose changes are not the checkout's.
    pub(crate) fn checkpoints(&self) -> Option<Arc<Checkpoints>> {
        match &self.isolation {
            Some(_) => None,
            None => self.shared.checkpoints.clone(),
        }
    }

    /// The end of an isolated subagent's task: its background commands are stopped, and its
    /// worktree is removed with its branch when it holds nothing new. What is left, for the
    /// result; `None` for a conversation that is not isolated.
    pub(crate) async fn leave_worktree(&self) -> Option<WorktreeLeft> {
        let i = self.isolation.as_ref()?;
        i.host.sessions.kill_all().await;
        let (repo, w) = (i.repository.clone(), i.worktree.clone());
        let removed = tokio::task::spawn_blocking(move || repo.discard_if_unchanged(&w))
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or(false);
        Some(WorktreeLeft {
            branch: i.worktree.branch.clone(),
            path: i.worktree.path.display().to_string(),
            changed: !removed,
        })
    }
}
