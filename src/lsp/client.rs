//! One running language server: its process (started like a command, in the command sandbox),
//! JSON-RPC over its stdin and stdout, the documents pablo has shown it and the diagnostics it
//! published for them.
//!
//! A reader task reads every message: responses go to the request that waits for them, the
//! server's own requests (`workspace/configuration`, capability registration) get a neutral
//! answer so it never stalls, and `publishDiagnostics` is kept per document with the version it
//! is for. A writer task owns stdin. When the server ends, every waiter is woken and told so.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use lsp_types::notification::Notification;
use lsp_types::request::Request;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot, watch};

use super::frame;
use crate::process::sandbox::Sandbox;
use crate::process::server::{ServerProcess, ServerSpawn, spawn_server};

/// What starting one server needs.
#[derive(Debug, Clone)]
pub(crate) struct ClientSpec {
    /// The config name (`pyright`), for messages.
    pub(crate) name: String,
    pub(crate) argv: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
    /// The project root the server is started at (its working directory and `rootUri`).
    pub(crate) root: PathBuf,
    pub(crate) log: PathBuf,
    pub(crate) sandbox: Sandbox,
    pub(crate) initialization_options: Option<Value>,
    pub(crate) startup_timeout: Duration,
}

/// The diagnostics a server last published for one document.
#[derive(Debug, Clone, Default)]
struct Published {
    version: Option<i32>,
    /// Which publication this was (of all, for this client), to tell a new one from an old one
    /// when the server gives no version.
    seq: u64,
    diagnostics: Vec<lsp_types::Diagnostic>,
}

/// A document as the server has it: pablo's text, not necessarily the file's.
struct OpenDoc {
    version: i32,
    text: String,
    /// The publication count when this version was sent.
    sent_at: u64,
}

type Pending = HashMap<i64, oneshot::Sender<Result<Value, String>>>;

/// How long an answer for an exact text is reused.
const REMEMBER_FOR: Duration = Duration::from_secs(30);
/// How many such answers are kept.
const REMEMBERED: usize = 8;

/// What the server answered for one exact text of a document. The text a prompt compares with
/// was usually just checked (it is the previous edit's result), so asking again would double the
/// wait. An answer is dropped when another document changes (a file's diagnostics depend on the
/// others) and after [`REMEMBER_FOR`] (commands may change files on disk meanwhile).
struct Remembered {
    uri: String,
    text: u64,
    at: std::time::Instant,
    diagnostics: Vec<lsp_types::Diagnostic>,
}

fn text_key(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// State the reader task shares with the client.
#[derive(Default)]
struct Shared {
    pending: parking_lot::Mutex<Pending>,
    published: parking_lot::Mutex<HashMap<String, Published>>,
    seq: parking_lot::Mutex<u64>,
    dead: AtomicBool,
}

pub(crate) struct LspClient {
    name: String,
    process: ServerProcess,
    out: mpsc::UnboundedSender<Vec<u8>>,
    shared: Arc<Shared>,
    /// Bumped on every publication and when the server ends: waiters look again.
    changed: watch::Receiver<u64>,
    next_id: AtomicI64,
    /// One check at a time per server: a document holds one text at a time.
    docs: tokio::sync::Mutex<HashMap<String, OpenDoc>>,
    remembered: parking_lot::Mutex<Vec<Remembered>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for LspClient {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        // `process` kills the server's whole group when it drops, right after this.
    }
}

impl LspClient {
    /// Starts the server and completes the `initialize` handshake within the spec's timeout.
    pub(crate) async fn start(spec: &ClientSpec) -> Result<Self, String> {
        if let Some(dir) = spec.log.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        // Bounded: a server that floods stderr fills a log of a fixed size, not the disk.
        let stderr =
            crate::process::log::bounded_log(&spec.log, crate::process::log::MAX_LOG_BYTES)
                .map_err(|e| format!("cannot open the log {}: {e}", spec.log.display()))?
                .stderr;
        let spawn = ServerSpawn {
            argv: spec.argv.clone(),
            env: spec.env.clone(),
            cwd: spec.root.clone(),
            stderr,
            sandbox: spec.sandbox.clone(),
        };
        let (process, pipes) = tokio::task::spawn_blocking(move || spawn_server(spawn))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        let shared = Arc::new(Shared::default());
        let (out, mut outgoing) = mpsc::unbounded_channel::<Vec<u8>>();
        let (changed_tx, changed) = watch::channel(0u64);
        let mut stdin = pipes.stdin;
        let writer = tokio::spawn(async move {
            while let Some(bytes) = outgoing.recv().await {
                if stdin.write_all(&bytes).await.is_err() {
                    break;
                }
            }
        });
        let reader = tokio::spawn(read_loop(
            tokio::io::BufReader::new(pipes.stdout),
            shared.clone(),
            out.clone(),
            changed_tx,
            spec.root.clone(),
        ));
        let client = Self {
            name: spec.name.clone(),
            process,
            out,
            shared,
            changed,
            next_id: AtomicI64::new(1),
            docs: tokio::sync::Mutex::new(HashMap::new()),
            remembered: parking_lot::Mutex::new(Vec::new()),
            tasks: vec![writer, reader],
        };
        client.initialize(spec).await?;
        Ok(client)
    }

    async fn initialize(&self, spec: &ClientSpec) -> Result<(), String> {
        let root = file_uri(&spec.root).unwrap_or_default();
        let params = json!({
            // Not pablo's pid: the server runs in a PID namespace of its own where that pid is
            // not pablo (servers that watch their parent would see it gone and exit). Its end is
            // tied to pablo's by the process machinery instead.
            "processId": null,
            "clientInfo": {"name": "pablo", "version": env!("CARGO_PKG_VERSION")},
            "rootUri": root,
            "rootPath": spec.root.display().to_string(),
            "workspaceFolders": [{"uri": root, "name": "workspace"}],
            "initializationOptions": spec.initialization_options,
            "capabilities": {
                "general": {"positionEncodings": ["utf-16"]},
                "workspace": {"configuration": true, "workspaceFolders": true,
                              "symbol": {"dynamicRegistration": false}},
                "textDocument": {
                    "synchronization": {"dynamicRegistration": false, "didSave": false},
                    "publishDiagnostics": {"versionSupport": true, "relatedInformation": false},
                    "definition": {"linkSupport": false},
                    "references": {},
                    "hover": {"contentFormat": ["plaintext", "markdown"]},
                    "documentSymbol": {"hierarchicalDocumentSymbolSupport": true}
                }
            }
        });
        let r = self
            .raw_request(
                lsp_types::request::Initialize::METHOD,
                params,
                spec.startup_timeout,
            )
            .await;
        r.map_err(|e| format!("initialize: {e}"))?;
        self.notify::<lsp_types::notification::Initialized>(lsp_types::InitializedParams {});
        Ok(())
    }

    /// Whether the server still runs and its output still reads.
    pub(crate) fn alive(&self) -> bool {
        self.process.exit_info().is_none() && !self.shared.dead.load(Ordering::Acquire)
    }

    pub(crate) fn notify<N: Notification>(&self, params: N::Params) {
        let msg = json!({"jsonrpc": "2.0", "method": N::METHOD, "params": params});
        let _ = self.out.send(frame::encode(msg.to_string().as_bytes()));
    }

    /// A typed request, answered within `timeout`.
    pub(crate) async fn request<R: Request>(
        &self,
        params: R::Params,
        timeout: Duration,
    ) -> Result<R::Result, String> {
        let params = serde_json::to_value(params).map_err(|e| e.to_string())?;
        let value = self.raw_request(R::METHOD, params, timeout).await?;
        serde_json::from_value(value).map_err(|e| {
            format!(
                "{}: the answer to {} is malformed: {e}",
                self.name,
                R::METHOD
            )
        })
    }

    async fn raw_request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, String> {
        if !self.alive() {
            return Err(format!("{} is not running", self.name));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.shared.pending.lock().insert(id, tx);
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let _ = self.out.send(frame::encode(msg.to_string().as_bytes()));
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(format!("{} exited before answering {method}", self.name)),
            Err(_) => {
                self.shared.pending.lock().remove(&id);
                let cancel = json!({"jsonrpc": "2.0", "method": "$/cancelRequest",
                                    "params": {"id": id}});
                let _ = self.out.send(frame::encode(cancel.to_string().as_bytes()));
                Err(format!(
                    "{} did not answer {method} within {}",
                    self.name,
                    seconds(timeout)
                ))
            }
        }
    }

    /// Shows the server `text` as the content of `uri` (opened the first time, a full change
    /// after), unless it already has exactly that text. Returns the version and the publication
    /// count when it was sent.
    async fn sync(
        &self,
        docs: &mut HashMap<String, OpenDoc>,
        uri: &str,
        language_id: &str,
        text: &str,
    ) -> Result<(i32, u64), String> {
        let parsed: lsp_types::Uri = uri.parse().map_err(|_| format!("bad uri {uri}"))?;
        if let Some(doc) = docs.get(uri)
            && doc.text == text
        {
            return Ok((doc.version, doc.sent_at));
        }
        // Another document's answers may depend on this one's text, which changes now.
        self.remembered.lock().retain(|r| r.uri == uri);
        let sent_at = *self.shared.seq.lock();
        match docs.get_mut(uri) {
            Some(doc) => {
                doc.version += 1;
                doc.text = text.to_string();
                doc.sent_at = sent_at;
                self.notify::<lsp_types::notification::DidChangeTextDocument>(
                    lsp_types::DidChangeTextDocumentParams {
                        text_document: lsp_types::VersionedTextDocumentIdentifier {
                            uri: parsed,
                            version: doc.version,
                        },
                        content_changes: vec![lsp_types::TextDocumentContentChangeEvent {
                            range: None,
                            range_length: None,
                            text: text.to_string(),
                        }],
                    },
                );
                Ok((doc.version, sent_at))
            }
            None => {
                self.notify::<lsp_types::notification::DidOpenTextDocument>(
                    lsp_types::DidOpenTextDocumentParams {
                        text_document: lsp_types::TextDocumentItem {
                            uri: parsed,
                            language_id: language_id.to_string(),
                            version: 1,
                            text: text.to_string(),
                        },
                    },
                );
                docs.insert(
                    uri.to_string(),
                    OpenDoc {
                        version: 1,
                        text: text.to_string(),
                        sent_at,
                    },
                );
                Ok((1, sent_at))
            }
        }
    }

    /// Shows the server `text` as `uri`'s content and returns what it publishes for that text,
    /// waiting at most `wait` for it.
    pub(crate) async fn diagnostics(
        &self,
        uri: &str,
        language_id: &str,
        text: &str,
        wait: Duration,
    ) -> Result<Vec<lsp_types::Diagnostic>, Unanswered> {
        let mut docs = self.docs.lock().await;
        let key = text_key(text);
        if let Some(r) = self
            .remembered
            .lock()
            .iter()
            .find(|r| r.uri == uri && r.text == key && r.at.elapsed() < REMEMBER_FOR)
        {
            return Ok(r.diagnostics.clone());
        }
        let (version, sent_at) = self
            .sync(&mut docs, uri, language_id, text)
            .await
            .map_err(Unanswered::Failed)?;
        let mut changed = self.changed.clone();
        let found = tokio::time::timeout(wait, async {
            loop {
                if let Some(p) = self.shared.published.lock().get(uri)
                    && (p.version == Some(version) || (p.version.is_none() && p.seq > sent_at))
                {
                    return Ok(p.diagnostics.clone());
                }
                if !self.alive() {
                    return Err(format!("{} exited", self.name));
                }
                if changed.changed().await.is_err() {
                    return Err(format!("{} exited", self.name));
                }
            }
        })
        .await;
        if let Ok(Ok(list)) = &found {
            let mut kept = self.remembered.lock();
            kept.retain(|r| r.uri == uri && r.text != key && r.at.elapsed() < REMEMBER_FOR);
            kept.push(Remembered {
                uri: uri.to_string(),
                text: key,
                at: std::time::Instant::now(),
                diagnostics: list.clone(),
            });
            if kept.len() > REMEMBERED {
                kept.remove(0);
            }
        }
        match found {
            Ok(r) => r.map_err(Unanswered::Failed),
            Err(_) => Err(Unanswered::Late(format!(
                "{}: no diagnostics within {}",
                self.name,
                seconds(wait)
            ))),
        }
    }

    /// Makes sure the server holds `text` for `uri` (before a query about it).
    pub async fn show(&self, uri: &str, language_id: &str, text: &str) -> Result<(), String> {
        let mut docs = self.docs.lock().await;
        self.sync(&mut docs, uri, language_id, text)
            .await
            .map(|_| ())
    }
}

/// Why a server gave no diagnostics: it is slow (it may still answer if asked to wait longer),
/// or it cannot (it exited, it could not start, the text could not be sent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unanswered {
    Late(String),
    Failed(String),
}

impl Unanswered {
    pub(crate) fn text(&self) -> &str {
        match self {
            Self::Late(t) | Self::Failed(t) => t,
        }
    }
}

/// `1.5 s`, `300 ms`.
pub(crate) fn seconds(d: Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{} ms", d.as_millis())
    } else {
        let s = format!("{:.1}", d.as_secs_f64());
        format!("{} s", s.trim_end_matches(".0"))
    }
}

/// The `file://` URI of an absolute path.
pub(crate) fn file_uri(path: &std::path::Path) -> Option<String> {
    url::Url::from_file_path(path).ok().map(String::from)
}

/// Reads every message of the server until its output ends.
async fn read_loop(
    mut input: tokio::io::BufReader<tokio::net::unix::pipe::Receiver>,
    shared: Arc<Shared>,
    out: mpsc::UnboundedSender<Vec<u8>>,
    changed: watch::Sender<u64>,
    root: PathBuf,
) {
    loop {
        let body = match frame::read_message(&mut input).await {
            Ok(b) => b,
            Err(_) => break,
        };
        let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
            continue;
        };
        let method = msg.get("method").and_then(Value::as_str);
        let id = msg.get("id").cloned();
        match (method, id) {
            (None, Some(id)) => {
                let Some(id) = id.as_i64() else { continue };
                let answer = match msg.get("error") {
                    Some(e) => Err(e
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("an error without a message")
                        .to_string()),
                    None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
                };
                if let Some(tx) = shared.pending.lock().remove(&id) {
                    let _ = tx.send(answer);
                }
            }
            (Some(method), Some(id)) => {
                let reply = answer_server_request(method, msg.get("params"), &root);
                let msg = match reply {
                    Some(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    None => json!({"jsonrpc": "2.0", "id": id,
                                   "error": {"code": -32601, "message": "not supported by pablo"}}),
                };
                let _ = out.send(frame::encode(msg.to_string().as_bytes()));
            }
            (Some(lsp_types::notification::PublishDiagnostics::METHOD), None) => {
                let Some(params) = msg.get("params").cloned().and_then(|p| {
                    serde_json::from_value::<lsp_types::PublishDiagnosticsParams>(p).ok()
                }) else {
                    continue;
                };
                let seq = {
                    let mut s = shared.seq.lock();
                    *s += 1;
                    *s
                };
                shared.published.lock().insert(
                    params.uri.as_str().to_string(),
                    Published {
                        version: params.version,
                        seq,
                        diagnostics: params.diagnostics,
                    },
                );
                changed.send_modify(|n| *n += 1);
            }
            _ => {}
        }
    }
    shared.dead.store(true, Ordering::Release);
    // Dropping the senders tells every waiting request the server is gone.
    shared.pending.lock().clear();
    changed.send_modify(|n| *n += 1);
}

/// The answer to a request the server sends pablo; `None`: not supported.
fn answer_server_request(
    method: &str,
    params: Option<&Value>,
    root: &std::path::Path,
) -> Option<Value> {
    match method {
        // No settings of pablo's own: the server uses its defaults (and the project's files).
        "workspace/configuration" => {
            let n = params
                .and_then(|p| p.get("items"))
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            Some(Value::Array(vec![Value::Null; n]))
        }
        "workspace/workspaceFolders" => Some(json!([{"uri": file_uri(root), "name": "workspace"}])),
        "client/registerCapability"
        | "client/unregisterCapability"
        | "window/workDoneProgress/create"
        | "window/showMessageRequest"
        | "workspace/diagnostic/refresh"
        | "workspace/semanticTokens/refresh"
        | "workspace/inlayHint/refresh"
        | "workspace/codeLens/refresh" => Some(Value::Null),
        _ => None,
    }
}
