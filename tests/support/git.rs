//! `git` as the tests run it to set up repositories: the test's own identity, no system or global
//! config of the machine it runs on, and no `GIT_DIR`/`GIT_WORK_TREE` inherited from a caller.

use std::path::Path;

/// Runs `git ARGS` in `dir`, asserts it succeeded, and returns its stdout without the trailing
/// newline.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}
