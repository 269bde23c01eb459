//! Where vim's motions and text objects land in the draft. Pure functions over the draft as
//! characters (positions are character indices; `t.len()` is the end of the text), so the
//! engine only decides what to do with a place or a range, and each rule of vim's word motions
//! is tested here on its own.

/// Character classes of vim's word motions: blanks (newlines included), punctuation, and
/// word characters (letters, digits, `_`). A WORD (`W`, `B`, `E`) is any run of non-blanks.
fn class(c: char, big: bool) -> u8 {
    if c.is_whitespace() {
        0
    } else if big || c.is_alphanumeric() || c == '_' {
        2
    } else {
        1
    }
}

fn blank(t: &[char], i: usize) -> bool {
    t.get(i).is_none_or(|c| c.is_whitespace())
}

/// Where the line holding `i` starts.
pub(super) fn line_start(t: &[char], i: usize) -> usize {
    let i = i.min(t.len());
    t[..i].iter().rposition(|&c| c == '\n').map_or(0, |p| p + 1)
}

/// Where the line holding `i` ends: its newline, or the end of the text.
pub(super) fn line_end(t: &[char], i: usize) -> usize {
    let i = i.min(t.len());
    t[i..]
        .iter()
        .position(|&c| c == '\n')
        .map_or(t.len(), |p| i + p)
}

/// The number (from 0) of the line holding `i`.
pub(super) fn line_of(t: &[char], i: usize) -> usize {
    t[..i.min(t.len())].iter().filter(|&&c| c == '\n').count()
}

pub(super) fn line_count(t: &[char]) -> usize {
    line_of(t, t.len()) + 1
}

/// Where line `n` starts (the last line when there are fewer).
pub(super) fn start_of_line(t: &[char], n: usize) -> usize {
    let mut seen = 0;
    for (i, &c) in t.iter().enumerate() {
        if seen == n {
            return line_start(t, i);
        }
        if c == '\n' {
            seen += 1;
            if seen == n {
                return i + 1;
            }
        }
    }
    line_start(t, t.len())
}

/// The first character of `i`'s line that is not a space or a tab (its end when there is none).
pub(super) fn first_non_blank(t: &[char], i: usize) -> usize {
    let (s, e) = (line_start(t, i), line_end(t, i));
    (s..e).find(|&k| t[k] != ' ' && t[k] != '\t').unwrap_or(e)
}

/// Where the cursor may rest in normal mode: on a character of its line, never on the newline
/// or past the end, except on an empty line.
pub(super) fn clamp_normal(t: &[char], i: usize) -> usize {
    let i = i.min(t.len());
    let (s, e) = (line_start(t, i), line_end(t, i));
    if e > s { i.min(e - 1) } else { s }
}

/// An empty line starts at `i` (a newline right after another, or at the very start or end).
fn empty_line_at(t: &[char], i: usize) -> bool {
    (i == t.len() || t[i] == '\n') && (i == 0 || t[i - 1] == '\n')
}

/// `w`: the start of the next word; an empty line counts as a word.
pub(super) fn word_forward(t: &[char], i: usize, big: bool) -> usize {
    let n = t.len();
    if i >= n {
        return n;
    }
    let start = i;
    let mut i = i;
    let c = class(t[i], big);
    if c != 0 {
        while i < n && class(t[i], big) == c {
            i += 1;
        }
    }
    while i < n && class(t[i], big) == 0 {
        if i != start && empty_line_at(t, i) {
            return i;
        }
        i += 1;
    }
    i
}

/// `e`: the last character of this word, or of the next one when already there.
pub(super) fn word_end(t: &[char], i: usize, big: bool) -> usize {
    let n = t.len();
    let mut i = i + 1;
    while i < n && class(t[i], big) == 0 {
        i += 1;
    }
    if i >= n {
        return n.saturating_sub(1);
    }
    let c = class(t[i], big);
    while i + 1 < n && class(t[i + 1], big) == c {
        i += 1;
    }
    i
}

/// `b`: the start of this word, or of the one before when already there; an empty line counts.
pub(super) fn word_back(t: &[char], i: usize, big: bool) -> usize {
    if i == 0 {
        return 0;
    }
    let mut i = i.min(t.len()) - 1;
    while i > 0 && class(t[i], big) == 0 {
        if empty_line_at(t, i) {
            return i;
        }
        i -= 1;
    }
    if class(t[i], big) == 0 {
        return i;
    }
    let c = class(t[i], big);
    while i > 0 && class(t[i - 1], big) == c {
        i -= 1;
    }
    i
}

/// The last character of the run of one class that holds `i`, within its line.
pub(super) fn run_end(t: &[char], i: usize, big: bool) -> usize {
    let Some(&ch) = t.get(i) else {
        return i;
    };
    let c = class(ch, big);
    let mut i = i;
    while i + 1 < t.len() && t[i + 1] != '\n' && class(t[i + 1], big) == c {
        i += 1;
    }
    i
}

/// The first character of the run of one class that holds `i`, within its line.
fn run_start(t: &[char], i: usize, big: bool) -> usize {
    let Some(&ch) = t.get(i) else {
        return i;
    };
    let c = class(ch, big);
    let mut i = i;
    while i > 0 && t[i - 1] != '\n' && class(t[i - 1], big) == c {
        i -= 1;
    }
    i
}

/// The end of a `w` moved over by an operator: a word that ends its line ends the range there
/// (`dw` on the last word of a line does not join the next line to it).
pub(super) fn operator_word_end(t: &[char], from: usize, to: usize) -> usize {
    let last_word = (from..to).rev().find(|&k| !blank(t, k));
    let after = last_word.map_or(from, |k| k + 1).max(from);
    (after..to).find(|&k| t[k] == '\n').unwrap_or(to)
}

/// `iw` / `aw` (`count` of them): the word (or the blanks) under the cursor; `aw` takes the
/// blanks after it too, or those before it when none follow. Never crosses a line.
pub(super) fn word_object(
    t: &[char],
    i: usize,
    count: usize,
    inner: bool,
    big: bool,
) -> Option<(usize, usize)> {
    let e = line_end(t, i);
    if i >= e {
        return None;
    }
    let start = run_start(t, i, big);
    let on_blank = blank(t, i);
    let mut end = run_end(t, i, big) + 1;
    for _ in 1..count {
        if end >= e {
            break;
        }
        end = run_end(t, end, big) + 1;
    }
    if inner {
        return Some((start, end));
    }
    if on_blank {
        // The blanks and the word after them.
        if end < e {
            end = run_end(t, end, big) + 1;
        }
        return Some((start, end));
    }
    if end < e && blank(t, end) {
        return Some((start, run_end(t, end, big) + 1));
    }
    let s = line_start(t, i);
    let before = (s..start).rev().take_while(|&k| blank(t, k)).last();
    Some((before.unwrap_or(start), end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    #[test]
    fn w_stops_at_punctuation_words_and_empty_lines() {
        let t = chars("foo.bar baz\n\nqux");
        assert_eq!(word_forward(&t, 0, false), 3);
        assert_eq!(word_forward(&t, 3, false), 4);
        assert_eq!(word_forward(&t, 4, false), 8);
        assert_eq!(word_forward(&t, 8, false), 12);
        assert_eq!(word_forward(&t, 12, false), 13);
        assert_eq!(word_forward(&t, 0, true), 8);
    }

    #[test]
    fn e_and_b_land_on_the_ends_and_starts_of_words() {
        let t = chars("one two\n\nthree");
        assert_eq!(word_end(&t, 0, false), 2);
        assert_eq!(word_end(&t, 2, false), 6);
        assert_eq!(word_end(&t, 6, false), 13);
        assert_eq!(word_back(&t, 13, false), 9);
        assert_eq!(word_back(&t, 9, false), 8);
        assert_eq!(word_back(&t, 8, false), 4);
        assert_eq!(word_back(&t, 5, false), 4);
    }

    #[test]
    fn a_word_that_ends_its_line_ends_an_operators_w_there() {
        let t = chars("foo bar\nbaz");
        assert_eq!(operator_word_end(&t, 4, word_forward(&t, 4, false)), 7);
        assert_eq!(operator_word_end(&t, 0, word_forward(&t, 0, false)), 4);
    }

    #[test]
    fn lines_are_found_by_number_and_the_cursor_rests_on_a_character() {
        let t = chars("ab\n\ncd");
        assert_eq!(line_count(&t), 3);
        assert_eq!(start_of_line(&t, 1), 3);
        assert_eq!(start_of_line(&t, 2), 4);
        assert_eq!(start_of_line(&t, 9), 4);
        assert_eq!(clamp_normal(&t, 2), 1);
        assert_eq!(clamp_normal(&t, 3), 3);
        assert_eq!(clamp_normal(&t, 6), 5);
    }

    #[test]
    fn aw_takes_the_blanks_after_the_word_or_else_before_it() {
        let t = chars("say hello there");
        assert_eq!(word_object(&t, 5, 1, true, false), Some((4, 9)));
        assert_eq!(word_object(&t, 5, 1, false, false), Some((4, 10)));
        assert_eq!(word_object(&t, 12, 1, false, false), Some((9, 15)));
        assert_eq!(word_object(&t, 3, 1, false, false), Some((3, 9)));
    }
}
