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

use serde_json::Value;

use super::run::{HookRun, RunEnd};
use super::{Hook, HookEvent};
use crate::config::OnFailure;

/// What a hook decided.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum HookDecision {
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
    pub(crate) fn label(&self) -> &'static str {
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
    pub(crate) fn blocks(&self) -> bool {
        matches!(self, HookDecision::Block | HookDecision::FailedClosed)
    }
}

/// A hook's answer, read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HookAnswer {
    pub(crate) decision: HookDecision,
    /// Why: the reason of a block (stderr on exit 2, `reason`, `permissionDecisionReason`,
    /// `stopReason`), or what went wrong with a failed hook.
    pub(crate) reason: Option<String>,
    /// Text for the model (`additionalContext`; exit-0 stdout of the prompt and start events).
    pub(crate) context: Option<String>,
    /// New arguments for the tool call (`updatedInput`).
    pub(crate) updated_input: Option<Value>,
    /// A note for the person (`systemMessage`).
    pub(crate) message: Option<String>,
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
pub(crate) fn read(event: HookEvent, hook: &Hook, run: &HookRun) -> HookAnswer {
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

/// An exit-0 answer: empty, plain text, or a JSON object.
fn parse_stdout(event: HookEvent, stdout: &str) -> Result<HookAnswer, String> {
    let text = stdout.trim();
    if !text.starts_with('{') {
        let mut a = HookAnswer::decided(HookDecision::Continue);
        if matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
            && !text.is_empty()
        {
            a.context = Some(text.to_string());
        }
        return Ok(a);
    }
    let v: Value = serde_json::from_str(text)
        .map_err(|e| format!("its output starts like JSON but is not: {e}"))?;
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let specific = v.get("hookSpecificOutput").cloned().unwrap_or(Value::Null);
    let mut a = HookAnswer::decided(HookDecision::Continue);
    a.message = s(&v, "systemMessage");
    a.context = s(&specific, "additionalContext").or_else(|| s(&v, "additionalContext"));
    a.updated_input = specific
        .get("updatedInput")
        .cloned()
        .filter(Value::is_object);
    a.reason = s(&specific, "permissionDecisionReason").or_else(|| s(&v, "reason"));
    match s(&specific, "permissionDecision").as_deref() {
        Some("allow") => a.decision = HookDecision::Allow,
        Some("ask") => a.decision = HookDecision::Ask,
        Some("deny") => a.decision = HookDecision::Block,
        Some(other) => {
            return Err(format!(
                "permissionDecision {other:?} is not allow, ask or deny"
            ));
        }
        None => {}
    }
    match s(&v, "decision").as_deref() {
        Some("block") => a.decision = HookDecision::Block,
        Some("approve") if a.decision == HookDecision::Continue => a.decision = HookDecision::Allow,
        _ => {}
    }
    if v.get("continue") == Some(&Value::Bool(false)) {
        a.decision = HookDecision::Block;
        a.reason = s(&v, "stopReason").or(a.reason);
    }
    if a.decision == HookDecision::Block && a.reason.is_none() {
        a.reason = Some("the hook gave no reason".into());
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::HookEntry;
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
