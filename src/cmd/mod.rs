//! The binary's subcommands that need more than a few lines, each in its own file (main.rs keeps
//! the command line and the dispatch). These modules belong to the binary, not to the library's
//! layer table: they print, like main.rs.

pub(crate) mod generate;
pub(crate) mod import_config;
pub(crate) mod run;
pub(crate) mod sessions;
pub(crate) mod settings;
pub(crate) mod worktree;
