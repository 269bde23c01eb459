//! Tests that drive several parts of the engine together, in-process, through the crates'
//! public API: a catalog, a policy engine, a workspace or an agent loop built by hand.
//!
//! They lived in `src/tests/` while the engine was one crate whose internals were `pub(crate)`
//! (issue 26); now each part is a crate of its own whose interface to the crates above is `pub`,
//! so they are integration tests again, beside the tests that run the `pablo` binary, and share
//! `tests/support` with them (issue 45 item 5). Tests that need a crate's private items live in
//! that crate.

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
