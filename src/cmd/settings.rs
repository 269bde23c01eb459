//! The subcommands that show and check settings: `pablo config validate|show|keys`, `pablo
//! stats`, `pablo doctor`, `pablo sandbox`, `pablo hooks list`, `pablo mcp …` and `pablo policy …`.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::{Common, Front, HooksCommand, McpCommand, PolicyCommand};

use pablo::launch::{self, Launch};

pub fn config_validate(common: &Common, file: Option<PathBuf>) -> Result<ExitCode> {
    use pablo::config::{ConfigFile, Dirs, project_config_file};
    let files: Vec<PathBuf> = match file {
        Some(f) => vec![f],
        None => {
            let dirs = Dirs::discover()?;
            let ws = match &common.workspace {
                Some(w) => w.clone(),
                None => std::env::current_dir()?,
            };
            [dirs.user_config_file(), project_config_file(&ws)]
                .into_iter()
                .filter(|p| p.is_file())
                .collect()
        }
    };
    if files.is_empty() {
        outln!("no config files found; built-in defaults apply");
        return Ok(ExitCode::SUCCESS);
    }
    let mut failed = false;
    for f in files {
        match ConfigFile::load(&f) {
            Ok(_) => outln!("{}: ok", f.display()),
            Err(e) => {
                failed = true;
                eprintln!("{e}");
            }
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// `pablo config show`: the settings in effect, with their origins when asked.
pub fn config_show(common: &Common, origin: bool, json: bool) -> Result<ExitCode> {
    let launch = Launch::prepare(common.launch_options(Front::Interactive))?;
    for w in &launch.config_warnings() {
        eprintln!("pablo: warning: {w}");
    }
    let shown = launch.config_view();
    if json {
        for s in &shown {
            outln!("{}", s.to_json());
        }
    } else {
        out!("{}", pablo::config::show::render(&shown, origin));
    }
    Ok(ExitCode::SUCCESS)
}

/// `pablo stats`: usage over time from the local journals.
pub fn stats(since: Option<&str>, json: bool) -> Result<ExitCode> {
    use pablo::session::stats;
    let since = since
        .map(|s| stats::parse_since(s, pablo::session::now_ms()))
        .transpose()
        .map_err(|m| crate::Refusal::new(pablo::core::ErrorCode::UsageError, m))?;
    let report = stats::of_default_store(since)?;
    for w in &report.warnings {
        eprintln!("pablo: warning: {w}");
    }
    if json {
        outln!("{}", serde_json::to_string(&report)?);
    } else {
        out!("{}", report.to_text());
    }
    Ok(ExitCode::SUCCESS)
}

/// `pablo sandbox`: one command under a profile, with this terminal's stdin and stdout.
pub fn sandbox_command(
    common: &Common,
    profile: Option<pablo::protocol::SandboxProfile>,
    network: bool,
    command: &[String],
) -> Result<ExitCode> {
    // One command and done: its own start tells whether namespaces work, no probe before it.
    pablo::process::assume_namespaces_until_a_start_fails();
    let launch = Launch::prepare(common.launch_options(Front::Headless))?;
    let engine = launch.policy()?;
    for w in launch.config_warnings().iter().chain(&engine.warnings) {
        eprintln!("pablo: warning: {w}");
    }
    let (status, refused) =
        pablo::launch::run_sandboxed(&launch, &engine.value, profile, network, command)?;
    if !refused.is_empty() {
        eprintln!(
            "pablo: the sandbox's network proxy refused {}: not in [options.shell] network_allow",
            refused.join(", ")
        );
    }
    // Learnt from the start (so after the command's output): the weaker sandbox it ran in.
    let support = pablo::process::support();
    if let (true, Some(w)) = (support.landlock(), support.namespaces_missing()) {
        eprintln!("pablo: warning: {w}");
    }
    Ok(ExitCode::from(status))
}

pub fn hooks_command(common: &Common, command: HooksCommand) -> Result<ExitCode> {
    let launch = Launch::prepare(common.launch_options(Front::Interactive))?;
    let HooksCommand::List { json } = command;
    let hooks = launch.hook_listing();
    if json {
        for h in &hooks {
            outln!("{}", serde_json::to_string(h)?);
        }
    } else if hooks.is_empty() {
        outln!("no hooks configured ([[hooks.EVENT]] in the config; see docs/hooks.md)");
    } else {
        for h in &hooks {
            out!("{}", pablo::launch::hooks::describe_hook(h));
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn mcp_command(common: &Common, command: McpCommand) -> Result<ExitCode> {
    let launch = Launch::prepare(common.launch_options(Front::Interactive))?;
    match &command {
        McpCommand::Login { name, no_browser } => {
            let mut shown = Ok(());
            let file = launch
                .mcp_login(name, |address, redirect| {
                    shown = show_sign_in(name, address, redirect, !no_browser);
                })
                .await?;
            shown?;
            outln!(
                "signed in to {name}; its tokens are kept in {} (readable by you only)",
                file.display()
            );
            return Ok(ExitCode::SUCCESS);
        }
        McpCommand::Logout { name } => {
            match launch.mcp_logout(name)? {
                Some(file) => outln!("signed out of {name}: removed {}", file.display()),
                None => outln!("no tokens were kept for {name}"),
            }
            return Ok(ExitCode::SUCCESS);
        }
        McpCommand::List { .. } | McpCommand::Tools { .. } => {}
    }
    let servers = launch.mcp_servers().await?;
    for w in &servers.warnings {
        eprintln!("pablo: warning: {w}");
    }
    let servers = servers.value;
    let failed = servers
        .iter()
        .any(|s| s.state == pablo::protocol::McpState::Failed);
    match command {
        McpCommand::List { json } => {
            if json {
                for s in &servers {
                    outln!("{}", serde_json::to_string(s)?);
                }
            } else if servers.is_empty() {
                outln!(
                    "no MCP servers configured ([mcp_servers.NAME] in the config; see docs/mcp.md)"
                );
            } else {
                for s in &servers {
                    out!("{}", launch::mcp::describe_server(s));
                }
            }
            Ok(if failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        McpCommand::Login { .. } | McpCommand::Logout { .. } => Ok(ExitCode::SUCCESS),
        McpCommand::Tools { name, json } => {
            let Some(server) = servers.iter().find(|s| s.name == name) else {
                let known: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
                return Err(crate::Refusal::new(
                    pablo::core::ErrorCode::McpUnknownServer,
                    format!(
                        "no MCP server named {name:?} (configured: {})",
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    ),
                )
                .into());
            };
            if let Some(reason) = &server.reason {
                let code = pablo::core::ErrorCode::McpUnavailable;
                if json {
                    let line = serde_json::json!({
                        "type": "error",
                        "code": code.as_str(),
                        "message": format!("MCP server {name} failed: {reason}"),
                    });
                    outln!("{line}");
                } else {
                    eprintln!("pablo: MCP server {name} failed: {reason} ({code})");
                }
                return Ok(ExitCode::FAILURE);
            }
            for t in &server.tools {
                if json {
                    outln!("{}", serde_json::to_string(t)?);
                } else {
                    let hint = match t.read_only_hint {
                        Some(true) => "  (says it only reads)",
                        _ => "",
                    };
                    outln!("{}  ({}){hint}\n    {}", t.name, t.real_name, t.description);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// What `pablo mcp login` says while it waits: the address to open (always printed, so a person
/// on another machine can open it), and the browser opened on it when asked and one is found.
fn show_sign_in(name: &str, address: &str, redirect: &str, open: bool) -> std::io::Result<()> {
    outln!("To sign in to the MCP server {name}, open this address in a browser:\n\n  {address}\n");
    if open && let Some(opener) = open_browser(address) {
        outln!("(opened with {opener})");
    }
    outln!("Waiting for the browser to come back to {redirect} …");
    Ok(())
}

/// Opens `address` with the person's browser: `$BROWSER` (a `:`-separated list, as
/// xdg-utils reads it), then `xdg-open` (or `open` on macOS). The program that was started, if
/// any; pablo does not wait for it.
fn open_browser(address: &str) -> Option<String> {
    let mut candidates: Vec<String> = std::env::var("BROWSER")
        .map(|b| {
            b.split(':')
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    candidates.push(
        if cfg!(target_os = "macos") {
            "open"
        } else {
            "xdg-open"
        }
        .to_string(),
    );
    candidates.into_iter().find(|program| {
        std::process::Command::new(program)
            .arg(address)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map(|mut child| {
                // Reaped when it ends, without holding up the wait for the browser.
                std::thread::spawn(move || child.wait());
            })
            .is_ok()
    })
}

/// `pablo policy trust --revoke`: a safety action, so it reads no config at all (a project
/// config that does not parse must not keep its own trust), then says what the project config
/// no longer sets when it can still be read.
fn revoke_trust(options: &pablo::launch::LaunchOptions) -> Result<ExitCode> {
    let (dirs, workspace) = Launch::locate(options)?;
    pablo::policy::TrustStore::new(&dirs).set_trusted(&workspace, false)?;
    outln!("{}: project config no longer trusted", workspace.display());
    let file = pablo::config::project_config_file(&workspace);
    if file.is_file() {
        match pablo::launch::trust::withhold_untrusted(&file) {
            Ok(grants) => {
                if grants.is_empty() {
                    outln!(
                        "{}: only narrows (it sets no endpoint, program or grant)",
                        file.display()
                    );
                } else {
                    outln!("{} no longer sets:", file.display());
                    for g in grants {
                        outln!("  {g}");
                    }
                }
            }
            Err(e) => outln!(
                "{}: not read ({e}); nothing in it is trusted",
                file.display()
            ),
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn policy_command(common: &Common, command: PolicyCommand) -> Result<ExitCode> {
    use pablo::policy::{TrustStore, cli};
    let options = common.launch_options(Front::Interactive);
    if let PolicyCommand::Trust { revoke: true } = command {
        return revoke_trust(&options);
    }
    let launch = Launch::prepare(options)?;
    match command {
        PolicyCommand::Trust { revoke } => {
            TrustStore::new(&launch.dirs).set_trusted(&launch.workspace, !revoke)?;
            let what = if revoke {
                "no longer trusted"
            } else {
                "trusted"
            };
            outln!("{}: project config {what}", launch.workspace.display());
            // What trusting lets the repository decide, as written (read again: the launch
            // above saw the folder before it was trusted).
            let file = pablo::config::project_config_file(&launch.workspace);
            if file.is_file() {
                let grants = pablo::launch::trust::withhold_untrusted(&file)?;
                let verb = if revoke { "no longer sets" } else { "now sets" };
                if grants.is_empty() {
                    outln!(
                        "{}: only narrows (it sets no endpoint, program or grant)",
                        file.display()
                    );
                } else {
                    outln!("{} {verb}:", file.display());
                    for g in grants {
                        outln!("  {g}");
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        PolicyCommand::Check { json, env, command } => {
            let engine = launch.policy()?.value;
            let mut report = cli::check(&engine, &cli::command_line(&command));
            if env {
                report.env = Some(cli::env_report(&engine));
            }
            if json {
                outln!("{}", serde_json::to_string(&report)?);
            } else {
                out!("{}", report.to_text());
            }
            Ok(ExitCode::from(report.exit_code()))
        }
        PolicyCommand::Rules { json, remove } => {
            let engine = launch.policy()?.value;
            if let Some(id) = remove {
                let removed = cli::remove_rule(&engine, &id)?;
                outln!("removed {}  {}", removed.id, removed.kind.describe());
                return Ok(ExitCode::SUCCESS);
            }
            let report = cli::rules(&engine);
            if json {
                outln!("{}", serde_json::to_string(&report)?);
            } else {
                out!("{}", report.to_text());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `pablo doctor`: every check, as text or one JSON object; exit status 1 when a needed check is
/// broken.
pub async fn doctor(common: &Common, json: bool) -> Result<ExitCode> {
    use std::io::IsTerminal as _;
    let terminal_vars = ["TERM", "COLORTERM", "NO_COLOR", "TERM_PROGRAM"]
        .iter()
        .filter_map(|n| std::env::var(n).ok().map(|v| (n.to_string(), v)))
        .collect();
    let (shown, ok) = launch::doctor::doctor(
        common.launch_options(Front::Interactive),
        std::io::stdout().is_terminal(),
        terminal_vars,
        json,
    )
    .await;
    out!("{shown}");
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
