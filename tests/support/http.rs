//! A scripted HTTP/1.1 server on 127.0.0.1 for tests that need a real model endpoint.
//!
//! Tests queue responses in order; each incoming request takes the next one and is recorded
//! (method, path, headers, body) so the test can assert on what the client sent. Responses can be
//! streamed in chunks with delays between them, cut mid-way (the socket is closed without the
//! final chunk), or left hanging until the client goes away — the shapes real providers produce
//! when they fail. The `openai` and `anthropic` builders produce the SSE bodies those providers
//! stream, so tests read as scripts of a conversation rather than as byte strings.
//!
//! ```ignore
//! let server = ScriptedServer::start().await;
//! server.push(ScriptedResponse::sse(openai::Stream::new().text(&["Hel", "lo"]).finish("stop").done()));
//! // … point the client at server.base_url() …
//! let req = &server.requests()[0];
//! assert_eq!(req.path, "/v1/chat/completions");
//! ```

// Each area's tests use a different part of this module; panics are how test support fails.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// One piece of a response body, sent after an optional pause.
#[derive(Debug, Clone)]
pub struct Chunk {
    pub delay: Duration,
    pub bytes: Vec<u8>,
}

/// What happens after the last scripted chunk has been written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// A complete response (final zero-length chunk for chunked bodies).
    Complete,
    /// Close the socket abruptly: the client sees a truncated body.
    Cut,
    /// Send nothing more and keep the socket open until the client closes it.
    Hang,
}

/// One scripted response. Bodies with more than one chunk (and every SSE body) are sent with
/// `Transfer-Encoding: chunked`, one HTTP chunk per scripted chunk, so the client really receives
/// them separately.
#[derive(Debug, Clone)]
pub struct ScriptedResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub chunks: Vec<Chunk>,
    chunked: bool,
    ending: Ending,
    /// Keep only this many chunks and then apply `ending`.
    stop_after: Option<usize>,
}

impl ScriptedResponse {
    /// An empty response with this status.
    pub fn new(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            chunks: Vec::new(),
            chunked: false,
            ending: Ending::Complete,
            stop_after: None,
        }
    }

    /// `200 text/event-stream`, one chunk per event (each event a complete `…\n\n` string).
    pub fn sse<S: Into<String>>(events: impl IntoIterator<Item = S>) -> Self {
        let mut r = Self::new(200).header("content-type", "text/event-stream");
        r.chunked = true;
        for e in events {
            r.chunks.push(Chunk {
                delay: Duration::ZERO,
                bytes: e.into().into_bytes(),
            });
        }
        r
    }

    /// A JSON body with `Content-Length` (errors, model lists).
    pub fn json(status: u16, body: &Value) -> Self {
        Self::new(status)
            .header("content-type", "application/json")
            .body(body.to_string())
    }

    /// A provider-style error: `{"error":{"type":…,"message":…}}`.
    pub fn error(status: u16, kind: &str, message: &str) -> Self {
        Self::json(
            status,
            &serde_json::json!({"type": "error", "error": {"type": kind, "message": message}}),
        )
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Appends a chunk sent immediately.
    pub fn body(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.chunks.push(Chunk {
            delay: Duration::ZERO,
            bytes: bytes.into(),
        });
        self
    }

    /// Appends a chunk sent after `delay`; makes the body chunked.
    pub fn delayed(mut self, delay: Duration, bytes: impl Into<Vec<u8>>) -> Self {
        self.chunked = true;
        self.chunks.push(Chunk {
            delay,
            bytes: bytes.into(),
        });
        self
    }

    /// Pauses before every chunk after the first (a slow stream).
    pub fn pace(mut self, delay: Duration) -> Self {
        self.chunked = true;
        for c in self.chunks.iter_mut().skip(1) {
            c.delay = delay;
        }
        self
    }

    /// Sends the first `k` chunks, then closes the socket without finishing the body.
    pub fn cut_after(mut self, k: usize) -> Self {
        self.chunked = true;
        self.stop_after = Some(k);
        self.ending = Ending::Cut;
        self
    }

    /// Sends the first `k` chunks, then stays silent with the socket open until the client
    /// closes it (idle timeouts, cancellation).
    pub fn hang_after(mut self, k: usize) -> Self {
        self.chunked = true;
        self.stop_after = Some(k);
        self.ending = Ending::Hang;
        self
    }
}

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    /// Path and query, as sent (`/v1/chat/completions`).
    pub path: String,
    /// Header names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// The first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON (`Value::Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// Computes a response from the request and its position (0 for the first request).
pub type Responder = Arc<dyn Fn(&RecordedRequest, usize) -> ScriptedResponse + Send + Sync>;

#[derive(Default)]
struct Shared {
    queue: Mutex<VecDeque<ScriptedResponse>>,
    /// Answers requests when the queue is empty (scripts whose answers depend on the request).
    responder: Mutex<Option<Responder>>,
    requests: Mutex<Vec<RecordedRequest>>,
    arrived: Notify,
}

/// The server. It runs until dropped. When the queue is empty, requests get a 500 whose message
/// says so, which makes a missing script step obvious in the test's failure.
pub struct ScriptedServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl ScriptedServer {
    /// Binds 127.0.0.1 on a free port and starts serving.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared::default());
        let s = shared.clone();
        let task = tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                tokio::spawn(serve_connection(sock, s.clone()));
            }
        });
        Self { addr, shared, task }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1`, the base URL OpenAI-compatible and Anthropic clients take.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues the next response.
    pub fn push(&self, response: ScriptedResponse) {
        self.shared
            .queue
            .lock()
            .expect("queue lock")
            .push_back(response);
    }

    /// Answers every request the queue does not with `f(request, index)`.
    pub fn respond_with(
        &self,
        f: impl Fn(&RecordedRequest, usize) -> ScriptedResponse + Send + Sync + 'static,
    ) {
        *self.shared.responder.lock().expect("responder lock") = Some(Arc::new(f));
    }

    /// Every request received so far, in order.
    /// The JSON body of every request so far, in order.
    pub fn request_bodies(&self) -> Vec<Value> {
        self.requests().iter().map(|r| r.json()).collect()
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests.lock().expect("requests lock").clone()
    }

    /// The text of the newest user message in the last request received (its JSON when the
    /// content is a list of parts).
    pub fn last_user_text(&self) -> String {
        let body = self.requests().last().expect("a request").json();
        let messages = body["messages"].as_array().expect("messages").clone();
        let user = messages
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .expect("a user message");
        match &user["content"] {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }

    /// Responses still queued (not yet taken by a request).
    pub fn pending(&self) -> usize {
        self.shared.queue.lock().expect("queue lock").len()
    }

    /// Waits until at least `n` requests have arrived (panics after 10 s, a safety net).
    pub async fn wait_for_requests(&self, n: usize) {
        let wait = async {
            loop {
                let notified = self.shared.arrived.notified();
                if self.shared.requests.lock().expect("requests lock").len() >= n {
                    return;
                }
                notified.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .expect("requests did not arrive in 10 s");
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve_connection(mut sock: TcpStream, shared: Arc<Shared>) {
    let mut buf = Vec::new();
    loop {
        let Some(request) = read_request(&mut sock, &mut buf).await else {
            return;
        };
        let queued = shared.queue.lock().expect("queue lock").pop_front();
        let index = {
            let mut requests = shared.requests.lock().expect("requests lock");
            requests.push(request.clone());
            requests.len() - 1
        };
        let responder = shared.responder.lock().expect("responder lock").clone();
        let response = queued.or_else(|| responder.map(|f| f(&request, index)));
        shared.arrived.notify_waiters();
        let response = response.unwrap_or_else(|| {
            ScriptedResponse::error(
                500,
                "scripted_server",
                &format!(
                    "scripted server: no response queued for {} {}",
                    request.method, request.path
                ),
            )
        });
        let close = request
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        if !write_response(&mut sock, response).await || close {
            let _ = sock.shutdown().await;
            return;
        }
    }
}

/// Reads one request; `None` when the client closed the connection or sent garbage.
async fn read_request(sock: &mut TcpStream, buf: &mut Vec<u8>) -> Option<RecordedRequest> {
    let head_end = loop {
        if let Some(i) = find(buf, b"\r\n\r\n") {
            break i;
        }
        if !read_more(sock, buf).await {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    buf.drain(..head_end + 4);
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let path = first.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let get = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let body = if get("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        read_chunked(sock, buf).await?
    } else {
        let len: usize = get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        while buf.len() < len {
            if !read_more(sock, buf).await {
                return None;
            }
        }
        buf.drain(..len).collect()
    };
    Some(RecordedRequest {
        method,
        path,
        headers,
        body,
    })
}

async fn read_chunked(sock: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = loop {
            if let Some(i) = find(buf, b"\r\n") {
                break i;
            }
            if !read_more(sock, buf).await {
                return None;
            }
        };
        let size_text = String::from_utf8_lossy(&buf[..line_end]).into_owned();
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        buf.drain(..line_end + 2);
        while buf.len() < size + 2 {
            if !read_more(sock, buf).await {
                return None;
            }
        }
        body.extend(buf.drain(..size));
        buf.drain(..2);
        if size == 0 {
            return Some(body);
        }
    }
}

async fn read_more(sock: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut tmp = [0u8; 16 * 1024];
    match sock.read(&mut tmp).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&tmp[..n]);
            true
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Writes one response; `false` when the connection must not be reused.
async fn write_response(sock: &mut TcpStream, r: ScriptedResponse) -> bool {
    let chunks: Vec<Chunk> = match r.stop_after {
        Some(k) => r.chunks.iter().take(k).cloned().collect(),
        None => r.chunks.clone(),
    };
    let mut head = format!("HTTP/1.1 {} {}\r\n", r.status, reason(r.status));
    for (n, v) in &r.headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    if r.chunked {
        head.push_str("transfer-encoding: chunked\r\n\r\n");
    } else {
        let len: usize = chunks.iter().map(|c| c.bytes.len()).sum();
        head.push_str(&format!("content-length: {len}\r\n\r\n"));
    }
    if sock.write_all(head.as_bytes()).await.is_err() {
        return false;
    }
    for c in chunks {
        if !c.delay.is_zero() {
            tokio::time::sleep(c.delay).await;
        }
        let framed = if r.chunked {
            if c.bytes.is_empty() {
                continue;
            }
            let mut f = format!("{:x}\r\n", c.bytes.len()).into_bytes();
            f.extend_from_slice(&c.bytes);
            f.extend_from_slice(b"\r\n");
            f
        } else {
            c.bytes
        };
        if sock.write_all(&framed).await.is_err() || sock.flush().await.is_err() {
            return false;
        }
    }
    match r.ending {
        Ending::Complete => {
            if r.chunked && sock.write_all(b"0\r\n\r\n").await.is_err() {
                return false;
            }
            sock.flush().await.is_ok()
        }
        Ending::Cut => {
            let _ = sock.shutdown().await;
            false
        }
        Ending::Hang => {
            // Wait for the client to close (read returns 0 or fails); whatever it sends is
            // ignored.
            let mut tmp = [0u8; 1024];
            while let Ok(n) = sock.read(&mut tmp).await {
                if n == 0 {
                    break;
                }
            }
            false
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// One SSE event with only a data line.
pub fn data_event(data: &str) -> String {
    format!("data: {data}\n\n")
}

/// One SSE event with a name and a data line.
pub fn named_event(name: &str, data: &str) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// A listener on 127.0.0.1 that accepts and counts connections (nothing is ever answered): the
/// port, and how many connections reached it.
pub async fn counting_listener() -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let n = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c = n.clone();
    tokio::spawn(async move {
        while let Ok((_s, _)) = l.accept().await {
            c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    (port, n)
}

/// OpenAI Chat Completions streams (`data: {chat.completion.chunk}` … `data: [DONE]`).
pub mod openai {
    use serde_json::{Value, json};

    use super::data_event;

    /// Builds the events of one streamed completion. Each method appends events; `done()`
    /// returns them for [`super::ScriptedResponse::sse`].
    #[derive(Debug, Clone, Default)]
    pub struct Stream {
        events: Vec<String>,
    }

    fn chunk(delta: Value, finish: Option<&str>) -> String {
        data_event(
            &json!({
                "id": "chatcmpl-test",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "test-model",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            })
            .to_string(),
        )
    }

    impl Stream {
        /// Starts with the usual role-only first chunk.
        pub fn new() -> Self {
            Self {
                events: vec![chunk(json!({"role": "assistant", "content": ""}), None)],
            }
        }

        /// One text delta per part.
        pub fn text(mut self, parts: &[&str]) -> Self {
            for p in parts {
                self.events.push(chunk(json!({"content": p}), None));
            }
            self
        }

        /// A tool call at `index`: a first chunk with id and name, then one chunk per argument
        /// fragment (fragments need not be valid JSON on their own).
        pub fn tool_call(mut self, index: u32, id: &str, name: &str, fragments: &[&str]) -> Self {
            self.events.push(chunk(
                json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""}}]}),
                None,
            ));
            self.fragments(index, fragments)
        }

        /// Argument fragments for the call at `index` (for interleaving parallel calls).
        pub fn fragments(mut self, index: u32, fragments: &[&str]) -> Self {
            for f in fragments {
                self.events.push(chunk(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": f}}]}),
                    None,
                ));
            }
            self
        }

        /// The chunk carrying `finish_reason` (`stop`, `tool_calls`, `length`).
        pub fn finish(mut self, reason: &str) -> Self {
            self.events.push(chunk(json!({}), Some(reason)));
            self
        }

        /// One reasoning delta per part, in the field the server uses (`reasoning_content` for
        /// DeepSeek, vLLM and llama.cpp; `reasoning` for OpenRouter and Ollama).
        pub fn reasoning(mut self, field: &str, parts: &[&str]) -> Self {
            for p in parts {
                self.events.push(chunk(json!({ field: p }), None));
            }
            self
        }

        /// The usage chunk with a cached share (`prompt_tokens_details.cached_tokens`).
        pub fn usage_cached(
            mut self,
            prompt_tokens: u64,
            cached: u64,
            completion_tokens: u64,
        ) -> Self {
            self.events.push(data_event(
                &json!({
                    "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1,
                    "model": "test-model", "choices": [],
                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                              "total_tokens": prompt_tokens + completion_tokens,
                              "prompt_tokens_details": {"cached_tokens": cached}},
                })
                .to_string(),
            ));
            self
        }

        /// The usage chunk sent when `stream_options.include_usage` is set (empty `choices`).
        pub fn usage(mut self, prompt_tokens: u64, completion_tokens: u64) -> Self {
            self.events.push(data_event(
                &json!({
                    "id": "chatcmpl-test",
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": "test-model",
                    "choices": [],
                    "usage": {"prompt_tokens": prompt_tokens,
                              "completion_tokens": completion_tokens,
                              "total_tokens": prompt_tokens + completion_tokens},
                })
                .to_string(),
            ));
            self
        }

        /// Any event, as given (e.g. `data: {...}\n\n`).
        pub fn raw(mut self, event: impl Into<String>) -> Self {
            self.events.push(event.into());
            self
        }

        /// Appends `data: [DONE]` and returns the events.
        pub fn done(mut self) -> Vec<String> {
            self.events.push(data_event("[DONE]"));
            self.events
        }

        /// The events so far, without `[DONE]` (for truncated streams).
        pub fn events(self) -> Vec<String> {
            self.events
        }
    }

    /// A whole text answer: `text` split at spaces into deltas, `stop`, usage, `[DONE]`.
    pub fn text_answer(text: &str) -> Vec<String> {
        let parts: Vec<String> = super::split_words(text);
        let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
        Stream::new()
            .text(&refs)
            .finish("stop")
            .usage(10, parts.len() as u64)
            .done()
    }

    /// One tool call with its arguments streamed in `fragments`, `tool_calls`, usage, `[DONE]`.
    pub fn tool_call_answer(id: &str, name: &str, fragments: &[&str]) -> Vec<String> {
        Stream::new()
            .tool_call(0, id, name, fragments)
            .finish("tool_calls")
            .usage(10, 5)
            .done()
    }
}

/// Anthropic Messages streams (`event: message_start` … `event: message_stop`).
pub mod anthropic {
    use serde_json::{Value, json};

    use super::named_event;

    /// Builds the events of one streamed message; content block indices are assigned in order.
    #[derive(Debug, Clone)]
    pub struct Stream {
        events: Vec<String>,
        next_index: u32,
    }

    fn ev(name: &str, data: Value) -> String {
        named_event(name, &data.to_string())
    }

    impl Stream {
        /// `message_start` with `input_tokens` of usage.
        pub fn new(input_tokens: u64) -> Self {
            Self {
                events: vec![ev(
                    "message_start",
                    json!({"type": "message_start", "message": {
                        "id": "msg_test", "type": "message", "role": "assistant",
                        "model": "test-model", "content": [], "stop_reason": null,
                        "stop_sequence": null,
                        "usage": {"input_tokens": input_tokens, "output_tokens": 1}}}),
                )],
                next_index: 0,
            }
        }

        /// A text block: start, one `text_delta` per part, stop.
        pub fn text(mut self, parts: &[&str]) -> Self {
            let i = self.next_index;
            self.next_index += 1;
            self.events.push(ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": i,
                       "content_block": {"type": "text", "text": ""}}),
            ));
            for p in parts {
                self.events.push(ev(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": i,
                           "delta": {"type": "text_delta", "text": p}}),
                ));
            }
            self.events.push(ev(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": i}),
            ));
            self
        }

        /// A `tool_use` block: start, one `input_json_delta` per fragment, stop.
        pub fn tool_use(mut self, id: &str, name: &str, fragments: &[&str]) -> Self {
            let i = self.next_index;
            self.next_index += 1;
            self.events.push(ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": i,
                       "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
            ));
            for f in fragments {
                self.events.push(ev(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": i,
                           "delta": {"type": "input_json_delta", "partial_json": f}}),
                ));
            }
            self.events.push(ev(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": i}),
            ));
            self
        }

        /// A `thinking` block: start, one `thinking_delta` per part, the signature, stop.
        pub fn thinking(mut self, parts: &[&str], signature: &str) -> Self {
            let i = self.next_index;
            self.next_index += 1;
            self.events.push(ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": i,
                       "content_block": {"type": "thinking", "thinking": ""}}),
            ));
            for p in parts {
                self.events.push(ev(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": i,
                           "delta": {"type": "thinking_delta", "thinking": p}}),
                ));
            }
            self.events.push(ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": i,
                       "delta": {"type": "signature_delta", "signature": signature}}),
            ));
            self.events.push(ev(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": i}),
            ));
            self
        }

        /// A `redacted_thinking` block carrying `data`.
        pub fn redacted_thinking(mut self, data: &str) -> Self {
            let i = self.next_index;
            self.next_index += 1;
            self.events.push(ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": i,
                       "content_block": {"type": "redacted_thinking", "data": data}}),
            ));
            self.events.push(ev(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": i}),
            ));
            self
        }

        /// `message_start` usage with cache reads and writes.
        pub fn with_cache(input_tokens: u64, cache_read: u64, cache_write: u64) -> Self {
            Self {
                events: vec![ev(
                    "message_start",
                    json!({"type": "message_start", "message": {
                        "id": "msg_test", "type": "message", "role": "assistant",
                        "model": "test-model", "content": [], "stop_reason": null,
                        "stop_sequence": null,
                        "usage": {"input_tokens": input_tokens, "output_tokens": 1,
                                  "cache_read_input_tokens": cache_read,
                                  "cache_creation_input_tokens": cache_write}}}),
                )],
                next_index: 0,
            }
        }

        pub fn ping(mut self) -> Self {
            self.events.push(ev("ping", json!({"type": "ping"})));
            self
        }

        /// A mid-stream `error` event (`overloaded_error`, `api_error`).
        pub fn error(mut self, kind: &str, message: &str) -> Self {
            self.events.push(ev(
                "error",
                json!({"type": "error", "error": {"type": kind, "message": message}}),
            ));
            self
        }

        /// `message_delta` with the stop reason and output tokens, then `message_stop`.
        pub fn stop(mut self, stop_reason: &str, output_tokens: u64) -> Vec<String> {
            self.events.push(ev(
                "message_delta",
                json!({"type": "message_delta",
                       "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                       "usage": {"output_tokens": output_tokens}}),
            ));
            self.events
                .push(ev("message_stop", json!({"type": "message_stop"})));
            self.events
        }

        /// Any event, as given.
        pub fn raw(mut self, event: impl Into<String>) -> Self {
            self.events.push(event.into());
            self
        }

        /// The events so far, without the stop events (for truncated streams).
        pub fn events(self) -> Vec<String> {
            self.events
        }
    }

    /// A whole text answer: `text` split at spaces into deltas, `end_turn`.
    pub fn text_answer(text: &str) -> Vec<String> {
        let parts = super::split_words(text);
        let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
        Stream::new(10)
            .text(&refs)
            .stop("end_turn", parts.len() as u64)
    }

    /// One tool call with its input streamed in `fragments`, `tool_use`.
    pub fn tool_call_answer(id: &str, name: &str, fragments: &[&str]) -> Vec<String> {
        Stream::new(10)
            .tool_use(id, name, fragments)
            .stop("tool_use", 5)
    }
}

/// OpenAI Responses streams (`event: response.…` with typed JSON data), ending in
/// `response.completed`.
pub mod responses {
    use serde_json::{Value, json};

    use super::named_event;

    /// Builds the events of one streamed response; output indices are assigned in order.
    #[derive(Debug, Clone, Default)]
    pub struct Stream {
        events: Vec<String>,
        next_index: u32,
    }

    fn ev(data: Value) -> String {
        let name = data["type"].as_str().unwrap_or("message").to_string();
        named_event(&name, &data.to_string())
    }

    impl Stream {
        /// Starts with `response.created`.
        pub fn new() -> Self {
            Self {
                events: vec![ev(json!({"type": "response.created",
                    "response": {"id": "resp_test", "status": "in_progress"}}))],
                next_index: 0,
            }
        }

        /// A reasoning item: one summary delta per part, then the item with its encrypted content.
        pub fn reasoning(mut self, id: &str, summary: &[&str], encrypted: &str) -> Self {
            let i = self.next_index;
            self.next_index += 1;
            self.events.push(ev(
                json!({"type": "response.output_item.added", "output_index": i,
                "item": {"type": "reasoning", "id": id, "summary": []}}),
            ));
            for p in summary {
                self.events
                    .push(ev(json!({"type": "response.reasoning_summary_text.delta",
                    "item_id": id, "output_index": i, "summary_index": 0, "delta": p})));
            }
            let text: String = summary.concat();
            self.events.push(ev(
                json!({"type": "response.output_item.done", "output_index": i,
                "item": {"type": "reasoning", "id": id,
                         "summary": [{"type": "summary_text", "text": text}],
                         "encrypted_content": encrypted}}),
            ));
            self
        }

        /// An output message streamed as text deltas.
        pub fn text(mut self, parts: &[&str]) -> Self {
            let i = self.next_index;
            self.next_index += 1;
            self.events.push(ev(
                json!({"type": "response.output_item.added", "output_index": i,
                "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
            ));
            for p in parts {
                self.events
                    .push(ev(json!({"type": "response.output_text.delta",
                    "item_id": "msg_1", "output_index": i, "content_index": 0, "delta": p})));
            }
            let text: String = parts.concat();
            self.events.push(ev(
                json!({"type": "response.output_item.done", "output_index": i,
                "item": {"type": "message", "id": "msg_1", "role": "assistant",
                         "content": [{"type": "output_text", "text": text}]}}),
            ));
            self
        }

        /// A function call with its arguments streamed in fragments.
        pub fn function_call(mut self, call_id: &str, name: &str, fragments: &[&str]) -> Self {
            let i = self.next_index;
            self.next_index += 1;
            let item_id = format!("fc_{call_id}");
            self.events.push(ev(
                json!({"type": "response.output_item.added", "output_index": i,
                "item": {"type": "function_call", "id": item_id, "call_id": call_id,
                         "name": name, "arguments": ""}}),
            ));
            for f in fragments {
                self.events
                    .push(ev(json!({"type": "response.function_call_arguments.delta",
                    "item_id": item_id, "output_index": i, "delta": f})));
            }
            let args: String = fragments.concat();
            self.events.push(ev(
                json!({"type": "response.output_item.done", "output_index": i,
                "item": {"type": "function_call", "id": item_id, "call_id": call_id,
                         "name": name, "arguments": args}}),
            ));
            self
        }

        /// `response.completed` with usage (`cached` of the input from the cache).
        pub fn completed(
            mut self,
            input_tokens: u64,
            cached: u64,
            output_tokens: u64,
        ) -> Vec<String> {
            self.events
                .push(ev(json!({"type": "response.completed", "response": {
                "id": "resp_test", "status": "completed",
                "usage": {"input_tokens": input_tokens,
                          "input_tokens_details": {"cached_tokens": cached},
                          "output_tokens": output_tokens,
                          "total_tokens": input_tokens + output_tokens}}})));
            self.events
        }
    }
}

/// Splits after each space so the parts concatenate back to `text`.
fn split_words(text: &str) -> Vec<String> {
    text.split_inclusive(' ').map(str::to_string).collect()
}
