//! At the size of a real monorepo (issue 46, issue 49 item 12), through the real binary: the `.git`
//! and `.pablo` that `workspace-write` keeps read-only are kept current between the commands of a
//! session instead of walked for every command, a repository one command makes is protected from
//! the next, and a workspace larger than pablo searches is refused rather than half protected; a
//! command text checked again is not sent to the shell parser's helper again, and plain words are
//! never sent.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::bin::Sandbox;
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

fn call(id: &str, name: &str, args: &Value) -> ScriptedResponse {
    ScriptedResponse::sse(openai::tool_call_answer(id, name, &[&args.to_string()]))
}

/// One `shell_run` call per command, then a final answer.
fn script_commands(server: &ScriptedServer, commands: &[&str]) {
    for (i, c) in commands.iter().enumerate() {
        server.push(call(
            &format!("c{i}"),
            "shell_run",
            &json!({ "command": c }),
        ));
    }
    server.push(ScriptedResponse::sse(openai::text_answer("done")));
}

/// The tool results the model was sent, in order.
fn results(server: &ScriptedServer) -> Vec<Value> {
    let requests = server.requests();
    let Some(last) = requests.last() else {
        return Vec::new();
    };
    last.json()["messages"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| serde_json::from_str(m["content"].as_str().unwrap_or("null")).unwrap())
                .collect()
        })
        .unwrap_or_default()
}

/// `dirs` directories in 50 top-level ones, under `node_modules/` (which `.gitignore` lists, so
/// the checkpoints' watch does not look there).
fn large_tree(ws: &Path, dirs: usize) {
    std::fs::write(ws.join(".gitignore"), "node_modules/\n").unwrap();
    for i in 0..dirs {
        let d = ws
            .join("node_modules")
            .join(format!("p{}", i % 50))
            .join(format!("m{i}"));
        std::fs::create_dir_all(d).unwrap();
    }
}

async fn run(sb: &Sandbox, server: &ScriptedServer, log: &Path) -> std::process::Output {
    let mut cmd = sb.run_json(&server.base_url(), "work in the monorepo");
    cmd.arg("--auto-approve")
        .env("PABLO_LOG", "debug")
        .env("PABLO_LOG_FILE", log);
    tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("pablo finished within 120 s")
        .expect("pablo runs")
}

/// The shield's trace events: (directories read, found, complete), one per command.
fn shield_events(log: &Path) -> Vec<(u64, u64, bool)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["target"] == "pablo::shield")
        .map(|v| {
            let f = &v["fields"];
            (
                f["directories_read"].as_u64().unwrap(),
                f["found"].as_u64().unwrap(),
                f["complete"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_git_made_deep_in_a_large_tree_by_one_command_is_read_only_for_the_next_without_a_walk() {
    let server = ScriptedServer::start().await;
    let sb = Sandbox::new();
    let ws = sb.workspace();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&ws)
        .status()
        .unwrap();
    assert!(git.success());
    large_tree(&ws, 3_000);
    let deep = "node_modules/p7/m7/lib/vendored";
    let commands = [
        format!("mkdir -p {deep} && git -C {deep} init -q && echo made"),
        format!("echo '[core]' >> {deep}/.git/config"),
        format!(
            "mkdir -p {deep}/.git/hooks && echo 'echo pwned' > {deep}/.git/hooks/post-checkout"
        ),
        "echo still-writable > notes.txt".to_string(),
    ];
    let refs: Vec<&str> = commands.iter().map(String::as_str).collect();
    script_commands(&server, &refs);
    let log = sb.root().join("trace.jsonl");
    let out = run(&sb, &server, &log).await;
    assert!(out.status.success(), "{out:?}");
    let r = results(&server);
    assert_eq!(r.len(), 4, "{r:?}");
    assert_eq!(r[0]["data"]["exit_code"], 0, "{}", r[0]);
    for i in [1, 2] {
        assert_eq!(r[i]["ok"], true, "{}", r[i]);
        assert_ne!(
            r[i]["data"]["exit_code"], 0,
            "{} succeeded: {}",
            commands[i], r[i]
        );
        assert_eq!(r[i]["data"]["sandbox"], "workspace-write", "{}", r[i]);
    }
    assert_eq!(r[3]["data"]["exit_code"], 0, "{}", r[3]);
    let config = std::fs::read_to_string(ws.join(deep).join(".git/config")).unwrap();
    assert!(!config.ends_with("[core]\n"), "{config}");
    assert!(!ws.join(deep).join(".git/hooks/post-checkout").exists());

    // The first command's shield read the tree once; every later one read only what changed
    // (the directories the first command made), not the 3,000 others.
    let events = shield_events(&log);
    assert_eq!(events.len(), 4, "{events:?}");
    assert!(events[0].0 > 3_000, "{events:?}");
    assert!(
        events[1].0 < 10,
        "the second command walked the tree: {events:?}"
    );
    assert_eq!(events[2].0, 0, "{events:?}");
    assert_eq!(events[3].0, 0, "{events:?}");
    // The workspace's own `.git` and `.pablo` placeholder, then also the new one.
    assert_eq!(events[0].1, 2, "{events:?}");
    assert!(events[1..].iter().all(|e| e.1 == 3 && e.2), "{events:?}");
}

#[tokio::test]
async fn a_workspace_with_more_directories_than_pablo_searches_refuses_workspace_write_commands() {
    let server = ScriptedServer::start().await;
    let sb = Sandbox::new();
    let ws = sb.workspace();
    large_tree(&ws, 60);
    let nested = "node_modules/p3/m3/.git";
    std::fs::create_dir_all(ws.join(nested)).unwrap();
    sb.user_config("[options.shell]\nprotect_max_dirs = 50\n");
    let commands = [
        format!("echo '[core]' > {nested}/config"),
        "ls node_modules/p3".to_string(),
    ];
    let refs: Vec<&str> = commands.iter().map(String::as_str).collect();
    script_commands(&server, &refs);
    let log = sb.root().join("trace.jsonl");
    let out = run(&sb, &server, &log).await;
    assert!(out.status.success(), "{out:?}");
    let r = results(&server);
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(r[0]["ok"], false, "{}", r[0]);
    assert_eq!(r[0]["error"]["code"], "workspace_too_large", "{}", r[0]);
    let message = r[0]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("more than 50 directories") && message.contains("protect_max_dirs"),
        "{message}"
    );
    assert!(
        !ws.join(nested).join("config").exists(),
        "the nested .git was written"
    );
    // A known-safe read runs read-only, which needs no search.
    assert_eq!(r[1]["ok"], true, "{}", r[1]);
    assert_eq!(r[1]["data"]["sandbox"], "read-only", "{}", r[1]);
}

/// The shell parser's trace events: whether each parse took a round trip to the helper.
fn parser_events(log: &Path) -> Vec<bool> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["target"] == "pablo::shell_parser")
        .map(|v| v["fields"]["round_trip"].as_bool().unwrap())
        .collect()
}

#[tokio::test]
async fn a_command_checked_again_takes_no_second_round_trip_to_the_parser_and_plain_words_none() {
    let server = ScriptedServer::start().await;
    let sb = Sandbox::new();
    // The quotes make the text one for the helper; the last command, plain words, is split in
    // pablo and never sent.
    let commands = [
        "echo 'one-text'",
        "echo 'one-text'",
        "echo 'one-text'",
        "echo one-text",
    ];
    script_commands(&server, &commands);
    let log = sb.root().join("trace.jsonl");
    let out = run(&sb, &server, &log).await;
    assert!(out.status.success(), "{out:?}");
    let r = results(&server);
    assert_eq!(r.len(), 4, "{r:?}");
    for result in &r {
        assert_eq!(result["data"]["exit_code"], 0, "{result}");
        assert!(
            result["data"]["output"]
                .as_str()
                .unwrap()
                .contains("one-text"),
            "{result}"
        );
    }
    // One text, sent to the helper once; every other check of it (three calls, each previewed
    // and decided) is answered from what the helper said.
    let parses = parser_events(&log);
    assert_eq!(parses.iter().filter(|trip| **trip).count(), 1, "{parses:?}");
    assert!(
        parses.iter().filter(|trip| !**trip).count() >= 2,
        "{parses:?}"
    );
}

/// The release binary's ceiling (14 MB; BENCHMARKS.md, binary size). `cargo test` does not build
/// the release binary: this holds it to the ceiling wherever one was built (`cargo build
/// --release`, which `benches/shipped.rs` measures), and `benches/shipped.rs` fails over it too.
const SIZE_CEILING: u64 = 14_000_000;

#[test]
fn a_release_binary_that_was_built_stays_under_its_size_ceiling() {
    let binary = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/pablo");
    let Ok(meta) = std::fs::metadata(&binary) else {
        return;
    };
    // `cargo bench` leaves its own build (opt-level 3, unwind tables) in the same place: that file
    // does not ship, and its size says nothing about the ceiling.
    let version = std::process::Command::new(&binary)
        .arg("--version")
        .output()
        .expect("the release binary runs");
    let version = String::from_utf8_lossy(&version.stdout);
    if !version.contains("built with opt-level z") {
        eprintln!(
            "{} is not the shipped build ({version:?}): not checked",
            binary.display()
        );
        return;
    }
    assert!(
        meta.len() <= SIZE_CEILING,
        "{} is {} bytes, over the ceiling of {SIZE_CEILING}",
        binary.display(),
        meta.len()
    );
}
