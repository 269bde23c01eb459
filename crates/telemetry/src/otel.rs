//! OpenTelemetry export: what the person asked for (`[otel]`, the standard `OTEL_*` variables),
//! settled into endpoints; the OTLP exporters (HTTP/protobuf through pablo's reqwest, gRPC
//! through tonic with the `otel-grpc` feature); and the flush before the process ends.
//!
//! Export never holds up the loop: a finished span goes into the SDK's bounded queue (a full
//! queue drops it) and a background thread sends batches; the sending itself runs on pablo's
//! runtime. Every span that ended and did not reach the collector is counted, so a dead
//! collector costs dropped spans and one note, nothing else. What a batch holds is cut down to
//! the allowlist of [`super::wire`] on that background thread, just before it is encoded.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter,
    SpanProcessor,
};

/// The most finished spans waiting for export; more are dropped (and counted), never waited for.
const MAX_QUEUE: usize = 2048;
/// Spans per request to the collector.
const MAX_BATCH: usize = 512;
/// How often a batch goes out when the queue is not full.
const BATCH_DELAY: Duration = Duration::from_secs(2);
/// How long one request to the collector may take (`OTEL_EXPORTER_OTLP_TIMEOUT`).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// How often metrics are sent while pablo runs (`OTEL_METRIC_EXPORT_INTERVAL`); they are also
/// sent once more at the end.
const DEFAULT_METRIC_INTERVAL: Duration = Duration::from_secs(60);

/// The OTLP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `http/protobuf` (the default; port 4318, paths `/v1/traces` and `/v1/metrics`).
    HttpProtobuf,
    /// `grpc` (port 4317).
    Grpc,
}

impl Protocol {
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "http/protobuf" => Ok(Self::HttpProtobuf),
            "grpc" => Ok(Self::Grpc),
            "http/json" => Err("http/json is not supported: use http/protobuf or grpc".into()),
            other => Err(format!(
                "unknown OTLP protocol {other:?}: use http/protobuf or grpc"
            )),
        }
    }
}

/// What the person asked for from one source (`[otel]` of the config layers, or the `OTEL_*`
/// variables); sources are laid over each other with [`OtelRequest::over`], then settled with
/// [`OtelRequest::resolve`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OtelRequest {
    /// `false` switches export off whatever else is set; `true` turns it on at the default
    /// endpoint when none is given.
    pub enabled: Option<bool>,
    /// The collector's base URL: setting it alone turns export on.
    pub endpoint: Option<String>,
    /// Full URLs per signal (used as given, no path added).
    pub traces_endpoint: Option<String>,
    pub metrics_endpoint: Option<String>,
    pub protocol: Option<Protocol>,
    /// Sent with every export request (a collector's API key goes here: never shown or logged).
    pub headers: BTreeMap<String, String>,
    pub timeout_ms: Option<u64>,
    /// Export spans (default true).
    pub traces: Option<bool>,
    /// Export metrics (default true).
    pub metrics: Option<bool>,
    pub service_name: Option<String>,
    /// `OTEL_RESOURCE_ATTRIBUTES` (filtered by [`super::wire::resource`]).
    pub resource: Vec<(String, String)>,
    pub metric_interval_ms: Option<u64>,
}

impl OtelRequest {
    /// The request of the standard `OTEL_*` variables, read through `var`, and notes on values
    /// that were ignored.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> (Self, Vec<String>) {
        let mut notes = Vec::new();
        let mut out = Self::default();
        let flag = |name: &str| var(name).map(|v| v.trim().to_ascii_lowercase());
        if flag("OTEL_SDK_DISABLED").as_deref() == Some("true") {
            out.enabled = Some(false);
        }
        out.endpoint = var("OTEL_EXPORTER_OTLP_ENDPOINT");
        out.traces_endpoint = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
        out.metrics_endpoint = var("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
        if let Some(p) = var("OTEL_EXPORTER_OTLP_PROTOCOL") {
            match Protocol::parse(&p) {
                Ok(p) => out.protocol = Some(p),
                Err(m) => notes.push(format!("OTEL_EXPORTER_OTLP_PROTOCOL ignored: {m}")),
            }
        }
        if let Some(h) = var("OTEL_EXPORTER_OTLP_HEADERS") {
            match parse_pairs(&h) {
                Some(pairs) => out.headers.extend(pairs),
                // The value is not repeated: it usually holds a key.
                None => notes.push(
                    "OTEL_EXPORTER_OTLP_HEADERS ignored: it is not a list of key=value pairs"
                        .into(),
                ),
            }
        }
        let millis = |name: &str, notes: &mut Vec<String>| {
            let raw = var(name)?;
            let parsed = raw.trim().parse::<u64>().ok();
            if parsed.is_none() {
                notes.push(format!(
                    "{name}={raw:?} ignored: not a number of milliseconds"
                ));
            }
            parsed
        };
        out.timeout_ms = millis("OTEL_EXPORTER_OTLP_TIMEOUT", &mut notes);
        out.metric_interval_ms = millis("OTEL_METRIC_EXPORT_INTERVAL", &mut notes);
        for (name, slot) in [
            ("OTEL_TRACES_EXPORTER", &mut out.traces),
            ("OTEL_METRICS_EXPORTER", &mut out.metrics),
        ] {
            match flag(name).as_deref() {
                None => {}
                Some("none") => *slot = Some(false),
                Some("otlp") => *slot = Some(true),
                Some(other) => notes.push(format!(
                    "{name}={other:?} ignored: pablo exports with otlp (or none)"
                )),
            }
        }
        out.service_name = var("OTEL_SERVICE_NAME");
        if let Some(r) = var("OTEL_RESOURCE_ATTRIBUTES") {
            match parse_pairs(&r) {
                Some(pairs) => out.resource = pairs,
                None => notes.push(
                    "OTEL_RESOURCE_ATTRIBUTES ignored: it is not a list of key=value pairs".into(),
                ),
            }
        }
        (out, notes)
    }

    /// `self` with every setting `over` makes replacing its own (headers and resource entries are
    /// merged by name).
    pub fn over(mut self, over: Self) -> Self {
        macro_rules! take {
            ($($field:ident),*) => { $(if over.$field.is_some() { self.$field = over.$field; })* };
        }
        take!(
            enabled,
            endpoint,
            traces_endpoint,
            metrics_endpoint,
            protocol,
            timeout_ms,
            traces,
            metrics,
            service_name,
            metric_interval_ms
        );
        self.headers.extend(over.headers);
        for (k, v) in over.resource {
            self.resource.retain(|(key, _)| *key != k);
            self.resource.push((k, v));
        }
        self
    }

    /// The export these settings ask for: `None` when it is off (no endpoint, or switched off).
    pub fn resolve(&self) -> Result<Option<OtelSettings>, String> {
        if self.enabled == Some(false) {
            return Ok(None);
        }
        let any_endpoint = self.endpoint.is_some()
            || self.traces_endpoint.is_some()
            || self.metrics_endpoint.is_some();
        if !any_endpoint && self.enabled != Some(true) {
            return Ok(None);
        }
        let protocol = self.protocol.unwrap_or(Protocol::HttpProtobuf);
        if protocol == Protocol::Grpc && !cfg!(feature = "otel-grpc") {
            return Err(
                "this pablo was built without OTLP over gRPC (the otel-grpc feature); use \
                 http/protobuf"
                    .into(),
            );
        }
        let base = self.endpoint.clone().unwrap_or_else(|| match protocol {
            Protocol::HttpProtobuf => "http://localhost:4318".into(),
            Protocol::Grpc => "http://localhost:4317".into(),
        });
        let endpoint = |given: &Option<String>, path: &str| -> Result<String, String> {
            let url = match (given, protocol) {
                (Some(u), _) => u.clone(),
                (None, Protocol::HttpProtobuf) => format!("{}/{path}", base.trim_end_matches('/')),
                (None, Protocol::Grpc) => base.clone(),
            };
            check_url(&url)?;
            Ok(url)
        };
        let traces = match self.traces.unwrap_or(true) {
            true => Some(endpoint(&self.traces_endpoint, "v1/traces")?),
            false => None,
        };
        let metrics = match self.metrics.unwrap_or(true) {
            true => Some(endpoint(&self.metrics_endpoint, "v1/metrics")?),
            false => None,
        };
        if traces.is_none() && metrics.is_none() {
            return Ok(None);
        }
        for name in self.headers.keys() {
            if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(format!("header {name:?} is not an HTTP header name"));
            }
        }
        Ok(Some(OtelSettings {
            traces,
            metrics,
            protocol,
            headers: self.headers.clone(),
            timeout: self
                .timeout_ms
                .filter(|t| *t > 0)
                .map_or(DEFAULT_TIMEOUT, Duration::from_millis),
            service_name: self
                .service_name
                .clone()
                .filter(|s| !s.trim().is_empty())
                .unwrap_or_else(|| "pablo".into()),
            resource: self.resource.clone(),
            metric_interval: self
                .metric_interval_ms
                .filter(|t| *t > 0)
                .map_or(DEFAULT_METRIC_INTERVAL, Duration::from_millis),
        }))
    }
}

/// `key=value,key=value` (the `OTEL_*` list format, values percent-decoded); `None` when an
/// entry has no `=`.
fn parse_pairs(text: &str) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (k, v) = entry.split_once('=')?;
        let value = url::form_urlencoded::parse(format!("v={}", v.trim()).as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        out.push((k.trim().to_string(), value));
    }
    Some(out)
}

fn check_url(url: &str) -> Result<(), String> {
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => Ok(()),
        _ => Err(format!(
            "endpoint {url:?} is not an http:// or https:// URL"
        )),
    }
}

/// Export as settled: where each signal goes and how.
#[derive(Debug, Clone, PartialEq)]
pub struct OtelSettings {
    /// The URL spans are sent to, when they are.
    pub traces: Option<String>,
    /// The URL metrics are sent to, when they are.
    pub metrics: Option<String>,
    pub protocol: Protocol,
    pub headers: BTreeMap<String, String>,
    pub timeout: Duration,
    pub service_name: String,
    pub resource: Vec<(String, String)>,
    pub metric_interval: Duration,
}

/// Spans that ended, and spans the collector took.
#[derive(Debug, Default)]
struct Counts {
    ended: AtomicU64,
    exported: AtomicU64,
}

/// The running export: flushed and stopped by [`Export::finish`].
pub struct Export {
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
    counts: Arc<Counts>,
    endpoint: String,
}

/// Starts the exporters of `settings` on the current runtime; the tracer feeds the tracing layer
/// (`None` when only metrics are exported).
pub fn start(
    settings: &OtelSettings,
) -> Result<(Option<opentelemetry_sdk::trace::Tracer>, Export), String> {
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|_| "there is no async runtime to export on".to_string())?;
    // Spans and metrics may be the first HTTPS pablo does: the TLS provider it uses everywhere.
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    let resource = super::wire::resource(&settings.service_name, &settings.resource);
    let counts = Arc::new(Counts::default());
    let tracer = match &settings.traces {
        Some(url) => {
            let exporter = WireExporter {
                inner: Arc::new(span_exporter(settings, url, &runtime)?),
                runtime: runtime.clone(),
                counts: counts.clone(),
            };
            let batch = BatchSpanProcessor::builder(exporter)
                .with_batch_config(
                    BatchConfigBuilder::default()
                        .with_max_queue_size(MAX_QUEUE)
                        .with_max_export_batch_size(MAX_BATCH)
                        .with_scheduled_delay(BATCH_DELAY)
                        .build(),
                )
                .build();
            Some(
                SdkTracerProvider::builder()
                    .with_span_processor(CountingProcessor {
                        inner: batch,
                        counts: counts.clone(),
                    })
                    .with_resource(resource.clone())
                    .build(),
            )
        }
        None => None,
    };
    let meter = match &settings.metrics {
        Some(url) => {
            let reader = PeriodicReader::builder(metric_exporter(settings, url, &runtime)?)
                .with_interval(settings.metric_interval)
                .build();
            let provider = SdkMeterProvider::builder()
                .with_reader(reader)
                .with_resource(resource)
                .build();
            super::metrics::install(&provider);
            Some(provider)
        }
        None => None,
    };
    let endpoint = settings
        .traces
        .clone()
        .or_else(|| settings.metrics.clone())
        .unwrap_or_default();
    let span_tracer = tracer.as_ref().map(|p| {
        use opentelemetry::trace::TracerProvider as _;
        p.tracer("pablo")
    });
    Ok((
        span_tracer,
        Export {
            tracer,
            meter,
            counts,
            endpoint,
        },
    ))
}

impl Export {
    /// Sends what is queued and stops both providers, waiting at most `bound` in all. The work
    /// runs on threads of its own: when the bound passes they are left behind (and end with the
    /// process), so a collector that never answers cannot keep pablo from exiting.
    pub async fn finish(self, bound: Duration) -> Option<String> {
        let (done_tx, mut done_rx) = tokio::sync::mpsc::channel::<()>(2);
        let mut waiting = 0;
        if let Some(t) = self.tracer.clone() {
            waiting += 1;
            let tx = done_tx.clone();
            std::thread::spawn(move || {
                let _ = t.shutdown_with_timeout(bound);
                let _ = tx.blocking_send(());
            });
        }
        if let Some(m) = self.meter.clone() {
            waiting += 1;
            let tx = done_tx.clone();
            std::thread::spawn(move || {
                let _ = m.shutdown_with_timeout(bound);
                let _ = tx.blocking_send(());
            });
        }
        drop(done_tx);
        let _ = tokio::time::timeout(bound, async {
            for _ in 0..waiting {
                if done_rx.recv().await.is_none() {
                    break;
                }
            }
        })
        .await;
        let ended = self.counts.ended.load(Ordering::Relaxed);
        let exported = self.counts.exported.load(Ordering::Relaxed);
        let dropped = ended.saturating_sub(exported);
        (dropped > 0).then(|| {
            format!(
                "OpenTelemetry: {dropped} of {ended} spans were not exported (the collector at \
                 {} did not take them in time)",
                self.endpoint
            )
        })
    }

    /// Spans that ended so far and spans the collector took (for tests and the bench).
    pub fn counts(&self) -> (u64, u64) {
        (
            self.counts.ended.load(Ordering::Relaxed),
            self.counts.exported.load(Ordering::Relaxed),
        )
    }
}

/// The reqwest client export requests go through: pablo's TLS, and no proxy for a collector on
/// this machine's loopback (a proxy elsewhere cannot reach it).
fn http_client(url: &str, timeout: Duration) -> Result<reqwest::Client, String> {
    let loopback = url::Url::parse(url)
        .ok()
        .and_then(|u| u.host().map(|h| h.to_owned()))
        .is_some_and(|h| match h {
            url::Host::Domain(d) => d.eq_ignore_ascii_case("localhost"),
            url::Host::Ipv4(ip) => ip.is_loopback(),
            url::Host::Ipv6(ip) => ip.is_loopback(),
        });
    let builder = reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout);
    let builder = if loopback {
        builder.no_proxy()
    } else {
        builder
    };
    builder
        .build()
        .map_err(|e| format!("the HTTP client cannot be built: {e}"))
}

/// Sends export requests from the SDK's background threads on pablo's runtime, where reqwest
/// lives.
#[derive(Debug)]
struct OnRuntime {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for OnRuntime {
    async fn send_bytes(
        &self,
        request: opentelemetry_http::Request<opentelemetry_http::Bytes>,
    ) -> Result<
        opentelemetry_http::Response<opentelemetry_http::Bytes>,
        opentelemetry_http::HttpError,
    > {
        let client = self.client.clone();
        let sent = self.runtime.spawn(async move {
            opentelemetry_http::HttpClient::send_bytes(&client, request).await
        });
        sent.await
            .map_err(|e| Box::new(e) as opentelemetry_http::HttpError)?
    }
}

/// One OTLP exporter (`$kind` is `SpanExporter` or `MetricExporter`) for the configured protocol:
/// the two builders share every step but have no common trait, so the steps are written once here.
macro_rules! otlp_exporter {
    ($kind:ident, $what:literal, $settings:expr, $url:expr, $runtime:expr) => {{
        let (settings, url, runtime): (&OtelSettings, &str, &tokio::runtime::Handle) =
            ($settings, $url, $runtime);
        let built = match settings.protocol {
            Protocol::HttpProtobuf => opentelemetry_otlp::$kind::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_endpoint(url)
                .with_timeout(settings.timeout)
                .with_headers(headers(settings))
                .with_http_client(OnRuntime {
                    client: http_client(url, settings.timeout)?,
                    runtime: runtime.clone(),
                })
                .build(),
            #[cfg(feature = "otel-grpc")]
            Protocol::Grpc => {
                use opentelemetry_otlp::WithTonicConfig;
                let _inside = runtime.enter();
                let builder = opentelemetry_otlp::$kind::builder()
                    .with_tonic()
                    .with_endpoint(url)
                    .with_timeout(settings.timeout)
                    .with_metadata(grpc_metadata(settings)?);
                match grpc_tls(url) {
                    Some(tls) => builder.with_tls_config(tls).build(),
                    None => builder.build(),
                }
            }
            #[cfg(not(feature = "otel-grpc"))]
            Protocol::Grpc => return Err("built without gRPC".into()),
        };
        built.map_err(|e| format!("the {} exporter for {url} cannot start: {e}", $what))
    }};
}

fn span_exporter(
    settings: &OtelSettings,
    url: &str,
    runtime: &tokio::runtime::Handle,
) -> Result<opentelemetry_otlp::SpanExporter, String> {
    otlp_exporter!(SpanExporter, "span", settings, url, runtime)
}

fn metric_exporter(
    settings: &OtelSettings,
    url: &str,
    runtime: &tokio::runtime::Handle,
) -> Result<opentelemetry_otlp::MetricExporter, String> {
    otlp_exporter!(MetricExporter, "metric", settings, url, runtime)
}

fn headers(settings: &OtelSettings) -> HashMap<String, String> {
    settings
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[cfg(feature = "otel-grpc")]
fn grpc_metadata(
    settings: &OtelSettings,
) -> Result<opentelemetry_otlp::tonic_types::metadata::MetadataMap, String> {
    let mut map = http::HeaderMap::new();
    for (k, v) in &settings.headers {
        let name = http::HeaderName::from_bytes(k.to_ascii_lowercase().as_bytes())
            .map_err(|_| format!("header {k:?} is not a gRPC metadata key"))?;
        let value = http::HeaderValue::from_str(v)
            .map_err(|_| format!("the value of header {k} is not a valid header value"))?;
        map.insert(name, value);
    }
    Ok(opentelemetry_otlp::tonic_types::metadata::MetadataMap::from_headers(map))
}

/// TLS with the system's roots for an `https://` gRPC endpoint.
#[cfg(feature = "otel-grpc")]
fn grpc_tls(url: &str) -> Option<opentelemetry_otlp::tonic_types::transport::ClientTlsConfig> {
    url.starts_with("https://").then(|| {
        opentelemetry_otlp::tonic_types::transport::ClientTlsConfig::new().with_native_roots()
    })
}

/// Counts every span that ends, then hands it to the batch processor.
#[derive(Debug)]
struct CountingProcessor {
    inner: BatchSpanProcessor,
    counts: Arc<Counts>,
}

impl SpanProcessor for CountingProcessor {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        self.counts.ended.fetch_add(1, Ordering::Relaxed);
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// Cuts each batch down to the allowlist, sends it on pablo's runtime and counts what the
/// collector took.
#[derive(Debug)]
struct WireExporter<E> {
    inner: Arc<E>,
    runtime: tokio::runtime::Handle,
    counts: Arc<Counts>,
}

impl<E: SpanExporter + 'static> SpanExporter for WireExporter<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let taken = batch.len() as u64;
        let batch: Vec<SpanData> = batch.into_iter().filter_map(super::wire::span).collect();
        let inner = self.inner.clone();
        let result = match self
            .runtime
            .spawn(async move { inner.export(batch).await })
            .await
        {
            Ok(r) => r,
            Err(e) => Err(OTelSdkError::InternalFailure(e.to_string())),
        };
        if result.is_ok() {
            self.counts.exported.fetch_add(taken, Ordering::Relaxed);
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        // Set once, while the provider is built and nothing else holds the exporter.
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.set_resource(&super::wire::filter_resource(resource));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn the_endpoint_variable_alone_turns_export_on_with_the_signal_paths() {
        let (req, notes) = OtelRequest::from_env(env(&[(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://127.0.0.1:4318/",
        )]));
        assert!(notes.is_empty());
        let s = req.resolve().unwrap().unwrap();
        assert_eq!(s.traces.as_deref(), Some("http://127.0.0.1:4318/v1/traces"));
        assert_eq!(
            s.metrics.as_deref(),
            Some("http://127.0.0.1:4318/v1/metrics")
        );
        assert_eq!(s.protocol, Protocol::HttpProtobuf);
        assert_eq!(s.service_name, "pablo");
    }

    #[test]
    fn nothing_set_means_no_export_and_disabled_wins_over_an_endpoint() {
        assert_eq!(OtelRequest::default().resolve().unwrap(), None);
        let (req, _) = OtelRequest::from_env(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_SDK_DISABLED", "true"),
        ]));
        assert_eq!(req.resolve().unwrap(), None);
    }

    #[test]
    fn signal_endpoints_are_used_as_given_and_none_switches_a_signal_off() {
        let (req, _) = OtelRequest::from_env(env(&[
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://c.example/t"),
            ("OTEL_METRICS_EXPORTER", "none"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-team=a%20b, api-key = k1"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "250"),
        ]));
        let s = req.resolve().unwrap().unwrap();
        assert_eq!(s.traces.as_deref(), Some("https://c.example/t"));
        assert_eq!(s.metrics, None);
        assert_eq!(s.headers["x-team"], "a b");
        assert_eq!(s.headers["api-key"], "k1");
        assert_eq!(s.timeout, Duration::from_millis(250));
    }

    #[test]
    fn a_later_source_wins_field_by_field() {
        let file = OtelRequest {
            endpoint: Some("http://file:4318".into()),
            service_name: Some("team-a".into()),
            ..OtelRequest::default()
        };
        let (env_req, _) =
            OtelRequest::from_env(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318")]));
        let s = file.over(env_req).resolve().unwrap().unwrap();
        assert_eq!(s.traces.as_deref(), Some("http://env:4318/v1/traces"));
        assert_eq!(s.service_name, "team-a");
    }

    #[test]
    fn bad_values_are_refused_or_noted_without_repeating_headers() {
        let bad = OtelRequest {
            endpoint: Some("localhost:4318".into()),
            ..OtelRequest::default()
        };
        let e = bad.resolve().unwrap_err();
        assert!(e.contains("not an http:// or https:// URL"), "{e}");
        let (_, notes) = OtelRequest::from_env(env(&[
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "secret-value-without-equals"),
        ]));
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes.iter().all(|n| !n.contains("secret-value")),
            "{notes:?}"
        );
    }
}
