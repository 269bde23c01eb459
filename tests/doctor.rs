//! Integration tests: `pablo doctor` says what works here and what does not, each problem with a
//! fix, and its exit status tells a script whether something needed is broken.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::Value;

use crate::support::bin::Sandbox;
use crate::support::http::{ScriptedResponse, ScriptedServer};

async fn doctor_json(mut cmd: tokio::process::Command) -> (Option<i32>, Value) {
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("pablo doctor finished within 60 s")
        .expect("pablo runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("one JSON object ({e}): {stdout}"));
    (out.status.code(), report)
}

fn check<'a>(report: &'a Value, area: &str, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .expect("checks is an array")
        .iter()
        .find(|c| c["area"] == area && c["name"] == name)
        .unwrap_or_else(|| panic!("no {area}/{name} check in {report}"))
}

fn doctor_against(sandbox: &Sandbox, base_url: &str) -> tokio::process::Command {
    let mut cmd = sandbox.command();
    cmd.env("OPENAI_API_KEY", "sk-test-key")
        .args(["--provider", "openai", "--model", "gpt-4o", "--base-url"])
        .arg(base_url)
        .args(["doctor", "--json"]);
    cmd
}

#[tokio::test]
async fn doctor_with_a_reachable_provider_reports_every_area_and_exits_zero() {
    let server = ScriptedServer::start().await;
    server.respond_with(|_, _| ScriptedResponse::json(200, &serde_json::json!({"data": []})));
    let sandbox = Sandbox::new();
    let (code, report) = doctor_json(doctor_against(&sandbox, &server.base_url())).await;
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["ok"], true);
    assert_eq!(report["broken"], 0);
    for area in [
        "sandbox", "provider", "config", "mcp", "lsp", "hooks", "trust", "terminal",
    ] {
        assert!(
            report["checks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["area"] == area),
            "no {area} check in {report}"
        );
    }
    assert_eq!(
        check(&report, "provider", "endpoint")["code"],
        "endpoint_reachable"
    );
    assert_eq!(check(&report, "provider", "key")["code"], "key_present");
    assert_eq!(check(&report, "terminal", "terminal")["state"], "skipped");
    for c in report["checks"].as_array().unwrap() {
        assert!(c["code"].as_str().is_some_and(|s| !s.is_empty()), "{c}");
        assert!(c["state"].as_str().is_some(), "{c}");
    }
}

#[tokio::test]
async fn doctor_with_the_provider_endpoint_down_names_it_with_a_fix_and_exits_non_zero() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let sandbox = Sandbox::new();
    let base = format!("http://127.0.0.1:{port}/v1");
    let (code, report) = doctor_json(doctor_against(&sandbox, &base)).await;
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(report["ok"], false);
    let endpoint = check(&report, "provider", "endpoint");
    assert_eq!(endpoint["state"], "broken");
    assert_eq!(endpoint["code"], "endpoint_unreachable");
    assert!(endpoint["fix"].as_str().is_some_and(|f| !f.is_empty()));
}

#[tokio::test]
async fn doctor_without_a_key_names_the_variable_and_exits_non_zero() {
    let sandbox = Sandbox::new();
    let mut cmd = sandbox.command();
    cmd.args([
        "--provider",
        "openai",
        "--model",
        "gpt-4o",
        "doctor",
        "--json",
    ]);
    let (code, report) = doctor_json(cmd).await;
    assert_eq!(code, Some(1), "{report}");
    let key = check(&report, "provider", "key");
    assert_eq!(key["code"], "key_missing");
    assert!(
        key["detail"].as_str().unwrap().contains("OPENAI_API_KEY"),
        "{key}"
    );
}

/// Where the kernel refuses user namespaces (bubblewrap's `--disable-userns`), doctor says the
/// sandbox is incomplete and exits non-zero.
#[tokio::test]
async fn doctor_where_user_namespaces_are_refused_says_so_and_exits_non_zero() {
    if std::process::Command::new("bwrap")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: needs bubblewrap (bwrap), which .ci/run installs");
        return;
    }
    let server = ScriptedServer::start().await;
    server.respond_with(|_, _| ScriptedResponse::json(200, &serde_json::json!({"data": []})));
    let sandbox = Sandbox::new();
    let mut cmd = tokio::process::Command::new("bwrap");
    cmd.args([
        "--unshare-user",
        "--disable-userns",
        "--dev-bind",
        "/",
        "/",
        "--",
    ])
    .arg(env!("CARGO_BIN_EXE_pablo"))
    .args(["--provider", "openai", "--model", "gpt-4o", "--base-url"])
    .arg(server.base_url())
    .args(["doctor", "--json"])
    .env_clear()
    .env("PATH", std::env::var_os("PATH").unwrap_or_default())
    .env("HOME", sandbox.root().join("home"))
    .env("XDG_CONFIG_HOME", sandbox.root().join("config"))
    .env("XDG_DATA_HOME", sandbox.root().join("data"))
    .env("XDG_STATE_HOME", sandbox.root().join("state"))
    .env("OPENAI_API_KEY", "sk-test-key")
    .current_dir(sandbox.workspace())
    .stdin(std::process::Stdio::null())
    .kill_on_drop(true);
    let (code, report) = doctor_json(cmd).await;
    assert_eq!(code, Some(1), "{report}");
    let ns = check(&report, "sandbox", "user_namespaces");
    assert_eq!(ns["state"], "broken", "{ns}");
    assert_eq!(ns["code"], "namespaces_refused", "{ns}");
    assert!(ns["fix"].as_str().is_some_and(|f| !f.is_empty()), "{ns}");
}
