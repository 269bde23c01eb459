//! What `benches/subagent.rs` measures; see [`super`].
