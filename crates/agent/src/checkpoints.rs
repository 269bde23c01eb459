//! The agent's side of checkpoints: a turn opens one (and the next prompt carries the note about
//! any restore since), each commit is bracketed so what it changed is recorded as
//! `files_changed`, undo/rewind/`/diff` ops are answered from them, and a rewind forks the
//! conversation. Also what the model is told after a per-hunk review: the hunks it did not get.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::oneshot;

use super::forward::Control;
use super::outlet::Outlet;
use super::shared::Shared;
use super::workplace::Workplace;
use pablo_core::{Coded, ErrorCode, EventSink, ToolFailure, ToolKind};
use pablo_model::Message;
use pablo_protocol::{Event, Op, Preview, RestoreReport, RestoreScope, ToolCall};
use pablo_session::checkpoint::Checkpoints;
use pablo_session::checkpoint::history::prompt_with_note;
use pablo_tools::fs_write::{HunkNotApplied, LineRange, PartialChange};
use pablo_tools::{Tool, ToolContext, ToolResult};

/// Runs blocking checkpoint work off the async threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(f).await.ok()
}

/// The paths a turn changed, whoever changed them, and how (`created`, `modified`, `deleted`),
/// for the `file_changed` hooks at its end.
pub(crate) type ChangedPaths = BTreeMap<String, &'static str>;

/// What a rewind changes of the session's conversation while no turn runs: the conversation
/// goes back to an earlier turn, as a new session.
pub(crate) struct Rewindable<'a> {
    pub(crate) messages: &'a mut Vec<Message>,
    pub(crate) session_id: &'a mut String,
}

/// Answers `/rewind`'s list, `/undo`/`/rewind`/`/diff` plans and restores: with the
/// conversation when no turn runs (`idle`), else from the shared checkpoints alone.
pub(crate) async fn answer(shared: &Shared, idle: Option<Rewindable<'_>>, op: Op) {
    match idle {
        Some(conversation) => answer_idle(shared, conversation, op).await,
        None => answer_during_turn(shared.checkpoints.as_deref(), &shared.events, op),
    }
}

/// Ops that cannot wait for the running turn to end: the list is answered, a restore is
/// refused (files are being changed by the turn).
fn answer_during_turn(checkpoints: Option<&Checkpoints>, events: &EventSink, op: Op) {
    match (op, checkpoints) {
        (Op::ListCheckpoints, Some(c)) => events.send(Event::Checkpoints { turns: c.turns() }),
        (Op::ListCheckpoints, None) => events.send(Event::Checkpoints { turns: Vec::new() }),
        _ => events.send(Event::Error {
            code: ErrorCode::TurnRunning.into(),
            message: "a turn is running; wait for it to finish (or interrupt it with esc) before \
                      undoing, rewinding or reverting"
                .into(),
        }),
    }
}

/// Opens the turn's checkpoint in `checkpoints` (the session's); returns the prompt as the model
/// gets it (a note about a restore first, if there was one since the last prompt).
pub(crate) fn open(checkpoints: Option<&Arc<Checkpoints>>, prompt: &str, text: String) -> String {
    let Some(c) = checkpoints else {
        return text;
    };
    let note = c.take_note();
    c.begin_turn(prompt);
    // The first walk of the workspace runs while the model thinks; the first command waits for
    // it if it is not done.
    let prep = c.clone();
    tokio::task::spawn_blocking(move || prep.prepare());
    prompt_with_note(note.as_deref(), &text)
}

/// Where a commit's changes are recorded: the checkpoints of the place it works in (none for an
/// isolated subagent), the turn's changed paths, and the outlet that announces them.
pub(crate) struct Recorder<'a> {
    pub(crate) place: &'a Workplace,
    pub(crate) outlet: &'a Outlet,
    pub(crate) changed: &'a mut ChangedPaths,
}

impl Recorder<'_> {
    /// Commits `tool`, recording what it changed: a command is bracketed by scans, a file tool
    /// reports through the write hook. The record is journaled before the result.
    pub(crate) async fn commit(
        &mut self,
        tool: &dyn Tool,
        call: &ToolCall,
        args: &Value,
        preview: &Preview,
        ctx: &ToolContext,
    ) -> Result<ToolResult, ToolFailure> {
        let Some(c) = self.place.checkpoints() else {
            return tool.commit_result(args, preview, ctx).await;
        };
        let scanned = tool.kind() == ToolKind::Execute;
        if scanned {
            let before = c.clone();
            blocking(move || before.before_command()).await;
        }
        let result = tool.commit_result(args, preview, ctx).await;
        let after = c.clone();
        if let Some((turn, changes)) = blocking(move || after.after_call(scanned)).await
            && !changes.is_empty()
        {
            let changed = &mut *self.changed;
            for ch in &changes {
                use pablo_protocol::FileState::Directory;
                // `file_changed` is about files; a directory made or removed is not one.
                if matches!(ch.before, Directory) || matches!(ch.after, Directory) {
                    continue;
                }
                let kind = match (&ch.before, &ch.after) {
                    (pablo_protocol::FileState::Absent, _) => "created",
                    (_, pablo_protocol::FileState::Absent) => "deleted",
                    _ => "modified",
                };
                changed.insert(ch.path.clone(), kind);
            }
            self.outlet.emit(Event::FilesChanged {
                turn,
                call_id: call.id.clone(),
                tool: tool.name().to_string(),
                changes,
            });
        }
        for message in c.scan_notes() {
            self.outlet.emit(Event::Warning { message });
        }
        result
    }
}

/// `/rewind`'s list, `/undo`/`/rewind`/`/diff` plans, and restores, while no turn runs (the
/// session's conversation is not a subagent's: its events are the session's).
async fn answer_idle(shared: &Shared, conversation: Rewindable<'_>, op: Op) {
    let Some(c) = shared.checkpoints.clone() else {
        shared.emit(Event::Error {
            code: ErrorCode::CheckpointsUnavailable.into(),
            message: "this session keeps no checkpoints ([options.checkpoints] enabled = false), \
                      so nothing can be undone"
                .into(),
        });
        return;
    };
    match op {
        Op::ListCheckpoints => shared.emit(Event::Checkpoints { turns: c.turns() }),
        Op::PlanRestore { scope } => {
            if matches!(scope, RestoreScope::Rewind { .. }) && !shared.journaled {
                shared.emit(Event::Error {
                    code: ErrorCode::RewindUnavailable.into(),
                    message: "this session has no journal, so its conversation cannot be \
                              rewound; /undo restores files"
                        .into(),
                });
                return;
            }
            let planner = c.clone();
            match blocking(move || planner.plan(&scope)).await {
                Some(Ok(plan)) => shared.emit(Event::RestorePlan { plan }),
                Some(Err(e)) => shared.emit(Event::Error {
                    code: e.code().into(),
                    message: e.to_string(),
                }),
                None => shared.emit(internal("planning the restore stopped unexpectedly")),
            }
        }
        Op::Restore { plan_id, files } => {
            let restorer = c.clone();
            match blocking(move || restorer.restore(&plan_id, &files)).await {
                Some(Ok((plan, report))) => {
                    shared.emit(Event::Restored {
                        report: report.clone(),
                    });
                    if let RestoreScope::Rewind { turn } = plan.scope {
                        fork(shared, conversation, &c, turn, report).await;
                    }
                }
                Some(Err(e)) => shared.emit(Event::Error {
                    code: e.code().into(),
                    message: e.to_string(),
                }),
                None => shared.emit(internal("the restore stopped unexpectedly")),
            }
        }
        _ => {}
    }
}

/// The conversation goes back to the start of `turn`, as a new session: the journal forks (the
/// old one keeps the later turns), the messages and checkpoints are rebuilt from the copied
/// events, and the next prompt carries the restore's note.
async fn fork(
    shared: &Shared,
    conversation: Rewindable<'_>,
    c: &Arc<Checkpoints>,
    turn: u32,
    report: RestoreReport,
) {
    let text = c.history().prompt(turn).unwrap_or_default().to_string();
    let new_id = pablo_session::new_session_id();
    let (reply, answer) = oneshot::channel();
    let sent = shared.control.send(Control::Fork {
        new_id: new_id.clone(),
        before_turn: turn,
        carry: vec![Event::Restored { report }],
        reply,
    });
    let forked = match (sent, answer.await) {
        (Ok(()), Ok(Ok(Some(events)))) => events,
        (_, Ok(Err(e))) => {
            return shared.emit(Event::Warning {
                message: format!(
                    "the files were restored, but the conversation could not be rewound ({e}); \
                     it continues as it was"
                ),
            });
        }
        _ => {
            return shared.emit(Event::Warning {
                message: "the files were restored, but this session's journal cannot fork, so \
                          the conversation continues as it was"
                    .into(),
            });
        }
    };
    let (messages, history) = pablo_session::rebuild(&forked);
    *conversation.messages = messages;
    c.replace_history(history);
    let from = std::mem::replace(conversation.session_id, new_id.clone());
    shared.emit(Event::SessionForked {
        session_id: new_id,
        from_session: from,
        turn,
        text,
    });
}

fn internal(message: &str) -> Event {
    Event::Error {
        code: ErrorCode::Internal.into(),
        message: message.into(),
    }
}

/// The hunks of a file change the person did not accept, as the model reads them: their index,
/// where they were in the file before, where those lines are now, their text, and the person's
/// note on why, when they left one.
pub(crate) fn not_applied(
    original: &Preview,
    accepted: &[usize],
    notes: &[pablo_protocol::HunkNote],
) -> Option<PartialChange> {
    let Preview::FileChange(fc) = original else {
        return None;
    };
    let mut shift: i64 = 0;
    let mut rejected = Vec::new();
    for (i, h) in fc.hunks.iter().enumerate() {
        if accepted.contains(&i) {
            shift += h.new_len as i64 - h.old_len as i64;
            continue;
        }
        let mut text = format!("{}\n", h.header);
        for l in &h.lines {
            let sign = match l.tag {
                pablo_protocol::DiffTag::Context => ' ',
                pablo_protocol::DiffTag::Added => '+',
                pablo_protocol::DiffTag::Removed => '-',
            };
            text.push(sign);
            text.push_str(&l.text);
            text.push('\n');
        }
        let note = notes
            .iter()
            .find(|n| n.hunk == i && !n.note.trim().is_empty())
            .map(|n| n.note.trim().to_string());
        rejected.push(HunkNotApplied {
            hunk: i,
            old_start: h.old_start,
            old_len: h.old_len,
            lines_now: LineRange {
                start: (h.old_start as i64 + shift).max(0),
                len: h.old_len,
            },
            text,
            note,
        });
    }
    if rejected.is_empty() {
        return None;
    }
    let total = fc.hunks.len();
    let applied: Vec<usize> = (0..total).filter(|i| accepted.contains(i)).collect();
    let noted = rejected.iter().any(|r| r.note.is_some());
    Some(PartialChange {
        partial: true,
        note: format!(
            "the person accepted {} of {total} hunks of this change; only those were written. \
             The hunks in hunks_not_applied were rejected: the file still has its earlier lines \
             there (lines_now) and does not contain their + lines{}",
            applied.len(),
            if noted {
                "; a hunk's note is the person's reason for rejecting it"
            } else {
                ""
            }
        ),
        hunks_applied: applied,
        hunks_not_applied: rejected,
    })
}
