//! The writing side: [`Journal`] is the agent's [`EventRecorder`]; a new session's is a
//! [`PendingJournal`], which creates the file at the session's first turn.
//!
//! Each event becomes one line written with a single `write` of the complete line on an
//! `O_APPEND` file (no user-space buffer), so a crash can tear at most the line being written. The
//! file is fsynced at turn boundaries (`sync`), where the listing summary beside it is refreshed
//! too. An exclusive `flock` keeps two pablo processes from appending to the same session.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::info::{SessionInfo, mtime_ns};
use super::load::{JournalReader, LoadedJournal, Stamped, load_journal};
use super::{ForkOrigin, Header, SessionError, format_ms, now_ms};
use pablo_core::EventRecorder;
use pablo_protocol::Event;

/// Whether an event is written to the journal: every one but those for the screen only
/// ([`Event::is_live_only`]).
pub(crate) fn is_journaled(event: &Event) -> bool {
    !event.is_live_only()
}

#[derive(Serialize)]
struct LineOut<'a> {
    ts: u64,
    event: &'a Event,
}

/// An open journal, appending.
#[derive(Debug)]
pub struct Journal {
    file: File,
    path: PathBuf,
    meta_path: PathBuf,
    info: SessionInfo,
}

impl Journal {
    /// Creates the journal file (it must not exist) and writes the header, durably.
    pub(crate) fn create(
        path: PathBuf,
        meta_path: PathBuf,
        header: &Header,
    ) -> Result<Self, SessionError> {
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        std::fs::create_dir_all(&dir).map_err(|e| SessionError::io(&dir, e))?;
        let file = match OpenOptions::new().append(true).create_new(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(SessionError::Exists {
                    path,
                    id: header.id.clone(),
                });
            }
            Err(e) => return Err(SessionError::io(&path, e)),
        };
        lock(&file, &path, &header.id)?;
        let mut line = serde_json::to_string(header).map_err(|e| SessionError::Io {
            path: path.clone(),
            message: format!("cannot encode the header: {e}"),
        })?;
        line.push('\n');
        let mut journal = Journal {
            file,
            path,
            meta_path,
            info: SessionInfo::from_header(header),
        };
        journal
            .write_line(line.as_bytes())
            .and_then(|()| journal.file.sync_all())
            .map_err(|e| SessionError::io(&journal.path, e))?;
        // The new directory entry is durable too, so a crash right after cannot lose the file.
        if let Ok(d) = File::open(&dir) {
            let _ = d.sync_all();
        }
        journal.write_meta();
        Ok(journal)
    }

    /// Opens an existing journal to continue it. The file is locked first and read under the
    /// lock, so no other writer can slip lines in between reading and appending; each event read
    /// (with its images' bytes) goes to `each` as it is read, and the journal returned holds none.
    /// A torn tail is cut off (new lines must not fuse with it; loading already ignored it) and a
    /// last line that lacks only its newline gets one.
    pub(crate) fn reopen(
        path: PathBuf,
        meta_path: PathBuf,
        mut each: impl FnMut(Stamped),
    ) -> Result<(Self, LoadedJournal), SessionError> {
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|e| SessionError::io(&path, e))?;
        let id = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        lock(&file, &path, &id)?;
        let images = super::images::dir_for(&path);
        let mut reader = JournalReader::open(&path)?;
        let mut info = SessionInfo::from_header(reader.header());
        while let Some(mut stamped) = reader.next_event()? {
            super::images::restore(&images, std::iter::once(&mut stamped.event));
            info.observe(stamped.ts, &stamped.event);
            each(stamped);
        }
        let loaded = reader.finish(Vec::new());
        let len = file
            .metadata()
            .map_err(|e| SessionError::io(&path, e))?
            .len();
        if len > loaded.valid_len {
            file.set_len(loaded.valid_len)
                .map_err(|e| SessionError::io(&path, e))?;
        }
        info.journal_bytes = loaded.valid_len;
        info.id = id;
        let mut journal = Journal {
            file,
            path,
            meta_path,
            info,
        };
        if loaded.needs_newline {
            journal
                .write_line(b"\n")
                .map_err(|e| SessionError::io(&journal.path, e))?;
        }
        journal
            .file
            .sync_all()
            .map_err(|e| SessionError::io(&journal.path, e))?;
        journal.write_meta();
        Ok((journal, loaded))
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The session's id.
    #[cfg(any(test, feature = "test-support"))]
    pub fn id(&self) -> &str {
        &self.info.id
    }

    fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        // One call for the whole line: regular files take it in one write(2).
        self.file.write_all(line)?;
        self.info.journal_bytes += line.len() as u64;
        Ok(())
    }

    /// Refreshes the summary beside the journal. It is a cache (listing rebuilds it from the
    /// journal when its recorded length disagrees), so failures are ignored.
    fn write_meta(&mut self) {
        if let Ok(m) = self.file.metadata() {
            self.info.journal_mtime_ns = mtime_ns(&m);
        }
        let Ok(bytes) = serde_json::to_vec(&self.info) else {
            return;
        };
        let tmp = self.meta_path.with_extension("json.tmp");
        if std::fs::write(&tmp, bytes).is_ok() && std::fs::rename(&tmp, &self.meta_path).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

fn lock(file: &File, path: &Path, id: &str) -> Result<(), SessionError> {
    use rustix::fs::{FlockOperation, flock};
    let deadline = std::time::Instant::now() + ORPHANED_LOCK_WAIT;
    loop {
        match flock(file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::WOULDBLOCK)
                if std::time::Instant::now() < deadline && lock_owner(file) != LockOwner::Alive =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(rustix::io::Errno::WOULDBLOCK) => {
                return Err(SessionError::Busy {
                    id: id.to_string(),
                    path: path.to_path_buf(),
                });
            }
            Err(e) => return Err(SessionError::io(path, e.into())),
        }
    }
}

/// How long a lock whose pablo is gone may take to be let go.
///
/// An `flock` belongs to the open file, not to the process that took it: a child that pablo had
/// just forked (and that had not yet closed pablo's descriptors or executed) shares the open
/// journal, so a pablo killed at that moment leaves its lock held until that child is scheduled
/// and goes, which under load takes milliseconds to a few hundred. The child may go between the
/// attempt that found the lock and the look at `/proc/locks`, which then lists none: the next
/// attempt takes it. A live pablo keeps its lock and is refused at once with `session_busy`.
const ORPHANED_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Who holds the `flock` on a journal, per `/proc/locks` (which names the process that took it).
#[derive(Debug, PartialEq, Eq)]
enum LockOwner {
    /// A process that took it is still running, or `/proc` cannot tell: the session is open.
    Alive,
    /// Every process that took it has ended: a child pablo forked still shares the open file.
    Gone,
    /// No lock is listed: it was let go after the attempt that found it, when the last process
    /// sharing the open file (such a child) ended.
    Released,
}

fn lock_owner(file: &File) -> LockOwner {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = file.metadata() else {
        return LockOwner::Alive;
    };
    let Ok(locks) = std::fs::read_to_string("/proc/locks") else {
        return LockOwner::Alive;
    };
    let (major, minor) = (libc::major(meta.dev()), libc::minor(meta.dev()));
    let wanted = format!("{major:02x}:{minor:02x}:{}", meta.ino());
    let owners: Vec<u32> = locks
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // `1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF`; blocked waiters start with `->`.
            let at = fields.iter().position(|f| *f == "FLOCK")?;
            (fields.get(at + 4) == Some(&wanted.as_str()))
                .then(|| fields.get(at + 3)?.parse().ok())
                .flatten()
        })
        .collect();
    if owners.is_empty() {
        LockOwner::Released
    } else if owners
        .iter()
        .all(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
    {
        LockOwner::Gone
    } else {
        LockOwner::Alive
    }
}

impl Journal {
    pub(super) fn record_at(&mut self, ts: u64, event: &Event) -> std::io::Result<()> {
        if !is_journaled(event) {
            return Ok(());
        }
        // The image bytes first: a line must never name an image that is not stored.
        super::images::store(&super::images::dir_for(&self.path), event)?;
        let mut line = serde_json::to_string(&LineOut { ts, event })?;
        line.push('\n');
        self.write_line(line.as_bytes())?;
        self.info.observe(ts, event);
        Ok(())
    }
}

impl EventRecorder for Journal {
    fn record(&mut self, event: &Event) -> std::io::Result<()> {
        self.record_at(now_ms(), event)
    }

    fn sync(&mut self) -> std::io::Result<()> {
        self.file.sync_data()?;
        self.write_meta();
        Ok(())
    }

    /// The new journal sits beside this one: its header names this session and the turn, its
    /// lines are this journal's up to that prompt (with their original times), then `carry`.
    /// From here on this journal appends to the new file; the old one is closed (and unlocked)
    /// as it was.
    fn fork(
        &mut self,
        new_id: &str,
        before_turn: u32,
        carry: &[Event],
    ) -> std::io::Result<Option<Vec<Event>>> {
        let to_io = |e: SessionError| std::io::Error::other(e.to_string());
        super::validate_id(new_id).map_err(to_io)?;
        self.sync()?;
        let loaded = load_journal(&self.path).map_err(to_io)?;
        let mut prefix = Vec::new();
        let mut prompts = 0;
        for s in loaded.events {
            if matches!(s.event, Event::UserMessage { .. }) {
                prompts += 1;
                if prompts >= before_turn {
                    break;
                }
            }
            prefix.push(s);
        }
        let dir = self
            .path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let mut header = loaded.header;
        header.id = new_id.to_string();
        header.created = format_ms(now_ms());
        header.forked_from = Some(ForkOrigin {
            session: self.info.id.clone(),
            turn: before_turn,
        });
        header.copied_events = prefix.len() as u64;
        let mut next = Journal::create(
            dir.join(format!("{new_id}.jsonl")),
            dir.join(format!("{new_id}.meta.json")),
            &header,
        )
        .map_err(to_io)?;
        for s in &prefix {
            next.record_at(s.ts, &s.event)?;
        }
        for e in carry {
            next.record(e)?;
        }
        next.file.sync_all()?;
        next.write_meta();
        *self = next;
        Ok(Some(
            prefix
                .into_iter()
                .map(|s| s.event)
                .chain(carry.iter().cloned())
                .collect(),
        ))
    }
}

/// A new session's journal, written from its first turn on: a TUI opened and closed without a
/// word leaves no session behind to list or resume. Events before the first `UserMessage` (the
/// start, launch warnings) are held and written, with their times, when it comes; the session's
/// files directory, made for the tools at start, is removed again if it stayed empty.
#[derive(Debug)]
pub struct PendingJournal {
    path: PathBuf,
    meta_path: PathBuf,
    header: Header,
    artifacts: Option<PathBuf>,
    held: Vec<(u64, Event)>,
    journal: Option<Journal>,
}

impl PendingJournal {
    pub(crate) fn new(
        path: PathBuf,
        meta_path: PathBuf,
        header: Header,
        artifacts: Option<PathBuf>,
    ) -> Result<Self, SessionError> {
        // A journal that could never be written is said now, not at the first turn.
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        std::fs::create_dir_all(&dir).map_err(|e| SessionError::io(&dir, e))?;
        if path.exists() {
            return Err(SessionError::Exists {
                path,
                id: header.id.clone(),
            });
        }
        Ok(Self {
            path,
            meta_path,
            header,
            artifacts,
            held: Vec::new(),
            journal: None,
        })
    }
}

impl EventRecorder for PendingJournal {
    fn record(&mut self, event: &Event) -> std::io::Result<()> {
        let ts = now_ms();
        if self.journal.is_none() {
            if !matches!(event, Event::UserMessage { .. }) {
                if is_journaled(event) {
                    self.held.push((ts, event.clone()));
                }
                return Ok(());
            }
            let journal = Journal::create(self.path.clone(), self.meta_path.clone(), &self.header)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            let journal = self.journal.insert(journal);
            for (at, held) in std::mem::take(&mut self.held) {
                journal.record_at(at, &held)?;
            }
        }
        match self.journal.as_mut() {
            Some(j) => j.record_at(ts, event),
            None => Ok(()),
        }
    }

    fn sync(&mut self) -> std::io::Result<()> {
        match self.journal.as_mut() {
            Some(j) => j.sync(),
            None => Ok(()),
        }
    }

    /// A rewind needs a turn to go back to, so the journal exists by then.
    fn fork(
        &mut self,
        new_id: &str,
        before_turn: u32,
        carry: &[Event],
    ) -> std::io::Result<Option<Vec<Event>>> {
        match self.journal.as_mut() {
            Some(j) => j.fork(new_id, before_turn, carry),
            None => Ok(None),
        }
    }
}

impl Drop for PendingJournal {
    fn drop(&mut self) {
        if self.journal.is_none()
            && let Some(dir) = &self.artifacts
        {
            // Only an empty directory goes: `remove_dir` refuses anything else.
            let _ = std::fs::remove_dir(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_nobody_locks_is_released_and_one_a_live_process_locks_is_busy() {
        use rustix::fs::{FlockOperation, flock};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        std::fs::write(&path, b"").unwrap();
        let ours = File::open(&path).unwrap();
        assert_eq!(lock_owner(&ours), LockOwner::Released);
        flock(&ours, FlockOperation::NonBlockingLockExclusive).unwrap();
        let other = File::open(&path).unwrap();
        assert_eq!(lock_owner(&other), LockOwner::Alive);
        let started = std::time::Instant::now();
        let refused = lock(&other, &path, "id");
        assert!(
            matches!(refused, Err(SessionError::Busy { .. })),
            "{refused:?}"
        );
        assert!(
            started.elapsed() < ORPHANED_LOCK_WAIT,
            "refused without waiting"
        );
        drop(ours);
        assert_eq!(lock_owner(&other), LockOwner::Released);
        assert!(lock(&other, &path, "id").is_ok());
    }
}
