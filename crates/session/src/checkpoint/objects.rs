//! The content store: file bytes kept by their SHA-256, once, whichever session and turn needed
//! them (`$XDG_DATA_HOME/pablo/checkpoints/objects/ab/cdef…`). A checkpoint names bytes by hash;
//! the store holds them. Writing is a private temporary file renamed into place, so a reader never
//! sees half an object, and two sessions storing the same bytes at once both succeed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A directory of objects named by their SHA-256.
#[derive(Debug, Clone)]
pub struct ObjectStore {
    dir: PathBuf,
}

/// Whether `hash` is a SHA-256 in lowercase hex (the only names the store has; a journal line
/// that names anything else cannot make the store read outside its directory).
pub(crate) fn valid_hash(hash: &str) -> bool {
    hash.len() == 64
        && hash
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl ObjectStore {
    /// The store in `dir` (created on first write).
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, hash: &str) -> Option<PathBuf> {
        let hash = hash.to_ascii_lowercase();
        if !valid_hash(&hash) {
            return None;
        }
        Some(self.dir.join(&hash[..2]).join(&hash[2..]))
    }

    pub(crate) fn contains(&self, hash: &str) -> bool {
        self.path(hash).is_some_and(|p| p.is_file())
    }

    /// Stores `bytes` under `hash` (which the caller computed from them). Returns whether the
    /// object was new. `durable`: fsync it before it counts as stored.
    pub(crate) fn put(&self, hash: &str, bytes: &[u8], durable: bool) -> std::io::Result<bool> {
        let Some(path) = self.path(hash) else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{hash:?} is not a SHA-256"),
            ));
        };
        if path.is_file() {
            return Ok(false);
        }
        let parent = path.parent().unwrap_or(&self.dir);
        create_private_dir(parent)?;
        let tmp = parent.join(format!(
            ".{}-{}-{}.tmp",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed),
            fastrand::u32(..)
        ));
        let written = (|| {
            let mut f = open_private(&tmp)?;
            f.write_all(bytes)?;
            if durable {
                f.sync_all()?;
            }
            std::fs::rename(&tmp, &path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written.map(|()| true)
    }

    /// The bytes stored under `hash`, checked against it (a damaged object is an error, never
    /// restored).
    pub(crate) fn get(&self, hash: &str) -> std::io::Result<Vec<u8>> {
        let Some(path) = self.path(hash) else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{hash:?} is not a SHA-256"),
            ));
        };
        let bytes = std::fs::read(&path)?;
        if !hex::encode(Sha256::digest(&bytes)).eq_ignore_ascii_case(hash) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "the stored copy {} is damaged (its bytes no longer match their hash)",
                    path.display()
                ),
            ));
        }
        Ok(bytes)
    }

    /// Bytes the store takes on disk (whole blocks), for benchmarks and `BENCHMARKS.md`.
    pub fn disk_usage(&self) -> u64 {
        use std::os::unix::fs::MetadataExt;
        fn walk(dir: &Path, total: &mut u64) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for e in entries.flatten() {
                let Ok(m) = e.metadata() else { continue };
                *total += m.blocks() * 512;
                if m.is_dir() {
                    walk(&e.path(), total);
                }
            }
        }
        let mut total = 0;
        walk(&self.dir, &mut total);
        total
    }
}

/// How many more bytes of file content the current checkpoint may store. Bytes already in the
/// store cost nothing.
#[derive(Debug)]
pub struct Budget {
    left: AtomicU64,
}

impl Budget {
    /// A budget of `bytes`.
    pub fn new(bytes: u64) -> Self {
        Self {
            left: AtomicU64::new(bytes),
        }
    }

    /// A fresh allowance (a new turn).
    pub(crate) fn reset(&self, bytes: u64) {
        self.left.store(bytes, Ordering::Relaxed);
    }

    /// Takes `n` bytes if that many are left.
    pub(crate) fn take(&self, n: u64) -> bool {
        self.left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(n)
            })
            .is_ok()
    }
}

impl ObjectStore {
    /// Stores `bytes` when they are already there or fit the budget; returns whether they are
    /// kept now (false: over the budget, or the store failed).
    pub(crate) fn keep(&self, hash: &str, bytes: &[u8], budget: &Budget, durable: bool) -> bool {
        if self.contains(hash) {
            return true;
        }
        if !budget.take(bytes.len() as u64) {
            return false;
        }
        self.put(hash, bytes, durable).is_ok()
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_come_back_by_their_hash_and_a_damaged_copy_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::at(dir.path());
        let hash = hex::encode(Sha256::digest(b"hello\n"));
        assert!(store.put(&hash, b"hello\n", false).unwrap());
        assert!(!store.put(&hash, b"hello\n", false).unwrap());
        assert_eq!(store.get(&hash).unwrap(), b"hello\n");
        let path = dir.path().join(&hash[..2]).join(&hash[2..]);
        std::fs::write(&path, b"tampered").unwrap();
        assert_eq!(
            store.get(&hash).unwrap_err().kind(),
            std::io::ErrorKind::InvalidData
        );
    }

    #[test]
    fn names_that_are_not_hashes_never_become_paths() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::at(dir.path());
        for bad in ["../../etc/passwd", "", "ab", &"g".repeat(64)] {
            assert!(store.put(bad, b"x", false).is_err(), "{bad}");
            assert!(store.get(bad).is_err(), "{bad}");
            assert!(!store.contains(bad));
        }
    }
}
