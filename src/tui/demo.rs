//! `pablo demo`: the real TUI, agent and tools on a scratch copy of a small sample project, driven
//! by the scripted model. No key, no network; the person answers the prompts and the script adapts.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{ExitSummary, TuiError, TuiOptions};
use crate::core::ApprovalMode;
use crate::launch::{Launch, LaunchOptions};
use crate::model::scripted::ScriptedModel;

/// The sample project, built into the binary so the demo works from any directory.
const PROJECT: &[(&str, &str)] = &[
    (
        "README.md",
        include_str!("../../assets/demo/project/README.md"),
    ),
    (
        "bin/stats.sh",
        include_str!("../../assets/demo/project/bin/stats.sh"),
    ),
    (
        "bin/watch.sh",
        include_str!("../../assets/demo/project/bin/watch.sh"),
    ),
    (
        "tests/run.sh",
        include_str!("../../assets/demo/project/tests/run.sh"),
    ),
    (
        "data/numbers.txt",
        include_str!("../../assets/demo/project/data/numbers.txt"),
    ),
    (
        "data/one.txt",
        include_str!("../../assets/demo/project/data/one.txt"),
    ),
];

#[derive(Debug, Clone, Default)]
pub struct DemoOptions {
    /// Where to put the project copy (default: a new directory under the system temp dir). It
    /// must not exist yet, or be empty.
    pub dir: Option<PathBuf>,
    /// Keep the copy after quitting (always kept when `dir` is given).
    pub keep: bool,
    /// Flags shared with the other front-ends (workspace and provider flags are ignored).
    pub launch: LaunchOptions,
}

/// Writes the sample project into `dir`.
pub fn write_project(dir: &Path) -> std::io::Result<()> {
    for (rel, text) in PROJECT {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, text)?;
    }
    Ok(())
}

fn scratch_dir() -> PathBuf {
    let id = uuid::Uuid::now_v7().simple().to_string();
    std::env::temp_dir().join(format!("pablo-demo-{}", &id[id.len() - 8..]))
}

/// Runs the demo; returns the summary to print.
pub async fn run_demo(options: DemoOptions) -> Result<ExitSummary, TuiError> {
    let keep = options.keep || options.dir.is_some();
    let dir = options.dir.clone().unwrap_or_else(scratch_dir);
    if dir.exists()
        && std::fs::read_dir(&dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(TuiError::Demo(format!(
            "{} already exists and is not empty; the demo writes its project into a new directory",
            dir.display()
        )));
    }
    write_project(&dir).map_err(|e| {
        TuiError::Demo(format!(
            "cannot write the sample project to {}: {e}",
            dir.display()
        ))
    })?;
    let result = run_in(&dir, options).await;
    let mut summary = result?;
    if keep {
        summary
            .notes
            .push(format!("the demo project is kept in {}", dir.display()));
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(summary)
}

async fn run_in(dir: &Path, options: DemoOptions) -> Result<ExitSummary, TuiError> {
    let mut launch_options = options.launch;
    launch_options.workspace = Some(dir.to_path_buf());
    launch_options.allow_write = true;
    launch_options.no_filesystem = false;
    let mut launch = Launch::prepare(launch_options)?;
    let model = ScriptedModel::demo().map_err(|e| TuiError::Demo(e.to_string()))?;
    let task = model.script().task.clone();
    let session_id = Launch::new_session_id();
    let setup = launch.agent_setup(session_id, Arc::new(model), ApprovalMode::Interactive)?;
    let tui = TuiOptions {
        initial_prompt: task,
        policy_mode: "demo · edits and commands ask".into(),
        resume_command: None,
        startup_events: launch.warning_events(),
    };
    super::run(setup, tui).await
}
