//! The inline screen: the conversation goes into the terminal's own scrollback, and only the live
//! part (what is still changing, the composer, the status line) is drawn, in a viewport at the
//! bottom of the normal screen.
//!
//! Finished transcript cells are printed once, line by line, above the viewport; the terminal
//! scrolls them up and keeps them, so its scrollback, search and selection see the whole session,
//! and they stay there after pablo quits. The viewport is redrawn by diffing against what it last
//! drew (one synchronized update per frame), so a frame writes only the cells that changed.
//!
//! Positions are tracked, not asked for: the terminal is asked once, at start, where the cursor is
//! (the viewport begins there, right under the shell's last output); after that every byte pablo
//! writes moves the cursor in a known way.
//!
//! Two things would put a line into the scrollback twice, and neither is ever done. Erasing "from
//! the cursor to the end of the screen" with the cursor at the top-left corner: tmux (its
//! `scroll-on-clear` option, on by default) first scrolls the whole screen into its history, so
//! the live viewport would land there as a stale copy. Rows are erased one by one instead. And a
//! resize: the terminal re-wraps and moves what is on screen in its own way (tmux re-flows lines
//! and pulls history back down, others do not), so after one nobody knows where the old viewport
//! went. The surface then starts over ([`InlineScreen::start_over`]): screen and scrollback
//! erased, the conversation printed again at the new width, the viewport under it.

use std::io::{self, Write};

use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::buffer::{Buffer, Cell, CellDiffOption};
use ratatui::crossterm::cursor::{Hide, MoveTo, Show};
use ratatui::crossterm::queue;
use ratatui::crossterm::terminal::{
    BeginSynchronizedUpdate, Clear, ClearType, EndSynchronizedUpdate, EnterAlternateScreen,
    LeaveAlternateScreen,
};
use ratatui::layout::{Position, Rect, Size};
use ratatui::text::Line;

/// Most history lines rendered in one buffer (a cell's lines arrive in chunks of this size).
const CHUNK: usize = 512;

pub(crate) struct InlineScreen<W: Write> {
    out: W,
    size: Size,
    /// The screen row of the viewport's first line.
    top: u16,
    /// The viewport as last drawn (its area starts at row 0); `None` forces a full redraw.
    prev: Option<Buffer>,
    /// An overlay has the alternate screen (the normal screen is left as it was).
    in_alternate: bool,
    /// The overlay as last drawn on the alternate screen.
    alt_prev: Option<Buffer>,
    /// Bytes written so far (for the bench's bytes-per-frame figure).
    written: u64,
}

/// Counts what goes through to the terminal.
struct Counting<'a, W: Write> {
    out: &'a mut W,
    n: &'a mut u64,
}

impl<W: Write> Write for Counting<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        *self.n += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The cells of row `y` of `buf` up to the last one that shows something (trailing blanks are not
/// written, so a line in the scrollback is only as long as its text and re-wraps cleanly).
fn row_cells(buf: &Buffer, y: u16) -> Vec<(u16, &Cell)> {
    let width = buf.area.width;
    let blank = Cell::default();
    let mut end = 0;
    for x in 0..width {
        if buf[(x, y)] != blank {
            end = x + 1;
        }
    }
    let mut out = Vec::new();
    let mut x = 0;
    while x < end {
        let cell = &buf[(x, y)];
        if cell.diff_option != CellDiffOption::Skip {
            out.push((x, cell));
        }
        // A wide character covers the next cell too.
        x += unicode_width::UnicodeWidthStr::width(cell.symbol()).max(1) as u16;
    }
    out
}

impl<W: Write> InlineScreen<W> {
    /// A screen of `size` whose viewport starts at `cursor_row` (where the shell left the
    /// cursor).
    pub(crate) fn new(out: W, size: Size, cursor_row: u16) -> Self {
        Self {
            out,
            size,
            top: cursor_row.min(size.height.saturating_sub(1)),
            prev: None,
            in_alternate: false,
            alt_prev: None,
            written: 0,
        }
    }

    pub(crate) fn size(&self) -> Size {
        self.size
    }

    #[cfg(any(test, feature = "bench-support"))]
    pub(crate) fn bytes_written(&self) -> u64 {
        self.written
    }

    fn sink(&mut self) -> Counting<'_, W> {
        Counting {
            out: &mut self.out,
            n: &mut self.written,
        }
    }

    /// Draws `cells` at screen row `y` (absolute), with their styles, then resets the style.
    fn put_row(&mut self, y: u16, cells: &[(u16, &Cell)]) -> io::Result<()> {
        if cells.is_empty() {
            return Ok(());
        }
        let mut backend = CrosstermBackend::new(self.sink());
        backend.draw(cells.iter().map(|(x, c)| (*x, y, *c)))
    }

    /// Erases the rows from `row` to the bottom, one by one (never with an erase-below from the
    /// top-left corner, which tmux turns into a copy of the screen in its history).
    fn clear_rows_from(&mut self, row: u16) -> io::Result<()> {
        let rows = self.size.height.max(1);
        let mut sink = self.sink();
        for y in row..rows {
            queue!(sink, MoveTo(0, y), Clear(ClearType::CurrentLine))?;
        }
        Ok(())
    }

    /// Scrolls the whole screen up by `n` lines (the top ones go into the scrollback).
    fn scroll_up(&mut self, n: u16) -> io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        let last = self.size.height.saturating_sub(1);
        let mut sink = self.sink();
        queue!(sink, MoveTo(0, last))?;
        for _ in 0..n {
            sink.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Prints `lines` above the viewport, into the scrollback, rendered at the screen width. The
    /// viewport is cleared now and redrawn in full by the next [`InlineScreen::draw`].
    pub(crate) fn insert_history(&mut self, lines: &[Line<'_>]) -> io::Result<()> {
        if lines.is_empty() || self.in_alternate {
            return Ok(());
        }
        let rows = self.size.height.max(1);
        let width = self.size.width.max(1);
        {
            let mut sink = self.sink();
            queue!(sink, BeginSynchronizedUpdate)?;
        }
        self.clear_rows_from(self.top)?;
        let mut y = self.top;
        for chunk in lines.chunks(CHUNK) {
            let mut buf = Buffer::empty(Rect::new(0, 0, width, chunk.len() as u16));
            for (i, line) in chunk.iter().enumerate() {
                buf.set_line(0, i as u16, line, width);
            }
            for row in 0..chunk.len() as u16 {
                if y >= rows {
                    self.scroll_up(1)?;
                    y = rows - 1;
                }
                let cells = row_cells(&buf, row);
                self.put_row(y, &cells)?;
                y += 1;
            }
        }
        self.top = y;
        self.prev = None;
        let mut sink = self.sink();
        queue!(sink, EndSynchronizedUpdate)?;
        sink.flush()
    }

    /// Draws the viewport `live` (its height is the viewport's) and puts the terminal cursor at
    /// `cursor` (viewport coordinates), or hides it.
    pub(crate) fn draw(&mut self, live: &Buffer, cursor: Option<Position>) -> io::Result<()> {
        if self.in_alternate {
            return Ok(());
        }
        let rows = self.size.height.max(1);
        let h = live.area.height.min(rows);
        {
            let mut sink = self.sink();
            queue!(sink, BeginSynchronizedUpdate)?;
        }
        // Room for the viewport: scroll what is above it into the scrollback.
        if self.top + h > rows {
            let k = self.top + h - rows;
            self.scroll_up(k)?;
            self.top -= k;
            self.prev = None;
        }
        let prev = self.prev.take();
        self.prev = Some(self.paint(prev, live, self.top, h)?);
        self.place_cursor(cursor, h)
    }

    /// Paints `buf`'s first `h` rows at screen row `top`: only what differs from `prev` when it has
    /// the same shape, else everything (clearing from `top` down first). Returns what is now on
    /// screen.
    fn paint(
        &mut self,
        prev: Option<Buffer>,
        buf: &Buffer,
        top: u16,
        h: u16,
    ) -> io::Result<Buffer> {
        let same_shape = prev
            .as_ref()
            .is_some_and(|p| p.area.width == buf.area.width && p.area.height == h);
        let mut shown = buf.clone();
        shown.resize(Rect::new(0, 0, buf.area.width, h));
        match prev {
            Some(prev) if same_shape => {
                let updates: Vec<(u16, u16, &Cell)> = prev
                    .diff(&shown)
                    .into_iter()
                    .map(|(x, y, c)| (x, y + top, c))
                    .collect();
                if !updates.is_empty() {
                    let mut backend = CrosstermBackend::new(self.sink());
                    backend.draw(updates.into_iter())?;
                }
            }
            _ => {
                self.clear_rows_from(top)?;
                for row in 0..h {
                    let cells = row_cells(&shown, row);
                    self.put_row(top + row, &cells)?;
                }
            }
        }
        Ok(shown)
    }

    fn place_cursor(&mut self, cursor: Option<Position>, h: u16) -> io::Result<()> {
        let top = if self.in_alternate { 0 } else { self.top };
        let mut sink = self.sink();
        match cursor {
            Some(p) if p.y < h => queue!(sink, MoveTo(p.x, top + p.y), Show)?,
            _ => queue!(sink, Hide)?,
        }
        queue!(sink, EndSynchronizedUpdate)?;
        sink.flush()
    }

    /// Draws a full-screen overlay on the alternate screen (entering it first).
    pub(crate) fn draw_alternate(
        &mut self,
        buf: &Buffer,
        cursor: Option<Position>,
    ) -> io::Result<()> {
        self.enter_alternate()?;
        {
            let mut sink = self.sink();
            queue!(sink, BeginSynchronizedUpdate)?;
        }
        let h = buf.area.height.min(self.size.height);
        let prev = self.alt_prev.take();
        self.alt_prev = Some(self.paint(prev, buf, 0, h)?);
        self.place_cursor(cursor, h)
    }

    /// The terminal is now `size`. What it shows is not known any more (see the module docs):
    /// the caller starts over with [`InlineScreen::start_over`] once the normal screen is back.
    pub(crate) fn resize(&mut self, size: Size) {
        self.size = size;
        self.prev = None;
        self.alt_prev = None;
    }

    /// Erases the screen and the terminal's scrollback and puts the viewport at the top: the
    /// caller prints the conversation again ([`InlineScreen::insert_history`]), at the current
    /// width, so each line of it is in the scrollback once. What the shell printed before pablo
    /// started goes with it.
    pub(crate) fn start_over(&mut self) -> io::Result<()> {
        if self.in_alternate {
            return Ok(());
        }
        self.top = 0;
        self.prev = None;
        let mut sink = self.sink();
        // The screen first: tmux copies it into its history when it is erased whole, and the
        // history erase after it takes that copy too.
        queue!(
            sink,
            MoveTo(0, 0),
            Clear(ClearType::All),
            Clear(ClearType::Purge),
            MoveTo(0, 0)
        )?;
        sink.flush()
    }

    /// Gives the screen to a full-screen overlay (a picker, the full diff) on the alternate
    /// screen; the conversation on the normal screen is left untouched.
    pub(crate) fn enter_alternate(&mut self) -> io::Result<()> {
        if !self.in_alternate {
            self.in_alternate = true;
            self.alt_prev = None;
            let mut sink = self.sink();
            queue!(sink, EnterAlternateScreen, Clear(ClearType::All))?;
            sink.flush()?;
        }
        Ok(())
    }

    pub(crate) fn leave_alternate(&mut self) -> io::Result<()> {
        if self.in_alternate {
            self.in_alternate = false;
            self.prev = None;
            let mut sink = self.sink();
            queue!(sink, LeaveAlternateScreen)?;
            sink.flush()?;
        }
        Ok(())
    }

    /// The viewport now starts at `row` (after another program had the terminal) and is redrawn
    /// in full by the next frame.
    pub(crate) fn reanchor(&mut self, row: u16) {
        self.top = row.min(self.size.height.saturating_sub(1));
        self.prev = None;
        self.alt_prev = None;
        self.in_alternate = false;
    }

    /// Access to the writer for an overlay's own full-screen drawing.
    pub(crate) fn writer(&mut self) -> &mut W {
        &mut self.out
    }

    /// Ends the session on screen: the viewport is erased and the cursor left where it began, so
    /// the shell continues right under the conversation.
    pub(crate) fn finish(&mut self) -> io::Result<()> {
        self.leave_alternate()?;
        let top = self.top;
        self.clear_rows_from(top)?;
        self.prev = None;
        let mut sink = self.sink();
        queue!(sink, MoveTo(0, top), Show)?;
        sink.flush()
    }

    /// Pushes everything on screen above the viewport into the scrollback and puts the viewport
    /// at the top of an otherwise empty screen (`/clear`): nothing is erased, nothing printed
    /// twice.
    pub(crate) fn clear_screen(&mut self) -> io::Result<()> {
        if self.in_alternate || self.top == 0 {
            return Ok(());
        }
        let n = self.top;
        self.clear_rows_from(n)?;
        self.scroll_up(n)?;
        self.top = 0;
        self.prev = None;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use ratatui::style::{Color, Style};
    use ratatui::text::Span;

    use super::*;

    const ROWS: u16 = 10;
    const COLS: u16 = 30;

    fn nz(n: u16) -> std::num::NonZeroU16 {
        std::num::NonZeroU16::new(n).unwrap()
    }

    /// A screen whose output feeds a vt100 terminal with scrollback.
    struct Fixture {
        screen: InlineScreen<Vec<u8>>,
        term: vt100::Parser,
        fed: usize,
    }

    impl Fixture {
        fn new(cursor_row: u16) -> Self {
            Self {
                screen: InlineScreen::new(Vec::new(), Size::new(COLS, ROWS), cursor_row),
                term: vt100::Parser::new(nz(ROWS), nz(COLS), 1000),
                fed: 0,
            }
        }

        fn feed(&mut self) {
            let bytes = &self.screen.writer()[self.fed..];
            self.term.process(bytes);
            self.fed += bytes.len();
        }

        /// Every line the terminal holds, scrollback first, trailing spaces cut.
        fn all_lines(&mut self) -> Vec<String> {
            self.feed();
            let screen = self.term.screen_mut();
            screen.set_scrollback(usize::MAX);
            let back = screen.scrollback();
            let mut lines = Vec::new();
            // Walk the scrollback from its oldest line: at offset k the top row shown is the
            // k-th line from the end of the scrollback.
            for k in (1..=back).rev() {
                screen.set_scrollback(k);
                let first = screen.rows(0, COLS).next().unwrap_or_default();
                lines.push(first.trim_end().to_string());
            }
            screen.set_scrollback(0);
            lines.extend(screen.rows(0, COLS).map(|r| r.trim_end().to_string()));
            lines
        }
    }

    fn live(lines: &[&str]) -> Buffer {
        let mut buf = Buffer::empty(Rect::new(0, 0, COLS, lines.len() as u16));
        for (i, l) in lines.iter().enumerate() {
            buf.set_string(0, i as u16, l, Style::default());
        }
        buf
    }

    fn history(n: usize, tag: &str) -> Vec<Line<'static>> {
        (0..n).map(|i| Line::from(format!("{tag} {i}"))).collect()
    }

    #[test]
    fn history_goes_above_the_viewport_and_into_the_scrollback_exactly_once() {
        let mut f = Fixture::new(0);
        f.screen
            .draw(&live(&["> compose", "status"]), None)
            .unwrap();
        f.screen.insert_history(&history(25, "line")).unwrap();
        f.screen
            .draw(&live(&["> compose", "status"]), None)
            .unwrap();
        let lines = f.all_lines();
        for i in 0..25 {
            let want = format!("line {i}");
            assert_eq!(
                lines.iter().filter(|l| **l == want).count(),
                1,
                "{want} in {lines:#?}"
            );
        }
        // The viewport is the last thing on the screen, after the history, in order.
        let n = lines.len();
        assert_eq!(lines[n - 2], "> compose");
        assert_eq!(lines[n - 1], "status");
        assert_eq!(lines[n - 3], "line 24");
        assert!(
            !lines
                .iter()
                .any(|l| l.contains("compose") && l != "> compose")
        );
        assert_eq!(lines.iter().filter(|l| *l == "> compose").count(), 1);
    }

    #[test]
    fn a_frame_that_changes_one_cell_writes_a_few_bytes_not_the_viewport() {
        let mut f = Fixture::new(0);
        let text = "some output of the command ..";
        let mut buf = live(&[
            "running 1 s",
            text,
            text,
            text,
            text,
            text,
            text,
            "> ",
            "status",
        ]);
        f.screen.draw(&buf, None).unwrap();
        let full = f.screen.bytes_written();
        assert!(full > 200, "the first frame drew everything: {full} bytes");
        buf.set_string(8, 0, "2", Style::default());
        f.screen.draw(&buf, None).unwrap();
        let frame = f.screen.bytes_written() - full;
        // The synchronized-update pair, one move, one character, the style reset, the cursor.
        assert!(frame < 64, "a one-cell change wrote {frame} bytes");
        f.feed();
        assert!(f.term.screen().contents().contains("running 2 s"));
    }

    #[test]
    fn growing_the_viewport_pushes_history_up_without_copying_the_viewport() {
        let mut f = Fixture::new(0);
        f.screen.insert_history(&history(8, "h")).unwrap();
        f.screen.draw(&live(&["a", "b"]), None).unwrap();
        f.screen
            .draw(
                &live(&["prompt 1", "prompt 2", "prompt 3", "prompt 4", "b"]),
                None,
            )
            .unwrap();
        let lines = f.all_lines();
        assert_eq!(
            lines.iter().filter(|l| l.starts_with("h ")).count(),
            8,
            "{lines:#?}"
        );
        assert_eq!(lines.iter().filter(|l| *l == "a").count(), 0, "{lines:#?}");
        assert_eq!(lines.last().map(String::as_str), Some("b"));
    }

    #[test]
    fn a_resize_starts_over_and_the_history_printed_again_is_there_once() {
        let mut f = Fixture::new(0);
        f.screen.insert_history(&history(15, "h")).unwrap();
        f.screen.draw(&live(&["> ", "status"]), None).unwrap();
        f.feed();
        f.term.screen_mut().set_size(nz(ROWS - 3), nz(COLS - 5));
        f.screen.resize(Size::new(COLS - 5, ROWS - 3));
        f.screen.start_over().unwrap();
        f.screen.insert_history(&history(15, "h")).unwrap();
        f.screen.draw(&live(&["> ", "status"]), None).unwrap();
        let lines = f.all_lines();
        for i in 0..15 {
            let want = format!("h {i}");
            assert_eq!(
                lines.iter().filter(|l| **l == want).count(),
                1,
                "{lines:#?}"
            );
        }
        assert_eq!(
            lines.iter().filter(|l| *l == "status").count(),
            1,
            "{lines:#?}"
        );
        assert_eq!(lines.last().map(String::as_str), Some("status"));
    }

    #[test]
    fn no_erase_starts_at_the_top_left_corner_so_tmux_copies_nothing_into_its_history() {
        let mut f = Fixture::new(0);
        f.screen.draw(&live(&["a"; ROWS as usize]), None).unwrap();
        f.screen.insert_history(&history(3, "h")).unwrap();
        f.screen.draw(&live(&["b"; ROWS as usize]), None).unwrap();
        f.screen.finish().unwrap();
        let out = String::from_utf8_lossy(f.screen.writer()).into_owned();
        // ED 0 (erase below) at row 1, column 1 is what tmux's scroll-on-clear catches.
        assert!(!out.contains("\x1b[1;1H\x1b[J"), "{out:?}");
        assert!(!out.contains("\x1b[J"), "{out:?}");
    }

    #[test]
    fn clear_screen_moves_what_is_on_screen_into_the_scrollback_once() {
        let mut f = Fixture::new(0);
        f.screen.insert_history(&history(4, "kept")).unwrap();
        f.screen.draw(&live(&["> ", "status"]), None).unwrap();
        f.screen.clear_screen().unwrap();
        f.screen.draw(&live(&["> ", "status"]), None).unwrap();
        f.feed();
        let visible = f.term.screen().contents();
        assert!(!visible.contains("kept"), "{visible}");
        let lines = f.all_lines();
        for i in 0..4 {
            let want = format!("kept {i}");
            assert_eq!(lines.iter().filter(|l| **l == want).count(), 1);
        }
        assert_eq!(lines.iter().filter(|l| *l == "status").count(), 1);
    }

    #[test]
    fn finishing_erases_the_viewport_and_leaves_the_conversation() {
        let mut f = Fixture::new(2);
        f.screen.insert_history(&history(3, "kept")).unwrap();
        f.screen.draw(&live(&["> typing", "status"]), None).unwrap();
        f.screen.finish().unwrap();
        let lines = f.all_lines();
        assert!(lines.iter().any(|l| l == "kept 2"));
        assert!(!lines.iter().any(|l| l.contains("typing") || l == "status"));
    }

    #[test]
    fn styles_survive_into_the_scrollback_and_trailing_blanks_are_not_written() {
        let mut f = Fixture::new(0);
        let line = Line::from(vec![Span::styled("red", Style::default().fg(Color::Red))]);
        f.screen.insert_history(&[line]).unwrap();
        f.feed();
        let cell = f.term.screen().cell(0, 0).unwrap();
        assert_eq!(cell.fgcolor(), vt100::Color::Idx(1));
        let out = String::from_utf8_lossy(f.screen.writer()).into_owned();
        assert!(!out.contains("red   "), "trailing blanks written: {out:?}");
    }
}
