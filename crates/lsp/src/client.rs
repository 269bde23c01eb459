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
use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};

use super::frame;
use super::jsonrpc::{self, Id, Incoming, Outcome, ResponseError, V2};
use pablo_process::sandbox::Sandbox;
use pablo_process::server::{ServerProcess, ServerSpawn, spawn_server};

/// What starting one server needs.
#[derive(Debug, Clone)]
pub struct ClientSpec {
    /// The config name (`pyright`), for messages.
    pub name: String,
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    /// The project root the server is started at (its working directory and `rootUri`).
    pub root: PathBuf,
    pub log: PathBuf,
    pub sandbox: Sandbox,
    pub initialization_options: Option<Value>,
    pub startup_timeout: Duration,
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

pub struct LspClient {
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
    pub async fn start(spec: &ClientSpec) -> Result<Self, String> {
        if let Some(dir) = spec.log.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        // Bounded: a server that floods stderr fills a log of a fixed size, not the disk.
        let stderr = pablo_process::log::bounded_log(&spec.log, pablo_process::log::MAX_LOG_BYTES)
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
        let params = initialize_params(spec);
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
    pub fn alive(&self) -> bool {
        self.process.exit_info().is_none() && !self.shared.dead.load(Ordering::Acquire)
    }

    pub fn notify<N: Notification>(&self, params: N::Params) {
        // A notification has nobody to tell of a failure; `lsp-types` params always encode.
        let _ = self.send(&jsonrpc::Notification {
            jsonrpc: V2,
            method: N::METHOD,
            params,
        });
    }

    /// Frames `message` for the writer task. A message whose params cannot be encoded is not
    /// sent (a request fails before it waits, see [`Self::raw_request`]).
    fn send(&self, message: &impl Serialize) -> Result<(), serde_json::Error> {
        let body = jsonrpc::body(message)?;
        let _ = self.out.send(frame::encode(&body));
        Ok(())
    }

    /// A typed request, answered within `timeout`.
    pub async fn request<R: Request>(
        &self,
        params: R::Params,
        timeout: Duration,
    ) -> Result<R::Result, String> {
        let value = self.raw_request(R::METHOD, params, timeout).await?;
        serde_json::from_value(value).map_err(|e| {
            format!(
                "{}: the answer to {} is malformed: {e}",
                self.name,
                R::METHOD
            )
        })
    }

    /// A request whose answer is read by the caller (the result stays a JSON value until the
    /// method says which type it is).
    async fn raw_request(
        &self,
        method: &str,
        params: impl Serialize,
        timeout: Duration,
    ) -> Result<Value, String> {
        if !self.alive() {
            return Err(format!("{} is not running", self.name));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let request = jsonrpc::body(&jsonrpc::Request {
            jsonrpc: V2,
            id,
            method,
            params,
        })
        .map_err(|e| format!("{}: the params of {method} cannot be sent: {e}", self.name))?;
        let (tx, rx) = oneshot::channel();
        self.shared.pending.lock().insert(id, tx);
        let _ = self.out.send(frame::encode(&request));
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(format!("{} exited before answering {method}", self.name)),
            Err(_) => {
                self.shared.pending.lock().remove(&id);
                let id = match i32::try_from(id) {
                    Ok(n) => lsp_types::NumberOrString::Number(n),
                    Err(_) => lsp_types::NumberOrString::String(id.to_string()),
                };
                self.notify::<lsp_types::notification::Cancel>(lsp_types::CancelParams { id });
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
    pub async fn diagnostics(
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
pub enum Unanswered {
    Late(String),
    Failed(String),
}

impl Unanswered {
    pub fn text(&self) -> &str {
        match self {
            Self::Late(t) | Self::Failed(t) => t,
        }
    }
}

/// `1.5 s`, `300 ms`.
pub fn seconds(d: Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{} ms", d.as_millis())
    } else {
        let s = format!("{:.1}", d.as_secs_f64());
        format!("{} s", s.trim_end_matches(".0"))
    }
}

/// The `file://` URI of an absolute path.
pub fn file_uri(path: &std::path::Path) -> Option<String> {
    url::Url::from_file_path(path).ok().map(String::from)
}

/// Reads every message of the server until its output ends.
async fn read_loop<R: AsyncBufRead + Unpin>(
    mut input: R,
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
        // A message that is not JSON-RPC cannot be answered (it has no id pablo could trust):
        // it is skipped, and the server's next message is read.
        let Ok(message) = Incoming::parse(&body) else {
            continue;
        };
        match message {
            Incoming::Response {
                id: Id::Number(id),
                outcome,
            } => {
                let answer = outcome.map_err(|e| e.message);
                if let Some(tx) = shared.pending.lock().remove(&id) {
                    let _ = tx.send(answer);
                }
            }
            // pablo's ids are numbers: an answer with another id answers nothing it asked.
            Incoming::Response { .. } => {}
            Incoming::Request { id, method, params } => {
                let outcome = answer_server_request(&method, params, &root);
                let reply = jsonrpc::Response {
                    jsonrpc: V2,
                    id,
                    outcome,
                };
                if let Ok(body) = jsonrpc::body(&reply) {
                    let _ = out.send(frame::encode(&body));
                }
            }
            Incoming::Notification { method, params }
                if method == lsp_types::notification::PublishDiagnostics::METHOD =>
            {
                let Ok(params) =
                    serde_json::from_value::<lsp_types::PublishDiagnosticsParams>(params)
                else {
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
            // Progress, log messages, telemetry: nothing pablo acts on.
            Incoming::Notification { .. } => {}
        }
    }
    shared.dead.store(true, Ordering::Release);
    // Dropping the senders tells every waiting request the server is gone.
    shared.pending.lock().clear();
    changed.send_modify(|n| *n += 1);
}

/// The answer to a request the server sends pablo: a neutral result for what it may ask, an
/// error for what pablo does not support or cannot read.
fn answer_server_request(method: &str, params: Value, root: &std::path::Path) -> Outcome {
    use lsp_types::request::{self as req, Request as _};
    match method {
        // No settings of pablo's own: the server uses its defaults (and the project's files).
        req::WorkspaceConfiguration::METHOD => {
            match serde_json::from_value::<lsp_types::ConfigurationParams>(params) {
                Ok(p) => Outcome::Result(Value::Array(vec![Value::Null; p.items.len()])),
                Err(e) => Outcome::Error(ResponseError::invalid_params(method, &e)),
            }
        }
        req::WorkspaceFoldersRequest::METHOD => {
            let folders: Option<Vec<lsp_types::WorkspaceFolder>> =
                workspace_folder(root).map(|f| vec![f]);
            Outcome::Result(serde_json::to_value(folders).unwrap_or(Value::Null))
        }
        req::RegisterCapability::METHOD
        | req::UnregisterCapability::METHOD
        | req::WorkDoneProgressCreate::METHOD
        | req::ShowMessageRequest::METHOD
        | req::WorkspaceDiagnosticRefresh::METHOD
        | req::SemanticTokensRefresh::METHOD
        | req::InlayHintRefreshRequest::METHOD
        | req::CodeLensRefresh::METHOD => Outcome::Result(Value::Null),
        _ => Outcome::Error(ResponseError::method_not_found()),
    }
}

/// The workspace as the one folder a server is told of.
fn workspace_folder(root: &std::path::Path) -> Option<lsp_types::WorkspaceFolder> {
    let uri = file_uri(root)?.parse().ok()?;
    Some(lsp_types::WorkspaceFolder {
        uri,
        name: "workspace".into(),
    })
}

/// What pablo tells a server of itself and the workspace in `initialize`: the capabilities of
/// the queries it makes (diagnostics, definitions, references, hover, symbols) and nothing it
/// would not act on.
fn initialize_params(spec: &ClientSpec) -> lsp_types::InitializeParams {
    use lsp_types::{
        ClientCapabilities, ClientInfo, DocumentSymbolClientCapabilities,
        DynamicRegistrationClientCapabilities, GeneralClientCapabilities, GotoCapability,
        HoverClientCapabilities, MarkupKind, PositionEncodingKind,
        PublishDiagnosticsClientCapabilities, TextDocumentClientCapabilities,
        TextDocumentSyncClientCapabilities, WorkspaceClientCapabilities,
        WorkspaceSymbolClientCapabilities,
    };
    let folder = workspace_folder(&spec.root);
    let text_document = TextDocumentClientCapabilities {
        synchronization: Some(TextDocumentSyncClientCapabilities {
            dynamic_registration: Some(false),
            did_save: Some(false),
            ..Default::default()
        }),
        publish_diagnostics: Some(PublishDiagnosticsClientCapabilities {
            version_support: Some(true),
            related_information: Some(false),
            ..Default::default()
        }),
        definition: Some(GotoCapability {
            link_support: Some(false),
            ..Default::default()
        }),
        references: Some(DynamicRegistrationClientCapabilities::default()),
        hover: Some(HoverClientCapabilities {
            content_format: Some(vec![MarkupKind::PlainText, MarkupKind::Markdown]),
            ..Default::default()
        }),
        document_symbol: Some(DocumentSymbolClientCapabilities {
            hierarchical_document_symbol_support: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    };
    #[allow(deprecated)] // `rootUri` and `rootPath`: older servers read only these.
    lsp_types::InitializeParams {
        // Not pablo's pid: the server runs in a PID namespace of its own where that pid is not
        // pablo (servers that watch their parent would see it gone and exit). Its end is tied
        // to pablo's by the process machinery instead.
        process_id: None,
        client_info: Some(ClientInfo {
            name: "pablo".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        }),
        root_uri: folder.as_ref().map(|f| f.uri.clone()),
        root_path: Some(spec.root.display().to_string()),
        workspace_folders: folder.map(|f| vec![f]),
        initialization_options: spec.initialization_options.clone(),
        capabilities: ClientCapabilities {
            general: Some(GeneralClientCapabilities {
                position_encodings: Some(vec![PositionEncodingKind::UTF16]),
                ..Default::default()
            }),
            workspace: Some(WorkspaceClientCapabilities {
                configuration: Some(true),
                workspace_folders: Some(true),
                symbol: Some(WorkspaceSymbolClientCapabilities {
                    dynamic_registration: Some(false),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            text_document: Some(text_document),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the reader does with `messages` from a server: the replies it sent back, in order,
    /// and the state it leaves.
    async fn read(messages: &[&str], shared: Arc<Shared>) -> Vec<Value> {
        let bytes: Vec<u8> = messages
            .iter()
            .flat_map(|m| frame::encode(m.as_bytes()))
            .collect();
        let (out, mut replies) = mpsc::unbounded_channel();
        let (changed, _) = watch::channel(0);
        read_loop(&bytes[..], shared, out, changed, PathBuf::from("/ws")).await;
        let mut got = Vec::new();
        while let Ok(framed) = replies.try_recv() {
            let mut r = &framed[..];
            let body = frame::read_message(&mut r).await.unwrap();
            got.push(serde_json::from_slice(&body).unwrap());
        }
        got
    }

    #[tokio::test]
    async fn a_servers_requests_get_typed_answers_and_an_unknown_method_an_error() {
        let replies = read(
            &[
                r#"{"jsonrpc":"2.0","id":1,"method":"workspace/configuration","params":{"items":[{"section":"a"},{}]}}"#,
                r#"{"jsonrpc":"2.0","id":"s2","method":"client/registerCapability","params":{"registrations":[]}}"#,
                r#"{"jsonrpc":"2.0","id":3,"method":"workspace/applyEdit","params":{}}"#,
                r#"{"jsonrpc":"2.0","id":4,"method":"workspace/configuration","params":{"items":7}}"#,
                r#"{"jsonrpc":"2.0","id":5,"method":"workspace/workspaceFolders"}"#,
            ],
            Arc::default(),
        )
        .await;
        assert_eq!(
            replies[0],
            serde_json::json!({"jsonrpc":"2.0","id":1,"result":[null,null]})
        );
        assert_eq!(
            replies[1],
            serde_json::json!({"jsonrpc":"2.0","id":"s2","result":null})
        );
        assert_eq!(replies[2]["error"]["code"], -32601);
        assert_eq!(replies[3]["error"]["code"], -32602);
        assert_eq!(
            replies[4]["result"],
            serde_json::json!([{"uri": "file:///ws", "name": "workspace"}])
        );
        assert_eq!(replies.len(), 5);
    }

    #[tokio::test]
    async fn notifications_of_unknown_methods_and_messages_of_no_kind_are_ignored() {
        let shared: Arc<Shared> = Arc::default();
        let (tx, mut rx) = oneshot::channel();
        shared.pending.lock().insert(9, tx);
        let replies = read(
            &[
                r#"{"jsonrpc":"2.0","method":"$/progress","params":{"token":1,"value":{}}}"#,
                r#"{"jsonrpc":"2.0","method":"textDocument/publishDiagnostics","params":{"uri":7}}"#,
                r#"{"jsonrpc":"2.0","id":9}"#,
                "not json",
                r#"{"jsonrpc":"2.0","method":"textDocument/publishDiagnostics","params":{"uri":"file:///ws/a.py","version":2,"diagnostics":[]}}"#,
            ],
            shared.clone(),
        )
        .await;
        assert!(replies.is_empty(), "{replies:?}");
        // The answer of no kind answered nothing: the request was still waiting when the
        // server's output ended.
        assert!(rx.try_recv().is_err());
        let published = shared.published.lock();
        assert_eq!(published.len(), 1);
        assert_eq!(published["file:///ws/a.py"].version, Some(2));
    }

    #[tokio::test]
    async fn an_answer_reaches_its_request_and_an_error_answer_says_its_message() {
        let shared: Arc<Shared> = Arc::default();
        let (ok_tx, ok_rx) = oneshot::channel();
        let (err_tx, err_rx) = oneshot::channel();
        shared.pending.lock().insert(1, ok_tx);
        shared.pending.lock().insert(2, err_tx);
        read(
            &[
                r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32800,"message":"request cancelled"}}"#,
                r#"{"jsonrpc":"2.0","id":1,"result":{"capabilities":{}}}"#,
            ],
            shared,
        )
        .await;
        assert_eq!(
            ok_rx.await.unwrap(),
            Ok(serde_json::json!({"capabilities": {}}))
        );
        assert_eq!(err_rx.await.unwrap(), Err("request cancelled".to_string()));
    }

    #[test]
    fn initialize_names_the_workspace_and_the_capabilities_pablo_uses() {
        let spec = ClientSpec {
            name: "x".into(),
            argv: vec![],
            env: vec![],
            root: PathBuf::from("/ws"),
            log: PathBuf::from("/tmp/x.log"),
            sandbox: Sandbox::off(),
            initialization_options: Some(serde_json::json!({"a": 1})),
            startup_timeout: Duration::from_secs(1),
        };
        let v = serde_json::to_value(initialize_params(&spec)).unwrap();
        let want = serde_json::json!({
            "processId": null,
            "rootPath": "/ws",
            "rootUri": "file:///ws",
            "initializationOptions": {"a": 1},
            "capabilities": {
                "workspace": {"symbol": {"dynamicRegistration": false},
                              "workspaceFolders": true, "configuration": true},
                "textDocument": {
                    "synchronization": {"dynamicRegistration": false, "didSave": false},
                    "hover": {"contentFormat": ["plaintext", "markdown"]},
                    "references": {},
                    "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
                    "definition": {"linkSupport": false},
                    "publishDiagnostics": {"relatedInformation": false, "versionSupport": true}
                },
                "general": {"positionEncodings": ["utf-16"]}
            },
            "workspaceFolders": [{"uri": "file:///ws", "name": "workspace"}],
            "clientInfo": {"name": "pablo", "version": env!("CARGO_PKG_VERSION")}
        });
        assert_eq!(v, want);
    }
}
