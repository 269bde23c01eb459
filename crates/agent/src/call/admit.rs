//! Stage 1, admit: what must hold before anything about a call is decided: the tool exists,
//! its arguments fit the limit, parse and match the schema (an `agent.task`'s agent exists),
//! the budget has a call left and the mode lets the tool be tried. Then the preview.

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::super::mode;
use super::report::denied;
use super::subagents::TaskPlan;
use super::{Pipeline, parse_arguments};
use pablo_core::{ErrorCode, ToolFailure, ToolName};
use pablo_protocol::{Preview, ToolCall};
use pablo_tools::{Tool, ToolContext};

/// A call that passed admission, with its preview.
pub(super) struct Admitted {
    pub(super) tool: Arc<dyn Tool>,
    pub(super) args: Value,
    pub(super) preview: Preview,
    pub(super) ctx: ToolContext,
    /// For `agent.task`: the agent and the task it is handed.
    pub(super) task: Option<TaskPlan>,
}

impl Pipeline<'_> {
    pub(super) async fn admit(
        &mut self,
        call: &ToolCall,
        cancel: &CancellationToken,
        span: &tracing::Span,
    ) -> Result<Admitted, ToolFailure> {
        let (tool, args) = self.tool_and_arguments(call, span)?;
        if let Some(v) = self.catalog.validator(tool.name()) {
            v.validate(tool.name(), &args)?;
        }
        let task = self.task_plan(tool.as_ref(), &args)?;
        if let Err(spent) = self.spend.budget.take_tool_call(self.limits) {
            return Err(ToolFailure::new(
                ErrorCode::ToolCallBudgetExhausted,
                format!(
                    "{} was not run: {} is used up",
                    tool.name(),
                    spent.describe("tool-call")
                ),
            ));
        }
        mode::refuse_before_preview(self.place.policy().mode(), tool.name(), tool.kind())?;
        let ctx = ToolContext {
            call_id: call.id.clone(),
            cancel: cancel.clone(),
            events: self.outlet.tool_events(),
            host: self.place.host().clone(),
        };
        let preview = self.preview(tool.as_ref(), &args, &ctx).await?;
        Ok(Admitted {
            tool,
            args,
            preview,
            ctx,
            task,
        })
    }

    /// A hook's new arguments, admitted again: validated, planned and previewed.
    pub(super) async fn readmit(
        &mut self,
        admitted: &mut Admitted,
        hook: &str,
        new: Value,
    ) -> Result<(), ToolFailure> {
        let tool = admitted.tool.clone();
        if let Some(v) = self.catalog.validator(tool.name()) {
            v.validate(tool.name(), &new).map_err(|e| {
                let f = ToolFailure::from(e);
                ToolFailure::new(
                    f.code,
                    format!("hook {hook} rewrote the arguments: {}", f.message),
                )
            })?;
        }
        admitted.task = self.task_plan(tool.as_ref(), &new)?;
        admitted.preview = tool.preview(&new, &admitted.ctx).await?;
        admitted.args = new;
        Ok(())
    }

    /// The tool's dry run. A preview that cannot be made (the file exists, or changed) would
    /// invite a retry the policy then denies: the policy's answer on the path comes first.
    async fn preview(
        &self,
        tool: &dyn Tool,
        args: &Value,
        ctx: &ToolContext,
    ) -> Result<Preview, ToolFailure> {
        tool.preview(args, ctx).await.map_err(|f| {
            let denial = tool.write_target(args).and_then(|path| {
                self.place
                    .policy()
                    .deny_write(tool.name(), tool.kind(), &path)
            });
            match denial {
                Some(verdict) => denied(tool.name(), &verdict),
                None => f,
            }
        })
    }

    /// For an `agent.task` call, its agent and task; `None` for any other tool.
    fn task_plan(&self, tool: &dyn Tool, args: &Value) -> Result<Option<TaskPlan>, ToolFailure> {
        if !ToolName::AgentTask.is(tool.name()) {
            return Ok(None);
        }
        TaskPlan::new(self.catalog, args).map(Some)
    }

    /// The catalog's tool for `call` and its arguments parsed: an unknown tool, arguments over
    /// the size limit and arguments that are not JSON are refused, in that order.
    fn tool_and_arguments(
        &self,
        call: &ToolCall,
        span: &tracing::Span,
    ) -> Result<(Arc<dyn Tool>, Value), ToolFailure> {
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
}
