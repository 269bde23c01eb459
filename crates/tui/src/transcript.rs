//! The scrollable list of cells, with a per-cell cache of wrapped lines.
//!
//! `prepare` (run by the loop before each draw, with `&mut`) brings the cache up to date for the
//! current width; drawing then only reads it, and only for the cells that intersect the viewport.
//! Scrolling is an anchor: `None` means pinned to the bottom (new output stays in view); `Some(top)`
//! keeps the first visible line fixed while more content arrives below.

use std::collections::HashMap;
use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

use super::cells::{Cell, CellKind, ToolCell, draw_lines};

#[derive(Debug, Default)]
struct CacheEntry {
    width: usize,
    version: u64,
    expanded: bool,
    /// The bytes of the answer left out (they are in the scrollback).
    from: usize,
    fresh: bool,
    lines: Vec<Line<'static>>,
}

#[derive(Debug, Default)]
pub(crate) struct Transcript {
    cells: Vec<Cell>,
    cache: Vec<CacheEntry>,
    by_call: HashMap<String, usize>,
    /// Tool results and diffs shown in full (ctrl-o).
    pub(crate) expanded: bool,
    /// First visible line when scrolled up; `None` when pinned to the bottom.
    scroll_top: Option<usize>,
    total: usize,
    viewport: usize,
    /// Cells before this index were written to the terminal's own scrollback (inline mode) and
    /// are never drawn again; the view shows the cells from here on.
    flushed: usize,
    /// Bytes of the answer in cell `flushed` that are in the scrollback already: a streaming
    /// answer goes there line by line as its lines are finished, so the live part stays small.
    partial: usize,
    /// Draw every cell, the flushed ones too (inline mode's full-screen transcript view).
    pub(crate) show_all: bool,
}

impl Transcript {
    pub(crate) fn push(&mut self, kind: CellKind) -> usize {
        if let CellKind::Tool(t) = &kind {
            self.by_call.insert(t.call_id.clone(), self.cells.len());
        }
        self.cells.push(Cell::new(kind));
        self.cache.push(CacheEntry::default());
        self.cells.len() - 1
    }

    /// Replaces every cell but the newest `keep` with `note(how many went)`; returns how many
    /// went. A resumed long session replays only its recent part into the terminal: printing
    /// thousands of cells delays the first frame by a fraction of a second per thousand, and the
    /// terminal's own scrollback (a few thousand lines in most) would drop them anyway.
    pub(crate) fn keep_last(&mut self, keep: usize, note: impl FnOnce(usize) -> CellKind) -> usize {
        let gone = self.cells.len().saturating_sub(keep);
        if gone == 0 {
            return 0;
        }
        self.cells.splice(..gone, [Cell::new(note(gone))]);
        self.cache.splice(..gone, [CacheEntry::default()]);
        self.by_call.retain(|_, i| *i >= gone);
        for i in self.by_call.values_mut() {
            *i = *i - gone + 1;
        }
        self.flushed = self.flushed.saturating_sub(gone);
        self.scroll_top = None;
        gone
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    pub(crate) fn clear(&mut self) {
        self.cells.clear();
        self.cache.clear();
        self.by_call.clear();
        self.scroll_top = None;
        self.flushed = 0;
        self.partial = 0;
    }

    /// The text of the newest finished answer of the assistant (`/copy`).
    pub(crate) fn last_answer(&self) -> Option<&str> {
        self.cells.iter().rev().find_map(|c| match &c.kind {
            CellKind::Assistant {
                text,
                streaming: false,
            } if !text.trim().is_empty() => Some(text.as_str()),
            _ => None,
        })
    }

    /// The first cell a frame draws: the first not flushed, or the first of all.
    fn first_drawn(&self) -> usize {
        if self.show_all { 0 } else { self.flushed }
    }

    /// The lines of the cells that are done, in order, from the first not yet flushed up to the
    /// first one still changing (streaming, running, awaiting approval); they are marked flushed.
    /// With `settle` (no turn running), cells that will get no further event are done too. Of an
    /// answer still streaming, the finished lines go now and the rest later.
    pub(crate) fn take_finished(
        &mut self,
        width: usize,
        now: Instant,
        settle: bool,
    ) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        while let Some(cell) = self.cells.get(self.flushed) {
            if cell.is_finished() || settle && !cell.awaits_answer() {
                out.extend(cell.render_from(self.partial, width, false, now));
                self.flushed += 1;
                self.partial = 0;
                continue;
            }
            if let Some(stable) = cell.stable_answer_prefix()
                && stable > self.partial
            {
                out.extend(cell.render_answer_part(self.partial, stable, width));
                self.partial = stable;
            }
            break;
        }
        out
    }

    /// Everything that is in the scrollback, rendered anew for `width` (inline mode prints it
    /// again after a resize).
    pub(crate) fn printed_lines(&self, width: usize, now: Instant) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        for cell in &self.cells[..self.flushed.min(self.cells.len())] {
            out.extend(cell.render_lines(width, false, now));
        }
        if self.partial > 0
            && let Some(cell) = self.cells.get(self.flushed)
        {
            out.extend(cell.render_answer_part(0, self.partial, width));
        }
        out
    }

    /// Keeps the first `n` cells. In inline mode the cells already written to the terminal's
    /// scrollback stay there; only what is still drawn goes.
    pub(crate) fn truncate(&mut self, n: usize) {
        self.cells.truncate(n);
        self.cache.truncate(n);
        if self.flushed >= n {
            self.partial = 0;
        }
        self.flushed = self.flushed.min(n);
        self.by_call.retain(|_, i| *i < n);
        self.scroll_top = None;
    }

    /// Removes the last cell when it is an info block, and returns it.
    pub(crate) fn take_last_info(&mut self) -> Option<super::info::Info> {
        // One already in the scrollback stays where it is.
        if !matches!(self.cells.last().map(|c| &c.kind), Some(CellKind::Info(_)))
            || self.cells.len() <= self.flushed
        {
            return None;
        }
        self.cache.pop();
        match self.cells.pop().map(|c| c.kind) {
            Some(CellKind::Info(info)) => Some(info),
            _ => None,
        }
    }

    pub(crate) fn last_mut(&mut self) -> Option<&mut Cell> {
        self.cells.last_mut()
    }

    pub(crate) fn tool_mut(&mut self, call_id: &str) -> Option<&mut ToolCell> {
        let i = *self.by_call.get(call_id)?;
        let cell = self.cells.get_mut(i)?;
        cell.touch();
        match &mut cell.kind {
            CellKind::Tool(t) => Some(t),
            _ => None,
        }
    }

    pub(crate) fn has_live_cells(&self) -> bool {
        self.cells.iter().rev().take(64).any(Cell::is_live)
    }

    /// Brings the cache up to date for `width` and records the viewport height.
    pub(crate) fn prepare(&mut self, width: usize, viewport: usize, now: Instant) {
        let mut total = 0;
        let start = self.first_drawn();
        for (i, (cell, entry)) in self.cells[start..]
            .iter()
            .zip(self.cache[start..].iter_mut())
            .enumerate()
        {
            // The overlay shows every cell whole; the live view leaves out what is printed.
            let from = if !self.show_all && start + i == self.flushed {
                self.partial
            } else {
                0
            };
            let live = cell.is_live();
            let stale = !entry.fresh
                || entry.width != width
                || entry.version != cell.version
                || entry.expanded != self.expanded
                || entry.from != from;
            if live || stale {
                entry.lines = cell.render_from(from, width, self.expanded, now);
                entry.width = width;
                entry.version = cell.version;
                entry.expanded = self.expanded;
                entry.from = from;
                entry.fresh = true;
            }
            total += entry.lines.len();
        }
        self.total = total;
        self.viewport = viewport;
        if let Some(top) = self.scroll_top
            && top + viewport >= total
        {
            self.scroll_top = None;
        }
    }

    /// Lines of the cells still drawn (all of them, or the unflushed ones inline), as of the last
    /// `prepare`.
    pub(crate) fn total_lines(&self) -> usize {
        self.total
    }

    fn max_top(&self) -> usize {
        self.total.saturating_sub(self.viewport)
    }

    pub(crate) fn top(&self) -> usize {
        self.scroll_top
            .unwrap_or_else(|| self.max_top())
            .min(self.max_top())
    }

    pub(crate) fn scroll_up(&mut self, n: usize) {
        self.scroll_top = Some(self.top().saturating_sub(n));
    }

    pub(crate) fn scroll_down(&mut self, n: usize) {
        let top = self.top() + n;
        self.scroll_top = if top >= self.max_top() {
            None
        } else {
            Some(top)
        };
    }

    pub(crate) fn scroll_to_bottom(&mut self) {
        self.scroll_top = None;
    }

    /// Lines above the viewport that are hidden (for the "↑ n more" hint).
    pub(crate) fn lines_below(&self) -> usize {
        self.total.saturating_sub(self.top() + self.viewport)
    }

    /// Draws the visible part. `prepare` must have run for this width.
    pub(crate) fn draw(&self, area: Rect, buf: &mut Buffer) {
        let top = self.top();
        let bottom = top + area.height as usize;
        let mut y = 0usize;
        for entry in &self.cache[self.first_drawn()..] {
            let h = entry.lines.len();
            if y + h <= top {
                y += h;
                continue;
            }
            if y >= bottom {
                break;
            }
            let skip = top.saturating_sub(y);
            let row = (y + skip - top) as u16;
            let rect = Rect {
                x: area.x,
                y: area.y + row,
                width: area.width,
                height: area.height - row,
            };
            draw_lines(&entry.lines, skip, rect, buf);
            y += h;
        }
    }
}
