//! Everyday reads without a question (issue 42), through the binary with no flags: the corpus
//! of tests/fixtures/everyday_reads.rs judged by `pablo policy check --json`, and the reads run
//! by `pablo run` in the read-only sandbox with the credentials masked, where they cannot see the
//! workspace's `.env`, `~/.ssh/id_rsa`, pablo's own config and sessions, or the provider key.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::bin::Sandbox;
use crate::support::git::git;
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

const KEY: &str = "sk-everyday-provider-key";

/// A small Python project with a `.env`, as most real ones have.
fn everyday_workspace(sb: &Sandbox) {
    let ws = sb.workspace();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("a.py"), "import os\nprint(os.name)  # TODO\n").unwrap();
    std::fs::write(ws.join("b.py"), "import sys\nx = 1\n").unwrap();
    std::fs::write(ws.join("x.json"), "{\"name\": \"demo\"}\n").unwrap();
    std::fs::write(ws.join("README.md"), "# demo\n").unwrap();
    std::fs::write(ws.join("src/lib.rs"), "pub fn x() {}\n").unwrap();
    std::fs::write(ws.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(ws.join(".env"), "SECRET=workspace-dotenv-secret\n").unwrap();
    git(&ws, &["init", "-q"]);
}

async fn output(cmd: &mut tokio::process::Command) -> std::process::Output {
    tokio::time::timeout(Duration::from_secs(90), cmd.output())
        .await
        .expect("pablo finished within 90 s")
        .expect("pablo runs")
}

#[tokio::test]
async fn everyday_reads_run_unasked_and_their_look_alikes_keep_asking() {
    let sb = Sandbox::new();
    everyday_workspace(&sb);
    let corpus: &[(&str, &str)] = include!("fixtures/everyday_reads.rs");
    let mut wrong = Vec::new();
    let mut reads_allowed = 0;
    let mut reads = 0;
    for (i, (command, want)) in corpus.iter().enumerate() {
        let mut cmd = sb.command();
        cmd.args(["policy", "check", "--json", "--", command]);
        let out = output(&mut cmd).await;
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{command}: {e}: {}", String::from_utf8_lossy(&out.stdout)));
        let got = report["decision"].as_str().unwrap_or("?");
        // The first lines of the corpus, up to the first that asks, are the everyday reads.
        let everyday = corpus[..=i].iter().all(|(_, d)| *d == "allow");
        if everyday {
            reads += 1;
            reads_allowed += usize::from(got == "allow");
        }
        if got != *want {
            wrong.push(format!(
                "{command:?}: want {want}, got {got}: {}",
                report["reasons"]
            ));
        } else if got == "allow" && report["sandbox"]["profile"] != "read-only" {
            wrong.push(format!("{command:?}: allowed outside read-only: {report}"));
        }
    }
    assert!(reads >= 42, "the corpus holds {reads} everyday reads");
    assert!(
        reads_allowed >= 40,
        "{reads_allowed} of {reads} everyday reads run unasked"
    );
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// A read that is safe only masked says so in `policy check`, and a question says its real
/// reason in one line.
#[tokio::test]
async fn policy_check_says_which_reads_run_masked_and_why_a_read_asks() {
    let sb = Sandbox::new();
    everyday_workspace(&sb);
    let check = |command: &str| {
        let mut cmd = sb.command();
        cmd.args(["policy", "check", "--json", "--", command]);
        cmd
    };
    let report: Value =
        serde_json::from_slice(&output(&mut check("grep -rn x .")).await.stdout).unwrap();
    assert_eq!(report["decision"], "allow", "{report}");
    assert_eq!(report["sandbox"]["credentials_masked"], true, "{report}");
    let report: Value = serde_json::from_slice(&output(&mut check("ls -la")).await.stdout).unwrap();
    assert!(
        report["sandbox"].get("credentials_masked").is_none(),
        "{report}"
    );
    let report: Value =
        serde_json::from_slice(&output(&mut check("sort -o out a.py")).await.stdout).unwrap();
    let reasons = report["reasons"].to_string();
    assert!(!reasons.contains("matches no rule"), "{reasons}");
    assert!(reasons.contains("-o"), "{reasons}");
}

fn call(id: &str, command: &str) -> ScriptedResponse {
    ScriptedResponse::sse(openai::tool_call_answer(
        id,
        "shell_run",
        &[&json!({ "command": command }).to_string()],
    ))
}

#[tokio::test]
async fn masked_reads_run_unasked_and_cannot_see_secrets_pablos_state_or_the_key() {
    let server = ScriptedServer::start().await;
    let sb = Sandbox::new();
    everyday_workspace(&sb);
    sb.user_config(&format!(
        "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n# config-secret-marker\n",
        server.base_url()
    ));
    let home = sb.root().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "home-ssh-key-secret\n").unwrap();
    // A program outside the workspace, on the PATH, that tries every secret when asked its
    // version (as a planted rust-toolchain.toml could make `cargo --version` do).
    let bin = sb.root().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let tool = bin.join("snoop");
    std::fs::write(
        &tool,
        format!(
            "#!/bin/sh\ncat .env {home}/.ssh/id_rsa {config}/config.toml 2>&1\n\
             ls -R {data} 2>&1\nfor p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done 2>/dev/null\n\
             echo snoop-ran\n",
            home = home.display(),
            config = sb.config_dir().display(),
            data = sb.root().join("data").display(),
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let commands = [
        "grep -rn SECRET .",
        "cat *.py",
        "snoop --version",
        "cat .env",
    ];
    for (i, c) in commands.iter().enumerate() {
        server.push(call(&format!("c{i}"), c));
    }
    server.push(ScriptedResponse::sse(openai::text_answer("done")));
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = sb.command();
    cmd.env("PATH", path)
        .env("OPENAI_API_KEY", KEY)
        .args(["run", "--json", "read around"]);
    let out = output(&mut cmd).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bodies: Vec<String> = server
        .requests()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    for secret in [
        "workspace-dotenv-secret",
        "home-ssh-key-secret",
        "config-secret-marker",
        KEY,
    ] {
        assert!(
            !bodies.iter().any(|b| b.contains(secret)),
            "{secret} reached the model"
        );
    }
    let last: Value = serde_json::from_str(bodies.last().unwrap()).unwrap();
    let results: Vec<Value> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(results.len(), commands.len(), "{results:?}");
    for r in &results[..3] {
        assert_eq!(r["ok"], true, "{r}");
        assert_eq!(r["data"]["sandbox"], "read-only", "{r}");
    }
    // The recursive read ran masked, said which file it could not see, and printed the rest.
    assert_eq!(
        results[0]["data"]["masked"]["files"],
        json!([".env"]),
        "{}",
        results[0]
    );
    assert_eq!(
        results[1]["data"]["output"]
            .as_str()
            .unwrap()
            .matches("import")
            .count(),
        2
    );
    // The snooping program ran, and saw nothing.
    assert!(
        results[2]["data"]["output"]
            .as_str()
            .unwrap()
            .contains("snoop-ran"),
        "{}",
        results[2]
    );
    // Naming the credential still asks (nobody can answer in `pablo run`).
    assert_eq!(
        results[3]["error"]["code"], "approval_required",
        "{}",
        results[3]
    );
}
