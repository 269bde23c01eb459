//! What a checkpoint costs per shell command on a 10,000-file workspace (issue 18).
//!
//! Around every command the scanner is refreshed twice (before it runs and after it ends); the
//! figure is the pair, measured without the command itself. Two cases: the command changed
//! nothing, and it changed 10 files (their new bytes are stored, so a later undo of a later turn
//! can bring them back). Target: at most 30 ms per command. Measured in the same run: the same
//! pair when the scanner walks the workspace instead of listening to inotify (its fallback), and
//! `git status --porcelain` on the same tree (what a git-based checkpoint would pay at least
//! once per command). The disk the content store takes for the workspace is printed once.

// A bench is test code: a failed setup should stop it loudly.
// The disk figures go to stderr, next to criterion's own report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use pablo_session::checkpoint::ObjectStore;
use pablo_session::checkpoint::objects::Budget;
use pablo_session::checkpoint::scan::{ScanOptions, Scanner};
use pablo_workspace::Workspace;

const FILES: usize = 10_000;
const DIRS: usize = 100;

/// 10,000 source-like files of about 1.5 KB in 100 directories, a `.gitignore`d build
/// directory, committed to git (for the peer).
fn workspace(root: &Path) {
    for d in 0..DIRS {
        std::fs::create_dir_all(root.join(format!("src/m{d:03}"))).unwrap();
    }
    for i in 0..FILES {
        let body = format!("fn f{i}() -> usize {{ {i} }}\n").repeat(60);
        std::fs::write(root.join(format!("src/m{:03}/f{i:05}.rs", i % DIRS)), body).unwrap();
    }
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    std::fs::create_dir_all(root.join("target")).unwrap();
    std::fs::write(root.join("target/out.bin"), vec![7u8; 1 << 20]).unwrap();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(root)
            .env("GIT_AUTHOR_NAME", "bench")
            .env("GIT_AUTHOR_EMAIL", "bench@example.invalid")
            .env("GIT_COMMITTER_NAME", "bench")
            .env("GIT_COMMITTER_EMAIL", "bench@example.invalid")
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "bench"]);
}

/// Writes 10 files with content not seen before (iteration `n`).
fn change_ten(root: &Path, n: u64) {
    for k in 0..10 {
        let i = (n as usize * 10 + k) % FILES;
        std::fs::write(
            root.join(format!("src/m{:03}/f{i:05}.rs", i % DIRS)),
            format!("// changed in round {n}\nfn f{i}() {{}}\n"),
        )
        .unwrap();
    }
}

/// The pair of refreshes around one command, timed; `change` runs in between (the command),
/// untimed.
fn per_command(s: &mut CheckpointsScanner, iters: u64, change: impl Fn(u64)) -> Duration {
    let mut total = Duration::ZERO;
    for n in 0..iters {
        let t = Instant::now();
        let before = s.refresh();
        total += t.elapsed();
        std::hint::black_box(before);
        change(n);
        let t = Instant::now();
        let after = s.refresh();
        total += t.elapsed();
        std::hint::black_box(after);
    }
    total
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    workspace(&root);
    let store = dir.path().join("objects");

    let mut watching = CheckpointsScanner::new(&root, &store);
    let t = Instant::now();
    watching.refresh();
    let first = t.elapsed();
    assert!(watching.is_watching(), "inotify is needed for this bench");
    assert_eq!(watching.file_count(), FILES + 1);
    let workspace_bytes: u64 = {
        let mut total = 0;
        let mut stack = vec![root.join("src")];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let m = e.metadata().unwrap();
                if m.is_dir() {
                    stack.push(e.path());
                } else {
                    total += std::os::unix::fs::MetadataExt::blocks(&m) * 512;
                }
            }
        }
        total
    };
    eprintln!(
        "checkpoints: first walk of {FILES} files took {:.0} ms; the content store takes {:.1} MiB \
         on disk for {:.1} MiB of workspace files",
        first.as_secs_f64() * 1000.0,
        checkpoints_store_disk_usage(&store) as f64 / (1 << 20) as f64,
        workspace_bytes as f64 / (1 << 20) as f64,
    );

    let mut walking = CheckpointsScanner::new(&root, &store);
    walking.refresh();
    walking.stop_watching();

    let mut g = c.benchmark_group("checkpoint_per_command");
    g.sample_size(20);
    g.bench_function("inotify/unchanged", |b| {
        b.iter_custom(|iters| per_command(&mut watching, iters, |_| {}));
    });
    let round = std::cell::Cell::new(0u64);
    g.bench_function("inotify/ten_changed", |b| {
        b.iter_custom(|iters| {
            per_command(&mut watching, iters, |_| {
                round.set(round.get() + 1);
                change_ten(&root, round.get());
            })
        });
    });
    // The scanner walks from here on; it is told about the changes made above first.
    walking.refresh();
    g.bench_function("walk/unchanged", |b| {
        b.iter_custom(|iters| per_command(&mut walking, iters, |_| {}));
    });
    g.bench_function("walk/ten_changed", |b| {
        b.iter_custom(|iters| {
            per_command(&mut walking, iters, |_| {
                round.set(round.get() + 1);
                change_ten(&root, round.get());
            })
        });
    });
    g.bench_function("peer_git_status", |b| {
        b.iter(|| {
            let out = std::process::Command::new("git")
                .args(["status", "--porcelain"])
                .current_dir(&root)
                .output()
                .unwrap();
            std::hint::black_box(out.stdout.len())
        });
    });
    g.finish();
    eprintln!(
        "checkpoints: after the runs the content store takes {:.1} MiB",
        checkpoints_store_disk_usage(&store) as f64 / (1 << 20) as f64
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);

/// A scanner of the workspace at `root`, storing into `store`, with a budget that never runs out
/// (the bench measures the scan, not a refusal to store).
struct CheckpointsScanner {
    scanner: Scanner,
    budget: Budget,
}

impl CheckpointsScanner {
    /// Files up to 16 MiB are stored, as a session stores them. Nothing is scanned yet: the first
    /// [`refresh`](Self::refresh) walks the workspace and starts listening to inotify.
    fn new(root: &Path, store: &Path) -> Self {
        let ws = Arc::new(Workspace::open(root).expect("the bench workspace opens"));
        let scanner = Scanner::new(
            ws,
            ObjectStore::at(store),
            ScanOptions {
                max_file_bytes: 16 << 20,
            },
        );
        Self {
            scanner,
            budget: Budget::new(u64::MAX),
        }
    }

    /// One refresh (the measured step). What changed comes back opaque, so the caller drops it
    /// outside its timing, as it did when it held the engine's list of changes.
    fn refresh(&mut self) -> impl Sized + use<> {
        self.scanner.refresh(&self.budget)
    }

    /// Whether the kernel reports changes (false: every refresh walks the workspace).
    fn is_watching(&self) -> bool {
        self.scanner.is_watching()
    }

    /// From here on every refresh walks the workspace, as when inotify is not available.
    fn stop_watching(&mut self) {
        self.scanner.stop_watching();
    }

    /// The files the scanner's index follows.
    fn file_count(&self) -> usize {
        self.scanner.file_count()
    }
}

/// Bytes the content store at `store` takes on disk (whole blocks), for the bench's report.
fn checkpoints_store_disk_usage(store: &Path) -> u64 {
    ObjectStore::at(store).disk_usage()
}
