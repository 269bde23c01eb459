//! The ACP front-end in-process, as an editor drives it: the server runs over a pipe with a
//! scripted model client, which lets a test decide exactly what the model streams (text, tool
//! calls, a stream that stalls until cancelled) while everything between the pipe and the model —
//! the ACP front-end, the agent loop, policy, approvals, tools — is the real code. The tests that
//! drive the `pablo acp` binary are in `tests/acp.rs`; the editor's side of the connection
//! ([`Rpc`], [`Env`]) is shared with them from `tests/support/acp.rs`.

mod editor_files;
mod in_process;
mod terminals;

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use pablo::launch::{Launch, LaunchError, LaunchOptions};
use pablo::model::{
    EventStream, ModelClient, ModelError, ModelRequest, ModelStopReason, StreamEvent, ToolCall,
};
use pablo::protocol::Usage;

use crate::support::acp::{Env, PLAN_ARGS, RPC_ERROR, Rpc, allow_once, no_answer};

/// An error answer for [`Rpc::take`].
fn rpc_error(message: &str) -> Value {
    json!({RPC_ERROR: {"code": -32603, "message": message}})
}

/// One step of a scripted model call.
#[derive(Clone)]
enum Step {
    Text(&'static str),
    /// A piece of reasoning (thinking) text.
    Think(&'static str),
    Call(&'static str, &'static str, Value),
    Usage(u64, u64),
    /// End the call normally.
    Done(ModelStopReason),
    /// Stream nothing more and never finish (until the turn is cancelled).
    Stall,
}

/// A model client that plays one script per call and records the requests it was given.
#[derive(Default)]
struct Scripted {
    scripts: Mutex<VecDeque<Vec<Step>>>,
    requests: Mutex<Vec<ModelRequest>>,
    /// Whether this model takes images (its profile says so).
    images: bool,
}

#[async_trait::async_trait]
impl ModelClient for Scripted {
    fn provider(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "script"
    }
    fn profile(&self) -> pablo::model::ModelProfile {
        pablo::model::ModelProfile {
            images: self.images,
            ..pablo::model::ModelProfile::lookup("script")
        }
    }
    async fn stream(
        &self,
        request: &ModelRequest,
        _cancel: CancellationToken,
    ) -> Result<EventStream, ModelError> {
        self.requests.lock().unwrap().push(request.clone());
        let script = self
            .scripts
            .lock()
            .unwrap()
            .pop_front()
            .ok_or_else(|| ModelError::Config("the script has no more model calls".into()))?;
        let mut events = Vec::new();
        let mut stall = false;
        for step in script {
            match step {
                Step::Text(t) => events.push(Ok(StreamEvent::TextDelta(t.into()))),
                Step::Think(t) => events.push(Ok(StreamEvent::ReasoningDelta(t.into()))),
                Step::Call(id, name, args) => events.push(Ok(StreamEvent::ToolCall(ToolCall {
                    id: id.into(),
                    name: name.into(),
                    arguments: args.to_string(),
                }))),
                Step::Usage(i, o) => events.push(Ok(StreamEvent::Usage(Usage {
                    web_searches: 0,
                    input_tokens: i,
                    output_tokens: o,
                    cached_input_tokens: 0,
                    cache_write_input_tokens: 0,
                }))),
                Step::Done(r) => events.push(Ok(StreamEvent::Completed { stop_reason: r })),
                Step::Stall => stall = true,
            }
        }
        let s = futures::stream::iter(events);
        Ok(if stall {
            s.chain(futures::stream::pending()).boxed()
        } else {
            s.boxed()
        })
    }
}

struct InProcess {
    env: Env,
    model: Arc<Scripted>,
    rpc: Rpc<
        tokio::io::ReadHalf<tokio::io::DuplexStream>,
        tokio::io::WriteHalf<tokio::io::DuplexStream>,
    >,
    server: tokio::task::JoinHandle<Result<(), pablo::acp::AcpError>>,
}

impl InProcess {
    /// Starts the server in this process. XDG variables are process-wide, so every in-process
    /// test points them at the same per-binary directory and keeps its own workspace.
    fn start(scripts: Vec<Vec<Step>>, project_config: Option<&str>) -> Self {
        Self::start_in(Env::new(), scripts, project_config)
    }

    /// Like [`InProcess::start`], in an existing workspace.
    fn start_in(env: Env, scripts: Vec<Vec<Step>>, project_config: Option<&str>) -> Self {
        Self::start_with(env, scripts, project_config, LaunchOptions::default())
    }

    /// Like [`InProcess::start_in`], with the front-end's launch options (flags).
    fn start_with(
        env: Env,
        scripts: Vec<Vec<Step>>,
        project_config: Option<&str>,
        options: LaunchOptions,
    ) -> Self {
        Self::start_model(env, scripts, project_config, options, false)
    }

    /// Like [`InProcess::start`], with a model that takes images.
    fn start_seeing(scripts: Vec<Vec<Step>>) -> Self {
        Self::start_model(Env::new(), scripts, None, LaunchOptions::default(), true)
    }

    fn start_model(
        env: Env,
        scripts: Vec<Vec<Step>>,
        project_config: Option<&str>,
        options: LaunchOptions,
        images: bool,
    ) -> Self {
        xdg_once();
        if let Some(cfg) = project_config {
            std::fs::create_dir_all(env.workspace.join(".pablo")).unwrap();
            std::fs::write(env.workspace.join(".pablo/config.toml"), cfg).unwrap();
        }
        let model = Arc::new(Scripted {
            scripts: Mutex::new(scripts.into()),
            requests: Mutex::new(Vec::new()),
            images,
        });
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let (their_read, their_write) = tokio::io::split(theirs);
        let (our_read, our_write) = tokio::io::split(ours);
        let m = model.clone();
        let models: pablo::acp::ModelSource = Arc::new(move |_: &Launch| {
            let m: Arc<dyn ModelClient> = m.clone();
            Box::pin(async move { Ok::<_, LaunchError>(m) })
        });
        let server = tokio::spawn(pablo::acp::serve(
            pablo::acp::line_transport(their_read, their_write),
            options,
            models,
        ));
        Self {
            env,
            model,
            rpc: Rpc::new(our_read, our_write),
            server,
        }
    }

    async fn session(&mut self) -> String {
        self.rpc.initialize().await;
        let ws = self.env.workspace.clone();
        self.rpc.new_session(&ws).await
    }

    async fn prompt(&mut self, session: &str, text: &str) -> u64 {
        self.rpc
            .request(
                "session/prompt",
                json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
            )
            .await
    }

    async fn finish(self) -> Env {
        let InProcess {
            rpc, server, env, ..
        } = self;
        drop(rpc);
        tokio::time::timeout(Duration::from_secs(20), server)
            .await
            .expect("the server did not stop after its client went away")
            .unwrap()
            .unwrap();
        env
    }
}

/// Points the XDG variables of this test process at a temp dir, once. `Launch::prepare` reads
/// them from the environment, and the in-process server shares the test process.
#[allow(unsafe_code)]
fn xdg_once() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let dir = std::env::temp_dir().join(format!("pablo-acp-xdg-{}", std::process::id()));
        // SAFETY: runs once, before the first in-process server starts; the variables are only
        // read afterwards, and no other code in this binary writes them concurrently.
        unsafe {
            std::env::set_var("XDG_CONFIG_HOME", dir.join("config"));
            std::env::set_var("XDG_DATA_HOME", dir.join("data"));
            std::env::set_var("XDG_STATE_HOME", dir.join("state"));
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Arbitrary bytes on the wire.

mod arbitrary_bytes {
    use proptest::prelude::*;

    use super::*;

    /// What the client sends: arbitrary bytes, mostly the ones JSON-RPC lines are made of.
    fn wire_bytes() -> impl Strategy<Value = Vec<u8>> {
        let meaningful: Vec<u8> = b"{}[]\":,\n\n\r jsonrpcidmethod2.0\xff\xfe\xc3\xe2".to_vec();
        prop::collection::vec(
            prop_oneof![3 => prop::sample::select(meaningful), 1 => any::<u8>()],
            0..2048,
        )
    }

    proptest! {
        // Each case starts a server, so fewer cases than the framing's own property test.
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        #[test]
        fn after_any_bytes_the_connection_still_answers_initialize(bytes in wire_bytes()) {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            runtime.block_on(async {
                let mut t = InProcess::start(vec![], None);
                t.rpc.writer.write_all(&bytes).await.unwrap();
                t.rpc.writer.write_all(b"\n").await.unwrap();
                let id = t
                    .rpc
                    .request(
                        "initialize",
                        json!({"protocolVersion": 1, "clientCapabilities": {}}),
                    )
                    .await;
                // Whatever the bytes got (parse errors, refusals) is JSON-RPC on its own line
                // (`next` checks), and the initialize is answered.
                loop {
                    let m = t.rpc.next().await;
                    if m["id"] == json!(id) {
                        assert_eq!(m["result"]["protocolVersion"], 1, "{m}");
                        break;
                    }
                }
                t.finish().await;
            });
        }
    }
}
