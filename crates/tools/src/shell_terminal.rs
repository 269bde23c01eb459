//! A foreground `shell.run` command in the front-end's terminal.
//!
//! When an editor offers terminals, the person can watch a command run where they work instead of
//! reading it back from pablo. What runs must still be exactly what the policy judged, with
//! nothing of the editor's environment: the editor is handed a program and its arguments, never a
//! shell line, and that program is `env -i` with the clean environment spelled out, then a fixed
//! `sh` that closes stdin, then the launcher with `-c COMMAND`. The result the model reads has the same shape and the same bounds
//! as a local run (the 40/60 inline view, the spill file), plus the terminal's id.
//!
//! The end of the command is pablo's to decide here too: the wait races the timeout and the
//! turn's cancellation; then pablo asks the editor to kill the command, waits for its end within
//! the cleanup allowance, reads the output and always releases the terminal, each request bounded
//! so that an editor that stops answering cannot hold the call.
//!
//! What pablo cannot prove here is that nothing of the command survives. Locally a command gets
//! its own process group, which pablo signals and then checks empty; an editor terminal's process
//! belongs to the editor (possibly on another machine), and `terminal/kill` is a request the
//! editor carries out as it sees fit. A command that starts daemons in an editor terminal may
//! leave them running; the result says so when the command was killed.
//!
//! Background sessions and PTY commands always run locally: an editor terminal takes no input
//! from pablo, so `shell.session` could neither send keys nor close stdin.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::ToolContext;
use super::shell_report::CommandReport;
use pablo_core::editor::{Editor, EditorError, TerminalCommand, TerminalExit, TerminalOutput};
use pablo_core::{ErrorCode, ToolFailure};
use pablo_process::capture::{ARTIFACT_MAX_BYTES, Capture, CaptureResult};
use pablo_process::{CleanupTimes, session::model_text};
use pablo_protocol::Event;

/// Where `env` is looked for, in order; the first that exists is used (the first otherwise).
const ENV_PROGRAMS: &[&str] = &["/usr/bin/env", "/bin/env"];

/// `sh -c 'exec "$@" </dev/null' sh LAUNCHER -c COMMAND`: the launcher runs with stdin closed.
const STDIN_CLOSER: &[&str] = &["/bin/sh", "-c", "exec \"$@\" </dev/null", "sh"];

/// The shortest time given to the final `terminal/release`, even when the cleanup allowance is
/// spent: a terminal left unreleased stays allocated in the editor.
const RELEASE_MIN: Duration = Duration::from_millis(500);

/// One foreground command to run in an editor terminal.
#[derive(Debug, Clone)]
pub(crate) struct TerminalRun {
    pub(crate) launcher: String,
    pub(crate) command: String,
    /// Absolute, already resolved and checked inside the workspace.
    pub(crate) cwd: PathBuf,
    /// The command's environment (`CommandEnv::for_command`), in order.
    pub(crate) env: Vec<(String, String)>,
    pub(crate) timeout: Duration,
    pub(crate) max_output_bytes: usize,
    /// Where the output is spilled when it exceeds `max_output_bytes`.
    pub(crate) artifact_path: PathBuf,
    pub(crate) cleanup: CleanupTimes,
}

/// The `env` program to hand the editor.
fn env_program() -> &'static str {
    ENV_PROGRAMS
        .iter()
        .copied()
        .find(|p| Path::new(p).is_file())
        .unwrap_or(ENV_PROGRAMS[0])
}

/// The program and arguments that run `run.command` with exactly `run.env` and nothing of the
/// editor's environment: `env -i NAME=VALUE… LAUNCHER -c COMMAND`.
pub(crate) fn terminal_command(run: &TerminalRun) -> Result<TerminalCommand, ToolFailure> {
    // `env` reads every leading word with a `=` as an assignment, so such a launcher would be
    // taken for one and the command would run under something else.
    if run.launcher.contains('=') || run.launcher.starts_with('-') || run.launcher.is_empty() {
        return Err(ToolFailure::new(
            ErrorCode::InvalidLauncher,
            format!(
                "the shell launcher {:?} cannot be passed to an editor terminal through env \
                 (it is empty, starts with '-' or contains '=')",
                run.launcher
            ),
        ));
    }
    let mut args = Vec::with_capacity(run.env.len() + 8);
    args.push("-i".to_string());
    args.extend(run.env.iter().map(|(k, v)| format!("{k}={v}")));
    // An editor terminal's stdin is a terminal nobody types in; a command reading it would wait
    // for its timeout. A fixed sh closes it (the command gets /dev/null, as in a local run) and
    // execs the launcher with the command untouched.
    args.extend(STDIN_CLOSER.iter().map(|a| a.to_string()));
    args.push(run.launcher.clone());
    args.push("-c".to_string());
    args.push(run.command.clone());
    Ok(TerminalCommand {
        program: env_program().to_string(),
        args,
        // Rebuilt from its components: the workspace root comes as `root/`, and an editor shows
        // the directory it was given.
        cwd: run.cwd.components().collect(),
        output_byte_limit: ARTIFACT_MAX_BYTES,
    })
}

/// How the wait for the command ended.
enum End {
    Exited(TerminalExit),
    TimedOut,
    Cancelled,
    Failed(EditorError),
}

/// A request bounded by `deadline`; `None` when the editor did not answer in time.
async fn bounded<T>(
    deadline: Instant,
    request: impl Future<Output = Result<T, EditorError>>,
) -> Option<Result<T, EditorError>> {
    tokio::time::timeout_at(deadline.into(), request).await.ok()
}

/// Runs `run` in a new terminal of `editor`, to its end, and returns the result the model reads
/// (the shape of a local run's, plus `terminal`). A cancelled turn is the `cancelled` failure with
/// the same data; an editor that refuses or fails a request is `editor_terminal_failed`.
pub(crate) async fn run_in_terminal(
    editor: &dyn Editor,
    run: TerminalRun,
    ctx: &ToolContext,
) -> Result<CommandReport, ToolFailure> {
    let command = terminal_command(&run)?;
    let started = Instant::now();
    let create = editor.create_terminal(&command);
    tokio::pin!(create);
    let created = tokio::select! {
        biased;
        r = &mut create => Some(r),
        // The editor may start the command anyway: wait a little for its id, so that the
        // terminal is still killed and released (`follow` sees the cancellation at once).
        () = ctx.cancel.cancelled() => {
            bounded(Instant::now() + run.cleanup.allowance, &mut create).await
        }
    };
    let terminal = match created {
        Some(Ok(id)) => id,
        Some(Err(e)) if !ctx.cancel.is_cancelled() => return Err(e.into()),
        _ => {
            return Err(ToolFailure::new(
                ErrorCode::Cancelled,
                "the turn was interrupted before the editor started the command",
            ));
        }
    };
    ctx.events.send(Event::ToolTerminal {
        call_id: ctx.call_id.clone(),
        terminal_id: terminal.clone(),
    });
    let result = follow(editor, &terminal, &run, ctx, started).await;
    let deadline = Instant::now() + run.cleanup.allowance;
    release(editor, &terminal, deadline).await;
    result
}

/// Frees the terminal, best effort: nothing more can be done if the editor refuses.
async fn release(editor: &dyn Editor, terminal: &str, deadline: Instant) {
    let deadline = deadline.max(Instant::now() + RELEASE_MIN);
    if let Some(Err(e)) = bounded(deadline, editor.release_terminal(terminal)).await {
        tracing::warn!(terminal, error = %e, "the editor did not release its terminal");
    }
}

/// From a started terminal to the result: the wait, the kill when needed, the output.
async fn follow(
    editor: &dyn Editor,
    terminal: &str,
    run: &TerminalRun,
    ctx: &ToolContext,
    started: Instant,
) -> Result<CommandReport, ToolFailure> {
    let end = tokio::select! {
        // A turn cancelled while the terminal was being created ends it at once.
        biased;
        () = ctx.cancel.cancelled() => End::Cancelled,
        r = editor.wait_for_exit(terminal) => match r {
            Ok(exit) => End::Exited(exit),
            Err(e) => End::Failed(e),
        },
        () = tokio::time::sleep(run.timeout) => End::TimedOut,
    };
    let duration = started.elapsed();
    let deadline = Instant::now() + run.cleanup.allowance;
    if let End::Failed(e) = end {
        // pablo no longer knows whether the command runs: end it before reporting the failure.
        let _ = bounded(deadline, editor.kill_terminal(terminal)).await;
        return Err(e.into());
    }
    let mut notes: Vec<String> = Vec::new();
    let mut exit = match &end {
        End::Exited(exit) => Some(exit.clone()),
        _ => None,
    };
    if !matches!(end, End::Exited(_)) {
        // The command is still running as far as pablo knows: ask the editor to end it.
        match bounded(deadline, editor.kill_terminal(terminal)).await {
            Some(Ok(())) => {}
            Some(Err(e)) => notes.push(format!("the editor did not kill the command: {e}")),
            None => notes.push("the editor did not answer the request to kill the command".into()),
        }
        match bounded(deadline, editor.wait_for_exit(terminal)).await {
            Some(Ok(e)) => exit = Some(e),
            Some(Err(e)) => notes.push(format!("the editor did not report the command's end: {e}")),
            None => notes.push(format!(
                "the editor did not report the command's end within {} ms; it may still be running",
                run.cleanup.allowance.as_millis()
            )),
        }
        notes.push(
            "the command ran in the editor's terminal: pablo cannot check that none of its \
             processes survived"
                .into(),
        );
    }
    let output = match bounded(deadline, editor.terminal_output(terminal)).await {
        Some(Ok(o)) => o,
        Some(Err(e)) => return Err(e.into()),
        None => {
            return Err(EditorError::Terminal {
                action: "report its output",
                message: format!("no answer within {} ms", run.cleanup.allowance.as_millis()),
            }
            .into());
        }
    };
    let exit = exit.or_else(|| output.exit.clone()).unwrap_or_default();
    let timed_out = matches!(end, End::TimedOut);
    let cancelled = matches!(end, End::Cancelled);
    let report = report(terminal, run, output, exit, timed_out, duration, notes).await?;
    if cancelled {
        return Err(ToolFailure::new(
            ErrorCode::Cancelled,
            format!(
                "the command was interrupted after {} ms; pablo asked the editor to kill it",
                duration.as_millis()
            ),
        )
        .with_data(serde_json::to_value(&report).unwrap_or(Value::Null)));
    }
    Ok(report)
}

/// The result JSON: the inline view and spill file over the editor's text, as for a local run.
async fn report(
    terminal: &str,
    run: &TerminalRun,
    output: TerminalOutput,
    exit: TerminalExit,
    timed_out: bool,
    duration: Duration,
    mut notes: Vec<String>,
) -> Result<CommandReport, ToolFailure> {
    let (max, path) = (run.max_output_bytes, run.artifact_path.clone());
    let text = output.output;
    let captured: CaptureResult = super::blocking(move || {
        let mut capture = Capture::new(max, path);
        capture.push(text.as_bytes());
        Ok::<_, ToolFailure>(capture.finish())
    })
    .await?;
    // Terminal text may carry escapes and CRLF line ends: the model reads it cleaned, as PTY
    // output.
    let shown = captured.view.render(|b| model_text(b, true));
    let mut out = CommandReport {
        exit_code: exit.exit_code,
        signal: exit.signal,
        timed_out,
        truncated: captured.view.truncated,
        duration_ms: duration.as_millis() as u64,
        total_bytes: captured.view.total,
        output: shown,
        artifact: captured.artifact.as_ref().map(|p| p.display().to_string()),
        terminal: Some(terminal.to_string()),
        artifact_error: captured.artifact_error.clone(),
        ..CommandReport::default()
    };
    if output.truncated {
        out.editor_truncated = Some(true);
        notes.insert(
            0,
            "the editor dropped the beginning of the output to stay within its limit; \
             total_bytes counts only what it kept"
                .into(),
        );
    }
    if !notes.is_empty() {
        out.note = Some(notes.join("; "));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn run(launcher: &str) -> TerminalRun {
        TerminalRun {
            launcher: launcher.into(),
            command: "echo hi; exit 3".into(),
            cwd: PathBuf::from("/ws/"),
            env: vec![
                ("PATH".into(), "/usr/bin:/bin".into()),
                ("LANG".into(), "C.UTF-8".into()),
                ("TERM".into(), "dumb".into()),
                ("PABLO_TASK_X".into(), "a=b c".into()),
            ],
            timeout: Duration::from_secs(1),
            max_output_bytes: 100,
            artifact_path: PathBuf::from("/nonexistent"),
            cleanup: CleanupTimes::default(),
        }
    }

    #[test]
    fn the_editor_gets_env_minus_i_the_clean_environment_and_the_launcher_with_the_command() {
        let c = terminal_command(&run("/bin/sh")).unwrap();
        assert!(ENV_PROGRAMS.contains(&c.program.as_str()));
        assert_eq!(
            c.args,
            [
                "-i",
                "PATH=/usr/bin:/bin",
                "LANG=C.UTF-8",
                "TERM=dumb",
                "PABLO_TASK_X=a=b c",
                "/bin/sh",
                "-c",
                "exec \"$@\" </dev/null",
                "sh",
                "/bin/sh",
                "-c",
                "echo hi; exit 3"
            ]
        );
        assert_eq!(c.cwd, PathBuf::from("/ws"));
        assert_eq!(c.output_byte_limit, ARTIFACT_MAX_BYTES);
    }

    #[test]
    fn a_launcher_env_would_misread_is_refused_with_invalid_launcher() {
        for bad in ["", "A=b", "-u"] {
            let e = terminal_command(&run(bad)).unwrap_err();
            assert_eq!(e.code, "invalid_launcher", "{bad:?}");
            assert!(e.message.contains("env"), "{}", e.message);
        }
    }
}
