//! OpenTelemetry through the real binary. A real OTLP/HTTP receiver on 127.0.0.1 (Python,
//! decoding with the official protobuf definitions of `opentelemetry-proto`, which `.ci/run`
//! installs) gets the spans and metrics of a plain `pablo run` that reads a file, runs a command,
//! writes a file and is refused one, and none of that session's content: every byte that arrived
//! is searched for the task, the paths, the command, the outputs and the keys, with native content
//! capture on as well.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::bin::Sandbox;
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};
use crate::support::run::output;

/// The receiver: a Python process writing what it decoded into `dir`.
struct Receiver {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    /// Starts one (its answers delayed by `delay` seconds); `None`, with a note, when Python's
    /// `opentelemetry-proto` is not installed, unless `.ci/run` asked for it to be required.
    fn start(delay: Option<f64>) -> Option<Self> {
        let importable = Command::new("python3")
            .args([
                "-c",
                "import opentelemetry.proto.collector.trace.v1.trace_service_pb2",
            ])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !importable {
            assert!(
                std::env::var_os("PABLO_TEST_REQUIRE_OTLP_RECEIVER").is_none(),
                "python3 with opentelemetry-proto is required (pip install opentelemetry-proto)"
            );
            eprintln!(
                "note: skipping the OTLP receiver test: python3 cannot import opentelemetry.proto \
                 (`pip install opentelemetry-proto`; .ci/run does)"
            );
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/otlp_receiver.py");
        let mut cmd = Command::new("python3");
        cmd.arg(script).arg(dir.path());
        if let Some(d) = delay {
            cmd.args(["--delay", &d.to_string()]);
        }
        let mut child = cmd.stdout(Stdio::piped()).spawn().expect("python3 starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the receiver prints its port");
        Some(Self { child, port, dir })
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn file(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.dir.path().join(name)).unwrap_or_default()
    }

    fn requests(&self, name: &str) -> Vec<Value> {
        String::from_utf8(self.file(name))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Every span received, as (name, attributes by key, the span itself).
    fn spans(&self) -> Vec<Span> {
        let mut out = Vec::new();
        for request in self.requests("traces.jsonl") {
            for rs in request["resourceSpans"].as_array().into_iter().flatten() {
                for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                    for s in ss["spans"].as_array().into_iter().flatten() {
                        out.push(Span {
                            name: s["name"].as_str().unwrap().to_string(),
                            attributes: attributes(&s["attributes"]),
                            raw: s.clone(),
                        });
                    }
                }
            }
        }
        out
    }

    /// Every metric data point received, as (metric name, attributes, value).
    fn points(&self) -> Vec<(String, BTreeMap<String, Value>, f64)> {
        let mut out = Vec::new();
        for request in self.requests("metrics.jsonl") {
            for rm in request["resourceMetrics"].as_array().into_iter().flatten() {
                for sm in rm["scopeMetrics"].as_array().into_iter().flatten() {
                    for m in sm["metrics"].as_array().into_iter().flatten() {
                        let name = m["name"].as_str().unwrap().to_string();
                        let (points, field) = if m.get("sum").is_some() {
                            (&m["sum"]["dataPoints"], None)
                        } else {
                            (&m["histogram"]["dataPoints"], Some("count"))
                        };
                        for p in points.as_array().into_iter().flatten() {
                            let value = match field {
                                Some(f) => number(&p[f]),
                                None if p.get("asInt").is_some() => number(&p["asInt"]),
                                None => number(&p["asDouble"]),
                            };
                            out.push((name.clone(), attributes(&p["attributes"]), value));
                        }
                    }
                }
            }
        }
        out
    }
}

struct Span {
    name: String,
    attributes: BTreeMap<String, Value>,
    raw: Value,
}

/// OTLP's JSON numbers: 64-bit integers are strings in protobuf's JSON mapping.
fn number(v: &Value) -> f64 {
    match v {
        Value::String(s) => s.parse().unwrap(),
        v => v.as_f64().unwrap_or(f64::NAN),
    }
}

fn attributes(list: &Value) -> BTreeMap<String, Value> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|kv| {
            let v = &kv["value"];
            let value = if let Some(s) = v.get("stringValue") {
                s.clone()
            } else if let Some(i) = v.get("intValue") {
                json!(number(i))
            } else if let Some(d) = v.get("doubleValue") {
                json!(number(d))
            } else if let Some(b) = v.get("boolValue") {
                b.clone()
            } else {
                v.clone()
            };
            (kv["key"].as_str().unwrap().to_string(), value)
        })
        .collect()
}

fn call(id: &str, name: &str, args: &Value) -> ScriptedResponse {
    ScriptedResponse::sse(
        openai::Stream::new()
            .tool_call(0, id, name, &[&args.to_string()])
            .finish("tool_calls")
            .usage(1000, 50)
            .done(),
    )
}

const TASK: &str = "Reconcile the ledger for Ms Tallulah Quixote; the deploy token is \
                    ghp_Zq8wLkP3vN5xR7tY9uB2cD4eF6gH8jK0mQ1s and nothing leaves this room";
const READ_PATH: &str = "private/customer-ledger-7731.txt";
const FILE_TEXT: &str = "LEDGER-ROW acct=99887766 balance=123456.78 owner=Quixote\n";
const COMMAND: &str = "grep -c LEDGER-ROW private/customer-ledger-7731.txt";
const TOUCH: &str = "touch reports/reconciled-quixote.md";
const WRITTEN_PATH: &str = "reports/reconciled-quixote.md";
const WRITTEN_TEXT: &str = "# Reconciled\nall 1 rows of the Quixote ledger match\n";
const ANSWER: &str = "The Quixote ledger reconciles: one row, balance 123456.78.";
const PROVIDER_KEY: &str = "sk-proj-NeverExported0123456789abcdefXYZ";
const COLLECTOR_KEY: &str = "collector-key-5b6ec30b-never-in-a-body";

/// A plain `pablo run` of the scripted session against `receiver`, with content capture on;
/// returns the native trace it wrote.
async fn scripted_run(receiver: &Receiver) -> String {
    let server = ScriptedServer::start().await;
    // One refusal the provider asks to retry: the model call's span counts it.
    server.push(
        ScriptedResponse::error(503, "overloaded", "try again").header("retry-after-ms", "10"),
    );
    server.push(call("c1", "fs_read", &json!({ "path": READ_PATH })));
    server.push(call("c2", "shell_run", &json!({ "command": COMMAND })));
    // Not known to be safe: asked for, and refused headless.
    server.push(call("c3", "shell_run", &json!({ "command": TOUCH })));
    // Outside the workspace: refused before anything runs.
    server.push(call(
        "c4",
        "fs_read",
        &json!({ "path": "../../etc/shadow-quixote" }),
    ));
    server.push(ScriptedResponse::sse(
        openai::Stream::new()
            .text(&[ANSWER])
            .finish("stop")
            .usage(1200, 30)
            .done(),
    ));
    let sandbox = Sandbox::new();
    let ws = sandbox.workspace();
    std::fs::create_dir_all(ws.join("private")).unwrap();
    std::fs::create_dir_all(ws.join("reports")).unwrap();
    std::fs::write(ws.join(READ_PATH), FILE_TEXT).unwrap();
    sandbox.user_config(&format!(
        "provider = \"openai\"\nbase_url = \"{}\"\n\n[model]\nname = \"test-model\"\n\n\
         [model.prices]\ninput = 3.0\noutput = 15.0\n",
        server.base_url()
    ));
    let log = sandbox.root().join("pablo-trace.jsonl");
    let mut cmd = sandbox.command();
    cmd.env("OPENAI_API_KEY", PROVIDER_KEY)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            format!("x-collector-key={COLLECTOR_KEY}"),
        )
        .env("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci")
        .env("PABLO_LOG", "debug")
        .env("PABLO_LOG_CONTENT", "1")
        .env("PABLO_LOG_FILE", &log)
        .args(["run", TASK]);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("pablo run finished within 60 s")
        .expect("pablo runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("OpenTelemetry"), "{stderr}");
    assert!(!ws.join(WRITTEN_PATH).exists());
    // The workspace's own path is content too.
    std::fs::write(
        receiver.dir.path().join("workspace"),
        ws.display().to_string(),
    )
    .unwrap();
    std::fs::read_to_string(&log).unwrap_or_default()
}

fn one<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let found: Vec<&Span> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "spans named {name}: {}", names(spans));
    found[0]
}

fn names(spans: &[Span]) -> String {
    spans
        .iter()
        .map(|s| s.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn id(span: &Span, field: &str) -> String {
    span.raw[field].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn pablo_run_exports_spans_and_metrics_with_the_facts_and_no_byte_of_content() {
    let Some(receiver) = Receiver::start(None) else {
        return;
    };
    let native = scripted_run(&receiver).await;
    let errors = String::from_utf8_lossy(&receiver.file("errors.txt")).into_owned();
    assert!(errors.is_empty(), "the receiver could not decode: {errors}");

    // Spans: the session holds the turn, the turn its model and tool calls.
    let spans = receiver.spans();
    let session = one(&spans, "pablo.session");
    let turn = one(&spans, "pablo.turn");
    assert_eq!(id(turn, "parentSpanId"), id(session, "spanId"));
    assert_eq!(session.attributes["gen_ai.provider.name"], "openai");
    assert_eq!(session.attributes["gen_ai.request.model"], "test-model");
    assert_eq!(session.attributes["gen_ai.operation.name"], "invoke_agent");
    assert!(session.attributes.contains_key("session.id"));
    // Five calls, one of them sent twice (the 503): six requests, as `turn_completed` says.
    assert_eq!(turn.attributes["pablo.turn.model_calls"], 6.0);
    assert_eq!(turn.attributes["pablo.turn.tool_calls"], 4.0);
    assert_eq!(turn.attributes["pablo.turn.stop_reason"], "EndTurn");

    let chats: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "chat test-model")
        .collect();
    assert_eq!(chats.len(), 5, "{}", names(&spans));
    for chat in &chats {
        assert_eq!(id(chat, "parentSpanId"), id(turn, "spanId"));
        assert_eq!(chat.raw["kind"], "SPAN_KIND_CLIENT");
        assert_eq!(chat.attributes["gen_ai.operation.name"], "chat");
        assert_eq!(chat.attributes["gen_ai.provider.name"], "openai");
        assert_eq!(chat.attributes["pablo.outcome"], "ok");
        assert!(chat.attributes["pablo.cost_usd"].as_f64().unwrap() > 0.0);
    }
    let input: f64 = chats
        .iter()
        .map(|c| c.attributes["gen_ai.usage.input_tokens"].as_f64().unwrap())
        .sum();
    assert_eq!(input, 4.0 * 1000.0 + 1200.0);
    let retried: Vec<_> = chats
        .iter()
        .filter_map(|c| c.attributes.get("pablo.model.retries"))
        .collect();
    assert_eq!(retried, [&json!(1.0)], "one call was retried once");

    let read = spans
        .iter()
        .filter(|s| s.name == "execute_tool fs.read")
        .collect::<Vec<_>>();
    assert_eq!(read.len(), 2, "{}", names(&spans));
    assert_eq!(read[0].attributes["pablo.tool.decision"], "allow");
    assert_eq!(read[0].attributes["pablo.outcome"], "ok");
    assert_eq!(read[0].attributes["pablo.tool.truncated"], false);
    assert_eq!(read[1].attributes["pablo.outcome"], "path_refused");
    let shell: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "execute_tool shell.run")
        .collect();
    assert_eq!(shell.len(), 2, "{}", names(&spans));
    assert_eq!(id(shell[0], "parentSpanId"), id(turn, "spanId"));
    assert_eq!(shell[0].attributes["gen_ai.tool.name"], "shell.run");
    assert_eq!(shell[0].attributes["pablo.tool.decision"], "allow");
    assert_eq!(shell[0].attributes["pablo.tool.rule"], "builtin.safe.grep");
    assert_eq!(shell[0].attributes["pablo.tool.sandbox"], "read-only");
    assert_eq!(shell[0].attributes["pablo.tool.exit_code"], 0.0);
    assert!(shell[0].attributes.contains_key("pablo.tool.run_ms"));
    assert_eq!(shell[1].attributes["pablo.tool.decision"], "ask");
    assert_eq!(shell[1].attributes["pablo.outcome"], "approval_required");
    assert_eq!(shell[1].attributes["error.type"], "approval_required");
    assert_eq!(shell[1].raw["status"]["code"], "STATUS_CODE_ERROR");
    assert!(!shell[1].attributes.contains_key("pablo.tool.run_ms"));
    // Metrics: the same facts, counted.
    let points = receiver.points();
    let sum = |metric: &str, pred: &dyn Fn(&BTreeMap<String, Value>) -> bool| -> f64 {
        points
            .iter()
            .filter(|(n, a, _)| n == metric && pred(a))
            .map(|(_, _, v)| *v)
            .sum()
    };
    let is = |key: &'static str, value: &'static str| {
        move |a: &BTreeMap<String, Value>| a.get(key).and_then(Value::as_str) == Some(value)
    };
    assert_eq!(sum("pablo.session.count", &|_| true), 1.0);
    assert_eq!(sum("pablo.turn.count", &|_| true), 1.0);
    assert_eq!(sum("pablo.model.call.count", &|_| true), 5.0);
    assert_eq!(sum("pablo.token.usage", &is("type", "input")), 5200.0);
    assert_eq!(sum("pablo.token.usage", &is("type", "output")), 230.0);
    let cost = sum("pablo.cost.usage", &|_| true);
    let expected = (5200.0 * 3.0 + 230.0 * 15.0) / 1e6;
    assert!((cost - expected).abs() < 1e-9, "{cost} != {expected}");
    assert_eq!(
        sum("pablo.tool.call.count", &is("decision", "allowed")),
        2.0
    );
    assert_eq!(sum("pablo.tool.call.count", &is("decision", "asked")), 1.0);
    assert_eq!(sum("pablo.tool.call.count", &|_| true), 4.0);
    assert_eq!(sum("pablo.model.call.duration", &|_| true), 5.0);
    assert_eq!(sum("pablo.tool.call.duration", &|_| true), 4.0);

    // The collector's key went as a header, as configured, and nowhere else.
    let headers = String::from_utf8(receiver.file("headers.jsonl")).unwrap();
    assert!(headers.contains(COLLECTOR_KEY), "{headers}");

    // Not one byte of content, anywhere in what arrived (resource attributes included).
    let raw = receiver.file("raw.bin");
    let decoded = [
        receiver.file("traces.jsonl"),
        receiver.file("metrics.jsonl"),
    ]
    .concat();
    assert!(!raw.is_empty());
    let workspace = String::from_utf8(receiver.file("workspace")).unwrap();
    let mut forbidden: Vec<&str> = vec![
        "Reconcile",
        "Tallulah",
        "Quixote",
        "ghp_Zq8wLkP3vN5xR7tY9uB2cD4eF6gH8jK0mQ1s",
        "Zq8wLkP3",
        "customer-ledger",
        "private/",
        "LEDGER-ROW",
        "99887766",
        "123456.78",
        "grep -c",
        "touch",
        "reconciled",
        "Reconciled",
        "etc/shadow",
        PROVIDER_KEY,
        "NeverExported",
        COLLECTOR_KEY,
        "process.command_args",
        "process.executable",
        "host.name",
        &workspace,
    ];
    forbidden.extend(TASK.split_whitespace().filter(|w| w.len() > 6));
    for needle in &forbidden {
        for (what, bytes) in [
            ("the exported bytes", &raw),
            ("the decoded requests", &decoded),
        ] {
            assert!(
                !contains(bytes, needle.as_bytes()),
                "{needle:?} appears in {what}"
            );
        }
    }

    // Content capture on: the native trace has the arguments (so it really was on), still without
    // the keys.
    assert!(native.contains(READ_PATH), "native trace: {native}");
    assert!(native.contains("grep -c LEDGER-ROW"));
    assert!(!native.contains(PROVIDER_KEY));
    assert!(!native.contains("ghp_Zq8wLkP3vN5xR7tY9uB2cD4eF6gH8jK0mQ1s"));
}

#[tokio::test]
async fn a_file_change_exports_its_line_counts_and_not_its_path_or_text() {
    let Some(receiver) = Receiver::start(None) else {
        return;
    };
    let server = ScriptedServer::start().await;
    server.push(call(
        "c1",
        "fs_write",
        &json!({"path": WRITTEN_PATH, "text": WRITTEN_TEXT, "expected_revision": null}),
    ));
    server.push(ScriptedResponse::sse(openai::text_answer("written")));
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.command();
    cmd.env("OPENAI_API_KEY", PROVIDER_KEY)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .args([
            "--provider",
            "openai",
            "--model",
            "test-model",
            "--base-url",
        ])
        .arg(server.base_url())
        .args(["run", TASK, "--allow-write"]);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("pablo run finished within 60 s")
        .expect("pablo runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace().join(WRITTEN_PATH)).unwrap(),
        WRITTEN_TEXT
    );
    let spans = receiver.spans();
    let write = one(&spans, "execute_tool fs.write");
    assert_eq!(write.attributes["pablo.tool.decision"], "allow");
    assert_eq!(write.attributes["pablo.tool.lines_added"], 2.0);
    assert_eq!(write.attributes["pablo.tool.lines_removed"], 0.0);
    let added: f64 = receiver
        .points()
        .iter()
        .filter(|(n, a, _)| n == "pablo.lines_changed" && a["type"] == "added")
        .map(|(_, _, v)| *v)
        .sum();
    assert_eq!(added, 2.0);
    let raw = receiver.file("raw.bin");
    for needle in ["reconciled", "Quixote", "reports/", "rows of the"] {
        assert!(
            !contains(&raw, needle.as_bytes()),
            "{needle:?} was exported"
        );
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test]
async fn a_collector_that_never_answers_costs_pablo_run_at_most_the_flush_bound() {
    // A port that accepts connections and never answers them.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::text_answer("fine")));
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.command();
    cmd.env("OPENAI_API_KEY", PROVIDER_KEY)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        // Each export request may wait a minute: only the flush's own bound ends the wait.
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "60000")
        .args([
            "--provider",
            "openai",
            "--model",
            "test-model",
            "--base-url",
        ])
        .arg(server.base_url())
        .args(["run", "say fine"]);
    // A flush that waited for the collector would take the request timeout (60 s) or longer.
    let out = tokio::time::timeout(Duration::from_secs(40), cmd.output())
        .await
        .expect("pablo run is not held by a silent collector")
        .expect("pablo runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("spans were not exported"),
        "the dropped spans are counted and said: {stderr}"
    );
    drop(listener);
}

// ---------------------------------------------------------------- the person's own layers

#[tokio::test]
async fn pablo_variables_and_dash_c_sit_over_the_files_and_under_the_flags_with_their_origins() {
    let sandbox = Sandbox::new();
    sandbox.user_config(
        "model = \"from-file\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\n[options.shell]\n\
         timeout_seconds = 10\nmax_output_chars = 1000\n",
    );
    let mut cmd = sandbox.command();
    cmd.env("PABLO_OPTIONS_SHELL_TIMEOUT_SECONDS", "30")
        .env("PABLO_MODEL", "from-env")
        .env("PABLO_NOT_A_SETTING", "1")
        .env("PABLO_LOG_CONTENT", "0")
        .args([
            "-c",
            "options.shell.max_output_chars=2000",
            "-c",
            "model=from-dash-c",
        ])
        .args([
            "--base-url",
            "http://127.0.0.1:7/v1",
            "config",
            "show",
            "--origin",
        ]);
    let (code, stdout, stderr) = output(cmd).await;
    assert_eq!(code, Some(0), "{stderr}");
    let line = |key: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("{key} ")))
            .unwrap_or_else(|| panic!("no {key} in:\n{stdout}"))
            .to_string()
    };
    let timeout = line("options.shell.timeout_seconds");
    assert!(
        timeout.contains("= 30") && timeout.contains("# PABLO_OPTIONS_SHELL_TIMEOUT_SECONDS"),
        "{timeout}"
    );
    let bytes = line("options.shell.max_output_chars");
    assert!(
        bytes.contains("= 2000") && bytes.contains("# -c options.shell.max_output_chars=2000"),
        "{bytes}"
    );
    // -c and the variables are one layer, -c written last.
    let model = line("model");
    assert!(model.contains("\"from-dash-c\""), "{model}");
    // A flag is above both.
    let base = line("base_url");
    assert!(
        base.contains("127.0.0.1:7") && base.contains("--base-url"),
        "{base}"
    );
    // The unknown variable is said once; the known non-config ones not at all.
    assert_eq!(stderr.matches("PABLO_NOT_A_SETTING").count(), 1, "{stderr}");
    assert!(!stderr.contains("PABLO_LOG_CONTENT"), "{stderr}");

    // Validated like the file: a refusal names the variable.
    let mut cmd = sandbox.command();
    cmd.env("PABLO_OPTIONS_SHELL_TIMEOUT_SECONDS", "soon")
        .args(["config", "show"]);
    let (code, _, stderr) = output(cmd).await;
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains("PABLO_OPTIONS_SHELL_TIMEOUT_SECONDS")
            && stderr.contains("options.shell.timeout_seconds"),
        "{stderr}"
    );
    let mut cmd = sandbox.command();
    cmd.args(["-c", "options.shell.no_such_key=1", "config", "show"]);
    let (code, _, stderr) = output(cmd).await;
    assert_ne!(code, Some(0));
    assert!(
        stderr.contains("-c options.shell.no_such_key=1"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_pablo_variable_reaches_a_plain_pablo_run() {
    // The shell timeout from the environment alone ends a command that would run for a minute.
    let server = ScriptedServer::start().await;
    server.push(call("c1", "shell_run", &json!({"command": "sleep 60"})));
    server.push(ScriptedResponse::sse(openai::text_answer("stopped")));
    let sandbox = Sandbox::new();
    sandbox.user_config(&format!(
        "provider = \"openai\"\nbase_url = \"{}\"\nmodel = \"test-model\"\n",
        server.base_url()
    ));
    let mut cmd = sandbox.command();
    cmd.env("OPENAI_API_KEY", PROVIDER_KEY)
        .env("PABLO_OPTIONS_SHELL_TIMEOUT_SECONDS", "1")
        .args(["run", "--auto-approve", "wait a minute"]);
    let (code, _, stderr) = output(cmd).await;
    assert_eq!(code, Some(0), "{stderr}");
    let second = server.requests()[1].json();
    let result = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .unwrap();
    assert!(
        result.contains("timed_out") || result.contains("timeout"),
        "{result}"
    );
}

#[tokio::test]
async fn pablo_stats_counts_sessions_tokens_cost_and_decisions_from_the_journals() {
    let server = ScriptedServer::start().await;
    server.push(call("c1", "shell_run", &json!({ "command": COMMAND })));
    server.push(call("c2", "shell_run", &json!({ "command": TOUCH })));
    server.push(ScriptedResponse::sse(
        openai::Stream::new()
            .text(&["done"])
            .finish("stop")
            .usage(1200, 30)
            .done(),
    ));
    let sandbox = Sandbox::new();
    let ws = sandbox.workspace();
    std::fs::create_dir_all(ws.join("private")).unwrap();
    std::fs::write(ws.join(READ_PATH), FILE_TEXT).unwrap();
    sandbox.user_config(&format!(
        "provider = \"openai\"\nbase_url = \"{}\"\n\n[model]\nname = \"test-model\"\n\n\
         [model.prices]\ninput = 3.0\noutput = 15.0\n",
        server.base_url()
    ));
    let mut cmd = sandbox.command();
    cmd.env("OPENAI_API_KEY", PROVIDER_KEY).args(["run", TASK]);
    let (code, _, stderr) = output(cmd).await;
    assert_eq!(code, Some(0), "{stderr}");

    let mut cmd = sandbox.command();
    cmd.args(["stats", "--since", "7d", "--json"]);
    let (code, stdout, stderr) = output(cmd).await;
    assert_eq!(code, Some(0), "{stderr}");
    let stats: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(stats["sessions"], 1, "{stats}");
    assert_eq!(stats["turns"], 1, "{stats}");
    let model = &stats["models"][0];
    assert_eq!(model["model"], "test-model", "{stats}");
    assert_eq!(model["calls"], 3, "{stats}");
    assert_eq!(model["input_tokens"], 2 * 1000 + 1200, "{stats}");
    assert_eq!(model["output_tokens"], 2 * 50 + 30, "{stats}");
    let cost = model["cost_usd"].as_f64().unwrap();
    let expected = (3200.0 * 3.0 + 130.0 * 15.0) / 1e6;
    assert!((cost - expected).abs() < 1e-9, "{cost} != {expected}");
    assert_eq!(stats["tool_calls"]["allowed"], 1, "{stats}");
    assert_eq!(stats["tool_calls"]["asked"], 1, "{stats}");

    let mut cmd = sandbox.command();
    cmd.arg("stats");
    let (code, stdout, stderr) = output(cmd).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("sessions 1"), "{stdout}");
    assert!(stdout.contains("test-model"), "{stdout}");

    let mut cmd = sandbox.command();
    cmd.args(["stats", "--since", "yesterday-ish"]);
    let (code, _, stderr) = output(cmd).await;
    assert_ne!(code, Some(0));
    assert!(stderr.contains("yesterday-ish"), "{stderr}");
}
