//! The sessions `benches/journal.rs` resumes and lists and `benches/shipped.rs` (its long
//! sessions) hands the binary: written by pablo's own journal writer from protocol events, read
//! back through the session store, as a long session would have left them. Included by each
//! (`#[path]`); it names `pablo-session`'s, `pablo-protocol`'s and `pablo-core`'s public API only.

// A bench whose set-up fails should stop loudly; each target that includes this uses part of it.
#![allow(clippy::expect_used, dead_code)]

use std::hint::black_box;
use std::path::Path;

use serde_json::json;

use pablo_core::EventRecorder;
use pablo_core::ToolName;
use pablo_protocol::{
    ApprovalAnswer, Event, PlanItem, PlanStatus, StopReason, ToolCall, ToolOutcome, Usage,
};
use pablo_session::{Header, Store, load_journal, new_session_id};

/// A directory of session journals.
pub struct JournalStore {
    store: Store,
}

impl JournalStore {
    /// The sessions in `dir` (which need not exist yet).
    pub fn at(dir: &Path) -> Self {
        Self {
            store: Store::at(dir),
        }
    }

    /// Writes a new session of `events` events working in `workspace`, repeating one realistic
    /// turn (see `turn`) whose file read is `body_lines` lines long (27 bytes each), and returns
    /// its id; the journal is `<dir>/<id>.jsonl`.
    pub fn write_session(&self, workspace: &str, events: usize, body_lines: usize) -> String {
        let id = new_session_id();
        let mut j = self
            .store
            .create(&Header::new(&id, workspace, "gpt-test", "openai"))
            .expect("create journal");
        let mut written = 0;
        let mut i = 0;
        while written < events {
            for e in turn(i, body_lines) {
                if written == events {
                    break;
                }
                j.record(&e).expect("record");
                written += 1;
            }
            i += 1;
        }
        j.sync().expect("sync");
        id
    }

    /// Loads and replays session `id` as a resume does; returns the transcript's length.
    pub fn load(&self, id: &str) -> usize {
        let state = self.store.load(black_box(id)).expect("load");
        let len = state.transcript.len();
        // Dropped here, inside the caller's timing, as criterion drops a returned value.
        black_box(state);
        len
    }

    /// Lists the sessions (from their summaries where those describe the journal, else by
    /// scanning it); returns how many there are.
    pub fn list(&self) -> usize {
        let l = self.store.list();
        let len = l.sessions.len();
        black_box(l);
        len
    }
}

/// Reads and parses the journal at `path` without replaying it.
pub fn journal_load_only(path: &Path) {
    black_box(load_journal(black_box(path)).expect("load"));
}

/// One realistic turn: a prompt, a model call with two tool calls, their results, the answer.
fn turn(i: usize, body_lines: usize) -> Vec<Event> {
    let calls = vec![
        ToolCall {
            id: format!("c{i}a"),
            name: ToolName::FsRead.provider().into(),
            arguments: format!(r#"{{"path":"src/module_{i}.rs"}}"#),
        },
        ToolCall {
            id: format!("c{i}b"),
            name: ToolName::PlanUpdate.provider().into(),
            arguments: r#"{"items":[{"content":"step","status":"completed"}]}"#.into(),
        },
    ];
    let body = "fn example() -> u32 { 42 }\n".repeat(body_lines);
    vec![
        Event::UserMessage {
            text: format!("please look at module {i} and fix what is wrong"),
        },
        Event::MessageCompleted {
            text: "Let me read it.".into(),
            tool_calls: calls,
        },
        Event::ToolCallBegin {
            call_id: format!("c{i}a"),
            tool: ToolName::FsRead.native().into(),
            arguments: json!({"path": format!("src/module_{i}.rs")}),
        },
        Event::ApprovalResolved {
            call_id: format!("c{i}a"),
            answer: ApprovalAnswer::AllowOnce,
        },
        Event::ToolCallEnd {
            call_id: format!("c{i}a"),
            tool: ToolName::FsRead.native().into(),
            result: ToolOutcome::ok(
                json!({"path": format!("src/module_{i}.rs"), "text": body, "revision": "ab".repeat(32)}),
            ),
        },
        Event::PlanUpdate {
            explanation: None,
            items: vec![PlanItem {
                content: "step".into(),
                status: PlanStatus::Completed,
            }],
        },
        Event::ToolCallEnd {
            call_id: format!("c{i}b"),
            tool: ToolName::PlanUpdate.native().into(),
            result: ToolOutcome::ok(json!({"updated": true, "completed": 1, "total": 1})),
        },
        Event::Usage {
            last: Usage {
                input_tokens: 1000,
                output_tokens: 50,
                cached_input_tokens: 0,
                cache_write_input_tokens: 0,
                web_searches: 0,
            },
            total: Usage {
                input_tokens: 1000 * i as u64,
                output_tokens: 50 * i as u64,
                cached_input_tokens: 0,
                cache_write_input_tokens: 0,
                web_searches: 0,
            },
        },
        Event::MessageCompleted {
            text: "Fixed: the function now returns the right value.".into(),
            tool_calls: vec![],
        },
        Event::TurnCompleted {
            stop_reason: StopReason::EndTurn,
            usage: Usage::default(),
            model_calls: Some(2),
        },
    ]
}
