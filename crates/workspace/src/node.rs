//! What a name in the workspace is right now (absent, a file and its revision, a link and its
//! target), and replacing it with something else in one atomic step. Restores (undo, rewind,
//! `/diff` reverts) are built on these: a file is put back through a private temporary file
//! renamed over the name, only if the name still holds what the restore plan showed, so a crash
//! at any moment leaves either the old or the new bytes, and running the restore again finishes
//! the job.

use std::io::Read;
use std::os::fd::OwnedFd;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;
use sha2::{Digest, Sha256};

use super::{
    RelPath, TempGuard, Workspace, WorkspaceError, check_regular, create_temp, io_err,
    remove_stale_temps, temp_name_for,
};

/// What a workspace name holds now. Never follows a link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Absent,
    File {
        revision: String,
        size: u64,
        mode: u32,
    },
    Symlink {
        target: String,
    },
    Directory,
    /// A FIFO, socket or device: never opened.
    Special,
}

/// What a name should hold after [`Workspace::replace_node`].
#[derive(Debug, Clone, Copy)]
pub enum NewNode<'a> {
    Absent,
    File { bytes: &'a [u8], mode: u32 },
    Symlink { target: &'a str },
}

impl Node {
    fn same(&self, other: &Node) -> bool {
        match (self, other) {
            (
                Node::File {
                    revision: a,
                    mode: ma,
                    ..
                },
                Node::File {
                    revision: b,
                    mode: mb,
                    ..
                },
            ) => a.eq_ignore_ascii_case(b) && ma & 0o7777 == mb & 0o7777,
            (a, b) => a == b,
        }
    }

    fn describe(&self) -> String {
        match self {
            Node::Absent => "absent".into(),
            Node::File { revision, .. } => format!("revision {}", short(revision)),
            Node::Symlink { target } => format!("a link to {target}"),
            Node::Directory => "a directory".into(),
            Node::Special => "a special file".into(),
        }
    }
}

fn short(rev: &str) -> &str {
    rev.get(..12).unwrap_or(rev)
}

/// SHA-256 of everything `file` holds, read in pieces (a large file is never held in memory).
pub fn hash_reader(mut file: impl Read) -> std::io::Result<(String, u64)> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0u64;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        total += n as u64;
    }
    Ok((hex::encode(hasher.finalize()), total))
}

impl Workspace {
    /// What `rel` is now: its kind, and for a regular file its revision (computed here).
    pub fn node(&self, rel: &RelPath) -> Result<Node, WorkspaceError> {
        let Some(name) = rel.file_name() else {
            return Ok(Node::Directory);
        };
        let dir = match self.open_parent(rel, false) {
            Ok(d) => d,
            Err(WorkspaceError::NotFound { .. }) => return Ok(Node::Absent),
            Err(e) => return Err(e),
        };
        self.node_in_dir(rel, &dir, name)
    }

    fn node_in_dir(
        &self,
        rel: &RelPath,
        dir: &OwnedFd,
        name: &str,
    ) -> Result<Node, WorkspaceError> {
        let st = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => return Ok(Node::Absent),
            Err(e) => return Err(io_err(rel.display(), "stat", e)),
        };
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Directory => Ok(Node::Directory),
            FileType::Symlink => {
                let target = rustix::fs::readlinkat(dir, name, Vec::new())
                    .map_err(|e| io_err(rel.display(), "read the link", e))?;
                Ok(Node::Symlink {
                    target: target.to_string_lossy().into_owned(),
                })
            }
            FileType::RegularFile => {
                let fd = rustix::fs::openat(
                    dir,
                    name,
                    OFlags::RDONLY
                        | OFlags::NONBLOCK
                        | OFlags::NOCTTY
                        | OFlags::NOFOLLOW
                        | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .map_err(|e| self.map_open_error(rel, e))?;
                let opened =
                    rustix::fs::fstat(&fd).map_err(|e| io_err(rel.display(), "stat", e))?;
                check_regular(rel, &opened)?;
                let (revision, size) = hash_reader(std::fs::File::from(fd))
                    .map_err(|e| io_err(rel.display(), "read", e))?;
                Ok(Node::File {
                    revision,
                    size,
                    mode: opened.st_mode & 0o7777,
                })
            }
            _ => Ok(Node::Special),
        }
    }

    /// Makes `rel` hold `new`, in one rename (or one unlink), if it holds `expected` right before.
    /// Missing parent directories are created for a file or link. Credential names are refused
    /// like every other write.
    pub fn replace_node(
        &self,
        rel: &RelPath,
        new: NewNode<'_>,
        expected: &Node,
    ) -> Result<(), WorkspaceError> {
        let name = rel.file_name().ok_or_else(|| WorkspaceError::IsDirectory {
            path: ".".to_string(),
        })?;
        self.check_not_credential(rel)?;
        let creating = !matches!(new, NewNode::Absent);
        let dir = match self.open_parent(rel, creating) {
            Ok(d) => d,
            // Nothing to remove where the directory is gone; that is what a delete wants.
            Err(WorkspaceError::NotFound { .. }) if !creating && *expected == Node::Absent => {
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let check = |now: &Node| -> Result<(), WorkspaceError> {
            if now.same(expected) {
                Ok(())
            } else {
                Err(WorkspaceError::RevisionMismatch {
                    path: rel.to_string(),
                    detail: format!(
                        "changed since the restore was planned: it was {}, it is now {}; nothing \
                         was written",
                        expected.describe(),
                        now.describe()
                    ),
                    current: match now {
                        Node::File { revision, .. } => Some(revision.clone()),
                        _ => None,
                    },
                })
            }
        };
        check(&self.node_in_dir(rel, &dir, name)?)?;
        remove_stale_temps(&dir, name);
        match new {
            NewNode::Absent => {
                if *expected == Node::Absent {
                    return Ok(());
                }
                check(&self.node_in_dir(rel, &dir, name)?)?;
                rustix::fs::unlinkat(&dir, name, AtFlags::empty())
                    .map_err(|e| io_err(rel.display(), "remove", e))?;
            }
            NewNode::File { bytes, mode } => {
                let temp_name = temp_name_for(name);
                let guard = create_temp(rel, &dir, &temp_name, bytes, 0o600, Some(mode & 0o7777))?;
                check(&self.node_in_dir(rel, &dir, name)?)?;
                rename_into_place(rel, &dir, &temp_name, name, expected)?;
                guard.disarm();
            }
            NewNode::Symlink { target } => {
                let temp_name = temp_name_for(name);
                rustix::fs::symlinkat(target, &dir, temp_name.as_str())
                    .map_err(|e| io_err(rel.display(), "create the link", e))?;
                let guard = TempGuard {
                    dir: &dir,
                    name: &temp_name,
                    armed: true,
                };
                check(&self.node_in_dir(rel, &dir, name)?)?;
                rename_into_place(rel, &dir, &temp_name, name, expected)?;
                guard.disarm();
            }
        }
        // The change is made; a failed directory fsync only weakens durability.
        let _ = rustix::fs::fsync(&dir);
        Ok(())
    }

    /// Removes the directory `rel` if it is empty (a directory a turn created, after its files
    /// were removed). Anything else is left as it is.
    pub fn remove_empty_dir(&self, rel: &RelPath) -> Result<bool, WorkspaceError> {
        let Some(name) = rel.file_name() else {
            return Ok(false);
        };
        let dir = match self.open_parent(rel, false) {
            Ok(d) => d,
            Err(WorkspaceError::NotFound { .. }) => return Ok(false),
            Err(e) => return Err(e),
        };
        match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {}
            _ => return Ok(false),
        }
        match rustix::fs::unlinkat(&dir, name, AtFlags::REMOVEDIR) {
            Ok(()) => Ok(true),
            Err(Errno::NOTEMPTY) | Err(Errno::EXIST) | Err(Errno::NOENT) => Ok(false),
            Err(e) => Err(io_err(rel.display(), "remove the directory", e)),
        }
    }
}

/// The final rename; where nothing was expected, a name that appeared meanwhile is not replaced.
fn rename_into_place(
    rel: &RelPath,
    dir: &OwnedFd,
    temp_name: &str,
    name: &str,
    expected: &Node,
) -> Result<(), WorkspaceError> {
    let renamed = if *expected == Node::Absent {
        match rustix::fs::renameat_with(dir, temp_name, dir, name, RenameFlags::NOREPLACE) {
            Err(Errno::INVAL) | Err(Errno::NOSYS) => {
                rustix::fs::renameat(dir, temp_name, dir, name)
            }
            other => other,
        }
    } else {
        rustix::fs::renameat(dir, temp_name, dir, name)
    };
    match renamed {
        Ok(()) => Ok(()),
        Err(Errno::EXIST) => Err(WorkspaceError::AlreadyExists {
            path: rel.to_string(),
            current: String::new(),
        }),
        Err(e) => Err(io_err(rel.display(), "rename into place", e)),
    }
}
