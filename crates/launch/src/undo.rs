//! `pablo undo`: the last turns of a journaled session undone from the command line, outside
//! any session, through the same checkpoint plan and restore the TUI's `/undo` uses.

use super::{Launch, LaunchError};
use pablo_protocol::Event;
use pablo_session::SessionError;

/// What `pablo undo` planned and (unless it was a dry run) did.
#[derive(Debug, Clone)]
pub struct UndoOutcome {
    pub plan: pablo_protocol::RestorePlan,
    pub report: Option<pablo_protocol::RestoreReport>,
}

impl Launch {
    /// `pablo undo`: plans the undo of the last `turns` turns (that changed files) of the
    /// journaled session `session_id` (a full id; it must not be open in another pablo), and
    /// unless `dry_run` restores every file still as pablo left it. Files changed since are
    /// conflicts and are left alone. The restore is journaled, so the session's next prompt tells
    /// the model.
    pub fn undo(
        &self,
        session_id: &str,
        turns: u32,
        dry_run: bool,
    ) -> Result<UndoOutcome, LaunchError> {
        use pablo_core::EventRecorder;
        use pablo_protocol::{RestoreChoice, RestoreScope, RestoreStatus};
        let (mut journal, state) = self.session_store().resume(session_id)?;
        let checkpoints = self.checkpoints(state.checkpoints).ok_or_else(|| {
            LaunchError::Setup(
                "checkpoints are switched off ([options.checkpoints] enabled = false)".into(),
            )
        })?;
        let plan = checkpoints.plan(&RestoreScope::Undo { turns })?;
        if dry_run {
            return Ok(UndoOutcome { plan, report: None });
        }
        let choices: Vec<RestoreChoice> = plan
            .files
            .iter()
            .filter(|f| f.status == RestoreStatus::Ready)
            .map(|f| RestoreChoice {
                path: f.path.clone(),
                hunks: None,
            })
            .collect();
        let (plan, report) = checkpoints.restore(&plan.plan_id, &choices)?;
        journal
            .record(&Event::Restored {
                report: report.clone(),
            })
            .and_then(|()| journal.sync())
            .map_err(|e| {
                LaunchError::Session(SessionError::Io {
                    path: journal.path().to_path_buf(),
                    message: format!(
                        "the files were restored, but the journal could not record it: {e}"
                    ),
                })
            })?;
        Ok(UndoOutcome {
            plan,
            report: Some(report),
        })
    }
}
