//! The whole-program figures of issue 29, measured on the binary people run.
//!
//! Every other bench times pablo's code built by `[profile.bench]` (opt-level 3, no LTO); the
//! binary that ships is built by `[profile.release]` (opt-level "z", fat LTO, stripped), and the
//! two differ in size, start-up and memory. This bench measures a built binary from the outside:
//! `PABLO_BENCH_BINARY`, or else `target/release/pablo` (build it first with `cargo build
//! --release`); the bench itself only spawns it, so `cargo bench --profile dev --bench shipped`
//! measures the same thing without building pablo's library a second time.
//!
//! Figures, each with its peer or bound from the same run where there is one:
//! - the file's size, against its ceiling of 14 MB (issue 46: unwind tables and a
//!   position-independent executable are kept): over it, the bench says so and fails;
//! - start-up: spawn to the last byte before 300 ms of quiet (the first complete screen), RSS of
//!   pablo and its children and CPU, in a 120x40 PTY that answers only the cursor-position and
//!   device-attribute queries, with a provider configured (never called);
//! - CPU per PageDown in the approval prompt of a 20,000-line new file (the run time of the
//!   process's threads over 30 presses 0.1 s apart; idle redraws in that time count);
//! - peak resident memory (VmHWM) after one turn of 300 `fs.read` calls of 50 KB;
//! - CPU of a whole `pablo sandbox --profile workspace-write -- /bin/true` against
//!   `bwrap --unshare-all … /bin/true`, 20 of each, alternating.
//!
//! The two TUI figures are taken with the model named both ways the issue compares
//! (`model = "fake-model"`, an unknown model whose window is assumed, and a `[model]` table with
//! `context_window = 32768`). `PABLO_BENCH_ONLY=size,startup,lsp,resume,stats,pagedown,reads,sandbox` picks cases.
//! Nothing here is a test: nothing asserts on a figure.

// A bench is test code: a failed setup should stop it loudly; figures go to stdout.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

#[path = "../tests/support/http.rs"]
mod http;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::{RecordedRequest, ScriptedResponse, ScriptedServer, openai};
use portable_pty::{CommandBuilder, PtySize, native_pty_system};

#[path = "support/journal_store.rs"]
mod journal_store;
#[path = "shipped/long_sessions.rs"]
mod long_sessions;

/// Which way the model is named in the user config.
#[derive(Clone, Copy)]
enum ModelStyle {
    /// `model = "fake-model"`: not in the table, so its window is assumed.
    Name,
    /// `[model] name = "fake-model"`, `context_window = 32768`.
    Table,
}

impl ModelStyle {
    fn label(self) -> &'static str {
        match self {
            Self::Name => "model = \"fake-model\"",
            Self::Table => "[model] context_window = 32768",
        }
    }

    fn config(self, base_url: &str) -> String {
        match self {
            Self::Name => format!(
                "provider = \"openai\"\nmodel = \"fake-model\"\nbase_url = \"{base_url}\"\n"
            ),
            Self::Table => format!(
                "provider = \"openai\"\nbase_url = \"{base_url}\"\n[model]\nname = \"fake-model\"\ncontext_window = 32768\n"
            ),
        }
    }
}

/// A home, config, data and state directory and a git workspace, all fresh.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new(config: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        for d in ["ws", "config/pablo", "data", "state"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        std::fs::write(dir.path().join("config/pablo/config.toml"), config).unwrap();
        let ok = Command::new("git")
            .args(["init", "-q"])
            .current_dir(dir.path().join("ws"))
            .status()
            .unwrap()
            .success();
        assert!(ok, "git init");
        Self { dir }
    }

    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    fn env(&self) -> Vec<(String, String)> {
        let p = |s: &str| self.dir.path().join(s).display().to_string();
        vec![
            ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
            ("HOME".into(), p("")),
            ("TERM".into(), "xterm-256color".into()),
            ("XDG_CONFIG_HOME".into(), p("config")),
            ("XDG_DATA_HOME".into(), p("data")),
            ("XDG_STATE_HOME".into(), p("state")),
            ("OPENAI_API_KEY".into(), "sk-bench".into()),
        ]
    }
}

/// The binary under a 120x40 PTY that answers the two queries a terminal answers.
struct Term {
    child: Box<dyn portable_pty::Child + Send + Sync>,
    pid: i32,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    screen: Arc<Mutex<vt100::Parser>>,
    /// The last 256 KiB of output (text that scrolled off the emulated screen stays findable).
    tail: Arc<Mutex<Vec<u8>>>,
    last_byte: Arc<Mutex<Option<Instant>>>,
    started: Instant,
}

impl Term {
    fn spawn(binary: &Path, home: &Home) -> Self {
        Self::spawn_with(binary, home, &[], &[])
    }

    /// The binary with `args`, and `env` over the home's environment.
    fn spawn_with(binary: &Path, home: &Home, args: &[&str], env: &[(String, String)]) -> Self {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: 40,
                cols: 120,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(binary);
        cmd.args(args);
        cmd.cwd(home.ws());
        cmd.env_clear();
        for (k, v) in home.env().into_iter().chain(env.iter().cloned()) {
            cmd.env(k, v);
        }
        let started = Instant::now();
        let child = pty.slave.spawn_command(cmd).unwrap();
        let pid = child.process_id().unwrap() as i32;
        let mut reader = pty.master.try_clone_reader().unwrap();
        let writer = Arc::new(Mutex::new(pty.master.take_writer().unwrap()));
        let nz = |n: u16| std::num::NonZeroU16::new(n).unwrap();
        let screen = Arc::new(Mutex::new(vt100::Parser::new(nz(40), nz(120), 0)));
        let tail = Arc::new(Mutex::new(Vec::new()));
        let last_byte = Arc::new(Mutex::new(None));
        let (s, t, l, w) = (
            screen.clone(),
            tail.clone(),
            last_byte.clone(),
            writer.clone(),
        );
        std::thread::spawn(move || {
            let _master = pty.master;
            let mut buf = vec![0u8; 65536];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let chunk = &buf[..n];
                *l.lock().unwrap() = Some(Instant::now());
                let mut parser = s.lock().unwrap();
                parser.process(chunk);
                let mut answer = Vec::new();
                if chunk.windows(4).any(|x| x == b"\x1b[6n") {
                    let (row, col) = parser.screen().cursor_position();
                    answer.extend(format!("\x1b[{};{}R", row + 1, col + 1).into_bytes());
                }
                if chunk.windows(3).any(|x| x == b"\x1b[c")
                    || chunk.windows(4).any(|x| x == b"\x1b[0c")
                {
                    answer.extend_from_slice(b"\x1b[?62;c");
                }
                drop(parser);
                if !answer.is_empty() {
                    let _ = w.lock().unwrap().write_all(&answer);
                }
                let mut tail = t.lock().unwrap();
                tail.extend_from_slice(chunk);
                let excess = tail.len().saturating_sub(256 * 1024);
                tail.drain(..excess);
            }
        });
        Self {
            child,
            pid,
            writer,
            screen,
            tail,
            last_byte,
            started,
        }
    }

    fn shows(&self, needle: &str) -> bool {
        if self
            .screen
            .lock()
            .unwrap()
            .screen()
            .contents()
            .contains(needle)
        {
            return true;
        }
        let tail = self.tail.lock().unwrap();
        tail.windows(needle.len()).any(|w| w == needle.as_bytes())
    }

    fn wait_for(&self, needle: &str, within: Duration) {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if self.shows(needle) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "{needle:?} did not show within {within:?}; the screen:\n{}",
            self.screen.lock().unwrap().screen().contents()
        );
    }

    /// Spawn to the last byte before `quiet` without output.
    fn settle(&self, quiet: Duration) -> Duration {
        loop {
            std::thread::sleep(Duration::from_millis(10));
            if let Some(last) = *self.last_byte.lock().unwrap()
                && last.elapsed() >= quiet
            {
                return last - self.started;
            }
        }
    }

    fn send(&self, bytes: &[u8]) {
        self.writer.lock().unwrap().write_all(bytes).unwrap();
    }
}

impl Drop for Term {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// CPU time of a process so far: the scheduler's run time of each of its threads
/// (`/proc/PID/task/*/schedstat`, nanoseconds), which `/proc/PID/stat`'s 10 ms ticks cannot
/// resolve at start-up's scale. Threads that already ended are not counted.
fn cpu(pid: i32) -> Duration {
    let mut total = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        total += stat
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Duration::from_nanos(total)
}

/// A `/proc/PID/status` field in KiB (0 when the process is gone).
fn status_kib(pid: i32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

fn children(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(p) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().nth(1)?.parse::<i32>().ok());
        if ppid == Some(pid) {
            out.push(p);
        }
    }
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn startup(binary: &Path) {
    let mut screen = Vec::new();
    let mut rss = Vec::new();
    let mut cpu_ms = Vec::new();
    for _ in 0..10 {
        let home = Home::new(&ModelStyle::Name.config("http://127.0.0.1:9/v1"));
        let t = Term::spawn(binary, &home);
        let first = t.settle(Duration::from_millis(300));
        let kib = status_kib(t.pid, "VmRSS:")
            + children(t.pid)
                .into_iter()
                .map(|c| status_kib(c, "VmRSS:"))
                .sum::<u64>();
        screen.push(first.as_secs_f64() * 1e3);
        rss.push(mib(kib));
        cpu_ms.push(cpu(t.pid).as_secs_f64() * 1e3);
    }
    let min = screen.iter().copied().fold(f64::INFINITY, f64::min);
    println!(
        "start-up (10 runs, provider configured, 120x40): first complete screen median {:.1} ms (min {min:.1}); RSS with children median {:.1} MiB; CPU of live threads median {:.1} ms",
        median(screen),
        median(rss),
        median(cpu_ms)
    );
}

/// An answer with no usage figures (pablo then measures the conversation itself).
fn tool_call(id: &str, name: &str, args: &serde_json::Value) -> ScriptedResponse {
    let args = args.to_string();
    let fragments: Vec<&str> = args
        .as_bytes()
        .chunks(4096)
        .map(|c| std::str::from_utf8(c).unwrap_or(""))
        .collect();
    ScriptedResponse::sse(
        openai::Stream::new()
            .tool_call(0, id, name, &fragments)
            .finish("tool_calls")
            .done(),
    )
}

fn text(t: &str) -> ScriptedResponse {
    ScriptedResponse::sse(openai::Stream::new().text(&[t]).finish("stop").done())
}

/// Whether pablo is asking for a summary of the conversation (compaction).
fn is_compaction(req: &RecordedRequest) -> bool {
    let body = req.json();
    let Some(messages) = body["messages"].as_array() else {
        return false;
    };
    messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .is_some_and(|m| m["content"].to_string().contains("getting too long"))
}

/// A responder that counts the requests that are not compactions and answers each of them with
/// `answer(k)`; compactions get a short summary.
fn script(
    answer: impl Fn(usize) -> ScriptedResponse + Send + Sync + 'static,
) -> impl Fn(&RecordedRequest, usize) -> ScriptedResponse + Send + Sync + 'static {
    let turns = Mutex::new(0usize);
    move |req, _| {
        if is_compaction(req) {
            return text("Summary: the person asked to read files; they were read.");
        }
        let mut k = turns.lock().unwrap();
        let r = answer(*k);
        *k += 1;
        r
    }
}

fn pagedown(binary: &Path, rt: &tokio::runtime::Runtime, style: ModelStyle) {
    let server = rt.block_on(ScriptedServer::start());
    server.respond_with(script(|k| {
        if k == 0 {
            let content: String = (0..20_000)
                .map(|i| format!("line {i} of the generated file\n"))
                .collect();
            tool_call(
                "call_w",
                "fs_write",
                &serde_json::json!({"path": "big.txt", "text": content, "expected_revision": null}),
            )
        } else {
            text("Done.")
        }
    }));
    let home = Home::new(&style.config(&server.base_url()));
    let t = Term::spawn(binary, &home);
    t.wait_for("Ask pablo", Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(500));
    t.send(b"write the file\r");
    t.wait_for("Create big.txt?", Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(2));
    let presses = 30;
    let before = cpu(t.pid);
    for _ in 0..presses {
        t.send(b"\x1b[6~");
        std::thread::sleep(Duration::from_millis(100));
    }
    let spent = cpu(t.pid) - before;
    t.send(b"y");
    t.wait_for("Done.", Duration::from_secs(60));
    let landed = std::fs::metadata(home.ws().join("big.txt")).map_or(0, |m| m.len());
    println!(
        "PageDown over a 20,000-line new file ({}): CPU per press {:.2} ms ({presses} presses 0.1 s apart; the file landed: {landed} bytes)",
        style.label(),
        spent.as_secs_f64() * 1e3 / presses as f64,
    );
}

fn reads(binary: &Path, rt: &tokio::runtime::Runtime, style: ModelStyle) {
    const CALLS: usize = 300;
    let server = rt.block_on(ScriptedServer::start());
    server.respond_with(script(|k| {
        if k < CALLS {
            tool_call(
                &format!("call_{k}"),
                "fs_read",
                &serde_json::json!({"path": format!("data/f{k:03}.txt")}),
            )
        } else {
            text("All files read.")
        }
    }));
    let home = Home::new(&style.config(&server.base_url()));
    let data = home.ws().join("data");
    std::fs::create_dir_all(&data).unwrap();
    for k in 0..CALLS {
        let line = format!("file {k} {}\n", "x".repeat(90));
        let body: String = line.repeat(50 * 1024 / line.len() + 1);
        std::fs::write(data.join(format!("f{k:03}.txt")), &body[..50 * 1024]).unwrap();
    }
    let t = Term::spawn(binary, &home);
    t.wait_for("Ask pablo", Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(500));
    t.send(b"read them all\r");
    t.wait_for("All files read.", Duration::from_secs(600));
    std::thread::sleep(Duration::from_secs(1));
    let requests = server.requests();
    let compactions = requests.iter().filter(|r| is_compaction(r)).count();
    let largest = requests.iter().map(|r| r.body.len()).max().unwrap_or(0);
    println!(
        "one turn of {CALLS} fs.read calls of 50 KB ({}): VmHWM {:.1} MiB, VmRSS after {:.1} MiB, CPU {:.2} s ({} requests, {compactions} compactions, largest request {} KB)",
        style.label(),
        mib(status_kib(t.pid, "VmHWM:")),
        mib(status_kib(t.pid, "VmRSS:")),
        cpu(t.pid).as_secs_f64(),
        requests.len(),
        largest / 1000,
    );
}

#[allow(unsafe_code)]
fn children_cpu() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a valid, writable rusage; RUSAGE_CHILDREN is always accepted.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr()) };
    if rc != 0 {
        return Duration::ZERO;
    }
    // SAFETY: getrusage succeeded, so it filled the struct.
    let u = unsafe { usage.assume_init() };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn sandbox(binary: &Path) {
    let home = Home::new("");
    let pablo = || {
        let mut c = Command::new(binary);
        c.args(["sandbox", "--profile", "workspace-write", "--", "/bin/true"])
            .current_dir(home.ws())
            .env_clear()
            .envs(home.env());
        c
    };
    let bwrap = || {
        let mut c = Command::new("bwrap");
        c.args([
            "--unshare-all",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "/bin/true",
        ])
        .current_dir(home.ws());
        c
    };
    if !bwrap().status().is_ok_and(|s| s.success()) {
        println!("sandbox: bwrap --unshare-all does not run here; not measured");
        return;
    }
    let runs = 20;
    let mut totals = [(Duration::ZERO, Duration::ZERO); 2];
    for _ in 0..runs {
        for (i, make) in [&pablo as &dyn Fn() -> Command, &bwrap].iter().enumerate() {
            let (c0, w0) = (children_cpu(), Instant::now());
            let ok = make().status().unwrap().success();
            assert!(ok, "the sandboxed /bin/true failed");
            totals[i].0 += children_cpu() - c0;
            totals[i].1 += w0.elapsed();
        }
    }
    let per = |d: Duration| d.as_secs_f64() * 1e3 / runs as f64;
    // `perf stat`'s task-clock counts every task of the run, those a child leaves to its
    // namespace's init to reap included (bwrap's are not reaped into our rusage).
    let task_clock = |c: Command| -> Option<f64> {
        let mut perf = Command::new("perf");
        perf.args(["stat", "-x", ",", "-e", "task-clock", "-r", "20", "--"])
            .arg(c.get_program())
            .args(c.get_args())
            .current_dir(home.ws())
            .env_clear()
            .envs(home.env());
        let out = perf.output().ok()?;
        let text = String::from_utf8_lossy(&out.stderr);
        text.lines()
            .find(|l| l.contains("task-clock"))?
            .split(',')
            .next()?
            .parse()
            .ok()
    };
    if let (Some(p), Some(b)) = (task_clock(pablo()), task_clock(bwrap())) {
        println!(
            "sandboxed /bin/true, perf stat task-clock (20 each): pablo {p:.2} ms, bwrap {b:.2} ms; ratio {:.2}x",
            p / b
        );
    }
    println!(
        "sandboxed /bin/true ({runs} each, alternating): pablo sandbox --profile workspace-write CPU {:.2} ms, wall {:.2} ms; bwrap --unshare-all CPU {:.2} ms, wall {:.2} ms; CPU ratio {:.1}x",
        per(totals[0].0),
        per(totals[0].1),
        per(totals[1].0),
        per(totals[1].1),
        totals[0].0.as_secs_f64() / totals[1].0.as_secs_f64().max(1e-9),
    );
}

/// The programs of the language servers pablo knows (`crates/lsp/src/servers.rs`, `BUILTINS`).
const LANGUAGE_SERVERS: [&str; 7] = [
    "pyright-langserver",
    "basedpyright-langserver",
    "ruff",
    "rust-analyzer",
    "typescript-language-server",
    "gopls",
    "clangd",
];

/// Issue 46 item 2: the first screen with every language server pablo knows on the `PATH`
/// (stubs that are never started: the hub starts a server at the first file of its language),
/// `rust-analyzer` as a rustup proxy with three toolchains to look through, against the same
/// start without them; alternating, 10 of each.
fn startup_with_language_servers(binary: &Path) {
    let mut firsts = [Vec::new(), Vec::new()];
    for _ in 0..10 {
        for (i, with) in [false, true].into_iter().enumerate() {
            let home = Home::new(&ModelStyle::Name.config("http://127.0.0.1:9/v1"));
            let env = if with {
                vec![("PATH".to_string(), stub_language_servers(&home))]
            } else {
                Vec::new()
            };
            let t = Term::spawn_with(binary, &home, &[], &env);
            let first = t.settle(Duration::from_millis(300));
            firsts[i].push(first.as_secs_f64() * 1e3);
        }
    }
    let [without, with] = firsts;
    let (a, b) = (median(without), median(with));
    println!(
        "start-up with the 7 language servers on the PATH (10 each, alternating): first complete screen median {b:.1} ms; without them {a:.1} ms; difference {:+.1} ms",
        b - a
    );
}

/// Stubs of every language server in `home`, `rust-analyzer` a rustup proxy with three
/// toolchains (one holding it); returns the `PATH` that finds them first.
fn stub_language_servers(home: &Home) -> String {
    use std::os::unix::fs::PermissionsExt;
    let stub = |p: &Path| {
        std::fs::write(p, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    let bin = home.dir.path().join("lsp-bin");
    std::fs::create_dir_all(&bin).unwrap();
    for program in LANGUAGE_SERVERS {
        if program != "rust-analyzer" {
            stub(&bin.join(program));
        }
    }
    stub(&bin.join("rustup"));
    std::os::unix::fs::symlink("rustup", bin.join("rust-analyzer")).unwrap();
    for t in ["stable", "beta", "nightly"] {
        let tb = home.dir.path().join(format!(
            ".rustup/toolchains/{t}-x86_64-unknown-linux-gnu/bin"
        ));
        std::fs::create_dir_all(&tb).unwrap();
        if t == "nightly" {
            stub(&tb.join("rust-analyzer"));
        }
    }
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The most bytes the release binary may have (14 MB).
const SIZE_CEILING: u64 = 14_000_000;

fn main() {
    let binary = std::env::var_os("PABLO_BENCH_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/pablo"));
    let Ok(meta) = std::fs::metadata(&binary) else {
        println!(
            "shipped: {} does not exist; build it with `cargo build --release` or name one in PABLO_BENCH_BINARY",
            binary.display()
        );
        return;
    };
    let only = std::env::var("PABLO_BENCH_ONLY").unwrap_or_default();
    let wanted = |case: &str| only.is_empty() || only.split(',').any(|c| c == case);
    println!("binary: {} ({} bytes)", binary.display(), meta.len());
    // `cargo bench --bench shipped` (without `--profile dev`) has just put its own opt-level 3
    // build at target/release/pablo: its figures are not the shipped binary's.
    let version = std::process::Command::new(&binary)
        .arg("--version")
        .output();
    let version = version.map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    if !version
        .as_deref()
        .is_ok_and(|v| v.contains("built with opt-level z"))
    {
        println!(
            "shipped: {} is not a release-profile build ({version:?}); run `cargo build --release`, \
             then this bench with `--profile dev`",
            binary.display()
        );
        std::process::exit(1);
    }
    if wanted("size") && meta.len() > SIZE_CEILING {
        println!(
            "size: {} bytes is over the ceiling of {SIZE_CEILING} bytes (BENCHMARKS.md, binary size)",
            meta.len()
        );
        std::process::exit(1);
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    if wanted("startup") {
        startup(&binary);
    }
    if wanted("lsp") {
        startup_with_language_servers(&binary);
    }
    if wanted("resume") {
        long_sessions::resume(&long_sessions::binaries(&binary), &rt);
    }
    if wanted("stats") {
        long_sessions::stats(&long_sessions::binaries(&binary));
    }
    if wanted("sandbox") {
        sandbox(&binary);
    }
    for style in [ModelStyle::Name, ModelStyle::Table] {
        if wanted("pagedown") {
            pagedown(&binary, &rt, style);
        }
        if wanted("reads") {
            reads(&binary, &rt, style);
        }
    }
}
