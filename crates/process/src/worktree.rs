//! Git worktrees for a task: `pablo --worktree NAME`, `pablo worktree list|remove` and the
//! subagents whose agent asks for `isolation: worktree`.
//!
//! A worktree is a second checkout of the repository on a branch of its own (`pablo/NAME`),
//! sharing the repository's objects, so a task's edits and commands happen there and the
//! person's checkout is untouched until they merge the branch. Each lives next to the main
//! checkout, in `<checkout>.worktrees/NAME`: outside the checkout (its edits are not the
//! checkout's untracked files), visible to the person (`cd` there, open it in an editor, run
//! the build), all of a repository's worktrees in one directory, and not under pablo's own data
//! directory, which commands may never write and masked reads never see.
//!
//! git runs here as a real program on a repository that is untrusted input, so nothing of the
//! repository may run a program through it: no hook (`post-checkout` runs on every
//! `git worktree add`, `reference-transaction` on every branch), no filter driver (a `smudge`
//! runs for each file checked out, a `clean` for each file `git status` hashes), no fsmonitor,
//! pager, transport or lazy fetch. The system and global config are not read, every repository
//! setting that would start something is overridden with the highest precedence there is
//! (`GIT_CONFIG_COUNT`), and every filter driver the config defines, as git itself lists it in
//! the very context of the command, is emptied (git runs no filter whose command is empty). The
//! checkout itself is done in two steps for that: `worktree add --no-checkout` (which then runs
//! no hook), and `reset --hard` inside the new worktree once its drivers are known. The
//! repository is found by pablo ([`super::gitrepo::examine`]), not by git's discovery, and
//! pinned with `GIT_DIR` and `GIT_WORK_TREE`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::gitrepo::{GitRepo, examine};
use pablo_core::{Coded, ErrorCode};

/// Every branch pablo makes for a worktree starts with this.
pub const BRANCH_PREFIX: &str = "pablo/";

/// The longest worktree name.
const MAX_NAME: usize = 64;

/// Why a worktree could not be made, listed or removed.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    #[error("{name:?} is not a worktree name: {why}")]
    InvalidName { name: String, why: &'static str },
    #[error("{0} is not inside a git repository, so there is nothing to make a worktree of")]
    NotARepository(PathBuf),
    #[error("the repository at {0} has no commit yet: a worktree starts from HEAD")]
    NoCommit(PathBuf),
    #[error("the repository at {path} cannot be used: {why}")]
    Layout { path: PathBuf, why: String },
    #[error(
        "no worktree of this repository is on the branch {BRANCH_PREFIX}{0} (`pablo worktree list` shows them)"
    )]
    NotFound(String),
    #[error(
        "the worktree {} has {what}; nothing was removed (commit or drop them first, or pass \
         --force to remove it anyway)",
        path.display()
    )]
    Dirty { path: PathBuf, what: &'static str },
    #[error("{} exists and is not the worktree {name}; nothing was changed", path.display())]
    PathTaken { path: PathBuf, name: String },
    #[error("git {action} failed: {message}")]
    Git { action: String, message: String },
}

impl Coded for WorktreeError {
    fn code(&self) -> ErrorCode {
        match self {
            WorktreeError::InvalidName { .. } => ErrorCode::WorktreeNameInvalid,
            WorktreeError::NotARepository(_) | WorktreeError::NoCommit(_) => {
                ErrorCode::NotAGitRepository
            }
            WorktreeError::NotFound(_) => ErrorCode::WorktreeNotFound,
            WorktreeError::Dirty { .. } => ErrorCode::WorktreeDirty,
            WorktreeError::PathTaken { .. } => ErrorCode::WorktreePathTaken,
            WorktreeError::Layout { .. } | WorktreeError::Git { .. } => ErrorCode::WorktreeFailed,
        }
    }
}

/// Checks a worktree name: it becomes a directory name and the last part of a branch name, so
/// it is a subset of what both accept (no `/`, no `..`, nothing git's ref rules refuse).
pub fn check_name(name: &str) -> Result<(), WorktreeError> {
    let refuse = |why| {
        Err(WorktreeError::InvalidName {
            name: name.to_string(),
            why,
        })
    };
    if name.is_empty() || name.len() > MAX_NAME {
        return refuse("it must be 1 to 64 characters long");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return refuse("only letters, digits, '-', '_' and '.' may be used (no '/')");
    }
    if name.starts_with(['-', '.']) {
        return refuse("it may not start with '-' or '.'");
    }
    if name.contains("..") {
        return refuse("it may not contain '..'");
    }
    if name.ends_with('.') || name.ends_with(".lock") {
        return refuse("it may not end with '.' or '.lock'");
    }
    Ok(())
}

/// The git program: the first `git` on pablo's own `PATH`, else on the standard one.
pub fn find_git() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(std::env::split_paths(pablo_config::CLEAN_PATH))
        .filter(|d| d.is_absolute())
        .map(|d| d.join("git"))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A repository the worktree commands work on, as pablo found it.
#[derive(Debug, Clone)]
pub struct Repository {
    git: PathBuf,
    /// The repository pablo was started in (its work tree holds the workspace).
    here: GitRepo,
    /// The main checkout: the work tree that owns the common directory (for a repository whose
    /// common directory is not a `.git` inside a work tree, the one pablo was started in).
    checkout: PathBuf,
}

/// One worktree of a repository that pablo made (its branch starts with `pablo/`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct WorktreeEntry {
    /// The name (the branch without `pablo/`).
    pub name: String,
    pub branch: String,
    pub path: PathBuf,
    /// `clean`, `dirty` (uncommitted changes), or `missing` (its directory is gone).
    pub state: WorktreeState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorktreeState {
    Clean,
    Dirty,
    Missing,
}

impl std::fmt::Display for WorktreeState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WorktreeState::Clean => "clean",
            WorktreeState::Dirty => "dirty",
            WorktreeState::Missing => "missing",
        })
    }
}

/// A worktree ready to work in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    pub name: String,
    pub branch: String,
    /// Its top directory.
    pub path: PathBuf,
    /// Whether this call made it (else it existed and is reused).
    pub created: bool,
    /// The commit it started from (its `HEAD` when made or found).
    pub start: String,
}

/// What `remove` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removal {
    pub name: String,
    pub path: PathBuf,
    pub branch: String,
    /// Whether the branch was deleted too: only when HEAD of the main checkout already holds
    /// every commit of it, so no work is lost with it.
    pub branch_deleted: bool,
}

impl Repository {
    /// The repository `dir` (absolute) belongs to, found upwards from it. `git` runs it.
    pub fn find(git: &Path, dir: &Path) -> Result<Self, WorktreeError> {
        let start = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let mut top = start.clone();
        loop {
            let dot_git = top.join(".git");
            if let Ok(meta) = std::fs::symlink_metadata(&dot_git) {
                // An empty `.git` (pablo's placeholder where no repository was) is no repository.
                let placeholder = meta.is_dir() && !dot_git.join("HEAD").exists();
                if !placeholder {
                    let roots = [top.clone()];
                    let here = examine(&roots, &top, &dot_git, &meta).map_err(|why| {
                        WorktreeError::Layout {
                            path: top.clone(),
                            why,
                        }
                    })?;
                    let checkout = match here.common_dir.file_name() {
                        Some(n) if n == ".git" => here
                            .common_dir
                            .parent()
                            .map(Path::to_path_buf)
                            .unwrap_or_else(|| here.top.clone()),
                        _ => here.top.clone(),
                    };
                    return Ok(Self {
                        git: git.to_path_buf(),
                        here,
                        checkout,
                    });
                }
            }
            if !top.pop() {
                return Err(WorktreeError::NotARepository(start));
            }
        }
    }

    /// The work tree pablo was started in (the main checkout or a linked worktree).
    pub fn top(&self) -> &Path {
        &self.here.top
    }

    /// Where the worktree `name` lives: `<checkout>.worktrees/<name>`, beside the checkout.
    pub fn place(&self, name: &str) -> Result<PathBuf, WorktreeError> {
        let parent = self
            .checkout
            .parent()
            .ok_or_else(|| WorktreeError::Layout {
                path: self.checkout.clone(),
                why: "a checkout at / has no directory beside it for worktrees".into(),
            })?;
        let base = self
            .checkout
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(parent.join(format!("{base}.worktrees")).join(name))
    }

    /// git pinned to the repository's common directory (branches, the worktree list, and HEAD
    /// of the main checkout).
    fn in_repository(&self) -> SafeGit {
        self.pinned(&self.here.common_dir)
    }

    /// git pinned to the git directory of the checkout pablo was started in (its HEAD).
    fn in_here(&self) -> SafeGit {
        self.pinned(&self.here.git_dir)
    }

    fn pinned(&self, git_dir: &Path) -> SafeGit {
        SafeGit {
            git: self.git.clone(),
            git_dir: git_dir.to_path_buf(),
            work_tree: None,
            filters: Vec::new(),
        }
    }

    /// The worktree `name` on the branch `pablo/NAME`: the one that exists, or a new one made
    /// from HEAD (on the branch when it exists already, else on a new branch).
    pub fn create(&self, name: &str) -> Result<Worktree, WorktreeError> {
        check_name(name)?;
        let branch = format!("{BRANCH_PREFIX}{name}");
        let git = self.in_here();
        for w in self.registered()? {
            if w.branch.as_deref() == Some(branch.as_str()) {
                if w.path.is_dir() {
                    let start = self.head_of(&w.path)?;
                    return Ok(Worktree {
                        name: name.to_string(),
                        branch,
                        path: w.path,
                        created: false,
                        start,
                    });
                }
                // Its directory is gone: git's record of it goes, the branch stays.
                git.run("worktree prune", &["worktree", "prune"])?;
            }
        }
        let path = self.place(name)?;
        if std::fs::symlink_metadata(&path).is_ok() {
            return Err(WorktreeError::PathTaken {
                path,
                name: name.to_string(),
            });
        }
        let head = git
            .run(
                "rev-parse",
                &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"],
            )
            .map_err(|_| WorktreeError::NoCommit(self.checkout.clone()))?;
        let path_arg = path.to_string_lossy().into_owned();
        let branch_exists = git
            .run(
                "rev-parse",
                &[
                    "rev-parse",
                    "--verify",
                    "--quiet",
                    &format!("refs/heads/{branch}"),
                ],
            )
            .is_ok();
        let mut args = vec!["worktree", "add", "--quiet", "--no-checkout"];
        if branch_exists {
            args.extend(["--", path_arg.as_str(), branch.as_str()]);
        } else {
            args.extend([
                "-b",
                branch.as_str(),
                "--",
                path_arg.as_str(),
                head.as_str(),
            ]);
        }
        git.run("worktree add", &args)?;
        if let Err(e) = self.check_out(&path) {
            // Nothing half-made stays behind; a branch this call made goes with it.
            let _ = git.run(
                "worktree remove",
                &["worktree", "remove", "--force", "--force", "--", &path_arg],
            );
            if !branch_exists {
                let _ = git.run("branch", &["branch", "-D", "--", &branch]);
            }
            return Err(e);
        }
        let start = self.head_of(&path)?;
        Ok(Worktree {
            name: name.to_string(),
            branch,
            path,
            created: true,
            start,
        })
    }

    /// Fills the new worktree at `path` from its HEAD, with every filter driver emptied.
    fn check_out(&self, path: &Path) -> Result<(), WorktreeError> {
        let git = self.in_worktree(path)?;
        git.run(
            "reset",
            &["reset", "--quiet", "--hard", "--no-recurse-submodules"],
        )?;
        Ok(())
    }

    /// git pinned to the linked worktree at `path` (its git directory and its work tree), with
    /// the filter drivers of its config emptied.
    fn in_worktree(&self, path: &Path) -> Result<SafeGit, WorktreeError> {
        let dot_git = path.join(".git");
        let meta = std::fs::symlink_metadata(&dot_git).map_err(|e| WorktreeError::Layout {
            path: dot_git.clone(),
            why: e.to_string(),
        })?;
        let repo = examine(
            &[path.to_path_buf(), self.here.common_dir.clone()],
            path,
            &dot_git,
            &meta,
        )
        .map_err(|why| WorktreeError::Layout {
            path: path.to_path_buf(),
            why,
        })?;
        let mut git = SafeGit {
            git: self.git.clone(),
            git_dir: repo.git_dir,
            work_tree: Some(path.to_path_buf()),
            filters: Vec::new(),
        };
        // The drivers as git sees them in this very context (includes, conditional includes
        // and the worktree's own config all counted).
        let listing = git.run("config", &["config", "--list", "--null"])?;
        git.filters = filter_drivers(&listing);
        Ok(git)
    }

    /// The commit checked out in the worktree at `path`.
    fn head_of(&self, path: &Path) -> Result<String, WorktreeError> {
        self.in_worktree(path)?
            .run("rev-parse", &["rev-parse", "--verify", "HEAD"])
    }

    /// The worktrees git knows of for this repository, as `git worktree list` says.
    fn registered(&self) -> Result<Vec<Registered>, WorktreeError> {
        let text = self
            .in_repository()
            .run("worktree list", &["worktree", "list", "--porcelain", "-z"])?;
        Ok(parse_worktree_list(&text))
    }

    /// The worktrees pablo made (branch `pablo/…`), with their state.
    pub fn list(&self) -> Result<Vec<WorktreeEntry>, WorktreeError> {
        let mut out = Vec::new();
        for w in self.registered()? {
            let Some(branch) = w.branch else { continue };
            let Some(name) = branch.strip_prefix(BRANCH_PREFIX) else {
                continue;
            };
            let state = if !w.path.is_dir() {
                WorktreeState::Missing
            } else if self.changes(&w.path)?.is_some() {
                WorktreeState::Dirty
            } else {
                WorktreeState::Clean
            };
            out.push(WorktreeEntry {
                name: name.to_string(),
                branch: branch.clone(),
                path: w.path,
                state,
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// What uncommitted work the worktree at `path` holds, in words; `None` when it has none.
    /// Submodules are not entered (git would run them with their own config): one that is
    /// checked out counts as work pablo cannot see.
    pub fn changes(&self, path: &Path) -> Result<Option<&'static str>, WorktreeError> {
        let git = self.in_worktree(path)?;
        let status = git.run(
            "status",
            &[
                "status",
                "--porcelain",
                "-z",
                "--ignore-submodules=all",
                "--untracked-files=normal",
            ],
        )?;
        if !status.is_empty() {
            return Ok(Some("uncommitted changes"));
        }
        let repo = GitRepo {
            top: path.to_path_buf(),
            git_dir: git.git_dir.clone(),
            common_dir: self.here.common_dir.clone(),
        };
        let links =
            super::gitrepo::gitlinks(&self.git, &repo).map_err(|why| WorktreeError::Layout {
                path: path.to_path_buf(),
                why,
            })?;
        let submodule = links
            .iter()
            .any(|l| std::fs::symlink_metadata(path.join(l).join(".git")).is_ok());
        Ok(submodule.then_some("checked-out submodules, whose changes pablo does not look into"))
    }

    /// Removes the worktree `name` (refused while it holds uncommitted work, unless `force`),
    /// and its branch when the main checkout's HEAD already holds every commit of it.
    pub fn remove(&self, name: &str, force: bool) -> Result<Removal, WorktreeError> {
        check_name(name)?;
        let branch = format!("{BRANCH_PREFIX}{name}");
        let found = self
            .registered()?
            .into_iter()
            .find(|w| w.branch.as_deref() == Some(branch.as_str()))
            .ok_or_else(|| WorktreeError::NotFound(name.to_string()))?;
        let git = self.in_repository();
        if found.path.is_dir() {
            if !force && let Some(what) = self.changes(&found.path)? {
                return Err(WorktreeError::Dirty {
                    path: found.path,
                    what,
                });
            }
            // Checked above (or forced): git's own check would run `git status` inside every
            // submodule, with that submodule's config.
            let path_arg = found.path.to_string_lossy().into_owned();
            git.run(
                "worktree remove",
                &["worktree", "remove", "--force", "--", &path_arg],
            )?;
        } else {
            git.run("worktree prune", &["worktree", "prune"])?;
        }
        let branch_deleted = self.delete_branch_if_merged(&branch)?;
        Ok(Removal {
            name: name.to_string(),
            path: found.path,
            branch,
            branch_deleted,
        })
    }

    /// Deletes `branch` when the main checkout's HEAD holds every commit of it.
    fn delete_branch_if_merged(&self, branch: &str) -> Result<bool, WorktreeError> {
        let git = self.in_repository();
        let merged = git
            .run(
                "merge-base",
                &[
                    "merge-base",
                    "--is-ancestor",
                    &format!("refs/heads/{branch}"),
                    "HEAD",
                ],
            )
            .is_ok();
        if merged {
            git.run("branch", &["branch", "-D", "--", branch])?;
        }
        Ok(merged)
    }

    /// Removes the worktree at `path` and its branch when neither holds anything new: no
    /// uncommitted change and no commit since `start`. Returns whether it was removed.
    pub fn discard_if_unchanged(&self, w: &Worktree) -> Result<bool, WorktreeError> {
        if self.changes(&w.path)?.is_some() || self.head_of(&w.path)? != w.start {
            return Ok(false);
        }
        let git = self.in_repository();
        let path_arg = w.path.to_string_lossy().into_owned();
        git.run(
            "worktree remove",
            &["worktree", "remove", "--force", "--", &path_arg],
        )?;
        git.run("branch", &["branch", "-D", "--", &w.branch])?;
        Ok(true)
    }
}

/// One record of `git worktree list --porcelain -z`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Registered {
    path: PathBuf,
    /// The branch without `refs/heads/`; `None` when detached or bare.
    branch: Option<String>,
}

fn parse_worktree_list(text: &str) -> Vec<Registered> {
    let mut out = Vec::new();
    let mut current: Option<Registered> = None;
    for field in text.split('\0') {
        if field.is_empty() {
            // A record ends with an empty field.
            out.extend(current.take());
            continue;
        }
        if let Some(p) = field.strip_prefix("worktree ") {
            out.extend(current.take());
            current = Some(Registered {
                path: PathBuf::from(p),
                branch: None,
            });
        } else if let (Some(c), Some(b)) = (current.as_mut(), field.strip_prefix("branch ")) {
            c.branch = Some(b.strip_prefix("refs/heads/").unwrap_or(b).to_string());
        }
    }
    out.extend(current);
    out
}

/// The filter drivers named in a `git config --list --null` listing (`filter.NAME.VAR`).
fn filter_drivers(listing: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for record in listing.split('\0') {
        let key = record.split('\n').next().unwrap_or_default();
        let lower = key.to_ascii_lowercase();
        if !lower.starts_with("filter.") {
            continue;
        }
        // The subsection is everything between the first and the last dot, as written.
        if let (Some(first), Some(last)) = (key.find('.'), key.rfind('.'))
            && last > first
        {
            let name = key[first + 1..last].to_string();
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// One git invocation on an untrusted repository (see the module docs).
struct SafeGit {
    git: PathBuf,
    git_dir: PathBuf,
    work_tree: Option<PathBuf>,
    /// Filter drivers to empty.
    filters: Vec<String>,
}

impl SafeGit {
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.git);
        let mut overrides: Vec<(String, String)> =
            super::sandbox::program_free_overrides("/dev/null")
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
        for f in &self.filters {
            for var in ["smudge", "clean", "process"] {
                overrides.push((format!("filter.{f}.{var}"), String::new()));
            }
            overrides.push((format!("filter.{f}.required"), "false".into()));
        }
        cmd.args(args)
            .env_clear()
            .env("PATH", pablo_config::CLEAN_PATH)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_ATTR_NOSYSTEM", "1")
            .env("GIT_NO_LAZY_FETCH", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("LC_ALL", "C")
            .env("GIT_DIR", &self.git_dir)
            .env("GIT_CONFIG_COUNT", overrides.len().to_string())
            .stdin(Stdio::null());
        for (i, (k, v)) in overrides.iter().enumerate() {
            cmd.env(format!("GIT_CONFIG_KEY_{i}"), k)
                .env(format!("GIT_CONFIG_VALUE_{i}"), v);
        }
        match &self.work_tree {
            Some(w) => {
                cmd.env("GIT_WORK_TREE", w).current_dir(w);
            }
            None => {
                cmd.current_dir(&self.git_dir);
            }
        }
        cmd
    }

    /// Runs git with `args`; its stdout (trimmed of the last newline) on success, else its
    /// stderr in the error.
    fn run(&self, action: &str, args: &[&str]) -> Result<String, WorktreeError> {
        let out: Output = self
            .command(args)
            .output()
            .map_err(|e| WorktreeError::Git {
                action: action.to_string(),
                message: format!("{} cannot start: {e}", self.git.display()),
            })?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let message = stderr.trim();
            return Err(WorktreeError::Git {
                action: action.to_string(),
                message: if message.is_empty() {
                    format!("it exited with {}", out.status)
                } else {
                    message.chars().take(2000).collect()
                },
            });
        }
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        Ok(text.strip_suffix('\n').unwrap_or(&text).to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_git_or_a_path_would_misread_are_refused() {
        for good in ["fix-1", "Feature_2", "v1.2", "a"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        let long = "x".repeat(65);
        for bad in [
            "",
            "../up",
            "a/b",
            "-flag",
            ".hidden",
            "x..y",
            "name.lock",
            "end.",
            "sp ace",
            "tab\t",
            "a@{1}",
            "star*",
            "q?",
            "col:on",
            "til~de",
            "car^et",
            "br[ack",
            "back\\slash",
            long.as_str(),
        ] {
            let e = check_name(bad).unwrap_err();
            assert_eq!(e.code(), ErrorCode::WorktreeNameInvalid, "{bad:?}");
        }
    }

    #[test]
    fn the_worktree_list_is_read_record_by_record() {
        let text = "worktree /r/main\0HEAD abc\0branch refs/heads/main\0\0\
                    worktree /r/main.worktrees/x\0HEAD def\0branch refs/heads/pablo/x\0\0\
                    worktree /r/detached\0HEAD 123\0detached\0\0";
        assert_eq!(
            parse_worktree_list(text),
            vec![
                Registered {
                    path: "/r/main".into(),
                    branch: Some("main".into())
                },
                Registered {
                    path: "/r/main.worktrees/x".into(),
                    branch: Some("pablo/x".into())
                },
                Registered {
                    path: "/r/detached".into(),
                    branch: None
                },
            ]
        );
    }

    #[test]
    fn every_filter_driver_of_a_listing_is_found_whatever_its_name() {
        let listing = "core.bare\nfalse\0filter.lfs.smudge\ngit-lfs smudge\0filter.a.b.clean\nx\0\
                       filter.lfs.process\ny\0Filter.Evil.Smudge\nz\0diff.x.textconv\nq\0";
        assert_eq!(filter_drivers(listing), ["lfs", "a.b", "Evil"]);
    }
}
