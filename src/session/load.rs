//! The reading side: a journal file into its header and events, never panicking on bad bytes.
//!
//! What can go wrong, and what loading does about it:
//! - the process died mid-write: the last line lacks its newline and does not parse. It is
//!   ignored with a [`WarningKind::TornTail`] warning; every earlier line is intact.
//! - a line in the middle is damaged (disk trouble, a hand edit): it is skipped with a
//!   [`WarningKind::Malformed`] warning naming its line number; the lines around it still load.
//! - the header is damaged: the session cannot be trusted at all, which is an error.

use std::path::Path;

use serde::Deserialize;

use super::{FORMAT_VERSION, Header, SessionError};
use crate::protocol::Event;

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
    pub(crate) line: usize,
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
pub(crate) fn load_journal(path: &Path) -> Result<LoadedJournal, SessionError> {
    let mut loaded = load_journal_text(path)?;
    let dir = super::images::dir_for(path);
    super::images::restore(&dir, loaded.events.iter_mut().map(|s| &mut s.event));
    Ok(loaded)
}

/// Reads and parses a journal file; attached images stay descriptions (a listing needs no more).
/// The file is read a line at a time: a long session's journal (tens of MB) is never held whole
/// beside the events parsed from it.
pub(crate) fn load_journal_text(path: &Path) -> Result<LoadedJournal, SessionError> {
    let file = std::fs::File::open(path).map_err(|e| SessionError::io(path, e))?;
    parse_journal_from(path, std::io::BufReader::with_capacity(256 * 1024, file))
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
    mut reader: impl std::io::BufRead,
) -> Result<LoadedJournal, SessionError> {
    let bad_header = |message: String| SessionError::BadHeader {
        path: path.to_path_buf(),
        message,
    };
    let mut buf = Vec::new();
    let mut pos = next_line(path, &mut reader, &mut buf)?;
    let header_terminated = buf.last() == Some(&b'\n');
    let first = &buf[..buf.len() - usize::from(header_terminated)];
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
    let mut out = LoadedJournal {
        header,
        events: Vec::new(),
        warnings: Vec::new(),
        valid_len: pos as u64,
        needs_newline: !header_terminated,
    };
    let mut line_no = 1;
    loop {
        let consumed = next_line(path, &mut reader, &mut buf)?;
        if consumed == 0 {
            break;
        }
        line_no += 1;
        let terminated = buf.last() == Some(&b'\n');
        let line = &buf[..consumed - usize::from(terminated)];
        let parsed = if line.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            Some(serde_json::from_slice::<Stamped>(line))
        };
        match (parsed, terminated) {
            (None, _) => {
                pos += consumed;
                out.valid_len = pos as u64;
            }
            (Some(Ok(stamped)), _) => {
                out.events.push(stamped);
                pos += consumed;
                out.valid_len = pos as u64;
                out.needs_newline = !terminated;
            }
            (Some(Err(e)), true) => {
                out.warnings.push(LoadWarning {
                    line: line_no,
                    kind: WarningKind::Malformed,
                    message: format!("not a journal record ({e}); the line was skipped"),
                });
                pos += consumed;
                out.valid_len = pos as u64;
            }
            (Some(Err(_)), false) => {
                out.warnings.push(LoadWarning {
                    line: line_no,
                    kind: WarningKind::TornTail,
                    message: format!(
                        "the last line ({} bytes) was cut off, most likely by a crash while it \
                         was written; it was ignored and everything before it loaded",
                        line.len()
                    ),
                });
            }
        }
    }
    Ok(out)
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
