//! `shell.run` (provider name `shell_run`): run one shell command, in the foreground or as a
//! background session.
//!
//! The preview is the command, its resolved working directory and its mode; the policy engine
//! parses it and decides. Commit runs exactly the previewed command in the previewed directory.
//! A non-zero exit is a result, not a failure: `grep` answering 1 is information.
//!
//! When the front-end offers terminals (an editor over ACP), a plain foreground command runs in
//! one of them instead ([`super::shell_terminal`]); background and PTY commands always run here.

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use rustix::fs::{Mode, OFlags};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::shell_report::{CommandReport, Masked, NetworkRefused, SandboxDenied};
use super::shell_terminal::{TerminalRun, run_in_terminal};
use super::wording::{self, Args as CallArgs, exit_words, line_count, lines_of};
use super::{CredentialRuleOf, Host, Tool, ToolContext, ToolResult};
use pablo_core::{Coded, ErrorCode, ToolFailure, ToolKind, ToolName};
use pablo_process::sandbox::SandboxSettings;
use pablo_process::{
    HOST_MAX_OUTPUT_BYTES, HOST_MAX_TIMEOUT, ProcessError, RunReport, RunRequest, Sandbox,
    SessionRequest, ShellSettings, SpawnSpec,
};
use pablo_protocol::describe::{CallView, ResultView, plural, seconds};
use pablo_protocol::{CommandPreview, Event, Preview, SandboxChoice, SandboxProfile};

/// What `shell.run` returns: a foreground command's report, or a background session's start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ShellRunResult {
    Started(BackgroundStart),
    Finished(Box<CommandReport>),
}

/// A background session that started (`background: true`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackgroundStart {
    pub(crate) session_id: String,
    /// Always `running`.
    #[serde(default)]
    pub(crate) status: String,
    #[serde(default)]
    pub(crate) command: String,
    #[serde(default)]
    pub(crate) cwd: String,
    #[serde(default)]
    pub(crate) pty: bool,
    #[serde(default)]
    pub(crate) notify: bool,
}

/// Said of the result of a second run without the sandbox, approved after the first failed in it.
const RERUN_NOTE: &str = "the first run failed in the sandbox; the person approved running it \
                          again without the sandbox, and this is that run's result";

impl ShellRunResult {
    pub(crate) fn exit_code(&self) -> Option<Option<i32>> {
        match self {
            ShellRunResult::Finished(r) => Some(r.exit_code),
            ShellRunResult::Started(_) => None,
        }
    }

    pub(crate) fn artifact(&self) -> Option<&str> {
        match self {
            ShellRunResult::Finished(r) => r.artifact.as_deref(),
            ShellRunResult::Started(_) => None,
        }
    }

    pub(crate) fn sandbox_denied(&self) -> Option<&SandboxDenied> {
        match self {
            ShellRunResult::Finished(r) => r.sandbox_denied.as_ref(),
            ShellRunResult::Started(_) => None,
        }
    }

    /// Marks this as the result of the run without the sandbox: its note says so (replacing the
    /// report's own note, when it has one).
    pub(crate) fn mark_unsandboxed_rerun(&mut self) {
        if let ShellRunResult::Finished(r) = self {
            match &mut r.note {
                Some(note) => *note = RERUN_NOTE.to_string(),
                None => r.rerun_note = Some(RERUN_NOTE.to_string()),
            }
        }
    }
}

pub struct ShellRun {
    settings: ShellSettings,
}

impl ShellRun {
    pub fn new(settings: ShellSettings) -> Self {
        Self { settings }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    command: String,
    cwd: Option<String>,
    timeout_ms: Option<u64>,
    max_output_bytes: Option<usize>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    background: bool,
    #[serde(default)]
    pty: bool,
    #[serde(default)]
    notify: bool,
}

fn invalid(message: String) -> ToolFailure {
    ToolFailure::new(ErrorCode::InvalidArguments, format!("shell.run: {message}"))
}

/// A foreground run as the tool's result: cancelled and cleanup failures as failures with the
/// report in their data, a sandbox denial named when the output shows one.
fn foreground_result(
    result: Result<RunReport, ProcessError>,
    pty: bool,
    profile: SandboxProfile,
    sandbox: &Sandbox,
    cwd: &Path,
) -> Result<ToolResult, ToolFailure> {
    match result {
        Ok(report) if report.cancelled => Err(ToolFailure::new(
            ErrorCode::Cancelled,
            format!(
                "the command was interrupted after {} ms; its process group was stopped",
                report.duration.as_millis()
            ),
        )
        .with_data(report_data(&self::report(&report, pty)))),
        Ok(report) => {
            let mut out = self::report(&report, pty);
            out.sandbox = Some(profile.label().to_string());
            out.network_refused = NetworkRefused::of(&report.network_refused);
            let failed = report.exit.code != Some(0) && !report.timed_out;
            if failed && let Some(d) = pablo_process::sandbox::denial(&out.output, sandbox, cwd) {
                out.sandbox_denied = Some(SandboxDenied {
                    code: ErrorCode::SandboxDenied,
                    kind: d.kind.to_string(),
                    message: d.message(profile),
                    path: d.path,
                });
            }
            Ok(ShellRunResult::Finished(Box::new(out)).into())
        }
        Err(ProcessError::CleanupFailed {
            pgid,
            survivors,
            report,
        }) => {
            let mut data = report_data(&self::report(&report, pty));
            data["pgid"] = json!(pgid);
            data["survivors"] = json!(survivors);
            let e = ProcessError::CleanupFailed {
                pgid,
                survivors,
                report,
            };
            Err(ToolFailure::new(e.code(), e.to_string()).with_data(data))
        }
        Err(e) => Err(e.into()),
    }
}

fn parse(args: &Value) -> Result<Args, ToolFailure> {
    let a: Args = serde_json::from_value(args.clone()).map_err(|e| invalid(e.to_string()))?;
    if a.command.trim().is_empty() {
        return Err(invalid("the command is empty".into()));
    }
    if a.command.contains('\0') {
        return Err(invalid("the command contains a NUL byte".into()));
    }
    if let Some(t) = a.timeout_ms {
        if t == 0 || t > HOST_MAX_TIMEOUT.as_millis() as u64 {
            return Err(invalid(format!(
                "timeout_ms {t} is outside 1..={} (15 minutes)",
                HOST_MAX_TIMEOUT.as_millis()
            )));
        }
        if a.background {
            return Err(invalid(
                "timeout_ms does not apply to a background session; use shell.session wait or kill"
                    .into(),
            ));
        }
    }
    if let Some(m) = a.max_output_bytes
        && (m == 0 || m > HOST_MAX_OUTPUT_BYTES)
    {
        return Err(invalid(format!(
            "max_output_bytes {m} is outside 1..={HOST_MAX_OUTPUT_BYTES}"
        )));
    }
    if a.notify && !a.background {
        return Err(invalid("notify only applies with background: true".into()));
    }
    // The environment is checked now so a bad name is refused before anyone is asked.
    pablo_process::env::check_additions(&a.env).map_err(ToolFailure::from)?;
    Ok(a)
}

/// Resolves a command's working directory with the file tools' rules (a relative path, no `..`,
/// no NUL or backslash) and opens it as a directory beneath the workspace root without following
/// any link, which proves it is a real directory inside the workspace. Returns the absolute path,
/// the workspace-relative form (`.` for the root) and the opened directory, which the command is
/// started in (so the check and the use are the same directory).
fn resolve_cwd(host: &Host, raw: Option<&str>) -> Result<(PathBuf, String, OwnedFd), ToolFailure> {
    let ws = &host.workspace;
    let rel = ws.parse(raw.unwrap_or(""))?;
    let dir = ws.open_beneath(&rel, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty())?;
    let label = if rel.is_root() {
        ".".to_string()
    } else {
        rel.as_str().to_string()
    };
    Ok((ws.root().join(rel.as_str()), label, dir))
}

/// What the sandbox adds to a command's environment: the session's temporary directory for
/// `workspace-write`, and for a known-safe line git's program-running settings turned off (with
/// the repository pinned when the line runs git, see `process::gitconfig::prepare`).
fn sandbox_env(
    choice: &SandboxChoice,
    settings: &SandboxSettings,
    git: Option<&pablo_process::gitconfig::KnownSafeGit>,
) -> Vec<(String, String)> {
    let mut env = Vec::new();
    if choice.profile == SandboxProfile::WorkspaceWrite
        && let Some(t) = &settings.temp_dir
        && std::fs::create_dir_all(t).is_ok()
    {
        env.push(("TMPDIR".to_string(), t.display().to_string()));
    }
    match git {
        Some(g) => env.extend(g.env.iter().cloned()),
        None if choice.known_safe => env.extend(pablo_process::sandbox::known_safe_git_env(None)),
        None => {}
    }
    env
}

/// Removes temporary files when the call is done with them.
struct RemoveOnDrop(Vec<PathBuf>);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// A file name for the spill file of one call: the call id, reduced to safe characters.
fn artifact_name(call_id: &str) -> String {
    let safe: String = call_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(64)
        .collect();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("shell-{safe}-{nanos}.log")
}

/// The result the model reads for a finished foreground command.
pub(crate) fn report(r: &RunReport, pty: bool) -> CommandReport {
    CommandReport {
        exit_code: r.exit.code,
        signal: r.exit.signal.map(pablo_process::signal_name),
        timed_out: r.timed_out,
        truncated: r.view.truncated,
        duration_ms: r.duration.as_millis() as u64,
        total_bytes: r.view.total,
        output: r
            .view
            .render(|b| pablo_process::session::model_text(b, pty)),
        artifact: r.artifact.as_ref().map(|p| p.display().to_string()),
        artifact_error: r.artifact_error.clone(),
        note: (!r.drained).then(|| {
            "a process outside the command's group still held its output open; the output may \
             be incomplete"
                .to_string()
        }),
        ..CommandReport::default()
    }
}

/// A report as the data of an error (a cancelled or not cleaned-up run).
fn report_data(r: &CommandReport) -> Value {
    serde_json::to_value(r).unwrap_or(Value::Null)
}

impl ShellRun {
    /// The command's environment: the configured one, without git's and rg's variables for a
    /// known-safe read (pablo points them at its sanitised configs), plus the sandbox's.
    fn command_env(
        &self,
        a: &Args,
        pty: bool,
        choice: &SandboxChoice,
        git: Option<&pablo_process::gitconfig::KnownSafeGit>,
        ctx: &ToolContext,
    ) -> Result<Vec<(String, String)>, ToolFailure> {
        let settings = &ctx.host.sandbox;
        let mut env = self.settings.env.for_command(&a.env, pty)?;
        if choice.known_safe {
            // The repository, its objects and its config are git's choice only through pablo.
            env.retain(|(k, _)| {
                !pablo_process::gitrepo::is_git_variable(k) && k != "RIPGREP_CONFIG_PATH"
            });
            // rg leaves credential files out (the policy relies on it for `rg` unasked).
            let rg = pablo_process::gitconfig::ripgrep_config(
                &ctx.host.state_dir.join("git"),
                ctx.host.workspace.credential_names().patterns(),
            )
            .map_err(|e| {
                ToolFailure::new(
                    ErrorCode::SandboxFailed,
                    format!("the known-safe read was not run: {e}"),
                )
            })?;
            env.push(("RIPGREP_CONFIG_PATH".into(), rg.display().to_string()));
        }
        env.extend(sandbox_env(choice, settings, git));
        Ok(env)
    }
}

#[async_trait]
impl Tool for ShellRun {
    fn name(&self) -> &'static str {
        ToolName::ShellRun.native()
    }

    fn provider_name(&self) -> &'static str {
        ToolName::ShellRun.provider()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }

    fn description(&self) -> String {
        let launcher = &self.settings.launcher;
        let dialect = if self.settings.launcher_is_posix_sh() {
            format!(
                "Commands run as `{launcher} -c COMMAND`: a POSIX sh, not bash (on Debian it is \
                 dash). Write portable commands: `cmd > f 2>&1`, not `cmd &> f` (in sh that \
                 backgrounds cmd and truncates f); `[ ... ]`, not `[[ ... ]]`; no `<<<`; `.` \
                 instead of `source`."
            )
        } else {
            format!("Commands run as `{launcher} -c COMMAND`.")
        };
        format!(
            "Run a shell command in the workspace. {dialect} Stdin is closed; stdout and stderr \
             are merged in order. The environment has your PATH and toolchain variables but no HOME and no \
             secrets; add variables with env, names beginning PABLO_TASK_. Prefer cwd over `cd`. Chain \
             dependent steps with &&. Default timeout {} s, at most 15 min (timeout_ms). A \
             non-zero exit_code is information, not a failure (grep returns 1 when nothing \
             matches). Output above max_output_bytes (default {}) keeps the first 40% and the \
             last 60% around a truncation notice; the full stream (up to 5,000,000 bytes) is in \
             the file named by artifact. For servers, watchers and interactive programs use \
             background: true (returns a session_id at once; see shell_session), with pty: true \
             for programs that need a terminal, and notify: true to be told when it exits.",
            self.settings.default_timeout.as_secs(),
            self.settings.max_output_bytes,
        )
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "minLength": 1, "description": "The command line."},
                "cwd": {"type": "string", "description": "Working directory relative to the workspace (default: its root)."},
                "timeout_ms": {"type": "integer", "minimum": 1, "maximum": HOST_MAX_TIMEOUT.as_millis() as u64, "description": "Foreground timeout in milliseconds."},
                "max_output_bytes": {"type": "integer", "minimum": 1, "maximum": HOST_MAX_OUTPUT_BYTES, "description": "Inline output budget in bytes."},
                "env": {
                    "type": "object",
                    "patternProperties": {"^PABLO_TASK_[A-Za-z0-9_]+$": {"type": "string"}},
                    "additionalProperties": false,
                    "description": "Extra environment variables; names must begin with PABLO_TASK_."
                },
                "background": {"type": "boolean", "description": "Start as a background session and return its session_id at once."},
                "pty": {"type": "boolean", "description": "Run under a pseudo-terminal."},
                "notify": {"type": "boolean", "description": "With background: report when the session exits."}
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    async fn preview(&self, args: &Value, ctx: &ToolContext) -> Result<Preview, ToolFailure> {
        let a = parse(args)?;
        let (_, cwd, _) = resolve_cwd(&ctx.host, a.cwd.as_deref())?;
        Ok(Preview::Command(CommandPreview {
            command: a.command,
            cwd,
            background: a.background,
            pty: a.pty,
            commands: vec![],
            sandbox: None,
        }))
    }

    async fn commit_result(
        &self,
        args: &Value,
        preview: &Preview,
        ctx: &ToolContext,
    ) -> Result<ToolResult, ToolFailure> {
        let a = parse(args)?;
        let Preview::Command(p) = preview else {
            return Err(ToolFailure::new(
                ErrorCode::Internal,
                "shell.run was given a preview that is not a command",
            ));
        };
        // Run what was previewed: its command, its directory (checked again now), its mode.
        let cwd_arg = (p.cwd != ".").then_some(p.cwd.as_str());
        let (cwd, cwd_label, cwd_handle) = resolve_cwd(&ctx.host, cwd_arg)?;
        let settings = &ctx.host.sandbox;
        let choice = p
            .sandbox
            .clone()
            .unwrap_or_else(|| settings.default_choice());
        let mut sandbox = settings.sandbox(&choice, &ctx.host.workspace_root);
        let mut git = None;
        if choice.known_safe
            && let Some(program) = p.commands.iter().find_map(|c| {
                c.executable
                    .as_deref()
                    .filter(|e| e.rsplit('/').next() == Some("git"))
            })
        {
            // Written where no command can change it between now and the mount.
            let prepared = pablo_process::gitconfig::prepare(
                std::path::Path::new(program),
                &ctx.host.workspace_root,
                &cwd,
                &ctx.host.state_dir.join("git"),
                ctx.host.workspace.credential_names().patterns(),
            )
            .map_err(|e| {
                ToolFailure::new(
                    ErrorCode::SandboxFailed,
                    format!("the known-safe git read was not run: {e}"),
                )
            })?;
            sandbox.overlays = prepared.overlays.clone();
            git = Some(prepared);
        }
        let env = self.command_env(&a, p.pty, &choice, git.as_ref(), ctx)?;
        let masked = if choice.credentials_masked {
            let plan = credential_mask(&env, ctx)?;
            sandbox.hidden_dirs = plan.dirs.clone();
            sandbox.hidden_files = plan.files.clone();
            Some(Box::new(Masked::of(&plan)))
        } else {
            None
        };
        let spawn = SpawnSpec {
            launcher: self.settings.launcher.clone(),
            command: p.command.clone(),
            cwd: cwd.clone(),
            cwd_handle: Some(std::sync::Arc::new(cwd_handle)),
            env,
            pty: p.pty,
            stdin: p.background,
            sandbox,
        };
        // A sanitised git config is bound into the command's mount namespace when it starts;
        // the file itself is not needed after that (the mount keeps it).
        let overlays: Vec<PathBuf> = git.map(|g| g.files).unwrap_or_default();
        let _cleanup = RemoveOnDrop(overlays);
        if p.background {
            let id = ctx.host.sessions.start(
                SessionRequest {
                    spawn,
                    cwd_label: cwd_label.clone(),
                    notify: a.notify,
                },
                ctx.events.clone(),
            )?;
            return Ok(ShellRunResult::Started(BackgroundStart {
                session_id: id,
                status: "running".into(),
                command: p.command.clone(),
                cwd: cwd_label,
                pty: p.pty,
                notify: a.notify,
            })
            .into());
        }
        let timeout = a
            .timeout_ms
            .map(Duration::from_millis)
            .unwrap_or(self.settings.default_timeout)
            .min(HOST_MAX_TIMEOUT);
        let artifact_path = ctx
            .host
            .state_dir
            .join("artifacts")
            .join(artifact_name(&ctx.call_id));
        // A plain foreground command runs in the editor's terminal when it offers one (PTY
        // commands stay here: an editor terminal takes no input). That terminal is outside
        // pablo's sandbox, so a sandboxed command stays here unless config says otherwise.
        // A known-safe read was allowed because it runs in the read-only sandbox: never there.
        let unsandboxed_ok = choice.profile == SandboxProfile::Off
            || (settings.editor_terminals && !choice.known_safe);
        if !p.pty
            && unsandboxed_ok
            && let Some(editor) = ctx.host.editor_for(|c| c.terminals)
        {
            let run = TerminalRun {
                launcher: spawn.launcher,
                command: spawn.command,
                cwd: spawn.cwd,
                env: self.settings.env.for_command(&a.env, false)?,
                timeout,
                max_output_bytes: a.max_output_bytes.unwrap_or(self.settings.max_output_bytes),
                artifact_path,
                cleanup: self.settings.cleanup,
            };
            return run_in_terminal(editor, run, ctx)
                .await
                .map(|r| ShellRunResult::Finished(Box::new(r)).into());
        }
        let sandbox = spawn.sandbox.clone();
        let req = RunRequest {
            spawn,
            timeout,
            max_output_bytes: a.max_output_bytes.unwrap_or(self.settings.max_output_bytes),
            artifact_path,
            cleanup: self.settings.cleanup,
        };
        let events = ctx.events.clone();
        let call_id = ctx.call_id.clone();
        let result = pablo_process::run_foreground(req, &ctx.cancel, |chunk| {
            events.send(Event::ToolOutputDelta {
                call_id: call_id.clone(),
                chunk,
            });
        })
        .await;
        let mut result = foreground_result(result, p.pty, choice.profile, &sandbox, &cwd)?;
        if let ToolResult::Command(ShellRunResult::Finished(r)) = &mut result {
            r.masked = masked;
        }
        Ok(result)
    }
}

/// The mask of a command about to run with environment `env`.
fn credential_mask(
    env: &[(String, String)],
    ctx: &ToolContext,
) -> Result<pablo_process::mask::MaskPlan, ToolFailure> {
    let var = |name: &str| {
        env.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    };
    let settings = &ctx.host.sandbox;
    let path_dirs = var("PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|d| d.starts_with('/'))
        .map(PathBuf::from)
        .collect();
    let toolchain_homes = ["CARGO_HOME", "RUSTUP_HOME"]
        .iter()
        .filter_map(|n| var(n))
        .filter(|v| v.starts_with('/'))
        .map(PathBuf::from)
        .collect();
    let support = ctx.host.state_dir.join("git");
    pablo_process::mask::plan(&pablo_process::mask::MaskInputs {
        workspace: &ctx.host.workspace_root,
        home: settings.home.as_deref(),
        path_dirs,
        toolchain_homes,
        own: &settings.protected_dirs,
        support: Some(&support),
        credentials: &CredentialRuleOf(ctx.host.workspace.credential_names()),
    })
    .map_err(|e| {
        ToolFailure::new(
            ErrorCode::SandboxFailed,
            format!(
                "the read was not run: {e}; name a narrower path, or ask for it to be approved"
            ),
        )
    })
}

pub(crate) fn show_call(args: CallArgs<'_>) -> CallView {
    let title = format!("Run {}", args.clipped("command").unwrap_or_default());
    CallView {
        command: true,
        ..wording::call(args, title, args.text("command"))
    }
}

/// `exited 1 after 1.2 s, 3 lines` and the output, or the background session that started.
pub(crate) fn show_result(data: &Value) -> Option<ResultView> {
    let r: ShellRunResult = wording::typed(data)?;
    let r = match r {
        ShellRunResult::Started(s) => {
            return Some(ResultView::line(format!(
                "started background session {}",
                s.session_id
            )));
        }
        ShellRunResult::Finished(r) => r,
    };
    // A report without a duration (an older journal's) says nothing of how long it took.
    let took = data
        .get("duration_ms")
        .is_some()
        .then(|| seconds(Duration::from_millis(r.duration_ms)));
    let mut headline = if r.timed_out {
        format!("timed out after {}", took.clone().unwrap_or_default())
    } else {
        let mut h = exit_words(r.exit_code, r.signal.as_deref());
        if let Some(t) = &took {
            h.push_str(&format!(" after {t}"));
        }
        h
    };
    headline.push_str(&format!(
        ", {}",
        plural(line_count(&r.output) as u64, "line")
    ));
    if r.truncated {
        headline.push_str(" (middle cut; the whole output is saved)");
    }
    Some(ResultView {
        exit_code: r.exit_code.map(i64::from),
        ..ResultView::lines(headline, lines_of(&r.output))
    })
}
