//! The XDG directories and the layers (user, project, `--config`, `PABLO_`/`-c`) read from them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{
    CheckpointConfig, ConfigError, ConfigFile, ModelTable, ShellOptions, Trust, WebSearchOptions,
    env,
};

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

/// The layers that exist, in order: user, project, `--config`, then the person's `PABLO_`
/// variables and `-c` settings ([`env`]). Each is kept separate so that policy can treat the
/// project layer as untrusted.
#[derive(Debug, Clone, Default)]
pub struct Layers {
    pub user: Option<(PathBuf, ConfigFile)>,
    pub project: Option<(PathBuf, ConfigFile)>,
    pub explicit: Option<(PathBuf, ConfigFile)>,
    /// `PABLO_` variables and `-c key=value`: the person's own, above the files (the path is a
    /// label for messages).
    pub overrides: Option<(PathBuf, ConfigFile)>,
    /// Where each setting of `overrides` came from, by dotted key path.
    pub override_origins: BTreeMap<String, String>,
    /// What was taken out of the project layer because the folder is not trusted, each described
    /// for the person ([`ConfigFile::parse_untrusted`]).
    pub project_withheld: Vec<String>,
}

/// The label of the `PABLO_`/`-c` layer in messages.
pub const OVERRIDES_LABEL: &str = "PABLO_ variables and -c";

impl Layers {
    /// Reads the files that exist; the project layer of a folder `trust` does not let decide
    /// more than narrowing keeps only what narrows ([`super::trust::KEPT`]).
    pub fn load(
        dirs: &Dirs,
        workspace: &Path,
        explicit: Option<&Path>,
        trust: Trust,
    ) -> Result<Self, ConfigError> {
        let optional = |p: PathBuf| -> Result<Option<(PathBuf, ConfigFile)>, ConfigError> {
            if p.is_file() {
                let c = ConfigFile::load(&p)?;
                Ok(Some((p, c)))
            } else {
                Ok(None)
            }
        };
        let user = optional(dirs.user_config_file())?;
        let project_file = project_config_file(workspace);
        let (project, project_withheld) = if !project_file.is_file() {
            (None, Vec::new())
        } else if trust.project_only_narrows() {
            let (c, withheld) = ConfigFile::load_untrusted(&project_file)?;
            (Some((project_file, c)), withheld)
        } else {
            (optional(project_file)?, Vec::new())
        };
        Ok(Self {
            user,
            project,
            project_withheld,
            explicit: match explicit {
                Some(p) => Some((p.to_path_buf(), ConfigFile::load(p)?)),
                None => None,
            },
            ..Self::default()
        })
    }

    /// Layers in precedence order (later wins for scalars).
    pub fn iter(&self) -> impl Iterator<Item = &ConfigFile> {
        [&self.user, &self.project, &self.explicit, &self.overrides]
            .into_iter()
            .flatten()
            .map(|(_, c)| c)
    }

    /// The person's own layers, in precedence order: the user's file, `--config`, and the
    /// `PABLO_`/`-c` settings (never the project's, which comes with the repository).
    pub fn personal(&self) -> impl DoubleEndedIterator<Item = &(PathBuf, ConfigFile)> {
        [&self.user, &self.explicit, &self.overrides]
            .into_iter()
            .flatten()
    }

    /// Adds the person's `PABLO_` variables (`vars`) and `-c` settings (`args`) as the top layer;
    /// returns the note about `PABLO_` variables that are no config key (said once per process).
    pub fn with_overrides(
        &mut self,
        vars: Vec<(String, String)>,
        args: &[String],
    ) -> Result<Option<String>, ConfigError> {
        let (mut settings, unknown) = env::from_vars(vars);
        settings.extend(env::from_args(args)?);
        if let Some((file, origins)) = env::layer(&settings)? {
            self.overrides = Some((PathBuf::from(OVERRIDES_LABEL), file));
            self.override_origins = origins;
        }
        Ok(env::unknown_note(&unknown))
    }

    /// The last layer's value for a scalar setting.
    pub fn last<T: Clone>(&self, pick: impl Fn(&ConfigFile) -> Option<T>) -> Option<T> {
        self.iter().filter_map(pick).last()
    }

    /// Checkpoint settings, later layers winning. The project layer is not read: a repository's
    /// own config must not be able to switch off or shrink the person's undo.
    pub fn checkpoints(&self) -> CheckpointConfig {
        let mut out = CheckpointConfig::default();
        for (_, c) in self.personal() {
            let k = &c.options.checkpoints;
            out.enabled = k.enabled.or(out.enabled);
            out.max_bytes = k.max_bytes.or(out.max_bytes);
            out.max_file_bytes = k.max_file_bytes.or(out.max_file_bytes);
        }
        out
    }

    /// The `model` settings merged field by field (the last layer that sets a field wins), so
    /// that a project can set the window while the user's file names the model.
    pub fn model(&self) -> ModelTable {
        let mut out = ModelTable::default();
        for c in self.iter() {
            let Some(m) = &c.model else { continue };
            let m = m.table();
            out.name = m.name.or(out.name);
            out.context_window = m.context_window.or(out.context_window);
            out.max_output_tokens = m.max_output_tokens.or(out.max_output_tokens);
            out.reasoning = m.reasoning.or(out.reasoning);
            out.wire_api = m.wire_api.or(out.wire_api);
            out.images = m.images.or(out.images);
            if !m.prices.is_empty() {
                out.prices.input = m.prices.input.or(out.prices.input);
                out.prices.output = m.prices.output.or(out.prices.output);
                out.prices.cache_read = m.prices.cache_read.or(out.prices.cache_read);
                out.prices.cache_write = m.prices.cache_write.or(out.prices.cache_write);
                out.prices.web_search = m.prices.web_search.or(out.prices.web_search);
            }
        }
        out
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
            // The sandbox keys are settled by policy (the project layer only tightens); this
            // merge only carries them for display.
            out.sandbox = s.sandbox.or(out.sandbox);
            out.network = s.network.or(out.network);
            out.known_safe_reads = s.known_safe_reads.or(out.known_safe_reads);
            out.editor_terminals = s.editor_terminals.or(out.editor_terminals);
            out.writable_roots.extend(s.writable_roots.iter().cloned());
            out.network_allow.extend(s.network_allow.iter().cloned());
            out.protect_max_dirs = s.protect_max_dirs.or(out.protect_max_dirs);
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

    /// `[options.web_search]` merged: the last layer that sets a field wins (an untrusted
    /// project's `enabled = true` and `allowed_domains` were withheld at load).
    pub fn web_search(&self) -> WebSearchOptions {
        let mut out = WebSearchOptions::default();
        for c in self.iter() {
            let w = &c.options.web_search;
            out.enabled = w.enabled.or(out.enabled);
            out.max_uses = w.max_uses.or(out.max_uses);
            if !w.allowed_domains.is_empty() {
                out.allowed_domains = w.allowed_domains.clone();
            }
            if !w.blocked_domains.is_empty() {
                out.blocked_domains = w.blocked_domains.clone();
            }
        }
        out
    }
}
