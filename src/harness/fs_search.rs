//! What `benches/fs_search.rs` measures; see [`super`].
//!
//! `fs.search` for a literal over a whole workspace, as the tool runs it for a model's call (no
//! tool-call round trip around it).

use std::path::Path;

use crate::workspace::search::{SearchRequest, search};
use crate::workspace::{RelPath, Workspace};

/// The workspace at `root`, opened once, and one query over all of it (up to 10,000 matches,
/// ignored files skipped, no file or byte cap).
pub struct FsSearchQuery {
    ws: Workspace,
    req: SearchRequest,
}

impl FsSearchQuery {
    pub fn new(root: &Path, query: &str) -> Self {
        Self {
            ws: Workspace::open(root).expect("the bench tree opens as a workspace"),
            req: SearchRequest {
                query: query.to_string(),
                path: RelPath::root(),
                max_results: 10_000,
                include_ignored: false,
                max_files: None,
                max_bytes: None,
            },
        }
    }

    /// `fs.list` of the whole workspace as deep as the tool goes, at most `max_entries`: the
    /// number of entries and whether the listing was cut.
    pub fn listed(&self, max_entries: usize) -> (usize, bool) {
        let listing = self
            .ws
            .list(
                &RelPath::root(),
                crate::tools::fs_list::MAX_DEPTH,
                max_entries,
            )
            .expect("the listing runs");
        (listing.entries.len(), listing.truncated)
    }

    /// The measured step: one search; the number of matching lines.
    pub fn matches(&self) -> usize {
        search(&self.ws, &self.req)
            .expect("the search runs")
            .matches
            .len()
    }
}
