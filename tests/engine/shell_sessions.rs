//! shell.run and shell.session with real PTYs and background sessions: the session actions,
//! the rolling output window, notifications, and front-end input and kill through the agent.

// A failed unwrap is a failed test, with its message: exactly what a test should do.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use pablo::config::ShellOptions;
use pablo::process::OutputLog;
use pablo::protocol::Event;
use pablo_tools::shell_run::ShellRun;
use pablo_tools::{Host, Tool};
use proptest::prelude::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::shell_exec::{alive_in_group, first_line_pid, fixture, fixture_with, stream};

// ---------------------------------------------------------------- PTY

#[tokio::test]
async fn pty_makes_stdin_a_terminal() {
    let f = fixture();
    let cmd = "python3 -c 'import sys; print(sys.stdin.isatty())'";
    let r = f.sh(json!({"command": cmd, "pty": true})).await;
    assert_eq!(r["output"], "True\n", "{r}");
    let r = f.sh(json!({"command": cmd})).await;
    assert_eq!(r["output"], "False\n", "{r}");
    // The terminal's input is at end of file: a reader returns at once, nothing is echoed.
    let r = f
        .sh(json!({"command": "cat; echo done", "pty": true, "timeout_ms": 30000}))
        .await;
    assert_eq!(r["timed_out"], false, "{r}");
    assert_eq!(r["output"], "done\n", "{r}");
}

#[tokio::test]
async fn send_keys_ctrl_c_interrupts_a_sleep() {
    let f = fixture();
    let id = f
        .background(json!({"command": "echo ready; sleep 100", "background": true, "pty": true}))
        .await;
    f.wait_for_output(&id, "ready").await;
    let k = f
        .session(json!({"action": "send_keys", "session_id": id, "keys": ["ctrl-c"]}))
        .await
        .unwrap();
    assert_eq!(k["keys_sent"], 1);
    let w = f
        .session(json!({"action": "wait", "session_id": id, "timeout_ms": 20000}))
        .await
        .unwrap();
    assert_eq!(w["status"], "exited", "{w}");
    assert!(w["signal"] == "SIGINT" || w["exit_code"] == 130, "{w}");
}

#[tokio::test]
async fn a_read_prompt_is_answered_with_write() {
    let f = fixture();
    let id = f
        .background(json!({
            "command": "read -p 'Name? ' name; echo \"hello $name\"",
            "background": true,
            "pty": true
        }))
        .await;
    f.wait_for_output(&id, "Name? ").await;
    f.session(json!({"action": "write", "session_id": id, "data": "pablo\n"}))
        .await
        .unwrap();
    let w = f
        .session(json!({"action": "wait", "session_id": id, "timeout_ms": 20000}))
        .await
        .unwrap();
    assert_eq!(w["status"], "exited", "{w}");
    assert_eq!(w["exit_code"], 0);
    let all = f
        .session(json!({"action": "read", "session_id": id, "offset": 0}))
        .await
        .unwrap();
    let text = all["output"].as_str().unwrap();
    assert!(text.contains("hello pablo"), "{text:?}");
    assert!(!text.contains('\x1b'), "{text:?}");
}

#[tokio::test]
async fn send_keys_to_a_pipe_session_is_refused() {
    let f = fixture();
    let id = f
        .background(json!({"command": "sleep 30", "background": true}))
        .await;
    let err = f
        .session(json!({"action": "send_keys", "session_id": id, "keys": ["enter"]}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "not_a_pty");
    f.session(json!({"action": "kill", "session_id": id}))
        .await
        .unwrap();
}

// ---------------------------------------------------------------- background sessions

#[tokio::test]
async fn wait_on_a_sleeping_job_says_running_when_its_window_ends() {
    let f = fixture();
    // `background` checks that the session starts as running.
    let id = f
        .background(json!({"command": "sleep 30", "background": true}))
        .await;
    let w = f
        .session(json!({"action": "wait", "session_id": id, "timeout_ms": 300}))
        .await
        .unwrap();
    assert_eq!(w["status"], "running", "{w}");
    assert_eq!(w["exit_code"], Value::Null);
    assert!(w["note"].as_str().unwrap().contains("not an error"));
    f.session(json!({"action": "kill", "session_id": id}))
        .await
        .unwrap();
}

#[tokio::test]
async fn kill_leaves_no_process_behind_and_keeps_the_output_readable() {
    let f = fixture();
    let id = f
        .background(json!({"command": "cut -d' ' -f5 /proc/self/stat; sleep 300 & sleep 300", "background": true}))
        .await;
    let out = f.wait_for_output(&id, "\n").await;
    let pgid = first_line_pid(&out);
    assert!(!alive_in_group(pgid).is_empty());
    let k = f
        .session(json!({"action": "kill", "session_id": id}))
        .await
        .unwrap();
    assert_eq!(k["status"], "exited", "{k}");
    assert_eq!(k["killed"], true);
    assert_eq!(alive_in_group(pgid), Vec::<i32>::new());
    let again = f
        .session(json!({"action": "read", "session_id": id, "offset": 0}))
        .await
        .unwrap();
    assert_eq!(again["output"], format!("{pgid}\n"));
    let list = f.session(json!({"action": "list"})).await.unwrap();
    assert_eq!(list["sessions"][0]["status"], "exited");
}

#[tokio::test]
async fn read_offsets_and_dropped_bytes_are_exact_beyond_the_window() {
    const TOTAL: u64 = 3_000_000;
    let f = fixture();
    let id = f
        .background(
            json!({"command": format!("yes 'x€yz😀' | head -c {TOTAL}"), "background": true}),
        )
        .await;
    let w = f
        .session(json!({"action": "wait", "session_id": id, "timeout_ms": 60000}))
        .await
        .unwrap();
    assert_eq!(w["exit_code"], 0, "{w}");
    let dropped = TOTAL - (1 << 20);
    let mut offset = 0u64;
    let mut collected = Vec::new();
    let mut first = true;
    loop {
        let p = f
            .session(
                json!({"action": "read", "session_id": id, "offset": offset, "limit": 100_000}),
            )
            .await
            .unwrap();
        assert_eq!(p["total_bytes"], TOTAL);
        assert_eq!(p["dropped_bytes"], dropped);
        if first {
            assert_eq!(p["skipped_bytes"], dropped);
            assert_eq!(p["offset"], dropped);
            first = false;
        } else {
            assert_eq!(p["skipped_bytes"], 0);
            assert_eq!(p["offset"], offset);
        }
        collected.extend_from_slice(p["output"].as_str().unwrap().as_bytes());
        offset = p["next_offset"].as_u64().unwrap();
        if p["has_more"] == false {
            break;
        }
    }
    assert_eq!(offset, TOTAL);
    // The window starts inside a character: lossy decoding replaced its first bytes.
    let want = String::from_utf8_lossy(&stream(dropped, TOTAL)).into_owned();
    assert!(
        collected == want.as_bytes(),
        "pages do not reassemble the window"
    );
}

#[tokio::test]
async fn write_and_eof_drive_a_pipe_session() {
    let f = fixture();
    let id = f
        .background(json!({"command": "sort", "background": true}))
        .await;
    f.session(json!({"action": "write", "session_id": id, "data": "pear\napple\n", "eof": true}))
        .await
        .unwrap();
    let w = f
        .session(json!({"action": "wait", "session_id": id, "timeout_ms": 20000}))
        .await
        .unwrap();
    assert_eq!(w["exit_code"], 0, "{w}");
    assert_eq!(w["output"], "apple\npear\n");
}

#[tokio::test]
async fn sessions_beyond_the_limit_are_refused() {
    let f = fixture_with(ShellOptions {
        max_sessions: Some(2),
        ..ShellOptions::default()
    });
    let mut ids = Vec::new();
    for _ in 0..2 {
        let r = f
            .sh(json!({"command": "sleep 30", "background": true}))
            .await;
        ids.push(r["session_id"].as_str().unwrap().to_string());
    }
    let err = f
        .call(&f.run, json!({"command": "touch ran", "background": true}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "too_many_sessions");
    assert!(err.message.contains('2'));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!f.workspace.join("ran").exists());
    for id in ids {
        f.session(json!({"action": "kill", "session_id": id}))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn unknown_session_is_refused_by_name() {
    let f = fixture();
    let err = f
        .session(json!({"action": "poll", "session_id": "s999"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, "unknown_session");
    assert!(err.message.contains("s999"));
}

#[tokio::test]
async fn dropping_the_host_kills_running_sessions() {
    let f = fixture();
    let id = f
        .background(
            json!({"command": "cut -d' ' -f5 /proc/self/stat; sleep 300", "background": true}),
        )
        .await;
    let pgid = first_line_pid(&f.wait_for_output(&id, "\n").await);
    drop(f);
    for _ in 0..200 {
        if alive_in_group(pgid).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("group {pgid} outlived its host");
}

#[test]
fn description_follows_the_launcher() {
    let sh = ShellRun::new(pablo::process::ShellSettings::default());
    assert!(sh.description().contains("not bash"));
    let bash = ShellRun::new(pablo::process::ShellSettings::from_options(
        &ShellOptions {
            launcher: Some("/bin/bash".into()),
            ..ShellOptions::default()
        },
        Default::default(),
    ));
    assert!(bash.description().contains("/bin/bash -c"));
    assert!(!bash.description().contains("not bash"));
}

#[test]
fn disabled_shell_registers_nothing() {
    let mut c = pablo_tools::Catalog::new();
    pablo_tools::register_shell(
        &mut c,
        &ShellOptions {
            enabled: Some(false),
            ..ShellOptions::default()
        },
        Default::default(),
    )
    .unwrap();
    assert!(c.is_empty());
    pablo_tools::register_shell(&mut c, &ShellOptions::default(), Default::default()).unwrap();
    assert!(c.get("shell_run").is_some() && c.get("shell.session").is_some());
}

// ---------------------------------------------------------------- the rolling window, by property

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn window_reads_are_exact_for_any_chunking(
        chunks in prop::collection::vec(1usize..300_000, 1..20),
        reads in prop::collection::vec((0u64..4_000_000, 1usize..200_000), 1..10),
    ) {
        let cap = 1 << 20;
        let mut log = OutputLog::new(cap);
        let mut all = Vec::new();
        for (i, n) in chunks.iter().enumerate() {
            let chunk: Vec<u8> = (0..*n).map(|j| b'a' + ((i * 7 + j) % 26) as u8).collect();
            log.push(&chunk);
            all.extend_from_slice(&chunk);
        }
        let total = all.len() as u64;
        let dropped = total.saturating_sub(cap as u64);
        prop_assert_eq!(log.total(), total);
        prop_assert_eq!(log.dropped(), dropped);
        for (offset, limit) in reads {
            let p = log.read(Some(offset), limit);
            let start = offset.clamp(dropped, total);
            let end = (start + limit as u64).min(total);
            prop_assert_eq!(p.skipped_bytes, dropped.saturating_sub(offset));
            prop_assert_eq!(p.offset, start);
            prop_assert_eq!(p.next_offset, end);
            prop_assert_eq!(p.has_more, end < total);
            prop_assert_eq!(p.dropped_bytes, dropped);
            prop_assert_eq!(&p.bytes[..], &all[start as usize..end as usize]);
        }
        let latest = log.read(None, 1000);
        prop_assert_eq!(&latest.bytes[..], &all[all.len().saturating_sub(1000).max(dropped as usize)..]);
    }
}

#[test]
fn schema_refuses_env_outside_the_prefix_by_name() {
    let mut c = pablo_tools::Catalog::new();
    pablo_tools::register_shell(&mut c, &ShellOptions::default(), Default::default()).unwrap();
    let v = c.validator("shell.run").unwrap();
    let err = v
        .validate(
            "shell.run",
            &json!({"command": "env", "env": {"HOME": "/root"}}),
        )
        .unwrap_err();
    assert!(err.to_string().contains("HOME"), "{err}");
    v.validate(
        "shell.run",
        &json!({"command": "env", "env": {"PABLO_TASK_X": "1"}}),
    )
    .unwrap();
}

#[tokio::test]
async fn notify_reports_an_exit_but_a_killed_session_does_not() {
    let mut f = fixture();
    let r = f
        .sh(json!({"command": "exit 4", "background": true, "notify": true}))
        .await;
    let done = r["session_id"].as_str().unwrap().to_string();
    f.session(json!({"action": "wait", "session_id": done, "timeout_ms": 20000}))
        .await
        .unwrap();
    let r = f
        .sh(json!({"command": "sleep 30", "background": true, "notify": true}))
        .await;
    let killed = r["session_id"].as_str().unwrap().to_string();
    f.session(json!({"action": "kill", "session_id": killed}))
        .await
        .unwrap();
    let mut exits = Vec::new();
    let mut last_sessions = None;
    while let Ok(e) = f.events.try_recv() {
        match e {
            Event::SessionExited {
                session_id,
                exit_code,
            } => exits.push((session_id, exit_code)),
            Event::Sessions { sessions } => last_sessions = Some(sessions),
            _ => {}
        }
    }
    assert_eq!(exits, vec![(done, Some(4))]);
    let sessions = last_sessions.unwrap();
    assert_eq!(sessions.len(), 2);
    assert!(sessions.iter().all(|s| !s.running));
}

#[tokio::test]
async fn two_quiet_checks_switch_notification_on_and_say_so() {
    let f = fixture();
    let id = f
        .background(json!({"command": "sleep 30", "background": true}))
        .await;
    let first = f
        .session(json!({"action": "poll", "session_id": id}))
        .await
        .unwrap();
    assert_eq!(first["status"], "running");
    assert!(first.get("note").is_none(), "{first}");
    let second = f
        .session(json!({"action": "poll", "session_id": id}))
        .await
        .unwrap();
    assert!(
        second["note"].as_str().unwrap().contains("Stop checking"),
        "{second}"
    );
    f.session(json!({"action": "kill", "session_id": id}))
        .await
        .unwrap();
}

#[tokio::test]
async fn two_quiet_waits_switch_notification_on_and_say_so_beside_the_still_running_note() {
    let f = fixture();
    let id = f
        .background(json!({"command": "sleep 30", "background": true}))
        .await;
    let wait = json!({"action": "wait", "session_id": id, "timeout_ms": 50});
    let first = f.session(wait.clone()).await.unwrap();
    assert_eq!(first["status"], "running");
    let note = first["note"].as_str().unwrap();
    assert!(note.contains("still running"), "{first}");
    assert!(!note.contains("Stop checking"), "{first}");
    let second = f.session(wait).await.unwrap();
    let note = second["note"].as_str().unwrap();
    assert!(note.contains("still running"), "{second}");
    assert!(note.contains("Stop checking"), "{second}");
    f.session(json!({"action": "kill", "session_id": id}))
        .await
        .unwrap();
}

// ---------------------------------------------------------------- front-end ops through the agent

/// The agent needs a model to exist; these tests never start a turn, so it is never called.
struct UnusedModel;

#[async_trait::async_trait]
impl pablo::model::ModelClient for UnusedModel {
    fn provider(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "unused"
    }
    async fn stream(
        &self,
        _request: &pablo::model::ModelRequest,
        _cancel: CancellationToken,
    ) -> Result<pablo::model::EventStream, pablo::model::ModelError> {
        panic!("no turn is started in these tests")
    }
}

fn spawn_agent(host: Arc<Host>) -> pablo::protocol::AgentHandle {
    pablo_agent::spawn(pablo_agent::AgentSetup {
        mode: Default::default(),
        model_switcher: None,
        isolator: None,
        hooks: pablo_hooks::Hooks::none(),
        session_id: "test".into(),
        model: Arc::new(UnusedModel),
        catalog: pablo_tools::Catalog::new(),
        policy: Arc::new(pablo::policy::PolicyEngine::default()),
        host,
        limits: pablo_agent::Limits::default(),
        approvals: pablo::core::ApprovalMode::RefuseAsks,
        system_prompt: String::new(),
        history: Vec::new(),
        recorder: None,
        checkpoints: None,
    })
}

#[tokio::test]
async fn front_end_input_and_kill_reach_the_session_and_shutdown_kills_the_rest() {
    let f = fixture();
    let mut agent = spawn_agent(f.host.clone());
    let r = f.sh(json!({"command": "cat", "background": true})).await;
    let echo = r["session_id"].as_str().unwrap().to_string();
    agent
        .ops
        .send(pablo::protocol::Op::SessionInput {
            session_id: echo.clone(),
            data: "from the tui\n".into(),
        })
        .unwrap();
    f.wait_for_output(&echo, "from the tui\n").await;
    agent
        .ops
        .send(pablo::protocol::Op::KillSession {
            session_id: echo.clone(),
        })
        .unwrap();
    let w = f
        .session(json!({"action": "wait", "session_id": echo, "timeout_ms": 20000}))
        .await
        .unwrap();
    assert_eq!(w["status"], "exited", "{w}");

    let id = f
        .background(
            json!({"command": "cut -d' ' -f5 /proc/self/stat; sleep 300", "background": true}),
        )
        .await;
    let pgid = first_line_pid(&f.wait_for_output(&id, "\n").await);
    agent.ops.send(pablo::protocol::Op::Shutdown).unwrap();
    loop {
        match tokio::time::timeout(Duration::from_secs(20), agent.events.recv()).await {
            Ok(Some(Event::ShutdownComplete)) => break,
            Ok(Some(_)) => continue,
            other => panic!("no ShutdownComplete: {other:?}"),
        }
    }
    assert_eq!(alive_in_group(pgid), Vec::<i32>::new());
}
