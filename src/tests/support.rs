//! The parts of `tests/support` that need no binary, compiled into the crate's tests under the
//! same names (the moved tests import them as they did in `tests/`).

// Each area uses the parts it needs; the rest is not dead, only unused by some areas.
#![allow(dead_code)]

#[path = "../../tests/support/acp.rs"]
pub(crate) mod acp;
/// The real agent loop driven one turn at a time (only the crate's tests use it).
pub(crate) mod agent;
#[path = "../../tests/support/http.rs"]
pub(crate) mod http;
#[path = "../../tests/support/images.rs"]
pub(crate) mod images;
#[path = "../../tests/support/journal.rs"]
pub(crate) mod journal;
#[path = "../../tests/support/lsp.rs"]
pub(crate) mod lsp;
#[path = "../../tests/support/mcp.rs"]
pub(crate) mod mcp;
#[path = "../../tests/support/pinning.rs"]
pub(crate) mod pinning;
#[path = "../../tests/support/prompt.rs"]
pub(crate) mod prompt;
#[path = "../../tests/support/repo_docs.rs"]
pub(crate) mod repo_docs;
