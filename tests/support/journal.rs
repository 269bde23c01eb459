//! Session journals for the session tests, both halves: a sample of recorded events, and the
//! check that a restored history pairs every tool call with its result.

use pablo::model::Message;
use pablo::protocol::{Event, StopReason, ToolCall, ToolOutcome, Usage};

/// Every tool call of an assistant message is answered, in order, before the next message.
pub fn assert_paired(history: &[Message]) {
    let mut open: Vec<String> = Vec::new();
    for m in history {
        match m {
            Message::Tool { call_id, .. } => {
                assert_eq!(
                    open.first(),
                    Some(call_id),
                    "result out of order: {history:#?}"
                );
                open.remove(0);
            }
            Message::User { .. } | Message::Assistant { .. } => {
                assert!(open.is_empty(), "unanswered calls {open:?}: {history:#?}");
                if let Message::Assistant { tool_calls, .. } = m {
                    open = tool_calls.iter().map(|c| c.id.clone()).collect();
                }
            }
        }
    }
    assert!(open.is_empty(), "unanswered calls {open:?} at the end");
}

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: "{}".into(),
    }
}

pub fn sample_events() -> Vec<Event> {
    vec![
        Event::SessionStarted {
            session_id: "s".into(),
            provider: "scripted".into(),
            model: "m".into(),
            workspace: "/w".into(),
        },
        Event::UserMessage { text: "hi".into() },
        Event::MessageCompleted {
            text: "".into(),
            tool_calls: vec![call("a", "fs_read"), call("b", "fs_list")],
        },
        Event::ToolCallBegin {
            call_id: "a".into(),
            tool: "fs.read".into(),
            arguments: serde_json::json!({}),
        },
        Event::ToolCallEnd {
            call_id: "a".into(),
            tool: "fs.read".into(),
            result: ToolOutcome::ok(serde_json::json!({"text": "x"})),
        },
        Event::ToolCallBegin {
            call_id: "b".into(),
            tool: "fs.list".into(),
            arguments: serde_json::json!({}),
        },
        Event::ToolCallEnd {
            call_id: "b".into(),
            tool: "fs.list".into(),
            result: ToolOutcome::ok(serde_json::json!({"entries": []})),
        },
        Event::MessageCompleted {
            text: "done".into(),
            tool_calls: vec![],
        },
        Event::TurnCompleted {
            stop_reason: StopReason::EndTurn,
            usage: Usage::default(),
            model_calls: Some(2),
        },
    ]
}
