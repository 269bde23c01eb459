//! Integration tests: tui.
