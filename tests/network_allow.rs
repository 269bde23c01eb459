//! The network allow-list of sandboxed commands (`[options.shell] network_allow`) through the
//! binary: a real origin server on 127.0.0.1, reached by a sandboxed `curl` through pablo's proxy
//! by a listed name (`localhost`), and refused by any other name, by the origin's raw address,
//! and to a program that ignores the proxy variables.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;

use crate::support::bin::Sandbox;
use crate::support::http::ScriptedServer;
use crate::support::run::{call, output, run_within, say};

const BODY: &str = "hello from the origin";

/// An HTTP server on 127.0.0.1 that answers every request with [`BODY`] and counts the
/// connections it accepted.
struct Origin {
    port: u16,
    connections: Arc<AtomicUsize>,
}

impl Origin {
    async fn start() -> Self {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = connections.clone();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match conn.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{BODY}",
                        BODY.len()
                    );
                    let _ = conn.write_all(answer.as_bytes()).await;
                });
            }
        });
        Self { port, connections }
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

fn has_curl() -> bool {
    let found = std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_ok();
    if !found {
        eprintln!("skipped: needs curl");
    }
    found
}

/// The model runs one line of curls: the origin by its listed name (plain and tunnelled with
/// CONNECT), by a name that is not listed, by its raw address, and once with the proxy
/// variables ignored. Only the listed name arrives; the result names both refused hosts.
#[tokio::test]
async fn a_sandboxed_command_reaches_a_listed_host_by_name_and_nothing_else_and_its_result_names_the_refused()
 {
    if !has_curl() {
        return;
    }
    let origin = Origin::start().await;
    let port = origin.port;
    let sandbox = Sandbox::new();
    sandbox.user_config("[options.shell]\nnetwork_allow = [\"localhost\"]\n");
    let server = ScriptedServer::start().await;
    let line = format!(
        "curl -sS http://localhost:{port}/; echo; \
         curl -sS -p http://localhost:{port}/; echo; \
         curl -sS http://not-listed.test:{port}/; \
         curl -sS -p http://127.0.0.1:{port}/; echo \" exit=$?\"; \
         curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:{port}/; echo \" bypass=$?\""
    );
    server.push(call("c1", "shell_run", &json!({ "command": line })));
    server.push(say("done"));
    let log = sandbox.root().join("trace.log");
    let mut cmd = sandbox.run_json(&server.base_url(), "fetch");
    cmd.args(["--allow-write", "--auto-approve"])
        .env("PABLO_LOG", "info")
        .env("PABLO_LOG_FILE", &log);
    let run = run_within(cmd, Duration::from_secs(90)).await.succeeded();
    let results = run.results();
    let result = results[0];
    let text = result.to_string();
    let output = result["data"]["output"].as_str().unwrap();
    assert_eq!(output.matches(BODY).count(), 2, "{text}");
    assert!(output.contains("not-listed.test refused"), "{text}");
    // curl's exit for a refused tunnel (the 403's body is not shown), then for no route at all
    // (7: could not connect).
    assert!(output.contains(" exit=56"), "{text}");
    assert!(output.contains(" bypass=7"), "{text}");
    assert_eq!(
        result["data"]["network_refused"]["code"],
        "network_host_refused"
    );
    assert_eq!(
        result["data"]["network_refused"]["hosts"],
        json!(["not-listed.test", "127.0.0.1"]),
        "{text}"
    );
    // Only the two requests by the listed name reached the origin.
    assert_eq!(origin.connections(), 2, "{text}");
    // Each decision is in the trace: the host and whether it was allowed.
    let trace = std::fs::read_to_string(&log).unwrap();
    let decisions: Vec<&str> = trace
        .lines()
        .filter(|l| l.contains("sandbox network proxy"))
        .collect();
    assert_eq!(decisions.len(), 4, "{trace}");
    assert!(
        decisions
            .iter()
            .any(|l| l.contains("not-listed.test") && l.contains("false")),
        "{trace}"
    );
    assert!(
        decisions
            .iter()
            .any(|l| l.contains("localhost") && l.contains("true")),
        "{trace}"
    );
}

/// `pablo policy check` says which hosts a command would reach through the proxy.
#[tokio::test]
async fn policy_check_names_the_hosts_a_command_could_reach() {
    let sandbox = Sandbox::new();
    sandbox.user_config("[options.shell]\nnetwork_allow = [\"crates.io\", \"*.Crates.io.\"]\n");
    let mut cmd = sandbox.command();
    cmd.args(["policy", "check", "--json", "--", "cargo", "fetch"]);
    let (_, stdout, stderr) = output(cmd).await;
    let report: serde_json::Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    assert_eq!(
        report["network_allow"],
        json!(["crates.io", "*.crates.io"]),
        "{report}"
    );
    let mut cmd = sandbox.command();
    cmd.args(["policy", "check", "--", "cargo", "fetch"]);
    let (_, stdout, _) = output(cmd).await;
    assert!(
        stdout.contains("network: only crates.io, *.crates.io"),
        "{stdout}"
    );
}

/// `pablo sandbox` honours the list of `--config` as `shell.run` does, and names what the proxy
/// refused on stderr; a client in another language (Python's urllib) finds the proxy through the
/// same variables.
#[tokio::test]
async fn pablo_sandbox_with_a_config_reaches_the_listed_host_and_names_the_refused_one() {
    if !has_curl() {
        return;
    }
    let origin = Origin::start().await;
    let port = origin.port;
    let sandbox = Sandbox::new();
    let config = sandbox.root().join("allow.toml");
    std::fs::write(
        &config,
        "[options.shell]\nnetwork_allow = [\"localhost\"]\n",
    )
    .unwrap();
    let mut cmd = sandbox.command();
    cmd.arg("--config").arg(&config).args([
        "sandbox",
        "--",
        "sh",
        "-c",
        &format!("curl -sS http://localhost:{port}/; echo; curl -sS http://127.0.0.1:{port}/"),
    ]);
    let (code, stdout, stderr) = output(cmd).await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.starts_with(BODY), "{stdout}");
    assert!(stdout.contains("127.0.0.1 refused"), "{stdout}");
    assert!(
        stderr.contains("network proxy refused 127.0.0.1"),
        "{stderr}"
    );
    assert_eq!(origin.connections(), 1);

    // The interpreter itself, not a version manager's shim (which wants its own home).
    let python = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output();
    if let Ok(found) = python
        .as_ref()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        && !found.is_empty()
    {
        let mut cmd = sandbox.command();
        let script = format!(
            "import urllib.request; print(urllib.request.urlopen('http://localhost:{port}/').read().decode())"
        );
        cmd.arg("--config")
            .arg(&config)
            .args(["sandbox", "--", &found, "-c", &script]);
        let (code, stdout, stderr) = output(cmd).await;
        assert_eq!(code, Some(0), "{stdout}\n{stderr}");
        assert!(stdout.contains(BODY), "{stdout}");
        assert_eq!(origin.connections(), 2);
    }
}

/// A repository's own config cannot open the network to a host until the folder is trusted:
/// its list is ignored with a warning, and the command gets no proxy.
#[tokio::test]
async fn an_untrusted_project_config_cannot_add_hosts() {
    let sandbox = Sandbox::new();
    let project = sandbox.workspace().join(".pablo");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("config.toml"),
        "[options.shell]\nnetwork_allow = [\"evil.example\"]\n",
    )
    .unwrap();
    let mut cmd = sandbox.command();
    cmd.args(["sandbox", "--", "sh", "-c", "echo \"proxy=[$http_proxy]\""]);
    let (code, stdout, stderr) = output(cmd).await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("proxy=[]"), "{stdout}");
    assert!(
        stderr.contains("options.shell.network_allow (evil.example"),
        "{stderr}"
    );
}

/// Without namespaces (bubblewrap refuses them here) the network is cut by a seccomp filter
/// that the proxy cannot pass: a command promised some hosts is refused with a code, not run
/// with none or with all.
#[tokio::test]
async fn without_namespaces_a_network_allow_list_refuses_the_command_with_a_code() {
    if std::process::Command::new("bwrap")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: needs bubblewrap (bwrap), which .ci/run installs");
        return;
    }
    let sandbox = Sandbox::new();
    sandbox.user_config("[options.shell]\nnetwork_allow = [\"localhost\"]\n");
    let ws = sandbox.workspace();
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
    .args(["sandbox", "--", "sh", "-c", "echo ran >> count"])
    .env_clear()
    .env("PATH", std::env::var_os("PATH").unwrap_or_default())
    .env("HOME", sandbox.root().join("home"))
    .env("XDG_CONFIG_HOME", sandbox.root().join("config"))
    .env("XDG_DATA_HOME", sandbox.root().join("data"))
    .env("XDG_STATE_HOME", sandbox.root().join("state"))
    .current_dir(&ws)
    .stdin(std::process::Stdio::null())
    .kill_on_drop(true);
    let (code, stdout, stderr) = output(cmd).await;
    assert_ne!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("network_allow_unsupported"), "{stderr}");
    assert!(!ws.join("count").exists(), "the command ran");
}

/// `pablo config validate` names an entry that is not a host: a URL, a name with a port, an
/// address in a spelling other than the dotted one.
#[tokio::test]
async fn config_validate_refuses_an_entry_that_is_not_a_host() {
    let sandbox = Sandbox::new();
    let file = sandbox.root().join("bad.toml");
    std::fs::write(
        &file,
        "[options.shell]\nnetwork_allow = [\"crates.io\", \"https://pypi.org\", \"npmjs.org:443\", \"127.1\", \"*.ok.dev\", \"::1\"]\n",
    )
    .unwrap();
    let mut cmd = sandbox.command();
    cmd.args(["config", "validate"]).arg(&file);
    let (code, stdout, stderr) = output(cmd).await;
    let all = format!("{stdout}{stderr}");
    assert_eq!(code, Some(1), "{all}");
    for i in [1, 2, 3] {
        assert!(
            all.contains(&format!("options.shell.network_allow[{i}]")),
            "{all}"
        );
    }
    for i in [0, 4, 5] {
        assert!(
            !all.contains(&format!("options.shell.network_allow[{i}]")),
            "{all}"
        );
    }
}
