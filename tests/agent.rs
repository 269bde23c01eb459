//! Integration tests: agent.
