//! The one module that speaks `rmcp`, the official Rust MCP SDK. Everything else of pablo sees only
//! the types here: a [`Connection`] that lists and calls, and plain JSON for what came back; a
//! server's questions arrive as an [`Elicitation`] and go back as a
//! [`pablo_protocol::QuestionAnswer`]; [`oauth`] signs in to HTTP servers.
//!
//! The SDK's major version has moved several times; keeping it behind this seam means an upgrade
//! touches one file. For the same reason results are read from their JSON wire form (which the
//! protocol fixes) rather than from the SDK's structs (which change between releases).
//!
//! Transports: a stdio server is our own child process, started like every command pablo runs
//! (`process::server`: a clean environment, its own process group and PID namespace, so nothing
//! it starts outlives pablo; stderr to a log file), whose stdout passes through a line checker,
//! so that a server that prints something other than JSON-RPC is reported as such instead of as
//! a silent time-out; a streamable HTTP server is reached with pablo's own HTTP client, with the
//! OAuth token [`oauth`] keeps for it when there is one.

pub mod oauth;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

// Roots are deprecated by a protocol draft (SEP-2577) that the reference servers do not speak
// yet; they still ask for them, and pablo's answer is the workspace.
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ElicitRequestParams, ElicitResult,
    ElicitationAction, GetPromptRequestParams, Implementation, InitializeRequestParams,
    ProtocolVersion, ReadResourceRequestParams,
};
#[allow(deprecated)]
use rmcp::model::{ListRootsResult, Root};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use pablo_core::lines::{self, LineRead};
use pablo_process::ExitInfo;
use pablo_process::server::{ServerProcess, ServerSpawn, spawn_server};
use pablo_protocol::QuestionAnswer;

/// The longest stdout line a server may print (a larger one is garbage, not a message).
const MAX_LINE: usize = 16 * 1024 * 1024;

/// How to reach one server.
#[derive(Debug, Clone)]
pub enum Endpoint {
    Stdio {
        program: String,
        args: Vec<String>,
        /// The whole environment of the program (nothing else is inherited).
        env: Vec<(String, String)>,
        cwd: PathBuf,
        /// Where the program's stderr goes.
        log: PathBuf,
        /// pablo's own directories, read-only to the server (`Sandbox::started_program`).
        protected: Vec<PathBuf>,
    },
    Http {
        url: String,
        bearer_token: Option<String>,
        headers: BTreeMap<String, String>,
        /// How it signs in when it asks to (none with a bearer token or an `Authorization`
        /// header).
        oauth: Option<oauth::OAuthSpec>,
    },
}

/// Why a server could not be used, or a request failed. The messages say what happened in the
/// person's words; the hub adds the server's name.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ClientError {
    #[error("cannot start {program}: {message}")]
    Spawn { program: String, message: String },
    #[error("exited ({status}) before it finished starting{stderr}")]
    Exited { status: String, stderr: String },
    #[error(
        "printed something that is not JSON-RPC on stdout ({line:?}); a stdio MCP server may \
         write only protocol messages there"
    )]
    Garbage { line: String },
    #[error("did not answer initialize within {seconds} s")]
    NoAnswer { seconds: u64 },
    #[error("the handshake failed: {0}")]
    Handshake(String),
    #[error("did not answer within {seconds} s; the request was cancelled")]
    Timeout { seconds: u64 },
    #[error("the request was cancelled")]
    Cancelled,
    #[error("the connection is closed")]
    Closed,
    /// The server answered 401 and pablo holds no token it takes (none kept, or its refresh
    /// was refused): someone must sign in (`pablo mcp login NAME`).
    #[error("asks for sign-in (it answered 401 Unauthorized)")]
    NeedsLogin,
    #[error("{0}")]
    Protocol(String),
}

/// What a server changed, from its `list_changed` notifications.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Changed {
    Tools,
    Prompts,
    Resources,
}

/// Who the server says it is, from the handshake.
#[derive(Debug, Clone, Default)]
pub(crate) struct ServerIdentity {
    pub(crate) has_tools: bool,
    pub(crate) has_prompts: bool,
    pub(crate) has_resources: bool,
}

/// A question a server asks while it works (`elicitation/create` in form mode), as plain JSON.
pub(crate) struct Elicitation {
    pub(crate) message: String,
    /// Each property of the requested schema with its own schema, in the server's order.
    pub(crate) properties: Vec<(String, Value)>,
    pub(crate) required: Vec<String>,
    /// Cancelled when the server withdraws the question (`notifications/cancelled`).
    pub(crate) withdrawn: CancellationToken,
}

/// Who answers a server's questions (the hub, through the front-end).
pub(crate) type Asker =
    Arc<dyn Fn(Elicitation) -> futures::future::BoxFuture<'static, QuestionAnswer> + Send + Sync>;

/// What pablo answers the server's own requests with.
struct Handler {
    root: PathBuf,
    changes: mpsc::UnboundedSender<Changed>,
    asker: Option<Asker>,
    /// How many of the server's questions wait for the person (a call's time-out waits too).
    asking: Arc<watch::Sender<usize>>,
}

/// Counts one question as open while it lives.
struct Asking(Arc<watch::Sender<usize>>);

impl Asking {
    fn open(counter: &Arc<watch::Sender<usize>>) -> Self {
        counter.send_modify(|n| *n += 1);
        Self(counter.clone())
    }
}

impl Drop for Asking {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

#[allow(deprecated)]
impl ClientHandler for Handler {
    fn get_info(&self) -> InitializeRequestParams {
        // Built from JSON: the SDK's capability structs are non-exhaustive and their builders
        // belong to its server side.
        // Questions in form mode: the TUI shows them, other front-ends decline them.
        let capabilities: ClientCapabilities = serde_json::from_value(serde_json::json!({
            "roots": {"listChanged": false},
            "elicitation": {"form": {}},
        }))
        .unwrap_or_default();
        InitializeRequestParams::new(
            capabilities,
            Implementation::new("pablo", env!("CARGO_PKG_VERSION")).with_title("pablo"),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, rmcp::ErrorData> {
        let uri = format!("file://{}", self.root.display());
        let name = self
            .root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "workspace".into());
        Ok(ListRootsResult::new(vec![Root::new(uri).with_name(name)]))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let decline = || Ok(ElicitResult::new(ElicitationAction::Decline));
        // Only forms: pablo does not send the person to a server's web page.
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return decline();
        };
        let Some(asker) = &self.asker else {
            return decline();
        };
        let order = requested_schema
            .property_order
            .clone()
            .unwrap_or_else(|| requested_schema.properties.keys().cloned().collect());
        let properties = order
            .iter()
            .filter_map(|name| {
                let schema = requested_schema.properties.get(name)?;
                Some((name.clone(), serde_json::to_value(schema).ok()?))
            })
            .collect();
        let question = Elicitation {
            message,
            properties,
            required: requested_schema.required.clone().unwrap_or_default(),
            withdrawn: context.ct.clone(),
        };
        let _open = Asking::open(&self.asking);
        Ok(match asker(question).await {
            QuestionAnswer::Accept { content } => {
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
            }
            QuestionAnswer::Decline => ElicitResult::new(ElicitationAction::Decline),
            QuestionAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changes.send(Changed::Tools);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changes.send(Changed::Prompts);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changes.send(Changed::Resources);
    }
}

/// One live connection to a server.
pub(crate) struct Connection {
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    peer: rmcp::service::Peer<RoleClient>,
    pub(crate) identity: ServerIdentity,
    /// The program of a stdio server (stopped on close, killed when dropped).
    process: Option<ServerProcess>,
    /// The tokens of a server pablo signed in to.
    tokens: Option<oauth::TokenStore>,
    /// How many of its questions wait for the person.
    asking: watch::Receiver<usize>,
}

/// The first thing a server printed on stdout that was not JSON, if any.
type GarbageSlot = Arc<Mutex<Option<String>>>;

impl Connection {
    /// Starts (stdio) or reaches (HTTP) a server and performs the handshake within `timeout`.
    /// `changes` receives its `list_changed` notifications; `root` is the workspace it is told
    /// about.
    pub(crate) async fn open(
        endpoint: &Endpoint,
        root: PathBuf,
        timeout: Duration,
        changes: mpsc::UnboundedSender<Changed>,
        asker: Option<Asker>,
    ) -> Result<Self, ClientError> {
        let asking = Arc::new(watch::channel(0).0);
        let handler = Handler {
            root,
            changes,
            asker,
            asking,
        };
        match endpoint {
            Endpoint::Stdio {
                program,
                args,
                env,
                cwd,
                log,
                protected,
            } => {
                let sandbox = pablo_process::sandbox::Sandbox::started_program(protected.clone());
                let argv: Vec<String> = std::iter::once(program.clone())
                    .chain(args.iter().cloned())
                    .collect();
                open_stdio(handler, argv, env, cwd, log, sandbox, timeout).await
            }
            Endpoint::Http {
                url,
                bearer_token,
                headers,
                oauth,
            } => {
                let http = HttpTarget {
                    url,
                    bearer_token: bearer_token.as_deref(),
                    headers,
                    oauth: oauth.as_ref(),
                };
                open_http(handler, http, timeout).await
            }
        }
    }

    fn from_service(
        service: RunningService<RoleClient, Handler>,
        process: Option<ServerProcess>,
        tokens: Option<oauth::TokenStore>,
    ) -> Self {
        let asking = service.service().asking.subscribe();
        let peer = service.peer().clone();
        let identity = peer
            .peer_info()
            .and_then(|info| serde_json::to_value(&*info).ok())
            .map(|v| identity_of(&v))
            .unwrap_or_default();
        Self {
            service: tokio::sync::Mutex::new(Some(service)),
            peer,
            identity,
            process,
            tokens,
            asking,
        }
    }

    /// Whether the server needs sign-in again: the refresh of its token was refused.
    pub(crate) fn needs_login(&self) -> bool {
        self.tokens.as_ref().is_some_and(|t| t.refresh_rejected())
    }

    /// Every tool, as the JSON the server sent (`name`, `description`, `inputSchema`, …).
    pub(crate) async fn list_tools(&self) -> Result<Vec<Value>, ClientError> {
        let tools = self.peer.list_all_tools().await.map_err(service_error)?;
        Ok(tools
            .iter()
            .filter_map(|t| serde_json::to_value(t).ok())
            .collect())
    }

    /// Every prompt (`name`, `description`, `arguments`).
    pub(crate) async fn list_prompts(&self) -> Result<Vec<Value>, ClientError> {
        let prompts = self.peer.list_all_prompts().await.map_err(service_error)?;
        Ok(prompts
            .iter()
            .filter_map(|p| serde_json::to_value(p).ok())
            .collect())
    }

    /// Every resource (`uri`, `name`, `mimeType`, …).
    pub(crate) async fn list_resources(&self) -> Result<Vec<Value>, ClientError> {
        let resources = self
            .peer
            .list_all_resources()
            .await
            .map_err(service_error)?;
        Ok(resources
            .iter()
            .filter_map(|r| serde_json::to_value(r).ok())
            .collect())
    }

    /// Calls `name` (the real name) with `arguments`; the result is the `CallToolResult` JSON
    /// (`content`, `structuredContent`, `isError`). A call that outlives `timeout` or whose
    /// `cancel` fires is abandoned, and the SDK tells the server with `notifications/cancelled`.
    /// While a question of the server waits for the person the time-out does not run out; once
    /// it is answered the call has its whole time-out again.
    pub(crate) async fn call_tool(
        &self,
        name: &str,
        arguments: serde_json::Map<String, Value>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Value, ClientError> {
        let params = CallToolRequestParams::new(name.to_string()).with_arguments(arguments);
        let call = self.peer.call_tool(params);
        tokio::pin!(call);
        let mut asking = self.asking.clone();
        let mut deadline = tokio::time::Instant::now() + timeout;
        let result = loop {
            let waiting_for_person = *asking.borrow_and_update() > 0;
            tokio::select! {
                r = &mut call => break r.map_err(service_error)?,
                () = tokio::time::sleep_until(deadline), if !waiting_for_person => {
                    return Err(ClientError::Timeout { seconds: timeout.as_secs().max(1) });
                }
                changed = asking.changed() => {
                    if changed.is_ok() && *asking.borrow() == 0 {
                        deadline = tokio::time::Instant::now() + timeout;
                    }
                }
                () = cancel.cancelled() => return Err(ClientError::Cancelled),
            }
        };
        serde_json::to_value(&result).map_err(|e| ClientError::Protocol(e.to_string()))
    }

    /// `prompts/get`: the `GetPromptResult` JSON (`description`, `messages`).
    pub(crate) async fn get_prompt(
        &self,
        name: &str,
        arguments: serde_json::Map<String, Value>,
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        let mut params = GetPromptRequestParams::new(name.to_string());
        if !arguments.is_empty() {
            params.arguments = Some(arguments);
        }
        let result = tokio::time::timeout(timeout, self.peer.get_prompt(params))
            .await
            .map_err(|_| ClientError::Timeout {
                seconds: timeout.as_secs().max(1),
            })?
            .map_err(service_error)?;
        serde_json::to_value(&result).map_err(|e| ClientError::Protocol(e.to_string()))
    }

    /// `resources/read`: the `ReadResourceResult` JSON (`contents`).
    pub(crate) async fn read_resource(
        &self,
        uri: &str,
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        let params = ReadResourceRequestParams::new(uri.to_string());
        let result = tokio::time::timeout(timeout, self.peer.read_resource(params))
            .await
            .map_err(|_| ClientError::Timeout {
                seconds: timeout.as_secs().max(1),
            })?
            .map_err(service_error)?;
        serde_json::to_value(&result).map_err(|e| ClientError::Protocol(e.to_string()))
    }

    /// Whether the connection is gone (the process exited, the HTTP session ended).
    pub(crate) fn is_closed(&self) -> bool {
        self.peer.is_transport_closed()
    }

    /// Ends the session: closes the transport, then stops the program (TERM, then KILL).
    pub(crate) async fn close(&self) {
        if let Some(mut service) = self.service.lock().await.take() {
            let _ = service.close_with_timeout(Duration::from_secs(2)).await;
        }
        if let Some(process) = &self.process {
            process.stop(Duration::from_secs(2)).await;
        }
    }
}

/// An error with its causes (`error sending request: connection refused`): the SDK's top-level
/// messages alone rarely say what went wrong.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = without_type_names(&e.to_string());
    let mut source = e.source();
    while let Some(s) = source {
        let text = without_type_names(&s.to_string());
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// The SDK names its transport's Rust type in some messages (`Transport [rmcp::transport::…<…>]
/// error`): words for its authors, not for the person reading why a server failed.
fn without_type_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find(" [") {
        let Some(close) = rest[open..].find(']').map(|c| open + c) else {
            break;
        };
        out.push_str(&rest[..open]);
        if !rest[open..close].contains("::") {
            out.push_str(&rest[open..=close]);
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

fn service_error(e: rmcp::ServiceError) -> ClientError {
    match e {
        rmcp::ServiceError::TransportClosed => ClientError::Closed,
        rmcp::ServiceError::McpError(data) => ClientError::Protocol(format!(
            "the server answered with an error: {} (code {})",
            data.message, data.code.0
        )),
        rmcp::ServiceError::Timeout { timeout } => ClientError::Timeout {
            seconds: timeout.as_secs().max(1),
        },
        rmcp::ServiceError::Cancelled { .. } => ClientError::Cancelled,
        other => ClientError::Protocol(chain(&other)),
    }
}

fn identity_of(info: &Value) -> ServerIdentity {
    let caps = info.get("capabilities").cloned().unwrap_or(Value::Null);
    ServerIdentity {
        has_tools: caps.get("tools").is_some(),
        has_prompts: caps.get("prompts").is_some(),
        has_resources: caps.get("resources").is_some(),
    }
}

async fn open_stdio(
    handler: Handler,
    argv: Vec<String>,
    env: &[(String, String)],
    cwd: &std::path::Path,
    log: &std::path::Path,
    sandbox: pablo_process::sandbox::Sandbox,
    timeout: Duration,
) -> Result<Connection, ClientError> {
    let program = argv.first().map(String::as_str).unwrap_or_default();
    let spawn_error = |message: String| ClientError::Spawn {
        program: program.to_string(),
        message,
    };
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| spawn_error(format!("cannot create {}: {e}", dir.display())))?;
    }
    // Bounded: a server that floods stderr fills a log of a fixed size, not the disk.
    let sink = pablo_process::log::bounded_log(log, pablo_process::log::MAX_LOG_BYTES)
        .map_err(|e| spawn_error(format!("cannot open the log {}: {e}", log.display())))?;
    let (stderr, log_start) = (sink.stderr, sink.start);
    let spawn = ServerSpawn {
        argv: argv.clone(),
        env: env.to_vec(),
        cwd: cwd.to_path_buf(),
        stderr,
        sandbox,
    };
    let (process, pipes) = tokio::task::spawn_blocking(move || spawn_server(spawn))
        .await
        .map_err(|e| spawn_error(e.to_string()))?
        .map_err(|e| match e {
            pablo_process::ProcessError::Spawn { message, .. } => spawn_error(message),
            other => spawn_error(other.to_string()),
        })?;
    let garbage: GarbageSlot = Arc::default();
    let garbage_seen = CancellationToken::new();
    let (to_sdk, from_child) = tokio::io::duplex(64 * 1024);
    tokio::spawn(check_lines(
        pipes.stdout,
        to_sdk,
        garbage.clone(),
        garbage_seen.clone(),
    ));
    let started = handler.serve((from_child, pipes.stdin));
    let outcome = tokio::select! {
        // A line that failed the start is seen before the handshake it came before: the check
        // below makes the order of these branches no matter.
        biased;
        () = garbage_seen.cancelled() => {
            process.kill();
            let line = first_garbage(&garbage).unwrap_or_default();
            return Err(ClientError::Garbage { line });
        }
        r = started => Some(r),
        status = process.exited() => {
            let tail = stderr_tail(log, log_start);
            return Err(match first_garbage(&garbage) {
                Some(line) => ClientError::Garbage { line },
                None => ClientError::Exited { status: describe_status(status), stderr: tail },
            });
        }
        () = tokio::time::sleep(timeout) => None,
    };
    match outcome {
        // Prose before the server's first message is a program that is not a stdio server (or
        // one that writes its log to stdout): it fails, whichever finished first. The line was
        // recorded before any later line reached the handshake, so this does not depend on
        // timing.
        Some(Ok(_)) if first_garbage(&garbage).is_some() => {
            process.kill();
            let line = first_garbage(&garbage).unwrap_or_default();
            Err(ClientError::Garbage { line })
        }
        Some(Ok(service)) => Ok(Connection::from_service(service, Some(process), None)),
        Some(Err(e)) => {
            // A transport that closed is most often a program that exited: say how.
            let status = tokio::time::timeout(Duration::from_millis(500), process.exited()).await;
            process.kill();
            Err(match (first_garbage(&garbage), status) {
                (Some(line), _) => ClientError::Garbage { line },
                (None, Ok(s)) if s.code.is_some() => ClientError::Exited {
                    status: describe_status(s),
                    stderr: stderr_tail(log, log_start),
                },
                _ => ClientError::Handshake(chain(&e)),
            })
        }
        None => {
            process.kill();
            Err(match first_garbage(&garbage) {
                Some(line) => ClientError::Garbage { line },
                None => ClientError::NoAnswer {
                    seconds: timeout.as_secs().max(1),
                },
            })
        }
    }
}

fn first_garbage(slot: &GarbageSlot) -> Option<String> {
    slot.lock().clone()
}

fn describe_status(s: ExitInfo) -> String {
    match (s.code, s.signal) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("killed by {}", pablo_process::signal_name(sig)),
        _ => "ended (how is unknown)".to_string(),
    }
}

/// The last lines the server wrote on stderr since it was started, for a failure message.
fn stderr_tail(log: &std::path::Path, from: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    // The log grows over sessions and a server may write without end: only its last 64 KiB since
    // the start are read.
    const TAIL_BYTES: u64 = 64 * 1024;
    let Ok(mut file) = std::fs::File::open(log) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = from.max(len.saturating_sub(TAIL_BYTES)).min(len);
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(start)).is_err()
        || file.take(TAIL_BYTES).read_to_end(&mut bytes).is_err()
    {
        return String::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
    if tail.is_empty() {
        String::new()
    } else {
        let mut tail: String = tail.chars().take(300).collect();
        if tail.len() < text.trim().len() && lines.len() > 3 {
            tail.insert_str(0, "… ");
        }
        format!("; it said: {tail}")
    }
}

/// Copies the server's stdout to the SDK line by line, remembering a line that is not JSON
/// before the server's first message (the SDK ignores such lines, so without this a chatty
/// server looks like a silent one). Once the server has spoken JSON-RPC such a line is only
/// dropped: the rule depends on the order of the lines, never on when they come.
async fn check_lines(
    stdout: impl AsyncRead + Unpin,
    mut to_sdk: tokio::io::DuplexStream,
    garbage: GarbageSlot,
    seen: CancellationToken,
) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    let mut spoke = false;
    loop {
        let too_long = match lines::read_line(&mut reader, &mut line, MAX_LINE).await {
            Ok(LineRead::Line) => false,
            Ok(LineRead::TooLong) => true,
            Ok(LineRead::End) | Err(_) => return,
        };
        let text = lines::content(&line);
        if !too_long && text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if too_long || serde_json::from_slice::<serde::de::IgnoredAny>(text).is_err() {
            if spoke {
                continue;
            }
            let mut g = garbage.lock();
            if g.is_none() {
                let shown = if too_long {
                    format!("a line longer than {} MiB", MAX_LINE / (1024 * 1024))
                } else {
                    String::from_utf8_lossy(text).chars().take(80).collect()
                };
                *g = Some(shown);
            }
            seen.cancel();
            continue;
        }
        spoke = true;
        if to_sdk.write_all(&line).await.is_err() {
            return;
        }
        if !line.ends_with(b"\n") && to_sdk.write_all(b"\n").await.is_err() {
            return;
        }
    }
}

/// Where an HTTP server is and how pablo authenticates to it.
struct HttpTarget<'a> {
    url: &'a str,
    bearer_token: Option<&'a str>,
    headers: &'a BTreeMap<String, String>,
    oauth: Option<&'a oauth::OAuthSpec>,
}

async fn open_http(
    handler: Handler,
    target: HttpTarget<'_>,
    timeout: Duration,
) -> Result<Connection, ClientError> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let url = target.url;
    let client =
        pablo_model::http::client_for(url).map_err(|e| ClientError::Handshake(e.to_string()))?;
    let mut custom = std::collections::HashMap::new();
    for (name, value) in target.headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| ClientError::Handshake(format!("header {name}: {e}")))?;
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|e| ClientError::Handshake(format!("header {name}: {e}")))?;
        custom.insert(name, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    if let Some(token) = target.bearer_token {
        config = config.auth_header(token.to_string());
    }
    config = config.custom_headers(custom);
    let signed_in = match target.oauth {
        Some(spec) => tokio::time::timeout(timeout, oauth::signed_in(url, spec, client.clone()))
            .await
            .map_err(|_| ClientError::NoAnswer {
                seconds: timeout.as_secs().max(1),
            })?
            .map_err(|e| ClientError::Handshake(format!("signing in: {}", chain(&e))))?,
        None => None,
    };
    let can_sign_in = target.oauth.is_some();
    match signed_in {
        Some((auth, tokens)) => {
            serve_http(handler, auth, config, timeout, Some(tokens), can_sign_in).await
        }
        None => serve_http(handler, client, config, timeout, None, can_sign_in).await,
    }
}

/// The handshake over `client` (pablo's HTTP client, or the SDK's OAuth client around it).
async fn serve_http<C>(
    handler: Handler,
    client: C,
    config: rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig,
    timeout: Duration,
    tokens: Option<oauth::TokenStore>,
    can_sign_in: bool,
) -> Result<Connection, ClientError>
where
    C: rmcp::transport::streamable_http_client::StreamableHttpClient<Error = reqwest::Error>
        + Send
        + Sync
        + 'static,
{
    use rmcp::transport::StreamableHttpClientTransport;
    let transport = StreamableHttpClientTransport::with_client(client, config);
    match tokio::time::timeout(timeout, handler.serve(transport)).await {
        Ok(Ok(service)) => Ok(Connection::from_service(service, None, tokens)),
        Ok(Err(e)) if can_sign_in && e.is_authorization_required() => Err(ClientError::NeedsLogin),
        Ok(Err(e)) => Err(ClientError::Handshake(chain(&e))),
        Err(_) => Err(ClientError::NoAnswer {
            seconds: timeout.as_secs().max(1),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_sdk_message_loses_the_rust_type_it_names_and_keeps_the_rest() {
        let sdk = "Send message error Transport [rmcp::transport::worker::WorkerTransport<\
                   rmcp::X<reqwest::Client>>] error: Client error: connection refused";
        assert_eq!(
            without_type_names(sdk),
            "Send message error Transport error: Client error: connection refused"
        );
        assert_eq!(without_type_names("a [note] stays"), "a [note] stays");
        assert_eq!(without_type_names("unclosed [a::b"), "unclosed [a::b");
    }
}
