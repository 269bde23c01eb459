//! Commands in the editor's terminals (`terminal: true`).

use super::*;
use std::collections::HashMap;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{ExitStatus, Stdio};
use std::sync::Condvar;

fn terminal_caps() -> Value {
    json!({"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": true})
}

/// A variable of the editor's own environment that must never reach a command.
const EDITOR_SECRET: &str = "PABLO_TEST_EDITOR_SECRET";

/// What a terminal shows: the kept bytes, and whether older ones were dropped.
#[derive(Default)]
struct Screen {
    bytes: Vec<u8>,
    truncated: bool,
}

type ExitSlot = Arc<(Mutex<Option<ExitStatus>>, Condvar)>;

struct Term {
    pid: i32,
    screen: Arc<Mutex<Screen>>,
    exit: ExitSlot,
    /// Held open for the terminal's life (`Child::wait` would close it).
    _input: Option<std::process::ChildStdin>,
}

/// The editor's side of `terminal/*`, running what pablo asks for real, the way an editor
/// does: the program and arguments as given, in the given directory, with the editor's own
/// environment (plus [`EDITOR_SECRET`]) — so only pablo's `env -i` keeps it out.
struct TerminalHost {
    terms: HashMap<String, Term>,
    next: u32,
    /// The most output a terminal keeps, whatever pablo asks (an editor may keep less).
    keep_at_most: usize,
    /// Refuse `terminal/create` with this message.
    refuse_create: Option<&'static str>,
    /// Fail every `terminal/wait_for_exit`.
    refuse_wait: bool,
    /// Send `session/cancel` for this session once a terminal is created.
    cancel_after_create: Option<String>,
    /// Send `session/cancel` for this session before answering `terminal/create`.
    cancel_before_create_answer: Option<String>,
    /// Every request from pablo, as (method, terminal id), in order.
    calls: Vec<(String, String)>,
    /// The params of each `terminal/create`.
    created: Vec<Value>,
    /// Answers made off the loop (`wait_for_exit`, answered when the command has exited).
    late_tx: tokio::sync::mpsc::UnboundedSender<Value>,
    late_rx: tokio::sync::mpsc::UnboundedReceiver<Value>,
}

impl TerminalHost {
    fn new() -> Self {
        let (late_tx, late_rx) = tokio::sync::mpsc::unbounded_channel();
        Self {
            terms: HashMap::new(),
            next: 1,
            keep_at_most: usize::MAX,
            refuse_create: None,
            refuse_wait: false,
            cancel_after_create: None,
            cancel_before_create_answer: None,
            calls: Vec::new(),
            created: Vec::new(),
            late_tx,
            late_rx,
        }
    }

    fn methods(&self) -> Vec<&str> {
        self.calls.iter().map(|(m, _)| m.as_str()).collect()
    }

    /// The answer to one request from pablo (`None`: answered later, off the loop).
    fn answer(&mut self, m: &Value) -> Option<Value> {
        let method = m["method"].as_str().unwrap().to_string();
        let id = m["id"].clone();
        let terminal = m["params"]["terminalId"].as_str().unwrap_or("").to_string();
        self.calls.push((method.clone(), terminal.clone()));
        let ok = |result: Value| Some(json!({"jsonrpc": "2.0", "id": id, "result": result}));
        let err = |message: &str| {
            Some(json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32603, "message": message}}))
        };
        match method.as_str() {
            "session/request_permission" => {
                ok(json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}}))
            }
            "terminal/create" => {
                self.created.push(m["params"].clone());
                if let Some(message) = self.refuse_create {
                    return err(message);
                }
                let tid = format!("term-{}", self.next);
                self.next += 1;
                let term = self.spawn(&m["params"]);
                self.terms.insert(tid.clone(), term);
                self.calls.last_mut().unwrap().1 = tid.clone();
                ok(json!({"terminalId": tid}))
            }
            _ => {
                let Some(term) = self.terms.get(&terminal) else {
                    return err("no such terminal");
                };
                match method.as_str() {
                    "terminal/output" => {
                        let s = term.screen.lock().unwrap();
                        let exit = term.exit.0.lock().unwrap().map(exit_json);
                        ok(json!({"output": String::from_utf8_lossy(&s.bytes),
                            "truncated": s.truncated, "exitStatus": exit}))
                    }
                    "terminal/wait_for_exit" if self.refuse_wait => {
                        err("this editor cannot wait for commands")
                    }
                    "terminal/wait_for_exit" => {
                        let (exit, tx) = (term.exit.clone(), self.late_tx.clone());
                        std::thread::spawn(move || {
                            let (lock, cv) = &*exit;
                            let mut g = lock.lock().unwrap();
                            while g.is_none() {
                                g = cv.wait(g).unwrap();
                            }
                            let status = g.unwrap();
                            let _ = tx.send(json!({"jsonrpc": "2.0", "id": id,
                                "result": exit_json(status)}));
                        });
                        None
                    }
                    "terminal/kill" => {
                        kill_group(term.pid);
                        ok(json!({}))
                    }
                    "terminal/release" => {
                        // Releasing also ends a command that is still running.
                        kill_group(term.pid);
                        self.terms.remove(&terminal);
                        ok(json!({}))
                    }
                    other => panic!("unexpected request from pablo: {other}"),
                }
            }
        }
    }

    fn spawn(&self, p: &Value) -> Term {
        let args: Vec<&str> = p["args"]
            .as_array()
            .map(|a| a.iter().map(|x| x.as_str().unwrap()).collect())
            .unwrap_or_default();
        let limit = p["outputByteLimit"]
            .as_u64()
            .map_or(usize::MAX, |l| l as usize)
            .min(self.keep_at_most);
        let mut child = std::process::Command::new(p["command"].as_str().unwrap())
            .args(&args)
            .current_dir(p["cwd"].as_str().unwrap())
            .env(EDITOR_SECRET, "the editor's own environment")
            // A terminal's input stays open and nobody types: only pablo can close it.
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let input = child.stdin.take();
        let screen = Arc::new(Mutex::new(Screen::default()));
        let outputs: Vec<Box<dyn Read + Send>> = vec![
            Box::new(child.stdout.take().unwrap()),
            Box::new(child.stderr.take().unwrap()),
        ];
        let readers: Vec<_> = outputs
            .into_iter()
            .map(|mut r| {
                let screen = screen.clone();
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 64 * 1024];
                    while let Ok(n) = r.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        let mut s = screen.lock().unwrap();
                        s.bytes.extend_from_slice(&buf[..n]);
                        if s.bytes.len() > limit {
                            let cut = s.bytes.len() - limit;
                            s.bytes.drain(..cut);
                            s.truncated = true;
                        }
                    }
                })
            })
            .collect();
        let exit: ExitSlot = Arc::new((Mutex::new(None), Condvar::new()));
        let pid = child.id() as i32;
        let slot = exit.clone();
        std::thread::spawn(move || {
            let status = child.wait().unwrap();
            for r in readers {
                let _ = r.join();
            }
            *slot.0.lock().unwrap() = Some(status);
            slot.1.notify_all();
        });
        Term {
            pid,
            screen,
            exit,
            _input: input,
        }
    }
}

fn kill_group(pid: i32) {
    if let Some(p) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
    }
}

fn exit_json(status: ExitStatus) -> Value {
    let signal = status.signal().map(|s| match s {
        9 => "SIGKILL".to_string(),
        15 => "SIGTERM".to_string(),
        n => format!("SIG{n}"),
    });
    json!({"exitCode": status.code(), "signal": signal})
}

/// Reads until the answer to `id`, recording updates and answering pablo's requests with
/// `host` (permission requests with allow_once).
async fn drive<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    rpc: &mut Rpc<R, W>,
    host: &mut TerminalHost,
    id: u64,
) -> Value {
    loop {
        tokio::select! {
            m = rpc.next() => {
                if m.get("method").is_none() {
                    assert_eq!(m["id"], json!(id), "unexpected response: {m}");
                    return m;
                }
                if m["method"] == "session/update" {
                    rpc.updates.push(m["params"].clone());
                    continue;
                }
                if m.get("id").is_none() {
                    continue; // a notification, e.g. `$/cancel_request` for a dropped wait
                }
                rpc.agent_requests.push(m.clone());
                let created = m["method"] == "terminal/create";
                if created && let Some(session) = host.cancel_before_create_answer.take() {
                    rpc.notify("session/cancel", json!({"sessionId": session})).await;
                }
                if let Some(reply) = host.answer(&m) {
                    rpc.send(&reply).await;
                }
                if created && let Some(session) = host.cancel_after_create.take() {
                    rpc.notify("session/cancel", json!({"sessionId": session})).await;
                }
            }
            Some(reply) = host.late_rx.recv() => rpc.send(&reply).await,
        }
    }
}

/// A `--config` file that sends commands to the editor's terminal although that terminal is
/// outside pablo's sandbox (by default they run locally, sandboxed).
fn editor_terminals_config(env: &Env) -> LaunchOptions {
    let path = env.xdg.join("editor-terminals.toml");
    std::fs::write(&path, "[options.shell]\neditor_terminals = true\n").unwrap();
    LaunchOptions {
        config: Some(path),
        ..LaunchOptions::default()
    }
}

/// A session whose client advertised `caps`, with one `shell_run` call of `args`, with
/// commands going to the editor's terminal.
async fn start(caps: Value, args: Value) -> (InProcess, String) {
    let env = Env::new();
    let options = editor_terminals_config(&env);
    start_with(caps, args, env, options).await
}

async fn start_with(
    caps: Value,
    args: Value,
    env: Env,
    options: LaunchOptions,
) -> (InProcess, String) {
    let mut t = InProcess::start_with(
        env,
        vec![
            vec![
                Step::Call("call_t", "shell_run", args),
                Step::Done(ModelStopReason::ToolUse),
            ],
            vec![Step::Text("ran"), Step::Done(ModelStopReason::EndTurn)],
        ],
        None,
        options,
    );
    t.rpc.initialize_with(caps).await;
    let ws = t.env.workspace.clone();
    let session = t.rpc.new_session(&ws).await;
    (t, session)
}

/// The last update of the call: its final status, content and raw output.
fn final_update(t: &InProcess) -> Value {
    t.rpc
        .updates
        .iter()
        .map(|u| &u["update"])
        .rfind(|u| u["toolCallId"] == "call_t" && u.get("rawOutput").is_some())
        .cloned()
        .unwrap_or_else(|| panic!("no final update: {:?}", t.rpc.updates))
}

/// What the model read as the call's result (the message of the second model request).
fn model_read(t: &InProcess) -> String {
    let requests = t.model.requests.lock().unwrap();
    format!("{:?}", requests[1].messages.last().unwrap())
}

/// The editor's terminal is outside pablo's sandbox: with the default config the command
/// runs locally, sandboxed, and the editor is only asked for permission.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_sandbox_on_a_command_runs_locally_not_in_the_editor_s_terminal() {
    // (the commands of these tests ask: `expr`, `seq` and `env -u` are no known-safe reads,
    // which never run in an editor's terminal)
    let (mut t, session) = start_with(
        terminal_caps(),
        json!({"command": "expr local"}),
        Env::new(),
        LaunchOptions::default(),
    )
    .await;
    let mut host = TerminalHost::new();
    let id = t.prompt(&session, "run it").await;
    let r = drive(&mut t.rpc, &mut host, id).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(host.methods(), ["session/request_permission"]);
    let read = model_read(&t);
    assert!(read.contains("local"), "{read}");
    assert!(read.contains("workspace-write"), "{read}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_runs_in_the_editor_s_terminal_after_permission_and_its_result_reaches_the_model()
{
    let (mut t, session) = start(
        terminal_caps(),
        json!({"command": "seq 0; printf 'to-out\\n'; printf 'to-err\\n' >&2; exit 3"}),
    )
    .await;
    let mut host = TerminalHost::new();
    let id = t.prompt(&session, "run it").await;
    let r = drive(&mut t.rpc, &mut host, id).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    // Asked first, then created, waited on, read and released — in that order.
    assert_eq!(
        host.methods(),
        [
            "session/request_permission",
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/output",
            "terminal/release"
        ]
    );
    let tid = host.calls[1].1.clone();
    assert_eq!(host.calls[4].1, tid);
    // The editor was handed a program and arguments: env -i, the clean environment, then
    // the launcher with -c and exactly the command.
    let p = &host.created[0];
    assert!(p["command"].as_str().unwrap().ends_with("/env"), "{p}");
    let args: Vec<&str> = p["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args[0], "-i");
    assert_eq!(
        &args[args.len() - 3..],
        [
            "/bin/sh",
            "-c",
            "seq 0; printf 'to-out\\n'; printf 'to-err\\n' >&2; exit 3"
        ]
    );
    assert_eq!(p["cwd"], json!(t.env.workspace));
    assert_eq!(p["outputByteLimit"], 5_000_000);
    assert_eq!(p["sessionId"], json!(session));
    // The editor embeds its terminal in the call, up to the final update.
    let embeds = |u: &Value| {
        u["content"].as_array().is_some_and(|c| {
            c.iter()
                .any(|b| b["type"] == "terminal" && b["terminalId"] == json!(tid))
        })
    };
    let first_embed = t
        .rpc
        .updates
        .iter()
        .map(|u| &u["update"])
        .find(|u| u["sessionUpdate"] == "tool_call_update" && embeds(u));
    assert!(first_embed.is_some(), "{:?}", t.rpc.updates);
    let last = final_update(&t);
    assert_eq!(last["status"], "completed", "{last}");
    assert!(embeds(&last), "{last}");
    // The model read the exit code, both streams and the terminal's id.
    let data = &last["rawOutput"]["data"];
    assert_eq!(data["exit_code"], 3, "{data}");
    assert_eq!(data["timed_out"], false);
    assert_eq!(data["truncated"], false);
    assert_eq!(data["terminal"], json!(tid));
    let output = data["output"].as_str().unwrap();
    assert!(
        output.contains("to-out\n") && output.contains("to-err\n"),
        "{output}"
    );
    assert!(data.get("editor_truncated").is_none(), "{data}");
    let read = model_read(&t);
    assert!(read.contains("to-out") && read.contains(&tid), "{read}");
    t.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_terminal_command_sees_only_the_clean_environment_and_its_task_variables() {
    let (mut t, session) = start(
        terminal_caps(),
        json!({"command": "env -u NOPE", "env": {"PABLO_TASK_GREETING": "hello there"}}),
    )
    .await;
    let mut host = TerminalHost::new();
    let id = t.prompt(&session, "show the environment").await;
    let r = drive(&mut t.rpc, &mut host, id).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert!(host.methods().contains(&"terminal/create"));
    let data = &final_update(&t)["rawOutput"]["data"];
    assert_eq!(data["exit_code"], 0, "{data}");
    let mut names: Vec<&str> = data["output"]
        .as_str()
        .unwrap()
        .lines()
        .map(|l| l.split('=').next().unwrap())
        .collect();
    names.sort_unstable();
    // Nothing of the editor's environment (its secret, HOME, the test's XDG variables): exactly
    // the command environment pablo computes from its own (toolchain variables, no secrets),
    // the task variable, TERM, and PWD, which is the shell's own.
    let base = pablo::process::CommandEnv::from_process(&Default::default());
    let mut expected: Vec<&str> = base.vars().iter().map(|(k, _)| k.as_str()).collect();
    expected.extend(["PABLO_TASK_GREETING", "PWD", "TERM"]);
    expected.sort_unstable();
    assert_eq!(names, expected, "{data}");
    assert!(!names.contains(&"HOME"), "{data}");
    let output = data["output"].as_str().unwrap();
    assert!(
        output.contains(&format!("PWD={}\n", t.env.workspace.display())),
        "{output}"
    );
    assert!(
        output.contains("PABLO_TASK_GREETING=hello there\n"),
        "{output}"
    );
    assert!(output.contains("TERM=dumb\n"), "{output}");
    assert!(!output.contains(EDITOR_SECRET));
    t.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_reading_stdin_in_the_terminal_gets_end_of_file_at_once() {
    let (mut t, session) = start(
        terminal_caps(),
        json!({"command": "cat; read line || echo no input", "timeout_ms": 20_000}),
    )
    .await;
    let mut host = TerminalHost::new();
    let id = t.prompt(&session, "read input").await;
    let r = drive(&mut t.rpc, &mut host, id).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert!(host.methods().contains(&"terminal/create"));
    let data = &final_update(&t)["rawOutput"]["data"];
    assert_eq!(data["timed_out"], false, "{data}");
    assert_eq!(data["exit_code"], 0, "{data}");
    assert_eq!(data["output"], "no input\n", "{data}");
    t.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_past_its_timeout_is_killed_through_the_editor_and_the_terminal_released() {
    let (mut t, session) = start(
        terminal_caps(),
        json!({"command": "echo started; sleep 30", "timeout_ms": 300}),
    )
    .await;
    let mut host = TerminalHost::new();
    let id = t.prompt(&session, "wait a while").await;
    let r = drive(&mut t.rpc, &mut host, id).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let methods = host.methods();
    let kill = methods.iter().position(|m| *m == "terminal/kill");
    let release = methods.iter().position(|m| *m == "terminal/release");
    assert!(
        kill.is_some() && release.is_some() && kill < release,
        "{methods:?}"
    );
    assert!(host.terms.is_empty(), "a terminal was not released");
    let last = final_update(&t);
    let data = &last["rawOutput"]["data"];
    assert_eq!(data["timed_out"], true, "{data}");
    assert_eq!(data["signal"], "SIGKILL", "{data}");
    assert!(data["exit_code"].is_null(), "{data}");
    assert!(
        data["output"].as_str().unwrap().contains("started"),
        "{data}"
    );
    assert!(
        data["note"].as_str().unwrap().contains("cannot check"),
        "{data}"
    );
    t.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_terminal_output_keeps_forty_sixty_inline_and_spills_the_artifact() {
    let (mut t, session) = start(
        terminal_caps(),
        json!({"command": "seq 1 30000", "max_output_bytes": 1000}),
    )
    .await;
    let mut host = TerminalHost::new();
    let id = t.prompt(&session, "count").await;
    let r = drive(&mut t.rpc, &mut host, id).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let full: String = (1..=30000).map(|i| format!("{i}\n")).collect();
    let data = final_update(&t)["rawOutput"]["data"].clone();
    assert_eq!(data["truncated"], true, "{data}");
    assert_eq!(data["total_bytes"], full.len() as u64);
    let output = data["output"].as_str().unwrap();
    let notice = format!(
        "\n[OUTPUT TRUNCATED - {} chars omitted out of {} total]\n",
        full.len() - 1000,
        full.len()
    );
    let (head, tail) = output.split_once(&notice).expect("the truncation notice");
    assert_eq!(head, &full[..400]);
    assert_eq!(tail, &full[full.len() - 600..]);
    let artifact = data["artifact"].as_str().expect("an artifact");
    assert_eq!(std::fs::read_to_string(artifact).unwrap(), full);
    assert!(data.get("editor_truncated").is_none());
    t.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_the_editor_cut_short_is_reported_as_editor_truncated() {
    let (mut t, session) = start(
        terminal_caps(),
        json!({"command": "seq 1 30000", "max_output_bytes": 1000}),
    )
    .await;
    let mut host = TerminalHost::new();
    host.keep_at_most = 10_000;
    let id = t.prompt(&session, "count").await;
    let r = drive(&mut t.rpc, &mut host, id).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    let data = final_update(&t)["rawOutput"]["data"].clone();
    assert_eq!(data["editor_truncated"], true, "{data}");
    assert_eq!(data["total_bytes"], 10_000, "{data}");
    assert!(
        data["note"]
            .as_str()
            .unwrap()
            .contains("dropped the beginning"),
        "{data}"
    );
    // The kept end is still the command's end.
    assert!(data["output"].as_str().unwrap().ends_with("29999\n30000\n"));
    t.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_that_refuses_the_terminal_fails_the_call_with_editor_terminal_failed() {
    let (mut t, session) = start(terminal_caps(), json!({"command": "touch made-here"})).await;
    let mut host = TerminalHost::new();
    host.refuse_create = Some("no terminals in this window");
    let id = t.prompt(&session, "make a file").await;
    let r = drive(&mut t.rpc, &mut host, id).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(
        host.methods(),
        ["session/request_permission", "terminal/create"]
    );
    let last = final_update(&t);
    assert_eq!(last["status"], "failed", "{last}");
    let error = &last["rawOutput"]["error"];
    assert_eq!(error["code"], "editor_terminal_failed", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("no terminals in this window"),
        "{error}"
    );
    // Nothing ran: pablo did not fall back to running the command itself.
    assert!(!t.env.workspace.join("made-here").exists());
    assert!(model_read(&t).contains("editor_terminal_failed"));
    t.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_failing_the_wait_fails_the_call_after_killing_and_releasing_the_terminal() {
    let (mut t, session) = start(terminal_caps(), json!({"command": "sleep 30"})).await;
    let mut host = TerminalHost::new();
    host.refuse_wait = true;
    let id = t.prompt(&session, "wait").await;
    let r = drive(&mut t.rpc, &mut host, id).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(
        host.methods(),
        [
            "session/request_permission",
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/kill",
            "terminal/release"
        ]
    );
    assert!(host.terms.is_empty(), "a terminal was not released");
    let error = &final_update(&t)["rawOutput"]["error"];
    assert_eq!(error["code"], "editor_terminal_failed", "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("wait for its command")
            && message.contains("this editor cannot wait for commands"),
        "{message}"
    );
    t.finish().await;
}

/// Whether the cancel lands once the terminal exists or while the editor is still creating
/// it, the command is killed, the terminal released, and the model reads how it ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_turn_kills_and_releases_the_terminal_whenever_the_cancel_lands() {
    for before_create_answer in [false, true] {
        let (mut t, session) = start(terminal_caps(), json!({"command": "sleep 30"})).await;
        let mut host = TerminalHost::new();
        if before_create_answer {
            host.cancel_before_create_answer = Some(session.clone());
        } else {
            host.cancel_after_create = Some(session.clone());
        }
        let id = t.prompt(&session, "wait").await;
        let r = drive(&mut t.rpc, &mut host, id).await;
        let case = format!("cancel before the create answer: {before_create_answer}");
        assert_eq!(r["result"]["stopReason"], "cancelled", "{case}: {r}");
        let methods = host.methods();
        assert!(methods.contains(&"terminal/kill"), "{case}: {methods:?}");
        assert_eq!(
            methods.last(),
            Some(&"terminal/release"),
            "{case}: {methods:?}"
        );
        assert!(host.terms.is_empty(), "{case}: a terminal was not released");
        let error = &final_update(&t)["rawOutput"]["error"];
        assert_eq!(error["code"], "cancelled", "{case}: {error}");
        assert_eq!(error["data"]["signal"], "SIGKILL", "{case}: {error}");
        assert!(error["data"]["terminal"].is_string(), "{case}: {error}");
        t.finish().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_terminals_still_runs_the_command_locally() {
    let (mut t, session) = start(
        json!({"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}),
        json!({"command": "expr here | tr -d '\\n'"}),
    )
    .await;
    let mut host = TerminalHost::new();
    let id = t.prompt(&session, "run it").await;
    let r = drive(&mut t.rpc, &mut host, id).await;
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    assert_eq!(host.methods(), ["session/request_permission"]);
    let data = final_update(&t)["rawOutput"]["data"].clone();
    assert_eq!(data["output"], "here", "{data}");
    assert!(data.get("terminal").is_none(), "{data}");
    t.finish().await;
}
