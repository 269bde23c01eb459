//! What `benches/otel_export.rs` measures; see [`super`].
