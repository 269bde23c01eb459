//! A server's answers in pablo's shapes: a `CallToolResult` as the data of a tool result (or a
//! failure with code `mcp_error` when the server flags `isError`), a prompt as the text of a user
//! turn, a resource as text to attach.
//!
//! Text is cut at [`MAX_TEXT`] characters with a note saying so; the whole result is then bounded
//! by the agent like every tool result. Images and audio are described by type and size rather
//! than pasted as base64 the model cannot read as text.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::wording::{self, lines_of};
use pablo_core::{ErrorCode, ToolFailure};
use pablo_protocol::describe::ResultView;

/// What a call of an MCP server's tool returns: its text, and what else it sent described.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct McpResult {
    pub(crate) server: String,
    /// The tool's real name on the server.
    pub(crate) tool: String,
    /// The text blocks (and embedded text resources), joined.
    pub(crate) text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) structured_content: Option<Value>,
    /// The blocks that are not text, described by type and size.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) content: Vec<McpPart>,
}

/// A content block that is not text, as the model is told of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum McpPart {
    /// An image or audio: its type and decoded size.
    Media {
        #[serde(rename = "type")]
        kind: String,
        mime_type: String,
        bytes: usize,
    },
    /// A binary embedded resource.
    Resource {
        #[serde(rename = "type")]
        kind: String,
        uri: String,
        mime_type: Option<String>,
        bytes: usize,
    },
    /// A link to a resource.
    Link {
        #[serde(rename = "type")]
        kind: String,
        uri: Option<String>,
        name: Option<String>,
        mime_type: Option<String>,
    },
    /// A block pablo does not show.
    Other {
        #[serde(rename = "type")]
        kind: String,
        note: String,
    },
}

/// The most text of one result (or one prompt or resource) kept.
pub(crate) const MAX_TEXT: usize = 100_000;

fn cut(text: &str) -> String {
    let total = text.chars().count();
    if total <= MAX_TEXT {
        return text.to_string();
    }
    let mut out: String = text.chars().take(MAX_TEXT).collect();
    out.push_str(&format!(
        "\n[cut: {} more characters not shown]",
        total - MAX_TEXT
    ));
    out
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The decoded size of base64 `data` (what the person and the model are told).
fn decoded_len(data: &str) -> usize {
    base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map(|b| b.len())
        .unwrap_or(data.len() / 4 * 3)
}

/// One content block in words and data: (text to show, a non-text part's description).
fn part(block: &Value) -> (Option<String>, Option<McpPart>) {
    let owned = |s: Option<&str>| s.map(str::to_string);
    match str_of(block, "type") {
        Some("text") => (str_of(block, "text").map(str::to_string), None),
        Some(kind @ ("image" | "audio")) => {
            let mime = str_of(block, "mimeType").unwrap_or("application/octet-stream");
            let bytes = decoded_len(str_of(block, "data").unwrap_or(""));
            (
                None,
                Some(McpPart::Media {
                    kind: kind.to_string(),
                    mime_type: mime.to_string(),
                    bytes,
                }),
            )
        }
        Some("resource") => {
            let r = block.get("resource").cloned().unwrap_or(Value::Null);
            let uri = str_of(&r, "uri").unwrap_or("");
            match str_of(&r, "text") {
                Some(t) => (Some(format!("[resource {uri}]\n{t}")), None),
                None => (
                    None,
                    Some(McpPart::Resource {
                        kind: "resource".into(),
                        uri: uri.to_string(),
                        mime_type: owned(str_of(&r, "mimeType")),
                        bytes: decoded_len(str_of(&r, "blob").unwrap_or("")),
                    }),
                ),
            }
        }
        Some("resource_link") => (
            None,
            Some(McpPart::Link {
                kind: "resource_link".into(),
                uri: owned(str_of(block, "uri")),
                name: owned(str_of(block, "name")),
                mime_type: owned(str_of(block, "mimeType")),
            }),
        ),
        other => (
            None,
            Some(McpPart::Other {
                kind: other.unwrap_or("unknown").to_string(),
                note: "content pablo does not show".into(),
            }),
        ),
    }
}

/// The data of a successful call, or the failure the server reported (`isError`).
pub(crate) fn outcome(server: &str, tool: &str, result: &Value) -> Result<McpResult, ToolFailure> {
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut texts = Vec::new();
    let mut others = Vec::new();
    for b in &blocks {
        let (text, other) = part(b);
        texts.extend(text);
        others.extend(other);
    }
    let text = cut(&texts.join("\n"));
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let message = if text.trim().is_empty() {
            "the tool reported an error without saying what".to_string()
        } else {
            text.clone()
        };
        return Err(ToolFailure::new(
            ErrorCode::McpError,
            format!("MCP server {server}, tool {tool}: {message}"),
        ));
    }
    Ok(McpResult {
        server: server.to_string(),
        tool: tool.to_string(),
        text,
        structured_content: result
            .get("structuredContent")
            .filter(|v| !v.is_null())
            .cloned(),
        content: others,
    })
}

/// `read_file on files: first line of the text (+ image image/png, 5 bytes)`, then the text.
pub(crate) fn show_result(data: &Value) -> Option<ResultView> {
    let r: McpResult = wording::typed(data)?;
    let mut body = lines_of(&r.text);
    if let Some(s) = &r.structured_content {
        body.push(format!("structured: {s}"));
    }
    let extras: Vec<String> = r.content.iter().map(part_words).collect();
    let first: String = r
        .text
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(100)
        .collect();
    let tool = if data.get("tool").is_some() {
        r.tool.as_str()
    } else {
        "tool"
    };
    let server = if data.get("server").is_some() {
        r.server.as_str()
    } else {
        "the server"
    };
    let mut headline = format!("{tool} on {server}");
    if !first.is_empty() {
        headline.push_str(": ");
        headline.push_str(&first);
    }
    if !extras.is_empty() {
        headline.push_str(&format!(" (+ {})", extras.join(", ")));
    }
    Some(ResultView::lines(headline, body))
}

/// `image image/png, 5 bytes`, `resource_link file:///a`.
fn part_words(part: &McpPart) -> String {
    let what = match part {
        McpPart::Media {
            kind,
            mime_type,
            bytes,
        } => format!("{kind} {mime_type}, {bytes} bytes"),
        McpPart::Resource {
            kind,
            mime_type: Some(m),
            bytes,
            ..
        } => format!("{kind} {m}, {bytes} bytes"),
        McpPart::Resource { kind, uri, .. } => format!("{kind} {uri}"),
        McpPart::Link { kind, uri, .. } => format!("{kind} {}", uri.as_deref().unwrap_or("")),
        McpPart::Other { kind, .. } => format!("{kind} "),
    };
    what.trim_end().to_string()
}

#[cfg(test)]
/// The images of a result, as `(mime type, base64 data)`, for providers that take images.
pub(crate) fn images(result: &Value) -> Vec<(String, String)> {
    result
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| str_of(b, "type") == Some("image"))
                .filter_map(|b| {
                    Some((
                        str_of(b, "mimeType")?.to_string(),
                        str_of(b, "data")?.to_string(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A prompt's messages as the text of one user turn (assistant lines are marked as such).
pub(crate) fn prompt_text(result: &Value) -> String {
    let messages = result
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for m in &messages {
        let content = m.get("content").cloned().unwrap_or(Value::Null);
        let blocks = match content {
            Value::Array(a) => a,
            other => vec![other],
        };
        for b in &blocks {
            let text = match part(b) {
                (Some(t), _) => t,
                (None, Some(d)) => format!("[{}]", serde_json::to_value(&d).unwrap_or_default()),
                (None, None) => continue,
            };
            if str_of(m, "role") == Some("assistant") {
                out.push(format!("(assistant) {text}"));
            } else {
                out.push(text);
            }
        }
    }
    cut(&out.join("\n\n"))
}

/// A resource's contents as text to attach to a turn.
pub(crate) fn resource_text(result: &Value) -> String {
    let contents = result
        .get("contents")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for c in &contents {
        match str_of(c, "text") {
            Some(t) => out.push(t.to_string()),
            None => out.push(format!(
                "[binary content, {} bytes, {}]",
                decoded_len(str_of(c, "blob").unwrap_or("")),
                str_of(c, "mimeType").unwrap_or("unknown type")
            )),
        }
    }
    cut(&out.join("\n"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn text_and_structured_content_become_data() {
        let r = json!({
            "content": [{"type": "text", "text": "{\"temperature\":33}"}],
            "structuredContent": {"temperature": 33}
        });
        let d = serde_json::to_value(outcome("everything", "get-structured-content", &r).unwrap())
            .unwrap();
        assert_eq!(d["text"], "{\"temperature\":33}");
        assert_eq!(d["structured_content"]["temperature"], 33);
        assert!(d.get("content").is_none());
    }

    #[test]
    fn an_image_is_described_by_type_and_size() {
        let r = json!({"content": [
            {"type": "text", "text": "here"},
            {"type": "image", "mimeType": "image/png", "data": "aGVsbG8="}
        ]});
        let d = serde_json::to_value(outcome("s", "t", &r).unwrap()).unwrap();
        assert_eq!(
            d["content"][0],
            json!({"type": "image", "mime_type": "image/png", "bytes": 5})
        );
        assert_eq!(
            images(&r),
            [("image/png".to_string(), "aGVsbG8=".to_string())]
        );
    }

    #[test]
    fn is_error_is_a_failure_with_code_mcp_error() {
        let r = json!({"isError": true, "content": [{"type": "text", "text": "no such file"}]});
        let f = outcome("fs", "read_file", &r).unwrap_err();
        assert_eq!(f.code, "mcp_error");
        assert!(f.message.contains("no such file"), "{}", f.message);
    }

    #[test]
    fn long_text_is_cut_with_a_note() {
        let long = "x".repeat(MAX_TEXT + 10);
        let r = json!({"content": [{"type": "text", "text": long}]});
        let d = serde_json::to_value(outcome("s", "t", &r).unwrap()).unwrap();
        let text = d["text"].as_str().unwrap();
        assert!(
            text.ends_with("[cut: 10 more characters not shown]"),
            "{}",
            &text[text.len() - 60..]
        );
    }

    #[test]
    fn a_prompt_becomes_the_text_of_its_messages() {
        let r = json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "What's weather in Paris?"}},
            {"role": "assistant", "content": {"type": "text", "text": "Let me check."}}
        ]});
        assert_eq!(
            prompt_text(&r),
            "What's weather in Paris?\n\n(assistant) Let me check."
        );
    }
}
