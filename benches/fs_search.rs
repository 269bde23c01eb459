//! `fs.search` against ripgrep (`rg -F`) on the same generated tree, same query, same run.
//!
//! Two trees: a few large files (`fs_search_*MB`), and a monorepo-sized one (`monorepo_200k`:
//! 200,000 small files in 4,000 directories, a `.env` deep inside) where the same search is timed
//! beside `fs.list` of the whole tree (the tool's default cap of 1,000 entries, and its maximum of
//! 100,000) and beside policy's decision on `grep -rn NEEDLE .`, which, to allow it as a known-safe
//! read, walks the tree for credential files below, and the credential mask such a read then
//! computes, walked (`mask_plan`) and from a session's watches (`mask_plan_tracked`).
//!
//! The tree (about 120 MB of text in 2,400 files, 4 levels deep, with a rare needle) is generated
//! once under `target/bench-data/` and reused. Both searchers run warm (page cache), both use the
//! default thread count and both report line numbers. ripgrep runs as a child process, so its
//! figure includes a process start (a few milliseconds); pablo's does not include a tool-call
//! round trip. Needs `rg` on PATH (`apt-get install ripgrep`); without it only pablo is measured.

// A benchmark that cannot set up its data has nothing to report; panicking says why.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use pablo_workspace::search::{SearchRequest, search};
use pablo_workspace::{RelPath, Workspace};

#[path = "support/mask.rs"]
mod mask;
#[path = "support/policy_engines.rs"]
mod policy_engines;
use policy_engines::PolicyEngines;

const NEEDLE: &str = "pablo_needle_7f3a";
const FILES: usize = 2400;
const FILE_BYTES: usize = 50 * 1024;

const WORDS: &[&str] = &[
    "let",
    "mut",
    "value",
    "return",
    "struct",
    "impl",
    "self",
    "match",
    "Some",
    "None",
    "error",
    "config",
    "workspace",
    "iterator",
    "buffer",
    "result",
    "option",
    "string",
    "vector",
    "index",
    "résumé",
    "naïve",
    "größe",
    "データ",
    "0x1f",
    "42",
    "{",
    "}",
    "(",
    ")",
    ";",
    "=>",
    "//",
];

fn tree() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/fs_search");
    let done = root.join(".complete");
    if done.exists() {
        return root;
    }
    let _ = std::fs::remove_dir_all(&root);
    let mut rng = fastrand::Rng::with_seed(7);
    for i in 0..FILES {
        let dir = root.join(format!("d{}/e{}/f{}", i % 7, i % 11, i % 13));
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = String::with_capacity(FILE_BYTES + 200);
        let mut line = 0;
        while text.len() < FILE_BYTES {
            let n = rng.usize(3..16);
            for _ in 0..n {
                text.push_str(WORDS[rng.usize(..WORDS.len())]);
                text.push(' ');
            }
            // About one file in twenty holds the needle, once.
            if line == 300 && i % 20 == 3 {
                text.push_str(NEEDLE);
            }
            text.push('\n');
            line += 1;
        }
        let mut f = std::fs::File::create(dir.join(format!("file{i}.rs"))).unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }
    std::fs::write(&done, "").unwrap();
    root
}

fn tree_bytes(root: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                total += m.len();
            }
        }
    }
    total
}

fn rg_available() -> bool {
    Command::new("rg").arg("--version").output().is_ok()
}

fn rg(root: &Path) -> usize {
    let out = Command::new("rg")
        .args(["-F", "-n", "--no-heading", "--color", "never", NEEDLE])
        .arg(root)
        .output()
        .unwrap();
    out.stdout.iter().filter(|&&b| b == b'\n').count()
}

fn bench(c: &mut Criterion) {
    let root = tree();
    let bytes = tree_bytes(&root);
    assert!(bytes >= 100 * 1024 * 1024, "tree is only {bytes} bytes");
    let query = FsSearchQuery::new(&root, NEEDLE);
    let expected = FILES.div_ceil(20);
    assert_eq!(query.matches(), expected);
    let have_rg = rg_available();
    if have_rg {
        assert_eq!(rg(&root), expected, "rg found a different number of lines");
    }
    let mut group = c.benchmark_group(format!("fs_search_{}MB", bytes / (1024 * 1024)));
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(15));
    group.bench_function("pablo_fs_search", |b| b.iter(|| query.matches()));
    if have_rg {
        group.bench_function("rg_F", |b| b.iter(|| rg(&root)));
    }
    group.finish();
}

const MONO_FILES: usize = 200_000;
const MONO_DIRS: usize = 4_000;

/// The monorepo-sized tree: `a{0..19}/b{0..19}/c{0..9}`, 50 files of about 1.5 KB in each
/// directory, the needle in one file of 1,000, and a `.env` in the last directory.
fn monorepo() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/monorepo_200k");
    let done = root.join(".complete");
    if done.exists() {
        return root;
    }
    let _ = std::fs::remove_dir_all(&root);
    let mut rng = fastrand::Rng::with_seed(11);
    let per_dir = MONO_FILES / MONO_DIRS;
    for d in 0..MONO_DIRS {
        let dir = root.join(format!("a{}/b{}/c{}", d / 200, (d / 10) % 20, d % 10));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..per_dir {
            let i = d * per_dir + f;
            let mut text = String::with_capacity(1600);
            let mut line = 0;
            while text.len() < 1500 {
                for _ in 0..rng.usize(3..12) {
                    text.push_str(WORDS[rng.usize(..WORDS.len())]);
                    text.push(' ');
                }
                if line == 20 && i % 1000 == 7 {
                    text.push_str(NEEDLE);
                }
                text.push('\n');
                line += 1;
            }
            std::fs::write(dir.join(format!("m{i}.rs")), text).unwrap();
        }
    }
    std::fs::write(root.join("a19/b19/c9/.env"), "API_TOKEN=not-a-real-one\n").unwrap();
    std::fs::write(&done, "").unwrap();
    root
}

fn bench_monorepo(c: &mut Criterion) {
    let root = monorepo();
    let query = FsSearchQuery::new(&root, NEEDLE);
    let expected = MONO_FILES / 1000;
    assert_eq!(query.matches(), expected);
    assert_eq!(query.listed(1000), (1000, true));
    let state = tempfile::tempdir().unwrap();
    let policy = PolicyEngines::over(&root, state.path());
    let grep = format!("grep -rn {NEEDLE} .");
    // Above the credential walk's bound (2,000,000 entries) the read would no longer be proven
    // safe and would ask; the figure is the cost of reaching the answer either way.
    println!(
        "monorepo_200k: `{grep}` is {}",
        if policy.check_default(&grep).allowed {
            "allowed as a known-safe read"
        } else {
            "not proven safe (it asks)"
        }
    );
    let have_rg = rg_available();
    if have_rg {
        assert_eq!(rg(&root), expected, "rg found a different number of lines");
    }
    let mut group = c.benchmark_group("monorepo_200k");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("pablo_fs_search", |b| b.iter(|| query.matches()));
    if have_rg {
        group.bench_function("rg_F", |b| b.iter(|| rg(&root)));
    }
    group.bench_function("grep_rn_decision", |b| {
        b.iter(|| policy.check_default(&grep).allowed)
    });
    // A masked read (this `grep -rn`, with the `.env` below) hides the workspace's credential
    // files first: without a session, a walk of the whole workspace before the command starts.
    assert_eq!(mask::mask_hidden(&root), 1);
    group.bench_function("mask_plan", |b| b.iter(|| mask::mask_hidden(&root)));
    // In a session the workspace is tracked: the first masked read walks it once and puts the
    // watches; each later one reads the change queue (and the `.pablo` directories, none here).
    let tracked = mask::mask_tracked(&root);
    assert_eq!(tracked(), 1);
    group.bench_function("mask_plan_tracked", |b| b.iter(&tracked));
    // Untracked again: the cases below do not depend on it, and the next run's `mask_plan`
    // must walk.
    drop(tracked);
    group.bench_function("fs_list_1000", |b| b.iter(|| query.listed(1000)));
    group.bench_function("fs_list_100000", |b| b.iter(|| query.listed(100_000)));
    group.finish();
}

criterion_group!(benches, bench, bench_monorepo);
criterion_main!(benches);

/// The workspace at `root`, opened once, and one query over all of it (up to 10,000 matches,
/// ignored files skipped, no file or byte cap).
struct FsSearchQuery {
    ws: Workspace,
    req: SearchRequest,
}

impl FsSearchQuery {
    fn new(root: &Path, query: &str) -> Self {
        Self {
            ws: Workspace::open(root).expect("the bench tree opens as a workspace"),
            req: SearchRequest {
                query: query.to_string(),
                path: RelPath::root(),
                max_results: 10_000,
                include_ignored: false,
                max_files: None,
                max_bytes: None,
            },
        }
    }

    /// `fs.list` of the whole workspace as deep as the tool goes, at most `max_entries`: the
    /// number of entries and whether the listing was cut.
    fn listed(&self, max_entries: usize) -> (usize, bool) {
        let listing = self
            .ws
            .list(
                &RelPath::root(),
                pablo_tools::fs_list::MAX_DEPTH,
                max_entries,
            )
            .expect("the listing runs");
        (listing.entries.len(), listing.truncated)
    }

    /// The measured step: one search; the number of matching lines.
    fn matches(&self) -> usize {
        search(&self.ws, &self.req)
            .expect("the search runs")
            .matches
            .len()
    }
}
