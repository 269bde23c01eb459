//! The static JSON policy of `--policy PATH`: exact tool, launcher and file-system-root rules.
//!
//! It exists for hosts that want a fixed, reviewable policy next to a task (CI jobs, scripted
//! runs). Every rule carries an id of its own so that verdicts name it. The file can only narrow:
//! a tool allow list limits the catalog to the listed tools (it cannot add one the host did not
//! register), a launcher allow list limits which launcher may start commands, and roots intersect
//! with those of the other layers. The format is documented in `docs/policy.md`.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::PolicyError;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticPolicy {
    /// Format version; only `1` exists.
    pub(crate) version: u32,
    #[serde(default)]
    pub(crate) tools: ToolRules,
    #[serde(default)]
    pub(crate) launchers: LauncherRules,
    #[serde(default)]
    pub(crate) filesystem: RootRules,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToolRules {
    #[serde(default)]
    pub(crate) allow: Vec<ToolRule>,
    #[serde(default)]
    pub(crate) deny: Vec<ToolRule>,
}

/// `{"id": "ci.read", "tool": "fs.read"}` — the native tool name, matched exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToolRule {
    pub(crate) id: String,
    pub(crate) tool: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LauncherRules {
    #[serde(default)]
    pub(crate) allow: Vec<LauncherRule>,
    #[serde(default)]
    pub(crate) deny: Vec<LauncherRule>,
}

/// `{"id": "ci.sh", "path": "/bin/sh"}` — an absolute path, compared after resolution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LauncherRule {
    pub(crate) id: String,
    pub(crate) path: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RootRules {
    #[serde(default)]
    pub(crate) read: Vec<GlobRule>,
    #[serde(default)]
    pub(crate) write: Vec<GlobRule>,
    #[serde(default)]
    pub(crate) deny: Vec<GlobRule>,
}

/// `{"id": "ci.docs", "glob": "docs/**"}` — relative to the workspace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GlobRule {
    pub(crate) id: String,
    pub(crate) glob: String,
}

impl StaticPolicy {
    pub fn load(path: &Path) -> Result<Self, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|e| PolicyError::Unreadable {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Self::parse(&text, path)
    }

    pub(crate) fn parse(text: &str, path: &Path) -> Result<Self, PolicyError> {
        let invalid = |message: String| PolicyError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let p: StaticPolicy =
            serde_json::from_str(text).map_err(|e| invalid(format!("line {}: {e}", e.line())))?;
        if p.version != 1 {
            return Err(invalid(format!(
                "version {} is not supported (expected 1)",
                p.version
            )));
        }
        let mut ids = BTreeSet::new();
        let mut check_id = |id: &str| -> Result<(), PolicyError> {
            if id.trim().is_empty() {
                return Err(invalid("a rule has an empty id".into()));
            }
            if !ids.insert(id.to_string()) {
                return Err(invalid(format!("the id {id:?} is used twice")));
            }
            Ok(())
        };
        for r in p.tools.allow.iter().chain(&p.tools.deny) {
            check_id(&r.id)?;
            if r.tool.trim().is_empty() || r.tool.contains(['*', '?']) {
                return Err(invalid(format!(
                    "rule {}: tool must be an exact tool name, not {:?}",
                    r.id, r.tool
                )));
            }
        }
        for r in p.launchers.allow.iter().chain(&p.launchers.deny) {
            check_id(&r.id)?;
            if !r.path.starts_with('/') {
                return Err(invalid(format!(
                    "rule {}: launcher path must be absolute, not {:?}",
                    r.id, r.path
                )));
            }
        }
        let fs = &p.filesystem;
        for r in fs.read.iter().chain(&fs.write).chain(&fs.deny) {
            check_id(&r.id)?;
            if let Err(e) = super::paths::check_glob(&r.glob) {
                return Err(invalid(format!(
                    "rule {}: {:?} is not a glob: {e}",
                    r.id, r.glob
                )));
            }
            if r.glob.starts_with('/') || r.glob.split('/').any(|c| c == "..") {
                return Err(invalid(format!(
                    "rule {}: {:?} must be relative to the workspace",
                    r.id, r.glob
                )));
            }
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_complete_policy_parses() {
        let text = r#"{
          "version": 1,
          "tools": {"allow": [{"id": "t.read", "tool": "fs.read"}],
                    "deny": [{"id": "t.noshell", "tool": "shell.run"}]},
          "launchers": {"allow": [{"id": "l.sh", "path": "/bin/sh"}]},
          "filesystem": {"write": [{"id": "w.docs", "glob": "docs/**"}],
                         "deny": [{"id": "d.env", "glob": "**/.env"}]}
        }"#;
        let p = StaticPolicy::parse(text, Path::new("p.json")).unwrap();
        assert_eq!(p.tools.allow[0].tool, "fs.read");
        assert_eq!(p.filesystem.deny[0].id, "d.env");
    }

    #[test]
    fn duplicate_ids_unknown_keys_and_escaping_globs_are_refused() {
        for (text, needle) in [
            (
                r#"{"version":1,"tools":{"deny":[{"id":"a","tool":"x"},{"id":"a","tool":"y"}]}}"#,
                "used twice",
            ),
            (r#"{"version":1,"tool":{}}"#, "unknown field"),
            (
                r#"{"version":1,"filesystem":{"write":[{"id":"w","glob":"../x"}]}}"#,
                "relative",
            ),
            (r#"{"version":2}"#, "version"),
            (
                r#"{"version":1,"launchers":{"allow":[{"id":"l","path":"sh"}]}}"#,
                "absolute",
            ),
        ] {
            let e = StaticPolicy::parse(text, Path::new("p.json")).unwrap_err();
            assert_eq!(pablo_core::Coded::code(&e), "policy_invalid");
            assert!(e.to_string().contains(needle), "{text}: {e}");
        }
    }
}
