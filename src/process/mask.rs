//! The credential mask: what a read-only command cannot see when the policy allowed it only
//! because it cannot see a secret (`grep -rn x .` with a `.env` below, `ls *.py`, a program's
//! `--version`).
//!
//! In the command's own mount namespace, before Landlock:
//! - every file or directory of the workspace whose name the credential rule names (`.env`,
//!   `id_rsa`, `*.pem`, …) is covered: a file by `/dev/null`, a directory by an empty read-only
//!   tmpfs. A link with such a name is followed, and its target covered when it lies in the
//!   workspace;
//! - the home directory is left out, except the way to the workspace (and, for a linked git
//!   worktree, to its repository's git directories in the main checkout) and the toolchains the
//!   command's `PATH` runs from (`~/.cargo`, `~/.rustup`, `~/.pyenv`, `~/.local/bin`, …): every
//!   other entry of the home directory (and of each directory on the way to what is kept) is
//!   covered, so `~/.ssh`, `~/.aws`, `~/.netrc`, `~/.config` and other projects' `.env` files are
//!   all gone. cargo's token files inside a kept toolchain are covered too;
//! - pablo's own config, data and state directories are covered, except the directory of the
//!   files pablo writes for the command itself (its rg config, git attributes and config copies).
//!
//! The provider key is never in a command's environment, and pablo's own environment block no
//! longer holds it (`protect`). What the mask cannot do: hide a secret whose file name the
//! credential rule does not name, or a file outside both the workspace and the home directory
//! (`/etc`); the known-safe checks keep every path a command names inside the workspace.
//!
//! The walk of the workspace is bounded ([`MAX_MASK_WALK`] entries); a larger workspace is not
//! masked, and the command is not run (the policy asks instead where it can).

use std::path::{Path, PathBuf};

/// The most workspace entries looked at for credential names: the same guard against a tree
/// without end as the policy's walk (`policy::safe::MAX_LINK_WALK`), so that a read the policy
/// proved safe in a large workspace can also be masked.
pub(crate) const MAX_MASK_WALK: usize = 2_000_000;

/// What is hidden, and how.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct MaskPlan {
    /// Directories covered by an empty tmpfs.
    pub(crate) dirs: Vec<PathBuf>,
    /// Files covered by `/dev/null`.
    pub(crate) files: Vec<PathBuf>,
    /// The workspace's credential files that were hidden, workspace-relative (for the result).
    pub(crate) workspace_hidden: Vec<String>,
    /// How many entries of the home directory were hidden.
    pub(crate) home_hidden: usize,
}

/// What the mask is computed from.
pub(crate) struct MaskInputs<'a> {
    pub(crate) workspace: &'a Path,
    pub(crate) home: Option<&'a Path>,
    /// The directories of the command's `PATH`.
    pub(crate) path_dirs: Vec<PathBuf>,
    /// `CARGO_HOME`, `RUSTUP_HOME` when set.
    pub(crate) toolchain_homes: Vec<PathBuf>,
    /// pablo's own config, data and state directories.
    pub(crate) own: &'a [PathBuf],
    /// The directory of the files pablo writes for the command (kept visible).
    pub(crate) support: Option<&'a Path>,
    /// Whether a workspace-relative path has a credential name (the workspace's one rule,
    /// `CredentialNames::matching`).
    pub(crate) is_credential: &'a dyn Fn(&str) -> bool,
}

/// Why a mask could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum MaskError {
    #[error(
        "the workspace holds more than {0} entries to look through for credential files, so they \
         could not all be hidden"
    )]
    TooLarge(usize),
}

/// Computes the mask.
pub(crate) fn plan(inputs: &MaskInputs<'_>) -> Result<MaskPlan, MaskError> {
    let mut out = MaskPlan::default();
    let workspace = canonical(inputs.workspace);
    workspace_credentials(&workspace, inputs.is_credential, &mut out)?;
    let support = inputs.support.map(canonical);
    if let Some(home) = inputs
        .home
        .map(canonical)
        .filter(|h| usable_home(h, &workspace))
    {
        let mut keep: Vec<PathBuf> = vec![workspace.clone()];
        // A linked worktree's repository lives in its checkout's `.git`, outside the workspace:
        // git cannot work without it, and in a checkout it is in view anyway.
        if let Ok(Some(repo)) = super::gitrepo::locate(&workspace, &workspace) {
            for dir in [repo.git_dir, repo.common_dir] {
                if !dir.starts_with(&workspace) {
                    keep.push(dir);
                }
            }
        }
        keep.extend(toolchain_roots(&home, inputs));
        keep.extend(support.clone());
        let before = out.dirs.len() + out.files.len();
        hide_except(&home, &keep, &mut out);
        out.home_hidden = out.dirs.len() + out.files.len() - before;
        // cargo's registry tokens live in its home, which is kept for cargo itself.
        for cargo in cargo_homes(&home, inputs) {
            for name in ["credentials", "credentials.toml"] {
                let p = cargo.join(name);
                if p.is_file() {
                    out.files.push(p);
                }
            }
        }
    }
    for own in inputs.own {
        let own = canonical(own);
        if !own.is_dir() || workspace.starts_with(&own) || is_hidden(&own, &out) {
            continue;
        }
        let keep: Vec<PathBuf> = support
            .iter()
            .filter(|s| s.starts_with(&own))
            .cloned()
            .collect();
        if keep.is_empty() {
            out.dirs.push(own);
        } else {
            hide_except(&own, &keep, &mut out);
        }
    }
    Ok(out)
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// A home directory worth masking: a real directory that is not `/` and does not lie inside
/// the workspace.
fn usable_home(home: &Path, workspace: &Path) -> bool {
    home.is_absolute()
        && home.parent().is_some()
        && home.is_dir()
        && !home.starts_with(workspace)
        && home != workspace
}

/// Whether `p` lies in something already hidden.
fn is_hidden(p: &Path, plan: &MaskPlan) -> bool {
    plan.dirs.iter().any(|d| p.starts_with(d)) || plan.files.iter().any(|f| p == f)
}

/// The toolchains under `home` that the command's `PATH` runs from: for a `PATH` directory
/// named `bin` or `shims`, the directory holding it (`~/.cargo`, `~/.pyenv`); for `~/.local/bin`,
/// only it and `~/.local/lib` (Python's user packages), not the rest of `~/.local`.
fn toolchain_roots(home: &Path, inputs: &MaskInputs<'_>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let local = home.join(".local");
    for dir in &inputs.path_dirs {
        let dir = canonical(dir);
        if !dir.starts_with(home) || dir == home {
            continue;
        }
        let named = |n: &str| dir.file_name().is_some_and(|f| f == n);
        let root = if named("bin") || named("shims") {
            dir.parent().map(Path::to_path_buf).unwrap_or(dir.clone())
        } else {
            dir.clone()
        };
        if root == local {
            out.push(dir.clone());
            out.push(local.join("lib"));
        } else if root != home {
            out.push(root);
        }
    }
    out.extend(cargo_homes(home, inputs));
    for h in &inputs.toolchain_homes {
        out.push(canonical(h));
    }
    out.push(home.join(".rustup"));
    out.retain(|p| p.starts_with(home) && p != home);
    out.sort();
    out.dedup();
    out
}

fn cargo_homes(home: &Path, inputs: &MaskInputs<'_>) -> Vec<PathBuf> {
    let mut out = vec![home.join(".cargo")];
    out.extend(
        inputs
            .toolchain_homes
            .iter()
            .map(|p| canonical(p))
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().contains("cargo"))
            }),
    );
    out.retain(|p| p.is_dir());
    out
}

/// Hides every entry of `root`, and of each directory on the way from `root` to a kept path,
/// that is neither kept nor on the way to one.
fn hide_except(root: &Path, keep: &[PathBuf], out: &mut MaskPlan) {
    let keep: Vec<&PathBuf> = keep
        .iter()
        .filter(|k| k.starts_with(root) && *k != root)
        .collect();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            if keep.iter().any(|k| **k == path) {
                continue;
            }
            if keep.iter().any(|k| k.starts_with(&path)) {
                stack.push(path);
                continue;
            }
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_symlink() {
                // A mount lands on the link's target: hide the target when it lies below `root`
                // (what the mask promises to hide), unless it holds or leads to what is kept. A
                // link out of `root` (`~/bin -> /usr/local/bin`) is left alone: hiding its target
                // would hide programs, and what lies outside is not the mask's to hide.
                let Ok(target) = std::fs::canonicalize(&path) else {
                    continue;
                };
                let near_kept = keep
                    .iter()
                    .any(|k| k.starts_with(&target) || target.starts_with(k));
                if near_kept || !target.starts_with(root) || target == root {
                    continue;
                }
                push_hidden(&target, out);
            } else {
                push_hidden(&path, out);
            }
        }
    }
}

fn push_hidden(path: &Path, out: &mut MaskPlan) {
    if is_hidden(path, out) {
        return;
    }
    if path.is_dir() {
        out.dirs.push(path.to_path_buf());
    } else if path.is_file() {
        out.files.push(path.to_path_buf());
    }
}

/// Every credential-named file or directory of the workspace, found by a bounded walk that does
/// not follow links (a link with a credential name has its target hidden when that lies in the
/// workspace). `.git` is not entered: git's objects are compressed, and its files are not named
/// like credentials.
fn workspace_credentials(
    workspace: &Path,
    is_credential: &dyn Fn(&str) -> bool,
    out: &mut MaskPlan,
) -> Result<(), MaskError> {
    let mut stack = vec![workspace.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            seen += 1;
            if seen > MAX_MASK_WALK {
                return Err(MaskError::TooLarge(MAX_MASK_WALK));
            }
            let path = e.path();
            let rel = path
                .strip_prefix(workspace)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            let Ok(kind) = e.file_type() else { continue };
            if is_credential(&rel) {
                let target = if kind.is_symlink() {
                    match std::fs::canonicalize(&path) {
                        Ok(t) if t.starts_with(workspace) && t != workspace => t,
                        _ => continue,
                    }
                } else {
                    path.clone()
                };
                if !is_hidden(&target, out) {
                    push_hidden(&target, out);
                    out.workspace_hidden.push(rel);
                }
                continue;
            }
            if kind.is_dir() && e.file_name() != ".git" {
                stack.push(path);
            }
        }
    }
    out.workspace_hidden.sort();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_credentials_the_home_outside_the_kept_and_pablos_own_dirs_are_hidden() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        let ws = home.join("src/proj");
        let other = home.join("src/other");
        for d in [&ws, &other, &home.join(".ssh"), &home.join(".cargo/bin")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::create_dir_all(ws.join("app/.aws")).unwrap();
        std::fs::write(ws.join(".env"), "x").unwrap();
        std::fs::write(ws.join("app/id_rsa.bak"), "x").unwrap();
        std::fs::write(ws.join("README.md"), "x").unwrap();
        std::fs::write(other.join(".env"), "x").unwrap();
        std::fs::write(home.join(".netrc"), "x").unwrap();
        // A link out of the home directory: its target is not the mask's to hide.
        let outside = root.path().join("usr-local-bin");
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, home.join("bin")).unwrap();
        // A link to an entry inside: hidden through its target.
        std::os::unix::fs::symlink(home.join(".ssh"), home.join("keys")).unwrap();
        std::fs::write(home.join(".cargo/credentials.toml"), "x").unwrap();
        let own = root.path().join("state/pablo");
        let support = own.join("sessions/1/git");
        std::fs::create_dir_all(&support).unwrap();
        std::fs::create_dir_all(own.join("sessions/2")).unwrap();
        let is_credential = |rel: &str| {
            let name = rel.rsplit('/').next().unwrap_or(rel);
            matches!(name, ".env" | "id_rsa.bak" | ".netrc")
        };
        let own_dirs = vec![own.clone()];
        let plan = plan(&MaskInputs {
            workspace: &ws,
            home: Some(&home),
            path_dirs: vec![home.join(".cargo/bin"), PathBuf::from("/usr/bin")],
            toolchain_homes: Vec::new(),
            own: &own_dirs,
            support: Some(&support),
            is_credential: &is_credential,
        })
        .unwrap();
        let ws = canonical(&ws);
        let home = canonical(&home);
        let own = canonical(&own);
        assert_eq!(plan.workspace_hidden, [".env", "app/id_rsa.bak"]);
        assert!(plan.files.contains(&ws.join(".env")));
        assert!(plan.files.contains(&home.join(".netrc")));
        assert!(plan.files.contains(&home.join(".cargo/credentials.toml")));
        assert!(plan.dirs.contains(&home.join(".ssh")));
        assert!(plan.dirs.contains(&home.join("src/other")));
        assert!(plan.dirs.contains(&own.join("sessions/2")));
        assert!(!plan.dirs.iter().any(|d| ws.starts_with(d)), "{plan:?}");
        assert!(!plan.dirs.contains(&home.join(".cargo")));
        assert!(!plan.dirs.iter().any(|d| support.starts_with(d)));
        assert!(!plan.files.contains(&ws.join("README.md")));
        let outside = canonical(&root.path().join("usr-local-bin"));
        assert!(!plan.dirs.contains(&outside), "{plan:?}");
    }

    #[test]
    fn a_worktree_s_repository_in_its_checkout_stays_in_view_and_the_checkout_s_files_do_not() {
        let root = tempfile::tempdir().unwrap();
        let home = canonical(&root.path().join("home"));
        let checkout = home.join("src/proj");
        std::fs::create_dir_all(&checkout).unwrap();
        let git = |dir: &Path, args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .current_dir(dir)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .output()
                .unwrap()
                .status
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&checkout, &["init", "-q"]);
        git(&checkout, &["commit", "-q", "--allow-empty", "-m", "x"]);
        std::fs::write(checkout.join(".env"), "SECRET=1").unwrap();
        std::fs::write(checkout.join("README.md"), "x").unwrap();
        let ws = home.join("src/proj.worktrees/task");
        git(&checkout, &["worktree", "add", "-q", ws.to_str().unwrap()]);
        let home = canonical(&home);
        let (ws, checkout) = (canonical(&ws), canonical(&checkout));
        let plan = plan(&MaskInputs {
            workspace: &ws,
            home: Some(&home),
            path_dirs: Vec::new(),
            toolchain_homes: Vec::new(),
            own: &[],
            support: None,
            is_credential: &|_| false,
        })
        .unwrap();
        let hidden = |p: &Path| {
            plan.dirs.iter().any(|d| p.starts_with(d)) || plan.files.iter().any(|f| f == p)
        };
        assert!(!hidden(&checkout.join(".git/HEAD")), "{plan:?}");
        assert!(!hidden(&checkout.join(".git/worktrees")), "{plan:?}");
        assert!(!hidden(&ws), "{plan:?}");
        assert!(hidden(&checkout.join(".env")), "{plan:?}");
        assert!(hidden(&checkout.join("README.md")), "{plan:?}");
    }
}
