//! From command-line options to a ready engine: config layers, limits, provider, catalog, policy
//! and the per-session host. Every front-end (TUI, `pablo run`, ACP) starts the same way, so the
//! same flags mean the same thing everywhere.

pub(crate) mod commands;
pub mod demo;
pub mod doctor;
pub mod export;
pub(crate) mod extensions;
pub mod hooks;
pub mod mcp;
mod model;
pub mod observe;
mod sandbox;
pub mod statusline;
pub mod trust;
mod undo;
mod worktree;

#[cfg(test)]
mod memory_tests;

pub use model::{model_facts, suggested_models};
pub use sandbox::{run_sandboxed, sandbox_status};
pub use statusline::StatusLine;
pub use undo::UndoOutcome;
pub use worktree::{WorktreeEntry, WorktreeState, enter_worktree, worktree_list, worktree_remove};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pablo_agent::{Limits, context};
use pablo_config::{ConfigError, Dirs, Layers, Trust};
use pablo_core::ApprovalMode;
use pablo_core::Coded;
use pablo_core::ErrorCode;
use pablo_core::editor::Editor;
use pablo_model::ModelError;
use pablo_policy::{CliFlags, PolicyEngine, PolicyError, StaticPolicy};
use pablo_protocol::AgentHandle;
use pablo_protocol::Event;
use pablo_session::checkpoint::{
    CheckpointSettings, Checkpoints, DEFAULT_MAX_BYTES, DEFAULT_MAX_FILE_BYTES, History,
    ObjectStore,
};
use pablo_session::{Header, ResumeState, SessionError, Store};
use pablo_tools::{Catalog, Host};
use pablo_workspace::{Workspace, WorkspaceOptions};

// What a front-end holds of the engine it is given: the setup of one agent (to start it, or to
// attach an editor first), the model it talks to, the rows of the session list, and each tool's
// words for its calls and results (live and replayed alike).
pub use pablo_agent::AgentSetup;
pub use pablo_config::McpServerConfig;
pub use pablo_model::ModelClient;
pub use pablo_session::SessionInfo;
pub use pablo_tools::{describe_call, describe_result};

/// Starts the agent of `setup`; the front-end talks to it through the returned handle.
pub fn spawn(setup: AgentSetup) -> AgentHandle {
    pablo_agent::spawn(setup)
}

/// The journaled sessions, most recent first (a listing that cannot be read is an error).
pub fn list_sessions() -> Result<Vec<SessionInfo>, LaunchError> {
    Ok(pablo_session::list()?.sessions)
}

/// The options every front-end shares (the CLI's common flags).
#[derive(Debug, Clone, Default)]
pub struct LaunchOptions {
    pub workspace: Option<PathBuf>,
    pub config: Option<PathBuf>,
    pub policy: Option<PathBuf>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// `--reasoning off|low|medium|high`.
    pub reasoning: Option<pablo_config::ReasoningLevel>,
    /// Offer `fs.write` and `fs.edit`.
    pub allow_write: bool,
    /// The host's own authority to write (headless `--allow-write`): changes inside the write
    /// roots run without asking unless a layer sets the edit tools to ask or deny.
    pub preapproved_writes: bool,
    pub no_shell: bool,
    pub no_filesystem: bool,
    pub max_model_calls: Option<u64>,
    pub max_tool_calls: Option<u64>,
    /// `--max-budget-usd`: the most the session may spend on model calls, in US dollars.
    pub max_budget_usd: Option<f64>,
    /// `--mode`: the working mode at start, over `[tui] mode`.
    pub mode: Option<pablo_protocol::WorkMode>,
    /// The first turn waits until every MCP server is ready or failed (`pablo run`, ACP); the
    /// TUI leaves it off so its first prompt is never held up.
    pub wait_for_mcp: bool,
    /// The MCP servers' questions (`elicitation/create`) go to the person: the TUI shows them.
    /// Off, every question is declined with a warning (`pablo run`, ACP).
    pub ask_mcp_questions: bool,
    /// MCP servers the front-end adds (an editor's `mcpServers`), on top of the config's.
    pub mcp_servers: Vec<(String, McpServerConfig)>,
    /// `-c key=value`: settings over the config files (with the `PABLO_` variables).
    pub config_overrides: Vec<String>,
}

/// Why the engine could not start.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("workspace {path}: {message}")]
    Workspace { path: PathBuf, message: String },
    #[error("cannot create {path}: {message}")]
    StateDir { path: PathBuf, message: String },
    #[error(transparent)]
    Policy(#[from] PolicyError),
    #[error("{0}")]
    Setup(String),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("demo: {0}")]
    Demo(String),
    /// A spend cap with a model whose prices pablo does not know: the cap could not be kept.
    #[error(
        "a spend cap (--max-budget-usd {cap}) is set, but the price of {model} is unknown, so \
         what it costs cannot be counted; set [model.prices] input and output (US dollars per \
         million tokens) for it, or drop the cap"
    )]
    PriceUnknown { model: String, cap: f64 },
    /// A spend cap that is not an amount of dollars.
    #[error("the spend cap {0} is not an amount of US dollars (a number, 0 or more)")]
    InvalidBudget(f64),
    #[error(transparent)]
    Checkpoint(#[from] pablo_session::checkpoint::CheckpointError),
    /// A git worktree could not be made, listed or removed (`--worktree`, `pablo worktree`).
    #[error("{message}")]
    Worktree { code: ErrorCode, message: String },
    /// `pablo sandbox` could not run its command (the process layer's code kept).
    #[error("{message}")]
    Sandbox { code: ErrorCode, message: String },
    /// `pablo mcp login` or `logout` could not do what was asked (`mcp_login_failed`, …).
    #[error("{message}")]
    McpSignIn { code: ErrorCode, message: String },
}

impl Coded for LaunchError {
    fn code(&self) -> ErrorCode {
        match self {
            LaunchError::Config(e) => e.code(),
            LaunchError::Model(e) => e.code(),
            LaunchError::Workspace { .. } => ErrorCode::WorkspaceUnavailable,
            LaunchError::StateDir { .. } => ErrorCode::StateDirUnavailable,
            LaunchError::Policy(e) => e.code(),
            LaunchError::Setup(_) => ErrorCode::SetupFailed,
            LaunchError::Session(e) => e.code(),
            LaunchError::Demo(_) => ErrorCode::DemoSetupFailed,
            LaunchError::PriceUnknown { .. } => ErrorCode::ModelPriceUnknown,
            LaunchError::InvalidBudget(_) => ErrorCode::ConfigInvalid,
            LaunchError::Checkpoint(e) => e.code(),
            LaunchError::Worktree { code, .. }
            | LaunchError::Sandbox { code, .. }
            | LaunchError::McpSignIn { code, .. } => *code,
        }
    }
}

/// A value built by a launch step, with the notes for the person that came with building it
/// (settings that were ignored, a cut AGENTS.md, command files that were skipped). The steps are
/// pure: nothing is collected on the side, so the order of the notes is the order in which the
/// caller puts them together.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct Warned<T> {
    pub value: T,
    pub warnings: Vec<String>,
}

impl<T> Warned<T> {
    pub(crate) fn new(value: T, warnings: Vec<String>) -> Self {
        Self { value, warnings }
    }

    /// The value; its notes are appended to `warnings`.
    pub(crate) fn into_value(self, warnings: &mut Vec<String>) -> T {
        warnings.extend(self.warnings);
        self.value
    }

    /// The notes as events for a front-end.
    pub fn warning_events(&self) -> Vec<Event> {
        warning_events(&self.warnings)
    }
}

/// Notes for the person as `Event::Warning`s, in order.
pub fn warning_events(warnings: &[String]) -> Vec<Event> {
    warnings
        .iter()
        .map(|m| Event::Warning { message: m.clone() })
        .collect()
}

/// Everything loaded before a session starts.
pub struct Launch {
    pub dirs: Dirs,
    pub workspace: PathBuf,
    /// The workspace opened once, at admission; every file tool goes through this handle.
    pub(crate) workspace_handle: Arc<Workspace>,
    pub(crate) layers: Layers,
    pub(crate) limits: Limits,
    pub(crate) options: LaunchOptions,
    /// The one note saying which settings of an untrusted project config were ignored (also in
    /// [`Launch::config_warnings`]); `pablo run` says it on stderr instead.
    trust_notice: Option<String>,
    /// The person's decision about this folder (`pablo policy trust`), read once here: whatever
    /// would let the repository decide something asks it, by purpose.
    pub(crate) trust: Trust,
    /// Why the trust store could not be read: the folder then counts as untrusted, and no policy
    /// (so no session) is built until it can be.
    trust_unreadable: Option<PolicyError>,
    /// The note naming `PABLO_` variables that are no setting (said once, with the config's).
    unknown_vars: Option<String>,
}

impl Launch {
    /// Loads config layers and resolves the workspace.
    pub fn prepare(options: LaunchOptions) -> Result<Self, LaunchError> {
        let (dirs, workspace) = Self::locate(&options)?;
        // The folder's trust, read once; an untrusted project config is read keeping only the
        // keys known to narrow (it cannot choose the endpoint, the key, a program to start, or
        // grant anything; a key not known to narrow is withheld and named).
        let read = pablo_policy::TrustStore::new(&dirs).is_trusted(&workspace);
        let trust = Trust::decided(read.as_ref().is_ok_and(|t| *t));
        let trust_unreadable = read.err();
        let mut layers = Layers::load(&dirs, &workspace, options.config.as_deref(), trust)?;
        let unknown_vars =
            layers.with_overrides(pablo_config::env::process_vars(), &options.config_overrides)?;
        // Before anything reads the layers: the values of kept keys that grant or widen go too.
        let trust_notice = if trust.project_only_narrows() {
            trust::withhold_untrusted_project(&mut layers)
        } else {
            None
        };
        let workspace_handle = Arc::new(
            Workspace::open_with(&workspace, workspace_options(&layers)).map_err(|e| {
                LaunchError::Workspace {
                    path: workspace.clone(),
                    message: e.to_string(),
                }
            })?,
        );
        let mut limits = Limits::default();
        for layer in layers.iter() {
            limits.apply(&layer.limits);
        }
        if options.max_model_calls.is_some() {
            limits.max_model_calls = options.max_model_calls;
        }
        if options.max_tool_calls.is_some() {
            limits.max_tool_calls = options.max_tool_calls;
        }
        if options.max_budget_usd.is_some() {
            limits.max_budget_usd = options.max_budget_usd;
        }
        if let Some(cap) = limits.max_budget_usd
            && !(cap.is_finite() && cap >= 0.0)
        {
            return Err(LaunchError::InvalidBudget(cap));
        }
        Ok(Self {
            trust,
            trust_unreadable,
            trust_notice,
            unknown_vars,
            ..Self::from_parts(dirs, workspace, workspace_handle, layers, limits, options)
        })
    }

    /// pablo's directories and the canonical workspace, read before any config file is: what
    /// must work whatever the config says (revoking a project's trust).
    pub fn locate(options: &LaunchOptions) -> Result<(Dirs, PathBuf), LaunchError> {
        let dirs = Dirs::discover()?;
        let requested = match &options.workspace {
            Some(w) => w.clone(),
            None => std::env::current_dir().map_err(|e| LaunchError::Workspace {
                path: PathBuf::from("."),
                message: e.to_string(),
            })?,
        };
        Ok((dirs, canonical_dir(&requested)?))
    }

    /// The note saying which settings of an untrusted project config were ignored, for a
    /// front-end that says it apart from the other warnings (`pablo run` prints it on stderr,
    /// so stdout stays the run's own output, and leaves it out of its JSON lines).
    pub fn trust_notice(&self) -> Option<&str> {
        self.trust_notice.as_deref()
    }

    /// The endpoint a trusted project config chose (`base_url`, or its provider), for the
    /// status line: the person sees where their requests go.
    pub fn project_endpoint(&self) -> Option<String> {
        if !self.trust.may_name_endpoints() || self.options.base_url.is_some() {
            return None;
        }
        trust::project_endpoint(&self.layers)
    }

    /// A launch from parts already loaded (what `prepare` ends with), for a caller that chose its
    /// own directories and layers.
    pub(crate) fn from_parts(
        dirs: Dirs,
        workspace: PathBuf,
        workspace_handle: Arc<Workspace>,
        layers: Layers,
        limits: Limits,
        options: LaunchOptions,
    ) -> Self {
        Self {
            dirs,
            workspace,
            workspace_handle,
            layers,
            limits,
            options,
            trust_notice: None,
            trust: Trust::UNTRUSTED,
            trust_unreadable: None,
            unknown_vars: None,
        }
    }

    /// Settings of the config layers that are ignored whatever else is built (the project's
    /// config cannot choose them; an untrusted project's, [`Launch::trust_notice`]), as notes
    /// for the person. Every composed setup starts with them.
    pub fn config_warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        // The mode a session starts in is the person's choice (`start_mode`): a repository does
        // not pick it, and says so like every other setting of its config that is ignored.
        if let Some((path, c)) = &self.layers.project
            && c.tui.mode.is_some()
        {
            warnings.push(format!(
                "{}: [tui] mode ignored: only the user's config, --config or --mode choose the \
                 mode a session starts in",
                path.display()
            ));
        }
        if let Some((path, c)) = &self.layers.project
            && c.tui.vim.is_some()
        {
            warnings.push(format!(
                "{}: [tui] vim ignored: only the user's config or --config turn on vim keys",
                path.display()
            ));
        }
        if let Some(note) = &self.trust_notice {
            warnings.push(note.clone());
        }
        warnings.extend(self.web_search_warnings());
        warnings.extend(self.unknown_vars.clone());
        warnings
    }

    /// A new session id: time-ordered, so listings sort naturally.
    pub fn new_session_id() -> String {
        uuid::Uuid::now_v7().to_string()
    }

    /// The per-session directory for artifacts (spilled output, background logs).
    pub(crate) fn session_state_dir(&self, session_id: &str) -> PathBuf {
        self.dirs.data.join("sessions").join(session_id)
    }

    /// Builds the host services for one session: the shell settings of the layers, the sandbox
    /// the policy engine settled on (with the session's own temporary directory), and file tools
    /// that show only what `policy`'s read roots let them read.
    #[cfg(test)]
    pub(crate) fn host(
        &self,
        session_id: &str,
        policy: &Arc<PolicyEngine>,
    ) -> Result<Arc<Host>, LaunchError> {
        self.host_with(session_id, policy, HostParts::default())
    }

    /// [`Launch::host`] with the session's own parts: its MCP servers, the checkpoints that hear
    /// of every file write, the front-end's editor.
    fn host_with(
        &self,
        session_id: &str,
        policy: &Arc<PolicyEngine>,
        parts: HostParts,
    ) -> Result<Arc<Host>, LaunchError> {
        self.host_in(self.session_state_dir(session_id), policy, parts)
    }

    /// [`Launch::host_with`] keeping its state in `state_dir`.
    fn host_in(
        &self,
        state_dir: PathBuf,
        policy: &Arc<PolicyEngine>,
        parts: HostParts,
    ) -> Result<Arc<Host>, LaunchError> {
        std::fs::create_dir_all(&state_dir).map_err(|e| LaunchError::StateDir {
            path: state_dir.clone(),
            message: e.to_string(),
        })?;
        let roots = policy.clone();
        let memory = self.memory_enabled().then(|| {
            Arc::new(pablo_tools::memory_propose::MemoryStore::new(
                &state_dir,
                self.memory_file(),
            ))
        });
        let services = pablo_tools::HostServices {
            editor: parts.editor,
            network: parts.network.unwrap_or_else(|| {
                pablo_tools::web_fetch::NetworkBudget::new(self.limits.max_network_requests)
            }),
            memory,
            changes: parts
                .checkpoints
                .map(|c| c as Arc<dyn pablo_tools::ChangeRecorder>),
            mcp: parts.mcp,
            lsp: parts.lsp,
            readable: Some(Arc::new(move |path: &str| {
                roots.check_path(path, pablo_policy::Access::Read).is_ok()
            })),
            sandbox: policy.sandbox_settings().clone(),
        };
        Ok(Arc::new(Host::with_services(
            self.workspace_handle.clone(),
            state_dir,
            &self.shell_options(policy.launcher()),
            services,
        )))
    }

    /// Whether `memory.propose` is offered and accepted notes reach the system prompt: `[memory]
    /// enabled = true` in the user's config or `--config`, and no layer turning it off (the
    /// project's layer comes with the repository, so it can only turn memory off).
    pub(crate) fn memory_enabled(&self) -> bool {
        let trusted_on = self
            .layers
            .personal()
            .filter_map(|(_, c)| c.memory.enabled)
            .next_back()
            == Some(true);
        let off = self.layers.iter().any(|c| c.memory.enabled == Some(false));
        trusted_on && !off
    }

    /// The person's memory file (`$XDG_DATA_HOME/pablo/memory.md`).
    pub(crate) fn memory_file(&self) -> PathBuf {
        pablo_tools::memory_propose::memory_file(&self.dirs.data)
    }

    /// The content store checkpoints keep file bytes in (`$XDG_DATA_HOME/pablo/checkpoints`).
    pub(crate) fn checkpoint_objects(&self) -> ObjectStore {
        ObjectStore::at(pablo_session::checkpoint::objects_dir(&self.dirs.data))
    }

    /// The session's checkpoints, from `[options.checkpoints]`, starting from `history`; `None`
    /// when they are switched off.
    pub(crate) fn checkpoints(&self, history: History) -> Option<Arc<Checkpoints>> {
        let config = self.layers.checkpoints();
        if config.enabled == Some(false) {
            return None;
        }
        let shell_off = self.options.no_shell || self.layers.shell().enabled == Some(false);
        Some(Arc::new(Checkpoints::new(
            self.workspace_handle.clone(),
            self.checkpoint_objects(),
            CheckpointSettings {
                max_bytes: config.max_bytes.unwrap_or(DEFAULT_MAX_BYTES),
                max_file_bytes: config.max_file_bytes.unwrap_or(DEFAULT_MAX_FILE_BYTES),
                scan_commands: !shell_off,
            },
            history,
        )))
    }

    /// `[options.shell]` merged over the layers, except the launcher, which is the one the policy
    /// engine settled on: the project layer comes with the repository, so its launcher counts only
    /// once the folder is trusted (`PolicyEngine::launcher`), and policy warns when it is ignored.
    pub(crate) fn shell_options(&self, launcher: &str) -> pablo_config::ShellOptions {
        let mut options = self.layers.shell();
        options.launcher = Some(launcher.to_string());
        options
    }

    /// The tools this host grants, narrowed by flags; the shell tools use the policy's launcher
    /// and command environment.
    pub(crate) fn catalog(&self, policy: &PolicyEngine) -> Result<Catalog, LaunchError> {
        self.catalog_with(policy.launcher(), policy.command_env().clone())
    }

    fn catalog_with(
        &self,
        launcher: &str,
        env: Arc<pablo_process::CommandEnv>,
    ) -> Result<Catalog, LaunchError> {
        let mut catalog = Catalog::new();
        catalog
            .register(Arc::new(pablo_tools::plan::PlanUpdate))
            .map_err(|e| LaunchError::Setup(e.to_string()))?;
        let fs_disabled = self
            .layers
            .iter()
            .any(|l| l.options.filesystem.enabled == Some(false));
        let filesystem = !self.options.no_filesystem && !fs_disabled;
        if filesystem {
            pablo_tools::register_filesystem(
                &mut catalog,
                &self.workspace_handle,
                self.options.allow_write,
            )
            .map_err(|e| LaunchError::Setup(e.to_string()))?;
        }
        let (fetch, _) = pablo_tools::web_fetch::FetchSettings::from_env();
        pablo_tools::register_catalog_tools(
            &mut catalog,
            filesystem.then_some(&self.workspace_handle),
            &pablo_tools::CatalogLimits {
                max_network_requests: self.limits.max_network_requests,
                max_artifact_bytes: self.limits.max_artifact_bytes,
            },
            fetch,
            self.memory_enabled(),
        )
        .map_err(|e| LaunchError::Setup(e.to_string()))?;
        if !self.options.no_shell {
            pablo_tools::register_shell(&mut catalog, &self.shell_options(launcher), env)
                .map_err(|e| LaunchError::Setup(e.to_string()))?;
        }
        Ok(catalog)
    }

    /// The policy engine: every config layer, the `--policy` file, the authority flags, the
    /// folder's trust and its saved approvals. Ignored settings come back as warnings.
    pub fn policy(&self) -> Result<Warned<Arc<PolicyEngine>>, LaunchError> {
        if let Some(PolicyError::Store { path, message }) = &self.trust_unreadable {
            return Err(PolicyError::Store {
                path: path.clone(),
                message: message.clone(),
            }
            .into());
        }
        let static_policy = match &self.options.policy {
            Some(p) => Some((p.clone(), StaticPolicy::load(p)?)),
            None => None,
        };
        let flags = CliFlags {
            no_shell: self.options.no_shell,
            no_filesystem: self.options.no_filesystem,
            allow_write: self.options.allow_write,
            preapproved_writes: self.options.preapproved_writes,
        };
        let engine = PolicyEngine::build(
            &self.workspace,
            &self.dirs,
            &self.layers,
            self.trust,
            static_policy.as_ref().map(|(p, s)| (p.as_path(), s)),
            flags,
        )?;
        let mut warnings = engine.warnings().to_vec();
        if let (_, Some(note)) = pablo_tools::web_fetch::FetchSettings::from_env() {
            warnings.push(note);
        }
        Ok(Warned::new(Arc::new(engine), warnings))
    }

    /// The system prompt with the project's AGENTS.md instructions (a warning when they were
    /// cut).
    pub(crate) fn system_prompt(&self) -> Warned<String> {
        let project = context::project_instructions(&self.workspace);
        let mut warnings = Vec::new();
        if project.truncated {
            warnings.push(format!(
                "the AGENTS.md instructions are over {} bytes: their start (from the files \
                 nearest the repository root) was left out; the nearest file keeps the last word",
                context::MAX_PROJECT_INSTRUCTIONS
            ));
        }
        let mut prompt = context::system_prompt(&self.workspace, &project);
        if self.memory_enabled()
            && let Some(notes) = pablo_tools::memory_propose::accepted_notes(&self.memory_file())
        {
            prompt.push_str(
                "\n# Memory\n\nNotes the person accepted in earlier sessions (they wrote or \
                 approved each one):\n\n",
            );
            prompt.push_str(&notes);
            prompt.push('\n');
        }
        Warned::new(prompt, warnings)
    }

    /// The session journals (`$XDG_DATA_HOME/pablo/sessions`).
    pub fn session_store(&self) -> Store {
        Store::at(self.dirs.data.join("sessions"))
    }

    /// Everything `agent::spawn` needs, for a given model, journaling a new session; `editor` is
    /// the front-end's buffers and terminals, when it offers them.
    pub fn agent_setup(
        &self,
        session_id: String,
        model: Arc<dyn ModelClient>,
        approvals: ApprovalMode,
        editor: Option<Arc<dyn Editor>>,
    ) -> Result<Warned<AgentSetup>, LaunchError> {
        // Written from the first turn on: a session nobody spoke in is not kept.
        let journal = self.session_store().create_pending(
            &self.header(&session_id, model.as_ref()),
            Some(self.session_state_dir(&session_id)),
        )?;
        self.new_session_setup(session_id, model, approvals, editor, Box::new(journal))
    }

    /// Like [`Launch::agent_setup`] for `pablo run`, whose task is given up front: the journal
    /// file is written now, before `session_started` is printed, so a kill at any moment after
    /// that line leaves a session that `--resume` finds (with no turn yet, if it came that early).
    pub fn agent_setup_for_task(
        &self,
        session_id: String,
        model: Arc<dyn ModelClient>,
        approvals: ApprovalMode,
    ) -> Result<Warned<AgentSetup>, LaunchError> {
        let journal = self
            .session_store()
            .create(&self.header(&session_id, model.as_ref()))?;
        self.new_session_setup(session_id, model, approvals, None, Box::new(journal))
    }

    fn header(&self, session_id: &str, model: &dyn ModelClient) -> Header {
        Header::new(
            session_id,
            self.workspace.to_string_lossy(),
            model.model(),
            model.provider(),
        )
    }

    fn new_session_setup(
        &self,
        session_id: String,
        model: Arc<dyn ModelClient>,
        approvals: ApprovalMode,
        editor: Option<Arc<dyn Editor>>,
        journal: Box<dyn pablo_core::EventRecorder>,
    ) -> Result<Warned<AgentSetup>, LaunchError> {
        let start = SessionStart {
            session_id,
            model,
            approvals,
            editor,
            journal,
            history: Vec::new(),
            resumed: None,
        };
        self.build_setup(start)
    }

    /// Like [`Launch::agent_setup`], continuing the journaled session `session_id` (a full id):
    /// the conversation, the session's "allow always" answers and the journal come back. Each
    /// journaled event goes to `each` as it is read, in order, for a front-end to redraw (the
    /// state keeps none); show [`ResumeState::start_events`] after them.
    pub fn resume_setup(
        &self,
        session_id: &str,
        model: Arc<dyn ModelClient>,
        approvals: ApprovalMode,
        editor: Option<Arc<dyn Editor>>,
        each: &mut dyn FnMut(Event),
    ) -> Result<(Warned<AgentSetup>, ResumeState), LaunchError> {
        let (journal, mut state) = self.session_store().resume_with(session_id, each)?;
        // The conversation moves to the agent: a long session's history is held once.
        let history = std::mem::take(&mut state.history);
        let start = SessionStart {
            session_id: session_id.to_string(),
            model,
            approvals,
            editor,
            journal: Box::new(journal),
            history,
            resumed: Some(&state),
        };
        let setup = self.build_setup(start)?;
        Ok((setup, state))
    }

    /// The one way an agent is composed, new or resumed: policy (with a resumed session's
    /// saved answers), checkpoints, MCP servers, catalog (offering what policy allows), host,
    /// system prompt. The warnings come in that order, after the config's own.
    fn build_setup(&self, start: SessionStart<'_>) -> Result<Warned<AgentSetup>, LaunchError> {
        let mut warnings = self.config_warnings();
        let policy = self.policy()?.into_value(&mut warnings);
        if let Some(state) = start.resumed {
            state
                .restore_approvals(&policy)
                .map_err(|e| LaunchError::Setup(e.to_string()))?;
        }
        let history = start
            .resumed
            .map(|s| s.checkpoints.clone())
            .unwrap_or_default();
        let checkpoints = self.checkpoints(history);
        let hub = self.mcp_hub(&policy).into_value(&mut warnings);
        let lsp = self.lsp_hub(&policy).into_value(&mut warnings);
        let mut catalog = self.catalog(&policy)?;
        // `lsp.query` only where a server could answer it, beside the file tools.
        if !lsp.server_names().is_empty()
            && catalog.get(pablo_core::ToolName::FsRead.native()).is_some()
        {
            catalog
                .register(Arc::new(pablo_tools::lsp_query::LspQuery::new(
                    self.workspace_handle.clone(),
                )))
                .map_err(|e| LaunchError::Setup(e.to_string()))?;
        }
        catalog.attach_mcp(hub.clone());
        let skills = self.skills().into_value(&mut warnings);
        let agents = self.agents().into_value(&mut warnings);
        register_delegation(&mut catalog, agents, &skills)?;
        offer_what_policy_allows(&mut catalog, &policy);
        let parts = HostParts {
            mcp: Some(hub),
            lsp: Some(lsp),
            checkpoints: checkpoints.clone(),
            editor: start.editor,
            network: None,
        };
        let host = self.host_with(&start.session_id, &policy, parts)?;
        let hooks = self.hooks(&policy);
        warnings.extend(hooks.warnings());
        let mut system_prompt = self.system_prompt().into_value(&mut warnings);
        let setup_session_id = start.session_id.clone();
        // In the stable part of the prompt: the list is the same on every request.
        system_prompt.push_str(&pablo_tools::skill_load::prompt_section(&skills));
        let setup = AgentSetup {
            hooks: Arc::new(hooks),
            host,
            checkpoints,
            catalog,
            policy,
            limits: self.limits.clone(),
            system_prompt,
            session_id: start.session_id,
            model: start.model,
            approvals: start.approvals,
            history: start.history,
            recorder: Some(start.journal),
            mode: self.start_mode(),
            model_switcher: Some(self.model_switcher()),
            isolator: Some(self.isolator(&setup_session_id)),
        };
        Ok(Warned::new(setup, warnings))
    }

    /// The person's hooks (docs/hooks.md): those of the user layer and `--config`, and the
    /// project's only in a trusted folder; they run in the workspace with the environment
    /// commands get (no provider key, nothing that looks secret), in a folder not trusted without
    /// what would point them at the workspace's own configuration.
    pub(crate) fn hooks(&self, policy: &PolicyEngine) -> pablo_hooks::Hooks {
        pablo_hooks::Hooks::from_layers(
            &self.layers,
            self.trust.may_run_programs(),
            self.started_program_env(policy),
            self.workspace.clone(),
        )
        .protecting(self.own_dirs())
    }

    /// The limits every session of this launch runs under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The kind of every tool this launch would offer, by native name (what an editor shows as
    /// the icon of a call).
    pub fn tool_kinds(&self) -> Result<Vec<(String, pablo_core::ToolKind)>, LaunchError> {
        // Only the kinds are read, so the launcher and environment do not matter.
        let catalog = self.catalog_with(pablo_process::DEFAULT_LAUNCHER, Default::default())?;
        Ok(catalog
            .names()
            .filter_map(|n| catalog.get(n).map(|t| (n.to_string(), t.kind())))
            .collect())
    }

    /// The person's custom slash commands: the user's, and the project's when the folder is
    /// trusted. Skipped files come back as warnings.
    pub fn custom_commands(&self) -> Warned<Vec<pablo_protocol::CustomCommand>> {
        let trusted = self.trust.may_add_instructions();
        let project = self.workspace.join(".pablo").join("commands");
        let (commands, notes) = commands::load(
            &self.dirs.config.join("commands"),
            trusted.then_some(project.as_path()),
        );
        Warned::new(commands, notes)
    }

    /// The person's custom agents, and the project's when the folder is trusted. Skipped files
    /// come back as warnings.
    pub(crate) fn agents(&self) -> Warned<Vec<pablo_tools::agent_task::AgentDefinition>> {
        let project = self
            .trust
            .may_add_instructions()
            .then_some(self.workspace.as_path());
        let (agents, notes) = extensions::agents(&self.dirs.config, project);
        Warned::new(agents, notes)
    }

    /// The Agent Skills installed for the person (`~/.agents/skills`, `~/.claude/skills`), and
    /// the project's when the folder is trusted. Skipped folders come back as warnings.
    pub(crate) fn skills(&self) -> Warned<Vec<pablo_tools::skill_load::Skill>> {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let project = self
            .trust
            .may_add_instructions()
            .then_some(self.workspace.as_path());
        let (skills, notes) = extensions::skills(home.as_deref(), project);
        Warned::new(skills, notes)
    }

    /// The installed skills as `/skills` lists them (the warnings come with the setup's).
    pub fn skill_summaries(&self) -> Vec<pablo_protocol::SkillSummary> {
        self.skills()
            .value
            .into_iter()
            .map(|s| pablo_protocol::SkillSummary {
                name: s.name,
                description: s.description,
                source: s.source,
            })
            .collect()
    }

    /// The working mode at start: `--mode`, else `[tui] mode` of the user's config or
    /// `--config` (never the project's), else `ask`.
    pub(crate) fn start_mode(&self) -> pablo_protocol::WorkMode {
        self.options
            .mode
            .or_else(|| {
                self.layers
                    .personal()
                    .filter_map(|(_, c)| c.tui.mode)
                    .next_back()
            })
            .unwrap_or_default()
    }

    /// `[tui]` over the config layers (the last layer that sets a value wins).
    pub fn tui_config(&self) -> pablo_config::TuiConfig {
        pablo_config::TuiConfig {
            alt_screen: self.layers.last(|c| c.tui.alt_screen),
            mode: Some(self.start_mode()),
            notifications: self.layers.last(|c| c.tui.notifications),
            statusline_command: self.layers.last(|c| c.tui.statusline_command.clone()),
            vim: self
                .layers
                .personal()
                .filter_map(|(_, c)| c.tui.vim)
                .next_back(),
        }
    }

    /// What the person has granted, for a status line: `edits ask · commands ask`,
    /// `read-only · commands ask`, `edits auto` (headless `--allow-write`), `no shell`.
    pub fn authority_label(&self) -> String {
        let o = &self.options;
        let edits = if o.no_filesystem || !o.allow_write {
            "read-only"
        } else if o.preapproved_writes {
            "edits auto"
        } else {
            "edits ask"
        };
        let shell = if o.no_shell {
            "no shell"
        } else {
            "commands ask"
        };
        format!("{edits} · {shell}")
    }
}

/// What one session's host gets beyond what the launch gives every host.
#[derive(Default)]
struct HostParts {
    mcp: Option<Arc<pablo_tools::mcp::McpHub>>,
    lsp: Option<Arc<pablo_lsp::LspHub>>,
    checkpoints: Option<Arc<Checkpoints>>,
    editor: Option<Arc<dyn Editor>>,
    /// The count of `web.fetch` requests to share (an isolated subagent's host counts against
    /// the session's); `None`: a count of its own.
    network: Option<pablo_tools::web_fetch::NetworkBudget>,
}

/// What [`Launch::build_setup`] composes an agent for: a new session or a resumed one.
struct SessionStart<'a> {
    session_id: String,
    model: Arc<dyn ModelClient>,
    approvals: ApprovalMode,
    editor: Option<Arc<dyn Editor>>,
    journal: Box<dyn pablo_core::EventRecorder>,
    /// The conversation so far (a resumed session's, taken out of `resumed`).
    history: Vec<pablo_model::Message>,
    /// The resumed session's state: its checkpoints and saved answers.
    resumed: Option<&'a ResumeState>,
}

/// What to say once at start when `model` is not in the table of known models and the config
/// names no window for it: the window pablo assumes, and the setting that names the real one.
/// Front-ends say it where a person reads it (the TUI's screen, `pablo run`'s stderr), never
/// on `pablo run`'s stdout.
pub fn unknown_model_note(model: &dyn ModelClient) -> Option<String> {
    let profile = model.profile();
    (!profile.known).then(|| {
        format!(
            "the model {} (provider {}) is not in pablo's table of models: its context window is \
             taken to be {} tokens and its prices are unknown; `context_window` under `[model]` \
             in the config sets the window (docs/providers.md)",
            model.model(),
            model.provider(),
            profile.context_window
        )
    })
}

/// [`unknown_model_note`] as a start-up warning for a front-end's screen.
pub fn unknown_model_warning(model: &dyn ModelClient) -> Option<Event> {
    unknown_model_note(model).map(|message| Event::Warning { message })
}

/// File options from every layer: refused names add up, the smallest file-size cap wins.
fn workspace_options(layers: &Layers) -> WorkspaceOptions {
    let mut out = WorkspaceOptions::default();
    for layer in layers.iter() {
        let fs = &layer.options.filesystem;
        out.refused_names.extend(fs.refused_names.iter().cloned());
        out.max_file_bytes = match (out.max_file_bytes, fs.max_file_bytes) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    out
}

fn canonical_dir(path: &Path) -> Result<PathBuf, LaunchError> {
    let canonical = std::fs::canonicalize(path).map_err(|e| LaunchError::Workspace {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    if !canonical.is_dir() {
        return Err(LaunchError::Workspace {
            path: path.to_path_buf(),
            message: "not a directory".into(),
        });
    }
    Ok(canonical)
}

/// The model is offered only the tools policy does not deny outright (`PolicyEngine::offers`):
/// a layer removes tools from what is offered, never adds one. They stay registered, so a call
/// made anyway is refused with the rule that denies it.
/// Registers `agent.task` with the session's agents, and `skill.load` when a skill is
/// installed.
fn register_delegation(
    catalog: &mut Catalog,
    agents: Vec<pablo_tools::agent_task::AgentDefinition>,
    skills: &[pablo_tools::skill_load::Skill],
) -> Result<(), LaunchError> {
    let roster = pablo_tools::agent_task::AgentRoster::new(agents);
    catalog
        .register_agents(Arc::new(roster))
        .map_err(|e| LaunchError::Setup(e.to_string()))?;
    catalog
        .register_skills(Arc::new(skills.to_vec()))
        .map_err(|e| LaunchError::Setup(e.to_string()))
}

fn offer_what_policy_allows(catalog: &mut Catalog, policy: &Arc<PolicyEngine>) {
    let policy = policy.clone();
    catalog.offer_only(Arc::new(move |tool: &str, kind| policy.offers(tool, kind)));
}
