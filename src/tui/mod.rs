//! The full-screen terminal front-end (ratatui). Speaks only `protocol`.
