//! The real agent loop in a temp workspace, driven one user turn at a time, for tests of what
//! reaches the model and what comes back (providers, context economy, images).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use pablo::core::ApprovalMode;
use pablo::model::ModelClient;
use pablo::policy::PolicyEngine;
use pablo::protocol::{Event, Op};
use pablo::workspace::Workspace;
use pablo_agent::{AgentSetup, Limits, spawn};
use pablo_tools::{Catalog, Host};

/// What differs between the tests that drive the loop; the rest is the same for all.
pub(crate) struct Turns<'a> {
    pub(crate) session_id: &'a str,
    pub(crate) system_prompt: &'a str,
    pub(crate) catalog: Catalog,
    pub(crate) limits: Limits,
    /// Files written into the workspace first.
    pub(crate) files: &'a [(&'a str, &'a [u8])],
    /// The workspace and the state dir, when the test looks at them afterwards (temp dirs
    /// otherwise).
    pub(crate) workspace: Option<&'a Path>,
    pub(crate) state: Option<&'a Path>,
}

impl Default for Turns<'_> {
    fn default() -> Self {
        Self {
            session_id: "test-session",
            system_prompt: "you plan",
            catalog: Catalog::new(),
            limits: Limits::default(),
            files: &[],
            workspace: None,
            state: None,
        }
    }
}

/// Runs `texts` as user turns (asks refused: no person), each until its `TurnCompleted` or
/// `TurnRefused`; every event in order. The agent is shut down before returning.
pub(crate) async fn run(
    model: Arc<dyn ModelClient>,
    setup: Turns<'_>,
    texts: &[&str],
) -> Vec<Event> {
    let (own_workspace, own_state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let workspace = setup.workspace.unwrap_or(own_workspace.path());
    let state = setup.state.unwrap_or(own_state.path());
    for (name, bytes) in setup.files {
        std::fs::write(workspace.join(name), bytes).unwrap();
    }
    let mut handle = spawn(AgentSetup {
        mode: Default::default(),
        model_switcher: None,
        isolator: None,
        hooks: pablo_hooks::Hooks::none(),
        session_id: setup.session_id.into(),
        model,
        catalog: setup.catalog,
        policy: Arc::new(PolicyEngine::new(Default::default())),
        host: Arc::new(Host::new(
            Arc::new(Workspace::open(workspace).unwrap()),
            state.to_path_buf(),
            &Default::default(),
        )),
        limits: setup.limits,
        approvals: ApprovalMode::RefuseAsks,
        system_prompt: setup.system_prompt.into(),
        history: Vec::new(),
        recorder: None,
        checkpoints: None,
    });
    let mut events = Vec::new();
    for text in texts {
        handle.ops.send(Op::user_turn(*text)).unwrap();
        let collect = async {
            while let Some(ev) = handle.events.recv().await {
                let done = matches!(ev, Event::TurnCompleted { .. } | Event::TurnRefused { .. });
                events.push(ev);
                if done {
                    break;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(30), collect)
            .await
            .expect("the turn did not end within 30 s");
    }
    handle.ops.send(Op::Shutdown).unwrap();
    let _ = tokio::time::timeout(Duration::from_secs(10), handle.task).await;
    events
}

/// Every file under `dir` with its bytes, sorted (to show that a refusal wrote nothing).
pub(crate) fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_default();
                out.push((path, bytes));
            }
        }
    }
    out.sort();
    out
}
