//! Checkpoints and undo through the real binary, on real files: turns of `pablo run` against a
//! scripted provider (fs.edit, fs.write creating files, shell commands that write and delete),
//! then `pablo undo`; the workspace is compared byte for byte with what it was.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::bin::{Sandbox, json_lines};
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

fn call(id: &str, name: &str, args: &Value) -> ScriptedResponse {
    ScriptedResponse::sse(openai::tool_call_answer(id, name, &[&args.to_string()]))
}

fn say(text: &str) -> ScriptedResponse {
    ScriptedResponse::sse(openai::text_answer(text))
}

fn revision(bytes: &[u8]) -> String {
    crate::support::revision_of(bytes)
}

/// Every file below `dir` (not `.git`): its bytes and permission bits.
fn snapshot(dir: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, (Vec<u8>, u32)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let path = e.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                if e.file_name() != ".git" {
                    walk(root, &path, out);
                }
                continue;
            }
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            out.insert(
                rel,
                (
                    std::fs::read(&path).unwrap(),
                    meta.permissions().mode() & 0o7777,
                ),
            );
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Every directory below `dir`.
fn dirs(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                out.push(
                    e.path()
                        .strip_prefix(dir)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
                stack.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// `pablo run --json --allow-write --auto-approve TASK` (optionally resuming); returns the
/// session id and the tool results.
async fn run_turn(
    sandbox: &Sandbox,
    server: &ScriptedServer,
    task: &str,
    resume: Option<&str>,
) -> (String, Vec<Value>) {
    let mut cmd = sandbox.run_json(&server.base_url(), task);
    cmd.args(["--allow-write", "--auto-approve"]);
    if let Some(id) = resume {
        cmd.args(["--resume", id]);
    }
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("pablo run finished")
        .unwrap();
    let lines = json_lines(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{:?}",
        String::from_utf8_lossy(&out.stderr),
        lines
    );
    let id = lines
        .iter()
        .find(|l| l["type"] == "session_started")
        .and_then(|l| l["session_id"].as_str())
        .unwrap()
        .to_string();
    let results = lines
        .iter()
        .filter(|l| l["type"] == "tool_result")
        .map(|l| l["result"].clone())
        .collect();
    (id, results)
}

async fn undo(sandbox: &Sandbox, args: &[&str]) -> (Option<i32>, Value, String) {
    let out = sandbox
        .command()
        .arg("undo")
        .args(args)
        .arg("--json")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let report = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    (
        out.status.code(),
        report,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn executable(path: &Path) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_turns_of_edits_writes_and_commands_are_undone_byte_for_byte_by_pablo_undo() {
    let sandbox = Sandbox::new();
    let ws = sandbox.workspace();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(ws.join("docs")).unwrap();
    let lib =
        "pub fn mean(xs: &[f64]) -> f64 {\n    xs.iter().sum::<f64>() / (xs.len() + 1) as f64\n}\n";
    std::fs::write(ws.join("src/lib.rs"), lib).unwrap();
    std::fs::write(ws.join("notes.md"), "# Notes\r\n\r\nkeep me\r\n").unwrap();
    std::fs::write(ws.join("data.bin"), [0u8, 159, 146, 150, 0, 1]).unwrap();
    std::fs::write(ws.join("run.sh"), "#!/bin/sh\necho run\n").unwrap();
    executable(&ws.join("run.sh"));
    std::fs::write(ws.join("docs/guide.md"), "guide\n").unwrap();
    std::fs::write(ws.join("docs/faq.md"), "faq\n").unwrap();
    std::fs::write(ws.join(".gitignore"), "target/\n").unwrap();
    std::fs::create_dir_all(ws.join("target")).unwrap();
    std::fs::write(ws.join("target/cache"), "build output\n").unwrap();
    let before = snapshot(&ws);
    let dirs_before = dirs(&ws);

    // Turn 1: an edit, a new file in a new directory, and a command that writes, appends to a
    // binary file, replaces an executable by a copy without its x bit and deletes a file.
    let server = ScriptedServer::start().await;
    let fixed = lib.replace("(xs.len() + 1)", "xs.len()");
    server.push(call(
        "c1",
        "fs_edit",
        &json!({"path": "src/lib.rs", "old_text": "(xs.len() + 1)", "new_text": "xs.len()",
                "expected_revision": revision(lib.as_bytes())}),
    ));
    server.push(call(
        "c2",
        "fs_write",
        &json!({"path": "gen/deep/made.rs", "text": "// generated\n", "expected_revision": null}),
    ));
    server.push(call(
        "c3",
        "shell_run",
        &json!({"command": "printf 'log\\n' > made.txt && printf '\\377\\001' >> data.bin && cat run.sh > run.new && mv run.new run.sh && rm notes.md"}),
    ));
    server.push(say("Turn one done."));
    let (id, results) = run_turn(&sandbox, &server, "fix the mean", None).await;
    assert_eq!(results.len(), 3);
    for r in &results {
        assert_eq!(r["ok"], true, "{r}");
    }
    assert_eq!(results[2]["data"]["exit_code"], 0, "{}", results[2]);
    assert!(!ws.join("notes.md").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("src/lib.rs")).unwrap(),
        fixed
    );

    // Turn 2 (the same session, resumed): another edit, a rewrite of the file turn 1 created,
    // and a command that deletes a whole directory and makes another one.
    server.push(call(
        "d1",
        "fs_edit",
        &json!({"path": "src/lib.rs", "old_text": "pub fn mean", "new_text": "pub fn average",
                "expected_revision": revision(fixed.as_bytes())}),
    ));
    server.push(call(
        "d2",
        "fs_write",
        &json!({"path": "gen/deep/made.rs", "text": "// generated again\n",
                "expected_revision": revision(b"// generated\n")}),
    ));
    server.push(call(
        "d3",
        "shell_run",
        &json!({"command": "rm -r docs && mkdir -p out2/x && printf 'y\\n' > out2/x/y.txt && printf 'z\\n' > target/more"}),
    ));
    server.push(say("Turn two done."));
    let (id2, results) = run_turn(&sandbox, &server, "rename it", Some(&id)).await;
    assert_eq!(id2, id);
    for r in &results {
        assert_eq!(r["ok"], true, "{r}");
    }
    assert!(!ws.join("docs").exists());

    let (code, out, stderr) = undo(&sandbox, &["--turns", "2"]).await;
    assert_eq!(code, Some(0), "{stderr}\n{out}");
    assert_eq!(out["plan"]["turns"], json!([1, 2]), "{out}");
    let skipped = out["report"]["skipped"].as_array().unwrap();
    assert!(skipped.is_empty(), "{out}");

    // Every followed file is back byte for byte with its mode; created ones are gone (their
    // directories too); the ignored build output is not the checkpoint's business.
    let mut after = snapshot(&ws);
    assert_eq!(
        after.remove("target/more").map(|(b, _)| b),
        Some(b"z\n".to_vec()),
        "the ignored file a command wrote is left alone"
    );
    assert_eq!(after, before);
    assert_eq!(dirs(&ws), dirs_before);

    // The journal says so: undoing again finds nothing left to undo, and `--json` says it as
    // one error object with its code on stdout.
    let (code, out, stderr) = undo(&sandbox, &[]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(out["type"], "error", "{out}");
    assert_eq!(out["code"], "nothing_to_undo", "{out}");
    assert!(
        out["message"].as_str().unwrap().contains("nothing to undo"),
        "{out}"
    );
    assert!(stderr.is_empty(), "{stderr}");
}

#[tokio::test]
async fn undo_json_without_a_session_is_one_error_object_on_stdout() {
    let sandbox = Sandbox::new();
    let (code, out, stderr) = undo(&sandbox, &[]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(out["type"], "error", "{out}");
    assert!(
        out["code"]
            .as_str()
            .is_some_and(|c| c.starts_with("session")),
        "{out}"
    );
    assert!(stderr.is_empty(), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_edited_by_hand_after_the_turn_is_a_conflict_and_is_left_alone() {
    let sandbox = Sandbox::new();
    let ws = sandbox.workspace();
    std::fs::write(ws.join("a.txt"), "a\n").unwrap();
    std::fs::write(ws.join("b.txt"), "b\n").unwrap();
    let server = ScriptedServer::start().await;
    server.push(call(
        "c1",
        "fs_write",
        &json!({"path": "a.txt", "text": "A\n", "expected_revision": revision(b"a\n")}),
    ));
    server.push(call(
        "c2",
        "shell_run",
        &json!({"command": "printf 'B\\n' > b.txt"}),
    ));
    server.push(say("done"));
    run_turn(&sandbox, &server, "capitalise", None).await;
    // The person changes b.txt after the turn.
    std::fs::write(ws.join("b.txt"), "my own b\n").unwrap();

    let (code, dry, _) = undo(&sandbox, &["--dry-run"]).await;
    assert_eq!(code, Some(1), "{dry}");
    assert_eq!(dry["report"], Value::Null);
    let files = dry["plan"]["files"].as_array().unwrap();
    let status: BTreeMap<&str, &str> = files
        .iter()
        .map(|f| (f["path"].as_str().unwrap(), f["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        status,
        BTreeMap::from([("a.txt", "ready"), ("b.txt", "conflict")])
    );
    assert_eq!(std::fs::read(ws.join("a.txt")).unwrap(), b"A\n", "dry run");

    let (code, out, stderr) = undo(&sandbox, &[]).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(std::fs::read(ws.join("a.txt")).unwrap(), b"a\n");
    assert_eq!(std::fs::read(ws.join("b.txt")).unwrap(), b"my own b\n");
    let skipped = &out["report"]["skipped"][0];
    assert_eq!(skipped["path"], "b.txt", "{out}");
    assert_eq!(skipped["code"], "conflict", "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkill_during_the_restore_leaves_each_file_old_or_new_and_undo_runs_again() {
    let sandbox = Sandbox::new();
    let ws = sandbox.workspace();
    let n = 1500;
    let old = |i: usize| format!("old {i}\n").repeat(400).into_bytes();
    let new = |i: usize| format!("new {i}\n").repeat(400).into_bytes();
    for i in 0..n {
        std::fs::write(ws.join(format!("f{i:04}.txt")), old(i)).unwrap();
    }
    let server = ScriptedServer::start().await;
    // A script in the workspace rewrites them (the policy refuses loops with substitutions
    // given as one command line); it is unchanged, so it is not part of the undo.
    std::fs::write(
        ws.join("gen.sh"),
        format!(
            "i=0\nwhile [ $i -lt {n} ]; do\n  f=$(printf 'f%04d.txt' $i)\n  awk -v i=$i 'BEGIN {{ for (k = 0; k < 400; k++) print \"new \" i }}' > \"$f\"\n  i=$((i+1))\ndone\n"
        ),
    )
    .unwrap();
    server.push(call("c1", "shell_run", &json!({"command": "sh gen.sh"})));
    server.push(say("rewrote them"));
    let (_, results) = run_turn(&sandbox, &server, "rewrite every file", None).await;
    assert_eq!(results[0]["ok"], true, "{}", results[0]);
    for i in 0..n {
        assert_eq!(
            std::fs::read(ws.join(format!("f{i:04}.txt"))).unwrap(),
            new(i)
        );
    }

    // Files are restored in path order: once the first is back, the restore is under way.
    let mut child = sandbox
        .command()
        .arg("undo")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let first = ws.join("f0000.txt");
    let deadline = Instant::now() + Duration::from_secs(120);
    while std::fs::read(&first).map(|b| b != old(0)).unwrap_or(true) {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().await.unwrap();
            panic!(
                "pablo undo ended ({status}) before f0000.txt was restored:\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(Instant::now() < deadline, "the restore never started");
        std::thread::sleep(Duration::from_micros(200));
    }
    child.start_kill().unwrap();
    let status = child.wait().await.unwrap();
    assert!(!status.success(), "pablo undo was killed");

    let mut restored = 0;
    for i in 0..n {
        let bytes = std::fs::read(ws.join(format!("f{i:04}.txt"))).unwrap();
        assert!(
            bytes == old(i) || bytes == new(i),
            "f{i:04}.txt is neither the old nor the new text"
        );
        restored += usize::from(bytes == old(i));
    }
    assert!(
        restored < n,
        "the kill came after the restore had finished; nothing was tested"
    );

    let (code, out, stderr) = undo(&sandbox, &[]).await;
    assert_eq!(code, Some(0), "{stderr}\n{out}");
    for i in 0..n {
        assert_eq!(
            std::fs::read(ws.join(format!("f{i:04}.txt"))).unwrap(),
            old(i),
            "f{i:04}.txt"
        );
    }
    let leftovers: Vec<String> = std::fs::read_dir(&ws)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".pablo-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_over_the_checkpoint_cap_is_reported_as_unrestorable() {
    let sandbox = Sandbox::new();
    sandbox.user_config("[options.checkpoints]\nmax_file_bytes = 1000\n");
    let ws = sandbox.workspace();
    std::fs::write(ws.join("big.txt"), "x".repeat(5000)).unwrap();
    std::fs::write(ws.join("small.txt"), "s\n").unwrap();
    let server = ScriptedServer::start().await;
    server.push(call(
        "c1",
        "shell_run",
        &json!({"command": "printf 'y' > big.txt && printf 't\\n' > small.txt"}),
    ));
    server.push(say("done"));
    run_turn(&sandbox, &server, "shrink", None).await;
    let (code, out, stderr) = undo(&sandbox, &[]).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(std::fs::read(ws.join("small.txt")).unwrap(), b"s\n");
    assert_eq!(std::fs::read(ws.join("big.txt")).unwrap(), b"y");
    let skipped = &out["report"]["skipped"][0];
    assert_eq!(skipped["path"], "big.txt", "{out}");
    assert_eq!(skipped["code"], "unrestorable", "{out}");
    assert!(
        skipped["message"].as_str().unwrap().contains("5000 bytes"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_pablo_undo_the_next_request_tells_the_model_which_files_were_restored() {
    let sandbox = Sandbox::new();
    let ws = sandbox.workspace();
    std::fs::write(ws.join("a.txt"), "a\n").unwrap();
    let server = ScriptedServer::start().await;
    server.push(call(
        "c1",
        "fs_write",
        &json!({"path": "a.txt", "text": "A\n", "expected_revision": revision(b"a\n")}),
    ));
    server.push(call(
        "c2",
        "fs_write",
        &json!({"path": "new.txt", "text": "n\n", "expected_revision": null}),
    ));
    server.push(say("done"));
    let (id, _) = run_turn(&sandbox, &server, "change things", None).await;
    let (code, _, stderr) = undo(&sandbox, &[&id]).await;
    assert_eq!(code, Some(0), "{stderr}");
    server.push(say("noted"));
    run_turn(&sandbox, &server, "what now?", Some(&id)).await;
    let last = server.requests().last().unwrap().json();
    let user: Vec<&str> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect();
    let prompt = user.last().unwrap();
    assert!(prompt.ends_with("what now?"), "{prompt}");
    assert!(prompt.contains("undid turn(s) 1"), "{prompt}");
    assert!(prompt.contains("Restored: a.txt"), "{prompt}");
    assert!(prompt.contains("new.txt"), "{prompt}");
}
