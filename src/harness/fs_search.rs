//! What `benches/fs_search.rs` measures; see [`super`].
