//! What `benches/policy.rs` measures; see [`super`].
