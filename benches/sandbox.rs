//! The sandbox's cost per command: starting and waiting for `/bin/true` with nothing, with only
//! the PID namespace (profile `off`), and under `read-only` and `workspace-write`, against
//! `std::process::Command` as the unsandboxed peer. The target is under 2 ms extra per command.
//! `read-only` also with the credential mask (issue 42): the workspace walked for credential
//! names and the home directory hidden, computed for every command as `shell.run` does.
//!
//! `shield`: what `workspace-write` adds for a larger workspace — the walk that finds every
//! `.git` and `.pablo` to protect (`process::shield::compute`), on a tree of 10,000 directories
//! with 20 nested repositories, against a plain `std::fs::read_dir` walk of the same tree (the
//! bound: the walk cannot be cheaper than reading every directory once).
//!
//! `monorepo`: one more approved command in a session (issue 46): `/bin/true` under
//! `workspace-write` in a workspace of 40,000 directories (with a nested repository and a
//! vendored `.git` at depth) against one of 10, both tracked as a session's tool host tracks its
//! workspace (`process::nested`: walked once, then kept current by inotify), side by side in one
//! run; then the fallbacks in the 40,000-directory one: the command of a process that does not
//! track (`pablo sandbox`, or no inotify watches left: a walk per command), and the command that
//! rebuilds the watches after the change queue overflowed (a walk plus a watch per directory).

// A bench is test code: a failed setup should stop it loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use pablo_process::sandbox::{self, Prepared, Sandbox, SandboxSettings, Support};
use pablo_protocol::{SandboxChoice, SandboxProfile};

#[path = "support/mask.rs"]
mod mask;

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
    // A credential file for the masked case to hide.
    std::fs::write(ws.join(".env"), "TOKEN=x\n").unwrap();
    check_support().unwrap();
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
    for (name, profile) in [
        ("pablo_plain_no_namespaces", "plain"),
        ("pablo_off_pid_namespace", "off"),
        ("pablo_read_only", "read-only"),
        ("pablo_read_only_credentials_masked", "read-only-masked"),
        ("pablo_workspace_write", "workspace-write"),
    ] {
        let run = SandboxTrue::new(&ws, profile);
        g.bench_function(name, |b| b.iter(|| run.run()));
    }
    g.finish();
    shield(c);
    monorepo(c);
}

/// A git workspace of about `dirs` directories, plus (for a large one, or with `repositories`) a
/// nested repository three levels down and a vendored `.git` ten levels down.
fn git_workspace(root: &Path, dirs: usize, repositories: bool) -> std::path::PathBuf {
    let ws = root.join(format!("ws{dirs}-{repositories}"));
    std::fs::create_dir_all(&ws).unwrap();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&ws)
        .status()
        .unwrap();
    assert!(git.success());
    // 200 top-level directories of `dirs / 200` (or `dirs` top-level ones when fewer).
    let per = (dirs / 200).max(1);
    for i in 0..dirs {
        std::fs::create_dir_all(ws.join(format!("d{}", i / per)).join(format!("e{i}"))).unwrap();
    }
    if dirs >= 1_000 || repositories {
        let nested = ws.join("d3/e600/nested");
        std::fs::create_dir_all(&nested).unwrap();
        let git = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&nested)
            .status()
            .unwrap();
        assert!(git.success());
        std::fs::create_dir_all(ws.join("d9/e1800/a/b/c/d/e/f/vendored/.git")).unwrap();
    }
    ws
}

fn monorepo(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let small = git_workspace(&root, 10, false);
    // The same two repositories as the large one, at the same places: what protecting them costs
    // (mounts: each, and each directory on the way) is the same in any tree.
    let small_repos = git_workspace(&root, 10, true);
    let large = git_workspace(&root, 40_000, true);
    let mut g = c.benchmark_group("monorepo");
    {
        let small_run = SandboxTrue::new(&small, "session:workspace-write");
        let small_repos_run = SandboxTrue::new(&small_repos, "session:workspace-write");
        let large_run = SandboxTrue::new(&large, "session:workspace-write");
        // The session's first command builds the watches; the figures are the commands after.
        small_run.run();
        small_repos_run.run();
        large_run.run();
        g.bench_function("session_command_10_dirs", |b| b.iter(|| small_run.run()));
        g.bench_function("session_command_10_dirs_same_repositories", |b| {
            b.iter(|| small_repos_run.run())
        });
        g.bench_function("session_command_40k_dirs", |b| b.iter(|| large_run.run()));
    }
    let large_run = SandboxTrue::new(&large, "workspace-write");
    g.sample_size(20);
    g.bench_function("walk_per_command_40k_dirs", |b| b.iter(|| large_run.run()));
    g.bench_function("rebuild_after_overflow_40k_dirs", |b| {
        b.iter(|| SandboxTrue::new(&large, "session:workspace-write").run())
    });
    g.finish();
    for ws in [&small, &small_repos, &large] {
        remove_placeholders(ws);
    }
}

/// A workspace of `dirs` directories (100 top-level ones of `dirs / 100`), every 500th holding a
/// nested repository's `.git`.
fn large_tree(root: &Path, dirs: usize) {
    for i in 0..dirs {
        let d = root.join(format!("d{}", i % 100)).join(format!("e{i}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("f.txt"), "x").unwrap();
        if i % 500 == 0 {
            std::fs::create_dir_all(d.join(".git")).unwrap();
        }
    }
}

fn plain_walk(dir: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            n += 1;
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
        }
    }
    n
}

fn shield(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    large_tree(&ws, 10_000);
    let mut g = c.benchmark_group("shield_10k_dirs");
    g.bench_function("read_dir_walk_peer", |b| b.iter(|| plain_walk(&ws)));
    g.bench_function("shield_compute", |b| {
        b.iter(|| assert_eq!(shield_count(&ws), 22))
    });
    let run = SandboxTrue::new(&ws, "workspace-write");
    g.bench_function("pablo_workspace_write_true", |b| b.iter(|| run.run()));
    g.finish();
    remove_placeholders(&ws);
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(60);
    targets = bench
}
criterion_main!(benches);

/// Fails, saying what the system lacks, unless both Landlock and the namespaces are available
/// (the sandboxed cases would measure a degraded sandbox otherwise).
fn check_support() -> Result<(), String> {
    let support = sandbox::support();
    if support.landlock() && support.namespaces() {
        Ok(())
    } else {
        Err(format!("{support:?}"))
    }
}

/// `/bin/true` in a workspace, with a sandbox profile chosen once (as policy chooses it for a
/// command: no network, not a known-safe read).
struct SandboxTrue {
    ws: PathBuf,
    /// `None`: started with nothing (no namespaces, no Landlock).
    sandbox: Option<(Sandbox, &'static Support)>,
    /// `read-only-masked`: the credential mask is computed for each run, as `shell.run` does.
    masked: bool,
    /// With `session:`, the workspace tracked as a session's tool host tracks it.
    _session: Option<pablo_process::Tracking>,
}

impl SandboxTrue {
    /// `profile`: `"plain"` (nothing at all) or a profile's name as the config spells it
    /// (`"off"`, `"read-only"`, `"workspace-write"`), with the default sandbox settings. Prefixed
    /// with `session:`, the workspace's `.git` and `.pablo` are kept current between runs while
    /// this lives, as in a session (`process::nested`); without, each run walks, as `pablo
    /// sandbox` does. `"read-only-masked"` is `read-only` with the credential mask of a
    /// known-safe read that needs it (the workspace walked for credential names, the home
    /// directory and pablo's own directories hidden), computed on every run.
    fn new(ws: &Path, profile: &str) -> Self {
        let (session, profile) = match profile.strip_prefix("session:") {
            Some(p) => (Some(mask::track(ws)), p),
            None => (None, profile),
        };
        let masked = profile == "read-only-masked";
        let profile = if masked { "read-only" } else { profile };
        let sandbox = (profile != "plain").then(|| {
            let profile: SandboxProfile = profile.parse().expect("a sandbox profile's name");
            let choice = SandboxChoice {
                profile,
                network: false,
                known_safe: false,
                credentials_masked: false,
                degraded: None,
            };
            let sb = SandboxSettings::default().sandbox(&choice, ws);
            (sb, sandbox::support())
        });
        Self {
            ws: ws.to_path_buf(),
            sandbox,
            masked,
            _session: session,
        }
    }

    /// The measured step: prepares the sandbox (when there is one), starts `/bin/true` in it and
    /// waits for it; panics unless it exits 0.
    fn run(&self) {
        let prepared = match &self.sandbox {
            Some((sb, support)) if self.masked => {
                let mut sb = sb.clone();
                let plan = self.mask();
                sb.hidden_dirs = plan.dirs;
                sb.hidden_files = plan.files;
                sandbox::prepare(&sb, support).expect("the sandbox prepares")
            }
            Some((sb, support)) => sandbox::prepare(sb, support).expect("the sandbox prepares"),
            None => Prepared::default(),
        };
        let argv = ["/bin/true".to_string()];
        let info =
            pablo_process::run_prepared(&argv, &self.ws, &[], prepared).expect("/bin/true starts");
        assert_eq!(info.code, Some(0));
    }
}

impl SandboxTrue {
    /// The credential mask of this workspace, with this process's home directory and `PATH`.
    fn mask(&self) -> pablo_process::mask::MaskPlan {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let path_dirs = std::env::var("PATH")
            .unwrap_or_default()
            .split(':')
            .filter(|d| d.starts_with('/'))
            .map(PathBuf::from)
            .collect();
        mask::plan(&self.ws, home.as_deref(), path_dirs)
            .expect("the workspace is small enough to mask")
    }
}

/// The measured step of `shield_compute`: the paths `workspace-write` binds read-only in `ws`
/// (every `.git` and `.pablo` found by the walk), counted.
fn shield_count(ws: &Path) -> usize {
    pablo_process::shield::compute(ws, &[], &[], pablo_process::shield::MAX_WALK_DIRS)
        .read_only
        .len()
}

/// Removes the placeholders the shield made under `ws` that are still empty, as a session does
/// at its end.
fn remove_placeholders(ws: &Path) {
    pablo_process::shield::remove_placeholders(ws);
}
