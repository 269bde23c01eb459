//! The working mode (ask / auto-edit / plan) and what it changes about a tool call. The policy
//! stays the one judge of a call; the mode only narrows (plan) or answers the built-in question
//! about file changes up front (auto-edit), so every rule the person wrote keeps its force in
//! every mode.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::core::{ToolFailure, ToolKind};
use crate::protocol::{Decision, Preview, Verdict, WorkMode};

/// The mode shared between the agent loop (which receives `Op::SetMode` while a turn runs) and
/// the turn (which reads it at each tool call).
#[derive(Debug, Clone, Default)]
pub struct ModeCell(Arc<AtomicU8>);

impl ModeCell {
    pub fn new(mode: WorkMode) -> Self {
        let cell = Self::default();
        cell.set(mode);
        cell
    }

    pub fn get(&self) -> WorkMode {
        WorkMode::ALL
            .get(self.0.load(Ordering::Relaxed) as usize)
            .copied()
            .unwrap_or_default()
    }

    pub fn set(&self, mode: WorkMode) {
        let index = WorkMode::ALL.iter().position(|m| *m == mode).unwrap_or(0);
        self.0.store(index as u8, Ordering::Relaxed);
    }
}

/// Refuses, before any preview is built, a call plan mode never runs: a file change.
pub fn refuse_before_preview(
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

/// The verdict the mode makes of the policy's verdict. Plan refuses whatever would need a
/// question (only what the policy allows outright runs: known-safe reads and the person's own
/// allow rules); auto-edit allows a file change that asked only because of the built-in default
/// (a write root or an explicit `ask` in the config still stands).
pub fn apply(
    mode: WorkMode,
    tool: &str,
    preview: &Preview,
    verdict: Verdict,
) -> Result<Verdict, ToolFailure> {
    match mode {
        WorkMode::Ask => Ok(verdict),
        WorkMode::Plan if verdict.decision == Decision::Ask => Err(plan_refusal(
            tool,
            "plan mode runs only what the policy allows without asking (reads and known-safe commands)",
        )),
        WorkMode::Plan => Ok(verdict),
        WorkMode::AutoEdit => {
            let builtin_only = verdict.rule_ids.iter().all(|id| id.starts_with("builtin."));
            if verdict.decision == Decision::Ask
                && builtin_only
                && matches!(preview, Preview::FileChange(_))
            {
                Ok(Verdict::allow("mode.auto_edit"))
            } else {
                Ok(verdict)
            }
        }
    }
}

fn plan_refusal(tool: &str, why: &str) -> ToolFailure {
    ToolFailure::new(
        "plan_mode",
        format!(
            "{tool} was not run: {why}; present the plan instead, and the person switches modes (Shift-Tab) to carry it out"
        ),
    )
}

/// What the model is told at the start of a turn when the mode differs from the last turn's
/// (appended to the person's message, so the system prompt and the cached prefix stay as
/// they were).
pub fn turn_note(previous: WorkMode, now: WorkMode) -> Option<&'static str> {
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
    fn the_cell_holds_each_mode() {
        let cell = ModeCell::new(WorkMode::Plan);
        assert_eq!(cell.get(), WorkMode::Plan);
        for m in WorkMode::ALL {
            cell.set(m);
            assert_eq!(cell.get(), m);
        }
    }

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
        let e = apply(WorkMode::Plan, "shell.run", &Preview::Internal, ask).unwrap_err();
        assert_eq!(e.code, "plan_mode");
        let allow = Verdict::allow("builtin.safe");
        assert_eq!(
            apply(
                WorkMode::Plan,
                "shell.run",
                &Preview::Internal,
                allow.clone()
            )
            .unwrap(),
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
