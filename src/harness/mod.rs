//! Entry points for the benches (`benches/`) and the fuzz targets (`fuzz/`), and nothing else.
//!
//! A bench that reached into the engine would hold every type it names public, and a public item
//! is one the compiler no longer reports when it falls out of use. So each bench has a module
//! here that sets up what it measures and runs the measured step, speaking only std types,
//! external crates' types and its own; the engine behind it stays `pub(crate)`. Hidden from the
//! docs: this is not an API and has no stability.

pub mod acp_lines;
pub mod agent;
pub mod capture;
pub mod checkpoints;
pub mod context;
pub mod csv_analyze;
pub mod fs_search;
pub mod hooks;
pub mod journal;
pub mod lsp;
pub mod otel_export;
pub mod policy;
pub mod sandbox;
pub mod sse_decode;
pub mod subagent;
pub mod tui_render;
