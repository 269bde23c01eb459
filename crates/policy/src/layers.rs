//! Intersecting the layers: built-in defaults, user config, project config, `--config`, the
//! static JSON policy and the command-line flags.
//!
//! Every layer can only take authority away. Deny wins in every dimension; allow lists intersect
//! (a command must be allowed by each layer that has an allow list); roots intersect; deny rules,
//! deny patterns and deny roots add up. The project layer arrives with the repository, so until
//! the person trusts the folder it may add denials and asks but nothing that grants: its allow
//! rules, allow patterns, `auto` tool modes, `default = "allow"`, `enable_deny_patterns = false`
//! and launcher choice are ignored, each with a warning that says so.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::PolicyError;
use super::paths::{PathPolicy, RootRule};
use super::patterns::PatternList;
use super::rules::{Resolver, RuleLayer};
use super::static_policy::StaticPolicy;
use pablo_config::{ConfigFile, Layers, RuleDecision, Trust};
use pablo_core::ToolMode;
use pablo_protocol::SandboxProfile;

/// The authority flags of the command line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CliFlags {
    /// `--no-shell`: every `shell.*` tool is denied.
    pub no_shell: bool,
    /// `--no-filesystem`: every `fs.*` tool is denied.
    pub no_filesystem: bool,
    /// The host registers the write tools (the TUI and ACP always; `pablo run` with
    /// `--allow-write`). This alone changes no mode: edits ask.
    pub allow_write: bool,
    /// Headless `--allow-write`: the person granted writing up front, so a file change inside the
    /// write roots is allowed without asking unless a layer sets the tool to ask or deny. The
    /// write roots, deny roots and `.git`/`.pablo` still apply.
    pub preapproved_writes: bool,
}

/// Everything the layers decide, compiled for fast decisions.
#[derive(Debug)]
pub(crate) struct Compiled {
    /// Tools denied outright: tool → (rule id, reason).
    pub(crate) tool_denies: BTreeMap<String, (String, String)>,
    /// Tool allow lists of the static policy: (rule id for unlisted tools, listed tools).
    pub(crate) tool_allow_lists: Vec<(String, BTreeSet<String>)>,
    /// The strictest explicit mode per tool, with the id of the layer that set it.
    pub(crate) tool_modes: BTreeMap<String, (ToolMode, String)>,
    /// `[mcp_servers.NAME] tools.TOOL`: the strictest mode per (server, real tool name).
    pub(crate) mcp_modes: BTreeMap<(String, String), (ToolMode, String)>,
    pub(crate) preapproved_writes: bool,
    pub(crate) shell_disabled: Option<(String, String)>,
    pub(crate) fs_disabled: Option<(String, String)>,
    pub(crate) rule_layers: Vec<RuleLayer>,
    /// `[options.shell.commands] default`, strictest of the layers that set it.
    pub(crate) default: (RuleDecision, String),
    pub(crate) deny_patterns: PatternList,
    pub(crate) allow_patterns: PatternList,
    /// The launcher that receives `-c COMMAND`.
    pub(crate) launcher: String,
    /// Why the launcher may not start anything, when a launcher rule forbids it.
    pub(crate) launcher_refusal: Option<(String, String)>,
    pub(crate) paths: PathPolicy,
    /// The OS sandbox of the session's commands.
    pub(crate) sandbox: pablo_process::sandbox::SandboxSettings,
    /// Whether known-safe reads run without asking (a layer may turn this off).
    pub(crate) known_safe: bool,
    /// Ignored settings and other notes for the person.
    pub(crate) warnings: Vec<String>,
}

/// The layer inputs.
pub(crate) struct Sources<'a> {
    pub(crate) layers: &'a Layers,
    /// The folder's trust: the project layer may widen policy only when it allows.
    pub(crate) trust: Trust,
    pub(crate) static_policy: Option<(&'a Path, &'a StaticPolicy)>,
    pub(crate) flags: CliFlags,
}

pub(crate) use pablo_process::DEFAULT_LAUNCHER;

struct LayerRef<'a> {
    prefix: &'static str,
    label: String,
    file: &'a ConfigFile,
    trusted: bool,
}

pub(super) fn mode_rank(m: ToolMode) -> u8 {
    match m {
        ToolMode::Auto => 0,
        ToolMode::Ask => 1,
        ToolMode::Deny => 2,
    }
}

fn decision_rank(d: RuleDecision) -> u8 {
    match d {
        RuleDecision::Allow => 0,
        RuleDecision::Ask => 1,
        RuleDecision::Deny => 2,
    }
}

/// `[options.shell.env]` of the layers that may set it, and what was ignored. The project layer
/// comes with the repository: until the folder is trusted it may only exclude variables, since
/// passing more of pablo's environment to commands is a widening. The variables that hold pablo's
/// provider keys (`api_key_env` of any layer) are withheld by name.
pub(crate) fn env_settings(src: &Sources<'_>) -> (pablo_process::EnvSettings, Vec<String>) {
    let mut out = pablo_process::EnvSettings::default();
    let mut warnings = Vec::new();
    let layers = [
        (&src.layers.user, true),
        (&src.layers.project, src.trust.may_widen_policy()),
        (&src.layers.explicit, true),
        (&src.layers.overrides, true),
    ];
    for (layer, trusted) in layers {
        let Some((path, file)) = layer else { continue };
        let env = &file.options.shell.env;
        out.exclude.extend(env.exclude.iter().cloned());
        if trusted {
            out.inherit.extend(env.inherit.iter().cloned());
            out.set
                .extend(env.set.iter().map(|(k, v)| (k.clone(), v.clone())));
        } else if !env.inherit.is_empty() || !env.set.is_empty() {
            warnings.push(format!(
                "project config {}: shell.env inherit/set ignored: the folder is not trusted \
                 (trust it with `pablo policy trust`)",
                path.display()
            ));
        }
        if let Some(name) = &file.api_key_env {
            out.secret_names.push(name.clone());
        }
    }
    (out, warnings)
}

/// What the layers' shell settings gather before the patterns and the default are settled.
#[derive(Default)]
struct Gathered {
    default_set: Option<(RuleDecision, String)>,
    patterns_off: Option<String>,
    patterns_on: bool,
    deny_patterns: Vec<(String, String)>,
    allow_patterns: Vec<(String, String)>,
}

fn invalid(label: &str, message: String) -> PolicyError {
    PolicyError::Layer {
        layer: label.to_string(),
        message,
    }
}

/// The config layers that carry policy, lowest first, each with whether it is trusted.
fn layer_refs<'a>(src: &Sources<'a>) -> Vec<LayerRef<'a>> {
    let mut layer_refs: Vec<LayerRef<'a>> = Vec::new();
    let describe = |kind: &str, p: &PathBuf| format!("{kind} {}", p.display());
    if let Some((p, f)) = &src.layers.user {
        layer_refs.push(LayerRef {
            prefix: "config.user",
            label: describe("user config", p),
            file: f,
            trusted: true,
        });
    }
    if let Some((p, f)) = &src.layers.project {
        layer_refs.push(LayerRef {
            prefix: "config.project",
            label: describe("project config", p),
            file: f,
            trusted: src.trust.may_widen_policy(),
        });
    }
    if let Some((p, f)) = &src.layers.explicit {
        layer_refs.push(LayerRef {
            prefix: "config.explicit",
            label: describe("--config", p),
            file: f,
            trusted: true,
        });
    }
    if let Some((_, f)) = &src.layers.overrides {
        layer_refs.push(LayerRef {
            prefix: "config.env",
            label: pablo_config::OVERRIDES_LABEL.to_string(),
            file: f,
            trusted: true,
        });
    }
    layer_refs
}

impl Compiled {
    pub(crate) fn build(src: &Sources<'_>, resolver: &Resolver) -> Result<Self, PolicyError> {
        let mut c = Compiled {
            tool_denies: BTreeMap::new(),
            tool_allow_lists: Vec::new(),
            tool_modes: BTreeMap::new(),
            mcp_modes: BTreeMap::new(),
            preapproved_writes: src.flags.preapproved_writes,
            shell_disabled: None,
            fs_disabled: None,
            rule_layers: Vec::new(),
            default: (RuleDecision::Ask, "builtin.commands.default".into()),
            deny_patterns: PatternList::default(),
            allow_patterns: PatternList::default(),
            launcher: DEFAULT_LAUNCHER.into(),
            launcher_refusal: None,
            paths: PathPolicy::new(),
            sandbox: Default::default(),
            known_safe: true,
            warnings: Vec::new(),
        };
        let layer_refs = layer_refs(src);
        c.settle_sandbox(&layer_refs);
        let mut gathered = Gathered::default();
        for l in &layer_refs {
            c.add_layer(l, resolver, &mut gathered)?;
        }
        if let Some((path, sp)) = src.static_policy {
            c.add_static_policy(path, sp, resolver)?;
        }
        if src.flags.no_shell {
            c.shell_disabled = Some((
                "flag.no-shell".into(),
                "the shell is disabled by --no-shell".into(),
            ));
        }
        if src.flags.no_filesystem {
            c.fs_disabled = Some((
                "flag.no-filesystem".into(),
                "the file tools are disabled by --no-filesystem".into(),
            ));
        }
        c.settle_patterns(gathered)?;
        Ok(c)
    }

    /// The sandbox the layers ask for: the user's config and --config set it; the project's may
    /// only tighten it (what it may not do is said as a warning).
    fn settle_sandbox(&mut self, layer_refs: &[LayerRef<'_>]) {
        let c = self;
        let mut sandbox_profile: Option<(SandboxProfile, String)> = None;
        let mut project_profile: Option<SandboxProfile> = None;
        let mut network: Option<bool> = None;
        let mut project_network_off = false;
        let mut max_dirs: Option<usize> = None;
        let mut project_max_dirs: Option<usize> = None;
        for l in layer_refs {
            let shell = &l.file.options.shell;
            let project = l.prefix == "config.project";
            if project {
                project_profile = shell.sandbox;
                project_network_off = shell.network == Some(false);
                let base = sandbox_profile
                    .as_ref()
                    .map(|(p, _)| *p)
                    .unwrap_or_default();
                if let Some(p) = shell.sandbox
                    && p.strictness() < base.strictness()
                {
                    c.warnings.push(format!(
                        "{}: sandbox = {:?} ignored: the project config can only tighten the \
                         sandbox",
                        l.label,
                        p.label()
                    ));
                }
                project_max_dirs = shell.protect_max_dirs.filter(|n| *n > 0);
                if shell.network == Some(true) {
                    c.warnings.push(format!(
                        "{}: network = true ignored: the project config cannot open the sandbox's \
                         network",
                        l.label
                    ));
                }
                if !shell.writable_roots.is_empty() {
                    c.warnings.push(format!(
                        "{}: writable_roots ignored: only the user's config or --config may add \
                         writable roots",
                        l.label
                    ));
                }
                if shell.editor_terminals == Some(true) {
                    c.warnings.push(format!(
                        "{}: editor_terminals = true ignored: only the user's config or --config \
                         may run commands outside the sandbox",
                        l.label
                    ));
                }
            } else {
                if let Some(p) = shell.sandbox {
                    sandbox_profile = Some((p, l.label.clone()));
                }
                if let Some(n) = shell.network {
                    network = Some(n);
                }
                for root in &shell.writable_roots {
                    match expand_root(root, c.sandbox.home.as_deref()) {
                        Some(p) => c.sandbox.writable_roots.push(p),
                        None => c.warnings.push(format!(
                            "{}: writable root {root:?} ignored: there is no home directory",
                            l.label
                        )),
                    }
                }
                if let Some(e) = shell.editor_terminals {
                    c.sandbox.editor_terminals = e;
                }
                if let Some(n) = shell.protect_max_dirs.filter(|n| *n > 0) {
                    max_dirs = Some(n);
                }
            }
            if shell.known_safe_reads == Some(false) {
                c.known_safe = false;
            }
            // Every layer's hosts are joined, a trusted project's like the person's own; an
            // untrusted project's were withheld before the layers got here (launch::trust), and
            // are refused here again.
            let hosts = if project && !l.trusted {
                &[][..]
            } else {
                &shell.network_allow[..]
            };
            for raw in hosts {
                if let Ok(entry) = pablo_config::NetAllowEntry::parse(raw)
                    && !c.sandbox.network_allow.contains(&entry)
                {
                    c.sandbox.network_allow.push(entry);
                }
            }
        }
        let base = sandbox_profile.map(|(p, _)| p).unwrap_or_default();
        c.sandbox.profile = match project_profile {
            Some(p) if p.strictness() > base.strictness() => p,
            _ => base,
        };
        c.sandbox.network = network.unwrap_or(false) && !project_network_off;
        // The project may search less (refuse sooner), never more.
        let max_dirs = max_dirs.unwrap_or(c.sandbox.protect_max_dirs);
        c.sandbox.protect_max_dirs = project_max_dirs.map_or(max_dirs, |p| p.min(max_dirs));
    }

    /// One config layer's tool modes, shell rules and patterns, and file roots; what an
    /// untrusted layer may not loosen is ignored with a warning.
    fn add_layer(
        &mut self,
        l: &LayerRef<'_>,
        resolver: &Resolver,
        g: &mut Gathered,
    ) -> Result<(), PolicyError> {
        let c = self;
        let ignored = |c: &mut Compiled, what: String| {
            c.warnings.push(format!(
                "{}: {what} ignored: the folder is not trusted (trust it with `pablo policy trust`)",
                l.label
            ));
        };
        let opts = &l.file.options;
        for (tool, mode) in &opts.tools {
            if !l.trusted && *mode == ToolMode::Auto {
                ignored(c, format!("tools.{tool} = \"auto\""));
                continue;
            }
            let id = format!("{}.tools.{tool}", l.prefix);
            let stricter = c
                .tool_modes
                .get(tool)
                .is_none_or(|(m, _)| mode_rank(*mode) > mode_rank(*m));
            if stricter {
                c.tool_modes.insert(tool.clone(), (*mode, id));
            }
        }
        for (server, cfg) in &l.file.mcp_servers {
            for (tool, mode) in &cfg.tools {
                if !l.trusted && *mode == ToolMode::Auto {
                    ignored(c, format!("mcp_servers.{server}.tools.{tool} = \"auto\""));
                    continue;
                }
                let id = format!("{}.mcp_servers.{server}.tools.{tool}", l.prefix);
                let key = (server.clone(), tool.clone());
                let stricter = c
                    .mcp_modes
                    .get(&key)
                    .is_none_or(|(m, _)| mode_rank(*mode) > mode_rank(*m));
                if stricter {
                    c.mcp_modes.insert(key, (*mode, id));
                }
            }
        }
        let shell = &opts.shell;
        if shell.enabled == Some(false) && c.shell_disabled.is_none() {
            c.shell_disabled = Some((
                format!("{}.shell.enabled", l.prefix),
                format!("the shell is disabled by {}", l.label),
            ));
        }
        match shell.enable_deny_patterns {
            Some(true) => g.patterns_on = true,
            Some(false) if l.trusted => g.patterns_off = Some(l.label.clone()),
            Some(false) => ignored(c, "enable_deny_patterns = false".into()),
            None => {}
        }
        for (i, p) in shell.custom_deny_patterns.iter().enumerate() {
            g.deny_patterns
                .push((format!("{}.deny_pattern.{i}", l.prefix), p.clone()));
        }
        for (i, p) in shell.custom_allow_patterns.iter().enumerate() {
            if l.trusted {
                g.allow_patterns
                    .push((format!("{}.allow_pattern.{i}", l.prefix), p.clone()));
            } else {
                ignored(c, format!("custom_allow_patterns {p:?}"));
            }
        }
        if let Some(launcher) = &shell.launcher {
            if l.trusted {
                c.launcher = launcher.clone();
            } else {
                ignored(c, format!("launcher {launcher:?}"));
            }
        }
        let cmds = &shell.commands;
        if let Some(d) = cmds.default {
            if !l.trusted && d == RuleDecision::Allow {
                ignored(c, "commands.default = \"allow\"".into());
            } else {
                let id = format!("{}.commands.default", l.prefix);
                let stricter = g
                    .default_set
                    .as_ref()
                    .is_none_or(|(cur, _)| decision_rank(d) > decision_rank(*cur));
                if stricter {
                    g.default_set = Some((d, id));
                }
            }
        }
        let mut layer = RuleLayer {
            source: l.label.clone(),
            id: format!("{}.commands.allow", l.prefix),
            ..Default::default()
        };
        if l.trusted {
            layer.allow = cmds.allow.iter().map(|r| resolver.compile(r)).collect();
        } else if !cmds.allow.is_empty() {
            let ids: Vec<&str> = cmds.allow.iter().map(|r| r.id.as_str()).collect();
            ignored(c, format!("allow rules {}", ids.join(", ")));
        }
        layer.deny = cmds.deny.iter().map(|r| resolver.compile(r)).collect();
        c.rule_layers.push(layer);

        let fs = &opts.filesystem;
        if fs.enabled == Some(false) && c.fs_disabled.is_none() {
            c.fs_disabled = Some((
                format!("{}.filesystem.enabled", l.prefix),
                format!("the file tools are disabled by {}", l.label),
            ));
        }
        let roots = |key: &str, globs: &[String]| -> Vec<RootRule> {
            globs
                .iter()
                .enumerate()
                .map(|(i, g)| RootRule {
                    id: format!("{}.filesystem.{key}.{i}", l.prefix),
                    glob: g.clone(),
                })
                .collect()
        };
        c.paths
            .add_read_roots(&l.label, roots("read_roots", &fs.read_roots))
            .map_err(|e| invalid(&l.label, e))?;
        c.paths
            .add_write_roots(&l.label, roots("write_roots", &fs.write_roots))
            .map_err(|e| invalid(&l.label, e))?;
        c.paths
            .add_deny_roots(roots("deny_roots", &fs.deny_roots))
            .map_err(|e| invalid(&l.label, e))?;
        Ok(())
    }

    /// A `--policy` file: tool denies and allow lists, launcher rules, file roots.
    fn add_static_policy(
        &mut self,
        path: &Path,
        sp: &StaticPolicy,
        resolver: &Resolver,
    ) -> Result<(), PolicyError> {
        let c = self;
        let label = format!("--policy {}", path.display());
        for r in &sp.tools.deny {
            c.tool_denies.entry(r.tool.clone()).or_insert((
                r.id.clone(),
                format!("{} is denied by rule {} of {label}", r.tool, r.id),
            ));
        }
        if !sp.tools.allow.is_empty() {
            let listed = sp.tools.allow.iter().map(|r| r.tool.clone()).collect();
            c.tool_allow_lists
                .push((format!("policy.tools.unlisted({label})"), listed));
        }
        let launcher_key = resolver.resolve(&c.launcher, ".").key;
        for r in &sp.launchers.deny {
            if resolver.resolve(&r.path, ".").key == launcher_key {
                c.launcher_refusal = Some((
                    r.id.clone(),
                    format!(
                        "the launcher {} is denied by rule {} of {label}",
                        c.launcher, r.id
                    ),
                ));
            }
        }
        if c.launcher_refusal.is_none()
            && !sp.launchers.allow.is_empty()
            && !sp
                .launchers
                .allow
                .iter()
                .any(|r| resolver.resolve(&r.path, ".").key == launcher_key)
        {
            c.launcher_refusal = Some((
                "policy.launchers.unlisted".into(),
                format!(
                    "the launcher {} is not in the launcher allow list of {label}",
                    c.launcher
                ),
            ));
        }
        let to_roots = |v: &[super::static_policy::GlobRule]| -> Vec<RootRule> {
            v.iter()
                .map(|g| RootRule {
                    id: g.id.clone(),
                    glob: g.glob.clone(),
                })
                .collect()
        };
        c.paths
            .add_read_roots(&label, to_roots(&sp.filesystem.read))
            .map_err(|e| invalid(&label, e))?;
        c.paths
            .add_write_roots(&label, to_roots(&sp.filesystem.write))
            .map_err(|e| invalid(&label, e))?;
        c.paths
            .add_deny_roots(to_roots(&sp.filesystem.deny))
            .map_err(|e| invalid(&label, e))?;
        Ok(())
    }

    /// The default decision and the deny and allow pattern lists, once every layer is read.
    fn settle_patterns(&mut self, g: Gathered) -> Result<(), PolicyError> {
        if let Some(d) = g.default_set {
            self.default = d;
        }
        let patterns_enabled = g.patterns_on || g.patterns_off.is_none();
        if patterns_enabled {
            self.deny_patterns = PatternList::builtin_deny();
        }
        let custom = PatternList::new(g.deny_patterns).map_err(|e| invalid("deny patterns", e))?;
        self.deny_patterns
            .extend(&custom)
            .map_err(|e| invalid("deny patterns", e))?;
        self.allow_patterns =
            PatternList::new(g.allow_patterns).map_err(|e| invalid("allow patterns", e))?;
        Ok(())
    }

    /// Layers whose allow list is not empty: each must allow a command for it to run.
    pub(crate) fn allow_layers(&self) -> impl Iterator<Item = &RuleLayer> {
        self.rule_layers.iter().filter(|l| !l.allow.is_empty())
    }

    pub(crate) fn has_allow_list(&self) -> bool {
        self.allow_layers().next().is_some()
    }
}

/// A configured writable root: absolute, or `~/…` under the home directory.
fn expand_root(root: &str, home: Option<&Path>) -> Option<PathBuf> {
    if root == "~" {
        return home.map(Path::to_path_buf);
    }
    match root.strip_prefix("~/") {
        Some(rest) => home.map(|h| h.join(rest)),
        None => Some(PathBuf::from(root)),
    }
}
