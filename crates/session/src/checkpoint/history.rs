//! The session's checkpoints as data: for each turn its prompt and the files it changed, and for
//! each file every change in order (by which turn, or by a restore), each with the state before
//! and after. It is rebuilt from the journal (`files_changed` and `restored` events) exactly as
//! the running agent builds it, so `pablo undo` in another process and a resumed session see the
//! same checkpoints.

use std::collections::{BTreeMap, BTreeSet};

use pablo_core::ErrorCode;
use pablo_protocol::{Event, FileChange, FileState, RestoreReport, RestoreScope, TurnCheckpoint};

/// Who made one change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    Turn(u32),
    /// An undo, rewind or `/diff` revert.
    Restore,
}

/// One change to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Version {
    pub(crate) origin: Origin,
    pub(crate) before: FileState,
    pub(crate) after: FileState,
}

#[derive(Debug, Clone, Default)]
struct Turn {
    title: String,
    prompt: String,
    files: BTreeSet<String>,
    unrestorable: BTreeSet<String>,
    undone: bool,
}

/// What a restore of one file starts from: the state to bring back, the state pablo last left it
/// in (anything else now is a conflict), and the changes in between.
#[derive(Debug, Clone)]
pub(crate) struct FileSpan {
    pub(crate) path: String,
    pub(crate) target: FileState,
    pub(crate) known: FileState,
    pub(crate) turns: Vec<u32>,
    /// From the first change in the range to the last change of the file.
    pub(crate) versions: Vec<Version>,
}

/// Why a restore cannot be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    #[error(
        "there is nothing to undo: no turn of this session changed a file that is not undone yet"
    )]
    NothingToUndo,
    #[error(
        "only {available} turn(s) of this session changed files that are not undone yet; \
         {asked} were asked for"
    )]
    NotEnoughTurns { asked: u32, available: u32 },
    #[error("there is no turn {turn} in this session (it has {last})")]
    NoSuchTurn { turn: u32, last: u32 },
    #[error("{path} was not changed in this session")]
    NotChanged { path: String },
}

impl pablo_core::Coded for RangeError {
    fn code(&self) -> ErrorCode {
        match self {
            RangeError::NothingToUndo => ErrorCode::NothingToUndo,
            RangeError::NotEnoughTurns { .. } => ErrorCode::NotEnoughTurns,
            RangeError::NoSuchTurn { .. } => ErrorCode::NoSuchTurn,
            RangeError::NotChanged { .. } => ErrorCode::NotChanged,
        }
    }
}

/// A prompt as the model receives it: after a restore, the note about it comes first.
pub fn prompt_with_note(note: Option<&str>, text: &str) -> String {
    match note {
        Some(n) if !n.is_empty() => format!("{n}\n\n{text}"),
        _ => text.to_string(),
    }
}

/// Longest turn title kept, in characters.
const TITLE_CHARS: usize = 60;

/// The first words of a prompt: its first non-empty line, cut at a word near 60 characters.
pub(crate) fn first_words(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.chars().count() <= TITLE_CHARS {
        return line.to_string();
    }
    let cut: String = line.chars().take(TITLE_CHARS).collect();
    let cut = match cut.rfind(' ') {
        Some(i) if i > TITLE_CHARS / 2 => cut[..i].to_string(),
        _ => cut,
    };
    format!("{}…", cut.trim_end())
}

/// Every turn's checkpoint and every followed file's changes, as the journal tells them.
#[derive(Debug, Clone, Default)]
pub struct History {
    turns: BTreeMap<u32, Turn>,
    /// Prompts so far (the number of the turn running or last run).
    last_turn: u32,
    timeline: BTreeMap<String, Vec<Version>>,
    /// The note the next prompt carries to the model (set by a restore).
    pending_note: Option<String>,
    /// Hooks' notes (`session_start`, `file_changed`) a session stopped before sending: a
    /// resumed session sends them with its next prompt, after it, as the first one would have.
    pending_hook_notes: Vec<String>,
}

impl History {
    /// A new turn with this prompt; returns its number.
    pub(crate) fn begin_turn(&mut self, text: &str) -> u32 {
        self.last_turn += 1;
        self.turns.insert(
            self.last_turn,
            Turn {
                title: first_words(text),
                prompt: text.to_string(),
                ..Turn::default()
            },
        );
        self.last_turn
    }

    pub(crate) fn last_turn(&self) -> u32 {
        self.last_turn
    }

    /// Changes one call of `turn` made.
    pub(crate) fn record(&mut self, turn: u32, changes: &[FileChange]) {
        for c in changes {
            if c.before.same(&c.after) {
                continue;
            }
            let entry = self.turns.entry(turn).or_default();
            if c.before != FileState::Directory && c.after != FileState::Directory {
                entry.files.insert(c.path.clone());
                if !c.before.restorable() {
                    entry.unrestorable.insert(c.path.clone());
                }
            }
            self.timeline
                .entry(c.path.clone())
                .or_default()
                .push(Version {
                    origin: Origin::Turn(turn),
                    before: c.before.clone(),
                    after: c.after.clone(),
                });
        }
    }

    /// A restore happened: its turns are taken back, its files are in their new state, and the
    /// next prompt tells the model.
    pub(crate) fn restored(&mut self, report: &RestoreReport) {
        for t in &report.turns {
            if let Some(turn) = self.turns.get_mut(t) {
                turn.undone = true;
            }
        }
        for f in &report.restored {
            let before = self.known(&f.path);
            self.timeline
                .entry(f.path.clone())
                .or_default()
                .push(Version {
                    origin: Origin::Restore,
                    before,
                    after: f.now.clone(),
                });
        }
        if !report.note.is_empty() {
            self.pending_note = Some(match self.pending_note.take() {
                Some(earlier) => format!("{earlier}\n\n{}", report.note),
                None => report.note.clone(),
            });
        }
    }

    /// The note for the next prompt, once.
    pub(crate) fn take_note(&mut self) -> Option<String> {
        self.pending_note.take()
    }

    /// Keeps hooks' notes that no prompt carried yet (the replay of a journal found them).
    pub(crate) fn keep_hook_notes(&mut self, notes: Vec<String>) {
        self.pending_hook_notes.extend(notes);
    }

    /// The hooks' notes kept for the next prompt, once.
    pub(crate) fn take_hook_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.pending_hook_notes)
    }

    /// Folds one journaled event in (resume, `pablo undo`, a fork).
    pub(crate) fn apply(&mut self, event: &Event) {
        match event {
            Event::UserMessage { text } => {
                self.begin_turn(text);
            }
            Event::FilesChanged { turn, changes, .. } => self.record(*turn, changes),
            Event::Restored { report } => self.restored(report),
            _ => {}
        }
    }

    /// What pablo last left `path` as (`Absent` when no change is recorded).
    pub(crate) fn known(&self, path: &str) -> FileState {
        self.timeline
            .get(path)
            .and_then(|v| v.last())
            .map(|v| v.after.clone())
            .unwrap_or(FileState::Absent)
    }

    /// The turns that changed files, for `/rewind`, oldest first.
    pub(crate) fn list(&self) -> Vec<TurnCheckpoint> {
        self.turns
            .iter()
            .filter(|(_, t)| !t.files.is_empty())
            .map(|(n, t)| TurnCheckpoint {
                turn: *n,
                title: t.title.clone(),
                files: t.files.iter().cloned().collect(),
                undone: t.undone,
                unrestorable: t.unrestorable.iter().cloned().collect(),
            })
            .collect()
    }

    /// The prompt of a turn, as the person wrote it.
    pub fn prompt(&self, turn: u32) -> Option<&str> {
        self.turns.get(&turn).map(|t| t.prompt.as_str())
    }

    /// The turns a scope takes back, in order. `Undo { turns: n }` counts turns that changed
    /// files and are not undone yet, and takes everything from the n-th last of them on.
    pub(crate) fn range(&self, scope: &RestoreScope) -> Result<Vec<u32>, RangeError> {
        match scope {
            RestoreScope::Undo { turns } => {
                let open: Vec<u32> = self
                    .turns
                    .iter()
                    .filter(|(_, t)| !t.files.is_empty() && !t.undone)
                    .map(|(n, _)| *n)
                    .collect();
                if open.is_empty() {
                    return Err(RangeError::NothingToUndo);
                }
                let n = (*turns).max(1);
                if n as usize > open.len() {
                    return Err(RangeError::NotEnoughTurns {
                        asked: n,
                        available: open.len() as u32,
                    });
                }
                let from = open[open.len() - n as usize];
                Ok(self.turns.keys().copied().filter(|t| *t >= from).collect())
            }
            RestoreScope::Rewind { turn } => {
                if *turn == 0 || !self.turns.contains_key(turn) {
                    return Err(RangeError::NoSuchTurn {
                        turn: *turn,
                        last: self.last_turn,
                    });
                }
                Ok(self.turns.keys().copied().filter(|t| t >= turn).collect())
            }
            RestoreScope::Session { .. } => Ok(self.turns.keys().copied().collect()),
        }
    }

    /// The files the turns of `range` changed (only `only`, when given), each with the state to
    /// restore and the changes since.
    pub(crate) fn spans(&self, range: &[u32], only: Option<&str>) -> Vec<FileSpan> {
        let in_range = |o: &Origin| matches!(o, Origin::Turn(t) if range.contains(t));
        let mut out = Vec::new();
        for (path, versions) in &self.timeline {
            if only.is_some_and(|p| p != path) {
                continue;
            }
            let Some(first) = versions.iter().position(|v| in_range(&v.origin)) else {
                continue;
            };
            let versions = versions[first..].to_vec();
            let target = versions[0].before.clone();
            let known = versions
                .last()
                .map(|v| v.after.clone())
                .unwrap_or(FileState::Absent);
            let mut turns: Vec<u32> = versions
                .iter()
                .filter_map(|v| match v.origin {
                    Origin::Turn(t) if range.contains(&t) => Some(t),
                    _ => None,
                })
                .collect();
            turns.dedup();
            out.push(FileSpan {
                path: path.clone(),
                target,
                known,
                turns,
                versions,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(hash: &str) -> FileState {
        FileState::File {
            hash: hash.repeat(64 / hash.len()),
            size: 1,
            mode: 0o644,
            stored: true,
        }
    }

    fn change(path: &str, before: FileState, after: FileState) -> FileChange {
        FileChange {
            path: path.into(),
            before,
            after,
        }
    }

    #[test]
    fn undo_counts_turns_that_changed_files_and_takes_everything_after() {
        let mut h = History::default();
        let t1 = h.begin_turn("first edit");
        h.record(t1, &[change("a", file("1"), file("2"))]);
        h.begin_turn("just a question");
        let t3 = h.begin_turn("second edit");
        h.record(t3, &[change("b", FileState::Absent, file("3"))]);
        assert_eq!(h.range(&RestoreScope::Undo { turns: 1 }).unwrap(), vec![3]);
        assert_eq!(
            h.range(&RestoreScope::Undo { turns: 2 }).unwrap(),
            vec![1, 2, 3]
        );
        assert_eq!(
            h.range(&RestoreScope::Undo { turns: 3 }),
            Err(RangeError::NotEnoughTurns {
                asked: 3,
                available: 2
            })
        );
        let spans = h.spans(&[1, 2, 3], None);
        assert_eq!(spans.len(), 2);
        assert_eq!(spans[0].target, file("1"));
        assert_eq!(spans[1].target, FileState::Absent);
    }

    #[test]
    fn a_restore_marks_its_turns_and_leaves_a_note_for_the_next_prompt() {
        let mut h = History::default();
        let t1 = h.begin_turn("edit");
        h.record(t1, &[change("a", file("1"), file("2"))]);
        h.restored(&RestoreReport {
            scope: RestoreScope::Undo { turns: 1 },
            turns: vec![1],
            restored: vec![pablo_protocol::RestoredFile {
                path: "a".into(),
                action: pablo_protocol::RestoreAction::Rewrite,
                hunks: None,
                now: file("1"),
            }],
            skipped: vec![],
            note: "restored a".into(),
        });
        assert_eq!(
            h.range(&RestoreScope::Undo { turns: 1 }),
            Err(RangeError::NothingToUndo)
        );
        assert_eq!(h.known("a"), file("1"));
        assert_eq!(h.take_note().as_deref(), Some("restored a"));
        assert_eq!(h.take_note(), None);
    }

    #[test]
    fn titles_keep_the_first_words() {
        assert_eq!(first_words("\n  fix the parser\nmore"), "fix the parser");
        let long = "word ".repeat(30);
        let t = first_words(&long);
        assert!(t.ends_with('…') && t.chars().count() <= 61, "{t}");
    }
}
