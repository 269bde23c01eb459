//! Running the real `pablo` binary in isolation: its own XDG directories, a scratch workspace,
//! and an environment that holds only what the test gives it.

use std::path::{Path, PathBuf};

use tempfile::TempDir;

/// A scratch home for one run of the binary: workspace plus config, data and state dirs.
pub struct Sandbox {
    dir: TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        for sub in ["workspace", "config", "data", "state", "home"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        }
        Self { dir }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn workspace(&self) -> PathBuf {
        self.dir.path().join("workspace")
    }

    pub fn config_dir(&self) -> PathBuf {
        self.dir.path().join("config").join("pablo")
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data").join("pablo")
    }

    /// Writes the user config file.
    pub fn user_config(&self, toml: &str) {
        std::fs::create_dir_all(self.config_dir()).expect("mkdir");
        std::fs::write(self.config_dir().join("config.toml"), toml).expect("write config");
    }

    /// `pablo` with a clean environment pointed at this sandbox (no provider keys unless given).
    pub fn command(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_pablo"));
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root().join("home"))
            .env("XDG_CONFIG_HOME", self.root().join("config"))
            .env("XDG_DATA_HOME", self.root().join("data"))
            .env("XDG_STATE_HOME", self.root().join("state"))
            .current_dir(self.workspace())
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        cmd
    }

    /// `pablo run --json` against an OpenAI-compatible server at `base_url`.
    pub fn run_json(&self, base_url: &str, task: &str) -> tokio::process::Command {
        let mut cmd = self.command();
        cmd.env("OPENAI_API_KEY", "sk-test-key")
            .args([
                "--provider",
                "openai",
                "--model",
                "test-model",
                "--base-url",
            ])
            .arg(base_url)
            .args(["run", "--json"])
            .arg(task);
        cmd
    }
}

/// The JSON lines of a `--json` run.
pub fn json_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The `type` of each line, in order.
pub fn types(lines: &[serde_json::Value]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l["type"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// Every file below `dir`, at any depth (links are not followed; a missing folder has none).
pub fn files_below(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            out.extend(files_below(&p));
        } else {
            out.push(p);
        }
    }
    out
}
