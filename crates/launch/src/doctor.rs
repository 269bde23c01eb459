//! `pablo doctor`: what works on this machine and in this folder, and what to do about what does
//! not. People report sandboxes that silently do nothing and providers that fail on the first
//! turn; this says so before a session starts, each finding with a line that fixes it.
//!
//! Nothing here is a new probe: the sandbox answers come from the probes commands already rely on
//! (`process::support`), the provider from the same resolution `Launch::model` uses, the config
//! from the same loader as `pablo config validate`, MCP servers and language servers from the hubs
//! a session builds. Every probe that waits (the namespace child, the endpoint, the MCP servers)
//! is bounded by [`PROBE_LIMIT`] and they run side by side.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::{Launch, LaunchError, LaunchOptions};
use pablo_config::{ConfigFile, Dirs, project_config_file};
use pablo_model::ModelError;

/// The longest any one probe may take.
pub(crate) const PROBE_LIMIT: Duration = Duration::from_secs(5);

/// What a check is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Area {
    Sandbox,
    Provider,
    Config,
    Mcp,
    Lsp,
    Hooks,
    Trust,
    Terminal,
}

impl Area {
    fn as_str(self) -> &'static str {
        match self {
            Area::Sandbox => "sandbox",
            Area::Provider => "provider",
            Area::Config => "config",
            Area::Mcp => "mcp",
            Area::Lsp => "lsp",
            Area::Hooks => "hooks",
            Area::Trust => "trust",
            Area::Terminal => "terminal",
        }
    }
}

/// How one check came out. Only `broken` on a needed check makes the exit status non-zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CheckState {
    Ok,
    Warning,
    Broken,
    /// Not checked (nothing to check, or an earlier check failed).
    Skipped,
}

/// The stable code of a finding; scripts read it, the words around it may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CheckCode {
    LandlockAvailable,
    LandlockMissing,
    NamespacesAvailable,
    NamespacesRefused,
    NamespacesProbeTimedOut,
    SeccompAvailable,
    SeccompMissing,
    SandboxStatus,
    ProviderSelected,
    ProviderNotConfigured,
    KeyPresent,
    KeyMissing,
    KeyNotNeeded,
    EndpointReachable,
    EndpointUnreachable,
    ModelKnown,
    ModelUnknown,
    ConfigValid,
    ConfigInvalid,
    ConfigAbsent,
    McpNone,
    McpReady,
    McpFailed,
    McpTimedOut,
    LspNone,
    LspFound,
    LspWithheld,
    HooksNone,
    HookRuns,
    HookInactive,
    FolderTrusted,
    FolderNotTrusted,
    NoProjectConfig,
    NotATerminal,
    TerminalColors,
    TerminalKeyboard,
    TerminalNotifications,
    NotChecked,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Check {
    pub area: Area,
    /// What was checked within the area (`landlock`, `endpoint`, a file, a server's name).
    pub name: String,
    pub state: CheckState,
    pub code: CheckCode,
    /// Whether pablo cannot work as documented when this is broken (docs/setup.md lists them).
    pub needed: bool,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    fn new(area: Area, name: impl Into<String>, state: CheckState, code: CheckCode) -> Self {
        Self {
            area,
            name: name.into(),
            state,
            code,
            needed: false,
            detail: String::new(),
            fix: None,
        }
    }

    fn needed(mut self) -> Self {
        self.needed = true;
        self
    }

    fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = detail.into();
        self
    }

    fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }
}

/// Everything `pablo doctor` found, in the order it prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct DoctorReport {
    /// No needed check is broken.
    pub ok: bool,
    /// How many needed checks are broken.
    pub(crate) broken: usize,
    /// How many checks warn (or are broken but not needed).
    pub(crate) warnings: usize,
    pub(crate) checks: Vec<Check>,
}

impl DoctorReport {
    fn of(checks: Vec<Check>) -> Self {
        let broken = checks
            .iter()
            .filter(|c| c.needed && c.state == CheckState::Broken)
            .count();
        let warnings = checks
            .iter()
            .filter(|c| {
                c.state == CheckState::Warning || (!c.needed && c.state == CheckState::Broken)
            })
            .count();
        Self {
            ok: broken == 0,
            broken,
            warnings,
            checks,
        }
    }

    /// The report for a person: one line per check, its fix under it, a verdict at the end.
    pub(crate) fn to_text(&self) -> String {
        let mut out = String::new();
        for c in &self.checks {
            let state = match c.state {
                CheckState::Ok => "ok",
                CheckState::Warning => "warn",
                CheckState::Broken if c.needed => "BROKEN",
                CheckState::Broken => "broken",
                CheckState::Skipped => "-",
            };
            out.push_str(&format!(
                "{state:<7} {:<9} {}: {}\n",
                c.area.as_str(),
                c.name,
                c.detail
            ));
            if let Some(fix) = &c.fix {
                out.push_str(&format!("{:<17}fix: {fix}\n", ""));
            }
        }
        if self.ok {
            out.push_str(&format!(
                "\neverything pablo needs works ({} warning(s))\n",
                self.warnings
            ));
        } else {
            out.push_str(&format!(
                "\n{} needed check(s) broken, {} warning(s): see the fix lines above\n",
                self.broken, self.warnings
            ));
        }
        out
    }
}

/// What the front-end knows that the engine cannot ask for itself.
#[derive(Debug, Clone, Default)]
pub(crate) struct DoctorOptions {
    pub launch: LaunchOptions,
    /// Whether stdout is a terminal (the terminal checks say "not a terminal" otherwise).
    pub stdout_is_terminal: bool,
    /// The variables that describe the terminal (`TERM`, `COLORTERM`, `NO_COLOR`,
    /// `TERM_PROGRAM`), as the front-end read them.
    pub terminal_vars: Vec<(String, String)>,
}

/// `pablo doctor`: runs every check and returns the report as it prints (one JSON object when
/// `json`, else a line per check with its fix and a verdict) and whether no needed check is
/// broken (the exit status). `terminal_vars` are `TERM`, `COLORTERM`, `NO_COLOR` and
/// `TERM_PROGRAM` as the front-end read them.
pub async fn doctor(
    launch: LaunchOptions,
    stdout_is_terminal: bool,
    terminal_vars: Vec<(String, String)>,
    json: bool,
) -> (String, bool) {
    let report = report(DoctorOptions {
        launch,
        stdout_is_terminal,
        terminal_vars,
    })
    .await;
    let shown = if json {
        // Every field is a string, a number, a bool or a list of them: it cannot fail.
        serde_json::to_string(&report).unwrap_or_default() + "\n"
    } else {
        report.to_text()
    };
    (shown, report.ok)
}

/// Runs every check.
pub(crate) async fn report(options: DoctorOptions) -> DoctorReport {
    let mut checks = Vec::new();
    let (config_checks, launch) = config_and_launch(&options.launch);
    // The namespace probe is a child process: on a thread of its own, beside the rest.
    let namespaces =
        tokio::task::spawn_blocking(|| pablo_process::support().namespace_support().clone());
    let (provider, mcp) = match &launch {
        Ok(launch) => {
            let (provider, mcp) = tokio::join!(provider_checks(launch), mcp_checks(launch));
            (provider, mcp)
        }
        Err(e) => {
            let skipped = |area| {
                vec![
                    Check::new(area, "all", CheckState::Skipped, CheckCode::NotChecked).detail(
                        format!("not checked: the configuration does not load ({e})"),
                    ),
                ]
            };
            (skipped(Area::Provider), skipped(Area::Mcp))
        }
    };
    let namespaces = match tokio::time::timeout(PROBE_LIMIT, namespaces).await {
        Ok(Ok(answer)) => Some(answer),
        Ok(Err(join)) => Some(Err(format!("the probe thread failed: {join}"))),
        Err(_) => None,
    };
    checks.extend(sandbox_checks(namespaces, launch.as_ref().ok()));
    checks.extend(provider);
    checks.extend(config_checks);
    checks.extend(mcp);
    if let Ok(launch) = &launch {
        checks.extend(lsp_checks(launch));
        checks.extend(hook_checks(launch));
        checks.extend(trust_checks(launch));
    }
    checks.extend(terminal_checks(&options, launch.as_ref().ok()));
    DoctorReport::of(checks)
}

/// Each config file checked as `pablo config validate` checks it, then the launch built from
/// them (which also reads the `PABLO_` variables and `-c`).
fn config_and_launch(options: &LaunchOptions) -> (Vec<Check>, Result<Launch, LaunchError>) {
    let mut checks = Vec::new();
    let mut files: Vec<(&str, PathBuf)> = Vec::new();
    match Launch::locate(options) {
        Ok((dirs, workspace)) => {
            files.push(("user config", dirs.user_config_file()));
            files.push(("project config", project_config_file(&workspace)));
        }
        Err(e) => {
            checks.push(
                Check::new(
                    Area::Config,
                    "directories",
                    CheckState::Broken,
                    CheckCode::ConfigInvalid,
                )
                .needed()
                .detail(e.to_string())
                .fix("set HOME (or the XDG_*_HOME variables) and --workspace to directories that exist"),
            );
        }
    }
    if let Some(extra) = &options.config {
        files.push(("--config", extra.clone()));
    }
    let mut any = false;
    for (what, path) in files {
        if !path.is_file() && what != "--config" {
            continue;
        }
        any = true;
        let name = format!("{what} {}", path.display());
        checks.push(match ConfigFile::load(&path) {
            Ok(_) => Check::new(Area::Config, name, CheckState::Ok, CheckCode::ConfigValid)
                .needed()
                .detail("valid"),
            Err(e) => Check::new(
                Area::Config,
                name,
                CheckState::Broken,
                CheckCode::ConfigInvalid,
            )
            .needed()
            .detail(e.to_string())
            .fix(format!(
                "correct the file (`pablo config validate {}` names every problem)",
                path.display()
            )),
        });
    }
    if !any && checks.is_empty() {
        checks.push(
            Check::new(
                Area::Config,
                "files",
                CheckState::Ok,
                CheckCode::ConfigAbsent,
            )
            .detail(format!(
                "no config file; built-in defaults apply (the user's would be {})",
                Dirs::discover()
                    .map(|d| d.user_config_file().display().to_string())
                    .unwrap_or_else(|_| "~/.config/pablo/config.toml".into())
            )),
        );
    }
    let launch = Launch::prepare(options.clone());
    if let Err(e) = &launch
        && !checks.iter().any(|c| c.state == CheckState::Broken)
    {
        // The files parse but the layers do not hold together (a PABLO_ variable, -c, a value
        // only the whole can refuse).
        checks.push(
            Check::new(
                Area::Config,
                "layers",
                CheckState::Broken,
                CheckCode::ConfigInvalid,
            )
            .needed()
            .detail(e.to_string())
            .fix("`pablo config show --origin` says which layer sets what"),
        );
    }
    (checks, launch)
}

fn sandbox_checks(namespaces: Option<Result<(), String>>, launch: Option<&Launch>) -> Vec<Check> {
    let support = pablo_process::support();
    let mut out = Vec::new();
    out.push(match support.landlock_abi {
        Some(abi) => Check::new(
            Area::Sandbox,
            "landlock",
            CheckState::Ok,
            CheckCode::LandlockAvailable,
        )
        .needed()
        .detail(format!("Landlock ABI {abi}: commands' files are bounded")),
        None => Check::new(
            Area::Sandbox,
            "landlock",
            CheckState::Broken,
            CheckCode::LandlockMissing,
        )
        .needed()
        .detail(
            "the kernel has no Landlock: commands cannot be sandboxed, so known-safe reads ask \
             and approved commands run with pablo's full rights",
        )
        .fix(
            "use a Linux kernel 5.13 or newer with Landlock enabled (CONFIG_SECURITY_LANDLOCK=y \
             and `landlock` in the lsm= boot parameter); in a container, one whose seccomp \
             profile allows the landlock_* system calls",
        ),
    });
    out.push(match namespaces {
        Some(Ok(())) => Check::new(
            Area::Sandbox,
            "user_namespaces",
            CheckState::Ok,
            CheckCode::NamespacesAvailable,
        )
        .needed()
        .detail(
            "commands get their own user, PID, mount and network namespaces: .git, .pablo and \
             pablo's directories stay read-only, the network is cut",
        ),
        Some(Err(why)) => Check::new(
            Area::Sandbox,
            "user_namespaces",
            CheckState::Broken,
            CheckCode::NamespacesRefused,
        )
        .needed()
        .detail(format!(
            "commands cannot get their own namespaces ({why}): under workspace-write .git, \
             .pablo and pablo's own directories stay writable, and the network is cut only by a \
             seccomp filter"
        ))
        .fix(
            "allow unprivileged user namespaces: `sysctl kernel.unprivileged_userns_clone=1` \
             (Debian), `sysctl kernel.apparmor_restrict_unprivileged_userns=0` (Ubuntu 24.04+), \
             `sysctl user.max_user_namespaces=15000`; in a container, run it with a seccomp \
             profile that allows unshare and clone with CLONE_NEWUSER",
        ),
        None => Check::new(
            Area::Sandbox,
            "user_namespaces",
            CheckState::Broken,
            CheckCode::NamespacesProbeTimedOut,
        )
        .needed()
        .detail(format!(
            "the probe child did not answer within {} s",
            PROBE_LIMIT.as_secs()
        ))
        .fix("run `pablo sandbox -- true` to see whether a sandboxed start hangs"),
    });
    out.push(seccomp_check());
    if let Some(launch) = launch {
        match launch.policy() {
            Ok(policy) => out.push(
                Check::new(
                    Area::Sandbox,
                    "status",
                    CheckState::Ok,
                    CheckCode::SandboxStatus,
                )
                .detail(format!(
                    "sessions here show \"{}\" (a sandbox that cannot be applied is never \
                     claimed)",
                    super::sandbox_status(&policy.value)
                )),
            ),
            Err(e) => out.push(
                Check::new(
                    Area::Sandbox,
                    "status",
                    CheckState::Broken,
                    CheckCode::ConfigInvalid,
                )
                .needed()
                .detail(format!("the policy does not load: {e}"))
                .fix("`pablo policy check -- true` shows the policy's own error"),
            ),
        }
    }
    out
}

/// Whether the kernel has seccomp filters (the network cut when namespaces are refused), as
/// the kernel reports it for this process.
fn seccomp_check() -> Check {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let mode = status
        .lines()
        .find_map(|l| l.strip_prefix("Seccomp:"))
        .map(str::trim);
    match mode {
        Some(mode) => Check::new(
            Area::Sandbox,
            "seccomp",
            CheckState::Ok,
            CheckCode::SeccompAvailable,
        )
        .detail(match mode {
            "0" => "seccomp filters available".to_string(),
            _ => "seccomp filters available (pablo itself already runs under one)".to_string(),
        }),
        None => Check::new(
            Area::Sandbox,
            "seccomp",
            CheckState::Warning,
            CheckCode::SeccompMissing,
        )
        .detail(
            "the kernel reports no seccomp: without namespaces nothing cuts a command's network",
        )
        .fix("use a kernel built with CONFIG_SECCOMP_FILTER=y"),
    }
}

async fn provider_checks(launch: &Launch) -> Vec<Check> {
    use pablo_model::select::resolve;
    let settings = launch.provider_settings();
    let resolved =
        tokio::time::timeout(PROBE_LIMIT, resolve(&settings, &pablo_core::secrets::var)).await;
    let (selection, _key) = match resolved {
        Ok(Ok(found)) => found,
        Ok(Err(ModelError::MissingKey { provider, var, .. })) => {
            return vec![
                Check::new(
                    Area::Provider,
                    "key",
                    CheckState::Broken,
                    CheckCode::KeyMissing,
                )
                .needed()
                .detail(format!("{provider} needs an API key and {var} is not set"))
                .fix(format!(
                    "export {var}=… (or name another variable with api_key_env in the config)"
                )),
            ];
        }
        Ok(Err(e)) => {
            return vec![
                Check::new(
                    Area::Provider,
                    "selection",
                    CheckState::Broken,
                    CheckCode::ProviderNotConfigured,
                )
                .needed()
                .detail(e.to_string())
                .fix("choose one: --provider openai|anthropic|ollama, --model NAME, --base-url URL (docs/providers.md)"),
            ];
        }
        Err(_) => {
            return vec![
                Check::new(
                    Area::Provider,
                    "selection",
                    CheckState::Broken,
                    CheckCode::ProviderNotConfigured,
                )
                .needed()
                .detail(format!(
                    "choosing a provider took more than {} s (looking for a local Ollama)",
                    PROBE_LIMIT.as_secs()
                ))
                .fix("name the provider: --provider openai|anthropic|ollama (docs/providers.md)"),
            ];
        }
    };
    let mut out = vec![
        Check::new(
            Area::Provider,
            "selection",
            CheckState::Ok,
            CheckCode::ProviderSelected,
        )
        .needed()
        .detail(format!(
            "{} at {}, model {}",
            selection.kind.name(),
            selection.base_url,
            selection.model
        )),
    ];
    out.push(match &selection.key_env {
        Some(var) => Check::new(Area::Provider, "key", CheckState::Ok, CheckCode::KeyPresent)
            .needed()
            .detail(format!("the key is read from {var} (never shown)")),
        None => Check::new(
            Area::Provider,
            "key",
            CheckState::Ok,
            CheckCode::KeyNotNeeded,
        )
        .needed()
        .detail("no key: this endpoint is taken to need none"),
    });
    out.push(endpoint_check(&selection.base_url).await);
    let profile = &selection.profile;
    out.push(if profile.known {
        Check::new(
            Area::Provider,
            "model",
            CheckState::Ok,
            CheckCode::ModelKnown,
        )
        .detail(format!(
            "{}: context window {} tokens",
            selection.model, profile.context_window
        ))
    } else {
        Check::new(
            Area::Provider,
            "model",
            CheckState::Warning,
            CheckCode::ModelUnknown,
        )
        .detail(format!(
            "{} is not in pablo's table of models: its context window is taken to be {} tokens \
             and its prices are unknown",
            selection.model, profile.context_window
        ))
        .fix("set context_window under [model] in the config (docs/providers.md)")
    });
    out
}

/// Whether anything answers HTTP at the base URL: `GET {base}/models` with no key (doctor never
/// sends one), any status counting as an answer.
async fn endpoint_check(base_url: &str) -> Check {
    let url = format!("{}/models", base_url.trim_end_matches('/'));
    let answer = match pablo_model::http::client_for(&url) {
        Ok(client) => match tokio::time::timeout(PROBE_LIMIT, client.get(&url).send()).await {
            Ok(Ok(response)) => Ok(response.status().as_u16()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer within {} s", PROBE_LIMIT.as_secs())),
        },
        Err(e) => Err(e.to_string()),
    };
    match answer {
        Ok(status) => Check::new(
            Area::Provider,
            "endpoint",
            CheckState::Ok,
            CheckCode::EndpointReachable,
        )
        .needed()
        .detail(format!(
            "{base_url} answers (HTTP {status} to GET /models without a key)"
        )),
        Err(why) => Check::new(
            Area::Provider,
            "endpoint",
            CheckState::Broken,
            CheckCode::EndpointUnreachable,
        )
        .needed()
        .detail(format!("{base_url} cannot be reached: {why}"))
        .fix(
            "start the server, or correct the URL (--base-url, or base_url in the config); \
             behind a proxy set https_proxy",
        ),
    }
}

async fn mcp_checks(launch: &Launch) -> Vec<Check> {
    use pablo_protocol::McpState;
    let Ok(policy) = launch.policy() else {
        // The sandbox checks say why the policy does not load.
        return Vec::new();
    };
    let hub = launch.mcp_hub(&policy.value);
    let mut out: Vec<Check> = hub
        .warnings
        .iter()
        .map(|w| {
            Check::new(
                Area::Mcp,
                "withheld",
                CheckState::Warning,
                CheckCode::FolderNotTrusted,
            )
            .detail(w.clone())
            .fix("`pablo policy trust` if you trust this folder's config")
        })
        .collect();
    let hub = hub.value;
    hub.start(None);
    let settled = tokio::time::timeout(PROBE_LIMIT, hub.settled())
        .await
        .is_ok();
    let views = hub.views();
    // Stopping is bounded too: a server that ignores its stdin closing is killed with the hub.
    let _ = tokio::time::timeout(PROBE_LIMIT, hub.shutdown()).await;
    if views.is_empty() && out.is_empty() {
        out.push(
            Check::new(Area::Mcp, "servers", CheckState::Ok, CheckCode::McpNone)
                .detail("none configured ([mcp_servers.NAME]; docs/mcp.md)"),
        );
    }
    for s in views {
        out.push(match s.state {
            McpState::Ready => Check::new(Area::Mcp, &s.name, CheckState::Ok, CheckCode::McpReady)
                .detail(format!(
                    "answers initialize over {}: {} tools, {} prompts, {} resources",
                    s.transport,
                    s.tools.len(),
                    s.prompts.len(),
                    s.resources.len()
                )),
            McpState::Failed => Check::new(
                Area::Mcp,
                &s.name,
                CheckState::Warning,
                CheckCode::McpFailed,
            )
            .detail(format!(
                "does not start: {}",
                s.reason.as_deref().unwrap_or("no reason given")
            ))
            .fix(match &s.log {
                Some(log) => format!("read its log {log}, then `pablo mcp list`"),
                None => "check its url and headers, then `pablo mcp list`".into(),
            }),
            McpState::Starting | McpState::Stopped => Check::new(
                Area::Mcp,
                &s.name,
                CheckState::Warning,
                CheckCode::McpTimedOut,
            )
            .detail(format!(
                "did not answer initialize within {} s{}",
                PROBE_LIMIT.as_secs(),
                if settled { "" } else { " (still starting)" }
            ))
            .fix("`pablo mcp list` waits for its whole start-up timeout"),
        });
    }
    out
}

fn lsp_checks(launch: &Launch) -> Vec<Check> {
    let Ok(policy) = launch.policy() else {
        return Vec::new();
    };
    let hub = launch.lsp_hub(&policy.value).value;
    let mut out: Vec<Check> = hub
        .server_names()
        .into_iter()
        .map(|name| {
            Check::new(Area::Lsp, name, CheckState::Ok, CheckCode::LspFound)
                .detail("found; started when the model asks about a file it covers")
        })
        .collect();
    for name in hub.withheld() {
        out.push(
            Check::new(Area::Lsp, name, CheckState::Warning, CheckCode::LspWithheld)
                .detail(
                    "found, but it may run the project's own code and the folder is not trusted",
                )
                .fix("`pablo policy trust` if you trust this folder"),
        );
    }
    if out.is_empty() {
        out.push(
            Check::new(Area::Lsp, "servers", CheckState::Ok, CheckCode::LspNone).detail(
                "none found on the commands' PATH (rust-analyzer, pyright, gopls, … ; docs/lsp.md)",
            ),
        );
    }
    out
}

fn hook_checks(launch: &Launch) -> Vec<Check> {
    let hooks = launch.hook_listing();
    if hooks.is_empty() {
        return vec![
            Check::new(Area::Hooks, "hooks", CheckState::Ok, CheckCode::HooksNone)
                .detail("none configured ([[hooks.EVENT]]; docs/hooks.md)"),
        ];
    }
    hooks
        .into_iter()
        .map(|h| {
            let name = format!("{} {}", h.event, h.name);
            if h.active {
                Check::new(Area::Hooks, name, CheckState::Ok, CheckCode::HookRuns)
                    .detail(format!("runs `{}` (from {})", h.command, h.source))
            } else {
                Check::new(
                    Area::Hooks,
                    name,
                    CheckState::Warning,
                    CheckCode::HookInactive,
                )
                .detail(format!(
                    "does not run here: {}",
                    h.why.as_deref().unwrap_or("no reason given")
                ))
                .fix("`pablo hooks list` explains each hook")
            }
        })
        .collect()
}

fn trust_checks(launch: &Launch) -> Vec<Check> {
    let file = project_config_file(&launch.workspace);
    let name = launch.workspace.display().to_string();
    if launch.layers.project.is_some() && launch.trust.is_trusted() {
        return vec![
            Check::new(Area::Trust, name, CheckState::Ok, CheckCode::FolderTrusted)
                .detail("trusted: its .pablo/ config, hooks, servers and agents apply"),
        ];
    }
    if !file.is_file() {
        return vec![
            Check::new(
                Area::Trust,
                name,
                CheckState::Ok,
                CheckCode::NoProjectConfig,
            )
            .detail("no .pablo/config.toml: nothing of the repository's is withheld"),
        ];
    }
    vec![
        Check::new(
            Area::Trust,
            name,
            CheckState::Warning,
            CheckCode::FolderNotTrusted,
        )
        .detail(
            launch
                .trust_notice()
                .unwrap_or("not trusted: its project config only narrows")
                .to_string(),
        )
        .fix("`pablo policy trust` once you have read .pablo/config.toml"),
    ]
}

/// What can be known of the terminal without talking to it: whether there is one, and what its
/// variables say. The keyboard protocol is asked of the terminal when the TUI starts.
fn terminal_checks(options: &DoctorOptions, launch: Option<&Launch>) -> Vec<Check> {
    if !options.stdout_is_terminal {
        return vec![
            Check::new(
                Area::Terminal,
                "terminal",
                CheckState::Skipped,
                CheckCode::NotATerminal,
            )
            .detail("not a terminal (stdout is a pipe or a file): nothing to check"),
        ];
    }
    let var = |name: &str| {
        options
            .terminal_vars
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    };
    let term = var("TERM").unwrap_or("");
    let mut out = Vec::new();
    let colors = if var("NO_COLOR").is_some() {
        "NO_COLOR is set: no colors".to_string()
    } else if matches!(var("COLORTERM"), Some("truecolor" | "24bit")) {
        format!("24-bit colors (COLORTERM), TERM={term}")
    } else if term.contains("256color") {
        format!("256 colors (TERM={term})")
    } else if term.is_empty() || term == "dumb" {
        "TERM is unset or dumb: no colors".to_string()
    } else {
        format!("basic colors (TERM={term})")
    };
    let weak = term.is_empty() || term == "dumb";
    let mut colors = Check::new(
        Area::Terminal,
        "colors",
        if weak {
            CheckState::Warning
        } else {
            CheckState::Ok
        },
        CheckCode::TerminalColors,
    )
    .detail(colors);
    if weak {
        colors = colors.fix("set TERM to your terminal's (xterm-256color for most)");
    }
    out.push(colors);
    let program = var("TERM_PROGRAM").unwrap_or("");
    let kitty_like = ["kitty", "WezTerm", "ghostty", "foot", "iTerm.app", "rio"]
        .iter()
        .any(|t| program.eq_ignore_ascii_case(t) || term.contains(&t.to_ascii_lowercase()));
    out.push(
        Check::new(
            Area::Terminal,
            "keyboard",
            CheckState::Ok,
            CheckCode::TerminalKeyboard,
        )
        .detail(if kitty_like {
            format!(
                "{} speaks the keyboard enhancement protocol (shift-enter, ctrl-letters told \
                 apart); the TUI asks it at start",
                if program.is_empty() { term } else { program }
            )
        } else {
            "whether the terminal speaks the keyboard enhancement protocol is asked of it when \
             the TUI starts (only a conversation with the terminal can tell)"
                .to_string()
        }),
    );
    let notifications = launch
        .and_then(|l| l.tui_config().notifications)
        .unwrap_or_default();
    out.push(
        Check::new(
            Area::Terminal,
            "notifications",
            CheckState::Ok,
            CheckCode::TerminalNotifications,
        )
        .detail(format!(
            "[tui] notifications = {}",
            match notifications {
                pablo_protocol::Notifications::Off => "off",
                pablo_protocol::Notifications::Bell => "bell (the terminal bell)",
                pablo_protocol::Notifications::Desktop =>
                    "desktop (the bell, and an OSC 9 desktop notification when the window is not focused)",
            }
        )),
    );
    out
}
