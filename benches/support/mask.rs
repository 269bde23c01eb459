//! The credential mask a masked read computes before it starts, walked or from a session's
//! watches: what `benches/fs_search.rs` times over its big tree and `benches/sandbox.rs` pays in
//! its masked case. Included by each (`#[path]`); it names `pablo-process`'s, `pablo-tools`' and
//! `pablo-workspace`'s public API only.

// A bench whose set-up fails should stop loudly; each target that includes this uses part of it.
#![allow(clippy::expect_used, dead_code)]

use std::path::Path;

/// The measured step of a masked read's start: the credential files of `ws` that the mask
/// hides, found by its walk of the workspace (the home directory left out), counted.
pub fn mask_hidden(ws: &Path) -> usize {
    let names = pablo_workspace::CredentialNames::builtin();
    pablo_process::mask::plan(&pablo_process::mask::MaskInputs {
        workspace: ws,
        home: None,
        path_dirs: Vec::new(),
        toolchain_homes: Vec::new(),
        own: &[],
        support: None,
        credentials: &pablo_tools::CredentialRuleOf(&names),
    })
    .map_or(0, |plan| plan.workspace_hidden.len())
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
