//! The whole app loop in-process: real agent, scripted model, `TestBackend`, a stream of keys.
//! The tests that drive the `pablo` binary in a terminal are in `tests/tui.rs`.

use std::sync::Arc;
use std::time::Duration;

use crate::app::{AgentLink, LoopInputs, run_loop};
use crate::state::AppState;
use pablo_agent::{AgentSetup, Limits};
use pablo_core::ApprovalMode;
use pablo_model::scripted::ScriptedModel;
use pablo_policy::PolicyEngine;
use pablo_tools::{Catalog, Host};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};

const SCRIPT: &str = r#"{
      "model": "loop-test", "start": "plan", "after_end": "nothing more to say",
      "steps": {
        "plan": {"text": "Planning **now**.", "calls": [{"tool": "update_plan", "arguments": {"items": [{"content": "write the answer", "status": "in_progress"}]}}], "next": "done"},
        "done": {"text": "All done."}
      }
    }"#;

fn key(c: KeyCode) -> std::io::Result<Event> {
    Ok(Event::Key(KeyEvent::new(c, KeyModifiers::NONE)))
}

#[tokio::test]
async fn typed_task_runs_through_the_agent_and_ctrl_c_twice_ends_the_loop() {
    let dir = tempfile::tempdir().unwrap();
    let mut catalog = Catalog::new();
    catalog
        .register(Arc::new(pablo_tools::plan::PlanUpdate))
        .unwrap();
    let setup = AgentSetup {
        mode: Default::default(),
        model_switcher: None,
        isolator: None,
        hooks: pablo_hooks::Hooks::none(),
        session_id: "s-loop".into(),
        model: Arc::new(ScriptedModel::from_json(SCRIPT).unwrap()),
        catalog,
        policy: Arc::new(PolicyEngine::default()),
        host: Arc::new(Host::new(
            Arc::new(pablo_workspace::Workspace::open(dir.path()).unwrap()),
            dir.path().join("state"),
            &Default::default(),
        )),
        limits: Limits::default(),
        approvals: ApprovalMode::Interactive,
        system_prompt: String::new(),
        history: Vec::new(),
        recorder: None,
        checkpoints: None,
    };
    let handle = pablo_agent::spawn(setup);
    // Keys: type "hi", Enter; later ctrl-c twice. The key stream pauses so the turn can run.
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let input = tokio_stream_from(rx);
    for c in "hi".chars() {
        tx.send(key(KeyCode::Char(c))).unwrap();
    }
    tx.send(key(KeyCode::Enter)).unwrap();
    let mut terminal = Terminal::new(TestBackend::new(100, 24)).unwrap();
    let state = AppState::new(std::time::Instant::now());
    let link = AgentLink {
        ops: handle.ops.clone(),
        events: handle.events,
    };
    let quitter = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(800)).await;
        let ctrl_c = || {
            Ok(Event::Key(KeyEvent::new(
                KeyCode::Char('c'),
                KeyModifiers::CONTROL,
            )))
        };
        tx.send(ctrl_c()).unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        tx.send(ctrl_c()).unwrap();
        tx
    });
    let state = tokio::time::timeout(
        Duration::from_secs(20),
        run_loop(&mut terminal, input, link, state, LoopInputs::default()),
    )
    .await
    .expect("the loop ended")
    .unwrap();
    drop(quitter.await);
    let screen = terminal.backend().to_string();
    assert!(screen.contains("› hi"), "{screen}");
    assert!(screen.contains("All done."), "{screen}");
    assert!(screen.contains("Todo 0/1"), "{screen}");
    assert!(state.shutdown_complete());
    assert_eq!(state.turns(), 1);
}

fn tokio_stream_from(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<std::io::Result<Event>>,
) -> impl futures::Stream<Item = std::io::Result<Event>> + Unpin {
    Box::pin(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)))
}
