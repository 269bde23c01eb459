//! The sandbox's cost per command: starting and waiting for `/bin/true` with nothing, with only
//! the PID namespace (profile `off`), and under `read-only` and `workspace-write`, against
//! `std::process::Command` as the unsandboxed peer. The target is under 2 ms extra per command.

// A bench is test code: a failed setup should stop it loudly.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use pablo::process::sandbox::{self, Prepared, SandboxSettings};
use pablo::protocol::{SandboxChoice, SandboxProfile};

fn choice(profile: SandboxProfile) -> SandboxChoice {
    SandboxChoice {
        profile,
        network: false,
        known_safe: false,
        degraded: None,
    }
}

fn run(prepared: Prepared, ws: &Path) {
    let argv = ["/bin/true".to_string()];
    let info = pablo::process::run_prepared(&argv, ws, &[], prepared).unwrap();
    assert_eq!(info.code, Some(0));
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap();
    // A repository, so workspace-write also sets up its protective mounts.
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&ws)
        .status()
        .unwrap();
    assert!(git.success());
    let support = sandbox::support();
    assert!(support.landlock() && support.namespaces(), "{support:?}");
    let settings = SandboxSettings::default();
    let mut g = c.benchmark_group("sandbox_true");
    g.bench_function("std_command_unsandboxed", |b| {
        b.iter(|| {
            let s = std::process::Command::new("/bin/true")
                .current_dir(&ws)
                .status()
                .unwrap();
            assert!(s.success());
        })
    });
    g.bench_function("pablo_plain_no_namespaces", |b| {
        b.iter(|| run(Prepared::default(), &ws))
    });
    for (name, profile) in [
        ("pablo_off_pid_namespace", SandboxProfile::Off),
        ("pablo_read_only", SandboxProfile::ReadOnly),
        ("pablo_workspace_write", SandboxProfile::WorkspaceWrite),
    ] {
        let sb = settings.sandbox(&choice(profile), &ws);
        g.bench_function(name, |b| {
            b.iter(|| run(sandbox::prepare(&sb, support).unwrap(), &ws))
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(60);
    targets = bench
}
criterion_main!(benches);
