//! Capture throughput: a command writing 1 GB, captured by pablo (merged pipe, 40/60 inline view,
//! 5 MB spill file, live buffer) against the same command with its output sent to /dev/null.
//! Both run in the same criterion run, so the ratio compares like with like on this machine. A
//! third case, the same writer piped into `cat > /dev/null`, shows what any pipe reader pays.

// A bench that cannot set up should stop loudly.
#![allow(clippy::expect_used)]

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pablo::harness::capture_run;

const BYTES: u64 = 1_000_000_000;

fn writer() -> String {
    format!("head -c {BYTES} /dev/zero")
}

fn capture(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let mut group = c.benchmark_group("shell_capture_1GB");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Bytes(BYTES));
    group.bench_function("devnull", |b| {
        b.iter(|| {
            let status = std::process::Command::new("/bin/sh")
                .arg("-c")
                .arg(format!("{} > /dev/null", writer()))
                .status()
                .expect("spawn");
            assert!(status.success());
        })
    });
    // The best any reader can do through a pipe: `cat` copying to /dev/null.
    group.bench_function("pipe_to_cat", |b| {
        b.iter(|| {
            let status = std::process::Command::new("/bin/sh")
                .arg("-c")
                .arg(format!("{} | cat > /dev/null", writer()))
                .status()
                .expect("spawn");
            assert!(status.success());
        })
    });
    group.bench_function("pablo", |b| {
        b.iter(|| assert_eq!(capture_run(&rt, writer(), dir.path()), BYTES))
    });
    group.finish();
}

criterion_group!(benches, capture);
criterion_main!(benches);
