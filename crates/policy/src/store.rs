//! Saved approvals ("allow always") and trusted folders, kept under the XDG config directory.
//!
//! Anything that grants pablo more authority lives outside the workspace, so a model that can
//! write files in the workspace cannot approve its own commands or trust its own project config.
//! Approvals are kept per workspace, in a file named after a hash of the canonical workspace path
//! (the path itself is recorded inside, for listings). Writes go through a temporary file and a
//! rename, so a crash leaves the old file or the new one, never half of one.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::PolicyError;
use pablo_config::{Dirs, MatchKind};

/// One saved approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedRule {
    /// Stable id derived from the rule's content (`always.cargo-test-1f2e3d4c`).
    pub id: String,
    #[serde(flatten)]
    pub kind: SavedKind,
    /// When it was saved (RFC 3339, UTC).
    pub(crate) created: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SavedKind {
    /// A command rule: the resolved executable and leading arguments.
    Command {
        executable: String,
        args: Vec<String>,
        #[serde(rename = "match")]
        match_kind: MatchKind,
    },
    /// Edits (fs.write / fs.edit) of one workspace-relative path.
    Edit { path: String },
    /// Every call of one tool whose preview has nothing finer to key on.
    Tool { tool: String },
}

impl SavedKind {
    /// The id a rule with this content gets; the same content always gets the same id.
    pub(crate) fn stable_id(&self) -> String {
        let canonical = serde_json::to_string(self).unwrap_or_default();
        let digest = hex::encode(Sha256::digest(canonical.as_bytes()));
        let short = &digest[..8];
        let slug = match self {
            SavedKind::Command {
                executable, args, ..
            } => {
                let name = executable.rsplit('/').next().unwrap_or(executable);
                let mut s = slugify(name);
                if let Some(first) = args.first() {
                    s.push('-');
                    s.push_str(&slugify(first));
                }
                s
            }
            SavedKind::Edit { path } => format!("edit-{}", slugify(path)),
            SavedKind::Tool { tool } => format!("tool-{}", slugify(tool)),
        };
        format!(
            "always.{}-{short}",
            slug.chars().take(40).collect::<String>()
        )
    }

    pub fn describe(&self) -> String {
        match self {
            SavedKind::Command {
                executable,
                args,
                match_kind,
            } => {
                let kind = match match_kind {
                    MatchKind::Prefix => "prefix",
                    MatchKind::Exact => "exact",
                };
                let mut s = format!("{kind} {executable}");
                for a in args {
                    s.push(' ');
                    s.push_str(&super::plain::quote_for_display(a));
                }
                s
            }
            SavedKind::Edit { path } => format!("edits of {path}"),
            SavedKind::Tool { tool } => format!("every {tool} call"),
        }
    }
}

fn slugify(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StoreFile {
    workspace: String,
    #[serde(default)]
    rules: Vec<SavedRule>,
}

/// The approvals file of one workspace.
#[derive(Debug, Clone)]
pub struct RuleStore {
    file: PathBuf,
    workspace: PathBuf,
}

impl RuleStore {
    /// The store for `workspace` (canonical). Refused when the file would land inside the
    /// workspace (an `XDG_CONFIG_HOME` pointing into it).
    pub(crate) fn for_workspace(dirs: &Dirs, workspace: &Path) -> Result<Self, PolicyError> {
        let key = hex::encode(Sha256::digest(workspace.to_string_lossy().as_bytes()));
        let file = dirs
            .config
            .join("approvals")
            .join(format!("{}.json", &key[..16]));
        if inside(&file, workspace) {
            return Err(PolicyError::StoreInWorkspace { path: file });
        }
        Ok(Self {
            file,
            workspace: workspace.to_path_buf(),
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.file
    }

    pub(crate) fn load(&self) -> Result<Vec<SavedRule>, PolicyError> {
        Ok(self.read()?.rules)
    }

    fn read(&self) -> Result<StoreFile, PolicyError> {
        match std::fs::read_to_string(&self.file) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| PolicyError::Store {
                path: self.file.clone(),
                message: format!("not a rules file: {e}"),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(StoreFile {
                workspace: self.workspace.to_string_lossy().into_owned(),
                rules: Vec::new(),
            }),
            Err(e) => Err(PolicyError::Store {
                path: self.file.clone(),
                message: e.to_string(),
            }),
        }
    }

    /// Adds rules not saved yet; returns the whole list.
    pub(crate) fn add(&self, new: &[SavedRule]) -> Result<Vec<SavedRule>, PolicyError> {
        let mut f = self.read()?;
        for r in new {
            if !f.rules.iter().any(|x| x.id == r.id) {
                f.rules.push(r.clone());
            }
        }
        self.write(&f)?;
        Ok(f.rules)
    }

    /// Removes one rule by id; refused with `rule_not_found` (file untouched) when absent.
    pub(crate) fn remove(&self, id: &str) -> Result<SavedRule, PolicyError> {
        let mut f = self.read()?;
        let Some(i) = f.rules.iter().position(|r| r.id == id) else {
            return Err(PolicyError::RuleNotFound {
                id: id.to_string(),
                workspace: self.workspace.clone(),
            });
        };
        let removed = f.rules.remove(i);
        self.write(&f)?;
        Ok(removed)
    }

    fn write(&self, f: &StoreFile) -> Result<(), PolicyError> {
        let text = serde_json::to_string_pretty(f).map_err(|e| PolicyError::Store {
            path: self.file.clone(),
            message: e.to_string(),
        })?;
        write_atomic(&self.file, text.as_bytes())
    }
}

/// Folders whose project config (`.pablo/config.toml`) the person trusts.
#[derive(Debug, Clone)]
pub struct TrustStore {
    file: PathBuf,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    #[serde(default)]
    workspaces: Vec<String>,
}

impl TrustStore {
    pub fn new(dirs: &Dirs) -> Self {
        Self {
            file: dirs.config.join("trusted-workspaces.json"),
        }
    }

    #[cfg(any(test, feature = "test-support"))]
    pub fn path(&self) -> &Path {
        &self.file
    }

    fn read(&self) -> Result<TrustFile, PolicyError> {
        match std::fs::read_to_string(&self.file) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| PolicyError::Store {
                path: self.file.clone(),
                message: format!("not a trust file: {e}"),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TrustFile::default()),
            Err(e) => Err(PolicyError::Store {
                path: self.file.clone(),
                message: e.to_string(),
            }),
        }
    }

    /// Whether `workspace` (canonical) is trusted. A trust file the workspace itself could have
    /// written (inside it) is ignored. A linked worktree is trusted when its main checkout is
    /// ([`trust_key`]): a worktree holds the same repository, so one decision covers both.
    pub fn is_trusted(&self, workspace: &Path) -> Result<bool, PolicyError> {
        let key = trust_key(workspace);
        if inside(&self.file, workspace) || inside(&self.file, &key) {
            return Ok(false);
        }
        let listed = self.read()?.workspaces;
        let is_listed = |p: &Path| {
            let p = p.to_string_lossy();
            listed.iter().any(|w| *w == p)
        };
        Ok(is_listed(&key) || is_listed(workspace))
    }

    /// Marks `workspace` trusted (or not): for a linked worktree, its main checkout, which
    /// covers every worktree of it. Refused when the trust file would be inside it.
    pub fn set_trusted(&self, workspace: &Path, trusted: bool) -> Result<(), PolicyError> {
        let key = trust_key(workspace);
        for dir in [workspace, key.as_path()] {
            if inside(&self.file, dir) {
                return Err(PolicyError::StoreInWorkspace {
                    path: self.file.clone(),
                });
            }
        }
        let mut f = self.read()?;
        let ws = workspace.to_string_lossy().into_owned();
        let key = key.to_string_lossy().into_owned();
        f.workspaces.retain(|w| *w != ws && *w != key);
        if trusted {
            f.workspaces.push(key);
        }
        let text = serde_json::to_string_pretty(&f).map_err(|e| PolicyError::Store {
            path: self.file.clone(),
            message: e.to_string(),
        })?;
        write_atomic(&self.file, text.as_bytes())
    }
}

/// The folder whose trust decides `workspace`'s: the same directory of the main checkout when
/// `workspace` lies in a linked worktree of it (which git wrote at both ends), else itself.
fn trust_key(workspace: &Path) -> PathBuf {
    pablo_process::gitrepo::linked_checkout(workspace).unwrap_or_else(|| workspace.to_path_buf())
}

/// `path` is `dir` or below it, comparing canonical forms where they exist.
fn inside(path: &Path, dir: &Path) -> bool {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    // The file may not exist yet: canonicalise its deepest existing ancestor.
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_os_string());
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let mut full = std::fs::canonicalize(&existing).unwrap_or(existing);
    for name in rest.iter().rev() {
        full.push(name);
    }
    full.starts_with(&dir)
}

fn write_atomic(file: &Path, bytes: &[u8]) -> Result<(), PolicyError> {
    let err = |message: String| PolicyError::Store {
        path: file.to_path_buf(),
        message,
    };
    let dir = file
        .parent()
        .ok_or_else(|| err("the file has no parent directory".into()))?;
    std::fs::create_dir_all(dir).map_err(|e| err(e.to_string()))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        file.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    std::fs::write(&tmp, bytes).map_err(|e| err(e.to_string()))?;
    std::fs::rename(&tmp, file).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        err(e.to_string())
    })
}

/// The current time as RFC 3339 (UTC), for `created`.
pub(crate) fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
