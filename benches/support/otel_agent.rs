//! What `benches/otel_export.rs` measures, included by it (`#[path]`) beside `support/agent.rs`.
//!
//! The agent whose turns it times and the subscriber each case runs under; its script and its
//! collectors stay in the bench.

// A bench whose set-up fails should stop loudly.
#![allow(clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use super::agent::{Agent, AgentLoop, AgentReply, AgentRequest, instant_model, reading_catalog};
use super::agent::{spawn_agent, workspace};
use pablo_telemetry::otel::{Export, OtelRequest};

/// The agent over the repository at `root`: the file tools, a model (`bench-model`) answering
/// with `respond`, no hooks, a one-word system prompt. Call from inside a tokio runtime.
pub fn otel_spawn<F>(root: &Path, state: &Path, respond: F) -> AgentLoop
where
    F: Fn(&AgentRequest<'_>) -> AgentReply + Send + Sync + 'static,
{
    let ws = workspace(root);
    let model = instant_model("bench-model", respond);
    spawn_agent(Agent {
        model,
        catalog: reading_catalog(&ws),
        workspace: ws,
        state,
        hooks: pablo_hooks::Hooks::none(),
        system_prompt: "bench",
    })
}

/// What `pablo::telemetry::subscriber` sets up for export to `endpoint` (none: no export): the
/// subscriber, the export's handle and notes for the person. Call from inside the runtime the
/// export is to run on.
pub fn otel_subscriber(
    endpoint: Option<String>,
) -> (Option<tracing::Dispatch>, Option<OtelExport>, Vec<String>) {
    let otel = endpoint.map(|e| {
        OtelRequest {
            endpoint: Some(e),
            // The SDK's metric reader sends on shutdown only; spans are what a turn makes.
            metric_interval_ms: Some(3_600_000),
            ..OtelRequest::default()
        }
        .resolve()
        .expect("an endpoint alone is a valid export request")
        .expect("an endpoint turns export on")
    });
    let settings = pablo_telemetry::Settings {
        otel,
        ..Default::default()
    };
    let (dispatch, export, notes) = pablo_telemetry::subscriber(&settings);
    (dispatch, export.map(OtelExport), notes)
}

/// A running export.
pub struct OtelExport(Export);

impl OtelExport {
    /// Spans ended so far, and spans the collector took.
    pub fn counts(&self) -> (u64, u64) {
        self.0.counts()
    }

    /// Flushes and stops the export, waiting at most `bound`; a note when it could not finish.
    pub async fn finish(self, bound: Duration) -> Option<String> {
        self.0.finish(bound).await
    }
}
