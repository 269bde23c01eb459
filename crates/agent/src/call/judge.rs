//! Stage 3, judge: policy's verdict on the preview, parsed through the call's own parses, then
//! what the `pre_tool_use` hooks and the working mode make of it. A denial ends the call.

use super::super::hooks::Gate;
use super::super::mode;
use super::super::scope;
use super::admit::Admitted;
use super::report::denied;
use super::{Flight, Pipeline};
use pablo_core::ToolFailure;
use pablo_policy::Judgement;
use pablo_protocol::{Decision, Preview};

impl Pipeline<'_> {
    pub(super) fn judge_call(
        &self,
        admitted: &mut Admitted,
        gate: &Gate,
        flight: &Flight,
    ) -> Result<Judgement, ToolFailure> {
        let tool = admitted.tool.as_ref();
        let mut judgement = self.place.policy().judge(
            tool.name(),
            tool.kind(),
            &mut admitted.preview,
            &flight.parses,
        );
        let verdict = gate.adjust(judgement.verdict);
        judgement.verdict = mode::apply(self.place.policy().mode(), tool.name(), verdict)?;
        if self.shell_reads_only {
            scope::check_read_only(tool.name(), &admitted.preview, &judgement.verdict)?;
        }
        let verdict = &judgement.verdict;
        pablo_telemetry::record_verdict(
            &flight.span,
            pablo_policy::decision_label(verdict.decision),
            &verdict.rule_ids,
            sandbox_label(&admitted.preview),
        );
        if verdict.decision == Decision::Deny {
            return Err(denied(tool.name(), verdict));
        }
        Ok(judgement)
    }
}

/// The sandbox profile a command's preview runs in (for its trace).
fn sandbox_label(preview: &Preview) -> Option<&'static str> {
    match preview {
        Preview::Command(cp) => cp.sandbox.as_ref().map(|s| s.profile.label()),
        _ => None,
    }
}
