//! What `fuzz/fuzz_targets/acp_lines.rs` measures; see [`super`].
