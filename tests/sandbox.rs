//! Integration tests: the OS sandbox through the real binary — nothing survives a SIGKILLed
//! pablo, hostile repository configs, `pablo sandbox`, an unprivileged pablo, missing kernel
//! support, and `policy check` naming the sandbox. The tests that drive shell.run directly are
//! in `src/tests/sandbox.rs`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::bin::{Sandbox as Scratch, json_lines};
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

/// Live (non-zombie) processes whose command line is exactly `argv`.
fn processes_running(argv: &[&str]) -> Vec<i32> {
    let want: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit(')').next().map(|r| r.trim().chars().next()))
            .flatten();
        if cmdline == want && state != Some('Z') {
            out.push(pid);
        }
    }
    out
}

fn kill_all(pids: &[i32]) {
    for p in pids {
        if let Some(p) = rustix::process::Pid::from_raw(*p) {
            let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
        }
    }
}

/// `pablo run` holds a background session and a foreground command, each of which started two
/// sleeps of its own; pablo is SIGKILLed (no cleanup of its own can run). The kernel must end all
/// four: each command's namespace dies with its init, and init dies with pablo.
#[tokio::test]
async fn nothing_a_command_started_survives_a_sigkilled_pablo() {
    // Durations unique to this test, so its sleeps are told from any other.
    let bg = ["300.7071", "301.7071"];
    let fg = ["300.1414", "301.1414"];
    let server = ScriptedServer::start().await;
    let background = json!({
        "command": format!("sleep {} & sleep {}", bg[0], bg[1]),
        "background": true
    });
    let foreground = json!({
        "command": format!("sleep {} & sleep {}", fg[0], fg[1]),
        "timeout_ms": 600_000
    });
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "bg",
        "shell_run",
        &[&background.to_string()],
    )));
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "fg",
        "shell_run",
        &[&foreground.to_string()],
    )));
    server.push(ScriptedResponse::sse(openai::text_answer("never sent")).hang_after(0));
    let scratch = Scratch::new();
    let mut pablo = scratch
        .run_json(&server.base_url(), "start the jobs")
        .arg("--auto-approve")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let all = [bg[0], bg[1], fg[0], fg[1]];
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let running: usize = all
            .iter()
            .map(|d| processes_running(&["sleep", d]).len())
            .sum();
        if running == 4 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the four sleeps never ran ({running} of 4)"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    pablo.start_kill().unwrap();
    pablo.wait().await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let survivors = loop {
        let alive: Vec<i32> = all
            .iter()
            .flat_map(|d| processes_running(&["sleep", d]))
            .collect();
        if alive.is_empty() || std::time::Instant::now() > deadline {
            break alive;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    kill_all(&survivors);
    assert!(
        survivors.is_empty(),
        "survived a killed pablo: {survivors:?}"
    );
}

/// A repository whose config makes git run a script on `git status` (fsmonitor) and on
/// `git diff` (an external diff). `pablo run` with no flags: both reads are allowed without a
/// prompt (headless refuses every question), they run and report the real change, and the
/// script never runs: no trace of it anywhere.
#[tokio::test]
async fn auto_allowed_git_reads_neutralise_a_hostile_repository_config() {
    let scratch = Scratch::new();
    let ws = scratch.workspace();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(&ws)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(ws.join("f.txt"), "one\n").unwrap();
    git(&["add", "f.txt"]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "one",
    ]);
    std::fs::write(ws.join("f.txt"), "one\ntwo\n").unwrap();
    let outside = scratch.root().join("outside-trace");
    let inside = ws.join("inside-trace");
    let script = scratch.root().join("evil.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho ran >> {}\necho ran >> {}\necho EVIL\n",
            outside.display(),
            inside.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = script.display().to_string();
    git(&["config", "core.fsmonitor", &script]);
    git(&["config", "diff.external", &script]);
    git(&["config", "core.pager", &script]);

    let server = ScriptedServer::start().await;
    for (id, cmd) in [("st", "git status --short"), ("df", "git diff")] {
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            id,
            "shell_run",
            &[&json!({"command": cmd}).to_string()],
        )));
    }
    server.push(ScriptedResponse::sse(openai::text_answer("looked")));
    let out = scratch
        .run_json(&server.base_url(), "look at the repo")
        .output()
        .await
        .unwrap();
    let lines = json_lines(&out.stdout);
    let results: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "tool_result")
        .map(|l| &l["result"])
        .collect();
    assert_eq!(results.len(), 2, "{lines:?}");
    for r in &results {
        assert_eq!(r["ok"], true, "not run without a prompt: {r}");
        assert_eq!(r["data"]["sandbox"], "read-only", "{r}");
        assert_eq!(r["data"]["exit_code"], 0, "{r}");
        assert!(
            !r["data"]["output"].as_str().unwrap().contains("EVIL"),
            "{r}"
        );
    }
    assert_eq!(results[0]["data"]["output"], " M f.txt\n");
    assert!(
        results[1]["data"]["output"]
            .as_str()
            .unwrap()
            .contains("+two"),
        "{}",
        results[1]
    );
    assert!(!outside.exists(), "the script ran outside the sandbox");
    assert!(!inside.exists(), "the script ran");
    // The repository's own config is untouched.
    let config = std::fs::read_to_string(ws.join(".git/config")).unwrap();
    assert!(config.contains("fsmonitor"), "{config}");
}

#[tokio::test]
async fn pablo_sandbox_runs_one_command_under_a_profile_with_its_exit_status() {
    let scratch = Scratch::new();
    let ws = scratch.workspace();
    let run = |args: &[&str]| {
        let mut cmd = scratch.command();
        cmd.arg("sandbox").args(args);
        cmd
    };
    let out = run(&["--", "sh", "-c", "touch made; exit 7"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "{out:?}");
    assert!(ws.join("made").exists());
    let out = run(&["--profile", "read-only", "--", "touch", "ro"])
        .output()
        .await
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
        "{out:?}"
    );
    assert!(!ws.join("ro").exists());
    let out = run(&["--profile", "sideways", "--", "true"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("sideways"),
        "{out:?}"
    );
}

/// pablo is not dumpable (it keeps its secrets from other processes), so the `/proc` files of a
/// freshly cloned child belong to root; an unprivileged pablo must still be able to write that
/// child's id maps. Run as an unprivileged user (nobody when the tests run as root): the command
/// is in a PID namespace of its own and pablo gives no warning about namespaces.
#[tokio::test]
async fn an_unprivileged_pablo_still_gives_commands_their_own_namespaces() {
    use std::os::unix::fs::PermissionsExt;
    let scratch = Scratch::new();
    let root = rustix::process::geteuid().is_root();
    if root {
        // nobody must reach the scratch directories and be able to write its home and workspace.
        for entry in walk(scratch.root()) {
            std::os::unix::fs::chown(&entry, Some(65534), Some(65534)).unwrap();
        }
        std::fs::set_permissions(scratch.root(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let mut cmd = scratch.command();
    cmd.args(["sandbox", "--", "readlink", "/proc/self/ns/pid"]);
    if root {
        cmd.uid(65534).gid(65534);
    }
    let out = cmd.output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(!stderr.contains("namespaces"), "{stderr}");
    let ours = std::fs::read_link("/proc/self/ns/pid").unwrap();
    let theirs = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(theirs.starts_with("pid:["), "{theirs}");
    assert_ne!(theirs, ours.display().to_string());
}

/// `pablo sandbox` assumes namespaces rather than probing for them first (issue 29): where the
/// kernel refuses them (here bubblewrap's `--disable-userns`), the start fails before the command
/// runs, the probe confirms, and the command runs once without namespaces, with the warning.
#[tokio::test]
async fn pablo_sandbox_where_namespaces_are_refused_runs_the_command_once_without_them_and_says_so()
{
    if std::process::Command::new("bwrap")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: needs bubblewrap (bwrap), which .ci/run installs");
        return;
    }
    let scratch = Scratch::new();
    let ws = scratch.workspace();
    // The environment `Scratch::command` gives pablo, with bubblewrap in front of it.
    let mut wrapped = tokio::process::Command::new("bwrap");
    wrapped
        .args([
            "--unshare-user",
            "--disable-userns",
            "--dev-bind",
            "/",
            "/",
            "--",
        ])
        .arg(env!("CARGO_BIN_EXE_pablo"))
        .args(["sandbox", "--", "sh", "-c"])
        .arg("echo ran >> count; readlink /proc/self/ns/pid")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", scratch.root().join("home"))
        .env("XDG_CONFIG_HOME", scratch.root().join("config"))
        .env("XDG_DATA_HOME", scratch.root().join("data"))
        .env("XDG_STATE_HOME", scratch.root().join("state"))
        .current_dir(&ws)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = wrapped.output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        stderr.contains("commands cannot get their own namespaces"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(ws.join("count")).unwrap(), "ran\n");
    // No PID namespace of its own: the one bubblewrap left it in, which is ours.
    let ours = std::fs::read_link("/proc/self/ns/pid").unwrap();
    let theirs = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_eq!(theirs, ours.display().to_string());
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A kernel without Landlock, made for real: the binary runs under a seccomp filter on which
/// every Landlock system call fails with ENOSYS. pablo says so once and falls back to asking for
/// what it would have sandboxed.
#[tokio::test]
#[allow(unsafe_code)]
async fn without_landlock_pablo_warns_once_and_known_safe_reads_ask() {
    use std::os::unix::process::CommandExt;
    let filter = no_landlock_filter();
    let scratch = Scratch::new();
    std::fs::write(scratch.workspace().join("a.txt"), "x\n").unwrap();
    let server = ScriptedServer::start().await;
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "ls",
        "shell_run",
        &[&json!({"command": "ls"}).to_string()],
    )));
    server.push(ScriptedResponse::sse(openai::text_answer("done")));
    let cmd = scratch.run_json(&server.base_url(), "list");
    let mut cmd = cmd.into_std();
    // SAFETY: the closure only installs a prepared filter (prctl and seccomp system calls).
    unsafe {
        cmd.pre_exec(move || seccompiler::apply_filter(&filter).map_err(std::io::Error::other));
    }
    let out = tokio::process::Command::from(cmd).output().await.unwrap();
    let lines = json_lines(&out.stdout);
    let warnings: Vec<&Value> = lines.iter().filter(|l| l["type"] == "warning").collect();
    assert_eq!(warnings.len(), 1, "{lines:?}");
    assert!(
        warnings[0]["message"]
            .as_str()
            .unwrap()
            .contains("no Landlock"),
        "{lines:?}"
    );
    let result = lines.iter().find(|l| l["type"] == "tool_result").unwrap();
    assert_eq!(
        result["result"]["error"]["code"], "approval_required",
        "{result}"
    );
}

fn no_landlock_filter() -> seccompiler::BpfProgram {
    use seccompiler::{SeccompAction, SeccompFilter};
    let rules = [
        libc::SYS_landlock_create_ruleset,
        libc::SYS_landlock_add_rule,
        libc::SYS_landlock_restrict_self,
    ]
    .into_iter()
    .map(|s| (s, vec![]))
    .collect();
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        std::env::consts::ARCH.try_into().unwrap(),
    )
    .unwrap();
    filter.try_into().unwrap()
}

/// `pablo policy check --json`, with no other flag, names the sandbox: read-only for a
/// known-safe read, workspace-write for anything else.
#[tokio::test]
async fn policy_check_reports_the_sandbox_a_command_would_get() {
    let scratch = Scratch::new();
    std::fs::write(scratch.workspace().join("README.md"), "x\n").unwrap();
    let check = |cmd: &'static str| {
        let mut c = scratch.command();
        c.args(["policy", "check", "--json", "--", cmd]);
        c
    };
    let out = check("cat README.md").output().await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["decision"], "allow", "{report}");
    assert_eq!(report["sandbox"]["profile"], "read-only", "{report}");
    assert_eq!(report["sandbox"]["known_safe"], true, "{report}");
    let out = check("cargo build").output().await.unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["sandbox"]["profile"], "workspace-write", "{report}");
    assert_eq!(report["sandbox"]["network"], false, "{report}");
}

/// The commands' PATH is the person's: a directory of it inside the workspace can hold a `cat`
/// the model wrote. That is never the system's `cat`, so it is no known-safe read.
#[tokio::test]
async fn a_reader_found_in_the_workspace_through_path_is_not_known_safe() {
    let scratch = Scratch::new();
    let ws = scratch.workspace();
    let bin = ws.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("cat"), "#!/bin/sh\necho planted\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("cat"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(ws.join("README.md"), "x\n").unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = scratch
        .command()
        .env("PATH", &path)
        .args(["policy", "check", "--json", "--", "cat README.md"])
        .output()
        .await
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["decision"], "ask", "{report}");
    assert_eq!(
        report["commands"][0]["executable"],
        bin.join("cat")
            .canonicalize()
            .unwrap()
            .display()
            .to_string(),
        "{report}"
    );
    assert_eq!(report["sandbox"]["known_safe"], false, "{report}");
}
