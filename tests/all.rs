//! One integration-test binary (fast to link); each area is a module.

mod support;

mod acp;
mod agent;
mod fs_tools;
mod policy;
mod providers;
mod session;
mod shell;
mod tui;
mod workspace;
