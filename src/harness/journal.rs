//! What `benches/journal.rs` measures; see [`super`].
