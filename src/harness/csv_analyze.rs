//! What `benches/csv_analyze.rs` measures; see [`super`].
