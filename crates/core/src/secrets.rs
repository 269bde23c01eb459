//! The secret values pablo knows of, held out of sight and out of every tool's output.
//!
//! At start (`main`, before any thread exists) the values of secret-looking variables are moved
//! here and wiped from the process's environment block (`process::protect`), so a command pablo
//! runs cannot read them back through `/proc/$PPID/environ`; the provider reads its key from here
//! ([`var`]). Anything a command prints can still hold a secret it found some other way (a file,
//! a pasted value), so every value held here, and every key a provider uses ([`add_value`]), is
//! replaced by [`REDACTED`] in what tools return before the model, the journal or a front-end sees
//! it ([`redact_serde`]).

use parking_lot::RwLock;
use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// What a secret value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Shorter values are not redacted: a two-letter value (`KEYMAP=us`) would blank out every `us`
/// of every output, and is no secret anyway.
pub const MIN_REDACTED_LEN: usize = 8;

/// Name fragments that mark a variable as a secret (compared case-insensitively, anywhere in
/// the name).
pub const SECRET_MARKERS: &[&str] = &[
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "COOKIE",
];

/// Words that mark a secret only as a whole `_`-separated part (`NPM_AUTH` yes,
/// `GIT_AUTHOR_NAME` no).
const SECRET_WORDS: &[&str] = &["AUTH", "PAT", "PASS", "PWD_HASH"];

/// Whether `name` (of a variable, a header, a JSON key) looks like it holds a secret. The OTLP
/// exporters' header variables count too: they carry the collector's API key.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase().replace('-', "_");
    SECRET_MARKERS.iter().any(|m| upper.contains(m))
        || upper.split('_').any(|w| SECRET_WORDS.contains(&w))
        || (upper.starts_with("OTEL_") && upper.ends_with("_HEADERS"))
}

struct Held {
    /// Variables moved out of the environment block, by name.
    vars: BTreeMap<String, String>,
    /// Every value to redact, longest first (a secret containing another is replaced whole).
    values: Vec<String>,
}

static HELD: RwLock<Held> = RwLock::new(Held {
    vars: BTreeMap::new(),
    values: Vec::new(),
});

/// Keeps the value of the environment variable `name` (about to be wiped from the environment
/// block) and redacts it from now on.
pub fn hold_var(name: &str, value: &str) {
    HELD.write()
        .vars
        .insert(name.to_string(), value.to_string());
    add_value(value);
}

/// Redacts `value` from every tool result from now on (a provider key read from a variable that
/// does not look secret, `api_key_env = "LLM"`).
pub fn add_value(value: &str) {
    if value.len() < MIN_REDACTED_LEN {
        return;
    }
    let mut h = HELD.write();
    if !h.values.iter().any(|v| v == value) {
        h.values.push(value.to_string());
        h.values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    }
}

/// The value of environment variable `name`: the held one if it was moved out of the
/// environment block, else the environment's. Empty values count as unset.
pub fn var(name: &str) -> Option<String> {
    let held = HELD.read().vars.get(name).cloned();
    held.or_else(|| std::env::var(name).ok())
        .filter(|v| !v.is_empty())
}

/// Whether any value is redacted.
pub fn active() -> bool {
    !HELD.read().values.is_empty()
}

/// `text` with every held value replaced by [`REDACTED`].
pub fn redact(text: &str) -> Cow<'_, str> {
    let h = HELD.read();
    let mut out = Cow::Borrowed(text);
    for v in &h.values {
        if out.contains(v.as_str()) {
            out = Cow::Owned(out.replace(v.as_str(), REDACTED));
        }
    }
    out
}

/// Redacts every string (and object key) inside `value`; true when anything changed.
pub fn redact_json(value: &mut Value) -> bool {
    match value {
        Value::String(s) => match redact(s) {
            Cow::Owned(r) => {
                *s = r;
                true
            }
            Cow::Borrowed(_) => false,
        },
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |changed, v| redact_json(v) | changed),
        Value::Object(map) => {
            let mut changed = false;
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                if let Cow::Owned(clean) = redact(&k)
                    && let Some(v) = map.remove(&k)
                {
                    map.insert(clean, v);
                    changed = true;
                }
            }
            map.values_mut()
                .fold(changed, |changed, v| redact_json(v) | changed)
        }
        _ => false,
    }
}

/// `item` with every held value redacted from its strings. Serialized and read back only when a
/// secret is actually in it, so the common case costs one serialization.
pub fn redact_serde<T: Serialize + DeserializeOwned>(item: T) -> T {
    if !active() {
        return item;
    }
    let Ok(mut value) = serde_json::to_value(&item) else {
        return item;
    };
    if !redact_json(&mut value) {
        return item;
    }
    serde_json::from_value(value).unwrap_or(item)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_values_are_redacted_in_text_and_json_but_short_ones_are_not() {
        hold_var("PABLO_UNIT_TEST_TOKEN", "unit-secret-3f9a1c");
        add_value("tiny");
        assert_eq!(redact("a unit-secret-3f9a1c b tiny"), "a [redacted] b tiny");
        let mut v = serde_json::json!({"out": ["x unit-secret-3f9a1c"], "unit-secret-3f9a1c": 1});
        assert!(redact_json(&mut v));
        assert_eq!(
            v,
            serde_json::json!({"out": ["x [redacted]"], "[redacted]": 1})
        );
        assert_eq!(
            var("PABLO_UNIT_TEST_TOKEN").as_deref(),
            Some("unit-secret-3f9a1c")
        );
    }
}
