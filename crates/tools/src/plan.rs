//! `plan.update` (provider name `update_plan`): the model's todo checklist.
//!
//! It touches nothing outside the session, so its preview is `Preview::Internal` and policy lets it
//! through; the front-ends draw the checklist from the `PlanUpdate` event it emits.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::wording::{self, Args as CallArgs};
use super::{Tool, ToolContext, ToolResult};
use pablo_core::{ErrorCode, ToolFailure, ToolKind, ToolName};
use pablo_protocol::describe::{CallView, ResultView};
use pablo_protocol::{Event, PlanItem, PlanStatus, Preview};

pub struct PlanUpdate;

/// What `plan.update` returns: how far along the checklist is (the checklist itself goes to the
/// front-ends as `Event::PlanUpdate`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PlanResult {
    /// Always `true`.
    pub(crate) updated: bool,
    pub(crate) completed: usize,
    pub(crate) total: usize,
}

#[derive(Deserialize)]
struct Args {
    explanation: Option<String>,
    items: Vec<PlanItem>,
}

/// Limits that keep a checklist a checklist.
const MAX_ITEMS: usize = 100;
const MAX_ITEM_CHARS: usize = 500;

fn parse(args: &Value) -> Result<Args, ToolFailure> {
    let args: Args = serde_json::from_value(args.clone())
        .map_err(|e| ToolFailure::new(ErrorCode::InvalidArguments, format!("plan.update: {e}")))?;
    let in_progress = args
        .items
        .iter()
        .filter(|i| i.status == PlanStatus::InProgress)
        .count();
    if in_progress > 1 {
        return Err(ToolFailure::new(
            ErrorCode::InvalidArguments,
            format!(
                "plan.update: {in_progress} items are in_progress; at most one may be in progress at a time"
            ),
        ));
    }
    if args.items.len() > MAX_ITEMS {
        return Err(ToolFailure::new(
            ErrorCode::InvalidArguments,
            format!(
                "plan.update: {} items; a checklist holds at most {MAX_ITEMS}",
                args.items.len()
            ),
        ));
    }
    if let Some(long) = args
        .items
        .iter()
        .position(|i| i.content.chars().count() > MAX_ITEM_CHARS)
    {
        return Err(ToolFailure::new(
            ErrorCode::InvalidArguments,
            format!("plan.update: item {long} is longer than {MAX_ITEM_CHARS} characters"),
        ));
    }
    Ok(args)
}

#[async_trait]
impl Tool for PlanUpdate {
    fn name(&self) -> &'static str {
        ToolName::PlanUpdate.native()
    }

    fn provider_name(&self) -> &'static str {
        ToolName::PlanUpdate.provider()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Think
    }

    fn description(&self) -> String {
        "Replace the todo checklist shown to the person. Send the whole list every time, each item \
         with status pending, in_progress or completed; keep exactly one item in_progress while you \
         work and mark items completed as soon as they are done."
            .to_string()
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "explanation": {"type": "string", "description": "Why the plan changed (optional)."},
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "minLength": 1},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                        },
                        "required": ["content", "status"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["items"],
            "additionalProperties": false
        })
    }

    async fn preview(&self, args: &Value, _ctx: &ToolContext) -> Result<Preview, ToolFailure> {
        parse(args)?;
        Ok(Preview::Internal)
    }

    async fn commit_result(
        &self,
        args: &Value,
        _preview: &Preview,
        ctx: &ToolContext,
    ) -> Result<ToolResult, ToolFailure> {
        let args = parse(args)?;
        let done = args
            .items
            .iter()
            .filter(|i| i.status == PlanStatus::Completed)
            .count();
        let total = args.items.len();
        ctx.events.send(Event::PlanUpdate {
            explanation: args.explanation,
            items: args.items,
        });
        Ok(PlanResult {
            updated: true,
            completed: done,
            total,
        }
        .into())
    }
}
pub(crate) fn show_call(args: CallArgs<'_>) -> CallView {
    let summary = args
        .get("items")
        .and_then(Value::as_array)
        .map(|a| format!("{} items", a.len()));
    wording::call(args, "Update plan".into(), summary)
}

/// `2/3 done` (the checklist is on screen already: the result shows only when expanded).
pub(crate) fn show_result(data: &Value) -> Option<ResultView> {
    let r: PlanResult = wording::typed(data)?;
    // A result that does not say how far along it is (an older journal's) says it was updated.
    let counted = data.get("completed").is_some() && data.get("total").is_some();
    let progress = counted.then(|| format!("{}/{} done", r.completed, r.total));
    Some(ResultView {
        only_expanded: true,
        summary: progress.clone(),
        ..ResultView::line(progress.unwrap_or_else(|| "updated".into()))
    })
}
