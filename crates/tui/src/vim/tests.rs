//! The engine on drafts written with a `|` where the cursor is (before the character it rests
//! on), driven by keys in vim's notation: `<esc>`, `<c-r>`, `<cr>`, `<bs>`.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{Mode, Outcome, Vim};

/// The engine with a draft, as the composer holds them. In insert mode the composer's own
/// typing is played here: a character goes in at the cursor, `<bs>` takes the one before it.
struct Session {
    vim: Vim,
    text: String,
    cursor: usize,
}

fn normal(draft: &str) -> Session {
    let cursor = draft.find('|').unwrap();
    Session {
        vim: Vim {
            mode: Mode::Normal,
            ..Vim::default()
        },
        text: draft.replacen('|', "", 1),
        cursor,
    }
}

fn parse(keys: &str) -> Vec<KeyEvent> {
    let mut out = Vec::new();
    let mut rest = keys;
    while let Some(c) = rest.chars().next() {
        let named = [
            ("<esc>", KeyCode::Esc, KeyModifiers::NONE),
            ("<c-r>", KeyCode::Char('r'), KeyModifiers::CONTROL),
            ("<cr>", KeyCode::Enter, KeyModifiers::NONE),
            ("<bs>", KeyCode::Backspace, KeyModifiers::NONE),
            ("<up>", KeyCode::Up, KeyModifiers::NONE),
        ]
        .into_iter()
        .find(|(n, _, _)| rest.starts_with(n));
        if let Some((n, code, mods)) = named {
            out.push(KeyEvent::new(code, mods));
            rest = &rest[n.len()..];
        } else {
            let mods = if c.is_uppercase() {
                KeyModifiers::SHIFT
            } else {
                KeyModifiers::NONE
            };
            out.push(KeyEvent::new(KeyCode::Char(c), mods));
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

impl Session {
    /// Types `keys`; returns what the engine said to the last one.
    fn keys(&mut self, keys: &str) -> Outcome {
        let mut last = Outcome::Done;
        for key in parse(keys) {
            last = self.vim.key(key, &mut self.text, &mut self.cursor);
            if last == Outcome::Edit {
                match key.code {
                    KeyCode::Char(c) => {
                        self.text.insert(self.cursor, c);
                        self.cursor += c.len_utf8();
                    }
                    KeyCode::Backspace => {
                        let prev = self.text[..self.cursor].chars().next_back().unwrap();
                        self.cursor -= prev.len_utf8();
                        self.text.remove(self.cursor);
                    }
                    _ => {}
                }
            }
        }
        last
    }

    /// The draft with `|` at the cursor.
    fn shown(&self) -> String {
        let mut s = self.text.clone();
        s.insert(self.cursor, '|');
        s
    }

    fn after(mut self, keys: &str) -> String {
        self.keys(keys);
        self.shown()
    }
}

#[test]
fn d2w_deletes_two_words_and_dot_repeats_it() {
    let mut s = normal("|one two three four five");
    s.keys("d2w");
    assert_eq!(s.shown(), "|three four five");
    s.keys(".");
    assert_eq!(s.shown(), "|five");
}

#[test]
fn counts_before_and_after_the_operator_multiply() {
    assert_eq!(normal("|a b c d e f").after("2d2w"), "|e f");
    assert_eq!(normal("|a b c d e f").after("3w"), "a b c |d e f");
}

#[test]
fn w_b_and_e_move_by_words_and_capitals_by_blank_separated_words() {
    let mut s = normal("|foo.bar baz");
    s.keys("w");
    assert_eq!(s.shown(), "foo|.bar baz");
    s.keys("e");
    assert_eq!(s.shown(), "foo.ba|r baz");
    s.keys("b");
    assert_eq!(s.shown(), "foo.|bar baz");
    s.keys("0W");
    assert_eq!(s.shown(), "foo.bar |baz");
    s.keys("B");
    assert_eq!(s.shown(), "|foo.bar baz");
    s.keys("E");
    assert_eq!(s.shown(), "foo.ba|r baz");
}

#[test]
fn h_and_l_stay_on_the_line_and_j_and_k_keep_the_column_across_a_shorter_line() {
    let mut s = normal("abc|def\nxy\nghijkl");
    s.keys("l");
    assert_eq!(s.shown(), "abcd|ef\nxy\nghijkl");
    s.keys("9l");
    assert_eq!(s.shown(), "abcde|f\nxy\nghijkl");
    s.keys("j");
    assert_eq!(s.shown(), "abcdef\nx|y\nghijkl");
    s.keys("j");
    assert_eq!(s.shown(), "abcdef\nxy\nghijk|l");
    s.keys("2k");
    assert_eq!(s.shown(), "abcde|f\nxy\nghijkl");
    s.keys("9h");
    assert_eq!(s.shown(), "|abcdef\nxy\nghijkl");
}

#[test]
fn zero_and_dollar_go_to_the_ends_of_the_line_and_d_dollar_deletes_to_its_end() {
    let mut s = normal("one |two three\nnext");
    s.keys("$");
    assert_eq!(s.shown(), "one two thre|e\nnext");
    s.keys("0");
    assert_eq!(s.shown(), "|one two three\nnext");
    s.keys("wd$");
    assert_eq!(s.shown(), "one| \nnext");
    assert_eq!(normal("  |x y").after("^"), "  |x y");
    assert_eq!(normal("a |b c\nd").after("D"), "a| \nd");
}

#[test]
fn gg_and_g_go_to_the_first_and_last_lines_and_take_a_line_number() {
    let mut s = normal("one\n  two\nthr|ee");
    s.keys("gg");
    assert_eq!(s.shown(), "|one\n  two\nthree");
    s.keys("G");
    assert_eq!(s.shown(), "one\n  two\n|three");
    s.keys("2G");
    assert_eq!(s.shown(), "one\n  |two\nthree");
    s.keys("dG");
    assert_eq!(s.shown(), "|one");
    assert_eq!(normal("a\nb\n|c").after("dgg"), "|");
}

#[test]
fn dd_deletes_lines_with_a_count_and_p_and_capital_p_put_them_below_and_above() {
    let mut s = normal("a\n|b\nc\nd");
    s.keys("2dd");
    assert_eq!(s.shown(), "a\n|d");
    s.keys("p");
    assert_eq!(s.shown(), "a\nd\n|b\nc");
    s.keys("ggP");
    assert_eq!(s.shown(), "|b\nc\na\nd\nb\nc");
    // The last line goes with the newline before it.
    assert_eq!(normal("a\n|b").after("dd"), "|a");
    assert_eq!(normal("|only").after("dd"), "|");
}

#[test]
fn yy_and_yw_copy_without_changing_and_p_pastes_after_the_cursor() {
    let mut s = normal("|hello world");
    s.keys("yw");
    assert_eq!(s.shown(), "|hello world");
    s.keys("$p");
    assert_eq!(s.shown(), "hello worldhello| ");
    let mut lines = normal("|one\ntwo");
    lines.keys("yyjp");
    assert_eq!(lines.shown(), "one\ntwo\n|one");
    lines.keys("2P");
    assert_eq!(lines.shown(), "one\ntwo\n|one\none\none");
    assert_eq!(normal("|ab").after("yl3p"), "aaa|ab");
}

#[test]
fn cw_changes_to_the_end_of_the_word_and_dot_types_the_same_text_again() {
    let mut s = normal("|foo bar baz");
    s.keys("cw");
    assert_eq!(s.vim.mode(), Mode::Insert);
    s.keys("qux<esc>");
    assert_eq!(s.shown(), "qu|x bar baz");
    assert_eq!(s.vim.mode(), Mode::Normal);
    s.keys("w.");
    assert_eq!(s.shown(), "qux qu|x baz");
    // On a word's last letter `cw` changes just that letter.
    assert_eq!(normal("fo|o bar").after("cwX<esc>"), "fo|X bar");
}

#[test]
fn cc_and_capital_s_replace_whole_lines_and_capital_c_the_rest_of_one() {
    assert_eq!(normal("a\nb|bb\nc").after("ccnew<esc>"), "a\nne|w\nc");
    assert_eq!(normal("a\n|b\nc").after("2Sx<esc>"), "a\n|x");
    assert_eq!(normal("keep |this").after("Cthat<esc>"), "keep tha|t");
    assert_eq!(normal("|abc").after("2sX<esc>"), "|Xc");
}

#[test]
fn dw_on_the_last_word_of_a_line_does_not_join_the_next_line() {
    assert_eq!(normal("foo |bar\nbaz").after("dw"), "foo| \nbaz");
    assert_eq!(normal("|foo\n\nbar").after("dw"), "|\n\nbar");
}

#[test]
fn x_deletes_under_the_cursor_within_the_line_and_capital_x_before_it() {
    let mut s = normal("ab|cdef\ngh");
    s.keys("x");
    assert_eq!(s.shown(), "ab|def\ngh");
    s.keys("9x");
    assert_eq!(s.shown(), "a|b\ngh");
    s.keys("X");
    assert_eq!(s.shown(), "|b\ngh");
    s.keys("p");
    assert_eq!(s.shown(), "b|a\ngh");
}

#[test]
fn i_a_capital_i_a_o_and_o_start_typing_where_vim_does() {
    assert_eq!(normal("ab|c").after("iX<esc>"), "ab|Xc");
    assert_eq!(normal("ab|c").after("aX<esc>"), "abc|X");
    assert_eq!(normal("  ab|c").after("IX<esc>"), "  |Xabc");
    assert_eq!(normal("a|bc\nd").after("AX<esc>"), "abc|X\nd");
    assert_eq!(normal("a|bc\nd").after("oX<esc>"), "abc\n|X\nd");
    assert_eq!(normal("abc\n|d").after("OX<esc>"), "abc\n|X\nd");
}

#[test]
fn esc_from_insert_steps_back_onto_the_last_character_typed() {
    let mut s = normal("|");
    s.keys("i");
    s.keys("hello");
    assert_eq!(s.keys("<esc>"), Outcome::Done);
    assert_eq!(s.shown(), "hell|o");
    assert_eq!(s.vim.mode(), Mode::Normal);
    // At the start of a line it stays.
    assert_eq!(normal("|abc").after("i<esc>"), "|abc");
}

#[test]
fn a_count_on_an_insert_types_the_text_that_many_times() {
    assert_eq!(normal("|").after("3iab<esc>"), "ababa|b");
    assert_eq!(normal("|x").after("2oy<esc>"), "x\ny\n|y");
}

#[test]
fn u_undoes_each_change_as_one_step_and_ctrl_r_redoes_it() {
    let mut s = normal("|one two");
    s.keys("dw");
    s.keys("Athree<esc>");
    assert_eq!(s.shown(), "twothre|e");
    s.keys("u");
    assert_eq!(s.text, "two");
    s.keys("u");
    assert_eq!(s.text, "one two");
    s.keys("u");
    assert_eq!(s.text, "one two");
    s.keys("<c-r>");
    assert_eq!(s.text, "two");
    s.keys("<c-r>");
    assert_eq!(s.text, "twothree");
    // A new change forgets what could be redone.
    s.keys("u0x<c-r>");
    assert_eq!(s.text, "wo");
}

#[test]
fn typing_before_the_first_esc_is_one_undo_step_too() {
    let mut s = Session {
        vim: Vim::default(),
        text: String::new(),
        cursor: 0,
    };
    s.keys("draft<esc>u");
    assert_eq!(s.shown(), "|");
}

#[test]
fn dot_repeats_x_r_and_o_with_their_text_and_a_new_count_replaces_the_old() {
    let mut s = normal("|abcdef");
    s.keys("x..");
    assert_eq!(s.shown(), "|def");
    s.keys("2.");
    assert_eq!(s.shown(), "|f");
    let mut r = normal("|aaaa");
    r.keys("rbl.");
    assert_eq!(r.shown(), "b|baa");
    let mut o = normal("|x");
    o.keys("onew<esc>.");
    assert_eq!(o.shown(), "x\nnew\nne|w");
}

#[test]
fn a_yank_is_not_a_change_for_dot() {
    let mut s = normal("|a b c");
    s.keys("xyw.");
    assert_eq!(s.shown(), "|b c");
}

#[test]
fn ciw_and_daw_work_on_the_word_under_the_cursor() {
    assert_eq!(
        normal("say he|llo there").after("ciwhi<esc>"),
        "say h|i there"
    );
    assert_eq!(normal("say he|llo there").after("daw"), "say |there");
    assert_eq!(
        normal("say he|llo there").after("yiw$p"),
        "say hello therehell|o"
    );
}

#[test]
fn text_in_several_scripts_moves_and_deletes_by_characters() {
    let mut s = normal("|héllo wörld ünïcode");
    s.keys("wx");
    assert_eq!(s.shown(), "héllo |örld ünïcode");
    s.keys("dw$");
    assert_eq!(s.shown(), "héllo ünïcod|e");
}

#[test]
fn k_on_the_first_line_and_j_on_the_last_ask_the_composer_for_its_history() {
    let mut s = normal("a|b\ncd");
    assert_eq!(s.keys("k"), Outcome::HistoryPrev);
    assert_eq!(s.keys("j"), Outcome::Done);
    assert_eq!(s.keys("j"), Outcome::HistoryNext);
    // Under an operator it just does nothing.
    assert_eq!(s.keys("dj"), Outcome::Done);
    assert_eq!(s.shown(), "ab\nc|d");
}

#[test]
fn esc_in_normal_mode_is_the_apps_unless_a_command_is_being_typed() {
    let mut s = normal("|abc");
    assert!(!s.vim.takes_esc());
    assert_eq!(s.keys("<esc>"), Outcome::Pass);
    s.keys("2d");
    assert_eq!(s.vim.pending(), "2d");
    assert!(s.vim.takes_esc());
    assert_eq!(s.keys("<esc>"), Outcome::Done);
    assert_eq!(s.vim.pending(), "");
    assert_eq!(s.shown(), "|abc");
    s.keys("i");
    assert!(s.vim.takes_esc());
}

#[test]
fn enter_in_normal_mode_goes_to_the_composer_but_not_in_the_middle_of_a_command() {
    let mut s = normal("|abc");
    assert_eq!(s.keys("<cr>"), Outcome::Pass);
    assert_eq!(s.keys("r<cr>"), Outcome::Done);
    assert_eq!(s.shown(), "|abc");
    assert_eq!(s.keys("<up>"), Outcome::Pass);
}

#[test]
fn unknown_keys_and_mismatched_operators_do_nothing() {
    assert_eq!(normal("a|bc").after("zQdy"), "a|bc");
    assert_eq!(normal("a|bc").after("dz"), "a|bc");
    assert_eq!(normal("|").after("xdwX"), "|");
}

#[test]
fn backspace_moves_left_in_normal_mode() {
    assert_eq!(normal("ab|c").after("<bs>"), "a|bc");
}

#[test]
fn a_new_draft_after_sending_starts_in_insert_mode_with_no_undo() {
    let mut s = normal("|sent");
    s.keys("x");
    s.vim.submitted();
    assert_eq!(s.vim.mode(), Mode::Insert);
    s.text.clear();
    s.cursor = 0;
    s.keys("<esc>u");
    assert_eq!(s.shown(), "|");
}

#[test]
fn a_checkpoint_before_the_draft_is_cleared_lets_u_bring_it_back() {
    let mut s = normal("|keep me");
    s.vim.checkpoint(&s.text, s.cursor);
    s.text.clear();
    s.cursor = 0;
    s.keys("u");
    assert_eq!(s.text, "keep me");
}
