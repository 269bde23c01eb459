//! How the catalog's calls and results are shown ([`CallView`], [`ResultView`]): each tool writes
//! its own words from its arguments and its typed result, and this is the one place that picks
//! the tool by name. Front-ends reach it through `launch`, live and when a journal is replayed
//! alike, so they never switch on tool names or read a result's JSON by key.

use serde_json::Value;

use super::wording::{Args, call, lines_of};
use super::{
    agent_task, artifact_write, csv_analyze, fs_list, fs_read, fs_search, fs_write, lsp_query, mcp,
    memory_propose, plan, shell_run, shell_session, skill_load, web_fetch,
};
use pablo_core::{ToolName, is_mcp};
use pablo_protocol::describe::{CallView, ResultView, failure_view};
use pablo_protocol::{ToolOutcome, summarize_arguments};

/// How a call of `tool` (its native name, as events carry it) with `arguments` is shown.
pub fn describe_call(tool: &str, arguments: &Value) -> CallView {
    let args = Args(arguments);
    match ToolName::from_native(tool) {
        Some(ToolName::FsRead) => fs_read::show_call(args),
        Some(ToolName::FsList) => fs_list::show_call(args),
        Some(ToolName::FsSearch) => fs_search::show_call(args),
        Some(t @ (ToolName::FsWrite | ToolName::FsEdit)) => fs_write::show_call(t, args),
        Some(ToolName::ShellRun) => shell_run::show_call(args),
        Some(ToolName::ShellSession) => shell_session::show_call(args),
        Some(ToolName::PlanUpdate) => plan::show_call(args),
        Some(ToolName::WebFetch) => web_fetch::show_call(args),
        Some(ToolName::CsvAnalyze) => csv_analyze::show_call(args),
        Some(ToolName::ArtifactWrite) => artifact_write::show_call(args),
        Some(ToolName::MemoryPropose) => memory_propose::show_call(args),
        Some(ToolName::AgentTask) => agent_task::show_call(args),
        Some(ToolName::SkillLoad) => skill_load::show_call(args),
        Some(ToolName::LspQuery) => lsp_query::show_call(args),
        None => {
            let summary = summarize_arguments(arguments);
            let title = if summary.is_empty() {
                tool.to_string()
            } else {
                format!("{tool} {summary}")
            };
            call(args, title, args.text("path"))
        }
    }
}

/// How the result `outcome` of a call of `tool` with `arguments` is shown.
pub fn describe_result(tool: &str, arguments: &Value, outcome: &ToolOutcome) -> ResultView {
    let data = match outcome {
        ToolOutcome::Ok { data, .. } => data,
        ToolOutcome::Err { .. } => return failure_view(outcome).unwrap_or_default(),
    };
    let args = Args(arguments);
    let shown = match ToolName::from_native(tool) {
        Some(ToolName::FsRead) => fs_read::show_result(data),
        Some(ToolName::FsList) => fs_list::show_result(data),
        Some(ToolName::FsSearch) => fs_search::show_result(data),
        Some(t @ (ToolName::FsWrite | ToolName::FsEdit)) => fs_write::show_result(t, data),
        Some(ToolName::ShellRun) => shell_run::show_result(data),
        Some(ToolName::ShellSession) => shell_session::show_result(args, data),
        Some(ToolName::PlanUpdate) => plan::show_result(data),
        Some(ToolName::WebFetch) => web_fetch::show_result(data),
        Some(ToolName::CsvAnalyze) => csv_analyze::show_result(data),
        Some(ToolName::ArtifactWrite) => artifact_write::show_result(data),
        Some(ToolName::MemoryPropose) => memory_propose::show_result(data),
        Some(ToolName::AgentTask) => agent_task::show_result(data),
        Some(ToolName::SkillLoad) => skill_load::show_result(data),
        Some(ToolName::LspQuery) => lsp_query::show_result(data),
        None if is_mcp(tool) => mcp::result::show_result(data),
        None => None,
    };
    shown.unwrap_or_else(|| other(data))
}

/// A tool without its own wording: the top-level fields as `key: value`, never a JSON blob.
fn other(data: &Value) -> ResultView {
    let mut view = match data {
        Value::Object(map) => {
            let parts: Vec<String> = map
                .iter()
                .filter(|(_, v)| !v.is_object() && !v.is_array())
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k}: {}", first_line(s)),
                    v => format!("{k}: {v}"),
                })
                .collect();
            ResultView::line(if parts.is_empty() {
                "done".to_string()
            } else {
                parts.join(", ")
            })
        }
        Value::String(s) => {
            ResultView::lines(first_line(s), lines_of(s).into_iter().skip(1).collect())
        }
        Value::Null => ResultView::line("done"),
        v => ResultView::line(v.to_string()),
    };
    // Whatever the tool, an exit code it reports is shown with the call.
    view.exit_code = data.get("exit_code").and_then(Value::as_i64);
    view
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use pablo_protocol::True;
    use pablo_protocol::describe::ResultFact;

    /// A result as a person reads it: the headline (with the call's duration where it goes) and
    /// the lines beneath.
    struct ResultText {
        headline: String,
        body: Vec<String>,
    }

    fn ok(tool: &str, args: Value, data: Value, elapsed: Option<Duration>) -> ResultText {
        let view = describe_result(tool, &args, &ToolOutcome::Ok { ok: True, data });
        ResultText {
            headline: view.headline(elapsed),
            body: view.body,
        }
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

    #[test]
    fn a_call_about_one_file_names_it_and_its_line_for_editors_and_other_calls_name_none() {
        use pablo_protocol::describe::CallLocation;
        let at = |tool: &str, args: Value| describe_call(tool, &args).location;
        let file = |path: &str, line: Option<u32>| {
            Some(CallLocation {
                path: path.to_string(),
                line,
            })
        };
        assert_eq!(
            at("fs.read", json!({"path": "src/a.rs"})),
            file("src/a.rs", None)
        );
        assert_eq!(
            at("fs.read", json!({"path": "src/a.rs", "offset": 40})),
            file("src/a.rs", Some(40))
        );
        assert_eq!(
            at("lsp.query", json!({"path": "b.py", "line": 7, "offset": 3})),
            file("b.py", Some(7)),
            "a line wins over an offset"
        );
        assert_eq!(
            at("mcp__fs__read_file", json!({"path": "/abs/c.txt"})),
            file("/abs/c.txt", None)
        );
        assert_eq!(at("shell.run", json!({"command": "ls"})), None);
        assert_eq!(at("fs.read", json!({"path": 3})), None);
        assert_eq!(
            at("fs.read", json!({"path": "a", "line": 1u64 << 40})),
            file("a", None),
            "a line past u32 is left out"
        );
    }

    #[test]
    fn each_tool_titles_and_summarizes_its_call_in_its_own_words() {
        let call = |tool: &str, args: Value| {
            let v = describe_call(tool, &args);
            (v.title, v.summary, v.command)
        };
        let s = |t: &str, s: &str, c: bool| (t.to_string(), s.to_string(), c);
        assert_eq!(
            call("fs.read", json!({"path": "src/a.rs"})),
            s("Read src/a.rs", "src/a.rs", false)
        );
        assert_eq!(call("fs.list", json!({})), s("List .", "", false));
        assert_eq!(
            call("fs.search", json!({"query": "fn main", "path": "src"})),
            s("Search fn main", "\"fn main\" in src", false)
        );
        assert_eq!(
            call("shell.run", json!({"command": "cargo test\n--all"})),
            s("Run cargo test…", "cargo test\n--all", true)
        );
        assert_eq!(
            call(
                "shell.session",
                json!({"action": "poll", "session_id": "s1"})
            ),
            s("Background session: poll", "poll s1", false)
        );
        assert_eq!(
            call("plan.update", json!({"items": [{}, {}]})),
            s("Update plan", "2 items", false)
        );
        assert_eq!(
            call("memory.propose", json!({"text": "tabs"})),
            s("Propose a memory", "tabs", false)
        );
        assert_eq!(
            call("mcp__files__read", json!({"path": "a"})),
            s("mcp__files__read a", "a", false)
        );
        assert_eq!(
            call("mystery", json!({"n": 1})),
            s("mystery", "{\"n\":1}", false)
        );
    }

    #[test]
    fn what_a_result_did_reaches_the_front_end_as_a_fact_not_as_json() {
        let ok =
            |tool: &str, data: Value| describe_result(tool, &json!({}), &ToolOutcome::ok(data));
        let plan = ok(
            "plan.update",
            json!({"updated": true, "completed": 1, "total": 3}),
        );
        assert_eq!(plan.summary.as_deref(), Some("1/3 done"));
        assert!(plan.only_expanded);
        assert_eq!(
            ok(
                "memory.propose",
                json!({"proposal_id": "mem-2", "status": "proposed"})
            )
            .fact,
            Some(ResultFact::MemoryProposed {
                proposal_id: "mem-2".into()
            })
        );
        assert_eq!(
            ok(
                "artifact.write",
                json!({"name": "a.md", "path": "/p/a.md", "bytes": 1})
            )
            .fact,
            Some(ResultFact::ArtifactSaved)
        );
        assert_eq!(
            ok("shell.run", json!({"exit_code": 2, "output": ""})).exit_code,
            Some(2)
        );
        let refused = describe_result(
            "shell.run",
            &json!({}),
            &ToolOutcome::err("denied", "shell.run was denied by policy"),
        );
        assert_eq!(
            refused.headline(None),
            "shell.run was denied by policy (denied)"
        );
        assert_eq!(refused.exit_code, None);
    }
}
