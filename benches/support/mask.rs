//! The credential mask a masked read computes before it starts, walked or from a session's
//! watches: what `benches/fs_search.rs` times over its big tree and `benches/sandbox.rs` pays in
//! its masked case. Included by each (`#[path]`); it names `pablo-process`'s, `pablo-tools`' and
//! `pablo-workspace`'s public API only.

// A bench whose set-up fails should stop loudly; each target that includes this uses part of it.
#![allow(clippy::expect_used, dead_code)]

use std::path::Path;

/// The credential mask of `ws` under the built-in credential names, with `home` and the
/// `path_dirs` hidden as a masked read hides them (the one set of inputs both benches build).
pub fn plan(
    ws: &Path,
    home: Option<&Path>,
    path_dirs: Vec<std::path::PathBuf>,
) -> Result<pablo_process::mask::MaskPlan, pablo_process::mask::MaskError> {
    let names = pablo_workspace::CredentialNames::builtin();
    pablo_process::mask::plan(&pablo_process::mask::MaskInputs {
        workspace: ws,
        home,
        path_dirs,
        toolchain_homes: Vec::new(),
        own: &[],
        support: None,
        credentials: &pablo_tools::CredentialRuleOf(&names),
    })
}

/// The measured step of a masked read's start: the credential files of `ws` that the mask
/// hides, found by its walk of the workspace (the home directory left out), counted.
pub fn mask_hidden(ws: &Path) -> usize {
    plan(ws, None, Vec::new()).map_or(0, |plan| plan.workspace_hidden.len())
}

/// `ws` tracked as a session's tool host tracks it, for as long as the returned step lives, and
/// the step of `mask_plan_tracked`: what [`mask_hidden`] measures, in the tracked
/// workspace (its first call walks it once and puts the watches; each later one reads the change
/// queue).
pub fn mask_tracked(ws: &Path) -> impl Fn() -> usize + use<> {
    let tracking = track(ws);
    let ws = ws.to_path_buf();
    move || {
        let _tracked = &tracking;
        mask_hidden(&ws)
    }
}

/// Tracks `ws` as a session does, under the built-in credential rule (the one the masks here
/// ask under).
pub fn track(ws: &Path) -> pablo_process::Tracking {
    let rule = pablo_tools::CredentialRuleOf(pablo_workspace::CredentialNames::builtin());
    let rule = std::sync::Arc::new(rule);
    pablo_process::track(ws, rule)
}
