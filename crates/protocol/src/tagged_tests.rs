//! The fast readers of [`Event`] and [`ToolOutcome`] (`tagged.rs`, `outcome.rs`) against serde's
//! derived ones: one event of every variant, then those events and some results changed at random
//! (the tag moved, keys dropped, repeated, added, retyped, the object given as a sequence). Both
//! readers must take the same inputs to the same values and refuse the same others.

use proptest::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{EVENT_VARIANTS, Event, EventAsDerived, False, ToolErrorBody, ToolOutcome, True};

/// One event of every variant, as pablo writes them (the tag first), with nested values of
/// several shapes.
fn every_variant() -> Vec<Value> {
    let usage = json!({"input_tokens": 10, "output_tokens": 2, "cached_input_tokens": 1,
                       "cache_write_input_tokens": 0, "web_searches": 1});
    vec![
        json!({"type": "session_started", "session_id": "s1", "provider": "openai",
               "model": "gpt", "workspace": "/w"}),
        json!({"type": "user_message", "text": "fix \"it\"\n\u{e9}"}),
        json!({"type": "prompt_note", "note": "plan mode"}),
        json!({"type": "message_delta", "text": "Hel"}),
        json!({"type": "reasoning_delta", "text": "hm"}),
        json!({"type": "reasoning_completed", "blocks": [
            {"kind": "thinking", "text": "t", "signature": "sig"},
            {"kind": "redacted", "data": "xx"},
            {"kind": "encrypted", "id": "r1", "summary": ["a", "b"], "encrypted_content": "e"},
            {"kind": "text", "text": "plain"}]}),
        json!({"type": "web_search", "search": {"id": "ws_1", "provider": "open_ai",
               "query": "rust serde", "error": "unavailable", "status": "failed"}}),
        json!({"type": "message_completed", "text": "Reading.", "tool_calls": [
            {"id": "c1", "name": "fs_read", "arguments": "{\"path\":\"a.rs\"}"}]}),
        json!({"type": "tool_call_begin", "call_id": "c1", "tool": "fs.read",
               "arguments": {"path": "a.rs", "offset": 0, "ratio": 0.5, "neg": -3}}),
        json!({"type": "approval_request", "call_id": "c2", "tool": "fs.write",
               "preview": {"kind": "read", "path": "a.rs"},
               "verdict": {"decision": "ask", "reasons": ["writes ask"],
                           "rule_ids": ["builtin.tool.fs.write"], "always_rule": "fs.write a.rs"}}),
        json!({"type": "preview_diagnostics", "call_id": "c2", "hunks": [0, 2],
               "diagnostics": {"state": "checking", "servers": ["rust-analyzer"]}}),
        json!({"type": "approval_resolved", "call_id": "c2", "answer": {"answer": "allow_hunks",
               "hunks": [0], "notes": [{"hunk": 2, "note": "not this"}]}}),
        json!({"type": "tool_call_running", "call_id": "c3", "preview": {"kind": "command",
               "command": "ls -l", "cwd": ".", "background": false, "pty": false, "commands": [
                   {"argv": ["ls", "-l"], "executable": "/bin/ls", "decision": "allow",
                    "rule_id": null, "reason": null}]}}),
        json!({"type": "tool_output_delta", "call_id": "c3", "chunk": "\u{1b}[1mx\r\n"}),
        json!({"type": "tool_terminal", "call_id": "c3", "terminal_id": "t1"}),
        json!({"type": "tool_call_end", "call_id": "c1", "tool": "fs.read",
               "result": {"ok": true,
                          "data": {"path": "a.rs", "text": "fn a() {}\n", "total_bytes": 10}}}),
        json!({"type": "plan_update", "explanation": null,
               "items": [{"content": "step", "status": "in_progress"}]}),
        json!({"type": "usage", "last": usage, "total": usage}),
        json!({"type": "context_usage", "used_tokens": 1200, "window_tokens": 32768,
               "cost_usd": 0.25}),
        json!({"type": "session_output", "session_id": "b1", "chunk": "out"}),
        json!({"type": "session_exited", "session_id": "b1", "exit_code": -1}),
        json!({"type": "sessions", "sessions": [{"session_id": "b1", "command": "sleep 9",
               "running": true, "exit_code": null, "pty": false, "started_ms": 1700000000000u64}]}),
        json!({"type": "rules", "rules": [{"id": "always.ls-1", "allows": "prefix /bin/ls"}],
               "removed": "always.ls-0"}),
        json!({"type": "artifacts", "artifacts": [{"name": "r.md", "path": "/d/r.md",
               "bytes": 3, "call_id": "c4"}]}),
        json!({"type": "memory", "proposals": [{"id": "mem-1", "text": "tabs",
               "status": "proposed"}], "resolved": null, "file": "/m.md"}),
        json!({"type": "files_changed", "turn": 1, "call_id": "c5", "tool": "fs.write",
               "changes": [{"path": "a.rs", "before": {"kind": "absent"},
                            "after": {"kind": "file", "hash": "ab", "size": 3, "mode": 420,
                                      "stored": true}}]}),
        json!({"type": "checkpoints", "turns": [{"turn": 1, "title": "fix", "files": ["a.rs"],
               "undone": false, "unrestorable": []}]}),
        json!({"type": "restore_plan", "plan": {"plan_id": "p1",
               "scope": {"scope": "undo", "turns": 1}, "title": "Undo turn 1", "turns": [1],
               "files": []}}),
        json!({"type": "restored", "report": {"scope": {"scope": "rewind", "turn": 2},
               "turns": [2], "restored": [], "skipped": [], "note": "restored"}}),
        json!({"type": "session_forked", "session_id": "s2", "from_session": "s1", "turn": 2,
               "text": "again"}),
        json!({"type": "mcp_server", "server": {"name": "docs", "state": "failed",
               "transport": "stdio", "required": false, "reason": "exited", "tools": [],
               "prompts": [], "resources": []}}),
        json!({"type": "mcp_question", "question": {"id": "q1", "server": "tracker",
               "message": "Which project?", "fields": [
                   {"name": "project", "required": true, "kind": {"type": "text", "max_length": 40}},
                   {"name": "count", "required": false, "kind": {"type": "number", "integer": true, "minimum": 1.0},
                    "default": 3},
                   {"name": "draft", "required": false, "kind": {"type": "boolean"}}]}}),
        json!({"type": "mcp_question_closed", "id": "q1", "server": "tracker",
               "action": "decline"}),
        json!({"type": "language_servers", "servers": [{"name": "rust-analyzer",
               "state": "ready", "restarts": 1}]}),
        json!({"type": "warning", "message": "torn line"}),
        json!({"type": "mode_changed", "mode": "auto-edit"}),
        json!({"type": "attachments", "files": [{"path": "n.txt", "bytes": 4, "truncated": false,
               "text": "note"}], "images": [{"path": "i.png", "media_type": "image/png",
               "sha256": "cd", "bytes": 9, "width": 1, "height": 1}]}),
        json!({"type": "turn_refused", "code": "image_refused", "message": "no", "text": "look"}),
        json!({"type": "model_changed", "provider": "anthropic", "model": "claude"}),
        json!({"type": "retry", "attempt": 2, "max_attempts": 5, "wait_ms": 1000,
               "reason": "503", "code": "model_http_error"}),
        json!({"type": "answer_retried", "reason": "cut", "shown_chars": 12}),
        json!({"type": "hook", "event": "pre_tool_use", "hook": "guard", "decision": "block",
               "call_id": "c6", "message": "no", "duration_ms": 4}),
        json!({"type": "error", "code": "model_http_error", "message": "500"}),
        json!({"type": "turn_completed", "stop_reason": "end_turn", "usage": usage,
               "model_calls": 2}),
        json!({"type": "context_compacted", "summary": "so far", "replaced_messages": 12}),
        json!({"type": "context_cleared", "cleared": [{"call_id": "c1", "content": "[cleared]"}],
               "tokens_before": 900, "tokens_after": 300}),
        json!({"type": "subagent_started", "call_id": "c7", "agent": "explore",
               "description": "look around", "model": "gpt"}),
        json!({"type": "subagent", "call_id": "c7", "event": {"type": "tool_call_end",
               "call_id": "s1", "tool": "fs.list",
               "result": {"ok": false, "error": {"code": "not_found", "message": "gone"}}}}),
        json!({"type": "subagent_finished", "call_id": "c7", "stop_reason": "cancelled",
               "usage": usage, "tool_calls": 3, "elapsed_ms": 1500}),
        json!({"type": "shutdown_complete"}),
    ]
}

/// serde's derived reader, the reference.
fn derived(text: &str) -> Result<Event, serde_json::Error> {
    serde_json::from_str::<EventAsDerived>(text).map(Event::from)
}

/// The two readers agree on `text`: the same event, or both refuse it.
fn assert_same_event(text: &str) {
    match (serde_json::from_str::<Event>(text), derived(text)) {
        (Ok(fast), Ok(reference)) => assert_eq!(fast, reference, "{text}"),
        (Err(_), Err(_)) => {}
        (fast, reference) => panic!("the readers disagree on {text}:\n{fast:?}\n{reference:?}"),
    }
}

#[test]
fn every_variant_reads_as_serde_derived_reader_reads_it_and_writes_back_the_same() {
    let samples = every_variant();
    let mut tags: Vec<String> = samples
        .iter()
        .map(|s| s["type"].as_str().unwrap().to_string())
        .collect();
    tags.sort();
    tags.dedup();
    assert_eq!(tags.len(), EVENT_VARIANTS, "one sample per variant");
    for sample in samples {
        let text = sample.to_string();
        let fast: Event = serde_json::from_str(&text).unwrap();
        assert_eq!(fast, derived(&text).unwrap(), "{text}");
        // Nothing of the sample was lost or added: it is what pablo writes for that event.
        assert_eq!(serde_json::to_value(&fast).unwrap(), sample, "{text}");
    }
}

#[test]
fn an_event_whose_tag_is_not_first_or_that_is_a_sequence_reads_the_same_as_before() {
    for text in [
        r#"{"text": "hi", "type": "user_message"}"#,
        r#"{"zzz": [1, {"a": null}], "text": "hi", "type": "user_message", "more": 1.5}"#,
        r#"{"call_id": "c", "result": {"data": 1, "ok": true}, "tool": "t",
            "type": "tool_call_end"}"#,
        r#"{"x": 1, "type": "shutdown_complete", "y": 2}"#,
        r#"["user_message", "hi"]"#,
        r#"["shutdown_complete"]"#,
    ] {
        let fast: Event = serde_json::from_str(text).unwrap();
        assert_eq!(fast, derived(text).unwrap(), "{text}");
    }
    for refused in [
        r#"{"type": "user_message", "text": "hi", "type": "user_message"}"#,
        r#"{"text": "hi", "type": "user_message", "type": "warning"}"#,
        r#"{"text": "hi"}"#,
        r#"{"type": "no_such_event"}"#,
        r#"{"type": 3, "text": "hi"}"#,
        r#"{"type": "user_message"}"#,
        r#"["user_message", "hi", "extra"]"#,
        r#"["shutdown_complete", 1]"#,
        r#"[]"#,
        r#""user_message""#,
    ] {
        assert!(serde_json::from_str::<Event>(refused).is_err(), "{refused}");
        assert!(derived(refused).is_err(), "{refused}");
    }
}

/// A change made to an object's entries before it is written out again.
#[derive(Debug, Clone)]
enum Change {
    /// The entry at this index (of the entries then) goes to that index.
    Move(usize, usize),
    Drop(usize),
    /// The entry is written twice, the copy at the end.
    Repeat(usize),
    /// An entry no variant knows.
    Add(Value),
    /// The entry's value becomes this one.
    Retype(usize, Value),
}

fn any_scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u32>().prop_map(|n| Value::from(f64::from(n) + 0.5)),
        "[a-z_]{0,12}".prop_map(Value::from),
        Just(json!([])),
        Just(json!({})),
        Just(json!([true, {"code": "c", "message": "m"}])),
        Just(json!({"code": "c", "message": "m"})),
        Just(json!("user_message")),
    ]
}

fn any_change() -> impl Strategy<Value = Change> {
    let i = 0usize..8;
    prop_oneof![
        (i.clone(), 0usize..8).prop_map(|(a, b)| Change::Move(a, b)),
        i.clone().prop_map(Change::Drop),
        i.clone().prop_map(Change::Repeat),
        any_scalar().prop_map(Change::Add),
        (i, any_scalar()).prop_map(|(a, v)| Change::Retype(a, v)),
    ]
}

/// The object's entries with `changes` made, written as an object (or, with `as_sequence`, as the
/// sequence of its values).
fn written(object: &Value, changes: &[Change], as_sequence: bool) -> String {
    let mut entries: Vec<(String, Value)> = object
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for change in changes {
        let n = entries.len();
        match change.clone() {
            Change::Move(a, b) if n > 0 => {
                let e = entries.remove(a % n);
                entries.insert(b % n, e);
            }
            Change::Drop(a) if n > 0 => {
                entries.remove(a % n);
            }
            Change::Repeat(a) if n > 0 => entries.push(entries[a % n].clone()),
            Change::Add(v) => entries.push(("zz_unknown".into(), v)),
            Change::Retype(a, v) if n > 0 => entries[a % n].1 = v,
            _ => {}
        }
    }
    if as_sequence {
        let values: Vec<String> = entries.iter().map(|(_, v)| v.to_string()).collect();
        return format!("[{}]", values.join(","));
    }
    let fields: Vec<String> = entries
        .iter()
        .map(|(k, v)| format!("{}:{v}", Value::from(k.as_str())))
        .collect();
    format!("{{{}}}", fields.join(","))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn changed_events_read_the_same_with_both_readers(
        which in any::<prop::sample::Index>(),
        changes in prop::collection::vec(any_change(), 0..4),
        as_sequence in prop::bool::weighted(0.1),
    ) {
        let samples = every_variant();
        let sample = which.get(&samples);
        assert_same_event(&written(sample, &changes, as_sequence));
    }

    #[test]
    fn changed_results_read_the_same_with_both_readers(
        which in 0usize..4,
        changes in prop::collection::vec(any_change(), 0..4),
        as_sequence in prop::bool::weighted(0.1),
    ) {
        let results = [
            json!({"ok": true, "data": {"path": "a", "text": "x\ny"}}),
            json!({"ok": true, "data": null}),
            json!({"ok": false, "error": {"code": "not_found", "message": "gone"}}),
            json!({"ok": false, "error": {"code": "c", "message": "m", "data": {"k": 1}}}),
        ];
        let text = written(&results[which], &changes, as_sequence);
        match (serde_json::from_str::<ToolOutcome>(&text), outcome_derived(&text)) {
            (Ok(fast), Ok(reference)) => prop_assert_eq!(fast, reference, "{}", text),
            (Err(_), Err(_)) => {}
            (fast, reference) => {
                let disagreement = format!("{text}:\n{fast:?}\n{reference:?}");
                prop_assert!(false, "the readers disagree on {}", disagreement)
            }
        }
    }
}

/// serde's derived reader of [`ToolOutcome`], the reference.
#[derive(Deserialize)]
#[serde(untagged)]
enum OutcomeAsDerived {
    Ok {
        #[allow(dead_code)]
        ok: True,
        data: Value,
    },
    Err {
        #[allow(dead_code)]
        ok: False,
        error: ToolErrorBody,
    },
}

fn outcome_derived(text: &str) -> Result<ToolOutcome, serde_json::Error> {
    serde_json::from_str::<OutcomeAsDerived>(text).map(|o| match o {
        OutcomeAsDerived::Ok { data, .. } => ToolOutcome::Ok { ok: True, data },
        OutcomeAsDerived::Err { error, .. } => ToolOutcome::Err { ok: False, error },
    })
}

#[test]
fn results_read_as_serde_derived_reader_reads_them() {
    for text in [
        r#"{"ok": true, "data": 1}"#,
        r#"{"data": [1, 2], "ok": true, "error": 5}"#,
        r#"{"ok": true, "data": null}"#,
        r#"{"ok": false, "error": {"code": "c", "message": "m"}, "data": "x", "data": 2}"#,
        r#"{"ok": true, "data": 1, "error": 1, "error": 2}"#,
    ] {
        let fast: ToolOutcome = serde_json::from_str(text).unwrap();
        assert_eq!(fast, outcome_derived(text).unwrap(), "{text}");
    }
    for refused in [
        r#"{"ok": true}"#,
        r#"{"ok": true, "data": 1, "data": 2}"#,
        r#"{"ok": true, "ok": true, "data": 1}"#,
        r#"{"ok": false, "error": {"code": "c"}}"#,
        r#"{"ok": "true", "data": 1}"#,
        r#"{"ok": false, "data": 1}"#,
        r#"[true, {"a": 1}]"#,
        r#"[false, {"code": "c", "message": "m"}]"#,
        r#"[true]"#,
        r#"null"#,
        r#""ok""#,
    ] {
        let fast = serde_json::from_str::<ToolOutcome>(refused);
        assert!(fast.is_err(), "{refused}");
        assert!(outcome_derived(refused).is_err(), "{refused}");
        // Refused with the derived reader's words.
        assert!(
            fast.unwrap_err()
                .to_string()
                .starts_with("data did not match any variant of untagged enum ToolOutcome"),
            "{refused}"
        );
    }
}
