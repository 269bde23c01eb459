//! The MCP reference servers from npm (`@modelcontextprotocol/server-everything` and
//! `server-filesystem`), installed under `tests/mcp_servers` by `.ci/run` and run with node from
//! their installed `dist/index.js` (never fetched at test time).
//!
//! Tests skip, saying so, only when node itself is absent; node present but the packages missing
//! is a setup error and fails with the command that installs them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::AsyncBufReadExt;

/// `node` on the `PATH`, or `None` after printing why the calling test is skipped.
pub fn node_or_skip(test: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("node"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        eprintln!("skipped {test}: node is not installed (the MCP reference servers need it)");
    }
    found
}

/// The installed entry point of a reference server package (`server-everything`, …).
pub fn reference_server(package: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp_servers/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(
        path.is_file(),
        "{} is missing: install the MCP reference servers with \
         `(cd tests/mcp_servers && npm ci)` (.ci/run does this)",
        path.display()
    );
    path
}

/// A TOML basic string holding `s`.
pub fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A `[mcp_servers.NAME]` table that runs `server-everything` over stdio, then `extra` lines.
pub fn everything_table(node: &Path, name: &str, extra: &str) -> String {
    let index = reference_server("server-everything");
    format!(
        "[mcp_servers.{name}]\ncommand = {}\nargs = [{}, \"stdio\"]\n{extra}\n",
        toml_str(&node.display().to_string()),
        toml_str(&index.display().to_string()),
    )
}

/// `server-everything` over streamable HTTP on a free port of 127.0.0.1, stopped on drop.
pub struct HttpEverything {
    child: tokio::process::Child,
    pub port: u16,
}

impl HttpEverything {
    pub async fn start(node: &Path) -> Self {
        let index = reference_server("server-everything");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut child = tokio::process::Command::new(node)
            .arg(&index)
            .arg("streamableHttp")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("PORT", port.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node starts server-everything");
        // It says on stderr when it listens (a safety-net timeout, not a timing assertion).
        let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let listening = tokio::time::timeout(Duration::from_secs(30), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains("listening on port") {
                    return true;
                }
            }
            false
        })
        .await;
        assert_eq!(
            listening,
            Ok(true),
            "server-everything did not say it listens on {port}"
        );
        // Keep draining stderr so the server never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self { child, port }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// A stdio MCP server (python3) with one tool, `book`, that asks the person a question while it
/// runs (`elicitation/create`: a city, required, and a number of nights) and answers with what
/// it got back. It writes the client's capabilities to `DIR/capabilities.json` and the answer
/// to its question to `DIR/answer.json`, so a test sees what the server saw.
pub const ASKING_SERVER: &str = r#"
import json, sys
out = sys.argv[1]
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
def read():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)
while True:
    m = read()
    method, mid = m.get("method"), m.get("id")
    if mid is None:
        continue
    if method == "initialize":
        with open(out + "/capabilities.json", "w") as f:
            json.dump(m["params"].get("capabilities", {}), f)
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": m["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hotel", "version": "1.0.0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [{
            "name": "book", "description": "Books a room; asks where and for how long.",
            "inputSchema": {"type": "object", "properties": {"hotel": {"type": "string"}}}}]}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create", "params": {
            "message": "Which city, and for how many nights?",
            "requestedSchema": {"type": "object", "properties": {
                "city": {"type": "string", "title": "City"},
                "nights": {"type": "integer", "title": "Nights", "minimum": 1}},
                "required": ["city"]}}})
        while True:
            r = read()
            if r.get("id") == "ask-1" and "method" not in r:
                break
        with open(out + "/answer.json", "w") as f:
            json.dump(r, f)
        result = r.get("result", {})
        text = "booking: " + result.get("action", "none") + " " + json.dumps(result.get("content"))
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": text}]}})
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no " + str(method)}})
"#;

/// A `[mcp_servers.hotel]` table running [`ASKING_SERVER`] with python3, writing into `dir`, its
/// `book` tool set to `auto`.
pub fn asking_server_table(dir: &Path) -> String {
    let script = dir.join("hotel.py");
    std::fs::write(&script, ASKING_SERVER).expect("write the server");
    format!(
        "[mcp_servers.hotel]\ncommand = \"python3\"\nargs = [{}, {}]\ntools.book = \"auto\"\n",
        toml_str(&script.display().to_string()),
        toml_str(&dir.display().to_string()),
    )
}
