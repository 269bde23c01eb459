//! Integration tests: policy.
