//! What `benches/sandbox.rs` measures; see [`super`].
