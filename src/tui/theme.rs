//! The palette, in one place, so every widget speaks the same colours: green for what is added or
//! allowed, red for what is removed or refused, yellow for what waits on the person, cyan for
//! structure (headings, hunk headers, code).

use ratatui::style::{Color, Modifier, Style};

pub fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}
/// Reasoning: quieter than the answer, so the eye skips it.
pub fn thought() -> Style {
    Style::default()
        .fg(Color::DarkGray)
        .add_modifier(Modifier::ITALIC)
}
pub fn accent() -> Style {
    Style::default().fg(Color::Cyan)
}
pub fn user() -> Style {
    Style::default()
        .fg(Color::Magenta)
        .add_modifier(Modifier::BOLD)
}
pub fn ok() -> Style {
    Style::default().fg(Color::Green)
}
pub fn warn() -> Style {
    Style::default().fg(Color::Yellow)
}
pub fn error() -> Style {
    Style::default().fg(Color::Red)
}
pub fn bold() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}
pub fn heading(level: usize) -> Style {
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
pub fn code_frame() -> Style {
    Style::default().fg(Color::DarkGray)
}
pub fn code_block() -> Style {
    Style::default().fg(Color::LightYellow)
}
pub fn inline_code() -> Style {
    Style::default().fg(Color::LightYellow)
}
pub fn quote() -> Style {
    Style::default()
        .fg(Color::Gray)
        .add_modifier(Modifier::ITALIC)
}
pub fn bullet() -> Style {
    Style::default().fg(Color::Cyan)
}
pub fn hunk_header() -> Style {
    Style::default().fg(Color::Cyan)
}
pub fn added_line() -> Style {
    Style::default().fg(Color::Green).bg(Color::Rgb(16, 48, 16))
}
pub fn removed_line() -> Style {
    Style::default().fg(Color::Red).bg(Color::Rgb(56, 16, 16))
}
pub fn added_word() -> Style {
    Style::default()
        .fg(Color::LightGreen)
        .bg(Color::Rgb(24, 96, 24))
        .add_modifier(Modifier::BOLD)
}
pub fn removed_word() -> Style {
    Style::default()
        .fg(Color::LightRed)
        .bg(Color::Rgb(112, 24, 24))
        .add_modifier(Modifier::BOLD)
}
pub fn selected() -> Style {
    Style::default().add_modifier(Modifier::REVERSED)
}
pub fn status_bar() -> Style {
    Style::default().fg(Color::Gray).bg(Color::Rgb(30, 30, 40))
}
pub fn key() -> Style {
    Style::default()
        .fg(Color::Yellow)
        .add_modifier(Modifier::BOLD)
}
