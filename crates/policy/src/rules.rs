//! Command rules: resolving a command word to the program that would run, and matching it.
//!
//! A rule names an executable and leading arguments. Both sides of the comparison go through the
//! same resolution, so `git`, `/usr/bin/git`, `/bin/git` (a merged-`/usr` alias) and `'g'it` all
//! become `/usr/bin/git`. Only the directory is canonicalised, never the file name: many systems
//! link `ls` and `rm` to one multi-call binary, and a rule for `ls` must not cover `rm`. A path that
//! lies inside the workspace (`./wc`, `bin/wc`) is kept as it is written and never canonicalised:
//! the model can create it, so it is never the system program of the same name.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use super::links;
use pablo_config::{CommandRule, MatchKind};

/// What a command word names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// The comparison key: an absolute path, or the bare word when nothing on the clean `PATH`
    /// has that name (a shell builtin such as `cd`, or a missing program).
    pub(crate) key: String,
    /// The absolute path when the word resolved to a file.
    pub(crate) path: Option<String>,
    /// The path lies inside the workspace (so the model may have written it).
    pub(crate) in_workspace: bool,
    /// The path's directory was canonical when the word was resolved (a `PATH` directory or a
    /// directory outside the workspace, canonicalised then), so following the path's links asks
    /// only about its last name ([`super::links`]).
    dir_canonical: bool,
    /// The file the path leads to, every link followed, or why there is none: found when a check
    /// first asks ([`Resolved::real`]) and kept for the rest of this command's judgement (the
    /// known-safe checks ask twice; each asking walked the path's links again). Never kept
    /// across commands: the resolver's cache holds copies made before anyone asked.
    real: std::cell::OnceCell<Result<PathBuf, String>>,
}

impl Resolved {
    fn new(key: String, path: Option<String>, in_workspace: bool) -> Self {
        Self {
            key,
            path,
            in_workspace,
            dir_canonical: false,
            real: std::cell::OnceCell::new(),
        }
    }

    /// The file [`Resolved::path`] leads to once links are followed; `None` for a bare word.
    pub(crate) fn real(&self) -> Option<Result<&Path, &str>> {
        let path = self.path.as_deref()?;
        let real = self.real.get_or_init(|| {
            if self.dir_canonical {
                links::canonical_in_canonical_dir(Path::new(path))
            } else {
                std::fs::canonicalize(path)
            }
            .map_err(|e| format!("{path}: {e}"))
        });
        Some(real.as_ref().map(PathBuf::as_path).map_err(String::as_str))
    }
}

/// Resolves command words through the `PATH` commands get, caching bare names.
#[derive(Debug)]
pub(crate) struct Resolver {
    workspace: Option<PathBuf>,
    dirs: Vec<PathBuf>,
    cache: Mutex<HashMap<String, Resolved>>,
}

impl Resolver {
    /// Resolves through `path`: the `PATH` the command will get.
    pub(crate) fn new(workspace: Option<PathBuf>, path: &str) -> Self {
        Self {
            workspace,
            dirs: std::env::split_paths(path).collect(),
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Resolves `word` as the shell would, relative paths against `cwd` (workspace-relative).
    pub(crate) fn resolve(&self, word: &str, cwd: &str) -> Resolved {
        if word.contains('/') {
            return self.resolve_path(word, cwd);
        }
        if let Some(hit) = self.cache.lock().get(word) {
            return hit.clone();
        }
        let resolved = self.search_path(word);
        {
            let mut cache = self.cache.lock();
            // Bounded: a model could send endless distinct words.
            if cache.len() > 4096 {
                cache.clear();
            }
            cache.insert(word.to_string(), resolved.clone());
        }
        resolved
    }

    fn search_path(&self, word: &str) -> Resolved {
        if word.is_empty() || word == "." || word == ".." {
            return bare(word);
        }
        for dir in &self.dirs {
            let candidate = dir.join(word);
            if is_executable_file(&candidate) {
                let canonical = std::fs::canonicalize(dir);
                let dir_canonical = canonical.is_ok();
                let dir = canonical.unwrap_or_else(|_| dir.clone());
                let path = dir.join(word).to_string_lossy().into_owned();
                return Resolved {
                    dir_canonical,
                    ..Resolved::new(path.clone(), Some(path), false)
                };
            }
        }
        bare(word)
    }

    fn resolve_path(&self, word: &str, cwd: &str) -> Resolved {
        let base = match &self.workspace {
            Some(ws) => normalize(&ws.join(cwd)),
            None => PathBuf::from("/"),
        };
        let joined = if word.starts_with('/') {
            normalize(Path::new(word))
        } else {
            normalize(&base.join(word))
        };
        let in_workspace = self
            .workspace
            .as_ref()
            .is_some_and(|ws| joined.starts_with(ws));
        let relative_without_workspace = !word.starts_with('/') && self.workspace.is_none();
        if in_workspace || relative_without_workspace {
            let path = joined.to_string_lossy().into_owned();
            let key = if relative_without_workspace {
                format!("./{}", word.trim_start_matches("./"))
            } else {
                path.clone()
            };
            return Resolved::new(key, Some(path), true);
        }
        let (canonical, dir_canonical) = match (joined.parent(), joined.file_name()) {
            (Some(parent), Some(name)) => match std::fs::canonicalize(parent) {
                Ok(p) => (p.join(name), true),
                Err(_) => (joined.clone(), false),
            },
            _ => (joined.clone(), false),
        };
        let in_workspace = self
            .workspace
            .as_ref()
            .is_some_and(|ws| canonical.starts_with(ws));
        let path = canonical.to_string_lossy().into_owned();
        Resolved {
            dir_canonical,
            ..Resolved::new(path.clone(), Some(path), in_workspace)
        }
    }

    /// Compiles a configured rule: its executable resolved like a command word.
    pub(crate) fn compile(&self, rule: &CommandRule) -> CompiledRule {
        CompiledRule {
            id: rule.id.clone(),
            key: self.resolve(&rule.executable, ".").key,
            args: rule.args.clone(),
            kind: rule.match_kind,
        }
    }
}

fn bare(word: &str) -> Resolved {
    Resolved::new(word.to_string(), None, false)
}

fn is_executable_file(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Lexical normalisation: `.` dropped, `..` pops (never above the root).
pub(crate) fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::RootDir => out.push("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            Component::Prefix(_) => {}
        }
    }
    if out.as_os_str().is_empty() {
        out.push("/");
    }
    out
}

/// A rule with its executable resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CompiledRule {
    pub(crate) id: String,
    pub(crate) key: String,
    pub(crate) args: Vec<String>,
    pub(crate) kind: MatchKind,
}

impl CompiledRule {
    /// Matches a fully literal command.
    pub(crate) fn matches(&self, key: &str, args: &[String]) -> bool {
        self.key == key
            && match self.kind {
                MatchKind::Exact => args == self.args.as_slice(),
                MatchKind::Prefix => args.starts_with(&self.args),
            }
    }

    /// Matches a command of which only the first `known.len()` arguments are literal (`complete`
    /// when all are). Used for deny rules, which must still bite when a later word is unknown.
    pub(crate) fn matches_known(&self, key: &str, known: &[String], complete: bool) -> bool {
        if self.key != key {
            return false;
        }
        match self.kind {
            MatchKind::Exact => complete && known == self.args.as_slice(),
            MatchKind::Prefix => known.starts_with(&self.args),
        }
    }

    /// `prefix /usr/bin/cargo test`, for prompts and listings.
    pub(crate) fn describe(&self) -> String {
        let kind = match self.kind {
            MatchKind::Exact => "exact",
            MatchKind::Prefix => "prefix",
        };
        let mut s = format!("{kind} {}", self.key);
        for a in &self.args {
            s.push(' ');
            s.push_str(&super::plain::quote_for_display(a));
        }
        s
    }
}

/// The command rules one layer contributes.
#[derive(Debug, Clone, Default)]
pub(crate) struct RuleLayer {
    /// Where the rules came from (`user config /home/me/.config/pablo/config.toml`).
    pub(crate) source: String,
    /// The id cited when a command is missing from this layer's allow list.
    pub(crate) id: String,
    pub(crate) allow: Vec<CompiledRule>,
    pub(crate) deny: Vec<CompiledRule>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pablo_config::CLEAN_PATH;

    #[test]
    fn bare_and_absolute_names_resolve_to_the_same_key() {
        let r = Resolver::new(None, CLEAN_PATH);
        let bare = r.resolve("sh", ".");
        assert!(bare.path.is_some(), "{bare:?}");
        let abs = r.resolve("/bin/sh", ".");
        assert_eq!(bare.key, abs.key);
    }

    #[test]
    fn a_workspace_path_is_never_the_system_program() {
        let ws = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(ws.path()).unwrap();
        let r = Resolver::new(Some(ws.clone()), CLEAN_PATH);
        let local = r.resolve("./wc", ".");
        assert!(local.in_workspace);
        assert_ne!(local.key, r.resolve("wc", ".").key);
        assert_eq!(local.key, ws.join("wc").to_string_lossy());
    }

    #[test]
    fn builtins_without_a_file_keep_their_name() {
        let r = Resolver::new(None, CLEAN_PATH);
        let cd = r.resolve("definitely-not-a-program-xyz", ".");
        assert_eq!(cd.key, "definitely-not-a-program-xyz");
        assert!(cd.path.is_none());
    }

    #[test]
    fn prefix_and_exact_rules_match_as_written() {
        let rule = CompiledRule {
            id: "x".into(),
            key: "/usr/bin/git".into(),
            args: vec!["status".into()],
            kind: MatchKind::Prefix,
        };
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(rule.matches("/usr/bin/git", &s(&["status", "-s"])));
        assert!(!rule.matches("/usr/bin/git", &s(&["stash"])));
        let exact = CompiledRule {
            kind: MatchKind::Exact,
            ..rule
        };
        assert!(exact.matches("/usr/bin/git", &s(&["status"])));
        assert!(!exact.matches("/usr/bin/git", &s(&["status", "-s"])));
    }
}
