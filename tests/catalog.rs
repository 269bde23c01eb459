//! Integration tests: the rest of the catalog — web.fetch, csv.analyze, artifact.write and
//! memory.propose — called the way the agent calls them (schema, preview, policy, commit), on real
//! files, a real HTTP server on 127.0.0.1 and the real binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;

use pablo::core::{EventSink, ToolFailure};
use pablo::protocol::Preview;
use pablo::tools::{Catalog, Host, Tool, ToolContext};
use pablo::workspace::Workspace;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

mod artifact;
mod csv;
mod fetch;
mod memory;
mod modes;

/// A workspace, a session state directory outside it, and a catalog of the tools under test.
struct Fixture {
    tmp: tempfile::TempDir,
    catalog: Catalog,
    host: Arc<Host>,
}

impl Fixture {
    fn new(register: impl FnOnce(&mut Catalog, &Arc<Workspace>)) -> Self {
        Self::with_host(register, |_| {})
    }

    fn with_host(
        register: impl FnOnce(&mut Catalog, &Arc<Workspace>),
        adjust: impl FnOnce(&mut Host),
    ) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("ws")).unwrap();
        let ws = Arc::new(Workspace::open(&tmp.path().join("ws")).unwrap());
        let mut catalog = Catalog::new();
        register(&mut catalog, &ws);
        let mut host = Host::new(
            ws,
            tmp.path().join("data/sessions/s1"),
            &pablo::config::ShellOptions::default(),
        );
        adjust(&mut host);
        Self {
            tmp,
            catalog,
            host: Arc::new(host),
        }
    }

    fn ws(&self) -> PathBuf {
        self.tmp.path().join("ws")
    }

    fn state_dir(&self) -> PathBuf {
        self.host.state_dir.clone()
    }

    fn put(&self, p: &str, bytes: impl AsRef<[u8]>) {
        let path = self.ws().join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    fn ctx(&self, call_id: &str) -> ToolContext {
        ToolContext {
            call_id: call_id.into(),
            cancel: CancellationToken::new(),
            events: EventSink::discard(),
            host: self.host.clone(),
        }
    }

    fn tool(&self, name: &str) -> Arc<dyn Tool> {
        self.catalog.get(name).unwrap().clone()
    }

    /// Schema validation and preview, as the agent does before policy.
    async fn preview(&self, tool: &str, args: Value) -> Result<Preview, ToolFailure> {
        let t = self.tool(tool);
        if let Some(v) = self.catalog.validator(t.name()) {
            v.validate(t.name(), &args)?;
        }
        t.preview(&args, &self.ctx("call-1")).await
    }

    /// validate → preview → commit, with this call id.
    async fn call_as(&self, call_id: &str, tool: &str, args: Value) -> Result<Value, ToolFailure> {
        let t = self.tool(tool);
        if let Some(v) = self.catalog.validator(t.name()) {
            v.validate(t.name(), &args)?;
        }
        let ctx = self.ctx(call_id);
        let preview = t.preview(&args, &ctx).await?;
        t.commit(&args, &preview, &ctx).await
    }

    async fn call(&self, tool: &str, args: Value) -> Result<Value, ToolFailure> {
        self.call_as("call-1", tool, args).await
    }
}

/// A user config that points `pablo` (with no flags) at a scripted OpenAI-compatible server.
fn provider_config(base_url: &str, extra: &str) -> String {
    format!("provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{base_url}\"\n{extra}")
}

/// Plain `pablo run TASK` in the sandbox (no flags; the provider in the user config, the key in
/// the environment); its stdout, once it has exited successfully.
async fn run_plain(sb: &crate::support::bin::Sandbox, task: &str) -> String {
    let out = sb
        .command()
        .env("OPENAI_API_KEY", "sk-test-key")
        .args(["run", task])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The tool message the model received for `call_id`, parsed, from a recorded request to the
/// OpenAI-compatible server (`{"role":"tool","tool_call_id":…,"content":"…"}`).
fn tool_result_seen_by_model(req: &crate::support::http::RecordedRequest, call_id: &str) -> Value {
    let body = req.json();
    let msg = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .unwrap_or_else(|| panic!("no tool message for {call_id} in {body}"));
    serde_json::from_str(msg["content"].as_str().unwrap()).unwrap()
}
