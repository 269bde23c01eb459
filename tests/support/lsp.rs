//! The language servers the LSP tests start: pyright from npm and ruff from PyPI, installed
//! under `tests/lsp_servers` by `.ci/run` (never fetched at test time).
//!
//! A test skips, saying so, only when node or python3 itself is absent; the program present but
//! the package missing is a setup error and fails with the command that installs it.

use std::path::{Path, PathBuf};

use super::mcp::{node_or_skip, toml_str};

fn servers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lsp_servers")
}

/// `node` and pyright's language server script, or `None` after saying why the test skips.
pub fn pyright_or_skip(test: &str) -> Option<(PathBuf, PathBuf)> {
    let node = node_or_skip(test)?;
    let script = servers_dir().join("node_modules/pyright/langserver.index.js");
    assert!(
        script.is_file(),
        "{} is missing: install pyright with `(cd tests/lsp_servers && npm ci)` (.ci/run does this)",
        script.display()
    );
    Some((node, script))
}

/// ruff's program, or `None` after saying why the test skips.
pub fn ruff_or_skip(test: &str) -> Option<PathBuf> {
    let ruff = servers_dir().join(".venv/bin/ruff");
    if !ruff.is_file()
        && std::process::Command::new("python3")
            .arg("-V")
            .output()
            .is_err()
    {
        eprintln!("skipped {test}: python3 is not installed (ruff comes from PyPI)");
        return None;
    }
    assert!(
        ruff.is_file(),
        "{} is missing: install ruff with `python3 -m venv tests/lsp_servers/.venv && \
         tests/lsp_servers/.venv/bin/pip install ruff==0.17.6` (.ci/run does this)",
        ruff.display()
    );
    Some(ruff)
}

/// A `[lsp.pyright]` table running pyright with node, waiting up to `wait_ms` for diagnostics.
pub fn pyright_table(node: &Path, script: &Path, wait_ms: u64) -> String {
    format!(
        "[lsp.pyright]\ncommand = {}\nargs = [{}, \"--stdio\"]\nfiletypes = [\"python\"]\n\
         wait_ms = {wait_ms}\n",
        toml_str(&node.display().to_string()),
        toml_str(&script.display().to_string()),
    )
}

/// A `[lsp.ruff]` table running `ruff server`.
pub fn ruff_table(ruff: &Path, wait_ms: u64) -> String {
    format!(
        "[lsp.ruff]\ncommand = {}\nargs = [\"server\"]\nfiletypes = [\"python\"]\n\
         wait_ms = {wait_ms}\n",
        toml_str(&ruff.display().to_string()),
    )
}

/// The system's Python, for fake language servers: a version manager's shim would look for its
/// own home, and a server's `HOME` in the tests is the test's.
pub fn system_python() -> &'static str {
    ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("python3")
}

/// Python for a fake language server's framing: `send(obj)` writes one framed message (safe
/// from threads) and `read_message()` reads the next one, exiting when stdin closes.
pub const PY_FRAMING: &str = r#"import json, sys, threading
_out = threading.Lock()
def send(obj):
    body = json.dumps(obj).encode()
    with _out:
        sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        sys.stdout.buffer.flush()
def read_message():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))
"#;
