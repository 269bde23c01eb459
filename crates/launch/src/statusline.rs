//! `[tui] statusline_command`: the person's own program for the status line.
//!
//! The TUI hands it the session's state as JSON on stdin, in the shape Claude Code gives its
//! status line command (its field names, so a script written for one works with the other), with
//! pablo's own figures under `pablo`; the first line the program prints is shown. It runs the way
//! hooks run (`hooks::run`): `sh -c` in the workspace, with the environment commands get (no
//! provider key, nothing that looks secret) and the person's `HOME`, pablo's own directories
//! read-only, its output bounded and redacted, and killed with everything it started after
//! [`TIMEOUT`]. A program named by a repository's `.pablo/config.toml` counts only once the
//! folder is trusted: an untrusted project layer is read without it (it is not among the keys
//! known to narrow, `config::trust::KEPT`), and `pablo policy trust` lists it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::Launch;
use pablo_hooks::run::RunEnd;
use pablo_hooks::{Hook, Hooks};
use pablo_policy::PolicyEngine;

/// How long one run may take; a slower one is killed and the line shown before stays.
pub const TIMEOUT: Duration = Duration::from_secs(1);

/// What the status line command reads on stdin. Claude Code's fields, then pablo's own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatuslineInput {
    /// Always `Status`.
    pub hook_event_name: &'static str,
    pub session_id: String,
    /// The session's journal (JSON lines), once the session has an id.
    pub transcript_path: Option<String>,
    pub cwd: String,
    pub model: StatuslineModel,
    pub workspace: StatuslineWorkspace,
    /// pablo's version.
    pub version: &'static str,
    pub output_style: OutputStyle,
    pub cost: StatuslineCost,
    pub context_window: StatuslineContext,
    /// Whether the last request's input passed 200,000 tokens.
    pub exceeds_200k_tokens: bool,
    pub pablo: PabloStatus,
}

impl Default for StatuslineInput {
    fn default() -> Self {
        Self {
            hook_event_name: "Status",
            session_id: String::new(),
            transcript_path: None,
            cwd: String::new(),
            model: StatuslineModel::default(),
            workspace: StatuslineWorkspace::default(),
            version: env!("CARGO_PKG_VERSION"),
            output_style: OutputStyle {
                name: "default".into(),
            },
            cost: StatuslineCost::default(),
            context_window: StatuslineContext::default(),
            exceeds_200k_tokens: false,
            pablo: PabloStatus::default(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StatuslineModel {
    pub id: String,
    /// pablo has no display names: the model's name again.
    pub display_name: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StatuslineWorkspace {
    pub current_dir: String,
    pub project_dir: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OutputStyle {
    pub name: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StatuslineCost {
    /// The session's cost at the models' prices (0 when none are known).
    pub total_cost_usd: f64,
    /// Since this screen opened.
    pub total_duration_ms: u64,
    /// `null`: pablo does not time the model's answers apart from the rest of a turn.
    pub total_api_duration_ms: Option<u64>,
    /// Lines that `fs.write` and `fs.edit` changes added and removed, as their diffs counted.
    pub total_lines_added: u64,
    pub total_lines_removed: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StatuslineContext {
    /// The session's tokens.
    pub total_input_tokens: u64,
    pub total_output_tokens: u64,
    /// The model's context window, once a call reported it.
    pub context_window_size: Option<u64>,
    /// The last request's share of the window, in whole percent.
    pub used_percentage: Option<u64>,
    pub remaining_percentage: Option<u64>,
}

/// pablo's own figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PabloStatus {
    pub provider: String,
    /// `ask`, `auto-edit` or `plan`.
    pub mode: pablo_protocol::WorkMode,
    /// The last request's input tokens and the model's window.
    pub context_tokens: Option<u64>,
    pub context_window: Option<u64>,
    /// Turns of the session, and whether one runs now.
    pub turns: u64,
    pub turn_running: bool,
    /// The model calls of the last turn that ended (its subagents' and retries included).
    pub last_turn_model_calls: Option<u64>,
    /// `--max-budget-usd`, and what this run of the session has spent against it.
    pub spend_cap_usd: Option<f64>,
    pub spent_usd: Option<f64>,
    /// Background shell sessions still running.
    pub background_sessions: u64,
}

/// The person's status line program, ready to run.
#[derive(Debug, Clone)]
pub struct StatusLine {
    runner: Arc<Hooks>,
    program: Hook,
    /// Where the session journals are (`transcript_path`).
    sessions: PathBuf,
    /// When the screen opened (`total_duration_ms`).
    started: Instant,
}

impl StatusLine {
    /// Runs the program once with `input`: the first line it printed (empty when it printed
    /// none), or `None` when it failed, ran past [`TIMEOUT`] or could not start, so the line
    /// shown before stays.
    pub async fn run(&self, mut input: StatuslineInput) -> Option<String> {
        if !input.session_id.is_empty() {
            let path = self.sessions.join(format!("{}.jsonl", input.session_id));
            input.transcript_path = Some(path.display().to_string());
        }
        input.cost.total_duration_ms = self.started.elapsed().as_millis() as u64;
        let value = serde_json::to_value(&input).ok()?;
        let ran = self.runner.run(&self.program, &value).await;
        match ran.end {
            RunEnd::Exited(0) => Some(first_line(&ran.stdout).to_string()),
            end => {
                tracing::debug!(?end, "the status line command failed; the last line stays");
                None
            }
        }
    }
}

/// The first line of `out`, without its line end.
fn first_line(out: &str) -> &str {
    out.split('\n').next().unwrap_or("").trim_end_matches('\r')
}

impl Launch {
    /// The person's `[tui] statusline_command`, when one is set (a project's only in a trusted
    /// folder), ready to run with the environment `policy` gives programs pablo starts.
    pub fn statusline(&self, policy: &PolicyEngine) -> Option<StatusLine> {
        let command = self
            .layers
            .last(|c| c.tui.statusline_command.clone())
            .filter(|c| !c.trim().is_empty())?;
        let runner = Hooks::for_programs(self.started_program_env(policy), self.workspace.clone())
            .protecting(self.own_dirs());
        Some(StatusLine {
            runner: Arc::new(runner),
            program: Hook::program("statusline", &command, TIMEOUT, "[tui] statusline_command"),
            sessions: self.dirs.data.join("sessions"),
            started: Instant::now(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_input_has_claude_codes_fields_and_pablos_under_pablo() {
        let input = StatuslineInput {
            session_id: "s1".into(),
            cwd: "/w".into(),
            model: StatuslineModel {
                id: "gpt-5".into(),
                display_name: "gpt-5".into(),
            },
            workspace: StatuslineWorkspace {
                current_dir: "/w".into(),
                project_dir: "/w".into(),
            },
            cost: StatuslineCost {
                total_cost_usd: 0.25,
                total_lines_added: 3,
                total_lines_removed: 1,
                ..StatuslineCost::default()
            },
            context_window: StatuslineContext {
                total_input_tokens: 1200,
                total_output_tokens: 80,
                context_window_size: Some(200_000),
                used_percentage: Some(1),
                remaining_percentage: Some(99),
            },
            pablo: PabloStatus {
                provider: "openai".into(),
                turns: 2,
                last_turn_model_calls: Some(3),
                spend_cap_usd: Some(2.0),
                ..PabloStatus::default()
            },
            ..StatuslineInput::default()
        };
        let v = serde_json::to_value(&input).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "hook_event_name": "Status",
                "session_id": "s1",
                "transcript_path": null,
                "cwd": "/w",
                "model": {"id": "gpt-5", "display_name": "gpt-5"},
                "workspace": {"current_dir": "/w", "project_dir": "/w"},
                "version": env!("CARGO_PKG_VERSION"),
                "output_style": {"name": "default"},
                "cost": {
                    "total_cost_usd": 0.25,
                    "total_duration_ms": 0,
                    "total_api_duration_ms": null,
                    "total_lines_added": 3,
                    "total_lines_removed": 1
                },
                "context_window": {
                    "total_input_tokens": 1200,
                    "total_output_tokens": 80,
                    "context_window_size": 200000,
                    "used_percentage": 1,
                    "remaining_percentage": 99
                },
                "exceeds_200k_tokens": false,
                "pablo": {
                    "provider": "openai",
                    "mode": "ask",
                    "context_tokens": null,
                    "context_window": null,
                    "turns": 2,
                    "turn_running": false,
                    "last_turn_model_calls": 3,
                    "spend_cap_usd": 2.0,
                    "spent_usd": null,
                    "background_sessions": 0
                }
            })
        );
    }

    #[test]
    fn only_the_first_line_is_shown() {
        assert_eq!(first_line("one\r\ntwo\n"), "one");
        assert_eq!(first_line(""), "");
        assert_eq!(first_line("\nsecond"), "");
    }
}
