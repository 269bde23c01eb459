//! What plan mode changes about a tool call. The working mode itself lives in the policy engine
//! (`PolicyEngine::mode`), which also answers auto-edit's built-in question for file changes; the
//! policy stays the one judge of a call, and plan only narrows what it allows.

use pablo_core::{ErrorCode, ToolFailure, ToolKind};
use pablo_protocol::{Decision, Verdict, WorkMode};

/// Refuses, before any preview is built, a call plan mode never runs: a file change.
pub(crate) fn refuse_before_preview(
    mode: WorkMode,
    tool: &str,
    kind: ToolKind,
) -> Result<(), ToolFailure> {
    if mode == WorkMode::Plan && kind == ToolKind::Edit {
        return Err(plan_refusal(
            tool,
            "plan mode is read-only and changes no file",
        ));
    }
    Ok(())
}

/// Plan refuses whatever the policy would ask about: only what it allows outright runs (reads,
/// known-safe commands, the person's own allow rules).
pub(crate) fn apply(mode: WorkMode, tool: &str, verdict: Verdict) -> Result<Verdict, ToolFailure> {
    if mode == WorkMode::Plan && verdict.decision == Decision::Ask {
        return Err(plan_refusal(
            tool,
            "plan mode runs only what the policy allows without asking (reads and known-safe commands)",
        ));
    }
    Ok(verdict)
}

fn plan_refusal(tool: &str, why: &str) -> ToolFailure {
    ToolFailure::new(
        ErrorCode::PlanMode,
        format!(
            "{tool} was not run: {why}; present the plan instead; the person switches modes to carry it out"
        ),
    )
}

/// What the model is told at the start of a turn when the mode differs from the last turn's
/// (appended to the person's message, so the system prompt and the cached prefix stay as
/// they were).
pub(crate) fn turn_note(previous: WorkMode, now: WorkMode) -> Option<&'static str> {
    match (previous, now) {
        (p, n) if p == n && n != WorkMode::Plan => None,
        (_, WorkMode::Plan) => Some(
            "[pablo: plan mode. You are planning, not changing anything: read and search as \
             needed, run only read-only commands, and answer with a plan. File changes are \
             refused in this mode.]",
        ),
        (WorkMode::Plan, _) => Some(
            "[pablo: plan mode is over. You may now change files and run commands as the \
             policy allows.]",
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_refuses_edits_before_any_preview_with_the_plan_mode_code() {
        let e = refuse_before_preview(WorkMode::Plan, "fs.edit", ToolKind::Edit).unwrap_err();
        assert_eq!(e.code, "plan_mode");
        assert!(
            e.message.starts_with("fs.edit was not run: plan mode"),
            "{}",
            e.message
        );
        assert!(refuse_before_preview(WorkMode::Plan, "fs.read", ToolKind::Read).is_ok());
        assert!(refuse_before_preview(WorkMode::Ask, "fs.edit", ToolKind::Edit).is_ok());
    }

    #[test]
    fn plan_turns_a_question_into_a_refusal_and_keeps_an_allow() {
        let ask = Verdict {
            decision: Decision::Ask,
            reasons: vec!["cargo is not known-safe".into()],
            rule_ids: vec!["builtin.unknown".into()],
            always_rule: None,
        };
        let e = apply(WorkMode::Plan, "shell.run", ask).unwrap_err();
        assert_eq!(e.code, "plan_mode");
        let allow = Verdict::allow("builtin.safe");
        assert_eq!(
            apply(WorkMode::Plan, "shell.run", allow.clone()).unwrap(),
            allow
        );
    }

    #[test]
    fn plan_notes_the_model_on_every_turn_and_once_when_it_ends() {
        assert!(turn_note(WorkMode::Ask, WorkMode::Plan).is_some());
        assert!(turn_note(WorkMode::Plan, WorkMode::Plan).is_some());
        assert!(
            turn_note(WorkMode::Plan, WorkMode::Ask)
                .unwrap()
                .contains("over")
        );
        assert_eq!(turn_note(WorkMode::Ask, WorkMode::Ask), None);
        assert_eq!(turn_note(WorkMode::Ask, WorkMode::AutoEdit), None);
    }
}
