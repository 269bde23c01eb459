//! Shared test support: scripted servers on 127.0.0.1, temp workspaces, the binary.

pub mod http;
