//! File-system roots: which workspace paths the file tools may read and write.
//!
//! Roots are globs relative to the workspace. A root covers the paths it matches and everything
//! below them (a root `docs` covers `docs/a.md`). Every layer that names read (or write) roots
//! narrows the set: a path must be covered by some root of each such layer. Deny roots from any
//! layer win. Two places are never writable whatever the layers say: git's internals (`.git` and
//! everything under it, at any depth — hooks there run code) and pablo's own directory `.pablo`
//! (the project config lives there, and writing it would let the model change its own policy).

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

/// The kind of access a tool needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// One glob with the id of the rule that contributed it.
#[derive(Debug, Clone)]
pub(crate) struct RootRule {
    pub(crate) id: String,
    pub(crate) glob: String,
}

/// Roots of one layer.
#[derive(Debug, Clone)]
struct RootSet {
    set: GlobSet,
    rules: Vec<RootRule>,
    /// The literal directory part of each glob (`src` for `src/**/*.rs`), so that the directories
    /// on the way to a root can be listed.
    bases: Vec<String>,
    source: String,
}

impl RootSet {
    fn new(source: &str, rules: Vec<RootRule>) -> Result<Self, String> {
        let mut b = GlobSetBuilder::new();
        let mut bases = Vec::new();
        for r in &rules {
            b.add(compile(&r.glob).map_err(|e| format!("{}: {e}", r.id))?);
            bases.push(literal_base(&r.glob));
        }
        Ok(Self {
            set: b.build().map_err(|e| e.to_string())?,
            rules,
            bases,
            source: source.to_string(),
        })
    }

    /// The first rule covering `path` or one of its ancestors.
    fn covering(&self, path: &str) -> Option<&RootRule> {
        for candidate in self_and_ancestors(path) {
            if let Some(i) = self.set.matches(candidate).first() {
                return self.rules.get(*i);
            }
        }
        None
    }

    fn on_the_way(&self, path: &str) -> bool {
        path.is_empty()
            || self
                .bases
                .iter()
                .any(|b| b == path || b.starts_with(&format!("{path}/")))
    }
}

fn compile(glob: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(glob.trim_start_matches("./"))
        .literal_separator(true)
        .build()
}

fn literal_base(glob: &str) -> String {
    let g = glob.trim_start_matches("./");
    g.split('/')
        .take_while(|c| !c.contains(['*', '?', '[', '{']))
        .collect::<Vec<_>>()
        .join("/")
}

/// `a/b/c` → `a/b/c`, `a/b`, `a`.
fn self_and_ancestors(path: &str) -> impl Iterator<Item = &str> {
    let mut next = Some(path);
    std::iter::from_fn(move || {
        let cur = next?;
        next = cur.rfind('/').map(|i| &cur[..i]);
        Some(cur)
    })
    .filter(|p| !p.is_empty())
}

/// Why a path was refused: the deciding rule id and a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathRefusal {
    pub(crate) rule_id: String,
    pub(crate) reason: String,
}

/// The compiled roots of all layers.
#[derive(Debug, Clone, Default)]
pub(crate) struct PathPolicy {
    read: Vec<RootSet>,
    write: Vec<RootSet>,
    deny: Vec<(RootRule, GlobSet)>,
    protected: Option<GlobSet>,
}

const PROTECTED: &[(&str, &str)] = &[
    (".git", "builtin.path.git-internals"),
    ("**/.git", "builtin.path.git-internals"),
    (".pablo", "builtin.path.pablo-dir"),
];

impl PathPolicy {
    pub(crate) fn new() -> Self {
        let mut b = GlobSetBuilder::new();
        for (g, _) in PROTECTED {
            if let Ok(glob) = compile(g) {
                b.add(glob);
            }
        }
        Self {
            protected: b.build().ok(),
            ..Default::default()
        }
    }

    pub(crate) fn add_read_roots(
        &mut self,
        source: &str,
        rules: Vec<RootRule>,
    ) -> Result<(), String> {
        if !rules.is_empty() {
            self.read.push(RootSet::new(source, rules)?);
        }
        Ok(())
    }

    pub(crate) fn add_write_roots(
        &mut self,
        source: &str,
        rules: Vec<RootRule>,
    ) -> Result<(), String> {
        if !rules.is_empty() {
            self.write.push(RootSet::new(source, rules)?);
        }
        Ok(())
    }

    pub(crate) fn add_deny_roots(&mut self, rules: Vec<RootRule>) -> Result<(), String> {
        for r in rules {
            let glob = compile(&r.glob).map_err(|e| format!("{}: {e}", r.id))?;
            let set = GlobSetBuilder::new()
                .add(glob)
                .build()
                .map_err(|e| e.to_string())?;
            self.deny.push((r, set));
        }
        Ok(())
    }

    /// Whether some layer limits what may be read (read roots or deny roots): then a shell read
    /// cannot be known to stay inside the bounds (`ls` lists every name, `grep -r` walks every
    /// file), so known-safe reads are not allowed unasked.
    pub(crate) fn limits_reads(&self) -> bool {
        !self.read.is_empty() || !self.deny.is_empty()
    }

    /// Decides one workspace-relative path. `Ok` carries the ids of the roots that granted it.
    pub(crate) fn check(&self, path: &str, access: Access) -> Result<Vec<String>, PathRefusal> {
        let Some(path) = clean(path) else {
            return Err(PathRefusal {
                rule_id: "builtin.path.outside".into(),
                reason: format!("{path} leaves the workspace"),
            });
        };
        let shown = if path.is_empty() { "." } else { path.as_str() };
        for candidate in self_and_ancestors(&path) {
            for (rule, set) in &self.deny {
                if set.is_match(candidate) {
                    return Err(PathRefusal {
                        rule_id: rule.id.clone(),
                        reason: format!("{shown} is under the denied root {}", rule.glob),
                    });
                }
            }
        }
        if access == Access::Write
            && let Some(protected) = &self.protected
        {
            for candidate in self_and_ancestors(&path) {
                if let Some(i) = protected.matches(candidate).first() {
                    let id = PROTECTED.get(*i).map(|p| p.1).unwrap_or("builtin.path");
                    let what = if id.ends_with("pablo-dir") {
                        "pablo's own directory"
                    } else {
                        "git's internal directory"
                    };
                    return Err(PathRefusal {
                        rule_id: id.into(),
                        reason: format!("{shown} is inside {what}, which is never writable"),
                    });
                }
            }
        }
        let layers = match access {
            Access::Read => &self.read,
            Access::Write => &self.write,
        };
        let mut granted = Vec::new();
        for layer in layers {
            match layer.covering(&path) {
                Some(rule) => granted.push(rule.id.clone()),
                None if access == Access::Read && layer.on_the_way(&path) => {
                    granted.push(format!("{}.ancestor", layer.rules[0].id));
                }
                None => {
                    let kind = match access {
                        Access::Read => "read",
                        Access::Write => "write",
                    };
                    let roots: Vec<&str> = layer.rules.iter().map(|r| r.glob.as_str()).collect();
                    return Err(PathRefusal {
                        rule_id: layer.rules[0].id.clone(),
                        reason: format!(
                            "{shown} is outside the {kind} roots of {} ({})",
                            layer.source,
                            roots.join(", ")
                        ),
                    });
                }
            }
        }
        Ok(granted)
    }
}

/// `./a//b/` → `a/b`; `None` when the path climbs out or is absolute.
fn clean(path: &str) -> Option<String> {
    if path.starts_with('/') {
        return None;
    }
    let mut parts = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => return None,
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

/// Checks that a glob compiles (for config validation messages).
pub(crate) fn check_glob(glob: &str) -> Result<(), String> {
    compile(glob).map(|_| ()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots(id: &str, globs: &[&str]) -> Vec<RootRule> {
        globs
            .iter()
            .enumerate()
            .map(|(i, g)| RootRule {
                id: format!("{id}.{i}"),
                glob: (*g).into(),
            })
            .collect()
    }

    #[test]
    fn git_internals_and_pablo_dir_are_never_writable() {
        let p = PathPolicy::new();
        for path in [
            ".git/config",
            ".git/hooks/pre-commit",
            "sub/.git/HEAD",
            ".git",
            ".pablo/config.toml",
        ] {
            assert!(p.check(path, Access::Write).is_err(), "{path}");
            assert!(p.check(path, Access::Read).is_ok(), "{path}");
        }
        assert!(p.check(".gitignore", Access::Write).is_ok());
        assert!(p.check("src/git/x.rs", Access::Write).is_ok());
    }

    #[test]
    fn layers_intersect_and_deny_roots_win() {
        let mut p = PathPolicy::new();
        p.add_write_roots("a", roots("a", &["src", "docs/**"]))
            .unwrap();
        p.add_write_roots("b", roots("b", &["src/**/*.rs"]))
            .unwrap();
        p.add_deny_roots(roots("d", &["src/secret"])).unwrap();
        assert!(p.check("src/lib.rs", Access::Write).is_ok());
        assert!(p.check("docs/a.md", Access::Write).is_err());
        let err = p.check("src/secret/k.rs", Access::Write).unwrap_err();
        assert_eq!(err.rule_id, "d.0");
        assert!(p.check("src/secret/k.rs", Access::Read).is_err());
    }

    #[test]
    fn read_roots_let_the_way_to_a_root_be_listed() {
        let mut p = PathPolicy::new();
        p.add_read_roots("a", roots("a", &["src/policy/**"]))
            .unwrap();
        assert!(p.check(".", Access::Read).is_ok());
        assert!(p.check("src", Access::Read).is_ok());
        assert!(p.check("src/policy/mod.rs", Access::Read).is_ok());
        assert!(p.check("src/main.rs", Access::Read).is_err());
        assert!(p.check("../etc/passwd", Access::Read).is_err());
    }
}
