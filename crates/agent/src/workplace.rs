//! Where one conversation's tools act: the session's checkout, or an isolated subagent's
//! worktree ([`super::isolation`]). Every stage that reaches the workspace asks a [`Workplace`].

use std::sync::Arc;

use super::isolation::Isolation;
use super::shared::Shared;
use pablo_hooks::Hooks;
use pablo_policy::PolicyEngine;
use pablo_session::checkpoint::Checkpoints;
use pablo_tools::Host;
use pablo_tools::agent_task::WorktreeLeft;

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
