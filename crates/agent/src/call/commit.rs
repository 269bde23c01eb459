//! Stage 5, commit: policy judges the preview that will be committed once more (through the
//! call's parses: the rules of this moment, the parse of before), so a narrowed preview or a
//! rule removed while the question waited cannot slip through; then the tool commits exactly
//! that preview, or the subagent of an `agent.task` call starts. A sandboxed command that the
//! sandbox made fail may be run again without it, always after a new question.

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::super::checkpoints::Recorder;
use super::admit::Admitted;
use super::{Committed, Flight, Pipeline};
use pablo_core::{ApprovalMode, ErrorCode, ToolFailure};
use pablo_policy::LineParses;
use pablo_protocol::{Decision, Event, Preview, ToolCall, Verdict};
use pablo_tools::fs_write::PartialChange;
use pablo_tools::{Tool, ToolContext, ToolResult};

impl Pipeline<'_> {
    pub(super) async fn commit(
        &mut self,
        admitted: Admitted,
        not_applied: Option<PartialChange>,
        call: &ToolCall,
        cancel: &CancellationToken,
        flight: &Flight,
    ) -> Result<Committed, ToolFailure> {
        let Admitted {
            tool,
            args,
            preview,
            ctx,
            task,
        } = admitted;
        self.final_check(tool.as_ref(), &preview, &flight.parses)?;
        if let Some(plan) = task {
            let runner = self.subagents.runner;
            return runner
                .start(self.parent(), plan, call, cancel)
                .await
                .map(Committed::Subagent);
        }
        self.outlet.emit(Event::ToolCallRunning {
            call_id: call.id.clone(),
            preview: preview.clone(),
        });
        let committing = std::time::Instant::now();
        let result = self
            .commit_recorded(tool.as_ref(), call, &args, &preview, &ctx)
            .await;
        flight
            .span
            .record("run_ms", committing.elapsed().as_millis() as u64);
        let result = match (&result, self.outlet.shared().approvals) {
            (Ok(r), ApprovalMode::Interactive) => match sandbox_retry(&preview, r) {
                Some((retry, verdict)) => self
                    .retry_unsandboxed(
                        tool.as_ref(),
                        call,
                        &args,
                        &ctx,
                        (retry, verdict),
                        &flight.parses,
                        cancel,
                    )
                    .await
                    .unwrap_or(result),
                None => result,
            },
            _ => result,
        };
        Ok(Committed::Done(Box::new(match (result, not_applied) {
            (Ok(r), Some(partial)) => Ok(r.with_partial(partial)),
            (result, _) => result,
        })))
    }

    /// The decision on the preview that will be committed, once more.
    fn final_check(
        &self,
        tool: &dyn Tool,
        preview: &Preview,
        parses: &LineParses,
    ) -> Result<(), ToolFailure> {
        let mut recheck = preview.clone();
        let judgement = self
            .place
            .policy()
            .judge(tool.name(), tool.kind(), &mut recheck, parses);
        if judgement.verdict.decision == Decision::Deny {
            return Err(ToolFailure::new(
                ErrorCode::Denied,
                format!("{} was denied by policy on the final check", tool.name()),
            ));
        }
        Ok(())
    }

    /// A sandboxed command failed the way the sandbox makes commands fail: the person may run
    /// it again without the sandbox. Always a new question, never automatic; `None` (keep the
    /// first result) when the answer is no.
    #[allow(clippy::too_many_arguments)]
    async fn retry_unsandboxed(
        &mut self,
        tool: &dyn Tool,
        call: &ToolCall,
        args: &Value,
        ctx: &ToolContext,
        (retry, verdict): (Preview, Verdict),
        parses: &LineParses,
        cancel: &CancellationToken,
    ) -> Option<Result<ToolResult, ToolFailure>> {
        let preview = match self.ask_once(tool, call, retry, verdict, cancel).await {
            Ok(p) => p,
            Err(f) if f.code == ErrorCode::Rejected => return None,
            Err(f) => return Some(Err(f)),
        };
        // The same command: its parse is the call's, the rules are this moment's.
        if let Err(f) = self.final_check(tool, &preview, parses) {
            return Some(Err(f));
        }
        self.outlet.emit(Event::ToolCallRunning {
            call_id: call.id.clone(),
            preview: preview.clone(),
        });
        let committed = self.commit_recorded(tool, call, args, &preview, ctx).await;
        Some(committed.map(|mut r| {
            r.mark_unsandboxed_rerun();
            r
        }))
    }

    /// Commits `tool`, its changes recorded in the checkpoints and the turn's changed paths.
    async fn commit_recorded(
        &mut self,
        tool: &dyn Tool,
        call: &ToolCall,
        args: &Value,
        preview: &Preview,
        ctx: &ToolContext,
    ) -> Result<ToolResult, ToolFailure> {
        let mut recorder = Recorder {
            place: self.place,
            outlet: self.outlet,
            changed: self.changed,
        };
        recorder.commit(tool, call, args, preview, ctx).await
    }
}

/// For a sandboxed command whose result says the sandbox refused something: the same command
/// with the sandbox off, and the question to ask about it.
fn sandbox_retry(preview: &Preview, result: &ToolResult) -> Option<(Preview, Verdict)> {
    let Preview::Command(cp) = preview else {
        return None;
    };
    let denied = result.sandbox_denied()?;
    let choice = cp.sandbox.as_ref()?;
    if choice.profile == pablo_protocol::SandboxProfile::Off {
        return None;
    }
    let mut retry = cp.clone();
    retry.sandbox = Some(pablo_protocol::SandboxChoice {
        profile: pablo_protocol::SandboxProfile::Off,
        network: true,
        known_safe: false,
        credentials_masked: false,
        degraded: None,
    });
    let why = &denied.message;
    let verdict = Verdict::ask(
        pablo_protocol::SANDBOX_RETRY_RULE,
        format!(
            "{why}; run it again without the sandbox (full access to your files and the network)?"
        ),
    );
    Some((Preview::Command(retry), verdict))
}
