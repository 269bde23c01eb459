//! The `pablo` command: parses the command line and hands over to a front-end. Nothing else.

// The binary is a front-end: printing is its job.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use std::io::Write as _;

use pablo::core::{ApprovalMode, ErrorCode};
use pablo::launch::{self, Launch, LaunchOptions};
use pablo::protocol::WorkMode;
use pablo::tui::Next;

/// Prints a line to stdout. A write error (a reader that went away: `pablo sessions | head -1`)
/// ends the command through `?`; `main` treats a broken pipe as success, like ripgrep.
macro_rules! outln {
    ($($arg:tt)*) => {
        writeln!(std::io::stdout().lock(), $($arg)*)?
    };
}

/// [`outln!`] without the newline, flushed at once so the error surfaces here.
macro_rules! out {
    ($($arg:tt)*) => {{
        let mut o = std::io::stdout().lock();
        write!(o, $($arg)*)?;
        o.flush()?;
    }};
}

mod cmd;

use cmd::sessions::{choose_resume_workspace, find_session, resume_workspace};

/// `pablo --version`: the version, then the build's optimisation level (`z` for the shipped
/// release profile, `3` for `cargo bench`'s build in the same place).
const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\nbuilt with opt-level ",
    env!("PABLO_BUILD_OPT_LEVEL")
);

#[derive(Parser, Debug)]
#[command(name = "pablo", version, long_version = LONG_VERSION, about = "A terminal coding agent", long_about = None)]
struct Cli {
    #[command(flatten)]
    common: Common,
    #[command(subcommand)]
    command: Option<Command>,
    /// Work in the git worktree NAME of this repository (made from HEAD on the branch
    /// pablo/NAME unless it exists), not in the checkout (`pablo run --worktree` for a task).
    #[arg(long, value_name = "NAME")]
    worktree: Option<String>,
}

/// Flags every front-end understands.
#[derive(Args, Debug, Clone)]
struct Common {
    /// The workspace directory (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// An extra config file, applied after the user and project config.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// A static JSON policy (tool, launcher and filesystem-root rules).
    #[arg(long, global = true, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// openai | anthropic | ollama (default: detected from the environment).
    #[arg(long, global = true)]
    provider: Option<String>,
    /// The model to talk to, as the provider names it (default: the config's `[model] name`, else
    /// the provider's default).
    #[arg(long, global = true, value_name = "NAME")]
    model: Option<String>,
    /// The provider's base URL (an OpenAI-compatible server, a proxy, a local model).
    #[arg(long, global = true, value_name = "URL")]
    base_url: Option<String>,
    /// How much the model reasons before it answers (default: the config's `[model] reasoning`,
    /// else the provider's default).
    #[arg(long, global = true, value_name = "LEVEL", value_parser = ["off", "low", "medium", "high"])]
    reasoning: Option<String>,
    /// `pablo run`: offer fs.write and fs.edit, and let them change files inside the write roots
    /// without asking (the TUI and ACP always offer them, and ask).
    #[arg(long, global = true)]
    allow_write: bool,
    /// Offer no tool that changes files (fs.write, fs.edit), in every front-end.
    #[arg(long, global = true, conflicts_with = "allow_write")]
    read_only: bool,
    /// Remove the shell tools.
    #[arg(long, global = true)]
    no_shell: bool,
    /// Remove the file tools.
    #[arg(long, global = true)]
    no_filesystem: bool,
    /// At most N model calls (0 disables model calls).
    #[arg(long, global = true, value_name = "N")]
    max_model_calls: Option<u64>,
    /// At most N tool calls (0 disables tools).
    #[arg(long, global = true, value_name = "N")]
    max_tool_calls: Option<u64>,
    /// At most this many US dollars on model calls, at the model's prices (the session stops
    /// calling the model once its cost reaches it; subagents' calls count).
    #[arg(long, global = true, value_name = "USD")]
    max_budget_usd: Option<f64>,
    /// The TUI takes the whole screen (the alternate screen) instead of living inline under the
    /// terminal's scrollback.
    #[arg(long, global = true)]
    alt_screen: bool,
    /// The working mode at start: ask (the policy's questions), auto-edit (file changes inside the
    /// write roots apply unasked) or plan (read-only). Shift-Tab switches it in the TUI.
    #[arg(long, global = true, value_name = "MODE", value_parser = parse_mode)]
    mode: Option<WorkMode>,
    /// Set a config key over the config files, as a PABLO_ variable would:
    /// `-c options.shell.timeout_seconds=30` (repeatable; `pablo config keys` lists the keys).
    #[arg(short = 'c', long = "set", global = true, value_name = "KEY=VALUE")]
    set: Vec<String>,
}

fn parse_mode(text: &str) -> Result<WorkMode, String> {
    WorkMode::parse(text)
        .ok_or_else(|| format!("unknown mode {text:?}: the modes are ask, auto-edit and plan"))
}

/// Who answers approvals in a front-end, which decides what write authority means there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Front {
    /// The TUI and ACP: the write tools are offered and every change is previewed and asked.
    Interactive,
    /// `pablo run`: nobody can answer, so `--allow-write` is the person's authority to write.
    Headless,
}

impl Common {
    fn launch_options(&self, front: Front) -> LaunchOptions {
        let allow_write = !self.read_only && (front == Front::Interactive || self.allow_write);
        LaunchOptions {
            workspace: self.workspace.clone(),
            config: self.config.clone(),
            policy: self.policy.clone(),
            provider: self.provider.clone(),
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            reasoning: self
                .reasoning
                .as_deref()
                .and_then(|r| pablo::config::ReasoningLevel::parse(r).ok()),
            allow_write,
            preapproved_writes: front == Front::Headless && allow_write,
            no_shell: self.no_shell,
            no_filesystem: self.no_filesystem,
            max_model_calls: self.max_model_calls,
            max_tool_calls: self.max_tool_calls,
            max_budget_usd: self.max_budget_usd,
            mode: self.mode,
            // Only the TUI shows servers becoming ready; elsewhere the first turn waits for them.
            wait_for_mcp: front == Front::Headless,
            // The TUI turns it on: only a person in front of a screen can answer a server.
            ask_mcp_questions: false,
            mcp_servers: Vec::new(),
            config_overrides: self.set.clone(),
        }
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one task headless and exit: stdout carries only the final answer (every event with
    /// `--json`), progress goes to stderr.
    Run {
        /// The task, in words.
        task: String,
        /// One JSON object per line instead of readable progress.
        #[arg(long)]
        json: bool,
        /// Answer every approval prompt with "allow once" (policy denials still hold).
        #[arg(long)]
        auto_approve: bool,
        /// Continue a journaled session (an id or a unique prefix; see `pablo sessions`).
        #[arg(long, value_name = "ID")]
        resume: Option<String>,
        /// Work in the git worktree NAME (made from HEAD on the branch pablo/NAME unless it
        /// exists), not in the checkout.
        #[arg(long, value_name = "NAME", conflicts_with = "resume")]
        worktree: Option<String>,
        /// Also write the final answer to FILE (empty when the run ended without one).
        #[arg(long, value_name = "FILE")]
        output_last_message: Option<PathBuf>,
    },
    /// List journaled sessions, most recent first.
    Sessions {
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// Continue a session in the TUI.
    Resume {
        /// The session id (or a unique prefix of it).
        #[arg(required_unless_present = "last")]
        id: Option<String>,
        /// The most recent session of this workspace.
        #[arg(long, conflicts_with = "id")]
        last: bool,
    },
    /// Write a session out: Markdown to read or paste into a pull request, or JSON that
    /// `pablo import` turns back into a session.
    Export {
        /// The session (an id or a unique prefix); default: the most recent of this workspace.
        id: Option<String>,
        /// The most recent session of this workspace.
        #[arg(long, conflicts_with = "id")]
        last: bool,
        /// md (messages, tool calls, the diffs that landed) or json (the whole journal).
        #[arg(long, value_name = "FORMAT", default_value = "md", value_parser = ["md", "markdown", "json"])]
        format: String,
        /// Write to FILE instead of stdout.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Make a new session of a `pablo export --format json` file (`-` reads stdin), working in
    /// this workspace; prints its id.
    Import {
        /// The exported file, or `-` for stdin.
        file: PathBuf,
    },
    /// Start a new session from a point of an old one: its conversation and checklist up to the
    /// end of a turn. Files are not touched; the old session stays as it was.
    Fork {
        /// The session (an id or a unique prefix); default: the most recent of this workspace.
        id: Option<String>,
        /// The most recent session of this workspace.
        #[arg(long, conflicts_with = "id")]
        last: bool,
        /// Keep turns 1 to TURN (default: every turn).
        #[arg(long, value_name = "TURN")]
        at: Option<u32>,
    },
    /// Restore the files the last turn(s) of a session changed, from its checkpoints.
    Undo {
        /// The session (an id or a unique prefix); default: the most recent of this workspace.
        id: Option<String>,
        /// The most recent session of this workspace.
        #[arg(long, conflicts_with = "id")]
        last: bool,
        /// Undo the last N turns that changed files (and everything after the first of them).
        #[arg(long, value_name = "N", default_value_t = 1)]
        turns: u32,
        /// Show what would be restored; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print the plan and the report as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Serve the Agent Client Protocol on stdin/stdout (for editors such as Zed).
    Acp,
    /// The TUI on a scripted model over a scratch copy of a sample project (no key, no network).
    Demo {
        /// Put the project copy in DIR (it must not exist or be empty; it is kept).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Keep the project copy after quitting.
        #[arg(long)]
        keep: bool,
    },
    /// Usage over time from the local journals: sessions, turns, tokens and cost by model, tool
    /// calls by decision.
    Stats {
        /// Only what happened since then: 30m, 12h, 7d, 2w, or a date (2026-11-01).
        #[arg(long, value_name = "WHEN")]
        since: Option<String>,
        /// One JSON object instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Make a pablo config of a Claude Code or Codex setup (your user config unless told
    /// otherwise; never over an existing file), and say what could not be mapped.
    ImportConfig(cmd::import_config::ImportArgs),
    /// Configuration files.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Explain policy decisions; list saved approvals; trust the project config.
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Run one command under a sandbox profile, as pablo would run it, and exit with its status.
    Sandbox {
        /// read-only | workspace-write (default: the configured profile, workspace-write).
        #[arg(long, value_name = "PROFILE")]
        profile: Option<pablo::protocol::SandboxProfile>,
        /// Let a workspace-write command reach the network.
        #[arg(long)]
        network: bool,
        /// The program and its arguments (resolved through the commands' PATH).
        #[arg(last = true, required = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// The configured MCP servers: start each, then show its state and what it offers.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// Print a shell completion script (`pablo completions bash > /etc/bash_completion.d/pablo`).
    Completions {
        /// bash | zsh | fish | elvish | powershell
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), or write one page per command into DIR.
    Man {
        /// Write pablo.1, pablo-run.1, … into DIR instead of printing pablo.1.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Check this machine and folder: sandbox, provider, config, MCP and language servers,
    /// hooks, trust, terminal; each problem with its fix (exit status 1 when something needed is
    /// broken).
    Doctor {
        /// One JSON object: `ok`, `broken`, `warnings` and every check with its code.
        #[arg(long)]
        json: bool,
    },
    /// The configured hooks (docs/hooks.md): which run here, and why the others do not.
    Hooks {
        #[command(subcommand)]
        command: HooksCommand,
    },
    /// The git worktrees pablo made of this repository (`--worktree NAME`, agents with
    /// `isolation: worktree`): list them, remove one.
    Worktree {
        #[command(subcommand)]
        command: cmd::worktree::WorktreeCommand,
    },
}

#[derive(Subcommand, Debug)]
enum HooksCommand {
    /// Every hook of the config layers: event, name, command, matchers, timeout, on_failure,
    /// where it is defined, and whether it runs in this folder.
    List {
        /// One JSON object per hook, one per line.
        #[arg(long)]
        json: bool,
    },
}

impl Command {
    /// Whether the command was asked for JSON output (its errors are JSON then too).
    fn prints_json(&self) -> bool {
        match self {
            Command::Run { json, .. }
            | Command::Sessions { json }
            | Command::Doctor { json }
            | Command::Stats { json, .. }
            | Command::Config {
                command: ConfigCommand::Show { json, .. },
            }
            | Command::Undo { json, .. }
            | Command::Mcp {
                command: McpCommand::List { json } | McpCommand::Tools { json, .. },
            }
            | Command::Hooks {
                command: HooksCommand::List { json },
            }
            | Command::Policy {
                command: PolicyCommand::Check { json, .. } | PolicyCommand::Rules { json, .. },
            } => *json,
            Command::Worktree { command } => command.prints_json(),
            _ => false,
        }
    }
}

#[derive(Subcommand, Debug)]
enum McpCommand {
    /// Every configured server: state (ready, failed with the reason), tools, prompts,
    /// resources (exit status 1 when one failed).
    List {
        /// One JSON object per server, one per line.
        #[arg(long)]
        json: bool,
    },
    /// The tools of one server: offered name, real name, description, and whether it says it
    /// only reads.
    Tools {
        /// The server's name (`[mcp_servers.NAME]`).
        name: String,
        /// One JSON object per tool, one per line.
        #[arg(long)]
        json: bool,
    },
    /// Sign in to an HTTP server that asks for it (OAuth): prints the address to open, opens
    /// the browser when there is one, waits for it to come back, and keeps the tokens (a 0600
    /// file under pablo's data directory).
    Login {
        /// The server's name (`[mcp_servers.NAME]`).
        name: String,
        /// Only print the address; open no browser.
        #[arg(long)]
        no_browser: bool,
    },
    /// Forget the tokens kept for a server (its next start asks for sign-in again).
    Logout {
        /// The server's name (`[mcp_servers.NAME]`).
        name: String,
    },
}

#[derive(Subcommand, Debug)]
enum PolicyCommand {
    /// Explain the decision for a shell command (exit status: 0 allow, 3 ask, 4 deny).
    Check {
        /// Print `{"decision", "commands", "reasons", …}` as JSON.
        #[arg(long)]
        json: bool,
        /// Also print the environment the command would run with (no secret is ever in it).
        #[arg(long)]
        env: bool,
        /// The command: one argument (a command line, as the shell reads it), or the words of
        /// one command, each judged as one word (quoted for the shell).
        #[arg(last = true, required = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// List the saved "allow always" rules of the workspace, or remove one.
    Rules {
        /// Print the rules as one JSON object.
        #[arg(long)]
        json: bool,
        /// Remove the rule with this id.
        #[arg(long, value_name = "ID")]
        remove: Option<String>,
    },
    /// Trust the workspace's project config (.pablo/config.toml), or stop trusting it.
    Trust {
        /// Stop trusting it (its endpoint, programs and grants are ignored again).
        #[arg(long)]
        revoke: bool,
    },
}

#[derive(Subcommand, Debug)]
enum ConfigCommand {
    /// Check a config file (default: the user's and the project's).
    Validate {
        /// The file to check (default: the user's and the project's config).
        file: Option<PathBuf>,
    },
    /// The settings in effect (config files, PABLO_ variables, -c, flags).
    Show {
        /// Say where each value came from.
        #[arg(long)]
        origin: bool,
        /// One JSON object per setting: key, value (as JSON: a number is a number), origin.
        #[arg(long)]
        json: bool,
    },
    /// Every config key, with the PABLO_ variable that sets it.
    Keys,
}

fn main() -> ExitCode {
    // Started as the shell parser's helper, this process only serves parses; any other start
    // parses through such a helper, so a panic in the parser (fatal under `panic = "abort"`)
    // costs one command, not the session.
    if let Some(code) = pablo::policy::isolate_shell_parser() {
        return code;
    }
    // Then, while this is the only thread: provider keys and other secret-looking values leave
    // the environment block, so no command pablo runs can read them from /proc/$PPID/environ.
    let protection = pablo::process::protect::protect_process();
    if let Some(problem) = &protection.problem
        && !protection.held.is_empty()
    {
        eprintln!(
            "pablo: warning: {problem}; a command could read {} from pablo's environment (its \
             output is still redacted)",
            protection.held.join(", ")
        );
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    let json_errors = cli.command.as_ref().is_some_and(Command::prints_json);
    match real_main(cli) {
        Ok(code) => code,
        // The reader went away (`pablo sessions | head -1`): nothing is wrong.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) if json_errors => {
            // A `--json` command keeps its contract when it fails: one `error` object on stdout
            // (`pablo run --json` even when it cannot start, `pablo undo --json` with
            // `nothing_to_undo`, …).
            let line = serde_json::json!({
                "type": "error",
                "code": error_code(&e),
                "message": format!("{e:#}"),
            });
            let _ = writeln!(std::io::stdout().lock(), "{line}");
            ExitCode::from(2)
        }
        Err(e) => {
            // The last line on stderr, ending in its code (docs/errors.md).
            eprintln!("pablo: {e:#} ({})", error_code(&e));
            ExitCode::from(2)
        }
    }
}

/// A command line clap did not accept, reported like every other start-up error: under `--json`
/// one `error` line on stdout, else clap's explanation and then a last line ending in the code.
/// `--help` and `--version` are not errors: clap prints them as it does.
fn usage_error(e: &clap::Error) -> ExitCode {
    if !e.use_stderr() {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    let rendered = e.to_string();
    let message = rendered
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("the command line was not understood")
        .trim_start_matches("error: ")
        .trim()
        .to_string();
    let code = ErrorCode::UsageError.as_str();
    // Parsing failed, so the flag is looked for in the words themselves (before a `--`, after
    // which words are a command's own).
    let json = std::env::args_os()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json");
    if json {
        let line = serde_json::json!({"type": "error", "code": code, "message": message});
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    } else {
        let _ = e.print();
        eprintln!("pablo: {message} ({code})");
    }
    ExitCode::from(2)
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// A refusal of one of the binary's own commands (no engine error says it), with its code.
#[derive(Debug)]
struct Refusal {
    code: ErrorCode,
    message: String,
}

impl Refusal {
    fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Refusal {}

/// The stable code of the first coded error in `e`'s chain (docs/providers.md, docs/sessions.md,
/// docs/policy.md list them).
fn error_code(e: &anyhow::Error) -> &'static str {
    use pablo::core::Coded;
    for c in e.chain() {
        if let Some(x) = c.downcast_ref::<Refusal>() {
            return x.code.as_str();
        }
        if let Some(x) = c.downcast_ref::<launch::LaunchError>() {
            return x.code().as_str();
        }
        if let Some(x) = c.downcast_ref::<pablo::session::SessionError>() {
            return x.code().as_str();
        }
        if let Some(x) = c.downcast_ref::<pablo::config::ConfigError>() {
            return x.code().as_str();
        }
        if let Some(x) = c.downcast_ref::<pablo::policy::PolicyError>() {
            return x.code().as_str();
        }
        if let Some(x) = c.downcast_ref::<pablo::model::ModelError>() {
            return x.code().as_str();
        }
        if c.downcast_ref::<std::io::Error>().is_some() {
            return ErrorCode::IoError.as_str();
        }
    }
    ErrorCode::SetupFailed.as_str()
}

fn real_main(cli: Cli) -> Result<ExitCode> {
    // The TUI's namespace probe (a child in new namespaces, 2-3 ms) starts before the runtime and
    // the launch, so that its child runs beside them: the policy's start-up note waits for its
    // answer, and that wait is on the way to the first frame. Without a terminal the TUI refuses
    // to start, and nothing is probed.
    if cli.command.is_none() && pablo::tui::require_terminal().is_ok() {
        pablo::process::probe_namespaces_soon();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = command(&runtime, cli);
    // Spans and metrics still queued go out before the process ends, within a bound.
    if let Some(note) = runtime.block_on(pablo::telemetry::finish(TELEMETRY_FLUSH)) {
        eprintln!("pablo: warning: {note}");
    }
    result
}

/// The longest pablo waits for a collector at exit.
const TELEMETRY_FLUSH: std::time::Duration = std::time::Duration::from_secs(2);

/// Starts tracing and export as the launch's layers say; notes go where the front-end shows them.
fn start_telemetry(launch: &Launch) -> Vec<String> {
    let (settings, mut notes) = launch.telemetry_settings();
    notes.extend(pablo::telemetry::init(settings));
    notes
}

fn command(runtime: &tokio::runtime::Runtime, mut cli: Cli) -> Result<ExitCode> {
    if let Some(name) = &cli.worktree {
        if cli.command.is_some() {
            return Err(Refusal::new(
                ErrorCode::UsageError,
                "--worktree before a command is for the TUI; give it to the command \
                 (`pablo run --worktree NAME TASK`)",
            )
            .into());
        }
        cmd::worktree::enter(&mut cli.common, name)?;
    }
    match cli.command {
        Some(Command::Run {
            task,
            json,
            auto_approve,
            resume,
            worktree,
            output_last_message,
        }) => {
            let args = cmd::run::RunArgs {
                task,
                json,
                auto_approve,
                resume,
                worktree,
                output_last_message,
            };
            runtime.block_on(cmd::run::run(cli.common, args))
        }
        Some(Command::Sessions { json }) => cmd::sessions::sessions(json),
        Some(Command::Resume { id, last }) => runtime.block_on(resume(cli.common, id, last)),
        Some(Command::Undo {
            id,
            last,
            turns,
            dry_run,
            json,
        }) => cmd::sessions::undo(&cli.common, id, last, turns, dry_run, json),
        Some(Command::Acp) => runtime.block_on(acp(cli.common)),
        Some(Command::Config {
            command: ConfigCommand::Validate { file },
        }) => cmd::settings::config_validate(&cli.common, file),
        Some(Command::Config {
            command: ConfigCommand::Show { origin, json },
        }) => cmd::settings::config_show(&cli.common, origin, json),
        Some(Command::Config {
            command: ConfigCommand::Keys,
        }) => {
            out!("{}", pablo::config::show::keys_text());
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::ImportConfig(args)) => cmd::import_config::run(&cli.common, args),
        Some(Command::Stats { since, json }) => cmd::settings::stats(since.as_deref(), json),
        Some(Command::Demo { dir, keep }) => runtime.block_on(demo(cli.common, dir, keep)),
        Some(Command::Policy { command }) => cmd::settings::policy_command(&cli.common, command),
        Some(Command::Sandbox {
            profile,
            network,
            command,
        }) => cmd::settings::sandbox_command(&cli.common, profile, network, &command),
        Some(Command::Mcp { command }) => {
            runtime.block_on(cmd::settings::mcp_command(&cli.common, command))
        }
        Some(Command::Hooks { command }) => cmd::settings::hooks_command(&cli.common, command),
        Some(Command::Worktree { command }) => cmd::worktree::command(&cli.common, command),
        Some(Command::Doctor { json }) => {
            runtime.block_on(cmd::settings::doctor(&cli.common, json))
        }
        Some(Command::Export {
            id,
            last,
            format,
            output,
        }) => cmd::sessions::export(&cli.common, id, last, &format, output),
        Some(Command::Import { file }) => cmd::sessions::import(&cli.common, &file),
        Some(Command::Fork { id, last, at }) => cmd::sessions::fork(&cli.common, id, last, at),
        Some(Command::Completions { shell }) => {
            cmd::generate::completions(<Cli as clap::CommandFactory>::command(), shell)
        }
        Some(Command::Man { dir }) => {
            cmd::generate::man(<Cli as clap::CommandFactory>::command(), dir.as_deref())
        }
        None => runtime.block_on(tui(cli.common)),
    }
}

/// `pablo resume`: the TUI on a journaled session, with its transcript, checklist and approvals.
async fn resume(common: Common, id: Option<String>, last: bool) -> Result<ExitCode> {
    let next = resume_once(&common, id, last, Vec::new()).await?;
    follow(&common, next).await
}

/// Opens the sessions the person asks for one after another (`/resume`, `/new`), in this
/// process, until one closes for good.
async fn follow(common: &Common, mut next: Next) -> Result<ExitCode> {
    loop {
        next = match next {
            Next::Quit => return Ok(ExitCode::SUCCESS),
            Next::Resume(id) => resume_once(common, Some(id), false, Vec::new()).await?,
            Next::Forked { id, from } => {
                // Which session the screen now shows, and the way back to the one forked.
                let note = format!(
                    "you are now in session {id}, a fork of session {from} (which stays as it \
                     was): /resume, or `pablo resume {from}`, goes back to it"
                );
                resume_once(common, Some(id), false, vec![note]).await?
            }
            Next::New(workspace) => tui_once(common, workspace).await?,
        };
    }
}

/// One resumed TUI; returns what was asked for as it closed.
async fn resume_once(
    common: &Common,
    id: Option<String>,
    last: bool,
    notes: Vec<String>,
) -> Result<Next> {
    // Which session first (reading only): a wrong id is the more useful answer.
    let (id, workspace) = find_session(common, id.as_deref(), last)?;
    pablo::tui::require_terminal()?;
    // The probe child beside the launch, not before the first frame after it.
    pablo::process::probe_namespaces_soon();
    let mut options = common.launch_options(Front::Interactive);
    options.ask_mcp_questions = true;
    if options.workspace.is_none() {
        options.workspace = Some(choose_resume_workspace(&id, workspace)?);
    }
    let launch = Launch::prepare(options)?;
    let telemetry_notes = start_telemetry(&launch);
    let model = launch.model().await?;
    let note = launch::unknown_model_warning(model.as_ref());
    let commands = launch.custom_commands();
    let resume_command = format!("pablo resume {id}");
    // The screen replays each journaled event as the resume reads it: a long session's events
    // are never all held beside the conversation they rebuild.
    let mut screen = pablo::tui::Replay::new(
        &launch.workspace,
        &tui_options_of_launch(common, &launch, &commands.value, resume_command.clone()),
    );
    let (setup, state) =
        launch.resume_setup(&id, model, ApprovalMode::Interactive, None, &mut |event| {
            screen.push(event)
        })?;
    let mut startup_events = state.start_events();
    drop(state);
    startup_events.extend(note);
    startup_events.extend(launch::warning_events(&telemetry_notes));
    let mut options = tui_options_with(
        common,
        &launch,
        &setup,
        commands,
        startup_events,
        resume_command,
    );
    options.notes = notes;
    let workspace = setup.value.host.workspace_root.clone();
    let summary = screen
        .run(launch::spawn(setup.value), workspace, options)
        .await?;
    outln!("{summary}");
    Ok(summary.next())
}

/// `pablo acp`: stdout carries only JSON-RPC; logs go to the log file (`PABLO_LOG`).
async fn acp(common: Common) -> Result<ExitCode> {
    let options = common.launch_options(Front::Interactive);
    let (settings, mut notes) = launch::observe::telemetry_settings(&options);
    notes.extend(pablo::telemetry::init(settings));
    // stdout is the protocol's: notes go to stderr, which editors show in their logs.
    for note in notes {
        eprintln!("pablo: warning: {note}");
    }
    pablo::acp::serve_stdio(options).await?;
    Ok(ExitCode::SUCCESS)
}

async fn demo(common: Common, dir: Option<PathBuf>, keep: bool) -> Result<ExitCode> {
    // Before anything is written: no project copy, no escape sequence on a pipe.
    pablo::tui::require_terminal()?;
    let demo = launch::demo::prepare(launch::demo::DemoOptions {
        dir,
        keep,
        launch: common.launch_options(Front::Interactive),
    })?;
    let options = pablo::tui::TuiOptions {
        initial_prompt: demo.task,
        policy_mode: "demo · edits and commands ask".into(),
        resume_command: None,
        startup_events: demo.startup_events,
        alt_screen: common.alt_screen || demo.tui.alt_screen == Some(true),
        notifications: demo.tui.notifications.unwrap_or_default(),
        vim: demo.tui.vim == Some(true),
        custom_commands: Vec::new(),
        skills: Vec::new(),
        notes: Vec::new(),
        spend_cap_usd: None,
        statusline: None,
    };
    let workspace = demo.setup.host.workspace_root.clone();
    // The project copy outlives the TUI either way: removed (or kept) after it, also on error.
    let project = demo.project;
    let mut summary = pablo::tui::run(launch::spawn(demo.setup), workspace, options).await?;
    summary.notes.extend(project.finish());
    outln!("{summary}");
    Ok(ExitCode::SUCCESS)
}

/// What the TUI is told of a launch (a new session or a resumed one): the status line's authority
/// and sandbox, the `[tui]` settings, the person's commands, and after `events` the warnings of
/// the setup, then those of the command files that were skipped.
fn tui_options(
    common: &Common,
    launch: &Launch,
    setup: &launch::Warned<launch::AgentSetup>,
    events: Vec<pablo::protocol::Event>,
    resume_command: String,
) -> pablo::tui::TuiOptions {
    let commands = launch.custom_commands();
    tui_options_with(common, launch, setup, commands, events, resume_command)
}

/// The TUI's options that come from the launch alone (all a resumed screen needs before the
/// agent is composed), with the person's `commands`.
fn tui_options_of_launch(
    common: &Common,
    launch: &Launch,
    commands: &[pablo::protocol::CustomCommand],
    resume_command: String,
) -> pablo::tui::TuiOptions {
    let tui = launch.tui_config();
    pablo::tui::TuiOptions {
        resume_command: Some(resume_command),
        alt_screen: common.alt_screen || tui.alt_screen == Some(true),
        notifications: tui.notifications.unwrap_or_default(),
        vim: tui.vim == Some(true),
        custom_commands: commands.to_vec(),
        skills: launch.skill_summaries(),
        spend_cap_usd: launch.spend_cap_usd(),
        ..Default::default()
    }
}

/// The TUI's options: those of the launch, the agent's policy, and `events` to show first
/// (then the setup's warnings and those of the `commands`).
fn tui_options_with(
    common: &Common,
    launch: &Launch,
    setup: &launch::Warned<launch::AgentSetup>,
    commands: launch::Warned<Vec<pablo::protocol::CustomCommand>>,
    mut events: Vec<pablo::protocol::Event>,
    resume_command: String,
) -> pablo::tui::TuiOptions {
    events.extend(setup.warning_events());
    events.extend(commands.warning_events());
    pablo::tui::TuiOptions {
        startup_events: events,
        // An endpoint the project chose comes first: where the conversation goes is the fact
        // the person must not miss when the line is cut.
        policy_mode: match launch.project_endpoint() {
            Some(endpoint) => format!(
                "endpoint {endpoint} (project) · {} · {}",
                launch.authority_label(),
                pablo::launch::sandbox_status(&setup.value.policy)
            ),
            None => format!(
                "{} · {}",
                launch.authority_label(),
                pablo::launch::sandbox_status(&setup.value.policy)
            ),
        },
        statusline: launch.statusline(&setup.value.policy),
        ..tui_options_of_launch(common, launch, &commands.value, resume_command)
    }
}

async fn tui(common: Common) -> Result<ExitCode> {
    let next = tui_once(&common, None).await?;
    follow(&common, next).await
}

/// One TUI on a new session (in `workspace`, else the one the flags name); returns what was
/// asked for as it closed.
async fn tui_once(common: &Common, workspace: Option<PathBuf>) -> Result<Next> {
    pablo::tui::require_terminal()?;
    // The namespace probe is already under way (`real_main` started it for `pablo`, and
    // `resume_once` for `pablo resume`) or answered: its answer is the process's.
    let mut options = common.launch_options(Front::Interactive);
    options.ask_mcp_questions = true;
    if workspace.is_some() {
        options.workspace = workspace;
    }
    let launch = Launch::prepare(options)?;
    let telemetry_notes = start_telemetry(&launch);
    let model = launch.model().await?;
    let session_id = Launch::new_session_id();
    // The session is journaled, so the exit summary can say how to come back to it.
    let resume_command = format!("pablo resume {session_id}");
    let events = launch::unknown_model_warning(model.as_ref())
        .into_iter()
        .chain(launch::warning_events(&telemetry_notes))
        .collect();
    let setup = launch.agent_setup(session_id, model, ApprovalMode::Interactive, None)?;
    let options = tui_options(common, &launch, &setup, events, resume_command);
    let workspace = setup.value.host.workspace_root.clone();
    let summary = pablo::tui::run(launch::spawn(setup.value), workspace, options).await?;
    outln!("{summary}");
    Ok(summary.next())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every argument of every command, with the path of commands that holds it.
    fn arguments(command: &clap::Command, path: &str, out: &mut Vec<(String, String, bool)>) {
        for a in command.get_arguments() {
            out.push((
                path.to_string(),
                a.get_id().to_string(),
                a.get_help().is_some(),
            ));
        }
        for sub in command.get_subcommands() {
            arguments(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    #[test]
    fn every_flag_and_argument_has_help_text() {
        let mut all = Vec::new();
        arguments(&super::Cli::command(), "pablo", &mut all);
        let missing: Vec<String> = all
            .iter()
            .filter(|(_, id, has)| !has && id != "help" && id != "version")
            .map(|(path, id, _)| format!("{path}: {id}"))
            .collect();
        assert!(all.len() > 30, "{all:?}");
        assert!(missing.is_empty(), "no help text: {missing:?}");
    }

    #[test]
    fn every_command_has_a_description() {
        let command = super::Cli::command();
        for sub in command.get_subcommands() {
            assert!(sub.get_about().is_some(), "pablo {}", sub.get_name());
        }
    }
}
