//! Claude Code's settings (`settings.json`: permissions, hooks, model, env, status line) and MCP
//! servers (`.mcp.json`, the `mcpServers` of `~/.claude.json`), read as typed documents and
//! written into a pablo config. What has no pablo counterpart is reported, never guessed.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::rules::{self, Effect, Kind};
use super::{Draft, env_var_reference, read_json};
use crate::hooks::MAX_HOOK_TIMEOUT_MS;
use crate::mcp::is_env_name;
use crate::{ConfigError, HookEntry, McpServerConfig, RuleDecision, is_mcp_server_name};
use pablo_core::secrets::looks_secret;
use pablo_protocol::WorkMode;

/// `settings.json`. Keys pablo has no use for are kept by name only, to be reported.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Settings {
    #[serde(default)]
    permissions: Permissions,
    /// By Claude Code's event name (`PreToolUse`).
    #[serde(default)]
    hooks: BTreeMap<String, Vec<MatcherGroup>>,
    model: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    status_line: Option<StatusLine>,
    #[serde(default)]
    disabled_mcpjson_servers: Vec<String>,
    #[serde(flatten)]
    other: BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Permissions {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    ask: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
    #[serde(default)]
    additional_directories: Vec<String>,
    default_mode: Option<String>,
    #[serde(flatten)]
    other: BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct MatcherGroup {
    #[serde(default)]
    matcher: Option<String>,
    #[serde(default)]
    hooks: Vec<HookCommand>,
}

#[derive(Debug, Deserialize)]
struct HookCommand {
    #[serde(rename = "type")]
    kind: String,
    command: Option<String>,
    /// Seconds.
    timeout: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct StatusLine {
    #[serde(rename = "type")]
    kind: String,
    command: Option<String>,
}

/// `.mcp.json`, and the part of `~/.claude.json` that holds the person's own servers.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct McpFile {
    #[serde(default)]
    mcp_servers: BTreeMap<String, ClaudeMcpServer>,
}

#[derive(Debug, Deserialize)]
struct ClaudeMcpServer {
    /// `stdio` (also when absent), `http` or `sse`.
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

pub(super) fn read_settings(path: &Path) -> Result<Option<Settings>, ConfigError> {
    read_json(path)
}

pub(super) fn read_mcp(path: &Path) -> Result<Option<McpFile>, ConfigError> {
    read_json(path)
}

/// Writes `settings` (from `label`) into the draft.
pub(super) fn apply_settings(draft: &mut Draft, settings: Settings, label: &str, project: bool) {
    let p = settings.permissions;
    for (kind, list) in [
        (Kind::Allow, p.allow),
        (Kind::Ask, p.ask),
        (Kind::Deny, p.deny),
    ] {
        for entry in list {
            let what = format!("{label}: permissions.{} {entry:?}", kind.name());
            match rules::permission(kind, &entry, project) {
                Ok(effect) => draft.effect(&what, effect),
                Err(why) => draft.unmapped(&what, &why),
            }
        }
    }
    if !p.additional_directories.is_empty() {
        draft.unmapped(
            &format!("{label}: permissions.additionalDirectories"),
            "pablo's file tools stay inside the workspace (run pablo in the folder that holds \
             them, or use --workspace)",
        );
    }
    if let Some(mode) = p.default_mode {
        default_mode(draft, label, &mode);
    }
    for key in p.other.keys() {
        draft.unmapped(&format!("{label}: permissions.{key}"), "no pablo setting");
    }
    for (event, groups) in settings.hooks {
        for (g, group) in groups.into_iter().enumerate() {
            hooks(
                draft,
                &format!("{label}: hooks.{event}[{g}]"),
                &event,
                group,
            );
        }
    }
    if let Some(model) = settings.model {
        self::model(draft, label, &model);
    }
    for (name, value) in settings.env {
        env(draft, label, &name, value);
    }
    if let Some(line) = settings.status_line {
        match (line.kind.as_str(), line.command) {
            ("command", Some(command)) => {
                draft.mapped(&format!(
                    "{label}: statusLine → [tui] statusline_command (it reads the same JSON)"
                ));
                draft.file.tui.statusline_command = Some(command);
            }
            _ => draft.unmapped(
                &format!("{label}: statusLine"),
                "only a command status line maps",
            ),
        }
    }
    draft
        .skipped_servers
        .extend(settings.disabled_mcpjson_servers);
    for key in settings.other.keys().filter(|k| *k != "$schema") {
        let why = match key.as_str() {
            "apiKeyHelper" => "pablo reads keys from the environment only",
            "enableAllProjectMcpServers" | "enabledMcpjsonServers" => {
                "a project's servers start once you trust the folder (`pablo policy trust`)"
            }
            _ => "no pablo setting",
        };
        draft.unmapped(&format!("{label}: {key}"), why);
    }
}

fn default_mode(draft: &mut Draft, label: &str, mode: &str) {
    let what = format!("{label}: permissions.defaultMode {mode:?}");
    let work = match mode {
        "default" => {
            draft.mapped(&format!("{what}: pablo's default (ask)"));
            return;
        }
        "acceptEdits" => WorkMode::AutoEdit,
        "plan" => WorkMode::Plan,
        _ => {
            draft.unmapped(
                &what,
                "pablo never skips its questions from a config file (`pablo run --auto-approve` \
                 answers them for one run)",
            );
            return;
        }
    };
    if draft.project {
        draft.unmapped(
            &what,
            "the starting mode is read from your own config only ([tui] mode)",
        );
        return;
    }
    draft.mapped(&format!("{what} → [tui] mode = \"{}\"", work.name()));
    draft.file.tui.mode = Some(work);
}

/// One matcher group of one event (`at` names it): an entry per command.
fn hooks(draft: &mut Draft, at: &str, event: &str, group: MatcherGroup) {
    let what = |i: usize| format!("{at}.hooks[{i}]");
    let Some(pablo_event) = hook_event(event) else {
        draft.unmapped(at, "pablo has no such event (its events: docs/hooks.md)");
        return;
    };
    let is_tool_event = matches!(event, "PreToolUse" | "PostToolUse");
    let matcher = match group.matcher.as_deref().map(str::trim) {
        None | Some("") | Some("*") => None,
        Some(m) if is_tool_event => match rules::tool_matcher(m) {
            Ok(t) => {
                if !t.dropped.is_empty() {
                    draft.note(&format!(
                        "{at} matcher {m:?}: pablo has no {}; left out",
                        t.dropped.join(", ")
                    ));
                }
                t.matcher
            }
            Err(why) => {
                draft.unmapped(&format!("{at} matcher {m:?}"), &why);
                return;
            }
        },
        // Claude Code's notification kinds are not pablo's (`approval`, `turn_ended`).
        Some(m) if event == "Notification" => {
            draft.note(&format!(
                "{at} matcher {m:?} dropped: pablo's notifications are `approval` and \
                 `turn_ended`"
            ));
            None
        }
        // SessionStart's sources and PreCompact's triggers are spelt alike, but pablo starts a
        // session only as `startup` or `resume` (no `clear`, no `compact`).
        Some(m) => {
            let takes = |source: &str| {
                regex::Regex::new(&format!("^(?:{m})$")).is_ok_and(|r| r.is_match(source))
            };
            let sources: &[&str] = if event == "SessionStart" {
                &["startup", "resume"]
            } else {
                &["auto", "manual"]
            };
            if !sources.iter().any(|s| takes(s)) {
                draft.unmapped(
                    &format!("{at} matcher {m:?}"),
                    &format!("pablo's {event} is only {}", sources.join(" or ")),
                );
                return;
            }
            Some(m.to_string())
        }
    };
    for (i, hook) in group.hooks.into_iter().enumerate() {
        let command = match (hook.kind.as_str(), hook.command) {
            ("command", Some(c)) if !c.trim().is_empty() => c,
            (kind, _) => {
                draft.unmapped(
                    &what(i),
                    &format!("a {kind:?} hook: pablo runs commands only"),
                );
                continue;
            }
        };
        let timeout_ms = hook.timeout.filter(|t| t.is_finite() && *t > 0.0).map(|s| {
            let ms = (s * 1000.0).ceil();
            if ms >= MAX_HOOK_TIMEOUT_MS as f64 {
                MAX_HOOK_TIMEOUT_MS
            } else {
                ms as u64
            }
        });
        if is_tool_event && command.contains("tool_input.file_path") {
            draft.note(&format!(
                "{}: the script reads tool_input.file_path; pablo's is tool_input.path, \
                 relative to cwd (docs/hooks.md, Coming from Claude Code)",
                what(i)
            ));
        }
        draft.mapped(&format!(
            "{} → [[hooks.{pablo_event}]]{}",
            what(i),
            matcher
                .as_deref()
                .map(|m| format!(" matcher = '{m}'"))
                .unwrap_or_default()
        ));
        let entry = HookEntry {
            name: None,
            matcher: matcher.clone(),
            command_matcher: None,
            command,
            timeout_ms,
            on_failure: None,
        };
        if let Some(list) = draft.hook_list(pablo_event) {
            list.push(entry);
        }
    }
}

/// Claude Code's event name as pablo's.
fn hook_event(claude: &str) -> Option<&'static str> {
    Some(match claude {
        "PreToolUse" => "pre_tool_use",
        "PostToolUse" => "post_tool_use",
        "UserPromptSubmit" => "user_prompt_submit",
        "SessionStart" => "session_start",
        "Stop" => "stop",
        "PreCompact" => "pre_compact",
        "Notification" => "notification",
        _ => return None,
    })
}

/// Claude Code's model setting: an alias or an Anthropic model id.
fn model(draft: &mut Draft, label: &str, model: &str) {
    let what = format!("{label}: model {model:?}");
    let name = match model {
        "sonnet" => "claude-sonnet-4-5",
        "opus" => "claude-opus-4-5",
        "haiku" => "claude-haiku-4-5",
        m if m.starts_with("claude-") => m,
        _ => {
            draft.unmapped(&what, "not an Anthropic model id pablo can name");
            return;
        }
    };
    draft.mapped(&format!(
        "{what} → provider = \"anthropic\", model = \"{name}\""
    ));
    draft.file.provider = Some("anthropic".into());
    draft.set_model_name(name);
}

/// One variable of `env`: a few are settings of pablo's own, the rest go to commands.
fn env(draft: &mut Draft, label: &str, name: &str, value: String) {
    let what = format!("{label}: env.{name}");
    match name {
        "ANTHROPIC_MODEL" => return self::model(draft, label, &value),
        "ANTHROPIC_BASE_URL" => {
            draft.mapped(&format!("{what} → base_url"));
            draft.file.provider = Some("anthropic".into());
            draft.file.base_url = Some(value);
            return;
        }
        "BASH_DEFAULT_TIMEOUT_MS" => {
            if let Ok(ms) = value.trim().parse::<u64>() {
                draft.mapped(&format!("{what} → [options.shell] timeout_seconds"));
                draft.file.options.shell.timeout_seconds = Some(ms.div_ceil(1000).max(1));
                return;
            }
        }
        _ => {}
    }
    if looks_secret(name) {
        draft.unmapped(
            &what,
            "a secret never goes in a config file (keys come from the environment; an MCP \
             server names its own with env_vars)",
        );
    } else if [
        "CLAUDE_",
        "ANTHROPIC_",
        "DISABLE_",
        "BASH_",
        "MCP_",
        "MAX_",
        "OTEL_",
    ]
    .iter()
    .any(|p| name.starts_with(p))
        || !is_env_name(name)
    {
        draft.unmapped(&what, "a setting of Claude Code's own");
    } else {
        draft.mapped(&format!(
            "{what} → [options.shell.env] set (commands get it)"
        ));
        draft
            .file
            .options
            .shell
            .env
            .set
            .insert(name.to_string(), value);
    }
}

/// The servers of an `.mcp.json` (or `~/.claude.json`) from `label`.
pub(super) fn apply_mcp(draft: &mut Draft, file: McpFile, label: &str) {
    for (name, server) in file.mcp_servers {
        let what = format!("{label}: mcpServers.{name}");
        if draft.skipped_servers.contains(&name) {
            draft.unmapped(&what, "disabledMcpjsonServers switches it off");
            continue;
        }
        if !is_mcp_server_name(&name) {
            draft.unmapped(
                &what,
                "a pablo server name is 1 to 32 letters, digits, '-' or '_' (no \"__\")",
            );
            continue;
        }
        match mcp_server(draft, &what, server) {
            Ok(config) => match config.check() {
                Ok(()) => {
                    draft.mapped(&format!("{what} → [mcp_servers.{name}]"));
                    draft.file.mcp_servers.insert(name, config);
                }
                Err(why) => draft.unmapped(&what, &why),
            },
            Err(why) => draft.unmapped(&what, &why),
        }
    }
}

fn mcp_server(
    draft: &mut Draft,
    what: &str,
    server: ClaudeMcpServer,
) -> Result<McpServerConfig, String> {
    let mut config = McpServerConfig::default();
    match server.kind.as_deref() {
        None | Some("stdio") => {
            config.command = server.command;
            config.args = server.args;
            for (key, value) in server.env {
                match env_var_reference(&value) {
                    Some(var) if var == key => config.env_vars.push(key),
                    Some(_) => draft.note(&format!(
                        "{what}: env {key} names another variable ({value}); pablo passes \
                         variables under their own name (env_vars): left out"
                    )),
                    None if value.contains("${") => draft.note(&format!(
                        "{what}: env {key} holds {value}, which pablo would not expand: left out"
                    )),
                    None => {
                        config.env.insert(key, value);
                    }
                }
            }
            if config
                .args
                .iter()
                .chain(config.command.iter())
                .any(|a| a.contains("${"))
            {
                draft.note(&format!(
                    "{what}: its command or args hold ${{…}}, which pablo passes as written"
                ));
            }
        }
        Some("http") => {
            config.url = server.url;
            for (key, value) in server.headers {
                let bearer = value
                    .strip_prefix("Bearer ")
                    .and_then(env_var_reference)
                    .filter(|_| key.eq_ignore_ascii_case("authorization"));
                match bearer {
                    Some(var) => config.bearer_token_env = Some(var.to_string()),
                    None if value.contains("${") => draft.note(&format!(
                        "{what}: header {key} holds a variable; pablo sends headers as \
                         written: left out"
                    )),
                    None => {
                        config.headers.insert(key, value);
                    }
                }
            }
        }
        Some("sse") => {
            return Err(
                "pablo speaks streamable HTTP, not the older SSE transport (the server may \
                 offer streamable HTTP at another path)"
                    .into(),
            );
        }
        Some(other) => return Err(format!("unknown server type {other:?}")),
    }
    Ok(config)
}

/// `Bash` in the allow list: every command runs unasked, as in Claude Code.
fn commands_allowed(draft: &mut Draft, what: &str) {
    draft.mapped(&format!(
        "{what} → [options.shell.commands] default = \"allow\" (every command no rule denies \
         runs, in the sandbox)"
    ));
    draft.file.options.shell.commands.default = Some(RuleDecision::Allow);
}

impl Draft {
    /// Writes one translated permission into the config, and says what it became.
    fn effect(&mut self, what: &str, effect: Effect) {
        let shell = &mut self.file.options.shell;
        let said = match effect {
            Effect::AllowPattern(p) => {
                let said = format!("[options.shell] custom_allow_patterns '{p}'");
                shell.custom_allow_patterns.push(p);
                said
            }
            Effect::DenyRule(mut rule) => {
                let taken = |id: &str| shell.commands.deny.iter().any(|r| r.id == id);
                if taken(&rule.id) {
                    let mut n = 2;
                    while taken(&format!("{}-{n}", rule.id)) {
                        n += 1;
                    }
                    rule.id = format!("{}-{n}", rule.id);
                }
                let said = format!("[options.shell.commands] deny rule {}", rule.id);
                shell.commands.deny.push(rule);
                said
            }
            Effect::DenyPattern(p) => {
                let said = format!("[options.shell] custom_deny_patterns '{p}'");
                shell.custom_deny_patterns.push(p);
                said
            }
            Effect::CommandsAllowed => return commands_allowed(self, what),
            Effect::Tool(tool, mode) => {
                let said = format!("[options.tools] \"{tool}\" = \"{}\"", mode_name(mode));
                self.file.options.tools.insert(tool.native().into(), mode);
                said
            }
            Effect::McpTool(tool, mode) => {
                let said = format!("[options.tools] \"{tool}\" = \"{}\"", mode_name(mode));
                self.file.options.tools.insert(tool, mode);
                said
            }
            Effect::McpServerOff(server) if is_mcp_server_name(&server) => {
                self.file
                    .mcp_servers
                    .entry(server.clone())
                    .or_default()
                    .enabled = Some(false);
                format!("[mcp_servers.{server}] enabled = false")
            }
            Effect::McpServerOff(server) => {
                return self.unmapped(what, &format!("{server:?} is not a pablo server name"));
            }
            Effect::DenyRoot(glob) => {
                let said = format!(
                    "[options.filesystem] deny_roots \"{glob}\" (refused to read and to write)"
                );
                self.file.options.filesystem.deny_roots.push(glob);
                said
            }
            Effect::FetchDomain(domain) => {
                let said = format!("[options.fetch] allowed_domains \"{domain}\"");
                self.file.options.fetch.allowed_domains.push(domain);
                said
            }
            Effect::AlreadySo(how) => format!("nothing to write: {how}"),
        };
        self.mapped(&format!("{what} → {said}"));
    }
}

fn mode_name(mode: pablo_core::ToolMode) -> &'static str {
    match mode {
        pablo_core::ToolMode::Auto => "auto",
        pablo_core::ToolMode::Ask => "ask",
        pablo_core::ToolMode::Deny => "deny",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The draft made of one `settings.json` text (and an `.mcp.json` text), as the person's own.
    fn draft_of(settings: &str, mcp: &str) -> Draft {
        let mut draft = Draft::default();
        let settings: Settings = serde_json::from_str(settings).unwrap();
        apply_settings(&mut draft, settings, "s", false);
        let mcp: McpFile = serde_json::from_str(mcp).unwrap();
        apply_mcp(&mut draft, mcp, "m");
        draft
    }

    #[test]
    fn a_session_start_hook_for_a_source_pablo_never_gives_is_reported_not_written() {
        let d = draft_of(
            r#"{"hooks": {"SessionStart": [
                {"matcher": "startup", "hooks": [{"type": "command", "command": "a"}]},
                {"matcher": "clear", "hooks": [{"type": "command", "command": "b"}]}
            ]}}"#,
            "{}",
        );
        assert_eq!(d.file.hooks.session_start.len(), 1);
        assert_eq!(d.file.hooks.session_start[0].command, "a");
        assert!(
            d.unmapped
                .iter()
                .any(|u| u.contains("\"clear\"") && u.contains("startup or resume")),
            "{:?}",
            d.unmapped
        );
    }

    #[test]
    fn a_hook_timeout_in_seconds_becomes_milliseconds_within_pablos_bound() {
        let d = draft_of(
            r#"{"hooks": {"Stop": [{"hooks": [
                {"type": "command", "command": "a", "timeout": 2.5},
                {"type": "command", "command": "b", "timeout": 3600},
                {"type": "prompt", "prompt": "is it done?"}
            ]}]}}"#,
            "{}",
        );
        let timeouts: Vec<_> = d.file.hooks.stop.iter().map(|h| h.timeout_ms).collect();
        assert_eq!(timeouts, [Some(2_500), Some(MAX_HOOK_TIMEOUT_MS)]);
        assert!(d.unmapped.iter().any(|u| u.contains("\"prompt\" hook")));
    }

    #[test]
    fn server_variables_pass_by_name_and_nothing_pablo_would_not_expand_is_copied() {
        let d = draft_of(
            r#"{"disabledMcpjsonServers": ["off"]}"#,
            r#"{"mcpServers": {
                "a": {"command": "srv", "env": {"TOKEN": "${TOKEN}", "B": "${C}",
                      "D": "${D:-x}", "LEVEL": "warn"}},
                "off": {"command": "srv"}
            }}"#,
        );
        let a = &d.file.mcp_servers["a"];
        assert_eq!(a.env_vars, ["TOKEN"]);
        assert_eq!(a.env.keys().collect::<Vec<_>>(), ["LEVEL"]);
        assert!(!d.file.mcp_servers.contains_key("off"));
        assert_eq!(d.notes.len(), 2, "{:?}", d.notes);
    }

    #[test]
    fn the_starting_mode_is_taken_from_the_persons_own_settings_only() {
        let mut d = Draft {
            project: true,
            ..Draft::default()
        };
        let s: Settings =
            serde_json::from_str(r#"{"permissions": {"defaultMode": "acceptEdits"}}"#).unwrap();
        apply_settings(&mut d, s, "s", true);
        assert_eq!(d.file.tui.mode, None);
        let d = draft_of(r#"{"permissions": {"defaultMode": "acceptEdits"}}"#, "{}");
        assert_eq!(d.file.tui.mode, Some(WorkMode::AutoEdit));
        let d = draft_of(
            r#"{"permissions": {"defaultMode": "bypassPermissions"}}"#,
            "{}",
        );
        assert_eq!(d.file.tui.mode, None);
        assert_eq!(d.unmapped.len(), 1);
    }
}
