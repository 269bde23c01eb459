//! Integration tests: tui.
//!
//! Two levels: the whole app loop in-process on ratatui's `TestBackend`, driven by a stream of
//! keys against the real agent (scripted model); and the real `pablo` binary in a real terminal
//! (a PTY read through a vt100 parser), where a person would sit.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

use crate::support::bin::Sandbox;

/// The real binary in a PTY, its screen kept up to date by a vt100 parser.
struct Terminal {
    parser: Arc<Mutex<vt100::Parser>>,
    raw: Arc<Mutex<Vec<u8>>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Terminal {
    fn spawn(sandbox: &Sandbox, args: &[&str]) -> Self {
        let (rows, cols) = (40, 120);
        let pty = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("openpty");
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_pablo"));
        cmd.args(args);
        cmd.env_clear();
        cmd.env("PATH", std::env::var_os("PATH").unwrap_or_default());
        cmd.env("HOME", sandbox.root().join("home"));
        cmd.env("TERM", "xterm-256color");
        cmd.env("XDG_CONFIG_HOME", sandbox.root().join("config"));
        cmd.env("XDG_DATA_HOME", sandbox.root().join("data"));
        cmd.env("XDG_STATE_HOME", sandbox.root().join("state"));
        cmd.cwd(sandbox.workspace());
        let child = pty.slave.spawn_command(cmd).expect("spawn pablo");
        let mut reader = pty.master.try_clone_reader().expect("reader");
        let writer = pty.master.take_writer().expect("writer");
        let parser = Arc::new(Mutex::new(vt100::Parser::new(rows.try_into().unwrap(), cols.try_into().unwrap(), 0)));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let (p, r) = (parser.clone(), raw.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                p.lock().unwrap().process(&buf[..n]);
                r.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Self {
            parser,
            raw,
            writer,
            child,
            _master: pty.master,
        }
    }

    fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    fn raw_text(&self) -> String {
        String::from_utf8_lossy(&self.raw.lock().unwrap()).into_owned()
    }

    /// Waits until the screen contains `text` (a safety-net timeout, not a timing assertion).
    fn wait_for(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {text:?}; the screen is:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(40));
        }
    }

    fn send(&mut self, bytes: &str) {
        self.writer.write_all(bytes.as_bytes()).unwrap();
        self.writer.flush().unwrap();
        // Keys typed by a person arrive one read at a time.
        std::thread::sleep(Duration::from_millis(60));
    }

    /// Waits for the process to exit; returns its exit status.
    fn wait_exit(&mut self) -> portable_pty::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // Let the reader thread take the last bytes.
                std::thread::sleep(Duration::from_millis(100));
                return status;
            }
            assert!(Instant::now() < deadline, "pablo did not exit; screen:\n{}", self.screen());
            std::thread::sleep(Duration::from_millis(40));
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

fn demo_dir(sandbox: &Sandbox) -> PathBuf {
    sandbox.root().join("demo")
}

fn start_demo(sandbox: &Sandbox) -> Terminal {
    let dir = demo_dir(sandbox);
    let dir = dir.to_str().unwrap().to_string();
    Terminal::spawn(sandbox, &["demo", "--dir", &dir])
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn demo_starts_full_screen_and_ctrl_c_twice_quits_restoring_the_terminal() {
    let sandbox = Sandbox::new();
    let mut t = start_demo(&sandbox);
    t.wait_for("pablo-demo · scripted");
    t.wait_for("The mean in bin/stats.sh looks wrong");
    assert!(t.parser.lock().unwrap().screen().alternate_screen());
    // The scripted plan reaches the checklist.
    t.wait_for("Todo");
    // Wait for the turn to finish (idle prompt), then quit.
    t.wait_for("Ask pablo to do something");
    t.send("\x03");
    t.wait_for("press ctrl-c again to quit");
    t.send("\x03");
    let status = t.wait_exit();
    assert!(status.success(), "exit status {status:?}");
    let screen = t.parser.lock().unwrap();
    assert!(!screen.screen().alternate_screen(), "the alternate screen was left");
    drop(screen);
    let raw = t.raw_text();
    assert!(raw.contains("\x1b[?1049l"), "left the alternate screen");
    assert!(raw.contains("\x1b[?2026h"), "frames use synchronized updates");
    assert!(t.screen().contains("pablo: session"), "summary printed:\n{}", t.screen());
    assert!(t.screen().contains("the demo project is kept in"));
    // The sample project was written where asked.
    assert!(read(&demo_dir(&sandbox).join("bin/stats.sh")).contains("mean()"));
}

#[test]
fn sigterm_restores_the_terminal() {
    let sandbox = Sandbox::new();
    let mut t = start_demo(&sandbox);
    t.wait_for("pablo-demo · scripted");
    let pid = t.child.process_id().unwrap();
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    t.wait_exit();
    assert!(!t.parser.lock().unwrap().screen().alternate_screen());
    assert!(t.raw_text().contains("\x1b[?1049l"));
}

/// The whole app loop in-process: real agent, scripted model, `TestBackend`, a stream of keys.
mod in_process {
    use std::sync::Arc;
    use std::time::Duration;

    use pablo::agent::{self, AgentSetup, ApprovalMode, Limits};
    use pablo::model::scripted::ScriptedModel;
    use pablo::policy::PolicyEngine;
    use pablo::tools::{Catalog, Host};
    use pablo::tui::app::{AgentLink, LoopInputs, run_loop};
    use pablo::tui::state::AppState;
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
            .register(Arc::new(pablo::tools::plan::PlanUpdate))
            .unwrap();
        let setup = AgentSetup {
            session_id: "s-loop".into(),
            model: Arc::new(ScriptedModel::from_json(SCRIPT).unwrap()),
            catalog,
            policy: Arc::new(PolicyEngine::default()),
            host: Arc::new(Host {
                workspace_root: dir.path().to_path_buf(),
                state_dir: dir.path().join("state"),
            }),
            limits: Limits::default(),
            approvals: ApprovalMode::Interactive,
            system_prompt: String::new(),
            history: Vec::new(),
            recorder: None,
        };
        let handle = agent::spawn(setup);
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
            let ctrl_c = || Ok(Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)));
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
        assert!(state.shutdown_complete);
        assert_eq!(state.turns, 1);
    }

    fn tokio_stream_from(
        mut rx: tokio::sync::mpsc::UnboundedReceiver<std::io::Result<Event>>,
    ) -> impl futures::Stream<Item = std::io::Result<Event>> + Unpin {
        Box::pin(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)))
    }
}
