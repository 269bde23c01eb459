//! Tool results in words: one line a person reads first (`wait s1: still running after 3.0 s, 4
//! new lines`), and the lines of output beneath it. Every front-end that shows results to a person
//! (the TUI's transcript, `pablo run` without `--json`) uses this, so a result never appears as
//! raw JSON and reads the same everywhere. The model gets the JSON itself; this is only for eyes.

use std::time::Duration;

use serde_json::Value;

use super::ToolOutcome;

/// What to show of one result.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResultText {
    /// The one line: what happened.
    pub headline: String,
    /// Output or entries beneath it, in order (possibly many: the front-end shows a tail).
    pub body: Vec<String>,
}

/// Describes `outcome` of a call of `tool` with `arguments`; `elapsed` is how long the call took
/// (a wait's window, a command's run), when known.
pub fn describe_result(
    tool: &str,
    arguments: &Value,
    outcome: &ToolOutcome,
    elapsed: Option<Duration>,
) -> ResultText {
    match outcome {
        ToolOutcome::Err { error, .. } => ResultText {
            headline: format!("{} ({})", error.message, error.code),
            body: Vec::new(),
        },
        ToolOutcome::Ok { data, .. } => match tool {
            "fs.read" => read(data),
            "fs.list" => list(data),
            "fs.search" => search(data),
            "fs.write" | "fs.edit" => change(tool, data),
            "shell.run" => shell_run(data),
            "shell.session" => session(arguments, data, elapsed),
            "plan.update" => plan(data),
            "csv.analyze" => csv(data),
            "artifact.write" => artifact(data),
            "web.fetch" => fetch(data),
            "memory.propose" => memory(data),
            t if t.starts_with("mcp__") => mcp(data),
            _ => other(data),
        },
    }
}

/// One line for an MCP server's state change (`mcp everything: ready, 12 tools`), or `None` for
/// one not worth a line of its own (starting, stopped).
pub fn mcp_server(view: &super::McpServerView) -> Option<String> {
    use super::McpState;
    match view.state {
        McpState::Ready => {
            let mut parts = vec![plural(view.tools.len() as u64, "tool")];
            if !view.prompts.is_empty() {
                parts.push(plural(view.prompts.len() as u64, "prompt"));
            }
            if !view.resources.is_empty() {
                parts.push(plural(view.resources.len() as u64, "resource"));
            }
            Some(format!("mcp {}: ready, {}", view.name, parts.join(", ")))
        }
        McpState::Failed => Some(format!(
            "mcp {}: failed: {}",
            view.name,
            view.reason.as_deref().unwrap_or("no reason given")
        )),
        McpState::Starting | McpState::Stopped => None,
    }
}

/// An MCP tool's result: its text, or what it returned besides.
fn mcp(data: &Value) -> ResultText {
    let text = str_of(data, "text").unwrap_or("");
    let mut body = lines_of(text);
    if let Some(s) = data.get("structured_content") {
        body.push(format!("structured: {s}"));
    }
    let mut extras = Vec::new();
    for part in data
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let kind = str_of(part, "type").unwrap_or("content");
        let what = match (str_of(part, "mime_type"), u64_of(part, "bytes")) {
            (Some(m), Some(b)) => format!("{kind} {m}, {b} bytes"),
            _ => format!("{kind} {}", str_of(part, "uri").unwrap_or("")),
        };
        extras.push(what.trim_end().to_string());
    }
    let first = text
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(100)
        .collect::<String>();
    let mut headline = format!(
        "{} on {}",
        str_of(data, "tool").unwrap_or("tool"),
        str_of(data, "server").unwrap_or("the server")
    );
    if !first.is_empty() {
        headline.push_str(": ");
        headline.push_str(&first);
    }
    if !extras.is_empty() {
        headline.push_str(&format!(" (+ {})", extras.join(", ")));
    }
    ResultText { headline, body }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn u64_of(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

fn plural(n: u64, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

/// `1.2 s`, `350 ms`, `2 min 5 s`.
pub fn seconds(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{} min {} s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

fn lines_of(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

fn read(data: &Value) -> ResultText {
    let text = str_of(data, "text")
        .or_else(|| str_of(data, "content"))
        .unwrap_or("");
    let lines = text.lines().count() as u64;
    let total = u64_of(data, "total_bytes").unwrap_or(0);
    let offset = u64_of(data, "offset").unwrap_or(0);
    let headline = match u64_of(data, "next_offset") {
        Some(next) => format!(
            "{} (bytes {offset}–{next} of {total}; more to read)",
            plural(lines, "line")
        ),
        None if offset > 0 => format!(
            "{} (bytes {offset}–{total}, the end)",
            plural(lines, "line")
        ),
        None => plural(lines, "line"),
    };
    ResultText {
        headline,
        body: Vec::new(),
    }
}

fn list(data: &Value) -> ResultText {
    let entries = data
        .get("entries")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut headline = plural(entries.len() as u64, "entry").replace("entrys", "entries");
    if data.get("truncated").and_then(Value::as_bool) == Some(true) {
        headline.push_str(" (cut at the entry limit)");
    }
    let body = entries
        .iter()
        .map(|e| {
            let name = str_of(e, "path")
                .or_else(|| str_of(e, "name"))
                .unwrap_or("?");
            match str_of(e, "kind") {
                Some("dir") => format!("{name}/"),
                _ => name.to_string(),
            }
        })
        .collect();
    ResultText { headline, body }
}

fn search(data: &Value) -> ResultText {
    let matches = data
        .get("matches")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut files: Vec<&str> = matches.iter().filter_map(|m| str_of(m, "path")).collect();
    files.sort_unstable();
    files.dedup();
    let mut headline = format!(
        "{} in {}",
        plural(matches.len() as u64, "match").replace("matchs", "matches"),
        plural(files.len() as u64, "file")
    );
    if data.get("truncated").and_then(Value::as_bool) == Some(true) {
        headline.push_str(" (cut at a limit)");
    }
    let body = matches
        .iter()
        .map(|m| {
            format!(
                "{}:{}: {}",
                str_of(m, "path").unwrap_or("?"),
                u64_of(m, "line_number").unwrap_or(0),
                str_of(m, "line").unwrap_or("").trim()
            )
        })
        .collect();
    ResultText { headline, body }
}

fn change(tool: &str, data: &Value) -> ResultText {
    let path = str_of(data, "path").unwrap_or("?");
    let verb = if data.get("created").and_then(Value::as_bool) == Some(true) {
        "created"
    } else if tool == "fs.edit" {
        "edited"
    } else {
        "replaced"
    };
    let mut headline = format!(
        "{verb} {path} (+{} −{})",
        u64_of(data, "added").unwrap_or(0),
        u64_of(data, "removed").unwrap_or(0)
    );
    if let Some(by) = str_of(data, "written_by") {
        headline.push_str(&format!(", written by the {by}"));
    }
    ResultText {
        headline,
        body: Vec::new(),
    }
}

fn exit_words(data: &Value) -> String {
    match (
        data.get("exit_code").and_then(Value::as_i64),
        str_of(data, "signal"),
    ) {
        (Some(code), _) => format!("exited {code}"),
        (None, Some(signal)) => format!("exited on {signal}"),
        (None, None) => "exited".to_string(),
    }
}

fn shell_run(data: &Value) -> ResultText {
    if let Some(id) = str_of(data, "session_id") {
        return ResultText {
            headline: format!("started background session {id}"),
            body: Vec::new(),
        };
    }
    let took = u64_of(data, "duration_ms").map(|ms| seconds(Duration::from_millis(ms)));
    let mut headline = if data.get("timed_out").and_then(Value::as_bool) == Some(true) {
        format!("timed out after {}", took.clone().unwrap_or_default())
    } else {
        let mut h = exit_words(data);
        if let Some(t) = &took {
            h.push_str(&format!(" after {t}"));
        }
        h
    };
    let output = str_of(data, "output").unwrap_or("");
    headline.push_str(&format!(
        ", {}",
        plural(output.lines().count() as u64, "line")
    ));
    if data.get("truncated").and_then(Value::as_bool) == Some(true) {
        headline.push_str(" (middle cut; the whole output is saved)");
    }
    ResultText {
        headline,
        body: lines_of(output),
    }
}

fn session(arguments: &Value, data: &Value, elapsed: Option<Duration>) -> ResultText {
    let action = str_of(arguments, "action").unwrap_or("?");
    let id = str_of(data, "session_id")
        .or_else(|| str_of(arguments, "session_id"))
        .unwrap_or("");
    let running = str_of(data, "status") == Some("running");
    let output = str_of(data, "screen")
        .or_else(|| str_of(data, "output"))
        .unwrap_or("");
    let new_lines = plural(output.lines().count() as u64, "new line");
    let state = if running {
        "running".to_string()
    } else {
        exit_words(data)
    };
    let (headline, body) = match action {
        "list" => {
            let sessions = data
                .get("sessions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let body = sessions
                .iter()
                .map(|s| {
                    let state = if str_of(s, "status") == Some("running") {
                        "running".to_string()
                    } else {
                        exit_words(s)
                    };
                    format!(
                        "{}  {state}  {}",
                        str_of(s, "session_id").unwrap_or("?"),
                        str_of(s, "command").unwrap_or("")
                    )
                })
                .collect();
            (plural(sessions.len() as u64, "session"), body)
        }
        "wait" if running => {
            let after = elapsed.map(|e| format!(" after {}", seconds(e)));
            (
                format!(
                    "wait {id}: still running{}, {new_lines}",
                    after.unwrap_or_default()
                ),
                lines_of(output),
            )
        }
        "wait" | "poll" => (
            format!("{action} {id}: {state}, {new_lines}"),
            lines_of(output),
        ),
        "read" => {
            let offset = u64_of(data, "offset").unwrap_or(0);
            let next = u64_of(data, "next_offset").unwrap_or(offset);
            let total = u64_of(data, "total_bytes").unwrap_or(0);
            let more = if data.get("has_more").and_then(Value::as_bool) == Some(true) {
                "; more to read"
            } else {
                ""
            };
            (
                format!("read {id}: bytes {offset}–{next} of {total}{more} ({state})"),
                lines_of(output),
            )
        }
        "write" => (
            format!(
                "write {id}: sent {}{}",
                plural(u64_of(data, "written_bytes").unwrap_or(0), "byte"),
                if data.get("eof").and_then(Value::as_bool) == Some(true) {
                    " and closed stdin"
                } else {
                    ""
                }
            ),
            Vec::new(),
        ),
        "send_keys" => {
            let keys = arguments
                .get("keys")
                .and_then(Value::as_array)
                .map(|k| {
                    k.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default();
            (format!("send_keys {id}: {keys}"), Vec::new())
        }
        "kill" => (format!("kill {id}: {state}"), lines_of(output)),
        other => (format!("{other} {id}: {state}"), lines_of(output)),
    };
    ResultText { headline, body }
}

fn plan(data: &Value) -> ResultText {
    let headline = match (u64_of(data, "completed"), u64_of(data, "total")) {
        (Some(c), Some(t)) => format!("{c}/{t} done"),
        _ => "updated".to_string(),
    };
    ResultText {
        headline,
        body: Vec::new(),
    }
}

/// `prices.csv: 3 rows, 2 columns`, then a line per column with its type and key figures.
fn csv(data: &Value) -> ResultText {
    let columns = data
        .get("columns")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let headline = format!(
        "{}: {}, {}",
        str_of(data, "path").unwrap_or("the file"),
        plural(u64_of(data, "rows").unwrap_or(0), "row"),
        plural(columns.len() as u64, "column")
    );
    let num = |c: &Value, k: &str| c.get(k).and_then(Value::as_f64).map(|v| format!("{k} {v}"));
    let mut body: Vec<String> = columns
        .iter()
        .map(|c| {
            let kind = str_of(c, "type").unwrap_or("?");
            let mut parts = vec![
                format!("{}: {kind}", str_of(c, "name").unwrap_or("?")),
                format!("{} values", u64_of(c, "values").unwrap_or(0)),
                format!("{} missing", u64_of(c, "missing").unwrap_or(0)),
            ];
            match kind {
                "numeric" => parts.extend(
                    ["min", "max", "mean", "median"]
                        .iter()
                        .filter_map(|k| num(c, k)),
                ),
                "boolean" => parts.push(format!(
                    "{} true, {} false",
                    u64_of(c, "true").unwrap_or(0),
                    u64_of(c, "false").unwrap_or(0)
                )),
                "date" => parts.push(format!(
                    "{} to {}",
                    str_of(c, "first").unwrap_or("?"),
                    str_of(c, "last").unwrap_or("?")
                )),
                _ => parts.push(format!("{} distinct", u64_of(c, "distinct").unwrap_or(0))),
            }
            parts.join(", ")
        })
        .collect();
    if let Some(w) = data.get("warnings").and_then(Value::as_array) {
        body.extend(
            w.iter()
                .filter_map(Value::as_str)
                .map(|w| format!("warning: {w}")),
        );
    }
    ResultText { headline, body }
}

fn artifact(data: &Value) -> ResultText {
    ResultText {
        headline: format!(
            "saved {} ({} bytes)",
            str_of(data, "name").unwrap_or("?"),
            u64_of(data, "bytes").unwrap_or(0)
        ),
        body: str_of(data, "path")
            .map(str::to_string)
            .into_iter()
            .collect(),
    }
}

/// `200 https://docs.rs/csv: html, 31 lines`, then the page's text.
fn fetch(data: &Value) -> ResultText {
    let text = str_of(data, "text").unwrap_or("");
    let lines = lines_of(text);
    let mut headline = format!(
        "{} {}: {}, {}",
        u64_of(data, "status").unwrap_or(0),
        str_of(data, "url").unwrap_or("?"),
        str_of(data, "format").unwrap_or("text"),
        plural(lines.len() as u64, "line")
    );
    if data.get("truncated").and_then(Value::as_bool) == Some(true) {
        headline.push_str(" (cut)");
    }
    let mut body = Vec::new();
    if let Some(t) = str_of(data, "title") {
        body.push(format!("title: {t}"));
    }
    body.extend(lines);
    ResultText { headline, body }
}

fn memory(data: &Value) -> ResultText {
    ResultText {
        headline: format!(
            "proposed {} — inactive until you accept it (/memory)",
            str_of(data, "proposal_id").unwrap_or("?")
        ),
        body: Vec::new(),
    }
}

/// A tool without its own wording: the top-level fields as `key: value`, never a JSON blob.
fn other(data: &Value) -> ResultText {
    match data {
        Value::Object(map) => {
            let parts: Vec<String> = map
                .iter()
                .filter(|(_, v)| !v.is_object() && !v.is_array())
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k}: {}", first_line(s)),
                    v => format!("{k}: {v}"),
                })
                .collect();
            ResultText {
                headline: if parts.is_empty() {
                    "done".to_string()
                } else {
                    parts.join(", ")
                },
                body: Vec::new(),
            }
        }
        Value::String(s) => ResultText {
            headline: first_line(s).to_string(),
            body: lines_of(s).into_iter().skip(1).collect(),
        },
        Value::Null => ResultText {
            headline: "done".to_string(),
            body: Vec::new(),
        },
        v => ResultText {
            headline: v.to_string(),
            body: Vec::new(),
        },
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// The message the model receives: the person's words, then each attached file.
pub fn with_attachments(text: &str, files: &[super::Attachment]) -> String {
    let mut out = text.to_string();
    for f in files {
        out.push_str(&format!(
            "\n\n<attached-file path=\"{}\">\n{}\n</attached-file>",
            f.path, f.text
        ));
        if f.truncated {
            out.push_str(&format!(
                "\n[only the first {} of the {} bytes of {} are attached]",
                f.text.len(),
                f.bytes,
                f.path
            ));
        }
    }
    out
}

/// The message's text with a line naming each attached image (the image itself goes beside the
/// text as an image part), so the model knows which picture is which file.
pub fn with_images(text: &str, images: &[super::ImageAttachment]) -> String {
    let mut out = text.to_string();
    for i in images {
        out.push_str(&format!(
            "\n\n<attached-image path=\"{}\" type=\"{}\" bytes=\"{}\"/>",
            i.path, i.image.media_type, i.image.bytes
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::True;

    fn ok(tool: &str, args: Value, data: Value, elapsed: Option<Duration>) -> ResultText {
        describe_result(tool, &args, &ToolOutcome::Ok { ok: True, data }, elapsed)
    }

    #[test]
    fn a_wait_that_times_out_says_still_running_with_its_window_and_new_lines() {
        let r = ok(
            "shell.session",
            json!({"action": "wait", "session_id": "s1"}),
            json!({"session_id": "s1", "status": "running", "exit_code": null, "signal": null,
                   "output": "a\nb\nc\nd\n", "new_bytes": 8}),
            Some(Duration::from_millis(3000)),
        );
        assert_eq!(
            r.headline,
            "wait s1: still running after 3.0 s, 4 new lines"
        );
        assert_eq!(r.body, ["a", "b", "c", "d"]);
    }

    #[test]
    fn a_kill_says_how_the_session_ended() {
        let r = ok(
            "shell.session",
            json!({"action": "kill", "session_id": "s1"}),
            json!({"session_id": "s1", "status": "exited", "exit_code": null,
                   "signal": "SIGTERM", "output": "", "killed": true}),
            None,
        );
        assert_eq!(r.headline, "kill s1: exited on SIGTERM");
    }

    #[test]
    fn catalog_results_read_as_words() {
        let r = ok(
            "csv.analyze",
            json!({"path": "p.csv"}),
            json!({"path": "p.csv", "rows": 3, "columns": [
                {"name": "price", "type": "numeric", "values": 3, "missing": 0, "distinct": 3,
                 "min": 10.0, "max": 30.0, "mean": 20.0, "median": 20.0},
                {"name": "ok", "type": "boolean", "values": 3, "missing": 0, "distinct": 2,
                 "true": 2, "false": 1}],
                "warnings": ["column \"x\" is mostly numeric"]}),
            None,
        );
        assert_eq!(r.headline, "p.csv: 3 rows, 2 columns");
        assert_eq!(
            r.body,
            [
                "price: numeric, 3 values, 0 missing, min 10, max 30, mean 20, median 20",
                "ok: boolean, 3 values, 0 missing, 2 true, 1 false",
                "warning: column \"x\" is mostly numeric",
            ]
        );
        let r = ok(
            "web.fetch",
            json!({}),
            json!({"status": 200, "url": "https://docs.rs/csv", "format": "html",
                   "title": "csv", "text": "# csv\n\nFast CSV", "truncated": false}),
            None,
        );
        assert_eq!(r.headline, "200 https://docs.rs/csv: html, 3 lines");
        assert_eq!(r.body, ["title: csv", "# csv", "", "Fast CSV"]);
    }

    #[test]
    fn no_result_headline_is_json() {
        let cases = [
            (
                "fs.read",
                json!({"path": "a"}),
                json!({"path": "a", "text": "x\ny\n", "offset": 0,
                "next_offset": null, "total_bytes": 4, "revision": "r"}),
            ),
            (
                "fs.list",
                json!({}),
                json!({"path": "", "entries": [{"path": "src", "kind": "dir"}],
                "truncated": false}),
            ),
            (
                "fs.search",
                json!({"query": "x"}),
                json!({"matches": [{"path": "a.rs",
                "line_number": 3, "column": 1, "line": "let x = 1;"}], "truncated": false}),
            ),
            (
                "fs.edit",
                json!({}),
                json!({"path": "a.rs", "created": false, "added": 1,
                "removed": 1}),
            ),
            (
                "shell.run",
                json!({}),
                json!({"exit_code": 0, "duration_ms": 1200,
                "timed_out": false, "output": "ok\n", "truncated": false}),
            ),
            (
                "shell.session",
                json!({"action": "list"}),
                json!({"sessions": []}),
            ),
            (
                "web.fetch",
                json!({}),
                json!({"status": 200, "url": "https://example.org/"}),
            ),
            (
                "csv.analyze",
                json!({}),
                json!({"path": "a.csv", "rows": 1, "columns": [{"name": "x", "type": "numeric",
                "values": 1, "missing": 0, "distinct": 1, "min": 1.0}], "warnings": []}),
            ),
            (
                "artifact.write",
                json!({}),
                json!({"name": "r.md", "path": "/d/r.md", "bytes": 3}),
            ),
            (
                "memory.propose",
                json!({}),
                json!({"proposal_id": "mem-1", "status": "proposed"}),
            ),
        ];
        for (tool, args, data) in cases {
            let r = ok(tool, args, data, None);
            assert!(!r.headline.contains('{'), "{tool}: {}", r.headline);
        }
    }
}
