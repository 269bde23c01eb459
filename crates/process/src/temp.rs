//! The session's temporary directory: the `TMPDIR` of its commands, under the system's temporary
//! directory, removed when the session ends, and removed at the next start when it did not.
//!
//! A session that is killed (`kill -9`, a crash, the machine's OOM killer) cannot remove its
//! directory, so every session first sweeps what killed ones left. What tells a left-over from
//! the directory of a session that still runs is a lock: each directory holds an `.owner` file
//! that its session keeps locked (`flock`) for as long as it lives; the kernel drops the lock
//! when the process ends, however it ends. A directory is only given its final name
//! (`pablo-` and 32 hex digits) once its lock is held, so a sweep never sees one unlocked by a
//! session that is still starting. Directories without an `.owner` (made by older versions of
//! pablo, or by anything else) are never touched.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The name of the lock file inside each directory.
const OWNER: &str = ".owner";
/// Directory names start with this, then 32 hex digits.
const PREFIX: &str = "pablo-";

/// One session's temporary directory (see the module docs).
#[derive(Debug)]
pub struct SessionTemp {
    path: PathBuf,
    /// Held (locked) for the life of the session.
    _owner: Option<File>,
}

impl SessionTemp {
    /// Sweeps left-overs under `base`, then creates this session's directory there. When it
    /// cannot be created (a full or read-only disk), the path is still given: commands create
    /// it on first use, as before, and it is removed at the end all the same.
    pub fn create(base: &Path) -> Self {
        sweep(base);
        let id = uuid::Uuid::now_v7().simple().to_string();
        let path = base.join(format!("{PREFIX}{id}"));
        let owner = claim(base, &id, &path).ok();
        Self {
            path,
            _owner: owner,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SessionTemp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Creates `base/pablo-ID.new`, locks its `.owner`, and renames it to `path`.
fn claim(base: &Path, id: &str, path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::DirBuilderExt;
    let staging = base.join(format!("{PREFIX}{id}.new"));
    std::fs::DirBuilder::new().mode(0o700).create(&staging)?;
    let owner = File::create_new(staging.join(OWNER))?;
    rustix::fs::flock(&owner, rustix::fs::FlockOperation::NonBlockingLockExclusive)?;
    std::fs::rename(&staging, path)?;
    Ok(owner)
}

/// Whether `name` is a session directory's final name.
fn is_session_name(name: &str) -> bool {
    name.strip_prefix(PREFIX)
        .is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Removes the directories under `base` whose session is gone: a directory of ours (same
/// owner, not a link) with an `.owner` file nobody holds locked. Returns what was removed.
pub fn sweep(base: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(base) else {
        return removed;
    };
    let me = rustix::process::geteuid().as_raw();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_str().is_some_and(is_session_name) {
            continue;
        }
        let dir = entry.path();
        let ours = std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir() && m.uid() == me);
        if !ours {
            continue;
        }
        // Opened without following a link: the lock file itself must be the session's.
        let owner = rustix::fs::open(
            dir.join(OWNER),
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        );
        let Ok(owner) = owner else { continue };
        let free =
            rustix::fs::flock(&owner, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok();
        if free && std::fs::remove_dir_all(&dir).is_ok() {
            tracing::info!(dir = %dir.display(), "removed the temporary directory of a session that ended without removing it");
            removed.push(dir);
        }
    }
    removed
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_session_directory_exists_locked_while_held_and_goes_with_it() {
        let base = tempfile::tempdir().unwrap();
        let t = SessionTemp::create(base.path());
        assert!(t.path().join(OWNER).is_file());
        // A sweep while the session lives leaves it alone.
        assert!(sweep(base.path()).is_empty());
        let path = t.path().to_path_buf();
        drop(t);
        assert!(!path.exists());
    }

    #[test]
    fn a_sweep_removes_unlocked_left_overs_and_nothing_else() {
        let base = tempfile::tempdir().unwrap();
        let hex = "0123456789abcdef0123456789abcdef";
        let stale = base.path().join(format!("pablo-{hex}"));
        std::fs::create_dir(&stale).unwrap();
        std::fs::write(stale.join(OWNER), "").unwrap();
        std::fs::write(stale.join("left.txt"), "x").unwrap();
        // Without an owner file, under another name, or a link: never touched.
        let legacy = base.path().join("pablo-fedcba9876543210fedcba9876543210");
        std::fs::create_dir(&legacy).unwrap();
        let other = base.path().join("pablo-demo-1234");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join(OWNER), "").unwrap();
        let link = base.path().join("pablo-00000000000000000000000000000000");
        std::os::unix::fs::symlink(&stale, &link).unwrap();
        assert_eq!(sweep(base.path()), vec![stale.clone()]);
        assert!(!stale.exists());
        assert!(legacy.exists() && other.exists());
        assert!(std::fs::symlink_metadata(&link).is_ok());
    }
}
