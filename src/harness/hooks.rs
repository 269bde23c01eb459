//! What `benches/hooks.rs` measures; see [`super`].
