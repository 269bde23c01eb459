//! Capture throughput: a command writing 1 GB, captured by pablo (merged pipe, 40/60 inline view,
//! 5 MB spill file, live buffer) against the same command with its output sent to /dev/null.
//! Both run in the same criterion run, so the ratio compares like with like on this machine. A
//! third case, the same writer piped into `cat > /dev/null`, shows what any pipe reader pays.

// A bench that cannot set up should stop loudly.
#![allow(clippy::expect_used)]

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pablo::process::{CleanupTimes, RunRequest, SpawnSpec, run_foreground};
use tokio_util::sync::CancellationToken;

const BYTES: u64 = 1_000_000_000;

fn writer() -> String {
    format!("head -c {BYTES} /dev/zero")
}

fn spec(command: String, cwd: &std::path::Path) -> SpawnSpec {
    SpawnSpec {
        launcher: "/bin/sh".into(),
        command,
        cwd: cwd.to_path_buf(),
        cwd_handle: None,
        env: pablo::process::CommandEnv::default()
            .for_command(&Default::default(), false)
            .unwrap_or_default(),
        pty: false,
        stdin: false,
        // The default profile, as an approved command gets it (its start-up cost is a few
        // hundred microseconds of the second a gigabyte takes).
        sandbox: pablo::process::sandbox::SandboxSettings::default().sandbox(
            &pablo::process::sandbox::SandboxSettings::default().default_choice(),
            cwd,
        ),
    }
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
        b.iter(|| {
            let req = RunRequest {
                spawn: spec(writer(), dir.path()),
                timeout: Duration::from_secs(600),
                max_output_bytes: 50_000,
                artifact_path: dir.path().join("spill.log"),
                cleanup: CleanupTimes::default(),
            };
            let cancel = CancellationToken::new();
            let report = rt
                .block_on(run_foreground(req, &cancel, |_chunk| {}))
                .expect("run");
            assert_eq!(report.view.total, BYTES);
        })
    });
    group.finish();
}

criterion_group!(benches, capture);
criterion_main!(benches);
