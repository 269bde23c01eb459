//! `[mcp_servers.NAME]`: one server's table, and how the layers settle which servers start.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{Layers, Trust};
use pablo_core::ToolMode;

/// One `[mcp_servers.NAME]` table: a program spoken to over stdio (`command`) or a streamable
/// HTTP endpoint (`url`), with how long to wait for it and what of it to offer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program to start (found through the command `PATH`); exclusive with `url`.
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables the server gets besides the toolchain environment commands get; nothing else
    /// of pablo's environment (no provider key, no secret-looking variable) reaches it.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Names of variables passed from pablo's own environment (a token the server needs). The
    /// variables holding pablo's provider keys cannot be named.
    #[serde(default)]
    pub env_vars: Vec<String>,
    /// Working directory of the program (relative to the workspace; default: the workspace).
    pub cwd: Option<PathBuf>,
    /// A streamable HTTP endpoint; exclusive with `command`.
    pub url: Option<String>,
    /// The variable holding a bearer token sent as `Authorization: Bearer …` (HTTP only).
    pub bearer_token_env: Option<String>,
    /// Extra HTTP headers (HTTP only).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// How pablo signs in to the server with OAuth (HTTP only, not with `bearer_token_env`):
    /// a client id registered with its authorization server, the scopes to ask for. Without it
    /// pablo registers itself (dynamic client registration) when the server asks for sign-in.
    pub oauth: Option<McpOAuthConfig>,
    /// `false` switches the server off (a later layer may switch off an earlier one's server).
    pub enabled: Option<bool>,
    /// When `true`, a server that fails to start stops the session.
    pub required: Option<bool>,
    /// How long to wait for the handshake and the first listing (default 30).
    pub startup_timeout_seconds: Option<u64>,
    /// How long one tool call may take before it is cancelled (default 300).
    pub tool_timeout_seconds: Option<u64>,
    /// Only these tools are offered (real names, as the server lists them).
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never offered.
    #[serde(default)]
    pub disabled_tools: Vec<String>,
    /// Per-tool policy by real tool name: `tools.echo = "auto"`. MCP tools ask by default.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolMode>,
}

/// `oauth = { client_id = "…", scopes = ["…"] }` of an HTTP server's table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpOAuthConfig {
    /// A client id registered with the server's authorization server out of band; without one
    /// pablo registers itself (RFC 7591) when it signs in.
    pub client_id: Option<String>,
    /// The scopes to ask for; without them, those the server names in its challenge or its
    /// metadata.
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// Default seconds to wait for an MCP server to start.
pub const MCP_STARTUP_TIMEOUT_SECONDS: u64 = 30;
/// Default seconds one MCP tool call may take.
pub const MCP_TOOL_TIMEOUT_SECONDS: u64 = 300;

impl McpServerConfig {
    /// Whether this table defines a server (rather than only switching one off or setting
    /// tool modes).
    pub fn defines_server(&self) -> bool {
        self.command.is_some() || self.url.is_some()
    }

    pub fn startup_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(
            self.startup_timeout_seconds
                .filter(|s| *s > 0)
                .unwrap_or(MCP_STARTUP_TIMEOUT_SECONDS),
        )
    }

    pub fn tool_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(
            self.tool_timeout_seconds
                .filter(|s| *s > 0)
                .unwrap_or(MCP_TOOL_TIMEOUT_SECONDS),
        )
    }

    /// The checks serde cannot express; `Err` is the message after `mcp_servers.NAME`.
    pub(super) fn check(&self) -> Result<(), String> {
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => return Err("has both command and url; give one".into()),
            (None, None) => {
                let only_narrowing = self.args.is_empty()
                    && self.env.is_empty()
                    && self.env_vars.is_empty()
                    && self.cwd.is_none()
                    && self.bearer_token_env.is_none()
                    && self.headers.is_empty()
                    && self.oauth.is_none();
                if !only_narrowing {
                    return Err("needs a command (stdio) or a url (streamable HTTP)".into());
                }
            }
            (Some(c), None) if c.trim().is_empty() => return Err("command is empty".into()),
            (None, Some(u)) if !(u.starts_with("http://") || u.starts_with("https://")) => {
                return Err(format!("url {u:?} is not an http:// or https:// URL"));
            }
            _ => {}
        }
        if self.url.is_some() {
            for (key, set) in [
                ("args", !self.args.is_empty()),
                ("env", !self.env.is_empty()),
                ("env_vars", !self.env_vars.is_empty()),
                ("cwd", self.cwd.is_some()),
            ] {
                if set {
                    return Err(format!("{key} is for a command server, not a url one"));
                }
            }
        }
        if self.command.is_some() {
            for (key, set) in [
                ("bearer_token_env", self.bearer_token_env.is_some()),
                ("headers", !self.headers.is_empty()),
                ("oauth", self.oauth.is_some()),
            ] {
                if set {
                    return Err(format!("{key} is for a url server, not a command one"));
                }
            }
        }
        if let Some(oauth) = &self.oauth {
            if self.bearer_token_env.is_some() {
                return Err(
                    "has both oauth and bearer_token_env; a server signs in one way".into(),
                );
            }
            if oauth
                .client_id
                .as_ref()
                .is_some_and(|id| id.trim().is_empty())
            {
                return Err("oauth.client_id is empty".into());
            }
            if let Some(bad) = oauth
                .scopes
                .iter()
                .find(|s| s.is_empty() || s.contains(char::is_whitespace))
            {
                return Err(format!(
                    "oauth.scopes has {bad:?}; a scope is one word without spaces"
                ));
            }
        }
        for name in self.env.keys().chain(self.env_vars.iter()) {
            if !is_env_name(name) {
                return Err(format!("{name:?} is not an environment variable name"));
            }
        }
        if let Some(v) = &self.bearer_token_env
            && !is_env_name(v)
        {
            return Err(format!(
                "bearer_token_env {v:?} is not an environment variable name"
            ));
        }
        for (name, value) in &self.headers {
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
            {
                return Err(format!(
                    "header name {name:?} is not a valid HTTP header name"
                ));
            }
            if value.bytes().any(|b| b == b'\r' || b == b'\n') {
                return Err(format!("header {name} has a line break in its value"));
            }
        }
        Ok(())
    }
}

/// `NAME` of `[mcp_servers.NAME]`: letters, digits, `-` and `_`, so tool names and slash
/// commands built from it stay readable and unambiguous.
pub fn is_mcp_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && !name.contains("__")
}

pub(super) fn is_env_name(name: &str) -> bool {
    !name.is_empty()
        && !name.as_bytes()[0].is_ascii_digit()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// An MCP server to start, as the layers settled it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerEntry {
    pub name: String,
    pub config: McpServerConfig,
    /// Where it was defined (`user config /home/…/config.toml`), for messages.
    pub source: String,
}

impl Layers {
    /// The MCP servers of the layers, in name order, and notes on what was ignored. A server is
    /// defined by the last trusted layer that gives it a `command` or `url`; the project layer
    /// comes with the repository, so until the folder is trusted (`project_trusted`) it starts
    /// nothing: its definitions are ignored with a warning. Any layer may switch a server off
    /// (`enabled = false`) and narrow its tools (`disabled_tools`, `enabled_tools`); trusted
    /// layers may also change its timeouts and `required`.
    pub fn mcp_servers(&self, trust: Trust) -> (Vec<McpServerEntry>, Vec<String>) {
        // A project server starts a program or connects to a URL; its timeouts and `required`
        // would widen what the person allowed.
        let project_trusted =
            trust.may_run_programs() && trust.may_name_endpoints() && trust.may_widen_policy();
        let mut defined: BTreeMap<String, McpServerEntry> = BTreeMap::new();
        let mut off: BTreeMap<String, String> = BTreeMap::new();
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
            for (name, server) in &file.mcp_servers {
                if server.enabled == Some(false) {
                    off.insert(name.clone(), label.clone());
                }
                if server.defines_server() {
                    if trusted {
                        defined.insert(
                            name.clone(),
                            McpServerEntry {
                                name: name.clone(),
                                config: server.clone(),
                                source: label.clone(),
                            },
                        );
                        if server.enabled != Some(false) {
                            off.remove(name);
                        }
                    } else {
                        warnings.push(format!(
                            "{label}: MCP server {name} not started: the folder is not trusted \
                             (trust it with `pablo policy trust`)"
                        ));
                    }
                    continue;
                }
                let Some(entry) = defined.get_mut(name) else {
                    continue;
                };
                let c = &mut entry.config;
                c.disabled_tools
                    .extend(server.disabled_tools.iter().cloned());
                if let Some(only) = &server.enabled_tools {
                    c.enabled_tools = Some(match c.enabled_tools.take() {
                        Some(before) => before.into_iter().filter(|t| only.contains(t)).collect(),
                        None => only.clone(),
                    });
                }
                if trusted {
                    c.required = server.required.or(c.required);
                    c.startup_timeout_seconds =
                        server.startup_timeout_seconds.or(c.startup_timeout_seconds);
                    c.tool_timeout_seconds = server.tool_timeout_seconds.or(c.tool_timeout_seconds);
                }
            }
        }
        let servers = defined
            .into_values()
            .filter(|e| !off.contains_key(&e.name))
            .collect();
        (servers, warnings)
    }
}
