//! `pablo completions SHELL` and `pablo man`: generated from the parser's own definition, so a
//! subcommand or flag cannot be missing from either.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap_complete::Shell;

/// The completion script for `shell` on stdout (`pablo completions bash > ~/.local/share/…`).
pub(crate) fn completions(mut command: clap::Command, shell: Shell) -> Result<ExitCode> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, "pablo", &mut out);
    std::io::stdout().lock().write_all(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// The man page (roff) on stdout (`pablo man | man -l -`), or with `dir` one page per command
/// written there (`pablo.1`, `pablo-run.1`, …), each with its flags.
pub(crate) fn man(command: clap::Command, dir: Option<&Path>) -> Result<ExitCode> {
    let command = command.name("pablo").bin_name("pablo");
    match dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            // Subcommands' pages are named after their path (pablo-policy-check.1). clap adds a
            // `help` subcommand to every command with subcommands when it builds them: that is
            // not a command of pablo's, and gets no page (nor a line in its parent's).
            let mut command = command;
            without_help_subcommands(&mut command);
            clap_mangen::generate_to(command, dir)
                .with_context(|| format!("cannot write the man pages to {}", dir.display()))?;
        }
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(command).render(&mut out)?;
            std::io::stdout().lock().write_all(&out)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `command` and every subcommand, before they are built, set to get no `help` subcommand.
fn without_help_subcommands(command: &mut clap::Command) {
    *command = std::mem::take(command).disable_help_subcommand(true);
    for sub in command.get_subcommands_mut() {
        without_help_subcommands(sub);
    }
}
