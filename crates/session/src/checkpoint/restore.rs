//! Carrying out a reviewed restore plan: each chosen file is put back in one atomic step, only if
//! it is still what the plan showed (so what lands is what the person reviewed), and the report
//! says what happened to every file and what the model is told.
//!
//! A restore killed half-way leaves every file either as it was or restored; planning again finds
//! the restored ones already as they were and the rest still to do, so the same undo finishes the
//! job.

use super::objects::ObjectStore;
use super::plan::text_of_state;
use pablo_core::ErrorCode;
use pablo_protocol::{
    FileState, RestoreAction, RestoreChoice, RestoreFile, RestorePlan, RestoreReport, RestoreScope,
    RestoreStatus, RestoredFile, SkippedFile,
};
use pablo_workspace::diff::apply_hunks;
use pablo_workspace::{NewNode, Node, Workspace, revision_of};

fn expected_node(state: &FileState) -> Node {
    match state {
        FileState::Absent => Node::Absent,
        FileState::File {
            hash, size, mode, ..
        } => Node::File {
            revision: hash.to_ascii_lowercase(),
            size: *size,
            mode: *mode,
        },
        FileState::Symlink { target } => Node::Symlink {
            target: target.clone(),
        },
        FileState::Directory => Node::Directory,
    }
}

fn skip(path: &str, code: ErrorCode, message: impl Into<String>) -> SkippedFile {
    SkippedFile {
        path: path.to_string(),
        code: code.into(),
        message: message.into(),
    }
}

/// Restores the chosen files of `plan`; `created_dirs` are directories the plan's turns created,
/// removed afterwards when nothing is left in them.
pub(crate) fn apply_plan(
    plan: &RestorePlan,
    choices: &[RestoreChoice],
    ws: &Workspace,
    objects: &ObjectStore,
    created_dirs: &[String],
) -> RestoreReport {
    let mut restored = Vec::new();
    let mut skipped = Vec::new();
    for c in choices {
        if !plan.files.iter().any(|f| f.path == c.path) {
            skipped.push(skip(
                &c.path,
                ErrorCode::NotInPlan,
                format!("{} is not part of this restore", c.path),
            ));
        }
    }
    for file in &plan.files {
        let choice = choices.iter().find(|c| c.path == file.path);
        let Some(choice) = choice else {
            skipped.push(match file.status {
                RestoreStatus::Conflict => skip(
                    &file.path,
                    ErrorCode::Conflict,
                    file.reason
                        .clone()
                        .unwrap_or_else(|| "changed since".into()),
                ),
                RestoreStatus::Unrestorable => skip(
                    &file.path,
                    ErrorCode::Unrestorable,
                    file.reason
                        .clone()
                        .unwrap_or_else(|| "not kept by the checkpoint".into()),
                ),
                _ => skip(
                    &file.path,
                    ErrorCode::Deselected,
                    "left as it is (not selected)",
                ),
            });
            continue;
        };
        if file.status == RestoreStatus::Unrestorable {
            skipped.push(skip(
                &file.path,
                ErrorCode::Unrestorable,
                file.reason
                    .clone()
                    .unwrap_or_else(|| "not kept by the checkpoint".into()),
            ));
            continue;
        }
        match restore_file(file, choice, ws, objects) {
            Ok(r) => restored.push(r),
            Err(s) => skipped.push(s),
        }
    }
    // Directories the turns created, deepest first, once nothing is left in them.
    let mut dirs: Vec<&String> = created_dirs.iter().collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.matches('/').count()));
    for d in dirs {
        if let Ok(rel) = ws.parse(d) {
            let _ = ws.remove_empty_dir(&rel);
        }
    }
    let turns = match plan.scope {
        RestoreScope::Session { .. } => Vec::new(),
        _ => plan.turns.clone(),
    };
    let mut report = RestoreReport {
        scope: plan.scope.clone(),
        turns,
        restored,
        skipped,
        note: String::new(),
    };
    report.note = note_for_model(plan, &report);
    report
}

fn restore_file(
    file: &RestoreFile,
    choice: &RestoreChoice,
    ws: &Workspace,
    objects: &ObjectStore,
) -> Result<RestoredFile, SkippedFile> {
    let rel = ws
        .parse_file(&file.path)
        .map_err(|e| skip(&file.path, ErrorCode::RestoreFailed, e.to_string()))?;
    let failed = |what: String| skip(&file.path, ErrorCode::RestoreFailed, what);
    let expected = expected_node(&file.current);
    let whole = match &choice.hunks {
        None => true,
        Some(h) => {
            if file.binary {
                return Err(skip(
                    &file.path,
                    ErrorCode::RestoreFailed,
                    "it has no line diff, so only the whole file can be restored",
                ));
            }
            let mut all: Vec<usize> = h.clone();
            all.sort_unstable();
            all.dedup();
            if all.is_empty() {
                return Err(skip(
                    &file.path,
                    ErrorCode::Deselected,
                    "no hunk was selected",
                ));
            }
            if let Some(bad) = all.iter().find(|i| **i >= file.hunks.len()) {
                return Err(failed(format!(
                    "hunk {bad} does not exist; the file has {} hunks",
                    file.hunks.len()
                )));
            }
            all.len() == file.hunks.len()
        }
    };
    let mode = match (&file.target, &file.current) {
        (FileState::File { mode, .. }, _) | (_, FileState::File { mode, .. }) => *mode,
        _ => 0o644,
    };
    let (outcome, now) = if whole {
        match &file.target {
            FileState::Absent => (
                ws.replace_node(&rel, NewNode::Absent, &expected),
                FileState::Absent,
            ),
            FileState::File { hash, mode, .. } => {
                let bytes = objects
                    .get(hash)
                    .map_err(|e| failed(format!("the checkpoint's copy cannot be read: {e}")))?;
                (
                    ws.replace_node(
                        &rel,
                        NewNode::File {
                            bytes: &bytes,
                            mode: *mode,
                        },
                        &expected,
                    ),
                    file.target.clone(),
                )
            }
            FileState::Symlink { target } => (
                ws.replace_node(&rel, NewNode::Symlink { target }, &expected),
                file.target.clone(),
            ),
            FileState::Directory => {
                return Err(failed("a directory is not restored as a file".into()));
            }
        }
    } else {
        let hunks = choice.hunks.clone().unwrap_or_default();
        let target = text_of_state(&file.target, objects)
            .ok_or_else(|| failed("the checkpoint's copy cannot be read".into()))?;
        let rel_current = ws
            .read_file(&rel)
            .map(|f| f.bytes)
            .or_else(|e| match e {
                pablo_workspace::WorkspaceError::NotFound { .. } => Ok(Vec::new()),
                e => Err(e),
            })
            .map_err(|e| failed(e.to_string()))?;
        let current =
            String::from_utf8(rel_current).map_err(|_| failed("it is no longer text".into()))?;
        // Restoring hunks S of target→current is applying every other hunk to the target.
        let keep: Vec<usize> = (0..file.hunks.len())
            .filter(|i| !hunks.contains(i))
            .collect();
        let text = if keep.is_empty() {
            target
        } else {
            apply_hunks(&target, &current, &keep).map_err(|e| failed(e.to_string()))?
        };
        let now = FileState::File {
            hash: revision_of(text.as_bytes()),
            size: text.len() as u64,
            mode,
            stored: objects
                .put(&revision_of(text.as_bytes()), text.as_bytes(), false)
                .is_ok(),
        };
        (
            ws.replace_node(
                &rel,
                NewNode::File {
                    bytes: text.as_bytes(),
                    mode,
                },
                &expected,
            ),
            now,
        )
    };
    match outcome {
        Ok(()) => Ok(RestoredFile {
            path: file.path.clone(),
            action: file.action,
            hunks: if whole { None } else { choice.hunks.clone() },
            now,
        }),
        Err(pablo_workspace::WorkspaceError::RevisionMismatch { detail, .. }) => {
            Err(skip(&file.path, ErrorCode::ChangedSincePreview, detail))
        }
        Err(pablo_workspace::WorkspaceError::AlreadyExists { .. }) => Err(skip(
            &file.path,
            ErrorCode::ChangedSincePreview,
            "a file appeared by that name after the preview; nothing was written",
        )),
        Err(e) => Err(failed(e.to_string())),
    }
}

fn list(paths: &[String]) -> String {
    paths.join(", ")
}

/// What the model is told with the next prompt about a restore, so it does not rely on files it
/// believes it wrote.
pub(crate) fn note_for_model(plan: &RestorePlan, report: &RestoreReport) -> String {
    let by = |action: RestoreAction| -> Vec<String> {
        report
            .restored
            .iter()
            .filter(|r| r.action == action && r.hunks.is_none())
            .map(|r| r.path.clone())
            .collect()
    };
    let partial: Vec<String> = report
        .restored
        .iter()
        .filter(|r| r.hunks.is_some())
        .map(|r| {
            let n = r.hunks.as_ref().map_or(0, Vec::len);
            format!("{} ({n} hunk{})", r.path, if n == 1 { "" } else { "s" })
        })
        .collect();
    let kept: Vec<String> = report
        .skipped
        .iter()
        .filter(|s| s.code != ErrorCode::NotInPlan)
        .map(|s| {
            let why = match ErrorCode::parse(&s.code) {
                Some(ErrorCode::Conflict) => "changed outside pablo since",
                Some(ErrorCode::Deselected) => "the person kept it",
                Some(ErrorCode::Unrestorable) => "not kept by the checkpoint",
                _ => "could not be restored",
            };
            format!("{} ({why})", s.path)
        })
        .collect();
    if report.restored.is_empty() && kept.is_empty() {
        return String::new();
    }
    let turns = || {
        plan.turns
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = match &plan.scope {
        RestoreScope::Undo { .. } => format!(
            "[pablo] Before this message the person undid turn(s) {} of this conversation: the \
             files those turns changed were restored to how they were before them.",
            turns()
        ),
        RestoreScope::Rewind { turn } => format!(
            "[pablo] The person rewound this conversation to this point (the start of turn \
             {turn}); what was said and done after it is not part of this conversation. The \
             files changed after this point were restored to how they were here."
        ),
        RestoreScope::Session { .. } => "[pablo] Before this message the person reverted \
             changes this session made to files."
            .to_string(),
    };
    let rewritten = [by(RestoreAction::Rewrite), by(RestoreAction::Recreate)].concat();
    if !rewritten.is_empty() {
        out.push_str(&format!(" Restored: {}.", list(&rewritten)));
    }
    let deleted = by(RestoreAction::Delete);
    if !deleted.is_empty() {
        out.push_str(&format!(
            " Removed (they did not exist before): {}.",
            list(&deleted)
        ));
    }
    if !partial.is_empty() {
        out.push_str(&format!(
            " Partly restored (only some hunks): {}.",
            list(&partial)
        ));
    }
    if !kept.is_empty() {
        out.push_str(&format!(
            " Not restored, left as they are now: {}.",
            list(&kept)
        ));
    }
    out.push_str(" Read a file again before changing it.");
    out
}
