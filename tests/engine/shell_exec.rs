//! shell.run with real processes: foreground runs (the process group, the environment, the
//! working directory, cancellation, output capture and its memory), and the fixture the shell
//! tests share.

// A failed unwrap is a failed test, with its message: exactly what a test should do.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use pablo::config::ShellOptions;
use pablo::core::{EventSink, ToolFailure};
use pablo::protocol::{Event, Preview};
use pablo_tools::shell_run::ShellRun;
use pablo_tools::shell_session::ShellSession;
use pablo_tools::{Host, Tool, ToolContext};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub(super) struct Fixture {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    pub(super) workspace: PathBuf,
    pub(super) state: PathBuf,
    pub(super) host: Arc<Host>,
    pub(super) run: ShellRun,
    pub(super) session: ShellSession,
    pub(super) events: mpsc::UnboundedReceiver<Event>,
    pub(super) sink: EventSink,
}

pub(super) fn fixture_with(options: ShellOptions) -> Fixture {
    let ws = tempfile::tempdir().unwrap();
    let st = tempfile::tempdir().unwrap();
    let workspace = ws.path().canonicalize().unwrap();
    let state = st.path().canonicalize().unwrap();
    let handle = Arc::new(pablo::workspace::Workspace::open(&workspace).unwrap());
    let host = Arc::new(Host::new(handle, state.clone(), &options));
    let settings = pablo::process::ShellSettings::from_options(&options, Default::default());
    let (tx, rx) = mpsc::unbounded_channel();
    Fixture {
        _dirs: (ws, st),
        workspace,
        state,
        host,
        run: ShellRun::new(settings.clone()),
        session: ShellSession::new(settings),
        events: rx,
        sink: EventSink::new(tx),
    }
}

pub(super) fn fixture() -> Fixture {
    fixture_with(ShellOptions::default())
}

impl Fixture {
    pub(super) fn ctx(&self, cancel: CancellationToken) -> ToolContext {
        ToolContext {
            call_id: "call-1".into(),
            cancel,
            events: self.sink.clone(),
            host: self.host.clone(),
        }
    }

    pub(super) async fn call(&self, tool: &dyn Tool, args: Value) -> Result<Value, ToolFailure> {
        self.call_with(tool, args, CancellationToken::new()).await
    }

    pub(super) async fn call_with(
        &self,
        tool: &dyn Tool,
        args: Value,
        cancel: CancellationToken,
    ) -> Result<Value, ToolFailure> {
        let ctx = self.ctx(cancel);
        let preview = tool.preview(&args, &ctx).await?;
        tool.commit(&args, &preview, &ctx).await
    }

    pub(super) async fn sh(&self, args: Value) -> Value {
        self.call(&self.run, args).await.unwrap()
    }

    /// Starts a background session (`args` must say `background: true`); returns its id.
    pub(super) async fn background(&self, args: Value) -> String {
        let r = self.sh(args).await;
        assert_eq!(r["status"], "running", "{r}");
        r["session_id"].as_str().unwrap().to_string()
    }

    pub(super) async fn session(&self, args: Value) -> Result<Value, ToolFailure> {
        self.call(&self.session, args).await
    }

    /// Polls `read` until the session's output contains `needle` (a safety net of 20 s).
    pub(super) async fn wait_for_output(&self, id: &str, needle: &str) -> String {
        for _ in 0..400 {
            let r = self
                .session(json!({"action": "read", "session_id": id, "offset": 0}))
                .await
                .unwrap();
            let out = r["output"].as_str().unwrap().to_string();
            if out.contains(needle) {
                return out;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("session {id} never printed {needle:?}");
    }
}

/// Live (non-zombie) pids whose process group is `pgid`, read straight from /proc.
///
/// A command runs in its own PID namespace, where `$$` is 2; the tests learn the group's id as
/// the host sees it from `/proc/self/stat` (field 5, the process group; field 4 is the parent),
/// which `/proc` (the host's, not remounted) reports in the host's numbering.
pub(super) fn alive_in_group(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let rest = &stat[stat.rfind(')').unwrap() + 1..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f[2].parse::<i32>().unwrap() == pgid && f[0] != "Z" && f[0] != "X" {
            out.push(pid);
        }
    }
    out
}

pub(super) fn first_line_pid(output: &str) -> i32 {
    output.lines().next().unwrap().trim().parse().unwrap()
}

// ---------------------------------------------------------------- foreground runs

#[tokio::test]
async fn timeout_kills_the_whole_group_including_background_children() {
    let f = fixture();
    let r = f
        .sh(json!({"command": "cut -d' ' -f5 /proc/self/stat; sleep 300 & sleep 300", "timeout_ms": 300}))
        .await;
    assert_eq!(r["timed_out"], true, "{r}");
    assert_eq!(r["exit_code"], Value::Null);
    let pgid = first_line_pid(r["output"].as_str().unwrap());
    assert_eq!(alive_in_group(pgid), Vec::<i32>::new());
}

/// A member of the command's group that pablo may not signal cannot be proven gone: the call
/// must fail with `tool_cleanup_failed` naming it, never report a silent success.
///
/// As root nothing survives KILL, so the test takes the power away: the thread that runs the
/// tool drops CAP_KILL from its effective set (capabilities are per thread), and a `sleep` owned
/// by another user joins the group (the test process is in the command's session, and the
/// command waits for the join before it exits).
#[test]
fn a_member_pablo_may_not_signal_fails_the_call_with_tool_cleanup_failed() {
    use rustix::thread::CapabilitySet;
    use std::os::unix::process::CommandExt;
    if !rustix::process::geteuid().is_root() {
        eprintln!("note: skipping: only root can start a process another user owns");
        return;
    }
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<PathBuf>();
    let runner = std::thread::spawn(move || {
        let mut caps = rustix::thread::capabilities(None).unwrap();
        caps.effective.remove(CapabilitySet::KILL);
        rustix::thread::set_capabilities(None, caps).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let f = fixture();
            ready_tx.send(f.workspace.clone()).unwrap();
            let command =
                "cut -d' ' -f5 /proc/self/stat > pgid; while [ ! -e joined ]; do sleep 0.01; done";
            f.call(&f.run, json!({"command": command, "timeout_ms": 20_000}))
                .await
        })
    });
    let workspace = ready_rx.recv().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let pgid = loop {
        if let Some(p) = std::fs::read_to_string(workspace.join("pgid"))
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
        {
            break p;
        }
        assert!(std::time::Instant::now() < deadline, "no pgid written");
        std::thread::sleep(Duration::from_millis(5));
    };
    let stranger = std::process::Command::new("sleep")
        .arg("30")
        .uid(65534)
        .gid(65534)
        .process_group(pgid)
        .spawn();
    std::fs::write(workspace.join("joined"), "").unwrap();
    let mut stranger = match stranger {
        Ok(child) => child,
        Err(e) => {
            // A root without CAP_SETUID or without uid 65534 mapped (a user namespace).
            let _ = runner.join();
            eprintln!("note: skipping: cannot start a process as uid 65534: {e}");
            return;
        }
    };
    let result = runner.join().unwrap();
    // This thread still holds CAP_KILL.
    stranger.kill().unwrap();
    stranger.wait().unwrap();
    let failure = result.unwrap_err();
    assert_eq!(failure.code, "tool_cleanup_failed", "{failure}");
    assert!(
        failure.message.contains(&stranger.id().to_string()),
        "{failure}"
    );
    let data = failure.data.unwrap();
    assert_eq!(data["pgid"], pgid, "{data}");
    assert_eq!(data["exit_code"], 0, "{data}");
    assert_eq!(data["survivors"], json!([stranger.id()]), "{data}");
}

#[tokio::test]
async fn finished_command_leaves_no_background_child_behind() {
    let f = fixture();
    let r = f
        .sh(json!({"command": "cut -d' ' -f5 /proc/self/stat; sleep 300 & echo started"}))
        .await;
    assert_eq!(r["exit_code"], 0, "{r}");
    let pgid = first_line_pid(r["output"].as_str().unwrap());
    assert_eq!(alive_in_group(pgid), Vec::<i32>::new());
}

#[tokio::test]
async fn cat_without_arguments_returns_at_once_because_stdin_is_closed() {
    let f = fixture();
    let r = f.sh(json!({"command": "cat", "timeout_ms": 30000})).await;
    assert_eq!(r["timed_out"], false, "{r}");
    assert_eq!(r["exit_code"], 0);
    assert_eq!(r["output"], "");
}

#[tokio::test]
#[allow(unsafe_code)]
async fn environment_is_built_from_nothing_plus_task_additions() {
    // SAFETY: the variable is set once, before this test spawns anything, and no other test
    // reads or writes it; std serialises its own environment access.
    unsafe { std::env::set_var("PABLO_SHELL_TEST_SECRET", "leaked") };
    let f = fixture();
    let r = f
        .sh(json!({"command": "env", "env": {"PABLO_TASK_TICKET": "T-42"}}))
        .await;
    let out = r["output"].as_str().unwrap();
    let names: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    assert!(!names.contains(&"HOME"), "{out}");
    assert!(!out.contains("PABLO_SHELL_TEST_SECRET"), "{out}");
    assert!(out.contains("PABLO_TASK_TICKET=T-42"), "{out}");
    assert!(
        out.contains(&format!("PATH={}", pablo::config::CLEAN_PATH)),
        "{out}"
    );
    assert!(out.contains("TERM=dumb"), "{out}");
    assert!(out.contains("LANG=C.UTF-8"), "{out}");
    // The session's temporary directory, under workspace-write (the default profile).
    let tmp = f.host.sandbox.temp_dir.clone().unwrap();
    assert!(
        out.contains(&format!("TMPDIR={}\n", tmp.display())),
        "{out}"
    );
    // dash adds PWD itself; nothing else may appear.
    for n in names {
        assert!(
            ["PATH", "LANG", "TERM", "PWD", "TMPDIR", "PABLO_TASK_TICKET"].contains(&n),
            "unexpected variable {n} in {out}"
        );
    }
}

#[tokio::test]
async fn env_name_outside_the_task_prefix_is_refused_and_nothing_runs() {
    let f = fixture();
    let err = f
        .call(
            &f.run,
            json!({"command": "touch ran", "env": {"HOME": "/root"}}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "invalid_arguments");
    assert!(err.message.contains("HOME"), "{}", err.message);
    assert!(!f.workspace.join("ran").exists());
}

#[tokio::test]
async fn cwd_outside_the_workspace_is_refused_and_nothing_runs() {
    let f = fixture();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), f.workspace.join("link")).unwrap();
    std::fs::write(f.workspace.join("file"), "x").unwrap();
    for (cwd, code) in [
        ("..", "path_refused"),
        ("sub/../..", "path_refused"),
        ("/tmp", "path_refused"),
        ("link", "path_refused"),
        ("a\\b", "path_refused"),
        ("missing", "not_found"),
        ("file", "not_a_directory"),
    ] {
        let err = f
            .call(&f.run, json!({"command": "touch ran", "cwd": cwd}))
            .await
            .unwrap_err();
        assert_eq!(err.code, code, "cwd {cwd:?}: {}", err.message);
        assert!(!f.workspace.join("ran").exists());
        assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
    }
}

#[tokio::test]
async fn cwd_inside_the_workspace_is_used() {
    let f = fixture();
    std::fs::create_dir_all(f.workspace.join("a/b")).unwrap();
    let ctx = f.ctx(CancellationToken::new());
    let args = json!({"command": "pwd", "cwd": "a/b"});
    let preview = f.run.preview(&args, &ctx).await.unwrap();
    let Preview::Command(p) = &preview else {
        panic!("{preview:?}")
    };
    assert_eq!(p.cwd, "a/b");
    assert!(!p.background && !p.pty && p.commands.is_empty());
    let r = f.run.commit(&args, &preview, &ctx).await.unwrap();
    assert_eq!(
        r["output"].as_str().unwrap().trim(),
        f.workspace.join("a/b").display().to_string()
    );
}

/// The directory checked is the directory used: a command starts in the directory that was
/// opened beneath the workspace, even if its name was swapped for a link to somewhere else
/// between the check and the start (here the swap is made deliberately in that window).
#[tokio::test]
async fn a_cwd_swapped_for_a_link_after_the_check_is_not_followed() {
    for pty in [false, true] {
        let f = fixture();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(f.workspace.join("sub")).unwrap();
        let handle = f
            .host
            .workspace
            .open_beneath(
                &f.host.workspace.parse("sub").unwrap(),
                rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::RDONLY,
                rustix::fs::Mode::empty(),
            )
            .unwrap();
        std::fs::rename(f.workspace.join("sub"), f.workspace.join("sub-real")).unwrap();
        std::os::unix::fs::symlink(outside.path(), f.workspace.join("sub")).unwrap();
        let req = pablo::process::RunRequest {
            spawn: pablo::process::SpawnSpec {
                launcher: "/bin/sh".into(),
                command: "pwd -P; touch made-here".into(),
                cwd: f.workspace.join("sub"),
                cwd_handle: Some(Arc::new(handle)),
                env: pablo::process::CommandEnv::default()
                    .for_command(&Default::default(), pty)
                    .unwrap(),
                pty,
                stdin: false,
                sandbox: pablo::process::Sandbox::off(),
            },
            timeout: Duration::from_secs(20),
            max_output_bytes: 10_000,
            artifact_path: f.state.join("spill.log"),
            cleanup: pablo::process::CleanupTimes::default(),
        };
        let report = pablo::process::run_foreground(req, &CancellationToken::new(), |_| {})
            .await
            .unwrap();
        let out = report
            .view
            .render(|b| String::from_utf8_lossy(b).into_owned());
        assert_eq!(
            out.trim(),
            f.workspace.join("sub-real").display().to_string(),
            "pty {pty}"
        );
        assert!(f.workspace.join("sub-real/made-here").exists(), "pty {pty}");
        assert_eq!(
            std::fs::read_dir(outside.path()).unwrap().count(),
            0,
            "pty {pty}"
        );
    }
}

#[tokio::test]
async fn non_zero_exit_is_a_successful_call_with_its_code() {
    let f = fixture();
    let r = f.sh(json!({"command": "echo nope; exit 3"})).await;
    assert_eq!(r["exit_code"], 3);
    assert_eq!(r["output"], "nope\n");
    let r = f.sh(json!({"command": "kill -TERM $$"})).await;
    assert_eq!(r["exit_code"], Value::Null);
    assert_eq!(r["signal"], "SIGTERM");
}

#[tokio::test]
async fn stdout_and_stderr_are_merged_in_order() {
    let f = fixture();
    let r = f
        .sh(json!({"command": "echo one; echo two >&2; echo three; echo four >&2"}))
        .await;
    assert_eq!(r["output"], "one\ntwo\nthree\nfour\n");
}

#[tokio::test]
async fn live_output_reaches_the_front_end_as_deltas() {
    let mut f = fixture();
    let r = f
        .sh(json!({"command": "echo first; sleep 0.2; echo second"}))
        .await;
    assert_eq!(r["output"], "first\nsecond\n");
    let mut live = String::new();
    while let Ok(e) = f.events.try_recv() {
        if let Event::ToolOutputDelta { call_id, chunk } = e {
            assert_eq!(call_id, "call-1");
            live.push_str(&chunk);
        }
    }
    assert_eq!(live, "first\nsecond\n");
}

#[tokio::test]
async fn cancellation_stops_the_group_and_says_so() {
    let f = fixture();
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        c2.cancel();
    });
    let err = f
        .call_with(
            &f.run,
            json!({"command": "cut -d' ' -f5 /proc/self/stat; sleep 300 & sleep 300", "timeout_ms": 60000}),
            cancel,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "cancelled");
    let data = err.data.unwrap();
    let pgid = first_line_pid(data["output"].as_str().unwrap());
    assert_eq!(alive_in_group(pgid), Vec::<i32>::new());
}

/// The stream `yes 'x€yz😀' | head -c N` prints: an 11-byte period.
const PERIOD: &[u8] = "x€yz😀\n".as_bytes();

fn stream_byte(i: u64) -> u8 {
    PERIOD[(i % PERIOD.len() as u64) as usize]
}

pub(super) fn stream(from: u64, to: u64) -> Vec<u8> {
    (from..to).map(stream_byte).collect()
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

#[tokio::test]
async fn large_output_keeps_forty_sixty_exactly_and_spills_five_million_bytes() {
    // 199,999,998 = 11 × 18,181,818: both cuts land inside a character (the head's in `€`, the
    // tail's in `😀`), so the boundary rule is exercised at both ends.
    const TOTAL: u64 = 199_999_998;
    let f = fixture();
    let r = f
        .sh(json!({"command": format!("yes 'x€yz😀' | head -c {TOTAL}"), "timeout_ms": 120000}))
        .await;
    assert_eq!(
        r["exit_code"],
        0,
        "{}",
        r["output"].as_str().unwrap_or("").len()
    );
    assert_eq!(r["truncated"], true);
    assert_eq!(r["total_bytes"], TOTAL);
    let mut head_end = 20_000;
    while is_continuation(stream_byte(head_end)) {
        head_end -= 1;
    }
    let mut tail_start = TOTAL - 30_000;
    while is_continuation(stream_byte(tail_start)) {
        tail_start += 1;
    }
    assert_eq!(head_end, 19_999);
    assert_eq!(tail_start, TOTAL - 30_000 + 2);
    let omitted = TOTAL - head_end - (TOTAL - tail_start);
    let expected = format!(
        "{}\n[OUTPUT TRUNCATED - {omitted} chars omitted out of {TOTAL} total]\n{}",
        String::from_utf8(stream(0, head_end)).unwrap(),
        String::from_utf8(stream(tail_start, TOTAL)).unwrap()
    );
    assert!(r["output"] == expected.as_str(), "inline view differs");
    let artifact = PathBuf::from(r["artifact"].as_str().unwrap());
    assert!(artifact.starts_with(&f.state));
    let bytes = std::fs::read(&artifact).unwrap();
    assert_eq!(bytes.len(), 5_000_000);
    assert!(bytes == stream(0, 5_000_000), "artifact differs");
}

#[tokio::test]
async fn small_output_has_no_artifact() {
    let f = fixture();
    let r = f.sh(json!({"command": "echo small"})).await;
    assert_eq!(r["truncated"], false);
    assert_eq!(r["artifact"], Value::Null);
    assert!(std::fs::read_dir(&f.state).unwrap().next().is_none());
}

/// Peak resident memory of this process, in KiB.
fn vm_hwm_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Not a test by itself: run in a child process by
/// `capture_memory_does_not_grow_with_output_size`, it prints its own peak memory after
/// capturing `PABLO_MEMORY_PROBE_BYTES` bytes of output.
#[test]
#[ignore = "helper run in a child process"]
#[allow(clippy::print_stdout)] // stdout is how the parent test reads the figure
fn memory_probe_child() {
    let Ok(n) = std::env::var("PABLO_MEMORY_PROBE_BYTES") else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let f = fixture();
        let r = f
            .sh(json!({"command": format!("yes 0123456789abcdef | head -c {n}"), "timeout_ms": 120000}))
            .await;
        assert_eq!(r["total_bytes"].as_u64().unwrap().to_string(), n);
    });
    println!("PROBE_VMHWM_KIB={}", vm_hwm_kib());
}

fn probe_peak_kib(bytes: u64) -> u64 {
    // The test's name inside this binary, the crate's own tests:
    // `tests::shell_exec::memory_probe_child` (the module path without the crate's name).
    let name = match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::memory_probe_child"),
        None => "memory_probe_child".to_string(),
    };
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            name.as_str(),
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PABLO_MEMORY_PROBE_BYTES", bytes.to_string())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .find_map(|l| l.split_once("PROBE_VMHWM_KIB=").map(|(_, v)| v))
        .unwrap_or_else(|| panic!("no probe line in {text}"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn capture_memory_does_not_grow_with_output_size() {
    let small = probe_peak_kib(2_000_000);
    let large = probe_peak_kib(200_000_000);
    // 100 times the output must not cost more than a few MiB of extra peak memory (allocator and
    // thread-stack noise); holding even a tenth of the stream would cost 20 MiB.
    assert!(
        large <= small + 8 * 1024,
        "peak memory grew from {small} KiB to {large} KiB"
    );
}
