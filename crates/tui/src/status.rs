//! The status line: what pablo is doing (working, waiting for a retry), the model, the figures,
//! the workspace, the mode and what it grants, background sessions, MCP servers, and a hint.
//!
//! With `[tui] statusline_command`, the line the person's program printed stands where the model,
//! the tokens, the context share, the cost and the workspace would be (a spend cap stays: it
//! says when the session stops): its SGR colours are drawn, every other escape sequence and
//! control character is dropped, and it is cut to two thirds of the line. What pablo is doing,
//! the mode, background sessions, MCP servers and hints stay beside it.
//!
//! It is built as segments, each with a rank; when the line is too narrow the least needed go
//! first: the workspace path, then the mode's description (its name stays), MCP, tokens, cost,
//! the context share and the model. The mode and the background count are never dropped. A hint the person must see now ("press
//! ctrl-c again to quit") always shows; the standing help text only where there is room.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::state::AppState;
use super::text::{str_width, truncate};
use super::theme;
use pablo_protocol::WorkMode;

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

pub(crate) fn fmt_tokens(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{:.1}M", n as f64 / 1e6)
    } else if n >= 1000 {
        format!("{:.1}k", n as f64 / 1e3)
    } else {
        n.to_string()
    }
}

/// One part of the line; `drop` orders what goes when it is too narrow (1 first; 0 never).
struct Segment {
    spans: Vec<Span<'static>>,
    /// A shorter form tried before the segment is dropped (the mode's bare name).
    short: Option<Vec<Span<'static>>>,
    drop: u8,
}

impl Segment {
    fn new(spans: Vec<Span<'static>>, drop: u8) -> Self {
        Self {
            spans,
            short: None,
            drop,
        }
    }

    fn width(&self) -> usize {
        self.spans.iter().map(|s| str_width(&s.content)).sum()
    }
}

/// What pablo is doing: `⠋ working 12 s`, or the retry it waits for, with the key that gives up.
fn activity(state: &AppState) -> Option<Segment> {
    if !state.turn_running() {
        return None;
    }
    let now = state.now();
    let frame = (now.saturating_duration_since(state.started()).as_millis() / 100) as usize;
    let spin = SPINNER[frame % SPINNER.len()];
    let text = match state.retry() {
        Some(r) => {
            let left = r.until.saturating_duration_since(now);
            let secs = left.as_millis().div_ceil(1000) as u64;
            format!(
                "{spin} {} · esc gives up",
                pablo_protocol::retry_words(r.attempt, r.max_attempts, secs, &r.reason)
            )
        }
        None => match state.turn_started() {
            Some(t) => format!(
                "{spin} working {} s",
                now.saturating_duration_since(t).as_secs()
            ),
            None => format!("{spin} working"),
        },
    };
    Some(Segment::new(vec![Span::styled(text, theme::warn())], 0))
}

/// The mode and what it grants, with its bare name as the short form.
fn mode(state: &AppState) -> Option<Segment> {
    let status = state.status();
    let (spans, short) = match status.mode {
        WorkMode::Ask => {
            if status.policy_mode.is_empty() {
                return None;
            }
            (
                vec![Span::raw(status.policy_mode.clone())],
                vec![Span::raw("ask")],
            )
        }
        WorkMode::AutoEdit => {
            let mut spans = vec![Span::styled("auto-edit", theme::ok())];
            // The built-in question for edits is answered; what else the label says stands.
            let rest = status.policy_mode.replace("edits ask", "edits apply");
            if !rest.is_empty() {
                spans.push(Span::raw(format!(" · {rest}")));
            }
            (spans, vec![Span::styled("auto-edit", theme::ok())])
        }
        WorkMode::Plan => (
            vec![
                Span::styled("plan", theme::warn()),
                Span::raw(" · read-only, safe commands only"),
            ],
            vec![Span::styled("plan", theme::warn())],
        ),
    };
    Some(Segment {
        spans,
        short: Some(short),
        drop: 0,
    })
}

/// The status line command's line, styled by its SGR codes (nothing else of its escapes
/// reaches the terminal), at most `max` columns.
fn custom(text: &str, max: usize) -> Segment {
    let mut parsed = super::text::AnsiLines::new(1);
    parsed.push(text);
    let line = parsed.tail(1).pop().unwrap_or_default();
    let mut spans = Vec::new();
    let mut room = max;
    let cut = super::text::line_width(&line) > max;
    if cut {
        room = max.saturating_sub(1);
    }
    for span in line.spans {
        let kept = truncate_exact(&span.content, room);
        room -= str_width(&kept);
        let done = kept.len() < span.content.len();
        spans.push(Span::styled(kept, span.style));
        if done || room == 0 {
            break;
        }
    }
    if cut {
        spans.push(Span::styled("…", theme::dim()));
    }
    Segment::new(spans, 0)
}

/// The start of `s` that fits in `max` columns (no mark).
fn truncate_exact(s: &str, max: usize) -> String {
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = str_width(c.encode_utf8(&mut [0; 4]));
        if w + cw > max {
            break;
        }
        out.push(c);
        w += cw;
    }
    out
}

fn segments(state: &AppState, room: usize) -> Vec<Segment> {
    let status = state.status();
    let mut out = Vec::new();
    out.extend(activity(state));
    if let Some(text) = state.custom_status() {
        out.push(custom(text, (room * 2 / 3).max(20)));
        out.extend(spend(state));
        facts_after(state, &mut out);
        return out;
    }
    let model = if status.model.is_empty() {
        "no model".to_string()
    } else {
        format!("{} · {}", status.model, status.provider)
    };
    out.push(Segment::new(vec![Span::styled(model, theme::accent())], 7));
    out.push(Segment::new(
        vec![Span::raw(format!(
            "{} tok",
            fmt_tokens(state.usage().total())
        ))],
        3,
    ));
    if let Some((used, window)) = status.context {
        let pct = super::state::context_percent(used, window);
        let style = if pct >= 85 {
            theme::warn()
        } else {
            Style::default()
        };
        out.push(Segment::new(
            vec![Span::styled(format!("ctx {pct}%"), style)],
            6,
        ));
    }
    match spend(state) {
        Some(segment) => out.push(segment),
        None => {
            if let Some(cost) = status.cost_usd {
                out.push(Segment::new(vec![Span::raw(pablo_core::dollars(cost))], 4));
            }
        }
    }
    out.push(Segment::new(
        vec![Span::raw(truncate(&status.workspace, 40))],
        1,
    ));
    facts_after(state, &mut out);
    out
}

/// Spent/limit against the spend cap, when one is set: warned as it nears the cap, and kept
/// longer than the bare cost, since it says when the session will stop.
fn spend(state: &AppState) -> Option<Segment> {
    let (spent, cap) = state.spend()?;
    let style = if spent >= cap {
        theme::error()
    } else if spent >= cap * 0.8 {
        theme::warn()
    } else {
        Style::default()
    };
    Some(Segment::new(
        vec![Span::styled(
            format!(
                "{}/{}",
                pablo_core::dollars(spent),
                pablo_core::dollars(cap)
            ),
            style,
        )],
        5,
    ))
}

/// The mode, background sessions, MCP servers and mouse capture: what follows the facts.
fn facts_after(state: &AppState, out: &mut Vec<Segment>) {
    out.extend(mode(state));
    let n = state.background().running();
    if n > 0 {
        out.push(Segment::new(
            vec![Span::styled(format!("{n} bg"), theme::ok())],
            0,
        ));
    }
    if !state.mcp().is_empty() {
        let (ready, starting, failed) = state.mcp_counts();
        let style = if failed > 0 {
            theme::error()
        } else if starting > 0 {
            theme::warn()
        } else {
            theme::ok()
        };
        let mut text = format!("mcp {ready}/{}", state.mcp().len());
        if starting > 0 {
            text.push_str(&format!(" · {starting} starting"));
        }
        if failed > 0 {
            text.push_str(&format!(" · {failed} failed"));
        }
        out.push(Segment::new(vec![Span::styled(text, style)], 2));
    }
    if state.mouse_capture() {
        out.push(Segment::new(vec![Span::styled("mouse", theme::warn())], 5));
    }
}

/// The width of the segments joined by separators, after the one-column lead.
fn joined_width(segs: &[Segment]) -> usize {
    1 + segs.iter().map(Segment::width).sum::<usize>() + 3 * segs.len().saturating_sub(1)
}

/// Fits the segments into `room` columns: the most droppable go first, and the mode shrinks to
/// its name once the path is gone.
fn fit(mut segs: Vec<Segment>, room: usize) -> Vec<Segment> {
    while joined_width(&segs) > room {
        let next = segs
            .iter()
            .enumerate()
            .filter(|(_, s)| s.drop > 0)
            .min_by_key(|(_, s)| s.drop)
            .map(|(i, _)| i);
        // The mode's long form goes right after the path.
        let shrink = segs
            .iter()
            .position(|s| s.short.is_some())
            .filter(|_| next.is_none_or(|i| segs[i].drop >= 2));
        if let Some(i) = shrink
            && let Some(short) = segs[i].short.take()
        {
            segs[i].spans = short;
            continue;
        }
        match next {
            Some(i) => {
                segs.remove(i);
            }
            None => break,
        }
    }
    segs
}

pub(crate) fn draw_status(state: &AppState, area: Rect, buf: &mut Buffer) {
    buf.set_style(area, theme::status_bar());
    let right = match state.hint() {
        Some(h) => Span::styled(format!("{h} "), theme::warn()),
        None => Span::styled("/help · ctrl-c ctrl-c quit ", theme::dim()),
    };
    let w = str_width(&right.content) as u16;
    // A hint is something the person must see now ("press ctrl-c again"): the facts on the
    // left give way to it. The standing help text shows only where there is room.
    let left_width = if state.hint().is_some() {
        area.width.saturating_sub(w + 1)
    } else {
        area.width
    };
    let segs = fit(segments(state, left_width as usize), left_width as usize);
    let mut spans = vec![Span::raw(" ")];
    for (i, s) in segs.into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" │ ", theme::dim()));
        }
        spans.extend(s.spans);
    }
    let line = Line::from(spans);
    let full = super::text::line_width(&line) as u16;
    if full > left_width && left_width > 1 {
        // Cut where the room ends, and say so: a word cut short reads as a different word.
        buf.set_line(area.x, area.y, &line, left_width - 1);
        buf.set_span(
            area.x + left_width - 1,
            area.y,
            &Span::styled("…", theme::dim()),
            1,
        );
    } else {
        buf.set_line(area.x, area.y, &line, left_width);
    }
    let used = full.min(left_width);
    if used + w < area.width {
        buf.set_span(area.x + area.width - w, area.y, &right, w);
    }
}
