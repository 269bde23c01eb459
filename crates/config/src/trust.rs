//! Trust: whether the person trusts the workspace folder, decided once at launch and asked by
//! purpose, and what an untrusted project layer keeps.
//!
//! The project layer (`.pablo/config.toml`) and the project's agents, skills and commands travel
//! with the repository, so whoever wrote the repository wrote them. One [`Trust`] is read from the
//! person's trust store when a launch starts and handed to everything that would let the
//! repository decide something; each asks the question it has (may it run programs? name an
//! endpoint? widen policy? add instructions?) instead of reading the store again.
//!
//! An untrusted project layer keeps only the keys of [`KEPT`]: keys that narrow, keys whose
//! widening values a later check takes out, and keys nothing reads from the project layer. Every
//! other key, including one no struct knows and one added to the config after this list was
//! written, is taken out of the TOML before it is deserialized and named in the note the person
//! sees ([`ConfigFile::parse_untrusted`]): a new setting is withheld until someone decides it only
//! narrows. The value checks live with their callers (`launch::trust`, policy's layer rules).

use std::path::Path;

use super::problems::{DocTable, DocValue};
use super::{ConfigError, ConfigFile};

/// The person's decision about the workspace folder (`pablo policy trust`), read once when a
/// launch starts. The queries are by purpose; today one decision answers them all, but a caller
/// says which question it asks, so that a finer decision changes this type and not its callers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Trust {
    folder: bool,
}

impl Trust {
    /// The folder the person has not trusted (also the answer when the store cannot be read).
    pub const UNTRUSTED: Trust = Trust { folder: false };

    /// The trust store's answer for the workspace.
    pub fn decided(folder_trusted: bool) -> Self {
        Self {
            folder: folder_trusted,
        }
    }

    /// Whether the repository may start programs: the project layer's hooks, MCP servers,
    /// language server commands and status line command, and programs that run the project's
    /// own code or take their configuration from it (a language server that runs build scripts,
    /// npx with the workspace's `node_modules`).
    pub fn may_run_programs(self) -> bool {
        self.folder
    }

    /// Whether the project layer may say where requests, keys and telemetry go: the provider,
    /// `base_url`, `api_key_env`, the model, an MCP server's URL, OpenTelemetry endpoints, and
    /// hosts `web.fetch` may reach without asking.
    pub fn may_name_endpoints(self) -> bool {
        self.folder
    }

    /// Whether the project layer may grant or loosen what the person would otherwise be asked or
    /// bounded by: allow rules, `auto` tools, the launcher, environment, network, writable roots,
    /// larger budgets and lower prices.
    pub fn may_widen_policy(self) -> bool {
        self.folder
    }

    /// Whether the project's own agents, skills and slash commands (its words) reach the model.
    pub fn may_add_instructions(self) -> bool {
        self.folder
    }

    /// Whether the project layer keeps only what narrows ([`KEPT`]): it may not decide every
    /// one of the things above.
    pub fn project_only_narrows(self) -> bool {
        !(self.may_run_programs() && self.may_name_endpoints() && self.may_widen_policy())
    }

    /// The decision itself, for reports that say whether the folder is trusted (`pablo doctor`);
    /// what it permits is asked with the queries above.
    pub fn is_trusted(self) -> bool {
        self.folder
    }
}

/// Why an untrusted project layer may keep a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// Any value only narrows (a deny rule, a refused name, a smaller cap that wins).
    Narrows,
    /// The value may widen; the named check takes a widening value out and says so.
    Checked(&'static str),
    /// Nothing reads it from the project layer, or it only decides how pablo looks.
    Inert(&'static str),
}

/// Every key path an untrusted project layer keeps (`*` is any one key). Anything else is
/// withheld: a key is added here only once someone has decided that it narrows.
pub const KEPT: &[(&str, Kept)] = &[
    (
        "model.context_window",
        Kept::Inert("sizes requests to the person's model"),
    ),
    (
        "model.max_output_tokens",
        Kept::Inert("sizes answers; budgets still bound cost"),
    ),
    (
        "model.images",
        Kept::Inert("whether the person's model reads images"),
    ),
    (
        "model.reasoning",
        Kept::Checked("launch::trust: above the person's level"),
    ),
    (
        "model.prices.input",
        Kept::Checked("launch::trust: below the person's price"),
    ),
    (
        "model.prices.output",
        Kept::Checked("launch::trust: below the person's price"),
    ),
    (
        "model.prices.cache_read",
        Kept::Checked("launch::trust: below the person's price"),
    ),
    (
        "model.prices.cache_write",
        Kept::Checked("launch::trust: below the person's price"),
    ),
    ("limits.run_deadline_seconds", Kept::Checked(WIDER)),
    ("limits.max_tool_argument_bytes", Kept::Checked(WIDER)),
    ("limits.max_tool_result_bytes", Kept::Checked(WIDER)),
    ("limits.max_request_context_bytes", Kept::Checked(WIDER)),
    ("limits.max_model_output_bytes", Kept::Checked(WIDER)),
    ("limits.max_native_events", Kept::Checked(WIDER)),
    ("limits.max_model_calls", Kept::Checked(WIDER)),
    ("limits.max_tool_calls", Kept::Checked(WIDER)),
    ("limits.max_budget_usd", Kept::Checked(WIDER)),
    ("limits.stream_idle_timeout_seconds", Kept::Checked(WIDER)),
    (
        "limits.stream_progress_timeout_seconds",
        Kept::Checked(WIDER),
    ),
    ("limits.compact_at_bytes", Kept::Checked(WIDER)),
    ("limits.max_network_requests", Kept::Checked(WIDER)),
    ("limits.max_artifact_bytes", Kept::Checked(WIDER)),
    ("limits.max_parallel_subagents", Kept::Checked(WIDER)),
    ("limits.subagent_max_tool_calls", Kept::Checked(WIDER)),
    ("limits.subagent_deadline_seconds", Kept::Checked(WIDER)),
    (
        "options.shell.enabled",
        Kept::Checked("policy::layers: only `false` counts"),
    ),
    ("options.shell.timeout_seconds", Kept::Checked(WIDER)),
    ("options.shell.max_output_chars", Kept::Checked(WIDER)),
    ("options.shell.max_sessions", Kept::Checked(WIDER)),
    ("options.shell.enable_deny_patterns", Kept::Checked(VALUE)),
    ("options.shell.custom_deny_patterns", Kept::Narrows),
    (
        "options.shell.sandbox",
        Kept::Checked("policy::layers: only a stricter profile counts"),
    ),
    ("options.shell.network", Kept::Checked(VALUE)),
    (
        "options.shell.protect_max_dirs",
        Kept::Checked("policy::layers: may only lower it"),
    ),
    (
        "options.shell.known_safe_reads",
        Kept::Checked("policy::layers: only `false` counts"),
    ),
    ("options.shell.editor_terminals", Kept::Checked(VALUE)),
    ("options.shell.commands.default", Kept::Checked(VALUE)),
    ("options.shell.commands.deny", Kept::Narrows),
    ("options.shell.env.exclude", Kept::Narrows),
    ("options.tools.*", Kept::Checked(VALUE)),
    (
        "options.filesystem.enabled",
        Kept::Checked("policy::layers: only `false` counts"),
    ),
    ("options.filesystem.read_roots", Kept::Narrows),
    ("options.filesystem.write_roots", Kept::Narrows),
    ("options.filesystem.deny_roots", Kept::Narrows),
    ("options.filesystem.refused_names", Kept::Narrows),
    ("options.filesystem.max_file_bytes", Kept::Narrows),
    (
        "options.checkpoints.*",
        Kept::Inert("read from the person's layers only"),
    ),
    ("tui.alt_screen", Kept::Inert("how the screen looks")),
    (
        "tui.notifications",
        Kept::Inert("how pablo gets the person's attention"),
    ),
    (
        "tui.mode",
        Kept::Inert("read from the person's layers only; a warning says so"),
    ),
    (
        "tui.vim",
        Kept::Inert("read from the person's layers only; a warning says so"),
    ),
    (
        "mcp_servers.*.enabled",
        Kept::Checked("config::mcp: only `false` counts"),
    ),
    ("mcp_servers.*.enabled_tools", Kept::Narrows),
    ("mcp_servers.*.disabled_tools", Kept::Narrows),
    ("mcp_servers.*.tools.*", Kept::Checked(VALUE)),
    (
        "lsp.*.enabled",
        Kept::Checked("config::lsp: only `false` counts"),
    ),
    (
        "memory.enabled",
        Kept::Checked("launch: only the person's layers turn it on"),
    ),
    ("otel.enabled", Kept::Checked(VALUE)),
    ("trace.content", Kept::Checked(VALUE)),
];

const WIDER: &str = "launch::trust: wider than the person's or the default";
const VALUE: &str = "launch::trust: a value that grants (`auto`, `allow`, `true`, not `false`)";

/// What [`KEPT`] says of a key path: kept (the whole value), looked into (a table that holds
/// kept keys), or withheld.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    Keep,
    LookInto,
    Withhold,
}

fn verdict(path: &[String]) -> Verdict {
    let matches = |pattern: &[&str]| pattern.iter().zip(path).all(|(p, k)| *p == "*" || p == k);
    let mut out = Verdict::Withhold;
    for (pattern, _) in KEPT {
        let pattern: Vec<&str> = pattern.split('.').collect();
        if pattern.len() == path.len() && matches(&pattern) {
            return Verdict::Keep;
        }
        if pattern.len() > path.len() && matches(&pattern[..path.len()]) {
            out = Verdict::LookInto;
        }
    }
    out
}

/// One value taken out of an untrusted project layer, by key path.
struct Withheld<'i> {
    path: Vec<String>,
    value: DocValue<'i>,
}

/// Takes out of `table` every key [`KEPT`] does not keep, appending each with its path.
fn withhold<'i>(table: &mut DocTable<'i>, path: &mut Vec<String>, out: &mut Vec<Withheld<'i>>) {
    let keys: Vec<_> = table.keys().cloned().collect();
    for key in keys {
        path.push(key.get_ref().to_string());
        match verdict(path) {
            Verdict::Keep => {}
            Verdict::LookInto => {
                if let Some(v) = table.get_mut(key.get_ref().as_ref())
                    && let DocValue::Table(inner) = v.get_mut()
                {
                    withhold(inner, path, out);
                } else if let Some(v) = table.remove(key.get_ref().as_ref()) {
                    out.push(Withheld {
                        path: path.clone(),
                        value: v.into_inner(),
                    });
                }
            }
            Verdict::Withhold => {
                if let Some(v) = table.remove(key.get_ref().as_ref()) {
                    out.push(Withheld {
                        path: path.clone(),
                        value: v.into_inner(),
                    });
                }
            }
        }
        path.pop();
    }
}

impl ConfigFile {
    /// Parses the project layer of a folder the person has not trusted: every key [`KEPT`] does
    /// not keep is taken out before the text is deserialized (so an unknown key is withheld, not
    /// an error), and each is described for the person, endpoints and programs with their values.
    pub fn parse_untrusted(text: &str, path: &Path) -> Result<(Self, Vec<String>), ConfigError> {
        let mut described = Vec::new();
        let parsed = Self::parse_with(text, path, |doc| {
            let mut withheld = Vec::new();
            withhold(doc, &mut Vec::new(), &mut withheld);
            described = describe(&withheld);
        })?;
        Ok((parsed, described))
    }

    /// [`ConfigFile::parse_untrusted`] of the file at `path`.
    pub fn load_untrusted(path: &Path) -> Result<(Self, Vec<String>), ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Self::parse_untrusted(&text, path)
    }
}

/// The person-readable line of each withheld value, in key order: what decides where requests
/// and the key go, and what starts a program, with its value; anything else by its key path.
fn describe(withheld: &[Withheld<'_>]) -> Vec<String> {
    let mut out = Vec::new();
    let mut otel_said = false;
    for w in withheld {
        let path: Vec<&str> = w.path.iter().map(String::as_str).collect();
        let v = &w.value;
        let line = match path.as_slice() {
            ["provider"] => format!("provider = {}", shown(v)),
            ["base_url"] => format!("base_url = {} (where requests and the key go)", shown(v)),
            ["api_key_env"] => format!("api_key_env = {} (which secret is sent)", shown(v)),
            ["model"] | ["model", "name"] => format!("model = {}", shown(v)),
            ["model", "wire_api"] => format!("model.wire_api = {}", shown(v)),
            ["mcp_servers" | "lsp", name, "command"] => {
                let args = withheld
                    .iter()
                    .find(|a| {
                        a.path.len() == 3 && a.path[..2] == w.path[..2] && a.path[2] == "args"
                    })
                    .map(|a| &a.value);
                starts(path[0], name, v, args)
            }
            ["mcp_servers" | "lsp", _, "args"]
                if withheld.iter().any(|c| {
                    c.path.len() == 3 && c.path[..2] == w.path[..2] && c.path[2] == "command"
                }) =>
            {
                continue;
            }
            ["mcp_servers", name, "url"] => format!("mcp_servers.{name} (connects to {})", text(v)),
            ["options", "shell", "network_allow"] => format!(
                "options.shell.network_allow ({}: hosts sandboxed commands may reach)",
                list(v)
            ),
            ["options", "web_search", "enabled"] => {
                format!("options.web_search.enabled = {}", shown(v))
            }
            ["options", "web_search", "allowed_domains"] => {
                format!("options.web_search.allowed_domains ({})", list(v))
            }
            ["hooks"] => {
                if let DocValue::Table(t) = v {
                    for (event, entries) in t.iter() {
                        describe_hooks(event.get_ref(), entries.get_ref(), &mut out);
                    }
                }
                continue;
            }
            ["hooks", event] => {
                describe_hooks(event, v, &mut out);
                continue;
            }
            ["tui", "statusline_command"] => format!(
                "tui.statusline_command (runs the program `{}` for the status line)",
                text(v)
            ),
            ["options", "shell", "launcher"] => {
                format!("options.shell.launcher = {} (runs every command)", shown(v))
            }
            ["options", "shell", "commands", "allow"] => {
                format!("options.shell.commands.allow ({})", rule_ids(v))
            }
            ["options", "shell", "env", "inherit" | "set"] => {
                let line = "options.shell.env inherit/set (passes more of your environment)";
                if out.iter().any(|l| l == line) {
                    continue;
                }
                line.to_string()
            }
            ["options", "fetch", "allowed_domains"] => {
                format!("options.fetch.allowed_domains ({})", list(v))
            }
            ["otel", ..] => {
                if otel_said {
                    continue;
                }
                otel_said = true;
                otel_line(withheld)
            }
            // A table withheld whole: each of its values as if withheld alone, so the lines
            // above that name a value (network_allow's hosts, search turned on) still apply.
            _ if matches!(v, DocValue::Table(t) if !t.is_empty()) => {
                out.extend(describe(&leaf_items(&w.path, v)));
                continue;
            }
            _ => dotted(&w.path),
        };
        out.push(line);
    }
    out
}

fn starts(kind: &str, name: &str, command: &DocValue<'_>, args: Option<&DocValue<'_>>) -> String {
    let mut line = vec![text(command)];
    if let Some(DocValue::Array(a)) = args {
        line.extend(a.iter().map(|x| text(x.get_ref())));
    }
    format!("{kind}.{name} (starts the program `{}`)", line.join(" "))
}

/// The entries of a withheld `[[hooks.EVENT]]` list, each with the program it runs.
fn describe_hooks(event: &str, entries: &DocValue<'_>, out: &mut Vec<String>) {
    let DocValue::Array(entries) = entries else {
        out.push(format!("hooks.{event}"));
        return;
    };
    for e in entries.iter() {
        let DocValue::Table(t) = e.get_ref() else {
            continue;
        };
        let field = |k: &str| t.get(k).map(|v| text(v.get_ref()));
        let command = field("command").unwrap_or_default();
        let name = field("name")
            .filter(|n| !n.trim().is_empty())
            .map(|n| n.trim().to_string())
            .unwrap_or_else(|| {
                let first: String = command.chars().take(40).collect();
                if first.len() < command.len() {
                    format!("{first}…")
                } else {
                    first
                }
            });
        out.push(format!(
            "hooks.{event} {name} (runs the program `{command}`)"
        ));
    }
}

/// `otel`, with where it would send telemetry when an endpoint is among the withheld keys.
fn otel_line(withheld: &[Withheld<'_>]) -> String {
    let mut endpoints = Vec::new();
    for w in withheld.iter().filter(|w| w.path[0] == "otel") {
        match (w.path.get(1).map(String::as_str), &w.value) {
            (Some(k), v) if k.ends_with("endpoint") => endpoints.push(text(v)),
            (None, DocValue::Table(t)) => {
                for k in ["endpoint", "traces_endpoint", "metrics_endpoint"] {
                    if let Some(v) = t.get(k) {
                        endpoints.push(text(v.get_ref()));
                    }
                }
            }
            _ => {}
        }
    }
    match endpoints.first() {
        Some(u) => format!("otel (sends telemetry to {u})"),
        None => "otel".to_string(),
    }
}

/// The key paths of the scalars and lists under a withheld value (a table is looked into).
fn leaf_items<'i>(path: &[String], value: &DocValue<'i>) -> Vec<Withheld<'i>> {
    match value {
        DocValue::Table(t) if !t.is_empty() => t
            .iter()
            .flat_map(|(k, v)| {
                let mut p = path.to_vec();
                p.push(k.get_ref().to_string());
                leaf_items(&p, v.get_ref())
            })
            .collect(),
        _ => vec![Withheld {
            path: path.to_vec(),
            value: value.clone(),
        }],
    }
}

fn dotted(path: &[String]) -> String {
    path.iter()
        .map(|k| super::key_segment(k))
        .collect::<Vec<_>>()
        .join(".")
}

/// A string's text; any other value as TOML writes it.
fn text(v: &DocValue<'_>) -> String {
    match v {
        DocValue::String(s) => s.to_string(),
        other => shown(other),
    }
}

/// A value as the person wrote it: a string quoted.
fn shown(v: &DocValue<'_>) -> String {
    match v {
        DocValue::String(s) => format!("{:?}", s.as_ref()),
        DocValue::Integer(i) => i.as_str().to_string(),
        DocValue::Float(f) => f.as_str().to_string(),
        DocValue::Boolean(b) => b.to_string(),
        DocValue::Datetime(d) => d.to_string(),
        DocValue::Array(_) => format!("[{}]", list(v)),
        DocValue::Table(_) => "{…}".to_string(),
    }
}

fn list(v: &DocValue<'_>) -> String {
    match v {
        DocValue::Array(a) => a
            .iter()
            .map(|x| text(x.get_ref()))
            .collect::<Vec<_>>()
            .join(", "),
        other => text(other),
    }
}

/// The ids of a withheld list of command rules.
fn rule_ids(v: &DocValue<'_>) -> String {
    match v {
        DocValue::Array(a) => a
            .iter()
            .filter_map(|r| match r.get_ref() {
                DocValue::Table(t) => t.get("id").map(|id| text(id.get_ref())),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(", "),
        other => text(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    use serde::Deserialize;
    use serde::de::value::{Error, StrDeserializer};
    use serde::de::{self, IntoDeserializer, Visitor};

    /// Walks a type's `Deserialize` the way serde describes it (a struct names all its fields), so
    /// that every key path a config can hold is found, a field added later included: a map's
    /// keys are `*`, a list and a scalar end a path.
    struct Tracer<'a> {
        path: Vec<String>,
        found: &'a RefCell<Vec<Vec<String>>>,
    }

    impl<'a> Tracer<'a> {
        fn at(&self, key: &str) -> Self {
            let mut path = self.path.clone();
            path.push(key.to_string());
            Tracer {
                path,
                found: self.found,
            }
        }
        fn leaf(&self) {
            self.found.borrow_mut().push(self.path.clone());
        }
    }

    /// The fields of a struct (or the one `*` key of a map), each traced further.
    struct Entries<'a> {
        parent: Tracer<'a>,
        keys: Vec<&'static str>,
        next: usize,
    }

    impl<'de, 'a> de::MapAccess<'de> for Entries<'a> {
        type Error = Error;
        fn next_key_seed<K: de::DeserializeSeed<'de>>(
            &mut self,
            seed: K,
        ) -> Result<Option<K::Value>, Error> {
            let Some(key) = self.keys.get(self.next) else {
                return Ok(None);
            };
            let d: StrDeserializer<'_, Error> = key.into_deserializer();
            seed.deserialize(d).map(Some)
        }
        fn next_value_seed<V: de::DeserializeSeed<'de>>(
            &mut self,
            seed: V,
        ) -> Result<V::Value, Error> {
            let key = self.keys[self.next];
            self.next += 1;
            seed.deserialize(self.parent.at(key))
        }
    }

    impl<'de, 'a> de::Deserializer<'de> for Tracer<'a> {
        type Error = Error;
        fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            self.leaf();
            v.visit_str("x")
        }
        fn deserialize_bool<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            self.leaf();
            v.visit_bool(true)
        }
        fn deserialize_u64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            self.leaf();
            v.visit_u64(1)
        }
        fn deserialize_i64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            self.leaf();
            v.visit_i64(1)
        }
        fn deserialize_f64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            self.leaf();
            v.visit_f64(1.0)
        }
        fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            v.visit_some(self)
        }
        fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            self.leaf();
            v.visit_seq(de::value::SeqDeserializer::new(std::iter::empty::<u8>()))
        }
        fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            v.visit_map(Entries {
                parent: self,
                keys: vec!["*"],
                next: 0,
            })
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            v: V,
        ) -> Result<V::Value, Error> {
            v.visit_map(Entries {
                parent: self,
                keys: fields.to_vec(),
                next: 0,
            })
        }
        fn deserialize_enum<V: Visitor<'de>>(
            self,
            _: &'static str,
            variants: &'static [&'static str],
            v: V,
        ) -> Result<V::Value, Error> {
            self.leaf();
            let d: StrDeserializer<'_, Error> = variants[0].into_deserializer();
            v.visit_enum(d)
        }
        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            v: V,
        ) -> Result<V::Value, Error> {
            v.visit_newtype_struct(self)
        }
        serde::forward_to_deserialize_any! {
            i8 i16 i32 i128 u128 char str string bytes byte_buf unit unit_struct
            tuple tuple_struct identifier ignored_any
        }
        fn deserialize_u8<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            self.deserialize_u64(v)
        }
        fn deserialize_u16<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            self.deserialize_u64(v)
        }
        fn deserialize_u32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            self.deserialize_u64(v)
        }
        fn deserialize_f32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            self.deserialize_f64(v)
        }
    }

    /// Every key path a project config can hold (`*` for a name the person chooses).
    fn every_key() -> Vec<Vec<String>> {
        let found = RefCell::new(Vec::new());
        let root = Tracer {
            path: Vec::new(),
            found: &found,
        };
        ConfigFile::deserialize(root.at("")).unwrap();
        // `model` is a name or a table, read by hand: its table's keys are traced on their own.
        super::super::ModelTable::deserialize(root.at("model")).unwrap();
        let mut keys: Vec<Vec<String>> = found
            .into_inner()
            .into_iter()
            .map(|p| p.into_iter().filter(|k| !k.is_empty()).collect())
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }

    /// A project config that sets only the key at `path` (a chosen name is `name`).
    fn setting(path: &[String]) -> String {
        let keys: Vec<String> = path
            .iter()
            .map(|k| {
                if k == "*" {
                    "name".to_string()
                } else {
                    k.clone()
                }
            })
            .collect();
        format!("{} = \"v\"\n", keys.join("."))
    }

    #[test]
    fn every_key_a_project_config_can_hold_is_kept_as_narrowing_or_withheld_and_named() {
        let keys = every_key();
        assert!(keys.len() > 100, "the trace found too few keys: {keys:?}");
        let mut withheld_keys = Vec::new();
        for path in &keys {
            let text = setting(path);
            let mut doc = DocTable::parse(&text).unwrap().into_inner();
            let mut withheld = Vec::new();
            withhold(&mut doc, &mut Vec::new(), &mut withheld);
            if verdict(path) == Verdict::Keep {
                assert!(
                    withheld.is_empty(),
                    "{text}: kept by the list, yet withheld"
                );
            } else {
                assert_eq!(withheld.len(), 1, "{text}: neither kept nor withheld");
                let said = describe(&withheld);
                assert!(!said.is_empty(), "{text}: withheld but not named");
                withheld_keys.push(dotted(path));
            }
        }
        // What lets a repository choose an endpoint, a secret or a program is among the withheld.
        for key in [
            "provider",
            "base_url",
            "api_key_env",
            "model",
            "model.name",
            "model.wire_api",
            "mcp_servers.*.command",
            "mcp_servers.*.url",
            "mcp_servers.*.env.*",
            "mcp_servers.*.required",
            "lsp.*.command",
            "lsp.*.args",
            "hooks.pre_tool_use",
            "hooks.session_start",
            "tui.statusline_command",
            "options.shell.launcher",
            "options.shell.commands.allow",
            "options.shell.custom_allow_patterns",
            "options.shell.env.inherit",
            "options.shell.env.set.*",
            "options.shell.writable_roots",
            "options.fetch.allowed_domains",
            "otel.endpoint",
            "otel.headers.*",
        ] {
            let key = key.replace('*', "\"*\"");
            assert!(withheld_keys.contains(&key), "{key} is not withheld");
        }
        // And the list names no key a config cannot hold.
        for (pattern, _) in KEPT {
            let pattern: Vec<&str> = pattern.split('.').collect();
            assert!(
                keys.iter().any(|k| k.len() == pattern.len()
                    && k.iter().zip(&pattern).all(|(k, p)| *p == "*" || k == p)),
                "{pattern:?} is kept but no config holds it"
            );
        }
    }

    #[test]
    fn an_untrusted_project_withholds_and_names_a_key_nobody_listed() {
        let text = "[formatter]\ncommand = \"touch pwned\"\n\n[options.shell]\n\
                    custom_deny_patterns = [\"terraform\"]\n";
        let (file, said) = ConfigFile::parse_untrusted(text, Path::new("p.toml")).unwrap();
        assert_eq!(said, ["formatter.command"]);
        assert_eq!(file.options.shell.custom_deny_patterns, ["terraform"]);
        // A trusted layer still refuses the key: nothing silently ignores a misspelt setting.
        assert!(ConfigFile::parse(text, Path::new("p.toml")).is_err());
    }

    #[test]
    fn a_withheld_program_or_endpoint_is_named_with_its_value() {
        let text = r#"
base_url = "http://e/v1"
[mcp_servers.evil]
command = "curl"
args = ["http://x"]
env = { TOKEN = "t" }
[mcp_servers.far]
url = "http://far/mcp"
[lsp.mine]
command = "./ls"
args = ["--stdio"]
filetypes = ["rs"]
enabled = false
[[hooks.pre_tool_use]]
command = "./guard.sh"
[otel]
enabled = false
endpoint = "http://collector"
protocol = "grpc"
"#;
        let (file, said) = ConfigFile::parse_untrusted(text, Path::new("p.toml")).unwrap();
        assert_eq!(
            said,
            [
                "base_url = \"http://e/v1\" (where requests and the key go)",
                "hooks.pre_tool_use ./guard.sh (runs the program `./guard.sh`)",
                "lsp.mine (starts the program `./ls --stdio`)",
                "lsp.mine.filetypes",
                "mcp_servers.evil (starts the program `curl http://x`)",
                "mcp_servers.evil.env.TOKEN",
                "mcp_servers.far (connects to http://far/mcp)",
                "otel (sends telemetry to http://collector)",
            ]
        );
        assert_eq!(file.lsp["mine"].enabled, Some(false));
        assert_eq!(file.otel.enabled, Some(false));
        assert!(file.otel.endpoint.is_none() && file.mcp_servers["evil"].env.is_empty());
    }

    #[test]
    fn the_queries_follow_the_one_decision() {
        let yes = Trust::decided(true);
        assert!(yes.may_run_programs() && yes.may_name_endpoints());
        assert!(yes.may_widen_policy() && yes.may_add_instructions());
        assert!(!yes.project_only_narrows());
        let no = Trust::UNTRUSTED;
        assert!(!no.may_run_programs() && !no.may_name_endpoints());
        assert!(!no.may_widen_policy() && !no.may_add_instructions());
        assert!(no.project_only_narrows());
    }
}
