//! Shared test support: scripted servers on 127.0.0.1, temp workspaces, the binary.

// Each area uses the parts it needs; the rest is not dead, only unused by some areas.
#![allow(dead_code)]

pub mod acp;
pub mod agent;
pub mod bin;
pub mod git;
pub mod http;
pub mod images;
pub mod journal;
pub mod lsp;
pub mod mcp;
pub mod oauth;
pub mod pinning;
pub mod prompt;
pub mod repo_docs;
pub mod run;
pub mod web_search;

/// The revision of a file holding `bytes`, as docs/workspace.md defines it (SHA-256, lower-case
/// hex), computed here rather than by the engine so the tests check the contract, not a copy.
pub fn revision_of(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}
