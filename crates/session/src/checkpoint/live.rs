//! The checkpoints of a running session: the agent opens a turn, brackets each shell command
//! with scans, hears from `fs.write`/`fs.edit` (as their [`ChangeRecorder`]) what each file held
//! before, and turns all of it into the `files_changed` record of each call; `/undo`, `/rewind`
//! and `/diff` plan and restore from it. Every method blocks (file I/O); the agent calls them off
//! its async threads.

use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use super::CheckpointError;
use super::history::History;
use super::objects::{Budget, ObjectStore};
use super::plan::make_plan;
use super::restore::apply_plan;
use super::scan::{ScanOptions, Scanner};
use pablo_protocol::{
    FileChange, FileState, RestoreChoice, RestorePlan, RestoreReport, RestoreScope, TurnCheckpoint,
};
use pablo_tools::ChangeRecorder;
use pablo_workspace::{FileBytes, Node, RelPath, Workspace, revision_of};

/// Default cap on what one checkpoint stores.
pub const DEFAULT_MAX_BYTES: u64 = 256 * 1024 * 1024;
/// Default cap on one file's stored bytes.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// How a session keeps checkpoints.
#[derive(Debug, Clone, Copy)]
pub struct CheckpointSettings {
    /// The most file content one turn's checkpoint stores.
    pub max_bytes: u64,
    /// Larger files are recorded by hash and size only.
    pub max_file_bytes: u64,
    /// Watch the workspace around shell commands (off when the session has no shell).
    pub scan_commands: bool,
}

impl Default for CheckpointSettings {
    fn default() -> Self {
        Self {
            max_bytes: DEFAULT_MAX_BYTES,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            scan_commands: true,
        }
    }
}

/// A change the write hook heard of; it counts once the write has landed.
struct Pending {
    change: FileChange,
    landed: bool,
}

#[derive(Default)]
struct Live {
    turn: u32,
    /// Changes reported by the write hook during the current call.
    pending: Vec<Pending>,
    last_plan: Option<RestorePlan>,
}

pub struct Checkpoints {
    ws: Arc<Workspace>,
    objects: ObjectStore,
    settings: CheckpointSettings,
    budget: Budget,
    scanner: Mutex<Scanner>,
    history: Mutex<History>,
    live: Mutex<Live>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves data that is still consistent enough to read (the
    // lock does not poison).
    m.lock()
}

impl Checkpoints {
    /// Checkpoints of a session in `ws`, bytes in `objects`, starting from `history` (empty for a
    /// new session, rebuilt from the journal for a resumed one).
    pub fn new(
        ws: Arc<Workspace>,
        objects: ObjectStore,
        settings: CheckpointSettings,
        history: History,
    ) -> Self {
        let scanner = Scanner::new(
            ws.clone(),
            objects.clone(),
            ScanOptions {
                max_file_bytes: settings.max_file_bytes,
            },
        );
        let turn = history.last_turn();
        Self {
            ws,
            objects,
            budget: Budget::new(settings.max_bytes),
            settings,
            scanner: Mutex::new(scanner),
            history: Mutex::new(history),
            live: Mutex::new(Live {
                turn,
                ..Live::default()
            }),
        }
    }

    /// A new turn with this prompt: its number, and its own size allowance.
    pub fn begin_turn(&self, text: &str) -> u32 {
        let turn = lock(&self.history).begin_turn(text);
        self.budget.reset(self.settings.max_bytes);
        let mut live = lock(&self.live);
        live.turn = turn;
        live.pending.clear();
        turn
    }

    /// The note about a restore that the next prompt carries to the model, once.
    pub fn take_note(&self) -> Option<String> {
        lock(&self.history).take_note()
    }

    /// Hooks' notes a resumed session found unsent, for its next prompt, once.
    pub fn take_hook_notes(&self) -> Vec<String> {
        lock(&self.history).take_hook_notes()
    }

    /// The first walk of the workspace (so the bytes of every file are stored before a command
    /// can change them). Cheap once done; the agent starts it when a turn begins.
    pub fn prepare(&self) {
        if !self.settings.scan_commands {
            return;
        }
        let mut scanner = lock(&self.scanner);
        if !scanner.is_ready() {
            scanner.refresh(&self.budget);
        }
    }

    /// Just before a shell command runs: the index catches up with whatever changed since (by
    /// the person, by pablo's own writes), so what the command changes is told apart.
    pub fn before_command(&self) {
        if self.settings.scan_commands {
            lock(&self.scanner).refresh(&self.budget);
        }
    }

    /// After a call: what it changed (the write hook's records, and with `scanned` what the
    /// scan after a command found), recorded into the turn. Returns the turn and the changes.
    pub fn after_call(&self, scanned: bool) -> (u32, Vec<FileChange>) {
        let (turn, pending) = {
            let mut live = lock(&self.live);
            (live.turn, std::mem::take(&mut live.pending))
        };
        // A write that failed after the hook heard of it changed nothing (its directories
        // count if they were made).
        let mut changes: Vec<FileChange> = pending
            .into_iter()
            .filter(|p| {
                p.landed
                    || (p.change.after == FileState::Directory
                        && self
                            .ws
                            .parse(&p.change.path)
                            .is_ok_and(|rel| matches!(self.ws.node(&rel), Ok(Node::Directory))))
            })
            .map(|p| p.change)
            .collect();
        if scanned && self.settings.scan_commands {
            changes.extend(lock(&self.scanner).refresh(&self.budget));
        }
        changes.retain(|c| !c.before.same(&c.after));
        lock(&self.history).record(turn, &changes);
        (turn, changes)
    }

    /// After the session's own hooks ran on `paths` (a formatter on `file_changed`): what each
    /// of them holds now that differs from what pablo last left it as, recorded into the
    /// running turn. The hooks' rewrite is then part of the turn: an undo takes it back with
    /// the change it followed, instead of finding the file "changed since" and leaving it.
    pub fn after_hooks(&self, paths: &[String]) -> (u32, Vec<FileChange>) {
        let turn = lock(&self.live).turn;
        let mut changes = Vec::new();
        for path in paths {
            let Ok(rel) = self.ws.parse(path) else {
                continue;
            };
            let after = match self.ws.node(&rel) {
                Ok(Node::File { .. }) => match self.ws.read_file(&rel) {
                    Ok(f) => FileState::File {
                        stored: self.keep(&f.revision, &f.bytes, false),
                        size: f.bytes.len() as u64,
                        hash: f.revision,
                        mode: f.mode,
                    },
                    Err(_) => continue,
                },
                Ok(node) => super::plan::state_of_node(&node, &self.objects),
                Err(_) => continue,
            };
            let before = lock(&self.history).known(path);
            if !before.same(&after) {
                changes.push(FileChange {
                    path: path.clone(),
                    before,
                    after,
                });
            }
        }
        lock(&self.history).record(turn, &changes);
        (turn, changes)
    }

    /// Notes about what the scanner could not do (no inotify, …), for a warning.
    pub fn scan_notes(&self) -> Vec<String> {
        std::mem::take(&mut lock(&self.scanner).notes)
    }

    /// The turns `/rewind` offers.
    pub fn turns(&self) -> Vec<TurnCheckpoint> {
        lock(&self.history).list()
    }

    /// A copy of the checkpoints so far.
    pub fn history(&self) -> History {
        lock(&self.history).clone()
    }

    /// Continues from another history (the conversation forked).
    pub fn replace_history(&self, history: History) {
        let turn = history.last_turn();
        *lock(&self.history) = history;
        let mut live = lock(&self.live);
        live.turn = turn;
        live.pending.clear();
        live.last_plan = None;
    }

    /// Works out what `scope` would restore; remembers it for [`Checkpoints::restore`].
    pub fn plan(&self, scope: &RestoreScope) -> Result<RestorePlan, CheckpointError> {
        let plan_id = crate::new_session_id();
        let plan = make_plan(
            &lock(&self.history),
            scope,
            &self.ws,
            &self.objects,
            plan_id,
        )?;
        lock(&self.live).last_plan = Some(plan.clone());
        Ok(plan)
    }

    /// Restores the chosen files of the plan last made (it must be `plan_id`), and records the
    /// report (so the next prompt tells the model).
    pub fn restore(
        &self,
        plan_id: &str,
        choices: &[RestoreChoice],
    ) -> Result<(RestorePlan, RestoreReport), CheckpointError> {
        let plan = {
            let mut live = lock(&self.live);
            match live.last_plan.take() {
                Some(p) if p.plan_id == plan_id => p,
                other => {
                    live.last_plan = other;
                    return Err(CheckpointError::PlanUnknown {
                        plan_id: plan_id.to_string(),
                    });
                }
            }
        };
        let created_dirs = {
            let history = lock(&self.history);
            let range = history.range(&plan.scope).unwrap_or_default();
            history
                .spans(&range, None)
                .into_iter()
                .filter(|s| {
                    s.target.is_absent()
                        && s.versions.iter().any(|v| v.after == FileState::Directory)
                })
                .map(|s| s.path)
                .collect::<Vec<_>>()
        };
        let report = apply_plan(&plan, choices, &self.ws, &self.objects, &created_dirs);
        lock(&self.history).restored(&report);
        Ok((plan, report))
    }

    /// Keeps `bytes` (a file's content) if the caps allow; whether they are kept.
    fn keep(&self, hash: &str, bytes: &[u8], durable: bool) -> bool {
        bytes.len() as u64 <= self.settings.max_file_bytes
            && self.objects.keep(hash, bytes, &self.budget, durable)
    }

    /// The workspace directories that do not exist yet on the way to `rel` (the ones creating
    /// it will create), outermost first.
    pub(crate) fn missing_dirs(&self, rel: &RelPath) -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = RelPath::root();
        for c in rel.parent().components() {
            cur = cur.join(c);
            if !out.is_empty() || matches!(self.ws.node(&cur), Ok(Node::Absent)) {
                out.push(cur.to_string());
            }
        }
        out
    }
}

impl ChangeRecorder for Checkpoints {
    fn will_create(&self, rel: &RelPath) {
        let dirs = self.missing_dirs(rel);
        let mut live = lock(&self.live);
        for d in dirs {
            live.pending.push(Pending {
                change: FileChange {
                    path: d,
                    before: FileState::Absent,
                    after: FileState::Directory,
                },
                landed: false,
            });
        }
    }

    fn before_write(&self, rel: &RelPath, previous: Option<&FileBytes>) -> Result<(), String> {
        let before = match previous {
            None => FileState::Absent,
            Some(p) => {
                let len = p.bytes.len() as u64;
                let stored = if self.objects.contains(&p.revision) {
                    true
                } else if len <= self.settings.max_file_bytes && self.budget.take(len) {
                    // Durable before the write: a crash right after the rename must still find
                    // it. A store that cannot be written stops the change: it could not be
                    // undone.
                    self.objects.put(&p.revision, &p.bytes, true).map_err(|e| {
                        format!(
                            "the checkpoint store {} cannot be written: {e}",
                            self.objects.dir().display()
                        )
                    })?;
                    true
                } else {
                    false
                };
                FileState::File {
                    hash: p.revision.clone(),
                    size: len,
                    mode: p.mode,
                    stored,
                }
            }
        };
        lock(&self.live).pending.push(Pending {
            change: FileChange {
                path: rel.to_string(),
                before,
                after: FileState::Absent,
            },
            landed: false,
        });
        Ok(())
    }

    fn after_write(&self, rel: &RelPath, bytes: &[u8]) {
        let hash = revision_of(bytes);
        let stored = self.keep(&hash, bytes, false);
        let mode = match self.ws.node(rel) {
            Ok(Node::File { mode, .. }) => mode,
            _ => 0o644,
        };
        let mut live = lock(&self.live);
        let path = rel.to_string();
        if let Some(p) = live
            .pending
            .iter_mut()
            .rev()
            .find(|p| p.change.path == path && !p.landed)
        {
            p.change.after = FileState::File {
                hash,
                size: bytes.len() as u64,
                mode,
                stored,
            };
            p.landed = true;
        }
    }
}
