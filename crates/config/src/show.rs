//! `pablo config show [--origin]`: the settings in effect, each with the layer it came from, and
//! `pablo config keys`: every key with the `PABLO_` variable that sets it.
//!
//! A single value comes from the last layer that sets it; a list is shown once per layer that
//! gives one, in order, since layers add their lists up (policy then narrows: `pablo policy
//! check` explains a decision). Values under secret-looking keys and header values are shown as
//! `[redacted]`.

use serde::Serialize;

use super::env::{KeyKind, keys};
use super::{ConfigFile, Layers, OVERRIDES_LABEL, key_segment};
use pablo_core::secrets::{REDACTED, looks_secret, redact};

/// One setting in effect.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shown {
    /// Dotted path (`options.shell.timeout_seconds`).
    pub key: String,
    /// The value as TOML.
    pub value: String,
    /// `user config /home/…/config.toml`, `PABLO_OPTIONS_SHELL_TIMEOUT_SECONDS`, `--model`, …
    pub origin: String,
}

impl Shown {
    /// The setting as `pablo config show --json` prints it: its value typed as JSON (a number a
    /// number, a list a list), not the TOML text, which a script would have to parse again.
    pub fn to_json(&self) -> serde_json::Value {
        let value = toml::from_str::<toml::Table>(&format!("v = {}", self.value))
            .ok()
            .and_then(|mut t| t.remove("v"))
            .and_then(|v| serde_json::to_value(v).ok())
            .unwrap_or_else(|| serde_json::Value::String(self.value.clone()));
        serde_json::json!({"key": self.key, "value": value, "origin": self.origin})
    }
}

/// Says where a setting of one layer came from, by its key.
type OriginOf<'a> = Box<dyn Fn(&str) -> String + 'a>;

/// The settings of `layers` in effect, then `flags` (key, TOML value, flag) over them.
pub fn shown(layers: &Layers, flags: &[(String, toml::Value, String)]) -> Vec<Shown> {
    let mut out: Vec<Shown> = Vec::new();
    let files = [
        (&layers.user, "user config"),
        (&layers.project, "project config"),
        (&layers.explicit, "--config"),
    ];
    let mut sources: Vec<(&ConfigFile, OriginOf<'_>)> = Vec::new();
    for (layer, kind) in files {
        if let Some((path, file)) = layer {
            let label = format!("{kind} {}", path.display());
            sources.push((file, Box::new(move |_| label.clone())));
        }
    }
    if let Some((_, file)) = &layers.overrides {
        let origins = &layers.override_origins;
        sources.push((
            file,
            Box::new(move |key: &str| {
                origins
                    .iter()
                    .filter(|(k, _)| key == k.as_str() || key.starts_with(&format!("{k}.")))
                    .max_by_key(|(k, _)| k.len())
                    .map_or_else(|| OVERRIDES_LABEL.to_string(), |(_, o)| o.clone())
            }),
        ));
    }
    for (file, origin) in &sources {
        let Ok(toml::Value::Table(table)) = toml::Value::try_from(file) else {
            continue;
        };
        let mut leaves = Vec::new();
        flatten(&table, &mut Vec::new(), &mut leaves);
        for (key, value) in leaves {
            place(&mut out, key.clone(), value, origin(&key));
        }
    }
    for (key, value, flag) in flags {
        place(&mut out, key.clone(), value.clone(), flag.clone());
    }
    out
}

/// Adds a leaf: a list beside the earlier layers' lists, anything else in place of the value
/// an earlier layer gave the same key.
fn place(out: &mut Vec<Shown>, key: String, value: toml::Value, origin: String) {
    let list = matches!(value, toml::Value::Array(_));
    let shown = Shown {
        value: display(&key, &value),
        key,
        origin,
    };
    // `--model` and `model = "…"` and `[model] name` are one setting.
    let same = |a: &str, b: &str| a == b || (is_model_name(a) && is_model_name(b));
    if !list && let Some(slot) = out.iter_mut().find(|s| same(&s.key, &shown.key)) {
        *slot = shown;
        return;
    }
    out.push(shown);
}

fn is_model_name(key: &str) -> bool {
    key == "model" || key == "model.name"
}

/// Every leaf under `table` (empty tables and lists are no setting).
fn flatten(table: &toml::Table, at: &mut Vec<String>, out: &mut Vec<(String, toml::Value)>) {
    for (k, v) in table {
        at.push(key_segment(k));
        match v {
            toml::Value::Table(t) => flatten(t, at, out),
            toml::Value::Array(a) if a.is_empty() => {}
            _ => out.push((at.join("."), v.clone())),
        }
        at.pop();
    }
}

/// A value as shown: TOML, with secrets redacted.
fn display(key: &str, value: &toml::Value) -> String {
    let last = key.rsplit('.').next().unwrap_or(key).trim_matches('"');
    if looks_secret(last) || key.contains(".headers.") {
        return format!("{:?}", REDACTED);
    }
    let text = match value {
        toml::Value::String(s) => toml::Value::String(s.clone()).to_string(),
        toml::Value::Array(items) => format!(
            "[{}]",
            items.iter().map(inline).collect::<Vec<_>>().join(", ")
        ),
        other => inline(other),
    };
    redact(&text).into_owned()
}

fn inline(value: &toml::Value) -> String {
    match value {
        toml::Value::Table(t) => {
            let inner: Vec<String> = t
                .iter()
                .map(|(k, v)| format!("{} = {}", key_segment(k), inline(v)))
                .collect();
            format!("{{ {} }}", inner.join(", "))
        }
        toml::Value::Array(items) => format!(
            "[{}]",
            items.iter().map(inline).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
    }
}

/// `key = value`, one per line, with `  # origin` when asked.
pub fn render(shown: &[Shown], origin: bool) -> String {
    if shown.is_empty() {
        return "no settings: built-in defaults apply\n".into();
    }
    let width = shown
        .iter()
        .map(|s| s.key.len() + s.value.len() + 3)
        .max()
        .unwrap_or(0)
        .min(72);
    let mut out = String::new();
    for s in shown {
        let line = format!("{} = {}", s.key, s.value);
        if origin {
            out.push_str(&format!("{line:<width$}  # {}\n", s.origin));
        } else {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// `pablo config keys`: every key a config file takes, with the variable that sets it.
pub fn keys_text() -> String {
    let mut out = String::new();
    for k in keys() {
        let shape = match k.kind {
            KeyKind::Value => "",
            KeyKind::List => "  (a list)",
            KeyKind::Map => "  (a table of names: set it whole, as an inline table)",
            KeyKind::Table => continue,
        };
        if let Some(v) = k.variable() {
            out.push_str(&format!("{:<48} {v}{shape}\n", k.path));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    fn file(text: &str) -> ConfigFile {
        ConfigFile::parse(text, Path::new("c.toml")).unwrap()
    }

    #[test]
    fn the_last_layer_wins_lists_add_up_and_secrets_are_hidden() {
        let mut layers = Layers {
            user: Some((
                PathBuf::from("/u/config.toml"),
                file(
                    "model = \"gpt-5\"\n[options.shell]\ntimeout_seconds = 60\n\
                     custom_deny_patterns = [\"a\"]\n[otel.headers]\nx-api-key = \"k-123456789\"\n",
                ),
            )),
            explicit: Some((
                PathBuf::from("/x.toml"),
                file("[options.shell]\ncustom_deny_patterns = [\"b\"]\n"),
            )),
            ..Default::default()
        };
        layers
            .with_overrides(
                vec![("PABLO_OPTIONS_SHELL_TIMEOUT_SECONDS".into(), "30".into())],
                &[],
            )
            .unwrap();
        let flags = [(
            "model".to_string(),
            toml::Value::String("o3".into()),
            "--model".to_string(),
        )];
        let s = shown(&layers, &flags);
        let find = |k: &str| s.iter().filter(|x| x.key == k).collect::<Vec<_>>();
        let timeout = find("options.shell.timeout_seconds");
        assert_eq!(timeout.len(), 1);
        assert_eq!(timeout[0].value, "30");
        assert_eq!(timeout[0].origin, "PABLO_OPTIONS_SHELL_TIMEOUT_SECONDS");
        let deny = find("options.shell.custom_deny_patterns");
        assert_eq!(deny.len(), 2);
        assert_eq!(deny[1].origin, "--config /x.toml");
        assert_eq!(find("model")[0].origin, "--model");
        assert_eq!(find("otel.headers.x-api-key")[0].value, "\"[redacted]\"");
        let text = render(&s, true);
        assert!(!text.contains("k-123456789"), "{text}");
        assert!(text.contains("# user config /u/config.toml"), "{text}");
    }

    #[test]
    fn every_settable_key_is_listed_with_its_variable() {
        let text = keys_text();
        assert!(
            text.contains("PABLO_OPTIONS_SHELL_TIMEOUT_SECONDS"),
            "{text}"
        );
        assert!(text.contains("PABLO_OTEL_ENDPOINT"), "{text}");
        assert!(text.contains("PABLO_TRACE_CONTENT"), "{text}");
    }
}
