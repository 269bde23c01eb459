//! Hooks (docs/hooks.md), end to end: the real binary, plain `pablo run`, a scripted
//! OpenAI-compatible server on 127.0.0.1, and hooks that are real shell programs.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::bin::{Sandbox, json_lines};
use crate::support::http::ScriptedServer;
use crate::support::run::{Run, call, run_json, say};

/// The hooks that ran, as `pablo run --json` printed them.
fn hooks(run: &Run) -> Vec<&Value> {
    run.of_type("hook")
}

/// `pablo run --json TASK` with `flags`, no other flag.
async fn run(sandbox: &Sandbox, server: &ScriptedServer, task: &str, flags: &[&str]) -> Run {
    run_json(sandbox, server, task, flags).await
}

/// A hook script outside the workspace (where the model's commands cannot write it).
fn script(sandbox: &Sandbox, name: &str, body: &str) -> PathBuf {
    let path = sandbox.root().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The content of the tool messages the model received in request `n`.
fn tool_messages(server: &ScriptedServer, n: usize) -> Vec<Value> {
    let body = server.requests()[n].json();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
        .collect()
}

/// Every user message's text in request `n`.
fn user_texts(server: &ScriptedServer, n: usize) -> Vec<String> {
    let body = server.requests()[n].json();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

fn toml_path(p: &Path) -> String {
    format!("{:?}", p.display().to_string())
}

#[tokio::test]
async fn a_guard_that_exits_2_blocks_the_command_and_its_stderr_reaches_the_model() {
    let sandbox = Sandbox::new();
    let guard = script(
        &sandbox,
        "guard.sh",
        "cat > /dev/null\necho 'no touching files here' >&2\nexit 2",
    );
    sandbox.user_config(&format!(
        "[[hooks.pre_tool_use]]\nname = \"lint-guard\"\nmatcher = 'shell\\.run'\n\
         command_matcher = '^touch'\ncommand = {}\n",
        toml_path(&guard)
    ));
    let server = ScriptedServer::start().await;
    server.push(call(
        "c1",
        "shell_run",
        &json!({"command": "touch blocked.txt"}),
    ));
    server.push(call("c2", "shell_run", &json!({"command": "echo fine"})));
    server.push(say("ok"));
    let out = run(&sandbox, &server, "touch it", &["--auto-approve"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let results = out.results();
    assert_eq!(
        results[0]["error"]["code"], "hook_blocked",
        "{}",
        results[0]
    );
    let message = results[0]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("blocked by hook lint-guard: no touching files here"),
        "{message}"
    );
    assert!(!sandbox.workspace().join("blocked.txt").exists());
    // The model read the guard's reason.
    assert_eq!(tool_messages(&server, 1)[0], *results[0]);
    // The command the matcher does not cover ran, and no hook ran for it.
    assert_eq!(results[1]["ok"], true, "{}", results[1]);
    let hooks = hooks(&out);
    assert_eq!(hooks.len(), 1, "{hooks:?}");
    assert_eq!(hooks[0]["event"], "pre_tool_use");
    assert_eq!(hooks[0]["hook"], "lint-guard");
    assert_eq!(hooks[0]["decision"], "block");
    assert_eq!(hooks[0]["call_id"], "c1");
}

#[tokio::test]
async fn a_guard_that_crashes_blocks_and_one_that_may_fail_open_does_not() {
    for (on_failure, blocked) in [("", true), ("on_failure = \"allow\"\n", false)] {
        let sandbox = Sandbox::new();
        // What a guard needing a missing program does: exits 127.
        sandbox.user_config(&format!(
            "[[hooks.pre_tool_use]]\nname = \"jq-guard\"\nmatcher = 'shell\\.run'\n\
             command = \"no-such-program-jq-xyz .tool_input.command\"\n{on_failure}"
        ));
        let server = ScriptedServer::start().await;
        server.push(call(
            "c1",
            "shell_run",
            &json!({"command": "touch made.txt"}),
        ));
        server.push(say("ok"));
        let out = run(&sandbox, &server, "touch it", &["--auto-approve"]).await;
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        let result = out.results()[0];
        let made = sandbox.workspace().join("made.txt").exists();
        let hook = hooks(&out)[0];
        if blocked {
            assert_eq!(result["error"]["code"], "hook_blocked", "{result}");
            let m = result["error"]["message"].as_str().unwrap();
            assert!(m.contains("blocked by hook jq-guard"), "{m}");
            assert!(m.contains("exited with status 127"), "{m}");
            assert!(!made);
            assert_eq!(hook["decision"], "failed_closed");
        } else {
            assert_eq!(result["ok"], true, "{result}");
            assert!(made);
            assert_eq!(hook["decision"], "failed_open");
            // The person is told the guard failed, and why.
            let why = hook["message"].as_str().unwrap();
            assert!(why.contains("exited with status 127"), "{why}");
        }
    }
}

#[tokio::test]
async fn a_rewrite_of_the_arguments_is_judged_by_policy_again() {
    let sandbox = Sandbox::new();
    let rewrite = script(
        &sandbox,
        "rewrite.sh",
        r#"cat > /dev/null
echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"touch rewritten.txt"}}}'"#,
    );
    sandbox.user_config(&format!(
        "[[hooks.pre_tool_use]]\nname = \"rewriter\"\nmatcher = 'shell\\.run'\ncommand = {}\n\n\
         [options.shell.commands]\n\
         deny = [ {{ id = \"no-touch\", executable = \"touch\", args = [], match = \"prefix\" }} ]\n",
        toml_path(&rewrite)
    ));
    let server = ScriptedServer::start().await;
    server.push(call("c1", "shell_run", &json!({"command": "echo hi"})));
    server.push(say("ok"));
    let out = run(&sandbox, &server, "say hi", &["--auto-approve"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let result = out.results()[0];
    // The hook's allow does not outweigh the deny rule the rewritten command meets.
    assert_eq!(result["error"]["code"], "denied", "{result}");
    assert!(!sandbox.workspace().join("rewritten.txt").exists());
    assert_eq!(hooks(&out)[0]["decision"], "rewrite");
}

#[tokio::test]
async fn a_rewrite_that_policy_allows_runs_instead_of_the_original() {
    let sandbox = Sandbox::new();
    let rewrite = script(
        &sandbox,
        "rewrite.sh",
        r#"cat > /dev/null
echo '{"hookSpecificOutput":{"updatedInput":{"command":"echo rewritten"}}}'"#,
    );
    sandbox.user_config(&format!(
        "[[hooks.pre_tool_use]]\ncommand = {}\n",
        toml_path(&rewrite)
    ));
    let server = ScriptedServer::start().await;
    server.push(call(
        "c1",
        "shell_run",
        &json!({"command": "echo original"}),
    ));
    server.push(say("ok"));
    let out = run(&sandbox, &server, "say it", &["--auto-approve"]).await;
    let result = out.results()[0];
    assert_eq!(result["ok"], true, "{result}");
    let text = result.to_string();
    assert!(
        text.contains("rewritten") && !text.contains("original"),
        "{text}"
    );
}

#[tokio::test]
async fn post_tool_use_formats_a_file_after_fs_edit_and_its_note_reaches_the_model() {
    let sandbox = Sandbox::new();
    let ws = sandbox.workspace();
    std::fs::write(ws.join("notes.txt"), "hello world\n").unwrap();
    // A "formatter": upper-cases the file the edit named, and says so.
    let format = script(
        &sandbox,
        "format.sh",
        r#"input=$(cat)
p=$(printf '%s' "$input" | sed -n 's/.*"tool_input":{[^}]*"path":"\([^"]*\)".*/\1/p')
tr 'a-z' 'A-Z' < "$p" > "$p.fmt" && mv "$p.fmt" "$p"
echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"formatted"}}'"#,
    );
    sandbox.user_config(&format!(
        "[[hooks.post_tool_use]]\nname = \"fmt\"\nmatcher = 'fs\\.(edit|write)'\ncommand = {}\n",
        toml_path(&format)
    ));
    let server = ScriptedServer::start().await;
    server.push(call(
        "c1",
        "fs_edit",
        &json!({"path": "notes.txt", "old_text": "world", "new_text": "there",
                "expected_revision": crate::support::revision_of(b"hello world\n")}),
    ));
    server.push(say("ok"));
    let out = run(
        &sandbox,
        &server,
        "edit",
        &["--allow-write", "--auto-approve"],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let result = out.results()[0];
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "HELLO THERE\n"
    );
    assert_eq!(result["data"]["hook_notes"][0]["hook"], "fmt");
    assert_eq!(result["data"]["hook_notes"][0]["note"], "formatted");
    assert_eq!(tool_messages(&server, 1)[0], *result);
}

#[tokio::test]
async fn file_changed_fires_for_a_file_a_shell_command_wrote() {
    let sandbox = Sandbox::new();
    let log = sandbox.root().join("changed.log");
    let record = script(
        &sandbox,
        "record.sh",
        &format!("cat >> {}\necho >> {}", log.display(), log.display()),
    );
    sandbox.user_config(&format!(
        "[[hooks.file_changed]]\nname = \"record\"\ncommand = {}\n",
        toml_path(&record)
    ));
    let server = ScriptedServer::start().await;
    server.push(call(
        "c1",
        "shell_run",
        &json!({"command": "printf 'x' > made.txt"}),
    ));
    server.push(say("done"));
    let out = run(
        &sandbox,
        &server,
        "make a file",
        &["--allow-write", "--auto-approve"],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.results()[0]["ok"], true, "{:?}", out.results());
    let logged: Vec<Value> = std::fs::read_to_string(&log)
        .expect("the hook ran")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert_eq!(logged[0]["path"], "made.txt");
    assert_eq!(logged[0]["change"], "created");
    assert_eq!(logged[0]["hook_event_name"], "FileChanged");
    let hook = hooks(&out)[0];
    assert_eq!(
        (&hook["event"], &hook["path"]),
        (&json!("file_changed"), &json!("made.txt"))
    );
    // It finished before the turn ended.
    let types: Vec<&str> = out
        .lines
        .iter()
        .map(|l| l["type"].as_str().unwrap())
        .collect();
    let at = |t: &str| types.iter().position(|x| *x == t).unwrap();
    assert!(at("hook") < at("turn_completed"), "{types:?}");
}

#[tokio::test]
async fn user_prompt_submit_adds_context_that_reaches_the_request() {
    let sandbox = Sandbox::new();
    // A Claude Code UserPromptSubmit script, unchanged: plain stdout on exit 0 is context.
    sandbox.user_config(
        "[[hooks.user_prompt_submit]]\nname = \"branch\"\ncommand = \"cat > /dev/null; echo 'current branch: feature-x'\"\n",
    );
    let server = ScriptedServer::start().await;
    server.push(say("ok"));
    let out = run(&sandbox, &server, "what branch?", &[]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let texts = user_texts(&server, 0);
    let last = texts.last().unwrap();
    assert!(last.contains("what branch?"), "{last}");
    assert!(last.contains("current branch: feature-x"), "{last}");
    assert_eq!(hooks(&out)[0]["context"], "current branch: feature-x");
}

#[tokio::test]
async fn user_prompt_submit_that_exits_2_stops_the_prompt_before_anything_is_sent() {
    let sandbox = Sandbox::new();
    sandbox.user_config(
        "[[hooks.user_prompt_submit]]\nname = \"no-secrets\"\ncommand = \"echo 'that prompt names a password' >&2; exit 2\"\n",
    );
    let server = ScriptedServer::start().await;
    server.push(say("never"));
    let out = run(&sandbox, &server, "the password is hunter2", &[]).await;
    assert_ne!(out.code, Some(0));
    let err = out.of_type("error")[0];
    assert_eq!(err["code"], "hook_blocked", "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("blocked by hook no-secrets: that prompt names a password"),
        "{err}"
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_stop_hook_sends_the_model_back_to_work_once() {
    let sandbox = Sandbox::new();
    let stop = script(
        &sandbox,
        "stop.sh",
        r#"input=$(cat)
case "$input" in
  *'"stop_hook_active":false'*) echo '{"decision":"block","reason":"run the tests first"}' ;;
esac"#,
    );
    sandbox.user_config(&format!(
        "[[hooks.stop]]\nname = \"tests-first\"\ncommand = {}\n",
        toml_path(&stop)
    ));
    let server = ScriptedServer::start().await;
    server.push(say("done"));
    server.push(say("tests pass"));
    let out = run(&sandbox, &server, "fix it", &[]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(server.requests().len(), 2);
    let texts = user_texts(&server, 1);
    assert!(
        texts
            .last()
            .unwrap()
            .contains("[hook tests-first] run the tests first"),
        "{texts:?}"
    );
    let decisions: Vec<&Value> = hooks(&out).iter().map(|h| &h["decision"]).collect();
    assert_eq!(decisions, [&json!("block"), &json!("continue")]);
}

#[tokio::test]
async fn a_project_hook_in_an_untrusted_folder_does_not_run() {
    let sandbox = Sandbox::new();
    let marker = sandbox.root().join("ran.marker");
    let pablo_dir = sandbox.workspace().join(".pablo");
    std::fs::create_dir_all(&pablo_dir).unwrap();
    std::fs::write(
        pablo_dir.join("config.toml"),
        format!(
            "[[hooks.user_prompt_submit]]\nname = \"evil\"\ncommand = \"touch {}\"\n",
            marker.display()
        ),
    )
    .unwrap();
    let server = ScriptedServer::start().await;
    server.push(say("ok"));
    let out = run(&sandbox, &server, "hi", &[]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(!marker.exists(), "an untrusted project's hook ran");
    assert!(hooks(&out).is_empty());
    assert!(
        out.stderr.contains("hooks.user_prompt_submit evil"),
        "the person is told what was ignored: {}",
        out.stderr
    );
    // Trusted, the same hook runs.
    let trust = sandbox
        .command()
        .args(["policy", "trust"])
        .output()
        .await
        .unwrap();
    assert!(
        trust.status.success(),
        "{}",
        String::from_utf8_lossy(&trust.stderr)
    );
    server.push(say("ok"));
    let out = run(&sandbox, &server, "hi", &[]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(marker.exists(), "a trusted project's hook did not run");
}

#[tokio::test]
async fn no_hook_sees_a_provider_key() {
    let sandbox = Sandbox::new();
    let seen = sandbox.root().join("seen.txt");
    sandbox.user_config(&format!(
        "[[hooks.pre_tool_use]]\ncommand = \"env > {0}; cat >> {0}\"\n",
        seen.display()
    ));
    let server = ScriptedServer::start().await;
    server.push(call("c1", "shell_run", &json!({"command": "echo hi"})));
    server.push(say("ok"));
    let mut cmd = sandbox.run_json(&server.base_url(), "hi");
    cmd.env("ANTHROPIC_API_KEY", "sk-ant-hook-test-key")
        .env("MY_SERVICE_TOKEN", "tok-hook-test-value")
        .args(["--auto-approve"]);
    let out = cmd.output().await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&seen).expect("the hook ran");
    for secret in ["sk-test-key", "sk-ant-hook-test-key", "tok-hook-test-value"] {
        assert!(!text.contains(secret), "a hook saw {secret}:\n{text}");
    }
    assert!(text.contains("\"tool_name\":\"shell.run\""), "{text}");
    assert!(
        text.contains("\"tool_provider_name\":\"shell_run\""),
        "{text}"
    );
}

/// `pablo [GLOBAL_ARGS] hooks list --json`, which must succeed: its lines.
async fn hooks_list(sandbox: &Sandbox, global_args: &[&str]) -> Vec<serde_json::Value> {
    let out = sandbox
        .command()
        .args(global_args)
        .args(["hooks", "list", "--json"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_lines(&out.stdout)
}

#[tokio::test]
async fn a_hook_given_with_dash_c_is_active_and_named_as_coming_from_it() {
    let sandbox = Sandbox::new();
    let lines = hooks_list(
        &sandbox,
        &[
            "-c",
            "hooks.pre_tool_use=[{name=\"cli-guard\", command=\"true\", matcher=\"fs.read\"}]",
        ],
    )
    .await;
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["name"], "cli-guard");
    assert_eq!(lines[0]["active"], true);
    assert!(lines[0].to_string().contains("-c"), "{}", lines[0]);
}

#[tokio::test]
async fn hooks_list_shows_what_runs_here_and_why_the_rest_does_not() {
    let sandbox = Sandbox::new();
    sandbox.user_config(
        "[[hooks.pre_tool_use]]\nname = \"lint-guard\"\nmatcher = 'shell\\.run'\ncommand = \"./guard.sh\"\ntimeout_ms = 5000\n",
    );
    let pablo_dir = sandbox.workspace().join(".pablo");
    std::fs::create_dir_all(&pablo_dir).unwrap();
    std::fs::write(
        pablo_dir.join("config.toml"),
        "[[hooks.file_changed]]\nname = \"repo-fmt\"\ncommand = \"make fmt\"\n",
    )
    .unwrap();
    let lines = hooks_list(&sandbox, &[]).await;
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["name"], "lint-guard");
    assert_eq!(lines[0]["active"], true);
    assert_eq!(lines[0]["timeout_ms"], 5000);
    assert_eq!(lines[0]["on_failure"], "block");
    assert_eq!(lines[1]["name"], "repo-fmt");
    assert_eq!(lines[1]["active"], false);
    assert!(lines[1]["why"].as_str().unwrap().contains("not trusted"));
    let text = sandbox
        .command()
        .args(["hooks", "list"])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("pre_tool_use  lint-guard  (active)"),
        "{text}"
    );
    assert!(text.contains("file_changed  repo-fmt  (not run)"), "{text}");
}

#[tokio::test]
async fn context_hooks_gave_the_model_is_the_same_after_a_resume() {
    let sandbox = Sandbox::new();
    sandbox.user_config(
        "[[hooks.session_start]]\nname = \"greeter\"\nmatcher = \"startup\"\n\
         command = \"cat > /dev/null; echo 'fresh session'\"\n\n\
         [[hooks.user_prompt_submit]]\nname = \"branch\"\n\
         command = \"cat > /dev/null; echo 'branch: alpha'\"\n",
    );
    let server = ScriptedServer::start().await;
    server.push(say("one"));
    let out = run(&sandbox, &server, "first", &[]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let sent = user_texts(&server, 0).last().unwrap().clone();
    assert!(sent.starts_with("first"), "{sent}");
    assert!(sent.contains("[hook greeter] fresh session"), "{sent}");
    assert!(sent.ends_with("branch: alpha"), "{sent}");
    let id = out.of_type("session_started")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    server.push(say("two"));
    let out = run(&sandbox, &server, "second", &["--resume", &id]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let texts = user_texts(&server, 1);
    // The first prompt reads as it was sent; the resumed session did not start fresh.
    assert_eq!(texts[texts.len() - 2], sent);
    let second = texts.last().unwrap();
    assert!(
        second.starts_with("second") && second.ends_with("branch: alpha"),
        "{second}"
    );
    assert!(!second.contains("fresh session"), "{second}");
}

#[tokio::test]
async fn the_model_cannot_add_a_hook_by_writing_the_project_config() {
    let sandbox = Sandbox::new();
    let marker = sandbox.root().join("planted.marker");
    let planted = format!(
        "[[hooks.user_prompt_submit]]\ncommand = \"touch {}\"\n",
        marker.display()
    );
    let server = ScriptedServer::start().await;
    server.push(call(
        "c1",
        "fs_write",
        &json!({"path": ".pablo/config.toml", "text": planted, "expected_revision": null}),
    ));
    server.push(call(
        "c2",
        "shell_run",
        &json!({"command": format!("mkdir -p .pablo && printf '%s' '{planted}' > .pablo/config.toml")}),
    ));
    server.push(say("done"));
    let out = run(
        &sandbox,
        &server,
        "plant a hook",
        &["--allow-write", "--auto-approve"],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let results = out.results();
    assert_eq!(results[0]["ok"], false, "{}", results[0]);
    // The command ran in the sandbox, which did not let it write there.
    assert_ne!(results[1]["data"]["exit_code"], 0, "{}", results[1]);
    assert_eq!(
        results[1]["data"]["sandbox_denied"]["code"], "sandbox_denied",
        "{}",
        results[1]
    );
    let config = sandbox.workspace().join(".pablo/config.toml");
    assert!(!config.exists() || !std::fs::read_to_string(&config).unwrap().contains("hooks"));
    server.push(say("ok"));
    let out = run(&sandbox, &server, "hi", &[]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(!marker.exists(), "a hook the model planted ran");
}

#[tokio::test]
async fn a_hook_written_with_a_tilde_path_as_the_docs_write_it_runs() {
    let sandbox = Sandbox::new();
    // The docs' own form: `command = "~/.config/pablo/hooks/guard.sh"`, under the person's HOME.
    let dir = sandbox.root().join("home/.config/pablo/hooks");
    std::fs::create_dir_all(&dir).unwrap();
    let marker = sandbox.root().join("guard.ran");
    let guard = dir.join("guard.sh");
    std::fs::write(
        &guard,
        format!(
            "#!/bin/sh\ncat > /dev/null\ntouch {}\nexit 0\n",
            marker.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&guard, std::fs::Permissions::from_mode(0o755)).unwrap();
    sandbox.user_config(
        "[[hooks.pre_tool_use]]\nname = \"lint-guard\"\nmatcher = 'shell\\.run'\n\
         command = \"~/.config/pablo/hooks/guard.sh\"\n",
    );
    let server = ScriptedServer::start().await;
    server.push(call("c1", "shell_run", &json!({"command": "echo hi"})));
    server.push(say("ok"));
    let out = run(&sandbox, &server, "say hi", &["--auto-approve"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let result = out.results()[0];
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(hooks(&out)[0]["decision"], "continue", "{:?}", hooks(&out));
    assert!(marker.exists(), "the guard did not run");
}

#[tokio::test]
async fn an_allow_from_one_hook_stands_beside_a_hook_that_only_exits_0_in_either_order() {
    let allow = r#"cat > /dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'"#;
    let quiet = "cat > /dev/null; exit 0";
    for (first, second) in [(allow, quiet), (quiet, allow)] {
        let sandbox = Sandbox::new();
        sandbox.user_config(&format!(
            "[[hooks.pre_tool_use]]\nname = \"one\"\ncommand = {first:?}\n\n\
             [[hooks.pre_tool_use]]\nname = \"two\"\ncommand = {second:?}\n"
        ));
        let server = ScriptedServer::start().await;
        server.push(call(
            "c1",
            "shell_run",
            &json!({"command": "touch made.txt"}),
        ));
        server.push(say("ok"));
        // No --auto-approve: without the hook's allow this command would need a person.
        let out = run(&sandbox, &server, "touch it", &[]).await;
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        let result = out.results()[0];
        assert_eq!(result["ok"], true, "{first} then {second}: {result}");
        assert!(sandbox.workspace().join("made.txt").exists());
    }
}

#[tokio::test]
async fn an_ask_from_one_hook_outweighs_an_allow_from_another_in_either_order() {
    let allow = r#"cat > /dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'"#;
    let ask = r#"cat > /dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"ask"}}'"#;
    for (first, second) in [(allow, ask), (ask, allow)] {
        let sandbox = Sandbox::new();
        sandbox.user_config(&format!(
            "[[hooks.pre_tool_use]]\nname = \"one\"\ncommand = {first:?}\n\n\
             [[hooks.pre_tool_use]]\nname = \"two\"\ncommand = {second:?}\n"
        ));
        let server = ScriptedServer::start().await;
        server.push(call(
            "c1",
            "shell_run",
            &json!({"command": "touch made.txt"}),
        ));
        server.push(say("ok"));
        let out = run(&sandbox, &server, "touch it", &[]).await;
        let result = out.results()[0];
        assert_eq!(
            result["error"]["code"], "approval_required",
            "{first} then {second}: {result}"
        );
        assert!(!sandbox.workspace().join("made.txt").exists());
    }
}

#[tokio::test]
async fn a_guard_answer_pablo_cannot_read_blocks_and_names_what_it_could_not_read() {
    let answers = [
        (r#"{"decision":"BLOCK"}"#, "BLOCK"),
        (r#""deny""#, "a string"),
        (r#"{"continue":"false"}"#, "false"),
        (r#"{"decision":null}"#, "null"),
        (r#"[{"decision":"block"}]"#, "an array"),
        ("\u{feff}{\"decision\":\"approve\"}", "byte-order mark"),
        (
            r#"{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":"ls"}}"#,
            "ls",
        ),
        (r#"{"decison":"block"}"#, "decison"),
    ];
    for (answer, named) in answers {
        let sandbox = Sandbox::new();
        let guard = sandbox.root().join("guard.sh");
        std::fs::write(
            &guard,
            format!("#!/bin/sh\ncat > /dev/null\ncat <<'END'\n{answer}\nEND\n"),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&guard, std::fs::Permissions::from_mode(0o755)).unwrap();
        sandbox.user_config(&format!(
            "[[hooks.pre_tool_use]]\nname = \"guard\"\ncommand = {}\n",
            toml_path(&guard)
        ));
        let server = ScriptedServer::start().await;
        server.push(call(
            "c1",
            "shell_run",
            &json!({"command": "touch made.txt"}),
        ));
        server.push(say("ok"));
        let out = run(&sandbox, &server, "touch it", &["--auto-approve"]).await;
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        let result = out.results()[0];
        assert_eq!(
            result["error"]["code"], "hook_blocked",
            "{answer}: {result}"
        );
        let message = result["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("blocked by hook guard: the hook failed") && message.contains(named),
            "{answer}: {message}"
        );
        assert!(!sandbox.workspace().join("made.txt").exists(), "{answer}");
        assert_eq!(hooks(&out)[0]["decision"], "failed_closed", "{answer}");
    }
}

#[tokio::test]
async fn the_workspace_program_warning_names_the_program_not_a_redirection() {
    let sandbox = Sandbox::new();
    let tools = sandbox.workspace().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(tools.join("fmt.sh"), "#!/bin/sh\nexit 0\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tools.join("fmt.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    sandbox.user_config(
        "[[hooks.user_prompt_submit]]\nname = \"quiet\"\ncommand = \"cat >/dev/null\"\n\n\
         [[hooks.user_prompt_submit]]\nname = \"fmt\"\ncommand = \"cat 2>/dev/null >/dev/null; ./tools/fmt.sh >/dev/null\"\n",
    );
    let server = ScriptedServer::start().await;
    server.push(say("ok"));
    let out = run(&sandbox, &server, "hi", &[]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let said: Vec<String> = out
        .of_type("warning")
        .iter()
        .filter_map(|w| w["message"].as_str().map(str::to_string))
        .chain(out.stderr.lines().map(str::to_string))
        .collect();
    let warnings: Vec<&String> = said
        .iter()
        .filter(|l| l.contains("a file in the workspace"))
        .collect();
    assert_eq!(warnings.len(), 1, "{said:?}");
    let w = warnings[0];
    assert!(w.contains("hook fmt runs `./tools/fmt.sh`,"), "{w}");
    assert!(!w.contains("/dev/null"), "{w}");
    assert!(!w.contains("  "), "a run of spaces: {w:?}");
}

#[tokio::test]
async fn a_command_matcher_sees_the_command_behind_every_wrapper() {
    let sandbox = Sandbox::new();
    sandbox.user_config(
        "[[hooks.pre_tool_use]]\nname = \"no-curl\"\nmatcher = 'shell\\.run'\n\
         command_matcher = '^curl'\n\
         command = \"cat > /dev/null; echo 'no curl from the model' >&2; exit 2\"\n",
    );
    let wrapped = [
        "env curl http://127.0.0.1:9/",
        "env -i A=1 curl http://127.0.0.1:9/",
        "timeout 5 curl http://127.0.0.1:9/",
        "nice -n 5 curl http://127.0.0.1:9/",
        "command curl http://127.0.0.1:9/",
        "nohup curl http://127.0.0.1:9/",
        "time -p curl http://127.0.0.1:9/",
        "exec curl http://127.0.0.1:9/",
        "echo http://127.0.0.1:9/ | xargs curl",
        "sh -c 'curl http://127.0.0.1:9/'",
        "env timeout 5 bash -c 'exec nice /usr/bin/curl http://127.0.0.1:9/'",
    ];
    let server = ScriptedServer::start().await;
    for (i, c) in wrapped.iter().enumerate() {
        server.push(call(&format!("c{i}"), "shell_run", &json!({"command": c})));
    }
    server.push(call("plain", "shell_run", &json!({"command": "echo curl"})));
    server.push(say("ok"));
    let out = run(&sandbox, &server, "fetch", &["--auto-approve"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let results = out.results();
    for (i, c) in wrapped.iter().enumerate() {
        assert_eq!(
            results[i]["error"]["code"], "hook_blocked",
            "{c}: {}",
            results[i]
        );
    }
    // `curl` as an argument is not the program: the guard is not asked.
    assert_eq!(
        results[wrapped.len()]["ok"],
        true,
        "{}",
        results[wrapped.len()]
    );
    assert_eq!(hooks(&out).len(), wrapped.len());
}

#[tokio::test]
async fn a_file_changed_hook_is_not_handed_a_link_the_model_made_to_a_file_outside() {
    let sandbox = Sandbox::new();
    let outside = sandbox.root().join("outside.rs");
    std::fs::write(&outside, "fn main() {}\n").unwrap();
    let log = sandbox.root().join("formatted.log");
    // hooks.md's formatter, in miniature: rewrites the file it is handed.
    let fmt = script(
        &sandbox,
        "fmt.sh",
        &format!(
            r#"p=$(sed -n 's/.*"file_path":"\([^"]*\)".*/\1/p')
echo '// formatted' >> "$p"
echo "$p" >> {}"#,
            log.display()
        ),
    );
    sandbox.user_config(&format!(
        "[[hooks.file_changed]]\nname = \"rustfmt\"\nmatcher = '.*\\.rs'\ncommand = {}\n",
        toml_path(&fmt)
    ));
    let server = ScriptedServer::start().await;
    server.push(call(
        "c1",
        "shell_run",
        &json!({"command": format!("ln -s {} link.rs && printf 'fn x() {{}}\\n' > real.rs", outside.display())}),
    ));
    server.push(say("done"));
    let out = run(
        &sandbox,
        &server,
        "link it",
        &["--allow-write", "--auto-approve"],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(out.results()[0]["ok"], true, "{:?}", out.results());
    assert!(
        std::fs::symlink_metadata(sandbox.workspace().join("link.rs"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "fn main() {}\n",
        "a hook rewrote a file outside the workspace"
    );
    // The hook still ran for the ordinary file the same command wrote.
    let logged = std::fs::read_to_string(&log).expect("the hook ran");
    assert!(
        logged.contains("real.rs") && !logged.contains("link.rs"),
        "{logged}"
    );
    let warned = out
        .of_type("warning")
        .iter()
        .any(|w| w.to_string().contains("not run for link.rs"));
    assert!(warned, "{:?}", out.lines);
}

/// The pids of live processes whose command line holds `marker`.
fn processes_marked(marker: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let zombie = state
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(marker) {
            out.push(pid);
        }
    }
    out
}

#[tokio::test]
async fn a_setsid_child_of_a_timed_out_hook_does_not_outlive_it() {
    let sandbox = Sandbox::new();
    let marker = format!("pablo-hook-daemon-{}", std::process::id());
    let started = sandbox.root().join("daemon.started");
    let hook = script(
        &sandbox,
        "slow.sh",
        &format!(
            "setsid sh -c 'touch {}; while :; do sleep 1; done' {marker} </dev/null >/dev/null 2>&1 &\n\
             while :; do sleep 1; done",
            started.display()
        ),
    );
    sandbox.user_config(&format!(
        "[[hooks.pre_tool_use]]\nname = \"slow\"\ntimeout_ms = 5000\ncommand = {}\n",
        toml_path(&hook)
    ));
    let server = ScriptedServer::start().await;
    server.push(call("c1", "shell_run", &json!({"command": "echo hi"})));
    server.push(say("ok"));
    let out = run(&sandbox, &server, "hi", &["--auto-approve"]).await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(
        hooks(&out)[0]["decision"],
        "failed_closed",
        "{:?}",
        hooks(&out)
    );
    assert!(started.exists(), "the hook's daemon never started");
    // A safety net of 20 s for the kernel to finish the kill, not a timing assertion.
    let mut left = processes_marked(&marker);
    for _ in 0..400 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        left = processes_marked(&marker);
    }
    for p in &left {
        if let Some(p) = rustix::process::Pid::from_raw(*p) {
            let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
        }
    }
    assert!(
        left.is_empty(),
        "the hook's setsid child outlived it: {left:?}"
    );
}

/// Issue 44 item 4, on resume: a `file_changed` hook's note rides with the next prompt; a session
/// that stops before that prompt still sends it, with the first prompt after the resume.
#[tokio::test]
async fn a_hooks_note_left_for_the_next_prompt_reaches_the_model_after_a_resume() {
    let sandbox = Sandbox::new();
    let note = script(
        &sandbox,
        "note.sh",
        "cat >/dev/null\necho '{\"hookSpecificOutput\":{\"additionalContext\":\"the formatter touched made.txt\"}}'",
    );
    sandbox.user_config(&format!(
        "[[hooks.file_changed]]\nname = \"fmt-note\"\ncommand = {}\n",
        toml_path(&note)
    ));
    let server = ScriptedServer::start().await;
    server.push(call(
        "c1",
        "shell_run",
        &json!({"command": "printf 'x' > made.txt"}),
    ));
    server.push(say("made it"));
    let first = run(
        &sandbox,
        &server,
        "make a file",
        &["--allow-write", "--auto-approve"],
    )
    .await;
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    let id = first.of_type("session_started")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    server.push(say("noted"));
    let second = run(&sandbox, &server, "go on", &["--resume", &id]).await;
    assert_eq!(second.code, Some(0), "{}", second.stderr);
    let last_user = server.last_user_text();
    assert!(last_user.contains("go on"), "{last_user}");
    assert!(
        last_user.contains("the formatter touched made.txt"),
        "the note reached the model: {last_user}"
    );
}

/// A subagent's turn ends with its own `file_changed` hooks, and their notes have no next prompt
/// of its own: they reach the parent's model with the task's result.
#[tokio::test]
async fn a_file_changed_note_from_a_subagents_change_reaches_the_parent_with_its_result() {
    use crate::support::http::{ScriptedResponse, openai};
    let sandbox = Sandbox::new();
    let note = script(
        &sandbox,
        "note.sh",
        "cat >/dev/null\necho '{\"hookSpecificOutput\":{\"additionalContext\":\"the formatter touched made.txt\"}}'",
    );
    sandbox.user_config(&format!(
        "[[hooks.file_changed]]\nname = \"fmt-note\"\ncommand = {}\n",
        toml_path(&note)
    ));
    std::fs::create_dir_all(sandbox.config_dir().join("agents")).unwrap();
    std::fs::write(
        sandbox.config_dir().join("agents/maker.md"),
        "---\nname: maker\ndescription: Makes files\ntools: [shell.run]\n---\nMake it.\n",
    )
    .unwrap();
    let server = ScriptedServer::start().await;
    server.respond_with(|r, _| {
        let body = r.json();
        let sub = body["messages"][0]["content"]
            .as_str()
            .is_some_and(|s| s.contains("# You are a subagent"));
        let answered = body["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        let args = match (sub, answered) {
            (true, false) => (
                "s1",
                "shell_run",
                json!({"command": "printf 'x' > made.txt"}),
            ),
            (false, false) => (
                "task",
                "agent_task",
                json!({"description": "make", "prompt": "make a file", "agent": "maker"}),
            ),
            (_, true) => return ScriptedResponse::sse(openai::text_answer("made")),
        };
        ScriptedResponse::sse(openai::tool_call_answer(
            args.0,
            args.1,
            &[&args.2.to_string()],
        ))
    });
    let out = run(
        &sandbox,
        &server,
        "have a file made",
        &["--allow-write", "--auto-approve"],
    )
    .await;
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(sandbox.workspace().join("made.txt").exists());
    let task = out
        .results()
        .into_iter()
        .find(|r| r["data"]["agent"] == "maker")
        .expect("the task's result")
        .clone();
    let notes = task["data"]["hook_notes"].to_string();
    assert!(notes.contains("the formatter touched made.txt"), "{task}");
}
