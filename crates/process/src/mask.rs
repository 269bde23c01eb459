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
//! Where the workspace's credential files are is kept current in a session ([`super::nested`]
//! watches the workspace for them, as it does for the shield's `.git` and `.pablo`), so a masked
//! read there costs a read of the change queue and a walk of each `.pablo`; elsewhere (no
//! session, no watches, another credential rule than the session's) the workspace is walked for
//! each read. Both look at the same entries and find the same ones; what is looked at is bounded
//! ([`MAX_MASK_WALK`] entries): a larger workspace is not masked, and the command is not run (the
//! policy asks instead where it can).

use std::path::{Path, PathBuf};

use super::nested::CredentialRule;

/// The most workspace entries looked at for credential names: the same guard against a tree
/// without end as the policy's walk (`policy::safe::MAX_LINK_WALK`), so that a read the policy
/// proved safe in a large workspace can also be masked.
pub const MAX_MASK_WALK: usize = 2_000_000;

/// What is hidden, and how.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MaskPlan {
    /// Directories covered by an empty tmpfs.
    pub dirs: Vec<PathBuf>,
    /// Files covered by `/dev/null`.
    pub files: Vec<PathBuf>,
    /// The workspace's credential files that were hidden, workspace-relative (for the result).
    pub workspace_hidden: Vec<String>,
    /// How many entries of the home directory were hidden.
    pub home_hidden: usize,
}

/// What the mask is computed from.
pub struct MaskInputs<'a> {
    pub workspace: &'a Path,
    pub home: Option<&'a Path>,
    /// The directories of the command's `PATH`.
    pub path_dirs: Vec<PathBuf>,
    /// `CARGO_HOME`, `RUSTUP_HOME` when set.
    pub toolchain_homes: Vec<PathBuf>,
    /// pablo's own config, data and state directories.
    pub own: &'a [PathBuf],
    /// The directory of the files pablo writes for the command (kept visible).
    pub support: Option<&'a Path>,
    /// Which workspace-relative paths have a credential name (the workspace's one rule,
    /// `CredentialNames::matching`).
    pub credentials: &'a dyn CredentialRule,
}

/// Why a mask could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MaskError {
    #[error(
        "the workspace holds more than {0} entries to look through for credential files, so they \
         could not all be hidden"
    )]
    TooLarge(usize),
}

/// Computes the mask.
pub fn plan(inputs: &MaskInputs<'_>) -> Result<MaskPlan, MaskError> {
    let mut out = MaskPlan::default();
    let workspace = canonical(inputs.workspace);
    let found = workspace_credentials(&workspace, inputs.credentials, MAX_MASK_WALK)?;
    hide_credentials(&workspace, found.found, &mut out);
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

/// The credential-named entries of a workspace, and how many entries were looked at to find them.
#[derive(Debug, Default, PartialEq, Eq)]
struct Credentials {
    found: Vec<PathBuf>,
    seen: usize,
}

/// Every credential-named file, directory or link of the workspace that a walk from its root
/// would meet: one that does not follow links and enters neither `.git` (git's objects are
/// compressed, and its files are not named like credentials) nor a directory with a credential
/// name (hidden whole), looking at no more than `bound` entries. In a tracked workspace the
/// watches know them (`nested::credentials`), and only its `.pablo` directories are walked;
/// otherwise the whole workspace is. Either way the entries looked at are counted alike.
fn workspace_credentials(
    workspace: &Path,
    rule: &dyn CredentialRule,
    bound: usize,
) -> Result<Credentials, MaskError> {
    let tracked = super::nested::credentials(workspace, rule, super::shield::MAX_WALK_DIRS);
    tracing::debug!(
        target: "pablo::mask",
        watched = tracked.is_some(),
        "where the workspace's credential files are"
    );
    match tracked {
        Some(tracked) => from_watches(workspace, tracked, rule, bound),
        None => {
            let mut c = Credentials::default();
            walk_credentials(workspace, workspace, rule, bound, &mut c)?;
            Ok(c)
        }
    }
}

/// The answer of the watches, completed by a walk of each `.pablo` (not watched).
fn from_watches(
    workspace: &Path,
    tracked: super::nested::TrackedCredentials,
    rule: &dyn CredentialRule,
    bound: usize,
) -> Result<Credentials, MaskError> {
    if tracked.entries > bound {
        return Err(MaskError::TooLarge(bound));
    }
    let mut c = Credentials {
        found: tracked.paths,
        seen: tracked.entries,
    };
    for dir in &tracked.pablo {
        walk_credentials(workspace, dir, rule, bound, &mut c)?;
    }
    Ok(c)
}

/// The walk of [`workspace_credentials`] from `from` (the workspace, or a `.pablo` in it).
fn walk_credentials(
    workspace: &Path,
    from: &Path,
    rule: &dyn CredentialRule,
    bound: usize,
    c: &mut Credentials,
) -> Result<(), MaskError> {
    let mut stack = vec![from.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            c.seen += 1;
            if c.seen > bound {
                return Err(MaskError::TooLarge(bound));
            }
            let path = e.path();
            let rel = path.strip_prefix(workspace).unwrap_or(&path);
            if rule.names(&rel.to_string_lossy()) {
                c.found.push(path);
                continue;
            }
            if e.file_type().is_ok_and(|k| k.is_dir()) && e.file_name() != ".git" {
                stack.push(path);
            }
        }
    }
    Ok(())
}

/// Hides the credential-named entries `found` in the workspace: each file or directory itself,
/// and a link's target when that lies in the workspace. In a fixed order, whatever order they
/// were found in: names first, then links, each sorted, so that a link to a credential file
/// already hidden adds nothing, and the file is listed by its own name.
fn hide_credentials(workspace: &Path, mut found: Vec<PathBuf>, out: &mut MaskPlan) {
    found.sort();
    let mut links = Vec::new();
    let hide = |path: &Path, target: PathBuf, out: &mut MaskPlan| {
        if !is_hidden(&target, out) {
            push_hidden(&target, out);
            let rel = path.strip_prefix(workspace).unwrap_or(path);
            out.workspace_hidden
                .push(rel.to_string_lossy().into_owned());
        }
    };
    for path in found {
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => links.push(path),
            Ok(_) => hide(&path, path.clone(), out),
            Err(_) => {}
        }
    }
    for link in links {
        match std::fs::canonicalize(&link) {
            Ok(t) if t.starts_with(workspace) && t != workspace => hide(&link, t, out),
            _ => {}
        }
    }
    out.workspace_hidden.sort();
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::nested::{self, NameRule, Watches};
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
        let rule = NameRule::of(&[".env", "id_rsa.bak", ".netrc"]);
        let own_dirs = vec![own.clone()];
        let plan = plan(&MaskInputs {
            workspace: &ws,
            home: Some(&home),
            path_dirs: vec![home.join(".cargo/bin"), PathBuf::from("/usr/bin")],
            toolchain_homes: Vec::new(),
            own: &own_dirs,
            support: Some(&support),
            credentials: &rule,
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
            credentials: &NameRule::of(&[]),
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

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// The credential rule of the tests below: names, a directory name and a path.
    fn rule() -> Arc<NameRule> {
        Arc::new(NameRule::of(&[".env", "key.pem", "secrets", "kube/config"]))
    }

    /// What the watches answer agrees with what a walk of the workspace finds, entries looked at
    /// included; the walk's answer, workspace-relative and sorted.
    fn agree(ws: &Path, watches: &mut Watches, rule: &NameRule) -> Vec<String> {
        let mut watched = from_watches(ws, watches.credentials(), rule, usize::MAX).unwrap();
        let mut walked = Credentials::default();
        walk_credentials(ws, ws, rule, usize::MAX, &mut walked).unwrap();
        watched.found.sort();
        walked.found.sort();
        assert_eq!(watched, walked);
        let mut from_watches = MaskPlan::default();
        hide_credentials(ws, watched.found, &mut from_watches);
        let mut from_walk = MaskPlan::default();
        hide_credentials(ws, walked.found, &mut from_walk);
        assert_eq!(from_watches, from_walk);
        from_walk.workspace_hidden
    }

    #[test]
    fn the_watches_know_every_credential_name_the_walk_finds_as_the_tree_changes() {
        let d = tempfile::tempdir().unwrap();
        let root = canonical(d.path());
        let ws = root.join("ws");
        for i in 0..6 {
            for j in 0..4 {
                write(&ws.join(format!("d{i}/e{j}/f.txt")), "x");
            }
        }
        write(&ws.join(".env"), "x");
        write(&ws.join("a/b/.env"), "x");
        write(&ws.join("a/b/plain.txt"), "x");
        write(&ws.join(".git/.env"), "x");
        write(&ws.join("secrets/.env"), "x");
        write(&ws.join("secrets/inner/key.pem"), "x");
        write(&ws.join(".pablo/.env"), "x");
        write(&ws.join(".pablo/sub/key.pem"), "x");
        write(&ws.join("n/.pablo/.env"), "x");
        write(&ws.join("k/kube/config"), "x");
        std::fs::create_dir_all(ws.join("l")).unwrap();
        std::os::unix::fs::symlink("../a/b/plain.txt", ws.join("l/key.pem")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", ws.join("l/.env")).unwrap();
        let rule = rule();
        let mut watches = Watches::new(&ws, rule.clone());
        assert_eq!(
            agree(&ws, &mut watches, &rule),
            [
                ".env",
                ".pablo/.env",
                ".pablo/sub/key.pem",
                "a/b/.env",
                "k/kube/config",
                "l/key.pem",
                "n/.pablo/.env",
                "secrets"
            ]
        );

        // Made deep, renamed away, removed, a directory named like a credential made, a file
        // replaced by a rename over it, a `.pablo` gone and another made.
        write(&ws.join("d3/e2/deep/er/.env"), "x");
        std::fs::rename(ws.join("a/b/.env"), ws.join("a/b/env.txt")).unwrap();
        std::fs::remove_file(ws.join(".env")).unwrap();
        write(&ws.join("m/key.pem/inside/.env"), "x");
        write(&ws.join("k/tmp"), "y");
        std::fs::rename(ws.join("k/tmp"), ws.join("k/kube/config")).unwrap();
        std::fs::remove_dir_all(ws.join("n/.pablo")).unwrap();
        write(&ws.join("q/.pablo/deeper/.env"), "x");
        write(&ws.join(".pablo/new/.env"), "x");
        assert_eq!(
            agree(&ws, &mut watches, &rule),
            [
                ".pablo/.env",
                ".pablo/new/.env",
                ".pablo/sub/key.pem",
                "d3/e2/deep/er/.env",
                "k/kube/config",
                "l/key.pem",
                "m/key.pem",
                "q/.pablo/deeper/.env",
                "secrets"
            ]
        );

        // Directories moved out, in, and within: what was inside goes and comes with them; a
        // directory that loses its credential name is entered.
        std::fs::rename(ws.join("d3"), root.join("d3-out")).unwrap();
        write(&root.join("incoming/x/.env"), "x");
        std::fs::rename(root.join("incoming"), ws.join("d0/incoming")).unwrap();
        std::fs::rename(ws.join("secrets"), ws.join("d1/e1/opened")).unwrap();
        std::fs::rename(ws.join("m"), ws.join("d2/m")).unwrap();
        std::fs::rename(ws.join("l"), ws.join("d4/l")).unwrap();
        assert_eq!(
            agree(&ws, &mut watches, &rule),
            [
                ".pablo/.env",
                ".pablo/new/.env",
                ".pablo/sub/key.pem",
                "d0/incoming/x/.env",
                "d1/e1/opened/.env",
                "d1/e1/opened/inner/key.pem",
                "d2/m/key.pem",
                "k/kube/config",
                "q/.pablo/deeper/.env"
            ]
        );
        assert_eq!(watches.rebuilt, 0);
    }

    #[test]
    fn more_entries_than_the_bound_cannot_be_masked_watched_or_walked() {
        let d = tempfile::tempdir().unwrap();
        let ws = canonical(d.path());
        for i in 0..5 {
            write(&ws.join(format!("d{i}/f.txt")), "x");
        }
        write(&ws.join("secrets/a/b/c.txt"), "x");
        write(&ws.join(".git/HEAD"), "x");
        write(&ws.join(".pablo/config.toml"), "x");
        let rule = rule();
        let mut watches = Watches::new(&ws, rule.clone());
        // The root's 8, one in each d, one in `.pablo`: not what `.git` and `secrets` hold.
        let seen = 8 + 5 + 1;
        let mut walked = Credentials::default();
        assert_eq!(
            walk_credentials(&ws, &ws, &*rule, seen, &mut walked),
            Ok(())
        );
        assert_eq!(walked.seen, seen);
        let err = walk_credentials(&ws, &ws, &*rule, seen - 1, &mut Credentials::default());
        assert_eq!(err, Err(MaskError::TooLarge(seen - 1)));
        assert!(from_watches(&ws, watches.credentials(), &*rule, seen).is_ok());
        assert_eq!(
            from_watches(&ws, watches.credentials(), &*rule, seen - 1),
            Err(MaskError::TooLarge(seen - 1))
        );
        // Two more in a directory, one less in another, one more in `.pablo`, and one more
        // where the walk does not look.
        write(&ws.join("d0/g.txt"), "x");
        write(&ws.join("d0/h.txt"), "x");
        std::fs::remove_file(ws.join("d1/f.txt")).unwrap();
        write(&ws.join(".pablo/more.toml"), "x");
        write(&ws.join("secrets/more.txt"), "x");
        assert_eq!(
            from_watches(&ws, watches.credentials(), &*rule, seen + 1),
            Err(MaskError::TooLarge(seen + 1))
        );
        assert!(from_watches(&ws, watches.credentials(), &*rule, seen + 2).is_ok());
        agree(&ws, &mut watches, &rule);
    }

    #[test]
    fn more_changes_than_the_queue_holds_build_the_watches_again_and_they_still_agree() {
        let queued: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let d = tempfile::tempdir().unwrap();
        let ws = canonical(d.path());
        write(&ws.join("a/.env"), "x");
        let rule = rule();
        let mut watches = Watches::new(&ws, rule.clone());
        assert_eq!(agree(&ws, &mut watches, &rule), ["a/.env"]);
        for i in 0..=queued {
            std::fs::write(ws.join(format!("a/f{i}")), "").unwrap();
        }
        std::fs::remove_file(ws.join("a/.env")).unwrap();
        write(&ws.join("b/c/.env"), "x");
        assert_eq!(agree(&ws, &mut watches, &rule), ["b/c/.env"]);
        assert_eq!(watches.rebuilt, 1);
    }

    #[test]
    fn a_mask_asked_under_another_rule_than_the_tracked_one_walks_under_its_own() {
        let d = tempfile::tempdir().unwrap();
        let ws = canonical(d.path());
        write(&ws.join("a/.env"), "x");
        write(&ws.join("b/id_rsa"), "x");
        let tracked = rule();
        let _t = nested::track(&ws, tracked.clone());
        let other = NameRule::of(&["id_rsa"]);
        assert_eq!(nested::credentials(&ws, &other, 1000), None);
        let plan_under = |rule: &dyn CredentialRule| {
            plan(&MaskInputs {
                workspace: &ws,
                home: None,
                path_dirs: Vec::new(),
                toolchain_homes: Vec::new(),
                own: &[],
                support: None,
                credentials: rule,
            })
            .unwrap()
            .workspace_hidden
        };
        assert_eq!(plan_under(&other), ["b/id_rsa"]);
        assert_eq!(plan_under(&*tracked), ["a/.env"]);
        write(&ws.join("c/.env"), "x");
        assert_eq!(plan_under(&*tracked), ["a/.env", "c/.env"]);
    }
}
