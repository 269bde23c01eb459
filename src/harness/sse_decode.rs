//! What `benches/sse_decode.rs` measures; see [`super`].
