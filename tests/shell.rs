//! Integration tests: shell.
