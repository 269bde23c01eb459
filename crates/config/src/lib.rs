//! Configuration: TOML layers under the XDG directories.
//!
//! Three files may exist: the user's (`$XDG_CONFIG_HOME/pablo/config.toml`), the project's
//! (`.pablo/config.toml` in the workspace) and one named with `--config`. Unknown keys and bad
//! values are errors naming the file, the line and the key, because a misspelt safety setting
//! that is silently ignored is worse than no setting. How the layers combine for policy (they only
//! narrow) is the policy module's business; scalar settings are taken from the last layer that
//! sets them.

pub mod env;
mod otel;
pub mod show;

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

pub use otel::{OtelConfig, OtelProtocol, TraceConfig};

pub mod hooks;
pub use hooks::{HookEntry, HooksConfig, OnFailure};
pub mod lsp;
pub use lsp::{LspServerConfig, LspServerEntry};

/// The fixed `PATH` of every command pablo runs, and the one command words are resolved through
/// when policy matches rules (so `git` and `/usr/bin/git` are the same command).
pub const CLEAN_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// One config file, as written. Every field is optional so layers can be merged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// `openai`, `anthropic` or `ollama`.
    pub provider: Option<String>,
    /// `model = "NAME"`, or the `[model]` table (name, window, reasoning, wire format, prices).
    pub model: Option<ModelSetting>,
    pub base_url: Option<String>,
    /// Name of the environment variable holding the key (the key itself never goes in a file).
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub limits: LimitsConfig,
    #[serde(default)]
    pub options: Options,
    #[serde(default)]
    pub tui: TuiConfig,
    /// `[mcp_servers.NAME]`: Model Context Protocol servers whose tools, prompts and resources
    /// the session offers (docs/mcp.md).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    #[serde(default)]
    pub memory: MemoryOptions,
    /// `[otel]`: OpenTelemetry export (docs/observability.md).
    #[serde(default)]
    pub otel: OtelConfig,
    /// `[trace]`: what the native trace holds.
    #[serde(default)]
    pub trace: TraceConfig,
    /// `[[hooks.EVENT]]`: the person's programs around prompts, tool calls and file changes
    /// (docs/hooks.md).
    #[serde(default, skip_serializing_if = "HooksConfig::is_empty")]
    pub hooks: HooksConfig,
    /// `[lsp.NAME]`: language servers asked about the files the model edits (docs/lsp.md).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub lsp: BTreeMap<String, LspServerConfig>,
}

mod import;
mod layers;
mod mcp;
mod model;
mod options;
mod problems;
pub mod trust;

pub use import::{ImportFrom, Imported, import_config};
pub use layers::*;
pub use mcp::*;
pub use model::*;
pub use options::*;
pub use problems::*;
pub use trust::Trust;

impl ConfigFile {
    /// Parses one file's text; `path` is only used in messages. Every problem is reported, not
    /// just the first.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        Self::parse_with(text, path, |_| {})
    }

    /// [`ConfigFile::parse`] after `prepare` has changed the parsed table (taken keys out), so
    /// that what it leaves is read with the lines of the text as written.
    fn parse_with(
        text: &str,
        path: &Path,
        prepare: impl FnOnce(&mut problems::DocTable<'_>),
    ) -> Result<Self, ConfigError> {
        match Self::validate_with(text, prepare) {
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
    pub fn validate(text: &str) -> (Option<Self>, Vec<ConfigProblem>) {
        Self::validate_with(text, |_| {})
    }

    fn validate_with(
        text: &str,
        prepare: impl FnOnce(&mut problems::DocTable<'_>),
    ) -> (Option<Self>, Vec<ConfigProblem>) {
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
        let mut doc = doc;
        prepare(doc.get_mut());
        let original = doc.clone();
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
            check_model(m, &mut out);
        }
        let shell = &self.options.shell;
        check_shell(shell, &mut out);
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
        for (k, message) in self.options.web_search.check() {
            out.push((key(&["options", "web_search", k]), message));
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

/// The problems of a `[model]` table.
fn check_model(m: &ModelTable, out: &mut Vec<(Vec<Seg>, String)>) {
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

/// The problems of `[options.shell]`: patterns that are not regular expressions, rules without
/// an id or an executable.
fn check_shell(shell: &ShellOptions, out: &mut Vec<(Vec<Seg>, String)>) {
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
    for (i, entry) in shell.network_allow.iter().enumerate() {
        if let Err(why) = NetAllowEntry::parse(entry) {
            out.push((at(&["options", "shell", "network_allow"], i), why));
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
}

/// The path of a key: `["options", "shell"]` → `options.shell`.
fn key(parts: &[&str]) -> Vec<Seg> {
    parts.iter().map(|p| Seg::Key((*p).to_string())).collect()
}

/// The path of the `i`th entry of the list at `parts`.
fn at(parts: &[&str], i: usize) -> Vec<Seg> {
    let mut p = key(parts);
    p.push(Seg::Index(i));
    p
}

#[cfg(test)]
mod tests;
