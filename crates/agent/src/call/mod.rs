//! One tool call, from the model's arguments to the result the model reads: the same stages,
//! in the same order, for every tool (the built-in ones, MCP tools and `agent.task`) and in
//! every conversation (the session's and each subagent's).
//!
//! 1. **admit** ([`admit`]): the tool exists, its arguments fit the limit, are JSON and match
//!    its schema, the budget has a call left, the working mode lets the tool be tried; then the
//!    preview, the dry run of exactly what it would do;
//! 2. **pre-hooks**: the person's `pre_tool_use` hooks see the preview and may block the call,
//!    rewrite its arguments (admitted and previewed again) or turn an ask into an allow;
//! 3. **judge** ([`judge`]): policy's verdict on the preview, adjusted by the hooks and the
//!    mode; a denial ends the call here;
//! 4. **approve** ([`approve`]): an ask becomes a question to the person (or the headless
//!    answer); "allow always" saves what the judgement says it saves;
//! 5. **commit** ([`commit`]): policy judges the preview once more (a rule removed while the
//!    question waited), then the tool commits exactly what was previewed, or a subagent starts;
//! 6. **post-hooks**: `post_tool_use` hooks read the result and may add a note to it;
//! 7. **report** ([`report`]): the result is bounded, its secrets redacted, announced and added
//!    to the conversation.
//!
//! A command is parsed once per call: the call's [`LineParses`] serve the hooks' matcher, the
//! judgement, "allow always" and the final check. `agent.task` calls of one model response pass
//! stages 1 to 5 before the response's other calls run, so their subagents work side by side;
//! each is finished (6 and 7) when its turn in the order comes. Each stage is a `debug` event in
//! the call's `tool_call` span (`PABLO_LOG=debug`), the report with the number of parses.
//!
//! The stages work on a [`Pipeline`]: the parts of one conversation a tool call reads and
//! changes, lent by the turn loop. A subagent is reached through [`subagents::Subagents`], which
//! the turn loop is handed from above: the pipeline never imports the code that runs a
//! subagent's turns ([`subagents`] says why).

mod admit;
mod approve;
mod commit;
mod judge;
mod report;
pub(crate) mod subagents;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::Limits;
use super::checkpoints::ChangedPaths;
use super::hooks::HookRunner;
use super::limits::Spend;
use super::outlet::Outlet;
use super::workplace::Workplace;
use pablo_core::{ToolFailure, ToolName};
use pablo_model::{Message, ModelClient};
use pablo_policy::LineParses;
use pablo_protocol::{Event, ToolCall, ToolOutcome};
use pablo_tools::{Catalog, ToolResult};
use subagents::{Parent, SubagentRun, Subagents};

pub(crate) use report::AlreadyRan;

/// What one conversation's tool calls borrow of it, lent by the turn loop for the calls of one
/// model response: what the stages read (where the conversation works and what it may call) and
/// what they change (its spending, its messages, the paths its turn changed).
pub(crate) struct Pipeline<'a> {
    pub(crate) outlet: &'a Outlet,
    pub(crate) place: &'a Workplace,
    pub(crate) hooks: HookRunner<'a>,
    pub(crate) catalog: &'a Catalog,
    pub(crate) limits: &'a Limits,
    pub(crate) spend: &'a mut Spend,
    /// Each call's result joins the conversation here.
    pub(crate) messages: &'a mut Vec<Message>,
    pub(crate) changed: &'a mut ChangedPaths,
    /// A read-only subagent: commands run only when known to just read.
    pub(crate) shell_reads_only: bool,
    pub(crate) subagents: Delegation<'a>,
}

/// What the commit of an `agent.task` call needs besides the pipeline's own borrows: the runner
/// handed in from above, and what a subagent inherits of its parent.
pub(crate) struct Delegation<'a> {
    pub(crate) runner: &'a dyn Subagents,
    pub(crate) model: &'a Arc<dyn ModelClient>,
    pub(crate) system_prompt: &'a str,
    pub(crate) slots: &'a Arc<tokio::sync::Semaphore>,
}

/// A stage of the pipeline, as the trace names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Admit,
    PreHooks,
    Judge,
    Approve,
    Commit,
    PostHooks,
    Report,
}

impl Stage {
    fn as_str(self) -> &'static str {
        match self {
            Stage::Admit => "admit",
            Stage::PreHooks => "pre_hooks",
            Stage::Judge => "judge",
            Stage::Approve => "approve",
            Stage::Commit => "commit",
            Stage::PostHooks => "post_hooks",
            Stage::Report => "report",
        }
    }
}

/// One call on its way through: its id, span, when it started, and its parses.
struct Flight {
    call_id: String,
    span: tracing::Span,
    started: Instant,
    parses: LineParses,
}

impl Flight {
    fn new(call_id: &str) -> Self {
        Self {
            call_id: call_id.to_string(),
            span: pablo_telemetry::tool_call_span(),
            started: Instant::now(),
            parses: LineParses::default(),
        }
    }

    /// Marks the start of `stage` in the call's trace (inside its span).
    fn enter(&self, stage: Stage) {
        tracing::debug!(
            call_id = %self.call_id,
            stage = stage.as_str(),
            "tool call stage"
        );
    }
}

/// What the commit stage left: the tool's result, or a subagent still at work.
enum Committed {
    Done(Box<Result<ToolResult, ToolFailure>>),
    Subagent(SubagentRun),
}

/// A call through its commit stage, waiting to be finished ([`Pipeline::finish_call`]).
pub(crate) struct Begun {
    flight: Flight,
    committed: Result<Committed, ToolFailure>,
}

impl Pipeline<'_> {
    /// Runs `call` through every stage; returns its outcome as reported to the model.
    pub(crate) async fn run_call(
        &mut self,
        call: &ToolCall,
        cancel: &CancellationToken,
    ) -> ToolOutcome {
        let begun = self.begin_call(call, cancel).await;
        self.finish_call(call, begun).await
    }

    /// Takes every `agent.task` call of `calls` through its commit, so that their subagents
    /// work side by side while the response's other calls run; each is finished in its turn.
    pub(crate) async fn begin_subagents(
        &mut self,
        calls: &[ToolCall],
        cancel: &CancellationToken,
    ) -> HashMap<String, Begun> {
        let mut begun = HashMap::new();
        if self.outlet.scope().is_some() {
            return begun;
        }
        for call in calls {
            let is_task = self
                .catalog
                .get(&call.name)
                .is_some_and(|t| ToolName::AgentTask.is(t.name()));
            if is_task {
                begun.insert(call.id.clone(), self.begin_call(call, cancel).await);
            }
        }
        begun
    }

    /// Announces `call` and takes it through admit, pre-hooks, judge, approve and commit.
    pub(crate) async fn begin_call(
        &mut self,
        call: &ToolCall,
        cancel: &CancellationToken,
    ) -> Begun {
        self.announce(call);
        let flight = Flight::new(&call.id);
        let committed = self
            .through_commit(call, cancel, &flight)
            .instrument(flight.span.clone())
            .await;
        Begun { flight, committed }
    }

    /// Post-hooks and report for a begun call (a subagent's result is awaited first).
    pub(crate) async fn finish_call(&mut self, call: &ToolCall, begun: Begun) -> ToolOutcome {
        let Begun { flight, committed } = begun;
        let span = flight.span.clone();
        async {
            let (outcome, ran) = self.outcome_of(call, committed, &flight).await;
            flight
                .span
                .record("duration_ms", flight.started.elapsed().as_millis() as u64);
            pablo_telemetry::content::tool_call(&flight.span, &call.arguments, &outcome);
            flight.enter(Stage::Report);
            tracing::debug!(
                call_id = %flight.call_id,
                parses = flight.parses.count(),
                "tool call parses"
            );
            self.report(call, outcome, &ran)
        }
        .instrument(span)
        .await
    }

    /// The committed result as the model's outcome, with the post-hooks' notes on a success.
    async fn outcome_of(
        &mut self,
        call: &ToolCall,
        committed: Result<Committed, ToolFailure>,
        flight: &Flight,
    ) -> (ToolOutcome, AlreadyRan) {
        let span = &flight.span;
        let committed = match committed {
            Ok(Committed::Subagent(run)) => Ok(Err(run)),
            Ok(Committed::Done(done)) => (*done).map(Ok),
            Err(f) => Err(f),
        };
        let (outcome, ran) = match committed {
            Ok(Ok(result)) => {
                pablo_telemetry::record_tool_facts(span, result.trace_facts(), None);
                let ran = AlreadyRan::of(&result);
                (ToolOutcome::ok(result.to_json()), ran)
            }
            Ok(Err(run)) => (self.finish_subagent(run).await, AlreadyRan::default()),
            Err(f) => (f.into_outcome(), AlreadyRan::default()),
        };
        match &outcome {
            ToolOutcome::Ok { .. } => {
                span.record("outcome", "ok");
                flight.enter(Stage::PostHooks);
                let tool = self.tool_label(call);
                let arguments = || parse_arguments(&call.arguments).unwrap_or(Value::Null);
                let outcome = self.hooks.post_tool(&tool, call, arguments, outcome).await;
                (outcome, ran)
            }
            ToolOutcome::Err { error, .. } => {
                span.record("outcome", error.code.as_str());
                (outcome, ran)
            }
        }
    }

    /// Stages 1 to 5.
    async fn through_commit(
        &mut self,
        call: &ToolCall,
        cancel: &CancellationToken,
        flight: &Flight,
    ) -> Result<Committed, ToolFailure> {
        flight.enter(Stage::Admit);
        let mut admitted = self.admit(call, cancel, &flight.span).await?;
        flight.enter(Stage::PreHooks);
        let gate = self
            .hooks
            .pre_tool(
                admitted.tool.as_ref(),
                call,
                &admitted.args,
                &admitted.preview,
                &flight.parses,
            )
            .await?;
        if let Some((hook, new)) = &gate.rewrite {
            self.readmit(&mut admitted, hook, new.clone()).await?;
        }
        flight.enter(Stage::Judge);
        let judgement = self.judge_call(&mut admitted, &gate, flight)?;
        flight.enter(Stage::Approve);
        let not_applied = self.approve(&mut admitted, call, judgement, cancel).await?;
        flight.enter(Stage::Commit);
        self.commit(admitted, not_applied, call, cancel, flight)
            .await
    }

    /// What a subagent started by this conversation inherits of it.
    fn parent(&self) -> Parent<'_> {
        Parent {
            session_id: self.hooks.session_id,
            model: self.subagents.model,
            system_prompt: self.subagents.system_prompt,
            catalog: self.catalog,
            limits: self.limits,
            budget: &self.spend.budget,
            outlet: self.outlet,
            slots: self.subagents.slots,
        }
    }

    /// The result of a subagent, once it has ended; what it spent is added to this
    /// conversation's usage and cost (its calls were taken from this conversation's budget as
    /// it made them).
    async fn finish_subagent(&mut self, run: SubagentRun) -> ToolOutcome {
        let end = match run.0.await {
            Ok(end) => end,
            Err(e) => {
                return ToolFailure::new(
                    pablo_core::ErrorCode::Internal,
                    format!("the subagent stopped unexpectedly: {e}"),
                )
                .into_outcome();
            }
        };
        self.spend.add(&end.usage, end.cost_usd);
        self.outlet.emit(Event::Usage {
            last: end.usage,
            total: self.spend.usage,
        });
        end.outcome
    }
}

/// Tool arguments as JSON; empty text means no arguments.
pub(crate) fn parse_arguments(raw: &str) -> Result<Value, String> {
    if raw.trim().is_empty() {
        Ok(serde_json::json!({}))
    } else {
        serde_json::from_str(raw).map_err(|e| e.to_string())
    }
}
