//! `/status` and `/cost`, drawn on ratatui's `TestBackend` (the `.snap` files live in the
//! top-level `snapshots/` folder).

use std::time::Instant;

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::state::{AppState, Setup};
use super::view;
use pablo_protocol::*;

fn draw(s: &mut AppState, w: u16, h: u16) -> String {
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

/// A session one turn in: a model call reported its usage, context and cost, an MCP server is
/// ready, and the mode is auto-edit.
fn session_one_turn_in() -> AppState {
    let t0 = Instant::now();
    let mut s = AppState::with_setup(
        t0,
        Setup {
            workspace: "~/src/stats".into(),
            policy_mode: "ask before edits and commands · sandbox workspace-write".into(),
            resume_command: Some("pablo resume 0190a1b2".into()),
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
    s.apply(Event::UserMessage {
        text: "count the lines".into(),
    });
    let usage = Usage {
        web_searches: 0,
        input_tokens: 12_345,
        output_tokens: 678,
        cached_input_tokens: 10_000,
        cache_write_input_tokens: 0,
    };
    s.apply(Event::Usage {
        last: usage,
        total: usage,
    });
    s.apply(Event::ContextUsage {
        used_tokens: 12_345,
        window_tokens: 128_000,
        cost_usd: Some(0.0123),
    });
    s.apply(Event::MessageCompleted {
        text: "42 lines.".into(),
        tool_calls: Vec::new(),
    });
    s.apply(Event::TurnCompleted {
        stop_reason: StopReason::EndTurn,
        usage,
        model_calls: Some(1),
    });
    s.apply(Event::ModeChanged {
        mode: WorkMode::AutoEdit,
    });
    s.apply(Event::McpServer {
        server: McpServerView {
            name: "notes".into(),
            state: McpState::Ready,
            transport: "stdio".into(),
            required: false,
            reason: None,
            code: None,
            tools: vec![McpToolView {
                name: "mcp__notes__read_text_file".into(),
                real_name: "read_text_file".into(),
                description: "Read a file as text".into(),
                read_only_hint: Some(true),
            }],
            prompts: Vec::new(),
            resources: Vec::new(),
            log: None,
        },
    });
    let lsp = |name: &str, state, restarts, reason: Option<&str>| LspServerView {
        name: name.into(),
        state,
        restarts,
        reason: reason.map(str::to_string),
    };
    s.apply(Event::LanguageServers {
        servers: vec![
            lsp("pyright", LspState::Ready, 1, None),
            lsp("ruff", LspState::NotStarted, 0, None),
            lsp("rust-analyzer", LspState::Withheld, 0, None),
        ],
    });
    s
}

#[test]
fn slash_status_shows_model_window_usage_cost_mode_authority_servers_workspace_and_session() {
    let mut s = session_one_turn_in();
    s.submit("/status".into());
    let screen = draw(&mut s, 110, 30);
    insta::with_settings!({snapshot_path => "../../../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("slash_status", screen);
    });
    // Token counts are grouped with thin spaces, as in the status line.
    let plain = screen.replace('\u{2009}', " ");
    for fact in [
        "gpt-test · openai",
        "12 345 of 128 000 tokens (10%)",
        "1 turn · 12 345 tokens in (10 000 from cache) · 678 out",
        "$0.0123",
        "auto-edit: file changes inside the write roots apply unasked",
        "sandbox workspace-write",
        "notes (ready, 1 tool)",
        "0190a1b2 (pablo resume 0190a1b2)",
    ] {
        assert!(plain.contains(fact), "{fact:?} missing:\n{screen}");
    }
}

#[test]
fn slash_cost_is_the_same_block_as_slash_status() {
    let mut a = session_one_turn_in();
    a.submit("/status".into());
    let mut b = session_one_turn_in();
    b.submit("/cost".into());
    assert_eq!(draw(&mut a, 110, 30), draw(&mut b, 110, 30));
}

#[test]
fn before_any_model_call_status_says_so_and_that_the_cost_is_unknown() {
    let t0 = Instant::now();
    let mut s = AppState::with_setup(t0, Setup::default());
    s.apply(Event::SessionStarted {
        session_id: "0190ffff".into(),
        provider: "ollama".into(),
        model: "llama3".into(),
        workspace: "/w".into(),
    });
    s.submit("/status".into());
    let screen = draw(&mut s, 100, 24);
    assert!(screen.contains("no model call yet"), "{screen}");
    assert!(
        screen.contains("unknown (no prices for this model)"),
        "{screen}"
    );
    assert!(screen.contains("MCP"), "{screen}");
    assert!(screen.contains("none configured"), "{screen}");
}

#[test]
fn with_a_spend_cap_the_status_line_shows_spent_over_the_cap() {
    let t0 = Instant::now();
    let mut s = AppState::with_setup(
        t0,
        Setup {
            spend_cap_usd: Some(0.5),
            ..Setup::default()
        },
    );
    s.tick(t0, 1_700_000_100_000);
    let before = draw(&mut s, 100, 6);
    assert!(before.contains("$0.000/$0.500"), "{before}");
    s.apply(Event::ContextUsage {
        used_tokens: 1_000,
        window_tokens: 128_000,
        cost_usd: Some(0.42),
    });
    let after = draw(&mut s, 100, 6);
    assert!(after.contains("$0.420/$0.500"), "{after}");
}

#[test]
fn ago_says_how_long_ago_as_people_do() {
    use crate::info::ago;
    let now = 1_700_000_000_000;
    assert_eq!(ago(now, now - 5_000), "just now");
    assert_eq!(ago(now, now - 12 * 60_000), "12 min ago");
    assert_eq!(ago(now, now - 3 * 3_600_000), "3 h ago");
    assert_eq!(ago(now, now - 30 * 3_600_000), "yesterday");
    assert_eq!(ago(now, now - 5 * 86_400_000), "5 days ago");
    assert_eq!(ago(now, now - 60 * 86_400_000), "2023-09-15");
    assert_eq!(
        ago(now, now + 9_000),
        "just now",
        "a clock that went back is not the future"
    );
}

#[test]
fn a_status_line_commands_line_stands_for_the_facts_in_its_colours_and_no_other_escape_gets_out() {
    let mut s = session_one_turn_in();
    s.clear_hint();
    // Green, then a window title, a cursor move, a bell and a clipboard write: only the colour
    // may reach the terminal.
    s.set_custom_status(
        "\x1b[32mMARK gpt-test\x1b[0m \x1b]0;pwned\x07\x1b[2J\x1b[H\x07\x1b]52;c;ZXZpbA==\x07 main*"
            .into(),
    );
    let mut term = match Terminal::new(TestBackend::new(100, 6)) {
        Ok(t) => t,
        Err(e) => match e {},
    };
    let area = ratatui::layout::Rect::new(0, 0, 100, 6);
    view::prepare(&mut s, area);
    assert!(term.draw(|f| f.render_widget(&s, f.area())).is_ok());
    let buf = term.backend().buffer().clone();
    let row: String = (0..100).map(|x| buf[(x, 5)].symbol().to_string()).collect();
    insta::with_settings!({snapshot_path => "../../../snapshots", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("status_line_custom", row);
    });
    assert!(row.starts_with(" MARK gpt-test  main*"), "{row:?}");
    // The facts it stands for are gone; the mode and the MCP servers stay.
    for gone in ["openai", "tok", "ctx", "~/src/stats"] {
        assert!(!row.contains(gone), "{gone} in {row:?}");
    }
    assert!(
        row.contains("auto-edit") && row.contains("mcp 1/1"),
        "{row:?}"
    );
    assert!(!row.contains("pwned") && !row.contains("ZXZp"), "{row:?}");
    let m = row.find("MARK").unwrap();
    assert_eq!(
        buf[(m as u16, 5)].fg,
        ratatui::style::Color::Green,
        "its colour is drawn"
    );
    // A line longer than two thirds of the row is cut there, and says so.
    s.set_custom_status("x".repeat(300));
    let narrow = draw(&mut s, 90, 6);
    let last = narrow.lines().last().unwrap_or_default().to_string();
    assert!(last.contains(&format!("{}…", "x".repeat(59))), "{last}");
    assert!(last.contains("auto-edit"), "{last}");
    // An empty line gives the facts back.
    s.set_custom_status(String::new());
    assert!(draw(&mut s, 100, 6).contains("gpt-test · openai"));
}
