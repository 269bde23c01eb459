//! One integration-test binary (fast to link); each area is a module.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]

mod support;

mod acp;
mod agent;
mod architecture;
mod catalog;
mod checkpoints;
mod cli;
mod commands;
mod context;
mod docs;
mod doctor;
mod engine;
mod everyday_reads;
mod first_session;
mod hooks;
mod hostile_repo;
mod images;
mod import_config;
mod mcp;
mod mcp_auth;
mod mcp_questions;
mod network_allow;
mod observability;
mod pin;
mod pipeline;
mod policy;
mod providers;
mod sandbox;
mod scale;
mod session;
mod shell;
mod spend_cap;
mod subagents;
mod trust;
mod tui;
mod turn_calls;
mod web_search;
mod worktree;
