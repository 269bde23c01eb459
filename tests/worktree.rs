//! A git worktree per task (issue 47 item 1), through the binary against a scripted model:
//! `pablo run --worktree NAME` works in a worktree beside the checkout on `pablo/NAME` and leaves
//! the checkout alone; its commands cannot write the repository's git directory; `pablo worktree
//! list|remove` keep them (refusing uncommitted work); a resumed session goes back to its
//! worktree; a worktree is trusted exactly when its checkout is; git runs no hook or filter of
//! the repository; and an agent with `isolation: worktree` leaves its edit on a branch of its
//! own.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::bin::Sandbox;
use crate::support::git::git;
use crate::support::http::{RecordedRequest, ScriptedResponse, ScriptedServer, openai};
use crate::support::revision_of;
use crate::support::run::{Run, call, run_json, run_within, say};

const README: &str = "# demo\n";

/// The sandbox's workspace as a repository with one commit, and its canonical path.
fn repository(sb: &Sandbox) -> PathBuf {
    let ws = sb.workspace();
    std::fs::write(ws.join("README.md"), README).unwrap();
    git(&ws, &["init", "-q", "-b", "main"]);
    git(&ws, &["add", "."]);
    git(&ws, &["commit", "-q", "-m", "first"]);
    ws.canonicalize().unwrap()
}

/// Where pablo puts the worktree NAME of the checkout `ws`.
fn worktree_of(ws: &Path, name: &str) -> PathBuf {
    ws.parent()
        .unwrap()
        .join(format!(
            "{}.worktrees",
            ws.file_name().unwrap().to_string_lossy()
        ))
        .join(name)
}

/// `pablo ARGS` in the workspace (no model), with its exit code, stdout and stderr.
async fn pablo(sb: &Sandbox, args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = sb.command();
    cmd.args(args);
    crate::support::run::output(cmd).await
}

fn workspace_of(run: &Run) -> PathBuf {
    PathBuf::from(
        run.of_type("session_started")[0]["workspace"]
            .as_str()
            .unwrap(),
    )
}

/// The model rewrites README.md, then answers.
fn edit_readme(server: &ScriptedServer, text: &str) {
    server.push(call(
        "w1",
        "fs_write",
        &json!({"path": "README.md", "text": text,
                "expected_revision": revision_of(README.as_bytes())}),
    ));
    server.push(say("Edited."));
}

#[tokio::test]
async fn a_run_in_a_worktree_edits_it_on_its_branch_and_leaves_the_checkout_untouched() {
    let sb = Sandbox::new();
    let ws = repository(&sb);
    let server = ScriptedServer::start().await;
    edit_readme(&server, "# demo, edited in the worktree\n");
    let run = run_json(
        &sb,
        &server,
        "edit the readme",
        &["--allow-write", "--worktree", "fix-1"],
    )
    .await
    .succeeded();
    let wt = worktree_of(&ws, "fix-1");
    assert_eq!(workspace_of(&run), wt, "the session works in the worktree");
    assert!(run.stderr.contains("pablo/fix-1"), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(wt.join("README.md")).unwrap(),
        "# demo, edited in the worktree\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("README.md")).unwrap(),
        README
    );
    assert_eq!(
        git(&ws, &["status", "--porcelain"]),
        "",
        "the checkout is clean"
    );
    assert_eq!(git(&ws, &["branch", "--show-current"]), "main");
    assert_eq!(git(&wt, &["branch", "--show-current"]), "pablo/fix-1");
    assert_eq!(git(&wt, &["status", "--porcelain"]), " M README.md");
    // Made from HEAD: the branch starts at the checkout's commit.
    assert_eq!(
        git(&wt, &["rev-parse", "HEAD"]),
        git(&ws, &["rev-parse", "HEAD"])
    );

    // The same name again is the same worktree, as it was left.
    let server = ScriptedServer::start().await;
    server.push(say("Nothing to do."));
    let run = run_json(&sb, &server, "look", &["--worktree", "fix-1"])
        .await
        .succeeded();
    assert_eq!(workspace_of(&run), wt);
    assert_eq!(git(&wt, &["status", "--porcelain"]), " M README.md");
}

#[tokio::test]
async fn a_sandboxed_command_in_a_worktree_cannot_write_the_repository_s_git_directory() {
    let sb = Sandbox::new();
    let ws = repository(&sb);
    let head_before = std::fs::read_to_string(ws.join(".git/HEAD")).unwrap();
    let server = ScriptedServer::start().await;
    server.push(call(
        "c1",
        "shell_run",
        &json!({"command": "common=$(git rev-parse --path-format=absolute --git-common-dir); \
                 own=$(git rev-parse --path-format=absolute --git-dir); \
                 echo \"common=$common\"; \
                 echo x > \"$common/HEAD\"; echo \"common_head=$?\"; \
                 echo x > \"$common/hooks/post-checkout\"; echo \"common_hook=$?\"; \
                 echo x > \"$own/HEAD\"; echo \"own_head=$?\"; \
                 echo x >> .git; echo \"dot_git=$?\"; \
                 echo ok > made.txt; echo \"work=$?\""}),
    ));
    server.push(say("Tried."));
    let run = run_json(
        &sb,
        &server,
        "try",
        &["--auto-approve", "--worktree", "guarded"],
    )
    .await
    .succeeded();
    let wt = worktree_of(&ws, "guarded");
    let result = &run.results()[0];
    let output = result["data"]["output"].as_str().unwrap_or_default();
    assert!(
        output.contains(&format!("common={}", ws.join(".git").display())),
        "the command sees the repository's git directory: {result}"
    );
    for refused in ["common_head", "common_hook", "own_head", "dot_git"] {
        assert!(
            output.contains(&format!("{refused}=1")) || output.contains(&format!("{refused}=2")),
            "{refused} was writable: {result}"
        );
    }
    assert!(
        output.contains("work=0"),
        "the worktree is writable: {result}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/HEAD")).unwrap(),
        head_before
    );
    assert!(!ws.join(".git/hooks/post-checkout").exists());
    assert_eq!(
        std::fs::read_to_string(wt.join("made.txt")).unwrap(),
        "ok\n"
    );
    assert_eq!(git(&wt, &["branch", "--show-current"]), "pablo/guarded");
}

#[tokio::test]
async fn worktrees_are_listed_and_removed_and_uncommitted_work_is_not_removed_unforced() {
    let sb = Sandbox::new();
    let ws = repository(&sb);
    for name in ["alpha", "beta"] {
        let server = ScriptedServer::start().await;
        server.push(say("Ready."));
        run_json(&sb, &server, "start", &["--worktree", name])
            .await
            .succeeded();
    }
    let alpha = worktree_of(&ws, "alpha");
    let beta = worktree_of(&ws, "beta");
    std::fs::write(alpha.join("draft.txt"), "unsaved work\n").unwrap();
    // beta gets a commit its checkout does not have.
    std::fs::write(beta.join("more.txt"), "more\n").unwrap();
    git(&beta, &["add", "more.txt"]);
    git(&beta, &["commit", "-q", "-m", "more"]);

    let (code, out, err) = pablo(&sb, &["worktree", "list", "--json"]).await;
    assert_eq!(code, Some(0), "{err}");
    let listed: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        listed,
        vec![
            json!({"name": "alpha", "branch": "pablo/alpha",
                   "path": alpha.display().to_string(), "state": "dirty"}),
            json!({"name": "beta", "branch": "pablo/beta",
                   "path": beta.display().to_string(), "state": "clean"}),
        ]
    );
    let (code, out, _) = pablo(&sb, &["worktree", "list"]).await;
    assert_eq!(code, Some(0));
    assert!(out.contains("alpha") && out.contains("dirty"), "{out}");

    // Uncommitted work is not removed without --force.
    let (code, _, err) = pablo(&sb, &["worktree", "remove", "alpha"]).await;
    assert_eq!(code, Some(2), "{err}");
    assert!(err.trim_end().ends_with("(worktree_dirty)"), "{err}");
    assert!(alpha.join("draft.txt").exists());
    let (code, out, _) = pablo(&sb, &["worktree", "remove", "alpha", "--json"]).await;
    assert_eq!(code, Some(2));
    let line: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(line["code"], "worktree_dirty", "{line}");
    let (code, out, err) = pablo(&sb, &["worktree", "remove", "alpha", "--force", "--json"]).await;
    assert_eq!(code, Some(0), "{err}");
    let line: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        line["branch_deleted"], true,
        "nothing of it was unmerged: {line}"
    );
    assert!(!alpha.exists());
    assert_eq!(git(&ws, &["branch", "--list", "pablo/alpha"]), "");

    // A clean worktree goes unforced; its branch holds a commit HEAD does not, so it stays.
    let (code, out, err) = pablo(&sb, &["worktree", "remove", "beta"]).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("kept the branch pablo/beta"), "{out}");
    assert!(!beta.exists());
    assert_ne!(git(&ws, &["branch", "--list", "pablo/beta"]), "");

    // And the same name makes the worktree again, on the branch that was kept.
    let server = ScriptedServer::start().await;
    server.push(say("Back."));
    run_json(&sb, &server, "again", &["--worktree", "beta"])
        .await
        .succeeded();
    assert!(
        beta.join("more.txt").exists(),
        "the kept branch is checked out"
    );

    let (code, _, err) = pablo(&sb, &["worktree", "remove", "gamma"]).await;
    assert_eq!(code, Some(2));
    assert!(err.trim_end().ends_with("(worktree_not_found)"), "{err}");
}

#[tokio::test]
async fn bad_names_and_folders_outside_a_repository_are_refused_with_their_codes() {
    let sb = Sandbox::new();
    let server = ScriptedServer::start().await;
    // Not a repository yet.
    let run = run_json(&sb, &server, "x", &["--worktree", "fine"]).await;
    assert_eq!(run.code, Some(2));
    assert_eq!(
        run.lines[0]["code"], "not_a_git_repository",
        "{:?}",
        run.lines
    );
    let ws = repository(&sb);
    for bad in ["../up", "a/b", "-flag", ".hidden", "x..y", "name.lock", ""] {
        let run = run_json(&sb, &server, "x", &[&format!("--worktree={bad}")]).await;
        assert_eq!(run.code, Some(2), "{bad}");
        assert_eq!(
            run.lines[0]["code"], "worktree_name_invalid",
            "{bad}: {:?}",
            run.lines
        );
    }
    // Nothing of a refused name is left: no branch, no worktree folder, no worktree git knows.
    assert_eq!(git(&ws, &["branch", "--list", "pablo/*"]), "");
    assert!(!worktree_of(&ws, "x").parent().unwrap().exists());
    assert_eq!(
        git(&ws, &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
    // A directory already where the worktree would go is left alone.
    let taken = worktree_of(&ws, "taken");
    std::fs::create_dir_all(&taken).unwrap();
    std::fs::write(taken.join("mine.txt"), "mine\n").unwrap();
    let run = run_json(&sb, &server, "x", &["--worktree", "taken"]).await;
    assert_eq!(
        run.lines[0]["code"], "worktree_path_taken",
        "{:?}",
        run.lines
    );
    assert!(taken.join("mine.txt").exists());
    assert_eq!(
        std::fs::read_dir(&taken).unwrap().count(),
        1,
        "only mine.txt"
    );
    assert_eq!(git(&ws, &["branch", "--list", "pablo/*"]), "");
    assert!(server.requests().is_empty(), "no model was called");
    let (code, _, err) = pablo(&sb, &["--worktree", "x", "sessions"]).await;
    assert_eq!(code, Some(2));
    assert!(err.trim_end().ends_with("(usage_error)"), "{err}");
}

#[tokio::test]
async fn a_resumed_session_goes_back_to_its_worktree() {
    let sb = Sandbox::new();
    let ws = repository(&sb);
    let server = ScriptedServer::start().await;
    server.push(say("Started."));
    let run = run_json(&sb, &server, "start", &["--worktree", "later"])
        .await
        .succeeded();
    let id = run.of_type("session_started")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let wt = worktree_of(&ws, "later");
    // Resumed from the checkout (the current directory), with an edit.
    edit_readme(&server, "# demo, resumed\n");
    let run = run_json(&sb, &server, "go on", &["--allow-write", "--resume", &id])
        .await
        .succeeded();
    assert_eq!(workspace_of(&run), wt);
    assert_eq!(
        std::fs::read_to_string(wt.join("README.md")).unwrap(),
        "# demo, resumed\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("README.md")).unwrap(),
        README
    );
    // --worktree and --resume do not go together: the session knows where it works.
    let run = run_json(&sb, &server, "x", &["--resume", &id, "--worktree", "other"]).await;
    assert_eq!(run.code, Some(2));
    assert_eq!(run.lines[0]["code"], "usage_error");
}

/// Commits a project config that sends requests to `server` (something only a trusted folder
/// may decide).
fn commit_project_endpoint(ws: &Path, server: &ScriptedServer) {
    std::fs::create_dir_all(ws.join(".pablo")).unwrap();
    std::fs::write(
        ws.join(".pablo/config.toml"),
        format!("base_url = \"{}\"\n", server.base_url()),
    )
    .unwrap();
    git(ws, &["add", ".pablo"]);
    git(ws, &["commit", "-q", "-m", "project config"]);
}

/// `pablo run --json ARGS TASK` in `dir` with the key, and the provider, model and endpoint
/// of the person's config (no flag that would override a project's endpoint).
async fn run_configured(sb: &Sandbox, dir: &Path, args: &[&str]) -> Run {
    let mut cmd = sb.command();
    cmd.current_dir(dir)
        .env("OPENAI_API_KEY", "sk-test-key")
        .args(["run", "--json"])
        .args(args)
        .arg("hello");
    run_within(cmd, Duration::from_secs(60)).await.succeeded()
}

#[tokio::test]
async fn a_worktree_of_an_untrusted_checkout_stays_untrusted_and_of_a_trusted_one_is_trusted() {
    let sb = Sandbox::new();
    let ws = repository(&sb);
    let person = ScriptedServer::start().await;
    let project = ScriptedServer::start().await;
    sb.user_config(&format!(
        "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n",
        person.base_url()
    ));
    commit_project_endpoint(&ws, &project);
    person.push(say("Person's model."));
    let run = run_configured(&sb, &ws, &["--worktree", "untrusted"]).await;
    assert!(
        project.requests().is_empty(),
        "an untrusted worktree's project config chose the endpoint"
    );
    assert_eq!(person.requests().len(), 1);
    assert!(run.stderr.contains("base_url"), "{}", run.stderr);

    // The checkout is trusted: its worktrees are too (new ones and the one made before).
    let (code, _, err) = pablo(&sb, &["policy", "trust"]).await;
    assert_eq!(code, Some(0), "{err}");
    for name in ["untrusted", "trusted"] {
        project.push(say("Project's endpoint."));
        run_configured(&sb, &ws, &["--worktree", name]).await;
    }
    assert_eq!(
        project.requests().len(),
        2,
        "the trusted checkout's worktrees"
    );
    assert_eq!(person.requests().len(), 1);

    // Trust is the checkout's: revoking it in a worktree revokes it for all of them.
    let wt = worktree_of(&ws, "trusted");
    let mut cmd = sb.command();
    cmd.current_dir(&wt).args(["policy", "trust", "--revoke"]);
    assert!(cmd.output().await.unwrap().status.success());
    person.push(say("Person's model again."));
    run_configured(&sb, &ws, &[]).await;
    person.push(say("And in the worktree."));
    run_configured(&sb, &wt, &[]).await;
    assert_eq!(
        project.requests().len(),
        2,
        "the checkout is untrusted again"
    );
    assert_eq!(person.requests().len(), 3);
}

/// A repository whose `.git/config` defines a filter driver every file goes through and whose
/// `post-checkout` hook runs a program: each would leave a file in `marks` when run.
fn hostile_repository(sb: &Sandbox, marks: &Path) -> PathBuf {
    let ws = sb.workspace();
    std::fs::write(ws.join(".gitattributes"), "* filter=evil\n").unwrap();
    let ws = repository(sb);
    let config = ws.join(".git/config");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "[filter \"evil\"]\n\tsmudge = \"sh -c 'touch {m}/smudge; cat'\"\n\tclean = \"sh -c \
         'touch {m}/clean; cat'\"\n",
        m = marks.display()
    ));
    std::fs::write(&config, text).unwrap();
    let hook = ws.join(".git/hooks/post-checkout");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::write(
        &hook,
        format!("#!/bin/sh\ntouch {}/hook\n", marks.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    for name in ["reference-transaction", "post-index-change"] {
        std::fs::copy(&hook, hook.with_file_name(name)).unwrap();
    }
    ws
}

#[tokio::test]
async fn making_listing_and_removing_a_worktree_runs_no_hook_or_filter_of_the_repository() {
    let marks = tempfile::tempdir().unwrap();
    let sb = Sandbox::new();
    let ws = hostile_repository(&sb, marks.path());
    let server = ScriptedServer::start().await;
    server.push(say("Here."));
    run_json(&sb, &server, "start", &["--worktree", "calm"])
        .await
        .succeeded();
    let wt = worktree_of(&ws, "calm");
    assert_eq!(
        std::fs::read_to_string(wt.join("README.md")).unwrap(),
        README
    );
    std::fs::write(wt.join("README.md"), "# changed, so status hashes it\n").unwrap();
    let (code, out, err) = pablo(&sb, &["worktree", "list"]).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("dirty"), "{out}");
    let (code, _, err) = pablo(&sb, &["worktree", "remove", "calm", "--force"]).await;
    assert_eq!(code, Some(0), "{err}");
    let ran: Vec<String> = std::fs::read_dir(marks.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(ran.is_empty(), "the repository ran {ran:?}");

    // The same repository under plain git runs them: the test's traps are real.
    let plain = ws.parent().unwrap().join("plain");
    git(
        &ws,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "plain",
            plain.to_str().unwrap(),
        ],
    );
    let ran: Vec<String> = std::fs::read_dir(marks.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        ran.contains(&"hook".to_string()) && ran.contains(&"smudge".to_string()),
        "{ran:?}"
    );
}

const SUBAGENT_MARK: &str = "# You are a subagent";

fn tool_results(r: &RecordedRequest) -> usize {
    r.json()["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "tool").count())
        .unwrap_or(0)
}

fn is_subagent(r: &RecordedRequest) -> bool {
    r.json()["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .contains(SUBAGENT_MARK)
}

#[tokio::test]
async fn an_isolated_agent_leaves_its_edit_on_a_branch_of_its_own_and_the_checkout_untouched() {
    let sb = Sandbox::new();
    let ws = repository(&sb);
    let agents = sb.config_dir().join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("fixer.md"),
        "---\nname: fixer\ndescription: Fixes things apart\ntools: Read, Write, Bash\n\
         isolation: worktree\n---\nFix what you are asked to.\n",
    )
    .unwrap();
    std::fs::write(
        agents.join("looker.md"),
        "---\nname: looker\ndescription: Looks apart\ntools: Read\nisolation: worktree\n---\n",
    )
    .unwrap();
    let server = ScriptedServer::start().await;
    let readme_rev = revision_of(README.as_bytes());
    server.respond_with(move |r, _| {
        let system = r.json()["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let n = tool_results(r);
        if is_subagent(r) && system.contains("`looker` agent") {
            ScriptedResponse::sse(openai::text_answer("Looked; nothing to change."))
        } else if is_subagent(r) {
            match n {
                0 => call(
                    "s1",
                    "fs_write",
                    &json!({"path": "README.md", "text": "# fixed apart\n",
                            "expected_revision": readme_rev}),
                ),
                1 => call("s2", "shell_run", &json!({"command": "pwd"})),
                _ => ScriptedResponse::sse(openai::text_answer("Fixed the readme.")),
            }
        } else {
            match n {
                0 => ScriptedResponse::sse(openai::tool_call_answer(
                    "t1",
                    "agent_task",
                    &[
                        &json!({"description": "fix apart", "prompt": "Fix the readme.",
                              "agent": "fixer"})
                        .to_string(),
                    ],
                )),
                1 => ScriptedResponse::sse(openai::tool_call_answer(
                    "t2",
                    "agent_task",
                    &[&json!({"description": "look apart", "prompt": "Look.",
                              "agent": "looker"})
                    .to_string()],
                )),
                _ => ScriptedResponse::sse(openai::text_answer("Done.")),
            }
        }
    });
    let run = run_json(&sb, &server, "delegate", &["--allow-write"])
        .await
        .succeeded();
    let results = run.results();
    let fixer = &results[0];
    assert_eq!(fixer["ok"], true, "{fixer}");
    let left = &fixer["data"]["worktree"];
    let branch = left["branch"].as_str().unwrap();
    let path = PathBuf::from(left["path"].as_str().unwrap());
    assert!(branch.starts_with("pablo/fixer-"), "{left}");
    assert_eq!(left["changed"], true);
    assert_eq!(path, worktree_of(&ws, branch.trim_start_matches("pablo/")));
    assert_eq!(
        std::fs::read_to_string(path.join("README.md")).unwrap(),
        "# fixed apart\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("README.md")).unwrap(),
        README,
        "the parent's checkout is untouched"
    );
    assert_eq!(git(&ws, &["status", "--porcelain"]), "");
    assert_eq!(git(&path, &["branch", "--show-current"]), branch);
    // Its command ran in its worktree too.
    let sub_results: Vec<&Value> = run
        .of_type("subagent")
        .into_iter()
        .map(|l| &l["event"])
        .filter(|e| e["type"] == "tool_result" && e["tool"] == "shell.run")
        .collect();
    let pwd = sub_results[0]["result"]["data"]["output"].as_str().unwrap();
    assert_eq!(pwd.trim(), path.display().to_string(), "{}", sub_results[0]);

    // An isolated task that changed nothing leaves nothing behind.
    let looker = &results[1];
    assert_eq!(looker["ok"], true, "{looker}");
    assert_eq!(looker["data"]["worktree"]["changed"], false, "{looker}");
    let gone = PathBuf::from(looker["data"]["worktree"]["path"].as_str().unwrap());
    assert!(!gone.exists());
    let branches = git(&ws, &["branch", "--list", "pablo/looker-*"]);
    assert_eq!(branches, "", "its branch went with it");
}
