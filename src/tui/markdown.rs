//! A small markdown renderer for the assistant's answers.
//!
//! It is line-oriented on purpose: answers stream in, and a half-received message must render
//! sensibly at every point (an unclosed fence is a code block until it closes; an unclosed `**`
//! is literal text). It covers what models write in a terminal: headings, emphasis, inline code,
//! fenced code blocks, bullet and numbered lists, block quotes and rules.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::text::wrap_line;
use super::theme;

/// Renders markdown to lines wrapped to `width`.
pub fn render(text: &str, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for raw in text.split('\n') {
        let trimmed = raw.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
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
            continue;
        }
        if in_fence {
            let line = Line::from(vec![
                Span::styled("│ ", theme::code_frame()),
                Span::styled(raw.replace('\t', "    "), theme::code_block()),
            ]);
            wrap_line(&line, width, 2, &mut out);
            continue;
        }
        block_line(raw, width, &mut out);
    }
    out
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
pub fn inline(s: &str, base: Style) -> Vec<Span<'static>> {
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
    fn unclosed_markers_stay_literal_while_streaming() {
        let lines = render("this is **half", 40);
        assert_eq!(plain(&lines), vec!["this is **half"]);
    }

    #[test]
    fn snake_case_is_not_emphasis() {
        let spans = inline("call fs_read_file now", Style::default());
        assert_eq!(spans.len(), 1);
    }
}
