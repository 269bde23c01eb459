//! Every tool's finished call as the transcript words it, with its output beneath.

use serde_json::Value;

use super::commands::command_preview;
use super::*;

/// One finished call of `tool`, its result `data`, taking `ms`.
fn finished_call(s: &mut AppState, t0: Instant, id: &str, tool: &str, args: Value, data: Value) {
    s.apply(Event::ToolCallBegin {
        call_id: id.into(),
        tool: tool.into(),
        arguments: args.clone(),
    });
    let preview = match tool {
        // As the agent sends it: a command's preview opens its (here empty) output.
        "shell.run" => command_preview(
            args["command"].as_str().unwrap_or(""),
            false,
            args["background"] == true,
        ),
        _ => Preview::Internal,
    };
    s.apply(Event::ToolCallRunning {
        call_id: id.into(),
        preview,
    });
    s.set_now(t0 + Duration::from_millis(3000));
    s.apply(Event::ToolCallEnd {
        call_id: id.into(),
        tool: tool.into(),
        result: ToolOutcome::ok(data),
    });
}

#[test]
fn every_tool_result_reads_as_a_line_of_words_with_its_output_beneath() {
    let cases: Vec<(&str, &str, Value, Value)> = vec![
        (
            "read",
            "fs.read",
            json!({"path": "src/main.rs"}),
            json!({"path": "src/main.rs", "text": "fn main() {\n    run();\n}\n", "offset": 0,
                   "next_offset": null, "total_bytes": 27, "revision": "ab12"}),
        ),
        (
            "list",
            "fs.list",
            json!({"path": "src"}),
            json!({"path": "src", "entries": [{"path": "src/bin", "kind": "dir"},
                   {"path": "src/lib.rs", "kind": "file", "size": 120},
                   {"path": "src/main.rs", "kind": "file", "size": 27}], "truncated": false}),
        ),
        (
            "search",
            "fs.search",
            json!({"query": "run("}),
            json!({"matches": [{"path": "src/main.rs", "line_number": 2, "column": 5,
                   "line": "    run();"}, {"path": "src/lib.rs", "line_number": 9, "column": 8,
                   "line": "pub fn run() {"}], "truncated": false}),
        ),
        (
            "background",
            "shell.run",
            json!({"command": "sh bin/watch.sh", "background": true}),
            json!({"session_id": "s1", "status": "running", "command": "sh bin/watch.sh",
                   "cwd": ".", "pty": false, "notify": false}),
        ),
        (
            "session_list",
            "shell.session",
            json!({"action": "list"}),
            json!({"sessions": [{"session_id": "s1", "command": "sh bin/watch.sh",
                   "status": "running", "exit_code": null},
                  {"session_id": "s2", "command": "make", "status": "exited", "exit_code": 2}]}),
        ),
        (
            "session_poll",
            "shell.session",
            json!({"action": "poll", "session_id": "s1"}),
            json!({"session_id": "s1", "status": "running", "exit_code": null, "signal": null,
                   "output": "tick 3\ntick 4\n", "new_bytes": 14}),
        ),
        (
            "session_wait",
            "shell.session",
            json!({"action": "wait", "session_id": "s1", "timeout_ms": 3000}),
            json!({"session_id": "s1", "status": "running", "exit_code": null, "signal": null,
                   "output": "tick 5\ntick 6\ntick 7\ntick 8\n", "new_bytes": 28,
                   "note": "the session is still running"}),
        ),
        (
            "session_read",
            "shell.session",
            json!({"action": "read", "session_id": "s2", "offset": 0}),
            json!({"session_id": "s2", "status": "exited", "exit_code": 2,
                   "output": "cc -c a.c\na.c:3: error: expected ';'\n", "offset": 0,
                   "next_offset": 38, "total_bytes": 38, "has_more": false}),
        ),
        (
            "session_write",
            "shell.session",
            json!({"action": "write", "session_id": "s1", "data": "q\n"}),
            json!({"session_id": "s1", "written_bytes": 2, "eof": false}),
        ),
        (
            "session_keys",
            "shell.session",
            json!({"action": "send_keys", "session_id": "s1", "keys": ["ctrl-c"]}),
            json!({"session_id": "s1", "keys_sent": 1, "application_cursor": false}),
        ),
        (
            "session_kill",
            "shell.session",
            json!({"action": "kill", "session_id": "s1"}),
            json!({"session_id": "s1", "status": "exited", "exit_code": null,
                   "signal": "SIGTERM", "output": "stopping\n", "killed": true}),
        ),
        (
            "csv_analyze",
            "csv.analyze",
            json!({"path": "prices.csv"}),
            json!({"path": "prices.csv", "delimiter": ",", "rows": 3, "warnings": [],
                   "columns": [
                {"name": "item", "index": 0, "type": "text", "values": 3, "missing": 0,
                 "distinct": 3, "top": [{"value": "bolt", "count": 1}]},
                {"name": "price", "index": 1, "type": "numeric", "values": 3, "missing": 0,
                 "distinct": 3, "min": 10.0, "max": 30.0, "sum": 60.0, "mean": 20.0,
                 "median": 20.0, "q1": 15.0, "q3": 25.0, "stddev": 10.0}]}),
        ),
        (
            "artifact_write",
            "artifact.write",
            json!({"name": "summary.md", "content": "# Summary\n"}),
            json!({"name": "summary.md", "bytes": 10,
                   "path": "/home/me/.local/share/pablo/sessions/0190a1b2/artifacts/c1/summary.md"}),
        ),
        (
            "web_fetch",
            "web.fetch",
            json!({"url": "https://docs.rs/csv"}),
            json!({"url": "https://docs.rs/csv", "status": 200, "format": "html",
                   "title": "csv - Rust", "text": "# csv\n\nFast CSV parsing.", "bytes": 5120,
                   "truncated": false, "notice": "untrusted"}),
        ),
        (
            "memory_propose",
            "memory.propose",
            json!({"text": "The person prefers tabs."}),
            json!({"proposal_id": "mem-1", "status": "proposed", "note": "inactive"}),
        ),
    ];
    for (name, tool, args, data) in cases {
        let (mut s, t0) = state();
        finished_call(&mut s, t0, "c1", tool, args, data);
        snap!(format!("result_{name}"), draw(&mut s, 80, 12));
    }
}
