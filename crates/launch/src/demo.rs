//! `pablo demo`: the real agent and tools on a scratch copy of a small sample project, driven by
//! the scripted model. No key, no network; the person answers the prompts and the script adapts.
//! This module composes that engine; the TUI that shows it is the same one `pablo` starts.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{AgentSetup, Launch, LaunchError, LaunchOptions};
use pablo_core::ApprovalMode;
use pablo_model::scripted::ScriptedModel;
use pablo_protocol::Event;

/// The sample project, built into the binary so the demo works from any directory.
const PROJECT: &[(&str, &str)] = &[
    (
        "README.md",
        include_str!("../../../assets/demo/project/README.md"),
    ),
    (
        "bin/stats.sh",
        include_str!("../../../assets/demo/project/bin/stats.sh"),
    ),
    (
        "bin/watch.sh",
        include_str!("../../../assets/demo/project/bin/watch.sh"),
    ),
    (
        "tests/run.sh",
        include_str!("../../../assets/demo/project/tests/run.sh"),
    ),
    (
        "data/numbers.txt",
        include_str!("../../../assets/demo/project/data/numbers.txt"),
    ),
    (
        "data/one.txt",
        include_str!("../../../assets/demo/project/data/one.txt"),
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
pub(crate) fn write_project(dir: &Path) -> std::io::Result<()> {
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

/// The demo's project copy. Dropped without [`ProjectCopy::keep`], it removes itself, so a demo
/// that fails to start (no terminal, a bad flag) leaves nothing behind in the temp dir.
#[derive(Debug)]
pub struct ProjectCopy {
    dir: PathBuf,
    keep: bool,
}

impl ProjectCopy {
    /// Ends the demo: the note to print when the copy is kept, `None` when it was removed.
    pub fn finish(self) -> Option<String> {
        self.keep
            .then(|| format!("the demo project is kept in {}", self.dir.display()))
    }
}

impl Drop for ProjectCopy {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A demo ready to show: the agent to start, its first prompt, what to say before it.
pub struct Demo {
    pub project: ProjectCopy,
    pub setup: AgentSetup,
    /// The scripted task, sent as the first user turn.
    pub task: Option<String>,
    pub startup_events: Vec<Event>,
    /// `[tui]` of the config layers.
    pub tui: pablo_config::TuiConfig,
}

/// Writes the project copy and composes the engine over it: the scripted model, write authority
/// (every change still asks), interactive approvals.
pub fn prepare(options: DemoOptions) -> Result<Demo, LaunchError> {
    let keep = options.keep || options.dir.is_some();
    let dir = options.dir.clone().unwrap_or_else(scratch_dir);
    if dir.exists()
        && std::fs::read_dir(&dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(LaunchError::Demo(format!(
            "{} already exists and is not empty; the demo writes its project into a new directory",
            dir.display()
        )));
    }
    // From here on the copy is ours: a failure below removes it (unless it is to be kept).
    let project = ProjectCopy {
        dir: dir.clone(),
        keep,
    };
    write_project(&dir).map_err(|e| {
        LaunchError::Demo(format!(
            "cannot write the sample project to {}: {e}",
            dir.display()
        ))
    })?;
    let mut launch_options = options.launch;
    launch_options.workspace = Some(dir.clone());
    launch_options.allow_write = true;
    launch_options.no_filesystem = false;
    let launch = Launch::prepare(launch_options)?;
    let model = ScriptedModel::demo().map_err(|e| LaunchError::Demo(e.to_string()))?;
    let task = model.script().task.clone();
    let mut setup = launch.agent_setup(
        Launch::new_session_id(),
        Arc::new(model),
        ApprovalMode::Interactive,
        None,
    )?;
    // The demo keeps no journal: its sessions stay out of `pablo sessions`, which would offer
    // to resume a scratch project that is gone.
    setup.value.recorder = None;
    Ok(Demo {
        project,
        startup_events: setup.warning_events(),
        setup: setup.value,
        task,
        tui: launch.tui_config(),
    })
}
