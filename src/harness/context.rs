//! What `benches/context.rs` measures; see [`super`].
