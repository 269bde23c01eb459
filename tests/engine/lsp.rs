//! Integration tests: language servers (docs/lsp.md), against pyright from npm and ruff from
//! PyPI (installed under tests/lsp_servers by .ci/run).
//!
//! The hub is driven directly where a test needs to look at the server's process (none may
//! outlive its session) or time its answers; everything else goes through the real `pablo`
//! binary against a scripted provider on 127.0.0.1.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use pablo::config::LspServerEntry;
use pablo::protocol::{PreviewDiagnostics, Severity};
use pablo_lsp::{LspHub, LspSetup};

use crate::support::lsp::{pyright_or_skip, pyright_table, ruff_or_skip, ruff_table};

/// A hub over `workspace` with the servers of `toml` (`[lsp.NAME]` tables).
fn hub(workspace: &Path, toml: &str) -> Arc<LspHub> {
    let entries = LspServerEntry::from_config_text(toml, Path::new("test.toml")).unwrap();
    let setup = LspSetup {
        entries,
        env: vec![
            ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
            ("HOME".into(), workspace.join(".home").display().to_string()),
        ],
        sandbox: Default::default(),
        log_dir: workspace.join(".logs"),
        project_trusted: true,
    };
    Arc::new(LspHub::new(&workspace.canonicalize().unwrap(), setup))
}

const GOOD: &str =
    "def greet(name: str) -> str:\n    return \"hi \" + name\n\n\nprint(greet(\"x\"))\n";
const BAD: &str = "def greet(name: str) -> str:\n    return \"hi \" + name\n\n\nprint(greet(42))\n";

fn ready(d: PreviewDiagnostics) -> pablo::protocol::DiagnosticsDelta {
    match d {
        PreviewDiagnostics::Ready(r) => r,
        other => panic!("no answer: {other:?}"),
    }
}

#[tokio::test]
async fn pyright_reports_the_type_error_an_edit_introduces_and_the_fix_that_removes_it() {
    let Some((node, script)) = pyright_or_skip("pyright_reports_…") else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("app.py"), GOOD).unwrap();
    let hub = hub(ws.path(), &pyright_table(&node, &script, 30_000));
    let r = ready(hub.check_change("app.py", Some(GOOD), BAD).await);
    assert_eq!(r.servers, ["pyright"]);
    assert_eq!(r.introduced.len(), 1, "{r:?}");
    let e = &r.introduced[0];
    assert_eq!((e.line, e.severity), (5, Severity::Error), "{e:?}");
    assert!(e.message.contains("Literal[42]"), "{e:?}");
    assert_eq!(r.summary(), "introduces 1 error");
    // The file on disk was not touched: the server had the text as an unsaved version.
    assert_eq!(
        std::fs::read_to_string(ws.path().join("app.py")).unwrap(),
        GOOD
    );
    // The other way round, the same error is fixed.
    let r = ready(hub.check_change("app.py", Some(BAD), GOOD).await);
    assert!(r.introduced.is_empty(), "{r:?}");
    assert_eq!(r.summary(), "fixes 1");
    // After a commit, the file's own diagnostics list the error.
    let after = hub
        .file_diagnostics("app.py", BAD, Duration::from_secs(30))
        .await;
    assert_eq!(after.diagnostics.len(), 1, "{after:?}");
    assert_eq!(after.diagnostics[0].source.as_deref(), Some("Pyright"));
}

#[tokio::test]
async fn ruff_server_reports_an_unused_import_beside_pyright() {
    let (Some((node, script)), Some(ruff)) = (
        pyright_or_skip("ruff_server_reports_…"),
        ruff_or_skip("ruff_server_reports_…"),
    ) else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("m.py"), GOOD).unwrap();
    let toml = format!(
        "{}{}",
        pyright_table(&node, &script, 30_000),
        ruff_table(&ruff, 30_000)
    );
    let hub = hub(ws.path(), &toml);
    let new = format!("import os\n{GOOD}");
    let r = ready(hub.check_change("m.py", Some(GOOD), &new).await);
    assert_eq!(r.servers, ["pyright", "ruff"], "{r:?}");
    assert!(
        r.introduced
            .iter()
            .any(|d| d.source.as_deref() == Some("Ruff") && d.code.as_deref() == Some("F401")),
        "{r:?}"
    );
}

// ------------------------------------------------------------ through the agent loop

mod agent_loop {
    use super::{hub, pyright_or_skip, pyright_table};
    use std::path::{Path, PathBuf};
    use std::sync::Arc;
    use std::time::Duration;

    use pablo::config::{Dirs, Layers};
    use pablo::core::ApprovalMode;
    use pablo::model::scripted::ScriptedModel;
    use pablo::policy::{CliFlags, PolicyEngine};
    use pablo::protocol::{
        AgentHandle, ApprovalAnswer, Event, Op, PreviewDiagnostics, ToolOutcome,
    };
    use pablo::workspace::{Workspace, revision_of};
    use pablo_agent::{self, AgentSetup, Limits};
    use pablo_lsp::LspHub;
    use pablo_tools::{Catalog, Host, register_filesystem};
    use serde_json::{Value, json};

    /// A session over `ws` whose host has `lsp`, asking the person (this test) on every edit.
    pub(super) fn session(ws: &Path, state: &Path, lsp: Arc<LspHub>, script: &str) -> AgentHandle {
        let dirs = Dirs {
            config: state.join("config"),
            data: state.join("data"),
            state: state.join("state"),
        };
        let policy = Arc::new(
            PolicyEngine::build(
                ws,
                &dirs,
                &Layers::default(),
                pablo::config::Trust::UNTRUSTED,
                None,
                CliFlags::default(),
            )
            .unwrap(),
        );
        let workspace = Arc::new(Workspace::open(ws).unwrap());
        let mut catalog = Catalog::new();
        register_filesystem(&mut catalog, &workspace, true).unwrap();
        catalog
            .register(Arc::new(pablo_tools::lsp_query::LspQuery::new(
                workspace.clone(),
            )))
            .unwrap();
        let host = Host::new(workspace, state.join("session"), &Default::default()).with_lsp(lsp);
        pablo_agent::spawn(AgentSetup {
            mode: Default::default(),
            model_switcher: None,
            isolator: None,
            hooks: pablo_hooks::Hooks::none(),
            session_id: "lsp".into(),
            model: Arc::new(ScriptedModel::from_json(script).unwrap()),
            catalog,
            policy,
            host: Arc::new(host),
            limits: Limits::default(),
            approvals: ApprovalMode::Interactive,
            system_prompt: String::new(),
            history: Vec::new(),
            recorder: None,
            checkpoints: None,
        })
    }

    pub(super) async fn next_matching(h: &mut AgentHandle, want: impl Fn(&Event) -> bool) -> Event {
        loop {
            let e = tokio::time::timeout(Duration::from_secs(60), h.events.recv())
                .await
                .expect("agent stalled")
                .expect("agent ended early");
            if want(&e) {
                return e;
            }
        }
    }

    /// The next diagnostics of the prompt that are not `checking`.
    async fn answered(h: &mut AgentHandle) -> (Option<Vec<usize>>, PreviewDiagnostics) {
        let e = next_matching(h, |e| {
            matches!(e, Event::PreviewDiagnostics { diagnostics, .. }
                if !matches!(diagnostics, PreviewDiagnostics::Checking { .. }))
        })
        .await;
        let Event::PreviewDiagnostics {
            hunks, diagnostics, ..
        } = e
        else {
            unreachable!()
        };
        (hunks, diagnostics)
    }

    fn script(calls: Value) -> String {
        json!({
            "model": "scripted",
            "start": "act",
            "after_end": "nothing more",
            "steps": {
                "act": {"text": "acting", "calls": calls, "next": "done"},
                "done": {"text": "finished"}
            }
        })
        .to_string()
    }

    fn old_text() -> String {
        let mut s =
            String::from("# tools\ndef greet(name: str) -> str:\n    return \"hi \" + name\n");
        for i in 0..12 {
            s.push_str(&format!("value_{i} = {i}\n"));
        }
        s.push_str("print(greet(\"x\"))\n");
        s
    }

    #[tokio::test]
    async fn the_prompt_shows_the_error_an_edit_introduces_a_hunk_subset_clears_it_and_the_result_lists_it()
     {
        let Some((node, script_js)) = pyright_or_skip("the_prompt_shows_…") else {
            return;
        };
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let old = old_text();
        std::fs::write(ws.join("app.py"), &old).unwrap();
        // Two hunks: a comment at the top (harmless), the call at the bottom (a type error).
        let new = old
            .replace("# tools\n", "# tools, greeted\n")
            .replace("greet(\"x\")", "greet(42)");
        let calls = json!([{"tool": "fs_write", "arguments": {
            "path": "app.py", "text": new, "expected_revision": revision_of(old.as_bytes())}}]);
        let hub = hub(&ws, &pyright_table(&node, &script_js, 30_000));
        let mut h = session(&ws, &tmp.path().join("state"), hub, &script(calls));
        h.ops.send(Op::user_turn("greet 42")).unwrap();
        let ask = next_matching(&mut h, |e| matches!(e, Event::ApprovalRequest { .. })).await;
        let Event::ApprovalRequest { call_id, .. } = ask else {
            unreachable!()
        };
        let checking =
            next_matching(&mut h, |e| matches!(e, Event::PreviewDiagnostics { .. })).await;
        assert!(
            matches!(&checking, Event::PreviewDiagnostics { diagnostics: PreviewDiagnostics::Checking { servers }, hunks: None, .. } if servers == &["pyright"]),
            "{checking:?}"
        );
        let (hunks, whole) = answered(&mut h).await;
        assert_eq!(hunks, None);
        let PreviewDiagnostics::Ready(r) = whole else {
            panic!("{whole:?}")
        };
        assert_eq!(r.summary(), "introduces 1 error", "{r:?}");
        assert_eq!(r.introduced[0].line, 16, "{r:?}");
        // Nothing was written while the servers looked at the new text.
        assert_eq!(std::fs::read_to_string(ws.join("app.py")).unwrap(), old);

        // Only the harmless hunk: nothing introduced.
        h.ops
            .send(Op::CheckHunks {
                call_id: call_id.clone(),
                hunks: vec![0],
            })
            .unwrap();
        let (hunks, subset) = answered(&mut h).await;
        assert_eq!(hunks, Some(vec![0]));
        let PreviewDiagnostics::Ready(r) = subset else {
            panic!("{subset:?}")
        };
        assert!(r.introduced.is_empty(), "{r:?}");
        assert_eq!(r.summary(), "no new errors or warnings");

        // Approved whole: the result the model reads lists the error at its line.
        h.ops
            .send(Op::Approval {
                call_id,
                answer: ApprovalAnswer::AllowOnce,
            })
            .unwrap();
        let end = next_matching(&mut h, |e| matches!(e, Event::ToolCallEnd { .. })).await;
        let Event::ToolCallEnd { result, .. } = end else {
            unreachable!()
        };
        let ToolOutcome::Ok { data, .. } = &result else {
            panic!("{result:?}")
        };
        assert_eq!(data["committed"], true, "{data}");
        let d = &data["diagnostics"][0];
        assert_eq!(d["line"], 16, "{data}");
        assert_eq!(d["severity"], "error", "{data}");
        assert_eq!(d["source"], "Pyright", "{data}");
        assert!(
            d["message"].as_str().unwrap().contains("Literal[42]"),
            "{data}"
        );
        assert_eq!(data["diagnostics_from"], json!(["pyright"]), "{data}");
        h.ops.send(Op::Shutdown).unwrap();
    }

    #[tokio::test]
    async fn lsp_query_finds_a_definition_and_its_references_across_two_files() {
        let Some((node, script_js)) = pyright_or_skip("lsp_query_finds_…") else {
            return;
        };
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(
            ws.join("helpers.py"),
            "def helper(x: int) -> int:\n    return x + 1\n",
        )
        .unwrap();
        std::fs::write(
            ws.join("main.py"),
            "from helpers import helper\n\nprint(helper(1))\n",
        )
        .unwrap();
        let calls = json!([
            {"tool": "lsp_query", "arguments": {"operation": "definition", "path": "main.py", "line": 3, "symbol": "helper"}},
            {"tool": "lsp_query", "arguments": {"operation": "references", "path": "helpers.py", "symbol": "helper"}}
        ]);
        let hub = hub(&ws, &pyright_table(&node, &script_js, 30_000));
        let mut h = session(&ws, &tmp.path().join("state"), hub, &script(calls));
        h.ops.send(Op::user_turn("where is helper")).unwrap();
        let mut results = Vec::new();
        while results.len() < 2 {
            if let Event::ToolCallEnd { result, .. } =
                next_matching(&mut h, |e| matches!(e, Event::ToolCallEnd { .. })).await
            {
                results.push(result.to_json());
            }
        }
        let def = &results[0]["data"]["places"];
        assert_eq!(def[0]["path"], "helpers.py", "{}", results[0]);
        assert_eq!(def[0]["line"], 1, "{}", results[0]);
        assert!(
            def[0]["text"].as_str().unwrap().starts_with("def helper"),
            "{}",
            results[0]
        );
        let refs: Vec<(String, u64)> = results[1]["data"]["places"]
            .as_array()
            .unwrap_or_else(|| panic!("{}", results[1]))
            .iter()
            .map(|p| {
                (
                    p["path"].as_str().unwrap().to_string(),
                    p["line"].as_u64().unwrap(),
                )
            })
            .collect();
        for want in [("helpers.py", 1), ("main.py", 1), ("main.py", 3)] {
            assert!(
                refs.contains(&(want.0.to_string(), want.1)),
                "{want:?} not in {refs:?}"
            );
        }
        h.ops.send(Op::Shutdown).unwrap();
    }

    #[tokio::test]
    async fn a_hanging_server_leaves_the_prompt_answerable_and_says_so() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("a.py"), "x = 1\n").unwrap();
        // Reads everything and never answers.
        let toml = "[lsp.mute]\ncommand = \"sh\"\nargs = [\"-c\", \"cat >/dev/null\"]\n\
                    filetypes = [\"python\"]\nstartup_timeout_seconds = 1\n";
        let hub = hub(&ws, toml);
        let calls = json!([{"tool": "fs_write", "arguments": {
            "path": "a.py", "text": "x = 2\n", "expected_revision": revision_of(b"x = 1\n")}}]);
        let mut h = session(&ws, &tmp.path().join("state"), hub, &script(calls));
        h.ops.send(Op::user_turn("change x")).unwrap();
        let Event::ApprovalRequest { call_id, .. } =
            next_matching(&mut h, |e| matches!(e, Event::ApprovalRequest { .. })).await
        else {
            unreachable!()
        };
        let (_, d) = answered(&mut h).await;
        let PreviewDiagnostics::Unavailable { reason } = d else {
            panic!("{d:?}")
        };
        assert!(
            reason.contains("mute") && reason.contains("initialize"),
            "{reason}"
        );
        h.ops
            .send(Op::Approval {
                call_id,
                answer: ApprovalAnswer::AllowOnce,
            })
            .unwrap();
        let Event::ToolCallEnd { result, .. } =
            next_matching(&mut h, |e| matches!(e, Event::ToolCallEnd { .. })).await
        else {
            unreachable!()
        };
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(std::fs::read_to_string(ws.join("a.py")).unwrap(), "x = 2\n");
        h.ops.send(Op::Shutdown).unwrap();
        let _ = PathBuf::new();
    }

    #[tokio::test]
    async fn lsp_query_refuses_with_lsp_unavailable_when_nothing_can_answer_and_changes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("a.py"), "x = 1\n").unwrap();
        // A server that never answers: the tool is offered, but no question gets an answer.
        let toml = "[lsp.mute]\ncommand = \"sh\"\nargs = [\"-c\", \"cat >/dev/null\"]\n\
                    filetypes = [\"python\"]\nstartup_timeout_seconds = 1\n";
        let calls = json!([
            {"tool": "lsp_query", "arguments": {"operation": "diagnostics"}},
            {"tool": "lsp_query", "arguments": {"operation": "definition", "symbol": "nowhere_defined"}}
        ]);
        let mut h = session(
            &ws,
            &tmp.path().join("state"),
            hub(&ws, toml),
            &script(calls),
        );
        h.ops.send(Op::user_turn("ask the server")).unwrap();
        for want in ["give a path", "mute could not start"] {
            let Event::ToolCallEnd { result, .. } =
                next_matching(&mut h, |e| matches!(e, Event::ToolCallEnd { .. })).await
            else {
                unreachable!()
            };
            let json = result.to_json();
            assert_eq!(json["error"]["code"], "lsp_unavailable", "{json}");
            assert!(
                json["error"]["message"].as_str().unwrap().contains(want),
                "{json}"
            );
        }
        assert_eq!(std::fs::read_to_string(ws.join("a.py")).unwrap(), "x = 1\n");
        h.ops.send(Op::Shutdown).unwrap();
    }
}

#[tokio::test]
async fn a_server_that_crashes_at_start_is_named_and_not_started_again() {
    let ws = tempfile::tempdir().unwrap();
    let count = ws.path().join("starts");
    // Dies at once, counting its starts.
    let toml = format!(
        "[lsp.crashy]\ncommand = \"sh\"\nargs = [\"-c\", \"echo x >> {}; exit 3\"]\n\
         filetypes = [\"python\"]\nstartup_timeout_seconds = 5\n",
        count.display()
    );
    let hub = hub(ws.path(), &toml);
    let d = hub.check_change("a.py", Some("x = 1\n"), "x = 2\n").await;
    let PreviewDiagnostics::Unavailable { reason } = d else {
        panic!("{d:?}")
    };
    assert!(reason.contains("crashy could not start"), "{reason}");
    // A server that never started is not tried again in this session.
    let again = hub.check_change("a.py", Some("x = 1\n"), "x = 3\n").await;
    assert!(matches!(again, PreviewDiagnostics::Unavailable { .. }));
    let starts = std::fs::read_to_string(&count).unwrap();
    assert_eq!(starts.lines().count(), 1, "{starts}");
}

#[tokio::test]
async fn no_server_process_outlives_its_session() {
    let Some((node, script)) = pyright_or_skip("no_server_process_outlives_…") else {
        return;
    };
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("app.py"), GOOD).unwrap();
    let mark = format!("pablo-lsp-test-{}", std::process::id());
    let toml = format!(
        "{}env = {{ PABLO_TEST_MARK = \"{mark}\" }}\n",
        pyright_table(&node, &script, 30_000)
    );
    let hub = hub(ws.path(), &toml);
    let r = hub.check_change("app.py", Some(GOOD), BAD).await;
    assert!(matches!(r, PreviewDiagnostics::Ready(_)), "{r:?}");
    assert!(
        !marked_processes(&mark).is_empty(),
        "the server is not running"
    );
    drop(hub);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !marked_processes(&mark).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        marked_processes(&mark).is_empty(),
        "still running: {:?}",
        marked_processes(&mark)
    );
}

/// Processes (not zombies) whose environment holds `mark`.
fn marked_processes(mark: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let environ = std::fs::read(e.path().join("environ")).unwrap_or_default();
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'));
        if !zombie && environ.windows(mark.len()).any(|w| w == mark.as_bytes()) {
            out.push(pid);
        }
    }
    out
}

/// A language server in Python that answers `initialize`, then exits at the first document it
/// is shown, counting its starts in `count`.
const DIES_AT_FIRST_DOCUMENT: [&str; 2] = [
    "import json, sys\nopen(sys.argv[1], \"a\").write(\"start\\n\")\n",
    "    elif msg.get(\"method\") == \"textDocument/didOpen\":\n        sys.exit(7)\n",
];

/// A fake language server in Python: `setup` runs first, then every framed message is read and
/// `initialize` answered with no capabilities; `more` continues that `if` (`msg` in scope).
fn fake_server([setup, more]: [&str; 2]) -> String {
    format!(
        "{}{setup}{FRAMED_LOOP}{more}",
        crate::support::lsp::PY_FRAMING
    )
}

/// The loop of [`fake_server`].
const FRAMED_LOOP: &str = r#"while True:
    msg = read_message()
    if msg.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"capabilities": {}}})
"#;

#[tokio::test]
async fn a_server_that_keeps_dying_is_started_again_three_times_then_named() {
    let ws = tempfile::tempdir().unwrap();
    let script = ws.path().join("server.py");
    std::fs::write(&script, fake_server(DIES_AT_FIRST_DOCUMENT)).unwrap();
    let count = ws.path().join("starts");
    let python = crate::support::lsp::system_python();
    let toml = format!(
        "[lsp.fragile]\ncommand = \"{python}\"\nargs = [\"{}\", \"{}\"]\n\
         filetypes = [\"python\"]\nwait_ms = 5000\n",
        script.display(),
        count.display()
    );
    let hub = hub(ws.path(), &toml);
    let mut reasons = Vec::new();
    for i in 0..6 {
        let d = hub
            .check_change("a.py", Some("x = 1\n"), &format!("x = {i}\n"))
            .await;
        let PreviewDiagnostics::Unavailable { reason } = d else {
            panic!("{d:?}")
        };
        reasons.push(reason);
    }
    assert!(reasons[0].contains("fragile exited"), "{reasons:?}");
    let last = reasons.last().unwrap();
    assert!(last.contains("not started again"), "{reasons:?}");
    // The first start and three more; none after that.
    let starts = std::fs::read_to_string(&count).unwrap();
    assert_eq!(starts.lines().count(), 4, "{starts}");
}

/// A server in Python that, before answering `initialize`, tries to write `argv[2]` and to
/// connect to 127.0.0.1:`argv[3]`, and records what happened in `argv[1]` (in the workspace).
const PROBES_ITS_SANDBOX: [&str; 2] = [
    r#"
import json, socket, sys
report = []
try:
    open(sys.argv[2], "w").write("escaped")
    report.append("wrote")
except OSError:
    report.append("write refused")
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[3])), timeout=2).close()
    report.append("connected")
except OSError:
    report.append("connect refused")
open(sys.argv[1], "w").write(",".join(report))
"#,
    "",
];

#[tokio::test]
async fn a_server_runs_in_the_command_sandbox_without_the_network_or_writes_outside_the_workspace()
{
    let ws = tempfile::tempdir().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    // Outside the workspace and every writable root (the temporary directories, the caches), even
    // in a clone under /tmp.
    let outside = super::sandbox::outside_base().join("lsp-sandbox-probe");
    std::fs::create_dir_all(&outside).unwrap();
    let forbidden = outside.join(format!("escaped-{}", std::process::id()));
    let _ = std::fs::remove_file(&forbidden);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::fs::write(ws_path.join("server.py"), fake_server(PROBES_ITS_SANDBOX)).unwrap();
    let python = crate::support::lsp::system_python();
    let toml = format!(
        "[lsp.probe]\ncommand = \"{python}\"\nargs = [\"{}\", \"{}\", \"{}\", \"{port}\"]\n\
         filetypes = [\"python\"]\nwait_ms = 300\n",
        ws_path.join("server.py").display(),
        ws_path.join("report").display(),
        forbidden.display(),
    );
    let entries = LspServerEntry::from_config_text(&toml, Path::new("test.toml")).unwrap();
    let setup = LspSetup {
        entries,
        env: vec![("PATH".into(), std::env::var("PATH").unwrap_or_default())],
        sandbox: Default::default(),
        log_dir: ws_path.join(".logs"),
        project_trusted: true,
    };
    let hub = Arc::new(LspHub::new(&ws_path, setup));
    // The probe publishes nothing: the check times out, having started it.
    let _ = hub.check_change("a.py", Some("x = 1\n"), "x = 2\n").await;
    let report = std::fs::read_to_string(ws_path.join("report")).unwrap();
    assert_eq!(report, "write refused,connect refused");
    assert!(!forbidden.exists());
}
