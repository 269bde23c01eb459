//! Opt-in content capture for the native trace (`[trace] content = true`, `PABLO_LOG_CONTENT=1`).
//!
//! When the person turns it on, each tool call's span in the local JSON trace gets one event with
//! its arguments and its result, each cut to [`MAX_CONTENT`] bytes. Even then the values pablo
//! holds as secrets, values under secret-looking keys (`api_key`, `Authorization`, …) and strings
//! shaped like well-known tokens are replaced by `[redacted]`. The event's target
//! (`pablo::content`) is one the OpenTelemetry layer never sees, and the export keeps no events:
//! content stays on this machine.

use serde_json::Value;
use tracing::Span;

use pablo_core::secrets::{REDACTED, looks_secret, redact_json};
use pablo_protocol::ToolOutcome;

/// The most bytes of arguments, and of a result, one event holds.
pub const MAX_CONTENT: usize = 4096;

/// Adds the call's arguments and result to its span, when content capture is on.
pub fn tool_call(span: &Span, arguments: &str, outcome: &ToolOutcome) {
    if !super::content_capture() {
        return;
    }
    let arguments = match serde_json::from_str::<Value>(arguments) {
        Ok(v) => bounded(&clean(v)),
        Err(_) => bounded(&clean(Value::String(arguments.to_string()))),
    };
    let result = bounded(&clean(serde_json::to_value(outcome).unwrap_or(Value::Null)));
    span.in_scope(|| {
        tracing::info!(
            target: "pablo::content",
            arguments = %arguments,
            result = %result,
            "tool call content"
        );
    });
}

/// `value` with secrets redacted: held values, values under secret-looking keys, token shapes.
pub fn clean(mut value: Value) -> Value {
    redact_json(&mut value);
    scrub(&mut value);
    value
}

fn scrub(value: &mut Value) {
    match value {
        Value::String(s) => {
            if let Some(clean) = redact_tokens(s) {
                *s = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(scrub),
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if looks_secret(k) && !matches!(v, Value::Null | Value::Bool(_)) {
                    *v = Value::String(REDACTED.into());
                } else {
                    scrub(v);
                }
            }
        }
        _ => {}
    }
}

/// Prefixes of widely used API tokens and keys; a word starting with one (and long enough to
/// be a token) is redacted wherever it appears.
const TOKEN_PREFIXES: &[&str] = &[
    "sk-",
    "sk_live_",
    "rk_live_",
    "ghp_",
    "gho_",
    "ghs_",
    "ghu_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "AKIA",
    "ASIA",
    "AIza",
    "hf_",
    "npm_",
];

/// The shortest word taken for a token.
const MIN_TOKEN_LEN: usize = 16;

/// `text` with token-shaped words, `Bearer …` credentials and private key blocks redacted;
/// `None` when nothing changed.
fn redact_tokens(text: &str) -> Option<String> {
    let mut changed = false;
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    if let Some(start) = rest.find("-----BEGIN ")
        && rest[start..].contains("PRIVATE KEY-----")
    {
        out.push_str(&rest[..start]);
        out.push_str(REDACTED);
        return Some(out);
    }
    let mut after_bearer = false;
    while !rest.is_empty() {
        let end = rest
            .find(|c: char| c.is_whitespace() || "\"',;=:".contains(c))
            .unwrap_or(rest.len());
        let (word, tail) = rest.split_at(end);
        let token_like = word.len() >= MIN_TOKEN_LEN
            && TOKEN_PREFIXES.iter().any(|p| word.starts_with(p))
            && word
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
        if (token_like || (after_bearer && word.len() >= 8)) && !word.is_empty() {
            out.push_str(REDACTED);
            changed = true;
        } else {
            out.push_str(word);
        }
        if !word.is_empty() {
            after_bearer =
                word.eq_ignore_ascii_case("bearer") || word.eq_ignore_ascii_case("token");
        }
        let Some(sep) = tail.chars().next() else {
            break;
        };
        out.push(sep);
        rest = &tail[sep.len_utf8()..];
    }
    changed.then_some(out)
}

/// `value` as JSON text of at most [`MAX_CONTENT`] bytes (cut on a character boundary, marked).
fn bounded(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= MAX_CONTENT {
        return text;
    }
    let mut cut = MAX_CONTENT;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} bytes in all)", &text[..cut], text.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_keys_token_shapes_and_bearer_values_are_redacted() {
        let v = clean(json!({
            "command": "curl -H 'Authorization: Bearer abcdefgh12345678' https://x",
            "api_key": "plain-looking-value",
            "env": {"GITHUB_TOKEN": "t"},
            "note": "use sk-proj-abcdefghijklmnop1234 here",
            "path": "src/main.rs"
        }));
        let text = v.to_string();
        assert!(!text.contains("abcdefgh12345678"), "{text}");
        assert!(!text.contains("plain-looking-value"), "{text}");
        assert!(!text.contains("sk-proj-abcdefghijklmnop1234"), "{text}");
        assert_eq!(v["env"]["GITHUB_TOKEN"], REDACTED);
        assert_eq!(v["path"], "src/main.rs");
        assert!(text.contains("curl -H"), "{text}");
    }

    #[test]
    fn a_private_key_block_goes_whole_and_long_content_is_cut() {
        let v = clean(json!(
            "key: -----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----"
        ));
        assert_eq!(v, json!(format!("key: {REDACTED}")));
        let long = bounded(&json!("x".repeat(10_000)));
        assert!(long.len() < MAX_CONTENT + 40, "{}", long.len());
        assert!(long.ends_with("bytes in all)"), "{long}");
    }
}
