//! Integration tests: acp.
//!
//! pablo is driven as an ACP agent with raw JSON-RPC lines, the way an editor drives it: the
//! `pablo acp` binary as a child process over its stdin/stdout, against the scripted
//! OpenAI-compatible server on 127.0.0.1 (and, when node is there, with the official TypeScript
//! client library). A second harness runs the same server in-process over a pipe with a scripted
//! model client, which lets a test decide exactly what the model streams (text, tool calls, a
//! stream that stalls until cancelled) while everything between the pipe and the model — the
//! ACP front-end, the agent loop, policy, approvals, tools — is the real code.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, Lines};
use tokio_util::sync::CancellationToken;

use pablo::launch::{Launch, LaunchError, LaunchOptions};
use pablo::model::{
    EventStream, ModelClient, ModelError, ModelRequest, ModelStopReason, StreamEvent, ToolCall,
};
use pablo::protocol::Usage;

/// A JSON-RPC peer playing the editor.
struct Rpc<R, W> {
    lines: Lines<BufReader<R>>,
    writer: W,
    next_id: u64,
    /// Every `session/update` seen, in order.
    updates: Vec<Value>,
    /// Every request the agent sent to us, in order.
    agent_requests: Vec<Value>,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Rpc<R, W> {
    fn new(reader: R, writer: W) -> Self {
        Self {
            lines: BufReader::new(reader).lines(),
            writer,
            next_id: 1,
            updates: Vec::new(),
            agent_requests: Vec::new(),
        }
    }

    async fn send(&mut self, v: &Value) {
        let mut line = v.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.flush().await.unwrap();
    }

    async fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    async fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    async fn respond(&mut self, id: &Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
            .await;
    }

    /// The next message; every line on stdout must be a JSON-RPC message.
    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
            .await
            .expect("no message from the agent within 20 s")
            .unwrap()
            .expect("the agent closed its output");
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not a JSON-RPC line on stdout: {line:?}: {e}"));
        assert_eq!(v["jsonrpc"], "2.0", "{line}");
        v
    }

    /// Reads until the response to `id`. Notifications are recorded; requests from the agent are
    /// recorded and answered by `answer` (or left unanswered when it returns `None`).
    async fn response_to(
        &mut self,
        id: u64,
        answer: &mut dyn FnMut(&Value) -> Option<Value>,
    ) -> Value {
        loop {
            let m = self.next().await;
            if m.get("method").is_some() {
                self.take(m, answer).await;
            } else if m["id"] == json!(id) {
                return m;
            } else {
                panic!("unexpected message: {m}");
            }
        }
    }

    /// Reads until a message satisfies `pred` (notifications and requests are recorded).
    async fn until(
        &mut self,
        pred: &mut dyn FnMut(&Value) -> bool,
        answer: &mut dyn FnMut(&Value) -> Option<Value>,
    ) -> Value {
        loop {
            let m = self.next().await;
            let hit = pred(&m);
            if m.get("method").is_some() {
                self.take(m.clone(), answer).await;
            }
            if hit {
                return m;
            }
        }
    }

    async fn take(&mut self, m: Value, answer: &mut dyn FnMut(&Value) -> Option<Value>) {
        if m["method"] == "session/update" {
            self.updates.push(m["params"].clone());
        } else if m.get("id").is_some() {
            self.agent_requests.push(m.clone());
            match answer(&m) {
                Some(reply) if reply.get(RPC_ERROR).is_some() => {
                    let error = reply[RPC_ERROR].clone();
                    self.send(&json!({"jsonrpc": "2.0", "id": m["id"], "error": error}))
                        .await;
                }
                Some(result) => self.respond(&m["id"], result).await,
                None => {}
            }
        }
    }

    async fn initialize(&mut self) -> Value {
        self.initialize_with(json!({
            "fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}))
            .await
    }

    /// `initialize` advertising `capabilities` (the whole `clientCapabilities` object).
    async fn initialize_with(&mut self, capabilities: Value) -> Value {
        let id = self
            .request(
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": capabilities,
                    "clientInfo": {"name": "pablo-tests", "version": "0"}}),
            )
            .await;
        self.response_to(id, &mut no_answer).await
    }

    /// The requests the agent sent with `method`, in order.
    fn requests_for(&self, method: &str) -> Vec<&Value> {
        self.agent_requests
            .iter()
            .filter(|r| r["method"] == method)
            .collect()
    }

    async fn new_session(&mut self, cwd: &Path) -> String {
        let id = self
            .request("session/new", json!({"cwd": cwd, "mcpServers": []}))
            .await;
        let r = self.response_to(id, &mut no_answer).await;
        r["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id: {r}"))
            .to_string()
    }

    /// `session/set_mode` and its answer.
    async fn set_mode(&mut self, session: &str, mode: &str) -> Value {
        let id = self
            .request(
                "session/set_mode",
                json!({"sessionId": session, "modeId": mode}),
            )
            .await;
        self.response_to(id, &mut no_answer).await
    }

    /// The `sessionUpdate` kinds seen so far, in order.
    fn update_kinds(&self) -> Vec<String> {
        self.updates
            .iter()
            .map(|u| {
                u["update"]["sessionUpdate"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            })
            .collect()
    }

    /// The agent's streamed text.
    fn message_text(&self) -> String {
        self.updates
            .iter()
            .filter(|u| u["update"]["sessionUpdate"] == "agent_message_chunk")
            .map(|u| u["update"]["content"]["text"].as_str().unwrap_or(""))
            .collect()
    }
}

fn no_answer(_: &Value) -> Option<Value> {
    None
}

/// The answer to a permission request that allows the call once.
fn allow_once() -> Option<Value> {
    Some(json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}}))
}

/// An answer holding this key is sent as a JSON-RPC error (its value) instead of a result.
const RPC_ERROR: &str = "__rpc_error";

/// An error answer for [`Rpc::take`].
fn rpc_error(message: &str) -> Value {
    json!({RPC_ERROR: {"code": -32603, "message": message}})
}

/// Temp dirs for XDG and the workspace.
struct Env {
    _root: tempfile::TempDir,
    xdg: std::path::PathBuf,
    workspace: std::path::PathBuf,
}

impl Env {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let xdg = root.path().join("xdg");
        let workspace = root.path().join("ws");
        std::fs::create_dir_all(&xdg).unwrap();
        std::fs::create_dir_all(&workspace).unwrap();
        let workspace = std::fs::canonicalize(workspace).unwrap();
        Self {
            _root: root,
            xdg,
            workspace,
        }
    }

    fn command(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_pablo"));
        cmd.env("XDG_CONFIG_HOME", self.xdg.join("config"))
            .env("XDG_DATA_HOME", self.xdg.join("data"))
            .env("XDG_STATE_HOME", self.xdg.join("state"))
            .env("XDG_CACHE_HOME", self.xdg.join("cache"))
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("PABLO_LOG")
            .current_dir(&self.workspace)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    /// A file listing everything under the workspace and the data dir (to check that a refusal
    /// changed nothing).
    fn snapshot(&self) -> Vec<String> {
        let mut out = Vec::new();
        for root in [&self.workspace, &self.xdg] {
            for e in walk(root) {
                out.push(e);
            }
        }
        out.sort();
        out
    }
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            out.push(p.display().to_string());
            if p.is_dir() {
                out.extend(walk(&p));
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The binary over stdio.

mod binary {
    use super::*;

    #[tokio::test]
    async fn initialize_negotiates_version_one_and_advertises_prompt_capabilities() {
        let env = Env::new();
        let mut child = env.command().arg("acp").spawn().unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        let r = rpc.initialize().await;
        let result = &r["result"];
        assert_eq!(result["protocolVersion"], 1, "{r}");
        assert_eq!(result["agentInfo"]["name"], "pablo");
        assert_eq!(
            result["agentCapabilities"]["promptCapabilities"]["embeddedContext"],
            true
        );
        assert_eq!(
            result["agentCapabilities"]["promptCapabilities"]["image"],
            false
        );
        // A client asking for a newer version is answered with the one pablo speaks.
        drop(rpc);
        let _ = child.wait().await;
        let mut child = env.command().arg("acp").spawn().unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        let id = rpc
            .request(
                "initialize",
                json!({"protocolVersion": 7, "clientCapabilities": {}}),
            )
            .await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["result"]["protocolVersion"], 1, "{r}");
    }

    #[tokio::test]
    async fn plain_pablo_acp_offers_the_modes_and_starts_in_the_configured_one() {
        let env = Env::new();
        let config = env.xdg.join("config/pablo");
        std::fs::create_dir_all(&config).unwrap();
        // A provider that is never called: no prompt is sent.
        std::fs::write(
            config.join("config.toml"),
            "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\n[tui]\nmode = \"auto-edit\"\n",
        )
        .unwrap();
        let mut child = env
            .command()
            .arg("acp")
            .env("OPENAI_API_KEY", "sk-test")
            .spawn()
            .unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        rpc.initialize().await;
        let id = rpc
            .request(
                "session/new",
                json!({"cwd": env.workspace, "mcpServers": []}),
            )
            .await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["result"]["modes"]["currentModeId"], "auto-edit", "{r}");
        let session = r["result"]["sessionId"].as_str().unwrap().to_string();
        let r = rpc.set_mode(&session, "plan").await;
        assert!(r["error"].is_null(), "{r}");
        let switched = |u: &Value| u["update"]["sessionUpdate"] == "current_mode_update";
        if !rpc.updates.iter().any(switched) {
            rpc.until(&mut |m| switched(&m["params"]), &mut no_answer)
                .await;
        }
        let update = rpc.updates.iter().find(|u| switched(u)).unwrap();
        assert_eq!(update["update"]["currentModeId"], "plan", "{update}");
        drop(rpc);
        let _ = child.wait().await;
    }

    #[tokio::test]
    async fn closing_stdin_ends_the_agent_cleanly_with_nothing_but_json_on_stdout() {
        let env = Env::new();
        let mut child = env.command().arg("acp").spawn().unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        rpc.initialize().await;
        let Rpc { lines, writer, .. } = rpc;
        drop(writer);
        let mut lines = lines;
        // Whatever is left on stdout must still be JSON-RPC (here: nothing).
        while let Some(line) = lines.next_line().await.unwrap() {
            let v: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(v["jsonrpc"], "2.0");
        }
        let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(status.success(), "{status:?}");
    }

    #[tokio::test]
    async fn a_relative_cwd_is_refused_with_its_code_and_creates_nothing() {
        let env = Env::new();
        let mut child = env.command().arg("acp").spawn().unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        rpc.initialize().await;
        let before = env.snapshot();
        let id = rpc
            .request("session/new", json!({"cwd": "ws", "mcpServers": []}))
            .await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["error"]["code"], -32602, "{r}");
        assert_eq!(r["error"]["data"]["code"], "cwd_not_absolute", "{r}");
        assert!(r["error"]["message"].as_str().unwrap().contains("\"ws\""));
        assert_eq!(env.snapshot(), before);
    }

    #[tokio::test]
    async fn a_prompt_for_an_unknown_session_is_refused() {
        let env = Env::new();
        let mut child = env.command().arg("acp").spawn().unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        rpc.initialize().await;
        let id = rpc
            .request(
                "session/prompt",
                json!({"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}),
            )
            .await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["error"]["data"]["code"], "unknown_session", "{r}");
    }

    #[tokio::test]
    async fn requests_before_initialize_are_refused() {
        let env = Env::new();
        let mut child = env.command().arg("acp").spawn().unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        let before = env.snapshot();
        let id = rpc
            .request(
                "session/new",
                json!({"cwd": env.workspace, "mcpServers": []}),
            )
            .await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert!(r.get("error").is_some(), "{r}");
        assert!(r["error"]["data"]["code"].is_string(), "{r}");
        assert_eq!(env.snapshot(), before);
    }

    #[tokio::test]
    async fn a_line_of_invalid_utf8_is_a_parse_error_and_the_connection_goes_on() {
        let env = Env::new();
        let mut child = env.command().arg("acp").spawn().unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        rpc.writer
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"x\xff\xfe\"}\n\xc3\n")
            .await
            .unwrap();
        for line in [1, 2] {
            let r = rpc.next().await;
            assert_eq!(r["id"], Value::Null, "{r}");
            assert_eq!(r["error"]["code"], -32700, "{r}");
            assert_eq!(r["error"]["data"]["code"], "parse_error", "{r}");
            let message = r["error"]["data"]["message"].as_str().unwrap();
            assert!(
                message.contains(&format!("line {line} is not UTF-8")),
                "{message}"
            );
        }
        // The connection is still there: initialize is answered.
        let r = rpc.initialize().await;
        assert_eq!(r["result"]["protocolVersion"], 1, "{r}");
        drop(rpc);
        let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(status.success(), "{status:?}");
    }

    #[tokio::test]
    async fn a_client_asking_another_version_keeps_its_editor_buffers() {
        use crate::support::http::{ScriptedResponse, ScriptedServer, openai};
        let env = Env::new();
        std::fs::write(env.workspace.join("notes.txt"), "saved on disk\n").unwrap();
        let model = ScriptedServer::start().await;
        model.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_r",
            "fs_read",
            &[r#"{"path": "notes.txt"}"#],
        )));
        model.push(ScriptedResponse::sse(openai::text_answer("read")));
        let config = env.xdg.join("config/pablo");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            config.join("config.toml"),
            format!(
                "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n",
                model.base_url()
            ),
        )
        .unwrap();
        let mut child = env
            .command()
            .arg("acp")
            .env("OPENAI_API_KEY", "sk-test")
            .spawn()
            .unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        let id = rpc
            .request(
                "initialize",
                json!({"protocolVersion": 2, "clientCapabilities":
                    {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true}}),
            )
            .await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["result"]["protocolVersion"], 1, "{r}");
        let session = rpc.new_session(&env.workspace).await;
        let id = rpc
            .request(
                "session/prompt",
                json!({"sessionId": session, "prompt": [{"type": "text", "text": "read"}]}),
            )
            .await;
        let mut answer = |m: &Value| {
            assert_eq!(m["method"], "fs/read_text_file", "{m}");
            Some(json!({"content": "typed but not saved\n"}))
        };
        let r = rpc.response_to(id, &mut answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        assert_eq!(rpc.requests_for("fs/read_text_file").len(), 1);
        let body = model.requests()[1].json();
        let told = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(told.contains("typed but not saved"), "{told}");
    }

    #[tokio::test]
    async fn requests_the_protocol_refuses_carry_a_code_in_their_data_like_every_refusal() {
        let env = Env::new();
        let mut child = env.command().arg("acp").spawn().unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        rpc.initialize().await;
        // Malformed params: no cwd.
        let id = rpc.request("session/new", json!({"mcpServers": []})).await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["error"]["code"], -32602, "{r}");
        assert_eq!(r["error"]["data"]["code"], "invalid_params", "{r}");
        assert!(
            r["error"]["data"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("cwd")),
            "{r}"
        );
        // A method no agent has.
        let id = rpc.request("session/dance", json!({})).await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["error"]["code"], -32601, "{r}");
        assert_eq!(r["error"]["data"]["code"], "method_not_found", "{r}");
    }
}

// ---------------------------------------------------------------------------------------------
// In-process over a pipe, with a scripted model client.

/// One step of a scripted model call.
#[derive(Clone)]
enum Step {
    Text(&'static str),
    /// A piece of reasoning (thinking) text.
    Think(&'static str),
    Call(&'static str, &'static str, Value),
    Usage(u64, u64),
    /// End the call normally.
    Done(ModelStopReason),
    /// Stream nothing more and never finish (until the turn is cancelled).
    Stall,
}

/// A model client that plays one script per call and records the requests it was given.
#[derive(Default)]
struct Scripted {
    scripts: Mutex<VecDeque<Vec<Step>>>,
    requests: Mutex<Vec<ModelRequest>>,
    /// Whether this model takes images (its profile says so).
    images: bool,
}

#[async_trait::async_trait]
impl ModelClient for Scripted {
    fn provider(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "script"
    }
    fn profile(&self) -> pablo::model::ModelProfile {
        pablo::model::ModelProfile {
            images: self.images,
            ..pablo::model::ModelProfile::lookup("script")
        }
    }
    async fn stream(
        &self,
        request: &ModelRequest,
        _cancel: CancellationToken,
    ) -> Result<EventStream, ModelError> {
        self.requests.lock().unwrap().push(request.clone());
        let script = self
            .scripts
            .lock()
            .unwrap()
            .pop_front()
            .ok_or_else(|| ModelError::Config("the script has no more model calls".into()))?;
        let mut events = Vec::new();
        let mut stall = false;
        for step in script {
            match step {
                Step::Text(t) => events.push(Ok(StreamEvent::TextDelta(t.into()))),
                Step::Think(t) => events.push(Ok(StreamEvent::ReasoningDelta(t.into()))),
                Step::Call(id, name, args) => events.push(Ok(StreamEvent::ToolCall(ToolCall {
                    id: id.into(),
                    name: name.into(),
                    arguments: args.to_string(),
                }))),
                Step::Usage(i, o) => events.push(Ok(StreamEvent::Usage(Usage {
                    input_tokens: i,
                    output_tokens: o,
                    cached_input_tokens: 0,
                    cache_write_input_tokens: 0,
                }))),
                Step::Done(r) => events.push(Ok(StreamEvent::Completed { stop_reason: r })),
                Step::Stall => stall = true,
            }
        }
        let s = futures::stream::iter(events);
        Ok(if stall {
            s.chain(futures::stream::pending()).boxed()
        } else {
            s.boxed()
        })
    }
}

struct InProcess {
    env: Env,
    model: Arc<Scripted>,
    rpc: Rpc<
        tokio::io::ReadHalf<tokio::io::DuplexStream>,
        tokio::io::WriteHalf<tokio::io::DuplexStream>,
    >,
    server: tokio::task::JoinHandle<Result<(), pablo::acp::AcpError>>,
}

impl InProcess {
    /// Starts the server in this process. XDG variables are process-wide, so every in-process
    /// test points them at the same per-binary directory and keeps its own workspace.
    fn start(scripts: Vec<Vec<Step>>, project_config: Option<&str>) -> Self {
        Self::start_in(Env::new(), scripts, project_config)
    }

    /// Like [`InProcess::start`], in an existing workspace.
    fn start_in(env: Env, scripts: Vec<Vec<Step>>, project_config: Option<&str>) -> Self {
        Self::start_with(env, scripts, project_config, LaunchOptions::default())
    }

    /// Like [`InProcess::start_in`], with the front-end's launch options (flags).
    fn start_with(
        env: Env,
        scripts: Vec<Vec<Step>>,
        project_config: Option<&str>,
        options: LaunchOptions,
    ) -> Self {
        Self::start_model(env, scripts, project_config, options, false)
    }

    /// Like [`InProcess::start`], with a model that takes images.
    fn start_seeing(scripts: Vec<Vec<Step>>) -> Self {
        Self::start_model(Env::new(), scripts, None, LaunchOptions::default(), true)
    }

    fn start_model(
        env: Env,
        scripts: Vec<Vec<Step>>,
        project_config: Option<&str>,
        options: LaunchOptions,
        images: bool,
    ) -> Self {
        xdg_once();
        if let Some(cfg) = project_config {
            std::fs::create_dir_all(env.workspace.join(".pablo")).unwrap();
            std::fs::write(env.workspace.join(".pablo/config.toml"), cfg).unwrap();
        }
        let model = Arc::new(Scripted {
            scripts: Mutex::new(scripts.into()),
            requests: Mutex::new(Vec::new()),
            images,
        });
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let (their_read, their_write) = tokio::io::split(theirs);
        let (our_read, our_write) = tokio::io::split(ours);
        let m = model.clone();
        let models: pablo::acp::ModelSource = Arc::new(move |_: &Launch| {
            let m: Arc<dyn ModelClient> = m.clone();
            Box::pin(async move { Ok::<_, LaunchError>(m) })
        });
        let server = tokio::spawn(pablo::acp::serve(
            pablo::acp::line_transport(their_read, their_write),
            options,
            models,
        ));
        Self {
            env,
            model,
            rpc: Rpc::new(our_read, our_write),
            server,
        }
    }

    async fn session(&mut self) -> String {
        self.rpc.initialize().await;
        let ws = self.env.workspace.clone();
        self.rpc.new_session(&ws).await
    }

    async fn prompt(&mut self, session: &str, text: &str) -> u64 {
        self.rpc
            .request(
                "session/prompt",
                json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
            )
            .await
    }

    async fn finish(self) -> Env {
        let InProcess {
            rpc, server, env, ..
        } = self;
        drop(rpc);
        tokio::time::timeout(Duration::from_secs(20), server)
            .await
            .expect("the server did not stop after its client went away")
            .unwrap()
            .unwrap();
        env
    }
}

/// Points the XDG variables of this test process at a temp dir, once. `Launch::prepare` reads
/// them from the environment, and the in-process server shares the test process.
#[allow(unsafe_code)]
fn xdg_once() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let dir =
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("acp-xdg-{}", std::process::id()));
        // SAFETY: runs once, before the first in-process server starts; the variables are only
        // read afterwards, and no other code in this binary writes them concurrently.
        unsafe {
            std::env::set_var("XDG_CONFIG_HOME", dir.join("config"));
            std::env::set_var("XDG_DATA_HOME", dir.join("data"));
            std::env::set_var("XDG_STATE_HOME", dir.join("state"));
        }
    });
}

const PLAN_ARGS: fn() -> Value = || {
    json!({"items": [
        {"content": "read the code", "status": "completed"},
        {"content": "fix the bug", "status": "in_progress"}
    ]})
};

mod in_process {
    use super::*;

    #[tokio::test]
    async fn a_prompt_streams_text_and_answers_end_turn() {
        let mut t = InProcess::start(
            vec![vec![
                Step::Text("Hel"),
                Step::Text("lo, "),
                Step::Text("editor."),
                Step::Usage(120, 7),
                Step::Done(ModelStopReason::EndTurn),
            ]],
            None,
        );
        let session = t.session().await;
        let id = t.prompt(&session, "say hello").await;
        let r = t.rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        assert_eq!(t.rpc.message_text(), "Hello, editor.");
        // Every update names the session, and the usage arrived before the answer.
        assert!(
            t.rpc
                .updates
                .iter()
                .all(|u| u["sessionId"] == json!(session))
        );
        let usage = t
            .rpc
            .updates
            .iter()
            .find(|u| u["update"]["sessionUpdate"] == "usage_update")
            .expect("a usage_update");
        assert_eq!(usage["update"]["used"], 127);
        assert_eq!(
            usage["update"]["_meta"]["pablo"]["last"]["inputTokens"],
            120
        );
        // The model saw the prompt as the user's turn.
        let req = t.model.requests.lock().unwrap()[0].clone();
        assert!(format!("{:?}", req.messages).contains("say hello"));
        t.finish().await;
    }

    #[tokio::test]
    async fn reasoning_is_sent_as_agent_thought_chunks_never_as_message_text() {
        let mut t = InProcess::start(
            vec![vec![
                Step::Think("The editor wants "),
                Step::Think("a greeting."),
                Step::Text("Hello."),
                Step::Done(ModelStopReason::EndTurn),
            ]],
            None,
        );
        let session = t.session().await;
        let id = t.prompt(&session, "say hello").await;
        let r = t.rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        assert_eq!(t.rpc.message_text(), "Hello.");
        let thoughts: String = t
            .rpc
            .updates
            .iter()
            .filter(|u| u["update"]["sessionUpdate"] == "agent_thought_chunk")
            .map(|u| u["update"]["content"]["text"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(thoughts, "The editor wants a greeting.");
        // The thought came before the answer.
        let kinds = t.rpc.update_kinds();
        let first_thought = kinds.iter().position(|k| k == "agent_thought_chunk");
        let first_text = kinds.iter().position(|k| k == "agent_message_chunk");
        assert!(first_thought < first_text, "{kinds:?}");
        t.finish().await;
    }

    #[tokio::test]
    async fn a_tool_call_becomes_tool_call_and_plan_updates() {
        let mut t = InProcess::start(
            vec![
                vec![
                    Step::Call("call_1", "update_plan", PLAN_ARGS()),
                    Step::Done(ModelStopReason::ToolUse),
                ],
                vec![Step::Text("planned"), Step::Done(ModelStopReason::EndTurn)],
            ],
            None,
        );
        let session = t.session().await;
        let id = t.prompt(&session, "plan it").await;
        let r = t.rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        let kinds = t.rpc.update_kinds();
        let first_call = kinds.iter().position(|k| k == "tool_call").unwrap();
        let plan = kinds.iter().position(|k| k == "plan").unwrap();
        let last_update = kinds.iter().rposition(|k| k == "tool_call_update").unwrap();
        assert!(first_call < plan && plan < last_update, "{kinds:?}");
        let call = &t.rpc.updates[first_call]["update"];
        assert_eq!(call["toolCallId"], "call_1");
        assert_eq!(call["kind"], "think");
        assert_eq!(call["title"], "Update plan");
        let plan = &t.rpc.updates[plan]["update"];
        assert_eq!(plan["entries"][0]["content"], "read the code");
        assert_eq!(plan["entries"][0]["status"], "completed");
        assert_eq!(plan["entries"][1]["status"], "in_progress");
        let done = &t.rpc.updates[last_update]["update"];
        assert_eq!(done["status"], "completed");
        assert_eq!(done["rawOutput"]["ok"], true);
        t.finish().await;
    }

    #[tokio::test]
    async fn an_ask_becomes_a_permission_request_and_allow_once_runs_the_call() {
        let mut t = InProcess::start(
            vec![
                vec![
                    Step::Call("call_p", "update_plan", PLAN_ARGS()),
                    Step::Done(ModelStopReason::ToolUse),
                ],
                vec![Step::Text("done"), Step::Done(ModelStopReason::EndTurn)],
            ],
            Some("[options.tools]\n\"plan.update\" = \"ask\"\n"),
        );
        let session = t.session().await;
        let id = t.prompt(&session, "plan it").await;
        let mut answer = |m: &Value| {
            assert_eq!(m["method"], "session/request_permission");
            allow_once()
        };
        let r = t.rpc.response_to(id, &mut answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        assert_eq!(t.rpc.agent_requests.len(), 1);
        let params = &t.rpc.agent_requests[0]["params"];
        assert_eq!(params["sessionId"], json!(session));
        assert_eq!(params["toolCall"]["toolCallId"], "call_p");
        assert_eq!(params["toolCall"]["kind"], "think");
        let ids: Vec<&str> = params["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["optionId"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            ["allow_once", "allow_always", "reject_once", "reject_always"]
        );
        let kinds: Vec<&str> = params["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["kind"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["allow_once", "allow_always", "reject_once", "reject_always"]
        );
        // The call ran: the plan arrived and the tool result the model read is a success.
        assert!(t.rpc.update_kinds().contains(&"plan".to_string()));
        let second = t.model.requests.lock().unwrap()[1].clone();
        let tool_msg = format!("{:?}", second.messages.last().unwrap());
        assert!(tool_msg.contains(r#"\"ok\":true"#), "{tool_msg}");
        t.finish().await;
    }

    #[tokio::test]
    async fn a_rejected_call_fails_with_rejected_and_reject_always_is_remembered() {
        let mut t = InProcess::start(
            vec![
                vec![
                    Step::Call("call_a", "update_plan", PLAN_ARGS()),
                    Step::Done(ModelStopReason::ToolUse),
                ],
                vec![
                    Step::Call("call_b", "update_plan", PLAN_ARGS()),
                    Step::Done(ModelStopReason::ToolUse),
                ],
                vec![Step::Text("ok"), Step::Done(ModelStopReason::EndTurn)],
            ],
            Some("[options.tools]\n\"plan.update\" = \"ask\"\n"),
        );
        let session = t.session().await;
        let id = t.prompt(&session, "plan twice").await;
        let mut answer = |_: &Value| {
            Some(json!({"outcome": {"outcome": "selected", "optionId": "reject_always"}}))
        };
        let r = t.rpc.response_to(id, &mut answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        // Asked once; the second call was rejected without asking again.
        assert_eq!(t.rpc.agent_requests.len(), 1);
        let failed: Vec<&Value> = t
            .rpc
            .updates
            .iter()
            .map(|u| &u["update"])
            .filter(|u| u["status"] == "failed")
            .collect();
        assert_eq!(failed.len(), 2, "{:?}", t.rpc.updates);
        for f in failed {
            assert_eq!(f["rawOutput"]["error"]["code"], "rejected");
        }
        assert!(!t.rpc.update_kinds().contains(&"plan".to_string()));
        t.finish().await;
    }

    #[tokio::test]
    async fn cancel_mid_stream_answers_cancelled_not_an_error() {
        let mut t = InProcess::start(
            vec![vec![Step::Text("thinking about it"), Step::Stall]],
            None,
        );
        let session = t.session().await;
        let id = t.prompt(&session, "take your time").await;
        t.rpc
            .until(
                &mut |m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk",
                &mut no_answer,
            )
            .await;
        t.rpc
            .notify("session/cancel", json!({"sessionId": session}))
            .await;
        let r = t.rpc.response_to(id, &mut no_answer).await;
        assert!(r.get("error").is_none(), "{r}");
        assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
        t.finish().await;
    }

    #[tokio::test]
    async fn cancel_during_a_permission_request_answers_cancelled() {
        let mut t = InProcess::start(
            vec![vec![
                Step::Call("call_c", "update_plan", PLAN_ARGS()),
                Step::Done(ModelStopReason::ToolUse),
            ]],
            Some("[options.tools]\n\"plan.update\" = \"ask\"\n"),
        );
        let session = t.session().await;
        let id = t.prompt(&session, "plan").await;
        let req = t
            .rpc
            .until(
                &mut |m| m["method"] == "session/request_permission",
                &mut no_answer,
            )
            .await;
        t.rpc
            .notify("session/cancel", json!({"sessionId": session}))
            .await;
        // The editor answers its open permission request with `cancelled`, as the spec asks.
        t.rpc
            .respond(&req["id"], json!({"outcome": {"outcome": "cancelled"}}))
            .await;
        let r = t.rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
        assert!(!t.rpc.update_kinds().contains(&"plan".to_string()));
        t.finish().await;
    }

    #[tokio::test]
    async fn a_second_prompt_while_one_runs_is_refused() {
        let mut t = InProcess::start(vec![vec![Step::Text("busy"), Step::Stall]], None);
        let session = t.session().await;
        let first = t.prompt(&session, "one").await;
        let second = t.prompt(&session, "two").await;
        let r = t.rpc.response_to(second, &mut no_answer).await;
        assert_eq!(r["error"]["data"]["code"], "prompt_running", "{r}");
        t.rpc
            .notify("session/cancel", json!({"sessionId": session}))
            .await;
        let r = t.rpc.response_to(first, &mut no_answer).await;
        assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
        // Only the first prompt reached the model.
        assert_eq!(t.model.requests.lock().unwrap().len(), 1);
        t.finish().await;
    }

    #[tokio::test]
    async fn session_modes_are_offered_and_plan_set_by_the_client_refuses_the_next_edit() {
        // With write tools, as `pablo acp` offers them.
        let options = LaunchOptions {
            allow_write: true,
            ..LaunchOptions::default()
        };
        let mut t = InProcess::start_with(
            Env::new(),
            vec![
                vec![
                    Step::Call(
                        "call_w",
                        "fs_write",
                        json!({"path": "notes.txt", "text": "hi\n", "expected_revision": null}),
                    ),
                    Step::Done(ModelStopReason::ToolUse),
                ],
                vec![Step::Text("a plan"), Step::Done(ModelStopReason::EndTurn)],
            ],
            None,
            options,
        );
        t.rpc.initialize().await;
        let ws = t.env.workspace.clone();
        let id = t
            .rpc
            .request("session/new", json!({"cwd": ws, "mcpServers": []}))
            .await;
        let r = t.rpc.response_to(id, &mut no_answer).await;
        let modes = &r["result"]["modes"];
        assert_eq!(modes["currentModeId"], "ask", "{r}");
        let ids: Vec<&str> = modes["availableModes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["ask", "auto-edit", "plan"]);
        let session = r["result"]["sessionId"].as_str().unwrap().to_string();

        let before = t.env.snapshot();
        let r = t.rpc.set_mode(&session, "sideways").await;
        assert_eq!(r["error"]["data"]["code"], "unknown_mode", "{r}");
        assert_eq!(t.env.snapshot(), before, "the refused switch changed files");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("\"sideways\""),
            "{r}"
        );

        let r = t.rpc.set_mode(&session, "plan").await;
        assert!(r["error"].is_null(), "{r}");
        let id = t.prompt(&session, "write the notes").await;
        let r = t.rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        // Nothing was asked, nothing was written, and the model read the mode's refusal.
        assert!(t.rpc.requests_for("session/request_permission").is_empty());
        assert!(!t.env.workspace.join("notes.txt").exists());
        let second = t.model.requests.lock().unwrap()[1].clone();
        let tool_msg = format!("{:?}", second.messages.last().unwrap());
        assert!(tool_msg.contains("plan_mode"), "{tool_msg}");
        // The client was told of the switch once.
        let switches: Vec<&Value> = t
            .rpc
            .updates
            .iter()
            .filter(|u| u["update"]["sessionUpdate"] == "current_mode_update")
            .collect();
        assert_eq!(switches.len(), 1, "{switches:?}");
        assert_eq!(switches[0]["update"]["currentModeId"], "plan");
        t.finish().await;
    }

    #[tokio::test]
    async fn image_prompts_are_refused_without_reaching_the_model() {
        let mut t = InProcess::start(Vec::new(), None);
        let session = t.session().await;
        let id = t
            .rpc
            .request(
                "session/prompt",
                json!({"sessionId": session, "prompt": [
                    {"type": "image", "data": "AAAA", "mimeType": "image/png"}]}),
            )
            .await;
        let r = t.rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["error"]["data"]["code"], "unsupported_content", "{r}");
        assert!(t.model.requests.lock().unwrap().is_empty());
        t.finish().await;
    }

    const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

    fn image_prompt(session: &str) -> Value {
        json!({"sessionId": session, "prompt": [
            {"type": "text", "text": "what is this?"},
            {"type": "image", "data": PNG_B64, "mimeType": "image/png", "uri": "file:///ws/dot.png"}]})
    }

    #[tokio::test]
    async fn an_image_prompt_reaches_a_model_that_takes_images_and_initialize_says_so() {
        let mut t = InProcess::start_seeing(vec![vec![
            Step::Text("A dot."),
            Step::Done(ModelStopReason::EndTurn),
        ]]);
        let init = t.rpc.initialize().await;
        assert_eq!(
            init["result"]["agentCapabilities"]["promptCapabilities"]["image"], true,
            "{init}"
        );
        let ws = t.env.workspace.clone();
        let session = t.rpc.new_session(&ws).await;
        let id = t
            .rpc
            .request("session/prompt", image_prompt(&session))
            .await;
        let r = t.rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        let requests = t.model.requests.lock().unwrap().clone();
        let Some(pablo::model::Message::User { text, images }) = requests[0].messages.last() else {
            panic!("{:?}", requests[0].messages)
        };
        assert!(text.starts_with("what is this?"), "{text}");
        assert!(text.contains("path=\"file:///ws/dot.png\""), "{text}");
        assert_eq!(images.len(), 1);
        assert_eq!(images[0].media_type, "image/png");
        assert_eq!(&*images[0].base64, PNG_B64);
        t.finish().await;
    }

    #[tokio::test]
    async fn an_image_prompt_for_a_model_without_images_is_refused_with_the_engine_code() {
        let mut t = InProcess::start(Vec::new(), None);
        let init = t.rpc.initialize().await;
        assert_eq!(
            init["result"]["agentCapabilities"]["promptCapabilities"]["image"], false,
            "{init}"
        );
        let ws = t.env.workspace.clone();
        let session = t.rpc.new_session(&ws).await;
        let id = t
            .rpc
            .request("session/prompt", image_prompt(&session))
            .await;
        let r = t.rpc.response_to(id, &mut no_answer).await;
        assert_eq!(
            r["error"]["data"]["code"], "image_not_accepted_by_model",
            "{r}"
        );
        let message = r["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("file:///ws/dot.png"), "{message}");
        assert!(t.model.requests.lock().unwrap().is_empty());
        t.finish().await;
    }

    #[tokio::test]
    async fn a_failed_model_call_answers_with_the_engine_error() {
        // No script: the model call fails.
        let mut t = InProcess::start(Vec::new(), None);
        let session = t.session().await;
        let id = t.prompt(&session, "hello?").await;
        let r = t.rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["error"]["code"], -32603, "{r}");
        assert_eq!(r["error"]["data"]["code"], "model_config", "{r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("no more model calls")
        );
        t.finish().await;
    }

    #[tokio::test]
    async fn a_saved_session_is_replayed_before_load_answers_and_then_continues() {
        let mut t = InProcess::start(
            vec![vec![
                Step::Text("Hello, "),
                Step::Text("editor."),
                Step::Done(ModelStopReason::EndTurn),
            ]],
            None,
        );
        let session = t.session().await;
        let id = t.prompt(&session, "say hello").await;
        let r = t.rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        let env = t.finish().await;

        // A new connection (the editor restarted) loads it.
        let mut t = InProcess::start_in(
            env,
            vec![vec![
                Step::Text("again"),
                Step::Done(ModelStopReason::EndTurn),
            ]],
            None,
        );
        let init = t.rpc.initialize().await;
        assert_eq!(init["result"]["agentCapabilities"]["loadSession"], true);
        let ws = t.env.workspace.clone();
        let id = t
            .rpc
            .request(
                "session/load",
                json!({"sessionId": session, "cwd": ws, "mcpServers": []}),
            )
            .await;
        let r = t.rpc.response_to(id, &mut no_answer).await;
        assert!(r.get("error").is_none(), "{r}");
        let replayed: Vec<(String, String)> = t
            .rpc
            .updates
            .iter()
            .map(|u| {
                (
                    u["update"]["sessionUpdate"].as_str().unwrap().to_string(),
                    u["update"]["content"]["text"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                )
            })
            .collect();
        assert_eq!(
            replayed,
            [
                ("user_message_chunk".to_string(), "say hello".to_string()),
                (
                    "agent_message_chunk".to_string(),
                    "Hello, editor.".to_string()
                ),
            ]
        );
        // The conversation goes on with its history.
        let id = t.prompt(&session, "once more").await;
        let r = t.rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        let req = t.model.requests.lock().unwrap()[0].clone();
        let history = format!("{:?}", req.messages);
        assert!(history.contains("say hello") && history.contains("Hello, editor."));
        assert!(history.contains("once more"));
        t.finish().await;
    }

    #[tokio::test]
    async fn loading_a_session_into_another_workspace_is_refused_and_replays_nothing() {
        let mut t = InProcess::start(
            vec![vec![Step::Text("hi"), Step::Done(ModelStopReason::EndTurn)]],
            None,
        );
        let session = t.session().await;
        let id = t.prompt(&session, "hello").await;
        t.rpc.response_to(id, &mut no_answer).await;
        let first = t.finish().await;

        let mut t = InProcess::start(Vec::new(), None);
        t.rpc.initialize().await;
        let other = t.env.workspace.clone();
        let before = (first.snapshot(), t.env.snapshot());
        let id = t
            .rpc
            .request(
                "session/load",
                json!({"sessionId": session, "cwd": other, "mcpServers": []}),
            )
            .await;
        let r = t.rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["error"]["data"]["code"], "workspace_mismatch", "{r}");
        assert!(t.rpc.updates.is_empty());
        assert_eq!((first.snapshot(), t.env.snapshot()), before);
        t.finish().await;
    }

    #[tokio::test]
    async fn loading_an_unknown_or_open_session_is_refused() {
        let mut t = InProcess::start(Vec::new(), None);
        let session = t.session().await;
        let ws = t.env.workspace.clone();
        let id = t
            .rpc
            .request(
                "session/load",
                json!({"sessionId": session, "cwd": ws, "mcpServers": []}),
            )
            .await;
        let r = t.rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["error"]["data"]["code"], "session_open", "{r}");
        let id = t
            .rpc
            .request(
                "session/load",
                json!({"sessionId": "0190aaaa-0000-7000-8000-000000000000", "cwd": ws, "mcpServers": []}),
            )
            .await;
        let r = t.rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["error"]["data"]["code"], "session_not_found", "{r}");
        assert!(t.rpc.updates.is_empty());
        t.finish().await;
    }

    /// `session/new` with server-everything over stdio, as an editor passes it.
    async fn session_with_everything(t: &mut InProcess, node: &Path) -> String {
        t.rpc.initialize().await;
        let ws = t.env.workspace.clone();
        let index = crate::support::mcp::reference_server("server-everything");
        let id = t
            .rpc
            .request(
                "session/new",
                json!({"cwd": ws, "mcpServers": [{"name": "everything", "command": node,
                    "args": [index, "stdio"], "env": [{"name": "GREETING", "value": "hi"}]}]}),
            )
            .await;
        let r = t.rpc.response_to(id, &mut no_answer).await;
        r["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {r}"))
            .to_string()
    }

    #[tokio::test]
    async fn an_editors_stdio_server_from_session_new_is_called_in_the_turn_after_permission() {
        let Some(node) = crate::support::mcp::node_or_skip("an_editors_stdio_server_…") else {
            return;
        };
        let mut t = InProcess::start(
            vec![
                vec![
                    Step::Call(
                        "call_m",
                        "mcp__everything__echo",
                        json!({"message": "from the editor"}),
                    ),
                    Step::Done(ModelStopReason::ToolUse),
                ],
                vec![Step::Text("echoed"), Step::Done(ModelStopReason::EndTurn)],
            ],
            None,
        );
        let session = session_with_everything(&mut t, &node).await;
        let id = t.prompt(&session, "echo it").await;
        let mut answer = |m: &Value| {
            assert_eq!(m["method"], "session/request_permission");
            allow_once()
        };
        let r = t.rpc.response_to(id, &mut answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        // The first model request already offered the server's tools: a turn waits for the
        // editor's servers to start.
        let first = t.model.requests.lock().unwrap()[0].clone();
        assert!(
            first
                .tools
                .iter()
                .any(|t| t.name == "mcp__everything__echo"),
            "{:?}",
            first.tools.iter().map(|t| &t.name).collect::<Vec<_>>()
        );
        let params = &t.rpc.agent_requests[0]["params"];
        let title = params["toolCall"]["title"].as_str().unwrap_or_default();
        assert!(title.contains("echo"), "{params}");
        let second = t.model.requests.lock().unwrap()[1].clone();
        let tool_msg = format!("{:?}", second.messages.last().unwrap());
        assert!(tool_msg.contains("from the editor"), "{tool_msg}");
        t.finish().await;
    }

    #[tokio::test]
    async fn cancelling_the_turn_cancels_an_in_flight_mcp_call() {
        let Some(node) = crate::support::mcp::node_or_skip("cancelling_the_turn_…") else {
            return;
        };
        let mut t = InProcess::start(
            vec![vec![
                Step::Call(
                    "call_long",
                    "mcp__everything__trigger-long-running-operation",
                    json!({"duration": 300, "steps": 300}),
                ),
                Step::Done(ModelStopReason::ToolUse),
            ]],
            None,
        );
        let session = session_with_everything(&mut t, &node).await;
        let id = t.prompt(&session, "run the long one").await;
        // Allowed, then running on the server.
        t.rpc
            .until(
                &mut |m| {
                    m["params"]["update"]["sessionUpdate"] == "tool_call_update"
                        && m["params"]["update"]["status"] == "in_progress"
                },
                &mut |_| allow_once(),
            )
            .await;
        t.rpc
            .notify("session/cancel", json!({"sessionId": session}))
            .await;
        // A 300 s operation: the answer can only come this soon if the call was cancelled.
        let r = t.rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
        assert_eq!(t.model.requests.lock().unwrap().len(), 1);
        t.finish().await;
    }

    #[tokio::test]
    async fn an_sse_server_from_the_editor_is_refused_with_its_name() {
        let mut t = InProcess::start(Vec::new(), None);
        t.rpc.initialize().await;
        let ws = t.env.workspace.clone();
        let id = t
            .rpc
            .request(
                "session/new",
                json!({"cwd": ws, "mcpServers": [
                    {"type": "sse", "name": "old", "url": "http://127.0.0.1:1/sse", "headers": []}]}),
            )
            .await;
        let r = t.rpc.response_to(id, &mut no_answer).await;
        let message = r["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("old: the SSE transport is not supported"),
            "{r}"
        );
        t.finish().await;
    }
}

// ---------------------------------------------------------------------------------------------
// A client that advertises `fs`: reads and writes go through its buffers.

mod editor_files {
    use super::*;

    /// The tool result the model read for `call_id`, parsed.
    fn tool_result(model: &Scripted, call_id: &str) -> Value {
        let requests = model.requests.lock().unwrap();
        for r in requests.iter() {
            for m in &r.messages {
                if let pablo::model::Message::Tool {
                    call_id: id,
                    content,
                } = m
                    && id == call_id
                {
                    return serde_json::from_str(content).unwrap();
                }
            }
        }
        panic!("the model never read a result for {call_id}");
    }

    fn fs_client() -> Value {
        json!({"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": false})
    }

    fn writer() -> LaunchOptions {
        LaunchOptions {
            allow_write: true,
            ..LaunchOptions::default()
        }
    }

    /// An in-process server in `env` whose client advertises `capabilities`, with one session.
    async fn start(
        env: Env,
        scripts: Vec<Vec<Step>>,
        options: LaunchOptions,
        capabilities: Value,
    ) -> (InProcess, String) {
        let mut t = InProcess::start_with(env, scripts, None, options);
        t.rpc.initialize_with(capabilities).await;
        let ws = t.env.workspace.clone();
        let session = t.rpc.new_session(&ws).await;
        (t, session)
    }

    fn end(text: &'static str) -> Vec<Step> {
        vec![Step::Text(text), Step::Done(ModelStopReason::EndTurn)]
    }

    fn call(id: &'static str, tool: &'static str, args: Value) -> Vec<Step> {
        vec![
            Step::Call(id, tool, args),
            Step::Done(ModelStopReason::ToolUse),
        ]
    }

    #[tokio::test]
    async fn a_read_returns_the_editor_s_unsaved_buffer_not_the_disk() {
        let env = Env::new();
        std::fs::write(env.workspace.join("notes.txt"), "saved on disk\n").unwrap();
        let (mut t, session) = start(
            env,
            vec![
                call("call_r", "fs_read", json!({"path": "notes.txt"})),
                end("read"),
            ],
            LaunchOptions::default(),
            fs_client(),
        )
        .await;
        let id = t.prompt(&session, "read my notes").await;
        let mut answer = |m: &Value| {
            assert_eq!(m["method"], "fs/read_text_file", "{m}");
            Some(json!({"content": "typed but not saved\n"}))
        };
        let r = t.rpc.response_to(id, &mut answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        let reads = t.rpc.requests_for("fs/read_text_file");
        assert_eq!(reads.len(), 1);
        assert_eq!(reads[0]["params"]["sessionId"], json!(session));
        assert_eq!(
            reads[0]["params"]["path"],
            json!(t.env.workspace.join("notes.txt"))
        );
        let result = tool_result(&t.model, "call_r");
        assert_eq!(result["ok"], true, "{result}");
        assert_eq!(result["data"]["text"], "typed but not saved\n");
        assert_eq!(
            result["data"]["revision"],
            pablo::workspace::revision_of(b"typed but not saved\n")
        );
        t.finish().await;
    }

    #[tokio::test]
    async fn an_edit_of_a_buffer_is_written_through_the_editor_after_allow_once() {
        let env = Env::new();
        std::fs::write(env.workspace.join("main.rs"), "fn main() {}\n").unwrap();
        let buffer = "fn main() {\n    println!(\"draft\");\n}\n";
        let edit = json!({"path": "main.rs", "old_text": "draft", "new_text": "final",
                          "expected_revision": pablo::workspace::revision_of(buffer.as_bytes())});
        let (mut t, session) = start(
            env,
            vec![call("call_e", "fs_edit", edit), end("edited")],
            writer(),
            fs_client(),
        )
        .await;
        let id = t.prompt(&session, "finish the draft").await;
        let written = Arc::new(Mutex::new(Vec::<Value>::new()));
        let seen = written.clone();
        let mut answer = move |m: &Value| match m["method"].as_str().unwrap() {
            "fs/read_text_file" => Some(json!({"content": buffer})),
            "session/request_permission" => allow_once(),
            "fs/write_text_file" => {
                seen.lock().unwrap().push(m["params"].clone());
                Some(json!({}))
            }
            other => panic!("unexpected request {other}"),
        };
        let r = t.rpc.response_to(id, &mut answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        // Asked once, showing the buffer's text as the old side of the diff.
        let asks = t.rpc.requests_for("session/request_permission");
        assert_eq!(asks.len(), 1);
        let diff = &asks[0]["params"]["toolCall"]["content"][0];
        assert_eq!(diff["oldText"], buffer, "{diff}");
        // Read for the preview and once more just before the write.
        assert_eq!(t.rpc.requests_for("fs/read_text_file").len(), 2);
        let written = written.lock().unwrap().clone();
        assert_eq!(written.len(), 1);
        assert_eq!(written[0]["path"], json!(t.env.workspace.join("main.rs")));
        assert_eq!(
            written[0]["content"],
            "fn main() {\n    println!(\"final\");\n}\n"
        );
        assert_eq!(written[0]["content"], diff["newText"]);
        // The disk is the editor's business now: pablo did not touch it.
        assert_eq!(
            std::fs::read_to_string(t.env.workspace.join("main.rs")).unwrap(),
            "fn main() {}\n"
        );
        let result = tool_result(&t.model, "call_e");
        assert_eq!(result["ok"], true, "{result}");
        assert_eq!(result["data"]["written_by"], "editor");
        t.finish().await;
    }

    #[tokio::test]
    async fn a_buffer_changed_during_review_is_refused_and_nothing_is_written() {
        let env = Env::new();
        std::fs::write(env.workspace.join("a.txt"), "one\n").unwrap();
        let edit = json!({"path": "a.txt", "old_text": "one", "new_text": "two",
                          "expected_revision": pablo::workspace::revision_of(b"one\n")});
        let (mut t, session) = start(
            env,
            vec![call("call_e", "fs_edit", edit), end("gave up")],
            writer(),
            fs_client(),
        )
        .await;
        let id = t.prompt(&session, "change it").await;
        // The person types while the approval is open: the second read sees a new buffer.
        let mut reads = 0;
        let mut answer = |m: &Value| match m["method"].as_str().unwrap() {
            "fs/read_text_file" => {
                reads += 1;
                let text = if reads == 1 {
                    "one\n"
                } else {
                    "one\nand more\n"
                };
                Some(json!({"content": text}))
            }
            "session/request_permission" => allow_once(),
            other => panic!("unexpected request {other}"),
        };
        let r = t.rpc.response_to(id, &mut answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        assert!(t.rpc.requests_for("fs/write_text_file").is_empty());
        let result = tool_result(&t.model, "call_e");
        assert_eq!(result["error"]["code"], "revision_mismatch", "{result}");
        assert_eq!(
            result["error"]["data"]["current_revision"],
            pablo::workspace::revision_of(b"one\nand more\n"),
            "{result}"
        );
        assert_eq!(
            std::fs::read_to_string(t.env.workspace.join("a.txt")).unwrap(),
            "one\n"
        );
        t.finish().await;
    }

    #[tokio::test]
    async fn a_link_a_fifo_or_a_credential_is_refused_before_the_editor_is_asked() {
        let env = Env::new();
        let outside = env.xdg.join("secret.txt");
        std::fs::write(&outside, "outside\n").unwrap();
        std::os::unix::fs::symlink(&outside, env.workspace.join("link.txt")).unwrap();
        std::fs::write(env.workspace.join(".env"), "KEY=1\n").unwrap();
        let fifo = std::process::Command::new("mkfifo")
            .arg(env.workspace.join("pipe"))
            .status()
            .unwrap();
        assert!(fifo.success());
        let (mut t, session) = start(
            env,
            vec![
                vec![
                    Step::Call("call_l", "fs_read", json!({"path": "link.txt"})),
                    Step::Call("call_c", "fs_read", json!({"path": ".env"})),
                    Step::Call("call_m", "fs_read", json!({"path": "missing.txt"})),
                    Step::Call("call_f", "fs_read", json!({"path": "pipe"})),
                    Step::Done(ModelStopReason::ToolUse),
                ],
                end("refused"),
            ],
            LaunchOptions::default(),
            fs_client(),
        )
        .await;
        let id = t.prompt(&session, "read them").await;
        let mut answer = |m: &Value| panic!("the editor was asked: {m}");
        let r = t.rpc.response_to(id, &mut answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        assert!(t.rpc.agent_requests.is_empty());
        let link = tool_result(&t.model, "call_l");
        assert_eq!(link["error"]["code"], "path_refused", "{link}");
        let cred = tool_result(&t.model, "call_c");
        assert_eq!(cred["error"]["code"], "file_refused", "{cred}");
        let missing = tool_result(&t.model, "call_m");
        assert_eq!(missing["error"]["code"], "not_found", "{missing}");
        let fifo = tool_result(&t.model, "call_f");
        assert_eq!(fifo["error"]["code"], "special_file", "{fifo}");
        t.finish().await;
    }

    #[tokio::test]
    async fn a_new_file_is_created_on_disk_not_through_the_editor() {
        let (mut t, session) = start(
            Env::new(),
            vec![
                call(
                    "call_w",
                    "fs_write",
                    json!({"path": "src/new.rs", "text": "// new\n", "expected_revision": null}),
                ),
                end("created"),
            ],
            writer(),
            fs_client(),
        )
        .await;
        let id = t.prompt(&session, "create it").await;
        let mut answer = |m: &Value| {
            assert_eq!(m["method"], "session/request_permission", "{m}");
            allow_once()
        };
        let r = t.rpc.response_to(id, &mut answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        assert_eq!(
            std::fs::read_to_string(t.env.workspace.join("src/new.rs")).unwrap(),
            "// new\n"
        );
        assert!(t.rpc.requests_for("fs/write_text_file").is_empty());
        assert!(t.rpc.requests_for("fs/read_text_file").is_empty());
        t.finish().await;
    }

    #[tokio::test]
    async fn editor_errors_reach_the_model_with_their_codes_and_change_nothing() {
        let env = Env::new();
        std::fs::write(env.workspace.join("a.txt"), "one\n").unwrap();
        let edit = json!({"path": "a.txt", "old_text": "one", "new_text": "two",
                          "expected_revision": pablo::workspace::revision_of(b"one\n")});
        let (mut t, session) = start(
            env,
            vec![
                call("call_r", "fs_read", json!({"path": "a.txt"})),
                call("call_e", "fs_edit", edit),
                end("failed"),
            ],
            writer(),
            fs_client(),
        )
        .await;
        let id = t.prompt(&session, "try").await;
        let mut reads = 0;
        let mut answer = |m: &Value| match m["method"].as_str().unwrap() {
            "fs/read_text_file" => {
                reads += 1;
                // The first read (fs.read) fails; the edit's reads succeed.
                if reads == 1 {
                    Some(rpc_error("buffer is being reloaded"))
                } else {
                    Some(json!({"content": "one\n"}))
                }
            }
            "session/request_permission" => allow_once(),
            "fs/write_text_file" => Some(rpc_error("the file is read-only")),
            other => panic!("unexpected request {other}"),
        };
        let r = t.rpc.response_to(id, &mut answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        let read = tool_result(&t.model, "call_r");
        assert_eq!(read["error"]["code"], "editor_read_failed", "{read}");
        assert!(
            read["error"]["message"]
                .as_str()
                .unwrap()
                .contains("buffer is being reloaded"),
            "{read}"
        );
        let edit = tool_result(&t.model, "call_e");
        assert_eq!(edit["error"]["code"], "editor_write_failed", "{edit}");
        assert_eq!(
            std::fs::read_to_string(t.env.workspace.join("a.txt")).unwrap(),
            "one\n"
        );
        t.finish().await;
    }

    /// An editor that never answers a read does not hold an interrupted turn: the read is
    /// abandoned with `cancelled` and the prompt answers `cancelled`.
    #[tokio::test]
    async fn a_cancel_while_the_editor_has_not_answered_a_read_ends_the_turn() {
        let env = Env::new();
        std::fs::write(env.workspace.join("a.txt"), "text\n").unwrap();
        let (mut t, session) = start(
            env,
            vec![call("call_r", "fs_read", json!({"path": "a.txt"}))],
            LaunchOptions::default(),
            fs_client(),
        )
        .await;
        let id = t.prompt(&session, "read").await;
        t.rpc
            .until(&mut |m| m["method"] == "fs/read_text_file", &mut no_answer)
            .await;
        t.rpc
            .notify("session/cancel", json!({"sessionId": session}))
            .await;
        let r = t.rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
        let done = t
            .rpc
            .updates
            .iter()
            .map(|u| &u["update"])
            .rfind(|u| u["toolCallId"] == "call_r" && u.get("rawOutput").is_some())
            .cloned()
            .unwrap_or_else(|| panic!("no final update: {:?}", t.rpc.updates));
        assert_eq!(done["rawOutput"]["error"]["code"], "cancelled", "{done}");
        t.finish().await;
    }

    #[tokio::test]
    async fn a_buffer_holding_a_nul_byte_is_refused_as_binary() {
        let env = Env::new();
        std::fs::write(env.workspace.join("a.txt"), "text\n").unwrap();
        let (mut t, session) = start(
            env,
            vec![
                call("call_r", "fs_read", json!({"path": "a.txt"})),
                end("binary"),
            ],
            LaunchOptions::default(),
            fs_client(),
        )
        .await;
        let id = t.prompt(&session, "read").await;
        let mut answer = |_: &Value| Some(json!({"content": "a\u{0}b"}));
        let r = t.rpc.response_to(id, &mut answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        let read = tool_result(&t.model, "call_r");
        assert_eq!(read["error"]["code"], "binary_content", "{read}");
        t.finish().await;
    }

    #[tokio::test]
    async fn a_client_that_only_reads_keeps_writes_on_disk_with_the_buffer_s_revision() {
        let env = Env::new();
        std::fs::write(env.workspace.join("a.txt"), "one\n").unwrap();
        let edit = json!({"path": "a.txt", "old_text": "one", "new_text": "two",
                          "expected_revision": pablo::workspace::revision_of(b"one\n")});
        let (mut t, session) = start(
            env,
            vec![call("call_e", "fs_edit", edit), end("done")],
            writer(),
            json!({"fs": {"readTextFile": true, "writeTextFile": false}, "terminal": false}),
        )
        .await;
        let id = t.prompt(&session, "edit").await;
        let mut answer = |m: &Value| match m["method"].as_str().unwrap() {
            "fs/read_text_file" => Some(json!({"content": "one\n"})),
            "session/request_permission" => allow_once(),
            other => panic!("unexpected request {other}"),
        };
        let r = t.rpc.response_to(id, &mut answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        let edit = tool_result(&t.model, "call_e");
        assert_eq!(edit["ok"], true, "{edit}");
        assert_eq!(
            std::fs::read_to_string(t.env.workspace.join("a.txt")).unwrap(),
            "two\n"
        );
        t.finish().await;
    }
}

// ---------------------------------------------------------------------------------------------
// The official TypeScript client library (`@agentclientprotocol/sdk`) driving the binary.

mod typescript {
    use super::*;

    /// The e2e script's folder, when node and its `npm ci` are there; `None` (with a note) when
    /// the test must be skipped.
    pub(super) fn ts_dir() -> Option<std::path::PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp_ts");
        let node = std::process::Command::new("node").arg("--version").output();
        if !node.is_ok_and(|o| o.status.success()) {
            eprintln!("note: skipping the TypeScript ACP client test: `node` is not installed");
            return None;
        }
        if !dir.join("node_modules/@agentclientprotocol/sdk").is_dir() {
            eprintln!(
                "note: skipping the TypeScript ACP client test: run `npm ci` in {}",
                dir.display()
            );
            return None;
        }
        Some(dir)
    }

    #[tokio::test]
    async fn the_typescript_client_initializes_and_gets_pablo_s_refusal_codes() {
        let Some(dir) = ts_dir() else { return };
        let env = Env::new();
        let missing = env.workspace.join("does-not-exist");
        let out = tokio::process::Command::new("node")
            .arg(dir.join("e2e.mjs"))
            .arg(env!("CARGO_BIN_EXE_pablo"))
            .arg(&missing)
            .env("XDG_CONFIG_HOME", env.xdg.join("config"))
            .env("XDG_DATA_HOME", env.xdg.join("data"))
            .env("XDG_STATE_HOME", env.xdg.join("state"))
            .env("E2E_EXPECT_NEW_ERROR", "workspace_unavailable")
            .env_remove("E2E_PROMPT")
            .current_dir(&dir)
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(Duration::from_secs(60), out)
            .await
            .expect("the e2e script did not finish in 60 s")
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
        let seen: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        assert_eq!(seen["protocolVersion"], 1);
        assert_eq!(seen["agent"], "pablo");
        assert_eq!(seen["newError"], "workspace_unavailable");
        assert_eq!(seen["exitCode"], 0);
        assert!(!missing.exists());
    }
}

// ---------------------------------------------------------------------------------------------
// The binary over stdio against the scripted OpenAI-compatible server on 127.0.0.1.

mod over_http {
    use super::*;
    use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

    const ASK_PLAN: &str = "[options.tools]\n\"plan.update\" = \"ask\"\n";

    fn plan_fragments() -> Vec<String> {
        let args = PLAN_ARGS().to_string();
        let (a, b) = args.split_at(args.len() / 2);
        vec![a.to_string(), b.to_string()]
    }

    /// `pablo acp` pointed at `server`, in `env`'s workspace.
    fn spawn_acp(env: &Env, server: &ScriptedServer, flags: &[&str]) -> tokio::process::Child {
        let mut cmd = env.command();
        cmd.env("OPENAI_API_KEY", "sk-test-key")
            .args([
                "--provider",
                "openai",
                "--model",
                "test-model",
                "--base-url",
            ])
            .arg(server.base_url())
            .args(flags)
            .arg("acp");
        cmd.spawn().unwrap()
    }

    type ChildRpc = Rpc<tokio::process::ChildStdout, tokio::process::ChildStdin>;

    async fn connect(
        env: &Env,
        server: &ScriptedServer,
        flags: &[&str],
    ) -> (tokio::process::Child, ChildRpc, String) {
        let mut child = spawn_acp(env, server, flags);
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        rpc.initialize().await;
        let session = rpc.new_session(&env.workspace).await;
        (child, rpc, session)
    }

    async fn prompt(rpc: &mut ChildRpc, session: &str, text: &str) -> u64 {
        rpc.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
    }

    /// Closes stdin and waits for a clean exit.
    async fn close(mut child: tokio::process::Child, rpc: ChildRpc) {
        drop(rpc);
        let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(status.success(), "{status:?}");
    }

    #[tokio::test]
    async fn a_prompt_streams_the_model_s_text_and_answers_end_turn() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer(
            "Hello from the model",
        )));
        let env = Env::new();
        let (child, mut rpc, session) = connect(&env, &server, &[]).await;
        let id = prompt(&mut rpc, &session, "greet me").await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        assert_eq!(rpc.message_text(), "Hello from the model");
        assert!(rpc.update_kinds().contains(&"usage_update".to_string()));
        let body = server.requests()[0].json();
        assert!(body.to_string().contains("greet me"));
        close(child, rpc).await;
    }

    #[tokio::test]
    async fn a_prompt_reads_a_file_then_edits_it_after_allow_once() {
        let env = Env::new();
        let original = "fn main() {\n    println!(\"hello\");\n}\n";
        std::fs::write(env.workspace.join("main.rs"), original).unwrap();
        let revision = pablo::workspace::revision_of(original.as_bytes());
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_read",
            "fs_read",
            &[r#"{"path": "main.rs"}"#],
        )));
        let edit = json!({"path": "main.rs", "old_text": "hello", "new_text": "hello, editor",
                          "expected_revision": revision})
        .to_string();
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_edit",
            "fs_edit",
            &[&edit],
        )));
        server.push(ScriptedResponse::sse(openai::text_answer("Edited.")));
        let (child, mut rpc, session) = connect(&env, &server, &["--allow-write"]).await;
        let id = prompt(&mut rpc, &session, "greet the editor").await;
        let mut answer = |m: &Value| {
            assert_eq!(m["method"], "session/request_permission");
            allow_once()
        };
        let r = rpc.response_to(id, &mut answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        // The read ran unasked, as a `read` call on the file.
        let read = rpc
            .updates
            .iter()
            .map(|u| &u["update"])
            .find(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "call_read")
            .expect("the read's tool_call");
        assert_eq!(read["kind"], "read");
        assert_eq!(
            read["locations"][0]["path"],
            json!(env.workspace.join("main.rs"))
        );
        // Only the edit asked, showing exactly the bytes that were then written.
        assert_eq!(rpc.agent_requests.len(), 1);
        let call = &rpc.agent_requests[0]["params"]["toolCall"];
        assert_eq!(call["toolCallId"], "call_edit");
        assert_eq!(call["kind"], "edit");
        let diff = &call["content"][0];
        assert_eq!(diff["type"], "diff", "{call}");
        assert_eq!(diff["path"], json!(env.workspace.join("main.rs")));
        assert_eq!(diff["oldText"], original);
        let new_text = diff["newText"].as_str().unwrap();
        assert_eq!(
            std::fs::read_to_string(env.workspace.join("main.rs")).unwrap(),
            new_text
        );
        assert!(new_text.contains("hello, editor"));
        let done = rpc
            .updates
            .iter()
            .map(|u| &u["update"])
            .rfind(|u| u["toolCallId"] == "call_edit" && u.get("status").is_some())
            .unwrap();
        assert_eq!(done["status"], "completed");
        assert_eq!(rpc.message_text(), "Edited.");
        close(child, rpc).await;
    }

    /// What an editor such as Zed does: starts `pablo acp` with no flags at all (the provider is
    /// in the user's config). The edit tools are offered, and an edit asks through
    /// `session/request_permission` before it lands.
    #[tokio::test]
    async fn pablo_acp_with_no_flags_edits_a_file_through_request_permission() {
        let env = Env::new();
        let original = "hello\n";
        std::fs::write(env.workspace.join("greeting.txt"), original).unwrap();
        let server = ScriptedServer::start().await;
        let edit = json!({"path": "greeting.txt", "old_text": "hello", "new_text": "hello, zed",
                          "expected_revision": pablo::workspace::revision_of(original.as_bytes())})
        .to_string();
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_edit",
            "fs_edit",
            &[&edit],
        )));
        server.push(ScriptedResponse::sse(openai::text_answer("Edited.")));
        let config = env.xdg.join("config/pablo");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            config.join("config.toml"),
            format!(
                "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n",
                server.base_url()
            ),
        )
        .unwrap();
        let mut cmd = env.command();
        cmd.env("OPENAI_API_KEY", "sk-test-key").arg("acp");
        let mut child = cmd.spawn().unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        rpc.initialize().await;
        let session = rpc.new_session(&env.workspace).await;
        let id = prompt(&mut rpc, &session, "greet zed").await;
        let mut asked = 0;
        let mut answer = |m: &Value| {
            assert_eq!(m["method"], "session/request_permission");
            asked += 1;
            allow_once()
        };
        let r = rpc.response_to(id, &mut answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        assert_eq!(asked, 1);
        let call = &rpc.agent_requests[0]["params"]["toolCall"];
        assert_eq!(call["kind"], "edit", "{call}");
        assert_eq!(call["content"][0]["type"], "diff", "{call}");
        assert_eq!(
            std::fs::read_to_string(env.workspace.join("greeting.txt")).unwrap(),
            "hello, zed\n"
        );
        let tools = server.requests()[0].json()["tools"].to_string();
        assert!(
            tools.contains("fs_edit") && tools.contains("fs_write"),
            "{tools}"
        );
        close(child, rpc).await;
    }

    #[tokio::test]
    async fn a_rejected_command_does_not_run_and_the_model_reads_rejected() {
        let env = Env::new();
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_sh",
            "shell_run",
            &[r#"{"command": "touch made-by-shell"}"#],
        )));
        server.push(ScriptedResponse::sse(openai::text_answer("Understood.")));
        let (child, mut rpc, session) = connect(&env, &server, &[]).await;
        let before = env.snapshot();
        let id = prompt(&mut rpc, &session, "make a file").await;
        let mut answer = |_: &Value| {
            Some(json!({"outcome": {"outcome": "selected", "optionId": "reject_once"}}))
        };
        let r = rpc.response_to(id, &mut answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        let call = &rpc.agent_requests[0]["params"]["toolCall"];
        assert_eq!(call["kind"], "execute");
        let shown = call["content"][0]["content"]["text"].as_str().unwrap();
        assert!(shown.contains("touch made-by-shell"), "{shown}");
        let failed = rpc
            .updates
            .iter()
            .find(|u| u["update"]["status"] == "failed")
            .expect("a failed tool call update");
        assert_eq!(failed["update"]["toolCallId"], "call_sh");
        assert_eq!(failed["update"]["rawOutput"]["error"]["code"], "rejected");
        assert!(!env.workspace.join("made-by-shell").exists());
        let second = server.requests()[1].json().to_string();
        assert!(second.contains("rejected"), "{second}");
        close(child, rpc).await;
        // Nothing appeared in the workspace.
        let after: Vec<String> = env
            .snapshot()
            .into_iter()
            .filter(|p| p.starts_with(&*env.workspace.to_string_lossy()))
            .collect();
        let before: Vec<String> = before
            .into_iter()
            .filter(|p| p.starts_with(&*env.workspace.to_string_lossy()))
            .collect();
        assert_eq!(after, before);
    }

    #[tokio::test]
    async fn an_allowed_command_runs_and_its_output_reaches_the_editor() {
        let env = Env::new();
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_echo",
            "shell_run",
            &[r#"{"command": "echo from-the-shell"}"#],
        )));
        server.push(ScriptedResponse::sse(openai::text_answer("Ran it.")));
        let (child, mut rpc, session) = connect(&env, &server, &[]).await;
        let id = prompt(&mut rpc, &session, "echo something").await;
        let mut answer = |_: &Value| allow_once();
        let r = rpc.response_to(id, &mut answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        let updates: Vec<&Value> = rpc
            .updates
            .iter()
            .map(|u| &u["update"])
            .filter(|u| u["toolCallId"] == "call_echo")
            .collect();
        assert_eq!(updates[0]["sessionUpdate"], "tool_call");
        assert_eq!(updates[0]["kind"], "execute");
        assert_eq!(updates[0]["title"], "Run echo from-the-shell");
        assert!(updates.iter().any(|u| u["status"] == "in_progress"));
        let last = updates.last().unwrap();
        assert_eq!(last["status"], "completed");
        // The live output is shown in the call's content, under the parsed command.
        let shown = last["content"].to_string();
        assert!(shown.contains("```\\nfrom-the-shell\\n```"), "{shown}");
        assert!(
            last["rawOutput"].to_string().contains("from-the-shell"),
            "{last}"
        );
        close(child, rpc).await;
    }

    #[tokio::test]
    async fn cancel_mid_stream_answers_cancelled() {
        let server = ScriptedServer::start().await;
        server.push(
            ScriptedResponse::sse(openai::Stream::new().text(&["Let me ", "think"]).events())
                .hang_after(3),
        );
        let env = Env::new();
        let (child, mut rpc, session) = connect(&env, &server, &[]).await;
        let id = prompt(&mut rpc, &session, "ponder").await;
        rpc.until(
            &mut |m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk",
            &mut no_answer,
        )
        .await;
        rpc.notify("session/cancel", json!({"sessionId": session}))
            .await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert!(r.get("error").is_none(), "{r}");
        assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
        close(child, rpc).await;
    }

    #[tokio::test]
    async fn a_saved_session_is_loaded_by_a_new_process() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer("First answer")));
        server.push(ScriptedResponse::sse(openai::text_answer("Second answer")));
        let env = Env::new();
        let (child, mut rpc, session) = connect(&env, &server, &[]).await;
        let id = prompt(&mut rpc, &session, "first question").await;
        rpc.response_to(id, &mut no_answer).await;
        close(child, rpc).await;

        let mut child = spawn_acp(&env, &server, &[]);
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        rpc.initialize().await;
        let id = rpc
            .request(
                "session/load",
                json!({"sessionId": session, "cwd": env.workspace, "mcpServers": []}),
            )
            .await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert!(r.get("error").is_none(), "{r}");
        assert_eq!(
            rpc.update_kinds(),
            ["user_message_chunk", "agent_message_chunk"]
        );
        assert_eq!(
            rpc.updates[0]["update"]["content"]["text"],
            "first question"
        );
        assert_eq!(rpc.updates[1]["update"]["content"]["text"], "First answer");
        let id = prompt(&mut rpc, &session, "second question").await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        // The resumed conversation carried the first exchange to the model.
        let body = server.requests()[1].json().to_string();
        assert!(
            body.contains("first question") && body.contains("First answer"),
            "{body}"
        );
        close(child, rpc).await;
    }

    #[tokio::test]
    async fn the_typescript_client_prompts_pablo_end_to_end() {
        let Some(dir) = super::typescript::ts_dir() else {
            return;
        };
        let server = ScriptedServer::start().await;
        let frags = plan_fragments();
        let frags: Vec<&str> = frags.iter().map(String::as_str).collect();
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_ts",
            "update_plan",
            &frags,
        )));
        server.push(ScriptedResponse::sse(openai::text_answer("Hi from pablo")));
        let env = Env::new();
        // The plan needs approval, so the client library also sees a permission request.
        std::fs::create_dir_all(env.workspace.join(".pablo")).unwrap();
        std::fs::write(env.workspace.join(".pablo/config.toml"), ASK_PLAN).unwrap();
        let (seen, stdout) = run_e2e(
            &dir,
            &env,
            &server,
            &[],
            &[
                ("E2E_PROMPT", "hello"),
                ("E2E_EXPECT_TEXT", "Hi from pablo"),
            ],
        )
        .await;
        assert_eq!(seen["stopReason"], "end_turn");
        assert_eq!(seen["text"], "Hi from pablo");
        // Every kind of update pablo sent passed the library's schema and reached the handler.
        let updates = seen["updates"].as_array().unwrap();
        for kind in [
            "tool_call",
            "tool_call_update",
            "plan",
            "agent_message_chunk",
            "usage_update",
        ] {
            assert!(updates.contains(&json!(kind)), "{kind} missing: {stdout}");
        }
        assert_eq!(
            seen["permissions"],
            json!([["allow_once", "allow_always", "reject_once", "reject_always"]])
        );
    }

    /// Runs the TypeScript client script against the binary with the scripted server as its
    /// model; returns what the script saw (its last stdout line) and its whole stdout.
    async fn run_e2e(
        dir: &Path,
        env: &Env,
        server: &ScriptedServer,
        flags: &[&str],
        vars: &[(&str, &str)],
    ) -> (Value, String) {
        let mut cmd = tokio::process::Command::new("node");
        cmd.arg(dir.join("e2e.mjs"))
            .arg(env!("CARGO_BIN_EXE_pablo"))
            .arg(&env.workspace)
            .args([
                "--provider",
                "openai",
                "--model",
                "test-model",
                "--base-url",
            ])
            .arg(server.base_url())
            .args(flags)
            .env("OPENAI_API_KEY", "sk-test-key")
            .env("XDG_CONFIG_HOME", env.xdg.join("config"))
            .env("XDG_DATA_HOME", env.xdg.join("data"))
            .env("XDG_STATE_HOME", env.xdg.join("state"))
            .env_remove("E2E_EXPECT_NEW_ERROR")
            .env_remove("E2E_BUFFERS")
            .env_remove("E2E_TERMINALS")
            .env_remove("E2E_EXPECT_TEXT")
            .current_dir(dir)
            .kill_on_drop(true);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
            .await
            .expect("the e2e script did not finish in 60 s")
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
        let seen: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        (seen, stdout)
    }

    #[tokio::test]
    async fn the_typescript_client_runs_an_allowed_command_in_its_terminal() {
        let Some(dir) = super::typescript::ts_dir() else {
            return;
        };
        let env = Env::new();
        let server = ScriptedServer::start().await;
        let run = json!({"command": "printf 'from the terminal\\n'; exit 4"}).to_string();
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_sh",
            "shell_run",
            &[&run],
        )));
        server.push(ScriptedResponse::sse(openai::text_answer("Ran it")));
        // The editor's terminal is outside pablo's sandbox: the person's config opts in.
        let config = env.xdg.join("editor-terminals.toml");
        std::fs::write(&config, "[options.shell]\neditor_terminals = true\n").unwrap();
        let config = config.display().to_string();
        let (seen, stdout) = run_e2e(
            &dir,
            &env,
            &server,
            &["--config", &config],
            &[
                ("E2E_PROMPT", "run the command"),
                ("E2E_EXPECT_TEXT", "Ran it"),
                ("E2E_TERMINALS", "1"),
            ],
        )
        .await;
        assert_eq!(seen["stopReason"], "end_turn", "{stdout}");
        assert_eq!(seen["permissions"].as_array().unwrap().len(), 1, "{stdout}");
        assert_eq!(
            seen["terminalCalls"],
            json!([
                "terminal/create",
                "terminal/wait_for_exit",
                "terminal/output",
                "terminal/release"
            ]),
            "{stdout}"
        );
        let created = &seen["terminals"][0];
        assert_eq!(created["cwd"], json!(env.workspace), "{stdout}");
        assert_eq!(created["outputByteLimit"], 5_000_000, "{stdout}");
        // The model read what ran in the editor's terminal.
        let second = server.requests()[1].json().to_string();
        assert!(second.contains("from the terminal"), "{second}");
        assert!(second.contains(r#"\"exit_code\":4"#), "{second}");
    }

    #[tokio::test]
    async fn the_typescript_client_s_unsaved_buffer_is_edited_through_fs_requests() {
        let Some(dir) = super::typescript::ts_dir() else {
            return;
        };
        let env = Env::new();
        let path = env.workspace.join("lib.rs");
        std::fs::write(&path, "// saved\n").unwrap();
        let buffer = "// unsaved draft\npub fn f() {}\n";
        let edit = json!({"path": "lib.rs", "old_text": "draft", "new_text": "final",
                          "expected_revision": pablo::workspace::revision_of(buffer.as_bytes())})
        .to_string();
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_edit",
            "fs_edit",
            &[&edit],
        )));
        server.push(ScriptedResponse::sse(openai::text_answer(
            "Edited the buffer",
        )));
        let buffers = json!({ path.display().to_string(): buffer }).to_string();
        let (seen, stdout) = run_e2e(
            &dir,
            &env,
            &server,
            &["--allow-write"],
            &[
                ("E2E_PROMPT", "edit the open buffer"),
                ("E2E_EXPECT_TEXT", "Edited the buffer"),
                ("E2E_BUFFERS", &buffers),
            ],
        )
        .await;
        assert_eq!(seen["stopReason"], "end_turn", "{stdout}");
        // Read for the preview, and again right before the write.
        assert_eq!(seen["reads"], json!([path, path]), "{stdout}");
        assert_eq!(
            seen["writes"],
            json!([{"path": path, "content": "// unsaved final\npub fn f() {}\n"}]),
            "{stdout}"
        );
        assert_eq!(seen["permissions"].as_array().unwrap().len(), 1, "{stdout}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "// saved\n");
    }
}

// ---------------------------------------------------------------------------------------------
// Commands in the editor's terminals (`terminal: true`).

mod terminals {
    use super::*;
    use std::collections::HashMap;
    use std::io::Read;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::process::{ExitStatus, Stdio};
    use std::sync::Condvar;

    fn terminal_caps() -> Value {
        json!({"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": true})
    }

    /// A variable of the editor's own environment that must never reach a command.
    const EDITOR_SECRET: &str = "PABLO_TEST_EDITOR_SECRET";

    /// What a terminal shows: the kept bytes, and whether older ones were dropped.
    #[derive(Default)]
    struct Screen {
        bytes: Vec<u8>,
        truncated: bool,
    }

    type ExitSlot = Arc<(Mutex<Option<ExitStatus>>, Condvar)>;

    struct Term {
        pid: i32,
        screen: Arc<Mutex<Screen>>,
        exit: ExitSlot,
        /// Held open for the terminal's life (`Child::wait` would close it).
        _input: Option<std::process::ChildStdin>,
    }

    /// The editor's side of `terminal/*`, running what pablo asks for real, the way an editor
    /// does: the program and arguments as given, in the given directory, with the editor's own
    /// environment (plus [`EDITOR_SECRET`]) — so only pablo's `env -i` keeps it out.
    struct TerminalHost {
        terms: HashMap<String, Term>,
        next: u32,
        /// The most output a terminal keeps, whatever pablo asks (an editor may keep less).
        keep_at_most: usize,
        /// Refuse `terminal/create` with this message.
        refuse_create: Option<&'static str>,
        /// Fail every `terminal/wait_for_exit`.
        refuse_wait: bool,
        /// Send `session/cancel` for this session once a terminal is created.
        cancel_after_create: Option<String>,
        /// Send `session/cancel` for this session before answering `terminal/create`.
        cancel_before_create_answer: Option<String>,
        /// Every request from pablo, as (method, terminal id), in order.
        calls: Vec<(String, String)>,
        /// The params of each `terminal/create`.
        created: Vec<Value>,
        /// Answers made off the loop (`wait_for_exit`, answered when the command has exited).
        late_tx: tokio::sync::mpsc::UnboundedSender<Value>,
        late_rx: tokio::sync::mpsc::UnboundedReceiver<Value>,
    }

    impl TerminalHost {
        fn new() -> Self {
            let (late_tx, late_rx) = tokio::sync::mpsc::unbounded_channel();
            Self {
                terms: HashMap::new(),
                next: 1,
                keep_at_most: usize::MAX,
                refuse_create: None,
                refuse_wait: false,
                cancel_after_create: None,
                cancel_before_create_answer: None,
                calls: Vec::new(),
                created: Vec::new(),
                late_tx,
                late_rx,
            }
        }

        fn methods(&self) -> Vec<&str> {
            self.calls.iter().map(|(m, _)| m.as_str()).collect()
        }

        /// The answer to one request from pablo (`None`: answered later, off the loop).
        fn answer(&mut self, m: &Value) -> Option<Value> {
            let method = m["method"].as_str().unwrap().to_string();
            let id = m["id"].clone();
            let terminal = m["params"]["terminalId"].as_str().unwrap_or("").to_string();
            self.calls.push((method.clone(), terminal.clone()));
            let ok = |result: Value| Some(json!({"jsonrpc": "2.0", "id": id, "result": result}));
            let err = |message: &str| {
                Some(json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32603, "message": message}}))
            };
            match method.as_str() {
                "session/request_permission" => {
                    ok(json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}}))
                }
                "terminal/create" => {
                    self.created.push(m["params"].clone());
                    if let Some(message) = self.refuse_create {
                        return err(message);
                    }
                    let tid = format!("term-{}", self.next);
                    self.next += 1;
                    let term = self.spawn(&m["params"]);
                    self.terms.insert(tid.clone(), term);
                    self.calls.last_mut().unwrap().1 = tid.clone();
                    ok(json!({"terminalId": tid}))
                }
                _ => {
                    let Some(term) = self.terms.get(&terminal) else {
                        return err("no such terminal");
                    };
                    match method.as_str() {
                        "terminal/output" => {
                            let s = term.screen.lock().unwrap();
                            let exit = term.exit.0.lock().unwrap().map(exit_json);
                            ok(json!({"output": String::from_utf8_lossy(&s.bytes),
                                "truncated": s.truncated, "exitStatus": exit}))
                        }
                        "terminal/wait_for_exit" if self.refuse_wait => {
                            err("this editor cannot wait for commands")
                        }
                        "terminal/wait_for_exit" => {
                            let (exit, tx) = (term.exit.clone(), self.late_tx.clone());
                            std::thread::spawn(move || {
                                let (lock, cv) = &*exit;
                                let mut g = lock.lock().unwrap();
                                while g.is_none() {
                                    g = cv.wait(g).unwrap();
                                }
                                let status = g.unwrap();
                                let _ = tx.send(json!({"jsonrpc": "2.0", "id": id,
                                    "result": exit_json(status)}));
                            });
                            None
                        }
                        "terminal/kill" => {
                            kill_group(term.pid);
                            ok(json!({}))
                        }
                        "terminal/release" => {
                            // Releasing also ends a command that is still running.
                            kill_group(term.pid);
                            self.terms.remove(&terminal);
                            ok(json!({}))
                        }
                        other => panic!("unexpected request from pablo: {other}"),
                    }
                }
            }
        }

        fn spawn(&self, p: &Value) -> Term {
            let args: Vec<&str> = p["args"]
                .as_array()
                .map(|a| a.iter().map(|x| x.as_str().unwrap()).collect())
                .unwrap_or_default();
            let limit = p["outputByteLimit"]
                .as_u64()
                .map_or(usize::MAX, |l| l as usize)
                .min(self.keep_at_most);
            let mut child = std::process::Command::new(p["command"].as_str().unwrap())
                .args(&args)
                .current_dir(p["cwd"].as_str().unwrap())
                .env(EDITOR_SECRET, "the editor's own environment")
                // A terminal's input stays open and nobody types: only pablo can close it.
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0)
                .spawn()
                .unwrap();
            let input = child.stdin.take();
            let screen = Arc::new(Mutex::new(Screen::default()));
            let outputs: Vec<Box<dyn Read + Send>> = vec![
                Box::new(child.stdout.take().unwrap()),
                Box::new(child.stderr.take().unwrap()),
            ];
            let readers: Vec<_> = outputs
                .into_iter()
                .map(|mut r| {
                    let screen = screen.clone();
                    std::thread::spawn(move || {
                        let mut buf = vec![0u8; 64 * 1024];
                        while let Ok(n) = r.read(&mut buf) {
                            if n == 0 {
                                break;
                            }
                            let mut s = screen.lock().unwrap();
                            s.bytes.extend_from_slice(&buf[..n]);
                            if s.bytes.len() > limit {
                                let cut = s.bytes.len() - limit;
                                s.bytes.drain(..cut);
                                s.truncated = true;
                            }
                        }
                    })
                })
                .collect();
            let exit: ExitSlot = Arc::new((Mutex::new(None), Condvar::new()));
            let pid = child.id() as i32;
            let slot = exit.clone();
            std::thread::spawn(move || {
                let status = child.wait().unwrap();
                for r in readers {
                    let _ = r.join();
                }
                *slot.0.lock().unwrap() = Some(status);
                slot.1.notify_all();
            });
            Term {
                pid,
                screen,
                exit,
                _input: input,
            }
        }
    }

    fn kill_group(pid: i32) {
        if let Some(p) = rustix::process::Pid::from_raw(pid) {
            let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
        }
    }

    fn exit_json(status: ExitStatus) -> Value {
        let signal = status.signal().map(|s| match s {
            9 => "SIGKILL".to_string(),
            15 => "SIGTERM".to_string(),
            n => format!("SIG{n}"),
        });
        json!({"exitCode": status.code(), "signal": signal})
    }

    /// Reads until the answer to `id`, recording updates and answering pablo's requests with
    /// `host` (permission requests with allow_once).
    async fn drive<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
        rpc: &mut Rpc<R, W>,
        host: &mut TerminalHost,
        id: u64,
    ) -> Value {
        loop {
            tokio::select! {
                m = rpc.next() => {
                    if m.get("method").is_none() {
                        assert_eq!(m["id"], json!(id), "unexpected response: {m}");
                        return m;
                    }
                    if m["method"] == "session/update" {
                        rpc.updates.push(m["params"].clone());
                        continue;
                    }
                    if m.get("id").is_none() {
                        continue; // a notification, e.g. `$/cancel_request` for a dropped wait
                    }
                    rpc.agent_requests.push(m.clone());
                    let created = m["method"] == "terminal/create";
                    if created && let Some(session) = host.cancel_before_create_answer.take() {
                        rpc.notify("session/cancel", json!({"sessionId": session})).await;
                    }
                    if let Some(reply) = host.answer(&m) {
                        rpc.send(&reply).await;
                    }
                    if created && let Some(session) = host.cancel_after_create.take() {
                        rpc.notify("session/cancel", json!({"sessionId": session})).await;
                    }
                }
                Some(reply) = host.late_rx.recv() => rpc.send(&reply).await,
            }
        }
    }

    /// A `--config` file that sends commands to the editor's terminal although that terminal is
    /// outside pablo's sandbox (by default they run locally, sandboxed).
    fn editor_terminals_config(env: &Env) -> LaunchOptions {
        let path = env.xdg.join("editor-terminals.toml");
        std::fs::write(&path, "[options.shell]\neditor_terminals = true\n").unwrap();
        LaunchOptions {
            config: Some(path),
            ..LaunchOptions::default()
        }
    }

    /// A session whose client advertised `caps`, with one `shell_run` call of `args`, with
    /// commands going to the editor's terminal.
    async fn start(caps: Value, args: Value) -> (InProcess, String) {
        let env = Env::new();
        let options = editor_terminals_config(&env);
        start_with(caps, args, env, options).await
    }

    async fn start_with(
        caps: Value,
        args: Value,
        env: Env,
        options: LaunchOptions,
    ) -> (InProcess, String) {
        let mut t = InProcess::start_with(
            env,
            vec![
                vec![
                    Step::Call("call_t", "shell_run", args),
                    Step::Done(ModelStopReason::ToolUse),
                ],
                vec![Step::Text("ran"), Step::Done(ModelStopReason::EndTurn)],
            ],
            None,
            options,
        );
        t.rpc.initialize_with(caps).await;
        let ws = t.env.workspace.clone();
        let session = t.rpc.new_session(&ws).await;
        (t, session)
    }

    /// The last update of the call: its final status, content and raw output.
    fn final_update(t: &InProcess) -> Value {
        t.rpc
            .updates
            .iter()
            .map(|u| &u["update"])
            .rfind(|u| u["toolCallId"] == "call_t" && u.get("rawOutput").is_some())
            .cloned()
            .unwrap_or_else(|| panic!("no final update: {:?}", t.rpc.updates))
    }

    /// What the model read as the call's result (the message of the second model request).
    fn model_read(t: &InProcess) -> String {
        let requests = t.model.requests.lock().unwrap();
        format!("{:?}", requests[1].messages.last().unwrap())
    }

    /// The editor's terminal is outside pablo's sandbox: with the default config the command
    /// runs locally, sandboxed, and the editor is only asked for permission.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn with_the_sandbox_on_a_command_runs_locally_not_in_the_editor_s_terminal() {
        let (mut t, session) = start_with(
            terminal_caps(),
            json!({"command": "date +local"}),
            Env::new(),
            LaunchOptions::default(),
        )
        .await;
        let mut host = TerminalHost::new();
        let id = t.prompt(&session, "run it").await;
        let r = drive(&mut t.rpc, &mut host, id).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        assert_eq!(host.methods(), ["session/request_permission"]);
        let read = model_read(&t);
        assert!(read.contains("local"), "{read}");
        assert!(read.contains("workspace-write"), "{read}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_command_runs_in_the_editor_s_terminal_after_permission_and_its_result_reaches_the_model()
     {
        let (mut t, session) = start(
            terminal_caps(),
            json!({"command": "printf 'to-out\\n'; printf 'to-err\\n' >&2; exit 3"}),
        )
        .await;
        let mut host = TerminalHost::new();
        let id = t.prompt(&session, "run it").await;
        let r = drive(&mut t.rpc, &mut host, id).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        // Asked first, then created, waited on, read and released — in that order.
        assert_eq!(
            host.methods(),
            [
                "session/request_permission",
                "terminal/create",
                "terminal/wait_for_exit",
                "terminal/output",
                "terminal/release"
            ]
        );
        let tid = host.calls[1].1.clone();
        assert_eq!(host.calls[4].1, tid);
        // The editor was handed a program and arguments: env -i, the clean environment, then
        // the launcher with -c and exactly the command.
        let p = &host.created[0];
        assert!(p["command"].as_str().unwrap().ends_with("/env"), "{p}");
        let args: Vec<&str> = p["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(args[0], "-i");
        assert_eq!(
            &args[args.len() - 3..],
            [
                "/bin/sh",
                "-c",
                "printf 'to-out\\n'; printf 'to-err\\n' >&2; exit 3"
            ]
        );
        assert_eq!(p["cwd"], json!(t.env.workspace));
        assert_eq!(p["outputByteLimit"], 5_000_000);
        assert_eq!(p["sessionId"], json!(session));
        // The editor embeds its terminal in the call, up to the final update.
        let embeds = |u: &Value| {
            u["content"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|b| b["type"] == "terminal" && b["terminalId"] == json!(tid))
            })
        };
        let first_embed = t
            .rpc
            .updates
            .iter()
            .map(|u| &u["update"])
            .find(|u| u["sessionUpdate"] == "tool_call_update" && embeds(u));
        assert!(first_embed.is_some(), "{:?}", t.rpc.updates);
        let last = final_update(&t);
        assert_eq!(last["status"], "completed", "{last}");
        assert!(embeds(&last), "{last}");
        // The model read the exit code, both streams and the terminal's id.
        let data = &last["rawOutput"]["data"];
        assert_eq!(data["exit_code"], 3, "{data}");
        assert_eq!(data["timed_out"], false);
        assert_eq!(data["truncated"], false);
        assert_eq!(data["terminal"], json!(tid));
        let output = data["output"].as_str().unwrap();
        assert!(
            output.contains("to-out\n") && output.contains("to-err\n"),
            "{output}"
        );
        assert!(data.get("editor_truncated").is_none(), "{data}");
        let read = model_read(&t);
        assert!(read.contains("to-out") && read.contains(&tid), "{read}");
        t.finish().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_terminal_command_sees_only_the_clean_environment_and_its_task_variables() {
        let (mut t, session) = start(
            terminal_caps(),
            json!({"command": "env", "env": {"PABLO_TASK_GREETING": "hello there"}}),
        )
        .await;
        let mut host = TerminalHost::new();
        let id = t.prompt(&session, "show the environment").await;
        let r = drive(&mut t.rpc, &mut host, id).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        assert!(host.methods().contains(&"terminal/create"));
        let data = &final_update(&t)["rawOutput"]["data"];
        assert_eq!(data["exit_code"], 0, "{data}");
        let mut names: Vec<&str> = data["output"]
            .as_str()
            .unwrap()
            .lines()
            .map(|l| l.split('=').next().unwrap())
            .collect();
        names.sort_unstable();
        // Nothing of the editor's environment (its secret, HOME, the test's XDG variables): exactly
        // the command environment pablo computes from its own (toolchain variables, no secrets),
        // the task variable, TERM, and PWD, which is the shell's own.
        let base = pablo::process::CommandEnv::from_process(&Default::default());
        let mut expected: Vec<&str> = base.vars().iter().map(|(k, _)| k.as_str()).collect();
        expected.extend(["PABLO_TASK_GREETING", "PWD", "TERM"]);
        expected.sort_unstable();
        assert_eq!(names, expected, "{data}");
        assert!(!names.contains(&"HOME"), "{data}");
        let output = data["output"].as_str().unwrap();
        assert!(
            output.contains(&format!("PWD={}\n", t.env.workspace.display())),
            "{output}"
        );
        assert!(
            output.contains("PABLO_TASK_GREETING=hello there\n"),
            "{output}"
        );
        assert!(output.contains("TERM=dumb\n"), "{output}");
        assert!(!output.contains(EDITOR_SECRET));
        t.finish().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_command_reading_stdin_in_the_terminal_gets_end_of_file_at_once() {
        let (mut t, session) = start(
            terminal_caps(),
            json!({"command": "cat; read line || echo no input", "timeout_ms": 20_000}),
        )
        .await;
        let mut host = TerminalHost::new();
        let id = t.prompt(&session, "read input").await;
        let r = drive(&mut t.rpc, &mut host, id).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        assert!(host.methods().contains(&"terminal/create"));
        let data = &final_update(&t)["rawOutput"]["data"];
        assert_eq!(data["timed_out"], false, "{data}");
        assert_eq!(data["exit_code"], 0, "{data}");
        assert_eq!(data["output"], "no input\n", "{data}");
        t.finish().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_command_past_its_timeout_is_killed_through_the_editor_and_the_terminal_released() {
        let (mut t, session) = start(
            terminal_caps(),
            json!({"command": "echo started; sleep 30", "timeout_ms": 300}),
        )
        .await;
        let mut host = TerminalHost::new();
        let id = t.prompt(&session, "wait a while").await;
        let r = drive(&mut t.rpc, &mut host, id).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        let methods = host.methods();
        let kill = methods.iter().position(|m| *m == "terminal/kill");
        let release = methods.iter().position(|m| *m == "terminal/release");
        assert!(
            kill.is_some() && release.is_some() && kill < release,
            "{methods:?}"
        );
        assert!(host.terms.is_empty(), "a terminal was not released");
        let last = final_update(&t);
        let data = &last["rawOutput"]["data"];
        assert_eq!(data["timed_out"], true, "{data}");
        assert_eq!(data["signal"], "SIGKILL", "{data}");
        assert!(data["exit_code"].is_null(), "{data}");
        assert!(
            data["output"].as_str().unwrap().contains("started"),
            "{data}"
        );
        assert!(
            data["note"].as_str().unwrap().contains("cannot check"),
            "{data}"
        );
        t.finish().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn large_terminal_output_keeps_forty_sixty_inline_and_spills_the_artifact() {
        let (mut t, session) = start(
            terminal_caps(),
            json!({"command": "seq 1 30000", "max_output_bytes": 1000}),
        )
        .await;
        let mut host = TerminalHost::new();
        let id = t.prompt(&session, "count").await;
        let r = drive(&mut t.rpc, &mut host, id).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        let full: String = (1..=30000).map(|i| format!("{i}\n")).collect();
        let data = final_update(&t)["rawOutput"]["data"].clone();
        assert_eq!(data["truncated"], true, "{data}");
        assert_eq!(data["total_bytes"], full.len() as u64);
        let output = data["output"].as_str().unwrap();
        let notice = format!(
            "\n[OUTPUT TRUNCATED - {} chars omitted out of {} total]\n",
            full.len() - 1000,
            full.len()
        );
        let (head, tail) = output.split_once(&notice).expect("the truncation notice");
        assert_eq!(head, &full[..400]);
        assert_eq!(tail, &full[full.len() - 600..]);
        let artifact = data["artifact"].as_str().expect("an artifact");
        assert_eq!(std::fs::read_to_string(artifact).unwrap(), full);
        assert!(data.get("editor_truncated").is_none());
        t.finish().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn output_the_editor_cut_short_is_reported_as_editor_truncated() {
        let (mut t, session) = start(
            terminal_caps(),
            json!({"command": "seq 1 30000", "max_output_bytes": 1000}),
        )
        .await;
        let mut host = TerminalHost::new();
        host.keep_at_most = 10_000;
        let id = t.prompt(&session, "count").await;
        let r = drive(&mut t.rpc, &mut host, id).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        let data = final_update(&t)["rawOutput"]["data"].clone();
        assert_eq!(data["editor_truncated"], true, "{data}");
        assert_eq!(data["total_bytes"], 10_000, "{data}");
        assert!(
            data["note"]
                .as_str()
                .unwrap()
                .contains("dropped the beginning"),
            "{data}"
        );
        // The kept end is still the command's end.
        assert!(data["output"].as_str().unwrap().ends_with("29999\n30000\n"));
        t.finish().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_editor_that_refuses_the_terminal_fails_the_call_with_editor_terminal_failed() {
        let (mut t, session) = start(terminal_caps(), json!({"command": "touch made-here"})).await;
        let mut host = TerminalHost::new();
        host.refuse_create = Some("no terminals in this window");
        let id = t.prompt(&session, "make a file").await;
        let r = drive(&mut t.rpc, &mut host, id).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        assert_eq!(
            host.methods(),
            ["session/request_permission", "terminal/create"]
        );
        let last = final_update(&t);
        assert_eq!(last["status"], "failed", "{last}");
        let error = &last["rawOutput"]["error"];
        assert_eq!(error["code"], "editor_terminal_failed", "{error}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("no terminals in this window"),
            "{error}"
        );
        // Nothing ran: pablo did not fall back to running the command itself.
        assert!(!t.env.workspace.join("made-here").exists());
        assert!(model_read(&t).contains("editor_terminal_failed"));
        t.finish().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_editor_failing_the_wait_fails_the_call_after_killing_and_releasing_the_terminal() {
        let (mut t, session) = start(terminal_caps(), json!({"command": "sleep 30"})).await;
        let mut host = TerminalHost::new();
        host.refuse_wait = true;
        let id = t.prompt(&session, "wait").await;
        let r = drive(&mut t.rpc, &mut host, id).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        assert_eq!(
            host.methods(),
            [
                "session/request_permission",
                "terminal/create",
                "terminal/wait_for_exit",
                "terminal/kill",
                "terminal/release"
            ]
        );
        assert!(host.terms.is_empty(), "a terminal was not released");
        let error = &final_update(&t)["rawOutput"]["error"];
        assert_eq!(error["code"], "editor_terminal_failed", "{error}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains("wait for its command")
                && message.contains("this editor cannot wait for commands"),
            "{message}"
        );
        t.finish().await;
    }

    /// Whether the cancel lands once the terminal exists or while the editor is still creating
    /// it, the command is killed, the terminal released, and the model reads how it ended.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cancelling_the_turn_kills_and_releases_the_terminal_whenever_the_cancel_lands() {
        for before_create_answer in [false, true] {
            let (mut t, session) = start(terminal_caps(), json!({"command": "sleep 30"})).await;
            let mut host = TerminalHost::new();
            if before_create_answer {
                host.cancel_before_create_answer = Some(session.clone());
            } else {
                host.cancel_after_create = Some(session.clone());
            }
            let id = t.prompt(&session, "wait").await;
            let r = drive(&mut t.rpc, &mut host, id).await;
            let case = format!("cancel before the create answer: {before_create_answer}");
            assert_eq!(r["result"]["stopReason"], "cancelled", "{case}: {r}");
            let methods = host.methods();
            assert!(methods.contains(&"terminal/kill"), "{case}: {methods:?}");
            assert_eq!(
                methods.last(),
                Some(&"terminal/release"),
                "{case}: {methods:?}"
            );
            assert!(host.terms.is_empty(), "{case}: a terminal was not released");
            let error = &final_update(&t)["rawOutput"]["error"];
            assert_eq!(error["code"], "cancelled", "{case}: {error}");
            assert_eq!(error["data"]["signal"], "SIGKILL", "{case}: {error}");
            assert!(error["data"]["terminal"].is_string(), "{case}: {error}");
            t.finish().await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_without_terminals_still_runs_the_command_locally() {
        let (mut t, session) = start(
            json!({"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}),
            json!({"command": "date +here | tr -d '\\n'"}),
        )
        .await;
        let mut host = TerminalHost::new();
        let id = t.prompt(&session, "run it").await;
        let r = drive(&mut t.rpc, &mut host, id).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        assert_eq!(host.methods(), ["session/request_permission"]);
        let data = final_update(&t)["rawOutput"]["data"].clone();
        assert_eq!(data["output"], "here", "{data}");
        assert!(data.get("terminal").is_none(), "{data}");
        t.finish().await;
    }
}

// ---------------------------------------------------------------------------------------------
// Arbitrary bytes on the wire.

mod arbitrary_bytes {
    use proptest::prelude::*;

    use super::*;

    /// What the client sends: arbitrary bytes, mostly the ones JSON-RPC lines are made of.
    fn wire_bytes() -> impl Strategy<Value = Vec<u8>> {
        let meaningful: Vec<u8> = b"{}[]\":,\n\n\r jsonrpcidmethod2.0\xff\xfe\xc3\xe2".to_vec();
        prop::collection::vec(
            prop_oneof![3 => prop::sample::select(meaningful), 1 => any::<u8>()],
            0..2048,
        )
    }

    proptest! {
        // Each case starts a server, so fewer cases than the framing's own property test.
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        #[test]
        fn after_any_bytes_the_connection_still_answers_initialize(bytes in wire_bytes()) {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            runtime.block_on(async {
                let mut t = InProcess::start(vec![], None);
                t.rpc.writer.write_all(&bytes).await.unwrap();
                t.rpc.writer.write_all(b"\n").await.unwrap();
                let id = t
                    .rpc
                    .request(
                        "initialize",
                        json!({"protocolVersion": 1, "clientCapabilities": {}}),
                    )
                    .await;
                // Whatever the bytes got (parse errors, refusals) is JSON-RPC on its own line
                // (`next` checks), and the initialize is answered.
                loop {
                    let m = t.rpc.next().await;
                    if m["id"] == json!(id) {
                        assert_eq!(m["result"]["protocolVersion"], 1, "{m}");
                        break;
                    }
                }
                t.finish().await;
            });
        }
    }
}
