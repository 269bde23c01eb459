//! Policy: for every tool call, allow, ask or deny — with the reasons and the rule ids.
//!
//! The agent loop calls [`PolicyEngine::decide`] between preview and commit. For a shell command
//! the engine also fills the preview's list of simple commands, so the prompt shows what was
//! parsed and which rule decided each part. "Allow always" answers go through
//! [`PolicyEngine::remember`], which saves rules outside the workspace.
//!
//! The pieces: [`shell`] turns command text into simple commands with literal-proof per word (in
//! a helper process when the binary runs, [`shell_helper`]),
//! [`judge`] decides a command line, [`rules`] resolves command words and matches command rules,
//! [`patterns`] holds the deny/allow regexes, [`paths`] the file-system roots, [`layers`] the
//! intersection of every source of policy, [`static_policy`] the `--policy` JSON file, and
//! [`store`] the saved approvals and trusted folders. [`cli`] backs `pablo policy …`.
//!
//! None of this contains a program once it runs: rules decide what may start.

pub mod cli;
pub(crate) mod expand;
pub(crate) mod fetch;
pub(crate) mod judge;
pub(crate) mod layers;
mod links;
mod parses;
pub(crate) mod paths;
pub mod patterns;
pub mod plain;
mod remember;
pub(crate) mod rules;
pub(crate) mod safe;
mod safe_git;
mod safe_more;
mod safe_sed;
mod safe_table;
pub mod shell;
mod shell_helper;
pub(crate) mod static_policy;
pub(crate) mod store;
mod unwrapped;
pub(crate) mod wrappers;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::RwLock;

pub use layers::CliFlags;
use pablo_core::{ErrorCode, ToolMode};
use pablo_process::CommandEnv;
pub use parses::LineParses;
pub use paths::Access;
pub use shell::isolate_shell_parser;
pub use static_policy::StaticPolicy;
pub use store::{RuleStore, SavedKind, SavedRule, TrustStore};

use judge::{Judge, LineJudgement};
use layers::{Compiled, Sources};
use pablo_config::{ConfigError, ConfigFile, Dirs, Layers, Trust};
use pablo_core::{Coded, ToolKind};
use pablo_protocol::{Decision, Preview, Verdict, WorkMode};
use rules::{CompiledRule, Resolver};

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("cannot save or read policy state in {path}: {message}")]
    Store { path: PathBuf, message: String },
    #[error(
        "refusing to keep approvals in {path}: it is inside the workspace, where the model could edit it"
    )]
    StoreInWorkspace { path: PathBuf },
    #[error("policy file {path}: cannot read: {message}")]
    Unreadable { path: PathBuf, message: String },
    #[error("policy file {path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("{layer}: {message}")]
    Layer { layer: String, message: String },
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("no saved rule {id:?} for workspace {workspace}")]
    RuleNotFound { id: String, workspace: PathBuf },
}

impl Coded for PolicyError {
    fn code(&self) -> ErrorCode {
        match self {
            PolicyError::Store { .. } => ErrorCode::PolicyStoreFailed,
            PolicyError::StoreInWorkspace { .. } => ErrorCode::PolicyStoreInWorkspace,
            PolicyError::Unreadable { .. } => ErrorCode::PolicyUnreadable,
            PolicyError::Invalid { .. } | PolicyError::Layer { .. } => ErrorCode::PolicyInvalid,
            PolicyError::Config(e) => e.code(),
            PolicyError::RuleNotFound { .. } => ErrorCode::RuleNotFound,
        }
    }
}

/// The decision maker of one session.
#[derive(Debug)]
pub struct PolicyEngine {
    compiled: Compiled,
    /// The base environment of commands; the resolver searches exactly its `PATH`.
    env: Arc<CommandEnv>,
    resolver: Resolver,
    /// The known-safe table for this workspace (`None` without a workspace or when turned off).
    safe: Option<safe::SafeReads>,
    store: Option<RuleStore>,
    saved: RwLock<Saved>,
    fetch: fetch::FetchPolicy,
    /// The folder's trust, as the launch read it.
    trust: Trust,
    /// The working mode, switched during a session: auto-edit answers the built-in question for
    /// file changes, as `--allow-write` does headless (plan narrows calls in the agent).
    mode: RwLock<WorkMode>,
}

#[derive(Debug, Default)]
struct Saved {
    rules: Vec<SavedRule>,
    commands: Vec<CompiledRule>,
}

impl Saved {
    fn set(&mut self, rules: Vec<SavedRule>) {
        self.commands = rules
            .iter()
            .filter_map(|r| match &r.kind {
                SavedKind::Command {
                    executable,
                    args,
                    match_kind,
                } => Some(CompiledRule {
                    id: r.id.clone(),
                    key: executable.clone(),
                    args: args.clone(),
                    kind: *match_kind,
                }),
                _ => None,
            })
            .collect();
        self.rules = rules;
    }
}

impl Default for PolicyEngine {
    fn default() -> Self {
        Self::new(BTreeMap::new())
    }
}

impl PolicyEngine {
    /// Built-in defaults plus explicit tool modes; no workspace, approvals kept in memory.
    pub fn new(tool_modes: BTreeMap<String, ToolMode>) -> Self {
        let mut file = ConfigFile::default();
        file.options.tools = tool_modes;
        let layers = Layers {
            explicit: Some((PathBuf::from("(built-in)"), file)),
            ..Default::default()
        };
        let env = Arc::new(CommandEnv::default());
        let resolver = Resolver::new(None, env.path());
        let sources = Sources {
            layers: &layers,
            trust: Trust::UNTRUSTED,
            static_policy: None,
            flags: CliFlags::default(),
        };
        let compiled = Compiled::build(&sources, &resolver)
            .unwrap_or_else(|_| unreachable_defaults(&resolver));
        Self {
            compiled,
            env,
            resolver,
            safe: None,
            store: None,
            saved: RwLock::new(Saved::default()),
            fetch: fetch::FetchPolicy::default(),
            trust: Trust::UNTRUSTED,
            mode: RwLock::new(WorkMode::Ask),
        }
    }

    /// The working mode in force.
    pub fn mode(&self) -> WorkMode {
        *self.mode.read()
    }

    /// Switches the working mode (`Op::SetMode`, `--mode`); takes effect at the next decision.
    pub fn set_mode(&self, mode: WorkMode) {
        *self.mode.write() = mode;
    }

    /// The engine of a session in `workspace` (canonical) with the folder's `trust` (read once,
    /// by the launch): loads saved approvals.
    pub fn build(
        workspace: &Path,
        dirs: &Dirs,
        layers: &Layers,
        trust: Trust,
        static_policy: Option<(&Path, &StaticPolicy)>,
        flags: CliFlags,
    ) -> Result<Self, PolicyError> {
        let sources = Sources {
            layers,
            trust,
            static_policy,
            flags,
        };
        let (env_settings, env_warnings) = layers::env_settings(&sources);
        let env = Arc::new(CommandEnv::from_process(&env_settings));
        let resolver = Resolver::new(Some(workspace.to_path_buf()), env.path());
        let mut compiled = Compiled::build(&sources, &resolver)?;
        // Commands never write what lets pablo act: its config, data and state.
        compiled.sandbox.protected_dirs =
            vec![dirs.config.clone(), dirs.data.clone(), dirs.state.clone()];
        compiled.warnings.extend(env_warnings);
        compiled.warnings.extend(env.withheld().iter().map(|w| {
            format!(
                "shell.env: {} is not passed to commands: {}",
                w.name, w.reason
            )
        }));
        let fetch = fetch::FetchPolicy::build(layers, trust);
        compiled.warnings.extend(fetch.warnings.iter().cloned());
        let mut saved = Saved::default();
        let store = match RuleStore::for_workspace(dirs, workspace) {
            Ok(s) => {
                saved.set(s.load()?);
                Some(s)
            }
            Err(e) => {
                compiled
                    .warnings
                    .push(format!("{e}; approvals are kept for this session only"));
                None
            }
        };
        let support = pablo_process::support();
        if let Some(w) = support.landlock_missing() {
            compiled.warnings.push(w);
        } else if let Some(w) = support.namespaces_missing() {
            compiled.warnings.push(w);
        }
        let refused: Vec<String> = layers
            .iter()
            .flat_map(|l| l.options.filesystem.refused_names.iter().cloned())
            .collect();
        // Read and deny roots bound file tools path by path; a shell read names no path it will
        // not touch, so with roots set it is judged like any command (`PathPolicy::limits_reads`).
        // Masking credentials needs a mount namespace (namespaces) and the read-only profile
        // (Landlock).
        let masking = support.landlock() && support.namespaces();
        let safe = (compiled.known_safe && !compiled.paths.limits_reads())
            .then(|| safe::SafeReads::new(workspace.to_path_buf(), &refused, masking));
        Ok(Self {
            compiled,
            env,
            resolver,
            safe,
            store,
            saved: RwLock::new(saved),
            fetch,
            trust,
            mode: RwLock::new(WorkMode::Ask),
        })
    }

    /// Loads every layer from disk: the user and project config, `--config`, `--policy`.
    #[cfg(any(test, feature = "test-support"))]
    pub fn load(
        workspace: &Path,
        dirs: &Dirs,
        config: Option<&Path>,
        policy: Option<&Path>,
        flags: CliFlags,
    ) -> Result<Self, PolicyError> {
        let trust = Trust::decided(TrustStore::new(dirs).is_trusted(workspace)?);
        // The project layer as written, whatever the trust: these tests are of policy's own
        // narrowing rules, the second line behind the launch's withholding of its keys.
        let layers = Layers::load(dirs, workspace, config, Trust::decided(true))?;
        let static_policy = match policy {
            Some(p) => Some((p, StaticPolicy::load(p)?)),
            None => None,
        };
        Self::build(
            workspace,
            dirs,
            &layers,
            trust,
            static_policy.as_ref().map(|(p, s)| (*p, s)),
            flags,
        )
    }

    /// Settings that were ignored and other notes for the person.
    pub fn warnings(&self) -> &[String] {
        &self.compiled.warnings
    }

    /// The sandbox settings the layers settled on (see [`layers`]).
    pub fn sandbox_settings(&self) -> &pablo_process::sandbox::SandboxSettings {
        &self.compiled.sandbox
    }

    /// The folder's trust this engine was built with (what the project layer and the
    /// repository's programs may decide).
    pub fn trust(&self) -> Trust {
        self.trust
    }

    /// The launcher the shell tools must use (`/bin/sh` unless a trusted layer says otherwise).
    pub fn launcher(&self) -> &str {
        &self.compiled.launcher
    }

    /// The base environment of every command of this session (`[options.shell.env]` over pablo's
    /// own environment). Command words are resolved through its `PATH`.
    pub fn command_env(&self) -> &Arc<CommandEnv> {
        &self.env
    }

    /// Where saved approvals live (outside the workspace); `None` when kept in memory only.
    pub fn rules_file(&self) -> Option<&Path> {
        self.store.as_ref().map(RuleStore::path)
    }

    /// Whether the model is offered `tool` at all: not when a layer denies it outright (a static
    /// policy's `tools.deny` or allow list, a `deny` mode, `--no-shell`, `enabled = false`). The
    /// tool stays registered, so a call the model makes anyway is refused with the rule.
    pub fn offers(&self, tool: &str, kind: ToolKind) -> bool {
        self.gate(tool, kind).is_ok()
    }

    /// Whether a workspace-relative path may be read or written, for tools that walk many files
    /// (a search skips what it may not read). `Err` carries the refusing rule id and reason.
    pub fn check_path(&self, path: &str, access: Access) -> Result<(), (String, String)> {
        self.compiled
            .paths
            .check(path, access)
            .map(|_| ())
            .map_err(|r| (r.rule_id, r.reason))
    }

    /// The tool dimension: outright denials, then the strictest explicit mode.
    fn gate(&self, tool: &str, kind: ToolKind) -> Result<Option<(ToolMode, String)>, Verdict> {
        let c = &self.compiled;
        if tool.starts_with("shell.")
            && let Some((id, reason)) = &c.shell_disabled
        {
            return Err(Verdict::deny(id.clone(), reason.clone()));
        }
        if tool.starts_with("fs.")
            && let Some((id, reason)) = &c.fs_disabled
        {
            return Err(Verdict::deny(id.clone(), reason.clone()));
        }
        if let Some((id, reason)) = c.tool_denies.get(tool) {
            return Err(Verdict::deny(id.clone(), reason.clone()));
        }
        for (id, listed) in &c.tool_allow_lists {
            if !listed.contains(tool) {
                return Err(Verdict::deny(
                    id.clone(),
                    format!("{tool} is not in the tool allow list"),
                ));
            }
        }
        let explicit = c.tool_modes.get(tool).cloned();
        if let Some((ToolMode::Deny, id)) = &explicit {
            return Err(Verdict::deny(
                id.clone(),
                format!("{tool} is denied by configuration ({id})"),
            ));
        }
        // `--allow-write` is a catalog grant (the host registers the write tools); it changes no
        // mode, so edits still ask unless a layer says `auto`, and roots still apply.
        let _ = kind;
        Ok(explicit)
    }

    fn default_mode(kind: ToolKind) -> ToolMode {
        match kind {
            ToolKind::Read | ToolKind::Search | ToolKind::Think => ToolMode::Auto,
            ToolKind::Edit | ToolKind::Execute | ToolKind::Fetch => ToolMode::Ask,
        }
    }

    fn judge_line(&self, command: &str, cwd: &str, parses: &LineParses) -> LineJudgement {
        // A rule saved by a bare program name means whatever the commands' PATH finds.
        let saved: Vec<CompiledRule> = self
            .saved
            .read()
            .commands
            .iter()
            .map(|r| {
                let mut r = r.clone();
                if !r.key.contains('/') {
                    r.key = self.resolver.resolve(&r.key, "").key;
                }
                r
            })
            .collect();
        Judge {
            compiled: &self.compiled,
            resolver: &self.resolver,
            saved: &saved,
            cwd,
            safe: self.safe.as_ref(),
            sandboxed: pablo_process::support().landlock(),
            namespaces: pablo_process::support().namespaces(),
            workspace: self.safe.as_ref().map(safe::SafeReads::workspace),
            vars: self.env.vars(),
            parses,
        }
        .line(command)
    }

    fn saved_allows(&self, pred: impl Fn(&SavedKind) -> bool) -> Option<String> {
        let saved = self.saved.read();
        saved
            .rules
            .iter()
            .find(|r| pred(&r.kind))
            .map(|r| r.id.clone())
    }

    /// The denial a write of `path` by `tool` gets whatever it would write (the tool is denied,
    /// or the path is never writable), if it gets one.
    pub fn deny_write(&self, tool: &str, kind: ToolKind, path: &str) -> Option<Verdict> {
        if let Err(v) = self.gate(tool, kind) {
            return (v.decision == Decision::Deny).then_some(v);
        }
        self.compiled
            .paths
            .check(path, Access::Write)
            .err()
            .map(|r| Verdict::deny(r.rule_id, r.reason))
    }

    /// Decides one call on its own (no tool call around it: `pablo policy check`, an
    /// attachment). May enrich `preview` (a command's parsed simple commands).
    pub fn decide(&self, tool: &str, kind: ToolKind, preview: &mut Preview) -> Verdict {
        self.judge(tool, kind, preview, &LineParses::default())
            .verdict
    }

    /// Judges one call: the verdict, and what "allow always" would save. A command is parsed
    /// through `parses`, the call's own, so judging it again (the final check) applies the
    /// rules of that moment without parsing it again. May enrich `preview` (a command's parsed
    /// simple commands, its sandbox).
    pub fn judge(
        &self,
        tool: &str,
        kind: ToolKind,
        preview: &mut Preview,
        parses: &LineParses,
    ) -> Judgement {
        let mut remembered = None;
        let verdict = self.judge_inner(tool, kind, preview, parses, &mut remembered);
        let remembered = match remembered {
            Some(kinds) => kinds,
            None => self.remembered_kinds(tool, preview, parses),
        };
        Judgement {
            verdict,
            remembered,
        }
    }

    fn judge_inner(
        &self,
        tool: &str,
        kind: ToolKind,
        preview: &mut Preview,
        parses: &LineParses,
        remembered: &mut Option<Vec<SavedKind>>,
    ) -> Verdict {
        let explicit = match self.gate(tool, kind) {
            Ok(m) => m,
            Err(v) => {
                if let Preview::Command(cp) = preview {
                    // Still show what was parsed, for the record.
                    let j = self.judge_line(&cp.command, &cp.cwd, parses);
                    cp.commands = j.views;
                    *remembered = Some(j.rememberable);
                }
                return v;
            }
        };
        match preview {
            Preview::Command(cp) => {
                let j = self.judge_line(&cp.command, &cp.cwd, parses);
                *remembered = Some(j.rememberable.clone());
                cp.commands = j.views;
                if cp.sandbox.is_none() {
                    cp.sandbox = Some(self.sandbox_for(j.known_safe, j.masked));
                }
                let mut v = Verdict {
                    decision: j.decision,
                    reasons: j.reasons,
                    rule_ids: j.rule_ids,
                    always_rule: None,
                };
                if v.decision == Decision::Allow
                    && let Some((ToolMode::Ask, id)) = &explicit
                {
                    v.decision = Decision::Ask;
                    v.reasons.push(format!("{tool} is set to ask ({id})"));
                    v.rule_ids.push(id.clone());
                }
                if v.decision == Decision::Ask && !j.rememberable.is_empty() {
                    let d: Vec<String> = j.rememberable.iter().map(SavedKind::describe).collect();
                    v.always_rule = Some(d.join("; "));
                }
                v
            }
            Preview::FileChange(fc) => {
                if let Err(r) = self.compiled.paths.check(&fc.path, Access::Write) {
                    return Verdict::deny(r.rule_id, r.reason);
                }
                if explicit.is_none() && self.compiled.preapproved_writes {
                    // Headless `--allow-write` is the person's answer, given up front.
                    return Verdict::allow("cli.allow_write".to_string());
                }
                if explicit.is_none() && self.mode() == WorkMode::AutoEdit {
                    // So is switching to auto-edit: the same answer, for as long as it lasts.
                    return Verdict::allow("mode.auto_edit".to_string());
                }
                let path = fc.path.clone();
                self.by_mode(
                    tool,
                    kind,
                    explicit,
                    SavedKind::Edit { path: path.clone() },
                    |k| matches!(k, SavedKind::Edit { path: p } if *p == path),
                )
            }
            Preview::Read { path } => {
                if let Err(r) = self.compiled.paths.check(path, Access::Read) {
                    return Verdict::deny(r.rule_id, r.reason);
                }
                self.by_tool_mode(tool, kind, explicit)
            }
            Preview::Session { action, .. } => {
                if explicit.is_none() && matches!(action.as_str(), "write" | "send_keys") {
                    // Input to a running program can be a whole new command (a shell prompt).
                    return self.ask_or_saved(
                        tool,
                        "builtin.session.input".into(),
                        format!("{tool} {action} sends input to a running program"),
                    );
                }
                let explicit = explicit.or(Some((ToolMode::Auto, "builtin.session".into())));
                self.by_tool_mode(tool, kind, explicit)
            }
            Preview::Fetch { host, url } => self.decide_fetch(tool, explicit, host, url),
            Preview::Artifact { .. } | Preview::Internal => self.by_tool_mode(tool, kind, explicit),
            Preview::Mcp(call) => self.decide_mcp(tool, explicit, call),
        }
    }

    /// A fetch runs unasked only for a host under `[options.fetch] allowed_domains` (and not
    /// when the tool is set to `ask`); any other URL asks, each time, with no "allow always".
    fn decide_fetch(
        &self,
        tool: &str,
        explicit: Option<(ToolMode, String)>,
        host: &str,
        url: &str,
    ) -> Verdict {
        if let Some((ToolMode::Ask, id)) = &explicit {
            return Verdict::ask(
                id.clone(),
                format!("{tool} is set to ask ({id}); fetching {url} needs approval"),
            );
        }
        match self.fetch.allowing(host) {
            Some((domain, file)) => {
                let mut v = Verdict::allow(format!("fetch.allowed_domains.{domain}"));
                v.reasons.push(format!(
                    "{host} is under {domain}, an allowed domain ({file})"
                ));
                v
            }
            None => Verdict::ask(
                "builtin.fetch.ask",
                format!(
                    "fetching {url} needs approval: {host} is not under [options.fetch] \
                     allowed_domains"
                ),
            ),
        }
    }

    /// An MCP tool: the strictest of `[options.tools]` for its offered name and
    /// `[mcp_servers.NAME] tools.TOOL` for its real one; without either it asks (someone else's
    /// code, whatever its annotations claim). "Allow always" is saved per tool.
    fn decide_mcp(
        &self,
        tool: &str,
        explicit: Option<(ToolMode, String)>,
        call: &pablo_protocol::McpCallPreview,
    ) -> Verdict {
        let per_server = self
            .compiled
            .mcp_modes
            .get(&(call.server.clone(), call.tool.clone()))
            .cloned();
        let mode = match (explicit, per_server) {
            (Some(a), Some(b)) => Some(if layers::mode_rank(b.0) > layers::mode_rank(a.0) {
                b
            } else {
                a
            }),
            (a, b) => a.or(b),
        };
        let (mode, id) = mode.unwrap_or((ToolMode::Ask, "builtin.mcp".to_string()));
        let what = format!("{} of the MCP server {}", call.tool, call.server);
        match mode {
            ToolMode::Auto => Verdict::allow(id),
            ToolMode::Deny => Verdict::deny(id.clone(), format!("{what} is denied ({id})")),
            ToolMode::Ask => {
                let t = tool.to_string();
                if let Some(saved) =
                    self.saved_allows(|k| matches!(k, SavedKind::Tool { tool: x } if *x == t))
                {
                    return Verdict::allow(saved);
                }
                let mut reason = if id == "builtin.mcp" {
                    format!("{what} asks first (MCP tools ask by default)")
                } else {
                    format!("{what} is set to ask ({id})")
                };
                if call.read_only_hint == Some(true) {
                    reason.push_str("; the server says it only reads, which is its claim");
                }
                let mut v = Verdict::ask(id, reason);
                v.always_rule = Some(SavedKind::Tool { tool: t }.describe());
                v
            }
        }
    }

    /// The sandbox a command line gets: the read-only profile for a known-safe line, the
    /// configured one otherwise.
    pub(crate) fn sandbox_for(
        &self,
        known_safe: bool,
        masked: bool,
    ) -> pablo_protocol::SandboxChoice {
        let mut choice = self.compiled.sandbox.default_choice();
        if known_safe {
            choice.profile = pablo_protocol::SandboxProfile::ReadOnly;
            choice.network = false;
            choice.known_safe = true;
            choice.credentials_masked = masked;
            choice.degraded = pablo_process::support().degraded(choice.profile);
        }
        choice
    }

    fn by_tool_mode(
        &self,
        tool: &str,
        kind: ToolKind,
        explicit: Option<(ToolMode, String)>,
    ) -> Verdict {
        let t = tool.to_string();
        self.by_mode(
            tool,
            kind,
            explicit,
            SavedKind::Tool { tool: t.clone() },
            |k| matches!(k, SavedKind::Tool { tool: x } if *x == t),
        )
    }

    fn by_mode(
        &self,
        tool: &str,
        kind: ToolKind,
        explicit: Option<(ToolMode, String)>,
        would_save: SavedKind,
        saved: impl Fn(&SavedKind) -> bool,
    ) -> Verdict {
        let ask_reason = match &explicit {
            Some((_, id)) => format!("{tool} is set to ask ({id})"),
            None if kind == ToolKind::Edit => "file changes ask first (built-in default)".into(),
            None => format!("{tool} asks first (built-in default)"),
        };
        let (mode, id) =
            explicit.unwrap_or_else(|| (Self::default_mode(kind), format!("builtin.tool.{tool}")));
        match mode {
            ToolMode::Auto => Verdict::allow(id),
            ToolMode::Deny => Verdict::deny(id, format!("{tool} is denied")),
            ToolMode::Ask => match self.saved_allows(saved) {
                Some(saved_id) => Verdict::allow(saved_id),
                None => {
                    let mut v = Verdict::ask(id, ask_reason);
                    v.always_rule = Some(would_save.describe());
                    v
                }
            },
        }
    }

    fn ask_or_saved(&self, tool: &str, id: String, reason: String) -> Verdict {
        let t = tool.to_string();
        if let Some(saved) =
            self.saved_allows(|k| matches!(k, SavedKind::Tool { tool: x } if *x == t))
        {
            return Verdict::allow(saved);
        }
        let mut v = Verdict::ask(id, reason);
        v.always_rule = Some(SavedKind::Tool { tool: t }.describe());
        v
    }

    /// Records an "allow always" answer; returns the ids of the rules saved. A command that
    /// cannot be proven saves nothing (no rule could ever match it).
    pub fn remember(&self, tool: &str, preview: &Preview) -> Result<Vec<String>, PolicyError> {
        let kinds = self.remembered_kinds(tool, preview, &LineParses::default());
        self.save(kinds)
    }

    /// Records the "allow always" answer to the call `judgement` judged; returns the ids of
    /// the rules saved.
    pub fn remember_judged(&self, judgement: &Judgement) -> Result<Vec<String>, PolicyError> {
        self.save(judgement.remembered.clone())
    }

    /// What "allow always" saves for `preview`: a rule per command that asked and can be
    /// remembered, the file of an edit, nothing for a fetch, else the tool.
    fn remembered_kinds(
        &self,
        tool: &str,
        preview: &Preview,
        parses: &LineParses,
    ) -> Vec<SavedKind> {
        match preview {
            Preview::Command(cp) => self.judge_line(&cp.command, &cp.cwd, parses).rememberable,
            Preview::FileChange(fc) => vec![SavedKind::Edit {
                path: fc.path.clone(),
            }],
            // Approving one URL is not approving a site: a fetch saves nothing.
            Preview::Fetch { .. } => Vec::new(),
            _ => vec![SavedKind::Tool {
                tool: tool.to_string(),
            }],
        }
    }

    fn save(&self, kinds: Vec<SavedKind>) -> Result<Vec<String>, PolicyError> {
        if kinds.is_empty() {
            return Ok(Vec::new());
        }
        let created = store::now_rfc3339();
        let new: Vec<SavedRule> = kinds
            .into_iter()
            .map(|kind| SavedRule {
                id: kind.stable_id(),
                kind,
                created: created.clone(),
            })
            .collect();
        let ids = new.iter().map(|r| r.id.clone()).collect();
        let mut saved = self.saved.write();
        let all = match &self.store {
            Some(s) => s.add(&new)?,
            None => {
                let mut all = saved.rules.clone();
                for r in new {
                    if !all.iter().any(|x| x.id == r.id) {
                        all.push(r);
                    }
                }
                all
            }
        };
        saved.set(all);
        Ok(ids)
    }

    /// The saved approvals of this workspace.
    pub fn saved_rules(&self) -> Vec<SavedRule> {
        self.saved.read().rules.clone()
    }

    /// Removes a saved approval by id.
    pub fn forget(&self, id: &str) -> Result<SavedRule, PolicyError> {
        let mut saved = self.saved.write();
        match &self.store {
            Some(s) => {
                let removed = s.remove(id)?;
                saved.set(s.load()?);
                Ok(removed)
            }
            None => {
                let mut all = saved.rules.clone();
                let Some(i) = all.iter().position(|r| r.id == id) else {
                    return Err(PolicyError::RuleNotFound {
                        id: id.to_string(),
                        workspace: PathBuf::from("(this session)"),
                    });
                };
                let removed = all.remove(i);
                saved.set(all);
                Ok(removed)
            }
        }
    }
}

/// The compiled built-in defaults, assembled by hand: what remains if even an empty layer set
/// failed to compile (it cannot; this keeps `new` total without a panic).
fn unreachable_defaults(_resolver: &Resolver) -> Compiled {
    Compiled {
        tool_denies: BTreeMap::new(),
        tool_allow_lists: Vec::new(),
        tool_modes: BTreeMap::new(),
        mcp_modes: BTreeMap::new(),
        preapproved_writes: false,
        shell_disabled: None,
        fs_disabled: None,
        rule_layers: Vec::new(),
        default: (
            pablo_config::RuleDecision::Ask,
            "builtin.commands.default".into(),
        ),
        deny_patterns: patterns::PatternList::builtin_deny(),
        allow_patterns: patterns::PatternList::default(),
        launcher: layers::DEFAULT_LAUNCHER.into(),
        launcher_refusal: None,
        paths: paths::PathPolicy::new(),
        sandbox: Default::default(),
        known_safe: true,
        warnings: Vec::new(),
    }
}

/// Policy's answer on one tool call, with what answering it learned: what "allow always" saves
/// (for a command, from its parse). The call's [`LineParses`] keep the parse itself.
#[derive(Debug, Clone)]
pub struct Judgement {
    pub verdict: Verdict,
    remembered: Vec<SavedKind>,
}

/// `Decision` helpers used across front-ends.
pub fn decision_label(d: Decision) -> &'static str {
    match d {
        Decision::Allow => "allow",
        Decision::Ask => "ask",
        Decision::Deny => "deny",
    }
}
