//! Model Context Protocol servers: their tools offered as `mcp__SERVER__TOOL`, their prompts and
//! resources for the front-ends.
//!
//! One [`McpHub`] per session holds the servers the config layers (or the editor) named. They
//! start in the background, in parallel, when the agent starts ([`McpHub::start`]); each one's
//! state (starting, ready with its tools, failed with the reason) goes out as
//! [`Event::McpServer`], and the catalog reads the ready servers' tools live, so the first prompt
//! never waits for a slow server and a failed one is simply absent. `tools/list_changed` re-lists.
//!
//! An HTTP server that answers 401 is failed with `mcp_needs_login` and the command that signs in
//! (`pablo mcp login NAME`, [`client::oauth`]); a server's questions go to the person through
//! [`question`].
//!
//! The SDK (`rmcp`) is used only by [`client`]; [`tool`] adapts one server tool to pablo's
//! [`super::Tool`] (validate, preview, ask, commit like every other tool), [`result`] turns a
//! `CallToolResult` into the one result shape, [`names`] makes provider-safe names.

pub mod client;
pub(crate) mod names;
pub(crate) mod question;
pub(crate) mod result;
pub(crate) mod tool;

use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use client::{Asker, Changed, ClientError, Connection, Endpoint};
use pablo_core::{ErrorCode, EventSink, ToolFailure, ToolSpec};
use pablo_protocol::{
    Event, McpPromptArgument, McpPromptView, McpResourceView, McpServerView, McpState, McpToolView,
};
use question::Questions;

/// One server to start, as the launch settled it (config layers or an editor's request).
#[derive(Debug, Clone)]
pub struct ServerSpec {
    pub name: String,
    pub endpoint: Endpoint,
    pub required: bool,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    /// Only these real tool names are offered, when set.
    pub enabled_tools: Option<Vec<String>>,
    /// These real tool names are never offered.
    pub disabled_tools: Vec<String>,
    /// Why the server must not be started at all (a token variable that is not set, a provider
    /// key named): it is shown as failed with this reason.
    pub refused: Option<String>,
}

impl ServerSpec {
    fn transport(&self) -> &'static str {
        match self.endpoint {
            Endpoint::Stdio { .. } => "stdio",
            Endpoint::Http { .. } => "http",
        }
    }

    fn log(&self) -> Option<String> {
        match &self.endpoint {
            Endpoint::Stdio { log, .. } => Some(log.display().to_string()),
            Endpoint::Http { .. } => None,
        }
    }

    fn offers(&self, real: &str) -> bool {
        !self.disabled_tools.iter().any(|t| t == real)
            && self
                .enabled_tools
                .as_ref()
                .is_none_or(|only| only.iter().any(|t| t == real))
    }
}

/// One tool of a ready server.
#[derive(Clone)]
pub(crate) struct ToolEntry {
    /// `mcp__SERVER__TOOL`.
    pub(crate) offered: String,
    /// The name on the wire.
    pub(crate) real: String,
    pub(crate) title: Option<String>,
    pub(crate) description: String,
    pub(crate) schema: Value,
    pub(crate) read_only_hint: Option<bool>,
    pub(crate) validator: Arc<super::schema::Validator>,
}

#[derive(Clone)]
struct Live {
    conn: Arc<Connection>,
    tools: Vec<ToolEntry>,
    prompts: Vec<McpPromptView>,
    resources: Vec<McpResourceView>,
}

#[derive(Clone)]
enum State {
    /// Configured, `start` not called yet.
    Idle,
    Starting,
    Ready(Live),
    /// Why, and the failure's code when it has one (`mcp_needs_login`).
    Failed(String, Option<ErrorCode>),
    Stopped,
}

/// One configured server and where it is.
pub struct Server {
    spec: ServerSpec,
    state: RwLock<State>,
    questions: Arc<Questions>,
}

impl Server {
    fn state(&self) -> State {
        self.state.read().clone()
    }

    fn set(&self, state: State) {
        *self.state.write() = state;
    }

    fn live(&self) -> Option<Live> {
        match self.state() {
            State::Ready(l) => Some(l),
            _ => None,
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.spec.name
    }

    /// The view front-ends show.
    pub(crate) fn view(&self) -> McpServerView {
        let (state, reason, code, live) = match self.state() {
            State::Idle | State::Starting => (McpState::Starting, None, None, None),
            State::Ready(l) => (McpState::Ready, None, None, Some(l)),
            State::Failed(r, code) => (McpState::Failed, Some(r), code, None),
            State::Stopped => (McpState::Stopped, None, None, None),
        };
        let (tools, prompts, resources) = match live {
            Some(l) => (
                l.tools
                    .iter()
                    .map(|t| McpToolView {
                        name: t.offered.clone(),
                        real_name: t.real.clone(),
                        description: first_line(&t.description),
                        read_only_hint: t.read_only_hint,
                    })
                    .collect(),
                l.prompts,
                l.resources,
            ),
            None => Default::default(),
        };
        McpServerView {
            name: self.spec.name.clone(),
            state,
            transport: self.spec.transport().to_string(),
            required: self.spec.required,
            reason,
            code: code.map(|c| c.as_str().to_string()),
            tools,
            prompts,
            resources,
            log: self.spec.log(),
        }
    }

    /// Calls a tool by its real name. A connection found closed marks the server failed (as
    /// needing sign-in when the refresh of its token was refused). A question the server asked
    /// during the call and that still waits is withdrawn when the call ends.
    pub async fn call(
        &self,
        real: &str,
        arguments: serde_json::Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Result<Value, ClientError> {
        let Some(live) = self.live() else {
            return Err(ClientError::Closed);
        };
        let r = live
            .conn
            .call_tool(real, arguments, self.spec.tool_timeout, cancel)
            .await;
        self.questions.withdraw(&self.spec.name);
        if live.conn.needs_login() {
            self.set(needs_login(&self.spec.name));
            return Err(ClientError::NeedsLogin);
        }
        if matches!(r, Err(ClientError::Closed)) || live.conn.is_closed() {
            self.set(State::Failed("the connection closed".into(), None));
        }
        r
    }
}

/// The MCP servers of one session.
pub struct McpHub {
    root: PathBuf,
    servers: Vec<Arc<Server>>,
    events: Mutex<Option<EventSink>>,
    /// Flips to `true` once no server is still starting.
    settled: watch::Sender<bool>,
    stop: CancellationToken,
    wait_first_turn: bool,
    questions: Arc<Questions>,
}

impl Default for McpHub {
    fn default() -> Self {
        Self::empty()
    }
}

impl Drop for McpHub {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl McpHub {
    /// No servers.
    pub(crate) fn empty() -> Self {
        Self::new(PathBuf::from("/"), Vec::new())
    }

    /// Servers for a session working in `root` (the root they are told about); nothing starts
    /// until [`McpHub::start`].
    pub fn new(root: PathBuf, specs: Vec<ServerSpec>) -> Self {
        let (settled, _) = watch::channel(specs.is_empty());
        let questions = Arc::new(Questions::new());
        Self {
            root,
            servers: specs
                .into_iter()
                .map(|spec| {
                    Arc::new(Server {
                        spec,
                        state: RwLock::new(State::Idle),
                        questions: questions.clone(),
                    })
                })
                .collect(),
            events: Mutex::new(None),
            settled,
            stop: CancellationToken::new(),
            wait_first_turn: false,
            questions,
        }
    }

    /// Shows the servers' questions to the person (the TUI) instead of declining them (`pablo
    /// run`, editors).
    pub fn asking_the_person(self, ask: bool) -> Self {
        self.questions.ask_the_person(ask);
        self
    }

    /// The person's answer to a server's question ([`pablo_protocol::Op::AnswerMcpQuestion`]);
    /// `Err` says why it was not taken.
    pub fn answer_question(
        &self,
        id: &str,
        answer: pablo_protocol::QuestionAnswer,
    ) -> Result<(), String> {
        self.questions.answer(id, answer)
    }

    /// Who answers the questions of `server`: the person through the front-end, or nobody.
    fn asker(self: &Arc<Self>, server: &str) -> Asker {
        let hub = Arc::downgrade(self);
        let server = server.to_string();
        Arc::new(move |e| {
            let hub = hub.clone();
            let server = server.clone();
            Box::pin(async move {
                let Some(hub) = hub.upgrade() else {
                    return pablo_protocol::QuestionAnswer::Cancel;
                };
                let events = hub.events.lock().clone();
                let questions = hub.questions.clone();
                drop(hub);
                questions.ask(&server, e, events).await
            })
        })
    }

    /// Makes the session's first turn wait until every server has started or failed: for
    /// front-ends where nobody sees a server become ready later (`pablo run`, an editor). The
    /// TUI does not wait: its first prompt goes out at once and servers join when ready.
    pub fn waiting_for_first_turn(mut self, wait: bool) -> Self {
        self.wait_first_turn = wait;
        self
    }

    pub fn waits_for_first_turn(&self) -> bool {
        self.wait_first_turn && !self.servers.is_empty()
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    pub fn server(&self, name: &str) -> Option<&Arc<Server>> {
        self.servers.iter().find(|s| s.spec.name == name)
    }

    /// Every server's view, in name order.
    pub fn views(&self) -> Vec<McpServerView> {
        let mut v: Vec<_> = self.servers.iter().map(|s| s.view()).collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    fn emit(&self, server: &Server) {
        let sink = self.events.lock().clone();
        if let Some(sink) = sink {
            sink.send(Event::McpServer {
                server: server.view(),
            });
        }
    }

    fn update_settled(&self) {
        let starting = self
            .servers
            .iter()
            .any(|s| matches!(s.state(), State::Idle | State::Starting));
        self.settled.send_replace(!starting);
    }

    /// Starts every server in the background (once); their states go to `events` as they
    /// change. Returns at once.
    pub fn start(self: &Arc<Self>, events: Option<EventSink>) {
        {
            let mut e = self.events.lock();
            if e.is_some() {
                return;
            }
            *e = events.clone();
        }
        for server in &self.servers {
            if !matches!(server.state(), State::Idle) {
                continue;
            }
            server.set(State::Starting);
            self.emit(server);
            let hub = Arc::downgrade(self);
            let server = server.clone();
            let stop = self.stop.clone();
            tokio::spawn(async move {
                tokio::select! {
                    () = run_server(hub, server.clone()) => {}
                    () = stop.cancelled() => {}
                }
            });
        }
        if self.servers.is_empty() {
            self.settled.send_replace(true);
        }
    }

    /// Waits until no server is still starting (each has its own start-up timeout).
    pub async fn settled(&self) {
        let mut rx = self.settled.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    /// Waits for the `required` servers; `Err` names the first that failed and why.
    pub async fn required_ready(&self) -> Result<(), String> {
        for s in self.servers.iter().filter(|s| s.spec.required) {
            loop {
                match s.state() {
                    State::Ready(_) => break,
                    State::Failed(reason, _) => {
                        return Err(format!(
                            "the required MCP server {} failed: {reason}",
                            s.spec.name
                        ));
                    }
                    State::Stopped => {
                        return Err(format!("the required MCP server {} stopped", s.spec.name));
                    }
                    State::Idle | State::Starting => {
                        let mut rx = self.settled.subscribe();
                        let _ =
                            tokio::time::timeout(Duration::from_millis(200), rx.changed()).await;
                    }
                }
            }
        }
        Ok(())
    }

    /// Closes every connection and stops every program.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        for s in &self.servers {
            if let Some(live) = s.live() {
                live.conn.close().await;
            }
            s.set(State::Stopped);
        }
    }

    /// The tools of the ready servers, as catalog tools.
    pub(crate) fn tool(&self, name: &str) -> Option<Arc<dyn super::Tool>> {
        for s in &self.servers {
            if let Some(live) = s.live()
                && let Some(t) = live.tools.iter().find(|t| t.offered == name)
            {
                return Some(Arc::new(tool::McpTool::new(s.clone(), t.clone())));
            }
        }
        None
    }

    pub(crate) fn validator(&self, name: &str) -> Option<Arc<super::schema::Validator>> {
        self.servers.iter().find_map(|s| {
            s.live().and_then(|l| {
                l.tools
                    .iter()
                    .find(|t| t.offered == name)
                    .map(|t| t.validator.clone())
            })
        })
    }

    /// What the server of the tool offered as `name` says of it (`readOnlyHint`).
    pub(crate) fn read_only_hint(&self, name: &str) -> Option<bool> {
        self.servers.iter().find_map(|s| {
            s.live().and_then(|l| {
                l.tools
                    .iter()
                    .find(|t| t.offered == name)
                    .and_then(|t| t.read_only_hint)
            })
        })
    }

    /// Specs of the ready servers' tools that `keep` takes (by offered name and
    /// `readOnlyHint`), in server then listing order.
    pub(crate) fn specs_where(&self, keep: impl Fn(&str, Option<bool>) -> bool) -> Vec<ToolSpec> {
        let mut out = Vec::new();
        let mut servers: Vec<_> = self.servers.iter().collect();
        servers.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
        for s in servers {
            if let Some(live) = s.live() {
                for t in live
                    .tools
                    .iter()
                    .filter(|t| keep(&t.offered, t.read_only_hint))
                {
                    out.push(tool::spec_of(&s.spec.name, t));
                }
            }
        }
        out
    }

    fn live_of(&self, server: &str) -> Result<(Arc<Server>, Live), ToolFailure> {
        let Some(s) = self.server(server) else {
            return Err(ToolFailure::new(
                ErrorCode::McpUnknownServer,
                format!("there is no MCP server named {server:?}"),
            ));
        };
        match s.state() {
            State::Ready(l) => Ok((s.clone(), l)),
            State::Failed(reason, code) => Err(ToolFailure::new(
                code.unwrap_or(ErrorCode::McpUnavailable),
                format!("the MCP server {server} failed: {reason}"),
            )),
            _ => Err(ToolFailure::new(
                ErrorCode::McpUnavailable,
                format!("the MCP server {server} is not ready yet"),
            )),
        }
    }

    /// `prompts/get` of `server`: the prompt's messages as one text (what becomes the user's
    /// turn). Positional `args` fill the prompt's arguments in order; `NAME=VALUE` names one.
    pub async fn prompt_text(
        &self,
        server: &str,
        prompt: &str,
        args: &[String],
    ) -> Result<String, ToolFailure> {
        let (s, live) = self.live_of(server)?;
        let Some(info) = live.prompts.iter().find(|p| p.name == prompt) else {
            let known: Vec<_> = live.prompts.iter().map(|p| p.name.as_str()).collect();
            return Err(ToolFailure::new(
                ErrorCode::McpUnknownPrompt,
                format!(
                    "the MCP server {server} has no prompt {prompt:?} (it has: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        };
        let arguments = prompt_arguments(server, info, args)?;
        let value = live
            .conn
            .get_prompt(prompt, arguments, s.spec.tool_timeout)
            .await
            .map_err(|e| failure(server, e))?;
        Ok(result::prompt_text(&value))
    }

    /// `resources/read` of `server`: the resource's text (binary parts described).
    pub async fn resource_text(&self, server: &str, uri: &str) -> Result<String, ToolFailure> {
        let (s, live) = self.live_of(server)?;
        let value = live
            .conn
            .read_resource(uri, s.spec.tool_timeout)
            .await
            .map_err(|e| failure(server, e))?;
        Ok(result::resource_text(&value))
    }
}

/// A client error as a tool failure of `server`: `mcp_timeout` for a time-out, `cancelled` for an
/// interrupt, `mcp_unavailable` for a closed connection, `mcp_error` otherwise.
pub fn failure(server: &str, e: ClientError) -> ToolFailure {
    let code = match e {
        ClientError::Timeout { .. } => ErrorCode::McpTimeout,
        ClientError::Cancelled => ErrorCode::Cancelled,
        ClientError::Closed => ErrorCode::McpUnavailable,
        ClientError::NeedsLogin => {
            return ToolFailure::new(ErrorCode::McpNeedsLogin, needs_login_words(server));
        }
        _ => ErrorCode::McpError,
    };
    ToolFailure::new(code, format!("MCP server {server}: {e}"))
}

/// What a server that needs sign-in is said to need, naming the command.
fn needs_login_words(server: &str) -> String {
    format!(
        "the MCP server {server} needs sign-in: run `pablo mcp login {server}` ({})",
        ErrorCode::McpNeedsLogin.as_str()
    )
}

/// The state of a server that needs sign-in.
fn needs_login(server: &str) -> State {
    State::Failed(
        format!("needs sign-in: run `pablo mcp login {server}`"),
        Some(ErrorCode::McpNeedsLogin),
    )
}

fn prompt_arguments(
    server: &str,
    info: &McpPromptView,
    args: &[String],
) -> Result<serde_json::Map<String, Value>, ToolFailure> {
    let mut out = serde_json::Map::new();
    let mut positional = info.arguments.iter();
    for a in args {
        match a.split_once('=') {
            Some((k, v)) if info.arguments.iter().any(|x| x.name == k) => {
                out.insert(k.to_string(), Value::String(v.to_string()));
            }
            _ => {
                let Some(next) = positional.find(|x| !out.contains_key(&x.name)) else {
                    return Err(ToolFailure::new(
                        ErrorCode::McpPromptArguments,
                        format!(
                            "/{server}:{} takes {} argument(s); {a:?} is one too many",
                            info.name,
                            info.arguments.len()
                        ),
                    ));
                };
                out.insert(next.name.clone(), Value::String(a.clone()));
            }
        }
    }
    let missing: Vec<_> = info
        .arguments
        .iter()
        .filter(|x| x.required && !out.contains_key(&x.name))
        .map(|x| x.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(ToolFailure::new(
            ErrorCode::McpPromptArguments,
            format!(
                "/{server}:{} needs {}",
                info.name,
                missing
                    .iter()
                    .map(|m| format!("{m}=…"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        ));
    }
    Ok(out)
}

fn first_line(s: &str) -> String {
    pablo_protocol::describe::first_line_clipped(s, 120, false)
}

/// Starts one server, lists what it offers, then follows its `list_changed` notifications until
/// the hub stops.
async fn run_server(hub: std::sync::Weak<McpHub>, server: Arc<Server>) {
    let Some(root) = hub.upgrade().map(|h| h.root.clone()) else {
        return;
    };
    let (changes_tx, mut changes) = mpsc::unbounded_channel();
    let spec = &server.spec;
    let started = tokio::time::Instant::now();
    let Some(asker) = hub.upgrade().map(|h| h.asker(&spec.name)) else {
        return;
    };
    let opened = match &spec.refused {
        Some(reason) => Err(ClientError::Protocol(reason.clone())),
        None => {
            let timeout = spec.startup_timeout;
            Connection::open(&spec.endpoint, root, timeout, changes_tx, Some(asker)).await
        }
    };
    let conn = match opened {
        Ok(c) => Arc::new(c),
        Err(e) => {
            tracing::warn!(server = %spec.name, error = %e, "mcp server failed to start");
            server.set(match e {
                ClientError::NeedsLogin => needs_login(&spec.name),
                e => State::Failed(e.to_string(), None),
            });
            if let Some(h) = hub.upgrade() {
                h.emit(&server);
                h.update_settled();
            }
            return;
        }
    };
    let left = spec.startup_timeout.saturating_sub(started.elapsed());
    let listing = tokio::time::timeout(left.max(Duration::from_secs(1)), list_all(&server, &conn))
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "did not list its tools within {} s",
                spec.startup_timeout.as_secs()
            ))
        });
    match listing {
        Ok(live) => {
            tracing::info!(
                server = %spec.name,
                tools = live.tools.len(),
                prompts = live.prompts.len(),
                resources = live.resources.len(),
                "mcp server ready"
            );
            server.set(State::Ready(live));
        }
        Err(reason) => {
            conn.close().await;
            server.set(State::Failed(reason, None));
        }
    }
    let Some(h) = hub.upgrade() else { return };
    h.emit(&server);
    h.update_settled();
    drop(h);
    while let Some(change) = changes.recv().await {
        let Some(mut live) = server.live() else { break };
        let refreshed = match change {
            Changed::Tools => list_tools(&server, &conn).await.map(|t| live.tools = t),
            Changed::Prompts => list_prompts(&conn).await.map(|p| live.prompts = p),
            Changed::Resources => list_resources(&conn).await.map(|r| live.resources = r),
        };
        match refreshed {
            Ok(()) => server.set(State::Ready(live)),
            Err(e) => tracing::warn!(server = %spec.name, error = %e, "mcp re-listing failed"),
        }
        let Some(h) = hub.upgrade() else { return };
        h.emit(&server);
    }
}

async fn list_all(server: &Server, conn: &Arc<Connection>) -> Result<Live, String> {
    let id = &conn.identity;
    let tools = if id.has_tools {
        list_tools(server, conn).await.map_err(|e| e.to_string())?
    } else {
        Vec::new()
    };
    // Prompts and resources are extras: a server that fails to list them still offers tools.
    let prompts = if id.has_prompts {
        list_prompts(conn).await.unwrap_or_default()
    } else {
        Vec::new()
    };
    let resources = if id.has_resources {
        list_resources(conn).await.unwrap_or_default()
    } else {
        Vec::new()
    };
    Ok(Live {
        conn: conn.clone(),
        tools,
        prompts,
        resources,
    })
}

async fn list_tools(server: &Server, conn: &Connection) -> Result<Vec<ToolEntry>, ClientError> {
    let listed = conn.list_tools().await?;
    let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let offered: Vec<&Value> = listed
        .iter()
        .filter(|t| str_of(t, "name").is_some_and(|n| server.spec.offers(&n)))
        .collect();
    let reals: Vec<String> = offered.iter().filter_map(|t| str_of(t, "name")).collect();
    let names = names::assign(&server.spec.name, &reals, &[]);
    let mut out = Vec::new();
    for ((t, real), name) in offered.iter().zip(reals).zip(names) {
        let schema = t
            .get("inputSchema")
            .cloned()
            .filter(Value::is_object)
            .unwrap_or_else(|| serde_json::json!({"type": "object"}));
        let validator = super::schema::Validator::external(&schema)
            .or_else(|_| super::schema::Validator::external(&serde_json::json!({"type": "object"})))
            .map_err(|e| ClientError::Protocol(e.to_string()))?;
        let annotations = t.get("annotations").cloned().unwrap_or(Value::Null);
        out.push(ToolEntry {
            offered: name,
            real,
            title: str_of(t, "title").or_else(|| str_of(&annotations, "title")),
            description: str_of(t, "description").unwrap_or_default(),
            schema,
            read_only_hint: annotations.get("readOnlyHint").and_then(Value::as_bool),
            validator: Arc::new(validator),
        });
    }
    Ok(out)
}

async fn list_prompts(conn: &Connection) -> Result<Vec<McpPromptView>, ClientError> {
    let s = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    Ok(conn
        .list_prompts()
        .await?
        .iter()
        .map(|p| McpPromptView {
            name: s(p, "name"),
            description: first_line(&s(p, "description")),
            arguments: p
                .get("arguments")
                .and_then(Value::as_array)
                .map(|args| {
                    args.iter()
                        .map(|a| McpPromptArgument {
                            name: s(a, "name"),
                            required: a.get("required").and_then(Value::as_bool).unwrap_or(false),
                            description: first_line(&s(a, "description")),
                        })
                        .collect()
                })
                .unwrap_or_default(),
        })
        .filter(|p| !p.name.is_empty())
        .collect())
}

async fn list_resources(conn: &Connection) -> Result<Vec<McpResourceView>, ClientError> {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    Ok(conn
        .list_resources()
        .await?
        .iter()
        .filter_map(|r| {
            Some(McpResourceView {
                uri: s(r, "uri")?,
                name: s(r, "name").unwrap_or_default(),
                mime_type: s(r, "mimeType"),
            })
        })
        .collect())
}
