//! Sessions leaving and entering the store whole: an export document (the journal's header and
//! events as one JSON value), an import that makes such a document a new session here, and a
//! fork that copies a session up to the end of a turn into a new one, the old one unchanged.
//!
//! An imported document is untrusted input: it is parsed into the journal's own types (anything
//! else is refused with `session_import_invalid`), gets a fresh id, and works in the workspace
//! the importer names, never in a path the document claims.

use serde::{Deserialize, Serialize};

use super::journal::Journal;
use super::load::{Stamped, load_journal_text};
use super::store::Store;
use super::{FORMAT_VERSION, ForkOrigin, Header, SessionError, format_ms, new_session_id, now_ms};
use pablo_protocol::Event;

/// What the `kind` field of an export says.
pub(crate) const EXPORT_KIND: &str = "pablo.session";

/// One event of an export, with its Unix-millisecond time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportedEvent {
    pub(crate) ts: u64,
    /// The event as the journal holds it.
    pub event: Event,
}

/// A whole session as `pablo export --format json` writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportDocument {
    /// Always [`EXPORT_KIND`].
    pub(crate) kind: String,
    /// The journal format of `header` and `events`.
    pub(crate) format: u32,
    /// The session's journal header.
    pub header: Header,
    /// Every event of the journal, in order.
    pub events: Vec<ExportedEvent>,
}

impl ExportDocument {
    /// Reads a document; `source_name` names it in the error.
    pub fn parse(source_name: &str, text: &str) -> Result<Self, SessionError> {
        let invalid = |message: String| SessionError::ImportInvalid {
            source_name: source_name.to_string(),
            message,
        };
        // As bytes, as journals are read: the events' reader is built for that input alone.
        let doc: ExportDocument =
            serde_json::from_slice(text.as_bytes()).map_err(|e| invalid(e.to_string()))?;
        if doc.kind != EXPORT_KIND {
            return Err(invalid(format!(
                "its kind is {:?}, not {EXPORT_KIND:?}",
                doc.kind
            )));
        }
        if doc.format > FORMAT_VERSION || doc.header.format > FORMAT_VERSION {
            return Err(invalid(format!(
                "it is of journal format {}, newer than this pablo reads ({FORMAT_VERSION})",
                doc.format.max(doc.header.format)
            )));
        }
        Ok(doc)
    }
}

impl Store {
    /// The session `id` as an export document (images stay descriptions: their bytes are in
    /// the store's image directory, not in the document).
    pub fn export(&self, id: &str) -> Result<ExportDocument, SessionError> {
        super::validate_id(id)?;
        let loaded = load_journal_text(&self.dir().join(format!("{id}.jsonl")))?;
        Ok(ExportDocument {
            kind: EXPORT_KIND.to_string(),
            format: FORMAT_VERSION,
            header: loaded.header,
            events: loaded
                .events
                .into_iter()
                .map(|Stamped { ts, event }| ExportedEvent { ts, event })
                .collect(),
        })
    }

    /// Makes `doc` a new session of this store that works in `workspace`; returns its id.
    pub fn import(&self, doc: ExportDocument, workspace: &str) -> Result<String, SessionError> {
        let mut header = doc.header;
        header.id = new_session_id();
        header.workspace = workspace.to_string();
        header.format = FORMAT_VERSION;
        let events: Vec<(u64, Event)> = doc.events.into_iter().map(|e| (e.ts, e.event)).collect();
        // The document's usage was spent where it was exported, not here.
        header.copied_events = events.len() as u64;
        self.write_copy(&header, &events)?;
        Ok(header.id)
    }

    /// A new session that begins with the session `id`'s events up to the end of turn `at`
    /// (every turn when `None`): the conversation and the checklist as they were then. Files are
    /// not touched and `id` is left as it was. Returns the new id and the turns it holds.
    pub fn fork(&self, id: &str, at: Option<u32>) -> Result<(String, u32), SessionError> {
        super::validate_id(id)?;
        let path = self.dir().join(format!("{id}.jsonl"));
        if !path.is_file() {
            return Err(SessionError::NotFound {
                id: id.to_string(),
                dir: self.dir().to_path_buf(),
            });
        }
        let loaded = load_journal_text(&path)?;
        let turns = loaded
            .events
            .iter()
            .filter(|s| matches!(s.event, Event::UserMessage { .. }))
            .count() as u32;
        let keep = at.unwrap_or(turns);
        if keep == 0 || keep > turns {
            return Err(SessionError::TurnOutOfRange {
                id: id.to_string(),
                turn: keep,
                turns,
            });
        }
        let mut events = Vec::new();
        let mut prompts = 0;
        for s in loaded.events {
            if matches!(s.event, Event::UserMessage { .. }) {
                prompts += 1;
                if prompts > keep {
                    break;
                }
            }
            events.push((s.ts, s.event));
        }
        let mut header = loaded.header;
        header.id = new_session_id();
        header.created = format_ms(now_ms());
        header.forked_from = Some(ForkOrigin {
            session: id.to_string(),
            turn: keep + 1,
        });
        header.copied_events = events.len() as u64;
        self.write_copy(&header, &events)?;
        Ok((header.id, keep))
    }

    /// Writes a whole journal for `header` (a new id) from `events`, durably.
    fn write_copy(&self, header: &Header, events: &[(u64, Event)]) -> Result<(), SessionError> {
        let mut journal: Journal = self.create(header)?;
        let path = journal.path().to_path_buf();
        let io = |e: std::io::Error| SessionError::io(&path, e);
        for (ts, event) in events {
            journal.record_at(*ts, event).map_err(io)?;
        }
        pablo_core::EventRecorder::sync(&mut journal).map_err(io)?;
        Ok(())
    }
}
