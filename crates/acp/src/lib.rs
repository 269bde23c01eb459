//! The editor front-end: pablo as an Agent Client Protocol (v1) agent on stdio.
//!
//! Editors such as Zed start `pablo acp` as a child process and speak JSON-RPC to it over
//! stdin/stdout. This module is a front-end like the TUI and `pablo run`: each ACP session is one
//! engine agent started the way every front-end starts one ([`Launch`]), and all it does is
//! translate — ACP requests into [`Op`]s, [`Event`]s into `session/update` notifications, approval
//! prompts into `session/request_permission`. It owns no engine logic: what a tool may do is
//! still decided by policy, and what lands on disk is still the previewed bytes.
//!
//! Nothing but protocol messages may reach stdout; diagnostics go through `tracing` (to the log
//! file when `PABLO_LOG` is set).

pub(crate) mod editor;
pub(crate) mod translate;
pub mod transport;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::Duration;

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, BoxFuture, Client, ConnectTo, ErrorCode};
use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use pablo_core::ApprovalMode;
use pablo_core::Coded;
use pablo_core::editor::Editor;
use pablo_launch::{
    AgentSetup, Launch, LaunchError, LaunchOptions, McpServerConfig, ModelClient, Warned,
};
use pablo_protocol::{ApprovalAnswer, Event, Op, Preview, StopReason, Verdict, WorkMode};

pub(crate) use translate::Translator;
pub use transport::line_transport;

/// How a session gets its model. The CLI uses [`default_models`] (flags, config, environment).
/// Asynchronous, because choosing a provider may probe the network (a local Ollama).
pub type ModelSource = Arc<
    dyn for<'a> Fn(&'a Launch) -> BoxFuture<'a, Result<Arc<dyn ModelClient>, LaunchError>>
        + Send
        + Sync,
>;

/// The model chosen by flags, config and environment, as for every other front-end.
pub fn default_models() -> ModelSource {
    Arc::new(|launch: &Launch| Box::pin(launch.model()))
}

/// Permission option ids offered in `session/request_permission`.
pub(crate) const ALLOW_ONCE: &str = "allow_once";
pub(crate) const ALLOW_ALWAYS: &str = "allow_always";
pub(crate) const REJECT_ONCE: &str = "reject_once";
pub(crate) const REJECT_ALWAYS: &str = "reject_always";

/// Why an ACP request was refused. Each becomes a JSON-RPC error whose `data.code` is
/// [`Coded::code`].
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    #[error("the session cwd must be an absolute path, not {0:?}")]
    CwdNotAbsolute(PathBuf),
    #[error("there is no session {0:?} on this connection")]
    UnknownSession(String),
    #[error("session {0} is already answering a prompt; cancel it or wait for its answer")]
    PromptRunning(String),
    #[error("the prompt was refused: {0}")]
    UnsupportedContent(String),
    #[error("session {0} is already open on this connection")]
    SessionOpen(String),
    #[error("session {id} worked in {journaled}, not in {requested}")]
    WorkspaceMismatch {
        id: String,
        journaled: String,
        requested: String,
    },
    #[error("the agent of session {0} has stopped")]
    AgentStopped(String),
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error("the ACP connection failed: {0}")]
    Connection(String),
    #[error("MCP server {0}")]
    McpServer(String),
    #[error("unknown mode {0:?}: the modes are ask, auto-edit and plan")]
    UnknownMode(String),
}

impl Coded for AcpError {
    fn code(&self) -> pablo_core::ErrorCode {
        use pablo_core::ErrorCode as Code;
        match self {
            AcpError::CwdNotAbsolute(_) => Code::CwdNotAbsolute,
            AcpError::UnknownSession(_) => Code::UnknownSession,
            AcpError::PromptRunning(_) => Code::PromptRunning,
            AcpError::UnsupportedContent(_) => Code::UnsupportedContent,
            AcpError::SessionOpen(_) => Code::SessionOpen,
            AcpError::WorkspaceMismatch { .. } => Code::WorkspaceMismatch,
            AcpError::AgentStopped(_) => Code::AgentStopped,
            AcpError::Launch(e) => e.code(),
            AcpError::Connection(_) => Code::ConnectionFailed,
            AcpError::McpServer(_) => Code::McpServerUnsupported,
            AcpError::UnknownMode(_) => Code::UnknownMode,
        }
    }
}

impl AcpError {
    /// The JSON-RPC error for this refusal: a standard code, the message, and pablo's code in
    /// `data.code`.
    pub(crate) fn to_rpc(&self) -> agent_client_protocol::Error {
        let code = match self {
            AcpError::CwdNotAbsolute(_)
            | AcpError::UnsupportedContent(_)
            | AcpError::McpServer(_)
            | AcpError::UnknownMode(_)
            | AcpError::WorkspaceMismatch { .. } => ErrorCode::INVALID_PARAMS,
            AcpError::UnknownSession(_) => ErrorCode::RESOURCE_NOT_FOUND,
            AcpError::PromptRunning(_) | AcpError::SessionOpen(_) => ErrorCode::INVALID_REQUEST,
            AcpError::AgentStopped(_) | AcpError::Launch(_) | AcpError::Connection(_) => {
                ErrorCode::INTERNAL_ERROR
            }
        };
        agent_client_protocol::Error::new(code, self.to_string()).data(json!({"code": self.code()}))
    }
}

/// Serves ACP on stdin/stdout until the client closes stdin.
pub async fn serve_stdio(options: LaunchOptions) -> Result<(), AcpError> {
    serve(
        line_transport(tokio::io::stdin(), tokio::io::stdout()),
        options,
        default_models(),
    )
    .await
}

/// Serves one ACP connection over `transport` until the client goes away, then stops every
/// session's agent (cancelling running turns) before returning.
pub async fn serve(
    transport: impl ConnectTo<Agent> + 'static,
    options: LaunchOptions,
    models: ModelSource,
) -> Result<(), AcpError> {
    let server = Arc::new(Server {
        options,
        models,
        client: Mutex::new(None),
        sessions: Mutex::new(HashMap::new()),
    });
    let result = {
        let s_init = server.clone();
        let s_new = server.clone();
        let s_load = server.clone();
        let s_prompt = server.clone();
        let s_cancel = server.clone();
        let s_mode = server.clone();
        Agent
            .v1()
            .name("pablo")
            .on_receive_request(
                async move |req: acp::InitializeRequest, responder, _cx| {
                    responder.respond(s_init.initialize(req).await)
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: acp::NewSessionRequest, responder, cx| {
                    let result = s_new.new_session(req, &cx).await.map_err(|e| e.to_rpc());
                    responder.respond_with_result(result)
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: acp::LoadSessionRequest, responder, cx| {
                    let result = s_load.load_session(req, &cx).await.map_err(|e| e.to_rpc());
                    responder.respond_with_result(result)
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: acp::PromptRequest, responder, _cx| {
                    s_prompt.prompt(req, responder)
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |req: acp::SetSessionModeRequest, responder, _cx| {
                    responder.respond_with_result(s_mode.set_mode(&req).map_err(|e| e.to_rpc()))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_notification(
                async move |n: acp::CancelNotification, _cx| {
                    s_cancel.cancel(&n);
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
            .connect_to(transport)
            .await
    };
    server.shutdown().await;
    result.map_err(|e| AcpError::Connection(e.to_string()))
}

struct Server {
    options: LaunchOptions,
    models: ModelSource,
    /// What the client said it can do (fs, terminal), from `initialize`.
    client: Mutex<Option<acp::ClientCapabilities>>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

/// One ACP session: one engine agent.
struct Session {
    id: String,
    ops: mpsc::UnboundedSender<Op>,
    /// The `session/prompt` being answered; the turn's end answers it.
    prompt: Mutex<Option<Responder<acp::PromptResponse>>>,
    /// Approval requests put to the client and not yet answered (by call id).
    open_approvals: Mutex<HashSet<String>>,
    /// What the person rejected "always" in this session (see [`reject_key`]).
    rejected_always: Mutex<HashSet<String>>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Server {
    /// Whether the model a session started now would get takes images (what `initialize`
    /// advertises): the model of the flags and config for the agent's working directory. A model
    /// that cannot be set up takes none; a later session's model that takes none refuses the
    /// image turn with `image_not_accepted_by_model` all the same.
    async fn model_takes_images(&self) -> bool {
        let Ok(cwd) = std::env::current_dir() else {
            return false;
        };
        let Ok(launch) = self.launch(&cwd) else {
            return false;
        };
        match (self.models)(&launch).await {
            Ok(model) => model.profile().images,
            Err(_) => false,
        }
    }

    async fn initialize(&self, req: acp::InitializeRequest) -> acp::InitializeResponse {
        tracing::info!(
            requested = req.protocol_version.as_u16(),
            fs_read = req.client_capabilities.fs.read_text_file,
            fs_write = req.client_capabilities.fs.write_text_file,
            terminal = req.client_capabilities.terminal,
            "acp initialize"
        );
        *self.client.lock() = Some(req.client_capabilities);
        let images = self.model_takes_images().await;
        // pablo speaks version 1 only: that is the answer whatever was asked, and a client that
        // cannot speak it closes the connection.
        acp::InitializeResponse::new(agent_client_protocol::schema::ProtocolVersion::V1)
            .agent_capabilities(
                acp::AgentCapabilities::new()
                    .load_session(true)
                    .mcp_capabilities(acp::McpCapabilities::new().http(true))
                    .prompt_capabilities(
                        acp::PromptCapabilities::new()
                            .image(images)
                            .audio(false)
                            .embedded_context(true),
                    ),
            )
            .agent_info(acp::Implementation::new("pablo", env!("CARGO_PKG_VERSION")).title("pablo"))
    }

    async fn new_session(
        &self,
        req: acp::NewSessionRequest,
        cx: &ConnectionTo<Client>,
    ) -> Result<acp::NewSessionResponse, AcpError> {
        if !req.cwd.is_absolute() {
            return Err(AcpError::CwdNotAbsolute(req.cwd));
        }
        let launch = self
            .launch(&req.cwd)?
            .with_mcp_servers(editor_mcp_servers(&req.mcp_servers)?);
        let model = (self.models)(&launch).await?;
        let id = Launch::new_session_id();
        let editor = self.editor(&id, cx);
        let setup = launch.agent_setup(id.clone(), model, ApprovalMode::Interactive, editor)?;
        let mode = setup.value.mode;
        let translator = translator_for(&launch)?.with_mode(mode);
        self.start(setup, translator, cx)?;
        tracing::info!(session = %id, mcp_servers = req.mcp_servers.len(), "acp session started");
        Ok(acp::NewSessionResponse::new(id).modes(translate::session_modes(mode)))
    }

    /// Resumes a journaled session: its history is replayed to the client as `session/update`
    /// notifications, then the agent continues it (conversation, checklist and "allow always"
    /// answers restored) and the request is answered.
    async fn load_session(
        &self,
        req: acp::LoadSessionRequest,
        cx: &ConnectionTo<Client>,
    ) -> Result<acp::LoadSessionResponse, AcpError> {
        if !req.cwd.is_absolute() {
            return Err(AcpError::CwdNotAbsolute(req.cwd));
        }
        let id = req.session_id.0.to_string();
        if self.session(&id).is_ok() {
            return Err(AcpError::SessionOpen(id));
        }
        let launch = self
            .launch(&req.cwd)?
            .with_mcp_servers(editor_mcp_servers(&req.mcp_servers)?);
        let model = (self.models)(&launch).await?;
        // The journal's first line: the whole of it is read once, by the resume below.
        let journaled = launch
            .session_store()
            .workspace_of(&id)
            .map_err(LaunchError::from)?;
        if std::path::Path::new(&journaled) != launch.workspace {
            return Err(AcpError::WorkspaceMismatch {
                id,
                journaled,
                requested: launch.workspace.display().to_string(),
            });
        }
        let editor = self.editor(&id, cx);
        let mut transcript = Vec::new();
        let (setup, state) = launch.resume_setup(
            &id,
            model,
            ApprovalMode::Interactive,
            editor,
            &mut |event| transcript.push(event),
        )?;
        let mode = setup.value.mode;
        let mut translator = translator_for(&launch)?.with_mode(mode);
        // The history goes out before the answer, as the protocol asks.
        for update in translator.replay(&transcript) {
            cx.send_notification(acp::SessionNotification::new(id.clone(), update))
                .map_err(|e| AcpError::Connection(e.to_string()))?;
        }
        let notes = state.notes();
        for note in &notes {
            tracing::warn!(session = %id, note = %note, "resume note");
        }
        self.start(setup, translator, cx)?;
        let mut response = acp::LoadSessionResponse::new().modes(translate::session_modes(mode));
        if !notes.is_empty()
            && let serde_json::Value::Object(meta) = json!({"pablo": {"notes": notes}})
        {
            response = response.meta(meta);
        }
        tracing::info!(session = %id, turns = state.turns, "acp session loaded");
        Ok(response)
    }

    /// Loads config for a session whose workspace is `cwd`.
    fn launch(&self, cwd: &std::path::Path) -> Result<Launch, AcpError> {
        let mut options = self.options.clone();
        options.workspace = Some(cwd.to_path_buf());
        // The editor shows no server becoming ready: a turn sees every server that will start.
        options.wait_for_mcp = true;
        Ok(Launch::prepare(options)?)
    }

    /// The client's buffers and terminals for session `id`, when it offers any.
    fn editor(&self, id: &str, cx: &ConnectionTo<Client>) -> Option<Arc<dyn Editor>> {
        let client = self.client.lock().clone()?;
        if !editor::capabilities_of(&client).any() {
            return None;
        }
        Some(Arc::new(editor::ClientEditor::new(
            id.to_string(),
            &client,
            cx.clone(),
        )))
    }

    /// Spawns the agent of a session and the pump that forwards its events.
    fn start(
        &self,
        setup: Warned<AgentSetup>,
        translator: Translator,
        cx: &ConnectionTo<Client>,
    ) -> Result<(), AcpError> {
        let id = setup.value.session_id.clone();
        for w in &setup.warnings {
            tracing::warn!(session = %id, warning = %w, "session warning");
        }
        let handle = pablo_launch::spawn(setup.value);
        let session = Arc::new(Session {
            id: id.clone(),
            ops: handle.ops,
            prompt: Mutex::new(None),
            open_approvals: Mutex::new(HashSet::new()),
            rejected_always: Mutex::new(HashSet::new()),
            task: Mutex::new(Some(handle.task)),
        });
        self.sessions.lock().insert(id, session.clone());
        cx.spawn(pump(session, handle.events, translator, cx.clone()))
            .map_err(|e| AcpError::Connection(e.to_string()))
    }

    fn session(&self, id: &str) -> Result<Arc<Session>, AcpError> {
        self.sessions
            .lock()
            .get(id)
            .cloned()
            .ok_or_else(|| AcpError::UnknownSession(id.to_string()))
    }

    /// Switches the session's working mode (`session/set_mode`). The agent takes the switch in
    /// order with the prompts, so the next turn runs in the new mode, as does the rest of a
    /// running one (its next tool call).
    fn set_mode(
        &self,
        req: &acp::SetSessionModeRequest,
    ) -> Result<acp::SetSessionModeResponse, AcpError> {
        let session = self.session(&req.session_id.0)?;
        let mode = WorkMode::parse(&req.mode_id.0)
            .ok_or_else(|| AcpError::UnknownMode(req.mode_id.0.to_string()))?;
        session
            .ops
            .send(Op::SetMode { mode })
            .map_err(|_| AcpError::AgentStopped(session.id.clone()))?;
        Ok(acp::SetSessionModeResponse::new())
    }

    /// Starts a turn; the answer is sent by the session's pump when the turn ends.
    fn prompt(
        &self,
        req: acp::PromptRequest,
        responder: Responder<acp::PromptResponse>,
    ) -> Result<(), agent_client_protocol::Error> {
        let started = self.session(&req.session_id.0).and_then(|session| {
            let parts =
                translate::prompt_parts(&req.prompt).map_err(AcpError::UnsupportedContent)?;
            Ok((session, parts))
        });
        let (session, (text, images)) = match started {
            Ok(s) => s,
            Err(e) => return responder.respond_with_error(e.to_rpc()),
        };
        let mut slot = session.prompt.lock();
        if slot.is_some() {
            return responder
                .respond_with_error(AcpError::PromptRunning(session.id.clone()).to_rpc());
        }
        if session.ops.send(Op::UserTurn { text, images }).is_err() {
            return responder
                .respond_with_error(AcpError::AgentStopped(session.id.clone()).to_rpc());
        }
        *slot = Some(responder);
        Ok(())
    }

    fn cancel(&self, n: &acp::CancelNotification) {
        match self.session(&n.session_id.0) {
            Ok(session) => {
                tracing::info!(session = %session.id, "acp cancel");
                let _ = session.ops.send(Op::Interrupt);
            }
            Err(e) => tracing::warn!(error = %e, "session/cancel for an unknown session"),
        }
    }

    /// Stops every agent: running turns are cancelled and awaited (bounded).
    async fn shutdown(&self) {
        let sessions: Vec<Arc<Session>> = self.sessions.lock().drain().map(|(_, v)| v).collect();
        for session in sessions {
            let _ = session.ops.send(Op::Shutdown);
            let task = session.task.lock().take();
            if let Some(task) = task
                && tokio::time::timeout(Duration::from_secs(10), task)
                    .await
                    .is_err()
            {
                tracing::warn!(session = %session.id, "agent did not stop within 10 s");
            }
        }
    }
}

/// The MCP servers an editor passes in `session/new` or `session/load`, as config tables: the same
/// rules as the config's (a clean environment plus what is listed, the same timeouts and
/// policy). SSE, a transport the protocol has retired, is refused with the server's name.
fn editor_mcp_servers(
    servers: &[acp::McpServer],
) -> Result<Vec<(String, McpServerConfig)>, AcpError> {
    let mut out = Vec::new();
    for server in servers {
        let (name, config) = match server {
            acp::McpServer::Stdio(s) => (
                s.name.clone(),
                McpServerConfig {
                    command: Some(s.command.display().to_string()),
                    args: s.args.clone(),
                    env: s
                        .env
                        .iter()
                        .map(|v| (v.name.clone(), v.value.clone()))
                        .collect(),
                    ..Default::default()
                },
            ),
            acp::McpServer::Http(h) => (
                h.name.clone(),
                McpServerConfig {
                    url: Some(h.url.clone()),
                    headers: h
                        .headers
                        .iter()
                        .map(|v| (v.name.clone(), v.value.clone()))
                        .collect(),
                    ..Default::default()
                },
            ),
            acp::McpServer::Sse(s) => {
                return Err(AcpError::McpServer(format!(
                    "{}: the SSE transport is not supported; use streamable HTTP",
                    s.name
                )));
            }
            _ => {
                return Err(AcpError::McpServer(
                    "an MCP server of a transport pablo does not know".into(),
                ));
            }
        };
        let name = pablo_launch::mcp::editor_server_name(&name);
        out.push((name, config));
    }
    Ok(out)
}

/// A translator for sessions of this launch: tool kinds from its catalog, and the host's bound
/// on a request, in tokens at roughly four bytes each, as the context size (the most context
/// pablo will ever send, so the editor's gauge never reads over 100 %).
fn translator_for(launch: &Launch) -> Result<Translator, AcpError> {
    let kinds = launch.tool_kinds()?.into_iter().collect();
    let context_tokens = (launch.limits().max_request_context_bytes / 4) as u64;
    Ok(Translator::new(
        launch.workspace.clone(),
        kinds,
        context_tokens,
    ))
}

/// Forwards one session's engine events to the client, in order, until the agent stops.
async fn pump(
    session: Arc<Session>,
    mut events: mpsc::UnboundedReceiver<Event>,
    mut translator: Translator,
    cx: ConnectionTo<Client>,
) -> Result<(), agent_client_protocol::Error> {
    let mut last_error: Option<(String, String)> = None;
    while let Some(event) = events.recv().await {
        for update in translator.updates(&event) {
            cx.send_notification(acp::SessionNotification::new(session.id.clone(), update))?;
        }
        match event {
            Event::ApprovalRequest {
                call_id,
                tool,
                preview,
                verdict,
            } => ask(
                &session,
                &mut translator,
                &cx,
                call_id,
                &tool,
                &preview,
                &verdict,
            )?,
            // What the language servers say of a change waiting for permission: an update of
            // the pending call.
            Event::PreviewDiagnostics {
                call_id,
                diagnostics,
                ..
            } => {
                let update = translator.diagnostics_update(&call_id, &diagnostics);
                cx.send_notification(acp::SessionNotification::new(session.id.clone(), update))?;
            }
            Event::ApprovalResolved { call_id, .. } | Event::ToolCallEnd { call_id, .. } => {
                session.open_approvals.lock().remove(&call_id);
            }
            Event::Warning { message } => {
                tracing::warn!(session = %session.id, warning = %message, "agent warning");
            }
            // A turn starts clean: an error reported after the last turn ended is not this one's.
            Event::UserMessage { .. } => last_error = None,
            Event::Error { code, message } => last_error = Some((code, message)),
            Event::TurnRefused { code, message, .. } => {
                let responder = session.prompt.lock().take();
                if let Some(responder) = responder {
                    responder.respond_with_result(prompt_answer(
                        StopReason::Error,
                        Some((code, message)),
                    ))?;
                }
                last_error = None;
            }
            Event::TurnCompleted { stop_reason, .. } => {
                session.open_approvals.lock().clear();
                let responder = session.prompt.lock().take();
                if let Some(responder) = responder {
                    responder.respond_with_result(prompt_answer(stop_reason, last_error.take()))?;
                }
                last_error = None;
            }
            Event::ShutdownComplete => break,
            _ => {}
        }
    }
    // The agent is gone: a prompt still waiting gets an error rather than silence.
    let responder = session.prompt.lock().take();
    if let Some(responder) = responder {
        responder.respond_with_error(AcpError::AgentStopped(session.id.clone()).to_rpc())?;
    }
    Ok(())
}

/// The answer to `session/prompt` for a finished turn. A failed turn is a JSON-RPC error carrying
/// the engine's code and message; everything else is a stop reason.
pub(crate) fn prompt_answer(
    stop_reason: StopReason,
    error: Option<(String, String)>,
) -> Result<acp::PromptResponse, agent_client_protocol::Error> {
    let reason = match stop_reason {
        StopReason::EndTurn => acp::StopReason::EndTurn,
        StopReason::MaxTokens => acp::StopReason::MaxTokens,
        StopReason::Cancelled => acp::StopReason::Cancelled,
        StopReason::BudgetExhausted => acp::StopReason::MaxTurnRequests,
        StopReason::Error => {
            let (code, message) =
                error.unwrap_or_else(|| ("turn_failed".into(), "the turn failed".into()));
            return Err(
                agent_client_protocol::Error::new(ErrorCode::INTERNAL_ERROR, message)
                    .data(json!({"code": code})),
            );
        }
    };
    let mut response = acp::PromptResponse::new(reason);
    if let Some((code, message)) = error
        && let serde_json::Value::Object(meta) =
            json!({"pablo": {"code": code, "message": message}})
    {
        response = response.meta(meta);
    }
    Ok(response)
}

/// What "reject always" remembers: the command line for commands, the tool and path for file
/// changes, the tool otherwise.
pub(crate) fn reject_key(tool: &str, preview: &Preview) -> String {
    match preview {
        Preview::Command(c) => format!("{tool}\0{}", c.command),
        Preview::FileChange(fc) => format!("{tool}\0{}", fc.path),
        Preview::Read { path } => format!("{tool}\0{path}"),
        Preview::Fetch { url, .. } => format!("{tool}\0{url}"),
        _ => tool.to_string(),
    }
}

/// The options of a permission request.
pub(crate) fn permission_options(
    tool: &str,
    preview: &Preview,
    verdict: &Verdict,
) -> Vec<acp::PermissionOption> {
    let mut options = vec![acp::PermissionOption::new(
        ALLOW_ONCE,
        "Allow once",
        acp::PermissionOptionKind::AllowOnce,
    )];
    if let Some(rule) = &verdict.always_rule {
        options.push(acp::PermissionOption::new(
            ALLOW_ALWAYS,
            format!("Always allow ({rule})"),
            acp::PermissionOptionKind::AllowAlways,
        ));
    }
    options.push(acp::PermissionOption::new(
        REJECT_ONCE,
        "Reject",
        acp::PermissionOptionKind::RejectOnce,
    ));
    let always = match preview {
        Preview::Command(c) => {
            format!("Always reject `{}` in this session", first_line(&c.command))
        }
        Preview::FileChange(fc) => format!("Always reject {tool} on {} in this session", fc.path),
        _ => format!("Always reject {tool} in this session"),
    };
    options.push(acp::PermissionOption::new(
        REJECT_ALWAYS,
        always,
        acp::PermissionOptionKind::RejectAlways,
    ));
    options
}

fn first_line(s: &str) -> String {
    pablo_protocol::describe::first_line_clipped(s, 80, true)
}

/// Puts one approval to the client, or answers it at once when the person already rejected the
/// same thing "always". The answer goes back to the agent as [`Op::Approval`], the same path the
/// TUI uses.
fn ask(
    session: &Arc<Session>,
    translator: &mut Translator,
    cx: &ConnectionTo<Client>,
    call_id: String,
    tool: &str,
    preview: &Preview,
    verdict: &Verdict,
) -> Result<(), agent_client_protocol::Error> {
    let key = reject_key(tool, preview);
    let rejected = session.rejected_always.lock().contains(&key);
    if rejected {
        let _ = session.ops.send(Op::Approval {
            call_id,
            answer: ApprovalAnswer::Reject {
                note: Some("the person rejected this for the rest of the session".into()),
            },
        });
        return Ok(());
    }
    session.open_approvals.lock().insert(call_id.clone());
    let tool_call = translator.permission_tool_call(&call_id, tool, preview, verdict);
    let request = acp::RequestPermissionRequest::new(
        session.id.clone(),
        tool_call,
        permission_options(tool, preview, verdict),
    );
    let sent = cx.send_request(request);
    let session = session.clone();
    // Waiting for the person must not hold the connection's dispatch loop.
    cx.spawn(async move {
        let answer = match sent.block_task().await {
            Ok(response) => match response.outcome {
                acp::RequestPermissionOutcome::Selected(s) => match &*s.option_id.0 {
                    ALLOW_ONCE => ApprovalAnswer::AllowOnce,
                    ALLOW_ALWAYS => ApprovalAnswer::AllowAlways,
                    REJECT_ALWAYS => {
                        session.rejected_always.lock().insert(key);
                        ApprovalAnswer::Reject {
                            note: Some(
                                "the person rejected this for the rest of the session".into(),
                            ),
                        }
                    }
                    _ => ApprovalAnswer::Reject { note: None },
                },
                _ => ApprovalAnswer::Reject {
                    note: Some("the editor cancelled the permission request".into()),
                },
            },
            Err(e) => ApprovalAnswer::Reject {
                note: Some(format!("the permission request failed: {}", e.message)),
            },
        };
        // A turn that ended meanwhile (cancelled) no longer waits for this answer.
        let still_open = session.open_approvals.lock().remove(&call_id);
        if still_open {
            let _ = session.ops.send(Op::Approval { call_id, answer });
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use pablo_protocol::CommandPreview;

    #[test]
    fn a_failed_turn_is_an_error_carrying_the_engine_code() {
        let err = prompt_answer(
            StopReason::Error,
            Some(("model_unreachable".into(), "openai: cannot connect".into())),
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::INTERNAL_ERROR);
        assert_eq!(err.message, "openai: cannot connect");
        assert_eq!(err.data.unwrap()["code"], "model_unreachable");
    }

    #[test]
    fn stop_reasons_map_to_acp() {
        let r = |s| {
            serde_json::to_value(prompt_answer(s, None).unwrap()).unwrap()["stopReason"].clone()
        };
        assert_eq!(r(StopReason::EndTurn), "end_turn");
        assert_eq!(r(StopReason::MaxTokens), "max_tokens");
        assert_eq!(r(StopReason::Cancelled), "cancelled");
        assert_eq!(r(StopReason::BudgetExhausted), "max_turn_requests");
    }

    #[test]
    fn permission_options_name_the_command_and_the_always_rule() {
        let preview = Preview::Command(CommandPreview {
            command: "rm -rf target".into(),
            cwd: ".".into(),
            background: false,
            pty: false,
            commands: Vec::new(),
            sandbox: None,
        });
        let mut verdict = Verdict::ask("builtin.tool.shell.run", "shell.run needs approval");
        verdict.always_rule = Some("prefix /usr/bin/rm".into());
        let opts = permission_options("shell.run", &preview, &verdict);
        let ids: Vec<_> = opts.iter().map(|o| o.option_id.0.to_string()).collect();
        assert_eq!(ids, [ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE, REJECT_ALWAYS]);
        assert_eq!(opts[1].name, "Always allow (prefix /usr/bin/rm)");
        assert_eq!(
            opts[3].name,
            "Always reject `rm -rf target` in this session"
        );
        verdict.always_rule = None;
        let opts = permission_options("shell.run", &preview, &verdict);
        assert!(opts.iter().all(|o| &*o.option_id.0 != ALLOW_ALWAYS));
    }

    #[test]
    fn refusals_carry_their_code_in_the_error_data() {
        let e = AcpError::CwdNotAbsolute("rel".into());
        let rpc = e.to_rpc();
        assert_eq!(rpc.code, ErrorCode::INVALID_PARAMS);
        assert_eq!(rpc.data.unwrap()["code"], "cwd_not_absolute");
    }
}
