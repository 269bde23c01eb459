//! Information blocks in the transcript (`/help`, `/ps`, `/rules`, `/mcp`, `/status`, a restore
//! report) and
//! rows of the background-session list.
//!
//! The state keeps what such a block says as data ([`Info`]); how it looks is decided here, on
//! the view's side, when a cell is rendered. So the reducer never builds styled lines and a
//! block re-renders for any width like every other cell.

use ratatui::text::{Line, Span};

use super::commands;
use super::text::str_width;
use super::theme;
use pablo_core::ErrorCode;
use pablo_protocol::{
    CustomCommand, McpServerView, McpState, RestoreAction, RestoreReport, RestoreScope,
    RuleSummary, SessionSummary, Usage, WorkMode,
};

/// What an information block in the transcript shows.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Info {
    /// `/help`: the built-in commands, the person's own, and the keys.
    Help { custom: Vec<CustomCommand> },
    /// `/skills`: the installed Agent Skills.
    Skills {
        skills: Vec<pablo_protocol::SkillSummary>,
    },
    /// `/ps`: the background sessions, with their runtimes as of `wall_ms`.
    Background {
        sessions: Vec<SessionSummary>,
        wall_ms: u64,
    },
    /// `/rules` (and `/rules remove ID`): the saved rules.
    Rules {
        rules: Vec<RuleSummary>,
        removed: Option<String>,
    },
    /// `/mcp`: every server with its state and what it offers.
    Mcp { servers: Vec<McpServerView> },
    /// What a restore (`/undo`, `/rewind`, a revert from `/diff`) did.
    Restored(RestoreReport),
    /// `/status` and `/cost` (boxed: the other blocks are far smaller).
    Status(Box<StatusReport>),
}

/// What `/status` says: the session's model, what it has spent, what it may do, where.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StatusReport {
    pub(crate) session_id: String,
    pub(crate) resume_command: Option<String>,
    pub(crate) provider: String,
    pub(crate) model: String,
    /// Tokens of the last request and the model's window.
    pub(crate) context: Option<(u64, u64)>,
    pub(crate) usage: Usage,
    pub(crate) turns: u64,
    pub(crate) cost_usd: Option<f64>,
    pub(crate) mode: WorkMode,
    /// The authority and the sandbox profile, as the status line says them.
    pub(crate) authority: String,
    pub(crate) mcp: Vec<McpServerView>,
    pub(crate) lsp: Vec<pablo_protocol::LspServerView>,
    pub(crate) workspace: String,
}

impl Info {
    /// The block's lines (unwrapped; the cell wraps them to its width).
    pub(crate) fn lines(&self) -> Vec<Line<'static>> {
        match self {
            Info::Help { custom } => help(custom),
            Info::Background { sessions, wall_ms } => background(sessions, *wall_ms),
            Info::Rules { rules, removed } => self::rules(rules, removed.as_deref()),
            Info::Mcp { servers } => mcp(servers),
            Info::Skills { skills } => self::skills(skills),
            Info::Restored(report) => restored(report),
            Info::Status(report) => status(report),
        }
    }
}

/// `/help`: every line starts with its command (or key), and the descriptions of a section start
/// in one column, two spaces after its longest command.
fn help(custom: &[CustomCommand]) -> Vec<Line<'static>> {
    let name = |c: &commands::SlashCommand| {
        if c.args.is_empty() {
            format!("/{}", c.name)
        } else {
            format!("/{} {}", c.name, c.args)
        }
    };
    let names: Vec<String> = commands::COMMANDS
        .iter()
        .map(name)
        .chain(custom.iter().map(|c| format!("/{}", c.name)))
        .collect();
    let col = names.iter().map(|n| str_width(n)).max().unwrap_or(0) + 2;
    let pad = |text: &str, col: usize| {
        let w = str_width(text);
        format!("  {text}{}", " ".repeat(col.saturating_sub(w)))
    };
    let mut lines = vec![Line::from(Span::styled("Commands", theme::heading(2)))];
    for (c, n) in commands::COMMANDS.iter().zip(&names) {
        lines.push(Line::from(vec![
            Span::styled(pad(n, col), theme::key()),
            Span::raw(c.help),
        ]));
    }
    if !custom.is_empty() {
        lines.push(Line::from(Span::styled("Your commands", theme::heading(2))));
        for c in custom {
            lines.push(Line::from(vec![
                Span::styled(pad(&format!("/{}", c.name), col), theme::key()),
                Span::raw(c.description.clone()),
                Span::styled(format!("  ({})", c.source), theme::dim()),
            ]));
        }
    }
    lines.push(Line::from(Span::styled("Keys", theme::heading(2))));
    let key_col = commands::KEYS
        .iter()
        .map(|(k, _)| str_width(k))
        .max()
        .unwrap_or(0)
        + 2;
    for (k, what) in commands::KEYS {
        lines.push(Line::from(vec![
            Span::styled(pad(k, key_col), theme::key()),
            Span::raw(*what),
        ]));
    }
    lines
}

fn background(sessions: &[SessionSummary], wall_ms: u64) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(Span::styled(
        "Background sessions",
        theme::heading(2),
    ))];
    if sessions.is_empty() {
        lines.push(Line::from(Span::styled("  none", theme::dim())));
    }
    for s in sessions {
        lines.push(session_line(s, false, wall_ms));
    }
    lines
}

/// The Julian day number of 1970-01-01.
const UNIX_EPOCH_JULIAN_DAY: i32 = 2_440_588;

/// How long ago `then_ms` was, as of `now_ms`, the way people say it: `just now`, `12 min ago`,
/// `3 h ago`, `yesterday`, `5 days ago`; past a month, the date.
pub(crate) fn ago(now_ms: u64, then_ms: u64) -> String {
    let secs = now_ms.saturating_sub(then_ms) / 1000;
    match secs {
        0..60 => "just now".into(),
        60..3_600 => format!("{} min ago", secs / 60),
        3_600..86_400 => format!("{} h ago", secs / 3_600),
        86_400..172_800 => "yesterday".into(),
        172_800..2_592_000 => format!("{} days ago", secs / 86_400),
        _ => {
            let days = (then_ms / 86_400_000) as i64;
            time::Date::from_julian_day(UNIX_EPOCH_JULIAN_DAY + days as i32)
                .map(|d| format!("{}-{:02}-{:02}", d.year(), d.month() as u8, d.day()))
                .unwrap_or_default()
        }
    }
}

/// The columns a `/resume` row keeps for the first prompt before it drops figures.
const TITLE_MIN: usize = 24;

/// One row of the `/resume` picker: the first prompt (clipped to fit), then when, how many turns,
/// what it cost, checklist progress, and the short id `pablo --resume` also takes.
pub(crate) fn resume_line(
    info: &pablo_launch::SessionInfo,
    selected: bool,
    current: bool,
    now_ms: u64,
    width: usize,
) -> Line<'static> {
    let turns = match info.turns {
        1 => "1 turn".to_string(),
        n => format!("{n} turns"),
    };
    let cost = if info.cost_usd > 0.0 {
        pablo_core::dollars(info.cost_usd)
    } else {
        String::new()
    };
    let short_id: String = info.id.chars().take(8).collect();
    // Most useful first: in a narrow terminal the last ones go, so that the prompt keeps
    // `TITLE_MIN` columns (the same for every row, so the columns stay aligned).
    let mut parts = vec![
        format!("{:>11}", ago(now_ms, info.updated_ms)),
        format!("{turns:>9}"),
        format!("{cost:>7}"),
        format!("{:>5}", info.progress().unwrap_or_default()),
        short_id,
    ];
    let mark = if current { " (this session)" } else { "" };
    let meta_of = |parts: &[String]| parts.iter().map(|p| format!("  {p}")).collect::<String>();
    let mut meta = meta_of(&parts);
    while !parts.is_empty() && width < 2 + TITLE_MIN + str_width(&meta) {
        parts.pop();
        meta = meta_of(&parts);
    }
    let title_room = width.saturating_sub(2 + str_width(&meta) + str_width(mark));
    let title = info.title.as_deref().unwrap_or("(no prompt)");
    let title = super::text::truncate(title, title_room);
    let pad = " ".repeat(title_room.saturating_sub(str_width(&title)));
    let (marker, style) = theme::row_marker(selected);
    Line::from(vec![
        marker,
        Span::styled(title, style),
        Span::styled(mark, theme::dim()),
        Span::raw(pad),
        Span::styled(meta, theme::dim()),
    ])
}

/// One row of the background-session list: id, state, runtime (as of `wall_ms`), PTY, command.
pub(crate) fn session_line(s: &SessionSummary, selected: bool, wall_ms: u64) -> Line<'static> {
    let state = if s.running {
        Span::styled("running", theme::ok())
    } else {
        match s.exit_code {
            Some(c) => Span::styled(
                format!("exit {c}"),
                if c == 0 { theme::dim() } else { theme::error() },
            ),
            None => Span::styled("killed", theme::warn()),
        }
    };
    let secs = wall_ms.saturating_sub(s.started_ms) / 1000;
    let runtime = if s.running {
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else {
        String::new()
    };
    let (marker, style) = theme::row_marker(selected);
    Line::from(vec![
        marker,
        Span::styled(format!("{:<10}", s.session_id), style),
        Span::raw(" "),
        state,
        Span::styled(format!(" {runtime:>6} "), theme::dim()),
        Span::styled(if s.pty { "pty " } else { "    " }, theme::dim()),
        Span::styled(s.command.clone(), theme::inline_code()),
    ])
}

fn rules(rules: &[RuleSummary], removed: Option<&str>) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    if let Some(id) = removed {
        lines.push(Line::from(vec![
            Span::raw("removed "),
            Span::styled(id.to_string(), theme::key()),
        ]));
    }
    lines.push(Line::from(Span::styled(
        "Saved with \"allow always\" in this workspace",
        theme::heading(2),
    )));
    if rules.is_empty() {
        lines.push(Line::from(Span::styled("  none", theme::dim())));
    }
    for r in rules {
        lines.push(Line::from(vec![
            Span::styled(format!("  {}", r.id), theme::key()),
            Span::raw("  "),
            Span::styled(r.allows.clone(), theme::inline_code()),
        ]));
    }
    if !rules.is_empty() {
        lines.push(Line::from(Span::styled(
            "  /rules remove ID forgets one",
            theme::dim(),
        )));
    }
    lines
}

/// `/skills`: each skill's name and where it was found, its description beneath.
fn skills(skills: &[pablo_protocol::SkillSummary]) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(Span::styled("Skills", theme::heading(2)))];
    if skills.is_empty() {
        lines.push(Line::from(Span::styled(
            "  none installed (~/.agents/skills/NAME/SKILL.md; see docs/skills.md)",
            theme::dim(),
        )));
    }
    for s in skills {
        lines.push(Line::from(vec![
            Span::styled(format!("  ${}", s.name), theme::key()),
            Span::styled(format!("  {}", s.source), theme::dim()),
        ]));
        lines.push(Line::from(format!("    {}", s.description)));
    }
    lines
}

fn mcp(servers: &[McpServerView]) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(Span::styled("MCP servers", theme::heading(2)))];
    if servers.is_empty() {
        lines.push(Line::from(Span::styled(
            "  none configured ([mcp_servers.NAME] in the config; see docs/mcp.md)",
            theme::dim(),
        )));
    }
    for s in servers {
        mcp_server(s, &mut lines);
    }
    lines
}

fn mcp_server(s: &McpServerView, lines: &mut Vec<Line<'static>>) {
    let (word, style) = match s.state {
        McpState::Starting => ("starting".to_string(), theme::warn()),
        McpState::Ready => (
            match s.tools.len() {
                1 => "ready, 1 tool".to_string(),
                n => format!("ready, {n} tools"),
            },
            theme::ok(),
        ),
        McpState::Failed => ("failed".to_string(), theme::error()),
        McpState::Stopped => ("stopped".to_string(), theme::dim()),
    };
    let mut head = vec![
        Span::styled(format!("  {}", s.name), theme::key()),
        Span::styled(format!("  {} ", s.transport), theme::dim()),
        Span::styled(word, style),
    ];
    if s.required {
        head.push(Span::styled("  required", theme::dim()));
    }
    lines.push(Line::from(head));
    if let Some(r) = &s.reason {
        lines.push(Line::from(Span::styled(format!("    {r}"), theme::error())));
    }
    for t in &s.tools {
        lines.push(Line::from(vec![
            Span::styled(format!("    {}", t.name), theme::inline_code()),
            Span::styled(format!("  {}", t.description), theme::dim()),
        ]));
    }
    for p in &s.prompts {
        lines.push(Line::from(vec![
            Span::styled(format!("    /{}:{}", s.name, p.name), theme::key()),
            Span::styled(format!("  {}", p.description), theme::dim()),
        ]));
    }
    for r in s.resources.iter().take(20) {
        lines.push(Line::from(vec![
            Span::styled(format!("    @{}:{}", s.name, r.uri), theme::key()),
            Span::styled(format!("  {}", r.name), theme::dim()),
        ]));
    }
    if s.resources.len() > 20 {
        lines.push(Line::from(Span::styled(
            format!("    … {} more resources", s.resources.len() - 20),
            theme::dim(),
        )));
    }
    if let Some(log) = &s.log {
        lines.push(Line::from(Span::styled(
            format!("    log {log}"),
            theme::dim(),
        )));
    }
}

fn restored(report: &RestoreReport) -> Vec<Line<'static>> {
    let what = match &report.scope {
        RestoreScope::Undo { .. } | RestoreScope::Rewind { .. } if !report.turns.is_empty() => {
            let t: Vec<String> = report.turns.iter().map(u32::to_string).collect();
            format!(
                "Undid turn{} {}",
                if t.len() == 1 { "" } else { "s" },
                t.join(", ")
            )
        }
        _ => "Reverted".to_string(),
    };
    let mut lines = vec![Line::from(Span::styled(what, theme::heading(2)))];
    if report.restored.is_empty() {
        lines.push(Line::from(Span::styled(
            "  no file was changed",
            theme::dim(),
        )));
    }
    for r in &report.restored {
        let verb = match (r.action, &r.hunks) {
            (_, Some(h)) => format!(
                "restored {} hunk{}",
                h.len(),
                if h.len() == 1 { "" } else { "s" }
            ),
            (RestoreAction::Delete, None) => "deleted".into(),
            (RestoreAction::Recreate, None) => "recreated".into(),
            (RestoreAction::Rewrite, None) => "restored".into(),
        };
        lines.push(Line::from(vec![
            Span::styled(format!("  ✓ {verb:<12} "), theme::ok()),
            Span::raw(r.path.clone()),
        ]));
    }
    for s in &report.skipped {
        let style = if s.code == ErrorCode::Deselected {
            theme::dim()
        } else {
            theme::warn()
        };
        lines.push(Line::from(vec![
            Span::styled(format!("  · {:<12} ", s.code.replace('_', " ")), style),
            Span::raw(s.path.clone()),
            Span::styled(format!("  {}", s.message), theme::dim()),
        ]));
    }
    lines
}

/// Thousands grouped with thin spaces, as the status line writes token counts.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('\u{2009}');
        }
        out.push(c);
    }
    out
}

/// What a mode lets happen without asking.
fn mode_grants(mode: WorkMode) -> &'static str {
    match mode {
        WorkMode::Ask => "file changes and commands the policy does not allow outright ask first",
        WorkMode::AutoEdit => {
            "file changes inside the write roots apply unasked; commands still ask"
        }
        WorkMode::Plan => "read-only: no file changes; the model plans",
    }
}

/// `/status`: one fact a line, a label column and its value.
/// `pyright (ready), ruff (not started yet), rust-analyzer (withheld: folder not trusted)`.
fn language_servers(servers: &[pablo_protocol::LspServerView]) -> String {
    use pablo_protocol::LspState;
    if servers.is_empty() {
        return "none found".to_string();
    }
    servers
        .iter()
        .map(|s| {
            let mut state = match s.state {
                LspState::NotStarted => "not started yet".to_string(),
                LspState::Ready => "ready".to_string(),
                LspState::Failed => "failed".to_string(),
                LspState::Withheld => "withheld: folder not trusted".to_string(),
            };
            if s.restarts > 0 {
                state.push_str(&format!(", restarted {}×", s.restarts));
            }
            if let Some(reason) = &s.reason {
                state.push_str(&format!(": {reason}"));
            }
            format!("{} ({state})", s.name)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn status(r: &StatusReport) -> Vec<Line<'static>> {
    let context = match r.context {
        Some((used, window)) if window > 0 => format!(
            "{} of {} tokens ({}%)",
            grouped(used),
            grouped(window),
            super::state::context_percent(used, window)
        ),
        _ => "no model call yet".to_string(),
    };
    let u = &r.usage;
    let usage = format!(
        "{} turn{} · {} tokens in ({} from cache) · {} out",
        r.turns,
        if r.turns == 1 { "" } else { "s" },
        grouped(u.input_tokens),
        grouped(u.cached_input_tokens),
        grouped(u.output_tokens)
    );
    let cost = match r.cost_usd {
        Some(c) => format!("${c:.4}"),
        None => "unknown (no prices for this model)".to_string(),
    };
    let mcp = if r.mcp.is_empty() {
        "none configured".to_string()
    } else {
        r.mcp
            .iter()
            .map(|s| {
                let state = match s.state {
                    McpState::Starting => "starting".to_string(),
                    McpState::Ready if s.tools.len() == 1 => "ready, 1 tool".to_string(),
                    McpState::Ready => format!("ready, {} tools", s.tools.len()),
                    McpState::Failed => "failed".to_string(),
                    McpState::Stopped => "stopped".to_string(),
                };
                format!("{} ({state})", s.name)
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let lsp = language_servers(&r.lsp);
    let session = match &r.resume_command {
        Some(cmd) if !r.session_id.is_empty() => format!("{} ({cmd})", r.session_id),
        _ => r.session_id.clone(),
    };
    let rows: [(&str, String); 10] = [
        ("model", format!("{} · {}", r.model, r.provider)),
        ("context", context),
        ("usage", usage),
        ("cost", cost),
        (
            "mode",
            format!("{}: {}", r.mode.name(), mode_grants(r.mode)),
        ),
        ("authority", r.authority.clone()),
        ("MCP", mcp),
        ("LSP", lsp),
        ("workspace", r.workspace.clone()),
        ("session", session),
    ];
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut lines = vec![Line::from(Span::styled("Status", theme::heading(2)))];
    for (label, value) in rows {
        lines.push(Line::from(vec![
            Span::styled(format!("  {label:<width$}  "), theme::key()),
            Span::raw(value),
        ]));
    }
    lines
}
