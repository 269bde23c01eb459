//! What `benches/tui_render.rs` measures; see [`super`].
