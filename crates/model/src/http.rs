//! The HTTP side of a model call, shared by every provider: one reqwest client, the retry loop,
//! error bodies, and the rule that a call is retried only while nothing of it has been streamed.
//!
//! Why "only before output": once a text delta or a tool call has reached the agent (and, through
//! it, the screen and the journal), a retry would stream a second, different answer after the
//! first half of another one. So after the first streamed event every failure is final, and the
//! agent decides what to do with the turn.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::profile::ModelProfile;
use super::sse::{self, DecodeFailure, SseDecoder};
use super::{EventStream, ModelClient, ModelError, ModelRequest, StreamEvent};

/// Timeouts and the retry schedule of model calls.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpOptions {
    /// No byte for this long (waiting for headers or inside the body) abandons the call.
    pub idle_timeout: Duration,
    /// Retries after the first attempt (so `2` means at most three requests).
    pub max_retries: u32,
    /// First backoff; it doubles per retry, with jitter, up to `max_backoff`.
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// Longest `retry-after` honoured; longer requests are shortened to this.
    pub max_retry_after: Duration,
    /// Largest SSE event of a response (`limits.max_model_output_bytes`): one event cannot hold
    /// more than the whole answer may.
    pub max_event_bytes: usize,
    /// No event of the answer for this long abandons the call, however many bytes arrive: the
    /// idle timeout is kept alive by comments and one-byte trickles, this is not.
    pub progress_timeout: Duration,
    /// The provider's own web search, offered with every request that offers tools
    /// (`[options.web_search]`; Anthropic and Responses only).
    pub web_search: Option<super::search::WebSearchTool>,
}

/// How long a stream may go without delivering any of the answer, by default.
pub const DEFAULT_PROGRESS_TIMEOUT: Duration = Duration::from_secs(600);

impl HttpOptions {
    /// The defaults with the idle timeout and the output limit of the session's limits
    /// (`limits.stream_idle_timeout_seconds`, `limits.max_model_output_bytes`).
    pub fn for_limits(idle_timeout: Duration, max_output_bytes: usize) -> Self {
        Self {
            idle_timeout,
            max_event_bytes: max_output_bytes,
            ..Self::default()
        }
    }

    /// With `limits.stream_progress_timeout_seconds`.
    pub fn with_progress_timeout(self, progress_timeout: Duration) -> Self {
        Self {
            progress_timeout,
            ..self
        }
    }

    /// With `[options.web_search]` (when it is on).
    pub fn with_web_search(self, web_search: Option<super::search::WebSearchTool>) -> Self {
        Self { web_search, ..self }
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            idle_timeout: Duration::from_secs(120),
            max_retries: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
            max_event_bytes: 4 * 1024 * 1024,
            progress_timeout: DEFAULT_PROGRESS_TIMEOUT,
            web_search: None,
        }
    }
}

/// An API key. It is only ever read from the environment ([`super::select`]), it never prints
/// (`Debug` shows `ApiKey(<redacted>)`), and provider messages that echo it are scrubbed.
#[derive(Clone)]
pub struct ApiKey(String, Option<String>);

/// Two keys are the same key whatever variable each was read from.
impl PartialEq for ApiKey {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Eq for ApiKey {}

impl ApiKey {
    #[cfg(any(test, feature = "test-support"))]
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into(), None)
    }

    /// A key read from the environment variable `var` (named when the provider refuses it).
    pub fn from_var(var: &str, key: impl Into<String>) -> Self {
        Self(key.into(), Some(var.to_string()))
    }

    /// The environment variable the key was read from, when known.
    pub fn var(&self) -> Option<&str> {
        self.1.as_deref()
    }

    /// The key as a header value marked sensitive (hyper keeps such values out of its logs).
    pub fn header(&self, prefix: &str) -> Result<HeaderValue, ModelError> {
        let mut v = HeaderValue::from_str(&format!("{prefix}{}", self.0)).map_err(|_| {
            ModelError::Config(
                "the API key contains characters that cannot be sent in an HTTP header".into(),
            )
        })?;
        v.set_sensitive(true);
        Ok(v)
    }

    /// Keeps the key (read from `var`) for later sessions and redacts it from every tool result.
    pub fn hold(&self, var: &str) {
        pablo_core::secrets::hold_var(var, &self.0);
    }

    /// Replaces every occurrence of the key in `text`.
    pub fn scrub(&self, text: &str) -> String {
        if self.0.len() < 4 {
            return text.to_string();
        }
        text.replace(&self.0, "<redacted>")
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// How long a TCP/TLS connect may take (the idle timeout bounds the wait for headers as well).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The HTTP client for calls to `url`: the process-wide one (connection pool, TLS config, the
/// proxies of `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY`/`NO_PROXY`), or, for a server on this
/// machine's loopback (a local Ollama or llama.cpp), one that never goes through a proxy: a
/// proxy elsewhere cannot reach this machine's loopback, so routing there would only fail (Go's
/// net/http makes the same exception).
pub fn client_for(url: &str) -> Result<reqwest::Client, ModelError> {
    static PROXIED: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    static DIRECT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    let direct = is_loopback_url(url);
    let slot = if direct { &DIRECT } else { &PROXIED };
    slot.get_or_init(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Err means another thread installed one first: that one is used, fine.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let builder = reqwest::Client::builder().connect_timeout(CONNECT_TIMEOUT);
        let builder = if direct { builder.no_proxy() } else { builder };
        builder.build().map_err(|e| e.to_string())
    })
    .clone()
    .map_err(|m| ModelError::Config(format!("the HTTP client cannot be built: {m}")))
}

/// Whether `url` names a host on the loopback interface (`localhost`, `127.0.0.0/8`, `::1`).
pub fn is_loopback_url(url: &str) -> bool {
    let Some(host) = reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
    else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => bare == "localhost" || bare.ends_with(".localhost"),
    }
}

/// Where one provider sends its calls, and how.
#[derive(Debug)]
pub struct Endpoint {
    pub provider: String,
    /// The full URL of the streaming endpoint.
    pub url: String,
    /// Auth and version headers (auth values are marked sensitive).
    pub headers: HeaderMap,
    pub key: Option<ApiKey>,
    pub options: HttpOptions,
}

impl Endpoint {
    fn scrub(&self, text: &str) -> String {
        match &self.key {
            Some(k) => k.scrub(text),
            None => text.to_string(),
        }
    }
}

/// What one provider's wire format brings to a call: the request body and a decoder for the
/// answer. Everything else a client does (the endpoint, retries, the trait's accessors) is
/// [`HttpModel`]'s, the same for every provider.
pub trait WireFormat: Send + Sync + 'static {
    type Decoder: SseDecoder + 'static;
    fn body(&self, model: &str, request: &ModelRequest) -> serde_json::Value;
    /// A fresh decoder for one attempt (a retry starts over).
    fn decoder(provider: &str) -> Self::Decoder;
}

/// A model client over HTTP and server-sent events, in the wire format `W`.
#[derive(Debug)]
pub struct HttpModel<W> {
    endpoint: Arc<Endpoint>,
    model: String,
    profile: ModelProfile,
    wire: W,
}

impl<W> HttpModel<W> {
    pub fn from_parts(endpoint: Endpoint, model: String, profile: ModelProfile, wire: W) -> Self {
        Self {
            endpoint: Arc::new(endpoint),
            model,
            profile,
            wire,
        }
    }
}

#[async_trait::async_trait]
impl<W: WireFormat> ModelClient for HttpModel<W> {
    fn provider(&self) -> &str {
        &self.endpoint.provider
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn profile(&self) -> ModelProfile {
        self.profile.clone()
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<EventStream, ModelError> {
        let provider = self.endpoint.provider.clone();
        start_call(
            self.endpoint.clone(),
            &self.wire.body(&self.model, request),
            move || W::decoder(&provider),
            cancel,
        )
    }
}

/// Starts one model call: serializes `body` once, POSTs it, decodes the SSE answer with a fresh
/// decoder per attempt, retries as the module docs say. The work runs in a task that stops when
/// the call completes, fails, is cancelled, or the returned stream is dropped.
fn start_call<D, F>(
    endpoint: Arc<Endpoint>,
    body: &serde_json::Value,
    make_decoder: F,
    cancel: CancellationToken,
) -> Result<EventStream, ModelError>
where
    D: SseDecoder + 'static,
    F: Fn() -> D + Send + 'static,
{
    let body = Bytes::from(serde_json::to_vec(body).map_err(|e| ModelError::Malformed {
        provider: endpoint.provider.clone(),
        message: format!("the request cannot be serialized: {e}"),
    })?);
    let (tx, rx) = mpsc::channel::<Result<StreamEvent, ModelError>>(64);
    // Inside the caller's span (the model call's), so retries are counted on it.
    let span = tracing::Span::current();
    tokio::spawn(tracing::Instrument::instrument(
        async move {
            let closed = tx.clone();
            tokio::select! {
                () = run_call(&endpoint, body, make_decoder, &cancel, &tx) => {}
                () = cancel.cancelled() => { let _ = tx.send(Err(ModelError::Cancelled)).await; }
                () = closed.closed() => {}
            }
        },
        span,
    ));
    Ok(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    })
    .boxed())
}

/// One failed attempt: the error, and whether another attempt may help (and after how long the
/// server asked us to wait).
struct AttemptError {
    error: ModelError,
    retryable: bool,
    retry_after: Option<Duration>,
}

impl AttemptError {
    fn fatal(error: ModelError) -> Self {
        Self {
            error,
            retryable: false,
            retry_after: None,
        }
    }
}

async fn run_call<D, F>(
    endpoint: &Endpoint,
    body: Bytes,
    make_decoder: F,
    cancel: &CancellationToken,
    tx: &mpsc::Sender<Result<StreamEvent, ModelError>>,
) where
    D: SseDecoder,
    F: Fn() -> D,
{
    let opts = &endpoint.options;
    let mut attempt: u32 = 0;
    loop {
        let mut streamed = false;
        let result = attempt_once(endpoint, body.clone(), make_decoder(), tx, &mut streamed).await;
        let failure = match result {
            Ok(()) => return,
            Err(f) => f,
        };
        if streamed || !failure.retryable || attempt >= opts.max_retries {
            tracing::debug!(
                provider = %endpoint.provider,
                attempts = attempt + 1,
                code = pablo_core::Coded::code(&failure.error).as_str(),
                "model call failed"
            );
            let _ = tx.send(Err(failure.error)).await;
            return;
        }
        let wait = retry_delay(opts, attempt, failure.retry_after, fastrand::f64());
        let notice = super::RetryNotice {
            attempt: attempt + 2,
            max_attempts: opts.max_retries + 1,
            wait,
            reason: retry_reason(endpoint, &failure.error),
            code: pablo_core::Coded::code(&failure.error),
        };
        if tx.send(Ok(StreamEvent::Retry(notice))).await.is_err() {
            return;
        }
        tracing::debug!(
            provider = %endpoint.provider,
            attempt = attempt + 1,
            wait_ms = wait.as_millis() as u64,
            code = pablo_core::Coded::code(&failure.error).as_str(),
            "model call retried"
        );
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = cancel.cancelled() => return,
        }
        attempt += 1;
        pablo_telemetry::record_retries(attempt);
    }
}

/// One request and its streamed answer. `streamed` becomes true with the first event that
/// reaches the consumer; from then on nothing is retried.
async fn attempt_once<D: SseDecoder>(
    endpoint: &Endpoint,
    body: Bytes,
    decoder: D,
    tx: &mpsc::Sender<Result<StreamEvent, ModelError>>,
    streamed: &mut bool,
) -> Result<(), AttemptError> {
    let opts = &endpoint.options;
    // The process-wide client, built at the first call: reading the system's trusted
    // certificates is work an idle prompt does not need (it was most of what start-up computed,
    // and its memory stayed), and it costs a few ms once, beside a model call's own latency.
    let client = client_for(&endpoint.url).map_err(AttemptError::fatal)?;
    let request = client
        .post(&endpoint.url)
        .headers(endpoint.headers.clone())
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(body)
        .send();
    let response = match tokio::time::timeout(opts.idle_timeout, request).await {
        Err(_) => {
            return Err(AttemptError::fatal(ModelError::IdleTimeout {
                provider: endpoint.provider.clone(),
                seconds: opts.idle_timeout.as_secs(),
            }));
        }
        Ok(Err(e)) => {
            return Err(AttemptError {
                error: ModelError::Connect {
                    provider: endpoint.provider.clone(),
                    url: endpoint.url.clone(),
                    // The URL is in the message already; reqwest's text would repeat it.
                    message: endpoint.scrub(&error_chain(&e.without_url())),
                },
                retryable: true,
                retry_after: None,
            });
        }
        Ok(Ok(r)) => r,
    };
    let status = response.status();
    if !status.is_success() {
        return Err(http_failure(endpoint, response).await);
    }
    let is_json = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"));
    if is_json {
        // A server that ignored `stream: true`, or a proxy answering 200 with an error.
        let body = read_bounded(response, opts.idle_timeout).await;
        let (_, message) = error_message(&body);
        return Err(AttemptError::fatal(ModelError::Malformed {
            provider: endpoint.provider.clone(),
            message: endpoint.scrub(&format!(
                "expected an event stream but got JSON{}",
                message.map(|m| format!(": {m}")).unwrap_or_default()
            )),
        }));
    }
    let bytes = sse::idle_guard(response.bytes_stream(), opts.idle_timeout);
    let events = sse::decode(bytes, decoder, opts.max_event_bytes);
    futures::pin_mut!(events);
    loop {
        // Bytes that decode to nothing (comments, a line that grows by a byte now and then)
        // keep the idle timeout at bay; only the answer itself counts as progress.
        let item = match tokio::time::timeout(opts.progress_timeout, events.next()).await {
            Ok(Some(item)) => item,
            Ok(None) => break,
            Err(_) => {
                return Err(AttemptError::fatal(ModelError::Stalled {
                    provider: endpoint.provider.clone(),
                    seconds: opts.progress_timeout.as_secs(),
                }));
            }
        };
        match item {
            Ok(event) => {
                if !matches!(event, StreamEvent::Usage(_)) {
                    *streamed = true;
                }
                if tx.send(Ok(event)).await.is_err() {
                    return Ok(());
                }
            }
            Err(DecodeFailure::Retryable(e)) => {
                return Err(AttemptError {
                    error: scrub_error(endpoint, e),
                    retryable: true,
                    retry_after: None,
                });
            }
            Err(DecodeFailure::Fatal(e)) => {
                return Err(AttemptError::fatal(scrub_error(endpoint, e)));
            }
            Err(DecodeFailure::Cut) => {
                return Err(AttemptError::fatal(ModelError::StreamCut {
                    provider: endpoint.provider.clone(),
                }));
            }
            Err(DecodeFailure::Idle(d)) => {
                return Err(AttemptError::fatal(ModelError::IdleTimeout {
                    provider: endpoint.provider.clone(),
                    seconds: d.as_secs(),
                }));
            }
        }
    }
    Ok(())
}

/// Why an attempt is retried, in a few words: the status and the host that answered, or the
/// host that could not be reached.
fn retry_reason(endpoint: &Endpoint, error: &ModelError) -> String {
    let host = reqwest::Url::parse(&endpoint.url)
        .ok()
        .and_then(|u| {
            let host = u.host_str()?.to_string();
            Some(match u.port() {
                Some(p) => format!("{host}:{p}"),
                None => host,
            })
        })
        .unwrap_or_else(|| endpoint.url.clone());
    match error {
        ModelError::Http { status, .. } => format!("{status} from {host}"),
        ModelError::Connect { .. } => format!("no answer from {host}"),
        other => other.to_string(),
    }
}

/// Turns a non-2xx response into an error naming the status and the provider's own message.
async fn http_failure(endpoint: &Endpoint, response: reqwest::Response) -> AttemptError {
    let status = response.status().as_u16();
    let retry_after = parse_retry_after(response.headers());
    let body = read_bounded(response, endpoint.options.idle_timeout).await;
    let (kind, message) = error_message(&body);
    let message = match message {
        Some(m) => m,
        None => status_text(status),
    };
    let overloaded = kind.as_deref() == Some("overloaded_error");
    let code = error_code(&body);
    if matches!(status, 400 | 413 | 422)
        && (is_context_overflow(&message) || code.as_deref() == Some("context_length_exceeded"))
    {
        return AttemptError::fatal(ModelError::ContextTooLong {
            provider: endpoint.provider.clone(),
            message: endpoint.scrub(&message),
        });
    }
    let mut message = endpoint.scrub(&message);
    // A refused key is fixed where it came from: say which variable that is.
    if matches!(status, 401 | 403) {
        match endpoint.key.as_ref().and_then(ApiKey::var) {
            Some(var) => message.push_str(&format!(
                "; the key sent was read from the environment variable {var}: check it holds a \
                 valid key for this provider (or name another variable with api_key_env)"
            )),
            None if endpoint.key.is_none() => message.push_str(
                "; no API key was sent: set the provider's key variable, or name one with \
                 api_key_env in the config",
            ),
            None => {}
        }
    }
    AttemptError {
        error: ModelError::Http {
            provider: endpoint.provider.clone(),
            status,
            message,
        },
        retryable: status == 429 || status == 408 || status >= 500 || overloaded,
        retry_after,
    }
}

/// Reads at most 64 KiB of a (small, error) body, within the idle timeout.
async fn read_bounded(response: reqwest::Response, idle: Duration) -> Vec<u8> {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    let read = async {
        while let Some(Ok(c)) = chunks.next().await {
            body.extend_from_slice(&c);
            if body.len() > 64 * 1024 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(idle, read).await;
    body
}

fn scrub_error(endpoint: &Endpoint, e: ModelError) -> ModelError {
    match e {
        ModelError::Provider { provider, message } => ModelError::Provider {
            provider,
            message: endpoint.scrub(&message),
        },
        ModelError::Malformed { provider, message } => ModelError::Malformed {
            provider,
            message: endpoint.scrub(&message),
        },
        other => other,
    }
}

fn status_text(status: u16) -> String {
    reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("error")
        .to_lowercase()
}

/// The error type and message out of a provider's JSON error body. Understands the shapes in
/// use: `{"error":{"type","message"}}` (OpenAI, Anthropic, vLLM), `{"error":"text"}` (Ollama),
/// `{"message"}`/`{"detail"}` (proxies). Anything else: the body's first 300 characters.
pub fn error_message(body: &[u8]) -> (Option<String>, Option<String>) {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return (None, None);
    }
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(text) {
        let err = &v["error"];
        let kind = err["type"]
            .as_str()
            .or_else(|| err["code"].as_str())
            .map(str::to_string);
        let message = err["message"]
            .as_str()
            .or_else(|| err.as_str())
            .or_else(|| v["message"].as_str())
            .or_else(|| v["detail"].as_str())
            .map(str::to_string);
        if message.is_some() {
            let message = match (&kind, message) {
                (Some(k), Some(m)) if !m.contains(k.as_str()) => Some(format!("{k}: {m}")),
                (_, m) => m,
            };
            return (kind, message);
        }
    }
    let short: String = text.chars().take(300).collect();
    (None, Some(short))
}

/// `error.code` of a JSON error body (OpenAI's `context_length_exceeded`).
fn error_code(body: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    v["error"]["code"].as_str().map(str::to_string)
}

/// Whether a provider's error message says the request did not fit the context window. The
/// wordings in use: Anthropic (`prompt is too long: N tokens > M maximum`, `input length and
/// max_tokens exceed context limit`), OpenAI and vLLM (`maximum context length is N tokens`,
/// `exceeds the context window`), llama.cpp (`exceeds the available context size`), Ollama
/// (`input length exceeds the context length`).
pub fn is_context_overflow(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "prompt is too long",
        "context_length_exceeded",
        "maximum context length",
        "context window",
        "context size",
        "context length",
        "context limit",
        "input is too long",
        "too many tokens",
    ]
    .iter()
    .any(|p| m.contains(p))
}

/// The request's size in tokens when an overflow message states it (`prompt is too long: 210000
/// tokens`, `your messages resulted in 130000 tokens`, `exceed context limit: 190000 + 16384`).
pub fn overflow_tokens(message: &str) -> Option<u64> {
    static RE: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    let re = RE
        .get_or_init(|| {
            regex::Regex::new(
                r"(?i)(?:prompt is too long:\s*|resulted in\s+|you requested\s+|context limit:\s*)(\d+)",
            )
            .ok()
        })
        .as_ref()?;
    re.captures(message)?.get(1)?.as_str().parse().ok()
}

/// `retry-after-ms` (OpenAI) or `retry-after` in seconds. HTTP dates are not honoured (the
/// backoff schedule applies instead).
fn parse_retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return duration_from_secs(ms / 1000.0);
    }
    get("retry-after")
        .and_then(|v| v.parse::<f64>().ok())
        .and_then(duration_from_secs)
}

fn duration_from_secs(s: f64) -> Option<Duration> {
    (s.is_finite() && s >= 0.0).then(|| Duration::from_secs_f64(s.min(86_400.0)))
}

/// How long to wait before retry number `attempt + 1`. A server's `retry-after` wins (capped at
/// `max_retry_after`); otherwise exponential backoff with "equal jitter": half the step fixed,
/// half random (`unit` in `[0, 1)`), so simultaneous clients spread out but none retries at once.
pub fn retry_delay(
    opts: &HttpOptions,
    attempt: u32,
    retry_after: Option<Duration>,
    unit: f64,
) -> Duration {
    if let Some(ra) = retry_after {
        return ra.min(opts.max_retry_after);
    }
    let step = opts
        .initial_backoff
        .saturating_mul(2u32.saturating_pow(attempt.min(16)))
        .min(opts.max_backoff);
    let half = step / 2;
    half + half.mul_f64(unit.clamp(0.0, 1.0))
}

/// `e` with its sources (`error sending request: connection refused`).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        let m = inner.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        src = inner.source();
    }
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_recognised_and_look_alikes_are_not() {
        for url in [
            "http://127.0.0.1:8080/v1",
            "http://127.1.2.3/v1",
            "http://localhost:11434/v1",
            "http://LOCALHOST/v1",
            "http://[::1]:8000/v1",
            "http://ollama.localhost/v1",
        ] {
            assert!(is_loopback_url(url), "{url}");
        }
        for url in [
            "https://api.openai.com/v1",
            "http://127.0.0.1.example.com/v1",
            "http://localhost.example.com/v1",
            "http://10.0.0.1/v1",
            "http://[::2]/v1",
            "not a url",
        ] {
            assert!(!is_loopback_url(url), "{url}");
        }
    }

    fn opts() -> HttpOptions {
        HttpOptions {
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
            max_retry_after: Duration::from_secs(30),
            ..HttpOptions::default()
        }
    }

    #[test]
    fn retry_after_is_honoured_and_capped() {
        let o = opts();
        assert_eq!(
            retry_delay(&o, 0, Some(Duration::from_secs(3)), 0.5),
            Duration::from_secs(3)
        );
        assert_eq!(
            retry_delay(&o, 0, Some(Duration::from_secs(3600)), 0.5),
            Duration::from_secs(30)
        );
    }

    #[test]
    fn backoff_doubles_with_jitter_within_half_and_full_step_up_to_the_cap() {
        let o = opts();
        for (attempt, step_ms) in [
            (0, 100),
            (1, 200),
            (2, 400),
            (3, 800),
            (4, 1000),
            (30, 1000),
        ] {
            let lo = retry_delay(&o, attempt, None, 0.0);
            let hi = retry_delay(&o, attempt, None, 0.999_999);
            assert_eq!(lo, Duration::from_millis(step_ms / 2), "attempt {attempt}");
            assert!(hi <= Duration::from_millis(step_ms), "attempt {attempt}");
            assert!(
                hi > Duration::from_millis(step_ms * 99 / 100),
                "attempt {attempt}"
            );
        }
    }

    #[test]
    fn retry_after_headers_in_seconds_and_milliseconds_are_read() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(parse_retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("1500"));
        assert_eq!(parse_retry_after(&h), Some(Duration::from_millis(1500)));
        let mut d = HeaderMap::new();
        d.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(parse_retry_after(&d), None);
        d.insert("retry-after", HeaderValue::from_static("-1"));
        assert_eq!(parse_retry_after(&d), None);
    }

    #[test]
    fn error_bodies_of_each_provider_shape_yield_their_message() {
        let (k, m) = error_message(
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert_eq!(k.as_deref(), Some("overloaded_error"));
        assert_eq!(m.as_deref(), Some("overloaded_error: Overloaded"));
        let (_, m) = error_message(
            br#"{"error":{"message":"Rate limit reached for gpt","type":"requests","code":"rate_limit_exceeded"}}"#,
        );
        assert_eq!(m.as_deref(), Some("requests: Rate limit reached for gpt"));
        let (_, m) = error_message(br#"{"error":"model 'llama9' not found"}"#);
        assert_eq!(m.as_deref(), Some("model 'llama9' not found"));
        let (_, m) = error_message(br#"{"detail":"Not Found"}"#);
        assert_eq!(m.as_deref(), Some("Not Found"));
        let (_, m) = error_message(b"<html>bad gateway</html>");
        assert_eq!(m.as_deref(), Some("<html>bad gateway</html>"));
        assert_eq!(error_message(b"  "), (None, None));
    }

    #[test]
    fn context_overflow_messages_of_each_provider_are_recognised_with_their_token_counts() {
        for (m, tokens) in [
            (
                "invalid_request_error: prompt is too long: 210344 tokens > 200000 maximum",
                Some(210344),
            ),
            (
                "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens.",
                Some(130512),
            ),
            (
                "the request exceeds the available context size, try increasing it",
                None,
            ),
            (
                "input length and `max_tokens` exceed context limit: 190000 + 16384 > 200000",
                Some(190000),
            ),
            ("Your input exceeds the context window of this model.", None),
        ] {
            assert!(is_context_overflow(m), "{m}");
            assert_eq!(overflow_tokens(m), tokens, "{m}");
        }
        assert!(!is_context_overflow(
            "max_tokens: 100000 > 64000, the maximum allowed"
        ));
        assert!(!is_context_overflow("model 'x' not found"));
    }

    #[test]
    fn api_key_debug_and_scrub_never_show_the_key() {
        let k = ApiKey::new("sk-very-secret-123");
        assert_eq!(format!("{k:?}"), "ApiKey(<redacted>)");
        assert_eq!(
            k.scrub("bad key sk-very-secret-123 given"),
            "bad key <redacted> given"
        );
        assert!(k.header("Bearer ").is_ok_and(|h| h.is_sensitive()));
    }
}
