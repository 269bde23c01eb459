//! web.fetch through the binary: a name that `/etc/hosts` maps to loopback is refused before
//! connecting. (The tool against a scripted server, its refusals and the fetch policy are tested
//! in-process, `tests/engine/catalog_fetch.rs`.)

use std::sync::atomic::Ordering;

use serde_json::json;

use super::*;
use crate::support::bin::Sandbox;
use crate::support::http::counting_listener;
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

/// `pablo run` with no flags, in a mount namespace whose `/etc/hosts` maps a name to
/// 127.0.0.1: the system resolver returns loopback, so the fetch is refused before connecting
/// even though the name is an allowed domain (policy says "allow"; the rules still refuse).
#[tokio::test]
async fn a_name_mapped_to_loopback_in_etc_hosts_is_refused_through_the_binary() {
    let model = ScriptedServer::start().await;
    let (port, connections) = counting_listener().await;
    let url = format!("http://pablo-mapped.test:{port}/page");
    model.push(ScriptedResponse::sse(openai::tool_call_answer(
        "call_f",
        "fetch_url",
        &[&json!({ "url": url }).to_string()],
    )));
    model.push(ScriptedResponse::sse(openai::text_answer(
        "refused, as it should be",
    )));
    let sb = Sandbox::new();
    sb.user_config(&provider_config(
        &model.base_url(),
        "[options.fetch]\nallowed_domains = [\"pablo-mapped.test\"]\n",
    ));
    let hosts = sb.root().join("hosts");
    std::fs::write(&hosts, "127.0.0.1 localhost\n127.0.0.1 pablo-mapped.test\n").unwrap();
    // Only this process tree sees the other /etc/hosts (a private mount namespace).
    let mut cmd = tokio::process::Command::new("unshare");
    cmd.args(["--user", "--map-root-user", "--mount", "sh", "-c"])
        .arg("mount --bind \"$1\" /etc/hosts && shift && exec \"$@\"")
        .arg("sh")
        .arg(&hosts)
        .arg(env!("CARGO_BIN_EXE_pablo"))
        .args(["run", "fetch the page"]);
    cmd.env_clear();
    for (k, v) in sb.command().as_std().get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    cmd.env("OPENAI_API_KEY", "sk-test-key")
        .env("PABLO_FETCH_ALLOWED_PORTS", port.to_string())
        .current_dir(sb.workspace())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = cmd.output().await.unwrap();
    let requests = model.requests();
    assert_eq!(
        requests.len(),
        2,
        "stdout {}\nstderr {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let result = tool_result_seen_by_model(&requests[1], "call_f");
    assert_eq!(result["ok"], false, "{result}");
    assert_eq!(result["error"]["code"], "address_refused", "{result}");
    let msg = result["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("pablo-mapped.test resolves to 127.0.0.1"),
        "{msg}"
    );
    assert_eq!(connections.load(Ordering::SeqCst), 0);
}
