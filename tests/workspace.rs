//! Integration tests: workspace.
