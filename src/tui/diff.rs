//! Renders a file change's hunks for review: old/new line numbers, `+`/`−` gutters, red and green
//! backgrounds, and the changed words inside a replaced line emphasised (similar's inline diff), so
//! a reviewer sees at a glance that only `<` became `<=`.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use similar::{ChangeTag, TextDiff};

use super::text::wrap_line;
use super::theme;
use crate::protocol::{DiffHunk, DiffTag};

/// Rendered diff lines and where each hunk starts among them (for next/previous hunk).
#[derive(Debug, Clone, Default)]
pub struct DiffRender {
    pub lines: Vec<Line<'static>>,
    pub hunk_starts: Vec<usize>,
}

/// Per-hunk review state passed to the renderer: which hunks are accepted and which one has focus.
#[derive(Debug, Clone, Copy)]
pub struct HunkMarks<'a> {
    pub accepted: &'a [bool],
    pub focused: usize,
}

pub fn render_hunks(hunks: &[DiffHunk], width: usize, marks: Option<HunkMarks<'_>>) -> DiffRender {
    let max_no = hunks
        .iter()
        .map(|h| (h.old_start + h.old_len).max(h.new_start + h.new_len))
        .max()
        .unwrap_or(1);
    let nw = max_no.to_string().len();
    let mut out = DiffRender::default();
    for (i, hunk) in hunks.iter().enumerate() {
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
        let emphasis = inline_emphasis(&hunk.lines);
        for (k, dl) in hunk.lines.iter().enumerate() {
            let num = |n: Option<usize>| match n {
                Some(n) => format!("{n:>nw$}"),
                None => " ".repeat(nw),
            };
            let (sign, line_style, word_style) = match dl.tag {
                DiffTag::Context => (" ", Style::default(), Style::default()),
                DiffTag::Added => ("+", theme::added_line(), theme::added_word()),
                DiffTag::Removed => ("−", theme::removed_line(), theme::removed_word()),
            };
            let (line_style, word_style) = if accepted {
                (line_style, word_style)
            } else {
                (theme::dim(), theme::dim())
            };
            let mut spans = vec![
                Span::styled(
                    format!("{} {} ", num(dl.old_lineno), num(dl.new_lineno)),
                    theme::dim(),
                ),
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
            wrap_line(&Line::from(spans), width, nw * 2 + 4, &mut out.lines);
        }
    }
    out
}

type Segments = Vec<(bool, String)>;

/// For each line of a hunk, the emphasised segments when it is part of a replacement (a run of
/// removed lines followed by a run of added ones).
fn inline_emphasis(lines: &[crate::protocol::DiffLine]) -> Vec<Option<Segments>> {
    let mut out: Vec<Option<Segments>> = vec![None; lines.len()];
    let mut i = 0;
    while i < lines.len() {
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
        let join = |range: std::ops::Range<usize>| {
            let mut s = String::new();
            for l in &lines[range] {
                s.push_str(&l.text.replace('\t', "    "));
                s.push('\n');
            }
            s
        };
        let old = join(r0..a0);
        let new = join(a0..i);
        let diff = TextDiff::from_lines(&old, &new);
        let mut removed_idx = r0;
        let mut added_idx = a0;
        let mut ok = true;
        for op in diff.ops() {
            for change in diff.iter_inline_changes(op) {
                let segs: Segments = change
                    .iter_strings_lossy()
                    .map(|(e, s)| (e, s.trim_end_matches('\n').to_string()))
                    .filter(|(_, s)| !s.is_empty())
                    .collect();
                match change.tag() {
                    ChangeTag::Delete if removed_idx < a0 => {
                        out[removed_idx] = Some(segs);
                        removed_idx += 1;
                    }
                    ChangeTag::Insert if added_idx < i => {
                        out[added_idx] = Some(segs);
                        added_idx += 1;
                    }
                    ChangeTag::Equal if removed_idx < a0 && added_idx < i => {
                        removed_idx += 1;
                        added_idx += 1;
                    }
                    _ => ok = false,
                }
            }
        }
        if !ok {
            for o in &mut out[r0..i] {
                *o = None;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::DiffLine;

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
        let e = inline_emphasis(&lines);
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
}
