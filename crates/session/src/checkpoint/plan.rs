//! A restore plan: for each file a range of turns changed, what it is now, what a restore makes
//! it, whether that is safe (still as pablo left it) and the diff of what would be lost, hunk by
//! hunk, each hunk labelled with the turns that made it. Planning reads and never writes.

use similar::DiffOp;

use super::history::{FileSpan, History, Origin, RangeError};
use super::objects::ObjectStore;
use pablo_protocol::{
    FileState, HunkSource, RestoreAction, RestoreFile, RestorePlan, RestoreScope, RestoreStatus,
};
use pablo_workspace::diff::{diff, split_lines};
use pablo_workspace::{Node, Workspace};

/// Files larger than this are shown and restored whole, without a line diff.
pub(crate) const DIFF_MAX_BYTES: u64 = 2 * 1024 * 1024;

/// The state a workspace node is in, as a checkpoint names it.
pub(crate) fn state_of_node(node: &Node, objects: &ObjectStore) -> FileState {
    match node {
        Node::Absent => FileState::Absent,
        Node::File {
            revision,
            size,
            mode,
        } => FileState::File {
            hash: revision.clone(),
            size: *size,
            mode: *mode,
            stored: objects.contains(revision),
        },
        Node::Symlink { target } => FileState::Symlink {
            target: target.clone(),
        },
        Node::Directory => FileState::Directory,
        // Never a checkpoint state; shown as something that is not the file pablo left.
        Node::Special => FileState::Symlink {
            target: "(a special file)".into(),
        },
    }
}

/// The text of a state when it has one pablo can diff: absent is empty, a stored small UTF-8
/// file without NUL bytes is its text; anything else has none.
pub(crate) fn text_of_state(state: &FileState, objects: &ObjectStore) -> Option<String> {
    match state {
        FileState::Absent => Some(String::new()),
        FileState::File {
            hash, size, stored, ..
        } if *stored && *size <= DIFF_MAX_BYTES => {
            let bytes = objects.get(hash).ok()?;
            text(bytes)
        }
        _ => None,
    }
}

fn text(bytes: Vec<u8>) -> Option<String> {
    if memchr::memchr(0, &bytes).is_some() {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// The current text of `path` (read through the workspace), when it has one.
fn current_text(ws: &Workspace, path: &str, state: &FileState) -> Option<String> {
    match state {
        FileState::Absent => Some(String::new()),
        FileState::File { size, .. } if *size <= DIFF_MAX_BYTES => {
            let rel = ws.parse_file(path).ok()?;
            text(ws.read_file(&rel).ok()?.bytes)
        }
        _ => None,
    }
}

/// Plans the restore `scope` asks for. Files already as they were before are left out.
pub(crate) fn make_plan(
    history: &History,
    scope: &RestoreScope,
    ws: &Workspace,
    objects: &ObjectStore,
    plan_id: String,
) -> Result<RestorePlan, RangeError> {
    let range = history.range(scope)?;
    let only = match scope {
        RestoreScope::Session { path } => path.as_deref(),
        _ => None,
    };
    let spans = history.spans(&range, only);
    if let Some(path) = only
        && spans.is_empty()
    {
        return Err(RangeError::NotChanged {
            path: path.to_string(),
        });
    }
    let mut files = Vec::new();
    for span in &spans {
        if span.target == FileState::Directory || span.known == FileState::Directory {
            continue;
        }
        if let Some(f) = plan_file(span, ws, objects) {
            files.push(f);
        }
    }
    let (title, turns) = match scope {
        RestoreScope::Undo { .. } => {
            let changed: Vec<u32> = range
                .iter()
                .copied()
                .filter(|t| spans.iter().any(|s| s.turns.contains(t)))
                .collect();
            let title = match changed.as_slice() {
                [one] => format!("Undo turn {one}"),
                many => format!(
                    "Undo turns {}",
                    many.iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            (title, range.clone())
        }
        RestoreScope::Rewind { turn } => {
            (format!("Rewind to the start of turn {turn}"), range.clone())
        }
        RestoreScope::Session { path: None } => ("Changes in this session".to_string(), vec![]),
        RestoreScope::Session { path: Some(p) } => {
            (format!("Changes to {p} in this session"), vec![])
        }
    };
    Ok(RestorePlan {
        plan_id,
        scope: scope.clone(),
        title,
        turns,
        files,
    })
}

fn plan_file(span: &FileSpan, ws: &Workspace, objects: &ObjectStore) -> Option<RestoreFile> {
    let rel = ws.parse_file(&span.path).ok()?;
    let current = match ws.node(&rel) {
        Ok(n) => state_of_node(&n, objects),
        Err(_) => FileState::Symlink {
            target: "(unreadable)".into(),
        },
    };
    if current.same(&span.target) {
        return None;
    }
    let turns_words = || {
        let t: Vec<String> = span.turns.iter().map(u32::to_string).collect();
        format!(
            "turn{} {}",
            if t.len() == 1 { "" } else { "s" },
            t.join(", ")
        )
    };
    let (status, reason) = if !span.target.restorable() {
        let size = match &span.target {
            FileState::File { size, .. } => *size,
            _ => 0,
        };
        (
            RestoreStatus::Unrestorable,
            Some(format!(
                "the checkpoint holds only its hash and size ({size} bytes): it was over the \
                 checkpoint's size cap, so it cannot be restored"
            )),
        )
    } else if current.same(&span.known) {
        (RestoreStatus::Ready, None)
    } else {
        (
            RestoreStatus::Conflict,
            Some(format!(
                "changed since {} (by you or another program); restoring it would lose that \
                 change",
                turns_words()
            )),
        )
    };
    let action = if span.target.is_absent() {
        RestoreAction::Delete
    } else if current.is_absent() {
        RestoreAction::Recreate
    } else {
        RestoreAction::Rewrite
    };
    let old = text_of_state(&span.target, objects);
    let new = current_text(ws, &span.path, &current);
    let (binary, hunks, added, removed, hunk_sources) = match (&old, &new) {
        (Some(old), Some(new)) => {
            let d = diff(
                &span.path,
                (!span.target.is_absent()).then_some(old.as_str()),
                new,
            );
            let sources = attribute(span, old, new, &d.hunks, objects);
            (false, d.hunks, d.added, d.removed, sources)
        }
        _ => (true, Vec::new(), 0, 0, Vec::new()),
    };
    Some(RestoreFile {
        path: span.path.clone(),
        action,
        status,
        reason,
        current,
        target: span.target.clone(),
        binary,
        hunks,
        hunk_sources,
        added,
        removed,
        turns: span.turns.clone(),
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Turn(u32),
    Outside,
    Restore,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    /// Line `i` of the text being restored to.
    Base(usize),
    By(Source),
}

/// Carries line tags from `old` to `new`: kept lines keep theirs, new lines get `by`, and a base
/// line that goes away is recorded as removed by `by`.
fn step(
    old: &[&str],
    tags: &[Tag],
    new: &[&str],
    by: Source,
    removed_by: &mut [Option<Source>],
) -> Vec<Tag> {
    let mut out = Vec::with_capacity(new.len());
    for op in pablo_core::diff::line_ops(old, new, None) {
        match op {
            DiffOp::Equal { old_index, len, .. } => {
                out.extend_from_slice(&tags[old_index..old_index + len]);
            }
            DiffOp::Delete {
                old_index, old_len, ..
            } => mark_removed(&tags[old_index..old_index + old_len], by, removed_by),
            DiffOp::Insert { new_len, .. } => out.extend((0..new_len).map(|_| Tag::By(by))),
            DiffOp::Replace {
                old_index,
                old_len,
                new_len,
                ..
            } => {
                mark_removed(&tags[old_index..old_index + old_len], by, removed_by);
                out.extend((0..new_len).map(|_| Tag::By(by)));
            }
        }
    }
    out
}

fn mark_removed(tags: &[Tag], by: Source, removed_by: &mut [Option<Source>]) {
    for t in tags {
        if let Tag::Base(i) = t
            && let Some(slot) = removed_by.get_mut(*i)
        {
            *slot = Some(by);
        }
    }
}

/// Who made each hunk of the diff `target → current`: the text is followed through every
/// recorded change (and any change made outside pablo in between), line by line.
fn attribute(
    span: &FileSpan,
    target: &str,
    current: &str,
    hunks: &[pablo_protocol::DiffHunk],
    objects: &ObjectStore,
) -> Vec<HunkSource> {
    let fallback = || {
        hunks
            .iter()
            .map(|_| HunkSource {
                turns: span.turns.clone(),
                outside: false,
            })
            .collect::<Vec<_>>()
    };
    let base = split_lines(target);
    let mut removed_by: Vec<Option<Source>> = vec![None; base.len()];
    let mut text = target.to_string();
    let mut tags: Vec<Tag> = (0..base.len()).map(Tag::Base).collect();
    let mut advance = |from: &str, to: &str, by: Source, tags: &mut Vec<Tag>| {
        let (a, b) = (split_lines(from), split_lines(to));
        *tags = step(&a, tags, &b, by, &mut removed_by);
    };
    for v in &span.versions {
        let (Some(before), Some(after)) = (
            text_of_state(&v.before, objects),
            text_of_state(&v.after, objects),
        ) else {
            return fallback();
        };
        if before != text {
            advance(&text, &before, Source::Outside, &mut tags);
        }
        let by = match v.origin {
            Origin::Turn(t) => Source::Turn(t),
            Origin::Restore => Source::Restore,
        };
        advance(&before, &after, by, &mut tags);
        text = after;
    }
    if text != current {
        advance(&text, current, Source::Outside, &mut tags);
    }
    hunks
        .iter()
        .map(|h| {
            let mut src = HunkSource::default();
            let mut add = |s: Option<Source>| match s {
                Some(Source::Turn(t)) => {
                    if !src.turns.contains(&t) {
                        src.turns.push(t);
                    }
                }
                Some(Source::Outside) => src.outside = true,
                Some(Source::Restore) | None => {}
            };
            for l in &h.lines {
                match l.tag {
                    pablo_protocol::DiffTag::Added => {
                        let t = l.new_lineno.and_then(|n| tags.get(n - 1)).copied();
                        add(match t {
                            Some(Tag::By(s)) => Some(s),
                            _ => None,
                        });
                    }
                    pablo_protocol::DiffTag::Removed => {
                        add(l
                            .old_lineno
                            .and_then(|n| removed_by.get(n - 1).copied().flatten()));
                    }
                    pablo_protocol::DiffTag::Context => {}
                }
            }
            src.turns.sort_unstable();
            if src.turns.is_empty() && !src.outside {
                src.turns = span.turns.clone();
            }
            src
        })
        .collect()
}
