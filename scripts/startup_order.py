#!/usr/bin/env python3
"""Regenerates scripts/startup-order.txt: the functions the release binary runs up to its first
frame and through a first turn, for build.rs to hand to lld so that they lie next to each other
(issue 29).

    scripts/startup_order.py            # build, run under callgrind, write the list, relink

Steps: a release build that also writes lld's map (PABLO_LINK_MAP) and links without the current
list (PABLO_NO_STARTUP_ORDER), so the map shows the plain layout; then two runs of that binary in
a 120x40 PTY under `valgrind --tool=callgrind --dump-instr=yes`, each in a fresh home, answering
the terminal's cursor-position and device-attribute queries:

1. the start-up bench's case (benches/shipped.rs): an OpenAI provider configured and never called,
   an empty git repository; quiet screen, then ctrl-c twice;
2. plain `pablo` with no config and no key in a small repository, a local Ollama-compatible server
   (scripted here, on 127.0.0.1:11434) found by detection; one task typed, the model reads a
   file, runs a known-safe command and answers in Markdown; quiet screen, then ctrl-c twice;
3. the shell parser's helper (`pablo __pablo-shell-parser`) answering a few typical commands on
   its standard input (callgrind does not follow pablo into the helper it starts).

Each executed address of the binary is found in the map's input sections. The list holds the
first run's functions, then the helper's others, then the second run's others, each group in the
order of their address (the layout the code had). Last, the release binary is linked again with the new list. Needs
valgrind and git. Run it after a dependency or the package version changes (symbol names carry
hashes of both), and record the effect in BENCHMARKS.md.
"""

import bisect
import fcntl
import http.server
import json
import os
import pty
import re
import select
import socketserver
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORDER = ROOT / "scripts" / "startup-order.txt"
BINARY = ROOT / "target" / "release" / "pablo"
SECTION = re.compile(
    r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+\s+\S*:"
    r"\(\.text\.(?:(?:unlikely|hot|startup|exit)\.)?([^)]+)\)$"
)
OLLAMA_PORT = 11434


def build(map_path):
    env = dict(os.environ, PABLO_LINK_MAP=str(map_path), PABLO_NO_STARTUP_ORDER="1")
    subprocess.run(["cargo", "build", "--release"], cwd=ROOT, env=env, check=True)


def fresh_home(home, config):
    for d in ["ws", "config/pablo", "data", "state"]:
        (home / d).mkdir(parents=True, exist_ok=True)
    if config:
        (home / "config/pablo/config.toml").write_text(config)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TERM": "xterm-256color",
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_STATE_HOME": str(home / "state"),
    }


def git_init(ws):
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)


def small_repository(ws):
    (ws / "src").mkdir()
    (ws / "README.md").write_text("# sample\n\nA small crate that adds numbers.\n")
    (ws / "Cargo.toml").write_text('[package]\nname = "sample"\nversion = "0.1.0"\nedition = "2021"\n')
    (ws / "src/lib.rs").write_text("pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n")
    (ws / ".gitignore").write_text("/target\n")
    (ws / "AGENTS.md").write_text("Run `cargo test` before saying a change is done.\n")
    git_init(ws)
    for args in (["add", "-A"], ["-c", "user.name=s", "-c", "user.email=s@s", "commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=ws, check=True)


class ScriptedModel(http.server.BaseHTTPRequestHandler):
    """An Ollama-compatible server: a read of Cargo.toml, a known-safe command, then a Markdown
    answer."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, body):
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.startswith("/api/tags"):
            self.reply(json.dumps({"models": [{"name": "qwen3:8b", "model": "qwen3:8b"}]}).encode())
        else:
            self.reply(json.dumps({"object": "list", "data": [{"id": "qwen3:8b", "object": "model"}]}).encode())

    def do_POST(self):
        length = int(self.headers.get("content-length", 0))
        request = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.endswith("/chat/completions"):
            self.reply(b"{}")
            return
        answered = sum(1 for m in request.get("messages", []) if m.get("role") == "tool")
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        base = {"id": "x", "object": "chat.completion.chunk", "model": "qwen3:8b"}

        def event(delta, finish=None, **extra):
            chunk = dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish}], **extra)
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()

        if answered < 2:
            name, arguments = [("fs_read", {"path": "Cargo.toml"}),
                               ("shell_run", {"command": "ls src | wc -l"})][answered]
            call = {"index": 0, "id": f"call_{answered}", "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)}}
            event({"role": "assistant", "tool_calls": [call]})
            event({}, "tool_calls")
        else:
            text = ("## What it is\n\nA **small** crate with one function, `add`:\n\n"
                    "```rust\npub fn add(a: i32, b: i32) -> i32 { a + b }\n```\n\n"
                    "- edition 2021\n- no dependencies\n\n| file | role |\n|---|---|\n| src/lib.rs | code |\n")
            for k in range(0, len(text), 24):
                event({"content": text[k:k + 24]})
            event({}, "stop", usage={"prompt_tokens": 900, "completion_tokens": 80})
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def run_in_pty(argv, env, cwd, typed=None, quiet=3.0):
    """Runs argv in a 120x40 PTY to a quiet screen (typing `typed` once it is first quiet), then
    presses ctrl-c twice and waits for it to end."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(cwd)
        os.execvpe(argv[0], argv, env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    last = start = time.time()
    shown = 0

    def pump(timeout):
        nonlocal last, shown
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(fd, 65536)
        except OSError:
            return False
        if not data:
            return False
        shown += len(data)
        last = time.time()
        if b"\x1b[6n" in data:
            os.write(fd, b"\x1b[1;1R")
        if b"\x1b[c" in data or b"\x1b[0c" in data:
            os.write(fd, b"\x1b[?1;2c")
        return True

    def settle():
        while time.time() - last < quiet and time.time() - start < 600:
            if not pump(0.05):
                return False
        return True

    if settle() and typed:
        os.write(fd, typed.encode())
        time.sleep(0.5)
        os.write(fd, b"\r")
        settle()
    for _ in range(2):
        os.write(fd, b"\x03")
        time.sleep(0.5)
    deadline = time.time() + 120
    while time.time() < deadline and pump(0.1):
        if os.waitpid(pid, os.WNOHANG)[0]:
            break
    if shown == 0:
        sys.exit("the binary drew nothing")


def frames(texts):
    """Requests to the shell parser's helper: a little-endian u32 length, then the text."""
    out = b""
    for text in texts:
        data = text.encode()
        out += struct.pack("<I", len(data)) + data
    return out


HELPER_REQUESTS = [
    "ls src | wc -l",
    "cargo test --all && git status --short",
    "cat <<'EOF' > notes.txt\nhello\nEOF",
    "for f in *.rs; do echo \"$f\"; done 2>/dev/null",
    "echo $(git rev-parse HEAD) `date` ${HOME:-/tmp}",
]


def under_callgrind(out):
    """valgrind's command line; every process of the run writes its own `OUT.PID` (a child pablo
    forks without `exec`, such as a command's init, is still under callgrind and would otherwise
    write over the parent's file when it ends)."""
    return ["valgrind", "--tool=callgrind", "--dump-instr=yes", "--compress-strings=no",
            "--compress-pos=no", f"--callgrind-out-file={out}.%p", str(BINARY)]


def executed_addresses(out):
    """Every address of the binary executed by any process of the run written to `OUT.PID`."""
    addresses = set()
    for path in out.parent.glob(out.name + ".*"):
        in_binary = False
        for line in open(path, errors="replace"):
            if line.startswith("ob="):
                in_binary = line[3:].strip() == str(BINARY)
            elif in_binary and line.startswith("0x"):
                addresses.add(int(line.split()[0], 16))
    return addresses


def sections(map_path):
    starts, ends, names = [], [], []
    for line in open(map_path, errors="replace"):
        m = SECTION.match(line)
        if m:
            start, size = int(m.group(1), 16), int(m.group(2), 16)
            starts.append(start)
            ends.append(start + size)
            names.append(m.group(3))
    order = sorted(range(len(starts)), key=starts.__getitem__)
    return [starts[i] for i in order], [ends[i] for i in order], [names[i] for i in order]


def functions(addresses, starts, ends):
    found = set()
    for a in addresses:
        i = bisect.bisect_right(starts, a) - 1
        if i >= 0 and a < ends[i]:
            found.add(i)
    return found


def main():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        build(tmp / "pablo.map")
        starts, ends, names = sections(tmp / "pablo.map")

        home = tmp / "configured"
        env = fresh_home(home, 'provider = "openai"\nmodel = "fake-model"\n'
                               'base_url = "http://127.0.0.1:9/v1"\n')
        env["OPENAI_API_KEY"] = "sk-startup-order"
        git_init(home / "ws")
        run_in_pty(under_callgrind(tmp / "first.out"), env, home / "ws")
        first = functions(executed_addresses(tmp / "first.out"), starts, ends)

        server = Server(("127.0.0.1", OLLAMA_PORT), ScriptedModel)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        home = tmp / "plain"
        env = fresh_home(home, None)
        small_repository(home / "ws")
        run_in_pty(under_callgrind(tmp / "turn.out"), env, home / "ws", typed="Summarize this crate")
        server.shutdown()
        turn = functions(executed_addresses(tmp / "turn.out"), starts, ends)

        subprocess.run(under_callgrind(tmp / "helper.out") + ["__pablo-shell-parser"],
                       input=frames(HELPER_REQUESTS), stdout=subprocess.DEVNULL, check=True)
        helper = functions(executed_addresses(tmp / "helper.out"), starts, ends) - first
        turn -= first | helper

    chosen = [names[i] for group in (first, helper, turn) for i in sorted(group)]
    size = lambda group: sum(ends[i] - starts[i] for i in group)
    ORDER.write_text("".join(n + "\n" for n in chosen))
    print(f"start-up: {len(first)} functions, {size(first)} bytes of code; the shell parser's "
          f"helper adds {len(helper)}, {size(helper)} bytes; the plain start and first turn "
          f"add {len(turn)}, {size(turn)} bytes")
    print(f"wrote {ORDER}; linking the release binary with it")
    subprocess.run(["cargo", "build", "--release"], cwd=ROOT, check=True)


if __name__ == "__main__":
    main()
