//! Drawing: the layout of the screen and `impl Widget for &AppState`.
//!
//! Rendering is a function of state. The only mutable step is [`prepare`], which updates the
//! transcript's line cache for the current size before a frame is drawn.

use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Widget};

use super::info::session_line;
use super::layers::{ApprovalView, ArtifactsView, Layer, MemoryView, ResumeView, SessionsView};
use super::state::AppState;
use super::status::draw_status;
use super::text::{truncate, wrap_line};
use super::theme;
use pablo_protocol::{MemoryStatus, PlanStatus};

/// Terminals at least this wide get the side panel.
pub(crate) const WIDE: u16 = 100;
const SIDE_WIDTH: u16 = 36;
const COMPOSER_MAX_LINES: usize = 8;

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Areas {
    pub(crate) transcript: Rect,
    pub(crate) side: Option<Rect>,
    pub(crate) strip: Option<Rect>,
    pub(crate) composer: Rect,
    pub(crate) status: Rect,
    /// Everything above the composer (modals draw here).
    pub(crate) main: Rect,
}

fn composer_lines(state: &AppState, width: u16) -> (Vec<Line<'static>>, (usize, usize)) {
    state
        .composer()
        .layout(width.saturating_sub(3) as usize, placeholder(state))
}

/// Most queued messages listed above the composer (the rest are counted).
const QUEUE_MAX_SHOWN: usize = 3;

/// The messages typed during the turn, waiting to be sent when it ends: shown above the
/// composer, with the key that takes them back.
fn queue_lines(state: &AppState, width: u16) -> Vec<Line<'static>> {
    let queued = state.queued();
    if queued.is_empty() {
        return Vec::new();
    }
    let room = (width as usize).saturating_sub(14);
    let mut out: Vec<Line<'static>> = queued
        .iter()
        .take(QUEUE_MAX_SHOWN)
        .map(|q| {
            let first = q.lines().next().unwrap_or("");
            let more = if q.lines().nth(1).is_some() {
                " …"
            } else {
                ""
            };
            Line::from(vec![
                Span::styled(" ↳ queued  ", theme::dim()),
                Span::raw(truncate(&format!("{first}{more}"), room)),
            ])
        })
        .collect();
    if queued.len() > QUEUE_MAX_SHOWN {
        out.push(Line::from(Span::styled(
            format!("   … and {} more", queued.len() - QUEUE_MAX_SHOWN),
            theme::dim(),
        )));
    }
    out.push(Line::from(vec![
        Span::styled("   sent when this turn ends · ", theme::dim()),
        Span::styled("esc", theme::key()),
        Span::styled(" interrupts and takes them back to edit", theme::dim()),
    ]));
    out
}

fn placeholder(state: &AppState) -> &'static str {
    if state.turn_running() {
        "working… (esc interrupts; you can type the next message)"
    } else {
        "Ask pablo to do something · /help for commands"
    }
}

/// Whether this frame draws only the live part under the scrollback (inline mode, no full-screen
/// overlay open).
fn is_inline_frame(state: &AppState) -> bool {
    state.is_inline() && !state.wants_full_screen()
}

/// The rows the inline viewport needs at `width`: the live cells, the checklist strip, an open
/// prompt, the composer and the status line; at most `rows`. `prepare` must have run.
/// Most rows the completion popup takes (the list scrolls past them).
pub(crate) const POPUP_MAX_ROWS: u16 = 16;

pub(crate) fn inline_height(state: &AppState, width: u16, rows: u16) -> u16 {
    let (lines, _) = composer_lines(state, width);
    let composer_h = lines.len().clamp(1, COMPOSER_MAX_LINES) as u16
        + 1
        + queue_lines(state, width).len() as u16;
    let strip_h = strip_height(state, false);
    let fixed = composer_h + 1 + strip_h;
    let prompt_h = match state.layers().last() {
        Some(Layer::Approval(v)) if !v.fullscreen => {
            approval_height(v, Rect::new(0, 0, width, rows.saturating_sub(fixed)), true)
        }
        Some(Layer::Question(q)) => {
            q.height(Rect::new(0, 0, width, rows.saturating_sub(fixed)), true)
        }
        _ => 0,
    };
    // The completion popup floats over the live lines above the composer: room for it too.
    let popup_h = if state.layers().is_empty() {
        (state.composer().completions().len() as u16).min(POPUP_MAX_ROWS)
    } else {
        0
    };
    let live = (state.transcript().total_lines() as u16).max(popup_h);
    (fixed + prompt_h + live).min(rows)
}

fn strip_height(state: &AppState, wide: bool) -> u16 {
    if !wide && !state.plan().items.is_empty() {
        if state.todo_toggled() {
            (state.plan().items.len() as u16 + 1).min(10)
        } else {
            1
        }
    } else {
        0
    }
}

pub(crate) fn layout(state: &AppState, area: Rect) -> Areas {
    let (lines, _) = composer_lines(state, area.width);
    let composer_h = lines.len().clamp(1, COMPOSER_MAX_LINES) as u16
        + 1
        + queue_lines(state, area.width).len() as u16;
    let status_h = 1;
    // Inline, the checklist is always the strip: the viewport is too short for a side panel.
    let wide = area.width >= WIDE && !is_inline_frame(state);
    let has_side_content =
        !state.plan().items.is_empty() || !state.background().sessions.is_empty();
    let side_visible = wide && has_side_content && !state.todo_toggled();
    let strip_h = if !wide && !state.plan().items.is_empty() {
        if state.todo_toggled() {
            (state.plan().items.len() as u16 + 1).min(10)
        } else {
            1
        }
    } else {
        0
    };
    let main_h = area.height.saturating_sub(composer_h + status_h + strip_h);
    let main = Rect::new(area.x, area.y, area.width, main_h);
    // An approval prompt sits under the transcript, not over its newest lines: the transcript
    // gets the rows above it, so what led to the question stays readable.
    let prompt_h = match state.layers().last() {
        Some(Layer::Approval(v)) if !v.fullscreen => {
            approval_height(v, main, is_inline_frame(state))
        }
        Some(Layer::Question(q)) => q.height(main, is_inline_frame(state)),
        _ => 0,
    };
    let content_h = main_h.saturating_sub(prompt_h);
    let (transcript, side) = if side_visible {
        let sw = SIDE_WIDTH.min(area.width / 2);
        (
            Rect::new(area.x, area.y, area.width - sw, content_h),
            Some(Rect::new(area.x + area.width - sw, area.y, sw, content_h)),
        )
    } else {
        (Rect::new(area.x, area.y, area.width, content_h), None)
    };
    let strip = (strip_h > 0).then(|| Rect::new(area.x, area.y + main_h, area.width, strip_h));
    let composer = Rect::new(area.x, area.y + main_h + strip_h, area.width, composer_h);
    let status = Rect::new(
        area.x,
        area.y + area.height.saturating_sub(1),
        area.width,
        status_h,
    );
    Areas {
        transcript,
        side,
        strip,
        composer,
        status,
        main: Rect::new(area.x, area.y, area.width, main_h + strip_h),
    }
}

/// Inner transcript area (one column of margin on each side).
fn transcript_inner(r: Rect) -> Rect {
    Rect::new(r.x + 1, r.y, r.width.saturating_sub(2), r.height)
}

/// Brings caches up to date for a frame of `area`'s size.
pub(crate) fn prepare(state: &mut AppState, area: Rect) {
    let areas = layout(state, area);
    let inner = transcript_inner(areas.transcript);
    let now = state.now();
    state
        .transcript_mut()
        .prepare(inner.width as usize, inner.height as usize, now);
}

/// Where the terminal cursor goes (the composer, or a note being typed), if anywhere.
pub(crate) fn cursor_position(state: &AppState, area: Rect) -> Option<Position> {
    if !state.layers().is_empty() {
        return None;
    }
    let a = layout(state, area);
    let (_, (row, col)) = composer_lines(state, area.width);
    let first = row.saturating_sub(COMPOSER_MAX_LINES - 1);
    let queued = queue_lines(state, area.width).len() as u16;
    let y = a.composer.y + 1 + queued + (row - first) as u16;
    let x = a.composer.x + 2 + col as u16;
    (y < a.composer.y + a.composer.height && x < area.width).then_some(Position::new(x, y))
}

impl Widget for &AppState {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let a = layout(self, area);
        let inner = transcript_inner(a.transcript);
        if self.transcript().is_empty() && !is_inline_frame(self) {
            draw_welcome(self, inner, buf);
        } else {
            self.transcript().draw(inner, buf);
            let below = self.transcript().lines_below();
            if below > 0 && inner.height > 0 {
                let hint = format!(" ↓ {below} more lines (pgdn) ");
                let w = hint.chars().count() as u16;
                let x = inner.x + inner.width.saturating_sub(w);
                buf.set_string(x, inner.y + inner.height - 1, hint, theme::selected());
            }
        }
        if let Some(side) = a.side {
            draw_side(self, side, buf);
        }
        if let Some(strip) = a.strip {
            draw_strip(self, strip, buf);
        }
        draw_composer(self, a.composer, buf);
        draw_status(self, a.status, buf);
        if self.layers().is_empty() {
            draw_popup(self, a.composer, buf);
        }
        for layer in self.layers() {
            match layer {
                Layer::Approval(v) => {
                    let strip_h = a.strip.map_or(0, |r| r.height);
                    let above_strip = Rect {
                        height: a.main.height.saturating_sub(strip_h),
                        ..a.main
                    };
                    draw_approval(v, above_strip, area, is_inline_frame(self), buf);
                }
                Layer::Question(q) => {
                    let strip_h = a.strip.map_or(0, |r| r.height);
                    let above_strip = Rect {
                        height: a.main.height.saturating_sub(strip_h),
                        ..a.main
                    };
                    q.draw(above_strip, is_inline_frame(self), buf);
                }
                Layer::Sessions(s) => draw_sessions(self, s, a.main, buf),
                Layer::Resume(r) => draw_resume(self, r, a.main, buf),
                Layer::Model(m) => draw_models(m, a.main, buf),
                Layer::Artifacts(v) => draw_artifacts(v, a.main, buf),
                Layer::Memory(v) => draw_memory(v, a.main, buf),
                Layer::Rewind(r) => r.draw(a.main, buf),
                Layer::Restore(r) => r.draw(a.main, buf),
            }
        }
    }
}

fn draw_welcome(state: &AppState, area: Rect, buf: &mut Buffer) {
    let out = welcome_lines(state, area.width as usize);
    for (i, l) in out.iter().take(area.height as usize).enumerate() {
        buf.set_line(area.x, area.y + i as u16, l, area.width);
    }
}

/// The greeting: what pablo is, the workspace, the first keys. Full-screen mode draws it while the
/// transcript is empty; inline mode prints it once into the scrollback.
pub(crate) fn welcome_lines(state: &AppState, width: usize) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::default(),
        Line::from(vec![
            Span::styled(
                "pablo",
                theme::heading(1).add_modifier(ratatui::style::Modifier::BOLD),
            ),
            Span::styled("  a terminal coding agent", theme::dim()),
        ]),
        Line::default(),
        Line::from(Span::raw(
            "Every edit is shown as a diff and every command is judged before it runs.",
        )),
        Line::default(),
    ];
    if !state.status().workspace.is_empty() {
        lines.push(Line::from(vec![
            Span::styled("workspace  ", theme::dim()),
            Span::raw(state.status().workspace.clone()),
        ]));
    }
    lines.push(Line::default());
    for (k, what) in [
        ("enter", "send a task"),
        ("/help", "commands and keys"),
        ("ctrl-c ctrl-c", "quit"),
    ] {
        lines.push(Line::from(vec![
            Span::styled(format!("  {k:<15}"), theme::key()),
            Span::styled(what, theme::dim()),
        ]));
    }
    if state.is_inline() {
        lines.push(Line::default());
    }
    let mut out = Vec::new();
    for l in &lines {
        wrap_line(l, width, 0, &mut out);
    }
    out
}

fn plan_lines(state: &AppState, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for item in &state.plan().items {
        let (mark, style) = match item.status {
            PlanStatus::Pending => ("☐ ", Style::default()),
            PlanStatus::InProgress => ("◐ ", theme::warn()),
            PlanStatus::Completed => ("☑ ", theme::dim()),
        };
        let line = Line::from(vec![
            Span::styled(mark, style),
            Span::styled(item.content.clone(), style),
        ]);
        wrap_line(&line, width, 2, &mut out);
    }
    out
}

fn draw_side(state: &AppState, area: Rect, buf: &mut Buffer) {
    let block = Block::default()
        .borders(Borders::LEFT)
        .border_style(theme::dim());
    let inner = block.inner(area);
    block.render(area, buf);
    let inner = Rect::new(
        inner.x + 1,
        inner.y,
        inner.width.saturating_sub(1),
        inner.height,
    );
    let width = inner.width as usize;
    let mut lines = Vec::new();
    if !state.plan().items.is_empty() {
        let (done, total) = state.plan().progress();
        lines.push(Line::from(vec![
            Span::styled("Todo ", theme::bold()),
            Span::styled(format!("{done}/{total}"), theme::accent()),
        ]));
        lines.extend(plan_lines(state, width));
        if let Some(e) = &state.plan().explanation {
            wrap_line(
                &Line::from(Span::styled(e.clone(), theme::dim())),
                width,
                0,
                &mut lines,
            );
        }
        lines.push(Line::default());
    }
    if !state.background().sessions.is_empty() {
        lines.push(Line::from(vec![
            Span::styled("Background ", theme::bold()),
            Span::styled(
                format!("{} running", state.background().running()),
                theme::accent(),
            ),
            Span::styled("  ctrl-b", theme::dim()),
        ]));
        for s in &state.background().sessions {
            let mark = if s.running {
                Span::styled("● ", theme::ok())
            } else {
                Span::styled("○ ", theme::dim())
            };
            lines.push(Line::from(vec![
                mark,
                Span::styled(format!("{} ", s.session_id), theme::dim()),
                Span::raw(truncate(
                    &s.command,
                    width.saturating_sub(s.session_id.len() + 3),
                )),
            ]));
        }
    }
    for (i, l) in lines.iter().take(inner.height as usize).enumerate() {
        buf.set_line(inner.x, inner.y + i as u16, l, inner.width);
    }
}

fn draw_strip(state: &AppState, area: Rect, buf: &mut Buffer) {
    let (done, total) = state.plan().progress();
    let current = state
        .plan()
        .items
        .iter()
        .find(|i| i.status == PlanStatus::InProgress)
        .or_else(|| {
            state
                .plan()
                .items
                .iter()
                .find(|i| i.status == PlanStatus::Pending)
        });
    let mut head = vec![
        Span::styled(" Todo ", theme::bold()),
        Span::styled(format!("{done}/{total} "), theme::accent()),
    ];
    if !state.todo_toggled()
        && let Some(c) = current
    {
        let mark = if c.status == PlanStatus::InProgress {
            "◐ "
        } else {
            "☐ "
        };
        head.push(Span::styled(mark, theme::warn()));
        let room = (area.width as usize).saturating_sub(24);
        head.push(Span::raw(truncate(&c.content, room)));
    }
    head.push(Span::styled(
        if state.todo_toggled() {
            "  (ctrl-t hides)"
        } else {
            "  (ctrl-t)"
        },
        theme::dim(),
    ));
    buf.set_line(area.x, area.y, &Line::from(head), area.width);
    if state.todo_toggled() {
        let lines = plan_lines(state, area.width.saturating_sub(3) as usize);
        for (i, l) in lines
            .iter()
            .take(area.height.saturating_sub(1) as usize)
            .enumerate()
        {
            buf.set_line(
                area.x + 3,
                area.y + 1 + i as u16,
                l,
                area.width.saturating_sub(3),
            );
        }
    }
}

fn draw_composer(state: &AppState, area: Rect, buf: &mut Buffer) {
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(if state.turn_running() {
            theme::dim()
        } else {
            theme::accent()
        });
    block.render(area, buf);
    if let Some(label) = vim_label(state) {
        buf.set_line(area.x + 1, area.y, &label, area.width.saturating_sub(2));
    }
    let queued = queue_lines(state, area.width);
    for (i, l) in queued.iter().enumerate() {
        let y = area.y + 1 + i as u16;
        if y < area.y + area.height {
            buf.set_line(area.x, y, l, area.width);
        }
    }
    let top = area.y + 1 + queued.len() as u16;
    if top >= area.y + area.height {
        return;
    }
    let (lines, (row, _)) = composer_lines(state, area.width);
    let first = row.saturating_sub(COMPOSER_MAX_LINES - 1);
    buf.set_string(area.x, top, "›", theme::user());
    for (i, l) in lines
        .iter()
        .skip(first)
        .take((area.y + area.height - top) as usize)
        .enumerate()
    {
        buf.set_line(area.x + 2, top + i as u16, l, area.width.saturating_sub(3));
    }
}

/// Vim mode's label in the composer's border: the mode, a command being typed (`NORMAL 2d`),
/// and, while a turn runs in normal mode, what Esc does there.
fn vim_label(state: &AppState) -> Option<Line<'static>> {
    use super::vim::Mode;
    let vim = state.composer().vim()?;
    let mode = vim.mode();
    let style = match mode {
        Mode::Normal => theme::key(),
        Mode::Insert => theme::accent(),
    };
    let mut spans = vec![Span::styled(format!(" {} ", mode.name()), style)];
    if !vim.pending().is_empty() {
        spans.push(Span::styled(format!("{} ", vim.pending()), theme::key()));
    } else if mode == Mode::Normal && state.turn_running() {
        spans.push(Span::styled("· esc interrupts the turn ", theme::dim()));
    }
    Some(Line::from(spans))
}

fn draw_popup(state: &AppState, composer: Rect, buf: &mut Buffer) {
    let items = state.composer().completions();
    if items.is_empty() || composer.y == 0 {
        return;
    }
    let h = (items.len() as u16).min(composer.y).min(POPUP_MAX_ROWS);
    // Whole rows: no transcript text is left beside the popup, and descriptions get the width.
    let w = composer.width;
    let area = Rect::new(composer.x, composer.y - h, w, h);
    Clear.render(area, buf);
    let sel = state.composer().selected.min(items.len() - 1);
    // The selection stays visible: the list scrolls once it passes the last row.
    let skip = sel.saturating_sub((h as usize).saturating_sub(1));
    for (i, item) in items.iter().skip(skip).take(h as usize).enumerate() {
        let style = if i + skip == sel {
            theme::selected()
        } else {
            theme::status_bar()
        };
        let label = format!("  {:<14}", item.label);
        let room = (w as usize).saturating_sub(super::text::str_width(&label) + 2);
        let detail = super::text::truncate(&item.detail, room);
        let line = Line::from(vec![
            Span::styled(label, style.patch(theme::key())),
            Span::styled(format!(" {detail}"), style),
        ]);
        buf.set_style(Rect::new(area.x, area.y + i as u16, w, 1), style);
        buf.set_line(area.x, area.y + i as u16, &line, w);
    }
}

/// Rows the (non-full-screen) approval prompt takes at the bottom of `main`: all it needs, up to
/// three quarters of the space (the diff scrolls inside).
fn approval_height(v: &ApprovalView, main: Rect, inline: bool) -> u16 {
    let width = main.width.saturating_sub(4) as usize;
    let body = v.body(width);
    let footer = v.footer(width);
    let want = body.lines.len() as u16 + footer.len() as u16 + 3;
    if inline {
        // Inline, what led to the question is in the scrollback right above: the prompt may
        // take the whole viewport.
        return want.min(main.height);
    }
    want.min((main.height * 3 / 4).max(main.height.min(8)))
}

fn draw_approval(v: &ApprovalView, main: Rect, full: Rect, inline: bool, buf: &mut Buffer) {
    let outer = if v.fullscreen {
        Rect::new(full.x, full.y, full.width, full.height.saturating_sub(1))
    } else {
        main
    };
    let width = outer.width.saturating_sub(4) as usize;
    let body = v.body(width);
    let body = &body.lines;
    let footer = v.footer(width);
    let h = if v.fullscreen {
        outer.height
    } else {
        approval_height(v, main, inline)
    };
    let area = Rect::new(outer.x, outer.y + outer.height - h, outer.width, h);
    Clear.render(area, buf);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme::warn())
        .title(Span::styled(
            v.title(),
            theme::warn().add_modifier(ratatui::style::Modifier::BOLD),
        ));
    let inner = block.inner(area);
    block.render(area, buf);
    let inner = Rect::new(
        inner.x + 1,
        inner.y,
        inner.width.saturating_sub(2),
        inner.height,
    );
    let footer_h = (footer.len() as u16).min(inner.height);
    let body_h = inner.height.saturating_sub(footer_h + 1);
    let max_scroll = body.len().saturating_sub(body_h as usize);
    let scroll = v.scroll.min(max_scroll);
    for (i, l) in body.iter().skip(scroll).take(body_h as usize).enumerate() {
        buf.set_line(inner.x, inner.y + i as u16, l, inner.width);
    }
    if max_scroll > 0 {
        let info = format!(
            " {}-{} of {} ",
            scroll + 1,
            (scroll + body_h as usize).min(body.len()),
            body.len()
        );
        let w = info.chars().count() as u16;
        buf.set_string(
            area.x + area.width.saturating_sub(w + 2),
            area.y,
            info,
            theme::dim(),
        );
    }
    let fy = inner.y + inner.height - footer_h;
    for (i, l) in footer.iter().take(footer_h as usize).enumerate() {
        buf.set_line(inner.x, fy + i as u16, l, inner.width);
    }
}

fn draw_sessions(state: &AppState, s: &SessionsView, main: Rect, buf: &mut Buffer) {
    let w = main.width;
    let h = main.height;
    let area = Rect::new(
        main.x + (main.width - w) / 2,
        main.y + (main.height - h) / 2,
        w,
        h,
    );
    Clear.render(area, buf);
    let title = match &s.open {
        Some(id) => format!(" Session {id} "),
        None => " Background sessions ".to_string(),
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme::accent())
        .title(Span::styled(title, theme::accent()));
    let inner = block.inner(area);
    block.render(area, buf);
    let inner = Rect::new(
        inner.x + 1,
        inner.y,
        inner.width.saturating_sub(2),
        inner.height,
    );
    let footer: Line<'static> = match (&s.open, &s.input) {
        (Some(_), Some(input)) => Line::from(vec![
            Span::styled("input › ", theme::key()),
            Span::raw(input.clone()),
            Span::styled("▍", theme::accent()),
            Span::styled(
                "   enter sends (with a newline) · esc cancels",
                theme::dim(),
            ),
        ]),
        (Some(_), None) => theme::keys_line(&[("i", "send input"), ("k", "kill"), ("esc", "back")]),
        (None, _) => theme::keys_line(&[
            ("↑↓", "select"),
            ("enter", "open"),
            ("k", "kill"),
            ("esc", "close"),
        ]),
    };
    let body_h = inner.height.saturating_sub(1);
    let mut lines: Vec<Line<'static>> = Vec::new();
    match &s.open {
        Some(id) => {
            if let Some(sum) = state
                .background()
                .sessions
                .iter()
                .find(|x| &x.session_id == id)
            {
                lines.push(session_line(sum, false, state.wall_ms()));
            }
            let out = state
                .background()
                .output
                .get(id)
                .map(|o| o.tail(body_h.saturating_sub(1) as usize))
                .unwrap_or_default();
            if out.is_empty() {
                lines.push(Line::from(Span::styled("  (no output yet)", theme::dim())));
            }
            lines.extend(out);
        }
        None => {
            if state.background().sessions.is_empty() {
                lines.push(Line::from(Span::styled(
                    "No background sessions. The model starts them with shell.run background: true.",
                    theme::dim(),
                )));
            }
            for (i, sum) in state.background().sessions.iter().enumerate() {
                lines.push(session_line(sum, i == s.selected, state.wall_ms()));
            }
        }
    }
    for (i, l) in lines.iter().take(body_h as usize).enumerate() {
        buf.set_line(inner.x, inner.y + i as u16, l, inner.width);
    }
    if inner.height > 0 {
        buf.set_line(inner.x, inner.y + inner.height - 1, &footer, inner.width);
    }
}

fn draw_resume(state: &AppState, r: &ResumeView, main: Rect, buf: &mut Buffer) {
    Clear.render(main, buf);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme::accent())
        .title(Span::styled(" Resume a session ", theme::accent()));
    let inner = block.inner(main);
    block.render(main, buf);
    let inner = Rect::new(
        inner.x + 1,
        inner.y,
        inner.width.saturating_sub(2),
        inner.height,
    );
    let body_h = inner.height.saturating_sub(1) as usize;
    let mut lines: Vec<Line<'static>> = Vec::new();
    if r.rows.is_empty() {
        lines.push(Line::from(Span::styled(
            "no saved sessions for this workspace",
            theme::dim(),
        )));
    }
    let skip = r.selected.saturating_sub(body_h.saturating_sub(1));
    for (i, info) in r.rows.iter().enumerate().skip(skip).take(body_h) {
        let current = info.id == state.status().session_id;
        lines.push(super::info::resume_line(
            info,
            i == r.selected,
            current,
            r.now_ms,
            inner.width as usize,
        ));
    }
    for (i, l) in lines.iter().take(body_h).enumerate() {
        buf.set_line(inner.x, inner.y + i as u16, l, inner.width);
    }
    let footer = theme::keys_line(&[("↑↓", "select"), ("enter", "resume"), ("esc", "close")]);
    if inner.height > 0 {
        buf.set_line(inner.x, inner.y + inner.height - 1, &footer, inner.width);
    }
}

/// A bordered list box over the main area: title, rows (the selected one kept in view), footer.
fn draw_list(
    title: &str,
    rows: Vec<Line<'static>>,
    selected: usize,
    empty: &str,
    footer: Line<'static>,
    main: Rect,
    buf: &mut Buffer,
) {
    Clear.render(main, buf);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme::accent())
        .title(Span::styled(format!(" {title} "), theme::accent()));
    let inner = block.inner(main);
    block.render(main, buf);
    let inner = Rect::new(
        inner.x + 1,
        inner.y,
        inner.width.saturating_sub(2),
        inner.height,
    );
    let body_h = inner.height.saturating_sub(1) as usize;
    let lines: Vec<Line<'static>> = if rows.is_empty() {
        vec![Line::from(Span::styled(empty.to_string(), theme::dim()))]
    } else {
        let skip = selected.saturating_sub(body_h.saturating_sub(1));
        rows.into_iter().skip(skip).take(body_h).collect()
    };
    for (i, l) in lines.iter().take(body_h).enumerate() {
        buf.set_line(inner.x, inner.y + i as u16, l, inner.width);
    }
    if inner.height > 0 {
        buf.set_line(inner.x, inner.y + inner.height - 1, &footer, inner.width);
    }
}

fn draw_models(v: &super::model_picker::ModelView, main: Rect, buf: &mut Buffer) {
    let rows = v.lines(main.width.saturating_sub(4) as usize);
    let footer = theme::keys_line(&[
        ("↑↓", "select"),
        ("enter", "switch from the next turn"),
        ("esc", "close"),
    ]);
    draw_list(
        "Models · window · price per million tokens",
        rows,
        v.selected,
        "no models",
        footer,
        main,
        buf,
    );
}

fn draw_artifacts(v: &ArtifactsView, main: Rect, buf: &mut Buffer) {
    let rows = v
        .rows
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let (mark, style) = theme::row_marker(i == v.selected);
            Line::from(vec![
                mark,
                Span::styled(format!("{:<32}", a.name), style),
                Span::styled(format!(" {:>10} bytes  ", a.bytes), theme::dim()),
                Span::styled(a.path.clone(), theme::dim()),
            ])
        })
        .collect();
    let footer = theme::keys_line(&[
        ("↑↓", "select"),
        ("enter", "open in $PAGER"),
        ("esc", "close"),
    ]);
    draw_list(
        "Artifacts of this session",
        rows,
        v.selected,
        "no artifacts yet (the model saves them with write_artifact)",
        footer,
        main,
        buf,
    );
}

fn draw_memory(v: &MemoryView, main: Rect, buf: &mut Buffer) {
    let rows = v
        .rows
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (mark, style) = theme::row_marker(i == v.selected);
            let (word, wstyle) = match p.status {
                MemoryStatus::Proposed => ("proposed ", theme::warn()),
                MemoryStatus::Accepted => ("accepted ", theme::ok()),
                MemoryStatus::Dismissed => ("dismissed", theme::dim()),
            };
            Line::from(vec![
                mark,
                Span::styled(format!("{:<7}", p.id), theme::key()),
                Span::styled(format!("{word}  "), wstyle),
                Span::styled(p.text.replace('\n', " "), style),
            ])
        })
        .collect();
    let footer = theme::keys_line(&[
        ("↑↓", "select"),
        ("a", "accept"),
        ("d", "dismiss"),
        ("esc", "close"),
    ]);
    draw_list(
        "Memory proposals (inactive until you accept one)",
        rows,
        v.selected,
        "no memory proposals in this session",
        footer,
        main,
        buf,
    );
}
