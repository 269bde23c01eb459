//! `[lsp.NAME]`: the language servers pablo asks about the files the model reads and edits
//! (docs/lsp.md). A table with a `command` defines a server; one without adjusts a server an
//! earlier layer or the built-in list defined (its wait, its file types, `enabled = false`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{ConfigError, ConfigFile, Layers, Trust};

/// Default milliseconds a check waits for a server's diagnostics of a new text.
pub const LSP_WAIT_MS: u64 = 1500;
/// Default seconds a server has to answer `initialize`.
pub const LSP_STARTUP_TIMEOUT_SECONDS: u64 = 30;

/// One `[lsp.NAME]` table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LspServerConfig {
    /// The program (found through the command `PATH` when it has no slash).
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    /// LSP language ids (`python`, `rust`) or file extensions without the dot (`pyi`).
    pub filetypes: Option<Vec<String>>,
    /// Files or directories that mark a project root (`pyproject.toml`, `Cargo.toml`); the server
    /// runs at the nearest ancestor of a file that holds one, else at the workspace.
    pub root_markers: Option<Vec<String>>,
    /// Sent as `initializationOptions`.
    pub initialization_options: Option<serde_json::Value>,
    /// Variables the server gets besides the command environment (never a secret of pablo's).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// `false` switches the server off, built-in or not.
    pub enabled: Option<bool>,
    /// How long a check waits for the diagnostics of a new text (default 1500 ms).
    pub wait_ms: Option<u64>,
    /// How long the server has to start (default 30 s).
    pub startup_timeout_seconds: Option<u64>,
}

impl LspServerConfig {
    /// Takes every key `later` sets.
    pub fn merge(&mut self, later: &LspServerConfig) {
        macro_rules! take {
            ($($f:ident),*) => { $( if later.$f.is_some() { self.$f = later.$f.clone(); } )* };
        }
        take!(
            command,
            args,
            filetypes,
            root_markers,
            initialization_options,
            enabled,
            wait_ms,
            startup_timeout_seconds
        );
        self.env
            .extend(later.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
}

/// A server the layers defined or adjusted, with where its definition came from.
#[derive(Debug, Clone, PartialEq)]
pub struct LspServerEntry {
    pub name: String,
    pub config: LspServerConfig,
    /// `user config /home/…/config.toml`, for messages.
    pub source: String,
}

impl LspServerEntry {
    /// The servers of one config text's `[lsp.NAME]` tables, as `--config FILE` alone would
    /// give them (the benches and tests that start a hub without a whole launch).
    pub fn from_config_text(text: &str, path: &Path) -> Result<Vec<Self>, ConfigError> {
        let layers = Layers {
            explicit: Some((path.to_path_buf(), ConfigFile::parse(text, path)?)),
            ..Layers::default()
        };
        Ok(layers.lsp_servers(Trust::decided(true)).0)
    }
}

impl Layers {
    /// The `[lsp.NAME]` tables of the layers, merged in order, and notes on what was ignored.
    /// The project layer comes with the repository: until the folder is trusted it may switch
    /// servers off and nothing else (its other keys would choose a program to run).
    pub fn lsp_servers(&self, trust: Trust) -> (Vec<LspServerEntry>, Vec<String>) {
        let project_trusted = trust.may_run_programs();
        let mut out: BTreeMap<String, LspServerEntry> = BTreeMap::new();
        let mut warnings = Vec::new();
        let layers = [
            (&self.user, "user config", true),
            (&self.project, "project config", project_trusted),
            (&self.explicit, "--config", true),
            (&self.overrides, "settings of", true),
        ];
        for (layer, kind, trusted) in layers {
            let Some((path, file)) = layer else { continue };
            let label = format!("{kind} {}", path.display());
            for (name, server) in &file.lsp {
                let server = if trusted {
                    server.clone()
                } else {
                    if server != &only_enabled(server) {
                        warnings.push(format!(
                            "{label}: lsp.{name} ignored except `enabled`: the folder is not \
                             trusted (trust it with `pablo policy trust`)"
                        ));
                    }
                    only_enabled(server)
                };
                let entry = out.entry(name.clone()).or_insert_with(|| LspServerEntry {
                    name: name.clone(),
                    config: LspServerConfig::default(),
                    source: label.clone(),
                });
                if server.command.is_some() {
                    entry.source = label.clone();
                }
                entry.config.merge(&server);
            }
        }
        (out.into_values().collect(), warnings)
    }
}

/// What an untrusted layer may say of a server: whether it is on (and only `false` counts).
fn only_enabled(server: &LspServerConfig) -> LspServerConfig {
    LspServerConfig {
        enabled: server.enabled.filter(|on| !on),
        ..LspServerConfig::default()
    }
}

/// The directory of the servers' stderr logs under a state directory.
pub fn lsp_log_dir(state: &std::path::Path) -> PathBuf {
    state.join("lsp")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ConfigFile;

    fn layer(text: &str) -> Option<(PathBuf, ConfigFile)> {
        Some((PathBuf::from("/c.toml"), toml::from_str(text).unwrap()))
    }

    #[test]
    fn an_lsp_table_parses_with_every_key() {
        let c: ConfigFile = toml::from_str(
            "[lsp.py]\ncommand = \"pyright-langserver\"\nargs = [\"--stdio\"]\n\
             filetypes = [\"python\", \"pyi\"]\nroot_markers = [\"pyproject.toml\"]\n\
             wait_ms = 900\nstartup_timeout_seconds = 5\n\
             [lsp.py.initialization_options]\nx = 1\n",
        )
        .unwrap();
        let s = &c.lsp["py"];
        assert_eq!(s.command.as_deref(), Some("pyright-langserver"));
        assert_eq!(s.wait_ms, Some(900));
        assert_eq!(s.initialization_options, Some(serde_json::json!({"x": 1})));
    }

    #[test]
    fn an_untrusted_project_may_switch_a_server_off_but_not_choose_its_program() {
        let layers = Layers {
            user: layer("[lsp.py]\ncommand = \"pyright-langserver\"\n"),
            project: layer("[lsp.py]\ncommand = \"/tmp/evil\"\nenabled = false\n"),
            ..Layers::default()
        };
        let (servers, warnings) = layers.lsp_servers(Trust::UNTRUSTED);
        assert_eq!(
            servers[0].config.command.as_deref(),
            Some("pyright-langserver")
        );
        assert_eq!(servers[0].config.enabled, Some(false));
        assert!(warnings[0].contains("not trusted"), "{warnings:?}");
        let (trusted, _) = layers.lsp_servers(Trust::decided(true));
        assert_eq!(trusted[0].config.command.as_deref(), Some("/tmp/evil"));
    }
}
