//! What `benches/capture.rs` measures; see [`super`].
//!
//! One shell command run as an approved command runs: captured by pablo (merged pipe, inline
//! view, spill file, live buffer) under the default sandbox profile.

use std::path::Path;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::process::sandbox::SandboxSettings;
use crate::process::{CleanupTimes, CommandEnv, RunRequest, SpawnSpec, run_foreground};

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
