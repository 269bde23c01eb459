//! A new user's first session, through the real binary: write authority as each front-end grants
//! it, and commands that find the person's own toolchain but none of their secrets.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::bin::{Sandbox, json_lines};
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

fn call(id: &str, name: &str, args: &Value) -> ScriptedResponse {
    ScriptedResponse::sse(openai::tool_call_answer(id, name, &[&args.to_string()]))
}

fn say(text: &str) -> ScriptedResponse {
    ScriptedResponse::sse(openai::text_answer(text))
}

fn revision(text: &str) -> String {
    crate::support::revision_of(text.as_bytes())
}

/// Runs `cmd` to the end; the `tool_result` lines' results, in order.
async fn results_of(mut cmd: tokio::process::Command) -> (Option<i32>, Vec<Value>, String) {
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("pablo run finished within 60 s")
        .expect("pablo runs");
    let results = json_lines(&out.stdout)
        .into_iter()
        .filter(|l| l["type"] == "tool_result")
        .map(|l| l["result"].clone())
        .collect();
    (
        out.status.code(),
        results,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn offered_tools(server: &ScriptedServer) -> Vec<String> {
    server.requests()[0].json()["tools"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

// ---------------------------------------------------------------- write authority, headless

#[tokio::test]
async fn run_with_allow_write_creates_then_edits_a_file_without_auto_approve() {
    let server = ScriptedServer::start().await;
    let created = "# Changelog\n\n## 0.1.0\n";
    server.push(call(
        "c1",
        "fs_write",
        &json!({"path": "CHANGELOG.md", "text": created, "expected_revision": null}),
    ));
    server.push(call(
        "c2",
        "fs_edit",
        &json!({"path": "CHANGELOG.md", "old_text": "## 0.1.0", "new_text": "## 0.1.0\n\n- first release",
                "expected_revision": revision(created)}),
    ));
    server.push(say("CHANGELOG.md updated."));
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.run_json(
        &server.base_url(),
        "Update CHANGELOG.md from the release notes.",
    );
    cmd.args(["--allow-write", "--no-shell"]);
    let (code, results, stderr) = results_of(cmd).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(results.len(), 2);
    for r in &results {
        assert_eq!(r["ok"], true, "{r}");
    }
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace().join("CHANGELOG.md")).unwrap(),
        "# Changelog\n\n## 0.1.0\n\n- first release\n"
    );
}

#[tokio::test]
async fn a_layer_that_sets_fs_write_to_ask_turns_allow_write_back_into_approval_required() {
    let server = ScriptedServer::start().await;
    server.push(call(
        "c1",
        "fs_write",
        &json!({"path": "notes.md", "text": "hi\n", "expected_revision": null}),
    ));
    server.push(say("I could not write."));
    let sandbox = Sandbox::new();
    sandbox.user_config("[options.tools]\n\"fs.write\" = \"ask\"\n");
    let mut cmd = sandbox.run_json(&server.base_url(), "write notes");
    cmd.arg("--allow-write");
    let (_, results, _) = results_of(cmd).await;
    assert_eq!(
        results[0]["error"]["code"], "approval_required",
        "{}",
        results[0]
    );
    let message = results[0]["error"]["message"].as_str().unwrap();
    // The reason is said once, and names the setting that asked.
    assert_eq!(message.matches("is set to ask").count(), 1, "{message}");
    assert!(message.contains("config.user.tools.fs.write"), "{message}");
    assert!(!sandbox.workspace().join("notes.md").exists());
}

#[tokio::test]
async fn allow_write_still_refuses_paths_outside_the_write_roots_in_git_and_credentials() {
    let server = ScriptedServer::start().await;
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.workspace().join(".git")).unwrap();
    sandbox.user_config("[options.filesystem]\nwrite_roots = [\"docs\"]\n");
    for (i, path) in ["src/main.rs", ".git/config", "docs/.env", "docs/guide.md"]
        .iter()
        .enumerate()
    {
        server.push(call(
            &format!("c{i}"),
            "fs_write",
            &json!({"path": path, "text": "x\n", "expected_revision": null}),
        ));
    }
    server.push(say("done"));
    let mut cmd = sandbox.run_json(&server.base_url(), "write four files");
    cmd.arg("--allow-write");
    let (_, results, _) = results_of(cmd).await;
    assert_eq!(results.len(), 4);
    for r in &results[..3] {
        assert_eq!(r["ok"], false, "{r}");
    }
    assert_eq!(results[0]["error"]["code"], "denied", "{}", results[0]);
    assert_eq!(results[1]["error"]["code"], "denied", "{}", results[1]);
    assert_eq!(results[3]["ok"], true, "{}", results[3]);
    assert!(!sandbox.workspace().join("src/main.rs").exists());
    assert!(!sandbox.workspace().join(".git/config").exists());
    assert!(!sandbox.workspace().join("docs/.env").exists());
    assert!(sandbox.workspace().join("docs/guide.md").exists());
}

#[tokio::test]
async fn run_without_allow_write_offers_no_tool_that_changes_files() {
    let server = ScriptedServer::start().await;
    server.push(say("read only"));
    let sandbox = Sandbox::new();
    let (code, _, stderr) = results_of(sandbox.run_json(&server.base_url(), "look")).await;
    assert_eq!(code, Some(0), "{stderr}");
    let tools = offered_tools(&server);
    assert!(tools.contains(&"fs_read".to_string()), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t == "fs_write" || t == "fs_edit"),
        "{tools:?}"
    );
}

// ---------------------------------------------------------------- the person's toolchain

/// `pablo run --auto-approve` running `command` once through `shell.run`, with `env` added to
/// the sandbox's environment (whose PATH is the test's own). Returns the command's output.
async fn shell_output(sandbox: &Sandbox, command: &str, env: &[(&str, &str)]) -> Value {
    let server = ScriptedServer::start().await;
    server.push(call("c1", "shell_run", &json!({"command": command})));
    server.push(say("ran"));
    let mut cmd = sandbox.run_json(&server.base_url(), "run it");
    cmd.arg("--auto-approve");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let (code, results, stderr) = results_of(cmd).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(results[0]["ok"], true, "{}", results[0]);
    results[0]["data"].clone()
}

fn path_with(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn executable(path: &Path, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, script).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[tokio::test]
async fn a_program_on_the_users_path_is_found_by_shell_run_and_by_policy_check() {
    let sandbox = Sandbox::new();
    let bin = sandbox.root().join("tools-bin");
    std::fs::create_dir_all(&bin).unwrap();
    executable(&bin.join("mytool"), "#!/bin/sh\necho mytool ran\n");
    let path = path_with(&bin);
    let data = shell_output(&sandbox, "mytool", &[("PATH", &path)]).await;
    assert_eq!(data["exit_code"], 0, "{data}");
    assert!(
        data["output"].as_str().unwrap().contains("mytool ran"),
        "{data}"
    );

    let out = sandbox
        .command()
        .env("PATH", &path)
        .args(["policy", "check", "--json", "--env", "--", "mytool"])
        .output()
        .await
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mytool = bin.join("mytool").canonicalize().unwrap();
    assert_eq!(
        report["commands"][0]["executable"],
        mytool.display().to_string(),
        "{report}"
    );
    let env_path = report["env"]["vars"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "PATH")
        .unwrap()["value"]
        .clone();
    // The person's PATH, as given (repeated entries once).
    let mut expected: Vec<&str> = Vec::new();
    for dir in path.split(':') {
        if !expected.contains(&dir) {
            expected.push(dir);
        }
    }
    assert_eq!(env_path, expected.join(":").as_str(), "{report}");
}

#[tokio::test]
async fn an_activated_virtualenv_is_the_python_a_command_runs() {
    let sandbox = Sandbox::new();
    let venv = sandbox.root().join("venv");
    let made = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .expect("python3 runs");
    assert!(made.success(), "python3 -m venv failed");
    let path = path_with(&venv.join("bin"));
    let data = shell_output(
        &sandbox,
        "python -c 'import sys; print(sys.prefix)'",
        &[("PATH", &path), ("VIRTUAL_ENV", venv.to_str().unwrap())],
    )
    .await;
    assert_eq!(data["exit_code"], 0, "{data}");
    assert_eq!(
        data["output"].as_str().unwrap().trim(),
        venv.display().to_string(),
        "{data}"
    );
}

#[tokio::test]
async fn rustups_cargo_runs_through_shell_run_with_the_users_home() {
    // As a person runs it: their own HOME (where rustup lives) and PATH. pablo does not pass
    // HOME to the command, so cargo works only through the toolchain homes derived from it.
    let Some(home) = std::env::var_os("HOME") else {
        eprintln!("skipped: no HOME in the test environment");
        return;
    };
    let has_cargo = std::process::Command::new("cargo")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_cargo {
        eprintln!("skipped: cargo is not on this machine's PATH");
        return;
    }
    let sandbox = Sandbox::new();
    let data = shell_output(
        &sandbox,
        "cargo --version && env",
        &[("HOME", home.to_str().unwrap())],
    )
    .await;
    assert_eq!(data["exit_code"], 0, "{data}");
    let output = data["output"].as_str().unwrap();
    assert!(output.starts_with("cargo "), "{output}");
    assert!(!output.lines().any(|l| l.starts_with("HOME=")), "{output}");
}

#[tokio::test]
async fn secrets_and_home_never_reach_a_command_unless_home_is_configured() {
    let sandbox = Sandbox::new();
    let planted = [
        ("X_API_KEY", "planted-x-api-key-value"),
        ("GITHUB_TOKEN", "planted-github-token-value"),
        ("OPENAI_API_KEY", "sk-planted-provider-key"),
        ("VIRTUAL_ENV", "/opt/some-venv"),
    ];
    let data = shell_output(&sandbox, "env", &planted).await;
    let output = data["output"].as_str().unwrap();
    for (name, value) in &planted[..3] {
        assert!(
            !output.contains(name),
            "{name} reached the command:\n{output}"
        );
        assert!(
            !output.contains(value),
            "{name}'s value reached the command"
        );
    }
    assert!(output.contains("VIRTUAL_ENV=/opt/some-venv"), "{output}");
    assert!(!output.lines().any(|l| l.starts_with("HOME=")), "{output}");

    sandbox.user_config("[options.shell.env]\ninherit = [\"HOME\"]\n");
    let data = shell_output(&sandbox, "env", &planted).await;
    let output = data["output"].as_str().unwrap();
    let home = format!("HOME={}", sandbox.root().join("home").display());
    assert!(output.lines().any(|l| l == home), "{output}");
    for (name, _) in &planted[..3] {
        assert!(
            !output.contains(name),
            "{name} reached the command:\n{output}"
        );
    }
}

#[tokio::test]
async fn pablo_run_without_json_prints_each_result_as_a_line_of_words() {
    let server = ScriptedServer::start().await;
    server.push(call(
        "c1",
        "shell_run",
        &json!({"command": "touch made.txt"}),
    ));
    server.push(call(
        "c2",
        "fs_write",
        &json!({"path": "NOTES.md", "text": "hello\n", "expected_revision": null}),
    ));
    server.push(say("Wrote NOTES.md."));
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.command();
    cmd.env("OPENAI_API_KEY", "sk-test-key")
        .args([
            "--provider",
            "openai",
            "--model",
            "test-model",
            "--base-url",
        ])
        .arg(server.base_url())
        .args(["run", "write notes", "--allow-write"]);
    let out = cmd.output().await.unwrap();
    // Progress is on stderr; stdout holds only the answer.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Wrote NOTES.md.\n");
    assert!(
        stderr.contains("✗ shell.run was not run: `touch` matches no rule"),
        "{stderr}"
    );
    assert!(
        stderr.contains("✓ fs.write: created NOTES.md (+1 −0)"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("{\""),
        "a result printed as JSON:\n{stderr}"
    );
}
