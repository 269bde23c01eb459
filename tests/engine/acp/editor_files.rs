//! A client that advertises `fs`: reads and writes go through its buffers.

use super::*;

/// The tool result the model read for `call_id`, parsed.
fn tool_result(model: &Scripted, call_id: &str) -> Value {
    let requests = model.requests.lock().unwrap();
    for r in requests.iter() {
        for m in &r.messages {
            if let pablo::model::Message::Tool {
                call_id: id,
                content,
            } = m
                && id == call_id
            {
                return serde_json::from_str(content).unwrap();
            }
        }
    }
    panic!("the model never read a result for {call_id}");
}

fn fs_client() -> Value {
    json!({"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": false})
}

fn writer() -> LaunchOptions {
    LaunchOptions {
        allow_write: true,
        ..LaunchOptions::default()
    }
}

/// An in-process server in `env` whose client advertises `capabilities`, with one session.
async fn start(
    env: Env,
    scripts: Vec<Vec<Step>>,
    options: LaunchOptions,
    capabilities: Value,
) -> (InProcess, String) {
    let mut t = InProcess::start_with(env, scripts, None, options);
    t.rpc.initialize_with(capabilities).await;
    let ws = t.env.workspace.clone();
    let session = t.rpc.new_session(&ws).await;
    (t, session)
}

fn end(text: &'static str) -> Vec<Step> {
    vec![Step::Text(text), Step::Done(ModelStopReason::EndTurn)]
}

fn call(id: &'static str, tool: &'static str, args: Value) -> Vec<Step> {
    vec![
        Step::Call(id, tool, args),
        Step::Done(ModelStopReason::ToolUse),
    ]
}

#[tokio::test]
async fn a_read_returns_the_editor_s_unsaved_buffer_not_the_disk() {
    let env = Env::new();
    std::fs::write(env.workspace.join("notes.txt"), "saved on disk\n").unwrap();
    let (mut t, session) = start(
        env,
        vec![
            call("call_r", "fs_read", json!({"path": "notes.txt"})),
            end("read"),
        ],
        LaunchOptions::default(),
        fs_client(),
    )
    .await;
    let id = t.prompt(&session, "read my notes").await;
    let mut answer = |m: &Value| {
        assert_eq!(m["method"], "fs/read_text_file", "{m}");
        Some(json!({"content": "typed but not saved\n"}))
    };
    let r = t.rpc.response_to(id, &mut answer).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let reads = t.rpc.requests_for("fs/read_text_file");
    assert_eq!(reads.len(), 1);
    assert_eq!(reads[0]["params"]["sessionId"], json!(session));
    assert_eq!(
        reads[0]["params"]["path"],
        json!(t.env.workspace.join("notes.txt"))
    );
    let result = tool_result(&t.model, "call_r");
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["data"]["text"], "typed but not saved\n");
    assert_eq!(
        result["data"]["revision"],
        pablo::workspace::revision_of(b"typed but not saved\n")
    );
    t.finish().await;
}

#[tokio::test]
async fn an_edit_of_a_buffer_is_written_through_the_editor_after_allow_once() {
    let env = Env::new();
    std::fs::write(env.workspace.join("main.rs"), "fn main() {}\n").unwrap();
    let buffer = "fn main() {\n    println!(\"draft\");\n}\n";
    let edit = json!({"path": "main.rs", "old_text": "draft", "new_text": "final",
                      "expected_revision": pablo::workspace::revision_of(buffer.as_bytes())});
    let (mut t, session) = start(
        env,
        vec![call("call_e", "fs_edit", edit), end("edited")],
        writer(),
        fs_client(),
    )
    .await;
    let id = t.prompt(&session, "finish the draft").await;
    let written = Arc::new(Mutex::new(Vec::<Value>::new()));
    let seen = written.clone();
    let mut answer = move |m: &Value| match m["method"].as_str().unwrap() {
        "fs/read_text_file" => Some(json!({"content": buffer})),
        "session/request_permission" => allow_once(),
        "fs/write_text_file" => {
            seen.lock().unwrap().push(m["params"].clone());
            Some(json!({}))
        }
        other => panic!("unexpected request {other}"),
    };
    let r = t.rpc.response_to(id, &mut answer).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    // Asked once, showing the buffer's text as the old side of the diff.
    let asks = t.rpc.requests_for("session/request_permission");
    assert_eq!(asks.len(), 1);
    let diff = &asks[0]["params"]["toolCall"]["content"][0];
    assert_eq!(diff["oldText"], buffer, "{diff}");
    // Read for the preview and once more just before the write.
    assert_eq!(t.rpc.requests_for("fs/read_text_file").len(), 2);
    let written = written.lock().unwrap().clone();
    assert_eq!(written.len(), 1);
    assert_eq!(written[0]["path"], json!(t.env.workspace.join("main.rs")));
    assert_eq!(
        written[0]["content"],
        "fn main() {\n    println!(\"final\");\n}\n"
    );
    assert_eq!(written[0]["content"], diff["newText"]);
    // The disk is the editor's business now: pablo did not touch it.
    assert_eq!(
        std::fs::read_to_string(t.env.workspace.join("main.rs")).unwrap(),
        "fn main() {}\n"
    );
    let result = tool_result(&t.model, "call_e");
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["data"]["written_by"], "editor");
    t.finish().await;
}

#[tokio::test]
async fn a_buffer_changed_during_review_is_refused_and_nothing_is_written() {
    let env = Env::new();
    std::fs::write(env.workspace.join("a.txt"), "one\n").unwrap();
    let edit = json!({"path": "a.txt", "old_text": "one", "new_text": "two",
                      "expected_revision": pablo::workspace::revision_of(b"one\n")});
    let (mut t, session) = start(
        env,
        vec![call("call_e", "fs_edit", edit), end("gave up")],
        writer(),
        fs_client(),
    )
    .await;
    let id = t.prompt(&session, "change it").await;
    // The person types while the approval is open: the second read sees a new buffer.
    let mut reads = 0;
    let mut answer = |m: &Value| match m["method"].as_str().unwrap() {
        "fs/read_text_file" => {
            reads += 1;
            let text = if reads == 1 {
                "one\n"
            } else {
                "one\nand more\n"
            };
            Some(json!({"content": text}))
        }
        "session/request_permission" => allow_once(),
        other => panic!("unexpected request {other}"),
    };
    let r = t.rpc.response_to(id, &mut answer).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert!(t.rpc.requests_for("fs/write_text_file").is_empty());
    let result = tool_result(&t.model, "call_e");
    assert_eq!(result["error"]["code"], "revision_mismatch", "{result}");
    assert_eq!(
        result["error"]["data"]["current_revision"],
        pablo::workspace::revision_of(b"one\nand more\n"),
        "{result}"
    );
    assert_eq!(
        std::fs::read_to_string(t.env.workspace.join("a.txt")).unwrap(),
        "one\n"
    );
    t.finish().await;
}

#[tokio::test]
async fn a_link_a_fifo_or_a_credential_is_refused_before_the_editor_is_asked() {
    let env = Env::new();
    let outside = env.xdg.join("secret.txt");
    std::fs::write(&outside, "outside\n").unwrap();
    std::os::unix::fs::symlink(&outside, env.workspace.join("link.txt")).unwrap();
    std::fs::write(env.workspace.join(".env"), "KEY=1\n").unwrap();
    let fifo = std::process::Command::new("mkfifo")
        .arg(env.workspace.join("pipe"))
        .status()
        .unwrap();
    assert!(fifo.success());
    let (mut t, session) = start(
        env,
        vec![
            vec![
                Step::Call("call_l", "fs_read", json!({"path": "link.txt"})),
                Step::Call("call_c", "fs_read", json!({"path": ".env"})),
                Step::Call("call_m", "fs_read", json!({"path": "missing.txt"})),
                Step::Call("call_f", "fs_read", json!({"path": "pipe"})),
                Step::Done(ModelStopReason::ToolUse),
            ],
            end("refused"),
        ],
        LaunchOptions::default(),
        fs_client(),
    )
    .await;
    let id = t.prompt(&session, "read them").await;
    let mut answer = |m: &Value| panic!("the editor was asked: {m}");
    let r = t.rpc.response_to(id, &mut answer).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert!(t.rpc.agent_requests.is_empty());
    let link = tool_result(&t.model, "call_l");
    assert_eq!(link["error"]["code"], "path_refused", "{link}");
    let cred = tool_result(&t.model, "call_c");
    assert_eq!(cred["error"]["code"], "file_refused", "{cred}");
    let missing = tool_result(&t.model, "call_m");
    assert_eq!(missing["error"]["code"], "not_found", "{missing}");
    let fifo = tool_result(&t.model, "call_f");
    assert_eq!(fifo["error"]["code"], "special_file", "{fifo}");
    t.finish().await;
}

#[tokio::test]
async fn a_new_file_is_created_on_disk_not_through_the_editor() {
    let (mut t, session) = start(
        Env::new(),
        vec![
            call(
                "call_w",
                "fs_write",
                json!({"path": "src/new.rs", "text": "// new\n", "expected_revision": null}),
            ),
            end("created"),
        ],
        writer(),
        fs_client(),
    )
    .await;
    let id = t.prompt(&session, "create it").await;
    let mut answer = |m: &Value| {
        assert_eq!(m["method"], "session/request_permission", "{m}");
        allow_once()
    };
    let r = t.rpc.response_to(id, &mut answer).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(
        std::fs::read_to_string(t.env.workspace.join("src/new.rs")).unwrap(),
        "// new\n"
    );
    assert!(t.rpc.requests_for("fs/write_text_file").is_empty());
    assert!(t.rpc.requests_for("fs/read_text_file").is_empty());
    t.finish().await;
}

#[tokio::test]
async fn editor_errors_reach_the_model_with_their_codes_and_change_nothing() {
    let env = Env::new();
    std::fs::write(env.workspace.join("a.txt"), "one\n").unwrap();
    let edit = json!({"path": "a.txt", "old_text": "one", "new_text": "two",
                      "expected_revision": pablo::workspace::revision_of(b"one\n")});
    let (mut t, session) = start(
        env,
        vec![
            call("call_r", "fs_read", json!({"path": "a.txt"})),
            call("call_e", "fs_edit", edit),
            end("failed"),
        ],
        writer(),
        fs_client(),
    )
    .await;
    let id = t.prompt(&session, "try").await;
    let mut reads = 0;
    let mut answer = |m: &Value| match m["method"].as_str().unwrap() {
        "fs/read_text_file" => {
            reads += 1;
            // The first read (fs.read) fails; the edit's reads succeed.
            if reads == 1 {
                Some(rpc_error("buffer is being reloaded"))
            } else {
                Some(json!({"content": "one\n"}))
            }
        }
        "session/request_permission" => allow_once(),
        "fs/write_text_file" => Some(rpc_error("the file is read-only")),
        other => panic!("unexpected request {other}"),
    };
    let r = t.rpc.response_to(id, &mut answer).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let read = tool_result(&t.model, "call_r");
    assert_eq!(read["error"]["code"], "editor_read_failed", "{read}");
    assert!(
        read["error"]["message"]
            .as_str()
            .unwrap()
            .contains("buffer is being reloaded"),
        "{read}"
    );
    let edit = tool_result(&t.model, "call_e");
    assert_eq!(edit["error"]["code"], "editor_write_failed", "{edit}");
    assert_eq!(
        std::fs::read_to_string(t.env.workspace.join("a.txt")).unwrap(),
        "one\n"
    );
    t.finish().await;
}

/// An editor that never answers a read does not hold an interrupted turn: the read is
/// abandoned with `cancelled` and the prompt answers `cancelled`.
#[tokio::test]
async fn a_cancel_while_the_editor_has_not_answered_a_read_ends_the_turn() {
    let env = Env::new();
    std::fs::write(env.workspace.join("a.txt"), "text\n").unwrap();
    let (mut t, session) = start(
        env,
        vec![call("call_r", "fs_read", json!({"path": "a.txt"}))],
        LaunchOptions::default(),
        fs_client(),
    )
    .await;
    let id = t.prompt(&session, "read").await;
    t.rpc
        .until(&mut |m| m["method"] == "fs/read_text_file", &mut no_answer)
        .await;
    t.rpc
        .notify("session/cancel", json!({"sessionId": session}))
        .await;
    let r = t.rpc.response_to(id, &mut no_answer).await;
    assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
    let done = t
        .rpc
        .updates
        .iter()
        .map(|u| &u["update"])
        .rfind(|u| u["toolCallId"] == "call_r" && u.get("rawOutput").is_some())
        .cloned()
        .unwrap_or_else(|| panic!("no final update: {:?}", t.rpc.updates));
    assert_eq!(done["rawOutput"]["error"]["code"], "cancelled", "{done}");
    t.finish().await;
}

#[tokio::test]
async fn a_buffer_holding_a_nul_byte_is_refused_as_binary() {
    let env = Env::new();
    std::fs::write(env.workspace.join("a.txt"), "text\n").unwrap();
    let (mut t, session) = start(
        env,
        vec![
            call("call_r", "fs_read", json!({"path": "a.txt"})),
            end("binary"),
        ],
        LaunchOptions::default(),
        fs_client(),
    )
    .await;
    let id = t.prompt(&session, "read").await;
    let mut answer = |_: &Value| Some(json!({"content": "a\u{0}b"}));
    let r = t.rpc.response_to(id, &mut answer).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let read = tool_result(&t.model, "call_r");
    assert_eq!(read["error"]["code"], "binary_content", "{read}");
    t.finish().await;
}

#[tokio::test]
async fn a_client_that_only_reads_keeps_writes_on_disk_with_the_buffer_s_revision() {
    let env = Env::new();
    std::fs::write(env.workspace.join("a.txt"), "one\n").unwrap();
    let edit = json!({"path": "a.txt", "old_text": "one", "new_text": "two",
                      "expected_revision": pablo::workspace::revision_of(b"one\n")});
    let (mut t, session) = start(
        env,
        vec![call("call_e", "fs_edit", edit), end("done")],
        writer(),
        json!({"fs": {"readTextFile": true, "writeTextFile": false}, "terminal": false}),
    )
    .await;
    let id = t.prompt(&session, "edit").await;
    let mut answer = |m: &Value| match m["method"].as_str().unwrap() {
        "fs/read_text_file" => Some(json!({"content": "one\n"})),
        "session/request_permission" => allow_once(),
        other => panic!("unexpected request {other}"),
    };
    let r = t.rpc.response_to(id, &mut answer).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let edit = tool_result(&t.model, "call_e");
    assert_eq!(edit["ok"], true, "{edit}");
    assert_eq!(
        std::fs::read_to_string(t.env.workspace.join("a.txt")).unwrap(),
        "two\n"
    );
    t.finish().await;
}
