//! The sandbox a command runs in, as policy chose it and front-ends show it.

use serde::{Deserialize, Serialize};

/// How far a command may reach once it runs: the OS sandbox profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxProfile {
    /// Reads anywhere; writes only to `/dev/null` and the terminal; no network.
    ReadOnly,
    /// Writes under the workspace (except `.git/hooks`, `.git/config`, `.pablo`), the session's
    /// temporary directory and the writable roots; network only when configured.
    #[default]
    WorkspaceWrite,
    /// No file-system or network sandbox (the command still gets its own PID namespace).
    Off,
}

impl SandboxProfile {
    pub fn label(self) -> &'static str {
        match self {
            SandboxProfile::ReadOnly => "read-only",
            SandboxProfile::WorkspaceWrite => "workspace-write",
            SandboxProfile::Off => "off",
        }
    }

    /// Stricter profiles rank higher: `off` < `workspace-write` < `read-only`.
    pub fn strictness(self) -> u8 {
        match self {
            SandboxProfile::Off => 0,
            SandboxProfile::WorkspaceWrite => 1,
            SandboxProfile::ReadOnly => 2,
        }
    }
}

impl std::str::FromStr for SandboxProfile {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read-only" => Ok(SandboxProfile::ReadOnly),
            "workspace-write" => Ok(SandboxProfile::WorkspaceWrite),
            "off" => Ok(SandboxProfile::Off),
            other => Err(format!(
                "unknown sandbox profile {other:?} (expected read-only, workspace-write or off)"
            )),
        }
    }
}

/// The sandbox one command gets, as the prompt shows it and the commit applies it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxChoice {
    pub profile: SandboxProfile,
    /// Network reachable from inside (never for `read-only`).
    #[serde(default)]
    pub network: bool,
    /// Every simple command of the line is a known-safe read: git then runs with the repository's
    /// program-running settings neutralised.
    #[serde(default)]
    pub known_safe: bool,
    /// The command runs with the credential files of the workspace, the home directory (all but
    /// the workspace and the toolchains) and pablo's own directories hidden: its read is safe
    /// only because it cannot see them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub credentials_masked: bool,
    /// Why the sandbox is weaker than the profile says (no Landlock, no user namespaces), when it
    /// is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

impl SandboxChoice {
    /// `read-only`, `workspace-write, network`, `off`: for prompts and listings.
    pub fn describe(&self) -> String {
        let mut s = self.profile.label().to_string();
        if self.profile != SandboxProfile::Off {
            s.push_str(if self.network {
                ", network on"
            } else {
                ", no network"
            });
        }
        if let Some(d) = &self.degraded {
            s.push_str(&format!(" ({d})"));
        }
        s
    }
}
