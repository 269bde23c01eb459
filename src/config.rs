//! Configuration: TOML layers under the XDG directories.
//!
//! Three files may exist: the user's (`$XDG_CONFIG_HOME/pablo/config.toml`), the project's
//! (`.pablo/config.toml` in the workspace) and one named with `--config`. Unknown keys and bad
//! values are errors naming the file, the line and the key, because a misspelt safety setting
//! that is silently ignored is worse than no setting. How the layers combine for policy (they only
//! narrow) is the policy module's business; scalar settings are taken from the last layer that
//! sets them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::core::Coded;
use crate::core::ToolMode;

/// The fixed `PATH` of every command pablo runs, and the one command words are resolved through
/// when policy matches rules (so `git` and `/usr/bin/git` are the same command).
pub const CLEAN_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// One config file, as written. Every field is optional so layers can be merged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// `openai`, `anthropic` or `ollama`.
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// Name of the environment variable holding the key (the key itself never goes in a file).
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub limits: LimitsConfig,
    #[serde(default)]
    pub options: Options,
    #[serde(default)]
    pub tui: TuiConfig,
}

/// `[tui]`: how the terminal front-end shows itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuiConfig {
    /// Full-screen on the alternate screen (as `--alt-screen`) instead of inline under the
    /// terminal's scrollback.
    pub alt_screen: Option<bool>,
    /// The working mode a session starts in (`ask`, `auto-edit`, `plan`). Read from the user's
    /// config and `--config` only: a repository does not choose to skip the person's questions.
    pub mode: Option<crate::protocol::WorkMode>,
    /// How pablo gets the person's attention when an approval waits or a turn ends.
    pub notifications: Option<Notifications>,
}

/// `[tui] notifications`: `off` (nothing), `bell` (the terminal bell), `desktop` (the bell, and a
/// desktop notification when the terminal window is not focused).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Notifications {
    Off,
    Bell,
    #[default]
    Desktop,
}

/// Host limits; `None` keeps the built-in default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    pub run_deadline_seconds: Option<u64>,
    pub max_tool_argument_bytes: Option<usize>,
    pub max_tool_result_bytes: Option<usize>,
    pub max_request_context_bytes: Option<usize>,
    pub max_model_output_bytes: Option<usize>,
    pub max_native_events: Option<u64>,
    pub max_model_calls: Option<u64>,
    pub max_tool_calls: Option<u64>,
    /// Seconds without a byte on a model stream before it is abandoned.
    pub stream_idle_timeout_seconds: Option<u64>,
    /// Conversation size (bytes) at which older turns are summarized.
    pub compact_at_bytes: Option<usize>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    #[serde(default)]
    pub shell: ShellOptions,
    /// Per-tool policy, keyed by native tool name (`"fs.write" = "ask"`).
    #[serde(default)]
    pub tools: BTreeMap<String, ToolMode>,
    #[serde(default)]
    pub filesystem: FilesystemOptions,
}

/// `[options.shell]`, in the seed's deployment shape plus pablo's additions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellOptions {
    pub enabled: Option<bool>,
    /// Foreground timeout; 0 means the default (60 s).
    pub timeout_seconds: Option<u64>,
    /// Inline output cap; 0 means the default (50,000).
    pub max_output_chars: Option<usize>,
    pub enable_deny_patterns: Option<bool>,
    #[serde(default)]
    pub custom_deny_patterns: Vec<String>,
    #[serde(default)]
    pub custom_allow_patterns: Vec<String>,
    /// The launcher that receives `-c COMMAND` (default `/bin/sh`).
    pub launcher: Option<String>,
    /// Live background sessions at once (default 16).
    pub max_sessions: Option<usize>,
    #[serde(default)]
    pub commands: CommandRules,
    #[serde(default)]
    pub env: ShellEnvOptions,
}

/// `[options.shell.env]`: what commands get of pablo's environment besides the built-in
/// toolchain list (docs/shell.md). Secret-looking names are withheld whatever is written here.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellEnvOptions {
    /// More variables to pass (`NAME` or `PREFIX*`); `HOME` may be named.
    #[serde(default)]
    pub inherit: Vec<String>,
    /// Variables never to pass, built-in ones included.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Fixed values (`PATH` here replaces the inherited one).
    #[serde(default)]
    pub set: BTreeMap<String, String>,
}

/// `[options.shell.commands]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandRules {
    pub default: Option<RuleDecision>,
    #[serde(default)]
    pub allow: Vec<CommandRule>,
    #[serde(default)]
    pub deny: Vec<CommandRule>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleDecision {
    Allow,
    Ask,
    Deny,
}

/// `{ id, executable, args, match }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandRule {
    pub id: String,
    pub executable: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(rename = "match", default)]
    pub match_kind: MatchKind,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchKind {
    #[default]
    Prefix,
    Exact,
}

/// `[options.filesystem]`: roots as globs relative to the workspace, and refused file names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilesystemOptions {
    pub enabled: Option<bool>,
    #[serde(default)]
    pub read_roots: Vec<String>,
    #[serde(default)]
    pub write_roots: Vec<String>,
    #[serde(default)]
    pub deny_roots: Vec<String>,
    /// Extra credential-like file name globs refused for reading (added to the built-in list).
    #[serde(default)]
    pub refused_names: Vec<String>,
    /// Largest file `fs.read` opens, in bytes (default: unlimited in the CLI).
    pub max_file_bytes: Option<u64>,
}

/// A config file that cannot be used. The message names the file, the line and the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read: {message}")]
    Read { path: PathBuf, message: String },
    #[error("{path}:{line}: {message}")]
    Invalid {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    Value { path: PathBuf, message: String },
}

impl Coded for ConfigError {
    fn code(&self) -> &'static str {
        match self {
            ConfigError::Read { .. } => "config_unreadable",
            ConfigError::Invalid { .. } | ConfigError::Value { .. } => "config_invalid",
        }
    }
}

impl ConfigFile {
    /// Parses one file's text; `path` is only used in messages.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let parsed: ConfigFile = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
                .unwrap_or(1);
            ConfigError::Invalid {
                path: path.to_path_buf(),
                line,
                message: e.message().trim().to_string(),
            }
        })?;
        parsed.check(path)?;
        Ok(parsed)
    }

    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Self::parse(&text, path)
    }

    /// Checks that serde cannot express: values that parse but mean nothing.
    fn check(&self, path: &Path) -> Result<(), ConfigError> {
        let bad = |message: String| ConfigError::Value {
            path: path.to_path_buf(),
            message,
        };
        if let Some(p) = &self.provider
            && !matches!(p.as_str(), "openai" | "anthropic" | "ollama")
        {
            return Err(bad(format!(
                "provider: unknown provider {p:?} (expected openai, anthropic or ollama)"
            )));
        }
        let shell = &self.options.shell;
        for (key, list) in [
            ("custom_deny_patterns", &shell.custom_deny_patterns),
            ("custom_allow_patterns", &shell.custom_allow_patterns),
        ] {
            for pat in list {
                if let Err(e) = regex::Regex::new(pat) {
                    return Err(bad(format!(
                        "options.shell.{key}: {pat:?} is not a regular expression: {e}"
                    )));
                }
            }
        }
        let rules = &shell.commands;
        for rule in rules.allow.iter().chain(rules.deny.iter()) {
            if rule.id.trim().is_empty() {
                return Err(bad("options.shell.commands: a rule has an empty id".into()));
            }
            if rule.executable.trim().is_empty() {
                return Err(bad(format!(
                    "options.shell.commands: rule {:?} has an empty executable",
                    rule.id
                )));
            }
        }
        let fs = &self.options.filesystem;
        for (key, list) in [
            ("read_roots", &fs.read_roots),
            ("write_roots", &fs.write_roots),
            ("deny_roots", &fs.deny_roots),
            ("refused_names", &fs.refused_names),
        ] {
            for glob in list {
                if let Err(e) = globset::Glob::new(glob) {
                    return Err(bad(format!(
                        "options.filesystem.{key}: {glob:?} is not a glob: {e}"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// The XDG directories pablo uses. Tests isolate themselves with `XDG_*_HOME`.
#[derive(Debug, Clone)]
pub struct Dirs {
    pub config: PathBuf,
    pub data: PathBuf,
    pub state: PathBuf,
}

impl Dirs {
    /// Honours `XDG_CONFIG_HOME`, `XDG_DATA_HOME`, `XDG_STATE_HOME` first (also on macOS, so tests
    /// behave the same everywhere), then the platform defaults.
    pub fn discover() -> Result<Self, ConfigError> {
        let from_env = |var: &str| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map(|v| PathBuf::from(v).join("pablo"))
        };
        let project = directories::ProjectDirs::from("", "", "pablo");
        let fallback = |pick: fn(&directories::ProjectDirs) -> PathBuf| {
            project.as_ref().map(pick).ok_or_else(|| ConfigError::Read {
                path: PathBuf::from("$HOME"),
                message: "cannot find a home directory for config and data; set XDG_CONFIG_HOME \
                          and XDG_DATA_HOME"
                    .into(),
            })
        };
        let config = match from_env("XDG_CONFIG_HOME") {
            Some(p) => p,
            None => fallback(|p| p.config_dir().to_path_buf())?,
        };
        let data = match from_env("XDG_DATA_HOME") {
            Some(p) => p,
            None => fallback(|p| p.data_dir().to_path_buf())?,
        };
        let state = match from_env("XDG_STATE_HOME") {
            Some(p) => p,
            None => fallback(|p| {
                p.state_dir()
                    .unwrap_or_else(|| p.data_local_dir())
                    .to_path_buf()
            })?,
        };
        Ok(Self {
            config,
            data,
            state,
        })
    }

    pub fn user_config_file(&self) -> PathBuf {
        self.config.join("config.toml")
    }
}

/// The project layer's file inside a workspace.
pub fn project_config_file(workspace: &Path) -> PathBuf {
    workspace.join(".pablo").join("config.toml")
}

/// The layers that exist, in order: user, project, `--config`. Each is kept separate so that
/// policy can treat the project layer as untrusted.
#[derive(Debug, Clone, Default)]
pub struct Layers {
    pub user: Option<(PathBuf, ConfigFile)>,
    pub project: Option<(PathBuf, ConfigFile)>,
    pub explicit: Option<(PathBuf, ConfigFile)>,
}

impl Layers {
    pub fn load(
        dirs: &Dirs,
        workspace: &Path,
        explicit: Option<&Path>,
    ) -> Result<Self, ConfigError> {
        let optional = |p: PathBuf| -> Result<Option<(PathBuf, ConfigFile)>, ConfigError> {
            if p.is_file() {
                let c = ConfigFile::load(&p)?;
                Ok(Some((p, c)))
            } else {
                Ok(None)
            }
        };
        Ok(Self {
            user: optional(dirs.user_config_file())?,
            project: optional(project_config_file(workspace))?,
            explicit: match explicit {
                Some(p) => Some((p.to_path_buf(), ConfigFile::load(p)?)),
                None => None,
            },
        })
    }

    /// Layers in precedence order (later wins for scalars).
    pub fn iter(&self) -> impl Iterator<Item = &ConfigFile> {
        [&self.user, &self.project, &self.explicit]
            .into_iter()
            .flatten()
            .map(|(_, c)| c)
    }

    /// The last layer's value for a scalar setting.
    pub fn last<T: Clone>(&self, pick: impl Fn(&ConfigFile) -> Option<T>) -> Option<T> {
        self.iter().filter_map(pick).last()
    }

    /// Shell options with scalars merged (later wins) and lists concatenated. Policy reads the
    /// layers itself to apply its narrowing rules; the process side only needs these numbers.
    pub fn shell(&self) -> ShellOptions {
        let mut out = ShellOptions::default();
        for c in self.iter() {
            let s = &c.options.shell;
            out.enabled = s.enabled.or(out.enabled);
            out.timeout_seconds = s.timeout_seconds.or(out.timeout_seconds);
            out.max_output_chars = s.max_output_chars.or(out.max_output_chars);
            out.enable_deny_patterns = s.enable_deny_patterns.or(out.enable_deny_patterns);
            out.launcher = s.launcher.clone().or(out.launcher);
            out.max_sessions = s.max_sessions.or(out.max_sessions);
            out.custom_deny_patterns
                .extend(s.custom_deny_patterns.iter().cloned());
            out.custom_allow_patterns
                .extend(s.custom_allow_patterns.iter().cloned());
            out.commands.default = s.commands.default.or(out.commands.default);
            out.commands.allow.extend(s.commands.allow.iter().cloned());
            out.commands.deny.extend(s.commands.deny.iter().cloned());
            out.env.inherit.extend(s.env.inherit.iter().cloned());
            out.env.exclude.extend(s.env.exclude.iter().cloned());
            out.env
                .set
                .extend(s.env.set.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_shell_shape_parses() {
        let text = r#"
[options.shell]
enabled = true
timeout_seconds = 60
max_output_chars = 50000
enable_deny_patterns = true
custom_deny_patterns = []
custom_allow_patterns = []

[options.shell.commands]
default = "deny"
allow = [
  { id = "docs.git-status", executable = "/usr/bin/git", args = ["status"], match = "prefix" },
  { id = "docs.wc", executable = "/usr/bin/wc", args = [], match = "prefix" }
]
deny = [
  { id = "docs.no-force", executable = "/usr/bin/git", args = ["push", "--force"], match = "exact" }
]

[options.tools]
"fs.write" = "ask"
"#;
        let c = ConfigFile::parse(text, Path::new("c.toml")).unwrap();
        assert_eq!(c.options.shell.commands.allow.len(), 2);
        assert_eq!(
            c.options.shell.commands.deny[0].match_kind,
            MatchKind::Exact
        );
        assert_eq!(c.options.tools.get("fs.write"), Some(&ToolMode::Ask));
    }

    #[test]
    fn unknown_key_names_file_line_and_key() {
        let text = "model = \"x\"\n\n[options.shell]\ntimeout_secs = 5\n";
        let err = ConfigFile::parse(text, Path::new("/tmp/p.toml")).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("/tmp/p.toml:4:"), "{msg}");
        assert!(msg.contains("timeout_secs"), "{msg}");
    }

    #[test]
    fn bad_value_names_the_key() {
        let text = "[options.tools]\n\"fs.write\" = \"sometimes\"\n";
        let msg = ConfigFile::parse(text, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("c.toml:2"), "{msg}");
        assert!(msg.contains("sometimes"), "{msg}");
    }

    #[test]
    fn bad_regex_is_refused_with_its_key() {
        let text = "[options.shell]\ncustom_deny_patterns = [\"(unclosed\"]\n";
        let msg = ConfigFile::parse(text, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("custom_deny_patterns"), "{msg}");
    }

    #[test]
    fn unknown_provider_is_refused() {
        let msg = ConfigFile::parse("provider = \"gemini\"\n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("gemini"), "{msg}");
    }
}
