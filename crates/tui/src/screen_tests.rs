//! Snapshots and checks of what the screen says while a turn waits, how the status line gives
//! way when it is narrow, how `/help` lines up, how a table and an answered prompt look. The
//! `.snap` files live in the top-level `snapshots/` folder.

use std::time::{Duration, Instant};

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::snapshot_tests::draw;
use super::state::{AppState, Setup};
use pablo_protocol::*;

macro_rules! snap {
    ($name:expr, $value:expr) => {
        insta::with_settings!({snapshot_path => "../../../snapshots", prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!($name, $value);
        })
    };
}

fn state(inline: bool) -> (AppState, Instant) {
    let t0 = Instant::now();
    let mut s = AppState::with_setup(
        t0,
        Setup {
            workspace: "~/src/projects/stats-and-more".into(),
            policy_mode: "edits ask · commands ask · sandboxed".into(),
            inline,
            ..Setup::default()
        },
    );
    s.tick(t0, 1_700_000_100_000);
    s.apply(Event::SessionStarted {
        session_id: "0190a1b2".into(),
        provider: "openai".into(),
        model: "gpt-test".into(),
        workspace: "/home/me/src/projects/stats-and-more".into(),
    });
    (s, t0)
}

/// The last line of a drawn screen, without the quotes `TestBackend` puts around it.
fn status_line(s: &mut AppState, w: u16) -> String {
    let screen = draw(s, w, 6);
    screen
        .lines()
        .last()
        .unwrap_or_default()
        .trim_matches('"')
        .trim_end()
        .to_string()
}

fn running_session() -> SessionSummary {
    SessionSummary {
        session_id: "s1".into(),
        command: "sh tick.sh".into(),
        running: true,
        exit_code: None,
        pty: false,
        started_ms: 1_700_000_000_000,
    }
}

#[test]
fn a_narrow_status_line_drops_the_path_first_and_never_the_mode_or_the_background_count() {
    let (mut s, _) = state(false);
    s.apply(Event::ModeChanged {
        mode: WorkMode::AutoEdit,
    });
    s.clear_hint();
    s.apply(Event::Sessions {
        sessions: vec![running_session()],
    });
    s.apply(Event::ContextUsage {
        used_tokens: 42_000,
        window_tokens: 100_000,
        cost_usd: Some(0.049),
    });
    let widths = [140u16, 110, 90, 70, 50, 36];
    let lines: Vec<String> = widths
        .iter()
        .map(|w| format!("{w:>3}: {}", status_line(&mut s, *w)))
        .collect();
    for (w, l) in widths.iter().zip(&lines) {
        assert!(l.contains("auto-edit"), "the mode at {w}: {l}");
        assert!(l.contains("1 bg"), "the background count at {w}: {l}");
    }
    // The path goes before anything else.
    assert!(!lines[1].contains("stats-and-more"), "{}", lines[1]);
    assert!(lines[1].contains("$0.049"), "{}", lines[1]);
    snap!("status_line_narrow", lines.join("\n"));
}

#[test]
fn a_retry_shows_in_the_status_line_with_its_countdown_attempt_reason_and_the_key_to_give_up() {
    let (mut s, t0) = state(false);
    s.apply(Event::UserMessage {
        text: "hello".into(),
    });
    s.apply(Event::Retry {
        attempt: 2,
        max_attempts: 5,
        wait_ms: 12_000,
        reason: "503 from api.example.com".into(),
        code: "model_http_error".into(),
    });
    s.set_now(t0 + Duration::from_millis(3_200));
    let line = status_line(&mut s, 120);
    assert!(
        line.contains("retrying in 9 s, attempt 2 of 5: 503 from api.example.com · esc gives up"),
        "{line}"
    );
    snap!("status_line_retry", line);
    // The answer's first words end the wait.
    s.apply(Event::MessageDelta {
        text: "Hello".into(),
    });
    let line = status_line(&mut s, 120);
    assert!(line.contains("working 3 s"), "{line}");
    assert!(!line.contains("retrying"), "{line}");
}

#[test]
fn a_markdown_table_renders_as_a_table() {
    let (mut s, _) = state(false);
    s.apply(Event::UserMessage {
        text: "compare them".into(),
    });
    s.apply(Event::MessageCompleted {
        text: "Here they are:\n\n| tool | reads | writes |\n|---|:---:|---:|\n| `fs.read` | yes | no |\n| `fs.write` | no | **yes** |\n\nThat is all."
            .into(),
        tool_calls: vec![],
    });
    s.apply(Event::TurnCompleted {
        stop_reason: StopReason::EndTurn,
        usage: Usage::default(),
        model_calls: Some(1),
    });
    snap!("answer_with_table", draw(&mut s, 70, 16));
}

#[test]
fn help_lines_start_with_their_command_and_descriptions_share_a_column_two_spaces_after_the_longest()
 {
    let (mut s, _) = state(false);
    s.submit("/help".into());
    let screen = draw(&mut s, 140, 70);
    let rows: Vec<&str> = screen
        .lines()
        .map(|l| l.trim_matches('"'))
        .filter(|l| l.starts_with("   /"))
        .collect();
    assert_eq!(rows.len(), super::commands::COMMANDS.len(), "{screen}");
    let longest = super::commands::COMMANDS
        .iter()
        .map(|c| {
            if c.args.is_empty() {
                c.name.len() + 1
            } else {
                c.name.len() + c.args.len() + 2
            }
        })
        .max()
        .unwrap_or(0);
    // One space of margin and two of indent before the command.
    let column = 3 + longest + 2;
    for (row, c) in rows.iter().zip(super::commands::COMMANDS) {
        let chars: Vec<char> = row.chars().collect();
        assert!(row[3..].starts_with(&format!("/{}", c.name)), "{row}");
        assert_eq!(chars[column - 1], ' ', "{row}");
        assert_eq!(chars[column - 2], ' ', "{row}");
        assert_ne!(chars[column], ' ', "{row}");
    }
}

#[test]
fn an_answered_prompt_leaves_its_decision_in_the_past_tense_in_the_tools_cell() {
    let (mut s, _) = state(false);
    s.apply(Event::UserMessage {
        text: "fix it".into(),
    });
    for (id, answer) in [
        ("c1", ApprovalAnswer::AllowOnce),
        (
            "c2",
            ApprovalAnswer::Reject {
                note: Some("use make test".into()),
            },
        ),
    ] {
        s.apply(Event::ToolCallBegin {
            call_id: id.into(),
            tool: "shell.run".into(),
            arguments: serde_json::json!({"command": "sh tests/run.sh"}),
        });
        s.apply(Event::ApprovalRequest {
            call_id: id.into(),
            tool: "shell.run".into(),
            preview: Preview::Command(CommandPreview {
                command: "sh tests/run.sh".into(),
                cwd: ".".into(),
                background: false,
                pty: false,
                commands: vec![],
                sandbox: None,
            }),
            verdict: Verdict::ask("builtin.ask", "commands ask"),
        });
        s.handle_key(KeyEvent::new(
            KeyCode::Char(if id == "c1" { 'y' } else { 'n' }),
            KeyModifiers::NONE,
        ));
        if id == "c2" {
            for c in "use make test".chars() {
                s.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
            }
            s.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
        }
        let Some(Op::Approval { answer: sent, .. }) = s.take_ops().pop() else {
            panic!("no answer sent");
        };
        assert_eq!(sent, answer);
        s.apply(Event::ApprovalResolved {
            call_id: id.into(),
            answer,
        });
    }
    let screen = draw(&mut s, 80, 14);
    assert!(screen.contains("└ allowed once"), "{screen}");
    assert!(screen.contains("└ rejected: use make test"), "{screen}");
    assert!(!screen.contains("[y] Allow once"), "{screen}");
}

#[test]
fn a_tools_duration_counts_its_run_not_the_time_its_prompt_was_open() {
    let (mut s, t0) = state(false);
    s.apply(Event::UserMessage {
        text: "write it".into(),
    });
    s.apply(Event::ToolCallBegin {
        call_id: "w".into(),
        tool: "fs.write".into(),
        arguments: serde_json::json!({"path": "a.txt"}),
    });
    let preview = Preview::Read {
        path: "a.txt".into(),
    };
    s.apply(Event::ApprovalRequest {
        call_id: "w".into(),
        tool: "fs.write".into(),
        preview: preview.clone(),
        verdict: Verdict::ask("builtin.ask", "edits ask"),
    });
    // The person looks at the prompt for half a minute.
    s.set_now(t0 + Duration::from_secs(30));
    s.apply(Event::ApprovalResolved {
        call_id: "w".into(),
        answer: ApprovalAnswer::AllowOnce,
    });
    s.apply(Event::ToolCallRunning {
        call_id: "w".into(),
        preview,
    });
    s.set_now(t0 + Duration::from_millis(31_500));
    s.apply(Event::ToolCallEnd {
        call_id: "w".into(),
        tool: "fs.write".into(),
        result: ToolOutcome::ok(serde_json::json!({"path": "a.txt"})),
    });
    let screen = draw(&mut s, 80, 12);
    assert!(screen.contains("✓ fs.write a.txt  (1.5s)"), "{screen}");
}

/// A subagent's events as they arrive for the `agent.task` call `task`.
fn subagent_events(s: &mut AppState) {
    s.apply(Event::UserMessage {
        text: "look around".into(),
    });
    s.apply(Event::ToolCallBegin {
        call_id: "task".into(),
        tool: "agent.task".into(),
        arguments: serde_json::json!({"description": "map the parser", "prompt": "How does parsing work?"}),
    });
    s.apply(Event::ToolCallRunning {
        call_id: "task".into(),
        preview: Preview::Internal,
    });
    s.apply(Event::SubagentStarted {
        call_id: "task".into(),
        agent: "general".into(),
        description: "map the parser".into(),
        model: "gpt-test".into(),
    });
    let inner = |event| Event::Subagent {
        call_id: "task".into(),
        event: Box::new(event),
    };
    s.apply(inner(Event::ToolCallBegin {
        call_id: "r1".into(),
        tool: "fs.read".into(),
        arguments: serde_json::json!({"path": "src/parse.rs"}),
    }));
    s.apply(inner(Event::Usage {
        last: Usage::default(),
        total: Usage {
            input_tokens: 1200,
            output_tokens: 34,
            ..Usage::default()
        },
    }));
}

#[test]
fn a_subagents_cell_shows_its_label_its_current_call_and_its_tokens_and_then_what_it_did() {
    let (mut s, _) = state(false);
    subagent_events(&mut s);
    let screen = draw(&mut s, 100, 12);
    assert!(
        screen.contains("agent.task general: map the parser"),
        "{screen}"
    );
    assert!(
        screen.contains("1.2k tokens · fs.read src/parse.rs"),
        "{screen}"
    );
    assert!(screen.contains("→ fs.read src/parse.rs"), "{screen}");
    s.apply(Event::SubagentFinished {
        call_id: "task".into(),
        stop_reason: StopReason::EndTurn,
        usage: Usage {
            input_tokens: 2000,
            output_tokens: 100,
            ..Usage::default()
        },
        tool_calls: 1,
        elapsed_ms: 1500,
    });
    s.apply(Event::ToolCallEnd {
        call_id: "task".into(),
        tool: "agent.task".into(),
        result: ToolOutcome::ok(serde_json::json!({"agent": "general",
            "answer": "Parsing is in src/parse.rs.", "tool_calls": 1, "model_calls": 2})),
    });
    let screen = draw(&mut s, 100, 12);
    assert!(screen.contains("1 tool call · 2.1k tokens"), "{screen}");
    assert!(screen.contains("Parsing is in src/parse.rs."), "{screen}");
}

#[test]
fn a_subagents_approval_names_the_subagent_and_its_call() {
    let (mut s, _) = state(false);
    subagent_events(&mut s);
    s.apply(Event::Subagent {
        call_id: "task".into(),
        event: Box::new(Event::ToolCallBegin {
            call_id: "e1".into(),
            tool: "shell.run".into(),
            arguments: serde_json::json!({"command": "make lint"}),
        }),
    });
    s.apply(Event::ApprovalRequest {
        call_id: "task/e1".into(),
        tool: "shell.run".into(),
        preview: Preview::Command(CommandPreview {
            command: "make lint".into(),
            cwd: ".".into(),
            background: false,
            pty: false,
            commands: vec![],
            sandbox: None,
        }),
        verdict: Verdict::ask("builtin.ask", "commands ask"),
    });
    let screen = draw(&mut s, 100, 24);
    assert!(
        screen.contains("asked by the subagent general: map the parser"),
        "{screen}"
    );
    s.handle_key(KeyEvent::new(KeyCode::Char('y'), KeyModifiers::NONE));
    let Some(Op::Approval { call_id, .. }) = s.take_ops().pop() else {
        panic!("no answer sent");
    };
    assert_eq!(call_id, "task/e1");
}

#[test]
fn a_resumed_long_session_replays_its_newest_cells_after_a_note_saying_how_many_went() {
    let (mut s, t0) = state(true);
    let mut events = Vec::new();
    for i in 0..1_000 {
        events.push(Event::UserMessage {
            text: format!("question {i}"),
        });
        events.push(Event::MessageCompleted {
            text: format!("answer {i}"),
            tool_calls: vec![],
        });
    }
    s.replay(events);
    let lines: Vec<String> = s
        .transcript_mut()
        .take_finished(100, t0, true)
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect();
    let text = lines.join("\n");
    assert!(
        lines[0].contains("earlier entries of this session are not shown here; /export"),
        "{text}"
    );
    assert!(text.contains("answer 999"), "{text}");
    assert!(
        !text.contains("question 0\n") && !text.contains("answer 0\n"),
        "{text}"
    );
    let shown = lines.iter().filter(|l| l.contains("answer ")).count();
    assert!((250..=300).contains(&shown), "{shown} answers shown");
}

/// A session of `turns` turns as its journal holds it: a prompt, a file read (its result a whole
/// file), a checklist, usage, the answer.
fn journal_of(turns: usize) -> Vec<Event> {
    let mut events = vec![Event::SessionStarted {
        session_id: "0190a1b2".into(),
        provider: "openai".into(),
        model: "gpt-test".into(),
        workspace: "/home/me/src/projects/stats-and-more".into(),
    }];
    for i in 0..turns {
        let call_id = format!("c{i}");
        events.extend([
            Event::UserMessage {
                text: format!("look at module {i}"),
            },
            Event::ToolCallBegin {
                call_id: call_id.clone(),
                tool: "fs.read".into(),
                arguments: serde_json::json!({"path": format!("src/m{i}.rs")}),
            },
            Event::ToolCallEnd {
                call_id,
                tool: "fs.read".into(),
                result: ToolOutcome::ok(serde_json::json!({
                    "path": format!("src/m{i}.rs"),
                    "text": "fn f() {}\n".repeat(50),
                    "offset": 0,
                    "total_bytes": 500,
                    "revision": "ab",
                })),
            },
            Event::PlanUpdate {
                explanation: None,
                items: vec![PlanItem {
                    content: format!("step {i}"),
                    status: PlanStatus::Completed,
                }],
            },
            Event::MessageCompleted {
                text: format!("module {i} is fine"),
                tool_calls: vec![],
            },
            Event::TurnCompleted {
                stop_reason: StopReason::EndTurn,
                usage: Usage::default(),
                model_calls: Some(1),
            },
        ]);
    }
    events
}

#[test]
fn a_journal_given_to_the_screen_as_it_is_read_shows_what_replaying_it_whole_shows() {
    let t0 = Instant::now();
    let workspace = std::path::Path::new("/home/me/src/projects/stats-and-more");
    let options = super::TuiOptions {
        policy_mode: "edits ask · commands ask · sandboxed".into(),
        resume_command: Some("pablo resume 0190a1b2".into()),
        ..Default::default()
    };
    let warnings = vec![Event::Warning {
        message: "a launch warning, after the journal".into(),
    }];
    let screens = |s: &mut AppState| {
        s.tick(t0, 1_700_000_100_000);
        let scrollback: Vec<String> = s
            .transcript_mut()
            .take_finished(100, t0, true)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        (scrollback, draw(s, 100, 30))
    };
    // Before: the whole journal, then the warnings, replayed by a screen made with every setting.
    let mut whole = AppState::with_setup(t0, super::setup_of(workspace, &options));
    whole.replay(journal_of(700).into_iter().chain(warnings.clone()));
    // Now: the screen is made before the agent's policy is known, takes the journal an event at
    // a time, then the rest of its settings and the warnings.
    let early = super::TuiOptions {
        policy_mode: String::new(),
        ..options.clone()
    };
    let mut replay = super::Replay::new(workspace, &early);
    for event in journal_of(700) {
        replay.push(event);
    }
    let mut streamed = replay.state;
    streamed.settle_setup(t0, &super::setup_of(workspace, &options));
    for event in warnings {
        streamed.apply(event);
    }
    streamed.end_replay();
    let (whole_lines, whole_screen) = screens(&mut whole);
    let (streamed_lines, streamed_screen) = screens(&mut streamed);
    assert!(whole_lines[0].contains("earlier entries of this session are not shown here"));
    assert_eq!(streamed_lines, whole_lines);
    assert_eq!(streamed_screen, whole_screen);
    assert!(whole_screen.contains("edits ask"), "{whole_screen}");
}
