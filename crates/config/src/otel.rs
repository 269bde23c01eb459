//! `[otel]` and `[trace]`: where OpenTelemetry goes and what the native trace holds
//! (docs/observability.md). The standard `OTEL_*` variables say the same things; the launch lays
//! them over these tables.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `[otel]`: OpenTelemetry export over OTLP. Setting `endpoint` (or `OTEL_EXPORTER_OTLP_ENDPOINT`)
/// alone turns it on. Nothing it exports carries content.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtelConfig {
    /// `false` switches export off whatever else is set; `true` exports to the default endpoint
    /// (`http://localhost:4318`, or `:4317` for gRPC) when none is given.
    pub enabled: Option<bool>,
    /// The collector's base URL (`/v1/traces` and `/v1/metrics` are added for HTTP).
    pub endpoint: Option<String>,
    /// The full URL for spans, when it differs.
    pub traces_endpoint: Option<String>,
    /// The full URL for metrics, when it differs.
    pub metrics_endpoint: Option<String>,
    /// `http/protobuf` (default) or `grpc`.
    pub protocol: Option<OtelProtocol>,
    /// Sent with every export request (a collector's API key; never shown or logged).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// How long one export request may take, in milliseconds (default 10,000).
    pub timeout_ms: Option<u64>,
    /// Export spans (default true).
    pub traces: Option<bool>,
    /// Export metrics (default true).
    pub metrics: Option<bool>,
    /// `service.name` of the resource (default `pablo`).
    pub service_name: Option<String>,
    /// How often metrics are sent while pablo runs, in milliseconds (default 60,000; they are
    /// sent once more at exit).
    pub metric_interval_ms: Option<u64>,
}

/// The OTLP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OtelProtocol {
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    #[serde(rename = "grpc")]
    Grpc,
}

impl OtelConfig {
    /// The checks serde cannot express, each with the key (under `otel`) it is about.
    pub fn check(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        for (key, url) in [
            ("endpoint", &self.endpoint),
            ("traces_endpoint", &self.traces_endpoint),
            ("metrics_endpoint", &self.metrics_endpoint),
        ] {
            if let Some(u) = url {
                let ok = url::Url::parse(u).is_ok_and(|p| {
                    matches!(p.scheme(), "http" | "https") && p.host_str().is_some()
                });
                if !ok {
                    out.push((key, format!("{u:?} is not an http:// or https:// URL")));
                }
            }
        }
        for (name, value) in &self.headers {
            if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                out.push(("headers", format!("{name:?} is not an HTTP header name")));
            } else if http::HeaderValue::from_str(value).is_err() {
                // The value is not repeated: it usually holds a key.
                out.push((
                    "headers",
                    format!("the value of {name} is not a header value"),
                ));
            }
        }
        out
    }
}

/// `[trace]`: the native trace (`PABLO_LOG`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceConfig {
    /// Write tool arguments and bounded results into the native trace, keys and secret-looking
    /// values redacted (`PABLO_LOG_CONTENT=1` does the same). Never into OpenTelemetry. Read from
    /// the person's own layers only.
    pub content: Option<bool>,
}
