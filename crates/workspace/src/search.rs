//! Literal, case-sensitive, recursive search over the workspace.
//!
//! Directories are walked with the `ignore` crate's parallel walker (so `.gitignore` and `.ignore`
//! are honoured and both cores work), but every file is opened through the workspace handle with
//! the same no-follow rules as `fs.read`: the walker only proposes names, and a name that became a
//! link, a FIFO or a credential file by the time it is opened is skipped, never read.

use parking_lot::Mutex;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use ignore::{WalkBuilder, WalkState};
use memchr::memmem::Finder;
use rustix::fs::{FileType, Mode, OFlags};
use serde::Serialize;

use super::{RelPath, Workspace, WorkspaceError};

/// Lines longer than this are cut around the match.
pub const MAX_LINE_BYTES: usize = 400;
/// Bytes kept on each side of the match when a line is cut.
const CUT_CONTEXT: usize = 150;

/// One search.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub query: String,
    pub path: RelPath,
    pub max_results: usize,
    pub include_ignored: bool,
    pub max_files: Option<usize>,
    pub max_bytes: Option<u64>,
}

/// One matching line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SearchMatch {
    pub path: String,
    /// 1-based.
    pub line_number: u64,
    /// 1-based byte column of the first match on the line.
    pub column: usize,
    /// The line without its terminator, cut around the match when long.
    pub line: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub line_truncated: bool,
}

/// Files passed over, by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Skipped {
    pub binary: u64,
    pub too_large: u64,
    /// Links, FIFOs, sockets, devices, credential names, unreadable files.
    pub refused: u64,
}

/// What a search found, and whether a cap cut it short.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SearchOutcome {
    pub matches: Vec<SearchMatch>,
    pub files_scanned: u64,
    pub bytes_scanned: u64,
    /// True when any cap was hit; `limits_hit` says which.
    pub truncated: bool,
    /// (Not read back: the words of a result do not name the limits.)
    #[serde(skip_deserializing)]
    pub limits_hit: Vec<&'static str>,
    pub skipped: Skipped,
}

struct Shared<'a> {
    ws: &'a Workspace,
    visible: &'a (dyn Fn(&str) -> bool + Sync),
    finder: Finder<'a>,
    req: &'a SearchRequest,
    matches: Mutex<Vec<SearchMatch>>,
    files: AtomicU64,
    bytes: AtomicU64,
    binary: AtomicU64,
    too_large: AtomicU64,
    refused: AtomicU64,
    hit_results: AtomicBool,
    hit_files: AtomicBool,
    hit_bytes: AtomicBool,
}

/// Runs a search. Refuses a start path that is a link, a special file or a credential file.
pub fn search(ws: &Workspace, req: &SearchRequest) -> Result<SearchOutcome, WorkspaceError> {
    search_visible(ws, req, &|_| true)
}

/// [`search`] of only the files `visible` accepts (by workspace-relative path); a directory it
/// refuses is not walked. Files left out count as `skipped.refused`.
pub fn search_visible(
    ws: &Workspace,
    req: &SearchRequest,
    visible: &(dyn Fn(&str) -> bool + Sync),
) -> Result<SearchOutcome, WorkspaceError> {
    let probe = ws.open_beneath(&req.path, OFlags::PATH, Mode::empty())?;
    let st = rustix::fs::fstat(&probe).map_err(|e| super::io_err(req.path.display(), "stat", e))?;
    let shared = Shared {
        ws,
        visible,
        finder: Finder::new(req.query.as_bytes()),
        req,
        matches: Mutex::new(Vec::new()),
        files: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        binary: AtomicU64::new(0),
        too_large: AtomicU64::new(0),
        refused: AtomicU64::new(0),
        hit_results: AtomicBool::new(false),
        hit_files: AtomicBool::new(false),
        hit_bytes: AtomicBool::new(false),
    };
    match FileType::from_raw_mode(st.st_mode) {
        FileType::Directory => walk(&shared),
        FileType::RegularFile => {
            ws.check_not_credential(&req.path)?;
            let mut buf = Vec::new();
            shared.search_file(&req.path, &mut buf);
        }
        _ => super::check_regular(&req.path, &st)?,
    }
    let mut matches = shared.matches.into_inner();
    sort_matches(&mut matches);
    if matches.len() > req.max_results {
        matches.truncate(req.max_results);
        shared.hit_results.store(true, Ordering::Relaxed);
    }
    let mut limits_hit = Vec::new();
    for (flag, name) in [
        (&shared.hit_results, "max_results"),
        (&shared.hit_files, "max_files"),
        (&shared.hit_bytes, "max_scan_bytes"),
    ] {
        if flag.load(Ordering::Relaxed) {
            limits_hit.push(name);
        }
    }
    Ok(SearchOutcome {
        matches,
        files_scanned: shared.files.load(Ordering::Relaxed),
        bytes_scanned: shared.bytes.load(Ordering::Relaxed),
        truncated: !limits_hit.is_empty(),
        limits_hit,
        skipped: Skipped {
            binary: shared.binary.load(Ordering::Relaxed),
            too_large: shared.too_large.load(Ordering::Relaxed),
            refused: shared.refused.load(Ordering::Relaxed),
        },
    })
}

/// By path, then line: the order results are documented in.
fn sort_matches(matches: &mut [SearchMatch]) {
    matches.sort_by(|a, b| a.path.cmp(&b.path).then(a.line_number.cmp(&b.line_number)));
}

fn walk(shared: &Shared<'_>) {
    let ws = shared.ws;
    let root = ws.root();
    let start = if shared.req.path.is_root() {
        root.to_path_buf()
    } else {
        root.join(shared.req.path.as_str())
    };
    let respect = !shared.req.include_ignored;
    let mut builder = WalkBuilder::new(&start);
    builder
        .hidden(false)
        .follow_links(false)
        .require_git(false)
        .ignore(respect)
        .git_ignore(respect)
        .git_global(respect)
        .git_exclude(respect)
        .parents(respect)
        // The repository's own database is never what the model is looking for.
        .filter_entry(|e| e.file_name() != ".git");
    builder.build_parallel().run(|| {
        let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            let Some(ft) = entry.file_type() else {
                return WalkState::Continue;
            };
            if ft.is_dir() {
                // A directory the roots do not let the tools read is not walked at all.
                return match relative(root, entry.path()) {
                    Some(rel) if !rel.is_root() && !(shared.visible)(rel.as_str()) => {
                        WalkState::Skip
                    }
                    _ => WalkState::Continue,
                };
            }
            if !ft.is_file() {
                // Links are never followed; FIFOs, sockets and devices are never opened.
                shared.refused.fetch_add(1, Ordering::Relaxed);
                return WalkState::Continue;
            }
            let Some(rel) = relative(root, entry.path()) else {
                shared.refused.fetch_add(1, Ordering::Relaxed);
                return WalkState::Continue;
            };
            shared.search_file(&rel, &mut buf)
        })
    });
}

fn relative(root: &Path, path: &Path) -> Option<RelPath> {
    let rel = path.strip_prefix(root).ok()?.to_str()?;
    RelPath::parse(rel).ok()
}

impl Shared<'_> {
    /// Only the file and byte caps end the walk early. `max_results` cannot: the walk is
    /// parallel, in no particular order, and the first N hits by path may be in the last file
    /// visited.
    fn stop(&self) -> bool {
        self.hit_files.load(Ordering::Relaxed) || self.hit_bytes.load(Ordering::Relaxed)
    }

    fn search_file(&self, rel: &RelPath, buf: &mut Vec<u8>) -> WalkState {
        if self.stop() {
            return WalkState::Quit;
        }
        if self.ws.refused_pattern(rel).is_some() || !(self.visible)(rel.as_str()) {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return WalkState::Continue;
        }
        let fd = match self.ws.open_beneath(
            rel,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(_) => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                return WalkState::Continue;
            }
        };
        let size = match rustix::fs::fstat(&fd) {
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile => {
                st.st_size as u64
            }
            _ => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                return WalkState::Continue;
            }
        };
        if size > self.ws.options().read_limit() {
            self.too_large.fetch_add(1, Ordering::Relaxed);
            return WalkState::Continue;
        }
        if let Some(max) = self.req.max_files
            && self.files.fetch_add(1, Ordering::Relaxed) >= max as u64
        {
            self.files.fetch_sub(1, Ordering::Relaxed);
            self.hit_files.store(true, Ordering::Relaxed);
            return WalkState::Quit;
        } else if self.req.max_files.is_none() {
            self.files.fetch_add(1, Ordering::Relaxed);
        }
        buf.clear();
        let mut file = std::fs::File::from(fd);
        // Read at most one byte past the size seen, so a file growing meanwhile is bounded.
        if (&mut file).take(size + 1).read_to_end(buf).is_err() {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return WalkState::Continue;
        }
        let total = self.bytes.fetch_add(buf.len() as u64, Ordering::Relaxed) + buf.len() as u64;
        if let Some(max) = self.req.max_bytes
            && total > max
        {
            self.hit_bytes.store(true, Ordering::Relaxed);
            return WalkState::Quit;
        }
        if memchr::memchr(0, buf).is_some() {
            self.binary.fetch_add(1, Ordering::Relaxed);
            return WalkState::Continue;
        }
        let found = self.scan(rel, buf);
        if found.is_empty() {
            return WalkState::Continue;
        }
        let mut all = self.matches.lock();
        all.extend(found);
        // Memory stays bounded: only the first `max_results` by path and line can be kept.
        if all.len() > self.req.max_results.saturating_mul(2).max(256) {
            sort_matches(&mut all);
            all.truncate(self.req.max_results);
            self.hit_results.store(true, Ordering::Relaxed);
        }
        drop(all);
        WalkState::Continue
    }

    /// Every line of `buf` containing the query, at most `max_results + 1` of them.
    fn scan(&self, rel: &RelPath, buf: &[u8]) -> Vec<SearchMatch> {
        let mut out = Vec::new();
        let mut at = 0;
        let mut counted_to = 0;
        let mut newlines = 0u64;
        while at <= buf.len() {
            let Some(i) = self.finder.find(&buf[at..]) else {
                break;
            };
            let pos = at + i;
            let line_start = memchr::memrchr(b'\n', &buf[..pos]).map_or(0, |p| p + 1);
            let line_end = memchr::memchr(b'\n', &buf[pos..]).map_or(buf.len(), |p| pos + p);
            newlines += memchr::memchr_iter(b'\n', &buf[counted_to..line_start]).count() as u64;
            counted_to = line_start;
            let (line, cut) = cut_line(buf, line_start, line_end, pos, self.req.query.len());
            out.push(SearchMatch {
                path: rel.to_string(),
                line_number: newlines + 1,
                column: pos - line_start + 1,
                line,
                line_truncated: cut,
            });
            if out.len() > self.req.max_results {
                break;
            }
            at = line_end + 1;
        }
        out
    }
}

fn is_continuation(b: u8) -> bool {
    b & 0b1100_0000 == 0b1000_0000
}

/// The line `[start, end)` without a trailing `\r`, cut to a window around the match at `pos` when
/// it is long. Cuts move to code point boundaries, so a cut never splits a character.
fn cut_line(buf: &[u8], start: usize, end: usize, pos: usize, qlen: usize) -> (String, bool) {
    let mut end = end;
    if end > start && buf[end - 1] == b'\r' {
        end -= 1;
    }
    if end - start <= MAX_LINE_BYTES {
        return (
            String::from_utf8_lossy(&buf[start..end]).into_owned(),
            false,
        );
    }
    let mut from = pos.saturating_sub(CUT_CONTEXT).max(start);
    while from > start && is_continuation(buf[from]) {
        from -= 1;
    }
    let mut to = (pos + qlen + CUT_CONTEXT).min(end);
    while to < end && is_continuation(buf[to]) {
        to += 1;
    }
    (String::from_utf8_lossy(&buf[from..to]).into_owned(), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lines_are_kept_whole_without_cr() {
        let buf = b"abc needle def\r\n";
        assert_eq!(
            cut_line(buf, 0, 15, 4, 6),
            ("abc needle def".to_string(), false)
        );
    }

    #[test]
    fn long_lines_are_cut_on_code_point_boundaries() {
        let mut line = "é".repeat(300);
        let pos = line.len();
        line.push_str("needle");
        line.push_str(&"ü".repeat(300));
        let b = line.as_bytes();
        let (cut, truncated) = cut_line(b, 0, b.len(), pos, 6);
        assert!(truncated);
        assert!(cut.contains("needle"));
        assert!(!cut.contains('\u{FFFD}'), "split a code point: {cut}");
        // A match position off a boundary by one byte still yields whole characters.
        let (cut, _) = cut_line(b, 0, b.len(), pos - 151, 6);
        assert!(!cut.contains('\u{FFFD}'));
    }
}
