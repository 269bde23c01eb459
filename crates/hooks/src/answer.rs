//! A hook's answer: its exit status and, when it exited 0, the JSON it may print, read the way
//! Claude Code reads its hooks' answers so that their scripts port:
//!
//! - exit 0: go ahead. Stdout that is a JSON object may say more (`decision`, `reason`,
//!   `continue`, `stopReason`, `systemMessage`, and under `hookSpecificOutput`
//!   `permissionDecision`, `permissionDecisionReason`, `updatedInput`, `additionalContext`);
//!   other stdout of `user_prompt_submit` and `session_start` is context for the model;
//! - exit 2: block; stderr is the reason;
//! - anything else (another status, a signal, a timeout, stdout that starts like JSON and is
//!   not): a failure. Unlike Claude Code, for the events that guard ([`HookEvent::guards`]) a
//!   failure blocks unless the entry says `on_failure = "allow"`.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::run::{HookRun, RunEnd};
use super::{Hook, HookEvent};
use pablo_config::OnFailure;

/// What a hook decided.
#[derive(Debug, Clone, PartialEq)]
pub enum HookDecision {
    /// No opinion: go ahead as policy says.
    Continue,
    /// Go ahead without asking the person (policy's deny still wins).
    Allow,
    /// Ask the person even when policy would allow.
    Ask,
    /// Do not go ahead; the reason is for the model (a tool call, a stop) or the person (a
    /// prompt).
    Block,
    /// The hook failed and its entry let the call go ahead (`on_failure = "allow"`), or the
    /// event does not guard anything.
    FailedOpen,
    /// The hook failed and so blocked (`on_failure = "block"`, the default for guards).
    FailedClosed,
}

impl HookDecision {
    /// The word journals, `--json` lines and editors get.
    pub fn label(&self) -> &'static str {
        match self {
            HookDecision::Continue => "continue",
            HookDecision::Allow => "allow",
            HookDecision::Ask => "ask",
            HookDecision::Block => "block",
            HookDecision::FailedOpen => "failed_open",
            HookDecision::FailedClosed => "failed_closed",
        }
    }

    /// Whether what the hook guards must not go ahead.
    pub fn blocks(&self) -> bool {
        matches!(self, HookDecision::Block | HookDecision::FailedClosed)
    }
}

/// A hook's answer, read.
#[derive(Debug, Clone, PartialEq)]
pub struct HookAnswer {
    pub decision: HookDecision,
    /// Why: the reason of a block (stderr on exit 2, `reason`, `permissionDecisionReason`,
    /// `stopReason`), or what went wrong with a failed hook.
    pub reason: Option<String>,
    /// Text for the model (`additionalContext`; exit-0 stdout of the prompt and start events).
    pub context: Option<String>,
    /// New arguments for the tool call (`updatedInput`).
    pub updated_input: Option<Value>,
    /// A note for the person (`systemMessage`).
    pub message: Option<String>,
}

impl HookAnswer {
    fn decided(decision: HookDecision) -> Self {
        Self {
            decision,
            reason: None,
            context: None,
            updated_input: None,
            message: None,
        }
    }
}

/// Reads `run` as `hook`'s answer to `event`.
pub fn read(event: HookEvent, hook: &Hook, run: &HookRun) -> HookAnswer {
    match &run.end {
        RunEnd::Exited(0) => match parse_stdout(event, &run.stdout) {
            Ok(a) => a,
            Err(why) => failed(event, hook, why),
        },
        RunEnd::Exited(2) => {
            let reason = tail(&run.stderr)
                .unwrap_or_else(|| "the hook exited with status 2 and said nothing".into());
            HookAnswer {
                reason: Some(reason),
                ..HookAnswer::decided(HookDecision::Block)
            }
        }
        RunEnd::Exited(code) => {
            let mut why = format!("it exited with status {code}");
            if let Some(err) = tail(&run.stderr) {
                why.push_str(&format!(": {err}"));
            }
            failed(event, hook, why)
        }
        RunEnd::Killed => failed(event, hook, "a signal ended it".into()),
        RunEnd::TimedOut(t) => failed(
            event,
            hook,
            format!("it ran past its timeout of {} ms", t.as_millis()),
        ),
        RunEnd::NotStarted(e) => failed(event, hook, format!("it could not be started: {e}")),
    }
}

fn failed(event: HookEvent, hook: &Hook, why: String) -> HookAnswer {
    let closed = event.guards() && hook.on_failure == OnFailure::Block;
    let decision = if closed {
        HookDecision::FailedClosed
    } else {
        HookDecision::FailedOpen
    };
    HookAnswer {
        reason: Some(format!("the hook failed: {why}")),
        ..HookAnswer::decided(decision)
    }
}

/// The last lines of a hook's stderr (the part that says what went wrong), at most 2,000
/// characters; `None` when it is blank.
fn tail(text: &str) -> Option<String> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    let count = t.chars().count();
    Some(if count > 2000 {
        let skip = count - 2000;
        format!("…{}", t.chars().skip(skip).collect::<String>())
    } else {
        t.to_string()
    })
}

/// The JSON object a hook may print on exit 0, field by field as Claude Code defines it. Every
/// field is typed and no other is accepted, so a guard's answer is read exactly or not at all:
/// `{"decision":"BLOCK"}`, `{"continue":"false"}`, `{"decision":null}` or a misspelt key is an
/// answer pablo cannot read, which fails the hook (and so blocks a guard) instead of going
/// ahead as if the hook had said nothing.
#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    rename_all = "camelCase",
    expecting = "a JSON object"
)]
struct Output {
    #[serde(default, deserialize_with = "present")]
    decision: Option<TopDecision>,
    #[serde(default, deserialize_with = "present")]
    reason: Option<String>,
    #[serde(default, rename = "continue", deserialize_with = "present")]
    go_on: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    stop_reason: Option<String>,
    /// Claude Code's "hide stdout from the transcript"; pablo never shows it anyway.
    #[serde(default, deserialize_with = "present")]
    #[allow(dead_code)]
    suppress_output: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    system_message: Option<String>,
    #[serde(default, deserialize_with = "present")]
    additional_context: Option<String>,
    #[serde(default, deserialize_with = "present")]
    hook_specific_output: Option<Specific>,
}

/// `hookSpecificOutput`.
#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    rename_all = "camelCase",
    expecting = "a JSON object"
)]
struct Specific {
    /// Claude Code's scripts name their event; pablo knows which it asked.
    #[serde(default, deserialize_with = "present")]
    #[allow(dead_code)]
    hook_event_name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    permission_decision: Option<PermissionDecision>,
    #[serde(default, deserialize_with = "present")]
    permission_decision_reason: Option<String>,
    #[serde(default, deserialize_with = "present")]
    updated_input: Option<Map<String, Value>>,
    #[serde(default, deserialize_with = "present")]
    additional_context: Option<String>,
}

/// The top-level `decision`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum TopDecision {
    Block,
    Approve,
}

/// `hookSpecificOutput.permissionDecision`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
enum PermissionDecision {
    Allow,
    Ask,
    Deny,
}

/// A field that, when it is there, has a value: `null` is not "no opinion" but an answer that
/// cannot be read.
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// An exit-0 answer: empty, plain text (context for the prompt and start events), or a JSON
/// object. Stdout that starts like JSON (`{`, `[`, `"`, a byte-order mark) must be an answer
/// object; a `pre_tool_use` hook, which guards a call, must print nothing or an answer object.
fn parse_stdout(event: HookEvent, stdout: &str) -> Result<HookAnswer, String> {
    let text = stdout.trim();
    let json_like = text.starts_with(['{', '[', '"', '\u{feff}']);
    if text.is_empty() || (!json_like && event != HookEvent::PreToolUse) {
        let mut a = HookAnswer::decided(HookDecision::Continue);
        if matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
            && !text.is_empty()
        {
            a.context = Some(text.to_string());
        }
        return Ok(a);
    }
    if text.starts_with('\u{feff}') {
        return Err(
            "its answer starts with a byte-order mark (U+FEFF), which JSON does not allow".into(),
        );
    }
    let shown: String = text.chars().take(200).collect();
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("its answer {shown:?} is not JSON: {e}"))?;
    let kind = match &value {
        Value::Object(_) => None,
        Value::Array(_) => Some("an array"),
        Value::String(_) => Some("a string"),
        Value::Number(_) => Some("a number"),
        Value::Bool(_) => Some("a boolean"),
        Value::Null => Some("null"),
    };
    if let Some(kind) = kind {
        return Err(format!("its answer {shown:?} is {kind}, not a JSON object"));
    }
    let out = Output::deserialize(value)
        .map_err(|e| format!("its answer {shown:?} cannot be read as a hook answer: {e}"))?;
    let specific = out.hook_specific_output;
    let mut a = HookAnswer::decided(HookDecision::Continue);
    a.message = out.system_message;
    let (mut permission, mut permission_reason, mut updated, mut context) =
        (None, None, None, None);
    if let Some(sp) = specific {
        permission = sp.permission_decision;
        permission_reason = sp.permission_decision_reason;
        updated = sp.updated_input;
        context = sp.additional_context;
    }
    a.context = context.or(out.additional_context);
    a.updated_input = updated.map(Value::Object);
    a.reason = permission_reason.or(out.reason);
    match permission {
        Some(PermissionDecision::Allow) => a.decision = HookDecision::Allow,
        Some(PermissionDecision::Ask) => a.decision = HookDecision::Ask,
        Some(PermissionDecision::Deny) => a.decision = HookDecision::Block,
        None => {}
    }
    match out.decision {
        Some(TopDecision::Block) => a.decision = HookDecision::Block,
        Some(TopDecision::Approve) if a.decision == HookDecision::Continue => {
            a.decision = HookDecision::Allow
        }
        _ => {}
    }
    if out.go_on == Some(false) {
        a.decision = HookDecision::Block;
        a.reason = out.stop_reason.or(a.reason);
    }
    if a.decision == HookDecision::Block && a.reason.is_none() {
        a.reason = Some("the hook gave no reason".into());
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pablo_config::HookEntry;
    use std::time::Duration;

    fn hook(on_failure: Option<OnFailure>) -> Hook {
        let e = HookEntry {
            name: Some("guard".into()),
            matcher: None,
            command_matcher: None,
            command: "x".into(),
            timeout_ms: None,
            on_failure,
        };
        Hook::compile(&e, "t").unwrap()
    }

    fn ran(end: RunEnd, stdout: &str, stderr: &str) -> HookRun {
        HookRun {
            end,
            stdout: stdout.into(),
            stderr: stderr.into(),
            duration: Duration::ZERO,
        }
    }

    #[test]
    fn exit_two_blocks_with_stderr_as_the_reason() {
        let a = read(
            HookEvent::PreToolUse,
            &hook(None),
            &ran(RunEnd::Exited(2), "", "no force pushes\n"),
        );
        assert_eq!(a.decision, HookDecision::Block);
        assert_eq!(a.reason.as_deref(), Some("no force pushes"));
    }

    #[test]
    fn a_crash_of_a_guard_blocks_unless_its_entry_allows() {
        let crash = ran(RunEnd::Exited(127), "", "sh: jq: not found");
        let a = read(HookEvent::PreToolUse, &hook(None), &crash);
        assert_eq!(a.decision, HookDecision::FailedClosed);
        assert!(a.reason.unwrap().contains("status 127: sh: jq: not found"));
        let a = read(HookEvent::PreToolUse, &hook(Some(OnFailure::Allow)), &crash);
        assert_eq!(a.decision, HookDecision::FailedOpen);
        // An event that guards nothing never blocks by failing.
        let a = read(HookEvent::PostToolUse, &hook(None), &crash);
        assert_eq!(a.decision, HookDecision::FailedOpen);
        let late = ran(RunEnd::TimedOut(Duration::from_millis(50)), "", "");
        let a = read(HookEvent::PreToolUse, &hook(None), &late);
        assert!(a.decision.blocks() && a.reason.unwrap().contains("50 ms"));
    }

    #[test]
    fn claude_codes_json_answers_are_read() {
        let out = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"not here"}}"#;
        let a = read(
            HookEvent::PreToolUse,
            &hook(None),
            &ran(RunEnd::Exited(0), out, ""),
        );
        assert_eq!(
            (a.decision, a.reason.as_deref()),
            (HookDecision::Block, Some("not here"))
        );
        let out = r#"{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"ls"}}}"#;
        let a = read(
            HookEvent::PreToolUse,
            &hook(None),
            &ran(RunEnd::Exited(0), out, ""),
        );
        assert_eq!(a.decision, HookDecision::Allow);
        assert_eq!(a.updated_input.unwrap()["command"], "ls");
        let out = r#"{"decision":"block","reason":"tests fail"}"#;
        let a = read(
            HookEvent::Stop,
            &hook(None),
            &ran(RunEnd::Exited(0), out, ""),
        );
        assert_eq!(a.decision, HookDecision::Block);
        assert_eq!(a.reason.as_deref(), Some("tests fail"));
    }

    #[test]
    fn plain_stdout_of_a_prompt_hook_is_context_and_bad_json_is_a_failure() {
        let a = read(
            HookEvent::UserPromptSubmit,
            &hook(None),
            &ran(RunEnd::Exited(0), "branch: main\n", ""),
        );
        assert_eq!(a.context.as_deref(), Some("branch: main"));
        let a = read(
            HookEvent::PreToolUse,
            &hook(None),
            &ran(RunEnd::Exited(0), "{not json", ""),
        );
        assert_eq!(a.decision, HookDecision::FailedClosed);
        let a = read(
            HookEvent::PostToolUse,
            &hook(None),
            &ran(RunEnd::Exited(0), "formatted", ""),
        );
        assert_eq!((a.decision, a.context), (HookDecision::Continue, None));
    }
}
