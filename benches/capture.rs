//! Capture throughput: a command writing 1 GB, captured by pablo (merged pipe, 40/60 inline view,
//! 5 MB spill file, live buffer) against the same command with its output sent to /dev/null.
//! Both run in the same criterion run, so the ratio compares like with like on this machine. A
//! third case, the same writer piped into `cat > /dev/null`, shows what any pipe reader pays.
//! The captured run is `pablo-process`'s own API, as an approved command runs (merged pipe,
//! inline view, spill file, live buffer) under the default sandbox profile.

// A bench that cannot set up should stop loudly.
#![allow(clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pablo::process::sandbox::SandboxSettings;
use pablo::process::{CleanupTimes, CommandEnv, RunRequest, SpawnSpec, run_foreground};
use tokio_util::sync::CancellationToken;

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

/// The measured step: runs `command` with `/bin/sh` in `dir` (its output spilled to
/// `dir/spill.log` beyond 50,000 bytes of inline view) on `rt` and returns the bytes captured.
/// The request is built here, inside the timing, as it was in the bench.
pub fn capture_run(rt: &tokio::runtime::Runtime, command: String, dir: &Path) -> u64 {
    let req = RunRequest {
        spawn: spec(command, dir),
        timeout: Duration::from_secs(600),
        max_output_bytes: 50_000,
        artifact_path: dir.join("spill.log"),
        cleanup: CleanupTimes::default(),
    };
    let cancel = CancellationToken::new();
    let report = rt
        .block_on(run_foreground(req, &cancel, |_chunk| {}))
        .expect("the captured command runs");
    report.view.total
}

fn spec(command: String, cwd: &Path) -> SpawnSpec {
    SpawnSpec {
        launcher: "/bin/sh".into(),
        command,
        cwd: cwd.to_path_buf(),
        cwd_handle: None,
        env: CommandEnv::default()
            .for_command(&Default::default(), false)
            .unwrap_or_default(),
        pty: false,
        stdin: false,
        // The default profile, as an approved command gets it (its start-up cost is a few
        // hundred microseconds of the second a gigabyte takes).
        sandbox: SandboxSettings::default()
            .sandbox(&SandboxSettings::default().default_choice(), cwd),
    }
}

criterion_group!(benches, capture);
criterion_main!(benches);
