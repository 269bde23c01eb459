//! Policy: for every tool call, allow, ask or deny — with the reasons and the rule ids.
//!
//! The agent loop calls [`PolicyEngine::decide`] between preview and commit. For a shell command
//! the engine also fills the preview's list of simple commands, so the prompt shows what was
//! parsed. "Allow always" answers go through [`PolicyEngine::remember`].

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::protocol::{Decision, Preview, Verdict};
use crate::tools::{Coded, ToolKind};

/// Per-tool mode as written in config (`[options.tools]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolMode {
    Auto,
    Ask,
    Deny,
}

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("cannot save the approval rule: {0}")]
    Store(String),
}

impl Coded for PolicyError {
    fn code(&self) -> &'static str {
        match self {
            PolicyError::Store(_) => "policy_store_failed",
        }
    }
}

/// The decision maker of one session.
#[derive(Debug, Default)]
pub struct PolicyEngine {
    tool_modes: BTreeMap<String, ToolMode>,
    /// Tools approved "always" in this session.
    always: Mutex<Vec<String>>,
}

impl PolicyEngine {
    pub fn new(tool_modes: BTreeMap<String, ToolMode>) -> Self {
        Self {
            tool_modes,
            always: Mutex::new(Vec::new()),
        }
    }

    fn default_mode(kind: ToolKind) -> ToolMode {
        match kind {
            ToolKind::Read | ToolKind::Search | ToolKind::Think => ToolMode::Auto,
            ToolKind::Edit | ToolKind::Execute => ToolMode::Ask,
        }
    }

    /// Decides one call. May enrich `preview` (a command's parsed simple commands).
    pub fn decide(&self, tool: &str, kind: ToolKind, _preview: &mut Preview) -> Verdict {
        let mode = self
            .tool_modes
            .get(tool)
            .copied()
            .unwrap_or_else(|| Self::default_mode(kind));
        let remembered = self
            .always
            .lock()
            .map(|a| a.iter().any(|t| t == tool))
            .unwrap_or(false);
        match mode {
            ToolMode::Deny => Verdict::deny(
                format!("config.tool.{tool}"),
                format!("{tool} is denied by configuration"),
            ),
            ToolMode::Auto => Verdict::allow(format!("builtin.tool.{tool}")),
            ToolMode::Ask if remembered => Verdict::allow(format!("session.always.{tool}")),
            ToolMode::Ask => {
                let mut v = Verdict::ask(
                    format!("builtin.tool.{tool}"),
                    format!("{tool} needs approval"),
                );
                v.always_rule = Some(format!("allow {tool} for this session"));
                v
            }
        }
    }

    /// Records an "allow always" answer; returns the ids of the rules saved.
    pub fn remember(&self, tool: &str, _preview: &Preview) -> Result<Vec<String>, PolicyError> {
        let mut always = self
            .always
            .lock()
            .map_err(|_| PolicyError::Store("approval store lock poisoned".into()))?;
        always.push(tool.to_string());
        Ok(vec![format!("session.always.{tool}")])
    }
}

/// `Decision` helpers used across front-ends.
pub fn decision_label(d: Decision) -> &'static str {
    match d {
        Decision::Allow => "allow",
        Decision::Ask => "ask",
        Decision::Deny => "deny",
    }
}
