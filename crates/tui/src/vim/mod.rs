//! Vim mode for the composer (`/vim`, `[tui] vim = true`): normal and insert modes, motions,
//! operators with counts, the unnamed register, undo and redo, and `.`.
//!
//! A pure state machine over the composer's text and cursor: a key goes in with the draft, the
//! draft comes back changed and the engine says what is left for the composer to do (insert
//! mode's typing, Enter, history). It draws nothing and knows nothing of the app, so every rule
//! is tested here on a string. Off (the default), the composer never calls it.

mod motion;
#[cfg(test)]
mod tests;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use motion::{
    clamp_normal, first_non_blank, line_count, line_end, line_of, line_start, operator_word_end,
    run_end, start_of_line, word_back, word_end, word_forward, word_object,
};

/// The largest count a command takes (a held digit key must not make a command run forever).
const MAX_COUNT: usize = 9_999;
/// Undo steps kept for one draft.
const UNDO_DEPTH: usize = 200;

/// The composer's mode while vim mode is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Mode {
    /// Typing, as without vim mode (a new draft starts here, as in a shell's vi mode).
    #[default]
    Insert,
    Normal,
}

impl Mode {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Insert => "INSERT",
            Mode::Normal => "NORMAL",
        }
    }
}

/// What the composer does after a key went through vim mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The key was vim's: the draft, the cursor or the mode may have changed.
    Done,
    /// Insert mode: the composer's own editing takes the key.
    Edit,
    /// Normal mode, a key vim leaves to the composer and the app (Enter sends, Tab completes,
    /// the arrows move, Esc with nothing pending interrupts).
    Pass,
    /// `k` on the first line, `j` on the last: the composer walks its history, as `up` and
    /// `down` do.
    HistoryPrev,
    HistoryNext,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Delete,
    Change,
    Yank,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Motion {
    Left,
    Right,
    Down,
    Up,
    WordForward(bool),
    WordBack(bool),
    WordEnd(bool),
    LineStart,
    FirstNonBlank,
    LineEnd,
    FirstLine,
    LastLine,
    /// `iw`, `aw`, `iW`, `aW` (only after an operator).
    Word {
        inner: bool,
        big: bool,
    },
}

/// Where an insert-mode command starts typing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InsertAt {
    Cursor,
    After,
    LineStart,
    LineEnd,
    Below,
    Above,
}

/// A whole normal-mode command, as `.` repeats it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmd {
    Operate(Op, Motion),
    /// `dd`, `cc`, `yy` (and `S`, `Y`).
    Lines(Op),
    /// `x`, or `X` (`before`).
    DeleteChars {
        before: bool,
    },
    Put {
        before: bool,
    },
    Replace(char),
    Insert(InsertAt),
}

impl Cmd {
    /// Whether the command changes the draft (a yank does not, so `.` does not repeat it).
    fn changes(self) -> bool {
        !matches!(self, Cmd::Operate(Op::Yank, _) | Cmd::Lines(Op::Yank))
    }
}

/// The last change, for `.`: the command, its count and what was typed after it.
#[derive(Debug, Clone)]
struct Change {
    cmd: Cmd,
    count: Option<usize>,
    typed: Vec<char>,
}

/// The draft as characters, with the cursor as a character index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Draft {
    t: Vec<char>,
    i: usize,
}

impl Draft {
    fn read(text: &str, cursor: usize) -> Self {
        let before = text.get(..cursor.min(text.len())).unwrap_or(text);
        Self {
            t: text.chars().collect(),
            i: before.chars().count(),
        }
    }

    fn write(&self, text: &mut String, cursor: &mut usize) {
        *text = self.t.iter().collect();
        let i = self.i.min(self.t.len());
        *cursor = self.t[..i].iter().map(|c| c.len_utf8()).sum();
    }

    fn insert(&mut self, at: usize, s: &[char]) {
        self.t.splice(at..at, s.iter().copied());
    }

    /// The cursor back on a character, as normal mode keeps it.
    fn rest(&mut self) {
        self.i = clamp_normal(&self.t, self.i);
    }
}

/// What a command with a motion works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Range {
    /// Characters `start..end`.
    Chars(usize, usize),
    /// Whole lines, first and last (by number).
    Lines(usize, usize),
}

/// What running a command did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ran {
    Done,
    /// Insert mode follows (`c`, `i`, `o`, …).
    Insert,
    /// Nothing to do (a motion that cannot move, `x` on an empty line): vim would beep.
    Failed,
}

/// The one (unnamed) register: what the last delete, change or yank took.
#[derive(Debug, Clone, Default)]
struct Register {
    text: Vec<char>,
    linewise: bool,
}

/// A command being typed: `2d3` waits for its motion.
#[derive(Debug, Clone, Default)]
struct Pending {
    count: Option<usize>,
    op: Option<Op>,
    op_count: Option<usize>,
    /// `g`, `r`, or the `i`/`a` of a text object: the next key completes it.
    prefix: Option<char>,
    keys: String,
}

impl Pending {
    /// The count in force: `2d3w` deletes six words.
    fn total(&self) -> Option<usize> {
        match (self.count, self.op_count) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(1).saturating_mul(b.unwrap_or(1)).min(MAX_COUNT)),
        }
    }

    /// A digit of a count; false for a `0` that starts none (it is the motion then).
    fn digit(&mut self, n: usize) -> bool {
        let slot = if self.op.is_some() {
            &mut self.op_count
        } else {
            &mut self.count
        };
        if n == 0 && slot.is_none() {
            return false;
        }
        *slot = Some(
            slot.unwrap_or(0)
                .saturating_mul(10)
                .saturating_add(n)
                .min(MAX_COUNT),
        );
        true
    }
}

/// Typing since insert mode began: one undo step, and what `.` types again.
#[derive(Debug, Clone)]
struct InsertSession {
    /// The draft before the command that began it (what `u` brings back).
    before: Draft,
    /// The draft when typing began; its cursor is where the typed text goes.
    at_start: Draft,
    cmd: Option<Cmd>,
    count: Option<usize>,
}

/// A key as normal mode reads it.
enum Key {
    Char(char),
    Redo,
}

#[derive(Debug, Default)]
pub(crate) struct Vim {
    mode: Mode,
    pending: Pending,
    register: Register,
    undo: Vec<Draft>,
    redo: Vec<Draft>,
    last: Option<Change>,
    insert: Option<InsertSession>,
    /// The column `j` and `k` keep across shorter lines (`usize::MAX` after `$`: line ends).
    want_col: Option<usize>,
}

impl Vim {
    pub(crate) fn mode(&self) -> Mode {
        self.mode
    }

    /// The keys of a command being typed (`2d`), shown beside the mode.
    pub(crate) fn pending(&self) -> &str {
        &self.pending.keys
    }

    /// Whether Esc is vim's: it leaves insert mode, or drops a command being typed. Otherwise
    /// Esc keeps its meaning in the app (interrupting a turn).
    pub(crate) fn takes_esc(&self) -> bool {
        self.mode == Mode::Insert || !self.pending.keys.is_empty()
    }

    /// A message was sent: the next draft starts in insert mode with an undo history of its own.
    pub(crate) fn submitted(&mut self) {
        self.mode = Mode::Insert;
        self.pending = Pending::default();
        self.undo.clear();
        self.redo.clear();
        self.insert = None;
        self.want_col = None;
    }

    /// The draft is about to be changed outside vim (ctrl-c clears it): `u` brings it back.
    pub(crate) fn checkpoint(&mut self, text: &str, cursor: usize) {
        if text.is_empty() {
            return;
        }
        self.push_undo(Draft::read(text, cursor));
        self.redo.clear();
        self.insert = None;
    }

    /// Where the cursor may rest after the composer moved it (on a character in normal mode).
    pub(crate) fn rest(&self, text: &str, cursor: usize) -> usize {
        if self.mode == Mode::Insert {
            return cursor;
        }
        let mut d = Draft::read(text, cursor);
        d.rest();
        let mut out = cursor;
        d.write(&mut String::new(), &mut out);
        out
    }

    /// One key, with the composer's draft.
    pub(crate) fn key(&mut self, key: KeyEvent, text: &mut String, cursor: &mut usize) -> Outcome {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        if self.mode == Mode::Insert {
            if key.code != KeyCode::Esc {
                if self.insert.is_none() {
                    let d = Draft::read(text, *cursor);
                    self.insert = Some(InsertSession {
                        before: d.clone(),
                        at_start: d,
                        cmd: None,
                        count: None,
                    });
                }
                return Outcome::Edit;
            }
            let mut d = Draft::read(text, *cursor);
            self.leave_insert(&mut d);
            d.write(text, cursor);
            return Outcome::Done;
        }
        let k = match key.code {
            KeyCode::Esc if self.pending.keys.is_empty() => return Outcome::Pass,
            KeyCode::Esc => return self.cancel(),
            KeyCode::Char('r') if ctrl => Key::Redo,
            KeyCode::Char(c) if !ctrl && !alt => Key::Char(c),
            KeyCode::Backspace if !ctrl && !alt => Key::Char('h'),
            KeyCode::Delete => Key::Char('x'),
            // A key in the middle of a command ends it and does nothing else (`r` then Enter
            // must not send the message).
            _ if !self.pending.keys.is_empty() => return self.cancel(),
            _ => return Outcome::Pass,
        };
        let mut d = Draft::read(text, *cursor);
        let out = match k {
            Key::Redo => {
                self.pending = Pending::default();
                self.redo(1, &mut d);
                Outcome::Done
            }
            Key::Char(c) => self.normal(c, &mut d),
        };
        d.write(text, cursor);
        out
    }

    fn cancel(&mut self) -> Outcome {
        self.pending = Pending::default();
        Outcome::Done
    }

    fn normal(&mut self, c: char, d: &mut Draft) -> Outcome {
        self.pending.keys.push(c);
        if let Some(p) = self.pending.prefix.take() {
            return match (p, c) {
                ('r', _) => self.finish(Cmd::Replace(c), d),
                ('g', 'g') => self.motion(Motion::FirstLine, d),
                ('i' | 'a', 'w' | 'W') => self.motion(
                    Motion::Word {
                        inner: p == 'i',
                        big: c == 'W',
                    },
                    d,
                ),
                _ => self.cancel(),
            };
        }
        if let Some(n) = c.to_digit(10)
            && self.pending.digit(n as usize)
        {
            return Outcome::Done;
        }
        let op = match c {
            'd' => Some(Op::Delete),
            'c' => Some(Op::Change),
            'y' => Some(Op::Yank),
            _ => None,
        };
        if let Some(op) = op {
            return match self.pending.op {
                None => {
                    self.pending.op = Some(op);
                    Outcome::Done
                }
                Some(p) if p == op => self.finish(Cmd::Lines(op), d),
                Some(_) => self.cancel(),
            };
        }
        if let Some(m) = motion_of(c) {
            return self.motion(m, d);
        }
        if c == 'g' || (self.pending.op.is_some() && (c == 'i' || c == 'a')) {
            self.pending.prefix = Some(c);
            return Outcome::Done;
        }
        if self.pending.op.is_some() {
            return self.cancel();
        }
        let cmd = match c {
            'x' => Cmd::DeleteChars { before: false },
            'X' => Cmd::DeleteChars { before: true },
            'D' => Cmd::Operate(Op::Delete, Motion::LineEnd),
            'C' => Cmd::Operate(Op::Change, Motion::LineEnd),
            's' => Cmd::Operate(Op::Change, Motion::Right),
            'S' => Cmd::Lines(Op::Change),
            'Y' => Cmd::Lines(Op::Yank),
            'p' => Cmd::Put { before: false },
            'P' => Cmd::Put { before: true },
            'i' => Cmd::Insert(InsertAt::Cursor),
            'a' => Cmd::Insert(InsertAt::After),
            'I' => Cmd::Insert(InsertAt::LineStart),
            'A' => Cmd::Insert(InsertAt::LineEnd),
            'o' => Cmd::Insert(InsertAt::Below),
            'O' => Cmd::Insert(InsertAt::Above),
            'r' => {
                self.pending.prefix = Some('r');
                return Outcome::Done;
            }
            'u' => {
                let n = self.pending.total().unwrap_or(1);
                self.pending = Pending::default();
                self.undo(n, d);
                return Outcome::Done;
            }
            '.' => return self.repeat(d),
            // Not a key of vim mode: swallowed, as vim beeps.
            _ => return self.cancel(),
        };
        self.finish(cmd, d)
    }

    /// A motion typed: the cursor moves, or the pending operator works over it.
    fn motion(&mut self, m: Motion, d: &mut Draft) -> Outcome {
        if let Some(op) = self.pending.op {
            return self.finish(Cmd::Operate(op, m), d);
        }
        let count = self.pending.total();
        self.pending = Pending::default();
        let n = count.unwrap_or(1);
        let (t, i) = (&d.t, d.i);
        let line = line_of(t, i);
        let last = line_count(t) - 1;
        let to = match m {
            Motion::Up | Motion::Down => {
                let target = match m {
                    Motion::Up if line == 0 => return self.history(Outcome::HistoryPrev),
                    Motion::Down if line == last => return self.history(Outcome::HistoryNext),
                    Motion::Up => line.saturating_sub(n),
                    _ => (line + n).min(last),
                };
                let col = *self.want_col.get_or_insert(i - line_start(t, i));
                let s = start_of_line(t, target);
                let e = line_end(t, s);
                d.i = if e > s { s + col.min(e - s - 1) } else { s };
                return Outcome::Done;
            }
            Motion::Left => i.saturating_sub(n).max(line_start(t, i)),
            Motion::Right => i.saturating_add(n).min(line_end(t, i)),
            Motion::WordForward(big) => (0..n).fold(i, |k, _| word_forward(t, k, big)),
            Motion::WordBack(big) => (0..n).fold(i, |k, _| word_back(t, k, big)),
            Motion::WordEnd(big) => (0..n).fold(i, |k, _| word_end(t, k, big)),
            Motion::LineStart => line_start(t, i),
            Motion::FirstNonBlank => first_non_blank(t, i),
            Motion::LineEnd => line_end(t, start_of_line(t, (line + n - 1).min(last))),
            Motion::FirstLine | Motion::LastLine => {
                let default = if m == Motion::FirstLine { 0 } else { last };
                let target = count.map_or(default, |c| c - 1).min(last);
                first_non_blank(t, start_of_line(t, target))
            }
            Motion::Word { .. } => i,
        };
        d.i = clamp_normal(t, to);
        self.want_col = (m == Motion::LineEnd).then_some(usize::MAX);
        Outcome::Done
    }

    fn history(&mut self, out: Outcome) -> Outcome {
        self.want_col = None;
        out
    }

    /// Runs a command typed in full: one undo step, and the change `.` repeats.
    fn finish(&mut self, cmd: Cmd, d: &mut Draft) -> Outcome {
        let count = self.pending.total();
        self.pending = Pending::default();
        self.want_col = None;
        let before = d.clone();
        match self.run(cmd, count, d) {
            Ran::Failed => {}
            Ran::Done => {
                self.changed(before, d);
                if cmd.changes() {
                    self.last = Some(Change {
                        cmd,
                        count,
                        typed: Vec::new(),
                    });
                }
            }
            Ran::Insert => {
                self.mode = Mode::Insert;
                self.insert = Some(InsertSession {
                    before,
                    at_start: d.clone(),
                    cmd: Some(cmd),
                    count,
                });
            }
        }
        Outcome::Done
    }

    fn run(&mut self, cmd: Cmd, count: Option<usize>, d: &mut Draft) -> Ran {
        let n = count.unwrap_or(1);
        let (s, e) = (line_start(&d.t, d.i), line_end(&d.t, d.i));
        match cmd {
            Cmd::Operate(op, m) => match range(op, m, count, d) {
                Some(r) => self.apply(op, r, d),
                None => Ran::Failed,
            },
            Cmd::Lines(op) => {
                let line = line_of(&d.t, d.i);
                let last = line_count(&d.t) - 1;
                self.apply(op, Range::Lines(line, (line + n - 1).min(last)), d)
            }
            Cmd::DeleteChars { before } => {
                let (from, to) = if before {
                    (d.i.saturating_sub(n).max(s), d.i)
                } else {
                    (d.i, d.i.saturating_add(n).min(e))
                };
                if from == to {
                    return Ran::Failed;
                }
                self.apply(Op::Delete, Range::Chars(from, to), d)
            }
            Cmd::Put { before } => self.put(before, n, d),
            Cmd::Replace(c) => {
                if d.i.saturating_add(n) > e {
                    return Ran::Failed;
                }
                d.t[d.i..d.i + n].fill(c);
                d.i += n - 1;
                Ran::Done
            }
            Cmd::Insert(at) => {
                match at {
                    InsertAt::Cursor => {}
                    InsertAt::After => d.i = (d.i + 1).min(e),
                    InsertAt::LineStart => d.i = first_non_blank(&d.t, d.i),
                    InsertAt::LineEnd => d.i = e,
                    InsertAt::Below => {
                        d.insert(e, &['\n']);
                        d.i = e + 1;
                    }
                    InsertAt::Above => {
                        d.insert(s, &['\n']);
                        d.i = s;
                    }
                }
                Ran::Insert
            }
        }
    }

    /// An operator over a range: the register takes the text; the draft loses it (`d`, `c`).
    fn apply(&mut self, op: Op, r: Range, d: &mut Draft) -> Ran {
        match r {
            Range::Chars(s, e) => {
                if s == e && op != Op::Change {
                    return Ran::Failed;
                }
                self.register = Register {
                    text: d.t[s..e].to_vec(),
                    linewise: false,
                };
                match op {
                    Op::Yank => {
                        d.i = s;
                        Ran::Done
                    }
                    Op::Delete => {
                        d.t.drain(s..e);
                        d.i = s;
                        d.rest();
                        Ran::Done
                    }
                    Op::Change => {
                        d.t.drain(s..e);
                        d.i = s;
                        Ran::Insert
                    }
                }
            }
            Range::Lines(a, b) => {
                let s = start_of_line(&d.t, a);
                let e = line_end(&d.t, start_of_line(&d.t, b));
                self.register = Register {
                    text: d.t[s..e].to_vec(),
                    linewise: true,
                };
                match op {
                    Op::Yank => {
                        let col = d.i - line_start(&d.t, d.i);
                        if line_of(&d.t, d.i) != a {
                            d.i = s + col.min(line_end(&d.t, s) - s);
                            d.rest();
                        }
                        Ran::Done
                    }
                    Op::Change => {
                        d.t.drain(s..e);
                        d.i = s;
                        Ran::Insert
                    }
                    Op::Delete => {
                        // The lines go with one newline: the one after them, or the one before
                        // when they end the draft.
                        let (from, to) = if e < d.t.len() {
                            (s, e + 1)
                        } else {
                            (s.saturating_sub(1), e)
                        };
                        d.t.drain(from..to);
                        let line = a.min(line_count(&d.t) - 1);
                        d.i = first_non_blank(&d.t, start_of_line(&d.t, line));
                        d.rest();
                        Ran::Done
                    }
                }
            }
        }
    }

    /// `p` / `P`: the register `n` times, after or before the cursor (below or above the line
    /// when it holds lines).
    fn put(&mut self, before: bool, n: usize, d: &mut Draft) -> Ran {
        let reg = &self.register;
        if reg.text.is_empty() && !reg.linewise {
            return Ran::Failed;
        }
        if reg.linewise {
            let mut block: Vec<char> = Vec::new();
            for k in 0..n {
                if k > 0 {
                    block.push('\n');
                }
                block.extend_from_slice(&reg.text);
            }
            let at = if before {
                block.push('\n');
                line_start(&d.t, d.i)
            } else {
                block.insert(0, '\n');
                line_end(&d.t, d.i)
            };
            d.insert(at, &block);
            let first = if before { at } else { at + 1 };
            d.i = first_non_blank(&d.t, first);
        } else {
            let block = reg.text.repeat(n);
            let e = line_end(&d.t, d.i);
            let at = if before { d.i } else { (d.i + 1).min(e) };
            d.insert(at, &block);
            d.i = if block.contains(&'\n') {
                at
            } else {
                at + block.len() - 1
            };
        }
        d.rest();
        Ran::Done
    }

    /// Esc in insert mode: what was typed becomes one undo step and, after a command, the
    /// change `.` repeats; a count types it again (`3ix` Esc); the cursor steps back onto the
    /// last character typed.
    fn leave_insert(&mut self, d: &mut Draft) {
        self.mode = Mode::Normal;
        self.want_col = None;
        if let Some(s) = self.insert.take() {
            match typed_since(&s.at_start, d) {
                Some(typed) => {
                    if let Some(Cmd::Insert(at)) = s.cmd {
                        type_again(at, s.count, &typed, d);
                    }
                    if let Some(cmd) = s.cmd {
                        self.last = Some(Change {
                            cmd,
                            count: s.count,
                            typed,
                        });
                    }
                }
                // Typing that moved away and deleted before its start: nothing sure to repeat.
                None if s.cmd.is_some() => self.last = None,
                None => {}
            }
            self.changed(s.before, d);
        }
        if d.i > line_start(&d.t, d.i) {
            d.i -= 1;
        }
        d.rest();
    }

    /// `.`: the last change again, here (with a new count when one is typed).
    fn repeat(&mut self, d: &mut Draft) -> Outcome {
        let count = self.pending.total();
        self.pending = Pending::default();
        self.want_col = None;
        let Some(mut change) = self.last.clone() else {
            return Outcome::Done;
        };
        if count.is_some() {
            change.count = count;
        }
        let before = d.clone();
        match self.run(change.cmd, change.count, d) {
            Ran::Failed => return Outcome::Done,
            Ran::Done => {}
            Ran::Insert => {
                d.insert(d.i, &change.typed);
                d.i += change.typed.len();
                if let Cmd::Insert(at) = change.cmd {
                    type_again(at, change.count, &change.typed, d);
                }
                if d.i > line_start(&d.t, d.i) {
                    d.i -= 1;
                }
                d.rest();
            }
        }
        self.changed(before, d);
        self.last = Some(change);
        Outcome::Done
    }

    fn changed(&mut self, before: Draft, d: &Draft) {
        if before.t != d.t {
            self.push_undo(before);
            self.redo.clear();
        }
    }

    fn push_undo(&mut self, d: Draft) {
        if self.undo.len() == UNDO_DEPTH {
            self.undo.remove(0);
        }
        self.undo.push(d);
    }

    fn undo(&mut self, n: usize, d: &mut Draft) {
        for _ in 0..n {
            let Some(prev) = self.undo.pop() else { break };
            self.redo.push(std::mem::replace(d, prev));
        }
        d.rest();
    }

    fn redo(&mut self, n: usize, d: &mut Draft) {
        for _ in 0..n {
            let Some(next) = self.redo.pop() else { break };
            self.undo.push(std::mem::replace(d, next));
        }
        d.rest();
    }
}

fn motion_of(c: char) -> Option<Motion> {
    Some(match c {
        'h' => Motion::Left,
        'l' | ' ' => Motion::Right,
        'j' => Motion::Down,
        'k' => Motion::Up,
        'w' => Motion::WordForward(false),
        'W' => Motion::WordForward(true),
        'b' => Motion::WordBack(false),
        'B' => Motion::WordBack(true),
        'e' => Motion::WordEnd(false),
        'E' => Motion::WordEnd(true),
        '0' => Motion::LineStart,
        '^' => Motion::FirstNonBlank,
        '$' => Motion::LineEnd,
        'G' => Motion::LastLine,
        _ => return None,
    })
}

/// What an operator with motion `m` works on, or `None` when the motion cannot move.
fn range(op: Op, m: Motion, count: Option<usize>, d: &Draft) -> Option<Range> {
    let n = count.unwrap_or(1);
    let (t, i) = (&d.t, d.i);
    let line = line_of(t, i);
    let last = line_count(t) - 1;
    let chars = |a: usize, b: usize| Some(Range::Chars(a.min(b), a.max(b)));
    let lines = |a: usize, b: usize| Some(Range::Lines(a.min(b), a.max(b)));
    // `cl` (and `s`) on an empty line still begins typing there.
    let moved =
        |to: usize| (to != i || op == Op::Change).then_some(Range::Chars(to.min(i), to.max(i)));
    match m {
        Motion::Left => moved(i.saturating_sub(n).max(line_start(t, i))),
        Motion::Right => moved(i.saturating_add(n).min(line_end(t, i))),
        Motion::Down if line == last => None,
        Motion::Down => lines(line, (line + n).min(last)),
        Motion::Up if line == 0 => None,
        Motion::Up => lines(line.saturating_sub(n), line),
        Motion::FirstLine => lines(line, count.map_or(0, |c| c - 1).min(last)),
        Motion::LastLine => lines(line, count.map_or(last, |c| c - 1).min(last)),
        Motion::LineStart => chars(line_start(t, i), i),
        Motion::FirstNonBlank => chars(first_non_blank(t, i), i),
        Motion::LineEnd => chars(i, line_end(t, start_of_line(t, (line + n - 1).min(last)))),
        Motion::WordEnd(big) => {
            let to = (0..n).fold(i, |k, _| word_end(t, k, big));
            chars(i, (to + 1).min(t.len()))
        }
        Motion::WordBack(big) => moved((0..n).fold(i, |k, _| word_back(t, k, big))),
        // `cw` on a word changes to its end, like `ce`, but never past it on its last letter.
        Motion::WordForward(big)
            if op == Op::Change && t.get(i).is_some_and(|c| !c.is_whitespace()) =>
        {
            let to = (1..n).fold(run_end(t, i, big), |k, _| word_end(t, k, big));
            chars(i, (to + 1).min(t.len()))
        }
        Motion::WordForward(big) => {
            let to = (0..n).fold(i, |k, _| word_forward(t, k, big));
            chars(i, operator_word_end(t, i, to))
        }
        Motion::Word { inner, big } => {
            let (s, e) = word_object(t, i, n, inner, big)?;
            chars(s, e)
        }
    }
}

/// What was typed since insert mode began at `at_start`'s cursor, when the draft is still what it
/// was around that place.
fn typed_since(at_start: &Draft, now: &Draft) -> Option<Vec<char>> {
    let (old, new, s) = (&at_start.t, &now.t, at_start.i.min(at_start.t.len()));
    let added = new.len().checked_sub(old.len())?;
    (new[..s] == old[..s] && new[s + added..] == old[s..]).then(|| new[s..s + added].to_vec())
}

/// A count on an insert command types the text `count` times in all (`3ix`, `2o…`: lines).
fn type_again(at: InsertAt, count: Option<usize>, typed: &[char], d: &mut Draft) {
    let n = count.unwrap_or(1);
    if n <= 1 || typed.is_empty() {
        return;
    }
    let mut block = Vec::new();
    let at_line = matches!(at, InsertAt::Below | InsertAt::Above);
    for _ in 1..n {
        if at_line {
            block.push('\n');
        }
        block.extend_from_slice(typed);
    }
    let place = if at_line { line_end(&d.t, d.i) } else { d.i };
    d.insert(place, &block);
    d.i = place + block.len();
}
