//! The rest of the catalog — web.fetch, artifact.write and memory.propose — called the way the
//! agent calls them (schema, preview, policy, commit), on real files and a real HTTP server on
//! 127.0.0.1: the fixture the `catalog_*` files share. (Their runs of the real binary stay in
//! `tests/catalog.rs`; csv.analyze's tests, which need no other part of pablo, are in the tools
//! crate beside it, `crates/tools/src/csv_analyze/tests.rs`.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

pub(super) use std::path::PathBuf;
pub(super) use std::sync::Arc;

pub(super) use pablo::core::{EventSink, ToolFailure};
pub(super) use pablo::protocol::Preview;
pub(super) use pablo::workspace::Workspace;
pub(super) use pablo_tools::{Catalog, Host, Tool, ToolContext};
pub(super) use serde_json::Value;
pub(super) use tokio_util::sync::CancellationToken;

/// A workspace, a session state directory outside it, and a catalog of the tools under test.
pub(super) struct Fixture {
    pub(super) tmp: tempfile::TempDir,
    pub(super) catalog: Catalog,
    pub(super) host: Arc<Host>,
}

impl Fixture {
    pub(super) fn new(register: impl FnOnce(&mut Catalog, &Arc<Workspace>)) -> Self {
        Self::with_host(register, |_| {})
    }

    pub(super) fn with_host(
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

    pub(super) fn ws(&self) -> PathBuf {
        self.tmp.path().join("ws")
    }

    /// The session state directory the host was given.
    pub(super) fn state_dir(&self) -> PathBuf {
        self.tmp.path().join("data/sessions/s1")
    }

    pub(super) fn ctx(&self, call_id: &str) -> ToolContext {
        ToolContext {
            call_id: call_id.into(),
            cancel: CancellationToken::new(),
            events: EventSink::discard(),
            host: self.host.clone(),
        }
    }

    pub(super) fn tool(&self, name: &str) -> Arc<dyn Tool> {
        self.catalog.get(name).unwrap().clone()
    }

    /// Schema validation and preview, as the agent does before policy.
    pub(super) async fn preview(&self, tool: &str, args: Value) -> Result<Preview, ToolFailure> {
        let t = self.tool(tool);
        if let Some(v) = self.catalog.validator(t.name()) {
            v.validate(t.name(), &args)?;
        }
        t.preview(&args, &self.ctx("call-1")).await
    }

    /// validate → preview → commit, with this call id.
    pub(super) async fn call_as(
        &self,
        call_id: &str,
        tool: &str,
        args: Value,
    ) -> Result<Value, ToolFailure> {
        let t = self.tool(tool);
        if let Some(v) = self.catalog.validator(t.name()) {
            v.validate(t.name(), &args)?;
        }
        let ctx = self.ctx(call_id);
        let preview = t.preview(&args, &ctx).await?;
        t.commit(&args, &preview, &ctx).await
    }

    pub(super) async fn call(&self, tool: &str, args: Value) -> Result<Value, ToolFailure> {
        self.call_as("call-1", tool, args).await
    }
}
