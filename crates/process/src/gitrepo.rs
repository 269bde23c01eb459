//! The repository a known-safe git read runs in, found by pablo rather than by git.
//!
//! Left to itself, git finds its repository by looking upwards from the current directory and
//! then believes what it finds: a `.git` file naming a git directory anywhere, a `commondir`
//! pointing at another repository's objects and config, `objects/info/alternates` lending objects
//! from elsewhere, `core.worktree` moving the work tree to `../../home`. A repository someone else
//! wrote can use each of these to make a plain `git diff` print files outside the workspace. So
//! before a known-safe git read pablo looks for the repository itself, within the workspace only,
//! refuses the layouts that lead outside it (a linked worktree of the person's own repository is
//! recognised by the link back that git writes into the main repository), and pins the result
//! with `GIT_DIR` and `GIT_WORK_TREE`, which no config file can override.

use std::path::{Path, PathBuf};

/// A repository inside the workspace whose every part a read may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitRepo {
    /// The work tree: the directory holding `.git`.
    pub top: PathBuf,
    /// The git directory (`.git`, or what a `.git` file names).
    pub git_dir: PathBuf,
    /// Where the shared parts live (objects, refs, `config`): the git directory itself, or the
    /// main repository's for a linked worktree.
    pub common_dir: PathBuf,
}

impl GitRepo {
    /// The config files git reads from the repository: `config` of the common directory and
    /// `config.worktree` of the git directory, those that exist.
    pub fn configs(&self) -> Vec<PathBuf> {
        let mut out = vec![
            self.common_dir.join("config"),
            self.git_dir.join("config.worktree"),
        ];
        out.retain(|p| p.is_file());
        out
    }

    /// `GIT_DIR` and `GIT_WORK_TREE`: git uses exactly this repository and this work tree,
    /// whatever `core.worktree` or a `.git` file further down says.
    pub fn pin_env(&self) -> Vec<(String, String)> {
        vec![
            ("GIT_DIR".into(), self.git_dir.display().to_string()),
            ("GIT_WORK_TREE".into(), self.top.display().to_string()),
        ]
    }
}

/// Why a repository's layout leads outside the workspace.
pub type Outside = String;

fn canonical(p: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(p).ok()
}

/// The repository that `cwd` (absolute, inside `workspace`) belongs to, looking upwards no
/// further than `workspace`. `Ok(None)`: no repository in the workspace around `cwd` (but see
/// [`repository_above`]). `Err` says which part of the repository leads outside.
pub fn locate(workspace: &Path, cwd: &Path) -> Result<Option<GitRepo>, Outside> {
    let workspace = canonical(workspace).unwrap_or_else(|| workspace.to_path_buf());
    let dir = canonical(cwd).unwrap_or_else(|| cwd.to_path_buf());
    if !dir.starts_with(&workspace) {
        return Err(format!("{} is outside the workspace", cwd.display()));
    }
    locate_canonical(&workspace, dir)
}

/// [`locate`] for a `workspace` and a `cwd` that are canonical already: the policy holds both
/// (it follows a command's links from the canonical workspace once, and a `realpath` of each
/// again would ask the kernel about every name of both paths on every git command it checks).
pub fn locate_canonical(workspace: &Path, cwd: PathBuf) -> Result<Option<GitRepo>, Outside> {
    let workspace = workspace.to_path_buf();
    let mut dir = cwd;
    if !dir.starts_with(&workspace) {
        return Err(format!("{} is outside the workspace", dir.display()));
    }
    loop {
        let dot_git = dir.join(".git");
        if let Ok(meta) = std::fs::symlink_metadata(&dot_git) {
            // An empty `.git` (pablo's placeholder where no repository was, see
            // `sandbox::protected_paths`) is no repository; git looks past it too.
            let placeholder = meta.is_dir() && !dot_git.join("HEAD").exists();
            if !placeholder {
                return examine(std::slice::from_ref(&workspace), &dir, &dot_git, &meta).map(Some);
            }
        }
        if dir == workspace || !dir.pop() {
            return Ok(None);
        }
    }
}

/// The nearest directory above `workspace` that holds a `.git`, if any: git run in the workspace
/// would use that repository, whose work tree is larger than the workspace.
pub fn repository_above(workspace: &Path) -> Option<PathBuf> {
    repository_above_canonical(&canonical(workspace)?)
}

/// [`repository_above`] for a `workspace` that is canonical already.
pub fn repository_above_canonical(workspace: &Path) -> Option<PathBuf> {
    let mut dir = workspace.to_path_buf();
    while dir.pop() {
        let dot_git = dir.join(".git");
        let is_repo = match std::fs::symlink_metadata(&dot_git) {
            Ok(m) if m.is_dir() => dot_git.join("HEAD").exists(),
            Ok(_) => true,
            Err(_) => false,
        };
        if is_repo {
            return Some(dir);
        }
    }
    None
}

/// Whether `p` (canonical) lies in one of `roots`.
fn within(roots: &[PathBuf], p: &Path) -> bool {
    roots.iter().any(|r| p.starts_with(r))
}

/// The repository whose `.git` entry is `dot_git` (in `top`), every part of which must lie in
/// `roots` (canonical; the workspace first).
pub fn examine(
    roots: &[PathBuf],
    top: &Path,
    dot_git: &Path,
    meta: &std::fs::Metadata,
) -> Result<GitRepo, Outside> {
    let shown = dot_git.display();
    let (git_dir, linked) = if meta.is_dir() {
        (dot_git.to_path_buf(), false)
    } else if meta.is_file() {
        let text = std::fs::read_to_string(dot_git).map_err(|e| format!("{shown}: {e}"))?;
        let named = text
            .trim()
            .strip_prefix("gitdir:")
            .map(str::trim)
            .ok_or_else(|| format!("{shown} is not a `gitdir:` file"))?;
        let git_dir = canonical(&top.join(named))
            .ok_or_else(|| format!("{shown} names {named}, which does not exist"))?;
        if within(roots, &git_dir) {
            (git_dir, false)
        } else if links_back(&git_dir, dot_git) {
            (git_dir, true)
        } else {
            return Err(format!(
                "{shown} names the git directory {}, outside the workspace",
                git_dir.display()
            ));
        }
    } else {
        // A link: where it leads decides.
        let target =
            canonical(dot_git).ok_or_else(|| format!("{shown} is a link that leads nowhere"))?;
        if !within(roots, &target) {
            return Err(format!(
                "{shown} is a link to {}, outside the workspace",
                target.display()
            ));
        }
        (target, false)
    };
    checked(roots, top, git_dir, linked)
}

/// `git_dir` with its shared parts found and checked: a `commondir` or alternates that lead
/// outside the workspace are refused (`linked`: a linked worktree of an outside repository, whose
/// common directory is that repository's).
fn checked(
    roots: &[PathBuf],
    top: &Path,
    git_dir: PathBuf,
    linked: bool,
) -> Result<GitRepo, Outside> {
    let inside = |p: &Path| canonical(p).is_some_and(|c| within(roots, &c));
    let common_dir = match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(c) => canonical(&git_dir.join(c.trim()))
            .ok_or_else(|| format!("{}/commondir names a missing directory", git_dir.display()))?,
        Err(_) => git_dir.clone(),
    };
    let linked_to_own_repo = linked && git_dir.parent().and_then(Path::parent) == Some(&common_dir);
    if !within(roots, &common_dir) && !linked_to_own_repo {
        return Err(format!(
            "{}/commondir sends git to {}, outside the workspace",
            git_dir.display(),
            common_dir.display()
        ));
    }
    let alternates = common_dir.join("objects/info/alternates");
    if let Ok(text) = std::fs::read_to_string(&alternates) {
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let dir = common_dir.join("objects").join(line);
            if !inside(&dir) {
                return Err(format!(
                    "{} lends objects from {line}, outside the workspace",
                    alternates.display()
                ));
            }
        }
    }
    Ok(GitRepo {
        top: top.to_path_buf(),
        git_dir,
        common_dir,
    })
}

/// A linked worktree's git directory (`MAIN/.git/worktrees/NAME`) names, in its `gitdir` file,
/// the `.git` file that points at it. Only `git worktree add` writes both ends, and the far end
/// lies outside the workspace, where a command of this workspace could not have written it.
fn links_back(git_dir: &Path, dot_git: &Path) -> bool {
    let in_worktrees = git_dir
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == "worktrees");
    let Ok(back) = std::fs::read_to_string(git_dir.join("gitdir")) else {
        return false;
    };
    in_worktrees && canonical(Path::new(back.trim())) == canonical(dot_git)
}

/// For a directory of a linked worktree, the same directory of the main checkout it belongs to
/// (`<checkout>/.git/worktrees/NAME` names the worktree; `dir` may lie below its top); `None`
/// for anything else. Only a link git wrote at both ends counts (see [`links_back`]): the far
/// end lies in the checkout's `.git`, which no command of a session can write, so a repository
/// cannot make itself pass for a worktree of another.
pub fn linked_checkout(dir: &Path) -> Option<PathBuf> {
    let dir = canonical(dir)?;
    let mut top = dir.clone();
    loop {
        let dot_git = top.join(".git");
        if let Ok(meta) = std::fs::symlink_metadata(&dot_git) {
            if !meta.is_file() {
                // A checkout of its own (or a placeholder): not a linked worktree here.
                if meta.is_dir() && !dot_git.join("HEAD").exists() {
                    if !top.pop() {
                        return None;
                    }
                    continue;
                }
                return None;
            }
            let text = std::fs::read_to_string(&dot_git).ok()?;
            let named = text.trim().strip_prefix("gitdir:")?.trim().to_string();
            let git_dir = canonical(&top.join(named))?;
            if !links_back(&git_dir, &dot_git) {
                return None;
            }
            let common = std::fs::read_to_string(git_dir.join("commondir")).ok()?;
            let common = canonical(&git_dir.join(common.trim()))?;
            // `<checkout>/.git/worktrees/NAME`: the common directory is the one above.
            if git_dir.parent().and_then(Path::parent) != Some(common.as_path())
                || common.file_name().is_none_or(|n| n != ".git")
            {
                return None;
            }
            let checkout = common.parent()?;
            let rel = dir.strip_prefix(&top).ok()?;
            // Joined only when there is something to join: `join("")` adds a trailing slash,
            // and trust is looked up by the path's text.
            return Some(if rel.as_os_str().is_empty() {
                checkout.to_path_buf()
            } else {
                checkout.join(rel)
            });
        }
        if !top.pop() {
            return None;
        }
    }
}

/// The most repositories (submodules, theirs, and git directories kept under `modules/`) one
/// read looks at; a repository with more makes the read ask rather than go unchecked.
const MAX_SUBMODULES: usize = 256;

/// The most directories looked at under the `modules/` directories of one read's repositories.
const MAX_MODULE_DIRS: usize = 4096;

/// The config files of every other repository git may read while it runs a command in `repo`
/// (found by [`locate`] inside `workspace`): its submodules and theirs, in turn. git enters a
/// submodule wherever the index has a gitlink whose directory holds a `.git` (to see whether it
/// is modified, running `git status` there with that repository's own config), and reads the git
/// directories kept under `modules/` (by name, from `.gitmodules`). Each is examined as
/// [`locate`] examines the repository itself: its `.git` entry, `commondir` and alternates must
/// stay inside the workspace or inside the git directory of `repo` (which holds the submodules of
/// a linked worktree). `git` is the program asked for the index, with nothing able to run.
pub fn submodule_configs(
    git: &Path,
    workspace: &Path,
    repo: &GitRepo,
) -> Result<Vec<PathBuf>, Outside> {
    let workspace = canonical(workspace).unwrap_or_else(|| workspace.to_path_buf());
    let mut roots = vec![workspace];
    for d in [&repo.git_dir, &repo.common_dir] {
        if let Some(c) = canonical(d)
            && !within(&roots, &c)
        {
            roots.push(c);
        }
    }
    let mut seen: Vec<PathBuf> = [&repo.git_dir, &repo.common_dir]
        .into_iter()
        .filter_map(|d| canonical(d))
        .collect();
    let mut configs = Vec::new();
    let mut listed = vec![canonical(&repo.top).unwrap_or_else(|| repo.top.clone())];
    let mut repositories = 0usize;
    let mut dirs_walked = 0usize;
    let mut queue = vec![repo.clone()];
    while let Some(r) = queue.pop() {
        let mut found = Vec::new();
        for path in gitlinks(git, &r)? {
            let Some(top) = canonical(&r.top.join(&path)) else {
                // Not checked out: git does not enter it.
                continue;
            };
            if !within(&roots[..1], &top) {
                return Err(format!(
                    "the submodule {} of {} lies outside the workspace",
                    path.display(),
                    r.top.display()
                ));
            }
            let dot_git = top.join(".git");
            let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
                continue;
            };
            if meta.is_dir() && !dot_git.join("HEAD").exists() {
                continue;
            }
            let sub = examine(&roots, &top, &dot_git, &meta)?;
            found.push((sub, true));
        }
        for module in module_dirs(&roots, &[&r.git_dir, &r.common_dir], &mut dirs_walked)? {
            let sub = checked(&roots, &module, module.clone(), false)?;
            found.push((sub, false));
        }
        for (sub, has_work_tree) in found {
            let dirs: Vec<PathBuf> = [&sub.git_dir, &sub.common_dir]
                .into_iter()
                .filter_map(|d| canonical(d))
                .collect();
            if !dirs.iter().all(|d| seen.contains(d)) {
                seen.extend(dirs);
                configs.extend(sub.configs());
                repositories += 1;
            }
            // Each work tree's index is listed once (its gitlinks may hold repositories of their
            // own that no `modules/` names).
            if has_work_tree && !listed.contains(&sub.top) {
                listed.push(sub.top.clone());
                queue.push(sub);
            }
            if repositories > MAX_SUBMODULES {
                return Err(format!(
                    "{} has more than {MAX_SUBMODULES} submodules to check",
                    repo.top.display()
                ));
            }
        }
    }
    configs.sort();
    configs.dedup();
    Ok(configs)
}

/// The git directories kept under `modules/` of each of `git_dirs`, at any depth (a submodule's
/// name may hold slashes, and a submodule's own submodules live under its `modules/`).
fn module_dirs(
    roots: &[PathBuf],
    git_dirs: &[&PathBuf],
    walked: &mut usize,
) -> Result<Vec<PathBuf>, Outside> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = git_dirs.iter().map(|d| d.join("modules")).collect();
    stack.dedup();
    while let Some(dir) = stack.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        if !meta.is_dir() {
            if meta.file_type().is_symlink() {
                return Err(format!("{} is a link", dir.display()));
            }
            continue;
        }
        *walked += 1;
        if *walked > MAX_MODULE_DIRS {
            return Err(format!(
                "more than {MAX_MODULE_DIRS} directories hold submodules' git directories"
            ));
        }
        let Some(real) = canonical(&dir) else {
            continue;
        };
        if !within(roots, &real) {
            return Err(format!("{} lies outside the workspace", dir.display()));
        }
        if real.join("HEAD").is_file() {
            // A git directory: its own submodules are under its `modules/`, nowhere else.
            stack.push(real.join("modules"));
            out.push(real);
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&real) else {
            continue;
        };
        for e in entries.flatten() {
            stack.push(e.path());
        }
    }
    Ok(out)
}

/// The paths (relative to its work tree) of the gitlinks in `repo`'s index, listed by git with
/// nothing of the repository able to run. A path that leaves the work tree is refused.
pub fn gitlinks(git: &Path, repo: &GitRepo) -> Result<Vec<PathBuf>, Outside> {
    let out = std::process::Command::new(git)
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "protocol.allow=never",
            "ls-files",
            "--stage",
            "--full-name",
            "-z",
        ])
        .env_clear()
        .env("PATH", pablo_config::CLEAN_PATH)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_NO_LAZY_FETCH", "1")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .envs(repo.pin_env())
        .current_dir(&repo.top)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("git cannot list the index of {}: {e}", repo.top.display()))?;
    if !out.status.success() {
        return Err(format!(
            "git cannot list the index of {}",
            repo.top.display()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut paths = Vec::new();
    for record in text.split('\0') {
        let Some((info, path)) = record.split_once('\t') else {
            continue;
        };
        if !info.starts_with("160000 ") {
            continue;
        }
        let p = PathBuf::from(path);
        let plain = p
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !plain {
            return Err(format!(
                "the index of {} names a submodule at {path}, outside its work tree",
                repo.top.display()
            ));
        }
        paths.push(p);
    }
    Ok(paths)
}

/// Variables whose presence changes which repository, objects, config or program git uses; a
/// known-safe read never inherits them (pablo sets the ones it needs itself).
pub fn is_git_variable(name: &str) -> bool {
    name.starts_with("GIT_")
}

/// The attributes that leave credential files out of git's output: each name is `binary`, so
/// `git diff`, `git log -p`, `git show` and `git grep` say that it differs or matches without
/// printing it. `globs` are `workspace::CredentialNames` patterns; each letter matches
/// either case, as `fs.read` does.
pub fn credential_attributes(globs: &[String]) -> String {
    let mut out = String::new();
    for g in globs {
        if g.contains(char::is_whitespace) || g.starts_with('!') || g.starts_with('#') {
            continue;
        }
        for c in g.chars() {
            if c.is_ascii_alphabetic() {
                out.push('[');
                out.push(c.to_ascii_lowercase());
                out.push(c.to_ascii_uppercase());
                out.push(']');
            } else {
                out.push(c);
            }
        }
        out.push_str(" binary\n");
    }
    out
}

/// The type (`commit`, `tree`, `blob`, `tag`, or `missing`) of each object `names` names in
/// `repo`, asked of git with nothing of the repository able to run a program: no lazy fetch, no
/// transport, no hooks, no fsmonitor, no pager. `None` when git cannot answer.
pub fn object_types(git: &Path, repo: &GitRepo, names: &[String]) -> Option<Vec<String>> {
    use std::io::Write;
    if names.iter().any(|n| n.contains('\n') || n.contains('\0')) {
        return None;
    }
    let mut child = std::process::Command::new(git)
        .args([
            "-c",
            "protocol.allow=never",
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.sshCommand=false",
            "cat-file",
            "--batch-check=%(objecttype)",
        ])
        .env_clear()
        .env("PATH", pablo_config::CLEAN_PATH)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_NO_LAZY_FETCH", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_SSH_COMMAND", "false")
        .envs(repo.pin_env())
        .current_dir(&repo.top)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let mut input = String::new();
    for n in names {
        input.push_str(n);
        input.push('\n');
    }
    child.stdin.take()?.write_all(input.as_bytes()).ok()?;
    let out = child.wait_with_output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let types: Vec<String> = text
        .lines()
        .map(|l| {
            // `NAME missing` for an unknown name; the type alone otherwise.
            if l.ends_with(" missing") {
                "missing".to_string()
            } else {
                l.trim().to_string()
            }
        })
        .collect();
    (types.len() == names.len()).then_some(types)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn a_plain_repository_is_found_from_a_subdirectory_and_pinned() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        git(&ws, &["init", "-q"]);
        std::fs::create_dir_all(ws.join("src/deep")).unwrap();
        let repo = locate(&ws, &ws.join("src/deep")).unwrap().unwrap();
        assert_eq!(repo.top, ws);
        assert_eq!(repo.git_dir, ws.join(".git"));
        assert_eq!(repo.common_dir, ws.join(".git"));
        assert_eq!(repo.configs(), vec![ws.join(".git/config")]);
        assert!(
            repo.pin_env()
                .contains(&("GIT_WORK_TREE".into(), ws.display().to_string()))
        );
    }

    #[test]
    fn a_nested_repository_is_the_one_its_directory_belongs_to() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        git(&ws, &["init", "-q"]);
        std::fs::create_dir_all(ws.join("vendor/dep")).unwrap();
        git(&ws.join("vendor/dep"), &["init", "-q"]);
        let repo = locate(&ws, &ws.join("vendor/dep")).unwrap().unwrap();
        assert_eq!(repo.top, ws.join("vendor/dep"));
    }

    #[test]
    fn layouts_that_lead_outside_the_workspace_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let ws = root.join("ws");
        let elsewhere = root.join("elsewhere");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        git(&elsewhere, &["init", "-q"]);

        // A `.git` file naming another repository's git directory.
        std::fs::write(
            ws.join(".git"),
            format!("gitdir: {}\n", elsewhere.join(".git").display()),
        )
        .unwrap();
        let why = locate(&ws, &ws).unwrap_err();
        assert!(why.contains("outside the workspace"), "{why}");
        std::fs::remove_file(ws.join(".git")).unwrap();

        // A commondir pointing at it.
        git(&ws, &["init", "-q"]);
        std::fs::write(
            ws.join(".git/commondir"),
            elsewhere.join(".git").display().to_string(),
        )
        .unwrap();
        let why = locate(&ws, &ws).unwrap_err();
        assert!(why.contains("commondir"), "{why}");
        std::fs::remove_file(ws.join(".git/commondir")).unwrap();

        // Alternates lending its objects.
        std::fs::write(
            ws.join(".git/objects/info/alternates"),
            elsewhere.join(".git/objects").display().to_string(),
        )
        .unwrap();
        let why = locate(&ws, &ws).unwrap_err();
        assert!(why.contains("lends objects"), "{why}");
    }

    #[test]
    fn a_linked_worktree_of_an_outside_repository_is_accepted() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let main = root.join("main");
        std::fs::create_dir_all(&main).unwrap();
        git(&main, &["init", "-q"]);
        git(
            &main,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "x",
            ],
        );
        let ws = root.join("wt");
        git(&main, &["worktree", "add", "-q", ws.to_str().unwrap()]);
        let repo = locate(&ws, &ws).unwrap().unwrap();
        assert_eq!(repo.common_dir, main.join(".git"));
        assert!(repo.git_dir.starts_with(main.join(".git/worktrees")));
        // Its trust is its checkout's, directory for directory.
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        assert_eq!(
            linked_checkout(&ws).map(|p| p.display().to_string()),
            Some(main.display().to_string())
        );
        assert_eq!(linked_checkout(&ws.join("sub")), Some(main.join("sub")));
        assert_eq!(linked_checkout(&main), None);
        // A `.git` file naming the same git directory from elsewhere is no worktree of it.
        let impostor = root.join("impostor");
        std::fs::create_dir_all(&impostor).unwrap();
        std::fs::copy(ws.join(".git"), impostor.join(".git")).unwrap();
        assert_eq!(linked_checkout(&impostor), None);
    }

    #[test]
    fn credential_attributes_mark_every_name_binary_in_either_case() {
        let text = credential_attributes(&[".env".into(), "*.pem".into(), "secrets/**".into()]);
        assert_eq!(
            text,
            ".[eE][nN][vV] binary\n*.[pP][eE][mM] binary\n[sS][eE][cC][rR][eE][tT][sS]/** binary\n"
        );
    }
}
