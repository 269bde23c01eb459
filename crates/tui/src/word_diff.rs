//! Which words of a replaced line changed: the emphasis the diff view draws inside red and green
//! lines, so a reviewer sees that only `<` became `<=`.
//!
//! The rule is similar's inline diff (`TextDiff::iter_inline_changes`) with one difference, and
//! the tests hold it to that: lines are paired by a line diff, a replaced run of lines is split
//! into Unicode word boundaries and diffed as one sequence of words, and the changed words are
//! emphasised — unless the runs' line counts or their words differ too much (a ratio under one
//! half), when the lines are drawn plainly. The difference: words are diffed with Myers'
//! algorithm, where similar's inline diff uses patience. Both line and word steps go through
//! `core::diff::line_ops`, the one diff pablo compiles: similar's text diffs take their
//! algorithms as values and so compiled all six of them for each of seven element types, 300 KB
//! of the release binary (BENCHMARKS.md, "One diff compiled once").

use std::time::{Duration, Instant};

use similar::DiffOp;
use unicode_segmentation::UnicodeSegmentation;

use pablo_core::diff::line_ops;

/// A line's text in runs, each with whether it changed (drawn emphasised).
pub(crate) type Segments = Vec<(bool, String)>;

/// Below this share of matching lines or words a replacement is drawn plainly: emphasis over
/// most of a line says less than none.
const MIN_RATIO: f32 = 0.5;

/// The word diff of one replacement gives up on precision after this (similar's inline default).
const WORD_DEADLINE: Duration = Duration::from_millis(500);

/// A replacement of more lines than this (removed and added together) is drawn plainly: its
/// words would cost tens of milliseconds a render and say little (a rewrite, not an edit), and a
/// 20,000-line one would spend the whole deadline on every render of its cell.
const MAX_RUN_LINES: usize = 4_000;

/// The segments of each line of a replacement: `old` lines removed, `new` lines added (tabs
/// already expanded, no line terminators). `None` where a line pairs with an equal one and is
/// drawn as it is.
pub(crate) fn replacement(
    old: &[&str],
    new: &[&str],
) -> (Vec<Option<Segments>>, Vec<Option<Segments>>) {
    if old.len() + new.len() > MAX_RUN_LINES {
        let all = |lines: &[&str]| plain(lines).into_iter().map(Some).collect();
        return (all(old), all(new));
    }
    let old_lines: Vec<String> = old.iter().map(|l| format!("{l}\n")).collect();
    let new_lines: Vec<String> = new.iter().map(|l| format!("{l}\n")).collect();
    let old_refs: Vec<&str> = old_lines.iter().map(String::as_str).collect();
    let new_refs: Vec<&str> = new_lines.iter().map(String::as_str).collect();
    let mut old_out = vec![None; old.len()];
    let mut new_out = vec![None; new.len()];
    for op in line_ops(&old_refs, &new_refs, None) {
        let (old_range, new_range) = (op.old_range(), op.new_range());
        let refined = match op {
            DiffOp::Equal { .. } => continue,
            DiffOp::Replace { .. } => {
                refine(&old_refs[old_range.clone()], &new_refs[new_range.clone()])
            }
            DiffOp::Delete { .. } | DiffOp::Insert { .. } => None,
        };
        let (old_segs, new_segs) = refined.unwrap_or_else(|| {
            (
                plain(&old_refs[old_range.clone()]),
                plain(&new_refs[new_range.clone()]),
            )
        });
        for (slot, segs) in old_out[old_range].iter_mut().zip(old_segs) {
            *slot = Some(segs);
        }
        for (slot, segs) in new_out[new_range].iter_mut().zip(new_segs) {
            *slot = Some(segs);
        }
    }
    (old_out, new_out)
}

/// Lines drawn whole, without emphasis.
fn plain(lines: &[&str]) -> Vec<Segments> {
    lines.iter().map(|l| finish(vec![(false, l)])).collect()
}

/// A sequence of words and, for each, its line and where it starts in that line.
struct Words<'a> {
    words: Vec<&'a str>,
    at: Vec<(usize, usize)>,
}

impl<'a> Words<'a> {
    fn of(lines: &[&'a str]) -> Self {
        let mut words = Vec::new();
        let mut at = Vec::new();
        for (line, text) in lines.iter().enumerate() {
            let mut offset = 0;
            for word in text.split_word_bounds() {
                words.push(word);
                at.push((line, offset));
                offset += word.len();
            }
        }
        Words { words, at }
    }

    /// Words `start..start + len` as one slice of each line they cover.
    fn spans(&self, lines: &[&'a str], start: usize, len: usize) -> Vec<(usize, &'a str)> {
        let mut out: Vec<(usize, usize, usize)> = Vec::new();
        for i in start..start + len {
            let (line, offset) = self.at[i];
            match out.last_mut() {
                Some((l, _, end)) if *l == line => *end = offset + self.words[i].len(),
                _ => out.push((line, offset, offset + self.words[i].len())),
            }
        }
        out.into_iter()
            .map(|(line, from, to)| (line, &lines[line][from..to]))
            .collect()
    }
}

/// The word diff of a replaced run, or `None` when it is too different to be worth drawing.
fn refine(old: &[&str], new: &[&str]) -> Option<(Vec<Segments>, Vec<Segments>)> {
    let upper = 2.0 * old.len().min(new.len()) as f32 / (old.len() + new.len()) as f32;
    if upper < MIN_RATIO {
        return None;
    }
    let (old_words, new_words) = (Words::of(old), Words::of(new));
    let ops = line_ops(
        &old_words.words,
        &new_words.words,
        Some(Instant::now() + WORD_DEADLINE),
    );
    let total = old_words.words.len() + new_words.words.len();
    let equal: usize = ops
        .iter()
        .map(|op| match op {
            DiffOp::Equal { len, .. } => *len,
            _ => 0,
        })
        .sum();
    if total > 0 && (2.0 * equal as f32 / total as f32) < MIN_RATIO {
        return None;
    }
    let mut old_values: Vec<Vec<(bool, &str)>> = vec![Vec::new(); old.len()];
    let mut new_values: Vec<Vec<(bool, &str)>> = vec![Vec::new(); new.len()];
    for op in &ops {
        let changed = !matches!(op, DiffOp::Equal { .. });
        let (o, n) = (op.old_range(), op.new_range());
        for (line, text) in old_words.spans(old, o.start, o.len()) {
            old_values[line].push((changed, text));
        }
        for (line, text) in new_words.spans(new, n.start, n.len()) {
            new_values[line].push((changed, text));
        }
    }
    let done = |values: Vec<Vec<(bool, &str)>>| values.into_iter().map(finish).collect();
    Some((done(old_values), done(new_values)))
}

/// A line's runs as drawn: the terminator is never part of a run (an emphasised newline would
/// paint past the text), and empty runs are dropped.
fn finish(values: Vec<(bool, &str)>) -> Segments {
    values
        .into_iter()
        .map(|(changed, s)| (changed, s.trim_end_matches('\n').to_string()))
        .filter(|(_, s)| !s.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use similar::{Algorithm, ChangeTag, InlineChangeOptions, TextDiff};

    /// One side of a diff as drawn: each line, equal (its text) or changed (its runs).
    type Side = Vec<(ChangeTag, Segments)>;

    /// similar's inline diff with words diffed by Myers: what `replacement` must answer, as the
    /// removed side and the added side (equal lines on both).
    fn similar_with_myers(old: &[&str], new: &[&str]) -> (Side, Side) {
        let join = |lines: &[&str]| lines.iter().map(|l| format!("{l}\n")).collect::<String>();
        let (old, new) = (join(old), join(new));
        let diff = TextDiff::from_lines(&old, &new);
        let mut options = InlineChangeOptions::new();
        options.algorithm(Algorithm::Myers);
        let (mut removed, mut added) = (Vec::new(), Vec::new());
        for op in diff.ops() {
            for change in diff.iter_inline_changes_with_options(op, options) {
                let segs: Segments = change
                    .iter_strings_lossy()
                    .map(|(e, s)| (e, s.trim_end_matches('\n').to_string()))
                    .filter(|(_, s)| !s.is_empty())
                    .collect();
                match change.tag() {
                    ChangeTag::Equal => {
                        let text: String = segs.into_iter().map(|s| s.1).collect();
                        removed.push((ChangeTag::Equal, vec![(false, text.clone())]));
                        added.push((ChangeTag::Equal, vec![(false, text)]));
                    }
                    ChangeTag::Delete => removed.push((ChangeTag::Delete, segs)),
                    ChangeTag::Insert => added.push((ChangeTag::Insert, segs)),
                }
            }
        }
        (removed, added)
    }

    fn ours(old: &[&str], new: &[&str]) -> (Side, Side) {
        let side = |lines: &[&str], segs: Vec<Option<Segments>>, tag| -> Side {
            lines
                .iter()
                .zip(segs)
                .map(|(line, segs)| match segs {
                    None => (ChangeTag::Equal, vec![(false, line.to_string())]),
                    Some(segs) => (tag, segs),
                })
                .collect()
        };
        let (o, n) = replacement(old, new);
        (
            side(old, o, ChangeTag::Delete),
            side(new, n, ChangeTag::Insert),
        )
    }

    #[test]
    fn a_changed_operator_is_the_only_emphasis() {
        // `<=` is two words at Unicode word boundaries: the `<` stays, the `=` is new.
        let (old, new) = replacement(&["if a < b:"], &["if a <= b:"]);
        assert_eq!(
            old[0],
            Some(vec![(false, "if a <".into()), (false, " b:".into())])
        );
        assert_eq!(
            new[0],
            Some(vec![
                (false, "if a <".into()),
                (true, "=".into()),
                (false, " b:".into())
            ])
        );
    }

    #[test]
    fn lines_with_nothing_in_common_are_drawn_plainly() {
        let (old, new) = replacement(&["alpha beta gamma"], &["one two three four"]);
        assert_eq!(old[0], Some(vec![(false, "alpha beta gamma".into())]));
        assert_eq!(new[0], Some(vec![(false, "one two three four".into())]));
    }

    #[test]
    fn one_line_against_four_is_drawn_plainly_and_equal_lines_are_left_alone() {
        let (old, new) = replacement(&["x = 1", "keep"], &["x = 2", "keep"]);
        assert_eq!(old[1], None);
        assert_eq!(new[1], None);
        let (old, _) = replacement(&["x = 1"], &["x = 2", "y", "z", "w"]);
        assert_eq!(old[0], Some(vec![(false, "x = 1".into())]));
    }

    #[test]
    fn a_replacement_over_the_bound_is_drawn_plainly_and_one_at_it_is_emphasised() {
        let run = |n: usize, v: &str| -> Vec<String> {
            (0..n).map(|i| format!("let x{i} = {v};")).collect()
        };
        for (n, emphasised) in [(MAX_RUN_LINES / 2, true), (MAX_RUN_LINES / 2 + 1, false)] {
            let (old, new) = (run(n, "1"), run(n, "2"));
            let old: Vec<&str> = old.iter().map(String::as_str).collect();
            let new: Vec<&str> = new.iter().map(String::as_str).collect();
            let (o, a) = replacement(&old, &new);
            assert_eq!((o.len(), a.len()), (n, n));
            let any = |v: &[Option<Segments>]| {
                v.iter().flatten().any(|segs| segs.iter().any(|(e, _)| *e))
            };
            assert_eq!(any(&o) && any(&a), emphasised, "{n} lines a side");
            // Plain or not, every line keeps its whole text.
            let text: String = a[n - 1].iter().flatten().map(|(_, s)| s.as_str()).collect();
            assert_eq!(text, format!("let x{} = 2;", n - 1));
        }
    }

    #[test]
    fn the_answer_is_similars_inline_diff_with_myers_on_written_cases() {
        let cases: &[(&[&str], &[&str])] = &[
            (&["if a < b:"], &["if a <= b:"]),
            (
                &["let x = foo(1, 2);", "let y = 3;"],
                &["let x = foo(1, 3);", "let y = 4;"],
            ),
            (
                &["a b c", "same", "d e f"],
                &["a B c", "same", "d e F", "new line"],
            ),
            (&["    return None"], &["    return Some(value)"]),
            (&["naïve café — ok"], &["naive café — ok!"]),
            (&["", "x"], &["x", ""]),
            (&["fn main() {}"], &["fn main() {", "    run();", "}"]),
        ];
        for (old, new) in cases {
            assert_eq!(
                ours(old, new),
                similar_with_myers(old, new),
                "{old:?} -> {new:?}"
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn the_answer_is_similars_inline_diff_with_myers(
            old in prop::collection::vec("[ab (),=xé]{0,12}", 1..5),
            new in prop::collection::vec("[ab (),=xé]{0,12}", 1..5),
        ) {
            let old: Vec<&str> = old.iter().map(String::as_str).collect();
            let new: Vec<&str> = new.iter().map(String::as_str).collect();
            prop_assert_eq!(ours(&old, &new), similar_with_myers(&old, &new));
        }
    }
}
