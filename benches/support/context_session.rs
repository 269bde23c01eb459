//! What `benches/context.rs` measures, included by it (`#[path]`) beside `support/agent.rs`.
//!
//! A session recorded through the real agent loop, and what pablo does per call to build a
//! provider request from it. The recorded requests are the engine's own, so they stay here; the
//! bench gets the provider bodies as JSON, which is all its cache simulation reads, and times the
//! building through [`ContextSession`]. Its script stays in the bench.

// A bench whose set-up fails should stop loudly.
#![allow(clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;

use super::agent::{Agent, AgentReply, AgentRequest, instant_model, reading_catalog};
use super::agent::{spawn_agent, workspace};
use pablo_agent::window;
use pablo_model::{ModelProfile, ModelRequest, anthropic, responses};

/// The OpenAI model the Responses bodies are built for.
const RESPONSES_MODEL: &str = "gpt-5";

/// The requests of a recorded session, in order.
pub struct ContextSession {
    model: &'static str,
    requests: Vec<ModelRequest>,
    /// Where in `requests` the largest one is, by the window's measure.
    largest: usize,
}

/// What the bench prints of the recording.
pub struct ContextCounts {
    /// Requests recorded.
    pub requests: usize,
    /// Of them, the session's model calls (the rest, offering no tool, are summaries).
    pub tool_requests: usize,
    /// The largest request's size, by the window's measure.
    pub largest_bytes: usize,
    /// The model's context window in tokens, as its profile gives it.
    pub window: u64,
}

fn bytes(r: &ModelRequest) -> usize {
    window::request_bytes(&r.system, &r.tools, &r.messages)
}

impl ContextSession {
    /// Records a session over the repository at `root`: the real agent loop (pablo's system
    /// prompt, the file tools, no hooks), a model `model` answering each request with `respond`,
    /// one user turn per text of `turns`; every request the model is given is kept.
    pub fn record<F>(
        model: &'static str,
        root: &Path,
        state: &Path,
        turns: &[String],
        respond: F,
    ) -> Self
    where
        F: Fn(&AgentRequest<'_>) -> AgentReply + Send + Sync + 'static,
    {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        let model_client = instant_model(model, move |request: &AgentRequest<'_>| {
            recorded.lock().push(request.request.clone());
            respond(request)
        });
        let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime starts");
        runtime.block_on(async {
            let ws = workspace(root);
            let mut handle = spawn_agent(Agent {
                model: model_client,
                catalog: reading_catalog(&ws),
                workspace: ws,
                state,
                hooks: pablo_hooks::Hooks::none(),
                system_prompt: pablo_agent::context::SYSTEM_PROMPT,
            });
            for text in turns {
                handle.turn(text).await;
            }
            let _ = tokio::time::timeout(Duration::from_secs(10), handle.shut_down()).await;
        });
        let requests = requests.lock().clone();
        let largest = (0..requests.len())
            .max_by_key(|&i| bytes(&requests[i]))
            .expect("the session made requests");
        Self {
            model,
            requests,
            largest,
        }
    }

    pub fn counts(&self) -> ContextCounts {
        ContextCounts {
            requests: self.requests.len(),
            tool_requests: self.requests.iter().filter(|r| !r.tools.is_empty()).count(),
            largest_bytes: bytes(&self.requests[self.largest]),
            window: ModelProfile::lookup(self.model).context_window,
        }
    }

    /// The Anthropic Messages bodies of the requests (only those that ask for caching, when
    /// `cached_only`), as sent.
    pub fn anthropic_bodies(&self, cached_only: bool) -> Vec<Value> {
        self.requests
            .iter()
            .filter(|r| r.cache || !cached_only)
            .map(|r| anthropic::request_body(self.model, r))
            .collect()
    }

    /// The OpenAI Responses bodies (for `gpt-5`) of the requests (only those that ask for
    /// caching, when `cached_only`), as sent.
    pub fn responses_bodies(&self, cached_only: bool) -> Vec<Value> {
        self.requests
            .iter()
            .filter(|r| r.cache || !cached_only)
            .map(|r| responses::request_body(RESPONSES_MODEL, r, responses::BodyOptions::default()))
            .collect()
    }

    /// What pablo does per call to build an Anthropic request, over every recorded request:
    /// measure it for the window, clone the conversation, build the body, serialize it.
    pub fn build_anthropic_all(&self) -> usize {
        self.requests
            .iter()
            .map(|r| build_anthropic(self.model, r))
            .sum()
    }

    /// The same for the OpenAI Responses body.
    pub fn build_responses_all(&self) -> usize {
        self.requests.iter().map(build_responses).sum()
    }

    /// [`Self::build_anthropic_all`] for the largest request alone.
    pub fn build_anthropic_largest(&self) -> usize {
        build_anthropic(self.model, &self.requests[self.largest])
    }
}

fn build_anthropic(model: &str, r: &ModelRequest) -> usize {
    let bytes = bytes(r);
    let request = r.clone();
    let body = anthropic::request_body(model, &request);
    serde_json::to_vec(&body)
        .expect("a JSON value serializes")
        .len()
        + bytes
}

fn build_responses(r: &ModelRequest) -> usize {
    let bytes = bytes(r);
    let request = r.clone();
    let body =
        responses::request_body(RESPONSES_MODEL, &request, responses::BodyOptions::default());
    serde_json::to_vec(&body)
        .expect("a JSON value serializes")
        .len()
        + bytes
}
