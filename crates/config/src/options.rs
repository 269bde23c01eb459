//! The `[options]`, `[limits]`, `[memory]` and `[tui]` tables: what each setting may hold.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use pablo_core::ToolMode;

/// `[memory]`: whether the model may propose notes for later sessions (`memory.propose`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryOptions {
    /// Off unless set to `true` in the user's config or `--config`; a project layer can only
    /// turn it off.
    pub enabled: Option<bool>,
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
    pub mode: Option<pablo_protocol::WorkMode>,
    /// How pablo gets the person's attention when an approval waits or a turn ends.
    pub notifications: Option<pablo_protocol::Notifications>,
    /// A program (`sh -c`) given the session's state as JSON on stdin, in the shape Claude Code
    /// gives its status line command; the first line it prints stands in the status line for
    /// the model, tokens, context, cost and workspace. A project config's counts only in a
    /// trusted folder (docs/tui.md, *Your own status line*).
    pub statusline_command: Option<String>,
    /// Vim keys in the composer from the start (`/vim` toggles them). Read from the user's
    /// config and `--config` only: how the person's keys behave is not a repository's choice.
    pub vim: Option<bool>,
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
    /// The most a session may spend on model calls, in US dollars at the model's prices
    /// (`--max-budget-usd`).
    pub max_budget_usd: Option<f64>,
    /// Seconds without a byte on a model stream before it is abandoned.
    pub stream_idle_timeout_seconds: Option<u64>,
    /// Seconds a model stream may deliver none of the answer (only comments, or bytes that
    /// decode to nothing) before it is abandoned.
    pub stream_progress_timeout_seconds: Option<u64>,
    /// Conversation size (bytes) at which older turns are summarized, on top of the context
    /// window's own bound.
    pub compact_at_bytes: Option<usize>,
    /// HTTP requests `web.fetch` may send in one session, redirects included (default 50;
    /// 0 removes the tool).
    pub max_network_requests: Option<u64>,
    /// Largest file `artifact.write` stores, in bytes (default 5 MiB).
    pub max_artifact_bytes: Option<usize>,
    /// Subagents (`agent.task`) of one model response that run at the same time (default 4).
    pub max_parallel_subagents: Option<usize>,
    /// Tool calls one subagent may make (default 50; the session's budget still bounds all).
    pub subagent_max_tool_calls: Option<u64>,
    /// Seconds one subagent may run (default 600; the turn's deadline still bounds it).
    pub subagent_deadline_seconds: Option<u64>,
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
    #[serde(default)]
    pub fetch: FetchOptions,
    #[serde(default)]
    pub checkpoints: CheckpointConfig,
    #[serde(default)]
    pub web_search: WebSearchOptions,
}

/// `[options.web_search]`: the provider's own search of the web (docs/web.md). Off unless
/// `enabled = true` in the user's config, `--config` or a trusted project; a project config may
/// turn it off.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSearchOptions {
    pub enabled: Option<bool>,
    /// The most searches one model call may run (Anthropic's `max_uses`).
    pub max_uses: Option<u32>,
    /// Only these sites are searched (domain names, each with its subdomains).
    #[serde(default)]
    pub allowed_domains: Vec<String>,
    /// These sites are never searched (Anthropic only; not together with `allowed_domains`).
    #[serde(default)]
    pub blocked_domains: Vec<String>,
}

/// `[options.fetch]`: the hosts `web.fetch` may reach without asking. The address rules apply
/// to them as to every host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FetchOptions {
    /// Domain names; each covers itself and its subdomains (`docs.rs` covers `www.docs.rs`).
    #[serde(default)]
    pub allowed_domains: Vec<String>,
}

impl WebSearchOptions {
    /// Values that parse but cannot be sent: each with its key under `[options.web_search]`.
    pub fn check(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if self.max_uses == Some(0) {
            out.push((
                "max_uses",
                "0 searches would offer a search the model cannot run; write `enabled = false` \
                 to turn web search off"
                    .into(),
            ));
        }
        if !self.allowed_domains.is_empty() && !self.blocked_domains.is_empty() {
            out.push((
                "blocked_domains",
                "the provider takes allowed_domains or blocked_domains, not both".into(),
            ));
        }
        for (k, list) in [
            ("allowed_domains", &self.allowed_domains),
            ("blocked_domains", &self.blocked_domains),
        ] {
            for domain in list.iter().filter(|d| !is_domain_name(d)) {
                out.push((
                    k,
                    format!(
                        "{domain:?} is not a domain name (write `example.com`: no scheme or `*`)"
                    ),
                ));
            }
        }
        out
    }
}

/// Whether `name` is a domain name as `[options.fetch] allowed_domains` takes it: dot-separated
/// labels of letters, digits and hyphens, no scheme, port, path or wildcard.
pub fn is_domain_name(name: &str) -> bool {
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

/// One entry of `[options.shell] network_allow`: a host a sandboxed command may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetAllowEntry {
    /// Exactly this name (lowercase, no trailing dot).
    Name(String),
    /// Every name below this one (`*.crates.io`: `static.crates.io`, not `crates.io`).
    Below(String),
    /// This address, written as an address.
    Address(std::net::IpAddr),
}

impl NetAllowEntry {
    /// Parses an entry; the error says what is wrong with it.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let text = raw.trim();
        let bare = text
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .unwrap_or(text);
        if let Ok(ip) = bare.parse::<std::net::IpAddr>() {
            return Ok(Self::Address(ip));
        }
        let (wild, name) = match text.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
        // A name whose last label is a number is read as an IPv4 address by URL parsers and
        // resolvers (`127.1`, `2130706433`): only the dotted form of an address is an entry.
        let numeric_end = name
            .rsplit('.')
            .next()
            .is_some_and(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()));
        if !is_domain_name(&name) || numeric_end {
            return Err(format!(
                "{raw:?} is not a host name, `*.` and a name, or an IP address (write \
                 `crates.io`, `*.crates.io` or `127.0.0.1`: no scheme, port or path)"
            ));
        }
        Ok(if wild {
            Self::Below(name)
        } else {
            Self::Name(name)
        })
    }
}

impl std::fmt::Display for NetAllowEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Name(n) => f.write_str(n),
            Self::Below(n) => write!(f, "*.{n}"),
            Self::Address(a) => write!(f, "{a}"),
        }
    }
}

/// `[options.checkpoints]`: the per-turn checkpoints that undo, rewind and `/diff` restore from
/// (docs/sessions.md).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointConfig {
    /// Keep checkpoints (default true).
    pub enabled: Option<bool>,
    /// The most file content one checkpoint (one turn) stores, in bytes (default 256 MiB).
    /// Files beyond it are recorded by hash and size only, and the checkpoint says it cannot
    /// restore them.
    pub max_bytes: Option<u64>,
    /// Files larger than this (default 16 MiB) are recorded by hash and size only.
    pub max_file_bytes: Option<u64>,
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
    pub sandbox: Option<pablo_protocol::SandboxProfile>,
    /// Whether `workspace-write` commands may reach the network (default false; only trusted
    /// layers may turn it on).
    pub network: Option<bool>,
    /// Hosts a sandboxed (`workspace-write`) command may reach through pablo's proxy when the
    /// network is otherwise cut: `crates.io`, `*.crates.io` (its subdomains), `127.0.0.1`
    /// (docs/shell.md, *Network allow-list*). The layers' lists are joined; a project's counts
    /// only in a trusted folder.
    #[serde(default)]
    pub network_allow: Vec<String>,
    /// More writable roots for `workspace-write` (absolute or `~/…`; only trusted layers).
    #[serde(default)]
    pub writable_roots: Vec<String>,
    /// The most workspace directories searched for the `.git` and `.pablo` that `workspace-write`
    /// keeps read-only (default 200,000; 0 means the default); in a larger workspace such commands
    /// are refused. Trusted layers set it; the project layer may only lower it.
    pub protect_max_dirs: Option<usize>,
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
