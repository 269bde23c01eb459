//! What a `workspace-write` command must not change, even inside the workspace it may write:
//! whatever git or pablo will later execute or read as configuration.
//!
//! - every `.git` of the workspace, whole (the repository's and those of nested repositories and
//!   submodules, what a `.git` file points to when that lies in a writable root): its config,
//!   hooks, `commondir`, `info/`, alternates, and also its index, through which a command could
//!   make a planted repository a submodule that the next `git status` enters;
//! - every `.pablo` (the project config pablo reads);
//! - pablo's own config, data and state directories, wherever they lie (`/tmp` is writable).
//!
//! Landlock only grants, so these are bound read-only in the command's own mount namespace. A
//! mount needs something to cover, and a command could create `.git` or `.pablo` where none
//! was, so where they are missing at the workspace root an empty directory is made first (git
//! looks past an empty `.git`; both are removed again when the session ends, if still empty).
//! A path is only as safe as the way to it: a command that may write the directory holding a
//! protected path (or one above it) could rename that directory and put its own in its place,
//! so each such directory is pinned (bound onto itself: a mount point cannot be renamed or
//! removed).
//!
//! Where they are is [`super::nested`]'s answer: kept current between the commands of a session,
//! walked for a one-shot run. A workspace with more directories than the limit cannot be answered
//! whole, and the shield says so ([`Shield::walk_cut`]) rather than protect part of it: the
//! sandbox then refuses the command.
//!
//! What this cannot do: a `.git` or `.pablo` created deeper in the workspace by a command is not
//! protected until the next command starts (it is found then); a name cannot be reserved
//! everywhere in advance. Such a repository is inert for the enclosing repository's `git status`
//! unless its index lists it, and the index is protected.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The most directories of a workspace searched for nested `.git` and `.pablo` when config says
/// nothing (`[options.shell] protect_max_dirs`).
pub const MAX_WALK_DIRS: usize = 200_000;

/// The protected paths of one command and the directories to pin on the way to them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Shield {
    /// Directories bound onto themselves, outermost first.
    pub pins: Vec<PathBuf>,
    /// Files and directories bound read-only, outermost first.
    pub read_only: Vec<PathBuf>,
    /// Whether the workspace has more directories than the limit, so that nested repositories
    /// may have been missed: the command must not run with this shield.
    pub walk_cut: bool,
}

/// Placeholders made by this process, removed (when still empty) by [`remove_placeholders`].
static PLACEHOLDERS: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// Computes the shield of a command in `workspace` whose writable roots are `writable`
/// (the workspace aside), with pablo's own directories `own`, searching at most `max_dirs`
/// directories. Creates the placeholders and pablo's missing directories (they must exist to be
/// covered).
pub fn compute(workspace: &Path, writable: &[PathBuf], own: &[PathBuf], max_dirs: usize) -> Shield {
    let canonical = |p: &Path| std::fs::canonicalize(p).ok();
    let Some(workspace) = canonical(workspace) else {
        return Shield::default();
    };
    let mut roots: Vec<PathBuf> = vec![workspace.clone()];
    roots.extend(writable.iter().filter_map(|p| canonical(p)));
    let writable_at = |p: &Path| roots.iter().any(|r| p.starts_with(r));

    let mut targets: BTreeSet<PathBuf> = BTreeSet::new();
    for name in [".git", ".pablo"] {
        let p = workspace.join(name);
        if std::fs::symlink_metadata(&p).is_err()
            && std::fs::create_dir(&p).is_ok()
            && let Ok(mut set) = PLACEHOLDERS.lock()
        {
            set.insert(p.clone());
        }
    }
    let mut shield = Shield::default();
    let found = super::nested::find(&workspace, max_dirs);
    shield.walk_cut = !found.complete;
    tracing::debug!(
        target: "pablo::shield",
        found = found.paths.len(),
        directories_read = found.read,
        watched = found.watched,
        complete = found.complete,
        "where the .git and .pablo to protect are"
    );
    for entry in found.paths {
        targets.insert(entry.clone());
        // A `.git` file names the git directory; when that lies where commands may write, it
        // is protected too (with the main repository it belongs to).
        if let Some(dir) = git_file_target(&entry) {
            for d in [dir.clone(), common_dir(&dir)] {
                if writable_at(&d) {
                    targets.insert(d);
                }
            }
        }
    }
    for dir in own {
        let dir = match canonical(dir) {
            Some(d) => d,
            None => {
                let _ = std::fs::create_dir_all(dir);
                match canonical(dir) {
                    Some(d) => d,
                    None => continue,
                }
            }
        };
        if writable_at(&dir) {
            targets.insert(dir);
        }
    }
    let kept = outermost(&targets);
    let mut pins: BTreeSet<PathBuf> = BTreeSet::new();
    for t in &kept {
        let mut dir = t.clone();
        while dir.pop() {
            if dir.parent().is_some_and(&writable_at) {
                pins.insert(dir.clone());
            }
        }
    }
    // Outermost first: a path sorts before everything below it.
    shield.pins = pins.into_iter().collect();
    shield.read_only = kept;
    shield
}

/// The targets not inside another: a target inside another is covered by it.
fn outermost(targets: &BTreeSet<PathBuf>) -> Vec<PathBuf> {
    targets
        .iter()
        .filter(|t| !targets.iter().any(|o| o != *t && t.starts_with(o)))
        .cloned()
        .collect()
}

/// The shield of a program pablo starts outside the command sandbox (a hook, an MCP server): it
/// may write anywhere the person may, except pablo's own directories `own` (made when missing),
/// so that nothing it was tricked into running can trust a folder or plant a rule. Every
/// directory on the way to them is pinned, since any of them could be renamed away.
pub fn own_only(own: &[PathBuf]) -> Shield {
    let mut targets: BTreeSet<PathBuf> = BTreeSet::new();
    for dir in own {
        if std::fs::symlink_metadata(dir).is_err() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Ok(d) = std::fs::canonicalize(dir) {
            targets.insert(d);
        }
    }
    let kept = outermost(&targets);
    let mut pins: BTreeSet<PathBuf> = BTreeSet::new();
    for t in &kept {
        let mut dir = t.clone();
        // `/` itself cannot be renamed, and binding it would change nothing.
        while dir.pop() && dir.parent().is_some() {
            pins.insert(dir.clone());
        }
    }
    Shield {
        pins: pins.into_iter().collect(),
        read_only: kept,
        walk_cut: false,
    }
}

/// The git directory a `.git` file names, canonical.
fn git_file_target(dot_git: &Path) -> Option<PathBuf> {
    let meta = std::fs::symlink_metadata(dot_git).ok()?;
    if !meta.is_file() {
        return None;
    }
    let text = std::fs::read_to_string(dot_git).ok()?;
    let named = text.trim().strip_prefix("gitdir:")?.trim().to_string();
    std::fs::canonicalize(dot_git.parent()?.join(named)).ok()
}

/// The common directory of a git directory (itself unless `commondir` says otherwise).
fn common_dir(git_dir: &Path) -> PathBuf {
    std::fs::read_to_string(git_dir.join("commondir"))
        .ok()
        .and_then(|c| std::fs::canonicalize(git_dir.join(c.trim())).ok())
        .unwrap_or_else(|| git_dir.to_path_buf())
}

/// Removes the placeholders made under `workspace` that are still empty (the session is over).
pub fn remove_placeholders(workspace: &Path) {
    let Ok(mut set) = PLACEHOLDERS.lock() else {
        return;
    };
    let mine: Vec<PathBuf> = set
        .iter()
        .filter(|p| p.starts_with(workspace))
        .cloned()
        .collect();
    for p in mine {
        // `remove_dir` only removes an empty directory: anything put there stays.
        let _ = std::fs::remove_dir(&p);
        set.remove(&p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_started_program_s_shield_covers_pablo_s_directories_and_pins_the_way_to_them() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let state = root.join("home/.local/state/pablo");
        let config = root.join("home/.config/pablo");
        let s = own_only(&[config.clone(), state.clone(), state.join("inner")]);
        assert!(
            state.is_dir() && config.is_dir(),
            "missing directories are made"
        );
        assert_eq!(
            s.read_only,
            vec![config, state],
            "a directory inside another is covered by it"
        );
        for way in ["home", "home/.config", "home/.local", "home/.local/state"] {
            assert!(
                s.pins.contains(&root.join(way)),
                "{way} is pinned: {:?}",
                s.pins
            );
        }
        assert!(!s.pins.iter().any(|p| p == Path::new("/")));
        assert!(!s.walk_cut);
    }

    #[test]
    fn protected_paths_are_found_at_every_depth_and_missing_ones_made() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let ws = root.join("ws");
        std::fs::create_dir_all(ws.join("vendor/dep/.git")).unwrap();
        std::fs::create_dir_all(ws.join("sub/.pablo")).unwrap();
        std::fs::create_dir_all(ws.join("node_modules/x")).unwrap();
        let own = root.join("state/pablo");
        let s = compute(
            &ws,
            std::slice::from_ref(&root),
            std::slice::from_ref(&own),
            MAX_WALK_DIRS,
        );
        assert!(ws.join(".git").is_dir() && ws.join(".pablo").is_dir());
        assert!(
            own.is_dir(),
            "pablo's directory is made so it can be covered"
        );
        for p in [
            ws.join(".git"),
            ws.join(".pablo"),
            ws.join("vendor/dep/.git"),
            ws.join("sub/.pablo"),
            own.clone(),
        ] {
            assert!(s.read_only.contains(&p), "{p:?} not protected: {s:?}");
        }
        // Every directory whose parent a command may write is pinned, down to the targets.
        for p in [
            ws.clone(),
            ws.join("vendor"),
            ws.join("vendor/dep"),
            ws.join("sub"),
            root.join("state"),
        ] {
            assert!(s.pins.contains(&p), "{p:?} not pinned: {s:?}");
        }
        assert!(!s.pins.contains(&root), "{s:?}");
        remove_placeholders(&ws);
        assert!(!ws.join(".git").exists() && !ws.join(".pablo").exists());
        assert!(ws.join("vendor/dep/.git").exists());
    }

    #[test]
    fn outside_the_writable_roots_nothing_is_pinned_above_the_workspace() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        let s = compute(&ws, &[], &[], MAX_WALK_DIRS);
        assert_eq!(s.read_only, vec![ws.join(".git"), ws.join(".pablo")]);
        assert!(s.pins.is_empty(), "{s:?}");
        remove_placeholders(&ws);
    }
}
