//! Integration tests: acp.
//!
//! pablo is driven as an ACP agent with raw JSON-RPC lines, the way an editor drives it: the
//! `pablo acp` binary as a child process over its stdin/stdout, against the scripted
//! OpenAI-compatible server on 127.0.0.1 (and, when node is there, with the official TypeScript
//! client library). The in-process harness (the server over a pipe with a scripted model client)
//! and its tests are in `src/tests/acp.rs`.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use crate::support::acp::{Env, PLAN_ARGS, Rpc, allow_once, no_answer};

/// How the tests here start the binary: `pablo` with XDG pointed at the [`Env`]'s dirs, in its
/// workspace.
trait Spawn {
    fn command(&self) -> tokio::process::Command;
}

impl Spawn for Env {
    fn command(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_pablo"));
        cmd.env("XDG_CONFIG_HOME", self.xdg.join("config"))
            .env("XDG_DATA_HOME", self.xdg.join("data"))
            .env("XDG_STATE_HOME", self.xdg.join("state"))
            .env("XDG_CACHE_HOME", self.xdg.join("cache"))
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("PABLO_LOG")
            .current_dir(&self.workspace)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        cmd
    }
}

// ---------------------------------------------------------------------------------------------
// The binary over stdio.

mod binary {
    use super::*;

    #[tokio::test]
    async fn initialize_negotiates_version_one_and_advertises_prompt_capabilities() {
        let env = Env::new();
        let mut child = env.command().arg("acp").spawn().unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        let r = rpc.initialize().await;
        let result = &r["result"];
        assert_eq!(result["protocolVersion"], 1, "{r}");
        assert_eq!(result["agentInfo"]["name"], "pablo");
        assert_eq!(
            result["agentCapabilities"]["promptCapabilities"]["embeddedContext"],
            true
        );
        assert_eq!(
            result["agentCapabilities"]["promptCapabilities"]["image"],
            false
        );
        // A client asking for a newer version is answered with the one pablo speaks.
        drop(rpc);
        let _ = child.wait().await;
        let mut child = env.command().arg("acp").spawn().unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        let id = rpc
            .request(
                "initialize",
                json!({"protocolVersion": 7, "clientCapabilities": {}}),
            )
            .await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["result"]["protocolVersion"], 1, "{r}");
    }

    #[tokio::test]
    async fn plain_pablo_acp_offers_the_modes_and_starts_in_the_configured_one() {
        let env = Env::new();
        let config = env.xdg.join("config/pablo");
        std::fs::create_dir_all(&config).unwrap();
        // A provider that is never called: no prompt is sent.
        std::fs::write(
            config.join("config.toml"),
            "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\n[tui]\nmode = \"auto-edit\"\n",
        )
        .unwrap();
        let mut child = env
            .command()
            .arg("acp")
            .env("OPENAI_API_KEY", "sk-test")
            .spawn()
            .unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        rpc.initialize().await;
        let id = rpc
            .request(
                "session/new",
                json!({"cwd": env.workspace, "mcpServers": []}),
            )
            .await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["result"]["modes"]["currentModeId"], "auto-edit", "{r}");
        let session = r["result"]["sessionId"].as_str().unwrap().to_string();
        let r = rpc.set_mode(&session, "plan").await;
        assert!(r["error"].is_null(), "{r}");
        let switched = |u: &Value| u["update"]["sessionUpdate"] == "current_mode_update";
        if !rpc.updates.iter().any(switched) {
            rpc.until(&mut |m| switched(&m["params"]), &mut no_answer)
                .await;
        }
        let update = rpc.updates.iter().find(|u| switched(u)).unwrap();
        assert_eq!(update["update"]["currentModeId"], "plan", "{update}");
        drop(rpc);
        let _ = child.wait().await;
    }

    #[tokio::test]
    async fn closing_stdin_ends_the_agent_cleanly_with_nothing_but_json_on_stdout() {
        let env = Env::new();
        let mut child = env.command().arg("acp").spawn().unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        rpc.initialize().await;
        let Rpc { lines, writer, .. } = rpc;
        drop(writer);
        let mut lines = lines;
        // Whatever is left on stdout must still be JSON-RPC (here: nothing).
        while let Some(line) = lines.next_line().await.unwrap() {
            let v: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(v["jsonrpc"], "2.0");
        }
        let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(status.success(), "{status:?}");
    }

    #[tokio::test]
    async fn a_relative_cwd_is_refused_with_its_code_and_creates_nothing() {
        let env = Env::new();
        let mut child = env.command().arg("acp").spawn().unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        rpc.initialize().await;
        let before = env.snapshot();
        let id = rpc
            .request("session/new", json!({"cwd": "ws", "mcpServers": []}))
            .await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["error"]["code"], -32602, "{r}");
        assert_eq!(r["error"]["data"]["code"], "cwd_not_absolute", "{r}");
        assert!(r["error"]["message"].as_str().unwrap().contains("\"ws\""));
        assert_eq!(env.snapshot(), before);
    }

    #[tokio::test]
    async fn a_prompt_for_an_unknown_session_is_refused() {
        let env = Env::new();
        let mut child = env.command().arg("acp").spawn().unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        rpc.initialize().await;
        let id = rpc
            .request(
                "session/prompt",
                json!({"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]}),
            )
            .await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["error"]["data"]["code"], "unknown_session", "{r}");
    }

    #[tokio::test]
    async fn requests_before_initialize_are_refused() {
        let env = Env::new();
        let mut child = env.command().arg("acp").spawn().unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        let before = env.snapshot();
        let id = rpc
            .request(
                "session/new",
                json!({"cwd": env.workspace, "mcpServers": []}),
            )
            .await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert!(r.get("error").is_some(), "{r}");
        assert!(r["error"]["data"]["code"].is_string(), "{r}");
        assert_eq!(env.snapshot(), before);
    }

    #[tokio::test]
    async fn a_line_of_invalid_utf8_is_a_parse_error_and_the_connection_goes_on() {
        let env = Env::new();
        let mut child = env.command().arg("acp").spawn().unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        rpc.writer
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"x\xff\xfe\"}\n\xc3\n")
            .await
            .unwrap();
        for line in [1, 2] {
            let r = rpc.next().await;
            assert_eq!(r["id"], Value::Null, "{r}");
            assert_eq!(r["error"]["code"], -32700, "{r}");
            assert_eq!(r["error"]["data"]["code"], "parse_error", "{r}");
            let message = r["error"]["data"]["message"].as_str().unwrap();
            assert!(
                message.contains(&format!("line {line} is not UTF-8")),
                "{message}"
            );
        }
        // The connection is still there: initialize is answered.
        let r = rpc.initialize().await;
        assert_eq!(r["result"]["protocolVersion"], 1, "{r}");
        drop(rpc);
        let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(status.success(), "{status:?}");
    }

    #[tokio::test]
    async fn a_client_asking_another_version_keeps_its_editor_buffers() {
        use crate::support::http::{ScriptedResponse, ScriptedServer, openai};
        let env = Env::new();
        std::fs::write(env.workspace.join("notes.txt"), "saved on disk\n").unwrap();
        let model = ScriptedServer::start().await;
        model.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_r",
            "fs_read",
            &[r#"{"path": "notes.txt"}"#],
        )));
        model.push(ScriptedResponse::sse(openai::text_answer("read")));
        let config = env.xdg.join("config/pablo");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            config.join("config.toml"),
            format!(
                "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n",
                model.base_url()
            ),
        )
        .unwrap();
        let mut child = env
            .command()
            .arg("acp")
            .env("OPENAI_API_KEY", "sk-test")
            .spawn()
            .unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        let id = rpc
            .request(
                "initialize",
                json!({"protocolVersion": 2, "clientCapabilities":
                    {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true}}),
            )
            .await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["result"]["protocolVersion"], 1, "{r}");
        let session = rpc.new_session(&env.workspace).await;
        let id = rpc
            .request(
                "session/prompt",
                json!({"sessionId": session, "prompt": [{"type": "text", "text": "read"}]}),
            )
            .await;
        let mut answer = |m: &Value| {
            assert_eq!(m["method"], "fs/read_text_file", "{m}");
            Some(json!({"content": "typed but not saved\n"}))
        };
        let r = rpc.response_to(id, &mut answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        assert_eq!(rpc.requests_for("fs/read_text_file").len(), 1);
        let body = model.requests()[1].json();
        let told = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(told.contains("typed but not saved"), "{told}");
    }

    #[tokio::test]
    async fn requests_the_protocol_refuses_carry_a_code_in_their_data_like_every_refusal() {
        let env = Env::new();
        let mut child = env.command().arg("acp").spawn().unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        rpc.initialize().await;
        // Malformed params: no cwd.
        let id = rpc.request("session/new", json!({"mcpServers": []})).await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["error"]["code"], -32602, "{r}");
        assert_eq!(r["error"]["data"]["code"], "invalid_params", "{r}");
        assert!(
            r["error"]["data"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("cwd")),
            "{r}"
        );
        // A method no agent has.
        let id = rpc.request("session/dance", json!({})).await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["error"]["code"], -32601, "{r}");
        assert_eq!(r["error"]["data"]["code"], "method_not_found", "{r}");
    }
}

// ---------------------------------------------------------------------------------------------
// The official TypeScript client library (`@agentclientprotocol/sdk`) driving the binary.

mod typescript {
    use super::*;

    /// The e2e script's folder, when node and its `npm ci` are there; `None` (with a note) when
    /// the test must be skipped.
    pub(super) fn ts_dir() -> Option<std::path::PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp_ts");
        let node = std::process::Command::new("node").arg("--version").output();
        if !node.is_ok_and(|o| o.status.success()) {
            eprintln!("note: skipping the TypeScript ACP client test: `node` is not installed");
            return None;
        }
        if !dir.join("node_modules/@agentclientprotocol/sdk").is_dir() {
            eprintln!(
                "note: skipping the TypeScript ACP client test: run `npm ci` in {}",
                dir.display()
            );
            return None;
        }
        Some(dir)
    }

    #[tokio::test]
    async fn the_typescript_client_initializes_and_gets_pablo_s_refusal_codes() {
        let Some(dir) = ts_dir() else { return };
        let env = Env::new();
        let missing = env.workspace.join("does-not-exist");
        let out = tokio::process::Command::new("node")
            .arg(dir.join("e2e.mjs"))
            .arg(env!("CARGO_BIN_EXE_pablo"))
            .arg(&missing)
            .env("XDG_CONFIG_HOME", env.xdg.join("config"))
            .env("XDG_DATA_HOME", env.xdg.join("data"))
            .env("XDG_STATE_HOME", env.xdg.join("state"))
            .env("E2E_EXPECT_NEW_ERROR", "workspace_unavailable")
            .env_remove("E2E_PROMPT")
            .current_dir(&dir)
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(Duration::from_secs(60), out)
            .await
            .expect("the e2e script did not finish in 60 s")
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
        let seen: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        assert_eq!(seen["protocolVersion"], 1);
        assert_eq!(seen["agent"], "pablo");
        assert_eq!(seen["newError"], "workspace_unavailable");
        assert_eq!(seen["exitCode"], 0);
        assert!(!missing.exists());
    }
}

// ---------------------------------------------------------------------------------------------
// The binary over stdio against the scripted OpenAI-compatible server on 127.0.0.1.

mod over_http {
    use super::*;
    use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

    const ASK_PLAN: &str = "[options.tools]\n\"plan.update\" = \"ask\"\n";

    fn plan_fragments() -> Vec<String> {
        let args = PLAN_ARGS().to_string();
        let (a, b) = args.split_at(args.len() / 2);
        vec![a.to_string(), b.to_string()]
    }

    /// `pablo acp` pointed at `server`, in `env`'s workspace.
    fn spawn_acp(env: &Env, server: &ScriptedServer, flags: &[&str]) -> tokio::process::Child {
        let mut cmd = env.command();
        cmd.env("OPENAI_API_KEY", "sk-test-key")
            .args([
                "--provider",
                "openai",
                "--model",
                "test-model",
                "--base-url",
            ])
            .arg(server.base_url())
            .args(flags)
            .arg("acp");
        cmd.spawn().unwrap()
    }

    type ChildRpc = Rpc<tokio::process::ChildStdout, tokio::process::ChildStdin>;

    async fn connect(
        env: &Env,
        server: &ScriptedServer,
        flags: &[&str],
    ) -> (tokio::process::Child, ChildRpc, String) {
        let mut child = spawn_acp(env, server, flags);
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        rpc.initialize().await;
        let session = rpc.new_session(&env.workspace).await;
        (child, rpc, session)
    }

    async fn prompt(rpc: &mut ChildRpc, session: &str, text: &str) -> u64 {
        rpc.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
    }

    /// Closes stdin and waits for a clean exit.
    async fn close(mut child: tokio::process::Child, rpc: ChildRpc) {
        drop(rpc);
        let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(status.success(), "{status:?}");
    }

    #[tokio::test]
    async fn a_prompt_streams_the_model_s_text_and_answers_end_turn() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer(
            "Hello from the model",
        )));
        let env = Env::new();
        let (child, mut rpc, session) = connect(&env, &server, &[]).await;
        let id = prompt(&mut rpc, &session, "greet me").await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        assert_eq!(rpc.message_text(), "Hello from the model");
        assert!(rpc.update_kinds().contains(&"usage_update".to_string()));
        let body = server.requests()[0].json();
        assert!(body.to_string().contains("greet me"));
        close(child, rpc).await;
    }

    #[tokio::test]
    async fn a_prompt_reads_a_file_then_edits_it_after_allow_once() {
        let env = Env::new();
        let original = "fn main() {\n    println!(\"hello\");\n}\n";
        std::fs::write(env.workspace.join("main.rs"), original).unwrap();
        let revision = crate::support::revision_of(original.as_bytes());
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_read",
            "fs_read",
            &[r#"{"path": "main.rs"}"#],
        )));
        let edit = json!({"path": "main.rs", "old_text": "hello", "new_text": "hello, editor",
                          "expected_revision": revision})
        .to_string();
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_edit",
            "fs_edit",
            &[&edit],
        )));
        server.push(ScriptedResponse::sse(openai::text_answer("Edited.")));
        let (child, mut rpc, session) = connect(&env, &server, &["--allow-write"]).await;
        let id = prompt(&mut rpc, &session, "greet the editor").await;
        let mut answer = |m: &Value| {
            assert_eq!(m["method"], "session/request_permission");
            allow_once()
        };
        let r = rpc.response_to(id, &mut answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        // The read ran unasked, as a `read` call on the file.
        let read = rpc
            .updates
            .iter()
            .map(|u| &u["update"])
            .find(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "call_read")
            .expect("the read's tool_call");
        assert_eq!(read["kind"], "read");
        assert_eq!(
            read["locations"][0]["path"],
            json!(env.workspace.join("main.rs"))
        );
        // Only the edit asked, showing exactly the bytes that were then written.
        assert_eq!(rpc.agent_requests.len(), 1);
        let call = &rpc.agent_requests[0]["params"]["toolCall"];
        assert_eq!(call["toolCallId"], "call_edit");
        assert_eq!(call["kind"], "edit");
        let diff = &call["content"][0];
        assert_eq!(diff["type"], "diff", "{call}");
        assert_eq!(diff["path"], json!(env.workspace.join("main.rs")));
        assert_eq!(diff["oldText"], original);
        let new_text = diff["newText"].as_str().unwrap();
        assert_eq!(
            std::fs::read_to_string(env.workspace.join("main.rs")).unwrap(),
            new_text
        );
        assert!(new_text.contains("hello, editor"));
        let done = rpc
            .updates
            .iter()
            .map(|u| &u["update"])
            .rfind(|u| u["toolCallId"] == "call_edit" && u.get("status").is_some())
            .unwrap();
        assert_eq!(done["status"], "completed");
        assert_eq!(rpc.message_text(), "Edited.");
        close(child, rpc).await;
    }

    /// What an editor such as Zed does: starts `pablo acp` with no flags at all (the provider is
    /// in the user's config). The edit tools are offered, and an edit asks through
    /// `session/request_permission` before it lands.
    #[tokio::test]
    async fn pablo_acp_with_no_flags_edits_a_file_through_request_permission() {
        let env = Env::new();
        let original = "hello\n";
        std::fs::write(env.workspace.join("greeting.txt"), original).unwrap();
        let server = ScriptedServer::start().await;
        let edit = json!({"path": "greeting.txt", "old_text": "hello", "new_text": "hello, zed",
                          "expected_revision": crate::support::revision_of(original.as_bytes())})
        .to_string();
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_edit",
            "fs_edit",
            &[&edit],
        )));
        server.push(ScriptedResponse::sse(openai::text_answer("Edited.")));
        let config = env.xdg.join("config/pablo");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            config.join("config.toml"),
            format!(
                "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n",
                server.base_url()
            ),
        )
        .unwrap();
        let mut cmd = env.command();
        cmd.env("OPENAI_API_KEY", "sk-test-key").arg("acp");
        let mut child = cmd.spawn().unwrap();
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        rpc.initialize().await;
        let session = rpc.new_session(&env.workspace).await;
        let id = prompt(&mut rpc, &session, "greet zed").await;
        let mut asked = 0;
        let mut answer = |m: &Value| {
            assert_eq!(m["method"], "session/request_permission");
            asked += 1;
            allow_once()
        };
        let r = rpc.response_to(id, &mut answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        assert_eq!(asked, 1);
        let call = &rpc.agent_requests[0]["params"]["toolCall"];
        assert_eq!(call["kind"], "edit", "{call}");
        assert_eq!(call["content"][0]["type"], "diff", "{call}");
        assert_eq!(
            std::fs::read_to_string(env.workspace.join("greeting.txt")).unwrap(),
            "hello, zed\n"
        );
        let tools = server.requests()[0].json()["tools"].to_string();
        assert!(
            tools.contains("fs_edit") && tools.contains("fs_write"),
            "{tools}"
        );
        close(child, rpc).await;
    }

    #[tokio::test]
    async fn a_rejected_command_does_not_run_and_the_model_reads_rejected() {
        let env = Env::new();
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_sh",
            "shell_run",
            &[r#"{"command": "touch made-by-shell"}"#],
        )));
        server.push(ScriptedResponse::sse(openai::text_answer("Understood.")));
        let (child, mut rpc, session) = connect(&env, &server, &[]).await;
        let before = env.snapshot();
        let id = prompt(&mut rpc, &session, "make a file").await;
        let mut answer = |_: &Value| {
            Some(json!({"outcome": {"outcome": "selected", "optionId": "reject_once"}}))
        };
        let r = rpc.response_to(id, &mut answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        let call = &rpc.agent_requests[0]["params"]["toolCall"];
        assert_eq!(call["kind"], "execute");
        let shown = call["content"][0]["content"]["text"].as_str().unwrap();
        assert!(shown.contains("touch made-by-shell"), "{shown}");
        let failed = rpc
            .updates
            .iter()
            .find(|u| u["update"]["status"] == "failed")
            .expect("a failed tool call update");
        assert_eq!(failed["update"]["toolCallId"], "call_sh");
        assert_eq!(failed["update"]["rawOutput"]["error"]["code"], "rejected");
        assert!(!env.workspace.join("made-by-shell").exists());
        let second = server.requests()[1].json().to_string();
        assert!(second.contains("rejected"), "{second}");
        close(child, rpc).await;
        // Nothing appeared in the workspace.
        let after: Vec<String> = env
            .snapshot()
            .into_iter()
            .filter(|p| p.starts_with(&*env.workspace.to_string_lossy()))
            .collect();
        let before: Vec<String> = before
            .into_iter()
            .filter(|p| p.starts_with(&*env.workspace.to_string_lossy()))
            .collect();
        assert_eq!(after, before);
    }

    #[tokio::test]
    async fn an_allowed_command_runs_and_its_output_reaches_the_editor() {
        let env = Env::new();
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_echo",
            "shell_run",
            &[r#"{"command": "echo from-the-shell"}"#],
        )));
        server.push(ScriptedResponse::sse(openai::text_answer("Ran it.")));
        let (child, mut rpc, session) = connect(&env, &server, &[]).await;
        let id = prompt(&mut rpc, &session, "echo something").await;
        let mut answer = |_: &Value| allow_once();
        let r = rpc.response_to(id, &mut answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        let updates: Vec<&Value> = rpc
            .updates
            .iter()
            .map(|u| &u["update"])
            .filter(|u| u["toolCallId"] == "call_echo")
            .collect();
        assert_eq!(updates[0]["sessionUpdate"], "tool_call");
        assert_eq!(updates[0]["kind"], "execute");
        assert_eq!(updates[0]["title"], "Run echo from-the-shell");
        assert!(updates.iter().any(|u| u["status"] == "in_progress"));
        let last = updates.last().unwrap();
        assert_eq!(last["status"], "completed");
        // The live output is shown in the call's content, under the parsed command.
        let shown = last["content"].to_string();
        assert!(shown.contains("```\\nfrom-the-shell\\n```"), "{shown}");
        assert!(
            last["rawOutput"].to_string().contains("from-the-shell"),
            "{last}"
        );
        close(child, rpc).await;
    }

    #[tokio::test]
    async fn cancel_mid_stream_answers_cancelled() {
        let server = ScriptedServer::start().await;
        server.push(
            ScriptedResponse::sse(openai::Stream::new().text(&["Let me ", "think"]).events())
                .hang_after(3),
        );
        let env = Env::new();
        let (child, mut rpc, session) = connect(&env, &server, &[]).await;
        let id = prompt(&mut rpc, &session, "ponder").await;
        rpc.until(
            &mut |m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk",
            &mut no_answer,
        )
        .await;
        rpc.notify("session/cancel", json!({"sessionId": session}))
            .await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert!(r.get("error").is_none(), "{r}");
        assert_eq!(r["result"]["stopReason"], "cancelled", "{r}");
        close(child, rpc).await;
    }

    #[tokio::test]
    async fn a_saved_session_is_loaded_by_a_new_process() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer("First answer")));
        server.push(ScriptedResponse::sse(openai::text_answer("Second answer")));
        let env = Env::new();
        let (child, mut rpc, session) = connect(&env, &server, &[]).await;
        let id = prompt(&mut rpc, &session, "first question").await;
        rpc.response_to(id, &mut no_answer).await;
        close(child, rpc).await;

        let mut child = spawn_acp(&env, &server, &[]);
        let mut rpc = Rpc::new(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        rpc.initialize().await;
        let id = rpc
            .request(
                "session/load",
                json!({"sessionId": session, "cwd": env.workspace, "mcpServers": []}),
            )
            .await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert!(r.get("error").is_none(), "{r}");
        assert_eq!(
            rpc.update_kinds(),
            ["user_message_chunk", "agent_message_chunk"]
        );
        assert_eq!(
            rpc.updates[0]["update"]["content"]["text"],
            "first question"
        );
        assert_eq!(rpc.updates[1]["update"]["content"]["text"], "First answer");
        let id = prompt(&mut rpc, &session, "second question").await;
        let r = rpc.response_to(id, &mut no_answer).await;
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
        // The resumed conversation carried the first exchange to the model.
        let body = server.requests()[1].json().to_string();
        assert!(
            body.contains("first question") && body.contains("First answer"),
            "{body}"
        );
        close(child, rpc).await;
    }

    #[tokio::test]
    async fn the_typescript_client_prompts_pablo_end_to_end() {
        let Some(dir) = super::typescript::ts_dir() else {
            return;
        };
        let server = ScriptedServer::start().await;
        let frags = plan_fragments();
        let frags: Vec<&str> = frags.iter().map(String::as_str).collect();
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_ts",
            "update_plan",
            &frags,
        )));
        server.push(ScriptedResponse::sse(openai::text_answer("Hi from pablo")));
        let env = Env::new();
        // The plan needs approval, so the client library also sees a permission request.
        std::fs::create_dir_all(env.workspace.join(".pablo")).unwrap();
        std::fs::write(env.workspace.join(".pablo/config.toml"), ASK_PLAN).unwrap();
        let (seen, stdout) = run_e2e(
            &dir,
            &env,
            &server,
            &[],
            &[
                ("E2E_PROMPT", "hello"),
                ("E2E_EXPECT_TEXT", "Hi from pablo"),
            ],
        )
        .await;
        assert_eq!(seen["stopReason"], "end_turn");
        assert_eq!(seen["text"], "Hi from pablo");
        // Every kind of update pablo sent passed the library's schema and reached the handler.
        let updates = seen["updates"].as_array().unwrap();
        for kind in [
            "tool_call",
            "tool_call_update",
            "plan",
            "agent_message_chunk",
            "usage_update",
        ] {
            assert!(updates.contains(&json!(kind)), "{kind} missing: {stdout}");
        }
        assert_eq!(
            seen["permissions"],
            json!([["allow_once", "allow_always", "reject_once", "reject_always"]])
        );
    }

    /// Runs the TypeScript client script against the binary with the scripted server as its
    /// model; returns what the script saw (its last stdout line) and its whole stdout.
    async fn run_e2e(
        dir: &Path,
        env: &Env,
        server: &ScriptedServer,
        flags: &[&str],
        vars: &[(&str, &str)],
    ) -> (Value, String) {
        let mut cmd = tokio::process::Command::new("node");
        cmd.arg(dir.join("e2e.mjs"))
            .arg(env!("CARGO_BIN_EXE_pablo"))
            .arg(&env.workspace)
            .args([
                "--provider",
                "openai",
                "--model",
                "test-model",
                "--base-url",
            ])
            .arg(server.base_url())
            .args(flags)
            .env("OPENAI_API_KEY", "sk-test-key")
            .env("XDG_CONFIG_HOME", env.xdg.join("config"))
            .env("XDG_DATA_HOME", env.xdg.join("data"))
            .env("XDG_STATE_HOME", env.xdg.join("state"))
            .env_remove("E2E_EXPECT_NEW_ERROR")
            .env_remove("E2E_BUFFERS")
            .env_remove("E2E_TERMINALS")
            .env_remove("E2E_EXPECT_TEXT")
            .current_dir(dir)
            .kill_on_drop(true);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
            .await
            .expect("the e2e script did not finish in 60 s")
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
        let seen: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        (seen, stdout)
    }

    #[tokio::test]
    async fn the_typescript_client_runs_an_allowed_command_in_its_terminal() {
        let Some(dir) = super::typescript::ts_dir() else {
            return;
        };
        let env = Env::new();
        let server = ScriptedServer::start().await;
        // A command that writes (tee), so that the policy asks: a known-safe read would run
        // unasked in pablo's read-only sandbox and never reach the editor's terminal.
        let run =
            json!({"command": "printf 'from the terminal\\n' | tee said.txt; exit 4"}).to_string();
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_sh",
            "shell_run",
            &[&run],
        )));
        server.push(ScriptedResponse::sse(openai::text_answer("Ran it")));
        // The editor's terminal is outside pablo's sandbox: the person's config opts in.
        let config = env.xdg.join("editor-terminals.toml");
        std::fs::write(&config, "[options.shell]\neditor_terminals = true\n").unwrap();
        let config = config.display().to_string();
        let (seen, stdout) = run_e2e(
            &dir,
            &env,
            &server,
            &["--config", &config],
            &[
                ("E2E_PROMPT", "run the command"),
                ("E2E_EXPECT_TEXT", "Ran it"),
                ("E2E_TERMINALS", "1"),
            ],
        )
        .await;
        assert_eq!(seen["stopReason"], "end_turn", "{stdout}");
        assert_eq!(seen["permissions"].as_array().unwrap().len(), 1, "{stdout}");
        assert_eq!(
            seen["terminalCalls"],
            json!([
                "terminal/create",
                "terminal/wait_for_exit",
                "terminal/output",
                "terminal/release"
            ]),
            "{stdout}"
        );
        let created = &seen["terminals"][0];
        assert_eq!(created["cwd"], json!(env.workspace), "{stdout}");
        assert_eq!(created["outputByteLimit"], 5_000_000, "{stdout}");
        // The model read what ran in the editor's terminal.
        let second = server.requests()[1].json().to_string();
        assert!(second.contains("from the terminal"), "{second}");
        assert!(second.contains(r#"\"exit_code\":4"#), "{second}");
    }

    #[tokio::test]
    async fn the_typescript_client_s_unsaved_buffer_is_edited_through_fs_requests() {
        let Some(dir) = super::typescript::ts_dir() else {
            return;
        };
        let env = Env::new();
        let path = env.workspace.join("lib.rs");
        std::fs::write(&path, "// saved\n").unwrap();
        let buffer = "// unsaved draft\npub fn f() {}\n";
        let edit = json!({"path": "lib.rs", "old_text": "draft", "new_text": "final",
                          "expected_revision": crate::support::revision_of(buffer.as_bytes())})
        .to_string();
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_edit",
            "fs_edit",
            &[&edit],
        )));
        server.push(ScriptedResponse::sse(openai::text_answer(
            "Edited the buffer",
        )));
        let buffers = json!({ path.display().to_string(): buffer }).to_string();
        let (seen, stdout) = run_e2e(
            &dir,
            &env,
            &server,
            &["--allow-write"],
            &[
                ("E2E_PROMPT", "edit the open buffer"),
                ("E2E_EXPECT_TEXT", "Edited the buffer"),
                ("E2E_BUFFERS", &buffers),
            ],
        )
        .await;
        assert_eq!(seen["stopReason"], "end_turn", "{stdout}");
        // Read for the preview, and again right before the write.
        assert_eq!(seen["reads"], json!([path, path]), "{stdout}");
        assert_eq!(
            seen["writes"],
            json!([{"path": path, "content": "// unsaved final\npub fn f() {}\n"}]),
            "{stdout}"
        );
        assert_eq!(seen["permissions"].as_array().unwrap().len(), 1, "{stdout}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "// saved\n");
    }
}
