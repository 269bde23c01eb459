//! What policy decided about one tool call, as front-ends show it and journals keep it.

use serde::{Deserialize, Serialize};

/// The policy outcome for one tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allow,
    Ask,
    Deny,
}

impl Decision {
    /// Stricter decisions rank higher: `allow` < `ask` < `deny`.
    pub fn strictness(self) -> u8 {
        match self {
            Decision::Allow => 0,
            Decision::Ask => 1,
            Decision::Deny => 2,
        }
    }
}

/// A decision with the reasons and the rule ids that produced it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub decision: Decision,
    /// Human-readable reasons, most important first.
    #[serde(default)]
    pub reasons: Vec<String>,
    /// Ids of the rules that decided (built-in rules have ids too, e.g. `builtin.tool.fs.write`).
    #[serde(default)]
    pub rule_ids: Vec<String>,
    /// What "allow always" would save, described for the prompt (`prefix /usr/bin/cargo test`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub always_rule: Option<String>,
}

impl Verdict {
    pub fn allow(rule_id: impl Into<String>) -> Self {
        Self {
            decision: Decision::Allow,
            reasons: Vec::new(),
            rule_ids: vec![rule_id.into()],
            always_rule: None,
        }
    }

    pub fn ask(rule_id: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            decision: Decision::Ask,
            reasons: vec![reason.into()],
            rule_ids: vec![rule_id.into()],
            always_rule: None,
        }
    }

    pub fn deny(rule_id: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            decision: Decision::Deny,
            reasons: vec![reason.into()],
            rule_ids: vec![rule_id.into()],
            always_rule: None,
        }
    }
}
