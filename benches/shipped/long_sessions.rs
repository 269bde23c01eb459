//! Issue 46 item 5: long sessions on disk, measured on the binary. A session of 10,000 events
//! (a ~50 MB journal: 1,000 turns, each reading a 50 KB file) resumed in the TUI and by
//! `pablo run --resume`, each against a fresh start in the same run; `pablo stats` over 1,000
//! sessions against the same over 10. The journals are written by pablo's own journal writer
//! (`benches/support/journal_store.rs`), as a long session would have left them. With
//! `PABLO_BENCH_BEFORE=<binary>`, that binary is measured too, in turn with the one under test.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::journal_store::JournalStore;

use super::{Home, ModelStyle, ScriptedServer, Term, median, mib, script, status_kib, text};

/// Events in the long session.
const EVENTS: usize = 10_000;
/// Lines of each file the long session read (27 bytes each): ~50 KB, for ~50 MB in all (the
/// JSON escapes each line's end).
const BODY_LINES: usize = 1_850;

/// A home whose data directory holds one long session working in its workspace; the session's
/// id and its journal's size in bytes.
fn home_with_long_session(config: &str) -> (Home, String, u64) {
    let home = Home::new(config);
    let ws = home.ws().canonicalize().unwrap();
    let sessions = home.dir.path().join("data/pablo/sessions");
    let id =
        JournalStore::at(&sessions).write_session(&ws.display().to_string(), EVENTS, BODY_LINES);
    let size = std::fs::metadata(sessions.join(format!("{id}.jsonl")))
        .unwrap()
        .len();
    (home, id, size)
}

/// Runs `cmd` to its end: wall time, peak resident memory (KiB) and whether it exited 0. The
/// child is reaped by `wait4` (for its own rusage), not by `Child::wait`.
#[allow(unsafe_code, clippy::zombie_processes)]
fn run_measured(cmd: &mut Command) -> (Duration, u64, bool) {
    let started = Instant::now();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `pid` is our child, not yet waited for; `status` and `usage` are writable.
    let rc = unsafe { libc::wait4(pid, &mut status, 0, usage.as_mut_ptr()) };
    let elapsed = started.elapsed();
    assert_eq!(rc, pid, "wait4");
    // SAFETY: wait4 succeeded, so it filled the struct.
    let usage = unsafe { usage.assume_init() };
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    (elapsed, usage.ru_maxrss as u64, ok)
}

/// The binaries measured: the one under test, and before it the one named by
/// `PABLO_BENCH_BEFORE` when set (a build of the code before a change), each run in turn with the
/// other so that both see the same load.
pub(super) fn binaries(binary: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    if let Some(before) = std::env::var_os("PABLO_BENCH_BEFORE") {
        out.push(("before".to_string(), PathBuf::from(before)));
    }
    out.push(("this binary".to_string(), binary.to_path_buf()));
    out
}

/// The long session resumed, in the TUI (first complete screen, memory) and headless (to the
/// first request at the model, to the end), each against a fresh start in the same run.
pub(super) fn resume(binaries: &[(String, PathBuf)], rt: &tokio::runtime::Runtime) {
    let server = rt.block_on(ScriptedServer::start());
    let first_request: Arc<Mutex<Option<Instant>>> = Arc::default();
    let seen = first_request.clone();
    let answer = script(|_| text("Resumed."));
    server.respond_with(move |req, k| {
        seen.lock().unwrap().get_or_insert_with(Instant::now);
        answer(req, k)
    });
    let (home, id, size) = home_with_long_session(&ModelStyle::Name.config(&server.base_url()));
    let runs = 5;
    // Per binary: [fresh start, resumed].
    let mut tui = vec![[Vec::new(), Vec::new()]; binaries.len()];
    let mut tui_rss = vec![[Vec::new(), Vec::new()]; binaries.len()];
    for _ in 0..runs {
        for (b, (_, binary)) in binaries.iter().enumerate() {
            for (i, args) in [&[][..], &["resume", id.as_str()][..]]
                .into_iter()
                .enumerate()
            {
                let t = Term::spawn_with(binary, &home, args, &[]);
                let first = t.settle(Duration::from_millis(300));
                tui[b][i].push(first.as_secs_f64() * 1e3);
                tui_rss[b][i].push(mib(status_kib(t.pid, "VmHWM:")));
            }
        }
    }
    for (b, (name, _)) in binaries.iter().enumerate() {
        println!(
            "TUI ({name}), a {:.1} MB journal of {EVENTS} events resumed (`pablo resume ID`, {runs} runs): first complete screen median {:.1} ms, VmHWM median {:.1} MiB; a fresh start in the same run {:.1} ms, {:.1} MiB",
            size as f64 / 1e6,
            median(tui[b][1].clone()),
            median(tui_rss[b][1].clone()),
            median(tui[b][0].clone()),
            median(tui_rss[b][0].clone()),
        );
    }
    let mut to_request = vec![[Vec::new(), Vec::new()]; binaries.len()];
    let mut to_end = vec![[Vec::new(), Vec::new()]; binaries.len()];
    let mut peak = vec![[Vec::new(), Vec::new()]; binaries.len()];
    for _ in 0..runs {
        for (b, (name, binary)) in binaries.iter().enumerate() {
            for (i, resumed) in [false, true].into_iter().enumerate() {
                let mut cmd = Command::new(binary);
                cmd.arg("run");
                if resumed {
                    cmd.args(["--resume", &id]);
                }
                cmd.arg("go on")
                    .current_dir(home.ws())
                    .env_clear()
                    .envs(home.env());
                *first_request.lock().unwrap() = None;
                let started = Instant::now();
                let (elapsed, kib, ok) = run_measured(&mut cmd);
                assert!(ok, "pablo run ({name}, resumed: {resumed}) failed");
                let asked = first_request.lock().unwrap().map(|t| t - started);
                to_request[b][i].push(asked.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3));
                to_end[b][i].push(elapsed.as_secs_f64() * 1e3);
                peak[b][i].push(mib(kib));
            }
        }
    }
    for (b, (name, _)) in binaries.iter().enumerate() {
        println!(
            "pablo run --resume of the same session ({name}, {runs} runs): first request at the model median {:.1} ms, exit {:.1} ms, peak RSS {:.1} MiB; a new session in the same run {:.1} ms, {:.1} ms, {:.1} MiB",
            median(to_request[b][1].clone()),
            median(to_end[b][1].clone()),
            median(peak[b][1].clone()),
            median(to_request[b][0].clone()),
            median(to_end[b][0].clone()),
            median(peak[b][0].clone()),
        );
    }
}

/// `pablo stats` over 1,000 sessions of 40 events, against the same over 10.
pub(super) fn stats(binaries: &[(String, PathBuf)]) {
    let mut figures = vec![Vec::new(); binaries.len()];
    for count in [10usize, 1_000] {
        let home = Home::new("");
        let store = JournalStore::at(&home.dir.path().join("data/pablo/sessions"));
        for _ in 0..count {
            store.write_session("/work/project", 40, 20);
        }
        let mut times = vec![Vec::new(); binaries.len()];
        let mut peaks = vec![Vec::new(); binaries.len()];
        for _ in 0..5 {
            for (b, (name, binary)) in binaries.iter().enumerate() {
                let mut cmd = Command::new(binary);
                cmd.arg("stats")
                    .current_dir(home.ws())
                    .env_clear()
                    .envs(home.env());
                let (elapsed, kib, ok) = run_measured(&mut cmd);
                assert!(ok, "pablo stats ({name}) failed");
                times[b].push(elapsed.as_secs_f64() * 1e3);
                peaks[b].push(mib(kib));
            }
        }
        for b in 0..binaries.len() {
            figures[b].push((count, median(times[b].clone()), median(peaks[b].clone())));
        }
    }
    for (b, (name, _)) in binaries.iter().enumerate() {
        let line: Vec<String> = figures[b]
            .iter()
            .map(|(n, ms, rss)| format!("{n} sessions {ms:.1} ms ({rss:.1} MiB)"))
            .collect();
        println!(
            "pablo stats ({name}, 5 runs each, median, sessions of 40 events): {}",
            line.join("; ")
        );
    }
}
