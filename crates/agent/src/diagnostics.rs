//! The language servers' verdict on a file change while the person looks at it: once the
//! approval prompt is up, the change's new text goes to the servers that cover the file as an
//! unsaved version, and what it would introduce and fix follows the prompt as
//! [`Event::PreviewDiagnostics`] — first `checking`, then the answer. The prompt never waits for
//! it. When the person toggles hunks ([`pablo_protocol::Op::CheckHunks`]) the accepted subset
//! is checked the same way. Nothing here touches the disk.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::outlet::Outlet;
use super::shared::Shared;
use pablo_protocol::{Event, Preview, PreviewDiagnostics};
use pablo_tools::{Tool, ToolContext};

/// How long a server slower than its own wait is waited for on the second ask, while the prompt
/// is open.
const LATE_WAIT: Duration = Duration::from_secs(30);

/// The running check of one approval; dropping it stops the check.
pub(super) struct PreviewCheck {
    task: tokio::task::JoinHandle<()>,
    call_id: String,
    shared: Arc<Shared>,
}

impl Drop for PreviewCheck {
    fn drop(&mut self) {
        self.task.abort();
        self.shared.end_preview_check(&self.call_id);
    }
}

/// Starts checking the file change `preview` shows under the approval `approval_id`, when a
/// language server covers its file; `None` when none does (nothing is said then). What the
/// servers say goes out through `outlet`, as the conversation's own events.
pub(crate) fn start_preview_check(
    outlet: &Outlet,
    approval_id: &str,
    tool: Arc<dyn Tool>,
    preview: &Preview,
    ctx: ToolContext,
) -> Option<PreviewCheck> {
    let Preview::FileChange(change) = preview else {
        return None;
    };
    let lsp = ctx.host.lsp.clone();
    if !lsp.covers(&change.path) {
        return None;
    }
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<usize>>();
    outlet.shared().begin_preview_check(approval_id, tx);
    let emitter = outlet.clone();
    let preview = preview.clone();
    let call_id = approval_id.to_string();
    let ws = ctx.host.workspace.clone();
    let task = tokio::spawn(async move {
        let Preview::FileChange(change) = &preview else {
            return;
        };
        // The text the change replaces, as it is now; a file changed since the preview is
        // compared with what it holds now (the commit would refuse it anyway).
        let old = match ws.parse_file(&change.path) {
            Ok(rel) => pablo_tools::editor::current_text(&ctx, &ws, &rel)
                .await
                .ok()
                .flatten()
                .map(|(text, _)| text),
            Err(_) => None,
        };
        // `wait`: a longer wait than the servers' own (the second ask of a slow server);
        // `first`: the first ask of the whole change, said with `checking…` before it and
        // asked again when a server was only slow. Returns whether one was.
        let check = |hunks: Option<Vec<usize>>, new_text: String, wait: Option<Duration>| {
            let emitter = emitter.clone();
            let lsp = lsp.clone();
            let call_id = call_id.clone();
            let path = change.path.clone();
            let old = old.clone();
            let first = hunks.is_none() && wait.is_none();
            async move {
                if wait.is_none() {
                    emitter.emit(Event::PreviewDiagnostics {
                        call_id: call_id.clone(),
                        hunks: hunks.clone(),
                        diagnostics: PreviewDiagnostics::Checking {
                            servers: lsp.servers_for(&path),
                        },
                    });
                }
                let (diagnostics, late) = lsp
                    .check_change_waiting(&path, old.as_deref(), &new_text, wait, first)
                    .await;
                emitter.emit(Event::PreviewDiagnostics {
                    call_id,
                    hunks,
                    diagnostics,
                });
                late
            }
        };
        // A server slower than its wait (pyright indexing on its first check of a big file)
        // is asked again while the prompt stays open, and the prompt fills in when it
        // answers. A toggle of hunks sets that aside (the servers serve one question at a
        // time) and it starts again after.
        let mut whole_late = check(None, change.new_text.clone(), None).await;
        let mut late_whole = None;
        loop {
            if whole_late && late_whole.is_none() {
                late_whole = Some(Box::pin(check(
                    None,
                    change.new_text.clone(),
                    Some(LATE_WAIT),
                )));
            }
            let hunks = tokio::select! {
                hunks = rx.recv() => match hunks {
                    Some(h) => h,
                    None => break,
                },
                _ = async {
                    match late_whole.as_mut() {
                        Some(f) => f.await,
                        None => std::future::pending().await,
                    }
                } => {
                    whole_late = false;
                    late_whole = None;
                    continue;
                }
            };
            late_whole = None;
            // Only the newest subset matters: the person may toggle faster than servers answer.
            let mut hunks = hunks;
            while let Ok(newer) = rx.try_recv() {
                hunks = newer;
            }
            let narrowed = match tool.narrow(&preview, &hunks) {
                Ok(Preview::FileChange(n)) => n.new_text,
                _ => continue,
            };
            check(Some(hunks), narrowed, None).await;
        }
    });
    Some(PreviewCheck {
        task,
        call_id: approval_id.to_string(),
        shared: outlet.shared().clone(),
    })
}
