//! The full-screen terminal front-end (ratatui). It speaks only `protocol`: agent events in, ops
//! out. One loop ([`app`]) owns the state ([`state`]) and is the only thing that draws ([`view`]).

pub mod cells;
pub mod commands;
pub mod composer;
pub mod diff;
pub mod layers;
pub mod markdown;
pub mod state;
pub mod text;
pub mod theme;
pub mod transcript;
pub mod view;
#[cfg(test)]
mod snapshot_tests;
