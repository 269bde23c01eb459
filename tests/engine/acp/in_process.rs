//! The ACP server in-process over a pipe, with a scripted model client: prompts, approvals,
//! cancellation, modes, images, saved sessions and the editor's MCP servers.

use super::*;

#[tokio::test]
async fn a_prompt_streams_text_and_answers_end_turn() {
    let mut t = InProcess::start(
        vec![vec![
            Step::Text("Hel"),
            Step::Text("lo, "),
            Step::Text("editor."),
            Step::Usage(120, 7),
            Step::Done(ModelStopReason::EndTurn),
        ]],
        None,
    );
    let session = t.session().await;
    let id = t.prompt(&session, "say hello").await;
    let r = t.rpc.response_to(id, &mut no_answer).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(t.rpc.message_text(), "Hello, editor.");
    // Every update names the session, and the usage arrived before the answer.
    assert!(
        t.rpc
            .updates
            .iter()
            .all(|u| u["sessionId"] == json!(session))
    );
    let usage = t
        .rpc
        .updates
        .iter()
        .find(|u| u["update"]["sessionUpdate"] == "usage_update")
        .expect("a usage_update");
    assert_eq!(usage["update"]["used"], 127);
    assert_eq!(
        usage["update"]["_meta"]["pablo"]["last"]["inputTokens"],
        120
    );
    // The model saw the prompt as the user's turn.
    let req = t.model.requests.lock().unwrap()[0].clone();
    assert!(format!("{:?}", req.messages).contains("say hello"));
    t.finish().await;
}

#[tokio::test]
async fn reasoning_is_sent_as_agent_thought_chunks_never_as_message_text() {
    let mut t = InProcess::start(
        vec![vec![
            Step::Think("The editor wants "),
            Step::Think("a greeting."),
            Step::Text("Hello."),
            Step::Done(ModelStopReason::EndTurn),
        ]],
        None,
    );
    let session = t.session().await;
    let id = t.prompt(&session, "say hello").await;
    let r = t.rpc.response_to(id, &mut no_answer).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(t.rpc.message_text(), "Hello.");
    let thoughts: String = t
        .rpc
        .updates
        .iter()
        .filter(|u| u["update"]["sessionUpdate"] == "agent_thought_chunk")
        .map(|u| u["update"]["content"]["text"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(thoughts, "The editor wants a greeting.");
    // The thought came before the answer.
    let kinds = t.rpc.update_kinds();
    let first_thought = kinds.iter().position(|k| k == "agent_thought_chunk");
    let first_text = kinds.iter().position(|k| k == "agent_message_chunk");
    assert!(first_thought < first_text, "{kinds:?}");
    t.finish().await;
}

#[tokio::test]
async fn a_tool_call_becomes_tool_call_and_plan_updates() {
    let mut t = InProcess::start(
        vec![
            vec![
                Step::Call("call_1", "update_plan", PLAN_ARGS()),
                Step::Done(ModelStopReason::ToolUse),
            ],
            vec![Step::Text("planned"), Step::Done(ModelStopReason::EndTurn)],
        ],
        None,
    );
    let session = t.session().await;
    let id = t.prompt(&session, "plan it").await;
    let r = t.rpc.response_to(id, &mut no_answer).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let kinds = t.rpc.update_kinds();
    let first_call = kinds.iter().position(|k| k == "tool_call").unwrap();
    let plan = kinds.iter().position(|k| k == "plan").unwrap();
    let last_update = kinds.iter().rposition(|k| k == "tool_call_update").unwrap();
    assert!(first_call < plan && plan < last_update, "{kinds:?}");
    let call = &t.rpc.updates[first_call]["update"];
    assert_eq!(call["toolCallId"], "call_1");
    assert_eq!(call["kind"], "think");
    assert_eq!(call["title"], "Update plan");
    let plan = &t.rpc.updates[plan]["update"];
    assert_eq!(plan["entries"][0]["content"], "read the code");
    assert_eq!(plan["entries"][0]["status"], "completed");
    assert_eq!(plan["entries"][1]["status"], "in_progress");
    let done = &t.rpc.updates[last_update]["update"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["rawOutput"]["ok"], true);
    t.finish().await;
}

#[tokio::test]
async fn an_ask_becomes_a_permission_request_and_allow_once_runs_the_call() {
    let mut t = InProcess::start(
        vec![
            vec![
                Step::Call("call_p", "update_plan", PLAN_ARGS()),
                Step::Done(ModelStopReason::ToolUse),
            ],
            vec![Step::Text("done"), Step::Done(ModelStopReason::EndTurn)],
        ],
        Some("[options.tools]\n\"plan.update\" = \"ask\"\n"),
    );
    let session = t.session().await;
    let id = t.prompt(&session, "plan it").await;
    let mut answer = |m: &Value| {
        assert_eq!(m["method"], "session/request_permission");
        allow_once()
    };
    let r = t.rpc.response_to(id, &mut answer).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(t.rpc.agent_requests.len(), 1);
    let params = &t.rpc.agent_requests[0]["params"];
    assert_eq!(params["sessionId"], json!(session));
    assert_eq!(params["toolCall"]["toolCallId"], "call_p");
    assert_eq!(params["toolCall"]["kind"], "think");
    let ids: Vec<&str> = params["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );
    let kinds: Vec<&str> = params["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );
    // The call ran: the plan arrived and the tool result the model read is a success.
    assert!(t.rpc.update_kinds().contains(&"plan".to_string()));
    let second = t.model.requests.lock().unwrap()[1].clone();
    let tool_msg = format!("{:?}", second.messages.last().unwrap());
    assert!(tool_msg.contains(r#"\"ok\":true"#), "{tool_msg}");
    t.finish().await;
}

#[tokio::test]
async fn a_rejected_call_fails_with_rejected_and_reject_always_is_remembered() {
    let mut t = InProcess::start(
        vec![
            vec![
                Step::Call("call_a", "update_plan", PLAN_ARGS()),
                Step::Done(ModelStopReason::ToolUse),
            ],
            vec![
                Step::Call("call_b", "update_plan", PLAN_ARGS()),
                Step::Done(ModelStopReason::ToolUse),
            ],
            vec![Step::Text("ok"), Step::Done(ModelStopReason::EndTurn)],
        ],
        Some("[options.tools]\n\"plan.update\" = \"ask\"\n"),
    );
    let session = t.session().await;
    let id = t.prompt(&session, "plan twice").await;
    let mut answer =
        |_: &Value| Some(json!({"outcome": {"outcome": "selected", "optionId": "reject_always"}}));
    let r = t.rpc.response_to(id, &mut answer).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    // Asked once; the second call was rejected without asking again.
    assert_eq!(t.rpc.agent_requests.len(), 1);
    let failed: Vec<&Value> = t
        .rpc
        .updates
        .iter()
        .map(|u| &u["update"])
        .filter(|u| u["status"] == "failed")
        .collect();
    assert_eq!(failed.len(), 2, "{:?}", t.rpc.updates);
    for f in failed {
        assert_eq!(f["rawOutput"]["error"]["code"], "rejected");
    }
    assert!(!t.rpc.update_kinds().contains(&"plan".to_string()));
    t.finish().await;
}

#[tokio::test]
async fn cancel_mid_stream_answers_cancelled_not_an_error() {
    let mut t = InProcess::start(
        vec![vec![Step::Text("thinking about it"), Step::Stall]],
        None,
    );
    let session = t.session().await;
    let id = t.prompt(&session, "take your time").await;
    t.rpc
        .until(
            &mut |m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk",
            &mut no_answer,
        )
        .await;
    t.rpc
        .notify("session/cancel", json!({"sessionId": session}))
        .await;
    let r = t.rpc.response_to(id, &mut no_answer).await;
    assert!(r.get("error").is_none(), "{r}");
    assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
    t.finish().await;
}

#[tokio::test]
async fn cancel_during_a_permission_request_answers_cancelled() {
    let mut t = InProcess::start(
        vec![vec![
            Step::Call("call_c", "update_plan", PLAN_ARGS()),
            Step::Done(ModelStopReason::ToolUse),
        ]],
        Some("[options.tools]\n\"plan.update\" = \"ask\"\n"),
    );
    let session = t.session().await;
    let id = t.prompt(&session, "plan").await;
    let req = t
        .rpc
        .until(
            &mut |m| m["method"] == "session/request_permission",
            &mut no_answer,
        )
        .await;
    t.rpc
        .notify("session/cancel", json!({"sessionId": session}))
        .await;
    // The editor answers its open permission request with `cancelled`, as the spec asks.
    t.rpc
        .respond(&req["id"], json!({"outcome": {"outcome": "cancelled"}}))
        .await;
    let r = t.rpc.response_to(id, &mut no_answer).await;
    assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
    assert!(!t.rpc.update_kinds().contains(&"plan".to_string()));
    t.finish().await;
}

#[tokio::test]
async fn a_second_prompt_while_one_runs_is_refused() {
    let mut t = InProcess::start(vec![vec![Step::Text("busy"), Step::Stall]], None);
    let session = t.session().await;
    let first = t.prompt(&session, "one").await;
    let second = t.prompt(&session, "two").await;
    let r = t.rpc.response_to(second, &mut no_answer).await;
    assert_eq!(r["error"]["data"]["code"], "prompt_running", "{r}");
    t.rpc
        .notify("session/cancel", json!({"sessionId": session}))
        .await;
    let r = t.rpc.response_to(first, &mut no_answer).await;
    assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
    // Only the first prompt reached the model.
    assert_eq!(t.model.requests.lock().unwrap().len(), 1);
    t.finish().await;
}

#[tokio::test]
async fn session_modes_are_offered_and_plan_set_by_the_client_refuses_the_next_edit() {
    // With write tools, as `pablo acp` offers them.
    let options = LaunchOptions {
        allow_write: true,
        ..LaunchOptions::default()
    };
    let mut t = InProcess::start_with(
        Env::new(),
        vec![
            vec![
                Step::Call(
                    "call_w",
                    "fs_write",
                    json!({"path": "notes.txt", "text": "hi\n", "expected_revision": null}),
                ),
                Step::Done(ModelStopReason::ToolUse),
            ],
            vec![Step::Text("a plan"), Step::Done(ModelStopReason::EndTurn)],
        ],
        None,
        options,
    );
    t.rpc.initialize().await;
    let ws = t.env.workspace.clone();
    let id = t
        .rpc
        .request("session/new", json!({"cwd": ws, "mcpServers": []}))
        .await;
    let r = t.rpc.response_to(id, &mut no_answer).await;
    let modes = &r["result"]["modes"];
    assert_eq!(modes["currentModeId"], "ask", "{r}");
    let ids: Vec<&str> = modes["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["ask", "auto-edit", "plan"]);
    let session = r["result"]["sessionId"].as_str().unwrap().to_string();

    let before = t.env.snapshot();
    let r = t.rpc.set_mode(&session, "sideways").await;
    assert_eq!(r["error"]["data"]["code"], "unknown_mode", "{r}");
    assert_eq!(t.env.snapshot(), before, "the refused switch changed files");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"sideways\""),
        "{r}"
    );

    let r = t.rpc.set_mode(&session, "plan").await;
    assert!(r["error"].is_null(), "{r}");
    let id = t.prompt(&session, "write the notes").await;
    let r = t.rpc.response_to(id, &mut no_answer).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    // Nothing was asked, nothing was written, and the model read the mode's refusal.
    assert!(t.rpc.requests_for("session/request_permission").is_empty());
    assert!(!t.env.workspace.join("notes.txt").exists());
    let second = t.model.requests.lock().unwrap()[1].clone();
    let tool_msg = format!("{:?}", second.messages.last().unwrap());
    assert!(tool_msg.contains("plan_mode"), "{tool_msg}");
    // The client was told of the switch once.
    let switches: Vec<&Value> = t
        .rpc
        .updates
        .iter()
        .filter(|u| u["update"]["sessionUpdate"] == "current_mode_update")
        .collect();
    assert_eq!(switches.len(), 1, "{switches:?}");
    assert_eq!(switches[0]["update"]["currentModeId"], "plan");
    t.finish().await;
}

#[tokio::test]
async fn image_prompts_are_refused_without_reaching_the_model() {
    let mut t = InProcess::start(Vec::new(), None);
    let session = t.session().await;
    let id = t
        .rpc
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [
                {"type": "image", "data": "AAAA", "mimeType": "image/png"}]}),
        )
        .await;
    let r = t.rpc.response_to(id, &mut no_answer).await;
    assert_eq!(r["error"]["data"]["code"], "unsupported_content", "{r}");
    assert!(t.model.requests.lock().unwrap().is_empty());
    t.finish().await;
}

const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

fn image_prompt(session: &str) -> Value {
    json!({"sessionId": session, "prompt": [
        {"type": "text", "text": "what is this?"},
        {"type": "image", "data": PNG_B64, "mimeType": "image/png", "uri": "file:///ws/dot.png"}]})
}

#[tokio::test]
async fn an_image_prompt_reaches_a_model_that_takes_images_and_initialize_says_so() {
    let mut t = InProcess::start_seeing(vec![vec![
        Step::Text("A dot."),
        Step::Done(ModelStopReason::EndTurn),
    ]]);
    let init = t.rpc.initialize().await;
    assert_eq!(
        init["result"]["agentCapabilities"]["promptCapabilities"]["image"], true,
        "{init}"
    );
    let ws = t.env.workspace.clone();
    let session = t.rpc.new_session(&ws).await;
    let id = t
        .rpc
        .request("session/prompt", image_prompt(&session))
        .await;
    let r = t.rpc.response_to(id, &mut no_answer).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let requests = t.model.requests.lock().unwrap().clone();
    let Some(pablo::model::Message::User { text, images }) = requests[0].messages.last() else {
        panic!("{:?}", requests[0].messages)
    };
    assert!(text.starts_with("what is this?"), "{text}");
    assert!(text.contains("path=\"file:///ws/dot.png\""), "{text}");
    assert_eq!(images.len(), 1);
    assert_eq!(images[0].media_type, "image/png");
    assert_eq!(&*images[0].base64, PNG_B64);
    t.finish().await;
}

#[tokio::test]
async fn an_image_prompt_for_a_model_without_images_is_refused_with_the_engine_code() {
    let mut t = InProcess::start(Vec::new(), None);
    let init = t.rpc.initialize().await;
    assert_eq!(
        init["result"]["agentCapabilities"]["promptCapabilities"]["image"], false,
        "{init}"
    );
    let ws = t.env.workspace.clone();
    let session = t.rpc.new_session(&ws).await;
    let id = t
        .rpc
        .request("session/prompt", image_prompt(&session))
        .await;
    let r = t.rpc.response_to(id, &mut no_answer).await;
    assert_eq!(
        r["error"]["data"]["code"], "image_not_accepted_by_model",
        "{r}"
    );
    let message = r["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("file:///ws/dot.png"), "{message}");
    assert!(t.model.requests.lock().unwrap().is_empty());
    t.finish().await;
}

#[tokio::test]
async fn a_failed_model_call_answers_with_the_engine_error() {
    // No script: the model call fails.
    let mut t = InProcess::start(Vec::new(), None);
    let session = t.session().await;
    let id = t.prompt(&session, "hello?").await;
    let r = t.rpc.response_to(id, &mut no_answer).await;
    assert_eq!(r["error"]["code"], -32603, "{r}");
    assert_eq!(r["error"]["data"]["code"], "model_config", "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no more model calls")
    );
    t.finish().await;
}

#[tokio::test]
async fn a_saved_session_is_replayed_before_load_answers_and_then_continues() {
    let mut t = InProcess::start(
        vec![vec![
            Step::Text("Hello, "),
            Step::Text("editor."),
            Step::Done(ModelStopReason::EndTurn),
        ]],
        None,
    );
    let session = t.session().await;
    let id = t.prompt(&session, "say hello").await;
    let r = t.rpc.response_to(id, &mut no_answer).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let env = t.finish().await;

    // A new connection (the editor restarted) loads it.
    let mut t = InProcess::start_in(
        env,
        vec![vec![
            Step::Text("again"),
            Step::Done(ModelStopReason::EndTurn),
        ]],
        None,
    );
    let init = t.rpc.initialize().await;
    assert_eq!(init["result"]["agentCapabilities"]["loadSession"], true);
    let ws = t.env.workspace.clone();
    let id = t
        .rpc
        .request(
            "session/load",
            json!({"sessionId": session, "cwd": ws, "mcpServers": []}),
        )
        .await;
    let r = t.rpc.response_to(id, &mut no_answer).await;
    assert!(r.get("error").is_none(), "{r}");
    let replayed: Vec<(String, String)> = t
        .rpc
        .updates
        .iter()
        .map(|u| {
            (
                u["update"]["sessionUpdate"].as_str().unwrap().to_string(),
                u["update"]["content"]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect();
    assert_eq!(
        replayed,
        [
            ("user_message_chunk".to_string(), "say hello".to_string()),
            (
                "agent_message_chunk".to_string(),
                "Hello, editor.".to_string()
            ),
        ]
    );
    // The conversation goes on with its history.
    let id = t.prompt(&session, "once more").await;
    let r = t.rpc.response_to(id, &mut no_answer).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let req = t.model.requests.lock().unwrap()[0].clone();
    let history = format!("{:?}", req.messages);
    assert!(history.contains("say hello") && history.contains("Hello, editor."));
    assert!(history.contains("once more"));
    t.finish().await;
}

#[tokio::test]
async fn loading_a_session_into_another_workspace_is_refused_and_replays_nothing() {
    let mut t = InProcess::start(
        vec![vec![Step::Text("hi"), Step::Done(ModelStopReason::EndTurn)]],
        None,
    );
    let session = t.session().await;
    let id = t.prompt(&session, "hello").await;
    t.rpc.response_to(id, &mut no_answer).await;
    let first = t.finish().await;

    let mut t = InProcess::start(Vec::new(), None);
    t.rpc.initialize().await;
    let other = t.env.workspace.clone();
    let before = (first.snapshot(), t.env.snapshot());
    let id = t
        .rpc
        .request(
            "session/load",
            json!({"sessionId": session, "cwd": other, "mcpServers": []}),
        )
        .await;
    let r = t.rpc.response_to(id, &mut no_answer).await;
    assert_eq!(r["error"]["data"]["code"], "workspace_mismatch", "{r}");
    assert!(t.rpc.updates.is_empty());
    assert_eq!((first.snapshot(), t.env.snapshot()), before);
    t.finish().await;
}

#[tokio::test]
async fn loading_an_unknown_or_open_session_is_refused() {
    let mut t = InProcess::start(Vec::new(), None);
    let session = t.session().await;
    let ws = t.env.workspace.clone();
    let id = t
        .rpc
        .request(
            "session/load",
            json!({"sessionId": session, "cwd": ws, "mcpServers": []}),
        )
        .await;
    let r = t.rpc.response_to(id, &mut no_answer).await;
    assert_eq!(r["error"]["data"]["code"], "session_open", "{r}");
    let id = t
        .rpc
        .request(
            "session/load",
            json!({"sessionId": "0190aaaa-0000-7000-8000-000000000000", "cwd": ws, "mcpServers": []}),
        )
        .await;
    let r = t.rpc.response_to(id, &mut no_answer).await;
    assert_eq!(r["error"]["data"]["code"], "session_not_found", "{r}");
    assert!(t.rpc.updates.is_empty());
    t.finish().await;
}

/// `session/new` with server-everything over stdio, as an editor passes it.
async fn session_with_everything(t: &mut InProcess, node: &Path) -> String {
    t.rpc.initialize().await;
    let ws = t.env.workspace.clone();
    let index = crate::support::mcp::reference_server("server-everything");
    let id = t
        .rpc
        .request(
            "session/new",
            json!({"cwd": ws, "mcpServers": [{"name": "everything", "command": node,
                "args": [index, "stdio"], "env": [{"name": "GREETING", "value": "hi"}]}]}),
        )
        .await;
    let r = t.rpc.response_to(id, &mut no_answer).await;
    r["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no session: {r}"))
        .to_string()
}

#[tokio::test]
async fn an_editors_stdio_server_from_session_new_is_called_in_the_turn_after_permission() {
    let Some(node) = crate::support::mcp::node_or_skip("an_editors_stdio_server_…") else {
        return;
    };
    let mut t = InProcess::start(
        vec![
            vec![
                Step::Call(
                    "call_m",
                    "mcp__everything__echo",
                    json!({"message": "from the editor"}),
                ),
                Step::Done(ModelStopReason::ToolUse),
            ],
            vec![Step::Text("echoed"), Step::Done(ModelStopReason::EndTurn)],
        ],
        None,
    );
    let session = session_with_everything(&mut t, &node).await;
    let id = t.prompt(&session, "echo it").await;
    let mut answer = |m: &Value| {
        assert_eq!(m["method"], "session/request_permission");
        allow_once()
    };
    let r = t.rpc.response_to(id, &mut answer).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    // The first model request already offered the server's tools: a turn waits for the
    // editor's servers to start.
    let first = t.model.requests.lock().unwrap()[0].clone();
    assert!(
        first
            .tools
            .iter()
            .any(|t| t.name == "mcp__everything__echo"),
        "{:?}",
        first.tools.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    let params = &t.rpc.agent_requests[0]["params"];
    let title = params["toolCall"]["title"].as_str().unwrap_or_default();
    assert!(title.contains("echo"), "{params}");
    let second = t.model.requests.lock().unwrap()[1].clone();
    let tool_msg = format!("{:?}", second.messages.last().unwrap());
    assert!(tool_msg.contains("from the editor"), "{tool_msg}");
    t.finish().await;
}

#[tokio::test]
async fn cancelling_the_turn_cancels_an_in_flight_mcp_call() {
    let Some(node) = crate::support::mcp::node_or_skip("cancelling_the_turn_…") else {
        return;
    };
    let mut t = InProcess::start(
        vec![vec![
            Step::Call(
                "call_long",
                "mcp__everything__trigger-long-running-operation",
                json!({"duration": 300, "steps": 300}),
            ),
            Step::Done(ModelStopReason::ToolUse),
        ]],
        None,
    );
    let session = session_with_everything(&mut t, &node).await;
    let id = t.prompt(&session, "run the long one").await;
    // Allowed, then running on the server.
    t.rpc
        .until(
            &mut |m| {
                m["params"]["update"]["sessionUpdate"] == "tool_call_update"
                    && m["params"]["update"]["status"] == "in_progress"
            },
            &mut |_| allow_once(),
        )
        .await;
    t.rpc
        .notify("session/cancel", json!({"sessionId": session}))
        .await;
    // A 300 s operation: the answer can only come this soon if the call was cancelled.
    let r = t.rpc.response_to(id, &mut no_answer).await;
    assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
    assert_eq!(t.model.requests.lock().unwrap().len(), 1);
    t.finish().await;
}

#[tokio::test]
async fn an_sse_server_from_the_editor_is_refused_with_its_name() {
    let mut t = InProcess::start(Vec::new(), None);
    t.rpc.initialize().await;
    let ws = t.env.workspace.clone();
    let id = t
        .rpc
        .request(
            "session/new",
            json!({"cwd": ws, "mcpServers": [
                {"type": "sse", "name": "old", "url": "http://127.0.0.1:1/sse", "headers": []}]}),
        )
        .await;
    let r = t.rpc.response_to(id, &mut no_answer).await;
    let message = r["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("old: the SSE transport is not supported"),
        "{r}"
    );
    t.finish().await;
}
