//! The prompt of a request body as a provider's prompt cache sees it, for the context tests of
//! both halves (the library's clients and `pablo run`): the prefix must stay byte-stable.

use serde_json::Value;

/// `v` without any `cache_control` marker (the cache keys on content, not on the markers).
pub fn without_markers(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), without_markers(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_markers).collect()),
        other => other.clone(),
    }
}

/// The prompt of a request as the provider's cache sees it, in order, one string of bytes per
/// piece: tools, system, then each content block (Anthropic) or message / input item (OpenAI).
pub fn prompt_pieces(body: &Value) -> Vec<String> {
    let body = without_markers(body);
    let mut out = vec![body["tools"].to_string()];
    for key in ["system", "instructions"] {
        if !body[key].is_null() {
            out.push(body[key].to_string());
        }
    }
    if let Some(messages) = body["messages"].as_array() {
        for m in messages {
            match m["content"].as_array() {
                // Anthropic: blocks, so a user message that grows keeps its earlier blocks.
                Some(blocks) => {
                    for b in blocks {
                        out.push(format!("{}:{b}", m["role"]));
                    }
                }
                None => out.push(m.to_string()),
            }
        }
    }
    if let Some(input) = body["input"].as_array() {
        out.extend(input.iter().map(Value::to_string));
    }
    out
}

/// Each request's prompt starts with the whole prompt of the one before, byte for byte.
pub fn assert_prefix_stable(bodies: &[Value]) {
    for pair in bodies.windows(2) {
        let (a, b) = (prompt_pieces(&pair[0]), prompt_pieces(&pair[1]));
        assert!(a.len() < b.len(), "the conversation grew");
        assert_eq!(a[..], b[..a.len()], "the prefix changed between calls");
    }
}
