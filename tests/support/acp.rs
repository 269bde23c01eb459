//! The editor's side of an ACP connection, shared by the tests that drive the `pablo acp` binary
//! (`tests/acp.rs`) and those that run the server in-process (`tests/engine/acp.rs`): a JSON-RPC
//! peer over any pair of streams, and temp dirs for XDG and the workspace.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, Lines};

/// A JSON-RPC peer playing the editor.
pub struct Rpc<R, W> {
    pub lines: Lines<BufReader<R>>,
    pub writer: W,
    pub next_id: u64,
    /// Every `session/update` seen, in order.
    pub updates: Vec<Value>,
    /// Every request the agent sent to us, in order.
    pub agent_requests: Vec<Value>,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Rpc<R, W> {
    pub fn new(reader: R, writer: W) -> Self {
        Self {
            lines: BufReader::new(reader).lines(),
            writer,
            next_id: 1,
            updates: Vec::new(),
            agent_requests: Vec::new(),
        }
    }

    pub async fn send(&mut self, v: &Value) {
        let mut line = v.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.flush().await.unwrap();
    }

    pub async fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    pub async fn respond(&mut self, id: &Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
            .await;
    }

    /// The next message; every line on stdout must be a JSON-RPC message.
    pub async fn next(&mut self) -> Value {
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
    pub async fn response_to(
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
    pub async fn until(
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

    pub async fn take(&mut self, m: Value, answer: &mut dyn FnMut(&Value) -> Option<Value>) {
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

    pub async fn initialize(&mut self) -> Value {
        self.initialize_with(json!({
            "fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}))
            .await
    }

    /// `initialize` advertising `capabilities` (the whole `clientCapabilities` object).
    pub async fn initialize_with(&mut self, capabilities: Value) -> Value {
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
    pub fn requests_for(&self, method: &str) -> Vec<&Value> {
        self.agent_requests
            .iter()
            .filter(|r| r["method"] == method)
            .collect()
    }

    pub async fn new_session(&mut self, cwd: &Path) -> String {
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
    pub async fn set_mode(&mut self, session: &str, mode: &str) -> Value {
        let id = self
            .request(
                "session/set_mode",
                json!({"sessionId": session, "modeId": mode}),
            )
            .await;
        self.response_to(id, &mut no_answer).await
    }

    /// The `sessionUpdate` kinds seen so far, in order.
    pub fn update_kinds(&self) -> Vec<String> {
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
    pub fn message_text(&self) -> String {
        self.updates
            .iter()
            .filter(|u| u["update"]["sessionUpdate"] == "agent_message_chunk")
            .map(|u| u["update"]["content"]["text"].as_str().unwrap_or(""))
            .collect()
    }
}

pub fn no_answer(_: &Value) -> Option<Value> {
    None
}

/// The answer to a permission request that allows the call once.
pub fn allow_once() -> Option<Value> {
    Some(json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}}))
}

/// An answer holding this key is sent as a JSON-RPC error (its value) instead of a result.
pub const RPC_ERROR: &str = "__rpc_error";

/// Temp dirs for XDG and the workspace.
pub struct Env {
    _root: tempfile::TempDir,
    pub xdg: std::path::PathBuf,
    pub workspace: std::path::PathBuf,
}

impl Env {
    pub fn new() -> Self {
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

    /// A file listing everything under the workspace and the data dir (to check that a refusal
    /// changed nothing).
    pub fn snapshot(&self) -> Vec<String> {
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

pub const PLAN_ARGS: fn() -> Value = || {
    json!({"items": [
        {"content": "read the code", "status": "completed"},
        {"content": "fix the bug", "status": "in_progress"}
    ]})
};
