//! `[[hooks.EVENT]]`: the person's own programs that pablo runs around prompts, tool calls and
//! file changes (docs/hooks.md). Only their shape and the checks serde cannot make live here;
//! running them is the `hooks` module's business, and the trust of the folder decides whether a
//! project layer's entries count at all (an untrusted one is read without them: `config::trust`).

use serde::{Deserialize, Serialize};

/// The longest a hook may be given to run (ten minutes).
pub const MAX_HOOK_TIMEOUT_MS: u64 = 600_000;

/// `[hooks]`: one list of entries per event.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksConfig {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub session_start: Vec<HookEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_prompt_submit: Vec<HookEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pre_tool_use: Vec<HookEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub post_tool_use: Vec<HookEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub file_changed: Vec<HookEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<HookEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pre_compact: Vec<HookEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notification: Vec<HookEntry>,
}

impl HooksConfig {
    /// Each event's name and its entries, in the order a turn meets them.
    pub fn by_event(&self) -> [(&'static str, &[HookEntry]); 8] {
        [
            ("session_start", &self.session_start),
            ("user_prompt_submit", &self.user_prompt_submit),
            ("pre_tool_use", &self.pre_tool_use),
            ("post_tool_use", &self.post_tool_use),
            ("file_changed", &self.file_changed),
            ("stop", &self.stop),
            ("pre_compact", &self.pre_compact),
            ("notification", &self.notification),
        ]
    }

    /// Whether no event has an entry.
    pub fn is_empty(&self) -> bool {
        self.by_event().iter().all(|(_, e)| e.is_empty())
    }
}

/// One `[[hooks.EVENT]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookEntry {
    /// What messages call the hook (`blocked by hook NAME: …`); by default its command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A regular expression over the native tool name (`fs\.(write|edit)`, `shell\.run`),
    /// anchored at both ends; for `file_changed` over the workspace-relative path. None matches
    /// every call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// For `shell.run` only: a regular expression over each simple command the shell command
    /// was parsed into (its program's file name and arguments joined by spaces), searched
    /// unanchored like a policy pattern; the hook runs when one of them matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_matcher: Option<String>,
    /// The program, run with `sh -c` in the workspace.
    pub command: String,
    /// How long it may run before it is killed and counted as failed (default 60 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// What a failure (a crash, an exit status other than 0 or 2, a timeout, bad JSON) means
    /// for an event that can block: `block` (the default) or `allow`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<OnFailure>,
}

impl HookEntry {
    /// The name messages use.
    pub fn display_name(&self) -> String {
        match &self.name {
            Some(n) if !n.trim().is_empty() => n.trim().to_string(),
            _ => {
                let first: String = self.command.chars().take(40).collect();
                if first.len() < self.command.len() {
                    format!("{first}…")
                } else {
                    first
                }
            }
        }
    }
}

/// What a failing hook does to what it guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    /// Fail closed: the call (or the prompt) does not go ahead.
    #[default]
    Block,
    /// Fail open: the person is told, and the call goes ahead.
    Allow,
}

/// Where in `[hooks]` a problem is: the event, the entry's index, the field.
pub(super) type HookKey = (&'static str, usize, &'static str);

/// The checks serde cannot make, with the key each is about.
pub(super) fn check(hooks: &HooksConfig, out: &mut Vec<(HookKey, String)>) {
    for (event, entries) in hooks.by_event() {
        for (i, entry) in entries.iter().enumerate() {
            let at = |field: &'static str| (event, i, field);
            if entry.command.trim().is_empty() {
                out.push((at("command"), "the hook's command is empty".into()));
            }
            for (field, pattern) in [
                ("matcher", &entry.matcher),
                ("command_matcher", &entry.command_matcher),
            ] {
                if let Some(p) = pattern
                    && let Err(e) = regex::Regex::new(p)
                {
                    let text = e.to_string();
                    let why = text.lines().last().unwrap_or_default().trim();
                    out.push((
                        at(field),
                        format!("{p:?} is not a regular expression: {why}"),
                    ));
                }
            }
            if let Some(t) = entry.timeout_ms
                && !(1..=MAX_HOOK_TIMEOUT_MS).contains(&t)
            {
                out.push((
                    at("timeout_ms"),
                    format!("{t} ms is out of range (1 to {MAX_HOOK_TIMEOUT_MS})"),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ConfigFile;
    use std::path::Path;

    #[test]
    fn a_hook_table_parses_with_every_key() {
        let text = r#"
[[hooks.pre_tool_use]]
name = "lint-guard"
matcher = "shell\\.run"
command_matcher = "^git push"
command = "./guard.sh"
timeout_ms = 5000
on_failure = "allow"

[[hooks.file_changed]]
command = "echo hi"
"#;
        let c = ConfigFile::parse(text, Path::new("c.toml")).unwrap();
        let e = &c.hooks.pre_tool_use[0];
        assert_eq!(e.display_name(), "lint-guard");
        assert_eq!(e.on_failure, Some(super::OnFailure::Allow));
        assert_eq!(c.hooks.file_changed[0].display_name(), "echo hi");
    }

    #[test]
    fn a_bad_matcher_an_unknown_event_and_an_empty_command_are_each_named() {
        let text = "[[hooks.pre_tool_use]]\nmatcher = \"(\"\ncommand = \" \"\ntimeout_ms = 0\n";
        let e = ConfigFile::parse(text, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("hooks.pre_tool_use[0].matcher"), "{e}");
        assert!(e.contains("hooks.pre_tool_use[0].command"), "{e}");
        assert!(e.contains("hooks.pre_tool_use[0].timeout_ms"), "{e}");
        let text = "[[hooks.before_everything]]\ncommand = \"x\"\n";
        let e = ConfigFile::parse(text, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("before_everything"), "{e}");
    }
}
