//! Configuration: TOML layers under the XDG directories.
//!
//! Three files may exist: the user's (`$XDG_CONFIG_HOME/pablo/config.toml`), the project's
//! (`.pablo/config.toml` in the workspace) and one named with `--config`. Unknown keys and bad
//! values are errors naming the file, the line and the key, because a misspelt safety setting
//! that is silently ignored is worse than no setting. How the layers combine for policy (they only
//! narrow) is the policy module's business; scalar settings are taken from the last layer that
//! sets them.

pub(crate) mod env;
mod otel;
pub mod show;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::core::ToolMode;
use crate::core::{Coded, ErrorCode};
pub(crate) use otel::{OtelConfig, OtelProtocol, TraceConfig};

pub(crate) mod hooks;
pub use hooks::{HookEntry, HooksConfig, OnFailure};
pub(crate) mod lsp;
pub use lsp::{LspServerConfig, LspServerEntry};

/// The fixed `PATH` of every command pablo runs, and the one command words are resolved through
/// when policy matches rules (so `git` and `/usr/bin/git` are the same command).
pub const CLEAN_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// One config file, as written. Every field is optional so layers can be merged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// `openai`, `anthropic` or `ollama`.
    pub(crate) provider: Option<String>,
    /// `model = "NAME"`, or the `[model]` table (name, window, reasoning, wire format, prices).
    pub(crate) model: Option<ModelSetting>,
    pub(crate) base_url: Option<String>,
    /// Name of the environment variable holding the key (the key itself never goes in a file).
    pub(crate) api_key_env: Option<String>,
    #[serde(default)]
    pub(crate) limits: LimitsConfig,
    #[serde(default)]
    pub(crate) options: Options,
    #[serde(default)]
    pub(crate) tui: TuiConfig,
    /// `[mcp_servers.NAME]`: Model Context Protocol servers whose tools, prompts and resources
    /// the session offers (docs/mcp.md).
    #[serde(default)]
    pub(crate) mcp_servers: BTreeMap<String, McpServerConfig>,
    #[serde(default)]
    pub(crate) memory: MemoryOptions,
    /// `[otel]`: OpenTelemetry export (docs/observability.md).
    #[serde(default)]
    pub(crate) otel: OtelConfig,
    /// `[trace]`: what the native trace holds.
    #[serde(default)]
    pub(crate) trace: TraceConfig,
    /// `[[hooks.EVENT]]`: the person's programs around prompts, tool calls and file changes
    /// (docs/hooks.md).
    #[serde(default, skip_serializing_if = "HooksConfig::is_empty")]
    pub(crate) hooks: HooksConfig,
    /// `[lsp.NAME]`: language servers asked about the files the model edits (docs/lsp.md).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub lsp: BTreeMap<String, LspServerConfig>,
}

/// `[memory]`: whether the model may propose notes for later sessions (`memory.propose`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MemoryOptions {
    /// Off unless set to `true` in the user's config or `--config`; a project layer can only
    /// turn it off.
    pub(crate) enabled: Option<bool>,
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
    pub(crate) mode: Option<crate::protocol::WorkMode>,
    /// How pablo gets the person's attention when an approval waits or a turn ends.
    pub notifications: Option<crate::protocol::Notifications>,
}

/// One `[mcp_servers.NAME]` table: a program spoken to over stdio (`command`) or a streamable
/// HTTP endpoint (`url`), with how long to wait for it and what of it to offer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program to start (found through the command `PATH`); exclusive with `url`.
    pub(crate) command: Option<String>,
    #[serde(default)]
    pub(crate) args: Vec<String>,
    /// Variables the server gets besides the toolchain environment commands get; nothing else
    /// of pablo's environment (no provider key, no secret-looking variable) reaches it.
    #[serde(default)]
    pub(crate) env: BTreeMap<String, String>,
    /// Names of variables passed from pablo's own environment (a token the server needs). The
    /// variables holding pablo's provider keys cannot be named.
    #[serde(default)]
    pub(crate) env_vars: Vec<String>,
    /// Working directory of the program (relative to the workspace; default: the workspace).
    pub(crate) cwd: Option<PathBuf>,
    /// A streamable HTTP endpoint; exclusive with `command`.
    pub(crate) url: Option<String>,
    /// The variable holding a bearer token sent as `Authorization: Bearer …` (HTTP only).
    pub(crate) bearer_token_env: Option<String>,
    /// Extra HTTP headers (HTTP only).
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
    /// `false` switches the server off (a later layer may switch off an earlier one's server).
    pub(crate) enabled: Option<bool>,
    /// When `true`, a server that fails to start stops the session.
    pub(crate) required: Option<bool>,
    /// How long to wait for the handshake and the first listing (default 30).
    pub(crate) startup_timeout_seconds: Option<u64>,
    /// How long one tool call may take before it is cancelled (default 300).
    pub(crate) tool_timeout_seconds: Option<u64>,
    /// Only these tools are offered (real names, as the server lists them).
    pub(crate) enabled_tools: Option<Vec<String>>,
    /// These tools are never offered.
    #[serde(default)]
    pub(crate) disabled_tools: Vec<String>,
    /// Per-tool policy by real tool name: `tools.echo = "auto"`. MCP tools ask by default.
    #[serde(default)]
    pub(crate) tools: BTreeMap<String, ToolMode>,
}

/// Default seconds to wait for an MCP server to start.
pub(crate) const MCP_STARTUP_TIMEOUT_SECONDS: u64 = 30;
/// Default seconds one MCP tool call may take.
pub(crate) const MCP_TOOL_TIMEOUT_SECONDS: u64 = 300;

impl McpServerConfig {
    /// Whether this table defines a server (rather than only switching one off or setting
    /// tool modes).
    pub(crate) fn defines_server(&self) -> bool {
        self.command.is_some() || self.url.is_some()
    }

    pub(crate) fn startup_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(
            self.startup_timeout_seconds
                .filter(|s| *s > 0)
                .unwrap_or(MCP_STARTUP_TIMEOUT_SECONDS),
        )
    }

    pub(crate) fn tool_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(
            self.tool_timeout_seconds
                .filter(|s| *s > 0)
                .unwrap_or(MCP_TOOL_TIMEOUT_SECONDS),
        )
    }

    /// The checks serde cannot express; `Err` is the message after `mcp_servers.NAME`.
    fn check(&self) -> Result<(), String> {
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => return Err("has both command and url; give one".into()),
            (None, None) => {
                let only_narrowing = self.args.is_empty()
                    && self.env.is_empty()
                    && self.env_vars.is_empty()
                    && self.cwd.is_none()
                    && self.bearer_token_env.is_none()
                    && self.headers.is_empty();
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
            ] {
                if set {
                    return Err(format!("{key} is for a url server, not a command one"));
                }
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
pub(crate) fn is_mcp_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && !name.contains("__")
}

fn is_env_name(name: &str) -> bool {
    !name.is_empty()
        && !name.as_bytes()[0].is_ascii_digit()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The `model` key: a plain name, or a table of settings about the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum ModelSetting {
    Name(String),
    Table(ModelTable),
}

impl ModelSetting {
    pub(crate) fn table(&self) -> ModelTable {
        match self {
            ModelSetting::Name(name) => ModelTable {
                name: Some(name.clone()),
                ..ModelTable::default()
            },
            ModelSetting::Table(t) => t.clone(),
        }
    }
}

impl<'de> Deserialize<'de> for ModelSetting {
    // By hand rather than `untagged`, so that a bad key inside `[model]` is reported by name
    // (untagged enums only say that no variant matched).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = ModelSetting;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a model name or a [model] table")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ModelSetting, E> {
                Ok(ModelSetting::Name(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<ModelSetting, A::Error> {
                ModelTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(ModelSetting::Table)
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// `[model]`: what pablo should know about the model beyond its name. Unset fields come from
/// the table of known models (docs/providers.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelTable {
    pub(crate) name: Option<String>,
    /// Tokens the model reads and writes in one call.
    pub(crate) context_window: Option<u64>,
    /// Largest answer of one call, in tokens.
    pub(crate) max_output_tokens: Option<u32>,
    pub(crate) reasoning: Option<ReasoningLevel>,
    /// For `provider = "openai"`: `chat` (Chat Completions) or `responses` (the Responses API).
    pub(crate) wire_api: Option<WireApi>,
    /// Whether the model takes images (`@shot.png`); unset, the table of known models says.
    pub(crate) images: Option<bool>,
    #[serde(default)]
    pub(crate) prices: PriceTable,
}

/// How much the model is asked to reason: `off`, `low`, `medium`, `high`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningLevel {
    Off,
    Low,
    Medium,
    High,
}

impl ReasoningLevel {
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "off" | "none" => Ok(Self::Off),
            "low" => Ok(Self::Low),
            "medium" => Ok(Self::Medium),
            "high" => Ok(Self::High),
            other => Err(format!(
                "unknown reasoning level {other:?}: use off, low, medium or high"
            )),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

/// The wire format of an OpenAI-compatible endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireApi {
    /// `POST /chat/completions`: OpenAI and every server that copies it.
    Chat,
    /// `POST /responses`: OpenAI's own API, where reasoning survives tool calls.
    Responses,
}

/// `[model.prices]`, in US dollars per million tokens; unset entries come from the table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PriceTable {
    pub(crate) input: Option<f64>,
    pub(crate) output: Option<f64>,
    pub(crate) cache_read: Option<f64>,
    pub(crate) cache_write: Option<f64>,
}

impl PriceTable {
    fn is_empty(&self) -> bool {
        self.input.is_none()
            && self.output.is_none()
            && self.cache_read.is_none()
            && self.cache_write.is_none()
    }
}

/// Host limits; `None` keeps the built-in default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LimitsConfig {
    pub(crate) run_deadline_seconds: Option<u64>,
    pub(crate) max_tool_argument_bytes: Option<usize>,
    pub(crate) max_tool_result_bytes: Option<usize>,
    pub(crate) max_request_context_bytes: Option<usize>,
    pub(crate) max_model_output_bytes: Option<usize>,
    pub(crate) max_native_events: Option<u64>,
    pub(crate) max_model_calls: Option<u64>,
    pub(crate) max_tool_calls: Option<u64>,
    /// Seconds without a byte on a model stream before it is abandoned.
    pub(crate) stream_idle_timeout_seconds: Option<u64>,
    /// Conversation size (bytes) at which older turns are summarized, on top of the context
    /// window's own bound.
    pub(crate) compact_at_bytes: Option<usize>,
    /// HTTP requests `web.fetch` may send in one session, redirects included (default 50;
    /// 0 removes the tool).
    pub(crate) max_network_requests: Option<u64>,
    /// Largest file `artifact.write` stores, in bytes (default 5 MiB).
    pub(crate) max_artifact_bytes: Option<usize>,
    /// Subagents (`agent.task`) of one model response that run at the same time (default 4).
    pub(crate) max_parallel_subagents: Option<usize>,
    /// Tool calls one subagent may make (default 50; the session's budget still bounds all).
    pub(crate) subagent_max_tool_calls: Option<u64>,
    /// Seconds one subagent may run (default 600; the turn's deadline still bounds it).
    pub(crate) subagent_deadline_seconds: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Options {
    #[serde(default)]
    pub(crate) shell: ShellOptions,
    /// Per-tool policy, keyed by native tool name (`"fs.write" = "ask"`).
    #[serde(default)]
    pub(crate) tools: BTreeMap<String, ToolMode>,
    #[serde(default)]
    pub(crate) filesystem: FilesystemOptions,
    #[serde(default)]
    pub(crate) fetch: FetchOptions,
    #[serde(default)]
    pub(crate) checkpoints: CheckpointConfig,
}

/// `[options.fetch]`: the hosts `web.fetch` may reach without asking. The address rules apply
/// to them as to every host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FetchOptions {
    /// Domain names; each covers itself and its subdomains (`docs.rs` covers `www.docs.rs`).
    #[serde(default)]
    pub(crate) allowed_domains: Vec<String>,
}

/// Whether `name` is a domain name as `[options.fetch] allowed_domains` takes it: dot-separated
/// labels of letters, digits and hyphens, no scheme, port, path or wildcard.
pub(crate) fn is_domain_name(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// `[options.checkpoints]`: the per-turn checkpoints that undo, rewind and `/diff` restore from
/// (docs/sessions.md).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CheckpointConfig {
    /// Keep checkpoints (default true).
    pub(crate) enabled: Option<bool>,
    /// The most file content one checkpoint (one turn) stores, in bytes (default 256 MiB).
    /// Files beyond it are recorded by hash and size only, and the checkpoint says it cannot
    /// restore them.
    pub(crate) max_bytes: Option<u64>,
    /// Files larger than this (default 16 MiB) are recorded by hash and size only.
    pub(crate) max_file_bytes: Option<u64>,
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
    /// The OS sandbox of approved commands: `workspace-write` (default), `read-only` or `off`.
    /// A trusted layer may loosen it; the project layer can only tighten it.
    pub sandbox: Option<crate::protocol::SandboxProfile>,
    /// Whether `workspace-write` commands may reach the network (default false; only trusted
    /// layers may turn it on).
    pub network: Option<bool>,
    /// More writable roots for `workspace-write` (absolute or `~/…`; only trusted layers).
    #[serde(default)]
    pub writable_roots: Vec<String>,
    /// Known-safe reads run without asking, in the read-only sandbox (default true; any layer
    /// may turn it off).
    pub known_safe_reads: Option<bool>,
    /// Run plain foreground commands in an editor's terminal (over ACP) even though it is
    /// outside pablo's sandbox (default false: they run locally, sandboxed; only trusted layers).
    pub editor_terminals: Option<bool>,
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
    pub(crate) inherit: Vec<String>,
    /// Variables never to pass, built-in ones included.
    #[serde(default)]
    pub(crate) exclude: Vec<String>,
    /// Fixed values (`PATH` here replaces the inherited one).
    #[serde(default)]
    pub(crate) set: BTreeMap<String, String>,
}

/// `[options.shell.commands]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandRules {
    pub(crate) default: Option<RuleDecision>,
    #[serde(default)]
    pub(crate) allow: Vec<CommandRule>,
    #[serde(default)]
    pub(crate) deny: Vec<CommandRule>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RuleDecision {
    Allow,
    Ask,
    Deny,
}

/// `{ id, executable, args, match }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CommandRule {
    pub(crate) id: String,
    pub(crate) executable: String,
    #[serde(default)]
    pub(crate) args: Vec<String>,
    #[serde(rename = "match", default)]
    pub(crate) match_kind: MatchKind,
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
pub(crate) struct FilesystemOptions {
    pub(crate) enabled: Option<bool>,
    #[serde(default)]
    pub(crate) read_roots: Vec<String>,
    #[serde(default)]
    pub(crate) write_roots: Vec<String>,
    #[serde(default)]
    pub(crate) deny_roots: Vec<String>,
    /// Extra credential-like file name globs refused for reading (added to the built-in list).
    #[serde(default)]
    pub(crate) refused_names: Vec<String>,
    /// Largest file `fs.read` opens, in bytes (default: unlimited in the CLI).
    pub(crate) max_file_bytes: Option<u64>,
}

/// A config file that cannot be used. Every problem is named with the file, the line and the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read: {message}")]
    Read { path: PathBuf, message: String },
    #[error("{}", render_problems(path, problems))]
    Invalid {
        path: PathBuf,
        problems: Vec<ConfigProblem>,
    },
    /// Settings of `PABLO_` variables or `-c` that cannot be used, each naming where it came from.
    #[error("{}", problems.join("\n"))]
    Overrides { problems: Vec<String> },
}

/// One problem of a config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// 1-based.
    pub(crate) line: usize,
    /// The dotted key (`options.shell.timeout_seconds`, `options.shell.commands.allow[0]`); none
    /// for a syntax error.
    pub(crate) key: Option<String>,
    pub(crate) message: String,
}

fn render_problems(path: &Path, problems: &[ConfigProblem]) -> String {
    problems
        .iter()
        .map(|p| match &p.key {
            Some(k) => format!("{}:{}: {k}: {}", path.display(), p.line, p.message),
            None => format!("{}:{}: {}", path.display(), p.line, p.message),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Coded for ConfigError {
    fn code(&self) -> ErrorCode {
        match self {
            ConfigError::Read { .. } => ErrorCode::ConfigUnreadable,
            ConfigError::Invalid { .. } | ConfigError::Overrides { .. } => ErrorCode::ConfigInvalid,
        }
    }
}

/// Stop collecting after this many problems (a file of garbage is one problem too many).
const MAX_PROBLEMS: usize = 100;

/// One step of a key path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// One key of a dotted path as written: bare when it can be, quoted otherwise (`"fs.write"`).
pub(crate) fn key_segment(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        format!("{k:?}")
    }
}

fn key_text(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&key_segment(k));
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

type DocTable<'i> = toml::de::DeTable<'i>;
type DocValue<'i> = toml::de::DeValue<'i>;

/// Every key and array element of `table` with the spans of its key and value.
fn nodes(
    table: &DocTable<'_>,
    prefix: &mut Vec<Seg>,
    out: &mut Vec<(Vec<Seg>, std::ops::Range<usize>, std::ops::Range<usize>)>,
) {
    for (k, v) in table.iter() {
        prefix.push(Seg::Key(k.get_ref().to_string()));
        out.push((prefix.clone(), k.span(), v.span()));
        value_nodes(v.get_ref(), prefix, out);
        prefix.pop();
    }
}

fn value_nodes(
    value: &DocValue<'_>,
    prefix: &mut Vec<Seg>,
    out: &mut Vec<(Vec<Seg>, std::ops::Range<usize>, std::ops::Range<usize>)>,
) {
    match value {
        DocValue::Table(t) => nodes(t, prefix, out),
        DocValue::Array(a) => {
            for (i, item) in a.iter().enumerate() {
                prefix.push(Seg::Index(i));
                out.push((prefix.clone(), item.span(), item.span()));
                value_nodes(item.get_ref(), prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

/// The key whose key or value holds `span` most tightly.
fn locate(doc: &DocTable<'_>, span: &std::ops::Range<usize>) -> Option<Vec<Seg>> {
    let mut all = Vec::new();
    nodes(doc, &mut Vec::new(), &mut all);
    let contains = |r: &std::ops::Range<usize>| r.start <= span.start && span.end <= r.end;
    all.into_iter()
        .filter_map(|(path, k, v)| {
            let fit = [k, v]
                .into_iter()
                .filter(|r| contains(r))
                .map(|r| r.end - r.start)
                .min()?;
            Some((fit, std::cmp::Reverse(path.len()), path))
        })
        .min_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)))
        .map(|(_, _, path)| path)
}

/// The span of the value at `path`.
fn span_at(doc: &DocTable<'_>, path: &[Seg]) -> Option<std::ops::Range<usize>> {
    let (Seg::Key(first), rest) = path.split_first()? else {
        return None;
    };
    let mut cur = doc.get(first.as_str())?;
    for seg in rest {
        cur = match (seg, cur.get_ref()) {
            (Seg::Key(k), DocValue::Table(t)) => t.get(k.as_str())?,
            (Seg::Index(i), DocValue::Array(a)) => a.get(*i)?,
            _ => return None,
        };
    }
    Some(cur.span())
}

/// Removes the entry at `path`; false when there is none.
fn remove_at(doc: &mut DocTable<'_>, path: &[Seg]) -> bool {
    match path {
        [Seg::Key(k)] => doc.remove(k.as_str()).is_some(),
        [Seg::Key(k), rest @ ..] => match doc.get_mut(k.as_str()) {
            Some(v) => remove_in(v.get_mut(), rest),
            None => false,
        },
        _ => false,
    }
}

fn remove_in(value: &mut DocValue<'_>, path: &[Seg]) -> bool {
    match (value, path) {
        (DocValue::Table(t), _) => remove_at(t, path),
        (DocValue::Array(a), [Seg::Index(i)]) if *i < a.len() => {
            let mut kept = toml::de::DeArray::new();
            for (j, item) in a.iter().enumerate() {
                if j != *i {
                    kept.push(item.clone());
                }
            }
            *a = kept;
            true
        }
        (DocValue::Array(a), [Seg::Index(i), rest @ ..]) => match a.get_mut(*i) {
            Some(item) => remove_in(item.get_mut(), rest),
            None => false,
        },
        _ => false,
    }
}

impl ConfigFile {
    /// Parses one file's text; `path` is only used in messages. Every problem is reported, not
    /// just the first.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        match Self::validate(text) {
            (Some(c), problems) if problems.is_empty() => Ok(c),
            (_, problems) => Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                problems,
            }),
        }
    }

    /// Every problem of a config text, each with its line and key, and the config it describes
    /// when it has no syntax error. A bad entry is taken out and the rest read again, so one
    /// misspelt key does not hide the next; an entry of a list of rules goes out whole, so a bad
    /// rule is one problem.
    pub(crate) fn validate(text: &str) -> (Option<Self>, Vec<ConfigProblem>) {
        let line_of = |offset: usize| {
            let at = offset.min(text.len());
            text.get(..at).map_or(1, |t| t.matches('\n').count() + 1)
        };
        let (doc, syntax) = toml::de::DeTable::parse_recoverable(text);
        if !syntax.is_empty() {
            let problems = syntax
                .iter()
                .take(MAX_PROBLEMS)
                .map(|e| ConfigProblem {
                    line: e.span().map_or(1, |s| line_of(s.start)),
                    key: None,
                    message: e.message().trim().to_string(),
                })
                .collect();
            return (None, problems);
        }
        let original = doc.clone();
        let mut doc = doc;
        let mut problems = Vec::new();
        while problems.len() < MAX_PROBLEMS {
            let e = match ConfigFile::deserialize(toml::de::Deserializer::from(doc.clone())) {
                Ok(config) => {
                    let checked = config.check();
                    problems.extend(checked.into_iter().map(|(path, message)| ConfigProblem {
                        line: span_at(original.get_ref(), &path).map_or(1, |s| line_of(s.start)),
                        key: Some(key_text(&path)),
                        message,
                    }));
                    problems.sort_by_key(|p| p.line);
                    return (Some(config), problems);
                }
                Err(e) => e,
            };
            let span = e.span();
            let mut found = span.as_ref().and_then(|s| locate(doc.get_ref(), s));
            // Inside a list (of rules, of patterns): the element goes whole.
            if let Some(p) = &mut found
                && let Some(i) = p.iter().position(|s| matches!(s, Seg::Index(_)))
            {
                p.truncate(i + 1);
            }
            problems.push(ConfigProblem {
                line: span.map_or(1, |s| line_of(s.start)),
                key: found.as_deref().map(key_text),
                message: e.message().trim().to_string(),
            });
            match found {
                Some(p) if remove_at(doc.get_mut(), &p) => {}
                _ => break,
            }
        }
        problems.sort_by_key(|p| p.line);
        (None, problems)
    }

    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Self::parse(&text, path)
    }

    /// Checks that serde cannot express (values that parse but mean nothing), each with the key
    /// path it is about.
    fn check(&self) -> Vec<(Vec<Seg>, String)> {
        let key = |parts: &[&str]| {
            parts
                .iter()
                .map(|p| Seg::Key((*p).to_string()))
                .collect::<Vec<_>>()
        };
        let at = |parts: &[&str], i: usize| {
            let mut p = key(parts);
            p.push(Seg::Index(i));
            p
        };
        let mut out = Vec::new();
        for (name, server) in &self.mcp_servers {
            if !is_mcp_server_name(name) {
                out.push((
                    key(&["mcp_servers", name]),
                    "a server name is 1 to 32 letters, digits, '-' or '_' (no \"__\")".into(),
                ));
            }
            if let Err(m) = server.check() {
                out.push((key(&["mcp_servers", name]), m));
            }
        }
        if let Some(p) = &self.provider
            && !matches!(p.as_str(), "openai" | "anthropic" | "ollama")
        {
            out.push((
                key(&["provider"]),
                format!("unknown provider {p:?} (expected openai, anthropic or ollama)"),
            ));
        }
        if let Some(ModelSetting::Table(m)) = &self.model {
            if m.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
                out.push((key(&["model", "name"]), "the model name is empty".into()));
            }
            if let Some(w) = m.context_window
                && w < 1_000
            {
                out.push((
                    key(&["model", "context_window"]),
                    format!("{w} tokens is too small to hold a request (at least 1000)"),
                ));
            }
            if m.max_output_tokens == Some(0) {
                out.push((
                    key(&["model", "max_output_tokens"]),
                    "must be at least 1".into(),
                ));
            }
            let p = &m.prices;
            for (name, v) in [
                ("input", p.input),
                ("output", p.output),
                ("cache_read", p.cache_read),
                ("cache_write", p.cache_write),
            ] {
                if let Some(v) = v
                    && !(v.is_finite() && v >= 0.0)
                {
                    out.push((
                        key(&["model", "prices", name]),
                        format!("{v} is not a price (dollars per million tokens, 0 or more)"),
                    ));
                }
            }
        }
        let shell = &self.options.shell;
        for (name, list) in [
            ("custom_deny_patterns", &shell.custom_deny_patterns),
            ("custom_allow_patterns", &shell.custom_allow_patterns),
        ] {
            for (i, pat) in list.iter().enumerate() {
                if let Err(e) = regex::Regex::new(pat) {
                    // The regex crate draws a caret under the spot over several lines; one
                    // problem is one line here, so only its last line (what is wrong) is kept.
                    let text = e.to_string();
                    let why = text.lines().last().unwrap_or_default().trim();
                    let why = why.strip_prefix("error: ").unwrap_or(why);
                    out.push((
                        at(&["options", "shell", name], i),
                        format!("{pat:?} is not a regular expression: {why}"),
                    ));
                }
            }
        }
        let rules = &shell.commands;
        for (name, list) in [("allow", &rules.allow), ("deny", &rules.deny)] {
            for (i, rule) in list.iter().enumerate() {
                let mut id_key = at(&["options", "shell", "commands", name], i);
                if rule.id.trim().is_empty() {
                    id_key.push(Seg::Key("id".into()));
                    out.push((id_key, "a rule has an empty id".into()));
                } else if rule.executable.trim().is_empty() {
                    id_key.push(Seg::Key("executable".into()));
                    out.push((
                        id_key,
                        format!("rule {:?} has an empty executable", rule.id),
                    ));
                }
            }
        }
        for (i, domain) in self.options.fetch.allowed_domains.iter().enumerate() {
            if !is_domain_name(domain) {
                out.push((
                    at(&["options", "fetch", "allowed_domains"], i),
                    format!(
                        "{domain:?} is not a domain name (write `example.com`: it covers its \
                         subdomains; no scheme, port, path or `*`)"
                    ),
                ));
            }
        }
        for (k, message) in self.otel.check() {
            out.push((key(&["otel", k]), message));
        }
        for (i, root) in shell.writable_roots.iter().enumerate() {
            let ok = root.starts_with('/') || root == "~" || root.starts_with("~/");
            if !ok || root.contains('\0') {
                out.push((
                    at(&["options", "shell", "writable_roots"], i),
                    format!("{root:?} is not an absolute path (or ~/…)"),
                ));
            }
        }
        let fs = &self.options.filesystem;
        for (name, list) in [
            ("read_roots", &fs.read_roots),
            ("write_roots", &fs.write_roots),
            ("deny_roots", &fs.deny_roots),
            ("refused_names", &fs.refused_names),
        ] {
            for (i, glob) in list.iter().enumerate() {
                if let Err(e) = globset::Glob::new(glob) {
                    out.push((
                        at(&["options", "filesystem", name], i),
                        format!("{glob:?} is not a glob: {e}"),
                    ));
                }
            }
        }
        let mut hook_problems = Vec::new();
        hooks::check(&self.hooks, &mut hook_problems);
        out.extend(hook_problems.into_iter().map(|((event, i, field), m)| {
            let path = vec![
                Seg::Key("hooks".into()),
                Seg::Key(event.into()),
                Seg::Index(i),
                Seg::Key(field.into()),
            ];
            (path, m)
        }));
        out
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
}

/// The label of the `PABLO_`/`-c` layer in messages.
pub(crate) const OVERRIDES_LABEL: &str = "PABLO_ variables and -c";

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
            ..Self::default()
        })
    }

    /// Layers in precedence order (later wins for scalars).
    pub(crate) fn iter(&self) -> impl Iterator<Item = &ConfigFile> {
        [&self.user, &self.project, &self.explicit, &self.overrides]
            .into_iter()
            .flatten()
            .map(|(_, c)| c)
    }

    /// The person's own layers, in precedence order: the user's file, `--config`, and the
    /// `PABLO_`/`-c` settings (never the project's, which comes with the repository).
    pub(crate) fn personal(&self) -> impl DoubleEndedIterator<Item = &(PathBuf, ConfigFile)> {
        [&self.user, &self.explicit, &self.overrides]
            .into_iter()
            .flatten()
    }

    /// Adds the person's `PABLO_` variables (`vars`) and `-c` settings (`args`) as the top layer;
    /// returns the note about `PABLO_` variables that are no config key (said once per process).
    pub(crate) fn with_overrides(
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
    pub(crate) fn last<T: Clone>(&self, pick: impl Fn(&ConfigFile) -> Option<T>) -> Option<T> {
        self.iter().filter_map(pick).last()
    }

    /// Checkpoint settings, later layers winning. The project layer is not read: a repository's
    /// own config must not be able to switch off or shrink the person's undo.
    pub(crate) fn checkpoints(&self) -> CheckpointConfig {
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
    pub(crate) fn model(&self) -> ModelTable {
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
            }
        }
        out
    }

    /// Shell options with scalars merged (later wins) and lists concatenated. Policy reads the
    /// layers itself to apply its narrowing rules; the process side only needs these numbers.
    pub(crate) fn shell(&self) -> ShellOptions {
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

/// An MCP server to start, as the layers settled it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct McpServerEntry {
    pub(crate) name: String,
    pub(crate) config: McpServerConfig,
    /// Where it was defined (`user config /home/…/config.toml`), for messages.
    pub(crate) source: String,
}

impl Layers {
    /// The MCP servers of the layers, in name order, and notes on what was ignored. A server is
    /// defined by the last trusted layer that gives it a `command` or `url`; the project layer
    /// comes with the repository, so until the folder is trusted (`project_trusted`) it starts
    /// nothing: its definitions are ignored with a warning. Any layer may switch a server off
    /// (`enabled = false`) and narrow its tools (`disabled_tools`, `enabled_tools`); trusted
    /// layers may also change its timeouts and `required`.
    pub(crate) fn mcp_servers(&self, project_trusted: bool) -> (Vec<McpServerEntry>, Vec<String>) {
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
    fn fetch_domains_and_memory_parse_and_a_url_is_refused_as_a_domain() {
        let text = "[memory]\nenabled = true\n[options.fetch]\nallowed_domains = [\"docs.rs\"]\n[limits]\nmax_network_requests = 3\nmax_artifact_bytes = 10\n";
        let c = ConfigFile::parse(text, Path::new("c.toml")).unwrap();
        assert_eq!(c.memory.enabled, Some(true));
        assert_eq!(c.options.fetch.allowed_domains, vec!["docs.rs".to_string()]);
        assert_eq!(c.limits.max_network_requests, Some(3));
        let msg = ConfigFile::parse(
            "[options.fetch]\nallowed_domains = [\"https://docs.rs/\"]\n",
            Path::new("c.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(msg.contains("https://docs.rs/"), "{msg}");
        assert!(msg.contains("allowed_domains"), "{msg}");
    }

    #[test]
    fn an_mcp_server_table_parses_with_every_key() {
        let text = r#"
[mcp_servers.everything]
command = "node"
args = ["server.js", "stdio"]
env = { LOG_LEVEL = "debug" }
env_vars = ["GITHUB_TOKEN"]
cwd = "tools"
enabled = true
required = false
startup_timeout_seconds = 10
tool_timeout_seconds = 60
enabled_tools = ["echo", "get-sum"]
disabled_tools = ["get-env"]
tools.echo = "auto"
tools.get-sum = "deny"

[mcp_servers.remote]
url = "http://127.0.0.1:3001/mcp"
bearer_token_env = "REMOTE_TOKEN"
headers = { X-Team = "core" }
"#;
        let c = ConfigFile::parse(text, Path::new("c.toml")).unwrap();
        let e = &c.mcp_servers["everything"];
        assert_eq!(e.args, ["server.js", "stdio"]);
        assert_eq!(e.tools.get("get-sum"), Some(&ToolMode::Deny));
        assert_eq!(e.tool_timeout(), std::time::Duration::from_secs(60));
        let r = &c.mcp_servers["remote"];
        assert_eq!(r.startup_timeout(), std::time::Duration::from_secs(30));
        assert_eq!(r.headers["X-Team"], "core");
    }

    #[test]
    fn an_unknown_mcp_key_names_file_line_and_key() {
        let text = "[mcp_servers.fs]\ncommand = \"node\"\nstartup_timeout = 5\n";
        let msg = ConfigFile::parse(text, Path::new("/tmp/c.toml"))
            .unwrap_err()
            .to_string();
        assert!(msg.starts_with("/tmp/c.toml:3:"), "{msg}");
        assert!(msg.contains("startup_timeout"), "{msg}");
    }

    #[test]
    fn an_mcp_server_with_both_command_and_url_is_refused() {
        let text = "[mcp_servers.x]\ncommand = \"node\"\nurl = \"http://127.0.0.1/\"\n";
        let msg = ConfigFile::parse(text, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("mcp_servers.x: has both command and url"),
            "{msg}"
        );
        let text = "[mcp_servers.x]\nargs = [\"a\"]\n";
        let msg = ConfigFile::parse(text, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("needs a command"), "{msg}");
        let text = "[mcp_servers.x]\ncommand = \"node\"\nheaders = { A = \"b\" }\n";
        let msg = ConfigFile::parse(text, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("headers is for a url server"), "{msg}");
        let text = "[mcp_servers.\"a b\"]\ncommand = \"node\"\n";
        let msg = ConfigFile::parse(text, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("server name"), "{msg}");
    }

    fn layer(text: &str, name: &str) -> Option<(PathBuf, ConfigFile)> {
        Some((
            PathBuf::from(name),
            ConfigFile::parse(text, Path::new(name)).unwrap(),
        ))
    }

    #[test]
    fn an_untrusted_project_layer_starts_no_mcp_server_but_may_switch_one_off() {
        let layers = Layers {
            user: layer(
                "[mcp_servers.a]\ncommand = \"a\"\n[mcp_servers.b]\ncommand = \"b\"\n",
                "user.toml",
            ),
            project: layer(
                "[mcp_servers.evil]\ncommand = \"curl\"\n[mcp_servers.b]\nenabled = false\n\
                 [mcp_servers.a]\ndisabled_tools = [\"x\"]\nrequired = true\n",
                "project.toml",
            ),
            explicit: None,
            ..Default::default()
        };
        let (servers, warnings) = layers.mcp_servers(false);
        let names: Vec<_> = servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a"]);
        assert_eq!(servers[0].config.disabled_tools, ["x"]);
        assert_eq!(
            servers[0].config.required, None,
            "untrusted cannot make it required"
        );
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("MCP server evil not started"),
            "{warnings:?}"
        );
        let (servers, warnings) = layers.mcp_servers(true);
        let names: Vec<_> = servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "evil"]);
        assert!(warnings.is_empty());
    }

    #[test]
    fn a_plain_model_name_still_parses() {
        let c = ConfigFile::parse("model = \"gpt-4.1\"\n", Path::new("c.toml")).unwrap();
        assert_eq!(c.model.unwrap().table().name.as_deref(), Some("gpt-4.1"));
    }

    #[test]
    fn the_model_table_parses_every_setting() {
        let text = "[model]\nname = \"claude-sonnet-4-5\"\ncontext_window = 16000\n\
                    max_output_tokens = 4096\nreasoning = \"high\"\nwire_api = \"responses\"\n\
                    [model.prices]\ninput = 3.0\ncache_read = 0.3\n";
        let m = ConfigFile::parse(text, Path::new("c.toml"))
            .unwrap()
            .model
            .unwrap()
            .table();
        assert_eq!(m.name.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(m.context_window, Some(16000));
        assert_eq!(m.max_output_tokens, Some(4096));
        assert_eq!(m.reasoning, Some(ReasoningLevel::High));
        assert_eq!(m.wire_api, Some(WireApi::Responses));
        assert_eq!(m.prices.input, Some(3.0));
        assert_eq!(m.prices.cache_read, Some(0.3));
        assert_eq!(m.prices.output, None);
    }

    #[test]
    fn an_unknown_key_in_the_model_table_is_named_with_its_line() {
        let text = "[model]\nname = \"x\"\ncontext_windw = 5\n";
        let msg = ConfigFile::parse(text, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("context_windw"), "{msg}");
        assert!(msg.starts_with("c.toml:"), "{msg}");
    }

    #[test]
    fn a_bad_reasoning_level_and_a_tiny_window_are_refused_by_key() {
        let msg = ConfigFile::parse("[model]\nreasoning = \"max\"\n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("max"), "{msg}");
        let msg = ConfigFile::parse("[model]\ncontext_window = 10\n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("model.context_window"), "{msg}");
        let msg = ConfigFile::parse("[model.prices]\ninput = -1.0\n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("model.prices.input"), "{msg}");
    }

    #[test]
    fn model_settings_merge_field_by_field_across_layers() {
        let user = ConfigFile::parse("model = \"gpt-5\"\n", Path::new("u.toml")).unwrap();
        let project =
            ConfigFile::parse("[model]\ncontext_window = 50000\n", Path::new("p.toml")).unwrap();
        let layers = Layers {
            user: Some((PathBuf::from("u.toml"), user)),
            project: Some((PathBuf::from("p.toml"), project)),
            explicit: None,
            ..Default::default()
        };
        let m = layers.model();
        assert_eq!(m.name.as_deref(), Some("gpt-5"));
        assert_eq!(m.context_window, Some(50000));
    }

    #[test]
    fn every_problem_is_reported_with_its_line_and_key() {
        let text = "provider = \"foo\"\nmodel = 3\n\n[limits]\nmax_tool_calls = \"soon\"\n\n\
                    [options.shell]\ntimeout_secs = 5\ncustom_deny_patterns = [\"ok\", \"(x\"]\n\n\
                    [options.shell.commands]\nallow = [{ id = \"a\" }, { id = \"b\", executable = \"git\" }]\n";
        let err = ConfigFile::parse(text, Path::new("c.toml")).unwrap_err();
        let ConfigError::Invalid { problems, .. } = &err else {
            panic!("{err}");
        };
        let got: Vec<(usize, Option<&str>)> = problems
            .iter()
            .map(|p| (p.line, p.key.as_deref()))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, Some("provider")),
                (2, Some("model")),
                (5, Some("limits.max_tool_calls")),
                (8, Some("options.shell.timeout_secs")),
                (9, Some("options.shell.custom_deny_patterns[1]")),
                (12, Some("options.shell.commands.allow[0]")),
            ],
            "{err}"
        );
        let shown = err.to_string();
        assert_eq!(shown.lines().count(), 6, "{shown}");
        assert!(
            shown.contains("c.toml:5: limits.max_tool_calls: invalid type: string \"soon\""),
            "{shown}"
        );
        assert!(
            shown.contains("c.toml:1: provider: unknown provider \"foo\""),
            "{shown}"
        );
        assert!(shown.contains("missing field `executable`"), "{shown}");
    }

    #[test]
    fn a_syntax_error_is_reported_with_its_line() {
        let err =
            ConfigFile::parse("model = \"x\"\nprovider = \n", Path::new("c.toml")).unwrap_err();
        assert!(err.to_string().starts_with("c.toml:2:"), "{err}");
    }

    #[test]
    fn unknown_provider_is_refused() {
        let msg = ConfigFile::parse("provider = \"gemini\"\n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("gemini"), "{msg}");
    }
}
