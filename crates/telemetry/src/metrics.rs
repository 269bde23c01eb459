//! Metrics, derived from the spans as they close: sessions, turns, tokens, cost, tool calls by
//! decision, lines changed, and the durations of model and tool calls.
//!
//! A tracing layer ([`SpanMetrics`]) keeps the numeric and vocabulary fields of the four exported
//! spans and records them when a span closes, so the span sites record each fact once and the
//! metrics can hold nothing the spans could not (their attributes come from the same allowlist).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The instruments' names (docs/observability.md lists the same).
const SESSION_COUNT: &str = "pablo.session.count";
const TURN_COUNT: &str = "pablo.turn.count";
const MODEL_CALL_COUNT: &str = "pablo.model.call.count";
const TOKEN_USAGE: &str = "pablo.token.usage";
const COST_USAGE: &str = "pablo.cost.usage";
const TOOL_CALL_COUNT: &str = "pablo.tool.call.count";
const LINES_CHANGED: &str = "pablo.lines_changed";
const MODEL_CALL_DURATION: &str = "pablo.model.call.duration";
const TOOL_CALL_DURATION: &str = "pablo.tool.call.duration";
#[cfg(test)]
pub const NAMES: &[&str] = &[
    SESSION_COUNT,
    TURN_COUNT,
    MODEL_CALL_COUNT,
    TOKEN_USAGE,
    COST_USAGE,
    TOOL_CALL_COUNT,
    LINES_CHANGED,
    MODEL_CALL_DURATION,
    TOOL_CALL_DURATION,
];

/// Every instrument pablo records (docs/observability.md lists the same).
struct Instruments {
    sessions: Counter<u64>,
    turns: Counter<u64>,
    model_calls: Counter<u64>,
    tokens: Counter<u64>,
    cost: Counter<f64>,
    tool_calls: Counter<u64>,
    lines: Counter<u64>,
    model_duration: Histogram<f64>,
    tool_duration: Histogram<f64>,
}

static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();

/// Creates the instruments on `provider` (once; metrics are recorded only after this).
pub fn install(provider: &SdkMeterProvider) {
    let meter = provider.meter("pablo");
    let _ = INSTRUMENTS.set(Instruments {
        sessions: meter
            .u64_counter(SESSION_COUNT)
            .with_description("Sessions started")
            .build(),
        turns: meter
            .u64_counter(TURN_COUNT)
            .with_description("Turns completed, by stop reason")
            .build(),
        model_calls: meter
            .u64_counter(MODEL_CALL_COUNT)
            .with_description("Model calls, by provider, model and outcome")
            .build(),
        tokens: meter
            .u64_counter(TOKEN_USAGE)
            .with_unit("{token}")
            .with_description("Tokens, by provider, model and type (input, output, cache_read, cache_write)")
            .build(),
        cost: meter
            .f64_counter(COST_USAGE)
            .with_unit("USD")
            .with_description("Cost of model calls at the configured prices, by provider and model")
            .build(),
        tool_calls: meter
            .u64_counter(TOOL_CALL_COUNT)
            .with_description("Tool calls, by tool, decision (allowed, asked, denied, rejected, none) and outcome")
            .build(),
        lines: meter
            .u64_counter(LINES_CHANGED)
            .with_unit("{line}")
            .with_description("Lines changed by file tools, by tool and type (added, removed)")
            .build(),
        model_duration: meter
            .f64_histogram(MODEL_CALL_DURATION)
            .with_unit("s")
            .with_description("Duration of model calls, by provider, model and outcome")
            .build(),
        tool_duration: meter
            .f64_histogram(TOOL_CALL_DURATION)
            .with_unit("s")
            .with_description("Duration of tool calls, by tool and decision")
            .build(),
    });
}

/// A field value kept for the metrics.
#[derive(Debug, Clone, PartialEq)]
enum Kept {
    Number(f64),
    Text(String),
}

/// The fields of one span so far.
#[derive(Debug, Default)]
struct Fields(BTreeMap<&'static str, Kept>);

impl Fields {
    fn number(&self, name: &str) -> Option<f64> {
        match self.0.get(name)? {
            Kept::Number(n) => Some(*n),
            Kept::Text(_) => None,
        }
    }

    fn text(&self, name: &str) -> &str {
        match self.0.get(name) {
            Some(Kept::Text(t)) => t,
            _ => "",
        }
    }

    /// An attribute value from the span: the same plain form the span export uses.
    fn attr(&self, key: &'static str, field: &str) -> KeyValue {
        KeyValue::new(key, super::wire::plain(self.text(field)))
    }
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name(), Kept::Number(value as f64));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name(), Kept::Number(value as f64));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name(), Kept::Number(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0
            .insert(field.name(), Kept::Number(f64::from(u8::from(value))));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name(), Kept::Text(value.to_string()));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name(), Kept::Text(format!("{value:?}")));
    }
}

/// The layer that turns closing spans into metrics.
pub struct SpanMetrics;

impl<S> Layer<S> for SpanMetrics
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let meta = attrs.metadata();
        if !meta.target().starts_with("pablo") || !super::wire::exported(meta.name()) {
            return;
        }
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            if meta.name() == "session"
                && let Some(i) = INSTRUMENTS.get()
            {
                i.sessions.add(
                    1,
                    &[
                        fields.attr("gen_ai.provider.name", "provider"),
                        fields.attr("gen_ai.request.model", "model"),
                    ],
                );
            }
            span.extensions_mut().insert(fields);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(fields) = span.extensions_mut().get_mut::<Fields>()
        {
            values.record(fields);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(i) = INSTRUMENTS.get() else { return };
        let name = span.name();
        let extensions = span.extensions();
        let Some(fields) = extensions.get::<Fields>() else {
            return;
        };
        match name {
            "turn" => i
                .turns
                .add(1, &[fields.attr("pablo.turn.stop_reason", "stop_reason")]),
            "model_call" => model_call(i, fields),
            "tool_call" => tool_call(i, fields),
            _ => {}
        }
    }
}

fn model_call(i: &Instruments, f: &Fields) {
    let who = [
        f.attr("gen_ai.provider.name", "provider"),
        f.attr("gen_ai.request.model", "model"),
    ];
    let mut with_outcome = who.to_vec();
    with_outcome.push(f.attr("pablo.outcome", "outcome"));
    i.model_calls.add(1, &with_outcome);
    if let Some(ms) = f.number("duration_ms") {
        i.model_duration.record(ms / 1000.0, &with_outcome);
    }
    for (field, kind) in [
        ("input_tokens", "input"),
        ("output_tokens", "output"),
        ("cached_input_tokens", "cache_read"),
        ("cache_write_input_tokens", "cache_write"),
    ] {
        if let Some(n) = f.number(field).filter(|n| *n > 0.0) {
            let mut attrs = who.to_vec();
            attrs.push(KeyValue::new("type", kind));
            i.tokens.add(n as u64, &attrs);
        }
    }
    if let Some(cost) = f.number("cost_usd").filter(|c| *c > 0.0) {
        i.cost.add(cost, &who);
    }
}

/// The decision a tool call counts under: what policy said, and what the person answered.
pub fn decision_category(decision: &str, outcome: &str) -> &'static str {
    // The two refusals count under their codes' names.
    let rejected = pablo_core::ErrorCode::Rejected.as_str();
    let denied = pablo_core::ErrorCode::Denied.as_str();
    match (decision, outcome) {
        (_, o) if o == rejected => rejected,
        ("deny", _) => denied,
        (_, o) if o == denied => denied,
        ("ask", _) => "asked",
        ("allow", _) => "allowed",
        _ => "none",
    }
}

fn tool_call(i: &Instruments, f: &Fields) {
    let tool = f.attr("gen_ai.tool.name", "tool");
    let decision = KeyValue::new(
        "decision",
        decision_category(f.text("decision"), f.text("outcome")),
    );
    i.tool_calls.add(
        1,
        &[
            tool.clone(),
            decision.clone(),
            f.attr("pablo.outcome", "outcome"),
        ],
    );
    if let Some(ms) = f.number("duration_ms") {
        i.tool_duration
            .record(ms / 1000.0, &[tool.clone(), decision]);
    }
    for (field, kind) in [("lines_added", "added"), ("lines_removed", "removed")] {
        if let Some(n) = f.number(field).filter(|n| *n > 0.0) {
            i.lines
                .add(n as u64, &[tool.clone(), KeyValue::new("type", kind)]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::decision_category;

    #[test]
    fn a_call_counts_under_one_decision() {
        assert_eq!(decision_category("allow", "ok"), "allowed");
        assert_eq!(decision_category("ask", "ok"), "asked");
        assert_eq!(decision_category("ask", "rejected"), "rejected");
        assert_eq!(decision_category("ask", "approval_required"), "asked");
        assert_eq!(decision_category("deny", "denied"), "denied");
        assert_eq!(decision_category("allow", "denied"), "denied");
        assert_eq!(decision_category("", "invalid_arguments"), "none");
    }
}
