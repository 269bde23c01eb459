//! Integration tests: tui.
//!
//! The real `pablo` binary in a real terminal (a PTY read through a vt100 parser), where a person
//! would sit. The whole app loop in-process on ratatui's `TestBackend` is tested in
//! `crates/tui/src/loop_tests.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

use crate::support::bin::Sandbox;

mod conversation;
mod figures;
mod hooks;
mod hunks;
mod interrupted;
mod late_diagnostics;
mod long_diff;
mod questions;
mod queued;
mod scrollback;
mod small_things;
mod statusline;
mod subagents;
mod subtasks;
mod vim;
mod waiting;
mod worktree;

/// The real binary in a PTY, its screen kept up to date by a vt100 parser.
struct Terminal {
    parser: Arc<Mutex<vt100::Parser>>,
    raw: Arc<Mutex<Vec<u8>>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Terminal {
    fn spawn(sandbox: &Sandbox, args: &[&str]) -> Self {
        Self::spawn_with(sandbox, args, &[])
    }

    fn spawn_with(sandbox: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::spawn_program(sandbox, env!("CARGO_BIN_EXE_pablo"), args, env)
    }

    /// `program ARGS` in the PTY with the sandbox's environment (a shell, to redirect pablo's
    /// stdin as a person would).
    fn spawn_program(
        sandbox: &Sandbox,
        program: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        let (rows, cols) = (40, 120);
        let pty = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("openpty");
        let mut cmd = CommandBuilder::new(program);
        cmd.args(args);
        cmd.env_clear();
        cmd.env("PATH", std::env::var_os("PATH").unwrap_or_default());
        cmd.env("HOME", sandbox.root().join("home"));
        cmd.env("TERM", "xterm-256color");
        cmd.env("XDG_CONFIG_HOME", sandbox.root().join("config"));
        cmd.env("XDG_DATA_HOME", sandbox.root().join("data"));
        cmd.env("XDG_STATE_HOME", sandbox.root().join("state"));
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.cwd(sandbox.workspace());
        let child = pty.slave.spawn_command(cmd).expect("spawn pablo");
        let mut reader = pty.master.try_clone_reader().expect("reader");
        let writer: Arc<Mutex<Box<dyn Write + Send>>> =
            Arc::new(Mutex::new(pty.master.take_writer().expect("writer")));
        let parser = Arc::new(Mutex::new(vt100::Parser::new(
            rows.try_into().unwrap(),
            cols.try_into().unwrap(),
            2000,
        )));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let (p, r, w) = (parser.clone(), raw.clone(), writer.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut parser = p.lock().unwrap();
                parser.process(&buf[..n]);
                // Answer "where is the cursor?" as a terminal does (the inline TUI asks once).
                if buf[..n].windows(4).any(|x| x == b"\x1b[6n") {
                    let (row, col) = parser.screen().cursor_position();
                    let answer = format!("\x1b[{};{}R", row + 1, col + 1);
                    let _ = w.lock().unwrap().write_all(answer.as_bytes());
                }
                drop(parser);
                r.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Self {
            parser,
            raw,
            writer,
            child,
            _master: pty.master,
        }
    }

    fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    /// Every line the terminal holds: its scrollback, oldest first, then the screen (trailing
    /// spaces cut).
    fn all_lines(&self) -> Vec<String> {
        let mut parser = self.parser.lock().unwrap();
        let screen = parser.screen_mut();
        let cols = screen.size().1.get();
        screen.set_scrollback(usize::MAX);
        let back = screen.scrollback();
        let mut lines = Vec::new();
        for k in (1..=back).rev() {
            screen.set_scrollback(k);
            let first = screen.rows(0, cols).next().unwrap_or_default();
            lines.push(first.trim_end().to_string());
        }
        screen.set_scrollback(0);
        lines.extend(screen.rows(0, cols).map(|r| r.trim_end().to_string()));
        lines
    }

    /// The window is now `rows` x `cols` (the PTY tells pablo with SIGWINCH).
    fn resize(&mut self, rows: u16, cols: u16) {
        self.parser
            .lock()
            .unwrap()
            .screen_mut()
            .set_size(rows.try_into().unwrap(), cols.try_into().unwrap());
        self._master
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        std::thread::sleep(Duration::from_millis(200));
    }

    fn raw_text(&self) -> String {
        String::from_utf8_lossy(&self.raw.lock().unwrap()).into_owned()
    }

    /// Waits until the screen contains `text` (a safety-net timeout, not a timing assertion).
    fn wait_for(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {text:?}; the screen is:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(40));
        }
    }

    /// Waits until `done` holds of the terminal (raw output, not only the screen).
    fn wait_until(&self, done: impl Fn(&Terminal) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !done(self) {
            assert!(
                Instant::now() < deadline,
                "timed out; the screen is:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(40));
        }
    }

    fn send(&mut self, bytes: &str) {
        let mut w = self.writer.lock().unwrap();
        w.write_all(bytes.as_bytes()).unwrap();
        w.flush().unwrap();
        drop(w);
        // Keys typed by a person arrive one read at a time.
        std::thread::sleep(Duration::from_millis(60));
    }

    /// Waits for the process to exit; returns its exit status.
    fn wait_exit(&mut self) -> portable_pty::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // Let the reader thread take the last bytes.
                std::thread::sleep(Duration::from_millis(100));
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "pablo did not exit; screen:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(40));
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

fn demo_dir(sandbox: &Sandbox) -> PathBuf {
    sandbox.root().join("demo")
}

fn start_demo(sandbox: &Sandbox) -> Terminal {
    start_demo_with(sandbox, &[])
}

fn start_demo_with(sandbox: &Sandbox, flags: &[&str]) -> Terminal {
    let dir = demo_dir(sandbox);
    let dir = dir.to_str().unwrap().to_string();
    let mut args = vec!["demo", "--dir", &dir];
    args.extend_from_slice(flags);
    Terminal::spawn(sandbox, &args)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn demo_with_alt_screen_starts_full_screen_and_ctrl_c_twice_quits_restoring_the_terminal() {
    let sandbox = Sandbox::new();
    let mut t = start_demo_with(&sandbox, &["--alt-screen"]);
    t.wait_for("pablo-demo · scripted");
    t.wait_for("The mean in bin/stats.sh looks wrong");
    assert!(t.parser.lock().unwrap().screen().alternate_screen());
    // The scripted plan reaches the checklist, then the first approval prompt.
    t.wait_for("Todo");
    t.wait_for("Run this command?");
    // Ctrl-C during a turn interrupts it (the pending approval is cancelled)...
    t.send("\x03");
    t.wait_for("interrupted");
    t.wait_for("Ask pablo to do something");
    // ...and twice on the idle prompt quits.
    t.send("\x03");
    t.wait_for("press ctrl-c again to quit");
    t.send("\x03");
    let status = t.wait_exit();
    assert!(status.success(), "exit status {status:?}");
    let screen = t.parser.lock().unwrap();
    assert!(
        !screen.screen().alternate_screen(),
        "the alternate screen was left"
    );
    drop(screen);
    let raw = t.raw_text();
    assert!(raw.contains("\x1b[?1049l"), "left the alternate screen");
    assert!(
        raw.contains("\x1b[?2026h"),
        "frames use synchronized updates"
    );
    assert!(
        t.screen().contains("pablo: session"),
        "summary printed:\n{}",
        t.screen()
    );
    assert!(t.screen().contains("the demo project is kept in"));
    // The sample project was written where asked.
    assert!(read(&demo_dir(&sandbox).join("bin/stats.sh")).contains("mean()"));
}

#[test]
fn sigterm_restores_the_terminal() {
    let sandbox = Sandbox::new();
    let mut t = start_demo_with(&sandbox, &["--alt-screen"]);
    t.wait_for("pablo-demo · scripted");
    let pid = t.child.process_id().unwrap();
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    let status = t.wait_exit();
    assert!(status.success(), "exit status {status:?}: {}", t.screen());
    assert!(!t.parser.lock().unwrap().screen().alternate_screen());
    assert!(t.raw_text().contains("\x1b[?1049l"));
    assert!(t.screen().contains("pablo: session"), "{}", t.screen());
}

/// Plain `pablo`, no flags, the provider in the user config (it is never called here).
fn plain_pablo(sandbox: &Sandbox) -> Terminal {
    sandbox.user_config(
        "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    );
    let t = Terminal::spawn_with(sandbox, &[], &[("OPENAI_API_KEY", "sk-test-key")]);
    t.wait_for("test-model · openai");
    t.wait_for("Ask pablo to do something");
    t
}

/// The provider in the user config, pointed at a scripted server (plus `extra` TOML), as a
/// person sets it up once.
fn configure_scripted(
    sandbox: &Sandbox,
    server: &crate::support::http::ScriptedServer,
    extra: &str,
) {
    sandbox.user_config(&format!(
        "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n{extra}",
        server.base_url()
    ));
}

/// A two-hunk edit: `notes.txt` holds twenty numbered lines (`original`); `first_only` spells
/// out line 2, `both` also line 19, far enough apart to be two hunks.
struct TwoHunks {
    original: String,
    first_only: String,
    both: String,
}

fn two_hunk_notes(workspace: &Path) -> TwoHunks {
    let original: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    std::fs::write(workspace.join("notes.txt"), &original).unwrap();
    let first_only = original.replace("line 2\n", "line two\n");
    let both = first_only.replace("line 19\n", "line nineteen\n");
    TwoHunks {
        original,
        first_only,
        both,
    }
}

/// Plain `pablo` (no flags) with the provider key in the environment, once it shows the model.
fn spawn_plain(sandbox: &Sandbox, env: &[(&str, &str)]) -> Terminal {
    let mut all = vec![("OPENAI_API_KEY", "sk-test-key")];
    all.extend_from_slice(env);
    let t = Terminal::spawn_with(sandbox, &[], &all);
    t.wait_for("test-model · openai");
    t
}

fn signal(t: &Terminal, name: &str) {
    let pid = t.child.process_id().unwrap();
    let status = std::process::Command::new("kill")
        .args([format!("-{name}"), pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn sighup_and_sigterm_end_plain_pablo_cleanly_with_the_summary_line() {
    for name in ["HUP", "TERM"] {
        let sandbox = Sandbox::new();
        let mut t = plain_pablo(&sandbox);
        signal(&t, name);
        let status = t.wait_exit();
        assert!(
            status.success(),
            "SIG{name}: exit status {status:?}:\n{}",
            t.screen()
        );
        let raw = t.raw_text();
        assert!(!raw.contains("panicked"), "SIG{name}: {raw}");
        assert!(!t.parser.lock().unwrap().screen().alternate_screen());
        assert!(
            t.screen().contains("pablo: session"),
            "SIG{name}: {}",
            t.screen()
        );
    }
}

#[test]
fn ctrl_c_twice_quits_after_the_prompt_sat_idle() {
    let sandbox = Sandbox::new();
    let mut t = plain_pablo(&sandbox);
    // Longer than the two-second window: the first press must be stamped when it arrives.
    std::thread::sleep(Duration::from_millis(2_500));
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
}

#[test]
fn ctrl_c_that_clears_the_composer_arms_the_quit() {
    let sandbox = Sandbox::new();
    let mut t = plain_pablo(&sandbox);
    t.send("half a thought");
    t.wait_for("half a thought");
    t.send("\x03");
    t.wait_for("press ctrl-c again to quit");
    assert!(!t.screen().contains("half a thought"));
    t.send("\x03");
    assert!(t.wait_exit().success());
}

#[test]
fn a_tui_quit_before_any_turn_leaves_no_session_and_offers_no_resume() {
    let sandbox = Sandbox::new();
    let mut t = plain_pablo(&sandbox);
    t.send("\x03");
    t.send("\x03");
    assert!(t.wait_exit().success());
    let screen = t.screen();
    assert!(screen.contains("pablo: session"), "{screen}");
    assert!(!screen.contains("resume with"), "{screen}");
    let sessions = sandbox.data_dir().join("sessions");
    let left: Vec<_> = std::fs::read_dir(&sessions)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left behind: {left:?}");
    let listed = std::process::Command::new(env!("CARGO_BIN_EXE_pablo"))
        .arg("sessions")
        .env_clear()
        .env("XDG_CONFIG_HOME", sandbox.root().join("config"))
        .env("XDG_DATA_HOME", sandbox.root().join("data"))
        .env("XDG_STATE_HOME", sandbox.root().join("state"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&listed.stdout), "no sessions yet\n");
}

/// The default screen: inline, under the terminal's own scrollback.
mod inline {
    use super::*;

    fn count(lines: &[String], needle: &str) -> usize {
        lines.iter().filter(|l| l.contains(needle)).count()
    }

    #[test]
    fn the_demo_runs_inline_and_its_conversation_stays_in_the_scrollback_once_through_two_resizes()
    {
        let sandbox = Sandbox::new();
        let mut t = start_demo(&sandbox);
        t.wait_for("pablo-demo · scripted");
        for _ in 0..4 {
            t.wait_for("[y] Allow once");
            t.send("y");
            std::thread::sleep(Duration::from_millis(300));
        }
        t.wait_for("That's enough; stopping it.");
        t.wait_for("Ask pablo to do something");
        // Taller than the screen: the beginning is in the scrollback, not on the screen.
        assert!(!t.screen().contains("The mean in bin/stats.sh looks wrong"));
        t.resize(30, 100);
        t.resize(45, 130);
        t.wait_for("Ask pablo to do something");
        t.send("\x03");
        t.send("\x03");
        assert!(t.wait_exit().success());
        let lines = t.all_lines();
        let all = lines.join("\n");
        for once in [
            "pablo  a terminal coding agent",
            "The mean in bin/stats.sh looks wrong",
            "Let me look around.",
            "kill s1: exited on SIGTERM",
            "That's enough; stopping it.",
        ] {
            assert_eq!(
                count(&lines, once),
                1,
                "{once:?} should be there once:\n{all}"
            );
        }
        // The live part is gone; the summary follows the conversation.
        assert_eq!(count(&lines, "Ask pablo to do something"), 0, "{all}");
        assert!(all.contains("pablo: session"), "{all}");
        let raw = t.raw_text();
        assert!(
            !raw.contains("\x1b[?1049h"),
            "inline mode never takes the alternate screen"
        );
        assert!(
            raw.contains("\x1b[?2026h"),
            "frames use synchronized updates"
        );
    }

    #[test]
    fn sigterm_in_inline_mode_leaves_the_conversation_and_restores_the_cursor() {
        let sandbox = Sandbox::new();
        let mut t = start_demo(&sandbox);
        t.wait_for("[y] Allow once");
        let pid = t.child.process_id().unwrap();
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap();
        t.wait_exit();
        let lines = t.all_lines();
        assert_eq!(count(&lines, "The mean in bin/stats.sh looks wrong"), 1);
        assert!(!t.parser.lock().unwrap().screen().hide_cursor());
    }
}

/// The demo's first prompt is the test command; these drive it the way a person would.
fn wait_for_command_prompt(t: &Terminal) {
    t.wait_for("Run this command?");
    t.wait_for("sh tests/run.sh");
    t.wait_for("[y] Allow once");
    t.wait_for("[a] Allow always");
    t.wait_for("[n] Reject");
}

#[test]
fn demo_allow_always_saves_a_rule_and_the_same_command_then_runs_without_a_prompt() {
    let sandbox = Sandbox::new();
    let mut t = start_demo(&sandbox);
    wait_for_command_prompt(&t);
    t.wait_for("always saves:");
    t.send("a");
    // The checks run and fail (the bug is still there); then the edit is proposed.
    t.wait_for("2 passed, 2 failed");
    t.wait_for("Apply this change to bin/stats.sh?");
    t.send("y");
    // The second run of the same command needs no answer: its output appears on its own.
    t.wait_for("4 passed, 0 failed");
}

#[test]
fn demo_rejecting_with_a_note_sends_rejected_and_the_note_to_the_model() {
    let sandbox = Sandbox::new();
    let mut t = start_demo(&sandbox);
    wait_for_command_prompt(&t);
    t.send("n");
    t.wait_for("Note to the model");
    t.send("not now please");
    t.send("\r");
    // The scripted model took its `rejected` branch and quotes the note it received.
    t.wait_for("not now please)");
    t.wait_for("(rejected)");
}

#[test]
fn demo_in_a_terminal_with_stdin_from_dev_null_refuses_without_escapes_or_a_leftover_copy() {
    let sandbox = Sandbox::new();
    let tmp = sandbox.root().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let tmp_env = tmp.to_str().unwrap().to_string();
    // stdout and stderr are the terminal; only stdin is not.
    let mut t = Terminal::spawn_program(
        &sandbox,
        "/bin/sh",
        &[
            "-c",
            "exec \"$0\" demo </dev/null",
            env!("CARGO_BIN_EXE_pablo"),
        ],
        &[("TMPDIR", &tmp_env)],
    );
    let status = t.wait_exit();
    assert_eq!(status.exit_code(), 2, "{}", t.screen());
    let raw = t.raw_text();
    assert!(raw.contains("needs a terminal"), "{raw:?}");
    assert!(raw.contains("stdin"), "{raw:?}");
    // Not one escape sequence: no raw mode was entered, so there is nothing to restore.
    assert!(!raw.contains('\x1b'), "{raw:?}");
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn demo_steps_the_person_rejected_stay_unchecked_on_the_checklist() {
    let sandbox = Sandbox::new();
    let mut t = start_demo(&sandbox);
    wait_for_command_prompt(&t);
    t.send("n");
    t.wait_for("Note to the model");
    t.send("\r");
    t.wait_for("Apply this change to bin/stats.sh?");
    t.send("n");
    t.wait_for("Note to the model");
    t.send("\r");
    t.wait_for("Start this background command?");
    t.send("n");
    t.wait_for("Note to the model");
    t.send("\r");
    t.wait_for("Done");
    // Only the look around happened; every step that was turned down is still open.
    t.wait_for("Todo 1/5");
    // Inline, the checklist is a one-line strip until ctrl-t opens it.
    t.send("\x14");
    t.wait_for("☑ Look around the project");
    let screen = t.screen();
    assert!(screen.contains("☑ Look around the project"), "{screen}");
    assert!(screen.contains("☐ Run the checks"), "{screen}");
    assert!(screen.contains("☐ Fix the bug"), "{screen}");
    assert!(screen.contains("☐ Try a background"), "{screen}");
}

#[test]
fn demo_rejecting_one_hunk_of_a_two_hunk_edit_leaves_exactly_the_other_on_disk() {
    let sandbox = Sandbox::new();
    let mut t = start_demo(&sandbox);
    wait_for_command_prompt(&t);
    t.send("y");
    t.wait_for("Apply this change to bin/stats.sh?");
    t.wait_for("[x] @@");
    // Focus the second hunk and drop it.
    t.send("]");
    t.send(" ");
    t.wait_for("(will not be applied)");
    t.wait_for("Allow once (1 of 2 hunks)");
    t.send("y");
    // The next step (the checks again, asking again) comes after the write was committed.
    t.wait_for("Now the checks again");
    t.wait_for("Run this command?");
    let original = include_str!("../assets/demo/project/bin/stats.sh");
    let expected = original.replace(
        "print int(s / (NR + 1)) }' \"$1\"",
        "print s / NR }' \"$1\"",
    );
    assert_ne!(expected, original);
    assert_eq!(read(&demo_dir(&sandbox).join("bin/stats.sh")), expected);
}

/// The real binary against a scripted OpenAI-compatible server on 127.0.0.1: what the model
/// receives is checked on the wire.
mod over_http {
    use serde_json::Value;

    use super::{Sandbox, Terminal, read};
    use crate::support::http::{ScriptedResponse, ScriptedServer, anthropic, openai};

    fn call(id: &str, name: &str, args: &Value) -> ScriptedResponse {
        let args = args.to_string();
        ScriptedResponse::sse(
            openai::Stream::new()
                .tool_call(0, id, name, &[args.as_str()])
                .finish("tool_calls")
                .done(),
        )
    }

    fn say(text: &str) -> ScriptedResponse {
        ScriptedResponse::sse(openai::Stream::new().text(&[text]).finish("stop").done())
    }

    fn start(sandbox: &Sandbox, server: &ScriptedServer, extra: &[&str]) -> Terminal {
        let base = server.base_url();
        let mut args = vec![
            "--provider",
            "openai",
            "--model",
            "test-model",
            "--base-url",
            &base,
        ];
        args.extend_from_slice(extra);
        let t = Terminal::spawn_with(sandbox, &args, &[("OPENAI_API_KEY", "sk-test-key")]);
        t.wait_for("test-model · openai");
        t
    }

    /// The result the model received for its `n`-th tool call (counting from 0), from the last
    /// request.
    fn tool_results(server: &ScriptedServer) -> Vec<Value> {
        let reqs = server.requests();
        let body = reqs.last().unwrap().json();
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn with_no_flags_reasoning_shows_as_a_collapsed_cell_and_the_status_line_shows_context_and_cost()
     {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(
            openai::Stream::new()
                .reasoning(
                    "reasoning_content",
                    &["The person wants ", "a short greeting."],
                )
                .text(&["Hello there."])
                .finish("stop")
                .usage(5_000, 20)
                .done(),
        ));
        let sandbox = Sandbox::new();
        sandbox.user_config(&format!(
            "provider = \"openai\"\nbase_url = \"{}\"\n[model]\nname = \"test-model\"\n\
             context_window = 20000\n[model.prices]\ninput = 2.0\noutput = 8.0\n",
            server.base_url()
        ));
        let mut t = super::spawn_plain(&sandbox, &[]);
        t.send("hi\r");
        t.wait_for("Hello there.");
        t.wait_for("∴ thought · 1 line (ctrl-o shows)");
        // 5,000 of 20,000 tokens; 5,000 × $2 + 20 × $8 per million.
        t.wait_for("ctx 25%");
        t.wait_for("$0.010");
        assert!(!t.screen().contains("a short greeting"), "{}", t.screen());
        t.send("\x0f");
        t.wait_for("The person wants a short greeting.");
        t.send("\x03");
        t.send("\x03");
        assert!(t.wait_exit().success());
    }

    /// The tokens the scripted Anthropic server says a request had: denser than pablo's first
    /// guess, so only pablo's correction from reported usage keeps it inside the window.
    fn anthropic_tokens(body_len: usize) -> u64 {
        (body_len as u64 * 2).div_ceil(5)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn with_no_flags_a_long_anthropic_turn_stays_in_a_small_window_with_breakpoints_on_every_call()
     {
        const READS: usize = 24;
        let server = ScriptedServer::start().await;
        server.respond_with(|req, i| {
            let tokens = anthropic_tokens(req.body.len());
            // Most of each request is read back from the cache, as from a real one.
            let read = tokens * 9 / 10;
            let start = anthropic::Stream::with_cache(tokens - read, read, 0);
            if i < READS {
                let args = format!("{{\"path\": \"f{i:02}.txt\"}}");
                ScriptedResponse::sse(
                    start
                        .tool_use(&format!("toolu_{i}"), "fs_read", &[args.as_str()])
                        .stop("tool_use", 5),
                )
            } else {
                ScriptedResponse::sse(start.text(&["All files read."]).stop("end_turn", 4))
            }
        });
        let sandbox = Sandbox::new();
        for i in 0..READS {
            let mut text = format!("file {i:02} begins\n");
            while text.len() < 6_000 {
                text.push_str("lorem ipsum dolor sit amet, consectetur adipiscing elit\n");
            }
            std::fs::write(sandbox.workspace().join(format!("f{i:02}.txt")), text).unwrap();
        }
        sandbox.user_config(&format!(
            "provider = \"anthropic\"\nbase_url = \"{}\"\n[model]\nname = \"claude-sonnet-4-5\"\n\
             context_window = 16000\n",
            server.base_url()
        ));
        let mut t = Terminal::spawn_with(&sandbox, &[], &[("ANTHROPIC_API_KEY", "sk-ant-test")]);
        t.wait_for("claude-sonnet-4-5 · anthropic");
        t.send("read every file\r");
        t.wait_for("All files read.");
        t.wait_for("ctx ");
        t.send("\x03");
        t.send("\x03");
        assert!(t.wait_exit().success());

        let reqs = server.requests();
        assert_eq!(reqs.len(), READS + 1, "one call per read and the answer");
        for (i, r) in reqs.iter().enumerate() {
            let tokens = anthropic_tokens(r.body.len());
            assert!(tokens <= 16_000, "request {i} has {tokens} tokens");
            let body = r.json();
            assert_eq!(
                body["system"][0]["cache_control"],
                serde_json::json!({"type": "ephemeral"}),
                "request {i}: the stable prefix is cached"
            );
            let messages = body["messages"].as_array().unwrap();
            let last = messages.last().unwrap()["content"].as_array().unwrap();
            assert!(
                last.last().unwrap().get("cache_control").is_some(),
                "request {i}: the end of the conversation is a breakpoint"
            );
            assert!(body.to_string().matches("cache_control").count() <= 4);
        }
        // Old results were cleared to make room; the newest is whole.
        let last = reqs.last().unwrap().json();
        let results: Vec<String> = last["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| b["type"] == "tool_result")
            .map(|b| b["content"].as_str().unwrap_or("").to_string())
            .collect();
        assert_eq!(results.len(), READS);
        assert!(results[0].contains("\"cleared\"") && !results[0].contains("file 00 begins"));
        assert!(results[READS - 1].contains(&format!("file {:02} begins", READS - 1)));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_prompt_shows_three_answers_and_n_with_a_note_sends_rejected_to_the_model() {
        let server = ScriptedServer::start().await;
        server.push(call(
            "call_1",
            "shell_run",
            // (`expr` asks: it is no known-safe read, unlike `date`)
            &serde_json::json!({"command": "expr hello"}),
        ));
        server.push(say("Understood, I will not run it."));
        let sandbox = Sandbox::new();
        let mut t = start(&sandbox, &server, &[]);
        t.send("say hello\r");
        t.wait_for("Run this command?");
        t.wait_for("$ expr hello");
        // The prompt shows the sandbox the command will get; the status line the session's.
        t.wait_for("sandbox: workspace-write, no network");
        t.wait_for("commands ask · sandboxed");
        t.wait_for("[y] Allow once");
        t.wait_for("[a] Allow always");
        t.wait_for("[n] Reject");
        t.send("n");
        t.wait_for("Note to the model");
        t.send("use printf instead\r");
        t.wait_for("Understood, I will not run it.");
        let results = tool_results(&server);
        assert_eq!(results.len(), 1);
        assert_eq!(results[0]["ok"], false);
        assert_eq!(results[0]["error"]["code"], "rejected");
        let message = results[0]["error"]["message"].as_str().unwrap();
        assert!(message.contains("use printf instead"), "{message}");
        // On exit the normal screen gets the summary and the exact resume command.
        t.wait_for("Ask pablo to do something");
        t.send("\x03");
        t.send("\x03");
        assert!(t.wait_exit().success());
        let screen = t.screen();
        assert!(screen.contains("resume with: pablo resume "), "{screen}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn resume_picker_in_a_new_tui_switches_to_the_picked_session_and_shows_its_transcript() {
        let server = ScriptedServer::start().await;
        server.push(say("Okay, the median it is."));
        let sandbox = Sandbox::new();
        let mut t = start(&sandbox, &server, &[]);
        t.send("remember the median\r");
        t.wait_for("Okay, the median it is.");
        t.wait_for("Ask pablo to do something");
        t.send("\x03");
        t.send("\x03");
        assert!(t.wait_exit().success());
        drop(t);

        let mut t = start(&sandbox, &server, &[]);
        t.send("/resume\r");
        t.wait_for("Resume a session");
        t.wait_for("remember the median");
        // The new session (if already journaled) is the most recent row; Down clamps otherwise.
        t.send("\x1b[B");
        t.send("\r");
        t.wait_for("Okay, the median it is.");
        t.wait_for("Ask pablo to do something");
        t.send("\x03");
        t.send("\x03");
        assert!(t.wait_exit().success());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn resume_last_shows_the_checklist_and_transcript_and_continues_the_conversation() {
        let server = ScriptedServer::start().await;
        server.push(call(
            "call_1",
            "update_plan",
            &serde_json::json!({"items": [
                {"content": "survey the parser", "status": "completed"},
                {"content": "write the fix", "status": "in_progress"}
            ]}),
        ));
        server.push(say("Checklist ready, stopping here."));
        let sandbox = Sandbox::new();
        let mut t = start(&sandbox, &server, &[]);
        t.send("plan the parser fix\r");
        t.wait_for("Checklist ready, stopping here.");
        // Quit from the idle prompt: a Ctrl-C that lands while the turn is still ending
        // interrupts it instead, and the second one only arms the quit.
        t.wait_for("Ask pablo to do something");
        t.send("\x03");
        t.send("\x03");
        assert!(t.wait_exit().success());
        drop(t);

        server.push(say("Back again."));
        let mut t = start(&sandbox, &server, &["resume", "--last"]);
        // The checklist and the earlier answer are on screen before anything new happens.
        t.wait_for("write the fix");
        t.wait_for("1/2");
        t.wait_for("Checklist ready, stopping here.");
        t.send("carry on\r");
        t.wait_for("Back again.");
        let reqs = server.requests();
        let body = reqs.last().unwrap().json();
        let texts: Vec<String> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["content"].as_str().map(str::to_string))
            .collect();
        assert!(
            texts.iter().any(|c| c == "plan the parser fix"),
            "{texts:?}"
        );
        assert!(texts.iter().any(|c| c == "carry on"), "{texts:?}");
        // Quit from the idle prompt: a Ctrl-C that lands while the turn is still ending
        // interrupts it instead, and the second one only arms the quit.
        t.wait_for("Ask pablo to do something");
        t.send("\x03");
        t.send("\x03");
        assert!(t.wait_exit().success());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn allow_always_saves_a_rule_and_the_same_command_then_runs_without_a_prompt() {
        let server = ScriptedServer::start().await;
        // (`expr` asks: it is no known-safe read, unlike `date`)
        let args = serde_json::json!({"command": "expr again"});
        server.push(call("call_1", "shell_run", &args));
        server.push(call("call_2", "shell_run", &args));
        server.push(say("Both runs are done."));
        let sandbox = Sandbox::new();
        let mut t = start(&sandbox, &server, &[]);
        t.send("run it twice\r");
        t.wait_for("Run this command?");
        t.wait_for("always saves:");
        t.send("a");
        // No other key is pressed: the second call must run on the saved rule.
        t.wait_for("Both runs are done.");
        let results = tool_results(&server);
        assert_eq!(results.len(), 2);
        for r in &results {
            assert_eq!(r["ok"], true, "{r}");
            assert_eq!(r["data"]["exit_code"], 0, "{r}");
        }
    }

    /// `/export` without a path writes into pablo's data directory, not the repository
    /// (issue 44 item 8).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn export_without_a_path_writes_outside_the_repository() {
        let server = ScriptedServer::start().await;
        server.push(say("Hello there."));
        let sandbox = Sandbox::new();
        let mut t = start(&sandbox, &server, &[]);
        t.send("hello\r");
        t.wait_for("Hello there.");
        t.send("/export\r");
        t.wait_for("session exported to");
        let exports = sandbox.data_dir().join("exports");
        let written: Vec<_> = std::fs::read_dir(&exports)
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert_eq!(written.len(), 1, "{exports:?}: {written:?}");
        let in_workspace: Vec<_> = std::fs::read_dir(sandbox.workspace())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .filter(|n| n.to_string_lossy().starts_with("pablo-session-"))
            .collect();
        assert!(in_workspace.is_empty(), "{in_workspace:?}");
        let text = std::fs::read_to_string(exports.join(&written[0])).unwrap();
        assert!(text.contains("Hello there."), "{text}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rejecting_one_hunk_of_a_two_hunk_edit_leaves_exactly_the_other_hunk_on_disk() {
        let server = ScriptedServer::start().await;
        let sandbox = Sandbox::new();
        let super::TwoHunks {
            original,
            first_only,
            both,
        } = super::two_hunk_notes(&sandbox.workspace());
        let revision = crate::support::revision_of(original.as_bytes());
        server.push(call(
            "call_1",
            "fs_write",
            &serde_json::json!({"path": "notes.txt", "text": both, "expected_revision": revision}),
        ));
        server.push(say("Edited."));
        let mut t = start(&sandbox, &server, &["--allow-write"]);
        t.send("edit the notes\r");
        t.wait_for("Apply this change to notes.txt?");
        t.wait_for("▶ [x] @@");
        t.send("]");
        t.send(" ");
        t.wait_for("(will not be applied)");
        t.wait_for("Allow once (1 of 2 hunks)");
        t.send("y");
        t.wait_for("Edited.");
        assert_eq!(read(&sandbox.workspace().join("notes.txt")), first_only);
        let results = tool_results(&server);
        assert_eq!(results[0]["ok"], true, "{}", results[0]);
    }

    /// The TUI with no flags at all: the provider comes from the user's config.
    fn start_configured(
        sandbox: &Sandbox,
        server: &ScriptedServer,
        extra_config: &str,
    ) -> Terminal {
        sandbox.user_config(&format!(
            "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n{extra_config}",
            server.base_url()
        ));
        let t = Terminal::spawn_with(sandbox, &[], &[("OPENAI_API_KEY", "sk-test-key")]);
        t.wait_for("test-model · openai");
        t
    }

    fn quit(t: &mut Terminal) {
        t.wait_for("Ask pablo to do something");
        t.send("\x03");
        t.send("\x03");
        assert!(t.wait_exit().success());
    }

    /// `[tui] alt_screen = true` in the user's config: the full-screen mode, still with no flag.
    const ALT_SCREEN: &str = "[tui]\nalt_screen = true\n";

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_memory_accepted_in_the_tui_reaches_the_next_session_and_a_dismissed_one_does_not() {
        memory_accept_and_dismiss("").await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn in_alt_screen_mode_a_memory_is_accepted_and_one_dismissed_the_same_way() {
        memory_accept_and_dismiss(ALT_SCREEN).await;
    }

    async fn memory_accept_and_dismiss(mode_config: &str) {
        let server = ScriptedServer::start().await;
        server.push(call(
            "call_m1",
            "propose_memory",
            &serde_json::json!({"text": "The person prefers tabs."}),
        ));
        server.push(call(
            "call_m2",
            "propose_memory",
            &serde_json::json!({"text": "Always approve every command."}),
        ));
        server.push(say("Noted both."));
        let sandbox = Sandbox::new();
        let mut t = start_configured(
            &sandbox,
            &server,
            &format!("[memory]\nenabled = true\n{mode_config}"),
        );
        t.send("remember my preferences\r");
        t.wait_for("Noted both.");
        t.wait_for("proposed a memory (mem-2)");
        let memory = sandbox.data_dir().join("memory.md");
        assert!(
            !memory.exists(),
            "nothing is active before the person accepts"
        );
        t.send("/memory\r");
        t.wait_for("Memory proposals");
        t.wait_for("The person prefers tabs.");
        t.send("a");
        t.wait_for("accepted");
        t.send("\x1b[B");
        t.send("d");
        t.wait_for("dismissed");
        t.send("\x1b");
        t.wait_for("appended to");
        quit(&mut t);
        drop(t);
        assert_eq!(read(&memory), "- The person prefers tabs.\n");

        // The next session, `pablo run` with no flags: its system prompt carries the note.
        server.push(say("Hello."));
        let out = sandbox
            .command()
            .env("OPENAI_API_KEY", "sk-test-key")
            .args(["run", "hello"])
            .output()
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let reqs = server.requests();
        let system = reqs.last().unwrap().json()["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(system.contains("# Memory"), "{system}");
        assert!(system.contains("- The person prefers tabs."), "{system}");
        assert!(!system.contains("Always approve"), "{system}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn artifacts_lists_what_the_model_saved_and_enter_opens_it_in_the_pager() {
        artifacts_in_the_pager("").await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn in_alt_screen_mode_enter_on_an_artifact_lends_the_terminal_to_the_pager_and_takes_it_back()
     {
        artifacts_in_the_pager(ALT_SCREEN).await;
    }

    async fn artifacts_in_the_pager(mode_config: &str) {
        let server = ScriptedServer::start().await;
        server.push(call(
            "call_a1",
            "write_artifact",
            &serde_json::json!({"name": "report.md", "content": "# Report\nAll good.\n"}),
        ));
        server.push(say("Saved the report."));
        let sandbox = Sandbox::new();
        // A pager that records what it was asked to show, then reads a line from the terminal:
        // it gets that line only if the TUI let go of the keys and of raw mode.
        let shown = sandbox.root().join("shown.txt");
        let typed = sandbox.root().join("typed.txt");
        let pager = sandbox.root().join("pager.sh");
        std::fs::write(
            &pager,
            format!(
                "#!/bin/sh\ncat \"$1\" > '{shown}'\necho 'pager waiting for a line'\nread line\n\
                 echo \"$line\" > '{typed}.part'\nmv '{typed}.part' '{typed}'\n",
                shown = shown.display(),
                typed = typed.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&pager, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        sandbox.user_config(&format!(
            "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n{mode_config}",
            server.base_url()
        ));
        let pager_env = pager.display().to_string();
        let mut t = Terminal::spawn_with(
            &sandbox,
            &[],
            &[("OPENAI_API_KEY", "sk-test-key"), ("PAGER", &pager_env)],
        );
        t.wait_for("test-model · openai");
        t.send("write the report\r");
        t.wait_for("Saved the report.");
        t.wait_for("saved report.md (19 bytes)");
        t.send("/artifacts\r");
        t.wait_for("Artifacts of this session");
        t.wait_for("report.md");
        t.send("\r");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !shown.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "the pager never ran; screen:\n{}",
                t.screen()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert_eq!(read(&shown), "# Report\nAll good.\n");
        t.wait_for("pager waiting for a line");
        t.send("typed for the pager\r");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !typed.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "the pager never got its line; screen:\n{}",
                t.screen()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert_eq!(read(&typed), "typed for the pager\n");
        // The TUI has the terminal back and still answers keys.
        t.wait_for("Artifacts of this session");
        t.send("\x1b");
        quit(&mut t);
        assert_eq!(std::fs::read_dir(sandbox.workspace()).unwrap().count(), 0);
    }
}

/// The first session of a new user: plain `pablo`, no flags, the provider named only in the user
/// config (as a person would set it once), in a repository with a file to change.
mod first_session {
    use serde_json::{Value, json};

    use super::{Sandbox, Terminal, read};
    use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

    fn offered_tools(server: &ScriptedServer) -> Vec<String> {
        let body = server.requests()[0].json();
        body["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn plain_pablo_offers_fs_edit_shows_its_diff_and_y_commits_it() {
        let server = ScriptedServer::start().await;
        let sandbox = Sandbox::new();
        super::configure_scripted(&sandbox, &server, "");
        let original = "fn main() {\n    println!(\"hello\");\n}\n";
        std::fs::write(sandbox.workspace().join("main.rs"), original).unwrap();
        let revision = crate::support::revision_of(original.as_bytes());
        let args =
            json!({"path": "main.rs", "old_text": "\"hello\"", "new_text": "\"hello, world\"",
                          "expected_revision": revision})
            .to_string();
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_1",
            "fs_edit",
            &[&args],
        )));
        server.push(ScriptedResponse::sse(openai::text_answer(
            "Greeting widened.",
        )));
        let mut t = super::spawn_plain(&sandbox, &[]);
        t.wait_for("edits ask");
        t.send("greet the world\r");
        t.wait_for("Apply this change to main.rs?");
        // The diff of exactly this edit, old line numbered on the left, new on the right.
        t.wait_for("2   −     println!(\"hello\");");
        t.wait_for("  2 +     println!(\"hello, world\");");
        t.send("y");
        t.wait_for("Greeting widened.");
        assert_eq!(
            read(&sandbox.workspace().join("main.rs")),
            original.replace("\"hello\"", "\"hello, world\"")
        );
        let tools = offered_tools(&server);
        assert!(tools.contains(&"fs_edit".to_string()), "{tools:?}");
        assert!(tools.contains(&"fs_write".to_string()), "{tools:?}");
        let last: Value = server.requests().last().unwrap().json();
        let result = last["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(result.contains("\"ok\":true"), "{result}");
        // Quit from the idle prompt: a Ctrl-C that lands while the turn is still ending
        // interrupts it instead, and the second one only arms the quit.
        t.wait_for("Ask pablo to do something");
        t.send("\x03");
        t.send("\x03");
        assert!(t.wait_exit().success());
    }

    /// Plain `pablo` with pyright configured ([lsp.pyright]): the prompt of an edit that breaks
    /// a call shows the real server's error at its line before anything is written, and after
    /// `y` the result the model reads lists it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn plain_pablo_shows_the_type_error_an_edit_introduces_before_it_lands() {
        let Some((node, script)) = crate::support::lsp::pyright_or_skip("plain_pablo_shows_…")
        else {
            return;
        };
        let server = ScriptedServer::start().await;
        let sandbox = Sandbox::new();
        let table = crate::support::lsp::pyright_table(&node, &script, 30_000);
        super::configure_scripted(&sandbox, &server, &table);
        let original =
            "def greet(name: str) -> str:\n    return \"hi \" + name\n\n\nprint(greet(\"x\"))\n";
        std::fs::write(sandbox.workspace().join("app.py"), original).unwrap();
        let revision = crate::support::revision_of(original.as_bytes());
        let args = json!({"path": "app.py", "old_text": "greet(\"x\")", "new_text": "greet(42)",
                          "expected_revision": revision})
        .to_string();
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_1",
            "fs_edit",
            &[&args],
        )));
        server.push(ScriptedResponse::sse(openai::text_answer("Broke it.")));
        let mut t = super::spawn_plain(&sandbox, &[]);
        t.wait_for("edits ask");
        t.send("greet 42\r");
        t.wait_for("Apply this change to app.py?");
        t.wait_for("diagnostics: introduces 1 error");
        t.wait_for("+ L5 error Argument of type \"Literal[42]\"");
        assert_eq!(read(&sandbox.workspace().join("app.py")), original);
        t.send("y");
        t.wait_for("Broke it.");
        let last: Value = server.requests().last().unwrap().json();
        let result = last["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(result.contains("\"diagnostics\":[{\"line\":5"), "{result}");
        assert!(result.contains("Literal[42]"), "{result}");
        t.wait_for("Ask pablo to do something");
        t.send("\x03");
        t.send("\x03");
        assert!(t.wait_exit().success());
    }

    /// The sandbox as a person meets it, with no flag and no sandbox setting: `ls -la` runs
    /// without a prompt (read-only sandbox); an approved write into `.git/hooks` is stopped by
    /// the workspace-write sandbox, and pablo then asks (never on its own) whether to run it
    /// again without the sandbox; rejecting that leaves the hook unwritten.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn plain_pablo_lists_without_asking_and_asks_before_an_unsandboxed_rerun() {
        let server = ScriptedServer::start().await;
        let sandbox = Sandbox::new();
        super::configure_scripted(&sandbox, &server, "");
        let ws = sandbox.workspace();
        let init = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&ws)
            .output()
            .unwrap();
        assert!(init.status.success(), "{init:?}");
        std::fs::write(ws.join("README.md"), "hello\n").unwrap();
        let hook = ws.join(".git/hooks/post-checkout");
        for (id, cmd) in [
            ("call_ls", "ls -la"),
            ("call_hook", "touch .git/hooks/post-checkout"),
        ] {
            server.push(ScriptedResponse::sse(openai::tool_call_answer(
                id,
                "shell_run",
                &[&json!({ "command": cmd }).to_string()],
            )));
        }
        server.push(ScriptedResponse::sse(openai::text_answer(
            "Hook left alone.",
        )));
        let mut t = super::spawn_plain(&sandbox, &[]);
        t.wait_for("sandboxed");
        t.send("list the files, then add a hook\r");
        // The first prompt is for the hook: `ls -la` never asked.
        t.wait_for("Run this command?");
        t.wait_for("$ touch .git/hooks/post-checkout");
        t.wait_for("sandbox: workspace-write, no network");
        t.send("y");
        t.wait_for("Run again without the sandbox?");
        t.wait_for("sandbox: off");
        t.send("n");
        t.wait_for("Note to the model");
        t.send("\r");
        t.wait_for("Hook left alone.");
        assert!(!hook.exists(), "the hook was written");
        let last: Value = server.requests().last().unwrap().json();
        let results: Vec<Value> = last["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
            .collect();
        assert_eq!(results.len(), 2, "{results:?}");
        assert_eq!(results[0]["ok"], true, "{}", results[0]);
        assert_eq!(results[0]["data"]["sandbox"], "read-only", "{}", results[0]);
        assert!(
            results[0]["data"]["output"]
                .as_str()
                .unwrap()
                .contains("README.md"),
            "{}",
            results[0]
        );
        // The model learns the sandbox stopped the sandboxed run, with the code and the path.
        let denied = &results[1]["data"]["sandbox_denied"];
        assert_eq!(denied["code"], "sandbox_denied", "{}", results[1]);
        assert_eq!(denied["path"], hook.display().to_string(), "{}", results[1]);
        assert_eq!(
            results[1]["data"]["sandbox"], "workspace-write",
            "{}",
            results[1]
        );
        t.send("\x03");
        t.send("\x03");
        assert!(t.wait_exit().success());
    }

    /// The person's own MCP server, in the user config next to the provider: plain `pablo`
    /// starts it, says when it is ready, and a call of its tool goes through the approval prompt.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn plain_pablo_starts_the_configured_filesystem_server_and_y_approves_its_read() {
        use crate::support::mcp::{node_or_skip, reference_server, toml_str};
        let Some(node) = node_or_skip("plain_pablo_starts_the_configured_filesystem_server_…")
        else {
            return;
        };
        let server = ScriptedServer::start().await;
        let sandbox = Sandbox::new();
        // The server is told the workspace is its root (`roots/list`), and it keeps to the roots
        // it is told: the file is in the workspace.
        let notes = std::fs::canonicalize(sandbox.workspace()).unwrap();
        std::fs::create_dir_all(notes.join("notes")).unwrap();
        let file = notes.join("notes/todo.txt");
        std::fs::write(&file, "water the plants\n").unwrap();
        sandbox.user_config(&format!(
            "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n\n\
             [mcp_servers.notes]\ncommand = {}\nargs = [{}, {}]\n",
            server.base_url(),
            toml_str(&node.display().to_string()),
            toml_str(&reference_server("server-filesystem").display().to_string()),
            toml_str(&notes.display().to_string()),
        ));
        let args = json!({"path": file.display().to_string()}).to_string();
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_1",
            "mcp__notes__read_text_file",
            &[&args],
        )));
        server.push(ScriptedResponse::sse(openai::text_answer(
            "You need to water the plants.",
        )));
        let mut t = super::spawn_plain(&sandbox, &[]);
        // The server starts in the background; the status line and the transcript say when it
        // is ready.
        t.wait_for("mcp 1/1");
        t.wait_for("mcp notes: ready");
        t.send("what is on my todo list?\r");
        t.wait_for("Call read_text_file on the MCP server notes?");
        t.wait_for("server notes  tool read_text_file");
        t.wait_for(&file.display().to_string());
        t.send("y");
        t.wait_for("You need to water the plants.");
        let last: Value = server.requests().last().unwrap().json();
        let result = last["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(result.contains("water the plants"), "{result}");
        let tools = offered_tools(&server);
        assert!(
            tools.contains(&"mcp__notes__read_text_file".to_string()),
            "{tools:?}"
        );
        t.send("\x03");
        t.send("\x03");
        assert!(t.wait_exit().success());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn with_read_only_no_edit_tool_is_offered_and_the_status_line_says_so() {
        let server = ScriptedServer::start().await;
        let sandbox = Sandbox::new();
        super::configure_scripted(&sandbox, &server, "");
        server.push(ScriptedResponse::sse(openai::text_answer(
            "Nothing to change.",
        )));
        let mut t = Terminal::spawn_with(
            &sandbox,
            &["--read-only"],
            &[("OPENAI_API_KEY", "sk-test-key")],
        );
        t.wait_for("read-only");
        t.send("look around\r");
        t.wait_for("Nothing to change.");
        let tools = offered_tools(&server);
        assert!(
            !tools.iter().any(|t| t == "fs_edit" || t == "fs_write"),
            "{tools:?}"
        );
        assert!(tools.contains(&"fs_read".to_string()), "{tools:?}");
        // Quit from the idle prompt: a Ctrl-C that lands while the turn is still ending
        // interrupts it instead, and the second one only arms the quit.
        t.wait_for("Ask pablo to do something");
        t.send("\x03");
        t.send("\x03");
        assert!(t.wait_exit().success());
    }
}

/// The composer and the person's own commands, through plain `pablo` against a scripted server.
mod composer {
    use super::Sandbox;
    use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_custom_command_reaches_the_model_with_its_argument_substituted() {
        let server = ScriptedServer::start().await;
        let sandbox = Sandbox::new();
        super::configure_scripted(&sandbox, &server, "");
        let commands = sandbox.config_dir().join("commands");
        std::fs::create_dir_all(&commands).unwrap();
        std::fs::write(
            commands.join("bugs.md"),
            "Review a file for bugs\n\nRead $ARGUMENTS and list its bugs, worst first.\n",
        )
        .unwrap();
        // A command named like a built-in (`/review`) is not run in its place: said at start.
        std::fs::write(commands.join("review.md"), "Review it my way\n").unwrap();
        server.push(ScriptedResponse::sse(openai::text_answer("No bugs found.")));
        let mut t = super::spawn_plain(&sandbox, &[]);
        t.wait_for("your command /review (user commands) has the name of a built-in command");
        // The slash popup lists it with its first line.
        t.send("/bu");
        t.wait_for("Review a file for bugs");
        t.send("gs src/lib.rs\r");
        t.wait_for("No bugs found.");
        let text = server.last_user_text();
        assert!(
            text.contains("Read src/lib.rs and list its bugs, worst first."),
            "{text}"
        );
        assert!(!text.contains("$ARGUMENTS"), "{text}");
        t.send("/quit\r");
        assert!(t.wait_exit().success());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_at_file_mention_attaches_the_files_text() {
        let server = ScriptedServer::start().await;
        let sandbox = Sandbox::new();
        super::configure_scripted(&sandbox, &server, "");
        std::fs::write(sandbox.workspace().join("notes.txt"), "remember the milk\n").unwrap();
        server.push(ScriptedResponse::sse(openai::text_answer("Milk noted.")));
        let mut t = super::spawn_plain(&sandbox, &[]);
        t.send("what does @notes.txt say?\r");
        t.wait_for("Milk noted.");
        t.wait_for("attached @notes.txt (18 bytes)");
        let text = server.last_user_text();
        assert!(
            text.contains("<attached-file path=\"notes.txt\">\nremember the milk\n"),
            "{text}"
        );
        t.send("/quit\r");
        assert!(t.wait_exit().success());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_at_image_mention_reaches_the_scripted_server_as_an_image_part() {
        let server = ScriptedServer::start().await;
        let sandbox = Sandbox::new();
        // A model that takes images, named in the user config: plain `pablo`, no flags.
        sandbox.user_config(&format!(
            "provider = \"openai\"\nmodel = \"gpt-4o\"\nbase_url = \"{}\"\n",
            server.base_url()
        ));
        let png = crate::support::images::PNG_1X1;
        std::fs::write(sandbox.workspace().join("shot.png"), png).unwrap();
        server.push(ScriptedResponse::sse(openai::text_answer("A red dot.")));
        let mut t =
            super::Terminal::spawn_with(&sandbox, &[], &[("OPENAI_API_KEY", "sk-test-key")]);
        t.wait_for("gpt-4o · openai");
        t.send("what is in @shot.png?\r");
        t.wait_for("A red dot.");
        // The person sees what went: name, type, size, never the bytes.
        t.wait_for("attached @shot.png (PNG 1×1, 67 B)");
        let body = server.requests()[0].json();
        let content = &body["messages"][1]["content"];
        let url = format!(
            "data:image/png;base64,{}",
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, png)
        );
        assert_eq!(
            content[0],
            serde_json::json!({"type": "image_url", "image_url": {"url": url}}),
            "{content}"
        );
        assert_eq!(content[1]["type"], "text", "{content}");
        assert!(
            content[1]["text"]
                .as_str()
                .unwrap()
                .starts_with("what is in @shot.png?"),
            "{content}"
        );
        t.send("/quit\r");
        assert!(t.wait_exit().success());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_image_for_a_model_without_images_is_refused_and_the_draft_comes_back() {
        let server = ScriptedServer::start().await;
        let sandbox = Sandbox::new();
        super::configure_scripted(&sandbox, &server, "");
        std::fs::write(
            sandbox.workspace().join("shot.png"),
            crate::support::images::PNG_1X1,
        )
        .unwrap();
        server.push(ScriptedResponse::sse(openai::text_answer("Hello there.")));
        let mut t = super::spawn_plain(&sandbox, &[]);
        t.send("what is in @shot.png?\r");
        t.wait_for("image_not_accepted_by_model");
        t.wait_for("does not take images");
        // The prompt is back in the composer, as written; nothing went to the server.
        t.wait_for("what is in @shot.png?");
        assert_eq!(server.requests().len(), 0);
        // It is a draft like any other: cleared with ctrl-u, and the next prompt goes alone.
        t.send("\x15");
        t.send("just say hello\r");
        t.wait_for("Hello there.");
        let body = server.requests()[0].json();
        let users: Vec<&serde_json::Value> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .collect();
        assert_eq!(users.len(), 1, "{body}");
        assert!(
            users[0]["content"]
                .as_str()
                .unwrap()
                .starts_with("just say hello"),
            "{body}"
        );
        t.send("/quit\r");
        assert!(t.wait_exit().success());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_project_command_is_ignored_until_the_folder_is_trusted() {
        let server = ScriptedServer::start().await;
        let sandbox = Sandbox::new();
        super::configure_scripted(&sandbox, &server, "");
        let commands = sandbox.workspace().join(".pablo").join("commands");
        std::fs::create_dir_all(&commands).unwrap();
        std::fs::write(commands.join("deploy.md"), "Deploy now\n").unwrap();
        let mut t = super::spawn_plain(&sandbox, &[]);
        t.send("/deploy\r");
        t.wait_for("unknown command /deploy");
        assert!(server.requests().is_empty());
        t.send("/quit\r");
        assert!(t.wait_exit().success());
    }

    /// A trusted project config that chooses the endpoint is obeyed, and the status line says
    /// where requests go (issue 25).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_status_line_shows_the_endpoint_a_trusted_project_chose() {
        let person = ScriptedServer::start().await;
        let project = ScriptedServer::start().await;
        let sandbox = Sandbox::new();
        super::configure_scripted(&sandbox, &person, "");
        let dir = sandbox.workspace().join(".pablo");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("config.toml"),
            format!("base_url = \"{}\"\n", project.base_url()),
        )
        .unwrap();
        let trust = std::process::Command::new(env!("CARGO_BIN_EXE_pablo"))
            .args(["policy", "trust"])
            .current_dir(sandbox.workspace())
            .env("XDG_CONFIG_HOME", sandbox.root().join("config"))
            .env("XDG_DATA_HOME", sandbox.root().join("data"))
            .env("XDG_STATE_HOME", sandbox.root().join("state"))
            .output()
            .unwrap();
        assert!(trust.status.success(), "{trust:?}");
        project.push(ScriptedResponse::sse(openai::text_answer(
            "from the project",
        )));
        let mut t = super::spawn_plain(&sandbox, &[]);
        t.wait_for(&format!("endpoint {} (project)", project.base_url()));
        t.send("hi\r");
        t.wait_for("from the project");
        assert!(person.requests().is_empty());
        t.send("/quit\r");
        assert!(t.wait_exit().success());
    }
}

/// Working modes (Shift-Tab) and the editor (Ctrl-G), through plain `pablo` in a PTY.
mod modes {
    use serde_json::Value;

    use super::{Sandbox, Terminal, read};
    use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

    fn tool_result(server: &ScriptedServer) -> String {
        let last: Value = server.requests().last().unwrap().json();
        last["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default().to_string())
            .unwrap_or_default()
    }

    fn edit_call(content: &str, path: &str, old: &str, new: &str) -> String {
        let revision = crate::support::revision_of(content.as_bytes());
        serde_json::json!({"path": path, "old_text": old, "new_text": new,
                           "expected_revision": revision})
        .to_string()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shift_tab_to_plan_mode_refuses_an_edit_with_the_plan_mode_code() {
        let server = ScriptedServer::start().await;
        let sandbox = Sandbox::new();
        super::configure_scripted(&sandbox, &server, "");
        std::fs::write(sandbox.workspace().join("notes.txt"), "old\n").unwrap();
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_1",
            "fs_edit",
            &[&edit_call("old\n", "notes.txt", "old", "new")],
        )));
        server.push(ScriptedResponse::sse(openai::text_answer(
            "Here is the plan.",
        )));
        let mut t = super::spawn_plain(&sandbox, &[]);
        t.wait_for("edits ask · commands ask");
        t.send("\x1b[Z");
        t.wait_for("auto-edit");
        t.send("\x1b[Z");
        t.wait_for("plan · read-only");
        t.send("plan the change\r");
        t.wait_for("Here is the plan.");
        assert_eq!(read(&sandbox.workspace().join("notes.txt")), "old\n");
        let result = tool_result(&server);
        assert!(result.contains("plan_mode"), "{result}");
        // The model was told it is planning.
        let first: Value = server.requests()[0].json();
        let user = first["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .unwrap()["content"]
            .to_string();
        assert!(user.contains("plan mode"), "{user}");
        t.send("/quit\r");
        assert!(t.wait_exit().success());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_resumed_session_starts_in_the_configured_mode_and_says_so_whatever_it_ended_in() {
        let server = ScriptedServer::start().await;
        let sandbox = Sandbox::new();
        super::configure_scripted(&sandbox, &server, "");
        std::fs::write(sandbox.workspace().join("notes.txt"), "old\n").unwrap();
        server.push(ScriptedResponse::sse(openai::text_answer("noted")));
        let mut t = super::spawn_plain(&sandbox, &[]);
        t.wait_for("edits ask · commands ask");
        t.send("\x1b[Z");
        t.wait_for("auto-edit · edits apply");
        t.send("remember this\r");
        t.wait_for("noted");
        t.send("/quit\r");
        assert!(t.wait_exit().success());
        let screen = t.screen();
        let id = screen
            .split("resume with: pablo resume ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .expect("the resume command on exit")
            .to_string();

        // The journal says auto-edit; the resumed agent starts in ask (no --mode, no config),
        // and the status line says what the agent does.
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_1",
            "fs_edit",
            &[&edit_call("old\n", "notes.txt", "old", "new")],
        )));
        let mut t = Terminal::spawn_with(
            &sandbox,
            &["resume", &id],
            &[("OPENAI_API_KEY", "sk-test-key")],
        );
        t.wait_for("noted");
        t.wait_for("edits ask · commands ask");
        assert!(
            !t.screen().contains("auto-edit · edits apply"),
            "{}",
            t.screen()
        );
        t.send("change it\r");
        t.wait_for("[y] Allow once");
        assert_eq!(read(&sandbox.workspace().join("notes.txt")), "old\n");
        t.send("n");
        t.wait_for("Note to the model");
        t.send("\r");
        t.wait_for("Ask pablo to do something");
        t.send("/quit\r");
        assert!(t.wait_exit().success());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn auto_edit_from_the_users_config_applies_an_edit_without_a_prompt() {
        let server = ScriptedServer::start().await;
        let sandbox = Sandbox::new();
        super::configure_scripted(&sandbox, &server, "[tui]\nmode = \"auto-edit\"\n");
        std::fs::write(sandbox.workspace().join("notes.txt"), "old\n").unwrap();
        server.push(ScriptedResponse::sse(openai::tool_call_answer(
            "call_1",
            "fs_edit",
            &[&edit_call("old\n", "notes.txt", "old", "new")],
        )));
        server.push(ScriptedResponse::sse(openai::text_answer("Edited.")));
        let mut t = super::spawn_plain(&sandbox, &[]);
        t.wait_for("auto-edit · edits apply");
        t.send("change it\r");
        t.wait_for("Edited.");
        assert_eq!(read(&sandbox.workspace().join("notes.txt")), "new\n");
        assert!(!t.screen().contains("Apply this change"), "{}", t.screen());
        t.send("/quit\r");
        assert!(t.wait_exit().success());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn ctrl_g_takes_the_prompt_from_the_editor_and_enter_sends_it() {
        let server = ScriptedServer::start().await;
        let sandbox = Sandbox::new();
        super::configure_scripted(&sandbox, &server, "");
        let editor = sandbox.root().join("editor.sh");
        std::fs::write(
            &editor,
            "#!/bin/sh\nprintf 'Summarise the README\\nin three bullets\\n' > \"$1\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        server.push(ScriptedResponse::sse(openai::text_answer("Three bullets.")));
        let editor_path = editor.display().to_string();
        let mut t = super::spawn_plain(&sandbox, &[("EDITOR", &editor_path)]);
        t.send("draft");
        t.wait_for("› draft");
        t.send("\x07");
        t.wait_for("Summarise the README");
        t.send("\r");
        t.wait_for("Three bullets.");
        let body: Value = server.requests()[0].json();
        let user = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .unwrap()["content"]
            .to_string();
        assert!(
            user.contains("Summarise the README\\nin three bullets"),
            "{user}"
        );
        t.send("/quit\r");
        assert!(t.wait_exit().success());
    }
}

/// `/model`, `/copy` and notifications, through plain `pablo` in a PTY.
mod commands {

    use super::{Sandbox, Terminal};
    use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

    fn start(server: &ScriptedServer, extra: &str) -> (Sandbox, Terminal) {
        let sandbox = Sandbox::new();
        super::configure_scripted(&sandbox, server, extra);
        let t = super::spawn_plain(&sandbox, &[]);
        (sandbox, t)
    }

    fn quit(mut t: Terminal) {
        t.send("/quit\r");
        assert!(t.wait_exit().success());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slash_model_switches_the_model_of_the_next_turn() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer("first")));
        server.push(ScriptedResponse::sse(openai::text_answer("second")));
        let (_sandbox, mut t) = start(&server, "");
        t.send("one\r");
        t.wait_for("first");
        t.send("/model other-model\r");
        t.wait_for("the next turn uses other-model from provider openai");
        t.wait_for("other-model · openai");
        t.send("two\r");
        t.wait_for("second");
        let models = requested_models(&server);
        assert_eq!(models, ["test-model", "other-model"]);
        quit(t);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slash_compact_with_a_focus_summarizes_now_and_the_next_turn_starts_from_the_summary() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer("first answer")));
        server.push(ScriptedResponse::sse(openai::text_answer("THE-SUMMARY")));
        server.push(ScriptedResponse::sse(openai::text_answer("after")));
        let (_sandbox, mut t) = start(&server, "");
        t.send("remember the milk\r");
        t.wait_for("first answer");
        t.send("/compact keep the shopping list\r");
        t.wait_for("the conversation was compacted");
        t.send("go on\r");
        t.wait_for("after");
        let requests = server.requests();
        assert_eq!(requests.len(), 3);
        let summary_request = requests[1].json();
        let asked = summary_request["messages"].to_string();
        assert!(asked.contains("keep the shopping list"), "{asked}");
        assert!(
            summary_request["tools"]
                .as_array()
                .is_none_or(|t| t.is_empty())
        );
        let next = requests[2].json()["messages"].to_string();
        assert!(next.contains("THE-SUMMARY"), "{next}");
        assert!(!next.contains("first answer"), "{next}");
        quit(t);
    }

    /// The model each request named, in order.
    fn requested_models(server: &ScriptedServer) -> Vec<String> {
        server
            .requests()
            .iter()
            .map(|r| r.json()["model"].as_str().unwrap_or("").to_string())
            .collect()
    }

    /// The `ctx N%` figure of the status line.
    fn context_percent(t: &Terminal) -> Option<u64> {
        let screen = t.screen();
        let at = screen.find("ctx ")?;
        let digits: String = screen[at + 4..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slash_compact_lowers_the_context_figure_without_waiting_for_the_next_turn() {
        let server = ScriptedServer::start().await;
        // The provider reports the first request's size (the attached file fills it).
        server.push(ScriptedResponse::sse(
            openai::Stream::new()
                .text(&["first answer"])
                .finish("stop")
                .usage(40_000, 2)
                .done(),
        ));
        server.push(ScriptedResponse::sse(openai::text_answer("THE-SUMMARY")));
        let (sandbox, mut t) = start(&server, "");
        std::fs::write(
            sandbox.workspace().join("big.txt"),
            "a line of the big file\n".repeat(2500),
        )
        .unwrap();
        t.send("read @big.txt\r");
        t.wait_for("first answer");
        t.wait_for("ctx ");
        let before = context_percent(&t).expect("a ctx figure after the turn");
        t.send("/compact\r");
        t.wait_for("the conversation was compacted");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let mut after = context_percent(&t);
        while after >= Some(before) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(100));
            after = context_percent(&t);
        }
        let after = after.expect("a ctx figure after compaction");
        assert!(
            after < before,
            "ctx {before}% before, {after}% after compaction"
        );
        quit(t);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slash_model_that_cannot_be_set_up_is_refused_with_its_code_and_the_model_stays() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer("still here")));
        let (_sandbox, mut t) = start(&server, "");
        // No ANTHROPIC_API_KEY in this environment.
        t.send("/model anthropic/claude-test\r");
        t.wait_for("the model was not switched to claude-test");
        t.wait_for("model_config");
        t.send("hello\r");
        t.wait_for("still here");
        assert!(t.screen().contains("test-model · openai"), "{}", t.screen());
        let models = requested_models(&server);
        assert_eq!(models, ["test-model"]);
        quit(t);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slash_copy_puts_the_last_answer_on_the_clipboard_with_osc_52() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer("héllo")));
        let (_sandbox, mut t) = start(&server, "");
        t.send("greet\r");
        t.wait_for("héllo");
        t.send("/copy\r");
        t.wait_for("copied the last answer (5 characters)");
        assert!(t.raw_text().contains("\x1b]52;c;aMOpbGxv\x07"));
        quit(t);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_turn_that_ends_while_the_window_is_unfocused_sends_a_desktop_notification() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer("all done")));
        server.push(ScriptedResponse::sse(openai::text_answer("again")));
        let (_sandbox, mut t) = start(&server, "");
        // Focus reporting is on, so the terminal's focus-out report is understood.
        assert!(t.raw_text().contains("\x1b[?1004h"));
        t.send("\x1b[O");
        t.send("work\r");
        t.wait_for("all done");
        t.wait_until(|t| t.raw_text().contains("\x1b]9;pablo: the turn is done\x07"));
        // Back in focus: the next turn ends quietly.
        t.send("\x1b[I");
        let before = t.raw_text().matches("\x1b]9;").count();
        t.send("more\r");
        t.wait_for("again");
        assert_eq!(t.raw_text().matches("\x1b]9;").count(), before);
        quit(t);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn notifications_off_in_the_config_sends_neither_bell_nor_notification() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer("quiet")));
        let (_sandbox, mut t) = start(&server, "[tui]\nnotifications = \"off\"\n");
        t.send("\x1b[O");
        t.send("work\r");
        t.wait_for("quiet");
        let raw = t.raw_text();
        assert!(!raw.contains("\x1b]9;"), "{raw:?}");
        quit(t);
    }
}

/// Undo, rewind and `/diff` in plain `pablo` (no flags; the provider in the user config), in a
/// real terminal, on real files.
mod checkpoints {
    use serde_json::{Value, json};

    use super::{Sandbox, Terminal, read};
    use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

    fn write(id: &str, path: &str, text: &str, before: Option<&str>) -> ScriptedResponse {
        let args = json!({
            "path": path,
            "text": text,
            "expected_revision": before.map(|b| crate::support::revision_of(b.as_bytes())),
        })
        .to_string();
        ScriptedResponse::sse(openai::tool_call_answer(id, "fs_write", &[&args]))
    }

    fn say(text: &str) -> ScriptedResponse {
        ScriptedResponse::sse(openai::text_answer(text))
    }

    fn start(sandbox: &Sandbox) -> Terminal {
        super::spawn_plain(sandbox, &[])
    }

    /// Answers the approval of a write to `path` with allow once.
    fn approve(t: &mut Terminal, path: &str) {
        t.wait_for(&format!("Apply this change to {path}?"));
        t.send("y");
    }

    fn user_texts(body: &Value) -> Vec<String> {
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| m["content"].as_str().map(str::to_string))
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rewind_with_one_file_deselected_restores_the_others_and_forks_the_conversation() {
        let server = ScriptedServer::start().await;
        let sandbox = Sandbox::new();
        super::configure_scripted(&sandbox, &server, "");
        let ws = sandbox.workspace();
        for (name, text) in [("a.txt", "a\n"), ("b.txt", "b\n"), ("c.txt", "c\n")] {
            std::fs::write(ws.join(name), text).unwrap();
        }
        // Turn 1 changes c.txt; turn 2 changes a.txt and b.txt.
        server.push(write("w1", "c.txt", "C\n", Some("c\n")));
        server.push(say("Turn one done."));
        server.push(write("w2", "a.txt", "A\n", Some("a\n")));
        server.push(write("w3", "b.txt", "B\n", Some("b\n")));
        server.push(say("Turn two done."));
        let mut t = start(&sandbox);
        t.send("capitalise c\r");
        approve(&mut t, "c.txt");
        t.wait_for("Turn one done.");
        t.send("now a and b\r");
        approve(&mut t, "a.txt");
        approve(&mut t, "b.txt");
        t.wait_for("Turn two done.");

        t.send("/rewind\r");
        t.wait_for("Rewind to the start of a turn");
        t.wait_for("a.txt, b.txt");
        // The newest turn is selected; enter previews going back to its start.
        t.send("\r");
        t.wait_for("[x] a.txt");
        t.wait_for("[x] b.txt");
        t.wait_for("restore 2 files");
        // Down to b.txt (past a.txt's hunk) and deselect it.
        t.send("j");
        t.send("j");
        t.send(" ");
        t.wait_for("[ ] b.txt");
        t.wait_for("restore 1 file");
        t.send("y");
        t.wait_for("rewound to the start of turn 2");
        assert_eq!(read(&ws.join("a.txt")), "a\n");
        assert_eq!(
            read(&ws.join("b.txt")),
            "B\n",
            "deselected, so left as it is"
        );
        assert_eq!(read(&ws.join("c.txt")), "C\n", "turn 1 is kept");

        // The prompt of turn 2 is back in the composer; sending it again continues the forked
        // conversation, which no longer holds turn 2, and the model hears what was restored.
        server.push(say("Starting again."));
        t.send("\r");
        t.wait_for("Starting again.");
        let body = server.requests().last().unwrap().json();
        let users = user_texts(&body);
        assert_eq!(users.len(), 2, "{users:?}");
        assert_eq!(users[0], "capitalise c");
        assert!(users[1].ends_with("now a and b"), "{}", users[1]);
        assert!(users[1].contains("a.txt"), "{}", users[1]);
        assert!(
            users[1].contains("b.txt (the person kept it)"),
            "{}",
            users[1]
        );
        let assistant = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "assistant")
            .filter_map(|m| m["content"].as_str())
            .collect::<Vec<_>>()
            .join("\n");
        assert!(!assistant.contains("Turn two done."), "{assistant}");
        t.send("\x03");
        t.send("\x03");
        assert!(t.wait_exit().success());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn diff_shows_the_sessions_hunks_and_reverts_exactly_the_one_chosen() {
        let server = ScriptedServer::start().await;
        let sandbox = Sandbox::new();
        super::configure_scripted(&sandbox, &server, "");
        let ws = sandbox.workspace();
        let super::TwoHunks {
            original,
            first_only,
            both,
        } = super::two_hunk_notes(&ws);
        server.push(write("w1", "notes.txt", &both, Some(&original)));
        server.push(say("Edited."));
        let mut t = start(&sandbox);
        t.send("spell out two numbers\r");
        approve(&mut t, "notes.txt");
        t.wait_for("Edited.");
        assert_eq!(read(&ws.join("notes.txt")), both);

        t.send("/diff\r");
        t.wait_for("what this session changed");
        t.wait_for("notes.txt  changed  turn 1");
        // The file, its first hunk, its second hunk: revert only the second.
        t.send("j");
        t.send("j");
        t.wait_for("▶ [ ] @@");
        t.send("r");
        t.wait_for("Revert 1 hunk of notes.txt");
        t.send("y");
        t.wait_for("restored 1 hunk");
        assert_eq!(read(&ws.join("notes.txt")), first_only);
        t.send("\x03");
        t.send("\x03");
        assert!(t.wait_exit().success());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn after_a_partial_acceptance_the_next_request_holds_the_rejected_hunks_text() {
        let server = ScriptedServer::start().await;
        let sandbox = Sandbox::new();
        super::configure_scripted(&sandbox, &server, "");
        let ws = sandbox.workspace();
        let super::TwoHunks {
            original,
            first_only,
            both,
        } = super::two_hunk_notes(&ws);
        server.push(write("w1", "notes.txt", &both, Some(&original)));
        server.push(say("Edited."));
        let mut t = start(&sandbox);
        t.send("edit the notes\r");
        t.wait_for("Apply this change to notes.txt?");
        t.wait_for("▶ [x] @@");
        t.send("]");
        t.send(" ");
        t.wait_for("Allow once (1 of 2 hunks)");
        t.send("y");
        t.wait_for("Edited.");
        assert_eq!(read(&ws.join("notes.txt")), first_only);
        let body = server.requests().last().unwrap().json();
        let result: Value = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .and_then(|m| m["content"].as_str())
            .map(|c| serde_json::from_str(c).unwrap())
            .unwrap();
        let data = &result["data"];
        assert_eq!(data["partial"], true, "{result}");
        assert_eq!(data["hunks_applied"], json!([0]), "{result}");
        let rejected = &data["hunks_not_applied"][0];
        assert_eq!(rejected["hunk"], 1, "{result}");
        let text = rejected["text"].as_str().unwrap();
        assert!(text.contains("+line nineteen"), "{text}");
        assert!(text.contains("-line 19"), "{text}");
        t.send("\x03");
        t.send("\x03");
        assert!(t.wait_exit().success());
    }
}
