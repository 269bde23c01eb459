//! Unified diffs for file-change previews, and rebuilding a text from a subset of its hunks.
//!
//! The hunks given to the reviewer (and drawn by the TUI) and the hunks used to narrow a change to
//! the accepted ones come from the same function, so "accept hunk 2" means exactly the lines the
//! person saw under hunk 2. Lines are split after each `\n` and keep their terminators, which is
//! what makes the rebuild byte-exact: CRLF endings and a missing final newline survive.

use std::time::{Duration, Instant};

use similar::{DiffOp, group_diff_ops};

use pablo_core::ErrorCode;
use pablo_core::diff::line_ops;
use pablo_protocol::{DiffHunk, DiffLine, DiffTag, FileChangePreview};

/// Lines of context around each change.
pub const CONTEXT: usize = 3;

/// Past this the diff algorithm settles for a coarser (still correct) diff.
const DIFF_DEADLINE: Duration = Duration::from_secs(2);

/// Splits after every `\n`, keeping terminators; the last line may lack one.
pub fn split_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

fn strip_terminator(line: &str) -> &str {
    line.strip_suffix('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .unwrap_or(line)
}

/// The ops of each hunk, old and new lines.
struct Grouped<'a> {
    old: Vec<&'a str>,
    new: Vec<&'a str>,
    groups: Vec<Vec<DiffOp>>,
}

fn group<'a>(old: &'a str, new: &'a str) -> Grouped<'a> {
    let old_lines = split_lines(old);
    let new_lines = split_lines(new);
    let ops = line_ops(&old_lines, &new_lines, Some(Instant::now() + DIFF_DEADLINE));
    let groups = group_diff_ops(ops, CONTEXT);
    Grouped {
        old: old_lines,
        new: new_lines,
        groups,
    }
}

fn range_text(start: usize, len: usize) -> String {
    // Unified diff convention: an empty range names the line before it.
    let shown = if len == 0 { start } else { start + 1 };
    if len == 1 {
        format!("{shown}")
    } else {
        format!("{shown},{len}")
    }
}

/// A whole diff: its text, hunks and counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    pub text: String,
    pub hunks: Vec<DiffHunk>,
    pub added: usize,
    pub removed: usize,
}

/// Diffs `old` (absent for a new file) against `new`, labelled with `path`.
pub fn diff(path: &str, old: Option<&str>, new: &str) -> Diff {
    let g = group(old.unwrap_or(""), new);
    let mut text = String::new();
    let mut hunks = Vec::new();
    let (mut added, mut removed) = (0, 0);
    if !g.groups.is_empty() {
        match old {
            Some(_) => text.push_str(&format!("--- a/{path}\n")),
            None => text.push_str("--- /dev/null\n"),
        }
        text.push_str(&format!("+++ b/{path}\n"));
    }
    for ops in &g.groups {
        let (Some(first), Some(last)) = (ops.first(), ops.last()) else {
            continue;
        };
        let old_start = first.old_range().start;
        let new_start = first.new_range().start;
        let old_len = last.old_range().end - old_start;
        let new_len = last.new_range().end - new_start;
        let header = format!(
            "@@ -{} +{} @@",
            range_text(old_start, old_len),
            range_text(new_start, new_len)
        );
        text.push_str(&header);
        text.push('\n');
        let mut lines = Vec::new();
        for op in ops {
            let (tag, old_r, new_r) = op.as_tag_tuple();
            let mut push = |tag: DiffTag, old_i: Option<usize>, new_i: Option<usize>, raw: &str| {
                let prefix = match tag {
                    DiffTag::Context => ' ',
                    DiffTag::Added => '+',
                    DiffTag::Removed => '-',
                };
                text.push(prefix);
                text.push_str(raw);
                if !raw.ends_with('\n') {
                    text.push_str("\n\\ No newline at end of file\n");
                }
                lines.push(DiffLine {
                    tag,
                    old_lineno: old_i.map(|i| i + 1),
                    new_lineno: new_i.map(|i| i + 1),
                    text: strip_terminator(raw).to_string(),
                });
            };
            match tag {
                similar::DiffTag::Equal => {
                    for (k, i) in old_r.clone().enumerate() {
                        push(DiffTag::Context, Some(i), Some(new_r.start + k), g.old[i]);
                    }
                }
                similar::DiffTag::Delete | similar::DiffTag::Insert | similar::DiffTag::Replace => {
                    for i in old_r.clone() {
                        removed += 1;
                        push(DiffTag::Removed, Some(i), None, g.old[i]);
                    }
                    for j in new_r.clone() {
                        added += 1;
                        push(DiffTag::Added, None, Some(j), g.new[j]);
                    }
                }
            }
        }
        hunks.push(DiffHunk {
            header,
            old_start: if old_len == 0 {
                old_start
            } else {
                old_start + 1
            },
            old_len,
            new_start: if new_len == 0 {
                new_start
            } else {
                new_start + 1
            },
            new_len,
            lines,
        });
    }
    Diff {
        text,
        hunks,
        added,
        removed,
    }
}

/// Why a set of hunks cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NarrowError {
    #[error("hunk {index} does not exist; the change has {count} hunks")]
    NoSuchHunk { index: usize, count: usize },
    #[error("no hunk was accepted, so there is nothing to write")]
    NothingAccepted,
}

impl pablo_core::Coded for NarrowError {
    fn code(&self) -> ErrorCode {
        match self {
            NarrowError::NoSuchHunk { .. } => ErrorCode::InvalidHunks,
            NarrowError::NothingAccepted => ErrorCode::NoHunksAccepted,
        }
    }
}

/// `old` with only the `accepted` hunks of the diff `old → new` applied.
pub fn apply_hunks(old: &str, new: &str, accepted: &[usize]) -> Result<String, NarrowError> {
    let g = group(old, new);
    let count = g.groups.len();
    if let Some(&index) = accepted.iter().find(|&&i| i >= count) {
        return Err(NarrowError::NoSuchHunk { index, count });
    }
    if accepted.is_empty() {
        return Err(NarrowError::NothingAccepted);
    }
    let mut out = String::with_capacity(new.len().max(old.len()));
    let mut pos = 0;
    for (i, ops) in g.groups.iter().enumerate() {
        let (Some(first), Some(last)) = (ops.first(), ops.last()) else {
            continue;
        };
        let old_r = first.old_range().start..last.old_range().end;
        let new_r = first.new_range().start..last.new_range().end;
        for l in &g.old[pos..old_r.start] {
            out.push_str(l);
        }
        let side = if accepted.contains(&i) {
            &g.new[new_r]
        } else {
            &g.old[old_r.clone()]
        };
        for l in side {
            out.push_str(l);
        }
        pos = old_r.end;
    }
    for l in &g.old[pos..] {
        out.push_str(l);
    }
    Ok(out)
}

/// The preview of replacing `old` (absent: creating) with `new` at `path`.
pub fn file_change_preview(
    path: &str,
    old: Option<&str>,
    old_revision: Option<String>,
    new: String,
) -> FileChangePreview {
    let d = diff(path, old, &new);
    FileChangePreview {
        path: path.to_string(),
        old_revision,
        new_revision: super::revision_of(new.as_bytes()),
        new_text: new,
        diff: d.text,
        added: d.added,
        removed: d.removed,
        hunks: d.hunks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_has_headers_line_numbers_and_counts() {
        let d = diff("a.txt", Some("one\ntwo\nthree\n"), "one\n2\nthree\n");
        assert_eq!(
            d.text,
            "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"
        );
        assert_eq!((d.added, d.removed), (1, 1));
        let h = &d.hunks[0];
        assert_eq!(
            (h.old_start, h.old_len, h.new_start, h.new_len),
            (1, 3, 1, 3)
        );
        assert_eq!(h.lines[1].tag, DiffTag::Removed);
        assert_eq!(h.lines[1].old_lineno, Some(2));
        assert_eq!(h.lines[2].new_lineno, Some(2));
        assert_eq!(h.lines[2].text, "2");
    }

    #[test]
    fn creation_diffs_against_dev_null() {
        let d = diff("n.txt", None, "hi\n");
        assert!(
            d.text
                .starts_with("--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+hi\n"),
            "{}",
            d.text
        );
    }

    #[test]
    fn missing_final_newline_is_marked() {
        let d = diff("a", Some("x\n"), "x\ny");
        assert!(
            d.text.ends_with("+y\n\\ No newline at end of file\n"),
            "{}",
            d.text
        );
    }

    #[test]
    fn identical_texts_have_no_hunks() {
        let d = diff("a", Some("same\n"), "same\n");
        assert!(d.hunks.is_empty());
        assert!(d.text.is_empty());
    }

    fn two_hunks() -> (String, String) {
        let old: String = (1..=20).map(|i| format!("line {i}\r\n")).collect();
        let new = old
            .replace("line 2\r\n", "LINE TWO\r\n")
            .replace("line 18\r\n", "LINE EIGHTEEN\r\n");
        (old, new)
    }

    #[test]
    fn applying_every_hunk_gives_the_new_text() {
        let (old, new) = two_hunks();
        assert_eq!(diff("f", Some(&old), &new).hunks.len(), 2);
        assert_eq!(apply_hunks(&old, &new, &[0, 1]).unwrap(), new);
    }

    #[test]
    fn applying_one_hunk_changes_only_its_lines() {
        let (old, new) = two_hunks();
        let second = apply_hunks(&old, &new, &[1]).unwrap();
        assert!(second.contains("line 2\r\n"));
        assert!(second.contains("LINE EIGHTEEN\r\n"));
        assert_eq!(
            second.len(),
            old.len() + "LINE EIGHTEEN".len() - "line 18".len()
        );
    }

    #[test]
    fn unknown_or_empty_hunk_sets_are_refused() {
        let (old, new) = two_hunks();
        assert_eq!(
            apply_hunks(&old, &new, &[2]),
            Err(NarrowError::NoSuchHunk { index: 2, count: 2 })
        );
        assert_eq!(
            apply_hunks(&old, &new, &[]),
            Err(NarrowError::NothingAccepted)
        );
    }

    #[test]
    fn hunk_rebuild_keeps_a_missing_final_newline() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj";
        let new = "A\nb\nc\nd\ne\nf\ng\nh\ni\nJ";
        assert_eq!(
            apply_hunks(old, new, &[0]).unwrap(),
            "A\nb\nc\nd\ne\nf\ng\nh\ni\nj"
        );
        assert_eq!(
            apply_hunks(old, new, &[1]).unwrap(),
            "a\nb\nc\nd\ne\nf\ng\nh\ni\nJ"
        );
    }
}
