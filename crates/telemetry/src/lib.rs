//! Traces and metrics: spans for sessions, turns, model calls and tool calls, with counts,
//! durations and decisions, written two ways (docs/observability.md).
//!
//! - The native trace (`PABLO_LOG`): JSON lines in a local file. It carries no argument, path,
//!   file content or key unless the person turns content capture on (`[trace] content`,
//!   `PABLO_LOG_CONTENT=1`), and even then keys and secret-looking values are redacted.
//! - OpenTelemetry (`[otel]`, `OTEL_EXPORTER_OTLP_*`): the same spans, and metrics derived from
//!   them, sent to a collector. What leaves the machine is an allowlist ([`wire`]): span names,
//!   attribute names and values from closed vocabularies, and numbers. Never content, whatever
//!   else is configured, content capture included.
//!
//! The spans are made here ([`session_span`], [`turn_span`], [`model_call_span`],
//! [`tool_call_span`]), so every field either output can hold is declared in one place; the agent
//! creates them where model and tool calls already pass and records into them with the helpers
//! below. Dependencies (HTTP stacks in particular) are capped at `info` in the native trace
//! whatever level is asked for, so a verbose setting cannot make them dump request headers.

pub mod content;
pub mod metrics;
pub mod otel;
pub mod wire;

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tracing::Span;
use tracing::field::Empty;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::SubscriberExt;

use pablo_protocol::Usage;

/// What to trace and where, as the launch settled it from the config layers and the environment.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The native trace's level (`PABLO_LOG`, e.g. `debug` or `trace`); `None` writes none.
    pub log_level: Option<String>,
    /// Where the native trace goes (`PABLO_LOG_FILE`, else `pablo.log` in the state directory).
    pub log_file: PathBuf,
    /// Native traces hold tool arguments and bounded results (`[trace] content`).
    pub content: bool,
    /// OpenTelemetry export, when it is on.
    pub otel: Option<otel::OtelSettings>,
}

/// Whether native traces hold content (set once, by [`init`]).
static CONTENT: AtomicBool = AtomicBool::new(false);

/// Whether native content capture is on: tool arguments and bounded results go into the native
/// trace (never into OpenTelemetry).
pub fn content_capture() -> bool {
    CONTENT.load(Ordering::Relaxed)
}

/// The filter of the native trace for a requested level (`PABLO_LOG`, e.g. `debug` or `trace`).
pub fn filter(level: &str) -> EnvFilter {
    let level = match level.trim() {
        "" => "info",
        l => l,
    };
    // Only pablo's own targets get the requested verbosity.
    EnvFilter::try_new(format!("info,pablo={level}"))
        .unwrap_or_else(|_| EnvFilter::new("info,pablo=info"))
}

/// The running export, flushed by [`finish`].
static EXPORT: Mutex<Option<otel::Export>> = Mutex::new(None);

/// Exports what is still queued and stops, waiting at most `bound` (a dead or slow collector
/// cannot hold the exit longer). Returns a note for the person when spans were dropped. Call it
/// once, before the process ends; without an export it returns at once.
pub async fn finish(bound: Duration) -> Option<String> {
    let export = EXPORT.lock().ok().and_then(|mut e| e.take())?;
    export.finish(bound).await
}

/// Installs the process's subscriber: the native JSON trace when a level is set, the OpenTelemetry
/// export when it is configured; returns notes for the person (an exporter that could not start,
/// a trace file that could not be opened). Call once, from inside the runtime (export runs on
/// it); a later call changes nothing. Nothing is installed when neither is asked for, so spans
/// cost nothing.
pub fn init(settings: Settings) -> Vec<String> {
    CONTENT.store(settings.content, Ordering::Relaxed);
    let (dispatch, export, notes) = subscriber(&settings);
    if let Some(dispatch) = dispatch
        && tracing::dispatcher::set_global_default(dispatch).is_ok()
        && let Ok(mut slot) = EXPORT.lock()
    {
        *slot = export;
    }
    notes
}

/// The subscriber `settings` ask for, without installing it (`None` when they ask for nothing),
/// the export behind it, and notes for the person. [`init`] installs it for the process; a bench
/// sets it for one thread to compare exports side by side.
pub fn subscriber(
    settings: &Settings,
) -> (Option<tracing::Dispatch>, Option<otel::Export>, Vec<String>) {
    let mut notes = Vec::new();
    let native = match &settings.log_level {
        Some(level) => match open_log(&settings.log_file) {
            Ok(file) => Some(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_span_events(FmtSpan::CLOSE)
                    .with_writer(Mutex::new(file))
                    .with_filter(filter(level)),
            ),
            Err(e) => {
                notes.push(format!(
                    "the trace file {} cannot be opened ({e}); no trace is written",
                    settings.log_file.display()
                ));
                None
            }
        },
        None => None,
    };
    let (tracer, export) = match &settings.otel {
        Some(o) => match otel::start(o) {
            Ok((tracer, export)) => (tracer, Some(export)),
            Err(message) => {
                notes.push(format!("OpenTelemetry export is off: {message}"));
                (None, None)
            }
        },
        None => (None, None),
    };
    // Only the listed spans reach the exporter, and no event at all (`wire` cuts again).
    let exported = tracer.map(|tracer| {
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_location(false)
            .with_threads(false)
            .with_tracked_inactivity(false)
            .with_level(false)
            .with_target(false)
            .with_filter(tracing_subscriber::filter::filter_fn(|meta| {
                meta.is_span() && meta.target().starts_with("pablo") && wire::exported(meta.name())
            }))
    });
    if native.is_none() && export.is_none() {
        return (None, None, notes);
    }
    let metrics = export.as_ref().map(|_| metrics::SpanMetrics);
    let subscriber = tracing_subscriber::registry()
        .with(native)
        .with(exported)
        .with(metrics);
    (Some(tracing::Dispatch::new(subscriber)), export, notes)
}

fn open_log(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
}

/// The span of a whole session; turns are its children.
pub fn session_span(session_id: &str, provider: &str, model: &str) -> Span {
    tracing::info_span!(
        "session",
        session_id = session_id,
        provider = provider,
        model = model,
    )
}

/// The span of one turn (from the person's message to the end of the answer).
pub fn turn_span() -> Span {
    tracing::info_span!(
        "turn",
        model_calls = Empty,
        tool_calls = Empty,
        stop_reason = Empty,
        duration_ms = Empty,
    )
}

/// The span of one model call. The provider's retries, the tokens and the cost are recorded into
/// it as they become known ([`record_retries`], [`record_usage`]).
pub fn model_call_span(provider: &str, model: &str, request_bytes: usize) -> Span {
    tracing::info_span!(
        "model_call",
        provider = provider,
        model = model,
        request_bytes = request_bytes,
        output_bytes = Empty,
        tool_calls = Empty,
        input_tokens = Empty,
        output_tokens = Empty,
        cached_input_tokens = Empty,
        cache_write_input_tokens = Empty,
        cost_usd = Empty,
        retries = Empty,
        duration_ms = Empty,
        outcome = Empty,
    )
}

/// The span of one tool call: validate, preview, decide, commit.
pub fn tool_call_span() -> Span {
    tracing::info_span!(
        "tool_call",
        tool = Empty,
        decision = Empty,
        rule = Empty,
        sandbox = Empty,
        exit_code = Empty,
        truncated = Empty,
        lines_added = Empty,
        lines_removed = Empty,
        run_ms = Empty,
        duration_ms = Empty,
        outcome = Empty,
    )
}

/// Records a model call's usage and cost on its span.
pub fn record_usage(span: &Span, usage: &Usage, cost_usd: Option<f64>) {
    span.record("input_tokens", usage.input_tokens);
    span.record("output_tokens", usage.output_tokens);
    span.record("cached_input_tokens", usage.cached_input_tokens);
    span.record("cache_write_input_tokens", usage.cache_write_input_tokens);
    if let Some(cost) = cost_usd {
        span.record("cost_usd", cost);
    }
}

/// Records how many times the provider was asked again, on the current span (the model call's:
/// the HTTP side runs inside it).
pub fn record_retries(retries: u32) {
    Span::current().record("retries", retries);
}

/// Records the policy's verdict on a tool call's span: the decision, the rules that made it, and
/// the sandbox a command gets.
pub fn record_verdict(
    span: &Span,
    decision: &'static str,
    rule_ids: &[String],
    sandbox: Option<&'static str>,
) {
    span.record("decision", decision);
    if !rule_ids.is_empty() {
        span.record("rule", rule_ids.join(",").as_str());
    }
    if let Some(profile) = sandbox {
        span.record("sandbox", profile);
    }
}

/// What a finished tool call did, in numbers: recorded on its span and counted by the metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolFacts {
    /// The command's exit code, when the call ran one that exited.
    pub exit_code: Option<i32>,
    /// The result the model got is not the whole output (cut, paged or spilled).
    pub truncated: bool,
    /// Lines a file change added and removed.
    pub lines: Option<(usize, usize)>,
}

/// Records a finished tool call's facts on its span; `run` is how long its commit took.
pub fn record_tool_facts(span: &Span, facts: ToolFacts, run: Option<Duration>) {
    if let Some(code) = facts.exit_code {
        span.record("exit_code", code);
    }
    span.record("truncated", facts.truncated);
    if let Some((added, removed)) = facts.lines {
        span.record("lines_added", added);
        span.record("lines_removed", removed);
    }
    if let Some(run) = run {
        span.record("run_ms", run.as_millis() as u64);
    }
}

#[cfg(test)]
mod tests {
    const DOC: &str = include_str!("../../../docs/observability.md");

    #[test]
    fn the_doc_names_every_exported_span_attribute_and_metric() {
        let mut missing = Vec::new();
        for span in super::wire::SPANS {
            let name = span.name.trim_end_matches(" {}");
            if !DOC.contains(&format!("**`{name}")) {
                missing.push(name.to_string());
            }
            for (_, key) in span.attributes {
                if !DOC.contains(&format!("| `{key}` |")) {
                    missing.push(format!("{name}: {key}"));
                }
            }
        }
        for metric in super::metrics::NAMES {
            if !DOC.contains(&format!("| `{metric}` |")) {
                missing.push((*metric).to_string());
            }
        }
        assert!(
            missing.is_empty(),
            "not in docs/observability.md: {missing:?}"
        );
    }
}
