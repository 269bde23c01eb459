//! The layers of undo, rewind and `/diff`: the list of turns to rewind to, and the restore
//! preview (each file with the diff of what a restore would lose, files and hunks selected one by
//! one, conflicts shown and left out unless chosen). `/diff` is the same view in review mode:
//! nothing is selected, every hunk says which turn made it, and `r` opens the preview of
//! reverting what is selected (or the hunk or file under the cursor).

use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Widget};

use std::sync::Arc;

use super::diff::render_hunks;
use super::memo::Memo;
use super::text::{truncate, wrap_line};
use super::theme;
use pablo_protocol::{
    FileState, HunkSource, RestoreAction, RestoreChoice, RestoreFile, RestorePlan, RestoreScope,
    RestoreStatus, TurnCheckpoint,
};

/// What a key in these layers asks the app to do.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Intent {
    None,
    Close,
    /// Plan this restore (the rewind picked in the list).
    Plan(RestoreScope),
    /// Carry out the reviewed plan with these choices.
    Restore {
        plan_id: String,
        files: Vec<RestoreChoice>,
        rewind: bool,
    },
}

/// `/rewind`: the session's turns, newest last.
#[derive(Debug, Default)]
pub(crate) struct RewindView {
    pub(crate) turns: Vec<TurnCheckpoint>,
    pub(crate) selected: usize,
}

impl RewindView {
    pub(crate) fn new(turns: Vec<TurnCheckpoint>) -> Self {
        let selected = turns.len().saturating_sub(1);
        Self { turns, selected }
    }

    pub(crate) fn handle_key(&mut self, key: KeyEvent) -> Intent {
        if move_selection(key.code, &mut self.selected, self.turns.len()) {
            return Intent::None;
        }
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => Intent::Close,
            KeyCode::Enter => match self.turns.get(self.selected) {
                Some(t) => Intent::Plan(RestoreScope::Rewind { turn: t.turn }),
                None => Intent::Close,
            },
            _ => Intent::None,
        }
    }

    pub(crate) fn draw(&self, area: Rect, buf: &mut Buffer) {
        let inner = frame(area, buf, " Rewind to the start of a turn ");
        let body_h = inner.height.saturating_sub(2) as usize;
        let mut lines: Vec<Line<'static>> = vec![Line::from(Span::styled(
            "the files and the conversation go back to how they were before that prompt",
            theme::dim(),
        ))];
        if self.turns.is_empty() {
            lines.push(Line::from(Span::styled(
                "no turns yet in this session",
                theme::dim(),
            )));
        }
        let skip = self.selected.saturating_sub(body_h.saturating_sub(2));
        let width = inner.width as usize;
        for (i, t) in self.turns.iter().enumerate().skip(skip) {
            let selected = i == self.selected;
            let files = if t.files.is_empty() {
                "no files changed".to_string()
            } else {
                t.files.join(", ")
            };
            let mut spans = vec![
                Span::styled(if selected { "▶ " } else { "  " }, theme::key()),
                Span::styled(
                    format!("turn {:<3} ", t.turn),
                    if selected {
                        theme::selected()
                    } else {
                        theme::bold()
                    },
                ),
                Span::raw(format!("{:<32} ", truncate(&t.title, 32))),
            ];
            if t.undone {
                spans.push(Span::styled("(undone) ", theme::dim()));
            }
            let room = width.saturating_sub(50);
            spans.push(Span::styled(truncate(&files, room.max(10)), theme::dim()));
            lines.push(Line::from(spans));
        }
        for (i, l) in lines.iter().take(body_h + 1).enumerate() {
            buf.set_line(inner.x, inner.y + i as u16, l, inner.width);
        }
        footer(
            inner,
            buf,
            &[
                ("↑↓", "select"),
                ("enter", "preview the rewind"),
                ("esc", "close"),
            ],
        );
    }
}

/// One file of the preview: whether it is selected, and which of its hunks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FileMark {
    pub(crate) selected: bool,
    pub(crate) hunks: Vec<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item {
    File(usize),
    Hunk(usize, usize),
}

/// The restore preview (`/undo`, `/rewind`) and the `/diff` review.
#[derive(Debug)]
pub(crate) struct RestoreView {
    pub(crate) plan: RestorePlan,
    /// `/diff`: browsing; nothing is restored until `r` opens a preview.
    pub(crate) review: bool,
    /// Only these files are part of the preview (a revert opened from `/diff`).
    pub(crate) only: Option<Vec<usize>>,
    pub(crate) marks: Vec<FileMark>,
    focus: usize,
    pub(crate) scroll: usize,
    /// The body as last laid out and what it was laid out for (the plan does not change while
    /// the view is open): drawn every frame, a long diff is styled and wrapped once.
    body_memo: Memo<BodyKey, (Vec<Line<'static>>, Vec<usize>)>,
}

/// Width, `review`, `only`, the marks and the focus: what the body depends on besides the plan.
type BodyKey = (usize, bool, Option<Vec<usize>>, Vec<FileMark>, usize);

fn selectable(f: &RestoreFile) -> bool {
    f.status != RestoreStatus::Unrestorable
}

impl RestoreView {
    pub(crate) fn new(plan: RestorePlan) -> Self {
        let review = matches!(plan.scope, RestoreScope::Session { .. });
        let marks = plan
            .files
            .iter()
            .map(|f| FileMark {
                selected: !review && f.status == RestoreStatus::Ready,
                hunks: vec![!review; f.hunks.len()],
            })
            .collect();
        Self {
            plan,
            review,
            only: None,
            marks,
            focus: 0,
            scroll: 0,
            body_memo: Memo::default(),
        }
    }

    fn visible(&self, i: usize) -> bool {
        self.only.as_ref().is_none_or(|o| o.contains(&i))
    }

    fn items(&self) -> Vec<Item> {
        let mut out = Vec::new();
        for (i, f) in self.plan.files.iter().enumerate() {
            if !self.visible(i) {
                continue;
            }
            out.push(Item::File(i));
            for j in 0..f.hunks.len() {
                out.push(Item::Hunk(i, j));
            }
        }
        out
    }

    fn focused(&self) -> Option<Item> {
        self.items().get(self.focus).copied()
    }

    /// What would be sent: every selected file, whole or by hunks.
    pub(crate) fn choices(&self) -> Vec<RestoreChoice> {
        let mut out = Vec::new();
        for (i, (f, m)) in self.plan.files.iter().zip(&self.marks).enumerate() {
            if !self.visible(i) || !m.selected || !selectable(f) {
                continue;
            }
            let picked: Vec<usize> = m
                .hunks
                .iter()
                .enumerate()
                .filter(|(_, on)| **on)
                .map(|(j, _)| j)
                .collect();
            let hunks = if f.binary || picked.len() == f.hunks.len() {
                None
            } else {
                Some(picked)
            };
            out.push(RestoreChoice {
                path: f.path.clone(),
                hunks,
            });
        }
        out
    }

    fn toggle(&mut self) {
        let Some(item) = self.focused() else { return };
        match item {
            Item::File(i) => {
                if !self.plan.files.get(i).is_some_and(selectable) {
                    return;
                }
                let m = &mut self.marks[i];
                m.selected = !m.selected;
                if m.selected && !m.hunks.iter().any(|h| *h) {
                    m.hunks.iter_mut().for_each(|h| *h = true);
                }
            }
            Item::Hunk(i, j) => {
                if !self.plan.files.get(i).is_some_and(selectable) {
                    return;
                }
                let m = &mut self.marks[i];
                if let Some(h) = m.hunks.get_mut(j) {
                    *h = !*h;
                }
                m.selected = m.hunks.iter().any(|h| *h);
            }
        }
    }

    /// From `/diff`: the preview of reverting what is selected, or else the item under the
    /// cursor.
    fn open_preview(&mut self) {
        let any = self.marks.iter().any(|m| m.selected);
        if !any {
            let Some(item) = self.focused() else { return };
            match item {
                Item::File(i) => {
                    let m = &mut self.marks[i];
                    m.selected = true;
                    m.hunks.iter_mut().for_each(|h| *h = true);
                }
                Item::Hunk(i, j) => {
                    let m = &mut self.marks[i];
                    m.selected = true;
                    for (k, h) in m.hunks.iter_mut().enumerate() {
                        *h = k == j;
                    }
                }
            }
        }
        let only: Vec<usize> = (0..self.marks.len())
            .filter(|i| self.marks[*i].selected)
            .collect();
        if only.is_empty() {
            return;
        }
        self.only = Some(only);
        self.review = false;
        self.focus = 0;
        self.scroll = 0;
    }

    pub(crate) fn handle_key(&mut self, key: KeyEvent, body_width: usize) -> Intent {
        let n = self.items().len();
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('n') => Intent::Close,
            KeyCode::Down | KeyCode::Char('j') | KeyCode::Tab | KeyCode::Char(']') if n > 0 => {
                self.focus = (self.focus + 1).min(n - 1);
                self.scroll_to_focus(body_width);
                Intent::None
            }
            KeyCode::Up | KeyCode::Char('k') | KeyCode::BackTab | KeyCode::Char('[') => {
                self.focus = self.focus.saturating_sub(1);
                self.scroll_to_focus(body_width);
                Intent::None
            }
            KeyCode::PageDown => {
                self.scroll += 10;
                Intent::None
            }
            KeyCode::PageUp => {
                self.scroll = self.scroll.saturating_sub(10);
                Intent::None
            }
            KeyCode::Char(' ') => {
                self.toggle();
                Intent::None
            }
            KeyCode::Char('r') if self.review => {
                self.open_preview();
                Intent::None
            }
            KeyCode::Char('y') | KeyCode::Enter if !self.review => {
                let files = self.choices();
                Intent::Restore {
                    plan_id: self.plan.plan_id.clone(),
                    files,
                    rewind: matches!(self.plan.scope, RestoreScope::Rewind { .. }),
                }
            }
            _ => Intent::None,
        }
    }

    fn scroll_to_focus(&mut self, width: usize) {
        let body = self.body(width);
        if let Some(&s) = body.1.get(self.focus) {
            if s < self.scroll {
                self.scroll = s;
            } else if s > self.scroll + 12 {
                self.scroll = s.saturating_sub(4);
            }
        }
    }

    pub(crate) fn title(&self) -> String {
        if !self.review && self.only.is_some() {
            let choices = self.choices();
            let hunks: usize = choices
                .iter()
                .map(|c| c.hunks.as_ref().map_or(0, Vec::len))
                .sum();
            return match (choices.as_slice(), hunks) {
                ([c], 0) => format!(" Revert {} ", c.path),
                ([c], h) => format!(
                    " Revert {h} hunk{} of {} ",
                    if h == 1 { "" } else { "s" },
                    c.path
                ),
                (cs, _) => format!(" Revert {} files ", cs.len()),
            };
        }
        format!(" {} ", self.plan.title)
    }

    /// The scrollable body, and where each item (file or hunk) starts in it.
    /// The body's lines and where each file and hunk starts among them; laid out again only when
    /// the width, the selection or the focus changed.
    pub(crate) fn body(&self, width: usize) -> Arc<(Vec<Line<'static>>, Vec<usize>)> {
        let key = (
            width,
            self.review,
            self.only.clone(),
            self.marks.clone(),
            self.focus,
        );
        self.body_memo.get(key, || self.lay_out_body(width))
    }

    fn lay_out_body(&self, width: usize) -> (Vec<Line<'static>>, Vec<usize>) {
        let mut out: Vec<Line<'static>> = Vec::new();
        let mut starts = Vec::new();
        let focused = self.focused();
        if self.review {
            out.push(Line::from(Span::styled(
                "what this session changed: − lines were there before, + lines are its changes",
                theme::dim(),
            )));
        } else {
            out.push(Line::from(Span::styled(
                "restoring brings back the − lines and loses the + lines",
                theme::dim(),
            )));
        }
        if self.plan.files.is_empty() {
            out.push(Line::from(Span::styled(
                "no file needs restoring: every file is already as it was",
                theme::dim(),
            )));
        }
        for (i, f) in self.plan.files.iter().enumerate() {
            if !self.visible(i) {
                continue;
            }
            let m = &self.marks[i];
            starts.push(out.len());
            let pointer = if focused == Some(Item::File(i)) {
                "▶ "
            } else {
                "  "
            };
            let (check, check_style) = if !selectable(f) {
                ("[-] ", theme::dim())
            } else if m.selected {
                ("[x] ", theme::ok())
            } else {
                ("[ ] ", theme::dim())
            };
            let mut spans = vec![
                Span::styled(pointer, theme::key()),
                Span::styled(check, check_style),
                Span::styled(f.path.clone(), theme::bold()),
                Span::raw("  "),
            ];
            spans.extend(file_words(f, self.review));
            wrap_line(&Line::from(spans), width, 6, &mut out);
            if f.binary {
                let l = Line::from(Span::styled(
                    format!("      {}", binary_words(f)),
                    theme::dim(),
                ));
                wrap_line(&l, width, 6, &mut out);
            }
            let d = render_hunks(&f.hunks, width.saturating_sub(4), None);
            for (j, line) in d.lines.into_iter().enumerate() {
                if let Some(h) = d.hunk_starts.iter().position(|s| *s == j) {
                    starts.push(out.len());
                    let on = m.hunks.get(h).copied().unwrap_or(false) && m.selected;
                    let pointer = if focused == Some(Item::Hunk(i, h)) {
                        "  ▶ "
                    } else {
                        "    "
                    };
                    let mut spans = vec![
                        Span::styled(pointer, theme::key()),
                        Span::styled(
                            if on { "[x] " } else { "[ ] " },
                            if on { theme::ok() } else { theme::dim() },
                        ),
                        Span::styled(
                            f.hunks.get(h).map(|x| x.header.clone()).unwrap_or_default(),
                            theme::hunk_header(),
                        ),
                    ];
                    if let Some(src) = f.hunk_sources.get(h) {
                        spans.push(Span::styled(
                            format!("  {}", source_words(src)),
                            theme::dim(),
                        ));
                    }
                    out.push(Line::from(spans));
                } else {
                    let mut spans = vec![Span::raw("    ")];
                    spans.extend(line.spans);
                    out.push(Line::from(spans));
                }
            }
        }
        (out, starts)
    }

    pub(crate) fn footer(&self, width: usize) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        let keys: Vec<(&str, String)> = if self.review {
            vec![
                ("r", "revert the selected (or the one under ▶)…".into()),
                ("space", "select a file or hunk".into()),
                ("↑↓", "move".into()),
                ("esc", "close".into()),
            ]
        } else {
            let n = self.choices().len();
            let verb = if self.only.is_some() {
                "revert"
            } else {
                "restore"
            };
            vec![
                (
                    "y",
                    format!("{verb} {n} file{}", if n == 1 { "" } else { "s" }),
                ),
                ("n", "cancel".into()),
                ("space", "select a file or hunk".into()),
                ("↑↓", "move".into()),
                ("pgup/pgdn", "scroll".into()),
            ]
        };
        let mut spans = Vec::new();
        for (k, what) in keys {
            spans.push(Span::styled(format!("[{k}]"), theme::key()));
            spans.push(Span::styled(format!(" {what}   "), theme::dim()));
        }
        wrap_line(&Line::from(spans), width, 0, &mut out);
        out
    }

    pub(crate) fn draw(&self, area: Rect, buf: &mut Buffer) {
        let inner = frame(area, buf, &self.title());
        let width = inner.width as usize;
        let body = self.body(width);
        let body = &body.0;
        let footer = self.footer(width);
        let footer_h = (footer.len() as u16).min(inner.height);
        let body_h = inner.height.saturating_sub(footer_h + 1) as usize;
        let max_scroll = body.len().saturating_sub(body_h);
        let scroll = self.scroll.min(max_scroll);
        for (i, l) in body.iter().skip(scroll).take(body_h).enumerate() {
            buf.set_line(inner.x, inner.y + i as u16, l, inner.width);
        }
        let fy = inner.y + inner.height - footer_h;
        for (i, l) in footer.iter().take(footer_h as usize).enumerate() {
            buf.set_line(inner.x, fy + i as u16, l, inner.width);
        }
    }
}

fn turns_words(turns: &[u32]) -> String {
    let t: Vec<String> = turns.iter().map(u32::to_string).collect();
    format!(
        "turn{} {}",
        if t.len() == 1 { "" } else { "s" },
        t.join(", ")
    )
}

fn source_words(src: &HunkSource) -> String {
    match (src.turns.is_empty(), src.outside) {
        (false, false) => turns_words(&src.turns),
        (false, true) => format!("{} and outside pablo", turns_words(&src.turns)),
        (true, true) => "changed outside pablo".into(),
        (true, false) => String::new(),
    }
}

fn file_words(f: &RestoreFile, review: bool) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    let action = match (f.action, review) {
        (RestoreAction::Delete, false) => "delete (it did not exist before)",
        (RestoreAction::Recreate, false) => "recreate (it was deleted)",
        (RestoreAction::Rewrite, false) => "restore",
        (RestoreAction::Delete, true) => "created",
        (RestoreAction::Recreate, true) => "deleted",
        (RestoreAction::Rewrite, true) => "changed",
    };
    spans.push(Span::styled(action.to_string(), theme::accent()));
    spans.push(Span::styled(
        format!("  {}", turns_words(&f.turns)),
        theme::dim(),
    ));
    if !f.binary {
        spans.push(Span::styled(format!("  +{}", f.added), theme::ok()));
        spans.push(Span::styled(format!(" −{}", f.removed), theme::error()));
    }
    match f.status {
        RestoreStatus::Conflict => spans.push(Span::styled(
            format!(
                "  conflict: {} (space to restore it anyway)",
                f.reason.as_deref().unwrap_or("changed since")
            ),
            theme::warn(),
        )),
        RestoreStatus::Unrestorable => spans.push(Span::styled(
            format!(
                "  cannot restore: {}",
                f.reason.as_deref().unwrap_or("not kept")
            ),
            theme::error(),
        )),
        RestoreStatus::Ready | RestoreStatus::AlreadyRestored => {}
    }
    spans
}

fn binary_words(f: &RestoreFile) -> String {
    let describe = |s: &FileState| match s {
        FileState::Absent => "absent".to_string(),
        FileState::File { size, hash, .. } => {
            format!("{size} bytes ({})", hash.get(..12).unwrap_or(hash))
        }
        FileState::Symlink { target } => format!("a link to {target}"),
        FileState::Directory => "a directory".into(),
    };
    format!(
        "no line diff (binary or large): now {}, restored {}",
        describe(&f.current),
        describe(&f.target)
    )
}

/// A bordered full-area frame with a title; returns the inner area (one column of padding).
fn frame(area: Rect, buf: &mut Buffer, title: &str) -> Rect {
    Clear.render(area, buf);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme::accent())
        .title(Span::styled(title.to_string(), theme::accent()));
    let inner = block.inner(area);
    block.render(area, buf);
    Rect::new(
        inner.x + 1,
        inner.y,
        inner.width.saturating_sub(2),
        inner.height,
    )
}

fn footer(inner: Rect, buf: &mut Buffer, keys: &[(&str, &str)]) {
    if inner.height > 0 {
        buf.set_line(
            inner.x,
            inner.y + inner.height - 1,
            &theme::keys_line(keys),
            inner.width,
        );
    }
}

/// Moves a picker's (this one's and the resume list's) selection for ↑/↓ (k/j) within `len` rows; false for any other key.
pub(crate) fn move_selection(key: KeyCode, selected: &mut usize, len: usize) -> bool {
    match key {
        KeyCode::Down | KeyCode::Char('j') => {
            *selected = (*selected + 1).min(len.saturating_sub(1))
        }
        KeyCode::Up | KeyCode::Char('k') => *selected = selected.saturating_sub(1),
        _ => return false,
    }
    true
}
