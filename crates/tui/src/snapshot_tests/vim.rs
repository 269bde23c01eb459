//! Vim mode in the whole state: `/vim`, the mode in the composer's border, and what Esc, Enter,
//! `k` and ctrl-c do with it.

use super::*;

fn typed(s: &mut AppState, text: &str) {
    for c in text.chars() {
        s.handle_key(key(KeyCode::Char(c)));
    }
}

fn vim_on() -> (AppState, Instant) {
    let (mut s, t0) = state();
    typed(&mut s, "/vim");
    s.handle_key(key(KeyCode::Enter));
    (s, t0)
}

fn composer_rows(screen: &str) -> String {
    let lines: Vec<&str> = screen.lines().collect();
    lines[lines.len().saturating_sub(3)..].join("\n")
}

#[test]
fn the_composers_border_shows_the_vim_mode_and_a_command_being_typed() {
    let (mut s, _) = vim_on();
    assert!(
        draw(&mut s, 60, 8).contains("vim mode on"),
        "{}",
        draw(&mut s, 60, 8)
    );
    typed(&mut s, "fix the failing test");
    snap!("composer_vim_insert", draw(&mut s, 60, 8));
    s.handle_key(key(KeyCode::Esc));
    typed(&mut s, "2d");
    snap!("composer_vim_normal_pending", draw(&mut s, 60, 8));
    typed(&mut s, "b");
    assert_eq!(s.composer().text(), "fix the t");
    assert!(composer_rows(&draw(&mut s, 60, 8)).contains(" NORMAL ─"));
}

#[test]
fn without_vim_mode_the_border_has_no_mode() {
    let (mut s, _) = state();
    typed(&mut s, "fix it");
    let screen = draw(&mut s, 60, 8);
    assert!(
        !screen.contains("INSERT") && !screen.contains("NORMAL"),
        "{screen}"
    );
}

#[test]
fn slash_vim_turns_vim_mode_off_again() {
    let (mut s, _) = vim_on();
    assert!(s.composer().vim().is_some());
    typed(&mut s, "/vim");
    s.handle_key(key(KeyCode::Enter));
    assert!(s.composer().vim().is_none());
    assert!(draw(&mut s, 60, 8).contains("vim mode off"));
    // Esc is the app's again: no mode to leave.
    typed(&mut s, "abc");
    s.handle_key(key(KeyCode::Esc));
    typed(&mut s, "x");
    assert_eq!(s.composer().text(), "abcx");
}

#[test]
fn esc_leaves_insert_mode_without_interrupting_the_turn_and_a_second_esc_at_once_is_dropped() {
    let (mut s, t0) = vim_on();
    user_turn(&mut s, "go");
    s.take_ops();
    typed(&mut s, "next");
    s.handle_key(key(KeyCode::Esc));
    assert!(s.take_ops().is_empty());
    assert_eq!(
        s.composer().vim().map(|v| v.mode()),
        Some(crate::vim::Mode::Normal)
    );
    assert!(draw(&mut s, 70, 8).contains("NORMAL · esc interrupts the turn"));
    // The habit of pressing Esc twice.
    s.set_now(t0 + Duration::from_millis(200));
    s.handle_key(key(KeyCode::Esc));
    assert!(s.take_ops().is_empty());
    // A deliberate Esc in normal mode interrupts, as without vim mode.
    s.set_now(t0 + Duration::from_secs(2));
    s.handle_key(key(KeyCode::Esc));
    assert_eq!(s.take_ops(), vec![Op::Interrupt]);
    assert_eq!(s.composer().text(), "next");
}

#[test]
fn esc_drops_a_command_being_typed_before_it_interrupts() {
    let (mut s, t0) = vim_on();
    s.handle_key(key(KeyCode::Esc));
    user_turn(&mut s, "go");
    s.take_ops();
    s.set_now(t0 + Duration::from_secs(2));
    typed(&mut s, "3d");
    s.handle_key(key(KeyCode::Esc));
    assert!(s.take_ops().is_empty());
    assert_eq!(s.composer().vim().map(|v| v.pending()), Some(""));
    s.handle_key(key(KeyCode::Esc));
    assert_eq!(s.take_ops(), vec![Op::Interrupt]);
}

#[test]
fn enter_in_normal_mode_sends_and_the_next_draft_starts_in_insert_mode() {
    let (mut s, _) = vim_on();
    typed(&mut s, "hello world");
    s.handle_key(key(KeyCode::Esc));
    typed(&mut s, "bD");
    s.handle_key(key(KeyCode::Enter));
    assert_eq!(s.take_ops(), vec![Op::user_turn("hello".to_string())]);
    assert_eq!(
        s.composer().vim().map(|v| v.mode()),
        Some(crate::vim::Mode::Insert)
    );
    // `k` on the first line walks the history, as `up` does.
    s.apply(Event::TurnCompleted {
        stop_reason: StopReason::EndTurn,
        usage: Usage::default(),
        model_calls: None,
    });
    s.handle_key(key(KeyCode::Esc));
    typed(&mut s, "k");
    assert_eq!(s.composer().text(), "hello");
    typed(&mut s, "x");
    assert_eq!(s.composer().text(), "hell");
}

#[test]
fn ctrl_c_clears_a_vim_draft_and_u_brings_it_back() {
    let (mut s, _) = vim_on();
    typed(&mut s, "a long prompt");
    s.handle_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert!(s.composer().is_empty());
    s.handle_key(key(KeyCode::Esc));
    typed(&mut s, "u");
    assert_eq!(s.composer().text(), "a long prompt");
}

#[test]
fn vim_mode_from_the_setup_starts_in_insert_mode() {
    let s = AppState::with_setup(
        Instant::now(),
        Setup {
            vim: true,
            ..Setup::default()
        },
    );
    assert_eq!(
        s.composer().vim().map(|v| v.mode()),
        Some(crate::vim::Mode::Insert)
    );
}

#[test]
fn text_pasted_in_normal_mode_goes_before_the_cursor_which_rests_on_a_character() {
    let (mut s, _) = vim_on();
    typed(&mut s, "ab");
    s.handle_key(key(KeyCode::Esc));
    s.paste("XY");
    assert_eq!(s.composer().text(), "aXYb");
    typed(&mut s, "x");
    assert_eq!(s.composer().text(), "aXY");
}
