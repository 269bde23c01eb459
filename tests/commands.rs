//! The commands people reach for, through the real binary: `pablo run` as a script step (only
//! the answer on stdout), `pablo export` / `import` / `fork`, and the generated completions and
//! man page.

use std::process::Output;

use serde_json::Value;

use crate::support::bin::Sandbox;
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

/// `pablo` with the scripted server as its model (flags; `extra` before the subcommand's own).
fn pablo(sb: &Sandbox, server: &ScriptedServer, args: &[&str]) -> tokio::process::Command {
    let mut cmd = sb.command();
    cmd.env("OPENAI_API_KEY", "sk-test-key")
        .args([
            "--provider",
            "openai",
            "--model",
            "test-model",
            "--base-url",
        ])
        .arg(server.base_url())
        .args(args);
    cmd
}

/// `pablo ARGS` with no model configured.
fn bare(sb: &Sandbox, args: &[&str]) -> tokio::process::Command {
    let mut cmd = sb.command();
    cmd.args(args);
    cmd
}

async fn ran(mut cmd: tokio::process::Command) -> Output {
    let out = cmd.output().await.expect("pablo runs");
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn call(id: &str, name: &str, args: &Value) -> ScriptedResponse {
    let args = args.to_string();
    ScriptedResponse::sse(openai::tool_call_answer(id, name, &[args.as_str()]))
}

fn say(words: &str) -> ScriptedResponse {
    ScriptedResponse::sse(openai::text_answer(words))
}

/// The user messages of a request the server received, in order.
fn user_texts(body: &Value) -> Vec<String> {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_redirected_leaves_exactly_the_answer_in_stdout_and_names_each_tool_on_stderr() {
    let server = ScriptedServer::start().await;
    server.push(call(
        "c1",
        "fs_read",
        &serde_json::json!({"path": "notes.txt"}),
    ));
    server.push(say("The notes say hello twice."));
    let sb = Sandbox::new();
    std::fs::write(sb.workspace().join("notes.txt"), "hello\nhello\n").unwrap();
    let last = sb.root().join("last.md");
    let out = ran(pablo(
        &sb,
        &server,
        &[
            "run",
            "--output-last-message",
            last.to_str().unwrap(),
            "what do the notes say?",
        ],
    ))
    .await;
    assert_eq!(text(&out.stdout), "The notes say hello twice.\n");
    let stderr = text(&out.stderr);
    // Not a terminal: plain lines, the tool and its main argument on each.
    assert!(stderr.contains("fs.read notes.txt"), "{stderr}");
    assert!(stderr.contains("done: end_turn"), "{stderr}");
    assert!(
        !stderr.contains("\x1b["),
        "escape codes on a pipe: {stderr:?}"
    );
    assert!(!stderr.contains("The notes say hello twice."), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&last).unwrap(),
        "The notes say hello twice.\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_leaves_stdout_empty_and_says_why_on_stderr() {
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::error(
        400,
        "invalid_request_error",
        "no such model",
    ));
    let sb = Sandbox::new();
    let out = pablo(&sb, &server, &["run", "hello"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    assert!(
        text(&out.stderr).contains("error: "),
        "{}",
        text(&out.stderr)
    );
}

/// One journaled session with two turns: the first writes NOTES.md (with `--allow-write`), the
/// second only answers. Returns the session id.
async fn two_turn_session(sb: &Sandbox, server: &ScriptedServer) -> String {
    server.push(call(
        "w1",
        "fs_write",
        &serde_json::json!({"path": "NOTES.md", "text": "remember the milk\n", "expected_revision": null}),
    ));
    server.push(say("I wrote the note."));
    let first = ran(pablo(
        sb,
        server,
        &["run", "--json", "--allow-write", "first task: write a note"],
    ))
    .await;
    let lines = crate::support::bin::json_lines(&first.stdout);
    let id = lines[0]["session_id"].as_str().unwrap().to_string();
    server.push(say("Second answer."));
    ran(pablo(
        sb,
        server,
        &["run", "--resume", &id, "second task: say something"],
    ))
    .await;
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_last_as_markdown_holds_the_messages_the_tool_call_and_the_diff_that_landed() {
    let server = ScriptedServer::start().await;
    let sb = Sandbox::new();
    two_turn_session(&sb, &server).await;
    let out = ran(pablo(&sb, &server, &["export", "--last", "--format", "md"])).await;
    let md = text(&out.stdout);
    for expected in [
        "# first task: write a note",
        "## Turn 1",
        "first task: write a note",
        "I wrote the note.",
        "`fs.write` NOTES.md ✓",
        "```diff",
        "+remember the milk",
        "## Turn 2",
        "Second answer.",
    ] {
        assert!(md.contains(expected), "{expected:?} missing:\n{md}");
    }
    // `-o FILE` writes the same text to the file, nothing to stdout.
    let file = sb.root().join("session.md");
    let out = ran(pablo(
        &sb,
        &server,
        &["export", "--last", "-o", file.to_str().unwrap()],
    ))
    .await;
    assert_eq!(text(&out.stdout), "");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), md);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_json_imports_back_into_a_session_that_resumes_with_its_conversation() {
    let server = ScriptedServer::start().await;
    let sb = Sandbox::new();
    let id = two_turn_session(&sb, &server).await;
    let file = sb.root().join("session.json");
    ran(pablo(
        &sb,
        &server,
        &[
            "export",
            &id,
            "--format",
            "json",
            "-o",
            file.to_str().unwrap(),
        ],
    ))
    .await;
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(doc["kind"], "pablo.session");
    let out = ran(pablo(&sb, &server, &["import", file.to_str().unwrap()])).await;
    let new_id = text(&out.stdout).trim().to_string();
    assert_ne!(new_id, id);
    let listed = ran(bare(&sb, &["sessions"])).await;
    assert!(
        text(&listed.stdout).contains(&new_id),
        "{}",
        text(&listed.stdout)
    );
    server.push(say("Third answer."));
    let out = ran(pablo(
        &sb,
        &server,
        &["run", "--resume", &new_id, "third task"],
    ))
    .await;
    assert_eq!(text(&out.stdout), "Third answer.\n");
    let body = server.requests().last().unwrap().json();
    let users = user_texts(&body);
    assert_eq!(users.len(), 3, "{users:?}");
    assert!(users[0].contains("first task"), "{users:?}");
    assert!(users[1].contains("second task"), "{users:?}");
    assert!(users[2].contains("third task"), "{users:?}");
    // Something that is not an export is refused with its code, and no session appears.
    std::fs::write(sb.root().join("bad.json"), "{\"kind\": \"other\"}").unwrap();
    let before = std::fs::read_dir(sb.data_dir().join("sessions"))
        .unwrap()
        .count();
    let bad = sb
        .command()
        .args(["import", sb.root().join("bad.json").to_str().unwrap()])
        .output()
        .await
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("not a session export"),
        "{}",
        text(&bad.stderr)
    );
    let after = std::fs::read_dir(sb.data_dir().join("sessions"))
        .unwrap()
        .count();
    assert_eq!(before, after);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_at_1_gives_a_session_whose_next_request_holds_only_the_first_turn() {
    let server = ScriptedServer::start().await;
    let sb = Sandbox::new();
    let id = two_turn_session(&sb, &server).await;
    let journal = sb.data_dir().join("sessions").join(format!("{id}.jsonl"));
    let old = std::fs::read(&journal).unwrap();
    let out = ran(pablo(&sb, &server, &["fork", &id, "--at", "1"])).await;
    let fork_id = text(&out.stdout).trim().to_string();
    assert_ne!(fork_id, id);
    // The old session is as it was; the files were not touched.
    assert_eq!(std::fs::read(&journal).unwrap(), old);
    assert_eq!(
        std::fs::read_to_string(sb.workspace().join("NOTES.md")).unwrap(),
        "remember the milk\n"
    );
    server.push(say("Forked answer."));
    ran(pablo(
        &sb,
        &server,
        &["run", "--resume", &fork_id, "after the fork"],
    ))
    .await;
    let users = user_texts(&server.requests().last().unwrap().json());
    assert_eq!(users.len(), 2, "{users:?}");
    assert!(users[0].contains("first task"), "{users:?}");
    assert!(users[1].contains("after the fork"), "{users:?}");
    // A turn the session does not have is refused with its code.
    let bad = sb
        .command()
        .args(["fork", &id, "--at", "9"])
        .output()
        .await
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("no turn 9"),
        "{}",
        text(&bad.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_for_every_shell_are_generated_and_bash_accepts_its_script() {
    let sb = Sandbox::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = ran(bare(&sb, &["completions", shell])).await;
        let script = text(&out.stdout);
        assert!(script.contains("export"), "{shell}: {script}");
        assert!(script.contains("output-last-message"), "{shell}");
        if shell == "bash" {
            let file = sb.root().join("pablo.bash");
            std::fs::write(&file, &script).unwrap();
            let checked = tokio::process::Command::new("bash")
                .arg("-n")
                .arg(&file)
                .output()
                .await
                .unwrap();
            assert!(checked.status.success(), "{}", text(&checked.stderr));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_man_page_is_roff_naming_every_command_and_a_directory_gets_one_page_each() {
    let sb = Sandbox::new();
    let out = ran(bare(&sb, &["man"])).await;
    let page = text(&out.stdout);
    assert!(
        page.starts_with(".ie") || page.contains(".TH pablo"),
        "{page}"
    );
    for command in ["run", "export", "import", "fork", "completions", "resume"] {
        assert!(page.contains(command), "{command} missing");
    }
    let dir = sb.root().join("man");
    ran(bare(&sb, &["man", "--dir", dir.to_str().unwrap()])).await;
    let run_page = std::fs::read_to_string(dir.join("pablo-run.1")).unwrap();
    assert!(run_page.contains("output\\-last\\-message"), "{run_page}");
    assert!(dir.join("pablo-export.1").is_file());
    assert!(dir.join("pablo-policy-check.1").is_file());
    // clap's own `help` subcommands are not pablo's commands: no page for any of them.
    let helps: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("help"))
        .collect();
    assert!(helps.is_empty(), "{helps:?}");
    let config_page = std::fs::read_to_string(dir.join("pablo-config.1")).unwrap();
    assert!(
        !config_page.contains("pablo\\-config\\-help"),
        "{config_page}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_count_one_sessions_usage_after_it_is_forked_and_exported_and_imported() {
    let server = ScriptedServer::start().await;
    let sb = Sandbox::new();
    sb.user_config(&format!(
        "provider = \"openai\"\nbase_url = \"{}\"\n\n[model]\nname = \"test-model\"\n\n\
         [model.prices]\ninput = 3.0\noutput = 15.0\n",
        server.base_url()
    ));
    server.push(ScriptedResponse::sse(
        openai::Stream::new()
            .text(&["done"])
            .finish("stop")
            .usage(1000, 100)
            .done(),
    ));
    let mut run = bare(&sb, &["run", "--json", "one task"]);
    run.env("OPENAI_API_KEY", "sk-test-key");
    let lines = crate::support::bin::json_lines(&ran(run).await.stdout);
    let id = lines[0]["session_id"].as_str().unwrap().to_string();
    let stats = || async {
        let out = ran(bare(&sb, &["stats", "--json"])).await;
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let before = stats().await;
    assert_eq!(before["sessions"], 1, "{before}");
    assert_eq!(before["models"][0]["calls"], 1, "{before}");

    ran(bare(&sb, &["fork", &id])).await;
    let file = sb.root().join("session.json");
    ran(bare(
        &sb,
        &[
            "export",
            &id,
            "--format",
            "json",
            "-o",
            file.to_str().unwrap(),
        ],
    ))
    .await;
    ran(bare(&sb, &["import", file.to_str().unwrap()])).await;
    let listed = text(&ran(bare(&sb, &["sessions"])).await.stdout);
    assert!(
        listed.lines().count() >= 3,
        "three sessions are listed:\n{listed}"
    );
    // The copies hold the same history, but that usage was spent once.
    let after = stats().await;
    assert_eq!(after["sessions"], before["sessions"], "{after}");
    assert_eq!(after["turns"], before["turns"], "{after}");
    assert_eq!(after["models"], before["models"], "{after}");
    assert_eq!(after["tool_calls"], before["tool_calls"], "{after}");
}
