//! `pablo import-config --from claude|codex`: a Claude Code or Codex setup as a pablo config.
//! By default it becomes the person's own config (a repository's settings never land there
//! unasked), never over a file that exists; `--dry-run` prints it and writes nothing.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};

use pablo::config::{ConfigFile, Dirs, ImportFrom, import_config, project_config_file};
use pablo::core::ErrorCode;

use crate::{Common, Refusal};

#[derive(clap::Args, Debug)]
pub(crate) struct ImportArgs {
    /// Whose setup: claude (~/.claude/settings.json, ~/.claude.json's MCP servers; with
    /// --project .claude/settings.json and .mcp.json) or codex (~/.codex/config.toml; with
    /// --project .codex/config.toml).
    #[arg(long, value_name = "TOOL")]
    from: Source,
    /// Print the config (stdout) and the report (stderr); write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Import this folder's settings into its project config (.pablo/config.toml, which counts
    /// once the folder is trusted) instead of your own settings into your user config.
    #[arg(long)]
    project: bool,
    /// Write the config to FILE instead (it must not exist).
    #[arg(short = 'o', long, value_name = "FILE", conflicts_with = "dry_run")]
    output: Option<PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum Source {
    /// Claude Code.
    Claude,
    /// OpenAI's Codex CLI.
    Codex,
}

pub(crate) fn run(common: &Common, args: ImportArgs) -> Result<ExitCode> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| {
            Refusal::new(
                ErrorCode::ImportSourceMissing,
                "HOME is not set, so there is no setup to import",
            )
        })?;
    let workspace = match &common.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir()?,
    };
    let from = match args.from {
        Source::Claude => ImportFrom::Claude,
        Source::Codex => ImportFrom::Codex,
    };
    let imported = import_config(from, &home, &workspace, args.project)?;
    if args.dry_run {
        out!("{}", imported.toml);
        eprint!("{imported}");
        return Ok(ExitCode::SUCCESS);
    }
    let target = match args.output {
        Some(path) => path,
        None if args.project => project_config_file(&workspace),
        None => Dirs::discover()?.user_config_file(),
    };
    if target.exists() {
        return Err(Refusal::new(
            ErrorCode::ConfigExists,
            format!(
                "{} already exists and was left as it was: `--output FILE` writes the import \
                 elsewhere (merge the tables you want into it by hand, or use it as it is with \
                 `--config FILE`), and `--dry-run` prints it",
                target.display()
            ),
        )
        .into());
    }
    if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    // `create_new`: a file that appeared since the check above is not replaced either.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&target)
        .with_context(|| format!("cannot create {}", target.display()))?;
    file.write_all(imported.toml.as_bytes())
        .with_context(|| format!("cannot write {}", target.display()))?;
    drop(file);
    // Read back as `pablo config validate` reads it.
    ConfigFile::load(&target)?;
    out!("{imported}");
    outln!(
        "wrote {} (`pablo config validate` accepts it)",
        target.display()
    );
    Ok(ExitCode::SUCCESS)
}
