//! One tool call, from the model's arguments to the result the model reads: validate against the
//! tool's schema, preview (a dry run), decide (policy, then the person when the answer is *ask*),
//! commit exactly what was previewed. Also the bound on a result's size and the offer to run a
//! command again without the sandbox when the sandbox is what made it fail.

use std::time::Instant;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::checkpoints;
use super::conversation::Conversation;
use super::mode;
use crate::core::{ApprovalMode, ErrorCode, ToolFailure};
use crate::protocol::{ApprovalAnswer, Decision, Event, Preview, ToolCall, ToolOutcome};
use crate::tools::fs_write::PartialChange;
use crate::tools::{Tool, ToolContext, ToolResult};

impl Conversation {
    /// Replaces a result whose serialization exceeds the bound with an error that says so. When
    /// the call had already acted (a command ran, a file was written), the error says that too,
    /// with the command's exit code, so the model does not run it a second time.
    pub(super) fn bound_result(
        &self,
        tool: &str,
        outcome: ToolOutcome,
        ran: &AlreadyRan,
    ) -> ToolOutcome {
        let size = serde_json::to_vec(&outcome).map(|v| v.len()).unwrap_or(0);
        if size <= self.limits.max_tool_result_bytes {
            return outcome;
        }
        let acted = self.catalog.get(tool).is_some_and(|t| {
            matches!(
                t.kind(),
                crate::core::ToolKind::Execute | crate::core::ToolKind::Edit
            )
        });
        let limit = self.limits.max_tool_result_bytes;
        let mut message =
            format!("the result serialized to {size} bytes, over the limit of {limit} bytes");
        let mut failure_data = serde_json::Map::new();
        if acted && outcome.is_ok() {
            let how = match ran.exit_code {
                Some(Some(code)) => {
                    format!("{tool} already ran: the command exited with code {code}")
                }
                Some(None) => format!("{tool} already ran: the command ended without an exit code"),
                None => format!("{tool} already ran"),
            };
            message = format!(
                "{how}; do not run it again. Its result serialized to {size} bytes, over the \
                 limit of {limit} bytes"
            );
            if let Some(a) = &ran.artifact {
                message.push_str(&format!("; the full output is in {a}"));
            }
            message.push_str("; next time ask for less output (max_output_bytes, head, grep)");
            failure_data.insert("already_ran".into(), json!(true));
            if let Some(code) = ran.exit_code {
                failure_data.insert("exit_code".into(), json!(code));
            }
            if let Some(a) = &ran.artifact {
                failure_data.insert("artifact".into(), json!(a));
            }
        } else {
            message.push_str("; ask for less (a smaller page, a narrower search, fewer lines)");
        }
        let failure = ToolFailure::new(ErrorCode::ResultTooLarge, message);
        if failure_data.is_empty() {
            failure.into_outcome()
        } else {
            failure
                .with_data(Value::Object(failure_data))
                .into_outcome()
        }
    }

    /// validate → preview → decide → commit for one call. The one path every tool call of a
    /// conversation takes, and so the place for what must happen around each of them.
    pub(super) async fn run_tool_call(
        &mut self,
        call: &ToolCall,
        cancel: &CancellationToken,
    ) -> (ToolOutcome, AlreadyRan) {
        let span = crate::telemetry::tool_call_span();
        let started = Instant::now();
        let result = self
            .validate_and_commit(call, cancel, &span)
            .instrument(span.clone())
            .await;
        span.record("duration_ms", started.elapsed().as_millis() as u64);
        let (outcome, ran) = match result {
            Ok(result) => {
                span.record("outcome", "ok");
                crate::telemetry::record_tool_facts(&span, result.trace_facts(), None);
                let ran = AlreadyRan {
                    exit_code: result.exit_code(),
                    artifact: result.artifact().map(str::to_string),
                };
                let tool = self
                    .catalog
                    .get(&call.name)
                    .map(|t| t.name().to_string())
                    .unwrap_or_else(|| call.name.clone());
                let outcome = ToolOutcome::ok(result.to_json());
                (self.post_tool_hooks(&tool, call, outcome).await, ran)
            }
            Err(f) => {
                span.record("outcome", f.code.as_str());
                (f.into_outcome(), AlreadyRan::default())
            }
        };
        crate::telemetry::content::tool_call(&span, &call.arguments, &outcome);
        (outcome, ran)
    }

    /// The catalog's tool for `call` and its arguments parsed: an unknown tool, arguments over
    /// the size limit and arguments that are not JSON are refused, in that order.
    fn tool_and_arguments(
        &self,
        call: &ToolCall,
        span: &tracing::Span,
    ) -> Result<(std::sync::Arc<dyn Tool>, Value), ToolFailure> {
        let parsed = parse_arguments(&call.arguments);
        let Some(tool) = self.catalog.get(&call.name) else {
            let known: Vec<_> = self.catalog.specs().into_iter().map(|s| s.name).collect();
            return Err(ToolFailure::new(
                ErrorCode::UnknownTool,
                format!(
                    "there is no tool named {:?}; available: {}",
                    call.name,
                    known.join(", ")
                ),
            ));
        };
        span.record("tool", tool.name());
        if call.arguments.len() > self.limits.max_tool_argument_bytes {
            return Err(ToolFailure::new(
                ErrorCode::ArgumentsTooLarge,
                format!(
                    "the arguments of {} are {} bytes, over the limit of {} bytes",
                    tool.name(),
                    call.arguments.len(),
                    self.limits.max_tool_argument_bytes
                ),
            ));
        }
        let args = parsed.map_err(|e| {
            ToolFailure::new(
                ErrorCode::InvalidArguments,
                format!("the arguments of {} are not valid JSON: {e}", tool.name()),
            )
        })?;
        Ok((tool, args))
    }

    async fn validate_and_commit(
        &mut self,
        call: &ToolCall,
        cancel: &CancellationToken,
        span: &tracing::Span,
    ) -> Result<ToolResult, ToolFailure> {
        let (tool, mut args) = self.tool_and_arguments(call, span)?;
        if let Some(v) = self.catalog.validator(tool.name()) {
            v.validate(tool.name(), &args)?;
        }
        if let Err(spent) = self.budget.take_tool_call(&self.limits) {
            return Err(ToolFailure::new(
                ErrorCode::ToolCallBudgetExhausted,
                format!(
                    "{} was not run: {} is used up",
                    tool.name(),
                    spent.describe("tool-call")
                ),
            ));
        }
        let mode = self.policy().mode();
        mode::refuse_before_preview(mode, tool.name(), tool.kind())?;
        let ctx = ToolContext {
            call_id: call.id.clone(),
            cancel: cancel.clone(),
            events: self.tool_events(),
            host: self.host().clone(),
        };
        let mut preview = match tool.preview(&args, &ctx).await {
            Ok(p) => p,
            // A preview that cannot be made (the file exists, or changed) would invite a retry
            // the policy then denies: the policy's answer on the path comes first.
            Err(f) => {
                let denial = tool
                    .write_target(&args)
                    .and_then(|path| self.policy().deny_write(tool.name(), tool.kind(), &path));
                return Err(match denial {
                    Some(verdict) => denied(tool.name(), &verdict),
                    None => f,
                });
            }
        };
        // The person's `pre_tool_use` hooks see the preview before policy does; a rewrite of
        // the arguments is validated and previewed again, and that is what policy judges.
        let gate = self
            .pre_tool_hooks(tool.as_ref(), call, &args, &preview)
            .await?;
        if let Some((hook, new)) = &gate.rewrite {
            if let Some(v) = self.catalog.validator(tool.name()) {
                v.validate(tool.name(), new).map_err(|e| {
                    let f = ToolFailure::from(e);
                    ToolFailure::new(
                        f.code,
                        format!("hook {hook} rewrote the arguments: {}", f.message),
                    )
                })?;
            }
            args = new.clone();
            preview = tool.preview(&args, &ctx).await?;
        }
        // After a per-hunk review: the hunks the person did not accept, for the result.
        let mut not_applied = None;
        let verdict = self.policy().decide(tool.name(), tool.kind(), &mut preview);
        let verdict = gate.adjust(verdict);
        let verdict = mode::apply(mode, tool.name(), verdict)?;
        if self.shell_reads_only {
            super::scope::check_read_only(tool.name(), &preview, &verdict)?;
        }
        crate::telemetry::record_verdict(
            span,
            crate::policy::decision_label(verdict.decision),
            &verdict.rule_ids,
            sandbox_label(&preview),
        );
        match verdict.decision {
            Decision::Allow => {}
            Decision::Deny => return Err(denied(tool.name(), &verdict)),
            Decision::Ask => {
                let (accepted, partial) = self
                    .ask(tool.as_ref(), call, preview, verdict, cancel)
                    .await?;
                preview = accepted;
                not_applied = partial;
            }
        }
        if cancel.is_cancelled() {
            return Err(ToolFailure::new(
                ErrorCode::Cancelled,
                format!("{} was not run: the turn was interrupted", tool.name()),
            ));
        }
        // The decision is made on the preview that will be committed, once more, so a narrowed
        // preview or a rule removed in the meantime cannot slip through.
        let mut recheck = preview.clone();
        if self
            .policy()
            .decide(tool.name(), tool.kind(), &mut recheck)
            .decision
            == Decision::Deny
        {
            return Err(ToolFailure::new(
                ErrorCode::Denied,
                format!("{} was denied by policy on the final check", tool.name()),
            ));
        }
        self.emit(Event::ToolCallRunning {
            call_id: call.id.clone(),
            preview: preview.clone(),
        });
        let committing = Instant::now();
        let result = self
            .commit_recorded(tool.as_ref(), call, &args, &preview, &ctx)
            .await;
        span.record("run_ms", committing.elapsed().as_millis() as u64);
        let result = match (&result, self.shared.approvals) {
            (Ok(r), ApprovalMode::Interactive) => match sandbox_retry(&preview, r) {
                Some((retry, verdict)) => self
                    .retry_unsandboxed(tool.as_ref(), call, &args, &ctx, retry, verdict, cancel)
                    .await
                    .unwrap_or(result),
                None => result,
            },
            _ => result,
        };
        match (result, not_applied) {
            (Ok(r), Some(partial)) => Ok(r.with_partial(partial)),
            (result, _) => result,
        }
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
        retry: Preview,
        verdict: crate::protocol::Verdict,
        cancel: &CancellationToken,
    ) -> Option<Result<ToolResult, ToolFailure>> {
        let preview = match self.ask_once(tool, call, retry, verdict, cancel).await {
            Ok(p) => p,
            Err(f) if f.code == ErrorCode::Rejected => return None,
            Err(f) => return Some(Err(f)),
        };
        let mut recheck = preview.clone();
        if self
            .policy()
            .decide(tool.name(), tool.kind(), &mut recheck)
            .decision
            == Decision::Deny
        {
            return Some(Err(ToolFailure::new(
                ErrorCode::Denied,
                format!("{} was denied by policy on the final check", tool.name()),
            )));
        }
        self.emit(Event::ToolCallRunning {
            call_id: call.id.clone(),
            preview: preview.clone(),
        });
        let committed = self.commit_recorded(tool, call, args, &preview, ctx).await;
        Some(committed.map(|mut r| {
            r.mark_unsandboxed_rerun();
            r
        }))
    }

    /// Like [`Self::ask`], but "allow always" counts as once: the answer saves no rule.
    async fn ask_once(
        &mut self,
        tool: &dyn Tool,
        call: &ToolCall,
        preview: Preview,
        verdict: crate::protocol::Verdict,
        cancel: &CancellationToken,
    ) -> Result<Preview, ToolFailure> {
        self.ask_with(tool, call, preview, verdict, cancel, false)
            .await
            .map(|(p, _)| p)
    }

    /// Handles an ask according to the approval mode; returns the preview to commit, and after a
    /// per-hunk review what the result must say about the hunks not accepted.
    pub(super) async fn ask(
        &mut self,
        tool: &dyn Tool,
        call: &ToolCall,
        preview: Preview,
        verdict: crate::protocol::Verdict,
        cancel: &CancellationToken,
    ) -> Result<(Preview, Option<PartialChange>), ToolFailure> {
        self.ask_with(tool, call, preview, verdict, cancel, true)
            .await
    }

    async fn ask_with(
        &mut self,
        tool: &dyn Tool,
        call: &ToolCall,
        preview: Preview,
        verdict: crate::protocol::Verdict,
        cancel: &CancellationToken,
        rememberable: bool,
    ) -> Result<(Preview, Option<PartialChange>), ToolFailure> {
        match self.shared.approvals {
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
        let shared = self.shared.clone();
        let _asking = tokio::select! {
            guard = shared.asking.lock() => guard,
            () = cancel.cancelled() => {
                return Err(ToolFailure::new(
                    ErrorCode::Cancelled,
                    format!("{} was not run: the turn was interrupted", tool.name()),
                ));
            }
        };
        let approval_id = self.approval_id(&call.id);
        let rx = self.shared.await_approval(&approval_id);
        self.notify_hooks(
            "approval",
            format!("pablo needs your approval to run {}", tool.name()),
        );
        self.emit(Event::ApprovalRequest {
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
                events: self.tool_events(),
                host: self.host().clone(),
            };
            self.start_preview_check(&approval_id, t, &preview, ctx)
        });
        let answer = tokio::select! {
            a = rx => a.ok(),
            () = cancel.cancelled() => None,
        };
        self.shared.withdraw_approval(&approval_id);
        let Some(answer) = answer else {
            return Err(ToolFailure::new(
                ErrorCode::Cancelled,
                format!(
                    "{} was not run: the turn was interrupted during approval",
                    tool.name()
                ),
            ));
        };
        self.emit(Event::ApprovalResolved {
            call_id: approval_id.clone(),
            answer: answer.clone(),
        });
        match answer {
            ApprovalAnswer::AllowOnce => Ok((preview, None)),
            ApprovalAnswer::AllowAlways => {
                if rememberable {
                    self.policy().remember(tool.name(), &preview)?;
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

/// What a result too large for the model must still say of a call that acted: how its command
/// ended and where its whole output is.
#[derive(Debug, Default)]
pub(super) struct AlreadyRan {
    exit_code: Option<Option<i32>>,
    artifact: Option<String>,
}

/// The sandbox profile a command's preview runs in (for its trace).
fn sandbox_label(preview: &Preview) -> Option<&'static str> {
    match preview {
        Preview::Command(cp) => cp.sandbox.as_ref().map(|s| s.profile.label()),
        _ => None,
    }
}

/// For a sandboxed command whose result says the sandbox refused something: the same command
/// with the sandbox off, and the question to ask about it.
fn sandbox_retry(
    preview: &Preview,
    result: &ToolResult,
) -> Option<(Preview, crate::protocol::Verdict)> {
    let Preview::Command(cp) = preview else {
        return None;
    };
    let denied = result.sandbox_denied()?;
    let choice = cp.sandbox.as_ref()?;
    if choice.profile == crate::protocol::SandboxProfile::Off {
        return None;
    }
    let mut retry = cp.clone();
    retry.sandbox = Some(crate::protocol::SandboxChoice {
        profile: crate::protocol::SandboxProfile::Off,
        network: true,
        known_safe: false,
        credentials_masked: false,
        degraded: None,
    });
    let why = &denied.message;
    let verdict = crate::protocol::Verdict::ask(
        crate::protocol::SANDBOX_RETRY_RULE,
        format!(
            "{why}; run it again without the sandbox (full access to your files and the network)?"
        ),
    );
    Some((Preview::Command(retry), verdict))
}

/// Tool arguments as JSON; empty text means no arguments.
pub(super) fn parse_arguments(raw: &str) -> Result<Value, String> {
    if raw.trim().is_empty() {
        Ok(json!({}))
    } else {
        serde_json::from_str(raw).map_err(|e| e.to_string())
    }
}

/// The failure of a call the policy denied, with the rules that denied it.
fn denied(tool: &str, verdict: &crate::protocol::Verdict) -> ToolFailure {
    ToolFailure::new(
        ErrorCode::Denied,
        format!(
            "{tool} was denied by policy: {}",
            verdict.reasons.join("; ")
        ),
    )
    .with_data(json!({"rule_ids": verdict.rule_ids}))
}
