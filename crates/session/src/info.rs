//! What a listing shows of one session, and the cache of it kept beside each journal
//! (`<id>.meta.json`). Both the journal (which updates it as events are written) and the store
//! (which lists and validates it) use it, so it lives below both.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::load::LoadedJournal;
use super::{FORMAT_VERSION, Header, format_ms};
use pablo_protocol::{Event, PlanStatus};

/// Longest title kept from the first prompt, in characters.
const TITLE_CHARS: usize = 80;

/// One row of `pablo sessions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// The journal format of the session.
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
    /// What the session's model calls cost, in US dollars (0 when the prices are unknown). No
    /// serde default: a summary cached before this field existed fails to parse and is rebuilt
    /// from its journal rather than showing a cost of nothing.
    pub cost_usd: f64,
    /// The last "cost so far" the journal reported; a resumed session reports from zero again,
    /// so only increases over this mark are added.
    pub cost_mark: f64,
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
            cost_usd: 0.0,
            cost_mark: 0.0,
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
    pub(crate) fn describes(&self, meta: &std::fs::Metadata) -> bool {
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
            Event::ContextUsage {
                cost_usd: Some(cost),
                ..
            } => {
                let before = if *cost >= self.cost_mark {
                    self.cost_mark
                } else {
                    0.0
                };
                self.cost_usd += cost - before;
                self.cost_mark = *cost;
            }
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
    pablo_protocol::describe::first_line_clipped(line, TITLE_CHARS, false)
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
