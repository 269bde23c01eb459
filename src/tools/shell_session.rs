//! `shell.session` (provider name `shell_session`): look at and drive background sessions started
//! by `shell.run` with `background: true`.
//!
//! `list`, `poll`, `wait` and `read` only look; `write`, `send_keys` and `kill` act on the
//! process. The preview names the action and the session so policy can tell them apart.

use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Tool, ToolContext};
use crate::core::{ErrorCode, ToolFailure, ToolKind, ToolName};
use crate::process::session::{KEY_NAMES, SessionView, model_text};
use crate::process::{HOST_MAX_TIMEOUT, SessionStatus, ShellSettings, WINDOW_BYTES, signal_name};
use crate::protocol::Preview;

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

fn status_json(v: &SessionView) -> Value {
    let exit = v.status.exit();
    json!({
        "status": v.status.label(),
        "exit_code": exit.and_then(|e| e.code),
        "signal": exit.and_then(|e| e.signal).map(signal_name),
    })
}

fn view_json(id: &str, v: &SessionView) -> Value {
    let mut out = status_json(v);
    out["session_id"] = json!(id);
    out["output"] = json!(v.output);
    out["output_offset"] = json!(v.output_offset);
    out["new_bytes"] = json!(v.new_bytes);
    out["total_bytes"] = json!(v.total_bytes);
    out["dropped_bytes"] = json!(v.dropped_bytes);
    if let Some(screen) = &v.screen {
        out["screen"] = json!(screen);
    }
    if v.notify_enabled_now {
        out["note"] = json!(NOTIFY_NOTE);
    }
    out
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
            return Err(crate::process::ProcessError::UnknownSession { id: id.clone() }.into());
        }
        Ok(Preview::Session {
            action: a.action,
            session_id: a.session_id,
        })
    }

    async fn commit(
        &self,
        args: &Value,
        _preview: &Preview,
        ctx: &ToolContext,
    ) -> Result<Value, ToolFailure> {
        let a = parse(args)?;
        let sessions = &ctx.host.sessions;
        let id = a.session_id.clone().unwrap_or_default();
        match a.action.as_str() {
            "list" => Ok(json!({"sessions": sessions.list()})),
            "poll" => Ok(view_json(&id, &sessions.poll(&id)?)),
            "wait" => {
                let window = a
                    .timeout_ms
                    .map(Duration::from_millis)
                    .unwrap_or(self.settings.default_timeout)
                    .min(HOST_MAX_TIMEOUT);
                let v = sessions.wait(&id, window, &ctx.cancel).await?;
                let mut out = view_json(&id, &v);
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
                    out["note"] = json!(note);
                }
                Ok(out)
            }
            "read" => {
                let limit = a.limit.unwrap_or(self.settings.max_output_bytes);
                let (page, status, pty) = sessions.read(&id, a.offset, limit)?;
                let exit = status.exit();
                Ok(json!({
                    "session_id": id,
                    "status": status.label(),
                    "exit_code": exit.and_then(|e| e.code),
                    "output": model_text(&page.bytes, pty),
                    "offset": page.offset,
                    "next_offset": page.next_offset,
                    "total_bytes": page.total_bytes,
                    "has_more": page.has_more,
                    "dropped_bytes": page.dropped_bytes,
                    "skipped_bytes": page.skipped_bytes,
                }))
            }
            "write" => {
                let data = a.data.unwrap_or_default();
                let n = sessions.write(&id, data.as_bytes(), a.eof).await?;
                Ok(json!({"session_id": id, "written_bytes": n, "eof": a.eof}))
            }
            "send_keys" => {
                let keys = a.keys.unwrap_or_default();
                let app = sessions.send_keys(&id, &keys).await?;
                Ok(json!({"session_id": id, "keys_sent": keys.len(), "application_cursor": app}))
            }
            "kill" => {
                let v = sessions.kill(&id, &ctx.events).await?;
                let mut out = view_json(&id, &v);
                out["killed"] = json!(true);
                Ok(out)
            }
            other => Err(invalid(format!("unknown action {other:?}"))),
        }
    }
}
