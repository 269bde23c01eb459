//! The MCP servers of a launch: the config layers' `[mcp_servers.NAME]` (the project layer's only
//! once the folder is trusted) and the ones an editor passes in `session/new`, turned into what
//! the hub starts — the program, its environment, its log file, or the URL and its headers.
//!
//! A stdio server gets the environment commands get (the person's `PATH` and toolchain, no
//! secret, no provider key; in a folder not trusted, nothing that points it at the workspace's
//! own configuration, see [`Launch::started_program_env`]) plus exactly what its table lists: `env` values and the `env_vars`
//! it names. Nothing else of pablo's environment reaches it. A variable that holds one of pablo's
//! provider keys cannot be named at all.

use std::path::Path;
use std::sync::Arc;

use super::{Launch, Warned};
use pablo_config::{McpServerConfig, McpServerEntry};
use pablo_policy::PolicyEngine;
use pablo_protocol::McpServerView;
use pablo_tools::mcp::client::Endpoint;
use pablo_tools::mcp::client::oauth::OAuthSpec;
use pablo_tools::mcp::{McpHub, ServerSpec};

/// Variables that hold provider keys whatever the config says.
const PROVIDER_KEYS: &[&str] = &["OPENAI_API_KEY", "ANTHROPIC_API_KEY"];

impl Launch {
    /// This launch with the servers a front-end names (an editor's `mcpServers`) on top of the
    /// config's; a name the config also uses is the front-end's.
    pub fn with_mcp_servers(mut self, servers: Vec<(String, McpServerConfig)>) -> Self {
        self.options.mcp_servers.extend(servers);
        self
    }

    /// The base environment of a program pablo starts for the person (an MCP server, a language
    /// server, a hook): the one commands get, and in a folder the person has not trusted, without
    /// what would make the program take its configuration or code from the workspace
    /// (`process::env::untrusted_program_env`; docs/policy.md, *A repository someone else
    /// wrote*).
    pub(crate) fn started_program_env(&self, policy: &PolicyEngine) -> Vec<(String, String)> {
        let base = policy.command_env().vars();
        if policy.trust().may_run_programs() {
            base.to_vec()
        } else {
            pablo_process::env::untrusted_program_env(base, &self.workspace)
        }
    }

    /// pablo's own directories (config, data, state), read-only to every program pablo starts
    /// outside the command sandbox (`process::sandbox::Sandbox::started_program`).
    pub(crate) fn own_dirs(&self) -> Vec<std::path::PathBuf> {
        vec![
            self.dirs.config.clone(),
            self.dirs.data.clone(),
            self.dirs.state.clone(),
        ]
    }

    /// The per-server stderr logs live here (`$XDG_STATE_HOME/pablo/mcp/NAME.log`).
    pub(crate) fn mcp_log_dir(&self) -> std::path::PathBuf {
        self.dirs.state.join("mcp")
    }

    /// The OAuth tokens of HTTP servers live here, one file per server
    /// (`$XDG_DATA_HOME/pablo/mcp-auth/NAME.json`, 0600).
    pub(crate) fn mcp_auth_dir(&self) -> std::path::PathBuf {
        self.dirs.data.join("mcp-auth")
    }

    /// The hub of one session: every server of the layers and the front-end
    /// ([`super::LaunchOptions::mcp_servers`]; a name the config also uses is the front-end's),
    /// not started. Settings that were ignored (an untrusted project layer's servers) come back
    /// as warnings.
    pub(crate) fn mcp_hub(&self, policy: &PolicyEngine) -> Warned<Arc<McpHub>> {
        let (mut entries, warnings) = self.layers.mcp_servers(policy.trust());
        for (name, config) in &self.options.mcp_servers {
            entries.retain(|e| &e.name != name);
            entries.push(McpServerEntry {
                name: name.clone(),
                config: config.clone(),
                source: "the editor".into(),
            });
        }
        let key_vars: Vec<String> = self
            .layers
            .iter()
            .filter_map(|l| l.api_key_env.clone())
            .chain(PROVIDER_KEYS.iter().map(|s| s.to_string()))
            .collect();
        let base_env = self.started_program_env(policy);
        let own = self.own_dirs();
        let auth_dir = self.mcp_auth_dir();
        // In a folder not trusted, npx looks for its packages in an empty directory of pablo's,
        // not the workspace's `node_modules` (`process::npm::npx_argv`).
        let neutral = (!policy.trust().may_run_programs()).then(|| {
            let dir = self.dirs.state.join("npx-prefix");
            let _ = std::fs::create_dir_all(&dir);
            dir
        });
        let specs = entries
            .iter()
            .map(|e| {
                spec_of(
                    e,
                    &self.workspace,
                    &self.mcp_log_dir(),
                    &auth_dir,
                    &base_env,
                    &key_vars,
                    &own,
                    neutral.as_deref(),
                )
            })
            .collect();
        let hub = McpHub::new(self.workspace.clone(), specs)
            .waiting_for_first_turn(self.options.wait_for_mcp)
            .asking_the_person(self.options.ask_mcp_questions);
        Warned::new(Arc::new(hub), warnings)
    }

    /// The language servers of one session (docs/lsp.md): the built-ins found on the command
    /// `PATH` and the layers' `[lsp.NAME]` (the project layer's only once the folder is trusted,
    /// except `enabled = false`), none started. What was ignored comes back as warnings.
    pub(crate) fn lsp_hub(&self, policy: &PolicyEngine) -> Warned<Arc<pablo_lsp::LspHub>> {
        let (entries, warnings) = self.layers.lsp_servers(policy.trust());
        let setup = pablo_lsp::LspSetup {
            entries,
            env: self.started_program_env(policy),
            sandbox: policy.sandbox_settings().clone(),
            log_dir: pablo_config::lsp::lsp_log_dir(&self.dirs.state),
            project_trusted: policy.trust().may_run_programs(),
        };
        let hub = pablo_lsp::LspHub::new(self.workspace_handle.root(), setup);
        let mut warnings = warnings;
        for name in hub.withheld() {
            warnings.push(format!(
                "language server {name} not started: it may run the project's own code and the \
                 folder is not trusted (trust it with `pablo policy trust`)"
            ));
        }
        Warned::new(Arc::new(hub), warnings)
    }

    /// `pablo mcp list`: starts every configured server, waits until each is ready or failed
    /// (its start-up timeout bounds that), and returns what they offer. The servers are stopped
    /// before this returns.
    pub async fn mcp_servers(&self) -> Result<Warned<Vec<McpServerView>>, super::LaunchError> {
        let mut warnings = self.config_warnings();
        let policy = self.policy()?.into_value(&mut warnings);
        let hub = self.mcp_hub(&policy).into_value(&mut warnings);
        hub.start(None);
        hub.settled().await;
        let views = hub.views();
        hub.shutdown().await;
        Ok(Warned::new(views, warnings))
    }
}

/// A refusal of `pablo mcp login` or `logout`, with its code.
fn refused(code: pablo_core::ErrorCode, message: impl Into<String>) -> super::LaunchError {
    super::LaunchError::McpSignIn {
        code,
        message: message.into(),
    }
}

impl Launch {
    /// The server `name` of the config layers (the project's only in a trusted folder) as
    /// `pablo mcp login` signs in to it: its URL and how it signs in. Refused for a name no layer
    /// defines, a stdio server, and a server given its credentials (`bearer_token_env`, an
    /// `Authorization` header).
    fn mcp_sign_in_target(&self, name: &str) -> Result<(String, OAuthSpec), super::LaunchError> {
        use pablo_core::ErrorCode;
        let (entries, _) = self.layers.mcp_servers(self.trust);
        let Some(entry) = entries.iter().find(|e| e.name == name) else {
            let known: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
            return Err(refused(
                ErrorCode::McpUnknownServer,
                format!(
                    "no MCP server named {name:?} (configured: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        };
        let c = &entry.config;
        let Some(url) = &c.url else {
            return Err(refused(
                ErrorCode::McpLoginUnsupported,
                format!(
                    "{name} is a stdio server (a program pablo starts): sign-in is for servers \
                     reached at a url"
                ),
            ));
        };
        let given = c.bearer_token_env.is_some()
            || c.headers
                .keys()
                .any(|h| h.eq_ignore_ascii_case("authorization"));
        if given {
            return Err(refused(
                ErrorCode::McpLoginUnsupported,
                format!(
                    "{name} is given its token by its table (bearer_token_env or an Authorization \
                     header); take that out to sign in with OAuth instead"
                ),
            ));
        }
        let o = c.oauth.clone().unwrap_or_default();
        let spec = OAuthSpec {
            store: self.mcp_auth_dir().join(format!("{name}.json")),
            client_id: o.client_id,
            scopes: o.scopes,
        };
        Ok((url.clone(), spec))
    }

    /// `pablo mcp login NAME` (docs/mcp.md, *Signing in*): `show` gets the address to open in a
    /// browser and the local address the browser comes back to; once it has come back the tokens
    /// are kept, in the file returned.
    pub async fn mcp_login(
        &self,
        name: &str,
        show: impl FnOnce(&str, &str),
    ) -> Result<std::path::PathBuf, super::LaunchError> {
        use pablo_tools::mcp::client::oauth;
        let (url, spec) = self.mcp_sign_in_target(name)?;
        oauth::login(&url, &spec, oauth::LOGIN_WAIT, show)
            .await
            .map_err(|e| {
                refused(
                    pablo_core::ErrorCode::McpLoginFailed,
                    format!("signing in to the MCP server {name} failed: {e}"),
                )
            })?;
        Ok(spec.store)
    }

    /// `pablo mcp logout NAME`: forgets the tokens kept for the server `name` (configured or not
    /// any more); `Ok(None)` when there were none, else the file removed.
    pub fn mcp_logout(&self, name: &str) -> Result<Option<std::path::PathBuf>, super::LaunchError> {
        use pablo_core::ErrorCode;
        if !pablo_config::is_mcp_server_name(name) {
            return Err(refused(
                ErrorCode::McpUnknownServer,
                format!("{name:?} is not an MCP server name"),
            ));
        }
        let path = self.mcp_auth_dir().join(format!("{name}.json"));
        pablo_tools::mcp::client::oauth::TokenStore::forget(&path)
            .map(|removed| removed.then_some(path))
            .map_err(|e| refused(ErrorCode::IoError, e))
    }
}

/// A server as `pablo mcp list` prints it: a line of state, then what it offers.
pub fn describe_server(s: &McpServerView) -> String {
    use pablo_protocol::McpState;
    let mut out = match s.state {
        McpState::Ready => format!(
            "{}  ready  {}  {} tools, {} prompts, {} resources\n",
            s.name,
            s.transport,
            s.tools.len(),
            s.prompts.len(),
            s.resources.len()
        ),
        McpState::Failed
            if s.code.as_deref() == Some(pablo_core::ErrorCode::McpNeedsLogin.as_str()) =>
        {
            format!(
                "{}  needs sign-in  {}  run `pablo mcp login {}`\n",
                s.name, s.transport, s.name
            )
        }
        McpState::Failed => format!(
            "{}  failed  {}  {}\n",
            s.name,
            s.transport,
            s.reason.as_deref().unwrap_or("no reason given")
        ),
        McpState::Starting => format!("{}  starting  {}\n", s.name, s.transport),
        McpState::Stopped => format!("{}  stopped  {}\n", s.name, s.transport),
    };
    for t in &s.tools {
        out.push_str(&format!("  tool    {}  ({})\n", t.name, t.real_name));
    }
    for p in &s.prompts {
        let args: Vec<&str> = p.arguments.iter().map(|a| a.name.as_str()).collect();
        out.push_str(&format!(
            "  prompt  /{}:{} {}\n",
            s.name,
            p.name,
            args.join(" ")
        ));
    }
    for r in &s.resources {
        out.push_str(&format!("  resource  @{}:{}\n", s.name, r.uri));
    }
    if let Some(log) = &s.log {
        out.push_str(&format!("  log     {log}\n"));
    }
    out
}

/// An editor's name for a server as a config name: the characters a config name may have (the
/// name becomes part of tool names and slash commands), `_` for the others.
pub fn editor_server_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(32)
        .collect();
    while out.contains("__") {
        out = out.replace("__", "_");
    }
    if out.is_empty() {
        out.push_str("editor");
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn spec_of(
    entry: &McpServerEntry,
    workspace: &Path,
    log_dir: &Path,
    auth_dir: &Path,
    base_env: &[(String, String)],
    key_vars: &[String],
    own: &[std::path::PathBuf],
    npx_prefix: Option<&Path>,
) -> ServerSpec {
    let c = &entry.config;
    let mut refused = None;
    let endpoint = match (&c.command, &c.url) {
        (_, Some(url)) => {
            let bearer_token = match &c.bearer_token_env {
                Some(var) => match pablo_core::secrets::var(var) {
                    Some(v) => Some(v),
                    None => {
                        refused = Some(format!(
                            "bearer_token_env names {var}, which is not set in pablo's environment"
                        ));
                        None
                    }
                },
                None => None,
            };
            // A server given its credentials (a bearer token, an Authorization header) signs in
            // no other way; the others may ask for OAuth.
            let given = c.bearer_token_env.is_some()
                || c.headers
                    .keys()
                    .any(|h| h.eq_ignore_ascii_case("authorization"));
            let oauth = (!given).then(|| {
                let o = c.oauth.clone().unwrap_or_default();
                OAuthSpec {
                    store: auth_dir.join(format!("{}.json", entry.name)),
                    client_id: o.client_id,
                    scopes: o.scopes,
                }
            });
            Endpoint::Http {
                url: url.clone(),
                bearer_token,
                headers: c.headers.clone(),
                oauth,
            }
        }
        (command, None) => {
            let mut env: Vec<(String, String)> = base_env.to_vec();
            for var in &c.env_vars {
                if key_vars.iter().any(|k| k == var) {
                    refused = Some(format!(
                        "env_vars names {var}, which holds a provider key; pablo never passes \
                         its keys to a server"
                    ));
                    continue;
                }
                // A secret-looking variable (`NOTES_TOKEN`) was moved out of pablo's environment
                // block at start (`process::protect`); its value is kept in `core::secrets`.
                if let Some(v) = pablo_core::secrets::var(var) {
                    env.retain(|(k, _)| k != var);
                    env.push((var.clone(), v));
                }
            }
            for (k, v) in &c.env {
                env.retain(|(name, _)| name != k);
                env.push((k.clone(), v.clone()));
            }
            let cwd = match &c.cwd {
                Some(d) if d.is_absolute() => d.clone(),
                Some(d) => workspace.join(d),
                None => workspace.to_path_buf(),
            };
            let program = command.clone().unwrap_or_default();
            let args = match npx_prefix {
                Some(neutral) => {
                    pablo_process::npm::npx_argv(&program, &c.args, neutral).split_off(1)
                }
                None => c.args.clone(),
            };
            Endpoint::Stdio {
                program,
                args,
                env,
                cwd,
                log: log_dir.join(format!("{}.log", entry.name)),
                protected: own.to_vec(),
            }
        }
    };
    ServerSpec {
        name: entry.name.clone(),
        endpoint,
        required: c.required.unwrap_or(false),
        startup_timeout: c.startup_timeout(),
        tool_timeout: c.tool_timeout(),
        enabled_tools: c.enabled_tools.clone(),
        disabled_tools: c.disabled_tools.clone(),
        refused,
    }
}
