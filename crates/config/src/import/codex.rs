//! Codex's `config.toml` (model and provider, approval policy, sandbox, MCP servers, the
//! commands' environment), read as a typed document and written into a pablo config. Keys pablo
//! has no counterpart for are reported by name.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::Draft;
use crate::mcp::is_env_name;
use crate::{ConfigError, McpServerConfig, ReasoningLevel, WireApi, is_mcp_server_name};
use pablo_core::secrets::looks_secret;
use pablo_protocol::SandboxProfile;

/// `~/.codex/config.toml`. Keys pablo has no use for are kept by name only, to be reported.
#[derive(Debug, Default, Deserialize)]
pub(super) struct CodexConfig {
    model: Option<String>,
    model_provider: Option<String>,
    #[serde(default)]
    model_providers: BTreeMap<String, Provider>,
    model_reasoning_effort: Option<String>,
    model_context_window: Option<u64>,
    model_max_output_tokens: Option<u32>,
    approval_policy: Option<String>,
    sandbox_mode: Option<String>,
    sandbox_workspace_write: Option<SandboxWrite>,
    #[serde(default)]
    mcp_servers: BTreeMap<String, McpServer>,
    shell_environment_policy: Option<ShellEnvironment>,
    #[serde(flatten)]
    other: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Deserialize)]
struct Provider {
    base_url: Option<String>,
    env_key: Option<String>,
    /// `chat` or `responses`.
    wire_api: Option<String>,
    #[serde(flatten)]
    other: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Deserialize)]
struct SandboxWrite {
    #[serde(default)]
    writable_roots: Vec<String>,
    network_access: Option<bool>,
    #[serde(flatten)]
    other: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Deserialize)]
struct McpServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    env_vars: Vec<String>,
    cwd: Option<std::path::PathBuf>,
    url: Option<String>,
    bearer_token_env_var: Option<String>,
    #[serde(default)]
    http_headers: BTreeMap<String, String>,
    startup_timeout_sec: Option<f64>,
    startup_timeout_ms: Option<u64>,
    tool_timeout_sec: Option<f64>,
    enabled: Option<bool>,
    enabled_tools: Option<Vec<String>>,
    #[serde(default)]
    disabled_tools: Vec<String>,
    #[serde(flatten)]
    other: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Deserialize)]
struct ShellEnvironment {
    /// `all`, `core` or `none`.
    inherit: Option<String>,
    #[serde(default)]
    exclude: Vec<String>,
    #[serde(default)]
    set: BTreeMap<String, String>,
    #[serde(default)]
    include_only: Vec<String>,
    #[serde(flatten)]
    other: BTreeMap<String, toml::Value>,
}

pub(super) fn read_config(path: &Path) -> Result<Option<CodexConfig>, ConfigError> {
    let Some(text) = super::read_text(path)? else {
        return Ok(None);
    };
    toml::from_str(&text)
        .map(Some)
        .map_err(|e| ConfigError::ImportSource {
            path: path.to_path_buf(),
            message: e.message().trim().to_string(),
        })
}

pub(super) fn apply(draft: &mut Draft, c: CodexConfig, label: &str) {
    provider(draft, &c, label);
    if let Some(model) = &c.model {
        draft.mapped(&format!("{label}: model {model:?} → model"));
        draft.set_model_name(model);
    }
    if let Some(effort) = &c.model_reasoning_effort {
        let what = format!("{label}: model_reasoning_effort {effort:?}");
        let level = if effort == "minimal" {
            Ok(ReasoningLevel::Low)
        } else {
            ReasoningLevel::parse(effort)
        };
        match level {
            Ok(level) => {
                draft.mapped(&format!(
                    "{what} → [model] reasoning = \"{}\"",
                    level.name()
                ));
                draft.model().reasoning = Some(level);
            }
            Err(why) => draft.unmapped(&what, &why),
        }
    }
    if let Some(window) = c.model_context_window {
        draft.mapped(&format!(
            "{label}: model_context_window → [model] context_window"
        ));
        draft.model().context_window = Some(window);
    }
    if let Some(max) = c.model_max_output_tokens {
        draft.mapped(&format!(
            "{label}: model_max_output_tokens → [model] max_output_tokens"
        ));
        draft.model().max_output_tokens = Some(max);
    }
    if let Some(policy) = &c.approval_policy {
        approval(draft, label, policy);
    }
    if let Some(mode) = &c.sandbox_mode {
        sandbox(draft, label, mode, c.sandbox_workspace_write);
    }
    for (name, server) in c.mcp_servers {
        mcp_server(draft, label, &name, server);
    }
    if let Some(env) = c.shell_environment_policy {
        shell_environment(draft, label, env);
    }
    for (key, _) in c.other {
        let why = match key.as_str() {
            "profile" | "profiles" => "pablo has no profiles (`--config FILE` per setup)",
            "projects" => "pablo records trust itself: `pablo policy trust` in the folder",
            "project_doc_max_bytes" | "project_doc_fallback_filenames" => {
                "pablo reads AGENTS.md, up to 32 KiB"
            }
            "notify" => "pablo notifies by itself ([tui] notifications)",
            _ => "no pablo setting",
        };
        draft.unmapped(&format!("{label}: {key}"), why);
    }
}

/// `model_provider` and its `[model_providers.ID]` table.
fn provider(draft: &mut Draft, c: &CodexConfig, label: &str) {
    let id = c.model_provider.as_deref().unwrap_or("openai");
    let what = format!("{label}: model_provider {id:?}");
    if let Some(p) = c.model_providers.get(id) {
        draft.file.provider = Some("openai".into());
        draft.file.base_url = p.base_url.clone();
        draft.file.api_key_env = p.env_key.clone().filter(|k| is_env_name(k));
        let wire = match p.wire_api.as_deref() {
            Some("chat") => Some(WireApi::Chat),
            Some("responses") => Some(WireApi::Responses),
            _ => None,
        };
        draft.model().wire_api = wire;
        draft.mapped(&format!(
            "{what} → provider = \"openai\" (an OpenAI-compatible server){}{}{}",
            p.base_url
                .as_ref()
                .map(|u| format!(", base_url = \"{u}\""))
                .unwrap_or_default(),
            p.env_key
                .as_ref()
                .map(|k| format!(", api_key_env = \"{k}\""))
                .unwrap_or_default(),
            wire.map(|w| format!(", [model] wire_api = \"{}\"", wire_name(w)))
                .unwrap_or_default(),
        ));
        // `name` is only what Codex shows.
        for key in p.other.keys().filter(|k| *k != "name") {
            draft.unmapped(
                &format!("{label}: model_providers.{id}.{key}"),
                "no pablo setting",
            );
        }
        return;
    }
    match id {
        "openai" if c.model_provider.is_some() || c.model.is_some() => {
            draft.mapped(&format!("{what} → provider = \"openai\""));
            draft.file.provider = Some("openai".into());
        }
        "openai" => {}
        "oss" | "ollama" => {
            draft.mapped(&format!("{what} → provider = \"ollama\""));
            draft.file.provider = Some("ollama".into());
        }
        _ => draft.unmapped(
            &what,
            "a provider pablo does not know, with no [model_providers] table",
        ),
    }
}

fn wire_name(w: WireApi) -> &'static str {
    match w {
        WireApi::Chat => "chat",
        WireApi::Responses => "responses",
    }
}

fn approval(draft: &mut Draft, label: &str, policy: &str) {
    let what = format!("{label}: approval_policy {policy:?}");
    match policy {
        "untrusted" | "on-request" | "on-failure" => draft.mapped(&format!(
            "{what}: pablo's default is the nearest (commands no rule allows ask; known-safe \
             reads run in the read-only sandbox; a command the sandbox stopped can be run again \
             outside it when you say so)"
        )),
        "never" => draft.unmapped(
            &what,
            "pablo never skips its questions from a config file: `pablo run --auto-approve` \
             answers them for one run, and `[options.shell.commands] default = \"allow\"` lets \
             every command no rule denies run in the sandbox",
        ),
        _ => draft.unmapped(&what, "not a Codex approval policy"),
    }
}

fn sandbox(draft: &mut Draft, label: &str, mode: &str, write: Option<SandboxWrite>) {
    let what = format!("{label}: sandbox_mode {mode:?}");
    let profile = match mode {
        "read-only" => SandboxProfile::ReadOnly,
        "workspace-write" => SandboxProfile::WorkspaceWrite,
        "danger-full-access" => SandboxProfile::Off,
        _ => return draft.unmapped(&what, "not a Codex sandbox mode"),
    };
    let name = match profile {
        SandboxProfile::ReadOnly => "read-only",
        SandboxProfile::WorkspaceWrite => "workspace-write",
        SandboxProfile::Off => "off",
    };
    draft.mapped(&format!(
        "{what} → [options.shell] sandbox = \"{name}\" (pablo's sandbox bounds commands; file \
         changes are asked either way)"
    ));
    let shell = &mut draft.file.options.shell;
    shell.sandbox = Some(profile);
    let Some(w) = write else { return };
    let mut roots = Vec::new();
    for root in w.writable_roots {
        if root.starts_with('/') || root.starts_with("~/") {
            roots.push(root);
        } else {
            draft.unmapped(
                &format!("{label}: sandbox_workspace_write.writable_roots {root:?}"),
                "pablo takes absolute roots (or ~/…)",
            );
        }
    }
    if !roots.is_empty() {
        draft.mapped(&format!(
            "{label}: sandbox_workspace_write.writable_roots → [options.shell] writable_roots"
        ));
        draft.file.options.shell.writable_roots = roots;
    }
    if let Some(network) = w.network_access {
        draft.mapped(&format!(
            "{label}: sandbox_workspace_write.network_access → [options.shell] network"
        ));
        draft.file.options.shell.network = Some(network);
    }
    for key in w.other.keys() {
        draft.unmapped(
            &format!("{label}: sandbox_workspace_write.{key}"),
            "no pablo setting",
        );
    }
}

fn seconds(s: Option<f64>) -> Option<u64> {
    s.filter(|s| s.is_finite() && *s > 0.0)
        .map(|s| s.ceil() as u64)
}

fn mcp_server(draft: &mut Draft, label: &str, name: &str, s: McpServer) {
    let what = format!("{label}: mcp_servers.{name}");
    if !is_mcp_server_name(name) {
        return draft.unmapped(
            &what,
            "a pablo server name is 1 to 32 letters, digits, '-' or '_' (no \"__\")",
        );
    }
    let config = McpServerConfig {
        command: s.command,
        args: s.args,
        env: s.env,
        env_vars: s.env_vars,
        cwd: s.cwd,
        url: s.url,
        bearer_token_env: s.bearer_token_env_var,
        headers: s.http_headers,
        oauth: None,
        enabled: s.enabled,
        required: None,
        startup_timeout_seconds: seconds(s.startup_timeout_sec)
            .or(s.startup_timeout_ms.map(|ms| ms.div_ceil(1000))),
        tool_timeout_seconds: seconds(s.tool_timeout_sec),
        enabled_tools: s.enabled_tools,
        disabled_tools: s.disabled_tools,
        tools: BTreeMap::new(),
    };
    if let Err(why) = config.check() {
        return draft.unmapped(&what, &why);
    }
    draft.mapped(&format!("{what} → [mcp_servers.{name}]"));
    for key in s.other.keys() {
        draft.unmapped(&format!("{what}.{key}"), "no pablo setting");
    }
    draft.file.mcp_servers.insert(name.to_string(), config);
}

fn shell_environment(draft: &mut Draft, label: &str, env: ShellEnvironment) {
    let what = |key: &str| format!("{label}: shell_environment_policy.{key}");
    match env.inherit.as_deref() {
        Some("all") => draft.unmapped(
            &what("inherit \"all\""),
            "pablo passes PATH and the toolchains' variables; name more in [options.shell.env] \
             inherit",
        ),
        Some(i) => draft.mapped(&format!(
            "{}: pablo's default is as narrow (PATH and the toolchains' variables, no secret)",
            what(&format!("inherit {i:?}"))
        )),
        None => {}
    }
    for name in env.exclude {
        let star = name.find('*');
        let plain = star.is_none_or(|i| i == name.len() - 1) && !name.contains(['?', '[']);
        if plain {
            draft.mapped(&format!(
                "{} → [options.shell.env] exclude",
                what(&format!("exclude {name:?}"))
            ));
            draft.file.options.shell.env.exclude.push(name);
        } else {
            draft.unmapped(
                &what(&format!("exclude {name:?}")),
                "pablo takes a name or a PREFIX* only",
            );
        }
    }
    for (name, value) in env.set {
        if looks_secret(name.as_str()) {
            draft.unmapped(
                &what(&format!("set.{name}")),
                "a secret never goes in a config file, and commands never get one",
            );
        } else {
            draft.mapped(&format!(
                "{} → [options.shell.env] set",
                what(&format!("set.{name}"))
            ));
            draft.file.options.shell.env.set.insert(name, value);
        }
    }
    if !env.include_only.is_empty() {
        draft.unmapped(
            &what("include_only"),
            "no pablo setting (pablo's list is already short)",
        );
    }
    for key in env.other.keys() {
        draft.unmapped(&what(key), "no pablo setting");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft_of(text: &str) -> Draft {
        let mut draft = Draft::default();
        apply(&mut draft, toml::from_str(text).unwrap(), "c");
        draft
    }

    #[test]
    fn codex_providers_become_pablos_where_pablo_has_them() {
        let d = draft_of("model = \"qwen3\"\nmodel_provider = \"oss\"\n");
        assert_eq!(d.file.provider.as_deref(), Some("ollama"));
        let d = draft_of("model_provider = \"azure\"\n");
        assert_eq!(d.file.provider, None);
        assert!(d.unmapped[0].contains("azure"), "{:?}", d.unmapped);
        // No provider named and no model: nothing to say about the provider.
        let d = draft_of("sandbox_mode = \"read-only\"\n");
        assert_eq!(d.file.provider, None);
        assert_eq!(d.file.options.shell.sandbox, Some(SandboxProfile::ReadOnly));
    }

    #[test]
    fn reasoning_effort_maps_to_pablos_levels_and_never_approving_is_not_mapped() {
        let d = draft_of("model_reasoning_effort = \"minimal\"\napproval_policy = \"never\"\n");
        assert_eq!(d.model.reasoning, Some(ReasoningLevel::Low));
        assert!(
            d.unmapped
                .iter()
                .any(|u| u.contains("approval_policy \"never\""))
        );
        assert_eq!(d.file.options.shell.commands.default, None);
    }

    #[test]
    fn a_server_pablo_would_refuse_is_reported_not_written() {
        let d = draft_of("[mcp_servers.both]\ncommand = \"a\"\nurl = \"https://x.dev/mcp\"\n");
        assert!(d.file.mcp_servers.is_empty());
        assert!(
            d.unmapped[0].contains("both command and url"),
            "{:?}",
            d.unmapped
        );
    }
}
