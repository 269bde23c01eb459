//! Git worktrees from the launch's side: `--worktree NAME` (the session works in a worktree of
//! the repository, docs/worktrees.md), `pablo worktree list|remove`, and the worktree each task
//! of an `isolation: worktree` agent runs in, with tools rooted there.
//!
//! The git work itself is [`pablo_process::worktree`]'s; here a worktree becomes a workspace:
//! the same subdirectory of it as the one pablo was started in, and for an isolated subagent a
//! host, a policy, hooks and a catalog of its own, built from the session's config layers like
//! the session's, so every rule of the checkout holds in the worktree (its `.git` and the
//! repository's git directory read-only to commands, the trust of the checkout, the same
//! authority flags).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{HostParts, Launch, LaunchError, offer_what_policy_allows, workspace_options};
use pablo_agent::{Isolated, Isolation, Isolator};
use pablo_core::{Coded, ErrorCode, ToolFailure};
use pablo_process::worktree::{Repository, WorktreeError, find_git};
use pablo_workspace::Workspace;

pub use pablo_process::worktree::{WorktreeEntry, WorktreeState};

impl From<WorktreeError> for LaunchError {
    fn from(e: WorktreeError) -> Self {
        LaunchError::Worktree {
            code: e.code(),
            message: e.to_string(),
        }
    }
}

/// The repository `dir` (the workspace, else the current directory) belongs to.
fn repository(dir: Option<&Path>) -> Result<Repository, LaunchError> {
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir().map_err(|e| LaunchError::Workspace {
            path: PathBuf::from("."),
            message: e.to_string(),
        })?,
    };
    let git = find_git().ok_or_else(|| LaunchError::Worktree {
        code: ErrorCode::WorktreeFailed,
        message: "git is not installed (no `git` on PATH), so no worktree can be made".into(),
    })?;
    Ok(Repository::find(&git, &dir)?)
}

/// The directory of `worktree` that matches `dir`'s place in `top` (the same subdirectory,
/// when it exists there; else the worktree's top).
fn same_place(top: &Path, dir: &Path, worktree: &Path) -> PathBuf {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    match dir.strip_prefix(top) {
        Ok(rel) if !rel.as_os_str().is_empty() && worktree.join(rel).is_dir() => worktree.join(rel),
        _ => worktree.to_path_buf(),
    }
}

/// `--worktree NAME`: the worktree NAME of the repository `dir` (the workspace, else the
/// current directory) is in, made from HEAD on the branch `pablo/NAME` unless it exists. Returns
/// it, the directory the session works in (the same subdirectory as `dir`'s), and whether it
/// was made now.
pub fn enter_worktree(
    dir: Option<&Path>,
    name: &str,
) -> Result<(WorktreeEntry, PathBuf, bool), LaunchError> {
    let repo = repository(dir)?;
    let w = repo.create(name)?;
    let start = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir().unwrap_or_else(|_| repo.top().to_path_buf()),
    };
    let workspace = same_place(repo.top(), &start, &w.path);
    let entry = WorktreeEntry {
        name: w.name,
        branch: w.branch,
        path: w.path,
        state: WorktreeState::Clean,
    };
    Ok((entry, workspace, w.created))
}

/// `pablo worktree list`: the worktrees pablo made of the repository `dir` is in.
pub fn worktree_list(dir: Option<&Path>) -> Result<Vec<WorktreeEntry>, LaunchError> {
    Ok(repository(dir)?.list()?)
}

/// `pablo worktree remove NAME [--force]`: the worktree as it was, and whether its branch was
/// deleted too (only when merged into the main checkout's HEAD).
pub fn worktree_remove(
    dir: Option<&Path>,
    name: &str,
    force: bool,
) -> Result<(WorktreeEntry, bool), LaunchError> {
    let repo = repository(dir)?;
    let state = repo
        .list()?
        .into_iter()
        .find(|e| e.name == name)
        .map(|e| e.state)
        .unwrap_or(WorktreeState::Missing);
    let removal = repo.remove(name, force)?;
    let entry = WorktreeEntry {
        name: removal.name,
        branch: removal.branch,
        path: removal.path,
        state,
    };
    Ok((entry, removal.branch_deleted))
}

/// A failure of the isolation as the parent model reads it.
fn refusal(e: impl Into<LaunchError>) -> ToolFailure {
    let e: LaunchError = e.into();
    ToolFailure::new(e.code(), format!("no worktree for the subagent: {e}"))
}

/// A short random tag for a task's worktree name (`pablo/<agent>-<tag>`).
fn short_tag() -> String {
    let id = uuid::Uuid::now_v7().simple().to_string();
    // The end of a v7 id is random; its start is the time.
    id[id.len() - 8..].to_string()
}

impl Launch {
    /// What makes the worktree of each task of an `isolation: worktree` agent, and that
    /// worktree's own host, policy, hooks and catalog: built like the session's, from the same
    /// config layers, authority flags and trust, rooted at the worktree.
    pub(super) fn isolator(&self, session_id: &str) -> Isolator {
        let dirs = self.dirs.clone();
        let layers = self.layers.clone();
        let limits = self.limits.clone();
        let options = self.options.clone();
        let workspace = self.workspace.clone();
        let trust = self.trust;
        let state_dir = self.session_state_dir(session_id).join("worktrees");
        Arc::new(move |agent: &str, parent: &pablo_tools::Host| {
            let repo = repository(Some(&workspace)).map_err(refusal)?;
            let w = repo
                .create(&format!("{agent}-{}", short_tag()))
                .map_err(refusal)?;
            let dir = same_place(repo.top(), &workspace, &w.path);
            let build = || -> Result<Isolated, LaunchError> {
                let handle =
                    Workspace::open_with(&dir, workspace_options(&layers)).map_err(|e| {
                        LaunchError::Workspace {
                            path: dir.clone(),
                            message: e.to_string(),
                        }
                    })?;
                let mut launch = Launch::from_parts(
                    dirs.clone(),
                    dir.clone(),
                    Arc::new(handle),
                    layers.clone(),
                    limits.clone(),
                    options.clone(),
                );
                // The worktree holds the same repository: the session's trust is its trust.
                launch.trust = trust;
                let policy = launch.policy()?.value;
                let mut catalog = launch.catalog(&policy)?;
                offer_what_policy_allows(&mut catalog, &policy);
                let parts = HostParts {
                    network: Some(parent.network.clone()),
                    ..HostParts::default()
                };
                let host = launch.host_in(state_dir.join(&w.name), &policy, parts)?;
                let hooks = Arc::new(launch.hooks(&policy));
                Ok(Isolated {
                    catalog,
                    isolation: Isolation {
                        host,
                        policy,
                        hooks,
                        repository: repo.clone(),
                        worktree: w.clone(),
                    },
                })
            };
            build().map_err(|e| {
                // Nothing was done in it yet: it goes.
                let _ = repo.discard_if_unchanged(&w);
                refusal(e)
            })
        })
    }
}
