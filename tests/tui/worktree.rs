//! `pablo --worktree NAME` in a terminal (issue 47 item 1): the TUI works in the worktree, so an
//! edit the person approves lands there, on `pablo/NAME`, and the checkout stays as it was.

use serde_json::json;

use crate::support::bin::Sandbox;
use crate::support::http::ScriptedServer;
use crate::support::revision_of;
use crate::support::run::{call, say};

use super::Terminal;
use crate::support::git::git;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tui_with_worktree_works_in_the_worktree_and_leaves_the_checkout_alone() {
    let sandbox = Sandbox::new();
    let ws = sandbox.workspace();
    std::fs::write(ws.join("README.md"), "# demo\n").unwrap();
    git(&ws, &["init", "-q", "-b", "main"]);
    git(&ws, &["add", "."]);
    git(&ws, &["commit", "-q", "-m", "first"]);
    let server = ScriptedServer::start().await;
    server.push(call(
        "w1",
        "fs_write",
        &json!({"path": "README.md", "text": "# demo, from the TUI\n",
                "expected_revision": revision_of(b"# demo\n")}),
    ));
    server.push(say("Edited in the worktree."));
    super::configure_scripted(&sandbox, &server, "");
    let mut t = Terminal::spawn_with(
        &sandbox,
        &["--worktree", "tui-task"],
        &[("OPENAI_API_KEY", "sk-test-key")],
    );
    t.wait_for("test-model · openai");
    t.send("edit the readme\r");
    t.wait_for("Apply this change to README.md?");
    t.send("y");
    t.wait_for("Edited in the worktree.");
    t.wait_for("Ask pablo to do something");
    t.send("/quit\r");
    assert!(t.wait_exit().success());
    let wt = ws
        .canonicalize()
        .unwrap()
        .parent()
        .unwrap()
        .join("workspace.worktrees/tui-task");
    assert_eq!(
        std::fs::read_to_string(wt.join("README.md")).unwrap(),
        "# demo, from the TUI\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("README.md")).unwrap(),
        "# demo\n"
    );
    assert_eq!(git(&wt, &["branch", "--show-current"]), "pablo/tui-task");
    assert_eq!(git(&ws, &["status", "--porcelain"]), "");
}
