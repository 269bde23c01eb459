//! The directory of sessions: create, find, list, load, resume.
//!
//! Listing must stay fast with hundreds of sessions, so each journal has a small summary beside it
//! (`<id>.meta.json`, rewritten at every turn boundary). The summary records the journal length it
//! describes; when the journal's length on disk differs (a crash after the last turn boundary, a
//! journal written by another process since), the journal is scanned instead and the summary
//! rewritten. The summary is only ever a cache of the journal.

use std::path::{Path, PathBuf};

use super::info::{SessionInfo, mtime_ns};
use super::journal::{Journal, PendingJournal};
use super::load::{load_header, load_journal, load_journal_text};
use super::replay::{Replaying, ResumeState, replay};
use super::{Header, SessionError, validate_id};
use pablo_protocol::Event;

/// The sessions found, most recently updated first, and what could not be read.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    pub sessions: Vec<SessionInfo>,
    /// One message per journal that could not be listed (`<path>: why`).
    pub warnings: Vec<String>,
}

/// A directory of session journals.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The journal of session `id`, which must exist: a bad id or a missing file is refused.
    fn existing_journal(&self, id: &str) -> Result<PathBuf, SessionError> {
        validate_id(id)?;
        let path = self.journal_path(id);
        if !path.is_file() {
            return Err(SessionError::NotFound {
                id: id.to_string(),
                dir: self.dir.clone(),
            });
        }
        Ok(path)
    }

    fn journal_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.jsonl"))
    }

    fn meta_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.meta.json"))
    }

    /// The directory beside the journal for a session's files (spilled shell output, background
    /// session logs); created on first use. Give it to the tools as `Host::state_dir`.
    #[cfg(any(test, feature = "test-support"))]
    pub fn artifacts_dir(&self, id: &str) -> Result<PathBuf, SessionError> {
        validate_id(id)?;
        let dir = self.dir.join(id);
        std::fs::create_dir_all(&dir).map_err(|e| SessionError::io(&dir, e))?;
        Ok(dir)
    }

    /// Starts a new journal for `header` (whose id must be new).
    pub fn create(&self, header: &Header) -> Result<Journal, SessionError> {
        validate_id(&header.id)?;
        Journal::create(
            self.journal_path(&header.id),
            self.meta_path(&header.id),
            header,
        )
    }

    /// A new journal for `header` that is written from the session's first turn on (see
    /// [`PendingJournal`]); `artifacts` is the session's files directory, removed when the
    /// session ends without a turn and the directory is still empty.
    pub fn create_pending(
        &self,
        header: &Header,
        artifacts: Option<PathBuf>,
    ) -> Result<PendingJournal, SessionError> {
        validate_id(&header.id)?;
        PendingJournal::new(
            self.journal_path(&header.id),
            self.meta_path(&header.id),
            header.clone(),
            artifacts,
        )
    }

    /// Finds the session named by a full id or a unique prefix of one.
    pub fn resolve(&self, id_or_prefix: &str) -> Result<String, SessionError> {
        validate_id(id_or_prefix)?;
        if self.journal_path(id_or_prefix).is_file() {
            return Ok(id_or_prefix.to_string());
        }
        let mut matches: Vec<String> = self
            .journal_ids()
            .into_iter()
            .filter(|id| id.starts_with(id_or_prefix))
            .collect();
        matches.sort();
        match matches.len() {
            0 => Err(SessionError::NotFound {
                id: id_or_prefix.to_string(),
                dir: self.dir.clone(),
            }),
            1 => Ok(matches.remove(0)),
            _ => Err(SessionError::Ambiguous {
                prefix: id_or_prefix.to_string(),
                matches,
            }),
        }
    }

    fn journal_ids(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let id = name.strip_suffix(".jsonl")?;
                validate_id(id).ok()?;
                Some(id.to_string())
            })
            .collect()
    }

    /// The workspace session `id` worked in, from its journal's first line alone: what opening
    /// the session needs before it reads the rest. Not from the summary: a session stopped
    /// mid-turn (a kill, a crash) leaves that stale, and [`Store::info`] would then read the whole
    /// journal, which the resume reads again right after.
    pub fn workspace_of(&self, id: &str) -> Result<String, SessionError> {
        let path = self.existing_journal(id)?;
        Ok(load_header(&path)?.workspace)
    }

    /// The summary of one session: from its summary file when that is current, else by scanning
    /// the journal (and refreshing the summary file).
    pub fn info(&self, id: &str) -> Result<SessionInfo, SessionError> {
        validate_id(id)?;
        let path = self.journal_path(id);
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(SessionError::NotFound {
                    id: id.to_string(),
                    dir: self.dir.clone(),
                });
            }
            Err(e) => return Err(SessionError::io(&path, e)),
        };
        let meta_path = self.meta_path(id);
        if let Ok(bytes) = std::fs::read(&meta_path)
            && let Ok(info) = serde_json::from_slice::<SessionInfo>(&bytes)
            && info.describes(&meta)
            && info.id == id
        {
            return Ok(info);
        }
        let loaded = load_journal_text(&path)?;
        let mut info = SessionInfo::from_loaded(&loaded, meta.len());
        info.journal_mtime_ns = mtime_ns(&meta);
        // Only a summary of what was read is worth keeping: a writer may have appended since.
        let unchanged = std::fs::metadata(&path).is_ok_and(|m| info.describes(&m));
        if unchanged && let Ok(bytes) = serde_json::to_vec(&info) {
            let tmp = meta_path.with_extension("json.tmp.list");
            if std::fs::write(&tmp, bytes).is_ok() && std::fs::rename(&tmp, &meta_path).is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
        }
        Ok(info)
    }

    /// Every session, most recently updated first. Journals that cannot be read are reported in
    /// `warnings`, never fatal.
    pub fn list(&self) -> Listing {
        let mut out = Listing::default();
        for id in self.journal_ids() {
            match self.info(&id) {
                Ok(info) => out.sessions.push(info),
                Err(e) => out.warnings.push(e.to_string()),
            }
        }
        out.sessions
            .sort_by(|a, b| b.updated_ms.cmp(&a.updated_ms).then(b.id.cmp(&a.id)));
        out
    }

    /// The most recently updated session that worked in `workspace` (compared canonically).
    pub fn last_for_workspace(&self, workspace: &Path) -> Option<SessionInfo> {
        let ws = workspace
            .canonicalize()
            .unwrap_or_else(|_| workspace.to_path_buf());
        let ws = ws.to_string_lossy();
        self.list().sessions.into_iter().find(|s| s.workspace == ws)
    }

    /// Reads a session without opening it for writing (listing details, the `/resume` preview).
    pub fn load(&self, id: &str) -> Result<ResumeState, SessionError> {
        let path = self.existing_journal(id)?;
        Ok(replay(load_journal(&path)?))
    }

    /// Opens a session to continue it: locks the journal (another pablo holding it is refused
    /// with `session_busy`), reads it under the lock, cuts a torn tail off, and returns the journal
    /// (pass it as `AgentSetup::recorder`, with the same session id) and the state to start from,
    /// its events in `transcript`.
    pub fn resume(&self, id: &str) -> Result<(Journal, ResumeState), SessionError> {
        let mut transcript = Vec::new();
        let (journal, mut state) = self.resume_with(id, &mut |event| transcript.push(event))?;
        state.transcript = transcript;
        Ok((journal, state))
    }

    /// [`Store::resume`], handing each journaled event to `each` as soon as it has been read and
    /// replayed (the state returned keeps none): a front-end can redraw a long session without
    /// its events waiting all at once beside the conversation they rebuild.
    pub fn resume_with(
        &self,
        id: &str,
        each: &mut dyn FnMut(Event),
    ) -> Result<(Journal, ResumeState), SessionError> {
        let path = self.existing_journal(id)?;
        let mut replaying = Replaying::default();
        let (journal, loaded) = Journal::reopen(path, self.meta_path(id), |s| {
            replaying.apply(&s.event);
            each(s.event);
        })?;
        Ok((journal, replaying.finish(loaded, Vec::new())))
    }
}
