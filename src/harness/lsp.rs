//! What `benches/lsp.rs` measures; see [`super`].
