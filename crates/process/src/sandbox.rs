//! The OS sandbox of a command: what it may write and whether it may reach the network.
//!
//! Static rules (policy) decide what may start; this module bounds what a started command can
//! reach. Three profiles ([`SandboxProfile`]):
//! - `read-only`: reads anywhere, writes only to `/dev/null`, `/dev/zero`, `/dev/full` and the
//!   terminal, no network;
//! - `workspace-write`: writes also under the workspace, the session's temporary directory and the
//!   writable roots ([`default_writable_roots`] plus the trusted config's), except every `.git`
//!   and `.pablo` of the workspace and pablo's own directories, which are mounted read-only
//!   ([`super::shield`]); no network unless configured;
//! - `off`: no file or network bounds.
//!
//! The file-system bounds are a Landlock ruleset (an allow list of hierarchies); Landlock cannot
//! carve a read-only hole out of a writable tree, so the protected paths are bind-mounted
//! read-only in the command's own mount namespace. The network is cut by a new network namespace
//! (only a loopback, which is brought up, so a command can still reach itself on 127.0.0.1);
//! without user namespaces, by a seccomp filter refusing Internet sockets (and Landlock's TCP
//! rules where the kernel has them). Everything is prepared here, in the parent; the forked child
//! ([`super::child`]) only applies it.
//!
//! Every profile, `off` included, also gives the command its own PID namespace where the kernel
//! allows, so that nothing the command starts outlives pablo.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope,
};

pub use super::child::{IdMaps, MountStep, Prepared};
pub use pablo_config::NetAllowEntry;
pub use pablo_protocol::{SandboxChoice, SandboxProfile};

/// The Landlock ABI pablo asks for; older kernels get what they offer (best effort), newer ones
/// this, so that a kernel upgrade never silently denies something new.
const TARGET_ABI: ABI = ABI::V7;

/// What the running kernel offers, detected once per process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    /// The Landlock ABI version; `None` when the kernel has no Landlock.
    pub landlock_abi: Option<i32>,
    /// Whether a command can get its own user, PID, mount and network namespaces (the reason
    /// when it cannot), probed at the first question ([`Support::namespace_support`]).
    namespaces: OnceLock<Result<(), String>>,
}

/// Set by a process that starts one sandboxed command and ends (`pablo sandbox`): it assumes
/// namespaces work until its start says otherwise, rather than paying a probe child (about as
/// much work as the command's own start) first. See [`assume_namespaces_until_a_start_fails`].
static ASSUMED: AtomicBool = AtomicBool::new(false);

/// For a process whose one sandboxed command is its whole job: questions about namespaces are
/// answered "yes" without the probe until [`run_inherited`](super::run_inherited)'s start
/// fails; then the probe runs and, if the kernel refuses namespaces, the command starts again
/// without them (it never ran: a start fails before `execve`).
pub fn assume_namespaces_until_a_start_fails() {
    ASSUMED.store(true, Ordering::Relaxed);
}

impl Support {
    pub fn landlock(&self) -> bool {
        self.landlock_abi.is_some()
    }

    /// Whether commands get namespaces: the probe's answer (run now if it has not been), or
    /// "yes" while they are assumed and nothing has been learnt.
    pub fn namespaces(&self) -> bool {
        self.known_namespaces().is_none_or(|r| r.is_ok())
    }

    /// The probe's answer, probing now if needed.
    pub fn namespace_support(&self) -> &Result<(), String> {
        self.namespaces.get_or_init(super::start::probe_namespaces)
    }

    /// Whether the answer is assumed, not yet known.
    pub fn namespaces_assumed(&self) -> bool {
        self.known_namespaces().is_none()
    }

    fn known_namespaces(&self) -> Option<&Result<(), String>> {
        match self.namespaces.get() {
            Some(known) => Some(known),
            None if ASSUMED.load(Ordering::Relaxed) => None,
            None => Some(self.namespace_support()),
        }
    }

    /// Why the file-system sandbox cannot be applied, for the one warning and the prompt.
    pub fn landlock_missing(&self) -> Option<String> {
        (!self.landlock()).then(|| {
            "the kernel has no Landlock, so commands cannot be sandboxed; known-safe reads ask \
             like any other command and approved commands run with pablo's full rights"
                .to_string()
        })
    }

    /// What is weaker than the profiles promise without namespaces.
    pub fn namespaces_missing(&self) -> Option<String> {
        self.known_namespaces()?.as_ref().err().map(|why| {
            format!(
                "commands cannot get their own namespaces ({why}): .git, .pablo and pablo's own \
                 directories stay writable under workspace-write, and the network is cut by a \
                 seccomp filter"
            )
        })
    }

    /// The note a prompt shows when a profile is weaker than it says; `None` when it is whole.
    pub fn degraded(&self, profile: SandboxProfile) -> Option<String> {
        if profile == SandboxProfile::Off {
            return None;
        }
        if !self.landlock() {
            return Some("no Landlock: not enforced".into());
        }
        if !self.namespaces() && profile == SandboxProfile::WorkspaceWrite {
            return Some("no namespaces: .git and .pablo not protected".into());
        }
        None
    }
}

static SUPPORT: OnceLock<Support> = OnceLock::new();

/// Starts the namespace probe on a thread of its own, so that a front-end's start-up (its config,
/// AGENTS.md, the approvals store) runs beside the probe child rather than after it; the first
/// question about namespaces waits for the answer.
pub fn probe_namespaces_soon() {
    let _ = std::thread::Builder::new()
        .name("namespace-probe".into())
        .spawn(|| {
            let _ = support().namespace_support();
        });
}

/// The kernel's support: Landlock's ABI at the first call, the namespaces when first asked about
/// (a short-lived child tries them).
pub fn support() -> &'static Support {
    SUPPORT.get_or_init(|| Support {
        landlock_abi: super::child::landlock_abi(),
        namespaces: OnceLock::new(),
    })
}

/// Why a sandbox could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("cannot build the Landlock ruleset: {0}")]
    Landlock(String),
    #[error("cannot build the seccomp filter: {0}")]
    Seccomp(String),
    #[error("the path {0} contains a NUL byte")]
    Nul(PathBuf),
    #[error("{0}")]
    Overlay(String),
    #[error(
        "[options.shell] network_allow needs the command in a network namespace of its own, \
         which this kernel refuses ({0}); the command was not run. Without namespaces pablo \
         cannot let a command reach some hosts and not others: set network = true in your own \
         config to give it the whole network, or remove network_allow to run it with none"
    )]
    NetworkAllowNeedsNamespaces(String),
    #[error(
        "the workspace {} has more than {max_dirs} directories, more than pablo searches for the \
         .git and .pablo it must keep read-only, so a workspace-write command cannot run there \
         (a nested repository beyond the search would be writable); raise [options.shell] \
         protect_max_dirs in your own config, or use a smaller --workspace",
        workspace.display()
    )]
    TooLargeToProtect { workspace: PathBuf, max_dirs: usize },
}

/// The sandbox one command runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    pub profile: SandboxProfile,
    pub network: bool,
    /// The workspace root (canonical): writable under `workspace-write`, protected paths aside.
    pub workspace: PathBuf,
    /// Other writable files and directories under `workspace-write` (the session's temporary
    /// directory, the defaults, the trusted config's); those that do not exist are skipped.
    pub writable: Vec<PathBuf>,
    /// Files bound read-only over others inside the command's mount namespace (source, target):
    /// a known-safe git read's sanitised config over the repository's.
    pub overlays: Vec<(PathBuf, PathBuf)>,
    /// pablo's own config, data and state directories: never writable, wherever they lie.
    pub protected: Vec<PathBuf>,
    /// Directories and files hidden from the command (the credential mask, see
    /// [`super::mask`]); covered after the overlays.
    pub hidden_dirs: Vec<PathBuf>,
    pub hidden_files: Vec<PathBuf>,
    /// The most workspace directories searched for `.git` and `.pablo` under `workspace-write`.
    pub protect_max_dirs: usize,
    /// With the network cut under `workspace-write`: the hosts the command may still reach
    /// through pablo's proxy ([`super::netproxy`]).
    pub network_allow: Vec<NetAllowEntry>,
}

impl Sandbox {
    /// No bounds (the command still gets its own PID namespace).
    pub fn off() -> Self {
        Self {
            profile: SandboxProfile::Off,
            network: true,
            workspace: PathBuf::new(),
            writable: Vec::new(),
            overlays: Vec::new(),
            protected: Vec::new(),
            hidden_dirs: Vec::new(),
            hidden_files: Vec::new(),
            protect_max_dirs: super::shield::MAX_WALK_DIRS,
            network_allow: Vec::new(),
        }
    }

    /// A program pablo starts for the person outside the command sandbox (a hook, an MCP server
    /// over stdio): unbounded like [`Sandbox::off`], except that pablo's own directories
    /// `protected` are read-only to it (where the kernel gives a mount namespace), whatever the
    /// program was tricked into running.
    pub fn started_program(protected: Vec<PathBuf>) -> Self {
        Self {
            protected,
            ..Self::off()
        }
    }

    /// Whether the network is cut.
    pub fn no_network(&self) -> bool {
        self.profile == SandboxProfile::ReadOnly
            || (self.profile == SandboxProfile::WorkspaceWrite && !self.network)
    }

    /// Whether the command reaches the hosts of `network_allow` through pablo's proxy: a
    /// `workspace-write` command with the network otherwise cut and a list that is not empty.
    pub fn proxied(&self) -> bool {
        self.profile == SandboxProfile::WorkspaceWrite
            && !self.network
            && !self.network_allow.is_empty()
    }

    /// Whether a path (absolute, normalised) may be written under this sandbox.
    pub fn may_write(&self, path: &Path) -> bool {
        let devices = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];
        match self.profile {
            SandboxProfile::Off => true,
            SandboxProfile::ReadOnly => devices.iter().any(|d| path == Path::new(d)),
            SandboxProfile::WorkspaceWrite => {
                if devices.iter().any(|d| path == Path::new(d)) {
                    return true;
                }
                if self.protected.iter().any(|p| path.starts_with(p)) {
                    return false;
                }
                if path.starts_with(&self.workspace) {
                    let rel = path.strip_prefix(&self.workspace).unwrap_or(path);
                    return !is_protected_relative(rel);
                }
                self.writable.iter().any(|w| path.starts_with(w))
            }
        }
    }
}

/// Whether a workspace-relative path is in a `.git` or a `.pablo`, at any depth.
fn is_protected_relative(rel: &Path) -> bool {
    rel.components()
        .any(|c| c.as_os_str() == ".git" || c.as_os_str() == ".pablo")
}

/// The writable roots every `workspace-write` command gets besides the workspace, so that
/// everyday toolchains work: temporary directories, and the caches and lock files of cargo, pip,
/// uv, npm, yarn and go. Only those that exist are used. Programs and config in these homes
/// (`~/.cargo/bin`, `~/.cargo/config.toml`) stay read-only.
pub fn default_writable_roots(home: Option<&Path>, cargo_home: Option<&Path>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = ["/tmp", "/var/tmp", "/dev/shm"]
        .iter()
        .map(PathBuf::from)
        .collect();
    let cargo = cargo_home
        .map(Path::to_path_buf)
        .or_else(|| home.map(|h| h.join(".cargo")));
    if let Some(c) = cargo {
        for name in [
            "registry",
            "git",
            ".package-cache",
            ".package-cache-mutate",
            ".global-cache",
        ] {
            out.push(c.join(name));
        }
    }
    if let Some(h) = home {
        for rel in [
            ".cache/pip",
            ".cache/uv",
            ".cache/go-build",
            ".cache/yarn",
            ".npm",
        ] {
            out.push(h.join(rel));
        }
    }
    out
}

/// The sandbox settings of one pablo session, settled from the config layers by the policy
/// engine (a trusted layer may loosen them, the project layer only tighten them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSettings {
    /// The profile of approved commands (and of commands allowed by rules).
    pub profile: SandboxProfile,
    /// Whether `workspace-write` commands may reach the network.
    pub network: bool,
    /// Extra writable roots from trusted config (absolute).
    pub writable_roots: Vec<PathBuf>,
    /// The session's temporary directory (writable, the commands' `TMPDIR`).
    pub temp_dir: Option<PathBuf>,
    /// Run plain foreground commands in an editor's terminal even when they would be sandboxed
    /// here (an editor's terminal is outside pablo's sandbox).
    pub editor_terminals: bool,
    /// For the default writable roots.
    pub home: Option<PathBuf>,
    pub cargo_home: Option<PathBuf>,
    /// pablo's own config, data and state directories (never writable by a command).
    pub protected_dirs: Vec<PathBuf>,
    /// The most workspace directories searched for `.git` and `.pablo` (more: `workspace-write`
    /// commands are refused).
    pub protect_max_dirs: usize,
    /// The hosts `workspace-write` commands may reach through pablo's proxy when the network is
    /// cut (`[options.shell] network_allow`, joined over the trusted layers).
    pub network_allow: Vec<NetAllowEntry>,
}

impl Default for SandboxSettings {
    fn default() -> Self {
        let var = |n: &str| {
            std::env::var_os(n)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        Self {
            profile: SandboxProfile::WorkspaceWrite,
            network: false,
            writable_roots: Vec::new(),
            temp_dir: None,
            editor_terminals: false,
            home: var("HOME"),
            cargo_home: var("CARGO_HOME"),
            protected_dirs: Vec::new(),
            protect_max_dirs: super::shield::MAX_WALK_DIRS,
            network_allow: Vec::new(),
        }
    }
}

impl SandboxSettings {
    /// What a command gets when no policy decision chose otherwise.
    pub fn default_choice(&self) -> SandboxChoice {
        SandboxChoice {
            profile: self.profile,
            // Unsandboxed (`off`) commands reach the network like any program.
            network: self.profile == SandboxProfile::Off
                || (self.network && self.profile == SandboxProfile::WorkspaceWrite),
            known_safe: false,
            credentials_masked: false,
            degraded: support().degraded(self.profile),
        }
    }

    /// The sandbox of a command in `workspace` for `choice`.
    pub fn sandbox(&self, choice: &SandboxChoice, workspace: &Path) -> Sandbox {
        let mut writable = Vec::new();
        if let Some(t) = &self.temp_dir {
            writable.push(t.clone());
        }
        writable.extend(default_writable_roots(
            self.home.as_deref(),
            self.cargo_home.as_deref(),
        ));
        writable.extend(self.writable_roots.iter().cloned());
        Sandbox {
            profile: choice.profile,
            network: choice.network && choice.profile == SandboxProfile::WorkspaceWrite,
            workspace: workspace.to_path_buf(),
            writable,
            overlays: Vec::new(),
            protected: self.protected_dirs.clone(),
            hidden_dirs: Vec::new(),
            hidden_files: Vec::new(),
            protect_max_dirs: self.protect_max_dirs,
            network_allow: self.network_allow.clone(),
        }
    }
}

/// Prepares `sandbox` for the kernel `support` describes.
pub fn prepare(sandbox: &Sandbox, support: &Support) -> Result<Prepared, SandboxError> {
    let mut p = Prepared::default();
    let confined = sandbox.profile != SandboxProfile::Off;
    if support.namespaces() {
        p.namespaces.pid = true;
        p.namespaces.net = confined && sandbox.no_network();
        p.proxy = p.namespaces.net && sandbox.proxied();
        p.id_maps = Some(IdMaps::identity());
        if sandbox.profile == SandboxProfile::WorkspaceWrite {
            p.mounts = protection_mounts(sandbox)?;
        } else if !confined && !sandbox.protected.is_empty() {
            p.mounts = own_mounts(&sandbox.protected)?;
        }
        for (src, target) in &sandbox.overlays {
            p.mounts
                .push(MountStep::Cover(cstring(src)?, cstring(target)?));
        }
        for d in &sandbox.hidden_dirs {
            p.mounts.push(MountStep::HideDir(cstring(d)?));
        }
        for f in &sandbox.hidden_files {
            p.mounts.push(MountStep::HideFile(cstring(f)?));
        }
        p.namespaces.mount = !p.mounts.is_empty();
    } else if sandbox.proxied() {
        // The seccomp fallback cuts every Internet socket, the proxy's included: rather than
        // run a command that was promised some hosts with none (or with all), refuse it.
        let why = match support.namespace_support() {
            Err(why) => why.clone(),
            Ok(()) => "namespaces are not available".into(),
        };
        return Err(SandboxError::NetworkAllowNeedsNamespaces(why));
    } else if !sandbox.hidden_dirs.is_empty() || !sandbox.hidden_files.is_empty() {
        return Err(SandboxError::Overlay(
            "hiding credential files needs a mount namespace, which this kernel refuses".into(),
        ));
    } else if !sandbox.overlays.is_empty() {
        return Err(SandboxError::Overlay(
            "covering the repository's git config needs a mount namespace, which this kernel \
             refuses"
                .into(),
        ));
    }
    if !confined {
        // A program with every right still may not undo the mounts that keep pablo's own
        // directories read-only: a Landlock domain refuses mount and umount to whatever runs in
        // it, and this one grants every file-system right everywhere.
        if p.namespaces.mount && support.landlock() {
            p.landlock = Some(unbounded_ruleset()?);
        }
        return Ok(p);
    }
    let net_fallback = sandbox.no_network() && !p.namespaces.net;
    if support.landlock() {
        p.landlock = Some(ruleset(sandbox, net_fallback)?);
    }
    if net_fallback {
        p.seccomp = network_filter()?;
    }
    Ok(p)
}

fn cstring(p: &Path) -> Result<CString, SandboxError> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| SandboxError::Nul(p.to_path_buf()))
}

/// The mounts of [`super::shield`]: the directories on the way pinned, then every `.git`,
/// `.pablo` and pablo directory bound read-only.
fn protection_mounts(sandbox: &Sandbox) -> Result<Vec<MountStep>, SandboxError> {
    let shield = super::shield::compute(
        &sandbox.workspace,
        &sandbox.writable,
        &sandbox.protected,
        sandbox.protect_max_dirs,
    );
    if shield.walk_cut {
        return Err(SandboxError::TooLargeToProtect {
            workspace: sandbox.workspace.clone(),
            max_dirs: sandbox.protect_max_dirs,
        });
    }
    shield_steps(&shield)
}

/// A shield's mounts: the pins first (outermost first), then the read-only binds.
fn shield_steps(shield: &super::shield::Shield) -> Result<Vec<MountStep>, SandboxError> {
    let mut out = Vec::new();
    for p in &shield.pins {
        out.push(MountStep::Pin(cstring(p)?));
    }
    for p in &shield.read_only {
        out.push(MountStep::ReadOnly(cstring(p)?));
    }
    Ok(out)
}

/// The mounts of [`super::shield::own_only`]: the way to pablo's directories pinned, then the
/// directories bound read-only.
fn own_mounts(own: &[PathBuf]) -> Result<Vec<MountStep>, SandboxError> {
    let shield = super::shield::own_only(own);
    shield_steps(&shield)
}

/// A Landlock domain that allows every file-system access everywhere: what it adds is the
/// kernel's refusal of mount, umount and pivot_root inside any domain (no scoping either: a hook
/// may signal and reach the person's other programs as it always could).
fn unbounded_ruleset() -> Result<std::os::fd::OwnedFd, SandboxError> {
    let abi = TARGET_ABI;
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(landlock_error)?
        .create()
        .map_err(landlock_error)?
        .add_rule(PathBeneath::new(
            PathFd::new("/").map_err(landlock_error)?,
            AccessFs::from_all(abi),
        ))
        .map_err(landlock_error)?;
    let fd: Option<std::os::fd::OwnedFd> = created.into();
    fd.ok_or_else(|| SandboxError::Landlock("the kernel created no ruleset".into()))
}

fn landlock_error(e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Landlock(e.to_string())
}

/// Reads everywhere; writes where the profile allows.
fn ruleset(sandbox: &Sandbox, cut_tcp: bool) -> Result<std::os::fd::OwnedFd, SandboxError> {
    let abi = TARGET_ABI;
    let mut rs = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(landlock_error)?
        .scope(Scope::from_all(abi))
        .map_err(landlock_error)?;
    if cut_tcp {
        rs = rs
            .handle_access(AccessNet::from_all(abi))
            .map_err(landlock_error)?;
    }
    let mut created = rs.create().map_err(landlock_error)?;
    let root = PathFd::new("/").map_err(landlock_error)?;
    created = created
        .add_rule(PathBeneath::new(root, AccessFs::from_read(abi)))
        .map_err(landlock_error)?;
    let mut devices = vec!["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];
    if sandbox.profile == SandboxProfile::WorkspaceWrite {
        devices.push("/dev/ptmx");
    }
    for d in devices {
        if let Ok(fd) = PathFd::new(d) {
            created = created
                .add_rule(PathBeneath::new(fd, AccessFs::from_file(abi)))
                .map_err(landlock_error)?;
        }
    }
    if sandbox.profile == SandboxProfile::WorkspaceWrite {
        let mut roots = vec![sandbox.workspace.clone(), PathBuf::from("/dev/pts")];
        roots.extend(sandbox.writable.iter().cloned());
        for root in roots {
            let Ok(meta) = std::fs::metadata(&root) else {
                continue;
            };
            let Ok(fd) = PathFd::new(&root) else {
                continue;
            };
            let access = if meta.is_dir() {
                AccessFs::from_all(abi)
            } else {
                AccessFs::from_file(abi)
            };
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(landlock_error)?;
        }
    }
    let fd: Option<std::os::fd::OwnedFd> = created.into();
    fd.ok_or_else(|| SandboxError::Landlock("the kernel created no ruleset".into()))
}

/// Without a network namespace: `socket()` for anything but local (Unix) and netlink sockets
/// fails with EACCES, and io_uring (which can open sockets past the filter) is refused.
fn network_filter() -> Result<Option<seccompiler::BpfProgram>, SandboxError> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    let Ok(arch) = TargetArch::try_from(std::env::consts::ARCH) else {
        return Ok(None);
    };
    let err = |e: seccompiler::BackendError| SandboxError::Seccomp(e.to_string());
    let not = |family: i32| {
        SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, family as u64)
    };
    let socket_rule = SeccompRule::new(vec![
        not(libc::AF_UNIX).map_err(err)?,
        not(libc::AF_NETLINK).map_err(err)?,
    ])
    .map_err(err)?;
    let rules = [
        (libc::SYS_socket, vec![socket_rule]),
        (libc::SYS_io_uring_setup, vec![]),
    ]
    .into_iter()
    .collect();
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(err)?;
    seccompiler::BpfProgram::try_from(filter)
        .map(Some)
        .map_err(err)
}

/// Git settings that keep a repository's config from starting a program, or reaching anything,
/// through git: given with command-line precedence (`GIT_CONFIG_COUNT`), a repository cannot
/// beat them. Known-safe git reads and pablo's own worktree commands both run under them;
/// `attributes` is the attributes file read instead of the user's.
pub fn program_free_overrides(attributes: &str) -> Vec<(&'static str, String)> {
    let fixed: &[(&'static str, &str)] = &[
        ("core.fsmonitor", "false"),
        ("core.pager", "cat"),
        ("core.hooksPath", "/dev/null"),
        ("core.sshCommand", "false"),
        ("core.askPass", "false"),
        ("log.showSignature", "false"),
        ("gpg.program", "false"),
        ("gpg.ssh.program", "false"),
        ("gpg.x509.program", "false"),
        ("commit.gpgSign", "false"),
        ("diff.noprefix", "false"),
        ("protocol.allow", "never"),
        // No background maintenance (it runs hooks and writes the repository).
        ("gc.auto", "0"),
        ("maintenance.auto", "false"),
        // Submodules: their changes as one commit line each, never a diff or a log run inside
        // them (a submodule's own config and index would decide what that prints), and no
        // command recurses into them unless its own command line says so.
        ("diff.submodule", "short"),
        ("status.submoduleSummary", "false"),
        ("submodule.recurse", "false"),
    ];
    let mut all: Vec<(&'static str, String)> =
        fixed.iter().map(|(k, v)| (*k, v.to_string())).collect();
    all.push(("core.attributesFile", attributes.to_string()));
    all
}

/// The environment of a known-safe line: git's settings that run programs are overridden with
/// the highest precedence a repository cannot beat (`GIT_CONFIG_COUNT` entries act like `-c`),
/// attributes (which select diff drivers and filters) are read from the empty tree and from
/// `attributes` (pablo's file marking credential names binary, so their content is left out of
/// diffs and greps), submodules are summarised by their commit alone, the pager is `cat`,
/// optional index refreshes (a write) are off, no object is fetched from a remote, and nothing
/// prompts.
pub fn known_safe_git_env(attributes: Option<&Path>) -> Vec<(String, String)> {
    let attributes = attributes
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "/dev/null".into());
    let overrides = program_free_overrides(&attributes);
    let mut env = vec![
        ("GIT_CONFIG_COUNT".to_string(), overrides.len().to_string()),
        ("GIT_PAGER".to_string(), "cat".to_string()),
        ("PAGER".to_string(), "cat".to_string()),
        ("GIT_OPTIONAL_LOCKS".to_string(), "0".to_string()),
        ("GIT_TERMINAL_PROMPT".to_string(), "0".to_string()),
        ("GIT_NO_LAZY_FETCH".to_string(), "1".to_string()),
        ("GIT_ATTR_NOSYSTEM".to_string(), "1".to_string()),
        // The empty tree: its id is known to every SHA-1 repository without being stored.
        (
            "GIT_ATTR_SOURCE".to_string(),
            "4b825dc642cb6eb9a060e54bf8d69288fbee4904".to_string(),
        ),
    ];
    for (i, (k, v)) in overrides.iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{i}"), k.to_string()));
        env.push((format!("GIT_CONFIG_VALUE_{i}"), v.to_string()));
    }
    env
}

/// Why a failed command looks like the sandbox refused it, for the result and the retry prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// `file` or `network`.
    pub kind: &'static str,
    /// The path that was refused, when the output names one outside the writable roots.
    pub path: Option<String>,
    /// The output line that says so.
    pub line: String,
}

impl Denial {
    pub fn message(&self, profile: SandboxProfile) -> String {
        match (self.kind, &self.path) {
            ("network", _) => format!(
                "the command failed and its network access looks refused by the {} sandbox \
                 (no network): {}",
                profile.label(),
                self.line
            ),
            (_, Some(p)) => format!(
                "the command failed and {p} is outside what the {} sandbox lets it write: {}",
                profile.label(),
                self.line
            ),
            _ => format!(
                "the command failed in a way that looks like the {} sandbox: {}",
                profile.label(),
                self.line
            ),
        }
    }
}

const FILE_DENIALS: &[&str] = &[
    "Permission denied",
    "Operation not permitted",
    "Read-only file system",
    "EACCES",
    "EPERM",
    "EROFS",
];

const NETWORK_DENIALS: &[&str] = &[
    "Connection refused",
    "Network is unreachable",
    "ECONNREFUSED",
    "ENETUNREACH",
    "Temporary failure in name resolution",
    "Could not resolve host",
    "Name or service not known",
];

/// Looks at the output of a failed command for a refusal the sandbox would explain: a file error
/// naming a path outside the writable roots (or a read-only one, which only the sandbox's mounts
/// produce), or a refused connection when the network is cut. `cwd` (absolute) resolves relative
/// paths. Heuristic by nature: it only decides whether to offer a run without the sandbox.
pub fn denial(output: &str, sandbox: &Sandbox, cwd: &Path) -> Option<Denial> {
    if sandbox.profile == SandboxProfile::Off {
        return None;
    }
    for line in output.lines().take(10_000) {
        if sandbox.no_network() && NETWORK_DENIALS.iter().any(|n| line.contains(n)) {
            return Some(Denial {
                kind: "network",
                path: None,
                line: clip(line),
            });
        }
        if !FILE_DENIALS.iter().any(|n| line.contains(n)) {
            continue;
        }
        match path_candidates(line).first() {
            Some(p) => {
                let abs = normalize(&cwd.join(p));
                if !sandbox.may_write(&abs) {
                    return Some(Denial {
                        kind: "file",
                        path: Some(abs.display().to_string()),
                        line: clip(line),
                    });
                }
            }
            None if line.contains("Read-only file system") || line.contains("EROFS") => {
                return Some(Denial {
                    kind: "file",
                    path: None,
                    line: clip(line),
                });
            }
            None => {}
        }
    }
    None
}

/// Lexical normalisation: `.` dropped, `..` pops (never above the root).
fn normalize(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

fn clip(line: &str) -> String {
    let mut s: String = line.trim().chars().take(300).collect();
    if s.len() < line.trim().len() {
        s.push('…');
    }
    s
}

/// The words of an error line that may be the refused path, most likely first: quoted words
/// (`'x'`, `"x"`, `‘x’`), then words with a slash before the error phrase, nearest first (in
/// `sh: 1: cannot create /etc/x: Permission denied` the path is the last before the phrase, the
/// program the first), then after it (`Permission denied: '/x'` is quoted anyway).
fn path_candidates(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (open, close) in [('\'', '\''), ('"', '"'), ('‘', '’'), ('`', '\'')] {
        let mut rest = line;
        while let Some(i) = rest.find(open) {
            let after = &rest[i + open.len_utf8()..];
            let Some(j) = after.find(close) else { break };
            let inner = &after[..j];
            if !inner.is_empty() && !inner.contains(' ') {
                out.push(inner.to_string());
            }
            rest = &after[j + close.len_utf8()..];
        }
    }
    if !out.is_empty() {
        return out;
    }
    let phrase_at = FILE_DENIALS
        .iter()
        .filter_map(|p| line.find(p))
        .min()
        .unwrap_or(line.len());
    let slashy = |w: &str| {
        let w = w.trim_end_matches([':', ',', ';']).trim_matches(['(', ')']);
        (w.contains('/') && !w.contains("://")).then(|| w.to_string())
    };
    out.extend(
        line[..phrase_at]
            .split_whitespace()
            .rev()
            .filter_map(slashy),
    );
    out.extend(line[phrase_at..].split_whitespace().filter_map(slashy));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_refusal_of_namespaces_is_said_and_weakens_workspace_write() {
        let s = Support {
            landlock_abi: Some(1),
            namespaces: OnceLock::from(Err("refused here".to_string())),
        };
        assert!(!s.namespaces());
        assert!(!s.namespaces_assumed());
        assert!(s.namespaces_missing().unwrap().contains("refused here"));
        assert_eq!(
            s.degraded(SandboxProfile::WorkspaceWrite).as_deref(),
            Some("no namespaces: .git and .pablo not protected")
        );
    }

    fn ww() -> Sandbox {
        Sandbox {
            profile: SandboxProfile::WorkspaceWrite,
            network: false,
            workspace: PathBuf::from("/w"),
            writable: vec![PathBuf::from("/tmp")],
            overlays: Vec::new(),
            protected: vec![PathBuf::from("/tmp/xdg/pablo")],
            hidden_dirs: Vec::new(),
            hidden_files: Vec::new(),
            protect_max_dirs: 10,
            network_allow: Vec::new(),
        }
    }

    #[test]
    fn writes_outside_the_roots_are_denials_and_inside_are_not() {
        let s = ww();
        let cwd = Path::new("/w/sub");
        let d = denial(
            "touch: cannot touch '../../x': Permission denied\n",
            &s,
            cwd,
        )
        .unwrap();
        assert_eq!(d.path.as_deref(), Some("/x"));
        let d = denial("sh: 1: cannot create /etc/x: Permission denied", &s, cwd).unwrap();
        assert_eq!(d.path.as_deref(), Some("/etc/x"));
        assert!(denial("touch: cannot touch 'ok': Permission denied", &s, cwd).is_none());
        assert!(denial("cannot create /tmp/y: Permission denied", &s, cwd).is_none());
        let d = denial(
            "cannot create .git/hooks/x: Read-only file system",
            &s,
            Path::new("/w"),
        );
        assert_eq!(d.unwrap().path.as_deref(), Some("/w/.git/hooks/x"));
    }

    #[test]
    fn a_refused_connection_is_a_denial_only_without_network() {
        let mut s = ww();
        let out = "curl: (7) Failed to connect to 127.0.0.1 port 80: Connection refused";
        assert_eq!(denial(out, &s, Path::new("/w")).unwrap().kind, "network");
        s.network = true;
        assert!(denial(out, &s, Path::new("/w")).is_none());
        s.profile = SandboxProfile::Off;
        assert!(
            denial(
                "cannot create /etc/x: Permission denied",
                &s,
                Path::new("/w")
            )
            .is_none()
        );
    }

    #[test]
    fn protected_paths_are_not_writable_under_workspace_write() {
        let s = ww();
        assert!(s.may_write(Path::new("/w/src/main.rs")));
        assert!(!s.may_write(Path::new("/w/.git/hooks/pre-commit")));
        assert!(!s.may_write(Path::new("/w/.git/config")));
        assert!(!s.may_write(Path::new("/w/.git/index")));
        assert!(!s.may_write(Path::new("/w/vendor/dep/.git/config")));
        assert!(!s.may_write(Path::new("/w/.pablo/config.toml")));
        assert!(!s.may_write(Path::new("/tmp/xdg/pablo/config.toml")));
        assert!(s.may_write(Path::new("/tmp/other")));
        assert!(s.may_write(Path::new("/dev/null")));
        let ro = Sandbox {
            profile: SandboxProfile::ReadOnly,
            ..ww()
        };
        assert!(!ro.may_write(Path::new("/w/x")));
        assert!(ro.may_write(Path::new("/dev/null")));
    }

    #[test]
    fn default_roots_cover_the_toolchain_caches_but_not_their_programs() {
        let roots = default_writable_roots(Some(Path::new("/h")), None);
        assert!(roots.contains(&PathBuf::from("/h/.cargo/registry")));
        assert!(roots.contains(&PathBuf::from("/tmp")));
        assert!(!roots.iter().any(|r| r.starts_with("/h/.cargo/bin")));
        assert!(!roots.contains(&PathBuf::from("/h/.cargo")));
    }
}
