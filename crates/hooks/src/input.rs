//! What a hook reads on its stdin: one JSON object per run, as a type per event.
//!
//! The fields are Claude Code's (`session_id`, `cwd`, `hook_event_name`, `tool_name`,
//! `tool_input`, `tool_response`, `prompt`, `source`, `trigger`, `stop_hook_active`,
//! `notification_type`, `message`), so a script written for its hooks reads pablo's input
//! unchanged; pablo adds its own spelling of the event (`event`) and what only it has (the
//! tool's provider name, the previewed change, the changed file). docs/hooks.md lists them. The
//! event's name is taken from the variant, so an input cannot claim one event and carry another's
//! fields.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::HookEvent;
use pablo_protocol::{Preview, ToolOutcome};

/// The whole input of one hook run.
#[derive(Debug, Serialize)]
pub struct HookInput<'a> {
    session_id: &'a str,
    /// The workspace the hook runs in.
    cwd: String,
    /// Claude Code's name of the event (`PreToolUse`).
    hook_event_name: &'static str,
    /// pablo's (`pre_tool_use`).
    event: &'static str,
    #[serde(flatten)]
    fields: EventInput<'a>,
}

impl<'a> HookInput<'a> {
    pub fn new(session_id: &'a str, cwd: &Path, fields: EventInput<'a>) -> Self {
        let event = fields.event();
        Self {
            session_id,
            cwd: cwd.display().to_string(),
            hook_event_name: event.claude_name(),
            event: event.as_str(),
            fields,
        }
    }
}

/// The fields of each event.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum EventInput<'a> {
    /// `startup`, or `resume` for a conversation with a history.
    SessionStart {
        source: &'a str,
    },
    UserPromptSubmit {
        prompt: &'a str,
    },
    PreToolUse {
        /// The native name (`shell.run`).
        tool_name: &'a str,
        /// The name the model calls it by (`shell_run`).
        tool_provider_name: &'a str,
        tool_use_id: &'a str,
        tool_input: &'a Value,
        /// What pablo previewed: the diff with the new text, the command with its directory.
        preview: &'a Preview,
    },
    PostToolUse {
        tool_name: &'a str,
        tool_provider_name: &'a str,
        tool_use_id: &'a str,
        /// The arguments, `null` when they were not JSON.
        tool_input: &'a Value,
        /// The result exactly as the model reads it.
        tool_response: &'a ToolOutcome,
    },
    FileChanged {
        /// Relative to the workspace.
        path: &'a str,
        /// `created`, `modified` or `deleted`.
        change: &'a str,
        /// The same path, absolute.
        file_path: PathBuf,
    },
    Stop {
        /// Whether a stop hook already sent the model back this turn.
        stop_hook_active: bool,
        continuations: u32,
    },
    /// `manual` or `auto`.
    PreCompact {
        trigger: &'a str,
    },
    Notification {
        notification_type: &'a str,
        message: &'a str,
    },
}

impl EventInput<'_> {
    pub fn event(&self) -> HookEvent {
        match self {
            EventInput::SessionStart { .. } => HookEvent::SessionStart,
            EventInput::UserPromptSubmit { .. } => HookEvent::UserPromptSubmit,
            EventInput::PreToolUse { .. } => HookEvent::PreToolUse,
            EventInput::PostToolUse { .. } => HookEvent::PostToolUse,
            EventInput::FileChanged { .. } => HookEvent::FileChanged,
            EventInput::Stop { .. } => HookEvent::Stop,
            EventInput::PreCompact { .. } => HookEvent::PreCompact,
            EventInput::Notification { .. } => HookEvent::Notification,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(fields: EventInput<'_>) -> String {
        serde_json::to_string(&HookInput::new("s1", Path::new("/ws"), fields)).unwrap()
    }

    #[test]
    fn every_event_names_itself_both_ways_before_its_fields_in_claude_codes_spelling() {
        let args = json!({"command": "ls"});
        let result = ToolOutcome::ok(json!({"exit_code": 0}));
        let preview = Preview::Read {
            path: "a.txt".into(),
        };
        let cases = [
            (
                EventInput::SessionStart { source: "startup" },
                r#"{"session_id":"s1","cwd":"/ws","hook_event_name":"SessionStart","event":"session_start","source":"startup"}"#,
            ),
            (
                EventInput::UserPromptSubmit { prompt: "hi" },
                r#"{"session_id":"s1","cwd":"/ws","hook_event_name":"UserPromptSubmit","event":"user_prompt_submit","prompt":"hi"}"#,
            ),
            (
                EventInput::PreToolUse {
                    tool_name: "shell.run",
                    tool_provider_name: "shell_run",
                    tool_use_id: "c1",
                    tool_input: &args,
                    preview: &preview,
                },
                r#"{"session_id":"s1","cwd":"/ws","hook_event_name":"PreToolUse","event":"pre_tool_use","tool_name":"shell.run","tool_provider_name":"shell_run","tool_use_id":"c1","tool_input":{"command":"ls"},"preview":{"kind":"read","path":"a.txt"}}"#,
            ),
            (
                EventInput::PostToolUse {
                    tool_name: "shell.run",
                    tool_provider_name: "shell_run",
                    tool_use_id: "c1",
                    tool_input: &Value::Null,
                    tool_response: &result,
                },
                r#"{"session_id":"s1","cwd":"/ws","hook_event_name":"PostToolUse","event":"post_tool_use","tool_name":"shell.run","tool_provider_name":"shell_run","tool_use_id":"c1","tool_input":null,"tool_response":{"ok":true,"data":{"exit_code":0}}}"#,
            ),
            (
                EventInput::FileChanged {
                    path: "src/a.rs",
                    change: "modified",
                    file_path: PathBuf::from("/ws/src/a.rs"),
                },
                r#"{"session_id":"s1","cwd":"/ws","hook_event_name":"FileChanged","event":"file_changed","path":"src/a.rs","change":"modified","file_path":"/ws/src/a.rs"}"#,
            ),
            (
                EventInput::Stop {
                    stop_hook_active: true,
                    continuations: 1,
                },
                r#"{"session_id":"s1","cwd":"/ws","hook_event_name":"Stop","event":"stop","stop_hook_active":true,"continuations":1}"#,
            ),
            (
                EventInput::PreCompact { trigger: "auto" },
                r#"{"session_id":"s1","cwd":"/ws","hook_event_name":"PreCompact","event":"pre_compact","trigger":"auto"}"#,
            ),
            (
                EventInput::Notification {
                    notification_type: "approval",
                    message: "waiting",
                },
                r#"{"session_id":"s1","cwd":"/ws","hook_event_name":"Notification","event":"notification","notification_type":"approval","message":"waiting"}"#,
            ),
        ];
        for (fields, want) in cases {
            assert_eq!(input(fields), want);
        }
    }
}
