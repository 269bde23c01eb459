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

use pablo_core::ToolFailure;
use pablo_hooks::Hooks;
use pablo_policy::PolicyEngine;
use pablo_process::worktree::{Repository, Worktree};
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
