//! Integration tests: fs_tools.
