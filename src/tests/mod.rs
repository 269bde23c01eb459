//! Tests that drive several parts of the engine together through the crate's own paths.
//!
//! They were integration tests in `tests/` until the library's public surface narrowed to what
//! the binary, the benches and the fuzz targets use (issue 26): a test that builds a catalog, a
//! policy engine or a workspace by hand reaches items that are `pub(crate)` now, so it lives
//! here. Tests that run the `pablo` binary stay in `tests/`. The scripted servers and the agent
//! harness of `tests/support` are shared with them, compiled here a second time.

mod support;

// Tools, the catalog and the workspace.
mod catalog;
mod catalog_artifact;
mod catalog_fetch;
mod fs_tools;
mod images;
mod pin;
mod vocabulary;
mod workspace;

// The policy, commands, the sandbox, sessions, context and providers.
mod context;
mod lsp;
mod policy_commands;
mod policy_rules;
mod providers_select;
mod providers_stream;
mod sandbox;
mod session;
mod shell_exec;
mod shell_sessions;

// The agent loop, front-ends (TUI, ACP) and MCP.
mod acp;
mod docs;
mod mcp;
