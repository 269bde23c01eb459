//! Text shaping shared by every widget: word wrapping of styled lines (so a cell's height for a
//! width is exact and cacheable), and turning a command's raw output into styled lines (SGR colour
//! codes for plain pipes, a vt100 screen for PTY sessions).

use std::collections::VecDeque;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Display width of a string in terminal columns.
pub(crate) fn str_width(s: &str) -> usize {
    s.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// Display width of a line.
pub(crate) fn line_width(line: &Line<'_>) -> usize {
    line.spans.iter().map(|s| str_width(&s.content)).sum()
}

/// Cuts `s` to at most `max` columns, ending in `…` when something was cut.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    if str_width(s) <= max {
        return s.to_string();
    }
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if w + cw + 1 > max {
            break;
        }
        out.push(c);
        w += cw;
    }
    out.push('…');
    out
}

/// Greedy word wrap of one styled line to `width` columns. Continuation lines start with `indent`
/// spaces (hanging indent for list items and gutters). Always emits at least one line.
pub(crate) fn wrap_line(
    line: &Line<'static>,
    width: usize,
    indent: usize,
    out: &mut Vec<Line<'static>>,
) {
    let width = width.max(1);
    let indent = if indent + 4 > width { 0 } else { indent };
    if line_width(line) <= width {
        out.push(line.clone());
        return;
    }
    let base = line.style;
    let chars: Vec<(char, Style)> = line
        .spans
        .iter()
        .flat_map(|s| {
            let st = s.style;
            s.content.chars().map(move |c| (c, st))
        })
        .collect();
    let mut start = 0;
    let mut first = true;
    while start < chars.len() {
        let avail = if first { width } else { width - indent };
        let mut w = 0;
        let mut end = start;
        let mut last_space = None;
        while end < chars.len() {
            let cw = chars[end].0.width().unwrap_or(0);
            if w + cw > avail {
                break;
            }
            if chars[end].0 == ' ' {
                last_space = Some(end);
            }
            w += cw;
            end += 1;
        }
        let (line_end, next) = if end >= chars.len() {
            (end, end)
        } else if chars[end].0 == ' ' && end > start {
            (end, end + 1)
        } else if let Some(sp) = last_space.filter(|&s| s > start) {
            (sp, sp + 1)
        } else if end == start {
            (start + 1, start + 1)
        } else {
            (end, end)
        };
        let mut spans = Vec::new();
        if !first && indent > 0 {
            spans.push(Span::raw(" ".repeat(indent)));
        }
        push_runs(&chars[start..line_end], &mut spans);
        out.push(Line::from(spans).style(base));
        start = next;
        first = false;
    }
}

/// Merges consecutive characters of the same style into spans.
fn push_runs(chars: &[(char, Style)], spans: &mut Vec<Span<'static>>) {
    let mut cur = String::new();
    let mut style: Option<Style> = None;
    for &(c, st) in chars {
        if style != Some(st) {
            if let Some(s) = style
                && !cur.is_empty()
            {
                spans.push(Span::styled(std::mem::take(&mut cur), s));
            }
            style = Some(st);
        }
        cur.push(c);
    }
    if let Some(s) = style
        && !cur.is_empty()
    {
        spans.push(Span::styled(cur, s));
    }
}

/// Wraps every line and returns the result.
pub(crate) fn wrap_lines(
    lines: &[Line<'static>],
    width: usize,
    indent: usize,
) -> Vec<Line<'static>> {
    let mut out = Vec::with_capacity(lines.len());
    for l in lines {
        wrap_line(l, width, indent, &mut out);
    }
    out
}

/// Output of a command run through a pipe: lines styled by their SGR escape codes. Keeps only the
/// last `keep` complete lines (a cell shows the tail; the model gets the full text elsewhere), so
/// 10 MB of output costs a bounded amount of memory and no rendering time.
#[derive(Debug, Clone)]
pub(crate) struct AnsiLines {
    lines: VecDeque<Line<'static>>,
    keep: usize,
    /// Lines that scrolled out of `lines`.
    dropped: usize,
    cur: Vec<Span<'static>>,
    cur_text: String,
    style: Style,
    /// An escape sequence cut by a chunk boundary.
    pending_esc: String,
    /// A `\r` whose meaning (line end or overwrite) depends on the next character.
    pending_cr: bool,
    bytes: usize,
}

impl AnsiLines {
    pub(crate) fn new(keep: usize) -> Self {
        Self {
            lines: VecDeque::new(),
            keep: keep.max(1),
            dropped: 0,
            cur: Vec::new(),
            cur_text: String::new(),
            style: Style::default(),
            pending_esc: String::new(),
            pending_cr: false,
            bytes: 0,
        }
    }

    /// Total lines seen, including those no longer kept.
    pub(crate) fn total_lines(&self) -> usize {
        self.dropped + self.lines.len() + usize::from(!self.cur_is_empty())
    }

    fn cur_is_empty(&self) -> bool {
        self.cur.is_empty() && self.cur_text.is_empty()
    }

    pub(crate) fn push(&mut self, chunk: &str) {
        self.bytes += chunk.len();
        let mut input = chunk;
        let owned;
        if !self.pending_esc.is_empty() {
            owned = format!("{}{}", std::mem::take(&mut self.pending_esc), chunk);
            input = &owned;
        }
        let mut it = input.char_indices().peekable();
        while let Some((i, c)) = it.next() {
            if self.pending_cr {
                self.pending_cr = false;
                if c != '\n' {
                    // A lone carriage return: the line is being redrawn (progress bars).
                    self.cur.clear();
                    self.cur_text.clear();
                }
            }
            match c {
                '\x1b' => {
                    let rest = &input[i..];
                    match parse_escape(rest) {
                        Escape::Incomplete => {
                            self.pending_esc = rest.to_string();
                            return;
                        }
                        Escape::Sgr(params, len) => {
                            self.flush_text();
                            self.style = apply_sgr(self.style, &params);
                            skip(&mut it, i + len);
                        }
                        Escape::Other(len) => skip(&mut it, i + len),
                    }
                }
                '\n' => self.end_line(),
                '\r' => self.pending_cr = true,
                '\t' => {
                    let w = str_width(&self.cur_text)
                        + self
                            .cur
                            .iter()
                            .map(|s| str_width(&s.content))
                            .sum::<usize>();
                    let n = 8 - (w % 8);
                    self.cur_text.extend(std::iter::repeat_n(' ', n));
                }
                c if c.is_control() => {}
                c => self.cur_text.push(c),
            }
        }
    }

    fn flush_text(&mut self) {
        if !self.cur_text.is_empty() {
            self.cur
                .push(Span::styled(std::mem::take(&mut self.cur_text), self.style));
        }
    }

    fn end_line(&mut self) {
        self.flush_text();
        self.lines
            .push_back(Line::from(std::mem::take(&mut self.cur)));
        if self.lines.len() > self.keep {
            self.lines.pop_front();
            self.dropped += 1;
        }
    }

    /// The last `n` lines, the unfinished one included.
    pub(crate) fn tail(&self, n: usize) -> Vec<Line<'static>> {
        let mut partial = None;
        if !self.cur_is_empty() {
            let mut spans = self.cur.clone();
            if !self.cur_text.is_empty() {
                spans.push(Span::styled(self.cur_text.clone(), self.style));
            }
            partial = Some(Line::from(spans));
        }
        let want_complete = n.saturating_sub(usize::from(partial.is_some()));
        let skip = self.lines.len().saturating_sub(want_complete);
        let mut out: Vec<Line<'static>> = self.lines.iter().skip(skip).cloned().collect();
        out.extend(partial);
        out
    }
}

fn skip(it: &mut std::iter::Peekable<std::str::CharIndices<'_>>, until: usize) {
    while let Some(&(j, _)) = it.peek() {
        if j >= until {
            break;
        }
        it.next();
    }
}

enum Escape {
    Incomplete,
    /// SGR parameters and the byte length of the sequence.
    Sgr(Vec<u16>, usize),
    Other(usize),
}

/// Parses one escape sequence at the start of `s` (which begins with ESC).
fn parse_escape(s: &str) -> Escape {
    let b = s.as_bytes();
    if b.len() < 2 {
        return Escape::Incomplete;
    }
    match b[1] {
        b'[' => {
            for (k, &c) in b.iter().enumerate().skip(2) {
                if (0x40..=0x7e).contains(&c) {
                    if c == b'm' {
                        let params = s[2..k]
                            .split([';', ':'])
                            .map(|p| p.parse::<u16>().unwrap_or(0))
                            .collect();
                        return Escape::Sgr(params, k + 1);
                    }
                    return Escape::Other(k + 1);
                }
            }
            if b.len() > 64 {
                Escape::Other(b.len())
            } else {
                Escape::Incomplete
            }
        }
        b']' | b'P' | b'_' | b'^' => {
            // OSC/DCS/APC/PM: up to BEL or ST.
            for k in 2..b.len() {
                if b[k] == 0x07 {
                    return Escape::Other(k + 1);
                }
                if b[k] == 0x1b && b.get(k + 1) == Some(&b'\\') {
                    return Escape::Other(k + 2);
                }
            }
            if b.len() > 4096 {
                Escape::Other(b.len())
            } else {
                Escape::Incomplete
            }
        }
        _ => Escape::Other(2),
    }
}

fn ansi_color(n: u16) -> Color {
    match n {
        0 => Color::Black,
        1 => Color::Red,
        2 => Color::Green,
        3 => Color::Yellow,
        4 => Color::Blue,
        5 => Color::Magenta,
        6 => Color::Cyan,
        7 => Color::Gray,
        8 => Color::DarkGray,
        9 => Color::LightRed,
        10 => Color::LightGreen,
        11 => Color::LightYellow,
        12 => Color::LightBlue,
        13 => Color::LightMagenta,
        14 => Color::LightCyan,
        _ => Color::White,
    }
}

fn apply_sgr(mut st: Style, params: &[u16]) -> Style {
    if params.is_empty() {
        return Style::default();
    }
    let mut i = 0;
    while i < params.len() {
        let p = params[i];
        match p {
            0 => st = Style::default(),
            1 => st = st.add_modifier(Modifier::BOLD),
            2 => st = st.add_modifier(Modifier::DIM),
            3 => st = st.add_modifier(Modifier::ITALIC),
            4 => st = st.add_modifier(Modifier::UNDERLINED),
            7 => st = st.add_modifier(Modifier::REVERSED),
            9 => st = st.add_modifier(Modifier::CROSSED_OUT),
            22 => st = st.remove_modifier(Modifier::BOLD | Modifier::DIM),
            23 => st = st.remove_modifier(Modifier::ITALIC),
            24 => st = st.remove_modifier(Modifier::UNDERLINED),
            27 => st = st.remove_modifier(Modifier::REVERSED),
            29 => st = st.remove_modifier(Modifier::CROSSED_OUT),
            30..=37 => st = st.fg(ansi_color(p - 30)),
            39 => st.fg = None,
            40..=47 => st = st.bg(ansi_color(p - 40)),
            49 => st.bg = None,
            90..=97 => st = st.fg(ansi_color(p - 90 + 8)),
            100..=107 => st = st.bg(ansi_color(p - 100 + 8)),
            38 | 48 => {
                let color = match params.get(i + 1) {
                    Some(5) => {
                        let c = params.get(i + 2).copied().unwrap_or(0);
                        i += 2;
                        Some(Color::Indexed(c.min(255) as u8))
                    }
                    Some(2) => {
                        let g = |k: usize| params.get(i + k).copied().unwrap_or(0).min(255) as u8;
                        let c = Color::Rgb(g(2), g(3), g(4));
                        i += 4;
                        Some(c)
                    }
                    _ => None,
                };
                if let Some(c) = color {
                    st = if p == 38 { st.fg(c) } else { st.bg(c) };
                }
            }
            _ => {}
        }
        i += 1;
    }
    st
}

/// A PTY session's screen: its output is a terminal program's drawing, so it goes through a real
/// terminal emulator and the cell shows the resulting screen.
pub(crate) struct VtScreen {
    parser: vt100::Parser,
    bytes: usize,
}

impl std::fmt::Debug for VtScreen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VtScreen")
            .field("bytes", &self.bytes)
            .finish()
    }
}

impl VtScreen {
    pub(crate) fn new(rows: u16, cols: u16) -> Self {
        let nz = |v: u16, d: u16| std::num::NonZeroU16::new(v.max(1)).unwrap_or(nz_default(d));
        Self {
            parser: vt100::Parser::new(nz(rows, 24), nz(cols, 80), 0),
            bytes: 0,
        }
    }

    pub(crate) fn push(&mut self, chunk: &str) {
        self.bytes += chunk.len();
        self.parser.process(chunk.as_bytes());
    }

    /// The screen's rows, trailing blank rows removed, last `n` kept.
    pub(crate) fn tail(&self, n: usize) -> Vec<Line<'static>> {
        let screen = self.parser.screen();
        let (rows, cols) = screen.size();
        let mut out = Vec::new();
        for r in 0..rows.get() {
            let mut chars: Vec<(char, Style)> = Vec::new();
            for c in 0..cols.get() {
                let Some(cell) = screen.cell(r, c) else {
                    continue;
                };
                if cell.is_wide_continuation() {
                    continue;
                }
                let st = vt_style(cell);
                let text = cell.contents();
                if text.is_empty() {
                    chars.push((' ', st));
                } else {
                    chars.extend(text.chars().map(|ch| (ch, st)));
                }
            }
            while chars
                .last()
                .is_some_and(|(c, st)| *c == ' ' && st.bg.is_none())
            {
                chars.pop();
            }
            let mut spans = Vec::new();
            push_runs(&chars, &mut spans);
            out.push(Line::from(spans));
        }
        while out.last().is_some_and(|l| l.spans.is_empty()) {
            out.pop();
        }
        let skip = out.len().saturating_sub(n);
        out.split_off(skip)
    }
}

fn nz_default(d: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(d).unwrap_or(std::num::NonZeroU16::MIN)
}

fn vt_color(c: vt100::Color) -> Option<Color> {
    match c {
        vt100::Color::Default => None,
        vt100::Color::Idx(i) if i < 16 => Some(ansi_color(u16::from(i))),
        vt100::Color::Idx(i) => Some(Color::Indexed(i)),
        vt100::Color::Rgb(r, g, b) => Some(Color::Rgb(r, g, b)),
    }
}

fn vt_style(cell: &vt100::Cell) -> Style {
    let mut st = Style {
        fg: vt_color(cell.fgcolor()),
        bg: vt_color(cell.bgcolor()),
        ..Style::default()
    };
    if cell.bold() {
        st = st.add_modifier(Modifier::BOLD);
    }
    if cell.dim() {
        st = st.add_modifier(Modifier::DIM);
    }
    if cell.italic() {
        st = st.add_modifier(Modifier::ITALIC);
    }
    if cell.underline() {
        st = st.add_modifier(Modifier::UNDERLINED);
    }
    if cell.inverse() {
        st = st.add_modifier(Modifier::REVERSED);
    }
    st
}

/// Live output of a command or session: through a pipe or a PTY.
#[derive(Debug)]
pub(crate) enum Output {
    Pipe(AnsiLines),
    Pty(Box<VtScreen>),
}

impl Output {
    pub(crate) fn pipe() -> Self {
        Output::Pipe(AnsiLines::new(2000))
    }

    pub(crate) fn pty() -> Self {
        Output::Pty(Box::new(VtScreen::new(24, 100)))
    }

    pub(crate) fn push(&mut self, chunk: &str) {
        match self {
            Output::Pipe(a) => a.push(chunk),
            Output::Pty(v) => v.push(chunk),
        }
    }

    pub(crate) fn tail(&self, n: usize) -> Vec<Line<'static>> {
        match self {
            Output::Pipe(a) => a.tail(n),
            Output::Pty(v) => v.tail(n),
        }
    }

    pub(crate) fn total_lines(&self) -> usize {
        match self {
            Output::Pipe(a) => a.total_lines(),
            Output::Pty(v) => v.tail(usize::MAX).len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(l: &Line<'_>) -> String {
        l.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn wrap_breaks_at_spaces_and_indents_continuations() {
        let mut out = Vec::new();
        wrap_line(&Line::from("- alpha beta gamma delta"), 12, 2, &mut out);
        let texts: Vec<_> = out.iter().map(plain).collect();
        assert_eq!(texts, vec!["- alpha beta", "  gamma", "  delta"]);
    }

    #[test]
    fn wrap_hard_breaks_a_long_word() {
        let mut out = Vec::new();
        wrap_line(&Line::from("abcdefghij"), 4, 0, &mut out);
        let texts: Vec<_> = out.iter().map(plain).collect();
        assert_eq!(texts, vec!["abcd", "efgh", "ij"]);
    }

    #[test]
    fn sgr_colours_become_styles_and_split_escapes_are_joined() {
        let mut a = AnsiLines::new(10);
        a.push("ok \x1b[3");
        a.push("2mPASS\x1b[0m done\n");
        let lines = a.tail(5);
        assert_eq!(lines.len(), 1);
        assert_eq!(plain(&lines[0]), "ok PASS done");
        let pass = lines[0]
            .spans
            .iter()
            .find(|s| s.content == "PASS")
            .map(|s| s.style.fg);
        assert_eq!(pass, Some(Some(Color::Green)));
    }

    #[test]
    fn carriage_return_overwrites_the_line_but_crlf_ends_it() {
        let mut a = AnsiLines::new(10);
        a.push("10%\r50%\r100%\r\nnext\r\n");
        let texts: Vec<_> = a.tail(5).iter().map(plain).collect();
        assert_eq!(texts, vec!["100%", "next"]);
    }

    #[test]
    fn only_the_last_lines_are_kept_but_all_are_counted() {
        let mut a = AnsiLines::new(3);
        for i in 0..10 {
            a.push(&format!("line {i}\n"));
        }
        assert_eq!(a.total_lines(), 10);
        let texts: Vec<_> = a.tail(2).iter().map(plain).collect();
        assert_eq!(texts, vec!["line 8", "line 9"]);
    }

    #[test]
    fn pty_output_is_rendered_through_a_terminal_screen() {
        let mut v = VtScreen::new(5, 20);
        v.push("hello\r\nworld\x1b[1A\r\x1b[2KHELLO");
        let texts: Vec<_> = v.tail(5).iter().map(plain).collect();
        assert_eq!(texts, vec!["HELLO", "world"]);
    }
}
