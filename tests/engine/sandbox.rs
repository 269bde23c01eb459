//! The OS sandbox with real processes, through shell.run and shell.session: each profile's
//! bounds, the network, background and PTY commands, toolchains, the kernel's support, and the
//! retry without the sandbox after a denial.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use pablo::config::ShellOptions;
use pablo::core::{EventSink, ToolFailure};
use pablo::protocol::{Preview, SandboxChoice, SandboxProfile};
use pablo_tools::shell_run::ShellRun;
use pablo_tools::shell_session::ShellSession;
use pablo_tools::{Host, Tool, ToolContext};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

/// A directory that no sandbox profile lets a command write, to hold the fixtures' workspaces:
/// cargo's target directory, unless the repository was cloned under one of the roots every
/// `workspace-write` command may write (`/tmp`, `/var/tmp`, `/dev/shm`, the toolchain caches), as
/// a clone under `/tmp` is; then a directory under `$HOME/.cache`. Never a root a command may
/// write: the tests that write "outside" would pass for the wrong reason, or fail.
pub(super) fn outside_base() -> PathBuf {
    let writable = pablo::process::sandbox::SandboxSettings::default()
        .sandbox(
            &choice(WorkspaceWrite, true),
            Path::new("/nonexistent-workspace"),
        )
        .writable;
    let writable: Vec<PathBuf> = writable
        .iter()
        .map(|w| w.canonicalize().unwrap_or_else(|_| w.clone()))
        .collect();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let candidates = [
        Some(target_tmpdir()),
        home.map(|h| h.join(".cache/pablo-sandbox-tests")),
    ];
    for dir in candidates.into_iter().flatten() {
        if std::fs::create_dir_all(&dir).is_err() {
            continue;
        }
        let dir = dir.canonicalize().unwrap();
        if !writable.iter().any(|w| dir.starts_with(w)) {
            return dir;
        }
    }
    panic!(
        "no directory outside the writable roots {writable:?} to hold the sandbox fixtures \
         (tried cargo's target directory and $HOME/.cache)"
    );
}

/// Cargo's `target/tmp`, what integration tests know as `CARGO_TARGET_TMPDIR` (cargo sets that
/// only for integration tests and benches): beside the `debug` directory that holds this test
/// binary under `deps/`.
fn target_tmpdir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target = exe
        .ancestors()
        .nth(3)
        .unwrap_or_else(|| panic!("{} is not under target/PROFILE/deps", exe.display()));
    target.join("tmp")
}

/// A workspace whose parent is not writable under any profile (see [`outside_base`]).
struct Fixture {
    dir: tempfile::TempDir,
    workspace: PathBuf,
    host: Arc<Host>,
    run: ShellRun,
    session: ShellSession,
    sink: EventSink,
    _events: tokio::sync::mpsc::UnboundedReceiver<pablo::protocol::Event>,
}

fn fixture() -> Fixture {
    fixture_allowing(&[])
}

/// A fixture whose `workspace-write` commands may reach `hosts` through the network proxy.
fn fixture_allowing(hosts: &[&str]) -> Fixture {
    let dir = tempfile::tempdir_in(outside_base()).unwrap();
    let root = dir.path().canonicalize().unwrap();
    let workspace = root.join("ws");
    let state = root.join("state");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(&state).unwrap();
    let handle = Arc::new(pablo::workspace::Workspace::open(&workspace).unwrap());
    let options = ShellOptions::default();
    let services = pablo_tools::HostServices {
        sandbox: pablo::process::sandbox::SandboxSettings {
            protected_dirs: vec![state.clone()],
            network_allow: hosts
                .iter()
                .map(|h| pablo::config::NetAllowEntry::parse(h).unwrap())
                .collect(),
            ..Default::default()
        },
        ..Default::default()
    };
    let host = Arc::new(Host::with_services(handle, state, &options, services));
    let settings = pablo::process::ShellSettings::from_options(&options, Default::default());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    Fixture {
        dir,
        workspace,
        host,
        run: ShellRun::new(settings.clone()),
        session: ShellSession::new(settings),
        sink: EventSink::new(tx),
        _events: rx,
    }
}

fn choice(profile: SandboxProfile, network: bool) -> SandboxChoice {
    SandboxChoice {
        profile,
        network,
        known_safe: false,
        credentials_masked: false,
        degraded: None,
    }
}

impl Fixture {
    /// The directory that holds the workspace (and nothing a command may write).
    fn outside(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    fn ctx(&self) -> ToolContext {
        ToolContext {
            call_id: "call-1".into(),
            cancel: CancellationToken::new(),
            events: self.sink.clone(),
            host: self.host.clone(),
        }
    }

    /// Runs `args` through `shell.run` as the policy would have sent it: with `sandbox`.
    async fn call(&self, args: Value, sandbox: SandboxChoice) -> Result<Value, ToolFailure> {
        let ctx = self.ctx();
        let mut preview = self.run.preview(&args, &ctx).await?;
        if let Preview::Command(cp) = &mut preview {
            cp.sandbox = Some(sandbox);
        }
        self.run.commit(&args, &preview, &ctx).await
    }

    async fn sh(&self, command: &str, profile: SandboxProfile) -> Value {
        self.call(json!({"command": command}), choice(profile, false))
            .await
            .unwrap()
    }

    async fn sh_net(&self, command: &str, profile: SandboxProfile, network: bool) -> Value {
        self.call(json!({"command": command}), choice(profile, network))
            .await
            .unwrap()
    }

    /// Runs `command` as the policy sends a read that is safe only masked: read-only, with the
    /// workspace's credential files hidden.
    async fn sh_masked(&self, command: &str) -> Value {
        let sandbox = SandboxChoice {
            credentials_masked: true,
            ..choice(ReadOnly, false)
        };
        self.call(json!({"command": command}), sandbox)
            .await
            .unwrap()
    }

    fn git_init(&self) {
        let out = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&self.workspace)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
}

fn out(r: &Value) -> &str {
    r["output"].as_str().unwrap_or_default()
}

use SandboxProfile::{Off, ReadOnly, WorkspaceWrite};

fn landlock() -> bool {
    pablo::process::support().landlock()
}

fn namespaces() -> bool {
    pablo::process::support().namespaces()
}

// ---------------------------------------------------------------- file-system bounds

#[tokio::test]
async fn workspace_write_writes_the_workspace_but_not_its_parent_or_etc() {
    assert!(
        landlock(),
        "this machine has Landlock; the test must not pass vacuously"
    );
    let f = fixture();
    let r = f
        .sh(
            "touch made && mkdir -p a/b && echo hi > a/b/c && cat a/b/c",
            WorkspaceWrite,
        )
        .await;
    assert_eq!(r["exit_code"], 0, "{r}");
    assert_eq!(out(&r), "hi\n");
    assert!(f.workspace.join("made").exists());
    assert_eq!(r["sandbox"], "workspace-write");

    let r = f.sh("touch ../x", WorkspaceWrite).await;
    assert_ne!(r["exit_code"], 0, "{r}");
    assert!(!f.outside().join("x").exists());
    let denied = &r["sandbox_denied"];
    assert_eq!(denied["code"], "sandbox_denied", "{r}");
    assert_eq!(denied["kind"], "file");
    assert_eq!(denied["path"], f.outside().join("x").display().to_string());

    let r = f
        .sh("echo x > /etc/pablo-sandbox-test", WorkspaceWrite)
        .await;
    assert_ne!(r["exit_code"], 0, "{r}");
    assert!(!Path::new("/etc/pablo-sandbox-test").exists());
    assert_eq!(r["sandbox_denied"]["path"], "/etc/pablo-sandbox-test");
}

#[tokio::test]
async fn workspace_write_keeps_every_git_and_pablo_read_only_and_git_writes_ask_to_leave_the_sandbox()
 {
    assert!(namespaces(), "this machine has user namespaces");
    let f = fixture();
    f.git_init();
    std::fs::create_dir_all(f.workspace.join(".pablo")).unwrap();
    std::fs::create_dir_all(f.workspace.join("vendor/dep")).unwrap();
    let out = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(f.workspace.join("vendor/dep"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let config_before = std::fs::read(f.workspace.join(".git/config")).unwrap();
    for cmd in [
        "echo evil > .git/hooks/pre-commit",
        "echo '[core] fsmonitor = /x' >> .git/config",
        "echo x > .pablo/config.toml",
        "rm -rf .git/hooks",
        "mv .git .git-away",
        "mv .git/config .git/config-away",
        "echo x > .git/commondir",
        "mkdir .git/modules",
        "echo x > .git/info/attributes",
        "echo x > .git/index",
        "echo '[core] fsmonitor = /x' >> vendor/dep/.git/config",
        "mv vendor/dep vendor/dep-away",
        "mv vendor vendor-away",
    ] {
        let r = f.sh(cmd, WorkspaceWrite).await;
        assert_ne!(r["exit_code"], 0, "{cmd} succeeded: {r}");
    }
    assert!(!f.workspace.join(".git/hooks/pre-commit").exists());
    assert!(f.workspace.join(".git/hooks").is_dir());
    assert_eq!(
        std::fs::read(f.workspace.join(".git/config")).unwrap(),
        config_before
    );
    assert!(!f.workspace.join(".pablo/config.toml").exists());
    assert!(!f.workspace.join(".git-away").exists());
    assert!(!f.workspace.join(".git/commondir").exists());
    assert!(!f.workspace.join("vendor-away").exists());
    // The work tree stays writable; git's own writes (the index, objects, refs) are the
    // sandbox's to refuse, and the refusal says so, which is what offers the person a run
    // without the sandbox.
    let r = f
        .sh(
            "echo a > f && git add f && git -c user.name=t -c user.email=t@t commit -qm one",
            WorkspaceWrite,
        )
        .await;
    assert_ne!(r["exit_code"], 0, "{r}");
    assert_eq!(
        std::fs::read_to_string(f.workspace.join("f")).unwrap(),
        "a\n"
    );
    assert_eq!(r["sandbox_denied"]["code"], "sandbox_denied", "{r}");
    let r = f.sh("echo evil > .git/hooks/x", WorkspaceWrite).await;
    assert_eq!(r["sandbox_denied"]["code"], "sandbox_denied", "{r}");
}

#[tokio::test]
async fn read_only_reads_everything_and_writes_nothing_but_dev_null() {
    let f = fixture();
    std::fs::write(f.workspace.join("a.txt"), "content\n").unwrap();
    let r = f
        .sh(
            "cat a.txt; head -c 5 /etc/passwd >/dev/null && echo read-etc",
            ReadOnly,
        )
        .await;
    assert_eq!(r["exit_code"], 0, "{r}");
    assert_eq!(out(&r), "content\nread-etc\n");
    for cmd in [
        "touch b",
        "echo x > a.txt",
        "touch ../x",
        "rm a.txt",
        "mkdir d",
        "touch /tmp/pablo-ro-x",
    ] {
        let r = f.sh(cmd, ReadOnly).await;
        assert_ne!(r["exit_code"], 0, "{cmd} succeeded: {r}");
    }
    assert_eq!(
        std::fs::read_to_string(f.workspace.join("a.txt")).unwrap(),
        "content\n"
    );
    assert!(!f.workspace.join("b").exists());
    assert!(!Path::new("/tmp/pablo-ro-x").exists());
}

#[tokio::test]
async fn off_has_no_file_bounds() {
    let f = fixture();
    let r = f.sh("touch ../x-off", Off).await;
    assert_eq!(r["exit_code"], 0, "{r}");
    assert!(f.outside().join("x-off").exists());
    assert!(r.get("sandbox_denied").is_none());
}

/// pablo's own environment holds the provider keys; a sandboxed command cannot read it through
/// `/proc` (Landlock refuses to inspect a process outside the sandbox; as root the user
/// namespace's missing capabilities refuse it too, so `off` is no control here).
#[tokio::test]
async fn a_sandboxed_command_cannot_read_pablos_environment() {
    let f = fixture();
    let me = std::process::id();
    let cmd = format!("cat /proc/{me}/environ > /dev/null && echo readable");
    for profile in [ReadOnly, WorkspaceWrite] {
        let r = f.sh(&cmd, profile).await;
        assert_ne!(r["exit_code"], 0, "{profile:?}: {r}");
        assert!(!out(&r).contains("readable"), "{r}");
    }
}

/// The workspace-relative files a masked read was told it could not see.
fn hidden(r: &Value) -> Vec<&str> {
    r["masked"]["files"]
        .as_array()
        .unwrap_or_else(|| panic!("not masked: {r}"))
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect()
}

/// In a session the mask comes from the workspace's watches, not a walk: a credential file that
/// a command (or anything else) made deep in the tree since the last command is hidden from the
/// next masked read, one under `.pablo` too, and one renamed away or removed is no longer listed.
#[tokio::test]
async fn a_masked_read_in_a_session_hides_the_credential_files_made_since_the_last_command() {
    let f = fixture();
    let ws = &f.workspace;
    for i in 0..8 {
        for j in 0..8 {
            let dir = ws.join(format!("src/m{i}/n{j}"));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("lib.rs"), "// plain\n").unwrap();
        }
    }
    std::fs::write(ws.join(".env"), "SECRET=root-one\n").unwrap();
    let grep = "grep -rn SECRET .";
    let r = f.sh_masked(grep).await;
    assert!(!out(&r).contains("root-one"), "{r}");
    assert_eq!(hidden(&r), [".env"]);

    // Made by a command in a directory that was there (the watches see a file appear), and in
    // directories it made.
    let deep = "src/m3/n5/.env";
    let made = "src/m4/new/dir/.env";
    let r = f
        .sh(
            &format!(
                "echo SECRET=deep-one > {deep} && mkdir -p src/m4/new/dir && \
                 echo SECRET=made-one > {made}"
            ),
            WorkspaceWrite,
        )
        .await;
    assert_eq!(r["exit_code"], 0, "{r}");
    let r = f.sh_masked(grep).await;
    assert!(!out(&r).contains("deep-one"), "{r}");
    assert!(!out(&r).contains("made-one"), "{r}");
    assert_eq!(hidden(&r), [".env", deep, made]);
    let r = f.sh_masked(&format!("cat {deep}")).await;
    assert_eq!(out(&r), "", "{r}");

    // Written between commands, not by one: in the tree, under the workspace's `.pablo` (not
    // watched, walked at each mask) and under a nested one.
    let between = "src/m7/n7/.env";
    std::fs::write(ws.join(between), "SECRET=between-one\n").unwrap();
    std::fs::create_dir_all(ws.join(".pablo")).unwrap();
    std::fs::write(ws.join(".pablo/.env"), "SECRET=pablo-one\n").unwrap();
    std::fs::create_dir_all(ws.join("src/m1/.pablo")).unwrap();
    std::fs::write(ws.join("src/m1/.pablo/.env"), "SECRET=nested-pablo\n").unwrap();
    let r = f.sh_masked(grep).await;
    for secret in [
        "root-one",
        "deep-one",
        "made-one",
        "between-one",
        "pablo-one",
        "nested-pablo",
    ] {
        assert!(!out(&r).contains(secret), "{secret}: {r}");
    }
    assert_eq!(
        hidden(&r),
        [
            ".env",
            ".pablo/.env",
            "src/m1/.pablo/.env",
            deep,
            made,
            between
        ]
    );

    let r = f
        .sh(
            &format!("mv {deep} src/m3/n5/notes.txt && rm .env"),
            WorkspaceWrite,
        )
        .await;
    assert_eq!(r["exit_code"], 0, "{r}");
    let r = f.sh_masked(grep).await;
    assert_eq!(
        hidden(&r),
        [".pablo/.env", "src/m1/.pablo/.env", made, between]
    );
    // No longer named like a credential, the renamed file is read like any other.
    assert!(out(&r).contains("notes.txt:1:SECRET=deep-one"), "{r}");
    assert!(!out(&r).contains("pablo-one"), "{r}");
}

// ---------------------------------------------------------------- network

/// A listener on 127.0.0.1 in pablo's namespace; the command tries to connect to it with bash's
/// `/dev/tcp`.
async fn connect_from(f: &Fixture, profile: SandboxProfile, network: bool) -> Value {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accept = tokio::spawn(async move {
        let _ = tokio::time::timeout(Duration::from_secs(20), listener.accept()).await;
    });
    let r = f
        .sh_net(
            &format!("bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' && echo connected"),
            profile,
            network,
        )
        .await;
    accept.abort();
    r
}

#[tokio::test]
async fn no_network_means_a_local_listener_is_unreachable() {
    let f = fixture();
    for profile in [ReadOnly, WorkspaceWrite] {
        let r = connect_from(&f, profile, false).await;
        assert_ne!(r["exit_code"], 0, "{profile:?}: {r}");
        assert!(!out(&r).contains("connected"), "{r}");
        assert_eq!(r["sandbox_denied"]["kind"], "network", "{r}");
    }
    let r = connect_from(&f, WorkspaceWrite, true).await;
    assert_eq!(out(&r), "connected\n", "{r}");
    let r = connect_from(&f, Off, false).await;
    assert_eq!(out(&r), "connected\n", "{r}");
}

#[tokio::test]
async fn a_command_can_still_talk_to_itself_on_loopback() {
    let f = fixture();
    let script = "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); \
                  c=socket.create_connection(s.getsockname()); print('loopback ok')";
    let r = f
        .sh(&format!("python3 -c \"{script}\""), WorkspaceWrite)
        .await;
    assert_eq!(out(&r), "loopback ok\n", "{r}");
}

// ---------------------------------------------------------------- background and PTY

#[tokio::test]
async fn background_and_pty_commands_are_sandboxed_too() {
    let f = fixture();
    for (pty, background) in [(true, false), (false, true), (true, true)] {
        let args = json!({"command": "touch ../x-bg; touch ok-bg; echo done", "pty": pty, "background": background});
        let r = f.call(args, choice(WorkspaceWrite, false)).await.unwrap();
        let output = if background {
            let id = r["session_id"].as_str().unwrap().to_string();
            let ctx = f.ctx();
            let w = f
                .session
                .commit(
                    &json!({"action": "wait", "session_id": id, "timeout_ms": 20000}),
                    &Preview::Session {
                        action: "wait".into(),
                        session_id: Some(id.clone()),
                    },
                    &ctx,
                )
                .await
                .unwrap();
            w["output"].as_str().unwrap().to_string()
        } else {
            out(&r).to_string()
        };
        assert!(output.contains("done"), "{output}");
        assert!(
            !f.outside().join("x-bg").exists(),
            "pty {pty} background {background}"
        );
        assert!(f.workspace.join("ok-bg").exists());
        std::fs::remove_file(f.workspace.join("ok-bg")).unwrap();
    }
}

/// The proxy lives as long as the command, not the call: a background command that asks for
/// the allowed host after `shell.run` has returned still reaches it, and so does a PTY command.
#[tokio::test]
async fn background_and_pty_commands_reach_the_allowed_hosts_while_they_run() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if !namespaces()
        || std::process::Command::new("curl")
            .arg("-V")
            .output()
            .is_err()
    {
        eprintln!("skipped: needs namespaces and curl");
        return;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let origin = tokio::spawn(async move {
        while let Ok((mut c, _)) = listener.accept().await {
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf).await;
            let _ = c
                .write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\norigin",
                )
                .await;
        }
    });
    let f = fixture_allowing(&["localhost"]);
    let command = format!("sleep 0.5; curl -sS http://localhost:{port}/; echo");
    for (pty, background) in [(true, false), (false, true)] {
        let args = json!({"command": command, "pty": pty, "background": background});
        let r = f.call(args, choice(WorkspaceWrite, false)).await.unwrap();
        let output = if background {
            let id = r["session_id"].as_str().unwrap().to_string();
            let w = f
                .session
                .commit(
                    &json!({"action": "wait", "session_id": id, "timeout_ms": 20000}),
                    &Preview::Session {
                        action: "wait".into(),
                        session_id: Some(id.clone()),
                    },
                    &f.ctx(),
                )
                .await
                .unwrap();
            w["output"].as_str().unwrap().to_string()
        } else {
            out(&r).to_string()
        };
        assert!(
            output.contains("origin"),
            "pty {pty} background {background}: {output}"
        );
    }
    origin.abort();
}

#[tokio::test]
async fn a_command_is_the_child_of_its_own_namespace_init() {
    assert!(namespaces());
    let f = fixture();
    // The shell is pid 2: init (pid 1) runs it, so signals reach it as usual.
    let r = f.sh("echo $$; kill -TERM $$", WorkspaceWrite).await;
    assert_eq!(out(&r), "2\n", "{r}");
    assert_eq!(r["signal"], "SIGTERM", "{r}");
}

// ---------------------------------------------------------------- toolchains

/// `cargo test` of a small crate, through `shell.run` as the model would call it, with the
/// person's toolchain environment (their PATH, rustup's and cargo's homes): the build writes its
/// `target/` in the workspace and cargo's lock files in its home, and nothing else.
#[tokio::test]
async fn cargo_test_of_a_small_crate_passes_in_workspace_write() {
    let mut f = fixture();
    let env = std::sync::Arc::new(pablo::process::CommandEnv::from_process(
        &pablo::process::EnvSettings::default(),
    ));
    let options = ShellOptions::default();
    f.run = ShellRun::new(pablo::process::ShellSettings::from_options(&options, env));
    std::fs::create_dir_all(f.workspace.join("src")).unwrap();
    std::fs::write(
        f.workspace.join("Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::write(
        f.workspace.join("src/lib.rs"),
        "pub fn two() -> u32 { 2 }\n#[test]\nfn two_is_two() { assert_eq!(two(), 2); }\n",
    )
    .unwrap();
    // A target directory exported for the suite's own build (CARGO_TARGET_DIR) lies outside this
    // workspace, where the sandbox rightly refuses writes: the crate builds in its own `target/`.
    let command = "unset CARGO_TARGET_DIR CARGO_BUILD_TARGET_DIR; cargo test --offline 2>&1";
    let r = f
        .call(
            json!({"command": command, "timeout_ms": 600_000}),
            choice(WorkspaceWrite, false),
        )
        .await
        .unwrap();
    assert_eq!(r["exit_code"], 0, "{r}");
    assert_eq!(r["sandbox"], "workspace-write");
    assert!(out(&r).contains("test two_is_two ... ok"), "{r}");
    assert!(f.workspace.join("target").is_dir());
}

// ---------------------------------------------------------------- the kernel's support

#[test]
fn this_machine_offers_landlock_and_namespaces() {
    let s = pablo::process::support();
    assert!(s.landlock_abi.unwrap_or(0) >= 1, "{s:?}");
    assert_eq!(s.namespace_support(), &Ok(()), "{s:?}");
}

/// In the TUI's place, a person answers: the sandboxed command fails on a path outside the
/// workspace, the agent asks (never on its own) whether to run it again without the sandbox,
/// and only the second, approved run writes.
#[tokio::test]
async fn a_sandbox_denial_offers_one_unsandboxed_rerun_as_a_new_question() {
    use pablo::protocol::{ApprovalAnswer, Event, Op};
    let f = fixture();
    let target = f.outside().join("rerun-target");
    let server = ScriptedServer::start().await;
    let args = json!({"command": format!("touch {}", target.display())}).to_string();
    server.push(ScriptedResponse::sse(openai::tool_call_answer(
        "t1",
        "shell_run",
        &[&args],
    )));
    server.push(ScriptedResponse::sse(openai::text_answer("done")));
    let model: Arc<dyn pablo::model::ModelClient> = Arc::new(
        pablo::model::openai::OpenAiClient::new(pablo::model::openai::OpenAiConfig {
            provider: "openai".into(),
            base_url: server.base_url(),
            model: "m".into(),
            api_key: Some(pablo::model::http::ApiKey::new("sk-test")),
            options: Default::default(),
            official: false,
            profile: pablo::model::ModelProfile::lookup("m"),
        })
        .unwrap(),
    );
    let mut catalog = pablo_tools::Catalog::new();
    pablo_tools::register_shell(&mut catalog, &ShellOptions::default(), Default::default())
        .unwrap();
    let mut agent = pablo_agent::spawn(pablo_agent::AgentSetup {
        mode: Default::default(),
        model_switcher: None,
        isolator: None,
        hooks: pablo_hooks::Hooks::none(),
        session_id: "t".into(),
        model,
        catalog,
        policy: Arc::new(pablo::policy::PolicyEngine::default()),
        host: f.host.clone(),
        limits: pablo_agent::Limits::default(),
        approvals: pablo::core::ApprovalMode::Interactive,
        system_prompt: String::new(),
        history: Vec::new(),
        recorder: None,
        checkpoints: None,
    });
    agent.ops.send(Op::user_turn("touch it")).unwrap();
    let mut asked = Vec::new();
    let mut result = None;
    while let Ok(Some(e)) = tokio::time::timeout(Duration::from_secs(60), agent.events.recv()).await
    {
        match e {
            Event::ApprovalRequest {
                call_id,
                preview,
                verdict,
                ..
            } => {
                let Preview::Command(cp) = &preview else {
                    panic!("{preview:?}")
                };
                asked.push((
                    cp.sandbox.clone().unwrap().profile,
                    verdict.rule_ids.clone(),
                ));
                if asked.len() == 2 {
                    assert!(!target.exists(), "the first run wrote");
                }
                agent
                    .ops
                    .send(Op::Approval {
                        call_id,
                        answer: ApprovalAnswer::AllowOnce,
                    })
                    .unwrap();
            }
            Event::ToolCallEnd { result: r, .. } => result = Some(r),
            Event::TurnCompleted { .. } => break,
            _ => {}
        }
    }
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[0].0, WorkspaceWrite);
    assert_eq!(asked[1].0, Off);
    assert_eq!(
        asked[1].1,
        vec![pablo::protocol::SANDBOX_RETRY_RULE.to_string()]
    );
    let result = result.unwrap().to_json();
    assert_eq!(result["data"]["exit_code"], 0, "{result}");
    assert_eq!(result["data"]["sandbox"], "off", "{result}");
    assert!(target.exists());
}
