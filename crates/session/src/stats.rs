//! `pablo stats [--since 7d] [--json]`: usage over time, from the local journals. Sessions,
//! turns, model calls, tokens and cost by model, tool calls by decision.
//!
//! Everything comes from events the journals already hold, each counted when its timestamp is in
//! the period: `Usage` (one per model call that reported usage, attributed to the model of the
//! moment; a subagent's calls are its own `Usage` events, journaled wrapped in `Subagent`, and the
//! `Usage` its parent sends when it ends, which adds the subagent's whole spend to the parent's
//! total, is not a call and is not counted again), the session's
//! cost so far in `ContextUsage` (its increase is the call's cost), `TurnCompleted`, and for tool
//! calls the approval question, the policy's refusal or the person's (`ToolCallEnd`'s error code),
//! or the call running unasked (`ToolCallRunning`).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::load::load_journal_text;
use super::{SessionError, Store};
use pablo_protocol::{Event, Usage};

/// The model calls of turns: every request each turn sent to the model, its subagents' and
/// its retried requests included (`TurnCompleted`'s `model_calls`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct TurnCalls {
    /// Turns that said how many calls they made (journals written before pablo counted them
    /// did not).
    pub(crate) turns: u64,
    /// Their model calls, together.
    pub(crate) calls: u64,
    /// The most one of them made.
    pub(crate) most: u64,
}

impl TurnCalls {
    fn add(&mut self, calls: u64) {
        self.turns += 1;
        self.calls += calls;
        self.most = self.most.max(calls);
    }

    /// `2.5 on average, 6 at most (4 turns)`, or `None` when no turn said.
    fn describe(&self) -> Option<String> {
        (self.turns > 0).then(|| {
            format!(
                "{:.1} on average, {} at most ({})",
                self.calls as f64 / self.turns as f64,
                self.most,
                pablo_protocol::describe::plural(self.turns, "turn")
            )
        })
    }
}

/// Usage of one model.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct ModelStats {
    pub(crate) provider: String,
    pub(crate) model: String,
    pub(crate) calls: u64,
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u64,
    pub(crate) cached_input_tokens: u64,
    pub(crate) cache_write_input_tokens: u64,
    /// At the prices the session knew; `None` when none were known.
    pub(crate) cost_usd: Option<f64>,
}

/// Tool calls by what decided them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Decisions {
    /// Ran without a question.
    pub(crate) allowed: u64,
    /// A question was asked (and not answered with a rejection), or one was needed and nobody
    /// could answer (`approval_required`).
    pub(crate) asked: u64,
    /// Refused by policy.
    pub(crate) denied: u64,
    /// The person said no.
    pub(crate) rejected: u64,
    /// Ended before any decision (bad arguments, an unknown tool, an interrupted turn).
    pub(crate) undecided: u64,
}

impl Decisions {
    pub(crate) fn total(&self) -> u64 {
        self.allowed + self.asked + self.denied + self.rejected + self.undecided
    }
}

/// The usage of a period.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Stats {
    /// Unix ms of the period's start; `None` for all time.
    pub(crate) since_ms: Option<u64>,
    pub(crate) sessions: u64,
    pub(crate) turns: u64,
    /// Model calls per turn, subagents' and retries included.
    pub(crate) turn_model_calls: TurnCalls,
    pub(crate) models: Vec<ModelStats>,
    pub(crate) tool_calls: Decisions,
    /// By native tool name.
    pub(crate) tools: BTreeMap<String, Decisions>,
    /// Journals that could not be read (`<path>: why`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Stats {
    pub(crate) fn total_cost(&self) -> Option<f64> {
        let costs: Vec<f64> = self.models.iter().filter_map(|m| m.cost_usd).collect();
        (!costs.is_empty()).then(|| costs.iter().sum())
    }
}

/// `7d`, `12h`, `30m`, `2w` (before now), or a date `2026-11-01` (UTC midnight): the start of a
/// period in Unix ms.
pub fn parse_since(text: &str, now_ms: u64) -> Result<u64, String> {
    let t = text.trim();
    let unit = t.chars().last().unwrap_or(' ');
    let span_ms = match unit {
        'm' => Some(60_000),
        'h' => Some(3_600_000),
        'd' => Some(86_400_000),
        'w' => Some(7 * 86_400_000),
        _ => None,
    };
    let count = t.strip_suffix(unit).and_then(|n| n.parse::<u64>().ok());
    if let (Some(ms), Some(n)) = (span_ms, count) {
        return Ok(now_ms.saturating_sub(n.saturating_mul(ms)));
    }
    let format = time::macros::format_description!("[year]-[month]-[day]");
    match time::Date::parse(t, &format) {
        Ok(d) => {
            let secs = d.midnight().assume_utc().unix_timestamp();
            Ok(u64::try_from(secs).unwrap_or(0) * 1000)
        }
        Err(_) => Err(format!(
            "--since {t:?}: give a span before now (30m, 12h, 7d, 2w) or a date (2026-11-01)"
        )),
    }
}

/// The usage recorded in `store` since `since_ms` (all of it for `None`).
pub(crate) fn gather(store: &Store, since_ms: Option<u64>) -> Stats {
    let listing = store.list();
    let mut out = Stats {
        since_ms,
        warnings: listing.warnings,
        ..Stats::default()
    };
    let mut models: BTreeMap<(String, String), ModelStats> = BTreeMap::new();
    for info in listing.sessions {
        if since_ms.is_some_and(|s| info.updated_ms < s) {
            continue;
        }
        let path = store.dir().join(format!("{}.jsonl", info.id));
        match load_journal_text(&path) {
            Ok(journal) => {
                let events = journal
                    .events
                    .into_iter()
                    .map(|s| (s.ts, s.event))
                    .collect::<Vec<_>>();
                let counted = count_session(
                    &events,
                    usize::try_from(journal.header.copied_events).unwrap_or(usize::MAX),
                    since_ms.unwrap_or(0),
                    (&journal.header.provider, &journal.header.model),
                    &mut out,
                    &mut models,
                );
                out.sessions += u64::from(counted);
            }
            Err(e) => out.warnings.push(e.to_string()),
        }
    }
    out.models = models.into_values().collect();
    out.models.sort_by(|a, b| {
        b.cost_usd
            .unwrap_or(0.0)
            .total_cmp(&a.cost_usd.unwrap_or(0.0))
            .then(b.calls.cmp(&a.calls))
    });
    out
}

/// What is known of one tool call while its events are read.
#[derive(Default)]
struct Call {
    asked: bool,
    ran: bool,
}

/// Adds one session's events at or after `since` to `out`; true when it had any. The first
/// `copied` events are another session's history (a fork's, an import's): they set the model and
/// the cost so far, and count for nothing.
fn count_session(
    events: &[(u64, Event)],
    copied: usize,
    since: u64,
    header: (&str, &str),
    out: &mut Stats,
    models: &mut BTreeMap<(String, String), ModelStats>,
) -> bool {
    let mut current = (header.0.to_string(), header.1.to_string());
    let mut last_cost: Option<f64> = None;
    let mut calls: HashMap<String, Call> = HashMap::new();
    // What each ended subagent spent, until its parent's `Usage` carrying that spend arrives.
    let mut folded_in: Vec<Usage> = Vec::new();
    let mut any = false;
    for (i, (ts, event)) in events.iter().enumerate() {
        let inside = i >= copied && *ts >= since;
        match event {
            Event::SessionStarted {
                provider, model, ..
            }
            | Event::ModelChanged { provider, model } => {
                current = (provider.clone(), model.clone());
            }
            Event::SubagentFinished { usage, .. } => folded_in.push(*usage),
            Event::Usage { last, .. } => {
                if let Some(i) = folded_in.iter().position(|u| u == last) {
                    // The subagent's calls were counted as its own events arrived.
                    folded_in.swap_remove(i);
                } else if inside {
                    any = true;
                    add_usage(models.entry(current.clone()).or_default(), &current, last);
                }
            }
            Event::Subagent { event, .. } if inside => {
                if let Event::Usage { last, .. } = event.as_ref() {
                    any = true;
                    add_usage(models.entry(current.clone()).or_default(), &current, last);
                }
            }
            Event::ContextUsage {
                cost_usd: Some(cost),
                ..
            } => {
                // The session's cost so far: a resumed session starts again from zero.
                let before = last_cost.filter(|b| *b <= *cost).unwrap_or(0.0);
                if inside && *cost > before {
                    let m = models.entry(current.clone()).or_default();
                    *m.cost_usd.get_or_insert(0.0) += cost - before;
                }
                last_cost = Some(*cost);
            }
            Event::TurnCompleted { model_calls, .. } if inside => {
                any = true;
                out.turns += 1;
                if let Some(n) = model_calls {
                    out.turn_model_calls.add(*n);
                }
            }
            Event::ToolCallBegin { call_id, .. } => {
                calls.insert(call_id.clone(), Call::default());
            }
            Event::ApprovalRequest { call_id, .. } => {
                calls.entry(call_id.clone()).or_default().asked = true;
            }
            Event::ToolCallRunning { call_id, .. } => {
                calls.entry(call_id.clone()).or_default().ran = true;
            }
            Event::ToolCallEnd {
                call_id,
                tool,
                result,
            } if inside => {
                any = true;
                let call = calls.remove(call_id).unwrap_or_default();
                let kind = classify(result.error_code(), call.asked, call.ran);
                out.tools.entry(tool.clone()).or_default().add(kind);
                out.tool_calls.add(kind);
            }
            _ => {}
        }
    }
    any
}

/// What decided a tool call, from what its events say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Allowed,
    Asked,
    Denied,
    Rejected,
    Undecided,
}

fn classify(code: Option<&str>, asked: bool, ran: bool) -> Kind {
    use pablo_core::ErrorCode;
    let code = code.and_then(ErrorCode::parse);
    match (code, asked, ran) {
        (Some(ErrorCode::Rejected), _, _) => Kind::Rejected,
        (Some(ErrorCode::Denied), _, _) => Kind::Denied,
        (Some(ErrorCode::ApprovalRequired), _, _) | (_, true, _) => Kind::Asked,
        (_, false, true) => Kind::Allowed,
        _ => Kind::Undecided,
    }
}

impl Decisions {
    fn add(&mut self, kind: Kind) {
        let counter = match kind {
            Kind::Allowed => &mut self.allowed,
            Kind::Asked => &mut self.asked,
            Kind::Denied => &mut self.denied,
            Kind::Rejected => &mut self.rejected,
            Kind::Undecided => &mut self.undecided,
        };
        *counter += 1;
    }
}

fn add_usage(m: &mut ModelStats, who: &(String, String), usage: &Usage) {
    if m.model.is_empty() {
        m.provider = who.0.clone();
        m.model = who.1.clone();
    }
    m.calls += 1;
    m.input_tokens += usage.input_tokens;
    m.output_tokens += usage.output_tokens;
    m.cached_input_tokens += usage.cached_input_tokens;
    m.cache_write_input_tokens += usage.cache_write_input_tokens;
}

/// The usage recorded in the default store since `since_ms`.
pub fn of_default_store(since_ms: Option<u64>) -> Result<Stats, SessionError> {
    Ok(gather(&super::default_store()?, since_ms))
}

/// `1234567` as `1.2M`, `12345` as `12.3k`.
fn short(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

fn money(cost: Option<f64>) -> String {
    cost.map_or_else(|| "-".into(), |c| format!("${c:.2}"))
}

impl Stats {
    /// Every request sent to a model in the period. When every turn said how many it sent, that
    /// is their sum: it holds the calls of a provider that reports no usage too. Otherwise (a
    /// journal from before turns counted them) the calls that reported usage.
    fn model_calls(&self) -> u64 {
        if self.turns > 0 && self.turn_model_calls.turns == self.turns {
            self.turn_model_calls.calls
        } else {
            self.models.iter().map(|m| m.calls).sum()
        }
    }

    /// The report as a person reads it.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let period = match self.since_ms {
            Some(ms) => format!("since {}", super::format_ms(ms)),
            None => "all time".into(),
        };
        out.push_str(&format!(
            "pablo stats, {period}\n\nsessions {}   turns {}   model calls {}   cost {}\n",
            self.sessions,
            self.turns,
            self.model_calls(),
            money(self.total_cost()),
        ));
        if let Some(per_turn) = self.turn_model_calls.describe() {
            out.push_str(&format!(
                "model calls per turn {per_turn}, subagents' and retried requests included\n"
            ));
        }
        if !self.models.is_empty() {
            out.push_str(&format!(
                "\n{:<36} {:>6} {:>9} {:>9} {:>11} {:>12} {:>9}\n",
                "MODEL", "CALLS", "INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "COST"
            ));
            for m in &self.models {
                out.push_str(&format!(
                    "{:<36} {:>6} {:>9} {:>9} {:>11} {:>12} {:>9}\n",
                    format!("{} {}", m.provider, m.model),
                    m.calls,
                    short(m.input_tokens),
                    short(m.output_tokens),
                    short(m.cached_input_tokens),
                    short(m.cache_write_input_tokens),
                    money(m.cost_usd),
                ));
            }
        }
        let t = &self.tool_calls;
        out.push_str(&format!(
            "\ntool calls {}: allowed {}, asked {}, denied {}, rejected {}, undecided {}\n",
            t.total(),
            t.allowed,
            t.asked,
            t.denied,
            t.rejected,
            t.undecided
        ));
        if !self.tools.is_empty() {
            out.push_str(&format!(
                "\n{:<36} {:>6} {:>8} {:>6} {:>7} {:>9} {:>10}\n",
                "TOOL", "CALLS", "ALLOWED", "ASKED", "DENIED", "REJECTED", "UNDECIDED"
            ));
            let mut tools: Vec<_> = self.tools.iter().collect();
            tools.sort_by(|a, b| b.1.total().cmp(&a.1.total()).then(a.0.cmp(b.0)));
            for (name, d) in tools {
                out.push_str(&format!(
                    "{:<36} {:>6} {:>8} {:>6} {:>7} {:>9} {:>10}\n",
                    name,
                    d.total(),
                    d.allowed,
                    d.asked,
                    d.denied,
                    d.rejected,
                    d.undecided
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pablo_protocol::{ApprovalAnswer, Preview, StopReason, ToolOutcome, Verdict};

    fn begin(id: &str, tool: &str) -> Event {
        Event::ToolCallBegin {
            call_id: id.into(),
            tool: tool.into(),
            arguments: serde_json::json!({}),
        }
    }

    fn end(id: &str, tool: &str, result: ToolOutcome) -> Event {
        Event::ToolCallEnd {
            call_id: id.into(),
            tool: tool.into(),
            result,
        }
    }

    fn usage(input: u64, output: u64) -> Event {
        let u = Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        };
        Event::Usage { last: u, total: u }
    }

    fn cost(c: f64) -> Event {
        Event::ContextUsage {
            used_tokens: 0,
            window_tokens: 0,
            cost_usd: Some(c),
        }
    }

    #[test]
    fn one_session_counts_tokens_and_cost_by_model_and_calls_by_decision() {
        let preview = Preview::Read { path: "a".into() };
        let events = vec![
            (1, usage(100, 10)),
            (1, cost(0.5)),
            (2, begin("a", "fs.read")),
            (
                2,
                Event::ToolCallRunning {
                    call_id: "a".into(),
                    preview: preview.clone(),
                },
            ),
            (
                2,
                end("a", "fs.read", ToolOutcome::ok(serde_json::json!({}))),
            ),
            (3, begin("b", "shell.run")),
            (
                3,
                Event::ApprovalRequest {
                    call_id: "b".into(),
                    tool: "shell.run".into(),
                    preview: preview.clone(),
                    verdict: Verdict::ask("r", "why"),
                },
            ),
            (
                3,
                Event::ApprovalResolved {
                    call_id: "b".into(),
                    answer: ApprovalAnswer::Reject { note: None },
                },
            ),
            (3, end("b", "shell.run", ToolOutcome::err("rejected", "no"))),
            (4, begin("c", "shell.run")),
            (
                4,
                end("c", "shell.run", ToolOutcome::err("denied", "policy")),
            ),
            (
                5,
                Event::ModelChanged {
                    provider: "anthropic".into(),
                    model: "claude".into(),
                },
            ),
            (5, usage(50, 5)),
            (5, cost(0.75)),
            (
                6,
                Event::TurnCompleted {
                    stop_reason: StopReason::EndTurn,
                    usage: Usage::default(),
                    model_calls: Some(2),
                },
            ),
        ];
        let mut stats = Stats::default();
        let mut models = BTreeMap::new();
        assert!(count_session(
            &events,
            0,
            0,
            ("openai", "gpt-5"),
            &mut stats,
            &mut models
        ));
        let gpt = &models[&("openai".to_string(), "gpt-5".to_string())];
        assert_eq!(
            (gpt.calls, gpt.input_tokens, gpt.output_tokens),
            (1, 100, 10)
        );
        assert_eq!(gpt.cost_usd, Some(0.5));
        let claude = &models[&("anthropic".to_string(), "claude".to_string())];
        assert_eq!(claude.cost_usd, Some(0.25));
        assert_eq!(stats.turns, 1);
        assert_eq!(
            stats.turn_model_calls,
            TurnCalls {
                turns: 1,
                calls: 2,
                most: 2
            }
        );
        let t = &stats.tool_calls;
        assert_eq!((t.allowed, t.asked, t.denied, t.rejected), (1, 0, 1, 1));
        assert_eq!(stats.tools["shell.run"].total(), 2);
    }

    #[test]
    fn a_subagents_calls_count_one_by_one_and_its_spend_handed_to_the_parent_not_again() {
        let wrapped = |e: Event| Event::Subagent {
            call_id: "task".into(),
            event: Box::new(e),
        };
        let spent = Usage {
            input_tokens: 30,
            output_tokens: 3,
            ..Usage::default()
        };
        let finished = |usage| Event::SubagentFinished {
            call_id: "task".into(),
            stop_reason: StopReason::EndTurn,
            usage,
            tool_calls: 2,
            elapsed_ms: 5,
        };
        let folded = |last| Event::Usage {
            last,
            total: Usage::default(),
        };
        let events = vec![
            (1, usage(100, 10)),
            // The subagent's three calls, as the journal holds them.
            (2, wrapped(usage(10, 1))),
            (3, wrapped(usage(15, 1))),
            (3, wrapped(usage(5, 1))),
            (4, finished(spent)),
            // The parent adds the subagent's spend to its own total: not a call.
            (4, folded(spent)),
            (5, usage(200, 20)),
            // A subagent whose provider reported nothing still ends with a fold-in.
            (6, finished(Usage::default())),
            (6, folded(Usage::default())),
        ];
        let mut stats = Stats::default();
        let mut models = BTreeMap::new();
        count_session(&events, 0, 0, ("openai", "gpt-5"), &mut stats, &mut models);
        let gpt = &models[&("openai".to_string(), "gpt-5".to_string())];
        // Two calls of the session's own and three of the subagent's; the tokens once each.
        assert_eq!(
            (gpt.calls, gpt.input_tokens, gpt.output_tokens),
            (5, 330, 33)
        );
    }

    #[test]
    fn a_turn_completed_journaled_before_the_count_loads_without_model_calls() {
        let old = r#"{"type":"turn_completed","stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}"#;
        let Event::TurnCompleted { model_calls, .. } = serde_json::from_str(old).unwrap() else {
            panic!("not a turn_completed");
        };
        assert_eq!(model_calls, None);
        let new = Event::TurnCompleted {
            stop_reason: StopReason::EndTurn,
            usage: Usage::default(),
            model_calls: Some(4),
        };
        let line = serde_json::to_value(&new).unwrap();
        assert_eq!(line["model_calls"], 4);
        assert_eq!(serde_json::from_value::<Event>(line).unwrap(), new);
    }

    #[test]
    fn model_calls_per_turn_count_the_turns_that_said_and_the_report_says_them() {
        let done = |model_calls| Event::TurnCompleted {
            stop_reason: StopReason::EndTurn,
            usage: Usage::default(),
            model_calls,
        };
        // A journal of before the count, then two turns that said.
        let events = vec![(1, done(None)), (2, done(Some(1))), (3, done(Some(6)))];
        let mut stats = Stats::default();
        assert!(count_session(
            &events,
            0,
            0,
            ("p", "m"),
            &mut stats,
            &mut BTreeMap::new()
        ));
        assert_eq!(stats.turns, 3);
        assert_eq!(
            stats.turn_model_calls,
            TurnCalls {
                turns: 2,
                calls: 7,
                most: 6
            }
        );
        let text = stats.to_text();
        assert!(
            text.contains(
                "model calls per turn 3.5 on average, 6 at most (2 turns), subagents' and \
                 retried requests included"
            ),
            "{text}"
        );
        let json = serde_json::to_value(&stats).unwrap();
        assert_eq!(
            json["turn_model_calls"],
            serde_json::json!({"turns": 2, "calls": 7, "most": 6})
        );
        // No turn said: no line.
        assert!(!Stats::default().to_text().contains("per turn"));
    }

    #[test]
    fn the_model_calls_said_are_the_turns_when_every_turn_counted_and_the_usage_otherwise() {
        let done = |model_calls| Event::TurnCompleted {
            stop_reason: StopReason::EndTurn,
            usage: Usage::default(),
            model_calls,
        };
        let header = |events: Vec<(u64, Event)>| {
            let mut stats = Stats::default();
            let mut models = BTreeMap::new();
            count_session(&events, 0, 0, ("p", "m"), &mut stats, &mut models);
            stats.models = models.into_values().collect();
            let text = stats.to_text();
            text.lines().nth(2).unwrap_or_default().to_string()
        };
        // A provider that reports no usage: five calls over two turns, no `usage` line.
        let no_usage = header(vec![(1, done(Some(2))), (2, done(Some(3)))]);
        assert!(no_usage.contains("model calls 5 "), "{no_usage}");
        // A turn of before the count: the calls that reported usage.
        let old = header(vec![(1, usage(10, 1)), (1, usage(10, 1)), (2, done(None))]);
        assert!(old.contains("model calls 2 "), "{old}");
    }

    #[test]
    fn events_before_the_period_are_not_counted() {
        let events = vec![(1, usage(100, 10)), (10, usage(1, 1))];
        let mut stats = Stats::default();
        let mut models = BTreeMap::new();
        assert!(count_session(
            &events,
            0,
            5,
            ("p", "m"),
            &mut stats,
            &mut models
        ));
        let m = &models[&("p".to_string(), "m".to_string())];
        assert_eq!((m.calls, m.input_tokens), (1, 1));
        assert!(!count_session(
            &events[..1],
            0,
            5,
            ("p", "m"),
            &mut stats,
            &mut BTreeMap::new()
        ));
    }

    #[test]
    fn since_takes_spans_and_dates() {
        let now = 10 * 86_400_000;
        assert_eq!(parse_since("7d", now), Ok(3 * 86_400_000));
        assert_eq!(parse_since("2h", now), Ok(now - 7_200_000));
        assert_eq!(parse_since("1970-01-02", now), Ok(86_400_000));
        assert!(
            parse_since("soon", now)
                .unwrap_err()
                .contains("30m, 12h, 7d, 2w")
        );
        assert!(parse_since("d", now).is_err());
        assert!(parse_since("7é", now).is_err());
    }
}
