//! Session journal speed: resuming a long session and listing many sessions.
//!
//! Targets (issue 7): resume of a 20,000-event journal and listing of 1,000 sessions, each within
//! 200 ms on the 2-core build machine. Each figure comes with its comparison measured in the same
//! run: listing without the summaries (every journal scanned), and loading without the replay.
//! The sessions repeat one realistic turn (`JournalStore::write_session`).

// Test code: a failed unwrap is a failed test, which is what it should be.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
#[path = "support/journal_store.rs"]
mod journal_store;
use journal_store::{JournalStore, journal_load_only};

fn resume(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("sessions");
    let store = JournalStore::at(&dir);
    let id = store.write_session("/work/project", 20_000, 20);
    let path = dir.join(format!("{id}.jsonl"));
    let mut g = c.benchmark_group("resume");
    g.sample_size(20);
    g.bench_function("load_and_replay_20000_events", |b| {
        b.iter(|| assert_eq!(store.load(&id), 20_000))
    });
    g.bench_function("load_only_20000_events", |b| {
        b.iter(|| journal_load_only(&path))
    });
    g.finish();
}

fn list(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("sessions");
    let store = JournalStore::at(&dir);
    for _ in 0..1_000 {
        store.write_session("/work/project", 40, 20);
    }
    let mut g = c.benchmark_group("list");
    g.sample_size(20);
    g.bench_function("list_1000_sessions_with_summaries", |b| {
        b.iter(|| assert_eq!(store.list(), 1_000))
    });
    // The comparison: the same listing when no summary can be trusted, so every journal is read.
    let scan_dir = tmp.path().join("scan");
    let scan = JournalStore::at(&scan_dir);
    std::fs::create_dir_all(&scan_dir).expect("mkdir");
    for entry in std::fs::read_dir(&dir).expect("read_dir") {
        let p = entry.expect("entry").path();
        if p.extension().is_some_and(|e| e == "jsonl") {
            std::fs::copy(&p, scan_dir.join(p.file_name().expect("name"))).expect("copy");
        }
    }
    g.bench_function("list_1000_sessions_scanning_journals", |b| {
        b.iter(|| {
            // Drop the summaries the previous iteration wrote, so each one scans.
            for entry in std::fs::read_dir(&scan_dir).expect("read_dir") {
                let p = entry.expect("entry").path();
                if p.to_string_lossy().ends_with(".meta.json") {
                    std::fs::remove_file(p).expect("rm");
                }
            }
            assert_eq!(scan.list(), 1_000);
        })
    });
    g.finish();
}

criterion_group!(benches, resume, list);
criterion_main!(benches);
