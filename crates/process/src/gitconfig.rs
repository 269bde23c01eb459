//! A repository's git config with its program-running settings removed, for known-safe git reads.
//!
//! A repository's `.git/config` can make a plain `git status` or `git diff` run a program
//! (`core.fsmonitor`, `diff.external`, a diff driver's `textconv` or `command`, a filter's
//! `clean`). Most of these are overridden through the environment (see
//! [`super::sandbox::known_safe_git_env`]), but some cannot be: an empty `diff.external` makes git
//! try to run an empty command. So when the config names any such setting, a known-safe git read
//! sees a copy without them: the copy is written to the session's temporary directory and bound
//! read-only over the original inside the command's mount namespace. The original file is never
//! touched, and git outside the sandbox still sees it as it is.
//!
//! The same holds for every repository git reads for the command, not only the one it runs in:
//! git runs `git status` (and, with `diff.submodule = diff`, `git diff`) inside each checked-out
//! submodule with that submodule's own config, so the configs of the submodules (and theirs) are
//! copied and covered too. `core.worktree` is one of the dropped keys: in a submodule's config it
//! would move that submodule's work tree out of the workspace.
//!
//! The copy is built from `git config --file FILE --list --null` (git's own parser; it reads the
//! one file and runs nothing), minus every key that names a program or pulls in another file.

use std::path::{Path, PathBuf};

use super::gitrepo::{credential_attributes, locate, repository_above, submodule_configs};

/// Words whose presence in a config file's text means it may hold a program-running setting;
/// files without any of them need no copy (the common case, at the cost of one read).
const SUSPECT_WORDS: &[&str] = &[
    "external",
    "textconv",
    "command",
    "fsmonitor",
    "pager",
    "filter",
    "include",
    "program",
    "editor",
    "hookspath",
    "askpass",
    "proxy",
    "driver",
    "signature",
    "helper",
    "alias",
    "tool",
    "browser",
    "upload",
    "receive",
    "trace2",
    "update",
    "clean",
    "smudge",
    "process",
    "cmd",
    "worktree",
    "excludesfile",
    "attributesfile",
    "ignorerevs",
    "orderfile",
    "mailmap",
    "template",
];

/// Whole sections that only exist to run something (or to include other files).
const DROPPED_SECTIONS: &[&str] = &[
    "alias",
    "include",
    "includeif",
    "filter",
    "pager",
    "gpg",
    "credential",
    "mergetool",
    "difftool",
    "browser",
    "man",
    "uploadpack",
    "receive",
    "sendemail",
    "trace2",
    "tar",
    "web",
    "gui",
    "guitool",
    "instaweb",
    "maintenance",
    "gc",
];

/// Single keys (`section.name`, lower case) that name a program.
const DROPPED_KEYS: &[&str] = &[
    "core.fsmonitor",
    "core.pager",
    "core.editor",
    "core.sshcommand",
    "core.gitproxy",
    "core.askpass",
    "core.hookspath",
    "core.alternaterefscommand",
    "diff.external",
    "sequence.editor",
    "log.showsignature",
    "interactive.difffilter",
    // Settings that send git elsewhere or make it read a file outside the repository (and print
    // a line of it in an error, as `blame.ignoreRevsFile` does).
    "core.worktree",
    "core.excludesfile",
    "core.attributesfile",
    "blame.ignorerevsfile",
    "diff.orderfile",
    "mailmap.file",
    "mailmap.blob",
    "commit.template",
    "init.templatedir",
];

/// Names (the part after the last dot) that name a program wherever they appear in a
/// subsection (`diff.NAME.textconv`, `merge.NAME.driver`, `remote.NAME.uploadpack`, …).
const DROPPED_NAMES: &[&str] = &[
    "command",
    "textconv",
    "driver",
    "uploadpack",
    "receivepack",
    "proxy",
    "update",
    "vcs",
    "cmd",
    "program",
    "helper",
];

/// Whether `key` (as `git config --list` prints it) is kept in the copy.
pub fn keeps(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    let section = lower.split('.').next().unwrap_or_default();
    let name = lower.rsplit('.').next().unwrap_or_default();
    let has_subsection = lower.matches('.').count() >= 2;
    !(DROPPED_SECTIONS.contains(&section)
        || DROPPED_KEYS.contains(&lower.as_str())
        || (has_subsection && DROPPED_NAMES.contains(&name)))
}

/// Whether the file's text may hold a program-running setting.
pub fn suspect(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    SUSPECT_WORDS.iter().any(|w| lower.contains(w))
}

/// The sanitised copy of `config` as text, from git's own listing of it. `git` is the git
/// program to ask. `None` when git cannot list it (then the caller refuses to run unprotected).
pub fn sanitized(git: &Path, config: &Path) -> Option<String> {
    let out = std::process::Command::new(git)
        .args(["config", "--no-includes", "--null", "--list", "--file"])
        .arg(config)
        .env_clear()
        .env("PATH", pablo_config::CLEAN_PATH)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(render(&String::from_utf8_lossy(&out.stdout)))
}

/// `key\nvalue\0…` (a key without a newline has no value) back to config text, minus the
/// program-running keys.
pub fn render(listing: &str) -> String {
    let mut text = String::new();
    let mut current: Option<(String, Option<String>)> = None;
    for record in listing.split('\0').filter(|r| !r.is_empty()) {
        let (key, value) = match record.split_once('\n') {
            Some((k, v)) => (k, Some(v)),
            None => (record, None),
        };
        if !keeps(key) {
            continue;
        }
        let Some(first) = key.find('.') else { continue };
        let Some(last) = key.rfind('.') else { continue };
        let section = &key[..first];
        let sub = (last > first).then(|| key[first + 1..last].to_string());
        let name = &key[last + 1..];
        let header = (section.to_string(), sub.clone());
        if current.as_ref() != Some(&header) {
            match &sub {
                Some(s) => text.push_str(&format!("[{section} \"{}\"]\n", escape(s))),
                None => text.push_str(&format!("[{section}]\n")),
            }
            current = Some(header);
        }
        match value {
            Some(v) => text.push_str(&format!("\t{name} = \"{}\"\n", escape(v))),
            None => text.push_str(&format!("\t{name}\n")),
        }
    }
    text
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out
}

/// For each of `configs` that may run programs: a sanitised copy written under `dir`, paired with
/// the file it covers. `Err` names a file that could not be copied (the caller must not run the
/// read unprotected).
pub fn overlays(
    git: &Path,
    configs: &[PathBuf],
    dir: &Path,
) -> Result<Vec<(PathBuf, PathBuf)>, String> {
    let mut out = Vec::new();
    for config in configs {
        let Ok(text) = std::fs::read_to_string(config) else {
            continue;
        };
        if !suspect(&text) {
            continue;
        }
        let clean = sanitized(git, config)
            .ok_or_else(|| format!("git cannot read {}", config.display()))?;
        let copy = write_private(dir, "gitconfig", &clean)?;
        out.push((copy, config.clone()));
    }
    Ok(out)
}

/// Writes `text` to a new file in `dir` (created when missing) with a unique name.
fn write_private(dir: &Path, stem: &str, text: &str) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let name = format!(
        "{stem}-{}-{}",
        std::process::id(),
        uuid::Uuid::now_v7().simple()
    );
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// A ripgrep config (for `RIPGREP_CONFIG_PATH`) that leaves credential files out of every
/// search of a known-safe line, in either case: one `--iglob=!GLOB` per credential glob. Written
/// once per session in `dir` (commands cannot write it); returns its path.
pub fn ripgrep_config(dir: &Path, credentials: &[String]) -> Result<PathBuf, String> {
    let mut text = String::new();
    for g in credentials {
        if !g.contains(['\n', '\r']) {
            text.push_str(&format!("--iglob=!{g}\n"));
        }
    }
    let path = dir.join("ripgrep-config");
    let staged = write_private(dir, "ripgrep", &text)?;
    std::fs::rename(&staged, &path).map_err(|e| {
        let _ = std::fs::remove_file(&staged);
        format!("{}: {e}", path.display())
    })?;
    Ok(path)
}

/// What a known-safe git read needs besides the read-only sandbox: the repository's config
/// copies to bind over the originals, and the variables that pin the repository and turn off
/// what would run a program or print a credential file.
#[derive(Debug, Default)]
pub struct KnownSafeGit {
    /// (sanitised copy, original) pairs.
    pub overlays: Vec<(PathBuf, PathBuf)>,
    /// The config copies written for this read, to remove once it started (the mounts keep them).
    pub files: Vec<PathBuf>,
    /// Variables to set (after every inherited `GIT_*` variable was removed).
    pub env: Vec<(String, String)>,
}

/// Prepares a known-safe git read run in `cwd` (absolute): finds the repository inside
/// `workspace` and its submodules (refusing layouts that lead outside it, see
/// [`super::gitrepo`]), writes the sanitised config copies of all of them and the credential
/// attributes into `dir` (a directory commands cannot write), and returns them with the
/// environment. `credentials` are the workspace's credential
/// globs.
pub fn prepare(
    git: &Path,
    workspace: &Path,
    cwd: &Path,
    dir: &Path,
    credentials: &[String],
) -> Result<KnownSafeGit, String> {
    let mut out = KnownSafeGit::default();
    // One file per session, kept: a background read may still run when the call returns, and git
    // reads the file while it runs (a missing attributes file is silently no attributes).
    let attributes = dir.join("credential-attributes");
    let staged = write_private(dir, "attributes", &credential_attributes(credentials))?;
    std::fs::rename(&staged, &attributes).map_err(|e| {
        let _ = std::fs::remove_file(&staged);
        format!("{}: {e}", attributes.display())
    })?;
    out.env = super::sandbox::known_safe_git_env(Some(&attributes));
    match locate(workspace, cwd)? {
        Some(repo) => {
            // Every repository git may read for the command, submodules included: a submodule's
            // `git status` or `git diff` (which git runs itself) reads that repository's config.
            let mut configs = repo.configs();
            configs.extend(submodule_configs(git, workspace, &repo)?);
            out.overlays = overlays(git, &configs, dir)?;
            out.files
                .extend(out.overlays.iter().map(|(c, _)| c.clone()));
            out.env.extend(repo.pin_env());
        }
        None => {
            if let Some(above) = repository_above(workspace) {
                return Err(format!(
                    "the repository at {} is larger than the workspace",
                    above.display()
                ));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_keys_are_dropped_and_the_rest_kept() {
        for k in [
            "core.fsmonitor",
            "core.pager",
            "diff.external",
            "diff.evil.textconv",
            "diff.evil.command",
            "filter.lfs.clean",
            "alias.st",
            "include.path",
            "includeIf.gitdir:~/x.path",
            "merge.ours.driver",
            "remote.origin.uploadpack",
            "gpg.program",
            "pager.log",
        ] {
            assert!(!keeps(k), "{k} kept");
        }
        for k in [
            "core.bare",
            "core.repositoryformatversion",
            "remote.origin.url",
            "remote.origin.fetch",
            "branch.main.remote",
            "user.name",
            "diff.renames",
            "extensions.objectformat",
        ] {
            assert!(keeps(k), "{k} dropped");
        }
    }

    #[test]
    fn a_listing_renders_back_to_config_text_without_the_dropped_keys() {
        let listing = "core.bare\nfalse\0core.fsmonitor\n/x/evil.sh\0remote.origin.url\nhttps://e/\"q\"\0core.quiet\0diff.external\n/x\0";
        let text = render(listing);
        assert_eq!(
            text,
            "[core]\n\tbare = \"false\"\n[remote \"origin\"]\n\turl = \"https://e/\\\"q\\\"\"\n[core]\n\tquiet\n"
        );
    }
}
