//! The palette, in one place, so every widget speaks the same colours: green for what is added or
//! allowed, red for what is removed or refused, yellow for what waits on the person, cyan for
//! structure (headings, hunk headers, code).

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

pub(crate) fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}
/// Reasoning: quieter than the answer, so the eye skips it.
pub(crate) fn thought() -> Style {
    Style::default()
        .fg(Color::DarkGray)
        .add_modifier(Modifier::ITALIC)
}
pub(crate) fn accent() -> Style {
    Style::default().fg(Color::Cyan)
}
pub(crate) fn user() -> Style {
    Style::default()
        .fg(Color::Magenta)
        .add_modifier(Modifier::BOLD)
}
pub(crate) fn ok() -> Style {
    Style::default().fg(Color::Green)
}
pub(crate) fn warn() -> Style {
    Style::default().fg(Color::Yellow)
}
pub(crate) fn error() -> Style {
    Style::default().fg(Color::Red)
}
pub(crate) fn bold() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}
pub(crate) fn heading(level: usize) -> Style {
    match level {
        1 => Style::default()
            .fg(Color::Cyan)
            .add_modifier(Modifier::UNDERLINED),
        2 => Style::default().fg(Color::Cyan),
        _ => Style::default()
            .fg(Color::Cyan)
            .add_modifier(Modifier::BOLD),
    }
}
pub(crate) fn code_frame() -> Style {
    Style::default().fg(Color::DarkGray)
}
pub(crate) fn code_block() -> Style {
    Style::default().fg(Color::LightYellow)
}
pub(crate) fn inline_code() -> Style {
    Style::default().fg(Color::LightYellow)
}
pub(crate) fn quote() -> Style {
    Style::default()
        .fg(Color::Gray)
        .add_modifier(Modifier::ITALIC)
}
pub(crate) fn bullet() -> Style {
    Style::default().fg(Color::Cyan)
}
pub(crate) fn hunk_header() -> Style {
    Style::default().fg(Color::Cyan)
}
pub(crate) fn added_line() -> Style {
    Style::default().fg(Color::Green).bg(Color::Rgb(16, 48, 16))
}
pub(crate) fn removed_line() -> Style {
    Style::default().fg(Color::Red).bg(Color::Rgb(56, 16, 16))
}
pub(crate) fn added_word() -> Style {
    Style::default()
        .fg(Color::LightGreen)
        .bg(Color::Rgb(24, 96, 24))
        .add_modifier(Modifier::BOLD)
}
pub(crate) fn removed_word() -> Style {
    Style::default()
        .fg(Color::LightRed)
        .bg(Color::Rgb(112, 24, 24))
        .add_modifier(Modifier::BOLD)
}
pub(crate) fn selected() -> Style {
    Style::default().add_modifier(Modifier::REVERSED)
}
pub(crate) fn status_bar() -> Style {
    Style::default().fg(Color::Gray).bg(Color::Rgb(30, 30, 40))
}
pub(crate) fn key() -> Style {
    Style::default()
        .fg(Color::Yellow)
        .add_modifier(Modifier::BOLD)
}

/// A list row's start: `▶ ` on the selected row (two spaces on the others), and the style of its
/// main text.
pub(crate) fn row_marker(selected: bool) -> (ratatui::text::Span<'static>, Style) {
    let style = if selected {
        self::selected()
    } else {
        Style::default()
    };
    (
        ratatui::text::Span::styled(if selected { "▶ " } else { "  " }, key()),
        style,
    )
}

/// A line of key hints (`esc back  enter send`): each key in the key style, what it does dimmed.
pub(crate) fn keys_line(keys: &[(&str, &str)]) -> Line<'static> {
    let mut spans = Vec::new();
    for (k, what) in keys {
        spans.push(Span::styled(k.to_string(), key()));
        spans.push(Span::styled(format!(" {what}  "), dim()));
    }
    Line::from(spans)
}
