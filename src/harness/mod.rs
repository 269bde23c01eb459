//! Entry points for the benches (`benches/`) and the fuzz targets (`fuzz/`), and nothing else.
//!
//! A bench that reached into the engine would hold every type it names public, and a public item
//! is one the compiler no longer reports when it falls out of use. So each bench has a module
//! here that sets up what it measures and runs the measured step, speaking only std types,
//! external crates' types and its own; the engine behind it stays `pub(crate)`. The modules are
//! private and their items re-exported flat (each named after its bench, so none collide).
//! Hidden from the docs: this is not an API and has no stability.
//!
//! A module whose part of the engine has become a crate of its own goes: that crate's public API
//! is what the bench names (`benches/capture.rs` runs `pablo-process` directly,
//! `benches/csv_analyze.rs` runs `pablo-tools`, `benches/sandbox.rs`, `benches/fs_search.rs`,
//! `benches/policy.rs`, `benches/journal.rs` and `benches/checkpoints.rs` set up what they time
//! from the crates, and the four agent benches drive `pablo-agent` through
//! `benches/support/agent.rs`, with what targets share in `benches/support/`). What is left
//! drives the TUI and ACP, until their rows are crates too (issue 45 item 5).

// A bench whose set-up fails should stop loudly, as the bench files always did; nothing here runs
// inside pablo.
#![allow(clippy::expect_used)]

mod acp_lines;
mod tui_render;

pub use acp_lines::*;
pub use tui_render::*;
