//! Snapshots of every user-visible state, drawn on ratatui's `TestBackend` at fixed sizes. The
//! `.snap` files live in the top-level `snapshots/` folder.

use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;

use super::state::{AppState, Setup};
use super::view;
use pablo_protocol::*;

fn state() -> (AppState, Instant) {
    state_with("ask before edits and commands", false)
}

/// A state with this policy label in the status line, inline or full-screen.
fn state_with(policy_mode: &str, inline: bool) -> (AppState, Instant) {
    let t0 = Instant::now();
    let mut s = AppState::with_setup(
        t0,
        Setup {
            workspace: "~/src/stats".into(),
            policy_mode: policy_mode.into(),
            inline,
            ..Setup::default()
        },
    );
    s.tick(t0, 1_700_000_100_000);
    s.apply(Event::SessionStarted {
        session_id: "0190a1b2".into(),
        provider: "openai".into(),
        model: "gpt-test".into(),
        workspace: "/home/me/src/stats".into(),
    });
    (s, t0)
}

/// The state drawn on a `w`×`h` test terminal, as text (also the screen tests' way to draw).
pub(super) fn draw(s: &mut AppState, w: u16, h: u16) -> String {
    let mut term = match Terminal::new(TestBackend::new(w, h)) {
        Ok(t) => t,
        Err(e) => match e {},
    };
    let area = ratatui::layout::Rect::new(0, 0, w, h);
    view::prepare(s, area);
    let drawn = term.draw(|f| f.render_widget(&*s, f.area()));
    assert!(drawn.is_ok());
    term.backend().to_string()
}

macro_rules! snap {
    ($name:expr, $value:expr) => {
        insta::with_settings!({snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/../../snapshots"), prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!($name, $value);
        })
    };
}

mod commands;
mod questions;
mod results;
mod vim;
mod web_search;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn user_turn(s: &mut AppState, text: &str) {
    s.apply(Event::UserMessage { text: text.into() });
}

pub(crate) fn two_hunk_change() -> FileChangePreview {
    let line = |tag, o: Option<usize>, n: Option<usize>, t: &str| DiffLine {
        tag,
        old_lineno: o,
        new_lineno: n,
        text: t.into(),
    };
    FileChangePreview {
        path: "bin/stats.sh".into(),
        old_revision: Some("9f2c41d0a7e3b5c6d8e9f0a1b2c3d4e5".into()),
        new_revision: "1a2b3c".into(),
        new_text: String::new(),
        diff: String::new(),
        added: 2,
        removed: 2,
        hunks: vec![
            DiffHunk {
                header: "@@ -3,5 +3,5 @@".into(),
                old_start: 3,
                old_len: 5,
                new_start: 3,
                new_len: 5,
                lines: vec![
                    line(DiffTag::Context, Some(3), Some(3), "mean() {"),
                    line(
                        DiffTag::Context,
                        Some(4),
                        Some(4),
                        "  # prints the mean of the numbers in $1",
                    ),
                    line(
                        DiffTag::Removed,
                        Some(5),
                        None,
                        "  awk '{ s += $1 } END { print int(s / (NR + 1)) }' \"$1\"",
                    ),
                    line(
                        DiffTag::Added,
                        None,
                        Some(5),
                        "  awk '{ s += $1 } END { print s / NR }' \"$1\"",
                    ),
                    line(DiffTag::Context, Some(6), Some(6), "}"),
                ],
            },
            DiffHunk {
                header: "@@ -20,3 +20,3 @@".into(),
                old_start: 20,
                old_len: 3,
                new_start: 20,
                new_len: 3,
                lines: vec![
                    line(DiffTag::Context, Some(20), Some(20), "usage() {"),
                    line(
                        DiffTag::Removed,
                        Some(21),
                        None,
                        "  echo \"stats 0.1: mean|max FILE\"",
                    ),
                    line(
                        DiffTag::Added,
                        None,
                        Some(21),
                        "  echo \"stats 0.2: mean|max FILE\"",
                    ),
                    line(DiffTag::Context, Some(22), Some(22), "}"),
                ],
            },
        ],
    }
}

fn ask(rule: &str) -> Verdict {
    let mut v = Verdict::ask(
        "builtin.tool.fs.write",
        "fs.write changes files; edits need approval",
    );
    v.always_rule = Some(rule.into());
    v
}

fn plan(s: &mut AppState) {
    s.apply(Event::PlanUpdate {
        explanation: None,
        items: vec![
            PlanItem {
                content: "Read the project and find the mean function".into(),
                status: PlanStatus::Completed,
            },
            PlanItem {
                content: "Fix the off-by-one in mean".into(),
                status: PlanStatus::InProgress,
            },
            PlanItem {
                content: "Run the tests".into(),
                status: PlanStatus::Pending,
            },
        ],
    });
}

#[test]
fn empty_start() {
    let (mut s, _) = state();
    snap!("empty_start", draw(&mut s, 80, 20));
}

#[test]
fn streaming_answer_with_markdown() {
    let (mut s, _) = state();
    user_turn(&mut s, "why do the tests fail?");
    for chunk in [
        "## What I found\n\nThe `mean` function divides by **NR + 1** ",
        "instead of *NR*:\n\n- `bin/stats.sh` line 5\n- the test `tests/run.sh` expects `2.5`\n\n```sh\nawk '{ s += $1 } END { print s / NR }'\n```\n",
        "I will fix it and run the te",
    ] {
        s.apply(Event::MessageDelta { text: chunk.into() });
    }
    snap!("streaming_answer", draw(&mut s, 80, 24));
}

#[test]
fn todo_panel_on_a_wide_terminal() {
    let (mut s, _) = state();
    user_turn(&mut s, "fix the failing test");
    plan(&mut s);
    s.apply(Event::MessageCompleted {
        text: "Planning the work.".into(),
        tool_calls: vec![],
    });
    snap!("todo_panel_wide", draw(&mut s, 120, 16));
}

#[test]
fn narrow_layout_collapses_the_todo_into_a_strip() {
    let (mut s, _) = state();
    user_turn(&mut s, "fix the failing test");
    plan(&mut s);
    snap!("narrow_todo_strip", draw(&mut s, 60, 16));
    s.handle_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL));
    snap!("narrow_todo_strip_expanded", draw(&mut s, 60, 16));
}

#[test]
fn wide_layout_with_transcript_todo_and_sessions() {
    let (mut s, t0) = state();
    user_turn(&mut s, "fix the failing test");
    plan(&mut s);
    s.apply(Event::MessageCompleted {
        text: "I read `bin/stats.sh`; the mean is off by one.".into(),
        tool_calls: vec![],
    });
    s.apply(Event::ToolCallBegin {
        call_id: "r1".into(),
        tool: "fs.read".into(),
        arguments: json!({"path": "bin/stats.sh"}),
    });
    s.apply(Event::ToolCallEnd {
        call_id: "r1".into(),
        tool: "fs.read".into(),
        result: ToolOutcome::ok(json!({"content": "a\nb\nc\n", "revision": "abc"})),
    });
    s.apply(Event::ToolCallBegin {
        call_id: "w1".into(),
        tool: "fs.write".into(),
        arguments: json!({"path": "bin/stats.sh"}),
    });
    s.apply(Event::ToolCallRunning {
        call_id: "w1".into(),
        preview: Preview::FileChange(two_hunk_change()),
    });
    s.apply(Event::ToolCallEnd {
        call_id: "w1".into(),
        tool: "fs.write".into(),
        result: ToolOutcome::ok(json!({"committed": true})),
    });
    s.apply(Event::ToolCallBegin {
        call_id: "x1".into(),
        tool: "shell.run".into(),
        arguments: json!({"command": "rm -rf build"}),
    });
    s.apply(Event::ToolCallEnd {
        call_id: "x1".into(),
        tool: "shell.run".into(),
        result: ToolOutcome::err("rejected", "the person rejected shell.run: not now"),
    });
    s.apply(Event::Sessions {
        sessions: vec![SessionSummary {
            session_id: "bg-1".into(),
            command: "sh bin/watch.sh".into(),
            running: true,
            exit_code: None,
            pty: true,
            started_ms: 1_700_000_088_000,
        }],
    });
    s.set_now(t0 + Duration::from_secs(1));
    snap!("wide_layout", draw(&mut s, 120, 32));
}

#[test]
fn rules_command_asks_the_agent_and_lists_the_saved_rules_with_their_ids() {
    let (mut s, _) = state();
    s.submit("/rules".into());
    s.submit("/rules remove always.cargo-test-1f2e3d4c".into());
    assert_eq!(
        s.take_ops(),
        vec![
            Op::ListRules,
            Op::RemoveRule {
                id: "always.cargo-test-1f2e3d4c".into()
            }
        ]
    );
    s.apply(Event::Rules {
        rules: vec![
            RuleSummary {
                id: "always.cargo-test-1f2e3d4c".into(),
                allows: "prefix /usr/bin/cargo test".into(),
            },
            RuleSummary {
                id: "always.edit-readme-md-0a9b8c7d".into(),
                allows: "edits of README.md".into(),
            },
        ],
        removed: None,
    });
    s.apply(Event::Rules {
        rules: vec![RuleSummary {
            id: "always.edit-readme-md-0a9b8c7d".into(),
            allows: "edits of README.md".into(),
        }],
        removed: Some("always.cargo-test-1f2e3d4c".into()),
    });
    snap!("rules_listed_then_one_removed", draw(&mut s, 80, 20));
}

#[test]
fn rules_command_with_a_bad_argument_sends_nothing() {
    let (mut s, _) = state();
    s.submit("/rules remove".into());
    assert!(s.take_ops().is_empty());
}

#[test]
fn slash_popup_lists_matching_commands() {
    let (mut s, _) = state();
    s.handle_key(key(KeyCode::Char('/')));
    snap!("slash_popup", draw(&mut s, 80, 20));
}

#[test]
fn slash_popup_over_a_transcript_covers_whole_rows_and_shows_whole_descriptions() {
    let (mut s, _) = state();
    user_turn(&mut s, "explain");
    let long = "transcript-text ".repeat(40);
    for _ in 0..12 {
        s.apply(Event::MessageDelta {
            text: format!("{long}\n\n"),
        });
    }
    s.apply(Event::TurnCompleted {
        stop_reason: StopReason::EndTurn,
        usage: Usage::default(),
        model_calls: Some(3),
    });
    s.handle_key(key(KeyCode::Char('/')));
    let screen = draw(&mut s, 100, 24);
    let rows: Vec<&str> = screen
        .lines()
        .filter(|l| l.contains("  /") && !l.contains("ctrl-c ctrl-c quit"))
        .collect();
    // As many whole commands as the popup has rows (it scrolls with its selection past those).
    let shown = crate::commands::COMMANDS
        .len()
        .min(usize::from(crate::view::POPUP_MAX_ROWS));
    assert_eq!(rows.len(), shown, "{screen}");
    for row in &rows {
        assert!(!row.contains("transcript-text"), "{row}\n{screen}");
    }
    assert!(
        screen.contains("open the background sessions (output, input, kill)"),
        "{screen}"
    );
    snap!("slash_popup_over_transcript", screen);
}

#[test]
fn transcript_scrolls_and_stays_where_the_person_left_it() {
    let (mut s, _) = state();
    for i in 0..30 {
        s.apply(Event::UserMessage {
            text: format!("message {i}"),
        });
    }
    let before = draw(&mut s, 60, 12);
    assert!(before.contains("message 29"));
    s.handle_key(key(KeyCode::PageUp));
    let scrolled = draw(&mut s, 60, 12);
    assert!(!scrolled.contains("message 29"));
    assert!(scrolled.contains("more lines"));
    // New output while scrolled up does not move the view.
    s.apply(Event::MessageDelta { text: "new".into() });
    let after = draw(&mut s, 60, 12);
    let head = |t: &str| t.lines().take(4).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(head(&after), head(&scrolled));
    s.handle_key(key(KeyCode::PageDown));
    s.handle_key(key(KeyCode::PageDown));
    assert!(draw(&mut s, 60, 12).contains("new"));
}

#[test]
fn ctrl_c_twice_on_an_idle_prompt_quits_but_interrupts_a_running_turn() {
    let (mut s, _) = state();
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    user_turn(&mut s, "go");
    s.handle_key(ctrl_c);
    assert_eq!(s.take_ops().pop(), Some(Op::Interrupt));
    assert!(!s.wants_quit());
    s.apply(Event::TurnCompleted {
        stop_reason: StopReason::Cancelled,
        usage: Usage::default(),
        model_calls: Some(3),
    });
    s.handle_key(ctrl_c);
    assert!(!s.wants_quit());
    s.handle_key(ctrl_c);
    assert!(s.wants_quit());
}

fn saved(
    id: &str,
    updated_ms: u64,
    title: &str,
    plan: (usize, usize),
    turns: usize,
    cost_usd: f64,
) -> pablo_launch::SessionInfo {
    pablo_launch::SessionInfo {
        format: 1,
        id: id.into(),
        created: "2023-11-14T22:00:00Z".into(),
        updated_ms,
        workspace: "/home/me/src/stats".into(),
        model: "gpt-test".into(),
        provider: "openai".into(),
        title: Some(title.into()),
        plan_done: plan.0,
        plan_total: plan.1,
        turns,
        cost_usd,
        cost_mark: cost_usd,
        events: 10,
        journal_bytes: 100,
        journal_mtime_ns: 0,
    }
}

/// When the resume picker of these tests opens: 40 s after "this very session" was last used.
const RESUME_NOW_MS: u64 = 1_700_000_130_000;

fn resume_rows() -> Vec<pablo_launch::SessionInfo> {
    vec![
        saved(
            "0190a0aa-7c1e-7000-8000-000000000001",
            1_700_000_000_000 - 3 * 86_400_000,
            "add a median to the summary",
            (0, 0),
            1,
            0.0,
        ),
        saved(
            "0190a1b2",
            1_700_000_090_000,
            "this very session",
            (0, 0),
            2,
            0.004,
        ),
        saved(
            "0190a0cc-7c1e-7000-8000-000000000002",
            1_700_000_130_000 - 12 * 60_000,
            "fix the csv parser so that quoted fields with embedded newlines keep their rows",
            (2, 3),
            14,
            1.2345,
        ),
    ]
}

#[test]
fn resume_picker_lists_saved_sessions_most_recent_first() {
    let (mut s, _) = state();
    s.open_resume(resume_rows(), RESUME_NOW_MS);
    s.handle_key(key(KeyCode::Down));
    snap!("resume_picker", draw(&mut s, 100, 14));
}

#[test]
fn model_picker_lists_the_model_in_use_then_recent_then_known_with_window_and_price() {
    let (mut s, _) = state();
    let mut recent = resume_rows();
    recent[0].provider = "anthropic".into();
    recent[0].model = "claude-sonnet-4-5".into();
    s.open_model_picker(&recent, RESUME_NOW_MS);
    s.handle_key(key(KeyCode::Down));
    snap!("model_picker", draw(&mut s, 100, 18));
    s.handle_key(key(KeyCode::Enter));
    assert!(s.layers().is_empty());
}

#[test]
fn a_narrow_resume_picker_keeps_each_prompt_readable_and_drops_the_least_useful_figures() {
    let (mut s, _) = state();
    s.open_resume(resume_rows(), RESUME_NOW_MS);
    snap!("resume_picker_narrow", draw(&mut s, 50, 8));
}

#[test]
fn enter_on_another_session_in_the_resume_picker_requests_it_and_quits() {
    let (mut s, _) = state();
    s.open_resume(resume_rows(), RESUME_NOW_MS);
    s.handle_key(key(KeyCode::Down));
    s.handle_key(key(KeyCode::Down));
    s.handle_key(key(KeyCode::Enter));
    assert_eq!(
        s.resume_requested(),
        Some("0190a0aa-7c1e-7000-8000-000000000001")
    );
    assert!(s.wants_quit());
    assert!(s.layers().is_empty());
}

#[test]
fn enter_on_the_current_session_in_the_resume_picker_just_closes_it() {
    let (mut s, _) = state();
    s.open_resume(resume_rows(), RESUME_NOW_MS);
    s.handle_key(key(KeyCode::Enter));
    assert_eq!(s.resume_requested(), None);
    assert!(!s.wants_quit());
    assert!(s.layers().is_empty());
    s.open_resume(resume_rows(), RESUME_NOW_MS);
    s.handle_key(key(KeyCode::Esc));
    assert!(s.layers().is_empty() && s.resume_requested().is_none());
}

fn reasoning_turn(s: &mut AppState) {
    user_turn(s, "why does the mean look wrong?");
    for part in [
        "The user asks about the mean.\n",
        "bin/stats.sh divides by NR, which counts the header line.\n",
        "So the divisor is one too large.\n",
        "Check whether the header is skipped anywhere.",
    ] {
        s.apply(Event::ReasoningDelta { text: part.into() });
    }
}

#[test]
fn reasoning_streams_as_a_dim_cell_showing_its_last_lines() {
    let (mut s, _) = state();
    reasoning_turn(&mut s);
    snap!("reasoning_streaming", draw(&mut s, 80, 14));
}

#[test]
fn finished_reasoning_collapses_above_the_answer_and_ctrl_o_shows_it() {
    let (mut s, _) = state();
    reasoning_turn(&mut s);
    s.apply(Event::MessageDelta {
        text: "The mean divides by the header line too.".into(),
    });
    s.apply(Event::ReasoningCompleted {
        blocks: vec![ReasoningBlock::Thinking {
            text: "(whole)".into(),
            signature: "sig".into(),
        }],
    });
    s.apply(Event::MessageCompleted {
        text: "The mean divides by the header line too.".into(),
        tool_calls: vec![],
    });
    let collapsed = draw(&mut s, 80, 14);
    assert!(!collapsed.contains("one too large"), "{collapsed}");
    snap!("reasoning_collapsed", collapsed);
    s.handle_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
    let expanded = draw(&mut s, 80, 14);
    assert!(expanded.contains("one too large"), "{expanded}");
    snap!("reasoning_expanded", expanded);
}

#[test]
fn a_resumed_transcript_shows_journaled_reasoning_as_a_collapsed_cell() {
    let (mut s, _) = state();
    user_turn(&mut s, "hi");
    s.apply(Event::ReasoningCompleted {
        blocks: vec![ReasoningBlock::Text {
            text: "greet back".into(),
        }],
    });
    s.apply(Event::MessageCompleted {
        text: "Hello!".into(),
        tool_calls: vec![],
    });
    let screen = draw(&mut s, 60, 10);
    assert!(screen.contains("∴ thought · 1 line"), "{screen}");
    assert!(screen.contains("Hello!"), "{screen}");
}

#[test]
fn the_status_line_shows_context_used_of_the_window_and_the_session_cost() {
    let (mut s, _) = state();
    user_turn(&mut s, "go");
    s.apply(Event::Usage {
        last: Usage {
            web_searches: 0,
            input_tokens: 84_000,
            output_tokens: 1_000,
            cached_input_tokens: 80_000,
            cache_write_input_tokens: 3_000,
        },
        total: Usage {
            web_searches: 0,
            input_tokens: 84_000,
            output_tokens: 1_000,
            cached_input_tokens: 80_000,
            cache_write_input_tokens: 3_000,
        },
    });
    s.apply(Event::ContextUsage {
        used_tokens: 84_000,
        window_tokens: 200_000,
        cost_usd: Some(0.0486),
    });
    let screen = draw(&mut s, 120, 8);
    assert!(screen.contains("ctx 42%"), "{screen}");
    assert!(screen.contains("$0.049"), "{screen}");
    snap!("status_context_and_cost", screen);
}

#[test]
fn a_fetch_approval_shows_the_url_and_offers_no_allow_always() {
    let (mut s, _) = state();
    user_turn(&mut s, "read the csv crate docs");
    s.apply(Event::ToolCallBegin {
        call_id: "f1".into(),
        tool: "web.fetch".into(),
        arguments: json!({"url": "https://docs.rs/csv"}),
    });
    s.apply(Event::ApprovalRequest {
        call_id: "f1".into(),
        tool: "web.fetch".into(),
        preview: Preview::Fetch {
            url: "https://docs.rs/csv".into(),
            host: "docs.rs".into(),
        },
        verdict: Verdict::ask(
            "builtin.fetch.ask",
            "fetching https://docs.rs/csv needs approval: docs.rs is not under [options.fetch] allowed_domains",
        ),
    });
    snap!("fetch_approval", draw(&mut s, 100, 24));
    // "a" does nothing when policy has nothing to save; "y" answers.
    s.handle_key(key(KeyCode::Char('a')));
    assert!(s.ops().is_empty());
    s.handle_key(key(KeyCode::Char('y')));
    assert_eq!(
        s.take_ops(),
        vec![Op::Approval {
            call_id: "f1".into(),
            answer: ApprovalAnswer::AllowOnce
        }]
    );
}

#[test]
fn artifacts_command_asks_the_agent_and_the_picker_opens_the_pager_on_enter() {
    let (mut s, _) = state();
    s.submit("/artifacts".into());
    assert_eq!(s.take_ops(), vec![Op::ListArtifacts]);
    s.apply(Event::Artifacts {
        artifacts: vec![
            ArtifactSummary {
                name: "summary.md".into(),
                path: "/data/pablo/sessions/0190a1b2/artifacts/c2/summary.md".into(),
                bytes: 56,
                call_id: "c2".into(),
            },
            ArtifactSummary {
                name: "table.csv".into(),
                path: "/data/pablo/sessions/0190a1b2/artifacts/c3/table.csv".into(),
                bytes: 1200,
                call_id: "c3".into(),
            },
        ],
    });
    snap!("artifacts_picker", draw(&mut s, 100, 16));
    s.handle_key(key(KeyCode::Down));
    s.handle_key(key(KeyCode::Enter));
    assert_eq!(
        s.take_effects(),
        vec![super::state::Effect::OpenPager(
            "/data/pablo/sessions/0190a1b2/artifacts/c3/table.csv".into()
        )]
    );
}

#[test]
fn memory_proposals_are_listed_and_a_accepts_the_selected_one() {
    let (mut s, _) = state();
    s.submit("/memory".into());
    assert_eq!(s.take_ops(), vec![Op::ListMemory]);
    let proposals = vec![
        MemoryProposal {
            id: "mem-1".into(),
            text: "The person prefers tabs.".into(),
            status: MemoryStatus::Proposed,
        },
        MemoryProposal {
            id: "mem-2".into(),
            text: "Run tests with cargo nextest.".into(),
            status: MemoryStatus::Dismissed,
        },
    ];
    s.apply(Event::Memory {
        proposals: proposals.clone(),
        resolved: None,
        file: None,
    });
    snap!("memory_proposals", draw(&mut s, 100, 16));
    // A decided proposal cannot be decided again from the list.
    s.handle_key(key(KeyCode::Down));
    s.handle_key(key(KeyCode::Char('a')));
    assert!(s.ops().is_empty());
    s.handle_key(key(KeyCode::Up));
    s.handle_key(key(KeyCode::Char('a')));
    assert_eq!(
        s.take_ops(),
        vec![Op::ResolveMemory {
            proposal_id: "mem-1".into(),
            accept: true
        }]
    );
    s.submit("/memory dismiss mem-1".into());
    assert_eq!(
        s.take_ops(),
        vec![Op::ResolveMemory {
            proposal_id: "mem-1".into(),
            accept: false
        }]
    );
}

fn mcp_server(name: &str, state: McpState, reason: Option<&str>) -> McpServerView {
    let ready = state == McpState::Ready;
    McpServerView {
        name: name.into(),
        state,
        transport: "stdio".into(),
        required: false,
        reason: reason.map(str::to_string),
        code: None,
        tools: if ready {
            vec![McpToolView {
                name: format!("mcp__{name}__read_text_file"),
                real_name: "read_text_file".into(),
                description: "Read a file as text".into(),
                read_only_hint: Some(true),
            }]
        } else {
            Vec::new()
        },
        prompts: if ready {
            vec![McpPromptView {
                name: "summarise".into(),
                description: "Summarise a file".into(),
                arguments: vec![McpPromptArgument {
                    name: "path".into(),
                    required: true,
                    description: String::new(),
                }],
            }]
        } else {
            Vec::new()
        },
        resources: Vec::new(),
        log: Some(format!("/home/me/.local/state/pablo/mcp/{name}.log")),
    }
}

#[test]
fn mcp_servers_in_the_status_line_the_transcript_and_slash_mcp() {
    let (mut s, _) = state();
    s.apply(Event::McpServer {
        server: mcp_server("notes", McpState::Starting, None),
    });
    s.apply(Event::McpServer {
        server: mcp_server("broken", McpState::Starting, None),
    });
    snap!("mcp_starting", draw(&mut s, 100, 12));
    s.apply(Event::McpServer {
        server: mcp_server("notes", McpState::Ready, None),
    });
    s.apply(Event::McpServer {
        server: mcp_server(
            "broken",
            McpState::Failed,
            Some("exited (exit status 3) before it finished starting; it said: no config"),
        ),
    });
    s.submit("/mcp".into());
    snap!("mcp_ready_and_failed_with_slash_mcp", draw(&mut s, 100, 24));
    // The server's prompt completes as a slash command, with its argument as the hint.
    for c in "/notes:".chars() {
        s.handle_key(key(KeyCode::Char(c)));
    }
    let popup = draw(&mut s, 100, 24);
    assert!(popup.contains("/notes:summarise"), "{popup}");
    assert!(popup.contains("PATH"), "{popup}");
}

#[test]
fn mcp_call_prompt_names_the_server_the_tool_and_the_exact_arguments() {
    let (mut s, _) = state();
    user_turn(&mut s, "what is on my todo list?");
    let args = json!({"path": "/home/me/notes/todo.txt", "head": 20});
    s.apply(Event::ToolCallBegin {
        call_id: "m1".into(),
        tool: "mcp__notes__read_text_file".into(),
        arguments: args.clone(),
    });
    let mut v = Verdict::ask(
        "builtin.mcp",
        "read_text_file of the MCP server notes asks first (MCP tools ask by default); the \
         server says it only reads, which is its claim",
    );
    v.always_rule = Some("tool mcp__notes__read_text_file".into());
    s.apply(Event::ApprovalRequest {
        call_id: "m1".into(),
        tool: "mcp__notes__read_text_file".into(),
        preview: Preview::Mcp(McpCallPreview {
            server: "notes".into(),
            tool: "read_text_file".into(),
            arguments: args,
            read_only_hint: Some(true),
            title: Some("Read Text File".into()),
        }),
        verdict: v,
    });
    snap!("approval_mcp_call", draw(&mut s, 90, 26));
}

#[test]
fn the_status_line_in_each_mode() {
    for mode in WorkMode::ALL {
        let (mut s, _) = state_with("edits ask · commands ask", false);
        s.apply(Event::ModeChanged { mode });
        s.clear_hint();
        let screen = draw(&mut s, 110, 4);
        let status = screen.lines().last().unwrap_or_default().to_string();
        snap!(format!("status_line_mode_{}", mode.name()), status);
    }
}

#[test]
fn the_inline_live_area_streaming_with_the_slash_popup_open() {
    let (mut s, _) = state_with("edits ask · commands ask", true);
    user_turn(&mut s, "what does this crate do?");
    s.apply(Event::MessageDelta {
        text: "It parses CSV files and".into(),
    });
    s.set_draft("/re");
    let area = ratatui::layout::Rect::new(0, 0, 80, 24);
    view::prepare(&mut s, area);
    let h = view::inline_height(&s, 80, 24);
    snap!("inline_live_area_streaming_popup", draw(&mut s, 80, h));
}

#[test]
fn a_refused_turn_gives_the_prompt_back_and_keeps_what_was_typed_since() {
    let (mut s, _) = state();
    let refused = |text: &str| Event::TurnRefused {
        code: "image_not_accepted_by_model".into(),
        message: "@shot.png was not sent: the model m (provider p) does not take images".into(),
        text: text.into(),
    };
    s.apply(refused("what is in @shot.png?"));
    assert_eq!(s.composer().text(), "what is in @shot.png?");
    assert!(!s.turn_running());
    s.set_draft("and also");
    s.apply(refused("see @a.png"));
    assert_eq!(s.composer().text(), "see @a.png\nand also");
}

#[test]
fn messages_typed_during_a_turn_wait_above_the_composer() {
    let (mut s, _) = state();
    user_turn(&mut s, "fix the failing test");
    s.apply(Event::MessageDelta {
        text: "Looking at the test first.".into(),
    });
    s.submit("then update the docs".into());
    s.submit("and the changelog,\nwith a line for the fix".into());
    snap!("composer_with_queued_messages", draw(&mut s, 80, 16));
}
