//! Integration tests: the command line as scripts and pipes see it.
//!
//! Every printing command survives a reader that went away; the full-screen commands refuse to
//! start without a terminal and write nothing; `pablo run --json` keeps its one-object-per-line
//! contract even when it cannot start; `pablo config validate` names every problem.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::Duration;

use crate::support::bin::{Sandbox, json_lines};

struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

async fn output(mut cmd: tokio::process::Command) -> Ran {
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("pablo finished within 60 s")
        .expect("pablo runs");
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `pablo ARGS` with stdout a pipe whose reading end is already closed: every write fails with
/// EPIPE, as for `pablo … | head -1` once `head` has its line.
async fn into_closed_pipe(sandbox: &Sandbox, args: &[&str]) -> Ran {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut cmd = sandbox.command();
    cmd.args(args).stdout(writer).stderr(Stdio::piped());
    // Not `output()`: it would replace stdout with a pipe of its own.
    let child = cmd.spawn().expect("pablo runs");
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("pablo finished within 60 s")
        .expect("pablo ran");
    Ran {
        code: out.status.code(),
        stdout: String::new(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[tokio::test]
async fn printing_commands_treat_a_closed_pipe_as_success() {
    let sandbox = Sandbox::new();
    let config = sandbox.root().join("good.toml");
    std::fs::write(&config, "model = \"m\"\n").unwrap();
    let config = config.to_str().unwrap().to_string();
    for args in [
        vec!["sessions"],
        vec!["policy", "check", "--", "ls -la"],
        vec!["policy", "check", "--json", "--env", "--", "git status"],
        vec!["policy", "rules"],
        vec!["config", "validate", &config],
        vec!["mcp", "list"],
        vec!["mcp", "list", "--json"],
        vec!["--version"],
    ] {
        let ran = into_closed_pipe(&sandbox, &args).await;
        assert!(
            !ran.stderr.contains("panicked") && !ran.stderr.contains("Broken pipe"),
            "pablo {args:?}: {}",
            ran.stderr
        );
        // `policy check` answers with its decision (0 allow, 3 ask); nothing else may change.
        let expected = if args[0] == "policy" && args[1] == "check" {
            ran.code.filter(|c| [0, 3].contains(c))
        } else {
            Some(0)
        };
        assert_eq!(ran.code, expected, "pablo {args:?}: {}", ran.stderr);
    }
}

#[tokio::test]
async fn mcp_list_into_a_closed_pipe_is_no_panic_with_servers_configured() {
    let sandbox = Sandbox::new();
    sandbox.user_config(
        "[mcp_servers.quits]\ncommand = \"sh\"\nargs = [\"-c\", \"exit 3\"]\n\
         [mcp_servers.quiet]\ncommand = \"sh\"\nargs = [\"-c\", \"exit 4\"]\n",
    );
    let ran = into_closed_pipe(&sandbox, &["mcp", "list"]).await;
    assert!(
        !ran.stderr.contains("panicked") && !ran.stderr.contains("Broken pipe"),
        "{}",
        ran.stderr
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
}

#[tokio::test]
async fn demo_without_a_terminal_refuses_writes_nothing_to_stdout_and_leaves_no_copy() {
    let sandbox = Sandbox::new();
    let tmp = sandbox.root().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut cmd = sandbox.command();
    cmd.env("TMPDIR", &tmp).arg("demo");
    let ran = output(cmd).await;
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert_eq!(ran.stdout, "", "nothing, not even a restore sequence");
    assert!(ran.stderr.contains("needs a terminal"), "{}", ran.stderr);
    assert!(ran.stderr.contains("pablo run"), "{}", ran.stderr);
    assert_eq!(ran.stderr.lines().count(), 1, "{}", ran.stderr);
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[tokio::test]
async fn plain_pablo_without_a_terminal_refuses_and_journals_nothing() {
    let sandbox = Sandbox::new();
    sandbox.user_config(
        "provider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    );
    let mut cmd = sandbox.command();
    cmd.env("OPENAI_API_KEY", "sk-test-key");
    let ran = output(cmd).await;
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert_eq!(ran.stdout, "");
    assert!(ran.stderr.contains("needs a terminal"), "{}", ran.stderr);
    let sessions = sandbox.data_dir().join("sessions");
    assert!(
        !sessions.exists() || std::fs::read_dir(&sessions).unwrap().next().is_none(),
        "a session was left in {}",
        sessions.display()
    );
}

/// `pablo run --json` that cannot start: exactly one line on stdout, an `error` with `code`.
async fn json_setup_failure(sandbox: &Sandbox, args: &[&str]) -> serde_json::Value {
    json_setup_failure_with(sandbox, args, &[]).await
}

async fn json_setup_failure_with(
    sandbox: &Sandbox,
    args: &[&str],
    run_args: &[&str],
) -> serde_json::Value {
    let mut cmd = sandbox.command();
    cmd.args(args)
        .args(["run", "--json"])
        .args(run_args)
        .arg("do something");
    let ran = output(cmd).await;
    assert_eq!(ran.code, Some(2), "pablo {args:?}: {}", ran.stderr);
    let lines = json_lines(ran.stdout.as_bytes());
    assert_eq!(lines.len(), 1, "pablo {args:?}: {}", ran.stdout);
    let line = lines.into_iter().next().unwrap();
    assert_eq!(line["type"], "error", "{line}");
    assert!(!line["message"].as_str().unwrap_or("").is_empty(), "{line}");
    line
}

#[tokio::test]
async fn run_json_setup_failures_print_one_error_line_with_a_stable_code() {
    let sandbox = Sandbox::new();
    let root = sandbox.root();
    let bad_toml = root.join("bad.toml");
    std::fs::write(&bad_toml, "[limits]\nmax_tool_calls = \"soon\"\n").unwrap();
    let bad_policy = root.join("bad.json");
    std::fs::write(&bad_policy, "{ not json").unwrap();
    let missing = root.join("missing.toml");
    let key = [
        "--provider",
        "openai",
        "--base-url",
        "http://127.0.0.1:9/v1",
    ];
    // Each case has one thing wrong: with a provider that needs no key, only what it names.
    let with_key =
        |more: &[&str]| -> Vec<String> { key.iter().chain(more).map(|s| s.to_string()).collect() };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            with_key(&["--config", missing.to_str().unwrap()]),
            "config_unreadable",
        ),
        (
            with_key(&["--config", bad_toml.to_str().unwrap()]),
            "config_invalid",
        ),
        (
            with_key(&["--policy", bad_policy.to_str().unwrap()]),
            "policy_invalid",
        ),
        (
            with_key(&["--policy", root.join("nope.json").to_str().unwrap()]),
            "policy_unreadable",
        ),
        // The real service with no OPENAI_API_KEY in the environment.
        (vec!["--provider".into(), "openai".into()], "model_config"),
        (vec!["--provider".into(), "gemini".into()], "model_config"),
        (
            with_key(&["--workspace", root.join("no-such-dir").to_str().unwrap()]),
            "workspace_unavailable",
        ),
    ];
    for (args, code) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let line = json_setup_failure(&sandbox, &args).await;
        assert_eq!(line["code"], code, "pablo {args:?}: {line}");
    }
    // The key is there but the session to resume is not.
    let line = json_setup_failure_with(&sandbox, &key, &["--resume", "0190ffff-nosuch"]).await;
    assert_eq!(line["code"], "session_not_found", "{line}");
    // A journal from a newer pablo.
    let sessions = sandbox.data_dir().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let id = "0190aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee";
    std::fs::write(
        sessions.join(format!("{id}.jsonl")),
        format!(
            "{{\"type\":\"header\",\"format\":99,\"id\":\"{id}\",\"created\":\"2030-01-01T00:00:00Z\",\
             \"workspace\":\"{}\",\"model\":\"m\",\"provider\":\"openai\",\"pablo_version\":\"9.0.0\"}}\n",
            sandbox.workspace().display()
        ),
    )
    .unwrap();
    let line = json_setup_failure_with(&sandbox, &key, &["--resume", id]).await;
    assert_eq!(line["code"], "session_format_unsupported", "{line}");
}

#[tokio::test]
async fn config_validate_names_every_problem_with_its_file_line_and_key() {
    let sandbox = Sandbox::new();
    let file = sandbox.root().join("config.toml");
    std::fs::write(
        &file,
        "provider = \"foo\"\n\n[limits]\nmax_tool_calls = \"soon\"\n\n[options.shell]\n\
         timeout_secs = 5\n",
    )
    .unwrap();
    let mut cmd = sandbox.command();
    cmd.args(["config", "validate"]).arg(&file);
    let ran = output(cmd).await;
    assert_eq!(ran.code, Some(1), "{}", ran.stderr);
    let f = file.display().to_string();
    let lines: Vec<&str> = ran.stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{}", ran.stderr);
    assert!(
        lines[0].starts_with(&format!("{f}:1: provider: unknown provider \"foo\"")),
        "{}",
        ran.stderr
    );
    assert!(
        lines[1].starts_with(&format!(
            "{f}:4: limits.max_tool_calls: invalid type: string \"soon\""
        )),
        "{}",
        ran.stderr
    );
    assert!(
        lines[2].starts_with(&format!(
            "{f}:7: options.shell.timeout_secs: unknown field `timeout_secs`"
        )),
        "{}",
        ran.stderr
    );
}

#[tokio::test]
async fn policy_check_allows_git_status_under_a_rule_naming_the_bare_program() {
    let sandbox = Sandbox::new();
    // A git that is not /usr/bin/git, first on the PATH commands get.
    let bin = sandbox.root().join("tools-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let git = bin.join("git");
    std::fs::write(&git, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&git, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let config = |executable: &str| {
        format!(
            "[options.shell.env]\nset = {{ PATH = \"{}:/usr/bin:/bin\" }}\n\n\
             [options.shell.commands]\ndefault = \"deny\"\n\
             allow = [ {{ id = \"docs.git-status\", executable = \"{executable}\", \
             args = [\"status\"], match = \"prefix\" }} ]\n",
            bin.display()
        )
    };
    let check = |sandbox: &Sandbox| {
        let mut cmd = sandbox.command();
        cmd.args(["policy", "check", "--", "git status"]);
        cmd
    };
    sandbox.user_config(&config("git"));
    let ran = output(check(&sandbox)).await;
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stdout
            .contains(&format!("executable: {}", git.display())),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("docs.git-status"), "{}", ran.stdout);
    // A rule naming a full path means that file only: here `git` is not /usr/bin/git.
    sandbox.user_config(&config("/usr/bin/git"));
    let ran = output(check(&sandbox)).await;
    assert_eq!(ran.code, Some(4), "{}{}", ran.stdout, ran.stderr);
    assert!(ran.stdout.contains("deny"), "{}", ran.stdout);
}

#[tokio::test]
async fn an_unknown_mode_is_refused_by_the_flag_and_by_config_validate_and_nothing_is_written() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.command();
    cmd.args(["--mode", "sideways", "sessions"]);
    let ran = output(cmd).await;
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains("unknown mode \"sideways\": the modes are ask, auto-edit and plan"),
        "{}",
        ran.stderr
    );
    let file = sandbox.root().join("config.toml");
    std::fs::write(&file, "[tui]\nmode = \"sideways\"\n").unwrap();
    let mut cmd = sandbox.command();
    cmd.args(["config", "validate"]).arg(&file);
    let ran = output(cmd).await;
    assert_eq!(ran.code, Some(1), "{}", ran.stderr);
    assert!(
        ran.stderr.starts_with(&format!(
            "{}:2: tui.mode: unknown variant `sideways`",
            file.display()
        )),
        "{}",
        ran.stderr
    );
    // Refused before anything started: no session, no data directory.
    assert!(!sandbox.data_dir().join("sessions").exists());
}

#[tokio::test]
async fn run_json_announces_each_retry_of_a_model_request_then_answers() {
    use crate::support::http::{ScriptedResponse, ScriptedServer, openai};
    let server = ScriptedServer::start().await;
    for _ in 0..2 {
        server.push(
            ScriptedResponse::error(503, "overloaded", "try later").header("retry-after", "0"),
        );
    }
    server.push(ScriptedResponse::sse(openai::text_answer("answered")));
    let sandbox = Sandbox::new();
    let out = sandbox
        .run_json(&server.base_url(), "hello")
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&out.stdout);
    let retries: Vec<_> = lines.iter().filter(|l| l["type"] == "retry").collect();
    let host = server
        .base_url()
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_string();
    assert_eq!(retries.len(), 2, "{lines:#?}");
    for (line, attempt) in retries.iter().zip([2, 3]) {
        assert_eq!(
            **line,
            serde_json::json!({"type": "retry", "attempt": attempt, "max_attempts": 5,
                "wait_ms": 0, "reason": format!("503 from {host}"), "code": "model_http_error"})
        );
    }
    let message = lines.iter().position(|l| l["type"] == "message").unwrap();
    let first_retry = lines.iter().position(|l| l["type"] == "retry").unwrap();
    assert!(first_retry < message);
    assert_eq!(lines[message]["text"], "answered");
}

#[tokio::test]
async fn a_base_url_that_is_not_a_url_is_a_model_config_error_at_once() {
    let sandbox = Sandbox::new();
    for url in ["not a url", "ftp://x", "http://127.0.0.1:/v1", ""] {
        let line = json_setup_failure(&sandbox, &["--provider", "openai", "--base-url", url]).await;
        assert_eq!(line["code"], "model_config", "--base-url {url:?}: {line}");
        assert!(
            line["message"].as_str().unwrap().contains("base URL"),
            "--base-url {url:?}: {line}"
        );
    }
}

#[tokio::test]
async fn a_usage_error_under_json_prints_exactly_one_error_line_on_stdout() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.command();
    cmd.args([
        "run",
        "--json",
        "--read-only",
        "--allow-write",
        "do something",
    ]);
    let ran = output(cmd).await;
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    let lines = json_lines(ran.stdout.as_bytes());
    assert_eq!(lines.len(), 1, "{}", ran.stdout);
    assert_eq!(lines[0]["type"], "error", "{}", ran.stdout);
    assert_eq!(lines[0]["code"], "usage_error", "{}", ran.stdout);
    assert!(
        lines[0]["message"]
            .as_str()
            .unwrap()
            .contains("--allow-write"),
        "{}",
        ran.stdout
    );
}

#[tokio::test]
async fn every_start_up_error_ends_stderr_with_its_code() {
    let sandbox = Sandbox::new();
    let root = sandbox.root();
    std::fs::write(root.join("bad.json"), "{\"kind\": \"other\"}").unwrap();
    let bad_json = root.join("bad.json");
    let missing = root.join("missing.toml");
    let key = [
        "--provider",
        "openai",
        "--base-url",
        "http://127.0.0.1:9/v1",
    ];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--config", missing.to_str().unwrap(), "run", "hi"],
            "config_unreadable",
        ),
        (
            vec!["run", "--read-only", "--allow-write", "hi"],
            "usage_error",
        ),
        (vec!["run", "--no-such-flag", "hi"], "usage_error"),
        (vec!["stats", "--since", "yesterday-ish"], "usage_error"),
        ([&key[..], &["run", "  "]].concat(), "usage_error"),
        (
            vec!["import", bad_json.to_str().unwrap()],
            "session_import_invalid",
        ),
        (
            vec!["fork", "0190ffff-nosuch", "--at", "5"],
            "session_not_found",
        ),
        (vec!["mcp", "tools", "nosuch"], "mcp_unknown_server"),
        (
            [&key[..], &["run", "--resume", "0190ffff-nosuch", "hi"]].concat(),
            "session_not_found",
        ),
    ];
    for (args, code) in cases {
        let mut cmd = sandbox.command();
        cmd.args(&args);
        let ran = output(cmd).await;
        assert_eq!(ran.code, Some(2), "pablo {args:?}: {}", ran.stderr);
        let last = ran.stderr.lines().last().unwrap_or_default();
        assert!(
            last.starts_with("pablo: ") && last.ends_with(&format!("({code})")),
            "pablo {args:?}: the last line of stderr is {last:?}:\n{}",
            ran.stderr
        );
    }
}

#[tokio::test]
async fn mcp_tools_help_promises_only_what_it_prints() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.command();
    cmd.args(["mcp", "tools", "--help"]);
    let ran = output(cmd).await;
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(
        ran.stdout.contains("real name, description"),
        "{}",
        ran.stdout
    );
    assert!(!ran.stdout.contains("schema"), "{}", ran.stdout);
}

#[tokio::test]
async fn config_show_json_gives_each_value_its_json_type() {
    let sandbox = Sandbox::new();
    sandbox.user_config(
        "model = \"m\"\n[limits]\nmax_tool_calls = 5\n[options.shell]\nenabled = false\n\
         custom_deny_patterns = [\"rm\"]\n",
    );
    let mut cmd = sandbox.command();
    cmd.args(["config", "show", "--json"]);
    let ran = output(cmd).await;
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let lines = json_lines(ran.stdout.as_bytes());
    let value = |key: &str| {
        lines
            .iter()
            .find(|l| l["key"] == key)
            .unwrap_or_else(|| panic!("{key}: {}", ran.stdout))["value"]
            .clone()
    };
    assert_eq!(value("limits.max_tool_calls"), serde_json::json!(5));
    assert_eq!(value("options.shell.enabled"), serde_json::json!(false));
    assert_eq!(
        value("options.shell.custom_deny_patterns"),
        serde_json::json!(["rm"])
    );
    assert_eq!(value("model"), serde_json::json!("m"));
}
