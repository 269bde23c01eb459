//! What `benches/sandbox.rs` measures; see [`super`].
//!
//! `/bin/true` started and waited for as pablo starts a command, with nothing or under a sandbox
//! profile, the walk `workspace-write` makes to find what to protect, and the credential mask a
//! masked read computes (for `benches/fs_search.rs`), walked or from a session's watches.

use std::path::{Path, PathBuf};

use crate::process::sandbox::{self, Prepared, Sandbox, SandboxSettings, Support};
use crate::protocol::{SandboxChoice, SandboxProfile};

/// Fails, saying what the system lacks, unless both Landlock and the namespaces are available
/// (the sandboxed cases would measure a degraded sandbox otherwise).
pub fn sandbox_check_support() -> Result<(), String> {
    let support = sandbox::support();
    if support.landlock() && support.namespaces() {
        Ok(())
    } else {
        Err(format!("{support:?}"))
    }
}

/// `/bin/true` in a workspace, with a sandbox profile chosen once (as policy chooses it for a
/// command: no network, not a known-safe read).
pub struct SandboxTrue {
    ws: PathBuf,
    /// `None`: started with nothing (no namespaces, no Landlock).
    sandbox: Option<(Sandbox, &'static Support)>,
    /// `read-only-masked`: the credential mask is computed for each run, as `shell.run` does.
    masked: bool,
    /// With `session:`, the workspace tracked as a session's tool host tracks it.
    _session: Option<crate::process::Tracking>,
}

impl SandboxTrue {
    /// `profile`: `"plain"` (nothing at all) or a profile's name as the config spells it
    /// (`"off"`, `"read-only"`, `"workspace-write"`), with the default sandbox settings. Prefixed
    /// with `session:`, the workspace's `.git` and `.pablo` are kept current between runs while
    /// this lives, as in a session (`process::nested`); without, each run walks, as `pablo
    /// sandbox` does. `"read-only-masked"` is `read-only` with the credential mask of a
    /// known-safe read that needs it (the workspace walked for credential names, the home
    /// directory and pablo's own directories hidden), computed on every run.
    pub fn new(ws: &Path, profile: &str) -> Self {
        let (session, profile) = match profile.strip_prefix("session:") {
            Some(p) => (Some(track(ws)), p),
            None => (None, profile),
        };
        let masked = profile == "read-only-masked";
        let profile = if masked { "read-only" } else { profile };
        let sandbox = (profile != "plain").then(|| {
            let profile: SandboxProfile = profile.parse().expect("a sandbox profile's name");
            let choice = SandboxChoice {
                profile,
                network: false,
                known_safe: false,
                credentials_masked: false,
                degraded: None,
            };
            let sb = SandboxSettings::default().sandbox(&choice, ws);
            (sb, sandbox::support())
        });
        Self {
            ws: ws.to_path_buf(),
            sandbox,
            masked,
            _session: session,
        }
    }

    /// The measured step: prepares the sandbox (when there is one), starts `/bin/true` in it and
    /// waits for it; panics unless it exits 0.
    pub fn run(&self) {
        let prepared = match &self.sandbox {
            Some((sb, support)) if self.masked => {
                let mut sb = sb.clone();
                let plan = self.mask();
                sb.hidden_dirs = plan.dirs;
                sb.hidden_files = plan.files;
                sandbox::prepare(&sb, support).expect("the sandbox prepares")
            }
            Some((sb, support)) => sandbox::prepare(sb, support).expect("the sandbox prepares"),
            None => Prepared::default(),
        };
        let argv = ["/bin/true".to_string()];
        let info =
            crate::process::run_prepared(&argv, &self.ws, &[], prepared).expect("/bin/true starts");
        assert_eq!(info.code, Some(0));
    }
}

impl SandboxTrue {
    /// The credential mask of this workspace, with this process's home directory and `PATH`.
    fn mask(&self) -> crate::process::mask::MaskPlan {
        let names = crate::workspace::CredentialNames::builtin();
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let path_dirs = std::env::var("PATH")
            .unwrap_or_default()
            .split(':')
            .filter(|d| d.starts_with('/'))
            .map(PathBuf::from)
            .collect();
        crate::process::mask::plan(&crate::process::mask::MaskInputs {
            workspace: &self.ws,
            home: home.as_deref(),
            path_dirs,
            toolchain_homes: Vec::new(),
            own: &[],
            support: None,
            credentials: &crate::tools::CredentialRuleOf(&names),
        })
        .expect("the workspace is small enough to mask")
    }
}

/// The measured step of a masked read's start: the credential files of `ws` that the mask
/// hides, found by its walk of the workspace (the home directory left out), counted.
pub fn sandbox_mask_hidden(ws: &Path) -> usize {
    let names = crate::workspace::CredentialNames::builtin();
    crate::process::mask::plan(&crate::process::mask::MaskInputs {
        workspace: ws,
        home: None,
        path_dirs: Vec::new(),
        toolchain_homes: Vec::new(),
        own: &[],
        support: None,
        credentials: &crate::tools::CredentialRuleOf(&names),
    })
    .map_or(0, |plan| plan.workspace_hidden.len())
}

/// `ws` tracked as a session's tool host tracks it, for as long as the returned step lives, and
/// the step of `mask_plan_tracked`: what [`sandbox_mask_hidden`] measures, in the tracked
/// workspace (its first call walks it once and puts the watches; each later one reads the change
/// queue).
pub fn sandbox_mask_tracked(ws: &Path) -> impl Fn() -> usize + use<> {
    let tracking = track(ws);
    let ws = ws.to_path_buf();
    move || {
        let _tracked = &tracking;
        sandbox_mask_hidden(&ws)
    }
}

/// Tracks `ws` as a session does, under the built-in credential rule (the one the masks here
/// ask under).
fn track(ws: &Path) -> crate::process::Tracking {
    let rule = crate::tools::CredentialRuleOf(crate::workspace::CredentialNames::builtin());
    let rule = std::sync::Arc::new(rule);
    crate::process::track(ws, rule)
}

/// The measured step of `shield_compute`: the paths `workspace-write` binds read-only in `ws`
/// (every `.git` and `.pablo` found by the walk), counted.
pub fn sandbox_shield_count(ws: &Path) -> usize {
    crate::process::shield::compute(ws, &[], &[], crate::process::shield::MAX_WALK_DIRS)
        .read_only
        .len()
}

/// Removes the placeholders the shield made under `ws` that are still empty, as a session does
/// at its end.
pub fn sandbox_remove_placeholders(ws: &Path) {
    crate::process::shield::remove_placeholders(ws);
}
