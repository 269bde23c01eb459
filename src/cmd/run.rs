//! `pablo run`: one task, headless. Without `--json` stdout carries only the final answer (so it
//! can be redirected into a file) and progress goes to stderr; `--output-last-message FILE` keeps
//! the answer in a file as well, in either mode.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::{Common, Front, find_session, resume_workspace};
use pablo::core::ApprovalMode;
use pablo::launch::{self, Launch};

/// What `pablo run` was asked for, beyond the common flags.
pub struct RunArgs {
    pub(crate) task: String,
    pub(crate) json: bool,
    pub(crate) auto_approve: bool,
    pub(crate) resume: Option<String>,
    pub(crate) worktree: Option<String>,
    pub(crate) output_last_message: Option<PathBuf>,
}

pub(crate) async fn run(mut common: Common, args: RunArgs) -> Result<ExitCode> {
    let RunArgs {
        task,
        json,
        auto_approve,
        resume,
        worktree,
        output_last_message,
    } = args;
    // Nothing to do is the person's mistake, said before a model is called (or paid for).
    if task.trim().is_empty() {
        return Err(crate::Refusal::new(
            pablo::core::ErrorCode::UsageError,
            "the task is empty: give pablo run something to do (`pablo run \"fix the failing test\"`)",
        )
        .into());
    }
    // SIGTERM is taken from here on: the turn is cancelled and awaited, the run ends with an
    // `error` line and exit 143, and the session's temporary files are removed on the way out.
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    if let Some(name) = &worktree {
        super::worktree::enter(&mut common, name)?;
    }
    let resumed = match &resume {
        Some(id) => Some(find_session(&common, Some(id), false)?),
        None => None,
    };
    let options = match &resumed {
        Some((id, workspace)) => resume_workspace(&common, id, workspace.clone())?,
        None => common.launch_options(Front::Headless),
    };
    let launch = Launch::prepare(options)?;
    // Said once, on stderr: stdout is the run's own output (and its JSON lines).
    let trust_notice = launch.trust_notice().map(str::to_string);
    if let Some(note) = &trust_notice {
        eprintln!("pablo: warning: {note}");
    }
    if let Some(endpoint) = launch.project_endpoint() {
        eprintln!("pablo: this folder's trusted project config sends requests to {endpoint}");
    }
    for note in crate::start_telemetry(&launch) {
        eprintln!("pablo: warning: {note}");
    }
    let model = launch.model().await?;
    // Said on stderr: stdout is the run's output (and its JSON lines).
    if let Some(note) = launch::unknown_model_note(model.as_ref()) {
        eprintln!("pablo: note: {note}");
    }
    let approvals = if auto_approve {
        ApprovalMode::ApproveAsks
    } else {
        ApprovalMode::RefuseAsks
    };
    let (mut setup, mut preamble) = match resumed {
        Some((id, _)) => {
            let (setup, state) = launch.resume_setup(&id, model, approvals, None, &mut |_| {})?;
            (setup, state.start_events())
        }
        None => (
            launch.agent_setup_for_task(Launch::new_session_id(), model, approvals)?,
            Vec::new(),
        ),
    };
    // Settings that were ignored (an untrusted project layer, …) are said before anything runs;
    // the untrusted project's note was said on stderr already.
    setup.warnings.retain(|w| Some(w) != trust_notice.as_ref());
    preamble.extend(setup.warning_events());
    let handle = launch::spawn(setup.value);
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr();
    let live = !json && stderr.is_terminal();
    let interrupt = async move {
        use pablo::headless::Stop;
        let Some(mut term) = term else {
            let _ = tokio::signal::ctrl_c().await;
            return Stop::Interrupt;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => Stop::Interrupt,
            _ = term.recv() => Stop::Terminate,
        }
    };
    let output = pablo::headless::Output {
        out: &mut stdout,
        progress: &mut stderr,
        json,
        live,
    };
    let outcome = pablo::headless::run(handle, preamble, task, output, interrupt).await;
    if let Some(path) = &output_last_message {
        write_last_message(path, outcome.last_message.as_deref().unwrap_or(""))?;
    }
    Ok(ExitCode::from(outcome.exit_code.clamp(0, 255) as u8))
}

/// `--output-last-message FILE`: the answer (empty when the run ended without one), written
/// whole (a reader never sees half of it).
fn write_last_message(path: &std::path::Path, text: &str) -> Result<()> {
    let mut body = text.trim_end_matches('\n').to_string();
    if !body.is_empty() {
        body.push('\n');
    }
    super::sessions::write_whole(path, &body)
}
