//! `pablo hooks list`: every hook of the config layers, whether it runs in this folder, and why
//! not when it does not (docs/hooks.md).

use serde::Serialize;

use super::Launch;
use pablo_config::{ConfigFile, OnFailure, project_config_file};
use pablo_hooks::{HookEvent, Hooks};

/// One configured hook as `pablo hooks list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HookListing {
    pub(crate) event: String,
    pub(crate) name: String,
    pub(crate) command: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) matcher: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) command_matcher: Option<String>,
    pub(crate) timeout_ms: u64,
    pub(crate) on_failure: OnFailure,
    /// Where it is defined (`user config /home/…/config.toml`).
    pub(crate) source: String,
    /// Whether it runs in sessions started here.
    pub(crate) active: bool,
    /// Why it does not run, when it does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) why: Option<String>,
}

impl Launch {
    /// Every hook of the layers, the active ones first in the order they run, then those that
    /// do not run here (an untrusted folder's, one whose matcher does not compile).
    pub fn hook_listing(&self) -> Vec<HookListing> {
        let hooks = Hooks::from_layers(
            &self.layers,
            self.trust.may_run_programs(),
            Vec::new(),
            self.workspace.clone(),
        );
        let mut out = Vec::new();
        for event in HookEvent::ALL {
            for h in hooks.of(event) {
                let e = &h.entry;
                out.push(HookListing {
                    event: event.as_str().into(),
                    name: h.name.clone(),
                    command: h.command.clone(),
                    matcher: e.matcher.clone(),
                    command_matcher: e.command_matcher.clone(),
                    timeout_ms: h.timeout.as_millis() as u64,
                    on_failure: h.on_failure,
                    source: h.source.clone(),
                    active: true,
                    why: None,
                });
            }
        }
        for i in hooks.ignored() {
            out.push(inactive(i.event, &i.name, "", &i.source, &i.why));
        }
        // An untrusted project's hooks were taken out before anything read the layers; they
        // are listed from the file itself.
        // Read leniently: a key the untrusted config was read without must not hide its hooks.
        let path = project_config_file(&self.workspace);
        if !self.trust.may_run_programs()
            && let Ok(text) = std::fs::read_to_string(&path)
            && let (Some(file), _) = ConfigFile::validate(&text)
        {
            let source = format!("project config {}", path.display());
            for (event, entries) in file.hooks.by_event() {
                for e in entries {
                    out.push(inactive(
                        event,
                        &e.display_name(),
                        &e.command,
                        &source,
                        "the folder is not trusted (trust it with `pablo policy trust`)",
                    ));
                }
            }
        }
        out
    }
}

fn inactive(event: &str, name: &str, command: &str, source: &str, why: &str) -> HookListing {
    HookListing {
        event: event.into(),
        name: name.into(),
        command: command.into(),
        matcher: None,
        command_matcher: None,
        timeout_ms: 0,
        on_failure: OnFailure::Block,
        source: source.into(),
        active: false,
        why: Some(why.into()),
    }
}

/// One hook in a few lines, for `pablo hooks list`.
pub fn describe_hook(h: &HookListing) -> String {
    let state = if h.active { "active" } else { "not run" };
    let mut out = format!("{}  {}  ({state})  {}\n", h.event, h.name, h.source);
    if !h.command.is_empty() {
        out.push_str(&format!("  command: {}\n", h.command));
    }
    if h.active {
        let mut bits = vec![format!(
            "matcher: {}",
            h.matcher.as_deref().unwrap_or("(every call)")
        )];
        if let Some(c) = &h.command_matcher {
            bits.push(format!("command_matcher: {c}"));
        }
        bits.push(format!("timeout: {} ms", h.timeout_ms));
        let on_failure = match h.on_failure {
            OnFailure::Block => "block",
            OnFailure::Allow => "allow",
        };
        bits.push(format!("on_failure: {on_failure}"));
        out.push_str(&format!("  {}\n", bits.join("   ")));
    }
    if let Some(w) = &h.why {
        out.push_str(&format!("  why: {w}\n"));
    }
    out
}
