//! Renders a file change's hunks for review: old/new line numbers, `+`/`−` gutters, red and green
//! backgrounds, and the changed words inside a replaced line emphasised (`word_diff`), so
//! a reviewer sees at a glance that only `<` became `<=`.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::text::{str_width, wrap_line};
use super::theme;
use super::word_diff::{self, Segments};
use pablo_protocol::{DiffHunk, DiffLine, DiffTag};

/// Rendered diff lines and where each hunk starts among them (for next/previous hunk).
#[derive(Debug, Clone, Default)]
pub(crate) struct DiffRender {
    pub(crate) lines: Vec<Line<'static>>,
    pub(crate) hunk_starts: Vec<usize>,
}

/// Per-hunk review state passed to the renderer: which hunks are accepted and which one has focus.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HunkMarks<'a> {
    pub(crate) accepted: &'a [bool],
    pub(crate) focused: usize,
}

pub(crate) fn render_hunks(
    hunks: &[DiffHunk],
    width: usize,
    marks: Option<HunkMarks<'_>>,
) -> DiffRender {
    render_hunks_head(hunks, width, marks, usize::MAX).0
}

/// The first `keep` rendered lines, and how many the whole diff renders to. Rows past `keep` are
/// counted, not styled (a line that fits the width counts one without being built), so a
/// collapsed cell over a 20,000-line diff costs its dozen lines and a count.
pub(crate) fn render_hunks_head(
    hunks: &[DiffHunk],
    width: usize,
    marks: Option<HunkMarks<'_>>,
    keep: usize,
) -> (DiffRender, usize) {
    let mut rows = 0;
    let max_no = hunks
        .iter()
        .map(|h| (h.old_start + h.old_len).max(h.new_start + h.new_len))
        .max()
        .unwrap_or(1);
    let nw = max_no.to_string().len();
    let mut out = DiffRender::default();
    let gutter = nw * 2 + 4;
    for (i, hunk) in hunks.iter().enumerate() {
        if out.lines.len() >= keep {
            rows += 1 + hunk
                .lines
                .iter()
                .map(|dl| rows_of(dl, nw, width))
                .sum::<usize>();
            continue;
        }
        out.hunk_starts.push(out.lines.len());
        let accepted = marks
            .map(|m| m.accepted.get(i).copied().unwrap_or(true))
            .unwrap_or(true);
        let mut head = Vec::new();
        if let Some(m) = marks {
            let focus = if m.focused == i { "▶ " } else { "  " };
            head.push(Span::styled(focus, theme::key()));
            head.push(Span::styled(
                if accepted { "[x] " } else { "[ ] " },
                if accepted {
                    theme::ok()
                } else {
                    theme::error()
                },
            ));
        }
        head.push(Span::styled(hunk.header.clone(), theme::hunk_header()));
        if !accepted {
            head.push(Span::styled("  (will not be applied)", theme::dim()));
        }
        out.lines.push(Line::from(head));
        rows += 1;
        // Each line takes a row at least, so no line past this many is drawn: a collapsed cell
        // over a long diff finds the changed words of its first lines only.
        let drawable = keep.saturating_sub(out.lines.len());
        let emphasis = inline_emphasis(&hunk.lines, drawable);
        for (k, dl) in hunk.lines.iter().enumerate() {
            if out.lines.len() >= keep {
                rows += rows_of(dl, nw, width);
                continue;
            }
            let sign = gutter_sign(dl.tag);
            let (line_style, word_style) = match dl.tag {
                DiffTag::Context => (Style::default(), Style::default()),
                DiffTag::Added => (theme::added_line(), theme::added_word()),
                DiffTag::Removed => (theme::removed_line(), theme::removed_word()),
            };
            let (line_style, word_style) = if accepted {
                (line_style, word_style)
            } else {
                (theme::dim(), theme::dim())
            };
            let mut spans = vec![
                {
                    let (old, new) = gutter_numbers(dl, nw);
                    Span::styled(format!("{old} {new} "), theme::dim())
                },
                Span::styled(format!("{sign} "), line_style),
            ];
            match emphasis.get(k).and_then(|e| e.as_ref()) {
                Some(segments) => {
                    for (emph, s) in segments {
                        spans.push(Span::styled(
                            s.clone(),
                            if *emph { word_style } else { line_style },
                        ));
                    }
                }
                None => spans.push(Span::styled(dl.text.replace('\t', "    "), line_style)),
            }
            let before = out.lines.len();
            wrap_line(&Line::from(spans), width, gutter, &mut out.lines);
            rows += out.lines.len() - before;
        }
    }
    out.lines.truncate(keep);
    (out, rows)
}

/// The rows a diff line wraps to behind its gutter (numbers `nw` wide and the sign), as the
/// renderer lays it out; the line is built only when it does not fit on one row.
fn rows_of(dl: &DiffLine, nw: usize, width: usize) -> usize {
    let tabs = dl.text.matches('\t').count();
    if nw * 2 + 4 + str_width(&dl.text) + tabs * 4 <= width.max(1) {
        return 1;
    }
    let (sign, (old, new)) = (gutter_sign(dl.tag), gutter_numbers(dl, nw));
    let line = Line::from(format!(
        "{old} {new} {sign} {}",
        dl.text.replace('\t', "    ")
    ));
    let mut scratch = Vec::new();
    wrap_line(&line, width, nw * 2 + 4, &mut scratch);
    scratch.len()
}

fn gutter_sign(tag: DiffTag) -> &'static str {
    match tag {
        DiffTag::Context => " ",
        DiffTag::Added => "+",
        DiffTag::Removed => "−",
    }
}

/// A line's old and new numbers, right-aligned in `nw` columns (blank where it has none).
fn gutter_numbers(dl: &DiffLine, nw: usize) -> (String, String) {
    let num = |n: Option<usize>| match n {
        Some(n) => format!("{n:>nw$}"),
        None => " ".repeat(nw),
    };
    (num(dl.old_lineno), num(dl.new_lineno))
}

/// For each line of a hunk, the emphasised segments when it is part of a replacement (a run of
/// removed lines followed by a run of added ones). Replacements that start at or past line
/// `drawable` are not drawn and are left out; one that starts before it is found whole, since its
/// first lines' words depend on all of it.
fn inline_emphasis(lines: &[pablo_protocol::DiffLine], drawable: usize) -> Vec<Option<Segments>> {
    let mut out: Vec<Option<Segments>> = vec![None; lines.len()];
    let mut i = 0;
    while i < lines.len().min(drawable) {
        if lines[i].tag != DiffTag::Removed {
            i += 1;
            continue;
        }
        let r0 = i;
        while i < lines.len() && lines[i].tag == DiffTag::Removed {
            i += 1;
        }
        let a0 = i;
        while i < lines.len() && lines[i].tag == DiffTag::Added {
            i += 1;
        }
        if a0 == i {
            continue;
        }
        let expand = |range: std::ops::Range<usize>| -> Vec<String> {
            lines[range]
                .iter()
                .map(|l| l.text.replace('\t', "    "))
                .collect()
        };
        let (old_text, new_text) = (expand(r0..a0), expand(a0..i));
        let old: Vec<&str> = old_text.iter().map(String::as_str).collect();
        let new: Vec<&str> = new_text.iter().map(String::as_str).collect();
        let (removed, added) = word_diff::replacement(&old, &new);
        for (slot, segs) in out[r0..i].iter_mut().zip(removed.into_iter().chain(added)) {
            *slot = segs;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dl(tag: DiffTag, o: Option<usize>, n: Option<usize>, t: &str) -> DiffLine {
        DiffLine {
            tag,
            old_lineno: o,
            new_lineno: n,
            text: t.into(),
        }
    }

    #[test]
    fn a_replaced_line_emphasises_only_the_changed_part() {
        let lines = vec![
            dl(DiffTag::Removed, Some(3), None, "if a < b:"),
            dl(DiffTag::Added, None, Some(3), "if a <= b:"),
        ];
        let e = inline_emphasis(&lines, usize::MAX);
        let added = e[1].as_ref().unwrap();
        let emphasised: String = added
            .iter()
            .filter(|(e, _)| *e)
            .map(|(_, s)| s.as_str())
            .collect();
        let plain: String = added.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(emphasised, "=");
        assert_eq!(plain, "if a <= b:");
    }

    #[test]
    fn the_head_of_a_20000_line_diff_of_replacements_is_the_whole_renders_first_lines() {
        // 5,000 one-line replacements between context lines, then one 5,000-line rewrite: the
        // head finds the words of its first lines only, and must draw them as the whole does.
        let mut lines = Vec::new();
        for i in 0..5_000 {
            lines.push(dl(
                DiffTag::Context,
                Some(2 * i + 1),
                Some(2 * i + 1),
                "ctx",
            ));
            lines.push(dl(
                DiffTag::Removed,
                Some(2 * i + 2),
                None,
                &format!("a < {i}"),
            ));
            lines.push(dl(
                DiffTag::Added,
                None,
                Some(2 * i + 2),
                &format!("a <= {i}"),
            ));
        }
        for i in 0..2_500 {
            lines.push(dl(
                DiffTag::Removed,
                Some(10_001 + i),
                None,
                &format!("old {i}"),
            ));
        }
        for i in 0..2_500 {
            lines.push(dl(
                DiffTag::Added,
                None,
                Some(10_001 + i),
                &format!("new {i}"),
            ));
        }
        assert_eq!(lines.len(), 20_000);
        let hunks = vec![DiffHunk {
            header: "@@ -1,12500 +1,12500 @@".into(),
            old_start: 1,
            old_len: 12_500,
            new_start: 1,
            new_len: 12_500,
            lines,
        }];
        let whole = render_hunks(&hunks, 80, None);
        let (head, rows) = render_hunks_head(&hunks, 80, None, 12);
        assert_eq!(rows, whole.lines.len());
        assert_eq!(head.lines, whole.lines[..12]);
        // The head's replacements are emphasised: `=` alone on the added line.
        let added = &head.lines[3];
        let emphasised: Vec<&str> = added
            .spans
            .iter()
            .filter(|s| s.style == theme::added_word())
            .map(|s| s.content.as_ref())
            .collect();
        assert_eq!(emphasised, ["="]);
    }

    #[test]
    fn the_head_of_a_diff_is_its_first_lines_and_counts_every_row_the_whole_renders_to() {
        let long = "word ".repeat(40);
        let lines = vec![
            dl(DiffTag::Context, Some(1), Some(1), "fn main() {"),
            dl(DiffTag::Removed, Some(2), None, "\tlet a = 1;"),
            dl(DiffTag::Added, None, Some(2), "\tlet a = 2;"),
            dl(DiffTag::Added, None, Some(3), &long),
            dl(DiffTag::Added, None, Some(4), &"x".repeat(130)),
            dl(DiffTag::Context, Some(3), Some(5), "}"),
        ];
        let hunk = |start| DiffHunk {
            header: format!("@@ -{start},3 +{start},5 @@"),
            old_start: start,
            old_len: 3,
            new_start: start,
            new_len: 5,
            lines: lines.clone(),
        };
        let hunks = vec![hunk(1), hunk(100)];
        for width in [5, 9, 12, 20, 37, 60, 80, 200] {
            let whole = render_hunks(&hunks, width, None);
            for keep in [0, 1, 3, 7, 12, usize::MAX] {
                let (head, rows) = render_hunks_head(&hunks, width, None, keep);
                assert_eq!(rows, whole.lines.len(), "width {width}, keep {keep}");
                let n = keep.min(whole.lines.len());
                assert_eq!(head.lines, whole.lines[..n], "width {width}, keep {keep}");
            }
        }
    }
}
