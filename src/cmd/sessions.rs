//! The journaled sessions from the command line: `pablo sessions`, `pablo undo`, and taking a
//! session out of pablo and back (`pablo export`, `pablo import`) or branching it (`pablo fork`).

use std::io::Write as _;
use std::process::ExitCode;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::{Common, Front};
use pablo::core::ErrorCode;
use pablo::launch::Launch;
use pablo::launch::LaunchOptions;

/// `pablo undo`: the last turn(s) of a session taken back, files only (exit status 0 when every
/// file was restored, 1 when some were left alone, 2 on error).
pub fn undo(
    common: &Common,
    id: Option<String>,
    last: bool,
    turns: u32,
    dry_run: bool,
    json: bool,
) -> Result<ExitCode> {
    use pablo::protocol::{RestoreAction, RestoreStatus};
    let (id, workspace) = find_session(common, id.as_deref(), last)?;
    let options = resume_workspace(common, &id, workspace)?;
    let launch = Launch::prepare(options)?;
    let outcome = launch.undo(&id, turns, dry_run)?;
    let skipped = match &outcome.report {
        Some(r) => !r.skipped.is_empty(),
        None => outcome
            .plan
            .files
            .iter()
            .any(|f| f.status != RestoreStatus::Ready),
    };
    if json {
        let line = serde_json::json!({
            "type": "undo",
            "session_id": id,
            "dry_run": dry_run,
            "plan": outcome.plan,
            "report": outcome.report,
        });
        outln!("{line}");
        return Ok(ExitCode::from(u8::from(skipped)));
    }
    let plan = &outcome.plan;
    outln!(
        "pablo: {}{} of session {id}",
        plan.title.to_lowercase(),
        if dry_run {
            " (dry run: nothing changed)"
        } else {
            ""
        }
    );
    if plan.files.is_empty() {
        outln!("  nothing to restore: every file is already as it was");
    }
    let verb = |a: RestoreAction| match (a, dry_run) {
        (RestoreAction::Rewrite, false) => "restored",
        (RestoreAction::Delete, false) => "deleted",
        (RestoreAction::Recreate, false) => "recreated",
        (RestoreAction::Rewrite, true) => "would restore",
        (RestoreAction::Delete, true) => "would delete",
        (RestoreAction::Recreate, true) => "would recreate",
    };
    match &outcome.report {
        Some(report) => {
            for r in &report.restored {
                outln!("  {:<14} {}", verb(r.action), r.path);
            }
            for s in &report.skipped {
                outln!(
                    "  {:<14} {}: {}",
                    s.code.replace('_', " "),
                    s.path,
                    s.message
                );
            }
        }
        None => {
            for f in &plan.files {
                match f.status {
                    RestoreStatus::Ready => outln!(
                        "  {:<14} {}  (+{} −{})",
                        verb(f.action),
                        f.path,
                        f.added,
                        f.removed
                    ),
                    _ => outln!(
                        "  {:<14} {}: {}",
                        // The code a restore skips the file with.
                        if f.status == RestoreStatus::Conflict {
                            ErrorCode::Conflict.as_str()
                        } else {
                            ErrorCode::Unrestorable.as_str()
                        },
                        f.path,
                        f.reason.as_deref().unwrap_or("")
                    ),
                }
            }
        }
    }
    Ok(ExitCode::from(u8::from(skipped)))
}

/// `pablo sessions`: id, last update, turns, checklist progress, workspace, title.
pub(crate) fn sessions(json: bool) -> Result<ExitCode> {
    let listing = pablo::session::list()?;
    for w in &listing.warnings {
        eprintln!("pablo: warning: {w}");
    }
    if json {
        for s in &listing.sessions {
            let line = serde_json::json!({
                "id": s.id,
                "title": s.title,
                "workspace": s.workspace,
                "created": s.created,
                "updated": s.updated(),
                "turns": s.turns,
                "plan_completed": s.plan_done,
                "plan_total": s.plan_total,
                "model": s.model,
                "provider": s.provider,
            });
            outln!("{line}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if listing.sessions.is_empty() {
        outln!("no sessions yet");
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{:<36}  {:<20}  {:>5}  {:>5}  {:<30}  TITLE",
        "ID",
        "UPDATED",
        "TURNS",
        "TODO",
        "WORKSPACE"
    );
    for s in &listing.sessions {
        outln!(
            "{:<36}  {:<20}  {:>5}  {:>5}  {:<30}  {}",
            s.id,
            s.updated(),
            s.turns,
            s.progress().unwrap_or_else(|| "-".into()),
            s.workspace,
            s.title.as_deref().unwrap_or("")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `pablo export`: the session as Markdown or JSON, on stdout or into `-o FILE`.
pub fn export(
    common: &Common,
    id: Option<String>,
    last: bool,
    format: &str,
    output: Option<PathBuf>,
) -> Result<ExitCode> {
    use pablo::launch::export::{ExportFormat, export_session};
    let format = ExportFormat::parse(format)
        .with_context(|| format!("unknown export format {format:?}: md or json"))?;
    let (id, _) = find_session(common, id.as_deref(), last)?;
    let text = export_session(&id, format)?;
    match output {
        Some(path) => {
            write_whole(&path, &text)?;
            eprintln!("pablo: session {id} exported to {}", path.display());
        }
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `pablo import FILE`: a new session of the export, in this workspace.
pub(crate) fn import(common: &Common, file: &Path) -> Result<ExitCode> {
    let (name, text) = if file == Path::new("-") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut text)
            .context("cannot read the export from stdin")?;
        ("stdin".to_string(), text)
    } else {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        (file.display().to_string(), text)
    };
    let workspace = match &common.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir()?,
    };
    let id = pablo::launch::export::import_session(&name, &text, &workspace)?;
    outln!("{id}");
    eprintln!("pablo: imported as session {id}; continue it with `pablo resume {id}`");
    Ok(ExitCode::SUCCESS)
}

/// `pablo fork [ID] [--at TURN]`: a new session from turns 1 to TURN of the old one.
pub fn fork(common: &Common, id: Option<String>, last: bool, at: Option<u32>) -> Result<ExitCode> {
    let (id, _) = find_session(common, id.as_deref(), last)?;
    let (new_id, turns) = pablo::launch::export::fork_session(&id, at)?;
    outln!("{new_id}");
    eprintln!(
        "pablo: session {new_id} holds turns 1 to {turns} of {id} (files untouched); continue it \
         with `pablo resume {new_id}`"
    );
    Ok(ExitCode::SUCCESS)
}

/// Writes `text` beside `path` and renames it over, so a reader sees the old file or the new.
pub(crate) fn write_whole(path: &Path, text: &str) -> Result<()> {
    let name = path
        .file_name()
        .with_context(|| format!("{} names no file", path.display()))?;
    let tmp = path.with_file_name(format!(
        ".{}.pablo-{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.with_context(|| format!("cannot write {}", path.display()))
}

/// When a session is resumed from another directory, the person chooses where it continues
/// (before the full-screen view takes the terminal). Without a terminal to ask, the original
/// workspace wins, as with `pablo run --resume`.
pub(crate) fn choose_resume_workspace(id: &str, original: PathBuf) -> Result<PathBuf> {
    use std::io::{BufRead, IsTerminal, Write};
    let cwd = std::env::current_dir()?;
    let cwd = cwd.canonicalize().unwrap_or(cwd);
    if cwd == original || !std::io::stdin().is_terminal() {
        return Ok(original);
    }
    let mut err = std::io::stderr().lock();
    write!(
        err,
        "session {} worked in {}\nyou are in {}\ncontinue in the original workspace? [Y/n] ",
        id,
        original.display(),
        cwd.display()
    )?;
    err.flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(match answer.trim().to_ascii_lowercase().as_str() {
        "n" | "no" => cwd,
        _ => original,
    })
}

/// The session named by `id` (a unique prefix is enough), or with `last` the most recent one of
/// the workspace (`--workspace` or the current directory): its id and the workspace it worked in.
pub(crate) fn find_session(
    common: &Common,
    id: Option<&str>,
    last: bool,
) -> Result<(String, PathBuf)> {
    let store = pablo::session::default_store()?;
    if last || id.is_none() {
        let ws = match &common.workspace {
            Some(w) => w.clone(),
            None => std::env::current_dir()?,
        };
        let info = store.last_for_workspace(&ws).ok_or_else(|| {
            pablo::session::SessionError::NoneForWorkspace {
                workspace: ws.display().to_string(),
            }
        })?;
        return Ok((info.id, PathBuf::from(info.workspace)));
    }
    let id = store.resolve(id.unwrap_or_default())?;
    // The header, not the summary: the journal is read once, by what opens it.
    let workspace = store.workspace_of(&id)?;
    Ok((id, PathBuf::from(workspace)))
}

/// A resumed session works in its original workspace unless `--workspace` says otherwise; either
/// way a difference from where pablo was started is said out loud (stderr, so `--json` stays
/// clean).
pub(crate) fn resume_workspace(
    common: &Common,
    id: &str,
    original: PathBuf,
) -> Result<LaunchOptions> {
    let mut options = common.launch_options(Front::Headless);
    match &options.workspace {
        Some(w) => {
            let w = w.canonicalize().unwrap_or_else(|_| w.clone());
            if w != original {
                eprintln!(
                    "pablo: session {} worked in {}; continuing it in {} as --workspace asks",
                    id,
                    original.display(),
                    w.display()
                );
            }
        }
        None => {
            let cwd = std::env::current_dir()?;
            let cwd = cwd.canonicalize().unwrap_or(cwd);
            if cwd != original {
                eprintln!(
                    "pablo: session {} worked in {}, not in the current directory {}; continuing \
                     it in {} (pass --workspace DIR to continue elsewhere)",
                    id,
                    original.display(),
                    cwd.display(),
                    original.display()
                );
            }
            options.workspace = Some(original);
        }
    }
    Ok(options)
}
