//! Host limits and call budgets, with the defaults the product is specified by.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use pablo_config::LimitsConfig;
use pablo_core::ErrorCode;
use pablo_protocol::{ToolOutcome, Usage};

pub(crate) const MIB: usize = 1024 * 1024;

/// What one session may consume. `None` budgets are unlimited; `Some(0)` disables that kind of
/// call entirely.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// How long one turn may run.
    pub run_deadline: Duration,
    /// Bound on one tool call's arguments.
    pub max_tool_argument_bytes: usize,
    /// Bound on a tool result after JSON serialization (escaping counts).
    pub max_tool_result_bytes: usize,
    /// Bound on one model request (system prompt, tools and messages, serialized).
    pub max_request_context_bytes: usize,
    /// Bound on one model response.
    pub max_model_output_bytes: usize,
    /// Events the agent itself may send in the session.
    pub max_native_events: u64,
    /// Model calls the session may make.
    pub max_model_calls: Option<u64>,
    /// Tool calls the session may make.
    pub max_tool_calls: Option<u64>,
    /// The most the session may spend on model calls, in US dollars at the model's prices
    /// (`--max-budget-usd`); `None` is no cap.
    pub max_budget_usd: Option<f64>,
    /// How long a model stream may deliver nothing at all.
    pub stream_idle_timeout: Duration,
    /// How long a model stream may deliver none of the answer.
    pub stream_progress_timeout: Duration,
    /// When the request (system prompt, tools and messages, serialized) grows past this many
    /// bytes, the conversation is summarized even if the context window has room. Unbounded by
    /// default: the window decides (`agent::window`); set it to keep requests small on purpose.
    pub compact_at_bytes: usize,
    /// HTTP requests `web.fetch` may send in the session, each redirect counted (0 removes the
    /// tool from the catalog).
    pub max_network_requests: u64,
    /// Largest artifact `artifact.write` stores.
    pub max_artifact_bytes: usize,
    /// Subagents of one model response that run at the same time.
    pub max_parallel_subagents: usize,
    /// Tool calls one subagent may make (the session's budget still bounds the total).
    pub subagent_max_tool_calls: u64,
    /// How long one subagent may run (the turn's deadline still bounds it).
    pub subagent_deadline: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            run_deadline: Duration::from_secs(60 * 60),
            max_tool_argument_bytes: MIB,
            max_tool_result_bytes: 8 * MIB,
            max_request_context_bytes: 32 * MIB,
            max_model_output_bytes: 4 * MIB,
            max_native_events: 1_000_000,
            max_model_calls: None,
            max_tool_calls: None,
            max_budget_usd: None,
            stream_idle_timeout: Duration::from_secs(120),
            stream_progress_timeout: Duration::from_secs(600),
            compact_at_bytes: usize::MAX,
            max_network_requests: 50,
            max_artifact_bytes: 5 * MIB,
            max_parallel_subagents: 4,
            subagent_max_tool_calls: 50,
            subagent_deadline: Duration::from_secs(600),
        }
    }
}

impl Limits {
    /// Applies a config layer's overrides.
    pub fn apply(&mut self, c: &LimitsConfig) {
        if let Some(s) = c.run_deadline_seconds {
            self.run_deadline = Duration::from_secs(s);
        }
        if let Some(v) = c.max_tool_argument_bytes {
            self.max_tool_argument_bytes = v;
        }
        if let Some(v) = c.max_tool_result_bytes {
            self.max_tool_result_bytes = v;
        }
        if let Some(v) = c.max_request_context_bytes {
            self.max_request_context_bytes = v;
        }
        if let Some(v) = c.max_model_output_bytes {
            self.max_model_output_bytes = v;
        }
        if let Some(v) = c.max_native_events {
            self.max_native_events = v;
        }
        if c.max_model_calls.is_some() {
            self.max_model_calls = c.max_model_calls;
        }
        if c.max_tool_calls.is_some() {
            self.max_tool_calls = c.max_tool_calls;
        }
        if c.max_budget_usd.is_some() {
            self.max_budget_usd = c.max_budget_usd;
        }
        if let Some(v) = c.compact_at_bytes {
            self.compact_at_bytes = v;
        }
        if let Some(v) = c.max_network_requests {
            self.max_network_requests = v;
        }
        if let Some(v) = c.max_artifact_bytes {
            self.max_artifact_bytes = v;
        }
        if let Some(s) = c.stream_idle_timeout_seconds {
            self.stream_idle_timeout = Duration::from_secs(s);
        }
        if let Some(s) = c.stream_progress_timeout_seconds {
            self.stream_progress_timeout = Duration::from_secs(s.max(1));
        }
        if let Some(v) = c.max_parallel_subagents {
            self.max_parallel_subagents = v.max(1);
        }
        if let Some(v) = c.subagent_max_tool_calls {
            self.subagent_max_tool_calls = v;
        }
        if let Some(s) = c.subagent_deadline_seconds {
            self.subagent_deadline = Duration::from_secs(s);
        }
    }
}

/// What a conversation has spent, counted where every conversation that spends it sees it.
#[derive(Debug, Default)]
struct Spent {
    model_calls: AtomicU64,
    /// Requests sent again after a transient failure (a 5xx, a refused connection) by the
    /// model client itself: they reach the provider like any call, so a turn's count of model
    /// calls includes them, but they are not taken from the model-call budget (the client's
    /// retries are bounded on their own).
    retries: AtomicU64,
    tool_calls: AtomicU64,
    /// Dollars spent on model calls, in nanodollars: an integer adds up exactly and atomically
    /// across subagents running side by side.
    cost_nanos: AtomicU64,
}

const NANOS_PER_USD: f64 = 1e9;

fn to_nanos(usd: f64) -> u64 {
    // Saturating: a negative or NaN cost (a bad price) counts as nothing, a huge one as the most.
    (usd * NANOS_PER_USD).max(0.0) as u64
}

fn to_usd(nanos: u64) -> f64 {
    nanos as f64 / NANOS_PER_USD
}

/// Takes one call from `count` unless that reaches `max`; whether it was taken.
fn take(count: &AtomicU64, max: Option<u64>) -> bool {
    count
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            max.is_none_or(|m| n < m).then_some(n + 1)
        })
        .is_ok()
}

/// The budget a subagent's calls are also taken from: its parent's counts and limits.
#[derive(Debug, Clone)]
struct Above {
    spent: Arc<Spent>,
    max_model_calls: Option<u64>,
    max_tool_calls: Option<u64>,
    max_budget_usd: Option<f64>,
    /// Whether a tool call was refused here because the parent's budget was spent: then the
    /// parent's turn ends too, as if its own call had been refused.
    refused_tool_call: Arc<AtomicBool>,
}

/// Which limit refused a call: the conversation's own, or the one of the conversation that
/// started it (the session's, for a subagent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exhausted {
    Own(u64),
    Parent(u64),
}

impl Exhausted {
    /// `the tool-call budget (N)` / `the session's tool-call budget (N)`, for `kind`.
    pub(crate) fn describe(self, kind: &str) -> String {
        match self {
            Exhausted::Own(n) => format!("the {kind} budget ({n})"),
            Exhausted::Parent(n) => format!("the session's {kind} budget ({n})"),
        }
    }
}

/// A spend cap that is reached: what it allows and what was spent (the last call may have gone
/// over: its cost is known only once it has answered).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct CapReached {
    pub(crate) cap: f64,
    pub(crate) spent: f64,
    /// The session's cap, reached by a subagent.
    pub(crate) parent: bool,
}

impl CapReached {
    /// `the spend cap of $0.500 (--max-budget-usd) is reached: $0.600 spent; …`.
    pub(crate) fn describe(self) -> String {
        let whose = if self.parent { "session's " } else { "" };
        format!(
            "the {whose}spend cap of {} (--max-budget-usd) is reached: {} spent; a higher cap \
             (`pablo resume ID --max-budget-usd AMOUNT`, which counts from $0) goes on",
            pablo_core::dollars(self.cap),
            pablo_core::dollars(self.spent)
        )
    }
}

/// Counts what has been spent against [`Limits`]. A clone counts into the same totals (a
/// subtask shares its session's budget); a subagent's ([`Budget::below`]) has counts of its own
/// and takes every call from its parent's too, so subagents running side by side together never
/// spend more than the parent had left.
#[derive(Debug, Clone, Default)]
pub(crate) struct Budget {
    spent: Arc<Spent>,
    above: Option<Above>,
}

impl Budget {
    /// A budget of its own under this one, whose limits (`limits`) bound the calls taken here.
    pub(crate) fn below(&self, limits: &Limits) -> Budget {
        Budget {
            spent: Arc::default(),
            above: Some(Above {
                spent: self.spent.clone(),
                max_model_calls: limits.max_model_calls,
                max_tool_calls: limits.max_tool_calls,
                max_budget_usd: limits.max_budget_usd,
                refused_tool_call: Arc::default(),
            }),
        }
    }

    /// Whether a tool call of this (subagent's) budget was refused because its parent's
    /// tool-call budget is used up.
    pub(crate) fn parent_refused_a_tool_call(&self) -> bool {
        self.above
            .as_ref()
            .is_some_and(|a| a.refused_tool_call.load(Ordering::Acquire))
    }

    /// The model calls made in this conversation (and, for a session, its subagents').
    pub(crate) fn model_calls(&self) -> u64 {
        self.spent.model_calls.load(Ordering::Acquire)
    }

    /// The model requests sent for this conversation (and, for a session, its subagents'):
    /// its model calls and every time the client sent one of them again after a transient
    /// failure. What a turn reports as its `model_calls`.
    pub(crate) fn model_requests(&self) -> u64 {
        self.model_calls() + self.spent.retries.load(Ordering::Acquire)
    }

    /// Counts a request the model client sent again after a transient failure, here and in the
    /// parent's budget.
    pub(crate) fn count_retry(&self) {
        self.spent.retries.fetch_add(1, Ordering::AcqRel);
        if let Some(above) = &self.above {
            above.spent.retries.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// The tool calls made in this conversation (and, for a session, its subagents').
    pub(crate) fn tool_calls(&self) -> u64 {
        self.spent.tool_calls.load(Ordering::Acquire)
    }

    /// What the model calls of this conversation (and, for a session, its subagents') cost, in
    /// US dollars at their models' prices.
    pub(crate) fn cost_usd(&self) -> f64 {
        to_usd(self.spent.cost_nanos.load(Ordering::Acquire))
    }

    /// Counts what one model call cost, here and in the parent's budget.
    pub(crate) fn add_cost(&self, usd: f64) {
        let nanos = to_nanos(usd);
        self.spent.cost_nanos.fetch_add(nanos, Ordering::AcqRel);
        if let Some(above) = &self.above {
            above.spent.cost_nanos.fetch_add(nanos, Ordering::AcqRel);
        }
    }

    /// Whether a spend cap bounds this conversation (its own, or its parent's): then every model
    /// call must have a known price.
    pub(crate) fn spend_capped(&self, limits: &Limits) -> bool {
        limits.max_budget_usd.is_some()
            || self
                .above
                .as_ref()
                .is_some_and(|a| a.max_budget_usd.is_some())
    }

    /// The spend cap that is reached, if one is: this conversation's own, or its parent's.
    pub(crate) fn spend_cap_reached(&self, limits: &Limits) -> Option<CapReached> {
        if let Some(cap) = limits.max_budget_usd
            && self.cost_usd() >= cap
        {
            return Some(CapReached {
                cap,
                spent: self.cost_usd(),
                parent: false,
            });
        }
        let above = self.above.as_ref()?;
        let cap = above.max_budget_usd?;
        let spent = to_usd(above.spent.cost_nanos.load(Ordering::Acquire));
        (spent >= cap).then_some(CapReached {
            cap,
            spent,
            parent: true,
        })
    }

    /// The model calls `limits` still allows, also by the parent's budget (`None`: unlimited).
    pub(crate) fn model_calls_remaining(&self, limits: &Limits) -> Option<u64> {
        let own = limits
            .max_model_calls
            .map(|m| m.saturating_sub(self.model_calls()));
        let above = self.above.as_ref().and_then(|a| {
            a.max_model_calls
                .map(|m| m.saturating_sub(a.spent.model_calls.load(Ordering::Acquire)))
        });
        match (own, above) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub(crate) fn model_calls_left(&self, limits: &Limits) -> bool {
        self.model_calls_remaining(limits) != Some(0)
    }

    /// Which limit leaves no model call, if one does.
    pub(crate) fn model_calls_exhausted(&self, limits: &Limits) -> Option<Exhausted> {
        if let Some(max) = limits.max_model_calls
            && self.model_calls() >= max
        {
            return Some(Exhausted::Own(max));
        }
        let above = self.above.as_ref()?;
        let max = above.max_model_calls?;
        (above.spent.model_calls.load(Ordering::Acquire) >= max).then_some(Exhausted::Parent(max))
    }

    /// Takes one tool call from this budget and the parent's, or from neither.
    pub(crate) fn take_tool_call(&self, limits: &Limits) -> Result<(), Exhausted> {
        let taken = self.take_with(
            limits.max_tool_calls,
            |s| &s.tool_calls,
            |a| a.max_tool_calls,
        );
        if let (Err(Exhausted::Parent(_)), Some(above)) = (&taken, &self.above) {
            above.refused_tool_call.store(true, Ordering::Release);
        }
        taken
    }

    /// Takes one model call from this budget and the parent's, or from neither.
    pub(crate) fn take_model_call(&self, limits: &Limits) -> Result<(), Exhausted> {
        self.take_with(
            limits.max_model_calls,
            |s| &s.model_calls,
            |a| a.max_model_calls,
        )
    }

    fn take_with(
        &self,
        own_max: Option<u64>,
        count: impl Fn(&Spent) -> &AtomicU64,
        above_max: impl Fn(&Above) -> Option<u64>,
    ) -> Result<(), Exhausted> {
        if let Some(above) = &self.above
            && !take(count(&above.spent), above_max(above))
        {
            return Err(Exhausted::Parent(above_max(above).unwrap_or(0)));
        }
        if !take(count(&self.spent), own_max) {
            if let Some(above) = &self.above {
                count(&above.spent).fetch_sub(1, Ordering::AcqRel);
            }
            return Err(Exhausted::Own(own_max.unwrap_or(0)));
        }
        Ok(())
    }
}

/// What a conversation has spent: its calls against the [`Limits`] ([`Budget`]), the tokens the
/// provider counted, and what they cost. Kept together because whatever spends (a model call, a
/// subagent that ends, a subtask that joins the session) changes them together.
#[derive(Debug, Clone, Default)]
pub(crate) struct Spend {
    pub(crate) budget: Budget,
    pub(crate) usage: Usage,
    /// What the calls so far cost, each at the prices of the model that answered it (`None`
    /// while no model with known prices has answered).
    pub(crate) cost_usd: Option<f64>,
}

impl Spend {
    /// Adds tokens and their cost (`None`: unpriced) to the totals; the budget's count of cost
    /// is the caller's, since a subagent's was counted into it as it spent.
    pub(crate) fn add(&mut self, usage: &Usage, cost_usd: Option<f64>) {
        self.usage.add(usage);
        if let Some(c) = cost_usd {
            self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + c);
        }
    }
}

/// The codes of tool results that mean a session budget is spent (the tool-call budget; the
/// network requests of `web.fetch`; the spend cap, reached by a subagent).
pub(crate) const SPENT_BUDGET_CODES: [ErrorCode; 3] = [
    ErrorCode::ToolCallBudgetExhausted,
    ErrorCode::NetworkBudgetExhausted,
    ErrorCode::CostBudgetExhausted,
];

/// The code and message that end the turn when `outcome` says a session budget is spent.
///
/// A spent budget stays spent for the rest of the session, so a model that is called again only
/// asks again: `--max-tool-calls 5` once made 502 model calls, each answered with the same
/// refusal, until the run deadline. So the refusal is the model's last word on tools: it is in
/// the conversation (the model is told), and the turn ends with the budget's code instead of
/// calling the model once more.
pub(crate) fn spent_budget(outcome: &ToolOutcome) -> Option<(ErrorCode, String)> {
    let ToolOutcome::Err { error, .. } = outcome else {
        return None;
    };
    let code = ErrorCode::parse(&error.code).filter(|c| SPENT_BUDGET_CODES.contains(c))?;
    Some((code, format!("{}; the turn ends here", error.message)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limited(tools: Option<u64>, models: Option<u64>) -> Limits {
        Limits {
            max_tool_calls: tools,
            max_model_calls: models,
            ..Limits::default()
        }
    }

    #[test]
    fn subagents_side_by_side_never_take_more_than_the_parent_has_left() {
        let session = limited(Some(10), None);
        let parent = Budget::default();
        for _ in 0..2 {
            parent.take_tool_call(&session).unwrap();
        }
        let own = limited(Some(50), None);
        let children: Vec<Budget> = (0..4).map(|_| parent.below(&session)).collect();
        let taken: u64 = std::thread::scope(|s| {
            let handles: Vec<_> = children
                .iter()
                .map(|c| {
                    s.spawn(|| (0..20).filter(|_| c.take_tool_call(&own).is_ok()).count() as u64)
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(taken, 8, "the children share what the parent had left");
        assert_eq!(parent.tool_calls(), 10);
        let refused = children[0].take_tool_call(&own).unwrap_err();
        assert_eq!(refused, Exhausted::Parent(10));
        assert_eq!(
            refused.describe("tool-call"),
            "the session's tool-call budget (10)"
        );
    }

    #[test]
    fn a_childs_own_limit_refuses_without_spending_the_parents() {
        let parent = Budget::default();
        let session = limited(None, Some(5));
        let child = parent.below(&session);
        let own = limited(None, Some(1));
        child.take_model_call(&own).unwrap();
        assert_eq!(child.take_model_call(&own), Err(Exhausted::Own(1)));
        assert_eq!(parent.model_calls(), 1, "the refused call was given back");
        assert_eq!(child.model_calls_remaining(&own), Some(0));
        assert_eq!(child.model_calls_exhausted(&own), Some(Exhausted::Own(1)));
        // A clone is the same budget (a subtask's), not a copy.
        let shared = parent.clone();
        shared.take_model_call(&session).unwrap();
        assert_eq!(parent.model_calls(), 2);
    }

    #[test]
    fn a_subagents_cost_counts_toward_the_parents_cap() {
        let session = Limits {
            max_budget_usd: Some(0.5),
            ..Limits::default()
        };
        let parent = Budget::default();
        let own = Limits::default();
        let child = parent.below(&session);
        assert!(child.spend_capped(&own));
        child.add_cost(0.3);
        assert_eq!(child.spend_cap_reached(&own), None);
        parent.add_cost(0.2);
        let reached = child.spend_cap_reached(&own).unwrap();
        assert!(reached.parent);
        assert!((parent.cost_usd() - 0.5).abs() < 1e-9);
        assert_eq!(
            parent.spend_cap_reached(&session).map(|r| r.parent),
            Some(false)
        );
    }

    #[test]
    fn a_retried_request_counts_as_a_request_here_and_in_the_parent_but_spends_no_call() {
        let session = limited(None, Some(1));
        let parent = Budget::default();
        let child = parent.below(&session);
        child.take_model_call(&Limits::default()).unwrap();
        child.count_retry();
        assert_eq!((child.model_calls(), child.model_requests()), (1, 2));
        assert_eq!((parent.model_calls(), parent.model_requests()), (1, 2));
        assert_eq!(parent.model_calls_remaining(&session), Some(0));
    }

    #[test]
    fn a_parents_requests_are_not_a_childs() {
        let parent = Budget::default();
        parent.count_retry();
        let child = parent.below(&Limits::default());
        assert_eq!(child.model_requests(), 0);
        assert_eq!(parent.model_requests(), 1);
    }
}
