//! A small markdown renderer for the assistant's answers.
//!
//! It is line-oriented on purpose: answers stream in, and a half-received message must render
//! sensibly at every point (an unclosed fence is a code block until it closes; an unclosed `**`
//! is literal text). It covers what models write in a terminal: headings, emphasis, inline code,
//! fenced code blocks, bullet and numbered lists, block quotes, rules and tables.
//!
//! Because it is line-oriented, the lines of a finished part of an answer never change when more
//! arrives, except inside a code block (which is framed when it closes) and a table (whose columns
//! are as wide as its widest cell). [`stable_prefix`] says how much of a streaming answer is
//! finished in that sense: inline mode prints it into the scrollback while the rest streams.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::text::wrap_line;
use super::theme;

/// Renders markdown to lines wrapped to `width`.
pub(crate) fn render(text: &str, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let mut in_fence = false;
    let lines: Vec<&str> = text.split('\n').collect();
    let mut i = 0;
    while i < lines.len() {
        let raw = lines[i];
        let trimmed = raw.trim_start();
        if is_fence(trimmed) {
            in_fence = !in_fence;
            if in_fence {
                let lang = trimmed.trim_start_matches(['`', '~']).trim();
                let label = if lang.is_empty() {
                    "╭─".to_string()
                } else {
                    format!("╭─ {lang}")
                };
                out.push(Line::from(Span::styled(label, theme::code_frame())));
            } else {
                out.push(Line::from(Span::styled("╰─", theme::code_frame())));
            }
            i += 1;
            continue;
        }
        if in_fence {
            // The code wraps inside the frame: every piece of a long line keeps the gutter, so
            // a wrapped line still reads as code (and a long first word does not leave the
            // gutter alone on a line of its own).
            let code = Line::from(Span::styled(raw.replace('\t', "    "), theme::code_block()));
            let mut pieces = Vec::new();
            wrap_line(&code, width.saturating_sub(2), 0, &mut pieces);
            for piece in pieces {
                let mut spans = vec![Span::styled("│ ", theme::code_frame())];
                spans.extend(piece.spans);
                out.push(Line::from(spans));
            }
            i += 1;
            continue;
        }
        // A table: a row, a delimiter row, and the rows that follow.
        if is_table_row(trimmed) && lines.get(i + 1).is_some_and(|l| is_delimiter_row(l)) {
            let end = (i + 2..lines.len())
                .find(|&j| !is_table_row(lines[j].trim_start()))
                .unwrap_or(lines.len());
            table(&lines[i..end], width, &mut out);
            i = end;
            continue;
        }
        block_line(raw, width, &mut out);
        i += 1;
    }
    out
}

fn is_fence(trimmed: &str) -> bool {
    trimmed.starts_with("```") || trimmed.starts_with("~~~")
}

fn is_table_row(trimmed: &str) -> bool {
    trimmed.starts_with('|')
}

/// `|---|:--:|---:|`: only dashes, colons, pipes and spaces, with at least one dash.
fn is_delimiter_row(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('|') && t.contains('-') && t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '))
}

/// How many bytes at the start of a streaming answer are finished: they end with a line break
/// after a line with text, outside a code block and outside a table that may still grow. Their
/// lines render the same whatever follows.
pub(crate) fn stable_prefix(text: &str) -> usize {
    let mut in_fence = false;
    let mut table_start: Option<usize> = None;
    let mut stable = 0;
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        if !line.ends_with('\n') {
            break;
        }
        let start = pos;
        pos += line.len();
        let trimmed = line.trim();
        if is_fence(trimmed) {
            in_fence = !in_fence;
        } else if !in_fence && is_table_row(trimmed) {
            table_start.get_or_insert(start);
        } else if !in_fence {
            table_start = None;
        }
        // A blank line goes with the text after it: at the end it would be one line too many
        // (each part is rendered with its trailing line breaks trimmed). So the blank lines
        // before a table stay with the table, and a table's rows move nothing until it ends.
        if !in_fence && !trimmed.is_empty() && table_start.is_none() {
            stable = pos;
        }
    }
    stable
}

/// The cells of a table row (`| a | b |`), trimmed, without the outer pipes.
fn table_cells(row: &str) -> Vec<&str> {
    let t = row.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    t.split('|').map(str::trim).collect()
}

/// Where a column's cells sit, from its delimiter cell (`:--`, `:-:`, `--:`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Align {
    Left,
    Center,
    Right,
}

fn column_aligns(delimiter: &str) -> Vec<Align> {
    table_cells(delimiter)
        .iter()
        .map(|c| match (c.starts_with(':'), c.ends_with(':')) {
            (true, true) => Align::Center,
            (false, true) => Align::Right,
            _ => Align::Left,
        })
        .collect()
}

/// A table drawn with box lines, its columns as wide as their widest cell; when that is wider
/// than `width`, the widest columns give way and their cells wrap.
fn table(rows: &[&str], width: usize, out: &mut Vec<Line<'static>>) {
    let header = table_cells(rows[0]);
    let aligns = column_aligns(rows[1]);
    let body: Vec<Vec<&str>> = rows[2..].iter().map(|r| table_cells(r)).collect();
    let cols = header
        .len()
        .max(body.iter().map(Vec::len).max().unwrap_or(0));
    let cell = |r: &Vec<&str>, c: usize| -> Vec<Span<'static>> {
        inline(r.get(c).copied().unwrap_or(""), Style::default())
    };
    let spans_width = |spans: &[Span<'static>]| -> usize {
        spans
            .iter()
            .map(|s| super::text::str_width(&s.content))
            .sum()
    };
    let mut widths = vec![1usize; cols];
    for r in std::iter::once(&header).chain(body.iter()) {
        for (c, w) in widths.iter_mut().enumerate() {
            *w = (*w).max(spans_width(&cell(r, c)));
        }
    }
    // Borders: one column per separator and a space each side of a cell.
    let frame = 3 * cols + 1;
    while widths.iter().sum::<usize>() + frame > width {
        let Some((widest, w)) = widths.iter().copied().enumerate().max_by_key(|(_, w)| *w) else {
            break;
        };
        if w <= 3 {
            break;
        }
        widths[widest] = w - 1;
    }
    let border = |l: &str, m: &str, r: &str| -> Line<'static> {
        let parts: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
        Line::from(Span::styled(
            format!("{l}{}{r}", parts.join(m)),
            theme::dim(),
        ))
    };
    out.push(border("┌", "┬", "┐"));
    table_row(&header, &widths, &aligns, true, out);
    out.push(border("├", "┼", "┤"));
    for r in &body {
        table_row(r, &widths, &aligns, false, out);
    }
    out.push(border("└", "┴", "┘"));
}

/// One row of a table: each cell wrapped to its column, the row as tall as its tallest cell.
fn table_row(
    row: &[&str],
    widths: &[usize],
    aligns: &[Align],
    header: bool,
    out: &mut Vec<Line<'static>>,
) {
    let style = if header {
        theme::bold()
    } else {
        Style::default()
    };
    let wrapped: Vec<Vec<Line<'static>>> = widths
        .iter()
        .enumerate()
        .map(|(c, w)| {
            let mut lines = Vec::new();
            let spans = inline(row.get(c).copied().unwrap_or(""), style);
            wrap_line(&Line::from(spans), *w, 0, &mut lines);
            lines
        })
        .collect();
    let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
    for k in 0..height {
        let mut spans = vec![Span::styled("│", theme::dim())];
        for (c, w) in widths.iter().enumerate() {
            let line = wrapped[c].get(k).cloned().unwrap_or_default();
            let free = w.saturating_sub(super::text::line_width(&line));
            let before = match aligns.get(c).copied().unwrap_or(Align::Left) {
                Align::Left => 0,
                Align::Center => free / 2,
                Align::Right => free,
            };
            spans.push(Span::raw(" ".repeat(before + 1)));
            spans.extend(line.spans);
            spans.push(Span::raw(" ".repeat(free - before + 1)));
            spans.push(Span::styled("│", theme::dim()));
        }
        out.push(Line::from(spans));
    }
}

fn block_line(raw: &str, width: usize, out: &mut Vec<Line<'static>>) {
    let trimmed = raw.trim_start();
    let lead = raw.len() - trimmed.len();
    if trimmed.is_empty() {
        out.push(Line::default());
        return;
    }
    if let Some(level) = heading_level(trimmed) {
        let body = trimmed[level..].trim();
        let style = theme::heading(level);
        let mut spans = inline(body, style);
        if level <= 2 {
            for s in &mut spans {
                s.style = s.style.add_modifier(Modifier::BOLD);
            }
        }
        wrap_line(&Line::from(spans), width, 0, out);
        return;
    }
    if is_rule(trimmed) {
        out.push(Line::from(Span::styled(
            "─".repeat(width.min(60)),
            theme::dim(),
        )));
        return;
    }
    if let Some(body) = trimmed.strip_prefix('>') {
        let mut spans = vec![Span::styled("▌ ", theme::quote())];
        spans.extend(inline(body.trim_start(), theme::quote()));
        wrap_line(&Line::from(spans), width, 2, out);
        return;
    }
    let indent = " ".repeat(lead.min(8));
    if let Some(body) = bullet(trimmed) {
        let mut spans = vec![
            Span::raw(indent.clone()),
            Span::styled("• ", theme::bullet()),
        ];
        spans.extend(inline(body, Style::default()));
        wrap_line(&Line::from(spans), width, indent.len() + 2, out);
        return;
    }
    if let Some((num, body)) = numbered(trimmed) {
        let marker = format!("{num}. ");
        let hang = indent.len() + marker.len();
        let mut spans = vec![Span::raw(indent), Span::styled(marker, theme::bullet())];
        spans.extend(inline(body, Style::default()));
        wrap_line(&Line::from(spans), width, hang, out);
        return;
    }
    let mut spans = vec![Span::raw(indent)];
    spans.extend(inline(trimmed, Style::default()));
    wrap_line(&Line::from(spans), width, 0, out);
}

fn heading_level(s: &str) -> Option<usize> {
    let n = s.chars().take_while(|&c| c == '#').count();
    if (1..=6).contains(&n) && s[n..].starts_with(' ') {
        Some(n)
    } else {
        None
    }
}

fn is_rule(s: &str) -> bool {
    let t: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    t.len() >= 3
        && (t.chars().all(|c| c == '-')
            || t.chars().all(|c| c == '*')
            || t.chars().all(|c| c == '_'))
}

fn bullet(s: &str) -> Option<&str> {
    for p in ["- ", "* ", "+ "] {
        if let Some(rest) = s.strip_prefix(p) {
            // A task list box renders as a checkbox.
            return Some(rest);
        }
    }
    None
}

fn numbered(s: &str) -> Option<(&str, &str)> {
    let digits = s.chars().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 || digits > 3 {
        return None;
    }
    let rest = &s[digits..];
    let body = rest
        .strip_prefix(". ")
        .or_else(|| rest.strip_prefix(") "))?;
    Some((&s[..digits], body))
}

/// Inline markup: `code`, **strong**, *emphasis* / _emphasis_, ~~strike~~. Unclosed markers stay
/// literal, which is what a half-streamed line should show.
pub(crate) fn inline(s: &str, base: Style) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    let mut plain = String::new();
    let mut rest = s;
    while !rest.is_empty() {
        let found = if let Some(r) = rest.strip_prefix('`') {
            r.find('`').map(|end| {
                (
                    Span::styled(r[..end].to_string(), theme::inline_code()),
                    1 + end + 1,
                )
            })
        } else if let Some(r) = rest.strip_prefix("**") {
            close(r, "**").map(|end| {
                (
                    Span::styled(r[..end].to_string(), base.add_modifier(Modifier::BOLD)),
                    2 + end + 2,
                )
            })
        } else if let Some(r) = rest.strip_prefix("~~") {
            close(r, "~~").map(|end| {
                (
                    Span::styled(
                        r[..end].to_string(),
                        base.add_modifier(Modifier::CROSSED_OUT),
                    ),
                    2 + end + 2,
                )
            })
        } else if let Some(r) = rest.strip_prefix('*').or_else(|| {
            // `_` only opens emphasis at a word boundary (snake_case stays as it is).
            if plain.is_empty() || plain.ends_with(' ') {
                rest.strip_prefix('_')
            } else {
                None
            }
        }) {
            let marker = &rest[..1];
            close(r, marker)
                .filter(|&end| {
                    r[end + 1..]
                        .chars()
                        .next()
                        .is_none_or(|c| !c.is_alphanumeric())
                })
                .map(|end| {
                    (
                        Span::styled(r[..end].to_string(), base.add_modifier(Modifier::ITALIC)),
                        1 + end + 1,
                    )
                })
        } else {
            None
        };
        match found {
            Some((span, used)) => {
                if !plain.is_empty() {
                    spans.push(Span::styled(std::mem::take(&mut plain), base));
                }
                spans.push(span);
                rest = &rest[used..];
            }
            None => {
                let mut chars = rest.chars();
                if let Some(c) = chars.next() {
                    plain.push(c);
                }
                rest = chars.as_str();
            }
        }
    }
    if !plain.is_empty() {
        spans.push(Span::styled(plain, base));
    }
    spans
}

/// Position of the closing marker, requiring non-empty, non-space-padded content.
fn close(r: &str, marker: &str) -> Option<usize> {
    if r.starts_with(' ') || r.is_empty() {
        return None;
    }
    let end = r.find(marker)?;
    if end == 0 || r[..end].ends_with(' ') {
        return None;
    }
    Some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn headings_lists_and_code_render_without_markup() {
        let md = "# Title\nSome **bold** and `code`.\n- item one\n2. second\n```sh\nls -l\n```";
        let lines = render(md, 40);
        assert_eq!(
            plain(&lines),
            vec![
                "Title",
                "Some bold and code.",
                "• item one",
                "2. second",
                "╭─ sh",
                "│ ls -l",
                "╰─"
            ]
        );
    }

    #[test]
    fn a_code_line_wider_than_the_screen_wraps_inside_the_frame() {
        let json = format!("{{\"output\":\"{}\"}} and more", "x".repeat(30));
        let md = format!("```\n{json}\n```");
        let lines = plain(&render(&md, 20));
        assert_eq!(lines.first().map(String::as_str), Some("╭─"));
        assert_eq!(lines.last().map(String::as_str), Some("╰─"));
        let body = &lines[1..lines.len() - 1];
        assert!(body.len() >= 3, "{lines:?}");
        for l in body {
            assert!(l.starts_with("│ ") && l.len() > "│ ".len(), "{lines:?}");
            assert!(l.chars().count() <= 20, "{lines:?}");
        }
        let joined: String = body.iter().map(|l| &l["│ ".len()..]).collect();
        assert_eq!(joined.replace(' ', ""), json.replace(' ', ""));
    }

    #[test]
    fn unclosed_markers_stay_literal_while_streaming() {
        let lines = render("this is **half", 40);
        assert_eq!(plain(&lines), vec!["this is **half"]);
    }

    #[test]
    fn a_table_renders_with_aligned_columns_and_box_lines() {
        let md = "| name | count |\n|---|---:|\n| apples | 3 |\n| kiwis | 12 |\nafter";
        assert_eq!(
            plain(&render(md, 60)),
            vec![
                "┌────────┬───────┐",
                "│ name   │ count │",
                "├────────┼───────┤",
                "│ apples │     3 │",
                "│ kiwis  │    12 │",
                "└────────┴───────┘",
                "after",
            ]
        );
    }

    #[test]
    fn a_tables_columns_sit_where_their_delimiter_colons_say() {
        let lines = plain(&render(
            "| name | n | mid |\n|:--|--:|:-:|\n| a | 7 | x |\n| bb | 123 | yyy |",
            40,
        ));
        assert_eq!(lines[3], "│ a    │   7 │  x  │", "{lines:#?}");
        assert_eq!(lines[4], "│ bb   │ 123 │ yyy │", "{lines:#?}");
    }

    #[test]
    fn a_table_wider_than_the_screen_wraps_inside_its_cells() {
        let md = "| a | b |\n|---|---|\n| one two three four | x |";
        let lines = plain(&render(md, 16));
        assert!(lines.iter().all(|l| l.chars().count() <= 16), "{lines:#?}");
        assert!(lines.iter().any(|l| l.contains("one two")), "{lines:#?}");
        assert!(lines.iter().any(|l| l.contains("four")), "{lines:#?}");
    }

    #[test]
    fn the_stable_prefix_ends_after_complete_lines_outside_code_blocks_and_tables() {
        assert_eq!(stable_prefix("one\ntwo"), 4);
        assert_eq!(stable_prefix("one\ntwo\n"), 8);
        // A blank line waits for the text after it.
        assert_eq!(stable_prefix("one\n\n"), 4);
        // A code block is held until it closes.
        let code = "intro\n```sh\nls\n";
        assert_eq!(stable_prefix(code), 6);
        let closed = "intro\n```sh\nls\n```\n";
        assert_eq!(stable_prefix(closed), closed.len());
        // A table is held until a line that is not a row follows it.
        let table = "intro\n| a |\n|---|\n| 1 |\n";
        assert_eq!(stable_prefix(table), 6);
        let done = format!("{table}after\n");
        assert_eq!(stable_prefix(&done), done.len());
        // The blank line before a table waits with the table, so it is not lost at a cut.
        assert_eq!(stable_prefix("intro\n\n| a |\n|---|\n| 1 |\n"), 6);
    }

    #[test]
    fn a_blank_line_before_a_table_survives_the_cut_of_a_streaming_answer() {
        let md = "1. first\n2. second\n\n| x | y |\n|--:|---|\n| 1 | 2 |\n";
        let cut = stable_prefix(md);
        let mut parts = plain(&render(md[..cut].trim_end_matches('\n'), 30));
        parts.extend(plain(&render(&md[cut..], 30)));
        assert_eq!(parts, plain(&render(md, 30)));
    }

    #[test]
    fn a_finished_prefix_renders_as_the_start_of_the_whole() {
        let md = "# Title\n- a\n\n```\ncode\n```\n| x | y |\n|---|---|\n| 1 | 2 |\nend of it\nmore";
        let cut = stable_prefix(md);
        let mut parts = plain(&render(md[..cut].trim_end_matches('\n'), 30));
        parts.extend(plain(&render(&md[cut..], 30)));
        assert_eq!(parts, plain(&render(md, 30)));
    }

    #[test]
    fn snake_case_is_not_emphasis() {
        let spans = inline("call fs_read_file now", Style::default());
        assert_eq!(spans.len(), 1);
    }
}
