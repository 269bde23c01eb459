//! What `benches/checkpoints.rs` measures; see [`super`].
//!
//! The checkpoint scanner of a workspace with its own content store: the bench times the pair of
//! refreshes around a command, once listening to inotify and once walking (the fallback).

use std::path::Path;
use std::sync::Arc;

use crate::session::checkpoint::ObjectStore;
use crate::session::checkpoint::objects::Budget;
use crate::session::checkpoint::scan::{ScanOptions, Scanner};
use crate::workspace::Workspace;

/// A scanner of the workspace at `root`, storing into `store`, with a budget that never runs out
/// (the bench measures the scan, not a refusal to store).
pub struct CheckpointsScanner {
    scanner: Scanner,
    budget: Budget,
}

impl CheckpointsScanner {
    /// Files up to 16 MiB are stored, as a session stores them. Nothing is scanned yet: the first
    /// [`refresh`](Self::refresh) walks the workspace and starts listening to inotify.
    pub fn new(root: &Path, store: &Path) -> Self {
        let ws = Arc::new(Workspace::open(root).expect("the bench workspace opens"));
        let scanner = Scanner::new(
            ws,
            ObjectStore::at(store),
            ScanOptions {
                max_file_bytes: 16 << 20,
            },
        );
        Self {
            scanner,
            budget: Budget::new(u64::MAX),
        }
    }

    /// One refresh (the measured step). What changed comes back opaque, so the caller drops it
    /// outside its timing, as it did when it held the engine's list of changes.
    pub fn refresh(&mut self) -> impl Sized + use<> {
        self.scanner.refresh(&self.budget)
    }

    /// Whether the kernel reports changes (false: every refresh walks the workspace).
    pub fn is_watching(&self) -> bool {
        self.scanner.is_watching()
    }

    /// From here on every refresh walks the workspace, as when inotify is not available.
    pub fn stop_watching(&mut self) {
        self.scanner.stop_watching();
    }

    /// The files the scanner's index follows.
    pub fn file_count(&self) -> usize {
        self.scanner.file_count()
    }
}

/// Bytes the content store at `store` takes on disk (whole blocks), for the bench's report.
pub fn checkpoints_store_disk_usage(store: &Path) -> u64 {
    ObjectStore::at(store).disk_usage()
}
