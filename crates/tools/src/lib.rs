//! The tool catalog: what the model may call, and the one shape every call goes through.
//!
//! Each tool lives in its own file and provides its closed JSON Schema, a `preview` (a dry run that
//! touches nothing) and a `commit` (which does exactly what the preview showed). The agent loop
//! validates arguments against the schema before calling either, so tools may assume the shape.

pub mod agent_task;
pub mod artifact_write;
pub mod csv_analyze;
pub mod editor;
pub mod fetch_rules;
pub(crate) mod fs_edit;
pub mod fs_list;
pub(crate) mod fs_read;
pub(crate) mod fs_search;
pub mod fs_write;
pub(crate) mod html_text;
pub mod lsp_query;
pub mod mcp;
pub mod memory_propose;
pub mod plan;
mod result;
pub(crate) mod schema;
pub(crate) mod shell_report;
pub mod shell_run;
pub mod shell_session;
pub(crate) mod shell_terminal;
pub mod skill_load;
mod view;
pub mod web_fetch;
mod wording;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use pablo_core::{Coded, ErrorCode, EventSink, ToolFailure, ToolKind, ToolName, ToolSpec};
use pablo_protocol::Preview;

pub use result::ToolResult;
pub use view::{describe_call, describe_result};

/// Everything a tool may touch, handed to it per call.
#[derive(Clone)]
pub struct ToolContext {
    pub call_id: String,
    /// Cancelled when the turn is interrupted. Tools check it before committing.
    pub cancel: CancellationToken,
    pub events: EventSink,
    pub host: Arc<Host>,
}

/// Services shared by every call of a session. Modules add their handles here as they land.
pub struct Host {
    /// The workspace directory as the person named it (canonicalised at admission).
    pub workspace_root: PathBuf,
    /// Per-session state: spilled shell output, background session logs.
    pub(crate) state_dir: PathBuf,
    /// The workspace opened once at admission; every file access goes through it.
    pub workspace: Arc<pablo_workspace::Workspace>,
    /// Background shell sessions (`shell.run` with `background: true`, `shell.session`). Dropping
    /// the host kills every session that is still running.
    pub sessions: pablo_process::SessionManager,
    /// The front-end's buffers and terminals, when it offers them (an editor over ACP).
    pub(crate) editor: Option<Arc<dyn pablo_core::editor::Editor>>,
    /// HTTP requests `web.fetch` has sent in this session, against `limits.max_network_requests`.
    pub network: web_fetch::NetworkBudget,
    /// This session's memory proposals, when `[memory] enabled = true`.
    pub memory: Option<Arc<memory_propose::MemoryStore>>,
    /// The session's checkpoints: told what a file held before pablo changes it.
    pub(crate) changes: Option<Arc<dyn ChangeRecorder>>,
    /// The session's MCP servers (none configured: an empty hub).
    pub mcp: Arc<mcp::McpHub>,
    /// The session's language servers (none configured or found: an empty hub).
    pub lsp: Arc<pablo_lsp::LspHub>,
    /// Which workspace paths the file tools may show (policy's read and deny roots); `None`:
    /// every path. A listing or a search of a directory leaves out the rest, names included.
    pub readable: Option<ReadFilter>,
    /// The OS sandbox settings of the session's commands.
    pub sandbox: pablo_process::sandbox::SandboxSettings,
    /// Removes the session's temporary directory when the host goes (after the sessions, which
    /// are declared, and so dropped, first).
    /// The session's temporary directory, removed with the host.
    _temp: pablo_process::temp::SessionTemp,
    /// The empty `.git`/`.pablo` the sandbox made in the workspace, removed with the host.
    _placeholders: PlaceholderGuard,
}

/// Keeps the workspace's `.git`, `.pablo` and credential-named entries current between the
/// session's commands (`process::nested`), and removes the empty `.git`/`.pablo` placeholders
/// the sandbox made in the workspace (`process::shield`) when the host goes, after its sessions.
struct PlaceholderGuard {
    workspace: PathBuf,
    _tracking: pablo_process::Tracking,
}

impl PlaceholderGuard {
    fn new(workspace: PathBuf, credentials: &pablo_workspace::CredentialNames) -> Self {
        let rule = Arc::new(CredentialRuleOf(credentials.clone()));
        let _tracking = pablo_process::track(&workspace, rule);
        Self {
            workspace,
            _tracking,
        }
    }
}

/// The workspace's one credential rule (its `CredentialNames`, owned or borrowed), as the process
/// layer's mask and watches ask it. A wrapper because the trait (`pablo-process`) and the type
/// (`pablo-workspace`) are of two crates of one row, neither of which may name the other, and
/// this crate may implement a trait of another crate only for a type of its own.
pub struct CredentialRuleOf<T>(pub T);

impl<T> pablo_process::CredentialRule for CredentialRuleOf<T>
where
    T: std::borrow::Borrow<pablo_workspace::CredentialNames> + Send + Sync,
{
    fn names(&self, rel: &str) -> bool {
        self.0.borrow().matching(rel).is_some()
    }

    fn identity(&self) -> &[String] {
        self.0.borrow().patterns()
    }
}

impl Drop for PlaceholderGuard {
    fn drop(&mut self) {
        pablo_process::shield::remove_placeholders(&self.workspace);
    }
}

/// Keeps what a file held before pablo changes it, so the change can be undone (the session's
/// checkpoints implement it). Called from inside the commit of `fs.write` and `fs.edit`.
pub trait ChangeRecorder: Send + Sync {
    /// A new file is about to be created (before its missing directories are made).
    fn will_create(&self, rel: &pablo_workspace::RelPath);
    /// The bytes about to be replaced (`None`: the file is being created), after the revision
    /// check passed and before anything is written. An error stops the write.
    fn before_write(
        &self,
        rel: &pablo_workspace::RelPath,
        previous: Option<&pablo_workspace::FileBytes>,
    ) -> Result<(), String>;
    /// The bytes that landed.
    fn after_write(&self, rel: &pablo_workspace::RelPath, bytes: &[u8]);
}

/// Whether a workspace-relative path may be read (`""` is the root).
pub(crate) type ReadFilter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// The services a session's host is built with beyond its workspace and shell settings; each
/// left at its default is off (no editor, no memory, no MCP server, every path readable).
#[derive(Default)]
pub struct HostServices {
    pub editor: Option<Arc<dyn pablo_core::editor::Editor>>,
    pub network: web_fetch::NetworkBudget,
    pub memory: Option<Arc<memory_propose::MemoryStore>>,
    pub changes: Option<Arc<dyn ChangeRecorder>>,
    pub mcp: Option<Arc<mcp::McpHub>>,
    pub lsp: Option<Arc<pablo_lsp::LspHub>>,
    pub readable: Option<ReadFilter>,
    /// The sandbox of the session's commands; the host sets its own temporary directory in it.
    pub sandbox: pablo_process::sandbox::SandboxSettings,
}

impl Host {
    /// A host with the shell settings of `[options.shell]` and no other service; its commands'
    /// sandbox keeps them out of `state_dir`.
    pub fn new(
        workspace: Arc<pablo_workspace::Workspace>,
        state_dir: PathBuf,
        shell: &pablo_config::ShellOptions,
    ) -> Self {
        let services = HostServices {
            sandbox: pablo_process::sandbox::SandboxSettings {
                protected_dirs: vec![state_dir.clone()],
                ..Default::default()
            },
            ..HostServices::default()
        };
        Self::with_services(workspace, state_dir, shell, services)
    }

    /// A host with the shell settings of `[options.shell]` and `services`.
    pub fn with_services(
        workspace: Arc<pablo_workspace::Workspace>,
        state_dir: PathBuf,
        shell: &pablo_config::ShellOptions,
        services: HostServices,
    ) -> Self {
        // Only the session limits are read here; commands get their environment from the tools.
        let settings = pablo_process::ShellSettings::from_options(shell, Default::default());
        // Commands write temporary files here (`TMPDIR`); it sits with the system's temporary
        // files, not in pablo's own state, and its name is this host's alone. What sessions that
        // were killed left there is removed first.
        let temp = pablo_process::temp::SessionTemp::create(&std::env::temp_dir());
        let temp_dir = temp.path().to_path_buf();
        let root = workspace.root().to_path_buf();
        let placeholders = PlaceholderGuard::new(root.clone(), workspace.credential_names());
        Self {
            workspace_root: root.clone(),
            workspace,
            sessions: pablo_process::SessionManager::new(settings.max_sessions, settings.cleanup),
            editor: services.editor,
            network: services.network,
            memory: services.memory,
            changes: services.changes,
            mcp: services
                .mcp
                .unwrap_or_else(|| Arc::new(mcp::McpHub::empty())),
            lsp: services
                .lsp
                .unwrap_or_else(|| Arc::new(pablo_lsp::LspHub::empty())),
            readable: services.readable,
            sandbox: pablo_process::sandbox::SandboxSettings {
                temp_dir: Some(temp_dir.clone()),
                ..services.sandbox
            },
            state_dir,
            _temp: temp,
            _placeholders: placeholders,
        }
    }

    /// This host with the session's language servers (a test's or a bench's hub; launch passes
    /// them in [`HostServices`]).
    #[cfg(any(test, feature = "test-support"))]
    pub fn with_lsp(mut self, lsp: Arc<pablo_lsp::LspHub>) -> Self {
        self.lsp = lsp;
        self
    }

    /// The artifacts this session has written (`artifact.write`), oldest first.
    pub fn artifacts(&self) -> Vec<pablo_protocol::ArtifactSummary> {
        artifact_write::list(&self.state_dir)
    }
}

/// Registers the rest of the catalog: `csv.analyze` (with the file tools' workspace),
/// `artifact.write`, `web.fetch` unless the session may send no request, and `memory.propose`
/// only when memory is on.
pub fn register_catalog_tools(
    catalog: &mut Catalog,
    workspace: Option<&Arc<pablo_workspace::Workspace>>,
    limits: &CatalogLimits,
    fetch: web_fetch::FetchSettings,
    memory: bool,
) -> Result<(), schema::SchemaError> {
    if let Some(ws) = workspace {
        catalog.register(Arc::new(csv_analyze::CsvAnalyze::new(ws.clone())))?;
    }
    catalog.register(Arc::new(artifact_write::ArtifactWrite::new(
        limits.max_artifact_bytes,
    )))?;
    if limits.max_network_requests > 0 {
        catalog.register(Arc::new(web_fetch::WebFetch::new(fetch)))?;
    }
    if memory {
        catalog.register(Arc::new(memory_propose::MemoryPropose))?;
    }
    Ok(())
}

/// The task limits the catalog tools are built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatalogLimits {
    pub max_network_requests: u64,
    pub max_artifact_bytes: usize,
}

/// Registers `shell.run` and `shell.session` unless `[options.shell] enabled = false`.
/// Every command gets `env` as its base environment.
pub fn register_shell(
    catalog: &mut Catalog,
    options: &pablo_config::ShellOptions,
    env: Arc<pablo_process::CommandEnv>,
) -> Result<(), schema::SchemaError> {
    if options.enabled == Some(false) {
        return Ok(());
    }
    let settings = pablo_process::ShellSettings::from_options(options, env);
    catalog.register(Arc::new(shell_run::ShellRun::new(settings.clone())))?;
    catalog.register(Arc::new(shell_session::ShellSession::new(settings)))?;
    Ok(())
}

/// Registers the file tools: reads (`fs.read`, `fs.list`, `fs.search`) always, and the mutating
/// ones (`fs.write`, `fs.edit`) only when the host grants write authority.
pub fn register_filesystem(
    catalog: &mut Catalog,
    workspace: &Arc<pablo_workspace::Workspace>,
    allow_write: bool,
) -> Result<(), schema::SchemaError> {
    catalog.register(Arc::new(fs_read::FsRead::new(workspace.clone())))?;
    catalog.register(Arc::new(fs_list::FsList::new(workspace.clone())))?;
    catalog.register(Arc::new(fs_search::FsSearch::new(workspace.clone())))?;
    if allow_write {
        catalog.register(Arc::new(fs_write::FsWrite::new(workspace.clone())))?;
        catalog.register(Arc::new(fs_edit::FsEdit::new(workspace.clone())))?;
    }
    Ok(())
}

/// Deserializes already-validated arguments into a tool's argument struct.
pub fn parse_args<T: serde::de::DeserializeOwned>(
    tool: &str,
    args: &Value,
) -> Result<T, ToolFailure> {
    serde_json::from_value(args.clone())
        .map_err(|e| ToolFailure::new(ErrorCode::InvalidArguments, format!("{tool}: {e}")))
}

/// Runs blocking file work off the async threads.
pub(crate) async fn blocking<T, E>(
    f: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, ToolFailure>
where
    T: Send + 'static,
    E: Into<ToolFailure> + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(Into::into),
        Err(e) => Err(ToolFailure::new(
            ErrorCode::Internal,
            format!("a file operation stopped unexpectedly: {e}"),
        )),
    }
}

/// One tool of the catalog.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Native name, e.g. `fs.read` (an MCP tool's is built at run time: `mcp__SERVER__TOOL`).
    fn name(&self) -> &str;
    /// Name sent to providers, e.g. `fs_read` (providers reject dots).
    fn provider_name(&self) -> &str;
    fn kind(&self) -> ToolKind;
    /// The description the model reads.
    fn description(&self) -> String;
    /// A closed JSON Schema (`additionalProperties: false`) for the arguments.
    fn schema(&self) -> Value;
    /// The dry run. Touches nothing; returns what `commit` will do.
    async fn preview(&self, args: &Value, ctx: &ToolContext) -> Result<Preview, ToolFailure>;
    /// Do exactly what `preview` described, and say what happened. `preview` may be a narrowed
    /// version of what the tool returned (per-hunk review), never a widened one.
    async fn commit_result(
        &self,
        args: &Value,
        preview: &Preview,
        ctx: &ToolContext,
    ) -> Result<ToolResult, ToolFailure>;
    /// [`Tool::commit_result`] as the JSON the model receives (the tests' way in; the agent
    /// keeps the typed result).
    #[cfg(any(test, feature = "test-support"))]
    async fn commit(
        &self,
        args: &Value,
        preview: &Preview,
        ctx: &ToolContext,
    ) -> Result<Value, ToolFailure> {
        self.commit_result(args, preview, ctx)
            .await
            .map(|r| r.to_json())
    }
    /// The workspace file this call would write (`fs.write`, `fs.edit`), as its preview names
    /// it: the policy judges the path even when the preview cannot be made (the file exists, or
    /// has changed), so a write the policy forbids is answered `denied`, never with a hint to
    /// retry.
    fn write_target(&self, args: &Value) -> Option<String> {
        let _ = args;
        None
    }
    /// Narrows a preview to the accepted hunks (per-hunk review). Only file changes have hunks.
    fn narrow(&self, preview: &Preview, hunks: &[usize]) -> Result<Preview, ToolFailure> {
        let _ = (preview, hunks);
        Err(ToolFailure::new(
            ErrorCode::HunksUnsupported,
            format!("{} has no hunks to choose from", self.name()),
        ))
    }
}

/// The tools one session offers, by native and provider name: the ones registered at launch,
/// then those of the MCP servers that are ready at the moment of asking (servers start in the
/// background and may change their tools, so that part is read live).
#[derive(Default, Clone)]
pub struct Catalog {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    validators: BTreeMap<String, Arc<schema::Validator>>,
    mcp: Option<Arc<mcp::McpHub>>,
    /// Which tools are offered to the model (by native name); all when unset.
    offered: Option<OfferFilter>,
    /// The agents `agent.task` may run, when it is registered.
    agents: Option<Arc<agent_task::AgentRoster>>,
    /// The skills `skill.load` loads, when it is registered.
    skills: Option<Arc<Vec<skill_load::Skill>>>,
    /// Which MCP tools a narrowed catalog keeps; all when unset (the session's own).
    mcp_scope: Option<McpScope>,
}

/// Which MCP tools a subagent's catalog holds (read live, as servers come and go).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpScope {
    /// Those whose server says they only read (`readOnlyHint`): the read-only catalog's. The
    /// hint decides what is offered, never what is allowed: each call is judged as always.
    ReadOnly,
    /// Those named, as offered (`mcp__SERVER__TOOL`), or every tool of a server
    /// (`mcp__SERVER`, `mcp__SERVER__*`).
    Named(Vec<String>),
}

impl McpScope {
    pub(crate) fn admits(&self, offered: &str, read_only_hint: Option<bool>) -> bool {
        match self {
            McpScope::ReadOnly => read_only_hint == Some(true),
            McpScope::Named(names) => names.iter().any(|n| {
                let server = n.strip_suffix("__*").unwrap_or(n);
                n == offered
                    || (server.matches("__").count() == 1
                        && offered
                            .strip_prefix(server)
                            .is_some_and(|rest| rest.starts_with("__")))
            }),
        }
    }
}

/// Whether a tool (native name, kind) is offered to the model: policy's answer, kept by the
/// catalog without the catalog knowing policy.
pub(crate) type OfferFilter = Arc<dyn Fn(&str, ToolKind) -> bool + Send + Sync>;

impl Catalog {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a tool. Panics never: an invalid schema is a programming error reported as `Err`.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), schema::SchemaError> {
        let validator = schema::Validator::new(&tool.schema())?;
        self.validators
            .insert(tool.name().to_string(), Arc::new(validator));
        self.tools.insert(tool.name().to_string(), tool);
        Ok(())
    }

    /// Compiles every registered tool's schema now (they compile at a tool's first call
    /// otherwise); a test runs this over the whole catalog.
    #[cfg(any(test, feature = "test-support"))]
    pub fn compile_schemas(&self) -> Result<(), schema::SchemaError> {
        self.validators.values().try_for_each(|v| v.compile())
    }

    /// Offers the tools of the session's MCP servers as they become ready.
    pub fn attach_mcp(&mut self, hub: Arc<mcp::McpHub>) {
        self.mcp = Some(hub);
    }

    /// Offers the model only the tools `filter` accepts. The others stay registered: a call to
    /// one is still judged, and refused with the rule that denies it.
    pub fn offer_only(&mut self, filter: OfferFilter) {
        self.offered = Some(filter);
    }

    /// Registers `agent.task` with the agents it may run.
    pub fn register_agents(
        &mut self,
        roster: Arc<agent_task::AgentRoster>,
    ) -> Result<(), schema::SchemaError> {
        self.register(Arc::new(agent_task::AgentTask::new(roster.clone())))?;
        self.agents = Some(roster);
        Ok(())
    }

    /// Registers `skill.load` with the installed skills (none: nothing is registered).
    pub fn register_skills(
        &mut self,
        skills: Arc<Vec<skill_load::Skill>>,
    ) -> Result<(), schema::SchemaError> {
        if skills.is_empty() {
            return Ok(());
        }
        self.register(Arc::new(skill_load::SkillLoad::new(skills.clone())))?;
        self.skills = Some(skills);
        Ok(())
    }

    /// The installed skills (empty when `skill.load` is not registered).
    pub fn skills(&self) -> &[skill_load::Skill] {
        self.skills.as_deref().map_or(&[], Vec::as_slice)
    }

    /// The agents `agent.task` may run (`None`: the tool is not registered).
    pub fn agents(&self) -> Option<&Arc<agent_task::AgentRoster>> {
        self.agents.as_ref()
    }

    /// The narrower catalog of a subagent or a subtask: the registered tools named in `names`
    /// (native names), the MCP tools `mcp` admits (none when `None`), never `agent.task`'s agents
    /// (nothing below delegates further) and the skills only with `skill.load`. The offer filter
    /// is kept: what policy hides stays hidden.
    pub fn narrowed(&self, names: &[&str], mcp: Option<McpScope>) -> Catalog {
        let keep = |n: &String| names.contains(&n.as_str());
        let skills = if names.contains(&ToolName::SkillLoad.native()) {
            self.skills.clone()
        } else {
            None
        };
        Catalog {
            tools: self
                .tools
                .iter()
                .filter(|(n, _)| keep(n))
                .map(|(n, t)| (n.clone(), t.clone()))
                .collect(),
            validators: self
                .validators
                .iter()
                .filter(|(n, _)| keep(n))
                .map(|(n, v)| (n.clone(), v.clone()))
                .collect(),
            mcp: mcp.as_ref().and(self.mcp.clone()),
            mcp_scope: mcp,
            offered: self.offered.clone(),
            agents: None,
            skills,
        }
    }

    /// Whether the MCP tool offered as `name` is in this catalog's scope.
    fn admits_mcp(&self, hub: &mcp::McpHub, name: &str) -> bool {
        self.mcp_scope
            .as_ref()
            .is_none_or(|scope| scope.admits(name, hub.read_only_hint(name)))
    }

    /// The specs of the MCP tools in this catalog's scope that `offered` lets through.
    fn mcp_specs(&self, hub: &mcp::McpHub, offered: impl Fn(&str) -> bool) -> Vec<ToolSpec> {
        hub.specs_where(|name, hint| {
            offered(name)
                && self
                    .mcp_scope
                    .as_ref()
                    .is_none_or(|scope| scope.admits(name, hint))
        })
    }

    /// Removes a tool (policy layers can narrow the catalog, never widen it).
    #[cfg(any(test, feature = "test-support"))]
    pub fn remove(&mut self, name: &str) {
        self.tools.remove(name);
        self.validators.remove(name);
    }

    /// Finds a tool by native or provider name.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        if let Some(t) = self
            .tools
            .get(name)
            .or_else(|| self.tools.values().find(|t| t.provider_name() == name))
        {
            return Some(t.clone());
        }
        self.mcp
            .as_ref()
            .filter(|hub| self.admits_mcp(hub, name))
            .and_then(|hub| hub.tool(name))
    }

    pub fn validator(&self, native_name: &str) -> Option<Arc<schema::Validator>> {
        if let Some(v) = self.validators.get(native_name) {
            return Some(v.clone());
        }
        self.mcp
            .as_ref()
            .filter(|hub| self.admits_mcp(hub, native_name))
            .and_then(|hub| hub.validator(native_name))
    }

    /// The registered tools' names (MCP tools come and go; [`Catalog::specs`] has them).
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.tools.keys().map(String::as_str)
    }

    #[cfg(any(test, feature = "test-support"))]
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
            && self
                .mcp
                .as_ref()
                .is_none_or(|hub| self.mcp_specs(hub, |_| true).is_empty())
    }

    /// Specs in provider naming, in a stable order: registered tools, then MCP tools.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let offered =
            |name: &str, kind: ToolKind| self.offered.as_ref().is_none_or(|f| f(name, kind));
        let mut specs: Vec<ToolSpec> = self
            .tools
            .values()
            .filter(|t| offered(t.name(), t.kind()))
            .map(|t| ToolSpec {
                name: t.provider_name().to_string(),
                description: t.description(),
                parameters: t.schema(),
            })
            .collect();
        if let Some(hub) = &self.mcp {
            specs.extend(self.mcp_specs(hub, |name| offered(name, ToolKind::Execute)));
        }
        specs
    }
}
