//! The reading side: a journal file into its header and events, never panicking on bad bytes.
//!
//! What can go wrong, and what loading does about it:
//! - the process died mid-write: the last line lacks its newline and does not parse. It is
//!   ignored with a [`WarningKind::TornTail`] warning; every earlier line is intact.
//! - a line in the middle is damaged (disk trouble, a hand edit): it is skipped with a
//!   [`WarningKind::Malformed`] warning naming its line number; the lines around it still load.
//! - the header is damaged: the session cannot be trusted at all, which is an error.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{FORMAT_VERSION, Header, SessionError};
use pablo_protocol::Event;

/// One journaled event with its Unix-millisecond timestamp.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Stamped {
    pub(crate) ts: u64,
    pub(crate) event: Event,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarningKind {
    /// The last line was cut off (a crash while it was being written).
    TornTail,
    /// A complete line that is not a journal record.
    Malformed,
}

/// Something loading skipped. Displayed as `line N: …`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadWarning {
    /// 1-based line number in the journal file.
    pub line: usize,
    pub kind: WarningKind,
    pub(crate) message: String,
}

impl std::fmt::Display for LoadWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// A journal as read from disk.
#[derive(Debug, Clone)]
pub struct LoadedJournal {
    pub(crate) header: Header,
    pub(crate) events: Vec<Stamped>,
    pub(crate) warnings: Vec<LoadWarning>,
    /// Bytes worth keeping: everything up to the last complete line. Appending starts here.
    pub(crate) valid_len: u64,
    /// The last kept line parsed but lacks its newline; appending must add one first.
    pub(crate) needs_newline: bool,
}

/// Reads and parses a journal file, with the bytes of its attached images.
pub fn load_journal(path: &Path) -> Result<LoadedJournal, SessionError> {
    let dir = super::images::dir_for(path);
    let mut reader = JournalReader::open(path)?;
    let mut events = Vec::new();
    while let Some(mut stamped) = reader.next_event()? {
        super::images::restore(&dir, std::iter::once(&mut stamped.event));
        events.push(stamped);
    }
    Ok(reader.finish(events))
}

/// Reads and parses a journal file; attached images stay descriptions (a listing needs no more).
pub(crate) fn load_journal_text(path: &Path) -> Result<LoadedJournal, SessionError> {
    parse_journal_from(path, open_buffered(path)?)
}

fn open_buffered(path: &Path) -> Result<std::io::BufReader<std::fs::File>, SessionError> {
    let file = std::fs::File::open(path).map_err(|e| SessionError::io(path, e))?;
    Ok(std::io::BufReader::with_capacity(256 * 1024, file))
}

/// The next line of `reader` into `line` (emptied first), with its newline if it has one;
/// returns its length in bytes, 0 at the end.
fn next_line(
    path: &Path,
    reader: &mut impl std::io::BufRead,
    line: &mut Vec<u8>,
) -> Result<usize, SessionError> {
    line.clear();
    reader
        .read_until(b'\n', line)
        .map_err(|e| SessionError::io(path, e))
}

/// Parses a journal read from `reader`; `path` is used in messages.
fn parse_journal_from(
    path: &Path,
    reader: impl std::io::BufRead,
) -> Result<LoadedJournal, SessionError> {
    let mut reader = JournalReader::new(path, reader)?;
    let mut events = Vec::new();
    while let Some(stamped) = reader.next_event()? {
        events.push(stamped);
    }
    Ok(reader.finish(events))
}

/// A journal read an event at a time, a line at a time: the header first, then each event as
/// its line is reached. A long session's journal (tens of MB) is never held whole, and a reader
/// that needs no event after it has used it (a resume rebuilding its conversation) never holds
/// them all either.
pub(crate) struct JournalReader<R> {
    path: PathBuf,
    reader: R,
    /// The line being read (its buffer is kept from line to line).
    line: Vec<u8>,
    line_no: usize,
    /// Bytes read so far.
    pos: usize,
    /// Everything of the journal but its events, as read so far.
    loaded: LoadedJournal,
}

impl JournalReader<std::io::BufReader<std::fs::File>> {
    /// Opens the journal at `path` and reads its header.
    pub(crate) fn open(path: &Path) -> Result<Self, SessionError> {
        Self::new(path, open_buffered(path)?)
    }
}

impl<R: std::io::BufRead> JournalReader<R> {
    fn new(path: &Path, mut reader: R) -> Result<Self, SessionError> {
        let mut line = Vec::new();
        let header = read_header(path, &mut reader, &mut line)?;
        let pos = line.len();
        let header_terminated = line.last() == Some(&b'\n');
        Ok(Self {
            path: path.to_path_buf(),
            reader,
            line,
            line_no: 1,
            pos,
            loaded: LoadedJournal {
                header,
                events: Vec::new(),
                warnings: Vec::new(),
                valid_len: pos as u64,
                needs_newline: !header_terminated,
            },
        })
    }

    pub(crate) fn header(&self) -> &Header {
        &self.loaded.header
    }

    /// The next event, `None` at the end of the journal. Lines that hold none are skipped (a
    /// damaged one with a warning, a torn last one with another).
    pub(crate) fn next_event(&mut self) -> Result<Option<Stamped>, SessionError> {
        loop {
            let consumed = next_line(&self.path, &mut self.reader, &mut self.line)?;
            if consumed == 0 {
                return Ok(None);
            }
            self.line_no += 1;
            let terminated = self.line.last() == Some(&b'\n');
            let line = &self.line[..consumed - usize::from(terminated)];
            let out = &mut self.loaded;
            if line.iter().all(u8::is_ascii_whitespace) {
                self.pos += consumed;
                out.valid_len = self.pos as u64;
                continue;
            }
            match (serde_json::from_slice::<Stamped>(line), terminated) {
                (Ok(stamped), _) => {
                    self.pos += consumed;
                    out.valid_len = self.pos as u64;
                    out.needs_newline = !terminated;
                    return Ok(Some(stamped));
                }
                (Err(e), true) => {
                    out.warnings.push(LoadWarning {
                        line: self.line_no,
                        kind: WarningKind::Malformed,
                        message: format!("not a journal record ({e}); the line was skipped"),
                    });
                    self.pos += consumed;
                    out.valid_len = self.pos as u64;
                }
                (Err(_), false) => {
                    out.warnings.push(LoadWarning {
                        line: self.line_no,
                        kind: WarningKind::TornTail,
                        message: format!(
                            "the last line ({} bytes) was cut off, most likely by a crash while \
                             it was written; it was ignored and everything before it loaded",
                            line.len()
                        ),
                    });
                }
            }
        }
    }

    /// The journal as read, with `events` (those the caller kept, if any).
    pub(crate) fn finish(self, events: Vec<Stamped>) -> LoadedJournal {
        LoadedJournal {
            events,
            ..self.loaded
        }
    }
}

/// The header of the journal `path` alone (its first line): what opening a session needs to know
/// before the rest is read.
pub(crate) fn load_header(path: &Path) -> Result<Header, SessionError> {
    let file = std::fs::File::open(path).map_err(|e| SessionError::io(path, e))?;
    read_header(path, &mut std::io::BufReader::new(file), &mut Vec::new())
}

/// Reads the first line of `reader` into `line` and parses it as the header of a journal this
/// build can read.
fn read_header(
    path: &Path,
    reader: &mut impl std::io::BufRead,
    line: &mut Vec<u8>,
) -> Result<Header, SessionError> {
    let bad_header = |message: String| SessionError::BadHeader {
        path: path.to_path_buf(),
        message,
    };
    next_line(path, reader, line)?;
    let first = line.strip_suffix(b"\n").unwrap_or(line);
    if first.is_empty() {
        return Err(bad_header("the file is empty".into()));
    }
    let header = parse_header(first).map_err(bad_header)?;
    if header.format > FORMAT_VERSION {
        return Err(SessionError::UnsupportedFormat {
            path: path.to_path_buf(),
            found: header.format,
        });
    }
    Ok(header)
}

fn parse_header(line: &[u8]) -> Result<Header, String> {
    // The version is checked before the rest so a newer format is reported as such.
    #[derive(Deserialize)]
    struct Version {
        #[serde(rename = "type")]
        kind: String,
        format: u32,
    }
    let v: Version = serde_json::from_slice(line).map_err(|e| e.to_string())?;
    if v.kind != "header" {
        return Err(format!(
            "the first line is a {:?} record, not a header",
            v.kind
        ));
    }
    if v.format > FORMAT_VERSION {
        return Ok(Header {
            format: v.format,
            ..Header::new("", "", "", "")
        });
    }
    serde_json::from_slice(line).map_err(|e| e.to_string())
}
