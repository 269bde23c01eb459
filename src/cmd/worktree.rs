//! Git worktrees from the command line (docs/worktrees.md): `--worktree NAME` on `pablo` and
//! `pablo run` moves the session into the worktree NAME (made from HEAD on `pablo/NAME` unless
//! it exists), and `pablo worktree list|remove` keeps them.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;

use crate::Common;

#[derive(Subcommand, Debug)]
pub(crate) enum WorktreeCommand {
    /// The worktrees pablo made of this repository: name, branch, state (clean, dirty: with
    /// uncommitted changes, missing: its directory is gone) and path.
    List {
        /// One JSON object per worktree, one per line.
        #[arg(long)]
        json: bool,
    },
    /// Remove the worktree NAME (refused while it has uncommitted changes, unless --force); its
    /// branch goes too when the checkout's HEAD already holds every commit of it.
    Remove {
        /// The worktree's name (its branch is pablo/NAME).
        name: String,
        /// Remove it even with uncommitted changes (they are lost).
        #[arg(long)]
        force: bool,
        /// Print what was removed as one JSON object.
        #[arg(long)]
        json: bool,
    },
}

impl WorktreeCommand {
    pub(crate) fn prints_json(&self) -> bool {
        match self {
            WorktreeCommand::List { json } | WorktreeCommand::Remove { json, .. } => *json,
        }
    }
}

/// `--worktree NAME`: makes (or finds) the worktree and points the session's workspace at it,
/// saying so on stderr (stdout is the run's own).
pub(crate) fn enter(common: &mut Common, name: &str) -> Result<()> {
    let (entry, workspace, created) =
        pablo::launch::enter_worktree(common.workspace.as_deref(), name)?;
    eprintln!(
        "pablo: {} worktree {} on branch {} ({})",
        if created {
            "working in the new"
        } else {
            "working in the"
        },
        entry.name,
        entry.branch,
        entry.path.display()
    );
    common.workspace = Some(workspace);
    Ok(())
}

pub(crate) fn command(common: &Common, command: WorktreeCommand) -> Result<ExitCode> {
    let dir: Option<PathBuf> = common.workspace.clone();
    match command {
        WorktreeCommand::List { json } => {
            let entries = pablo::launch::worktree_list(dir.as_deref())?;
            for e in &entries {
                if json {
                    outln!("{}", serde_json::to_string(e)?);
                } else {
                    outln!(
                        "{:<20} {:<28} {:<8} {}",
                        e.name,
                        e.branch,
                        e.state,
                        e.path.display()
                    );
                }
            }
            if entries.is_empty() && !json {
                eprintln!("pablo: no worktree of this repository was made by pablo");
            }
            Ok(ExitCode::SUCCESS)
        }
        WorktreeCommand::Remove { name, force, json } => {
            let (entry, branch_deleted) =
                pablo::launch::worktree_remove(dir.as_deref(), &name, force)?;
            if json {
                let line = serde_json::json!({
                    "type": "worktree_removed",
                    "name": entry.name,
                    "branch": entry.branch,
                    "path": entry.path,
                    "branch_deleted": branch_deleted,
                });
                outln!("{line}");
            } else {
                outln!(
                    "removed the worktree {} ({})",
                    entry.name,
                    entry.path.display()
                );
                if branch_deleted {
                    outln!(
                        "deleted the branch {}: HEAD holds every commit of it",
                        entry.branch
                    );
                } else {
                    outln!(
                        "kept the branch {}: it has commits HEAD does not (`git branch -D {}` deletes it)",
                        entry.branch,
                        entry.branch
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
