//! The multi-line input box: editing, history, and completion of `/commands`, `@paths` and
//! `$skills`.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::commands;
use super::text::str_width;
use super::theme;
use super::vim::{self, Vim};

/// What a key did to the composer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ComposerAction {
    /// The key was handled; nothing else to do.
    Handled,
    /// Not a composer key.
    Ignored,
    /// Enter: the text to send (already added to history).
    Submit(String),
}

/// One entry of the completion popup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Completion {
    pub(crate) label: String,
    pub(crate) detail: String,
    /// The token replacing the one being typed.
    pub(crate) insert: String,
}

#[derive(Debug, Default)]
pub(crate) struct Composer {
    text: String,
    /// Byte offset of the cursor in `text`.
    cursor: usize,
    history: Vec<String>,
    /// Position while browsing history (`None`: editing a new entry).
    history_pos: Option<usize>,
    draft: String,
    /// Workspace files for `@path` completion.
    pub(crate) files: Vec<String>,
    /// MCP prompts as slash commands (`server:prompt`, with their arguments as a hint).
    pub(crate) mcp_commands: Vec<(String, String)>,
    /// MCP resources for `@server:uri` completion (`server:uri`, and the resource's name).
    pub(crate) mcp_resources: Vec<(String, String)>,
    pub(crate) selected: usize,
    /// The person's own slash commands, completed after the built-in ones.
    pub(crate) custom: Vec<pablo_protocol::CustomCommand>,
    /// The installed Agent Skills for `$name` completion (name, description).
    pub(crate) skills: Vec<(String, String)>,
    /// Vim mode (`/vim`, `[tui] vim = true`); `None`: the composer edits as it always did.
    vim: Option<Vim>,
}

impl Composer {
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub(crate) fn set_text(&mut self, text: &str) {
        self.text = text.to_string();
        self.cursor = self.text.len();
        self.selected = 0;
        self.rest_cursor();
    }

    pub(crate) fn clear(&mut self) {
        self.set_text("");
        self.history_pos = None;
    }

    /// Ctrl-C on a draft: it goes, but in vim mode `u` brings it back (a vim user's ctrl-c to
    /// leave insert mode must not lose the draft for good).
    pub(crate) fn discard(&mut self) {
        if let Some(v) = &mut self.vim {
            v.checkpoint(&self.text, self.cursor);
        }
        self.clear();
    }

    /// Turns vim mode on (in insert mode) or off.
    pub(crate) fn set_vim(&mut self, on: bool) {
        self.vim = on.then(Vim::default);
    }

    /// Vim mode's state, when it is on.
    pub(crate) fn vim(&self) -> Option<&Vim> {
        self.vim.as_ref()
    }

    /// Whether Esc is the composer's (vim's insert mode, or a vim command being typed) rather
    /// than the app's.
    pub(crate) fn takes_esc(&self) -> bool {
        self.vim.as_ref().is_some_and(Vim::takes_esc)
    }

    /// In vim's normal mode the cursor rests on a character, whatever moved it.
    fn rest_cursor(&mut self) {
        if let Some(v) = &self.vim {
            self.cursor = v.rest(&self.text, self.cursor);
        }
    }

    pub(crate) fn insert_str(&mut self, s: &str) {
        // Pasted text keeps its newlines; carriage returns from some terminals become newlines.
        let s = s.replace("\r\n", "\n").replace('\r', "\n");
        self.text.insert_str(self.cursor, &s);
        self.cursor += s.len();
        self.selected = 0;
        // In vim's normal mode the cursor stays on a character, never past the end of a line.
        self.rest_cursor();
    }

    fn prev_boundary(&self) -> usize {
        self.text[..self.cursor]
            .char_indices()
            .next_back()
            .map_or(0, |(i, _)| i)
    }

    fn next_boundary(&self) -> usize {
        self.text[self.cursor..]
            .chars()
            .next()
            .map_or(self.cursor, |c| self.cursor + c.len_utf8())
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    /// The token under the cursor when it starts with `@` (for path completion).
    fn at_token(&self) -> Option<(usize, &str)> {
        self.sigil_token('@')
    }

    /// The token under the cursor when it starts with `sigil`: its start and what follows the
    /// sigil.
    fn sigil_token(&self, sigil: char) -> Option<(usize, &str)> {
        let before = &self.text[..self.cursor];
        let start = before
            .rfind(|c: char| c.is_whitespace())
            .map_or(0, |i| i + 1);
        let token = &before[start..];
        token.strip_prefix(sigil).map(|t| (start, t))
    }

    /// The skills whose name starts with the `$name` being typed (a `$` with no skill after it,
    /// `$HOME`, shows nothing).
    fn skill_completions(&self) -> Option<Vec<Completion>> {
        let (_, frag) = self.sigil_token('$')?;
        let hits = named_completions(&self.skills, '$', frag);
        (!hits.is_empty()).then_some(hits)
    }

    /// The popup's entries for what is being typed.
    pub(crate) fn completions(&self) -> Vec<Completion> {
        if let Some(name) = self.text.strip_prefix('/')
            && !name.contains(char::is_whitespace)
        {
            let mut out: Vec<Completion> = commands::matching(name)
                .into_iter()
                .map(|c| Completion {
                    label: format!(
                        "/{}{}",
                        c.name,
                        if c.args.is_empty() {
                            String::new()
                        } else {
                            format!(" {}", c.args)
                        }
                    ),
                    detail: c.help.to_string(),
                    insert: format!("/{}", c.name),
                })
                .collect();
            out.extend(
                self.custom
                    .iter()
                    .filter(|c| c.name.starts_with(name) && commands::find(&c.name).is_none())
                    .map(|c| Completion {
                        label: format!("/{}", c.name),
                        detail: c.description.clone(),
                        insert: format!("/{}", c.name),
                    }),
            );
            out.extend(named_completions(&self.mcp_commands, '/', name));
            return out;
        }
        if let Some(hits) = self.skill_completions() {
            return hits;
        }
        if let Some((_, frag)) = self.at_token()
            && frag.contains(':')
        {
            let hits = named_completions(&self.mcp_resources, '@', frag);
            if !hits.is_empty() {
                return hits;
            }
        }
        if let Some((_, frag)) = self.at_token() {
            let mut hits: Vec<&String> =
                self.files.iter().filter(|f| f.starts_with(frag)).collect();
            if hits.len() < 8 {
                hits.extend(
                    self.files
                        .iter()
                        .filter(|f| !f.starts_with(frag) && f.contains(frag))
                        .take(8 - hits.len()),
                );
            }
            return hits
                .into_iter()
                .take(8)
                .map(|f| Completion {
                    label: format!("@{f}"),
                    detail: String::new(),
                    insert: format!("@{f}"),
                })
                .collect();
        }
        Vec::new()
    }

    fn accept_completion(&mut self, c: &Completion) {
        if self.text.starts_with('/') {
            self.set_text(&format!("{} ", c.insert));
            return;
        }
        if let Some((start, _)) = self.at_token().or_else(|| self.sigil_token('$')) {
            let end = self.cursor;
            self.text
                .replace_range(start..end, &format!("{} ", c.insert));
            self.cursor = start + c.insert.len() + 1;
        }
    }

    fn push_history(&mut self, text: &str) {
        if self.history.last().map(String::as_str) != Some(text) {
            self.history.push(text.to_string());
        }
        self.history_pos = None;
    }

    fn history_prev(&mut self) {
        if self.history.is_empty() {
            return;
        }
        let pos = match self.history_pos {
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(0) => 0,
            Some(p) => p - 1,
        };
        self.history_pos = Some(pos);
        let t = self.history[pos].clone();
        self.text = t;
        self.cursor = self.text.len();
    }

    fn history_next(&mut self) {
        let Some(pos) = self.history_pos else {
            return;
        };
        if pos + 1 >= self.history.len() {
            self.history_pos = None;
            self.text = std::mem::take(&mut self.draft);
        } else {
            self.history_pos = Some(pos + 1);
            self.text = self.history[pos + 1].clone();
        }
        self.cursor = self.text.len();
    }

    fn move_vertical(&mut self, down: bool) -> bool {
        let start = self.line_start();
        let col = str_width(&self.text[start..self.cursor]);
        let target_start = if down {
            let end = self.line_end();
            if end >= self.text.len() {
                return false;
            }
            end + 1
        } else {
            if start == 0 {
                return false;
            }
            self.text[..start - 1].rfind('\n').map_or(0, |i| i + 1)
        };
        let line_end = self.text[target_start..]
            .find('\n')
            .map_or(self.text.len(), |i| target_start + i);
        let mut pos = target_start;
        let mut w = 0;
        for (i, c) in self.text[target_start..line_end].char_indices() {
            if w >= col {
                break;
            }
            w += str_width(&c.to_string());
            pos = target_start + i + c.len_utf8();
        }
        self.cursor = pos;
        true
    }

    pub(crate) fn handle_key(&mut self, key: KeyEvent) -> ComposerAction {
        let Some(v) = &mut self.vim else {
            return self.edit_key(key);
        };
        match v.key(key, &mut self.text, &mut self.cursor) {
            vim::Outcome::Edit => self.edit_key(key),
            vim::Outcome::Done => {
                self.selected = 0;
                ComposerAction::Handled
            }
            vim::Outcome::Pass => {
                let action = self.edit_key(key);
                self.rest_cursor();
                action
            }
            vim::Outcome::HistoryPrev => {
                self.history_prev();
                self.rest_cursor();
                ComposerAction::Handled
            }
            vim::Outcome::HistoryNext => {
                self.history_next();
                self.rest_cursor();
                ComposerAction::Handled
            }
        }
    }

    /// A key for the composer's own editing (insert mode's, or every key without vim mode).
    fn edit_key(&mut self, key: KeyEvent) -> ComposerAction {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let popup = self.completions();
        match key.code {
            KeyCode::Enter if shift || alt => self.insert_str("\n"),
            KeyCode::Char('j') if ctrl => self.insert_str("\n"),
            KeyCode::Tab if !popup.is_empty() => {
                let c = popup[self.selected.min(popup.len() - 1)].clone();
                self.accept_completion(&c);
            }
            KeyCode::Enter => {
                // Enter on a half-typed `@path` completes it instead of sending.
                if !popup.is_empty()
                    && self
                        .at_token()
                        .is_some_and(|(_, f)| !popup.iter().any(|p| p.insert == format!("@{f}")))
                {
                    let c = popup[self.selected.min(popup.len() - 1)].clone();
                    self.accept_completion(&c);
                    return ComposerAction::Handled;
                }
                // Enter on a half-typed command name completes it first.
                if let Some(name) = self.text.strip_prefix('/')
                    && !name.contains(' ')
                    && commands::find(name).is_none()
                    && !self.custom.iter().any(|c| c.name == name)
                    && !popup.is_empty()
                {
                    let c = popup[self.selected.min(popup.len() - 1)].clone();
                    self.accept_completion(&c);
                    return ComposerAction::Handled;
                }
                let text = self.text.trim_end().to_string();
                if text.trim().is_empty() {
                    return ComposerAction::Handled;
                }
                self.push_history(&text);
                self.clear();
                if let Some(v) = &mut self.vim {
                    v.submitted();
                }
                return ComposerAction::Submit(text);
            }
            KeyCode::Up if !popup.is_empty() => {
                self.selected = self.selected.checked_sub(1).unwrap_or(popup.len() - 1);
            }
            KeyCode::Down if !popup.is_empty() => {
                self.selected = (self.selected + 1) % popup.len();
            }
            KeyCode::Up => {
                if !self.move_vertical(false) {
                    self.history_prev();
                }
            }
            KeyCode::Down => {
                if !self.move_vertical(true) {
                    self.history_next();
                }
            }
            KeyCode::Backspace if ctrl || alt => self.delete_word(),
            KeyCode::Char('w') if ctrl => self.delete_word(),
            KeyCode::Backspace => {
                let p = self.prev_boundary();
                self.text.replace_range(p..self.cursor, "");
                self.cursor = p;
                self.selected = 0;
            }
            KeyCode::Delete => {
                let n = self.next_boundary();
                self.text.replace_range(self.cursor..n, "");
            }
            KeyCode::Left => self.cursor = self.prev_boundary(),
            KeyCode::Right => self.cursor = self.next_boundary(),
            KeyCode::Home => self.cursor = self.line_start(),
            KeyCode::End => self.cursor = self.line_end(),
            KeyCode::Char('a') if ctrl => self.cursor = self.line_start(),
            KeyCode::Char('e') if ctrl => self.cursor = self.line_end(),
            KeyCode::Char('u') if ctrl => {
                let s = self.line_start();
                self.text.replace_range(s..self.cursor, "");
                self.cursor = s;
            }
            KeyCode::Char('k') if ctrl => {
                let e = self.line_end();
                self.text.replace_range(self.cursor..e, "");
            }
            KeyCode::Char(c) if !ctrl && !alt => {
                let mut b = [0u8; 4];
                self.insert_str(c.encode_utf8(&mut b));
            }
            _ => return ComposerAction::Ignored,
        }
        ComposerAction::Handled
    }

    fn delete_word(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end();
        let start = trimmed.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Wrapped lines for `width` (after the prompt gutter) and the cursor's (row, col). Lines
    /// break between words, as the answer's do; a word longer than the width is cut.
    pub(crate) fn layout(
        &self,
        width: usize,
        placeholder: &str,
    ) -> (Vec<Line<'static>>, (usize, usize)) {
        let width = width.max(4);
        if self.text.is_empty() {
            return (
                vec![Line::from(Span::styled(
                    placeholder.to_string(),
                    theme::dim(),
                ))],
                (0, 0),
            );
        }
        let mut lines: Vec<Line<'static>> = Vec::new();
        let mut cursor = (0, 0);
        let mut offset = 0;
        for raw in self.text.split('\n') {
            let rows = word_rows(raw, width);
            let first = lines.len();
            for (k, &(start, end)) in rows.iter().enumerate() {
                let at = self.cursor.checked_sub(offset);
                let last = k + 1 == rows.len();
                if let Some(at) = at
                    && (start..end).contains(&at)
                {
                    cursor = (first + k, str_width(&raw[start..at]));
                } else if last && at == Some(raw.len()) {
                    let col = str_width(&raw[start..end]);
                    // The cursor after a full row goes to the start of the next.
                    cursor = if col >= width {
                        (first + k + 1, 0)
                    } else {
                        (first + k, col)
                    };
                }
                lines.push(Line::from(Span::styled(
                    raw[start..end].to_string(),
                    Style::default(),
                )));
            }
            if cursor.0 == lines.len() {
                lines.push(Line::default());
            }
            offset += raw.len() + 1;
        }
        (lines, cursor)
    }
}

/// The rows of one line of the draft wrapped to `width` columns, as byte ranges: each breaks
/// after the last space that fits (a space that overflows stays at the end of its row, unseen);
/// a word wider than a row is cut where the row ends.
fn word_rows(line: &str, width: usize) -> Vec<(usize, usize)> {
    let mut rows = Vec::new();
    let mut start = 0;
    let mut w = 0;
    let mut after_space: Option<usize> = None;
    for (i, c) in line.char_indices() {
        let cw = str_width(c.encode_utf8(&mut [0u8; 4]));
        if w + cw > width && i > start {
            if c == ' ' {
                rows.push((start, i + 1));
                start = i + 1;
                w = 0;
                after_space = None;
                continue;
            }
            let cut = after_space.filter(|&b| b > start).unwrap_or(i);
            rows.push((start, cut));
            start = cut;
            w = str_width(&line[start..i]);
            after_space = None;
        }
        w += cw;
        if c == ' ' {
            after_space = Some(i + 1);
        }
    }
    rows.push((start, line.len()));
    rows
}

/// The first eight of `named` (a name and what the popup says beside it) whose name starts with
/// `typed`, each completed as `sigil` and the name.
fn named_completions(named: &[(String, String)], sigil: char, typed: &str) -> Vec<Completion> {
    named
        .iter()
        .filter(|(name, _)| name.starts_with(typed))
        .take(8)
        .map(|(name, detail)| Completion {
            label: format!("{sigil}{name}"),
            detail: detail.clone(),
            insert: format!("{sigil}{name}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn typed(c: &mut Composer, s: &str) {
        for ch in s.chars() {
            c.handle_key(key(KeyCode::Char(ch)));
        }
    }

    #[test]
    fn enter_submits_and_up_recalls_history() {
        let mut c = Composer::default();
        typed(&mut c, "hello");
        assert_eq!(
            c.handle_key(key(KeyCode::Enter)),
            ComposerAction::Submit("hello".into())
        );
        assert!(c.is_empty());
        c.handle_key(key(KeyCode::Up));
        assert_eq!(c.text(), "hello");
        c.handle_key(key(KeyCode::Down));
        assert_eq!(c.text(), "");
    }

    #[test]
    fn shift_enter_inserts_a_newline() {
        let mut c = Composer::default();
        typed(&mut c, "a");
        c.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT));
        typed(&mut c, "b");
        assert_eq!(c.text(), "a\nb");
    }

    #[test]
    fn slash_prefix_completes_to_a_command() {
        let mut c = Composer::default();
        typed(&mut c, "/ki");
        assert_eq!(c.completions()[0].insert, "/kill");
        c.handle_key(key(KeyCode::Tab));
        assert_eq!(c.text(), "/kill ");
    }

    fn rows(c: &Composer, width: usize) -> (Vec<String>, (usize, usize)) {
        let (lines, cursor) = c.layout(width, "");
        let text = lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        (text, cursor)
    }

    #[test]
    fn the_draft_wraps_between_words_and_the_cursor_follows_it() {
        let mut c = Composer::default();
        typed(&mut c, "please fix the failing test");
        let (lines, cursor) = rows(&c, 12);
        assert_eq!(lines, vec!["please fix ", "the failing ", "test"]);
        assert_eq!(cursor, (2, 4));
        c.handle_key(key(KeyCode::Home));
        assert_eq!(rows(&c, 12).1, (0, 0));
        // A word longer than a row is cut where the row ends.
        let mut long = Composer::default();
        typed(&mut long, "abcdefghijklmnop qr");
        assert_eq!(rows(&long, 8).0, vec!["abcdefgh", "ijklmnop ", "qr"]);
        // A full last row puts the cursor at the start of a new one.
        let mut full = Composer::default();
        typed(&mut full, "abcd");
        assert_eq!(
            rows(&full, 4),
            (vec!["abcd".to_string(), String::new()], (1, 0))
        );
    }

    #[test]
    fn at_path_completes_from_workspace_files() {
        let mut c = Composer {
            files: vec!["src/main.rs".into(), "README.md".into()],
            ..Composer::default()
        };
        typed(&mut c, "look at @src");
        c.handle_key(key(KeyCode::Tab));
        assert_eq!(c.text(), "look at @src/main.rs ");
    }
}
