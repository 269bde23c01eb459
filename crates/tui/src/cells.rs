//! Transcript cells: one per user turn, assistant message, tool call or notice.
//!
//! A cell renders itself to wrapped lines for a width, so its height is exact. The transcript
//! caches each cell's lines per width and version; a frame lays out all cells by height (cheap:
//! cached numbers) and renders only the visible ones. Cells whose look depends on the clock (a
//! running command's spinner and elapsed time) are re-rendered every frame; there are few of them.

use std::time::{Duration, Instant};

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use serde_json::Value;

use super::diff::render_hunks_head;
use super::markdown;
use super::text::{Output, truncate, wrap_line, wrap_lines};
use super::theme;
use pablo_core::ErrorCode;
use pablo_launch::{describe_call, describe_result};
use pablo_protocol::describe::{ResultFact, ResultView};
use pablo_protocol::{Preview, ToolOutcome};

/// How many output lines a collapsed tool cell shows.
pub(crate) const TAIL_LINES: usize = 8;
/// How many output lines an expanded tool cell shows.
pub(crate) const EXPANDED_LINES: usize = 400;
/// How many lines of reasoning a collapsed reasoning cell shows while it streams.
pub(crate) const THOUGHT_TAIL_LINES: usize = 3;
const SPINNER: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolStatus {
    Pending,
    AwaitingApproval,
    Running,
    Done,
    Failed,
    Rejected,
}

#[derive(Debug)]
pub(crate) struct ToolCell {
    pub(crate) call_id: String,
    pub(crate) tool: String,
    /// What a person reads first beside the tool's name (the tool's own words).
    pub(crate) summary: String,
    /// The summary is a command line (shown as code).
    pub(crate) command: bool,
    pub(crate) status: ToolStatus,
    pub(crate) started: Instant,
    pub(crate) running_since: Option<Instant>,
    pub(crate) elapsed: Option<Duration>,
    pub(crate) preview: Option<Preview>,
    pub(crate) output: Option<Output>,
    pub(crate) result: Option<ToolOutcome>,
    /// The result in the tool's words, once it is in.
    pub(crate) shown: Option<ResultView>,
    /// The call's arguments, for describing its result (`shell.session`'s action).
    pub(crate) arguments: Value,
    /// How the person answered its approval prompt, in the past tense (`allowed once`): what
    /// stays of the prompt once it is answered.
    pub(crate) approval: Option<String>,
    /// What its approval prompt offered, kept for the record of the answer (a resumed
    /// session replays the question without opening the prompt).
    pub(crate) asked: Option<Asked>,
    /// For an `agent.task` call: what its subagent is doing and has done.
    pub(crate) subagent: Option<SubagentProgress>,
}

/// What an approval prompt offered: the hunks of a file change, and the rule "allow always"
/// saves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Asked {
    pub(crate) hunks: usize,
    pub(crate) always_rule: Option<String>,
}

/// A subagent as its call's cell shows it: what it does now, what it has spent, and the calls
/// it made (a tail; ctrl-o shows more).
#[derive(Debug, Clone, Default)]
pub(crate) struct SubagentProgress {
    /// The call it is making now (its title), if any.
    pub(crate) activity: Option<String>,
    pub(crate) tokens: u64,
    pub(crate) tool_calls: u64,
    /// One line per call it made (and per failure), in order.
    pub(crate) log: Vec<String>,
    /// Its calls' titles by their call ids (an approval it asks for names the call).
    pub(crate) calls: std::collections::HashMap<String, String>,
}

impl SubagentProgress {
    /// `1.2k tokens · fs.read src/lib.rs` while it runs; `3 tool calls · 1.2k tokens` after.
    fn state(&self, running: bool) -> String {
        let tokens = if self.tokens >= 1000 {
            format!("{:.1}k tokens", self.tokens as f64 / 1000.0)
        } else {
            format!("{} tokens", self.tokens)
        };
        match (&self.activity, running) {
            (Some(a), true) => format!("{tokens} · {a}"),
            (None, true) => tokens,
            (_, false) => format!(
                "{} tool call{} · {tokens}",
                self.tool_calls,
                if self.tool_calls == 1 { "" } else { "s" }
            ),
        }
    }
}

impl ToolCell {
    pub(crate) fn new(call_id: String, tool: String, arguments: &Value, now: Instant) -> Self {
        let call = describe_call(&tool, arguments);
        Self {
            call_id,
            arguments: arguments.clone(),
            summary: call.summary,
            command: call.command,
            tool,
            status: ToolStatus::Pending,
            started: now,
            running_since: None,
            elapsed: None,
            preview: None,
            output: None,
            result: None,
            shown: None,
            approval: None,
            asked: None,
            subagent: None,
        }
    }

    /// Takes the call's result; returns what the result did that the front-end acts on.
    pub(crate) fn finish(&mut self, result: ToolOutcome) -> Option<ResultFact> {
        let shown = describe_result(&self.tool, &self.arguments, &result);
        if let Some(summary) = &shown.summary {
            self.summary = summary.clone();
        }
        let fact = shown.fact.clone();
        self.shown = Some(shown);
        // What is drawn of a result that succeeded is `shown`; its data (a whole file's text, a
        // listing) is the agent's, not the screen's, and a resumed long session would otherwise
        // hold every result twice.
        self.result = Some(match result {
            ToolOutcome::Ok { ok, .. } => ToolOutcome::Ok {
                ok,
                data: Value::Null,
            },
            failed => failed,
        });
        fact
    }

    pub(crate) fn is_live(&self) -> bool {
        matches!(self.status, ToolStatus::Running | ToolStatus::Pending)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoticeLevel {
    Info,
    Warning,
    Error,
}

#[derive(Debug)]
pub(crate) enum CellKind {
    User(String),
    Assistant {
        text: String,
        streaming: bool,
    },
    Tool(Box<ToolCell>),
    /// The model's reasoning for one call: dim, and collapsed to its tail (ctrl-o shows it all).
    Reasoning {
        text: String,
        streaming: bool,
    },
    Notice {
        level: NoticeLevel,
        text: String,
    },
    /// An information block (`/help`, `/ps`, `/rules`, `/mcp`, a restore report).
    Info(super::info::Info),
    /// A search the provider ran: the query and the pages found.
    WebSearch(Box<pablo_protocol::WebSearch>),
    /// The end of a turn: the requests it sent to the model (its subagents' and retries
    /// included) and, seen live, how long it took.
    TurnEnd {
        model_calls: u64,
        elapsed: Option<Duration>,
    },
}

#[derive(Debug)]
pub(crate) struct Cell {
    pub(crate) kind: CellKind,
    /// Bumped on every change; the render cache keys on it.
    pub(crate) version: u64,
}

impl Cell {
    pub(crate) fn new(kind: CellKind) -> Self {
        Self { kind, version: 0 }
    }

    pub(crate) fn touch(&mut self) {
        self.version += 1;
    }

    /// Whether the cell will not change again: an answer that finished streaming, a call with
    /// its result. Only such cells go into the terminal's scrollback (inline mode).
    pub(crate) fn is_finished(&self) -> bool {
        match &self.kind {
            CellKind::Assistant { streaming, .. } => !streaming,
            CellKind::Tool(t) => t.result.is_some(),
            _ => true,
        }
    }

    /// Whether the cell waits for the person (an approval prompt is open on it).
    pub(crate) fn awaits_answer(&self) -> bool {
        matches!(&self.kind, CellKind::Tool(t) if t.status == ToolStatus::AwaitingApproval)
    }

    /// Whether the cell's look depends on the clock.
    pub(crate) fn is_live(&self) -> bool {
        match &self.kind {
            CellKind::Tool(t) => t.is_live(),
            _ => false,
        }
    }

    /// The cell's lines for `width` columns, with a blank separator line at the end.
    pub(crate) fn render_lines(
        &self,
        width: usize,
        expanded: bool,
        now: Instant,
    ) -> Vec<Line<'static>> {
        let width = width.max(8);
        let mut out = Vec::new();
        match &self.kind {
            CellKind::User(text) => {
                for (i, l) in text.split('\n').enumerate() {
                    let prefix = if i == 0 { "› " } else { "  " };
                    let line = Line::from(vec![
                        Span::styled(prefix, theme::user()),
                        Span::styled(l.to_string(), theme::bold()),
                    ]);
                    wrap_line(&line, width, 2, &mut out);
                }
            }
            CellKind::Assistant { text, streaming } => {
                render_answer(text, true, *streaming, width, &mut out);
            }
            CellKind::Tool(t) => render_tool(t, width, expanded, now, &mut out),
            CellKind::Reasoning { text, streaming } => {
                render_reasoning(text, *streaming, width, expanded, &mut out)
            }
            CellKind::Notice { level, text } => {
                let (mark, style) = match level {
                    NoticeLevel::Info => ("ℹ ", theme::dim()),
                    NoticeLevel::Warning => ("⚠ ", theme::warn()),
                    NoticeLevel::Error => ("✗ ", theme::error()),
                };
                for (i, l) in text.split('\n').enumerate() {
                    let line = Line::from(vec![
                        Span::styled(if i == 0 { mark } else { "  " }, style),
                        Span::styled(l.to_string(), style),
                    ]);
                    wrap_line(&line, width, 2, &mut out);
                }
            }
            CellKind::Info(info) => out.extend(wrap_lines(&info.lines(), width, 2)),
            CellKind::WebSearch(search) => render_search(search, width, expanded, &mut out),
            CellKind::TurnEnd {
                model_calls,
                elapsed,
            } => {
                let mut text = format!(
                    "─ {}",
                    pablo_protocol::describe::plural(*model_calls, "model call")
                );
                if let Some(d) = elapsed {
                    text.push_str(&format!(" · {}", pablo_protocol::describe::seconds(*d)));
                }
                wrap_line(
                    &Line::from(Span::styled(text, theme::dim())),
                    width,
                    2,
                    &mut out,
                );
            }
        }
        out.push(Line::default());
        out
    }
}

impl Cell {
    /// Inline mode: how many bytes of a streaming answer are finished lines, which the scrollback
    /// can take now ([`markdown::stable_prefix`]). `None` for any other cell.
    pub(crate) fn stable_answer_prefix(&self) -> Option<usize> {
        match &self.kind {
            CellKind::Assistant {
                text,
                streaming: true,
            } => Some(markdown::stable_prefix(text)),
            _ => None,
        }
    }

    /// The lines of bytes `from..to` of an answer, the part of it that goes into the scrollback
    /// now (no separator line: the answer goes on).
    pub(crate) fn render_answer_part(
        &self,
        from: usize,
        to: usize,
        width: usize,
    ) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        if let CellKind::Assistant { text, .. } = &self.kind
            && let Some(part) = text.get(from..to)
        {
            render_answer(part, from == 0, false, width.max(8), &mut out);
        }
        out
    }

    /// The cell's lines from byte `from` of its answer on (the part not yet in the scrollback),
    /// with the separator line; any other cell whole.
    pub(crate) fn render_from(
        &self,
        from: usize,
        width: usize,
        expanded: bool,
        now: Instant,
    ) -> Vec<Line<'static>> {
        match &self.kind {
            CellKind::Assistant { text, streaming } if from > 0 => {
                let mut out = Vec::new();
                let rest = text.get(from..).unwrap_or("");
                render_answer(rest, false, *streaming, width.max(8), &mut out);
                out.push(Line::default());
                out
            }
            _ => self.render_lines(width, expanded, now),
        }
    }
}

/// An answer's lines: markdown, `● ` before the first line when `first`, and the cursor `▍` at
/// the end while it streams. An empty part renders no line (a cursor line while streaming).
fn render_answer(
    text: &str,
    first: bool,
    streaming: bool,
    width: usize,
    out: &mut Vec<Line<'static>>,
) {
    let text = text.trim_end_matches('\n');
    let start = out.len();
    if !text.is_empty() || first {
        let body = markdown::render(text, width.saturating_sub(2));
        for (i, mut l) in body.into_iter().enumerate() {
            let lead = if i == 0 && first { "● " } else { "  " };
            l.spans.insert(0, Span::styled(lead, theme::accent()));
            out.push(l);
        }
    }
    if streaming {
        if out.len() == start {
            let mark = if first { "● …" } else { "  ▍" };
            out.push(Line::from(Span::styled(mark, theme::accent())));
        } else if let Some(last) = out.last_mut() {
            last.spans.push(Span::styled("▍", theme::accent()));
        }
    }
}

/// A reasoning cell: a header, then the whole text (expanded), its last lines (collapsed, while
/// it streams) or nothing more (collapsed, done).
fn render_reasoning(
    text: &str,
    streaming: bool,
    width: usize,
    expanded: bool,
    out: &mut Vec<Line<'static>>,
) {
    let text = text.trim();
    let mut body: Vec<Line<'static>> = Vec::new();
    for l in text.lines() {
        let line = Line::from(Span::styled(l.to_string(), theme::thought()));
        wrap_line(&line, width.saturating_sub(2), 0, &mut body);
    }
    let n = body.len();
    let head = if streaming {
        "∴ thinking…".to_string()
    } else if expanded {
        "∴ thought".to_string()
    } else {
        format!(
            "∴ thought · {n} line{} (ctrl-o shows)",
            if n == 1 { "" } else { "s" }
        )
    };
    out.push(Line::from(Span::styled(head, theme::thought())));
    let shown: Vec<Line<'static>> = if expanded {
        body
    } else if streaming {
        body.into_iter()
            .skip(n.saturating_sub(THOUGHT_TAIL_LINES))
            .collect()
    } else {
        Vec::new()
    };
    for mut l in shown {
        l.spans.insert(0, Span::styled("  ", theme::thought()));
        out.push(l);
    }
}

fn status_mark(t: &ToolCell, now: Instant) -> Span<'static> {
    match t.status {
        ToolStatus::Pending | ToolStatus::Running => {
            let since = t.running_since.unwrap_or(t.started);
            let frame = (now.saturating_duration_since(since).as_millis() / 100) as usize;
            Span::styled(
                format!("{} ", SPINNER[frame % SPINNER.len()]),
                theme::accent(),
            )
        }
        ToolStatus::AwaitingApproval => Span::styled("? ", theme::warn()),
        ToolStatus::Done => Span::styled("✓ ", theme::ok()),
        ToolStatus::Failed => Span::styled("✗ ", theme::error()),
        ToolStatus::Rejected => Span::styled("⊘ ", theme::warn()),
    }
}

fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 10.0 {
        format!("{s:.1}s")
    } else if s < 120.0 {
        format!("{}s", s as u64)
    } else {
        format!("{}m{:02}s", s as u64 / 60, s as u64 % 60)
    }
}

/// What stays of an answered approval prompt: the decision, in the past tense.
fn approval_record(t: &ToolCell, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    if let Some(record) = &t.approval {
        let style = if t.status == ToolStatus::Rejected {
            theme::warn()
        } else {
            theme::dim()
        };
        wrap_line(
            &Line::from(Span::styled(record.clone(), style)),
            width,
            0,
            &mut out,
        );
    }
    out
}

fn render_tool(
    t: &ToolCell,
    width: usize,
    expanded: bool,
    now: Instant,
    out: &mut Vec<Line<'static>>,
) {
    let mut head = vec![
        status_mark(t, now),
        Span::styled(t.tool.clone(), theme::bold()),
    ];
    if !t.summary.is_empty() {
        head.push(Span::raw(" "));
        let max = width.saturating_sub(t.tool.len() + 4).max(10);
        let style = if t.command {
            theme::inline_code()
        } else {
            Style::default()
        };
        head.push(Span::styled(truncate(&t.summary, max * 3), style));
    }
    let state = tool_state(t, now);
    if let Some((s, style)) = state {
        head.push(Span::styled(format!("  ({s})"), style));
    }
    wrap_line(&Line::from(head), width, 4, out);

    let body_width = width.saturating_sub(4);
    let mut body: Vec<Line<'static>> = approval_record(t, body_width);
    if let Some(sa) = &t.subagent {
        let n = if expanded { EXPANDED_LINES } else { TAIL_LINES };
        let skip = sa.log.len().saturating_sub(n);
        if skip > 0 {
            body.push(Line::from(Span::styled(
                format!("… {skip} earlier calls (ctrl-o expands)"),
                theme::dim(),
            )));
        }
        for l in &sa.log[skip..] {
            body.push(Line::from(Span::styled(
                truncate(l, body_width),
                theme::dim(),
            )));
        }
    }
    // The diff that lands (or was proposed) for a file change.
    if let Some(Preview::FileChange(fc)) = &t.preview {
        let counts = Line::from(vec![
            Span::styled(format!("+{}", fc.added), theme::ok()),
            Span::raw(" "),
            Span::styled(format!("−{}", fc.removed), theme::error()),
            Span::styled(
                format!(
                    "  {} hunk{}",
                    fc.hunks.len(),
                    if fc.hunks.len() == 1 { "" } else { "s" }
                ),
                theme::dim(),
            ),
        ]);
        body.push(counts);
        let limit = if expanded { usize::MAX } else { 12 };
        let (rendered, n) = render_hunks_head(&fc.hunks, body_width, None, limit);
        body.extend(rendered.lines);
        if n > limit {
            body.push(Line::from(Span::styled(
                format!("… {} more lines (ctrl-o expands)", n - limit),
                theme::dim(),
            )));
        }
    }
    if let Some(output) = &t.output {
        let n = if expanded { EXPANDED_LINES } else { TAIL_LINES };
        let total = output.total_lines();
        let tail = output.tail(n);
        if total > tail.len() {
            body.push(Line::from(Span::styled(
                format!("… {} earlier lines", total - tail.len()),
                theme::dim(),
            )));
        }
        // Output lines are not wrapped: a command's columns mean something; cut at the edge.
        body.extend(tail);
    }
    if let Some(result) = &t.result {
        result_lines(t, result, body_width, expanded, &mut body);
    }
    for (i, mut l) in body.into_iter().enumerate() {
        l.spans.insert(
            0,
            Span::styled(if i == 0 { "  └ " } else { "    " }, theme::dim()),
        );
        out.push(l);
    }
}

/// Result lines a collapsed search cell shows.
const SEARCH_RESULTS: usize = 5;

/// A web search the provider ran: `web search "query"`, its result count or error, and the
/// pages found (title and URL), the first few unless expanded.
fn render_search(
    search: &pablo_protocol::WebSearch,
    width: usize,
    expanded: bool,
    out: &mut Vec<Line<'static>>,
) {
    let (mark, state, style) = match &search.error {
        Some(code) => (
            Span::styled("✗ ", theme::error()),
            code.clone(),
            theme::error(),
        ),
        None => (
            Span::styled("✓ ", theme::ok()),
            pablo_protocol::describe::plural(search.results.len() as u64, "result"),
            theme::dim(),
        ),
    };
    let query = if search.query.is_empty() {
        String::new()
    } else {
        format!(" \"{}\"", truncate(&search.query, width * 2))
    };
    let head = Line::from(vec![
        mark,
        Span::styled("web search", theme::bold()),
        Span::raw(query),
        Span::styled(format!("  ({state})"), style),
    ]);
    wrap_line(&head, width, 4, out);
    let body_width = width.saturating_sub(4);
    let shown = if expanded {
        search.results.len()
    } else {
        SEARCH_RESULTS.min(search.results.len())
    };
    for (i, r) in search.results[..shown].iter().enumerate() {
        let mut spans = vec![Span::styled(
            if i == 0 { "  └ " } else { "    " },
            theme::dim(),
        )];
        if !r.title.is_empty() {
            spans.push(Span::raw(truncate(&r.title, body_width / 2)));
            spans.push(Span::styled(" · ", theme::dim()));
        }
        spans.push(Span::styled(r.url.clone(), theme::dim()));
        // A URL is not wrapped: cut at the edge, it still reads as where the page is.
        out.push(Line::from(spans));
    }
    if shown < search.results.len() {
        out.push(Line::from(Span::styled(
            format!(
                "    … {} more (ctrl-o expands)",
                search.results.len() - shown
            ),
            theme::dim(),
        )));
    }
}

/// The state beside a call's name: waiting, running for how long, its exit or error code, and
/// a subagent's progress.
fn tool_state(t: &ToolCell, now: Instant) -> Option<(String, Style)> {
    let state = match t.status {
        ToolStatus::Pending => None,
        ToolStatus::AwaitingApproval => Some(("waiting for approval".to_string(), theme::warn())),
        ToolStatus::Running => t
            .running_since
            .map(|s| (fmt_duration(now.saturating_duration_since(s)), theme::dim())),
        ToolStatus::Done => {
            let exit = exit_code(t);
            let mut s = match exit {
                Some(c) if c != 0 => format!("exit {c}"),
                _ => String::new(),
            };
            if let Some(e) = t.elapsed.filter(|e| e.as_millis() >= 100) {
                if !s.is_empty() {
                    s.push_str(", ");
                }
                s.push_str(&fmt_duration(e));
            }
            let style = if exit.is_some_and(|c| c != 0) {
                theme::error()
            } else {
                theme::dim()
            };
            (!s.is_empty()).then_some((s, style))
        }
        ToolStatus::Failed => Some((
            t.result
                .as_ref()
                .and_then(|r| r.error_code())
                .unwrap_or("failed")
                .to_string(),
            theme::error(),
        )),
        // Its code, as a failed call shows its own.
        ToolStatus::Rejected => Some((ErrorCode::Rejected.to_string(), theme::warn())),
    };
    match (&t.subagent, state) {
        (Some(sa), Some((s, style))) => {
            let running = matches!(t.status, ToolStatus::Running | ToolStatus::Pending);
            Some((format!("{s} · {}", sa.state(running)), style))
        }
        (Some(sa), None) => Some((sa.state(false), theme::dim())),
        (None, state) => state,
    }
}

/// A finished call's result under it: an error's message, or the result in words when nothing
/// else (streamed output, a diff) already shows it.
fn result_lines(
    t: &ToolCell,
    result: &ToolOutcome,
    body_width: usize,
    expanded: bool,
    body: &mut Vec<Line<'static>>,
) {
    match result {
        // The decision's record above already says it was rejected, and why.
        ToolOutcome::Err { .. } if t.status == ToolStatus::Rejected && t.approval.is_some() => {}
        ToolOutcome::Err { error, .. } => {
            let line = Line::from(Span::styled(error.message.clone(), theme::error()));
            wrap_line(&line, body_width, 0, body);
        }
        // A result shown only expanded (a checklist, which is on screen already).
        ToolOutcome::Ok { .. }
            if t.shown.as_ref().is_some_and(|s| s.only_expanded) && !expanded => {}
        // A command's streamed output is already above; one that printed nothing (a
        // background start) still gets its line in words.
        ToolOutcome::Ok { .. }
            if t.output.as_ref().is_none_or(|o| o.total_lines() == 0) && t.preview_is_quiet() =>
        {
            // A headline in words, then the lines beneath it (a tail when collapsed).
            let text = t
                .shown
                .clone()
                .unwrap_or_else(|| describe_result(&t.tool, &t.arguments, result));
            body.push(Line::from(Span::styled(
                truncate(&text.headline(t.elapsed), body_width),
                theme::dim(),
            )));
            let n = if expanded { EXPANDED_LINES } else { TAIL_LINES };
            let skip = text.body.len().saturating_sub(n);
            if skip > 0 {
                body.push(Line::from(Span::styled(
                    format!("… {skip} earlier lines"),
                    theme::dim(),
                )));
            }
            for l in &text.body[skip..] {
                body.push(Line::from(truncate(l, body_width)));
            }
        }
        ToolOutcome::Ok { .. } => {}
    }
}

impl ToolCell {
    fn preview_is_quiet(&self) -> bool {
        !matches!(self.preview, Some(Preview::FileChange(_)))
    }
}

fn exit_code(t: &ToolCell) -> Option<i64> {
    match &t.result {
        Some(ToolOutcome::Ok { .. }) => t.shown.as_ref().and_then(|s| s.exit_code),
        _ => None,
    }
}

/// Draws lines into `area`, skipping the first `skip` of them (a cell cut by the top edge).
pub(crate) fn draw_lines(lines: &[Line<'static>], skip: usize, area: Rect, buf: &mut Buffer) {
    for (row, line) in lines
        .iter()
        .skip(skip)
        .take(area.height as usize)
        .enumerate()
    {
        buf.set_line(area.x, area.y + row as u16, line, area.width);
    }
}
