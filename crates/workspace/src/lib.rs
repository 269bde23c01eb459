//! The workspace handle: no-follow, directory-relative file access, revisions, atomic install.
//!
//! The workspace directory is opened once, when a session is admitted, and every later file
//! operation is an `*at` call relative to that descriptor. Paths are never checked and then opened
//! by name (another process could swap a directory for a symlink in between); instead the open
//! itself refuses to follow links: `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS` where the kernel has it, otherwise a walk one component at a time with
//! `O_NOFOLLOW | O_DIRECTORY`.
//!
//! Writes never modify a file in place: the new bytes go to a private temporary file next to the
//! target, which is renamed over it after the revision and the cancellation token are checked one
//! last time. Either the old bytes or the new bytes are there, never a mixture.

pub mod credentials;
pub mod diff;
mod install;
pub mod node;
pub mod path;
pub mod search;

use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub use node::{NewNode, Node};
use pablo_core::Coded;
use pablo_core::ErrorCode;
pub use path::{PathRule, RelPath};

pub use credentials::CredentialNames;
pub use install::is_temp_name;
use install::{TempGuard, create_temp, remove_stale_temps, temp_name_for};

/// Suffix of the private temporary files written next to a target during a commit.
pub const TEMP_SUFFIX: &str = ".pablo-tmp";

/// Why a file operation was refused or failed. Every variant names the path.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("path {path:?} refused: {rule}")]
    PathRefused { path: String, rule: PathRule },
    #[error("{path}: refused: the name looks like a credential file (matches `{pattern}`)")]
    FileRefused { path: String, pattern: String },
    #[error("{path}: no such file or directory")]
    NotFound { path: String },
    #[error("{path}: is a directory, not a file")]
    IsDirectory { path: String },
    #[error("{path}: a component of the path is not a directory")]
    NotADirectory { path: String },
    #[error("{path}: refused: it is a {kind}, not a regular file; special files are never read")]
    SpecialFile { path: String, kind: &'static str },
    #[error("{path}: binary content (a NUL byte at offset {offset}); only text files are read")]
    BinaryContent { path: String, offset: usize },
    #[error("{path}: {size} bytes, over the limit of {limit} bytes")]
    FileTooLarge { path: String, size: u64, limit: u64 },
    #[error("{path}: not valid UTF-8 (invalid byte at offset {offset})")]
    NotUtf8 { path: String, offset: usize },
    #[error("{path} already exists; to replace it, pass its current revision as expected_revision")]
    AlreadyExists { path: String, current: String },
    #[error("{path}: offset {offset} is {why}")]
    InvalidOffset {
        path: String,
        offset: u64,
        why: &'static str,
    },
    #[error("{path}: old_text was not found; read the file again and copy the text exactly")]
    NoMatch { path: String },
    #[error(
        "{path}: old_text occurs {count} times; include more surrounding lines so that it \
         matches exactly once"
    )]
    AmbiguousMatch { path: String, count: usize },
    #[error("{path}: {detail}")]
    RevisionMismatch {
        path: String,
        detail: String,
        current: Option<String>,
    },
    #[error("{path}: not written: the call was cancelled before the file was replaced")]
    Cancelled { path: String },
    #[error(
        "{path}: not written: the checkpoint that makes this change undoable could not be kept \
         ({message})"
    )]
    Checkpoint { path: String, message: String },
    #[error("{path}: cannot {op}: {source}")]
    Io {
        path: String,
        op: &'static str,
        source: io::Error,
    },
}

impl Coded for WorkspaceError {
    fn code(&self) -> ErrorCode {
        match self {
            WorkspaceError::PathRefused { .. } => ErrorCode::PathRefused,
            WorkspaceError::FileRefused { .. } => ErrorCode::FileRefused,
            WorkspaceError::NotFound { .. } => ErrorCode::NotFound,
            WorkspaceError::IsDirectory { .. } => ErrorCode::IsADirectory,
            WorkspaceError::NotADirectory { .. } => ErrorCode::NotADirectory,
            WorkspaceError::SpecialFile { .. } => ErrorCode::SpecialFile,
            WorkspaceError::BinaryContent { .. } => ErrorCode::BinaryContent,
            WorkspaceError::FileTooLarge { .. } => ErrorCode::FileTooLarge,
            WorkspaceError::NotUtf8 { .. } => ErrorCode::NotUtf8,
            WorkspaceError::AlreadyExists { .. } => ErrorCode::AlreadyExists,
            WorkspaceError::InvalidOffset { .. } => ErrorCode::InvalidOffset,
            WorkspaceError::NoMatch { .. } => ErrorCode::NoMatch,
            WorkspaceError::AmbiguousMatch { .. } => ErrorCode::AmbiguousMatch,
            WorkspaceError::RevisionMismatch { .. } => ErrorCode::RevisionMismatch,
            WorkspaceError::Cancelled { .. } => ErrorCode::Cancelled,
            WorkspaceError::Checkpoint { .. } => ErrorCode::CheckpointFailed,
            WorkspaceError::Io { .. } => ErrorCode::IoError,
        }
    }

    fn data(&self) -> Option<Value> {
        match self {
            WorkspaceError::AlreadyExists { current, .. } => {
                Some(json!({"current_revision": current}))
            }
            WorkspaceError::RevisionMismatch { current, .. } => {
                Some(json!({"current_revision": current}))
            }
            WorkspaceError::AmbiguousMatch { count, .. } => Some(json!({"count": count})),
            _ => None,
        }
    }
}

impl WorkspaceError {
    pub fn refused(path: &str, rule: PathRule) -> Self {
        WorkspaceError::PathRefused {
            path: path.to_string(),
            rule,
        }
    }
}

/// How paths below the root are resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolver {
    /// One `openat2` call with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`.
    Openat2,
    /// One `openat` per component with `O_NOFOLLOW` (kernels before 5.6, or seccomp filters
    /// that refuse `openat2`).
    Walk,
}

/// The largest file read whole (or searched) when config sets no `max_file_bytes`. Every read
/// holds the file in memory (its revision is the hash of all of it), so an unbounded one lets a
/// 2 GB file, or a sparse file of any size that costs no disk, take gigabytes of memory; the size
/// is checked before a byte is read.
pub const DEFAULT_MAX_READ_BYTES: u64 = 64 * 1024 * 1024;

/// How a workspace is opened.
#[derive(Debug, Clone, Default)]
pub struct WorkspaceOptions {
    /// Extra credential globs, added to [`CREDENTIAL_NAMES`].
    pub refused_names: Vec<String>,
    /// Largest file read or searched, in bytes (`None`: [`DEFAULT_MAX_READ_BYTES`]).
    pub max_file_bytes: Option<u64>,
    /// Search caps (`None`: unlimited).
    pub max_search_files: Option<usize>,
    pub max_search_bytes: Option<u64>,
    /// Force a resolver (tests run the fallback on kernels that have `openat2`).
    pub resolver: Option<Resolver>,
}

impl WorkspaceOptions {
    /// The largest file read or searched: the configured size, or [`DEFAULT_MAX_READ_BYTES`].
    pub fn read_limit(&self) -> u64 {
        self.max_file_bytes.unwrap_or(DEFAULT_MAX_READ_BYTES)
    }
}

/// The kind of a directory entry, as `fs.list` reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    #[default]
    File,
    Dir,
    Symlink,
    Other,
}

/// One entry of a listing. (Read back leniently, as every tool result is for its words.)
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ListEntry {
    /// Workspace-relative path.
    pub path: String,
    pub kind: EntryKind,
    /// Size in bytes (regular files only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// A listing, cut at `max_entries`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Listing {
    pub path: String,
    pub entries: Vec<ListEntry>,
    pub truncated: bool,
}

/// A whole regular file read through the handle.
#[derive(Debug, Clone)]
pub struct FileBytes {
    pub bytes: Vec<u8>,
    /// SHA-256 hex of exactly `bytes`.
    pub revision: String,
    /// Permission bits (`st_mode & 0o7777`).
    pub mode: u32,
}

/// One page of `fs.read`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Page {
    pub path: String,
    /// (Read back from `content` too, the name a page's text had in older journals' results.)
    #[serde(alias = "content")]
    pub text: String,
    pub offset: u64,
    /// Where the next page starts; `None` at the end of the file.
    pub next_offset: Option<u64>,
    pub total_bytes: u64,
    pub revision: String,
}

/// What a commit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    pub revision: String,
    pub created: bool,
    /// `false` when the directory could not be fsynced after the rename (the file is in place,
    /// but a power cut could still lose the rename).
    pub durable: bool,
}

/// SHA-256 hex of `bytes`: the revision of a file with these bytes.
pub fn revision_of(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The opened workspace. Cheap to share behind an `Arc`; every method is `&self`.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    dir: OwnedFd,
    resolver: Resolver,
    refused: CredentialNames,
    options: WorkspaceOptions,
}

pub fn io_err(path: &str, op: &'static str, e: impl Into<io::Error>) -> WorkspaceError {
    WorkspaceError::Io {
        path: path.to_string(),
        op,
        source: e.into(),
    }
}

fn kind_name(t: FileType) -> &'static str {
    match t {
        FileType::Fifo => "FIFO",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        FileType::Symlink => "symbolic link",
        FileType::Directory => "directory",
        _ => "special file",
    }
}

impl Workspace {
    /// Opens `root` with the defaults.
    pub fn open(root: &Path) -> Result<Self, WorkspaceError> {
        Self::open_with(root, WorkspaceOptions::default())
    }

    pub fn open_with(root: &Path, options: WorkspaceOptions) -> Result<Self, WorkspaceError> {
        let shown = root.display().to_string();
        // The root itself is the person's choice and may be reached through links; everything
        // below it is not.
        let canonical = std::fs::canonicalize(root).map_err(|e| io_err(&shown, "open", e))?;
        let dir = rustix::fs::open(
            &canonical,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io_err(&shown, "open the workspace", e))?;
        let resolver = match options.resolver {
            Some(r) => r,
            None => probe_openat2(&dir),
        };
        let refused = CredentialNames::new(&options.refused_names).map_err(|(pat, e)| {
            io_err(
                &pat,
                "use as a refused-name glob",
                io::Error::new(io::ErrorKind::InvalidInput, e),
            )
        })?;
        Ok(Self {
            root: canonical,
            dir,
            resolver,
            refused,
            options,
        })
    }

    /// The canonical root (for display and for the search walker's starting point).
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn options(&self) -> &WorkspaceOptions {
        &self.options
    }

    /// Parses a path the model wrote.
    pub fn parse(&self, raw: &str) -> Result<RelPath, WorkspaceError> {
        RelPath::parse(raw).map_err(|rule| WorkspaceError::refused(raw, rule))
    }

    /// Parses a path that must name a file (not the root).
    pub fn parse_file(&self, raw: &str) -> Result<RelPath, WorkspaceError> {
        RelPath::parse_file(raw).map_err(|rule| WorkspaceError::refused(raw, rule))
    }

    /// The credential glob a path matches, if any.
    pub fn refused_pattern(&self, rel: &RelPath) -> Option<&str> {
        self.refused.matching(rel.as_str())
    }

    /// The credential names of this workspace (built-in plus `refused_names`).
    pub fn credential_names(&self) -> &CredentialNames {
        &self.refused
    }

    /// Refuses credential-like names with `file_refused`.
    pub fn check_not_credential(&self, rel: &RelPath) -> Result<(), WorkspaceError> {
        match self.refused_pattern(rel) {
            Some(p) => Err(WorkspaceError::FileRefused {
                path: rel.to_string(),
                pattern: p.to_string(),
            }),
            None => Ok(()),
        }
    }

    /// Opens `rel` below the root without following any link. `flags` get `O_NOFOLLOW` and
    /// `O_CLOEXEC` added.
    pub fn open_beneath(
        &self,
        rel: &RelPath,
        flags: OFlags,
        mode: Mode,
    ) -> Result<OwnedFd, WorkspaceError> {
        let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        if rel.is_root() {
            return rustix::fs::openat(&self.dir, c".", flags, mode)
                .map_err(|e| self.map_open_error(rel, e));
        }
        match self.resolver {
            Resolver::Openat2 => rustix::fs::openat2(
                &self.dir,
                rel.as_str(),
                flags,
                mode,
                ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
            )
            .map_err(|e| self.map_open_error(rel, e)),
            Resolver::Walk => {
                let parent = self.walk_dirs(rel, rel.parent().components(), false)?;
                let name = rel.file_name().unwrap_or(".");
                let base = parent
                    .as_ref()
                    .map(|f| f.as_fd())
                    .unwrap_or(self.dir.as_fd());
                rustix::fs::openat(base, name, flags, mode).map_err(|e| self.map_open_error(rel, e))
            }
        }
    }

    /// Opens each directory component in turn with `O_NOFOLLOW | O_DIRECTORY`, creating missing
    /// ones when `create` is set. `None` means the root.
    fn walk_dirs<'a>(
        &self,
        whole: &RelPath,
        components: impl Iterator<Item = &'a str>,
        create: bool,
    ) -> Result<Option<OwnedFd>, WorkspaceError> {
        let mut cur: Option<OwnedFd> = None;
        for c in components {
            let base = cur.as_ref().map(|f| f.as_fd()).unwrap_or(self.dir.as_fd());
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let opened = match rustix::fs::openat(base, c, flags, Mode::empty()) {
                Err(Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(base, c, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(io_err(whole.display(), "create a directory", e)),
                    }
                    rustix::fs::openat(base, c, flags, Mode::empty())
                }
                other => other,
            };
            match opened {
                Ok(fd) => cur = Some(fd),
                Err(e) => {
                    // ENOTDIR on a symlink component is the no-follow refusal; say so.
                    if e == Errno::NOTDIR
                        && rustix::fs::statat(base, c, AtFlags::SYMLINK_NOFOLLOW)
                            .map(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink)
                            .unwrap_or(false)
                    {
                        return Err(WorkspaceError::refused(whole.display(), PathRule::Symlink));
                    }
                    return Err(self.map_open_error(whole, e));
                }
            }
        }
        Ok(cur)
    }

    fn map_open_error(&self, rel: &RelPath, e: Errno) -> WorkspaceError {
        let path = rel.display().to_string();
        match e {
            Errno::LOOP => WorkspaceError::refused(&path, PathRule::Symlink),
            Errno::XDEV => WorkspaceError::refused(&path, PathRule::Outside),
            Errno::NAMETOOLONG => WorkspaceError::refused(&path, PathRule::NameTooLong),
            Errno::NOENT => WorkspaceError::NotFound { path },
            Errno::NOTDIR => {
                // In the openat2 mode a symlink found where a directory is needed also lands
                // here when O_DIRECTORY was asked for; find out which for the message.
                if self.has_symlink_component(rel) {
                    WorkspaceError::refused(&path, PathRule::Symlink)
                } else {
                    WorkspaceError::NotADirectory { path }
                }
            }
            Errno::ISDIR => WorkspaceError::IsDirectory { path },
            other => io_err(&path, "open", other),
        }
    }

    /// Only for error messages: whether some component of `rel` is currently a symlink.
    fn has_symlink_component(&self, rel: &RelPath) -> bool {
        let mut cur = RelPath::root();
        for c in rel.components() {
            cur = cur.join(c);
            if let Ok(st) = rustix::fs::statat(&self.dir, cur.as_str(), AtFlags::SYMLINK_NOFOLLOW)
                && FileType::from_raw_mode(st.st_mode) == FileType::Symlink
            {
                return true;
            }
        }
        false
    }

    /// Opens the directory that holds `rel` (creating missing directories when `create`).
    fn open_parent(&self, rel: &RelPath, create: bool) -> Result<OwnedFd, WorkspaceError> {
        let parent = rel.parent();
        if !create {
            return self.open_beneath(&parent, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty());
        }
        match self.walk_dirs(rel, parent.components(), true)? {
            Some(fd) => Ok(fd),
            None => rustix::fs::openat(
                &self.dir,
                c".",
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| io_err(".", "open", e)),
        }
    }

    /// Reads a whole regular file. Refuses credential names, links, directories and special
    /// files (the last without ever opening them for reading).
    pub fn read_file(&self, rel: &RelPath) -> Result<FileBytes, WorkspaceError> {
        let st = self.probe_regular(rel)?;
        // Step two: open for reading. O_NONBLOCK means that even if the name was swapped for a
        // FIFO in between, the open and the read cannot hang; the inode must be the one probed.
        let fd = self.open_beneath(
            rel,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
            Mode::empty(),
        )?;
        read_verified(rel, fd, &st, self.options.read_limit())
    }

    /// [`Workspace::read_file`] under a tool's own size limit as well (`csv.analyze` reads at
    /// most 10 MiB): the smaller of the two limits applies, checked before a byte is read.
    pub fn read_file_capped(&self, rel: &RelPath, limit: u64) -> Result<FileBytes, WorkspaceError> {
        let st = self.probe_regular(rel)?;
        let limit = self.options.read_limit().min(limit);
        if st.st_size as u64 > limit {
            return Err(WorkspaceError::FileTooLarge {
                path: rel.to_string(),
                size: st.st_size as u64,
                limit,
            });
        }
        let fd = self.open_beneath(
            rel,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
            Mode::empty(),
        )?;
        read_verified(rel, fd, &st, limit)
    }

    /// Reads a whole text file: refused when it holds a NUL byte or is not UTF-8.
    pub fn read_text(&self, rel: &RelPath) -> Result<(String, FileBytes), WorkspaceError> {
        let file = self.read_file(rel)?;
        let text = text_of(rel, &file.bytes)?.to_string();
        Ok((text, file))
    }

    /// Admits `rel` as a regular file beneath the root, without reading it: the same path rules,
    /// link refusal, special-file refusal and size limit as [`Workspace::read_file`]. Used when
    /// the bytes come from somewhere else (an editor's buffer) but the name must still be one
    /// pablo would read itself.
    pub fn admit_file(&self, rel: &RelPath) -> Result<(), WorkspaceError> {
        self.probe_regular(rel).map(|_| ())
    }

    /// Step one of every read: the name's rules, then an O_PATH descriptor, which can be
    /// inspected but not read, so a FIFO, device or socket stops here without being opened.
    fn probe_regular(&self, rel: &RelPath) -> Result<rustix::fs::Stat, WorkspaceError> {
        if rel.is_root() {
            return Err(WorkspaceError::IsDirectory {
                path: ".".to_string(),
            });
        }
        self.check_not_credential(rel)?;
        let probe = self.open_beneath(rel, OFlags::PATH, Mode::empty())?;
        let st = rustix::fs::fstat(&probe).map_err(|e| io_err(rel.display(), "stat", e))?;
        check_regular(rel, &st)?;
        self.check_size(rel, st.st_size as u64)?;
        Ok(st)
    }

    /// Checks text that came from outside the handle (an editor's buffer) against the limits a
    /// file read applies: the size limit and the NUL-byte rule.
    pub fn admit_text(&self, rel: &RelPath, text: &str) -> Result<(), WorkspaceError> {
        self.check_size(rel, text.len() as u64)?;
        text_of(rel, text.as_bytes()).map(|_| ())
    }
}

/// One page of `text` (whose revision is `revision`): at most `limit` bytes from `offset`, cut
/// back to a code point boundary (but always at least one whole character, so paging makes
/// progress).
pub fn page_of(
    rel: &RelPath,
    text: &str,
    revision: String,
    offset: u64,
    limit: usize,
) -> Result<Page, WorkspaceError> {
    let total = text.len();
    let bad = |why| WorkspaceError::InvalidOffset {
        path: rel.to_string(),
        offset,
        why,
    };
    let start = usize::try_from(offset).map_err(|_| bad("past the end of the file"))?;
    if start > total {
        return Err(bad("past the end of the file"));
    }
    if !text.is_char_boundary(start) {
        return Err(bad(
            "inside a UTF-8 character; continue from a next_offset that fs.read returned",
        ));
    }
    let mut end = start.saturating_add(limit.max(1)).min(total);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if end == start && start < total {
        end = start + 1;
        while !text.is_char_boundary(end) {
            end += 1;
        }
    }
    Ok(Page {
        path: rel.to_string(),
        text: text[start..end].to_string(),
        offset: start as u64,
        next_offset: (end < total).then_some(end as u64),
        total_bytes: total as u64,
        revision,
    })
}

impl Workspace {
    fn check_size(&self, rel: &RelPath, size: u64) -> Result<(), WorkspaceError> {
        let limit = self.options.read_limit();
        if size > limit {
            return Err(WorkspaceError::FileTooLarge {
                path: rel.to_string(),
                size,
                limit,
            });
        }
        Ok(())
    }

    /// Reads `name` in an already opened directory; `None` when it does not exist.
    fn read_in_dir(
        &self,
        rel: &RelPath,
        dir: &OwnedFd,
        name: &str,
    ) -> Result<Option<FileBytes>, WorkspaceError> {
        let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let probe = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(self.map_open_error(rel, e)),
        };
        let st = rustix::fs::fstat(&probe).map_err(|e| io_err(rel.display(), "stat", e))?;
        check_regular(rel, &st)?;
        let fd = rustix::fs::openat(
            dir,
            name,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| self.map_open_error(rel, e))?;
        read_verified(rel, fd, &st, self.options.read_limit()).map(Some)
    }

    /// The current revision of `rel`, `None` when it does not exist.
    #[cfg(any(test, feature = "test-support"))]
    pub fn current_revision(&self, rel: &RelPath) -> Result<Option<String>, WorkspaceError> {
        match self.read_file(rel) {
            Ok(f) => Ok(Some(f.revision)),
            Err(WorkspaceError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Lists a directory: entries in byte-wise name order, depth-first down to `depth` levels
    /// (1 = direct children), at most `max_entries`. A `.git` below the listed directory is one
    /// entry, never descended into: git's internals would spend the entries on object files (a
    /// fifth of a thousand at depth 3 in a small repository); listing `.git` itself shows them.
    pub fn list(
        &self,
        rel: &RelPath,
        depth: usize,
        max_entries: usize,
    ) -> Result<Listing, WorkspaceError> {
        self.list_visible(rel, depth, max_entries, &|_| true)
    }

    /// [`Workspace::list`] of only the entries `visible` accepts (by workspace-relative path);
    /// a directory it refuses is neither shown nor descended into.
    pub fn list_visible(
        &self,
        rel: &RelPath,
        depth: usize,
        max_entries: usize,
        visible: &dyn Fn(&str) -> bool,
    ) -> Result<Listing, WorkspaceError> {
        let fd = self.open_beneath(rel, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())?;
        let mut out = Listing {
            path: rel.to_string(),
            entries: Vec::new(),
            truncated: false,
        };
        list_into(rel, &fd, depth.max(1), max_entries, visible, &mut out)?;
        Ok(out)
    }
}

/// The bytes as text: a NUL byte means binary, anything else must be UTF-8.
pub fn text_of<'a>(rel: &RelPath, bytes: &'a [u8]) -> Result<&'a str, WorkspaceError> {
    if let Some(offset) = memchr::memchr(0, bytes) {
        return Err(WorkspaceError::BinaryContent {
            path: rel.to_string(),
            offset,
        });
    }
    std::str::from_utf8(bytes).map_err(|e| WorkspaceError::NotUtf8 {
        path: rel.to_string(),
        offset: e.valid_up_to(),
    })
}

/// Whether a text mostly ends its lines with CRLF.
pub fn uses_crlf(text: &str) -> bool {
    let crlf = text.matches("\r\n").count();
    let lf = text.matches('\n').count();
    crlf > 0 && crlf * 2 >= lf
}

/// Turns every `\n` not already preceded by `\r` into `\r\n`.
pub fn to_crlf(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 32);
    let mut prev = '\0';
    for ch in text.chars() {
        if ch == '\n' && prev != '\r' {
            out.push('\r');
        }
        out.push(ch);
        prev = ch;
    }
    out
}

/// Shapes a full replacement text like the file it replaces: CRLF line endings when the old
/// file used them, and no final newline when the old file had none.
pub fn match_text_shape(old: &str, new: &str) -> String {
    let mut out = if uses_crlf(old) {
        to_crlf(new)
    } else {
        new.to_string()
    };
    if !old.is_empty() && !old.ends_with('\n') {
        if out.ends_with("\r\n") {
            out.truncate(out.len() - 2);
        } else if out.ends_with('\n') {
            out.truncate(out.len() - 1);
        }
    }
    out
}

/// Start offsets of every occurrence of `needle`, overlapping ones included.
pub fn occurrences(hay: &str, needle: &str) -> Vec<usize> {
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = finder.find(&hay.as_bytes()[at..]) {
        out.push(at + i);
        at += i + 1;
    }
    out
}

fn probe_openat2(dir: &OwnedFd) -> Resolver {
    match rustix::fs::openat2(
        dir,
        ".",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    ) {
        Ok(_) => Resolver::Openat2,
        Err(_) => Resolver::Walk,
    }
}

pub fn check_regular(rel: &RelPath, st: &rustix::fs::Stat) -> Result<(), WorkspaceError> {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => Ok(()),
        FileType::Directory => Err(WorkspaceError::IsDirectory {
            path: rel.to_string(),
        }),
        // O_PATH | O_NOFOLLOW hands back the link itself when the last component is one.
        FileType::Symlink => Err(WorkspaceError::refused(rel.display(), PathRule::Symlink)),
        other => Err(WorkspaceError::SpecialFile {
            path: rel.to_string(),
            kind: kind_name(other),
        }),
    }
}

/// Reads all of `fd`, which must be the inode described by `probed`, if it holds at most
/// `limit` bytes: the size is checked before a byte is read, and the read stops one byte past
/// the limit should the file grow meanwhile.
fn read_verified(
    rel: &RelPath,
    fd: OwnedFd,
    probed: &rustix::fs::Stat,
    limit: u64,
) -> Result<FileBytes, WorkspaceError> {
    let st = rustix::fs::fstat(&fd).map_err(|e| io_err(rel.display(), "stat", e))?;
    check_regular(rel, &st)?;
    if st.st_dev != probed.st_dev || st.st_ino != probed.st_ino {
        return Err(io_err(
            rel.display(),
            "read",
            io::Error::other("the file was replaced while it was being opened; try again"),
        ));
    }
    let too_large = |size: u64| WorkspaceError::FileTooLarge {
        path: rel.to_string(),
        size,
        limit,
    };
    let size = st.st_size.max(0) as u64;
    if size > limit {
        return Err(too_large(size));
    }
    let mut file = std::fs::File::from(fd);
    let mut bytes = Vec::with_capacity(size as usize);
    (&mut file)
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_err(rel.display(), "read", e))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(FileBytes {
        revision: revision_of(&bytes),
        bytes,
        mode: st.st_mode & 0o7777,
    })
}

fn list_into(
    rel: &RelPath,
    dir: &OwnedFd,
    depth: usize,
    max_entries: usize,
    visible: &dyn Fn(&str) -> bool,
    out: &mut Listing,
) -> Result<(), WorkspaceError> {
    let reader = rustix::fs::Dir::read_from(dir).map_err(|e| io_err(rel.display(), "list", e))?;
    let mut names: Vec<Vec<u8>> = Vec::new();
    for entry in reader {
        let entry = entry.map_err(|e| io_err(rel.display(), "list", e))?;
        let n = entry.file_name().to_bytes();
        if n != b"." && n != b".." {
            names.push(n.to_vec());
        }
    }
    names.sort();
    for name in names {
        if out.entries.len() >= max_entries {
            out.truncated = true;
            return Ok(());
        }
        let shown = String::from_utf8_lossy(&name).into_owned();
        let child = rel.join(&shown);
        if !visible(child.as_str()) {
            continue;
        }
        let cname = match std::ffi::CString::new(name.clone()) {
            Ok(c) => c,
            Err(_) => continue,
        };
        let st = rustix::fs::statat(dir, cname.as_c_str(), AtFlags::SYMLINK_NOFOLLOW);
        let (kind, size) = match &st {
            Ok(st) => match FileType::from_raw_mode(st.st_mode) {
                FileType::RegularFile => (EntryKind::File, Some(st.st_size as u64)),
                FileType::Directory => (EntryKind::Dir, None),
                FileType::Symlink => (EntryKind::Symlink, None),
                _ => (EntryKind::Other, None),
            },
            // Gone since the directory was read.
            Err(_) => continue,
        };
        out.entries.push(ListEntry {
            path: child.to_string(),
            kind,
            size,
        });
        if kind == EntryKind::Dir && depth > 1 && name != b".git" {
            let sub = rustix::fs::openat(
                dir,
                cname.as_c_str(),
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            );
            // A directory swapped for a link in between is simply not descended into.
            if let Ok(sub) = sub {
                list_into(&child, &sub, depth - 1, max_entries, visible, out)?;
                if out.truncated {
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_shape_follows_the_old_file() {
        assert_eq!(match_text_shape("a\r\nb\r\n", "x\ny\n"), "x\r\ny\r\n");
        assert_eq!(match_text_shape("a\nb", "x\ny\n"), "x\ny");
        assert_eq!(match_text_shape("a\r\nb", "x\ny\n"), "x\r\ny");
        assert_eq!(match_text_shape("a\nb\n", "x\ny"), "x\ny");
        assert_eq!(match_text_shape("", "x\n"), "x\n");
    }

    #[test]
    fn occurrences_count_overlaps() {
        assert_eq!(occurrences("aaa", "aa"), vec![0, 1]);
        assert_eq!(occurrences("abc", "x"), Vec::<usize>::new());
    }

    #[test]
    fn revision_is_sha256_hex() {
        assert_eq!(
            revision_of(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn credential_names_are_matched_case_insensitively_by_name_and_path() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open_with(
            dir.path(),
            WorkspaceOptions {
                refused_names: vec!["secrets/**".into()],
                ..Default::default()
            },
        )
        .unwrap();
        let check = |p: &str| {
            ws.refused_pattern(&RelPath::parse(p).unwrap())
                .map(str::to_string)
        };
        assert_eq!(check(".env").as_deref(), Some(".env"));
        assert_eq!(check("app/.env.local").as_deref(), Some(".env.*"));
        assert_eq!(check("certs/server.PEM").as_deref(), Some("*.pem"));
        assert_eq!(check("home/.ssh/id_ed25519").as_deref(), Some("id_ed25519"));
        assert_eq!(check("secrets/db/url.txt").as_deref(), Some("secrets/**"));
        assert_eq!(check("src/env.rs"), None);
        assert_eq!(check("keys.txt"), None);
        assert_eq!(check("id_rsa.pub"), None);
    }
}
