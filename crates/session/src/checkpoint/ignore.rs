//! Which workspace files checkpoints follow: everything git would (each directory's `.gitignore`,
//! the repository's `.git/info/exclude`, the person's global excludes), never a `.git`
//! directory, pablo's own temporary files, or a name that looks like a credential (pablo never
//! reads those). Build output and dependency trees are ignored files, so a build does not fill the
//! checkpoint store.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use pablo_workspace::{RelPath, Workspace, is_temp_name};

/// The ignore rules of one workspace, read as directories are visited.
pub(crate) struct IgnoreRules {
    root: PathBuf,
    /// Each visited directory's `.gitignore` (its text and its rules, `None` when it has none),
    /// by workspace-relative path (`""` for the root).
    per_dir: HashMap<String, (String, Option<Gitignore>)>,
    /// `.git/info/exclude`, then the global excludes: below every `.gitignore` in precedence.
    /// Read at the first question, not when the rules are made: a session's checkpoints are
    /// made at launch but first walk the workspace when a turn begins, and reading these (the
    /// global ones through git's config files, the exclude file through the workspace's
    /// credential-name check) was on the way to the TUI's first frame (issue 29).
    fallback: OnceCell<Vec<Gitignore>>,
}

/// The names inside a directory that are never followed, whatever the rules say.
pub(crate) fn always_skipped(name: &str) -> bool {
    name == ".git" || is_temp_name(std::ffi::OsStr::new(name))
}

impl IgnoreRules {
    pub(crate) fn new(ws: &Workspace) -> Self {
        Self {
            root: ws.root().to_path_buf(),
            per_dir: HashMap::new(),
            fallback: OnceCell::new(),
        }
    }

    /// The rules below every `.gitignore`, read at the first call.
    fn fallback(&self, ws: &Workspace) -> &[Gitignore] {
        self.fallback.get_or_init(|| {
            let mut fallback = Vec::new();
            if let Ok(rel) = RelPath::parse(".git/info/exclude")
                && let Some(gi) = read_rules(ws, &rel, &self.root)
            {
                fallback.push(gi);
            }
            let (global, _) = Gitignore::global();
            if !global.is_empty() {
                fallback.push(global);
            }
            fallback
        })
    }

    /// Reads the `.gitignore` of directory `dir` (workspace-relative) through the workspace
    /// handle; a missing or unreadable one means no rules there. Returns whether the rules differ
    /// from the ones read at the directory's last visit (a walk that finds them all the same may
    /// trust that what its index follows is still followed).
    pub(crate) fn visit_dir(&mut self, ws: &Workspace, dir: &str) -> bool {
        let file = if dir.is_empty() {
            ".gitignore".to_string()
        } else {
            format!("{dir}/.gitignore")
        };
        let text = RelPath::parse(&file)
            .ok()
            .and_then(|rel| ws.read_text(&rel).ok())
            .map(|(text, _)| text);
        let Some(text) = text else {
            return self.per_dir.remove(dir).is_some_and(|(_, gi)| gi.is_some());
        };
        if self.per_dir.get(dir).is_some_and(|(old, _)| *old == text) {
            return false;
        }
        let base = self.root.join(dir);
        let rules = parse_rules(&text, &base);
        let had_rules = self
            .per_dir
            .insert(dir.to_string(), (text, rules.clone()))
            .is_some_and(|(_, gi)| gi.is_some());
        had_rules || rules.is_some()
    }

    /// Whether `rel` (a path below a directory that is itself followed) is ignored.
    pub(crate) fn is_ignored(&self, ws: &Workspace, rel: &str, is_dir: bool) -> bool {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if always_skipped(name) {
            return true;
        }
        if !is_dir
            && let Ok(parsed) = RelPath::parse(rel)
            && ws.refused_pattern(&parsed).is_some()
        {
            return true;
        }
        let abs = self.root.join(rel);
        // The nearest directory's rules first: a deeper .gitignore overrides its parents.
        let mut dir = parent_of(rel);
        loop {
            if let Some((_, Some(gi))) = self.per_dir.get(dir) {
                match gi.matched(&abs, is_dir) {
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                    Match::None => {}
                }
            }
            if dir.is_empty() {
                break;
            }
            dir = parent_of(dir);
        }
        for gi in self.fallback(ws) {
            match gi.matched(&abs, is_dir) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => {}
            }
        }
        false
    }
}

/// `a/b` for `a/b/c`, `""` for `c`.
pub(crate) fn parent_of(rel: &str) -> &str {
    rel.rfind('/').map_or("", |i| &rel[..i])
}

fn read_rules(ws: &Workspace, file: &RelPath, base: &Path) -> Option<Gitignore> {
    let (text, _) = ws.read_text(file).ok()?;
    parse_rules(&text, base)
}

fn parse_rules(text: &str, base: &Path) -> Option<Gitignore> {
    let mut builder = GitignoreBuilder::new(base);
    let from = Some(base.join(".gitignore"));
    for line in text.lines() {
        // A bad pattern is skipped, as git skips it; the rest still apply.
        let _ = builder.add_line(from.clone(), line);
    }
    builder.build().ok().filter(|g| !g.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_rules_override_their_parents_and_git_and_credentials_are_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join(".gitignore"), "*.log\ntarget/\n").unwrap();
        std::fs::write(dir.path().join("sub/.gitignore"), "!keep.log\n").unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let mut rules = IgnoreRules::new(&ws);
        rules.visit_dir(&ws, "");
        rules.visit_dir(&ws, "sub");
        assert!(rules.is_ignored(&ws, "build.log", false));
        assert!(rules.is_ignored(&ws, "target", true));
        assert!(rules.is_ignored(&ws, "sub/other.log", false));
        assert!(!rules.is_ignored(&ws, "sub/keep.log", false));
        assert!(!rules.is_ignored(&ws, "src/main.rs", false));
        assert!(rules.is_ignored(&ws, ".git", true));
        assert!(rules.is_ignored(&ws, "sub/.env", false));
        assert!(rules.is_ignored(&ws, ".notes.txt.1-2-3.pablo-tmp", false));
    }
}
