//! `shell.session` (provider name `shell_session`): look at and drive background sessions started
//! by `shell.run` with `background: true`.
//!
//! `list`, `poll`, `wait` and `read` only look; `write`, `send_keys` and `kill` act on the
//! process. The preview names the action and the session so policy can tell them apart.

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::wording::{self, Args as CallArgs, exit_words, lines_of};
use super::{Tool, ToolContext, ToolResult};
use pablo_core::{ErrorCode, ToolFailure, ToolKind, ToolName};
use pablo_process::session::{KEY_NAMES, SessionInfo, SessionView, model_text};
use pablo_process::{HOST_MAX_TIMEOUT, SessionStatus, ShellSettings, WINDOW_BYTES, signal_name};
use pablo_protocol::Preview;
use pablo_protocol::describe::{CallView, ResultView, plural};

/// What `shell.session` returns, by action.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SessionResult {
    /// `list`.
    List(SessionList),
    /// `poll`, `wait` and `kill`.
    State(SessionState),
    /// `read`.
    Page(SessionPage),
    /// `write`.
    Written(InputWritten),
    /// `send_keys`.
    Keys(KeysSent),
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionList {
    pub(crate) sessions: Vec<SessionInfo>,
}

/// Where a session is and its new output (`poll`, `wait`, `kill`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionState {
    /// `running` or `exited`.
    pub(crate) status: String,
    pub(crate) exit_code: Option<i32>,
    pub(crate) signal: Option<String>,
    pub(crate) session_id: String,
    /// New output since the previous look (its tail).
    pub(crate) output: String,
    pub(crate) output_offset: u64,
    pub(crate) new_bytes: u64,
    pub(crate) total_bytes: u64,
    pub(crate) dropped_bytes: u64,
    /// A PTY session's screen as a person would see it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) screen: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) note: Option<String>,
    /// Always `true` when present: the answer to `kill`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) killed: Option<bool>,
}

/// A page of a session's retained output (`read`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionPage {
    pub(crate) session_id: String,
    pub(crate) status: String,
    pub(crate) exit_code: Option<i32>,
    pub(crate) output: String,
    pub(crate) offset: u64,
    pub(crate) next_offset: u64,
    pub(crate) total_bytes: u64,
    pub(crate) has_more: bool,
    pub(crate) dropped_bytes: u64,
    pub(crate) skipped_bytes: u64,
}

/// Input sent to a session (`write`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct InputWritten {
    pub(crate) session_id: String,
    pub(crate) written_bytes: usize,
    /// Stdin was closed after the data.
    pub(crate) eof: bool,
}

/// Keys sent to a PTY session (`send_keys`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct KeysSent {
    pub(crate) session_id: String,
    pub(crate) keys_sent: usize,
    /// The program asked for application cursor keys (arrows were sent as such).
    pub(crate) application_cursor: bool,
}

impl SessionResult {
    /// The exit code the result reports (`Some(None)`: the session ended on a signal or is still
    /// running); `None` for results that report none.
    pub(crate) fn exit_code(&self) -> Option<Option<i32>> {
        match self {
            SessionResult::State(s) => Some(s.exit_code),
            SessionResult::Page(p) => Some(p.exit_code),
            _ => None,
        }
    }
}

pub struct ShellSession {
    settings: ShellSettings,
}

impl ShellSession {
    pub fn new(settings: ShellSettings) -> Self {
        Self { settings }
    }
}

/// The largest `data` one `write` may send.
const MAX_WRITE_BYTES: usize = 64 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    action: String,
    session_id: Option<String>,
    timeout_ms: Option<u64>,
    offset: Option<u64>,
    limit: Option<usize>,
    data: Option<String>,
    #[serde(default)]
    eof: bool,
    keys: Option<Vec<String>>,
}

const ACTIONS: &[&str] = &["list", "poll", "wait", "read", "write", "send_keys", "kill"];

fn invalid(message: String) -> ToolFailure {
    ToolFailure::new(
        ErrorCode::InvalidArguments,
        format!("shell.session: {message}"),
    )
}

fn parse(args: &Value) -> Result<Args, ToolFailure> {
    let a: Args = serde_json::from_value(args.clone()).map_err(|e| invalid(e.to_string()))?;
    if !ACTIONS.contains(&a.action.as_str()) {
        return Err(invalid(format!(
            "unknown action {:?}; expected one of {}",
            a.action,
            ACTIONS.join(", ")
        )));
    }
    if a.action != "list" && a.session_id.is_none() {
        return Err(invalid(format!("{} needs a session_id", a.action)));
    }
    match a.action.as_str() {
        "write" if a.data.is_none() && !a.eof => {
            return Err(invalid("write needs data (or eof: true)".into()));
        }
        "send_keys" if a.keys.as_ref().is_none_or(|k| k.is_empty()) => {
            return Err(invalid("send_keys needs a non-empty list of keys".into()));
        }
        _ => {}
    }
    if let Some(d) = &a.data
        && d.len() > MAX_WRITE_BYTES
    {
        return Err(invalid(format!(
            "data is {} bytes; one write sends at most {MAX_WRITE_BYTES}",
            d.len()
        )));
    }
    if let Some(keys) = &a.keys
        && let Some(bad) = keys.iter().find(|k| !KEY_NAMES.contains(&k.as_str()))
    {
        return Err(invalid(format!(
            "unknown key {bad:?}; known keys: {}",
            KEY_NAMES.join(", ")
        )));
    }
    Ok(a)
}

fn state(id: &str, v: &SessionView) -> SessionState {
    let exit = v.status.exit();
    SessionState {
        status: v.status.label().to_string(),
        exit_code: exit.and_then(|e| e.code),
        signal: exit.and_then(|e| e.signal).map(signal_name),
        session_id: id.to_string(),
        output: v.output.clone(),
        output_offset: v.output_offset,
        new_bytes: v.new_bytes,
        total_bytes: v.total_bytes,
        dropped_bytes: v.dropped_bytes,
        screen: v.screen.clone(),
        note: v.notify_enabled_now.then(|| NOTIFY_NOTE.to_string()),
        killed: None,
    }
}

/// Said once, when two `poll`/`wait` calls in a row found no new output.
const NOTIFY_NOTE: &str = "no new output on two checks in a row: you will be notified when the \
                           session exits. Stop checking; wait once, read the output or kill the \
                           session.";

#[async_trait]
impl Tool for ShellSession {
    fn name(&self) -> &'static str {
        ToolName::ShellSession.native()
    }

    fn provider_name(&self) -> &'static str {
        ToolName::ShellSession.provider()
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }

    fn description(&self) -> String {
        format!(
            "Manage background sessions started by shell_run with background: true. Actions: \
             list (all sessions); poll (state and a short preview of new output, never blocks); \
             wait (blocks until exit or timeout_ms, default {} s; status running at the end is \
             not an error, wait again if the job needs longer; prefer one wait over repeated \
             polls); read (a page of the retained output: offset/limit in bytes, default the \
             latest bytes; the last {} bytes are kept, dropped_bytes says how many were evicted); \
             write (data to stdin; eof: true closes it); send_keys (PTY sessions only: {}); kill \
             (stops the whole process group and returns the final output; the session stays \
             readable).",
            self.settings.default_timeout.as_secs(),
            WINDOW_BYTES,
            KEY_NAMES.join(", ")
        )
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ACTIONS},
                "session_id": {"type": "string"},
                "timeout_ms": {"type": "integer", "minimum": 1, "maximum": HOST_MAX_TIMEOUT.as_millis() as u64, "description": "wait: longest time to block."},
                "offset": {"type": "integer", "minimum": 0, "description": "read: absolute byte offset."},
                "limit": {"type": "integer", "minimum": 1, "maximum": WINDOW_BYTES, "description": "read: most bytes to return."},
                "data": {"type": "string", "description": "write: text for stdin (add \\n to end a line)."},
                "eof": {"type": "boolean", "description": "write: close stdin afterwards (Ctrl-D on a PTY)."},
                "keys": {"type": "array", "items": {"type": "string", "enum": KEY_NAMES}, "description": "send_keys: key names in order."}
            },
            "required": ["action"],
            "additionalProperties": false
        })
    }

    async fn preview(&self, args: &Value, ctx: &ToolContext) -> Result<Preview, ToolFailure> {
        let a = parse(args)?;
        if let Some(id) = &a.session_id
            && !ctx.host.sessions.exists(id)
        {
            return Err(pablo_process::ProcessError::UnknownSession { id: id.clone() }.into());
        }
        Ok(Preview::Session {
            action: a.action,
            session_id: a.session_id,
        })
    }

    async fn commit_result(
        &self,
        args: &Value,
        _preview: &Preview,
        ctx: &ToolContext,
    ) -> Result<ToolResult, ToolFailure> {
        let a = parse(args)?;
        let sessions = &ctx.host.sessions;
        let id = a.session_id.clone().unwrap_or_default();
        let result = match a.action.as_str() {
            "list" => SessionResult::List(SessionList {
                sessions: sessions.list(),
            }),
            "poll" => SessionResult::State(state(&id, &sessions.poll(&id)?)),
            "wait" => {
                let window = a
                    .timeout_ms
                    .map(Duration::from_millis)
                    .unwrap_or(self.settings.default_timeout)
                    .min(HOST_MAX_TIMEOUT);
                let v = sessions.wait(&id, window, &ctx.cancel).await?;
                let mut out = state(&id, &v);
                if v.status == SessionStatus::Running {
                    let mut note = format!(
                        "the session is still running after the wait window of {} ms; this is \
                         not an error. Wait again if the job needs longer, read its output, or \
                         kill it.",
                        window.as_millis()
                    );
                    // Two quiet checks in a row switched notification on: that is said too.
                    if v.notify_enabled_now {
                        note.push(' ');
                        note.push_str(NOTIFY_NOTE);
                    }
                    out.note = Some(note);
                }
                SessionResult::State(out)
            }
            "read" => {
                let limit = a.limit.unwrap_or(self.settings.max_output_bytes);
                let (page, status, pty) = sessions.read(&id, a.offset, limit)?;
                SessionResult::Page(SessionPage {
                    session_id: id,
                    status: status.label().to_string(),
                    exit_code: status.exit().and_then(|e| e.code),
                    output: model_text(&page.bytes, pty),
                    offset: page.offset,
                    next_offset: page.next_offset,
                    total_bytes: page.total_bytes,
                    has_more: page.has_more,
                    dropped_bytes: page.dropped_bytes,
                    skipped_bytes: page.skipped_bytes,
                })
            }
            "write" => {
                let data = a.data.unwrap_or_default();
                let n = sessions.write(&id, data.as_bytes(), a.eof).await?;
                SessionResult::Written(InputWritten {
                    session_id: id,
                    written_bytes: n,
                    eof: a.eof,
                })
            }
            "send_keys" => {
                let keys = a.keys.unwrap_or_default();
                let app = sessions.send_keys(&id, &keys).await?;
                SessionResult::Keys(KeysSent {
                    session_id: id,
                    keys_sent: keys.len(),
                    application_cursor: app,
                })
            }
            "kill" => {
                let v = sessions.kill(&id, &ctx.events).await?;
                SessionResult::State(SessionState {
                    killed: Some(true),
                    ..state(&id, &v)
                })
            }
            other => return Err(invalid(format!("unknown action {other:?}"))),
        };
        Ok(result.into())
    }
}

pub(crate) fn show_call(args: CallArgs<'_>) -> CallView {
    let action = args.text("action").unwrap_or_default();
    let id = args.text("session_id").unwrap_or_default();
    let title = format!(
        "Background session: {}",
        args.clipped("action").unwrap_or_default()
    );
    wording::call(
        args,
        title,
        Some(format!("{action} {id}").trim().to_string()),
    )
}

/// `running`, or how a session ended.
fn state_words(status: &str, exit_code: Option<i32>, signal: Option<&str>) -> String {
    if status == "running" {
        "running".to_string()
    } else {
        exit_words(exit_code, signal)
    }
}

/// By action: `wait s1: still running after 3.0 s, 4 new lines`, `2 sessions`, `read s1: bytes
/// 0–38 of 38 (exited 2)`, … and the output beneath.
pub(crate) fn show_result(args: CallArgs<'_>, data: &Value) -> Option<ResultView> {
    let action = args.text("action").unwrap_or_else(|| "?".into());
    let id_or = |id: &str| {
        if id.is_empty() {
            args.text("session_id").unwrap_or_default()
        } else {
            id.to_string()
        }
    };
    let view = match action.as_str() {
        "list" => {
            let list: SessionList = wording::typed(data)?;
            let body = list
                .sessions
                .iter()
                .map(|s| {
                    let state = state_words(&s.status, s.exit_code, s.signal.as_deref());
                    let id = if s.session_id.is_empty() {
                        "?"
                    } else {
                        &s.session_id
                    };
                    format!("{id}  {state}  {}", s.command)
                })
                .collect();
            ResultView::lines(plural(list.sessions.len() as u64, "session"), body)
        }
        "read" => {
            let p: SessionPage = wording::typed(data)?;
            let id = id_or(&p.session_id);
            let next = if data.get("next_offset").is_some() {
                p.next_offset
            } else {
                p.offset
            };
            let more = if p.has_more { "; more to read" } else { "" };
            let state = state_words(&p.status, p.exit_code, None);
            ResultView {
                exit_code: p.exit_code.map(i64::from),
                ..ResultView::lines(
                    format!(
                        "read {id}: bytes {}–{next} of {}{more} ({state})",
                        p.offset, p.total_bytes
                    ),
                    lines_of(&p.output),
                )
            }
        }
        "write" => {
            let w: InputWritten = wording::typed(data)?;
            let closed = if w.eof { " and closed stdin" } else { "" };
            ResultView::line(format!(
                "write {}: sent {}{closed}",
                id_or(&w.session_id),
                plural(w.written_bytes as u64, "byte")
            ))
        }
        "send_keys" => {
            let k: KeysSent = wording::typed(data)?;
            let keys = args
                .get("keys")
                .and_then(Value::as_array)
                .map(|k| {
                    k.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default();
            ResultView::line(format!("send_keys {}: {keys}", id_or(&k.session_id)))
        }
        // poll, wait, kill (and any other action: its state).
        _ => {
            let s: SessionState = wording::typed(data)?;
            let id = id_or(&s.session_id);
            let output = s.screen.as_deref().unwrap_or(&s.output);
            let new_lines = plural(wording::line_count(output) as u64, "new line");
            let running = s.status == "running";
            let state = state_words(&s.status, s.exit_code, s.signal.as_deref());
            let mut view = match action.as_str() {
                "wait" if running => {
                    let head = format!("wait {id}: still running");
                    ResultView {
                        elapsed_at: Some(head.len()),
                        ..ResultView::line(format!("{head}, {new_lines}"))
                    }
                }
                "wait" | "poll" => ResultView::line(format!("{action} {id}: {state}, {new_lines}")),
                _ => ResultView::line(format!("{action} {id}: {state}")),
            };
            view.body = lines_of(output);
            view.exit_code = s.exit_code.map(i64::from);
            view
        }
    };
    Some(view)
}
