//! The scrollback of plain `pablo` (inline mode, a config file, no flags) in a real terminal, read
//! whole after a session that does everything that writes history: a streamed answer taller than
//! the screen, the same with two resizes while it streams, an approval prompt taller than the
//! screen answered `y`, and a background command streaming through all of it. Read twice, by two
//! independent emulators: the vt100 crate behind a PTY, and tmux (`capture-pane -S -`).

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use super::Terminal;
use crate::support::bin::Sandbox;
use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

/// A terminal the scenario drives: keys in, size changes, and every line it holds.
pub(super) trait Emulator {
    fn keys(&mut self, text: &str);
    fn resize_to(&mut self, rows: u16, cols: u16);
    /// What is on the screen now.
    fn visible(&self) -> String;
    /// Every line, scrollback first, trailing spaces cut.
    fn every_line(&self) -> Vec<String>;

    fn wait_until_visible(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let screen = self.visible();
            if screen.contains(text) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {text:?}; the terminal holds:\n{}",
                self.every_line().join("\n")
            );
            std::thread::sleep(Duration::from_millis(40));
        }
    }
}

impl Emulator for Terminal {
    fn keys(&mut self, text: &str) {
        self.send(text);
    }

    fn resize_to(&mut self, rows: u16, cols: u16) {
        self.resize(rows, cols);
    }

    fn visible(&self) -> String {
        self.screen()
    }

    fn every_line(&self) -> Vec<String> {
        self.all_lines()
    }
}

/// pablo in a tmux pane of its own server (`-L`), with a clean environment.
pub(super) struct Tmux {
    socket: String,
}

impl Tmux {
    pub(super) fn start(sandbox: &Sandbox, env: &[(&str, &str)], cols: u16, rows: u16) -> Self {
        Self::start_program(sandbox, env, cols, rows, env!("CARGO_BIN_EXE_pablo"))
    }

    /// `program` (a command line) in the pane instead of pablo (a shell, to use job control).
    pub(super) fn start_program(
        sandbox: &Sandbox,
        env: &[(&str, &str)],
        cols: u16,
        rows: u16,
        program: &str,
    ) -> Self {
        let socket = format!("pablo-test-{}-{}", std::process::id(), fastrand::u64(..));
        let mut command = format!(
            "env -i PATH={:?} HOME={:?} TERM=tmux-256color XDG_CONFIG_HOME={:?} \
             XDG_DATA_HOME={:?} XDG_STATE_HOME={:?}",
            std::env::var("PATH").unwrap_or_default(),
            sandbox.root().join("home"),
            sandbox.root().join("config"),
            sandbox.root().join("data"),
            sandbox.root().join("state"),
        );
        for (k, v) in env {
            command.push_str(&format!(" {k}={v:?}"));
        }
        command.push(' ');
        command.push_str(program);
        let t = Self { socket };
        let status = t
            .tmux()
            .args(["-f", "/dev/null", "new-session", "-d", "-s", "pablo", "-x"])
            .arg(cols.to_string())
            .arg("-y")
            .arg(rows.to_string())
            .arg("-c")
            .arg(sandbox.workspace())
            .arg(command)
            .status()
            .expect("tmux runs (.ci/run installs it)");
        assert!(status.success());
        // Keep the pane, and what it shows, after pablo exits.
        t.run(&["set-option", "-t", "pablo", "remain-on-exit", "on"]);
        t
    }

    fn tmux(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket]);
        c
    }

    fn run(&self, args: &[&str]) -> String {
        let out = self.tmux().args(args).output().expect("tmux");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Whether pablo has exited (the pane is dead).
    pub(super) fn exited(&self) -> bool {
        self.run(&["display-message", "-p", "-t", "pablo", "#{pane_dead}"])
            .trim()
            == "1"
    }
}

impl Emulator for Tmux {
    fn keys(&mut self, text: &str) {
        // Literal text, a piece at a time; `\r` as Enter and `\x03` as C-c.
        let mut literal = String::new();
        let flush = |t: &Self, lit: &mut String| {
            if !lit.is_empty() {
                t.run(&["send-keys", "-t", "pablo", "-l", lit.as_str()]);
                lit.clear();
            }
        };
        for c in text.chars() {
            match c {
                '\r' => {
                    flush(self, &mut literal);
                    self.run(&["send-keys", "-t", "pablo", "Enter"]);
                }
                '\x03' => {
                    flush(self, &mut literal);
                    self.run(&["send-keys", "-t", "pablo", "C-c"]);
                }
                '\x1a' => {
                    flush(self, &mut literal);
                    self.run(&["send-keys", "-t", "pablo", "C-z"]);
                }
                c => literal.push(c),
            }
        }
        flush(self, &mut literal);
        std::thread::sleep(Duration::from_millis(60));
    }

    fn resize_to(&mut self, rows: u16, cols: u16) {
        self.run(&[
            "resize-window",
            "-t",
            "pablo",
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
        ]);
        std::thread::sleep(Duration::from_millis(200));
    }

    fn visible(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "pablo"])
    }

    fn every_line(&self) -> Vec<String> {
        self.run(&["capture-pane", "-p", "-S", "-", "-E", "-", "-t", "pablo"])
            .lines()
            .map(|l| l.trim_end().to_string())
            .collect()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").status();
    }
}

/// `n` lines tagged `tag`, each one its own numbered line of text.
fn answer_lines(tag: &str, n: usize) -> Vec<String> {
    (1..=n)
        .map(|i| format!("Line {i:02} of answer {tag}: words enough to look like a real line."))
        .collect()
}

/// A slow stream of `lines`: each line in two pieces, `pace` apart.
fn slow_answer(lines: &[String], pace: Duration) -> ScriptedResponse {
    let mut parts: Vec<String> = Vec::new();
    for l in lines {
        let (a, b) = l.split_at(l.len() / 2);
        parts.push(a.to_string());
        parts.push(format!("{b}\n"));
    }
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    ScriptedResponse::sse(
        openai::Stream::new()
            .text(&parts)
            .finish("stop")
            .usage(100, 600)
            .done(),
    )
    .pace(pace)
}

fn call(id: &str, name: &str, args: &serde_json::Value) -> ScriptedResponse {
    let args = args.to_string();
    ScriptedResponse::sse(
        openai::Stream::new()
            .tool_call(0, id, name, &[args.as_str()])
            .finish("tool_calls")
            .done(),
    )
}

/// The new file of the approval prompt: taller than any screen here.
fn tall_file() -> String {
    (1..=70).map(|i| format!("file line {i:02}\n")).collect()
}

/// Queues the session's answers: a background command (asked), a 60-line answer, a 70-line new
/// file (asked), another 60-line answer.
fn script(server: &ScriptedServer) {
    server.push(call(
        "call_bg",
        "shell_run",
        &json!({"command": "sh tick.sh", "background": true}),
    ));
    server.push(slow_answer(
        &answer_lines("A", 60),
        Duration::from_millis(15),
    ));
    server.push(call(
        "call_write",
        "fs_write",
        &json!({"path": "tall.txt", "text": tall_file(), "expected_revision": null}),
    ));
    server.push(slow_answer(
        &answer_lines("B", 60),
        Duration::from_millis(40),
    ));
}

/// Drives the session: everything that writes history, the resizes while answer B streams.
fn drive(t: &mut dyn Emulator) {
    t.wait_until_visible("Ask pablo to do something");
    t.keys("start the watcher and explain\r");
    t.wait_until_visible("Start this background command?");
    t.wait_until_visible("[y] Allow once");
    t.keys("y");
    t.wait_until_visible("Line 60 of answer A");
    t.wait_until_visible("Ask pablo to do something");
    t.keys("now write the file\r");
    t.wait_until_visible("Create tall.txt?");
    t.wait_until_visible("[y] Allow once");
    t.keys("y");
    t.wait_until_visible("Line 12 of answer B");
    t.resize_to(30, 100);
    t.wait_until_visible("Line 30 of answer B");
    t.resize_to(45, 130);
    t.wait_until_visible("Line 60 of answer B");
    t.wait_until_visible("Ask pablo to do something");
}

fn count(lines: &[String], needle: &str) -> usize {
    lines.iter().filter(|l| l.contains(needle)).count()
}

/// What must hold of the terminal's lines: each answer line once, the prompts' choices and
/// bodies gone, `live` copies of the composer and status line (1 while pablo runs, 0 after).
fn assert_exact(lines: &[String], live: usize) {
    let all = lines.join("\n");
    for tag in ["A", "B"] {
        for line in answer_lines(tag, 60) {
            assert_eq!(count(lines, &line), 1, "{line:?} once:\n{all}");
        }
    }
    assert_eq!(
        count(lines, "[y] Allow once"),
        0,
        "a prompt's choices:\n{all}"
    );
    assert_eq!(count(lines, "Start this background command?"), 0, "{all}");
    assert_eq!(count(lines, "Create tall.txt?"), 0, "{all}");
    // The decisions stay, in the past tense, one per prompt.
    assert_eq!(count(lines, "allowed once"), 2, "{all}");
    // The diff that landed is in the tool's cell once (collapsed to its first lines); nothing of
    // the prompt's body is left further down the file.
    assert_eq!(count(lines, "file line 01"), 1, "{all}");
    assert_eq!(count(lines, "file line 50"), 0, "{all}");
    assert_eq!(
        count(lines, "test-model · openai"),
        live,
        "status lines:\n{all}"
    );
    assert_eq!(count(lines, "Ask pablo to do something"), live, "{all}");
    assert_eq!(count(lines, " working"), 0, "a stale 'working':\n{all}");
}

fn configure(sandbox: &Sandbox, server: &ScriptedServer) {
    // The background command: a line every tenth of a second for a minute.
    std::fs::write(
        sandbox.workspace().join("tick.sh"),
        "i=0\nwhile [ $i -lt 600 ]; do echo bg-$i; i=$((i+1)); sleep 0.1; done\n",
    )
    .unwrap();
    sandbox.user_config(&format!(
        "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n",
        server.base_url()
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_pty_read_by_vt100_each_answer_line_is_in_the_scrollback_once_through_tall_prompts_and_resizes()
 {
    let server = ScriptedServer::start().await;
    script(&server);
    let sandbox = Sandbox::new();
    configure(&sandbox, &server);
    let mut t = Terminal::spawn_with(&sandbox, &[], &[("OPENAI_API_KEY", "sk-test-key")]);
    drive(&mut t);
    // While the background command still streams, pablo is quit.
    assert!(t.screen().contains("1 bg"), "{}", t.screen());
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
    let lines = t.all_lines();
    assert_exact(&lines, 0);
    assert_eq!(count(&lines, "pablo: session"), 1);
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace().join("tall.txt")).unwrap(),
        tall_file()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_tmux_each_answer_line_is_in_the_history_once_through_tall_prompts_and_resizes() {
    let server = ScriptedServer::start().await;
    script(&server);
    let sandbox = Sandbox::new();
    configure(&sandbox, &server);
    let mut t = Tmux::start(&sandbox, &[("OPENAI_API_KEY", "sk-test-key")], 120, 40);
    drive(&mut t);
    assert!(t.visible().contains("1 bg"), "{}", t.visible());
    assert_exact(&t.every_line(), 1);
    t.keys("\x03\x03");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !t.exited() {
        assert!(
            Instant::now() < deadline,
            "pablo did not exit:\n{}",
            t.visible()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let lines = t.every_line();
    assert_exact(&lines, 0);
    assert_eq!(count(&lines, "pablo: session"), 1);
}
