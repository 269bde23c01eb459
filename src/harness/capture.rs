//! What `benches/capture.rs` measures; see [`super`].
