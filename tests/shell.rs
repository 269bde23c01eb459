//! Integration tests: shell jobs when the `pablo` binary itself is killed outright. The tests
//! that drive shell.run and shell.session directly are in `tests/engine/shell_exec.rs` and
//! `tests/engine/shell_sessions.rs`.

// A failed unwrap is a failed test, with its message: exactly what a test should do.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::json;

// ---------------------------------------------------------------- pablo killed outright

/// Whether `pid` is still a live (non-zombie) process.
fn is_alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    state != "Z" && state != "X"
}

/// Starts a real `pablo run` whose model starts a background job, SIGKILLs pablo once the job
/// runs, and says whether the job's leader was still alive 10 s later (it is then killed).
async fn leader_survives_a_killed_pablo(pty: bool) -> bool {
    use crate::support::bin::Sandbox;
    use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

    let server = ScriptedServer::start().await;
    // The model starts a background job that records its own pid (the group leader's: `exec`
    // keeps it), then pablo waits on a model answer that never comes.
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "bg",
        "shell_run",
        &[&json!({"command": "cut -d' ' -f4 /proc/self/stat > leader.pid; exec sleep 300", "background": true, "pty": pty})
            .to_string()],
    )));
    server.push(ScriptedResponse::sse(openai::text_answer("never sent")).hang_after(0));
    let sandbox = Sandbox::new();
    let mut pablo = sandbox
        .run_json(&server.base_url(), "start a job")
        .arg("--auto-approve")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid_file = sandbox.workspace().join("leader.pid");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let leader = loop {
        let text = std::fs::read_to_string(&pid_file).unwrap_or_default();
        if text.ends_with('\n') && server.requests().len() >= 2 {
            break text.trim().parse::<i32>().unwrap();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the job never started"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(is_alive(leader), "the job runs while pablo waits");

    // SIGKILL: pablo gets no chance to clean up; only the kernel can end the job now.
    pablo.start_kill().unwrap();
    pablo.wait().await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while is_alive(leader) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let survived = is_alive(leader);
    if survived {
        // Do not leave a 300 s sleeper behind a failed test.
        if let Some(p) = rustix::process::Pid::from_raw(leader) {
            let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
        }
    }
    survived
}

#[tokio::test]
async fn a_background_leader_dies_when_pablo_itself_is_killed() {
    assert!(
        !leader_survives_a_killed_pablo(false).await,
        "the job's leader outlived pablo"
    );
}

/// The PTY path is started like the pipe path: the job's namespace init dies with pablo.
#[tokio::test]
async fn a_pty_background_leader_is_hung_up_when_pablo_itself_is_killed() {
    assert!(
        !leader_survives_a_killed_pablo(true).await,
        "the PTY job's leader outlived pablo"
    );
}
