//! The directory of sessions: create, find, list, load, resume.
//!
//! Listing must stay fast with hundreds of sessions, so each journal has a small summary beside it
//! (`<id>.meta.json`, rewritten at every turn boundary). The summary records the journal length it
//! describes; when the journal's length on disk differs (a crash after the last turn boundary, a
//! journal written by another process since), the journal is scanned instead and the summary
//! rewritten. The summary is only ever a cache of the journal.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::journal::Journal;
use super::load::{LoadedJournal, load_journal};
use super::replay::{ResumeState, replay};
use super::{FORMAT_VERSION, Header, SessionError, format_ms, validate_id};
use crate::protocol::{Event, PlanStatus};

/// Longest title kept from the first prompt, in characters.
const TITLE_CHARS: usize = 80;

/// One row of `pablo sessions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    pub format: u32,
    pub id: String,
    /// RFC 3339, UTC.
    pub created: String,
    /// Unix ms of the last journaled event.
    pub updated_ms: u64,
    pub workspace: String,
    pub model: String,
    pub provider: String,
    /// The first line of the first prompt.
    pub title: Option<String>,
    /// Checklist progress: completed items of the latest plan, and its length.
    pub plan_done: usize,
    pub plan_total: usize,
    /// Completed turns.
    pub turns: usize,
    /// Journaled events.
    pub events: u64,
    /// Length of the journal this summary describes.
    pub journal_bytes: u64,
    /// Modification time of the journal this summary describes (ns since the epoch), so an edit
    /// that keeps the length is noticed too.
    #[serde(default)]
    pub journal_mtime_ns: u64,
}

impl SessionInfo {
    pub(crate) fn from_header(h: &Header) -> Self {
        Self {
            format: h.format,
            id: h.id.clone(),
            created: h.created.clone(),
            updated_ms: parse_rfc3339_ms(&h.created),
            workspace: h.workspace.clone(),
            model: h.model.clone(),
            provider: h.provider.clone(),
            title: None,
            plan_done: 0,
            plan_total: 0,
            turns: 0,
            events: 0,
            journal_bytes: 0,
            journal_mtime_ns: 0,
        }
    }

    /// The summary of a loaded journal whose file is `file_len` bytes long.
    pub(crate) fn from_loaded(j: &LoadedJournal, file_len: u64) -> Self {
        let mut info = Self::from_header(&j.header);
        for s in &j.events {
            info.observe(s.ts, &s.event);
        }
        info.journal_bytes = file_len;
        info
    }

    /// Whether this summary describes the journal whose metadata is `meta`.
    fn describes(&self, meta: &std::fs::Metadata) -> bool {
        self.format == FORMAT_VERSION
            && self.journal_bytes == meta.len()
            && self.journal_mtime_ns == mtime_ns(meta)
    }

    /// Folds one journaled event into the summary.
    pub(crate) fn observe(&mut self, ts: u64, event: &Event) {
        self.events += 1;
        self.updated_ms = self.updated_ms.max(ts);
        match event {
            Event::UserMessage { text } if self.title.is_none() => {
                self.title = Some(title_of(text));
            }
            Event::PlanUpdate { items, .. } => {
                self.plan_total = items.len();
                self.plan_done = items
                    .iter()
                    .filter(|i| i.status == PlanStatus::Completed)
                    .count();
            }
            Event::TurnCompleted { .. } => self.turns += 1,
            _ => {}
        }
    }

    /// `3/7`, or `None` when the session never had a checklist.
    pub fn progress(&self) -> Option<String> {
        (self.plan_total > 0).then(|| format!("{}/{}", self.plan_done, self.plan_total))
    }

    /// Whether the session worked in `dir` (compared canonically). A front-end resuming a session
    /// elsewhere asks (TUI) or says (headless) which workspace it continues in.
    pub fn is_for_workspace(&self, dir: &Path) -> bool {
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        dir.to_string_lossy() == self.workspace
    }

    /// The last update as RFC 3339.
    pub fn updated(&self) -> String {
        format_ms(self.updated_ms)
    }
}

fn title_of(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let mut out: String = line.chars().take(TITLE_CHARS).collect();
    if line.chars().count() > TITLE_CHARS {
        out.push('…');
    }
    out
}

/// A file's modification time in ns since the epoch (0 when unknown).
pub(crate) fn mtime_ns(meta: &std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Unix ms of an RFC 3339 time; 0 when it does not parse.
pub(crate) fn parse_rfc3339_ms(s: &str) -> u64 {
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .map(|t| (t.unix_timestamp_nanos() / 1_000_000).max(0) as u64)
        .unwrap_or(0)
}

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

    fn journal_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.jsonl"))
    }

    fn meta_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.meta.json"))
    }

    /// The directory beside the journal for a session's files (spilled shell output, background
    /// session logs); created on first use. Give it to the tools as `Host::state_dir`.
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
        let loaded = load_journal(&path)?;
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
        validate_id(id)?;
        let path = self.journal_path(id);
        if !path.is_file() {
            return Err(SessionError::NotFound {
                id: id.to_string(),
                dir: self.dir.clone(),
            });
        }
        Ok(replay(load_journal(&path)?))
    }

    /// Opens a session to continue it: locks the journal (another pablo holding it is refused
    /// with `session_busy`), reads it under the lock, cuts a torn tail off, and returns the journal
    /// (pass it as `AgentSetup::recorder`, with the same session id) and the state to start from.
    pub fn resume(&self, id: &str) -> Result<(Journal, ResumeState), SessionError> {
        validate_id(id)?;
        let path = self.journal_path(id);
        if !path.is_file() {
            return Err(SessionError::NotFound {
                id: id.to_string(),
                dir: self.dir.clone(),
            });
        }
        let (journal, loaded) = Journal::reopen(path, self.meta_path(id))?;
        Ok((journal, replay(loaded)))
    }
}
