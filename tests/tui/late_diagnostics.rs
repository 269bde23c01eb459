//! Issue 44 item 7: a language server slower than its wait (pyright indexing a big file on its
//! first check) still reaches the approval prompt, which fills in when it answers; `/status`
//! lists the language servers and their states. Plain `pablo` (a config file, no flags), a fake
//! server that publishes its diagnostics two seconds after each text.

use serde_json::json;

use crate::support::bin::Sandbox;
use crate::support::http::ScriptedServer;
use crate::support::run::{call, say};

/// A language server in Python (after the shared framing) that answers `initialize` at once and
/// publishes, two seconds after each new text, one error per line holding `undefined_name`.
const SLOW_SERVER: &str = r#"import threading, time
def publish_later(uri, version, text):
    time.sleep(2)
    diags = [{"range": {"start": {"line": i, "character": 0}, "end": {"line": i, "character": 5}},
              "severity": 1, "source": "slowcheck", "message": "undefined_name is not defined"}
             for i, line in enumerate(text.split("\n")) if "undefined_name" in line]
    send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
          "params": {"uri": uri, "version": version, "diagnostics": diags}})
while True:
    msg = read_message()
    method = msg.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"capabilities": {"textDocumentSync": 1}}})
    elif method == "shutdown":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
    elif method == "exit":
        sys.exit(0)
    elif method == "textDocument/didOpen":
        d = msg["params"]["textDocument"]
        threading.Thread(target=publish_later, args=(d["uri"], d["version"], d["text"]), daemon=True).start()
    elif method == "textDocument/didChange":
        d = msg["params"]["textDocument"]
        text = msg["params"]["contentChanges"][-1]["text"]
        threading.Thread(target=publish_later, args=(d["uri"], d["version"], text), daemon=True).start()
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diagnostics_that_arrive_after_the_wait_fill_in_the_open_prompt_and_status_lists_the_server()
 {
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    let script = sandbox.root().join("slowcheck.py");
    std::fs::write(
        &script,
        format!("{}{SLOW_SERVER}", crate::support::lsp::PY_FRAMING),
    )
    .unwrap();
    let python = crate::support::lsp::system_python();
    super::configure_scripted(
        &sandbox,
        &server,
        &format!(
            "[lsp.slowcheck]\ncommand = \"{python}\"\nargs = [\"{}\"]\n\
             filetypes = [\"python\"]\nwait_ms = 300\n",
            script.display()
        ),
    );
    let original = "x = 1\n";
    std::fs::write(sandbox.workspace().join("app.py"), original).unwrap();
    server.push(call(
        "call_edit",
        "fs_write",
        &json!({"path": "app.py", "text": "x = undefined_name\n",
                "expected_revision": crate::support::revision_of(original.as_bytes())}),
    ));
    server.push(say("Done."));
    // A server pablo does not know may run the project's code: it starts in a trusted folder.
    let trust = sandbox
        .command()
        .args(["policy", "trust"])
        .output()
        .await
        .unwrap();
    assert!(trust.status.success(), "{trust:?}");
    let mut t = super::spawn_plain(&sandbox, &[]);
    t.wait_for("Ask pablo to do something");
    t.send("/status\r");
    t.wait_for("slowcheck (not started yet)");
    t.send("break x\r");
    t.wait_for("Apply this change to app.py?");
    // The server misses its 300 ms wait: the prompt says so, and that it keeps waiting…
    t.wait_for("no diagnostics within 300 ms (still waiting for it)");
    // …and fills in when the server answers, while the prompt is still open.
    t.wait_for("diagnostics: introduces 1 error");
    t.wait_for("undefined_name is not defined");
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace().join("app.py")).unwrap(),
        original
    );
    t.send("y");
    t.wait_for("Done.");
    t.wait_for("Ask pablo to do something");
    t.send("/status\r");
    t.wait_for("slowcheck (ready)");
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}
