//! What `benches/checkpoints.rs` measures; see [`super`].
