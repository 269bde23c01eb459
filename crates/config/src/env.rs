//! The person's own layer over the config files: `PABLO_`-prefixed environment variables and
//! `-c key=value` on the command line (Codex's convention).
//!
//! Every key a config file takes has a variable: its dotted path in capitals with `_` for `.`
//! and `-` (`options.shell.timeout_seconds` is `PABLO_OPTIONS_SHELL_TIMEOUT_SECONDS`). The list is
//! read off the config types themselves ([`keys`]), so a key added to a file is a variable at
//! once. Tables whose keys are names (`options.tools`, `mcp_servers`) are set whole, as an inline
//! TOML table. A value is read as TOML (`30`, `true`, `["a"]`, `{ "fs.write" = "ask" }`) and,
//! when it is not TOML or not of the key's type, as a plain string (`gpt-5`). Each setting is
//! checked like a file's, and a refusal names the variable or the `-c` that made it.
//!
//! Both sources are the person's (trusted, like their own config file): they sit above the files
//! and below the command-line flags. Variables pablo read before this layer existed keep their
//! meaning and are not config keys ([`NOT_CONFIG`]); any other `PABLO_` variable is unknown and
//! said once.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Deserialize;
use serde::de::{self, Visitor};

use super::{ConfigError, ConfigFile, ModelTable};

/// The prefix of every config variable.
pub const PREFIX: &str = "PABLO_";

/// `PABLO_` variables that are not config keys: they had their meaning first.
pub const NOT_CONFIG: &[&str] = &[
    "PABLO_LOG",
    "PABLO_LOG_FILE",
    "PABLO_LOG_CONTENT",
    "PABLO_FETCH_ALLOWED_PORTS",
];

/// Prefixes of `PABLO_` variables that are not config keys (commands' own variables).
const NOT_CONFIG_PREFIXES: &[&str] = &["PABLO_TASK_"];

/// What kind of value a key holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// A single value (a number, a string, a boolean, a choice).
    Value,
    /// A list, set whole.
    List,
    /// A table of named entries (`options.tools`), set whole.
    Map,
    /// A table of fixed keys: set through its keys, each its own variable.
    Table,
}

/// One config key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// Dotted (`options.shell.timeout_seconds`).
    pub path: String,
    pub kind: KeyKind,
}

impl Key {
    /// The variable that sets it, unless it is a table of fixed keys.
    pub fn variable(&self) -> Option<String> {
        (self.kind != KeyKind::Table).then(|| variable_of(&self.path))
    }
}

fn variable_of(path: &str) -> String {
    format!(
        "{PREFIX}{}",
        path.to_ascii_uppercase().replace(['.', '-'], "_")
    )
}

/// Every key a config file takes, in the order the types declare them.
pub fn keys() -> &'static [Key] {
    static KEYS: OnceLock<Vec<Key>> = OnceLock::new();
    KEYS.get_or_init(|| {
        let found = RefCell::new(Vec::new());
        // A probe that fails part-way still leaves every key it reached.
        let _ = ConfigFile::deserialize(Probe::new(String::new(), &found));
        // `model` is a name or a table; the table's keys are listed under it.
        let _ = ModelTable::deserialize(Probe::new("model".into(), &found));
        let mut keys: Vec<Key> = Vec::new();
        for (path, kind) in found.into_inner() {
            if !path.is_empty() && !keys.iter().any(|k| k.path == path && k.kind == kind) {
                keys.push(Key { path, kind });
            }
        }
        keys
    })
}

/// One setting of this layer: the key, the text given, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The key as written: a dotted path (`-c` may quote a segment: `options.tools."fs.write"`).
    pub key: String,
    pub value: String,
    /// `PABLO_OPTIONS_SHELL_TIMEOUT_SECONDS` or `-c options.shell.timeout_seconds=30`.
    pub origin: String,
}

/// The settings of `PABLO_` variables among `vars` (sorted by name), and the names of those that
/// are no config key.
pub fn from_vars(vars: impl IntoIterator<Item = (String, String)>) -> (Vec<Setting>, Vec<String>) {
    let by_variable: BTreeMap<String, &Key> = keys()
        .iter()
        .filter_map(|k| k.variable().map(|v| (v, k)))
        .collect();
    let mut settings = Vec::new();
    let mut unknown = Vec::new();
    let mut vars: Vec<(String, String)> = vars
        .into_iter()
        .filter(|(name, _)| name.starts_with(PREFIX))
        .filter(|(name, _)| {
            !NOT_CONFIG.contains(&name.as_str())
                && !NOT_CONFIG_PREFIXES.iter().any(|p| name.starts_with(p))
        })
        .collect();
    vars.sort();
    for (name, value) in vars {
        match by_variable.get(&name) {
            Some(key) => settings.push(Setting {
                key: key.path.clone(),
                value,
                origin: name,
            }),
            None => unknown.push(name),
        }
    }
    (settings, unknown)
}

/// The `PABLO_` variables of this process, with the values of those moved out of the environment
/// block at start (`core::secrets`); empty ones count as unset.
pub fn process_vars() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .filter(|name| name.starts_with(PREFIX))
        .filter_map(|name| pablo_core::secrets::var(&name).map(|v| (name, v)))
        .collect()
}

/// The settings of `-c key=value` arguments, in order.
pub fn from_args(args: &[String]) -> Result<Vec<Setting>, ConfigError> {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for arg in args {
        match arg.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() && !key.contains('\n') => {
                out.push(Setting {
                    key: key.trim().to_string(),
                    value: value.to_string(),
                    origin: format!("-c {arg}"),
                });
            }
            _ => problems.push(format!(
                "-c {arg}: expected key=value (for example -c options.shell.timeout_seconds=30)"
            )),
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(ConfigError::Overrides { problems })
    }
}

/// Whether the unknown variables were said already (they are said once per process).
static WARNED: AtomicBool = AtomicBool::new(false);

/// The note about `unknown` variables, the first time only.
pub fn unknown_note(unknown: &[String]) -> Option<String> {
    if unknown.is_empty() || WARNED.swap(true, Ordering::Relaxed) {
        return None;
    }
    Some(format!(
        "ignored {}: no config key has {} (each key's variable is its path in capitals, \
         `options.shell.timeout_seconds` is PABLO_OPTIONS_SHELL_TIMEOUT_SECONDS; `pablo config \
         keys` lists them)",
        unknown.join(", "),
        if unknown.len() == 1 {
            "that name"
        } else {
            "these names"
        }
    ))
}

/// The layer made of `settings`: `None` when there are none; every setting checked like a
/// config file's, a refusal naming where it came from. Also returns, per top-level key path of
/// each setting, its origin (for `pablo config show --origin`).
#[allow(clippy::type_complexity)]
pub fn layer(
    settings: &[Setting],
) -> Result<Option<(ConfigFile, BTreeMap<String, String>)>, ConfigError> {
    if settings.is_empty() {
        return Ok(None);
    }
    let mut merged = toml::Table::new();
    let mut origins = BTreeMap::new();
    let mut problems = Vec::new();
    for s in settings {
        match one(s) {
            Ok((table, path)) => {
                if let Err(other) = merge(&mut merged, table, &mut Vec::new()) {
                    problems.push(format!(
                        "{}: {path} conflicts with {other} set before it",
                        s.origin
                    ));
                }
                origins.insert(path, s.origin.clone());
            }
            Err(p) => problems.extend(p),
        }
    }
    if !problems.is_empty() {
        return Err(ConfigError::Overrides { problems });
    }
    let text = toml::to_string(&merged).map_err(|e| ConfigError::Overrides {
        problems: vec![format!("the settings cannot be combined: {e}")],
    })?;
    match ConfigFile::validate(&text) {
        (Some(c), p) if p.is_empty() => Ok(Some((c, origins))),
        (_, p) => Err(ConfigError::Overrides {
            problems: p
                .into_iter()
                .map(|p| {
                    let key = p.key.unwrap_or_default();
                    let from = origins
                        .iter()
                        .filter(|(path, _)| {
                            key.starts_with(path.as_str()) || path.starts_with(&key)
                        })
                        .map(|(_, o)| o.as_str())
                        .collect::<Vec<_>>();
                    let from = if from.is_empty() {
                        "the PABLO_ variables and -c settings".to_string()
                    } else {
                        from.join(", ")
                    };
                    format!("{from}: {key}: {}", p.message)
                })
                .collect(),
        }),
    }
}

/// One setting as a TOML table and its key path, checked alone: read as TOML, or as a string
/// when that is what makes it valid.
fn one(s: &Setting) -> Result<(toml::Table, String), Vec<String>> {
    let typed = format!("{} = {}\n", s.key, s.value.trim());
    let string = format!("{} = {}\n", s.key, toml::Value::String(s.value.clone()));
    let mut first_problems = None;
    for text in [typed, string] {
        let Ok(table) = toml::from_str::<toml::Table>(&text) else {
            continue;
        };
        let path = dotted(&table);
        let (_, problems) = ConfigFile::validate(&text);
        if problems.is_empty() {
            return Ok((table, path));
        }
        first_problems.get_or_insert_with(|| {
            problems
                .into_iter()
                .map(|p| match p.key {
                    Some(k) => format!("{}: {k}: {}", s.origin, p.message),
                    None => format!("{}: {}", s.origin, p.message),
                })
                .collect::<Vec<_>>()
        });
    }
    Err(first_problems.unwrap_or_else(|| {
        vec![format!(
            "{}: {:?} is not a key (write a dotted path such as options.shell.timeout_seconds)",
            s.origin, s.key
        )]
    }))
}

/// The dotted path of the single value of a one-setting table.
fn dotted(table: &toml::Table) -> String {
    let mut parts = Vec::new();
    let mut cur = table;
    while cur.len() == 1 {
        let Some((k, v)) = cur.iter().next() else {
            break;
        };
        parts.push(super::key_segment(k));
        match v {
            toml::Value::Table(t) if t.len() == 1 => cur = t,
            _ => break,
        }
    }
    parts.join(".")
}

/// Lays `over` onto `base`: tables merge key by key, anything else replaces. A value laid where a
/// table of other settings is (or the other way round) is a conflict: `Err` names the path.
fn merge(base: &mut toml::Table, over: toml::Table, at: &mut Vec<String>) -> Result<(), String> {
    for (k, v) in over {
        at.push(super::key_segment(&k));
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o, at)?,
            (Some(toml::Value::Table(_)), _) | (Some(_), toml::Value::Table(_)) => {
                return Err(at.join("."));
            }
            (_, v) => {
                base.insert(k, v);
            }
        }
        at.pop();
    }
    Ok(())
}

/// Walks a config type through serde, recording each key and the kind of value it holds.
struct Probe<'a> {
    path: String,
    found: &'a RefCell<Vec<(String, KeyKind)>>,
}

impl<'a> Probe<'a> {
    fn new(path: String, found: &'a RefCell<Vec<(String, KeyKind)>>) -> Self {
        Self { path, found }
    }

    fn note(&self, kind: KeyKind) {
        self.found.borrow_mut().push((self.path.clone(), kind));
    }
}

/// Why a probe stopped (a type that wants something the probe cannot make up).
#[derive(Debug)]
struct ProbeError(String);

impl std::fmt::Display for ProbeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProbeError {}

impl de::Error for ProbeError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Self(msg.to_string())
    }
}

macro_rules! probe_scalar {
    ($($method:ident => $visit:ident($($value:expr)?)),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
            self.note(KeyKind::Value);
            visitor.$visit($($value)?)
        })*
    };
}

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = ProbeError;

    probe_scalar!(
        deserialize_any => visit_str(""),
        deserialize_bool => visit_bool(false),
        deserialize_i8 => visit_i64(0),
        deserialize_i16 => visit_i64(0),
        deserialize_i32 => visit_i64(0),
        deserialize_i64 => visit_i64(0),
        deserialize_u8 => visit_u64(0),
        deserialize_u16 => visit_u64(0),
        deserialize_u32 => visit_u64(0),
        deserialize_u64 => visit_u64(0),
        deserialize_f32 => visit_f64(0.0),
        deserialize_f64 => visit_f64(0.0),
        deserialize_char => visit_char('a'),
        deserialize_str => visit_str(""),
        deserialize_string => visit_str(""),
        deserialize_bytes => visit_bytes(&[]),
        deserialize_byte_buf => visit_bytes(&[]),
        deserialize_unit => visit_unit(),
        deserialize_identifier => visit_str(""),
        deserialize_ignored_any => visit_unit(),
    );

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        visitor.visit_some(self)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        self.note(KeyKind::Value);
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.note(KeyKind::List);
        visitor.visit_seq(
            de::value::SeqDeserializer::<std::iter::Empty<()>, ProbeError>::new(std::iter::empty()),
        )
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.note(KeyKind::Map);
        visitor.visit_map(de::value::MapDeserializer::<
            std::iter::Empty<((), ())>,
            ProbeError,
        >::new(std::iter::empty()))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        if !self.path.is_empty() {
            self.note(KeyKind::Table);
        }
        visitor.visit_map(Fields {
            fields,
            next: 0,
            path: self.path,
            found: self.found,
        })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        self.note(KeyKind::Value);
        let first = variants.first().copied().unwrap_or_default();
        visitor.visit_enum(de::value::StrDeserializer::<ProbeError>::new(first))
    }
}

/// A struct's fields, each with a probe for its value.
struct Fields<'a> {
    fields: &'static [&'static str],
    next: usize,
    path: String,
    found: &'a RefCell<Vec<(String, KeyKind)>>,
}

impl<'de> de::MapAccess<'de> for Fields<'_> {
    type Error = ProbeError;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ProbeError> {
        let Some(field) = self.fields.get(self.next) else {
            return Ok(None);
        };
        seed.deserialize(de::value::StrDeserializer::<ProbeError>::new(field))
            .map(Some)
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, ProbeError> {
        let field = self.fields.get(self.next).copied().unwrap_or_default();
        self.next += 1;
        let path = if self.path.is_empty() {
            field.to_string()
        } else {
            format!("{}.{field}", self.path)
        };
        seed.deserialize(Probe::new(path, self.found))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(path: &str) -> Option<&'static Key> {
        keys().iter().find(|k| k.path == path)
    }

    #[test]
    fn the_keys_are_read_off_the_config_types() {
        assert_eq!(key("provider").unwrap().kind, KeyKind::Value);
        assert_eq!(
            key("options.shell.timeout_seconds").unwrap().kind,
            KeyKind::Value
        );
        assert_eq!(
            key("options.shell.commands.allow").unwrap().kind,
            KeyKind::List
        );
        assert_eq!(key("options.tools").unwrap().kind, KeyKind::Map);
        assert_eq!(key("mcp_servers").unwrap().kind, KeyKind::Map);
        assert_eq!(key("options.shell").unwrap().kind, KeyKind::Table);
        assert_eq!(key("model.prices.input").unwrap().kind, KeyKind::Value);
        assert_eq!(key("otel.endpoint").unwrap().kind, KeyKind::Value);
        assert_eq!(
            key("options.shell.timeout_seconds")
                .unwrap()
                .variable()
                .unwrap(),
            "PABLO_OPTIONS_SHELL_TIMEOUT_SECONDS"
        );
        assert!(key("options.shell").unwrap().variable().is_none());
    }

    #[test]
    fn every_variable_names_exactly_one_key_and_none_is_taken_already() {
        let mut seen = BTreeMap::new();
        for k in keys() {
            if let Some(v) = k.variable() {
                assert!(!NOT_CONFIG.contains(&v.as_str()), "{v} is taken");
                if let Some(other) = seen.insert(v.clone(), k.path.clone()) {
                    panic!("{v} names both {other} and {}", k.path);
                }
            }
        }
        assert!(seen.len() > 40, "{seen:?}");
    }

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn variables_become_a_layer_with_typed_values_and_plain_strings() {
        let (settings, unknown) = from_vars(vars(&[
            ("PABLO_OPTIONS_SHELL_TIMEOUT_SECONDS", "30"),
            ("PABLO_MODEL_NAME", "gpt-5"),
            ("PABLO_OPTIONS_TOOLS", "{ \"fs.write\" = \"deny\" }"),
            ("PABLO_LOG", "debug"),
            ("PABLO_TASK_X", "y"),
            ("PABLO_TIMEOUT", "5"),
            ("HOME", "/root"),
        ]));
        assert_eq!(unknown, ["PABLO_TIMEOUT"]);
        let (c, origins) = layer(&settings).unwrap().unwrap();
        assert_eq!(c.options.shell.timeout_seconds, Some(30));
        assert_eq!(c.model.unwrap().table().name.as_deref(), Some("gpt-5"));
        assert_eq!(
            c.options.tools.get("fs.write"),
            Some(&pablo_core::ToolMode::Deny)
        );
        assert_eq!(
            origins["options.shell.timeout_seconds"],
            "PABLO_OPTIONS_SHELL_TIMEOUT_SECONDS"
        );
    }

    #[test]
    fn a_bad_value_is_refused_naming_the_variable_and_the_key() {
        let (settings, _) = from_vars(vars(&[("PABLO_OPTIONS_SHELL_TIMEOUT_SECONDS", "soon")]));
        let e = layer(&settings).unwrap_err().to_string();
        assert!(
            e.starts_with("PABLO_OPTIONS_SHELL_TIMEOUT_SECONDS: "),
            "{e}"
        );
        assert!(e.contains("options.shell.timeout_seconds"), "{e}");
        let (settings, _) = from_vars(vars(&[("PABLO_PROVIDER", "gemini")]));
        let e = layer(&settings).unwrap_err().to_string();
        assert!(e.contains("unknown provider \"gemini\""), "{e}");
    }

    #[test]
    fn dash_c_takes_dotted_and_quoted_keys_and_refuses_what_is_not_a_key() {
        let settings = from_args(&[
            "options.tools.\"fs.edit\"=ask".to_string(),
            "limits.max_tool_calls=3".to_string(),
        ])
        .unwrap();
        let (c, origins) = layer(&settings).unwrap().unwrap();
        assert_eq!(
            c.options.tools.get("fs.edit"),
            Some(&pablo_core::ToolMode::Ask)
        );
        assert_eq!(c.limits.max_tool_calls, Some(3));
        assert!(
            origins.contains_key("options.tools.\"fs.edit\""),
            "{origins:?}"
        );
        let e = from_args(&["novalue".to_string()]).unwrap_err().to_string();
        assert!(e.contains("-c novalue: expected key=value"), "{e}");
        let settings = from_args(&["options.shell.timout=3".to_string()]).unwrap();
        let e = layer(&settings).unwrap_err().to_string();
        assert!(e.contains("-c options.shell.timout=3"), "{e}");
        assert!(e.contains("timout"), "{e}");
    }

    #[test]
    fn two_settings_that_collide_are_refused() {
        let (settings, _) = from_vars(vars(&[
            ("PABLO_MODEL", "gpt-5"),
            ("PABLO_MODEL_CONTEXT_WINDOW", "50000"),
        ]));
        let e = layer(&settings).unwrap_err().to_string();
        assert!(e.contains("PABLO_MODEL_CONTEXT_WINDOW"), "{e}");
        assert!(e.contains("conflicts with model"), "{e}");
    }

    #[test]
    fn unknown_variables_are_said_once() {
        let first = unknown_note(&["PABLO_NOPE".to_string()]);
        let second = unknown_note(&["PABLO_NOPE".to_string()]);
        assert!(first.is_some_and(|n| n.contains("PABLO_NOPE")));
        assert!(second.is_none());
    }
}
