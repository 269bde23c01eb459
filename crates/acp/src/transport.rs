//! The ACP wire: newline-delimited JSON-RPC over any reader and writer, as bytes that are never
//! trusted.
//!
//! The protocol library takes lines as `String`s. Reading them with `AsyncBufReadExt::lines`
//! ended the connection on the first line that was not UTF-8 (an `Internal error`, exit 2, and
//! the requests after it never answered) and buffered a line without limit. So lines are read
//! here as bytes, by the framer MCP's stdio uses too ([`pablo_core::lines`]): a line that is
//! not UTF-8, or longer than [`MAX_MESSAGE_BYTES`], is answered with a JSON-RPC parse error
//! (`id: null`, as JSON-RPC prescribes for a message that cannot be read) and the connection
//! goes on; reading is linear in the bytes and holds at most one message.
//!
//! One message is also looked at before the library sees it: an `initialize` that asks for a
//! protocol version other than 1 while describing itself in version 1's terms (see
//! [`v1_initialize`]).

use std::sync::Arc;

use agent_client_protocol::{Agent, ConnectTo, Lines};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

use pablo_core::lines::{self, LineRead};

/// The largest JSON-RPC message pablo reads from the client: four times the request context
/// limit of a session (32 MiB by default), so a prompt that a session could send is never cut,
/// while a line that never ends cannot grow without bound.
pub const MAX_MESSAGE_BYTES: usize = 128 * 1024 * 1024;

/// A newline-delimited JSON-RPC transport over any reader and writer (stdio, a pipe, a socket).
pub fn line_transport<R, W>(reader: R, writer: W) -> impl ConnectTo<Agent> + 'static
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    bounded_line_transport(reader, writer, MAX_MESSAGE_BYTES)
}

/// [`line_transport`] with another message limit (tests use a small one).
pub(crate) fn bounded_line_transport<R, W>(
    reader: R,
    writer: W,
    max_message_bytes: usize,
) -> impl ConnectTo<Agent> + 'static
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    // Both directions write whole lines under this lock: the library's answers, and the parse
    // errors for lines the library never sees.
    let writer = Arc::new(Mutex::new(writer));
    let reading = (Framer::new(reader, max_message_bytes), writer.clone());
    let incoming = futures::stream::unfold(Some(reading), |state| async move {
        let (mut framer, writer) = state?;
        loop {
            match framer.next().await {
                Ok(Some(Framed::Message(line))) => return Some((Ok(line), Some((framer, writer)))),
                Ok(Some(Framed::Unreadable { code, message })) => {
                    tracing::info!(code, "acp: unreadable line");
                    let answer = json!({"jsonrpc": "2.0", "id": null, "error": {
                        "code": -32700, "message": "Parse error",
                        "data": {"code": code, "message": message}}});
                    if let Err(e) = write_line(&writer, &answer.to_string()).await {
                        return Some((Err(e), None));
                    }
                }
                Ok(None) => return None,
                // Report the error once, then end the stream.
                Err(e) => return Some((Err(e), None)),
            }
        }
    });
    let outgoing = futures::sink::unfold(writer, |w: Arc<Mutex<W>>, line: String| async move {
        write_line(&w, &coded_error_data(line)).await?;
        Ok::<_, std::io::Error>(w)
    });
    Lines::new(Box::pin(outgoing), Box::pin(incoming))
}

async fn write_line<W: AsyncWrite + Unpin>(w: &Mutex<W>, line: &str) -> std::io::Result<()> {
    let mut w = w.lock().await;
    w.write_all(line.as_bytes()).await?;
    w.write_all(b"\n").await?;
    w.flush().await
}

/// One line of the client's bytes: a message for the protocol library, or why it is not one
/// (answered by the transport with a parse error whose `data.code` is `code`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Framed {
    Message(String),
    Unreadable { code: &'static str, message: String },
}

/// Cuts the client's bytes into lines (see the module docs).
struct Framer<R> {
    reader: BufReader<R>,
    buf: Vec<u8>,
    /// Lines read so far, for messages.
    line: u64,
    max: usize,
}

impl<R: AsyncRead + Unpin> Framer<R> {
    fn new(reader: R, max: usize) -> Self {
        Self {
            reader: BufReader::new(reader),
            buf: Vec::new(),
            line: 0,
            max,
        }
    }

    /// The next line; `None` at the end of the input.
    async fn next(&mut self) -> std::io::Result<Option<Framed>> {
        let read = lines::read_line(&mut self.reader, &mut self.buf, self.max).await?;
        self.line += 1;
        Ok(match read {
            LineRead::End => None,
            LineRead::TooLong => Some(Framed::Unreadable {
                code: "message_too_large",
                message: format!(
                    "line {} is longer than {} bytes; it was skipped",
                    self.line, self.max
                ),
            }),
            LineRead::Line => Some(match std::str::from_utf8(lines::content(&self.buf)) {
                Ok(line) => Framed::Message(v1_initialize(line)),
                Err(e) => Framed::Unreadable {
                    code: "parse_error",
                    message: format!(
                        "line {} is not UTF-8 (an invalid byte after {} bytes); it was \
                             skipped",
                        self.line,
                        e.valid_up_to()
                    ),
                },
            }),
        })
    }
}

/// Every line of `input` as the transport frames it, with lines over `max` bytes refused: what
/// the protocol library would be given and what would be answered instead. For property tests
/// and the fuzz target, which check it over arbitrary bytes.
pub fn frame_all(input: &[u8], max: usize) -> Vec<Framed> {
    let mut framer = Framer::new(input, max);
    let mut out = Vec::new();
    while let Ok(Some(f)) = futures::executor::block_on(framer.next()) {
        out.push(f);
    }
    out
}

/// An `initialize` whose `protocolVersion` is not 1 but whose capabilities are given under
/// version 1's key (`clientCapabilities`) is passed on as a version 1 request.
///
/// pablo answers version 1 whatever is asked, and a client that goes on after that answer speaks
/// version 1. The library reads a request for another version in that version's terms
/// (`capabilities`) and drops what it cannot map, so such a client lost the file-system and
/// terminal capabilities it declared, and its editor buffers and terminals were never used.
/// `clientCapabilities` is version 1's own name for them: they mean what version 1 says.
fn v1_initialize(line: &str) -> String {
    // Only a line that could be an initialize request is parsed twice.
    if !line.contains("\"initialize\"") || !line.contains("\"clientCapabilities\"") {
        return line.to_string();
    }
    let Ok(serde_json::Value::Object(mut msg)) = serde_json::from_str::<serde_json::Value>(line)
    else {
        return line.to_string();
    };
    if msg.get("method").and_then(|m| m.as_str()) != Some("initialize") {
        return line.to_string();
    }
    let Some(params) = msg.get_mut("params").and_then(|p| p.as_object_mut()) else {
        return line.to_string();
    };
    let asked = params.get("protocolVersion").cloned();
    if asked == Some(json!(1))
        || !params
            .get("clientCapabilities")
            .is_some_and(|c| c.is_object())
    {
        return line.to_string();
    }
    tracing::info!(
        requested = %asked.unwrap_or_default(),
        "acp: initialize for another version with version 1 capabilities; read as version 1"
    );
    params.insert("protocolVersion".into(), json!(1));
    serde_json::to_string(&msg).unwrap_or_else(|_| line.to_string())
}

/// An error response whose `data` is not pablo's `{"code": …}` (the protocol library refuses
/// malformed params, unknown methods and unparsable lines itself, with `data` a plain string)
/// gets it: `data` becomes `{"code": …, "message": …}`, the code named after the JSON-RPC one,
/// so every refusal reads the same way (docs/acp.md).
fn coded_error_data(line: String) -> String {
    if !line.contains("\"error\"") {
        return line;
    }
    let Ok(mut msg) = serde_json::from_str::<serde_json::Value>(&line) else {
        return line;
    };
    let Some(error) = msg.get_mut("error").and_then(|e| e.as_object_mut()) else {
        return line;
    };
    if error
        .get("data")
        .and_then(|d| d.get("code"))
        .is_some_and(|c| c.is_string())
    {
        return line;
    }
    let code = match error.get("code").and_then(serde_json::Value::as_i64) {
        Some(-32700) => "parse_error",
        Some(-32600) => "invalid_request",
        Some(-32601) => "method_not_found",
        Some(-32602) => "invalid_params",
        Some(-32800) => "request_cancelled",
        Some(-32000) => "auth_required",
        Some(-32002) => "resource_not_found",
        _ => "internal_error",
    };
    let detail = match error.remove("data") {
        Some(serde_json::Value::String(s)) => Some(s),
        Some(serde_json::Value::Null) | None => None,
        Some(other) => Some(other.to_string()),
    };
    let mut data = serde_json::Map::new();
    data.insert("code".into(), json!(code));
    if let Some(d) = detail {
        data.insert("message".into(), json!(d));
    }
    error.insert("data".into(), serde_json::Value::Object(data));
    serde_json::to_string(&msg).unwrap_or(line)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_initialize_for_another_version_with_v1_capabilities_is_read_as_v1() {
        let line = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2,"clientCapabilities":{"fs":{"readTextFile":true}}}}"#;
        let out: serde_json::Value = serde_json::from_str(&v1_initialize(line)).unwrap();
        assert_eq!(out["params"]["protocolVersion"], 1);
        assert_eq!(
            out["params"]["clientCapabilities"]["fs"]["readTextFile"],
            true
        );
        // Version 1 itself, another method, and a newer request in its own terms pass unchanged.
        for same in [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"protocolVersion":2,"clientCapabilities":{},"x":"initialize"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2,"capabilities":{}}}"#,
            "not json \"initialize\" \"clientCapabilities\"",
        ] {
            assert_eq!(v1_initialize(same), same);
        }
    }

    /// Over arbitrary bytes (bounded in size and cases; the cargo-fuzz target `acp_lines` runs
    /// the same check for as long as it is given): one frame per line, a message exactly when
    /// the line is UTF-8 and within the limit, and nothing else.
    mod properties {
        use proptest::prelude::*;

        use super::super::*;

        fn client_bytes() -> impl Strategy<Value = Vec<u8>> {
            let meaningful: Vec<u8> = b"{}[]\":,\n\n\r jsonrpc\xff\xfe\xc3\xa9\xe2\x82".to_vec();
            prop::collection::vec(
                prop_oneof![3 => prop::sample::select(meaningful), 1 => any::<u8>()],
                0..4096,
            )
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

            #[test]
            fn every_line_is_one_message_or_one_refusal(
                bytes in client_bytes(),
                max in 0usize..300,
            ) {
                let framed = frame_all(&bytes, max);
                let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
                if lines.last().is_some_and(|l| l.is_empty()) {
                    lines.pop();
                }
                prop_assert_eq!(framed.len(), lines.len());
                for (frame, line) in framed.iter().zip(&lines) {
                    let text = line.strip_suffix(b"\r").unwrap_or(line);
                    match (frame, std::str::from_utf8(text)) {
                        (Framed::Message(m), Ok(t)) => {
                            prop_assert!(line.len() <= max);
                            prop_assert_eq!(m.as_str(), t);
                        }
                        (Framed::Unreadable { code: "message_too_large", .. }, _) => {
                            prop_assert!(line.len() > max);
                        }
                        (Framed::Unreadable { code: "parse_error", .. }, Err(_)) => {
                            prop_assert!(line.len() <= max);
                        }
                        (f, t) => prop_assert!(false, "{:?} for {:?}", f, t),
                    }
                }
            }
        }
    }
}
