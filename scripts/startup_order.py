#!/usr/bin/env python3
"""Regenerates scripts/startup-order.txt: the functions the release binary runs up to its first
frame, for build.rs to hand to lld so that they lie next to each other (issue 29).

    scripts/startup_order.py            # build, run under callgrind, write the list

Steps: a release build that also writes lld's map (PABLO_LINK_MAP) and links without the current
list (PABLO_NO_STARTUP_ORDER), so the map shows the plain layout; one start of that binary in a
120x40 PTY under `valgrind --tool=callgrind --dump-instr=yes`, in a fresh home with a provider
configured (never called), answering the terminal's cursor-position and device-attribute
queries, until the screen is quiet for two seconds, then ctrl-c twice; every executed address of
the binary is found in the map's input sections, and their symbols are written in the order of
their first address (the layout the code had); last, the release binary is linked again with the
new list. Needs valgrind and git. Run it after a dependency
or the package version changes (symbol names carry hashes of both), and record the effect in
BENCHMARKS.md.
"""

import bisect
import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORDER = ROOT / "scripts" / "startup-order.txt"
BINARY = ROOT / "target" / "release" / "pablo"
SECTION = re.compile(r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+\s+\S*:\(\.text\.(?:(?:unlikely|hot|startup|exit)\.)?([^)]+)\)$")


def build(map_path):
    env = dict(os.environ, PABLO_LINK_MAP=str(map_path), PABLO_NO_STARTUP_ORDER="1")
    subprocess.run(["cargo", "build", "--release"], cwd=ROOT, env=env, check=True)


def home_env(home):
    for d in ["ws", "config/pablo", "data", "state"]:
        (home / d).mkdir(parents=True, exist_ok=True)
    (home / "config/pablo/config.toml").write_text(
        'provider = "openai"\nmodel = "fake-model"\nbase_url = "http://127.0.0.1:9/v1"\n'
    )
    subprocess.run(["git", "init", "-q"], cwd=home / "ws", check=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TERM": "xterm-256color",
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_STATE_HOME": str(home / "state"),
        "OPENAI_API_KEY": "sk-startup-order",
    }


def run_in_pty(argv, env, cwd, quiet=2.0):
    """Runs argv in a 120x40 PTY to a quiet screen, then presses ctrl-c twice and waits."""
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

    while time.time() - last < quiet and time.time() - start < 300:
        if not pump(0.05):
            break
    for _ in range(2):
        os.write(fd, b"\x03")
        time.sleep(0.5)
    deadline = time.time() + 120
    while time.time() < deadline and pump(0.1):
        if os.waitpid(pid, os.WNOHANG)[0]:
            break
    if shown == 0:
        sys.exit("the binary drew nothing")


def executed_addresses(callgrind_out, binary):
    addresses = set()
    in_binary = False
    for line in open(callgrind_out, errors="replace"):
        if line.startswith("ob="):
            in_binary = line[3:].strip() == str(binary)
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


def main():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        build(tmp / "pablo.map")
        out = tmp / "callgrind.out"
        env = home_env(tmp / "home")
        run_in_pty(
            ["valgrind", "--tool=callgrind", "--dump-instr=yes", "--compress-strings=no",
             "--compress-pos=no", f"--callgrind-out-file={out}", str(BINARY)],
            env,
            tmp / "home" / "ws",
        )
        addresses = executed_addresses(out, BINARY)
        starts, ends, names = sections(tmp / "pablo.map")
    used = {}
    for a in addresses:
        i = bisect.bisect_right(starts, a) - 1
        if i >= 0 and a < ends[i]:
            used[i] = True
    chosen = [names[i] for i in sorted(used)]
    size = sum(ends[i] - starts[i] for i in used)
    ORDER.write_text("".join(n + "\n" for n in chosen))
    print(f"{len(addresses)} executed addresses in {len(chosen)} functions, {size} bytes of code")
    print(f"wrote {ORDER}; linking the release binary with it")
    subprocess.run(["cargo", "build", "--release"], cwd=ROOT, check=True)


if __name__ == "__main__":
    main()
