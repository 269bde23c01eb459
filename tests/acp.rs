//! Integration tests: acp.
