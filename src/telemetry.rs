//! Traces: spans for turns, model calls and tool calls, with counts, durations and decisions.
//!
//! Spans carry no arguments, paths, file content or keys — the fields are chosen at the span
//! sites in `agent`. Dependencies (HTTP stacks in particular) are capped at `info` whatever level
//! is asked for, so a verbose setting cannot make them dump request headers.

use std::path::Path;
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::FmtSpan;

/// The filter for a requested level (`PABLO_LOG`, e.g. `debug` or `trace`).
pub fn filter(level: &str) -> EnvFilter {
    let level = match level.trim() {
        "" => "info",
        l => l,
    };
    // Only pablo's own targets get the requested verbosity.
    EnvFilter::try_new(format!("info,pablo={level}"))
        .unwrap_or_else(|_| EnvFilter::new("info,pablo=info"))
}

/// A JSON-lines subscriber writing to `writer`, recording span closes (with their durations).
pub fn subscriber<W>(level: &str, writer: W) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'a> tracing_subscriber::fmt::MakeWriter<'a> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter(level))
        .with_span_events(FmtSpan::CLOSE)
        .with_writer(writer)
        .finish()
}

/// Installs the global subscriber when `PABLO_LOG` is set, writing to `PABLO_LOG_FILE` or to
/// `pablo.log` in the state directory. Never to the terminal: the TUI and `--json` own it.
pub fn init_from_env(state_dir: &Path) -> Result<(), std::io::Error> {
    let Ok(level) = std::env::var("PABLO_LOG") else {
        return Ok(());
    };
    let path = match std::env::var_os("PABLO_LOG_FILE") {
        Some(p) => std::path::PathBuf::from(p),
        None => {
            std::fs::create_dir_all(state_dir)?;
            state_dir.join("pablo.log")
        }
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let _ = tracing::subscriber::set_global_default(subscriber(&level, Mutex::new(file)));
    Ok(())
}
