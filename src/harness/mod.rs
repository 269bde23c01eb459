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
//! `benches/csv_analyze.rs` runs `pablo-tools`, and `benches/sandbox.rs`, `benches/fs_search.rs`
//! `benches/policy.rs`, `benches/journal.rs` and `benches/checkpoints.rs` set up what they time
//! from the crates, with what two targets share in `benches/support/`; the ACP lines fuzz target
//! frames with `pablo_acp::transport`, and `benches/tui_render.rs` draws the TUI crate's own
//! `bench::TuiRenderScene`). What is left drives the agent.

// A bench whose set-up fails should stop loudly, as the bench files always did; nothing here runs
// inside pablo.
#![allow(clippy::expect_used)]

mod agent;
mod context;
mod hooks;
mod otel_export;
mod subagent;

pub use agent::*;
pub use context::*;
pub use hooks::*;
pub use otel_export::*;
pub use subagent::*;
