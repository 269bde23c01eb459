//! Stage 4, approve: an ask becomes a question to the person, or the headless answer (approve
//! every ask, or refuse it). An answer may narrow a file change to some of its hunks, or save
//! what the judgement says "allow always" saves.

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::super::checkpoints;
use super::super::diagnostics;
use super::Pipeline;
use super::admit::Admitted;
use pablo_core::{ApprovalMode, ErrorCode, ToolFailure};
use pablo_policy::Judgement;
use pablo_protocol::{ApprovalAnswer, Decision, Event, Preview, ToolCall, Verdict};
use pablo_tools::fs_write::PartialChange;
use pablo_tools::{Tool, ToolContext};

impl Pipeline<'_> {
    /// Asks when the judgement says ask; the preview to commit is left in `admitted`. Returns,
    /// after a per-hunk review, what the result must say about the hunks not accepted.
    pub(super) async fn approve(
        &mut self,
        admitted: &mut Admitted,
        call: &ToolCall,
        judgement: Judgement,
        cancel: &CancellationToken,
    ) -> Result<Option<PartialChange>, ToolFailure> {
        let tool = admitted.tool.clone();
        let mut not_applied = None;
        if judgement.verdict.decision == Decision::Ask {
            let preview = std::mem::replace(&mut admitted.preview, Preview::Internal);
            let verdict = judgement.verdict.clone();
            let (accepted, partial) = self
                .ask_with(
                    tool.as_ref(),
                    call,
                    preview,
                    verdict,
                    cancel,
                    Some(&judgement),
                )
                .await?;
            admitted.preview = accepted;
            not_applied = partial;
        }
        if cancel.is_cancelled() {
            return Err(interrupted(tool.name(), ""));
        }
        Ok(not_applied)
    }

    /// Asks about `preview` once more, where "allow always" counts as once: the answer saves
    /// no rule (the question to run a command again without the sandbox).
    pub(super) async fn ask_once(
        &mut self,
        tool: &dyn Tool,
        call: &ToolCall,
        preview: Preview,
        verdict: Verdict,
        cancel: &CancellationToken,
    ) -> Result<Preview, ToolFailure> {
        self.ask_with(tool, call, preview, verdict, cancel, None)
            .await
            .map(|(p, _)| p)
    }

    /// Handles an ask according to the approval mode; returns the preview to commit, and after a
    /// per-hunk review what the result must say about the hunks not accepted. "Allow always"
    /// saves what `remembered` says, and nothing without it.
    async fn ask_with(
        &mut self,
        tool: &dyn Tool,
        call: &ToolCall,
        preview: Preview,
        verdict: Verdict,
        cancel: &CancellationToken,
        remembered: Option<&Judgement>,
    ) -> Result<(Preview, Option<PartialChange>), ToolFailure> {
        let shared = self.outlet.shared().clone();
        match shared.approvals {
            ApprovalMode::ApproveAsks => return Ok((preview, None)),
            ApprovalMode::RefuseAsks => {
                return Err(ToolFailure::new(
                    ErrorCode::ApprovalRequired,
                    format!(
                        "{} was not run: {}; nobody can answer an approval in headless mode \
                         (grant it with --allow-write for file changes, --auto-approve, or a \
                         policy rule)",
                        tool.name(),
                        verdict.reasons.join("; ")
                    ),
                ));
            }
            ApprovalMode::Interactive => {}
        }
        // One question at a time: a subagent beside this conversation may be asking.
        let _asking = tokio::select! {
            guard = shared.asking.lock() => guard,
            () = cancel.cancelled() => {
                return Err(interrupted(tool.name(), ""));
            }
        };
        let approval_id = self.outlet.approval_id(&call.id);
        let rx = shared.await_approval(&approval_id);
        self.hooks.notify(
            "approval",
            format!("pablo needs your approval to run {}", tool.name()),
        );
        self.outlet.emit(Event::ApprovalRequest {
            call_id: approval_id.clone(),
            tool: tool.name().to_string(),
            preview: preview.clone(),
            verdict,
        });
        // What the language servers say of the change follows the prompt; it stops with it.
        let _check = self.catalog.get(tool.name()).and_then(|t| {
            let ctx = ToolContext {
                call_id: call.id.clone(),
                cancel: cancel.clone(),
                events: self.outlet.tool_events(),
                host: self.place.host().clone(),
            };
            diagnostics::start_preview_check(self.outlet, &approval_id, t, &preview, ctx)
        });
        let answer = tokio::select! {
            a = rx => a.ok(),
            () = cancel.cancelled() => None,
        };
        shared.withdraw_approval(&approval_id);
        let Some(answer) = answer else {
            return Err(interrupted(tool.name(), " during approval"));
        };
        self.outlet.emit(Event::ApprovalResolved {
            call_id: approval_id.clone(),
            answer: answer.clone(),
        });
        match answer {
            ApprovalAnswer::AllowOnce => Ok((preview, None)),
            ApprovalAnswer::AllowAlways => {
                if let Some(judgement) = remembered {
                    self.place.policy().remember_judged(judgement)?;
                }
                Ok((preview, None))
            }
            ApprovalAnswer::AllowHunks { hunks, notes } => {
                let narrowed = tool.narrow(&preview, &hunks)?;
                Ok((narrowed, checkpoints::not_applied(&preview, &hunks, &notes)))
            }
            ApprovalAnswer::Reject { note } => {
                let mut msg = format!("the person rejected {}", tool.name());
                if let Some(n) = note.as_deref().filter(|n| !n.trim().is_empty()) {
                    msg.push_str(": ");
                    msg.push_str(n.trim());
                }
                Err(ToolFailure::new(ErrorCode::Rejected, msg).with_data(json!({"note": note})))
            }
        }
    }
}

/// The failure of a call the turn's interruption stopped before it ran (`when`: where it was
/// waiting, said after "interrupted", or nothing).
fn interrupted(tool: &str, when: &str) -> ToolFailure {
    ToolFailure::new(
        ErrorCode::Cancelled,
        format!("{tool} was not run: the turn was interrupted{when}"),
    )
}
