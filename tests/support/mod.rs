//! Shared test support: scripted servers on 127.0.0.1, temp workspaces, the binary.

// Each area uses the parts it needs; the rest is not dead, only unused by some areas.
#![allow(dead_code)]

pub mod acp;
pub mod bin;
pub mod http;
pub mod images;
pub mod journal;
pub mod lsp;
pub mod mcp;
pub mod pinning;
pub mod prompt;
pub mod repo_docs;
pub mod run;
