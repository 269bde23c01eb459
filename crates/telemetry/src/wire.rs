//! What may leave the machine: the allowlist every exported span is cut down to.
//!
//! A span is exported only when its name is one of [`SPANS`]; of its attributes only those named
//! there, renamed to their OpenTelemetry keys (the GenAI semantic conventions where one exists).
//! Numbers and booleans go as they are; strings are identifiers from closed vocabularies (tool
//! names, decisions, rule ids, error codes, provider and model names), and are still passed
//! through the secret redaction and cut to [`MAX_VALUE`] characters of a plain alphabet. Events,
//! links and status messages are dropped. No argument, path, command line, output, message or
//! key can reach the exporter, whatever a span site records.

use std::borrow::Cow;

use opentelemetry::trace::{SpanKind, Status};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};

/// The longest string value exported.
const MAX_VALUE: usize = 128;

/// One exported span: its native name, how its OpenTelemetry name is made, its kind, and its
/// attributes (native field → OpenTelemetry key).
pub struct WireSpan {
    pub native: &'static str,
    /// The name, with `{}` replaced by the value of the attribute `name_from` when it has one.
    pub name: &'static str,
    pub name_from: Option<&'static str>,
    pub operation: Option<&'static str>,
    pub kind: SpanKind,
    pub attributes: &'static [(&'static str, &'static str)],
}

/// Every span that may be exported (docs/observability.md lists the same).
pub const SPANS: &[WireSpan] = &[
    WireSpan {
        native: "session",
        name: "pablo.session",
        name_from: None,
        operation: Some("invoke_agent"),
        kind: SpanKind::Internal,
        attributes: &[
            ("session_id", "session.id"),
            ("provider", "gen_ai.provider.name"),
            ("model", "gen_ai.request.model"),
        ],
    },
    WireSpan {
        native: "turn",
        name: "pablo.turn",
        name_from: None,
        operation: None,
        kind: SpanKind::Internal,
        attributes: &[
            ("model_calls", "pablo.turn.model_calls"),
            ("tool_calls", "pablo.turn.tool_calls"),
            ("stop_reason", "pablo.turn.stop_reason"),
        ],
    },
    WireSpan {
        native: "model_call",
        name: "chat {}",
        name_from: Some("model"),
        operation: Some("chat"),
        kind: SpanKind::Client,
        attributes: &[
            ("provider", "gen_ai.provider.name"),
            ("model", "gen_ai.request.model"),
            ("input_tokens", "gen_ai.usage.input_tokens"),
            ("output_tokens", "gen_ai.usage.output_tokens"),
            (
                "cached_input_tokens",
                "gen_ai.usage.cache_read.input_tokens",
            ),
            (
                "cache_write_input_tokens",
                "gen_ai.usage.cache_creation.input_tokens",
            ),
            ("cost_usd", "pablo.cost_usd"),
            ("retries", "pablo.model.retries"),
            ("request_bytes", "pablo.model.request_bytes"),
            ("output_bytes", "pablo.model.output_bytes"),
            ("tool_calls", "pablo.model.tool_calls"),
            ("outcome", "pablo.outcome"),
        ],
    },
    WireSpan {
        native: "tool_call",
        name: "execute_tool {}",
        name_from: Some("tool"),
        operation: Some("execute_tool"),
        kind: SpanKind::Internal,
        attributes: &[
            ("tool", "gen_ai.tool.name"),
            ("decision", "pablo.tool.decision"),
            ("rule", "pablo.tool.rule"),
            ("sandbox", "pablo.tool.sandbox"),
            ("exit_code", "pablo.tool.exit_code"),
            ("truncated", "pablo.tool.truncated"),
            ("lines_added", "pablo.tool.lines_added"),
            ("lines_removed", "pablo.tool.lines_removed"),
            ("run_ms", "pablo.tool.run_ms"),
            ("outcome", "pablo.outcome"),
        ],
    },
];

/// Whether a span of this native name is exported at all.
pub fn exported(name: &str) -> bool {
    SPANS.iter().any(|s| s.native == name)
}

/// A string value as it may leave: secrets redacted, cut, and only a plain alphabet kept
/// (anything else becomes `_`).
pub fn plain(text: &str) -> String {
    let redacted = pablo_core::secrets::redact(text);
    redacted
        .chars()
        .take(MAX_VALUE)
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-:/@+,[]".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Fields that hold counts, sizes and durations. tracing-opentelemetry takes a `u64` as text (it
/// has no `record_u64` of its own), so their values are made numbers again here.
const NUMBERS: &[&str] = &[
    "model_calls",
    "tool_calls",
    "request_bytes",
    "output_bytes",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
    "retries",
    "exit_code",
    "lines_added",
    "lines_removed",
    "run_ms",
    "duration_ms",
];

fn plain_value(field: &str, value: &Value) -> Value {
    match value {
        Value::String(s) if NUMBERS.contains(&field) => match s.as_str().parse::<i64>() {
            Ok(n) => Value::I64(n),
            Err(_) => Value::String("_".into()),
        },
        Value::String(s) => Value::String(plain(s.as_str()).into()),
        Value::Bool(_) | Value::I64(_) | Value::F64(_) => value.clone(),
        // Arrays are not a shape any span site records; their contents are not looked into.
        _ => Value::String("_".into()),
    }
}

/// The span as it may be exported, or `None` when its name is not on the list.
pub fn span(mut data: SpanData) -> Option<SpanData> {
    let wire = SPANS.iter().find(|s| s.native == data.name)?;
    let native = std::mem::take(&mut data.attributes);
    let value_of = |field: &str| {
        native
            .iter()
            .find(|kv| kv.key.as_str() == field)
            .map(|kv| plain_value(field, &kv.value))
    };
    let mut attributes: Vec<KeyValue> = wire
        .attributes
        .iter()
        .filter_map(|(field, key)| value_of(field).map(|v| KeyValue::new(*key, v)))
        .collect();
    if let Some(op) = wire.operation {
        attributes.push(KeyValue::new("gen_ai.operation.name", op));
    }
    let outcome = value_of("outcome").map(|v| v.as_str().into_owned());
    data.status = match outcome.as_deref() {
        None => Status::Unset,
        Some("ok") => Status::Ok,
        Some(code) => {
            attributes.push(KeyValue::new("error.type", code.to_string()));
            Status::error(code.to_string())
        }
    };
    data.name = match wire.name_from.and_then(&value_of) {
        Some(v) => Cow::Owned(wire.name.replace("{}", &v.as_str())),
        None => Cow::Borrowed(wire.name.trim_end_matches(" {}")),
    };
    data.attributes = attributes;
    data.dropped_attributes_count = 0;
    data.span_kind = wire.kind.clone();
    data.events = SpanEvents::default();
    data.links = SpanLinks::default();
    Some(data)
}

/// The resource every span and metric carries: the service, pablo's version, and the person's
/// own `OTEL_RESOURCE_ATTRIBUTES` as filtered by [`filter_resource`].
pub fn resource(service: &str, given: &[(String, String)]) -> Resource {
    let mut attributes: Vec<KeyValue> = given
        .iter()
        .filter(|(k, _)| allowed_resource_key(k))
        .map(|(k, v)| KeyValue::new(k.clone(), pablo_core::secrets::redact(v).into_owned()))
        .collect();
    attributes.push(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    Resource::builder_empty()
        .with_service_name(plain(service))
        .with_attributes(attributes)
        .build()
}

/// `resource` without what describes the process (its command line, executable, working
/// directory): what an SDK's detectors would add must not leave either.
pub fn filter_resource(resource: &Resource) -> Resource {
    let kept: Vec<KeyValue> = resource
        .iter()
        .filter(|(k, _)| allowed_resource_key(k.as_str()))
        .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
        .collect();
    Resource::builder_empty().with_attributes(kept).build()
}

fn allowed_resource_key(key: &str) -> bool {
    !(key.is_empty()
        || key.starts_with("process.")
        || key.starts_with("host.")
        || key.starts_with("os."))
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
    use std::time::SystemTime;

    fn data(name: &'static str, attributes: Vec<KeyValue>) -> SpanData {
        SpanData {
            span_context: SpanContext::new(
                TraceId::from_bytes(1u128.to_be_bytes()),
                SpanId::from_bytes(1u64.to_be_bytes()),
                TraceFlags::SAMPLED,
                false,
                TraceState::default(),
            ),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: Cow::Borrowed(name),
            start_time: SystemTime::UNIX_EPOCH,
            end_time: SystemTime::UNIX_EPOCH,
            attributes,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: Status::Unset,
            instrumentation_scope: Default::default(),
        }
    }

    #[test]
    fn a_tool_call_keeps_only_its_listed_attributes_renamed() {
        let out = span(data(
            "tool_call",
            vec![
                KeyValue::new("tool", "shell.run"),
                KeyValue::new("decision", "allow"),
                KeyValue::new("exit_code", 3_i64),
                KeyValue::new("outcome", "ok"),
                KeyValue::new("command", "cat /home/p/secret.txt"),
                KeyValue::new("code.filepath", "src/agent/mod.rs"),
            ],
        ))
        .unwrap();
        assert_eq!(out.name, "execute_tool shell.run");
        let keys: Vec<&str> = out.attributes.iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "gen_ai.tool.name",
                "pablo.tool.decision",
                "pablo.tool.exit_code",
                "pablo.outcome",
                "gen_ai.operation.name"
            ]
        );
        assert_eq!(out.status, Status::Ok);
    }

    #[test]
    fn unknown_spans_are_dropped_and_a_failure_keeps_only_its_code() {
        assert!(span(data("hyper::client", vec![])).is_none());
        let out = span(data(
            "model_call",
            vec![
                KeyValue::new("model", "gpt 5 <x>"),
                KeyValue::new("outcome", "provider_unavailable"),
            ],
        ))
        .unwrap();
        assert_eq!(out.name, "chat gpt_5__x_");
        assert_eq!(out.status, Status::error("provider_unavailable"));
    }

    #[test]
    fn process_attributes_never_reach_the_resource() {
        let r = resource(
            "pablo",
            &[
                ("team".into(), "core".into()),
                ("process.command_args".into(), "pablo run secret".into()),
            ],
        );
        let keys: Vec<String> = r.iter().map(|(k, _)| k.to_string()).collect();
        assert!(keys.contains(&"team".to_string()), "{keys:?}");
        assert!(keys.iter().all(|k| !k.starts_with("process.")), "{keys:?}");
    }

    #[test]
    fn counts_recorded_as_text_leave_as_numbers_and_other_text_there_does_not_leave() {
        // tracing-opentelemetry hands a u64 over as its decimal text.
        let out = span(data(
            "model_call",
            vec![
                KeyValue::new("input_tokens", "1200"),
                KeyValue::new("output_tokens", "cat secret.txt"),
            ],
        ))
        .unwrap();
        let value = |key: &str| {
            out.attributes
                .iter()
                .find(|kv| kv.key.as_str() == key)
                .map(|kv| kv.value.clone())
        };
        assert_eq!(value("gen_ai.usage.input_tokens"), Some(Value::I64(1200)));
        assert_eq!(
            value("gen_ai.usage.output_tokens"),
            Some(Value::String("_".into()))
        );
    }
}
