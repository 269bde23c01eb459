//! The real agent loop in a temp workspace, driven one user turn at a time, for tests of what
//! reaches the model and what comes back (providers, context economy, images).

use std::sync::Arc;
use std::time::Duration;

use pablo::agent::{AgentSetup, Limits, spawn};
use pablo::core::ApprovalMode;
use pablo::model::ModelClient;
use pablo::policy::PolicyEngine;
use pablo::protocol::{Event, Op};
use pablo::tools::{Catalog, Host};
use pablo::workspace::Workspace;

/// What differs between the tests that drive the loop; the rest is the same for all.
pub struct Turns<'a> {
    pub session_id: &'a str,
    pub system_prompt: &'a str,
    pub catalog: Catalog,
    pub limits: Limits,
    /// Files written into the workspace first.
    pub files: &'a [(&'a str, &'a [u8])],
}

impl Default for Turns<'_> {
    fn default() -> Self {
        Self {
            session_id: "test-session",
            system_prompt: "you plan",
            catalog: Catalog::new(),
            limits: Limits::default(),
            files: &[],
        }
    }
}

/// Runs `texts` as user turns (asks refused: no person), each until its `TurnCompleted` or
/// `TurnRefused`; every event in order. The agent is shut down before returning.
pub async fn run(model: Arc<dyn ModelClient>, setup: Turns<'_>, texts: &[&str]) -> Vec<Event> {
    let workspace = tempfile::tempdir().unwrap();
    for (name, bytes) in setup.files {
        std::fs::write(workspace.path().join(name), bytes).unwrap();
    }
    let state = tempfile::tempdir().unwrap();
    let mut handle = spawn(AgentSetup {
        mode: Default::default(),
        model_switcher: None,
        session_id: setup.session_id.into(),
        model,
        catalog: setup.catalog,
        policy: Arc::new(PolicyEngine::new(Default::default())),
        host: Arc::new(Host::new(
            Arc::new(Workspace::open(workspace.path()).unwrap()),
            state.path().to_path_buf(),
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
        handle
            .ops
            .send(Op::UserTurn {
                text: (*text).into(),
            })
            .unwrap();
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
