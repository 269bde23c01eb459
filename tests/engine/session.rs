//! Session journals, listing and resume through the library.
//!
//! The agent runs for real (`pablo_agent::spawn`) against a scripted model that records every request
//! it receives; journals are real files in a temporary directory, damaged with real truncation and
//! real garbage bytes.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use pablo::core::ApprovalMode;
use pablo::core::Coded;
use pablo::model::{
    EventStream, Message, ModelClient, ModelError, ModelRequest, ModelStopReason, StreamEvent,
};
use pablo::policy::PolicyEngine;
use pablo::protocol::{
    ApprovalAnswer, Event, Op, PlanItem, PlanStatus, Preview, SessionSummary, StopReason, ToolCall,
    ToolOutcome, Usage,
};
use pablo::session::{self, Header, Journal, Store, WarningKind};
use pablo_agent::{AgentSetup, Limits};
use pablo_tools::{Catalog, Host, plan::PlanUpdate};

use crate::support::journal::{assert_paired, sample_events};

/// A model that answers from a script, one response per call, and keeps every request.
struct Scripted {
    responses: Mutex<std::collections::VecDeque<Vec<StreamEvent>>>,
    requests: Arc<Mutex<Vec<ModelRequest>>>,
    /// Pause between streamed events, so that aborts land at varied points.
    pace: Duration,
}

impl Scripted {
    fn new(responses: Vec<Vec<StreamEvent>>) -> Arc<Self> {
        Arc::new(Self {
            responses: Mutex::new(responses.into()),
            requests: Arc::default(),
            pace: Duration::ZERO,
        })
    }

    fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl ModelClient for Scripted {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        "script-1"
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        _cancel: tokio_util::sync::CancellationToken,
    ) -> Result<EventStream, ModelError> {
        self.requests.lock().unwrap().push(request.clone());
        let events = self
            .responses
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| text_reply("(script exhausted)"));
        let pace = self.pace;
        Ok(futures::stream::iter(events)
            .then(move |e| async move {
                if !pace.is_zero() {
                    tokio::time::sleep(pace).await;
                }
                Ok(e)
            })
            .boxed())
    }
}

fn text_reply(text: &str) -> Vec<StreamEvent> {
    let mid = text.len() / 2;
    vec![
        StreamEvent::TextDelta(text[..mid].to_string()),
        StreamEvent::TextDelta(text[mid..].to_string()),
        StreamEvent::Usage(Usage {
            web_searches: 0,
            input_tokens: 10,
            output_tokens: 3,
            cached_input_tokens: 0,
            cache_write_input_tokens: 0,
        }),
        StreamEvent::Completed {
            stop_reason: ModelStopReason::EndTurn,
        },
    ]
}

fn tool_reply(calls: &[(&str, &str, &str)]) -> Vec<StreamEvent> {
    let mut out: Vec<StreamEvent> = calls
        .iter()
        .map(|(id, name, args)| {
            StreamEvent::ToolCall(ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments: args.to_string(),
            })
        })
        .collect();
    out.push(StreamEvent::Completed {
        stop_reason: ModelStopReason::ToolUse,
    });
    out
}

const PLAN_ARGS: &str = r#"{"items":[{"content":"read the code","status":"completed"},{"content":"fix the bug","status":"in_progress"},{"content":"run the tests","status":"pending"}]}"#;
const BAD_PLAN_ARGS: &str = r#"{"items":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}],"explanation":"ratio 0.1 + 0.2 = 0.30000000000000004"}"#;

/// Two turns: a checklist, an unknown tool and a refused checklist, floats and unicode included.
fn two_turn_script() -> Vec<Vec<StreamEvent>> {
    vec![
        tool_reply(&[("c1", "update_plan", PLAN_ARGS)]),
        text_reply("planned — «ok» ✓"),
        tool_reply(&[
            ("c2", "no_such_tool", r#"{"x":1.5e-7}"#),
            ("c3", "update_plan", BAD_PLAN_ARGS),
        ]),
        text_reply("both failed"),
    ]
}

fn setup(
    ws: &Path,
    id: &str,
    model: Arc<Scripted>,
    history: Vec<Message>,
    journal: Journal,
) -> AgentSetup {
    let mut catalog = Catalog::new();
    catalog.register(Arc::new(PlanUpdate)).unwrap();
    AgentSetup {
        mode: Default::default(),
        model_switcher: None,
        isolator: None,
        hooks: pablo_hooks::Hooks::none(),
        session_id: id.to_string(),
        model,
        catalog,
        policy: Arc::new(PolicyEngine::default()),
        host: Arc::new(Host::new(
            Arc::new(pablo::workspace::Workspace::open(ws).unwrap()),
            ws.join(".state"),
            &Default::default(),
        )),
        limits: Limits::default(),
        approvals: ApprovalMode::RefuseAsks,
        system_prompt: "You are a test.".into(),
        history,
        recorder: Some(Box::new(journal)),
        checkpoints: None,
    }
}

/// Runs the given turns to completion, shuts the agent down, returns every event seen.
async fn run_turns(setup: AgentSetup, turns: &[&str]) -> Vec<Event> {
    let mut h = pablo_agent::spawn(setup);
    let mut seen = Vec::new();
    for t in turns {
        h.ops.send(Op::user_turn(t.to_string())).unwrap();
        loop {
            let e = tokio::time::timeout(Duration::from_secs(20), h.events.recv())
                .await
                .expect("agent stalled")
                .expect("agent ended early");
            let done = matches!(e, Event::TurnCompleted { .. });
            seen.push(e);
            if done {
                break;
            }
        }
    }
    h.ops.send(Op::Shutdown).unwrap();
    while let Some(e) = h.events.recv().await {
        seen.push(e);
    }
    h.task.await.unwrap();
    seen
}

struct Env {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    store: Store,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    let store = Store::at(tmp.path().join("data/pablo/sessions"));
    Env {
        _tmp: tmp,
        ws,
        store,
    }
}

fn new_journal(e: &Env) -> Journal {
    let id = session::new_session_id();
    e.store
        .create(&Header::new(
            &id,
            e.ws.to_string_lossy(),
            "script-1",
            "scripted",
        ))
        .unwrap()
}

fn file_bytes(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

#[tokio::test]
async fn resumed_conversation_is_exactly_what_the_model_was_sent_before_the_restart() {
    let e = env();
    let journal = new_journal(&e);
    let id = journal.id().to_string();
    let model = Scripted::new(two_turn_script());
    run_turns(
        setup(&e.ws, &id, model.clone(), Vec::new(), journal),
        &["first task\nwith details", "second task"],
    )
    .await;
    let before = model.requests();
    assert_eq!(before.len(), 4);

    let (journal, state) = e.store.resume(&id).unwrap();
    // The last request plus the answer to it is the whole conversation.
    let mut expected = before[3].messages.clone();
    expected.push(Message::Assistant {
        searches: Vec::new(),
        text: "both failed".into(),
        tool_calls: vec![],
        reasoning: vec![],
    });
    assert_eq!(state.history, expected);
    assert!(state.warnings.is_empty(), "{:?}", state.warnings);
    assert!(state.interrupted.is_empty());
    assert_eq!(state.turns, 2);
    assert_eq!(state.usage.input_tokens, 20);

    let resumed = Scripted::new(vec![text_reply("third answer")]);
    run_turns(
        setup(&e.ws, &id, resumed.clone(), state.history.clone(), journal),
        &["third task"],
    )
    .await;
    let after = resumed.requests();
    let mut continued = expected.clone();
    continued.push(Message::user("third task"));
    assert_eq!(after[0].messages, continued);
    assert_eq!(after[0].system, before[3].system);
    assert_eq!(after[0].tools, before[3].tools);
    // Byte for byte, as serialized for the wire.
    assert_eq!(
        serde_json::to_string(&after[0].messages[..before[3].messages.len()]).unwrap(),
        serde_json::to_string(&before[3].messages).unwrap()
    );

    // The journal now holds both runs; loading it again gives the whole story.
    let again = e.store.load(&id).unwrap();
    let mut whole = continued;
    whole.push(Message::Assistant {
        searches: Vec::new(),
        text: "third answer".into(),
        tool_calls: vec![],
        reasoning: vec![],
    });
    assert_eq!(again.history, whole);
    assert_eq!(again.turns, 3);
}

#[tokio::test]
async fn journal_holds_whole_messages_but_no_streaming_deltas() {
    let e = env();
    let journal = new_journal(&e);
    let id = journal.id().to_string();
    let path = journal.path().to_path_buf();
    let seen = run_turns(
        setup(
            &e.ws,
            &id,
            Scripted::new(two_turn_script()),
            vec![],
            journal,
        ),
        &["go"],
    )
    .await;
    assert!(seen.iter().any(|e| matches!(e, Event::MessageDelta { .. })));
    let text = String::from_utf8(file_bytes(&path)).unwrap();
    assert!(!text.contains("message_delta"));
    assert!(text.contains("\"message_completed\""));
    assert!(text.ends_with('\n'));
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], "header");
    assert_eq!(first["format"], 1);
    assert_eq!(first["id"], id.as_str());
    assert_eq!(first["workspace"], e.ws.to_string_lossy().as_ref());
    assert_eq!(first["model"], "script-1");
    assert_eq!(first["provider"], "scripted");
    assert_eq!(first["pablo_version"], env!("CARGO_PKG_VERSION"));
    assert!(first["created"].as_str().unwrap().ends_with('Z'));
    // Every line after the header is {"ts": …, "event": {"type": …}}.
    for line in text.lines().skip(1) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(v["ts"].is_u64(), "{line}");
        assert!(v["event"]["type"].is_string(), "{line}");
    }
}

#[tokio::test]
async fn latest_checklist_is_restored_and_listed_as_progress() {
    let e = env();
    let journal = new_journal(&e);
    let id = journal.id().to_string();
    run_turns(
        setup(
            &e.ws,
            &id,
            Scripted::new(two_turn_script()),
            vec![],
            journal,
        ),
        &["first task\nwith details", "second task"],
    )
    .await;
    let state = e.store.load(&id).unwrap();
    let plan = state.plan.clone().unwrap();
    let items: Vec<_> = plan
        .items
        .iter()
        .map(|i| (i.content.as_str(), i.status))
        .collect();
    assert_eq!(
        items,
        [
            ("read the code", PlanStatus::Completed),
            ("fix the bug", PlanStatus::InProgress),
            ("run the tests", PlanStatus::Pending),
        ]
    );
    assert!(matches!(
        state.start_events().last(),
        Some(Event::PlanUpdate { items, .. }) if items.len() == 3
    ));
    let listing = e.store.list();
    assert!(listing.warnings.is_empty(), "{:?}", listing.warnings);
    let info = &listing.sessions[0];
    assert_eq!(info.id, id);
    assert_eq!(info.title.as_deref(), Some("first task"));
    assert_eq!(info.progress().as_deref(), Some("1/3"));
    assert_eq!(info.turns, 2);
    assert_eq!(info.workspace, e.ws.to_string_lossy());
}

/// Writes a journal by hand: the header and the given events.
fn write_journal(e: &Env, events: &[Event]) -> (String, PathBuf) {
    use pablo::core::EventRecorder;
    let mut j = new_journal(e);
    for ev in events {
        j.record(ev).unwrap();
    }
    j.sync().unwrap();
    (j.id().to_string(), j.path().to_path_buf())
}

#[test]
fn torn_last_line_is_ignored_with_a_warning_and_every_complete_line_loads() {
    let e = env();
    let (id, path) = write_journal(&e, &sample_events());
    let complete = file_bytes(&path);
    let mut torn = complete.clone();
    torn.extend_from_slice(br#"{"ts":1,"event":{"type":"user_mess"#);
    std::fs::write(&path, &torn).unwrap();
    let state = e.store.load(&id).unwrap();
    assert_eq!(state.transcript, sample_events());
    assert_eq!(state.warnings.len(), 1);
    let w = &state.warnings[0];
    assert_eq!(w.kind, WarningKind::TornTail);
    assert_eq!(w.line, sample_events().len() + 2);
    assert!(w.to_string().contains("cut off"), "{w}");
    assert!(state.notes()[0].contains(&format!("line {}", w.line)));
}

#[test]
fn a_journal_cut_at_any_byte_loads_every_line_completed_before_the_cut() {
    let e = env();
    let (id, path) = write_journal(&e, &sample_events());
    let complete = file_bytes(&path);
    let header_len = complete.iter().position(|b| *b == b'\n').unwrap() + 1;
    let ends: Vec<usize> = complete
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i + 1)
        .collect();
    for cut in header_len..=complete.len() {
        std::fs::write(&path, &complete[..cut]).unwrap();
        let state = e.store.load(&id).unwrap();
        let lines_done = ends.iter().filter(|end| **end <= cut).count() - 1;
        // A line missing only its newline is complete data and is kept too.
        let kept = state.transcript.len();
        assert!(
            kept == lines_done || (kept == lines_done + 1 && ends.contains(&(cut + 1))),
            "cut at {cut}: {kept} events, {lines_done} complete lines"
        );
        assert_eq!(state.transcript[..], sample_events()[..kept]);
        assert_paired(&state.history);
        assert!(state.warnings.len() <= 1);
    }
}

#[test]
fn malformed_middle_line_is_reported_with_its_number_and_the_rest_loads() {
    let e = env();
    let (id, path) = write_journal(&e, &sample_events());
    let text = String::from_utf8(file_bytes(&path)).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    // Line 3 (the user message) becomes garbage, line 6 invalid UTF-8 inside a string.
    lines[2] = "{\"ts\": 5, \"event\": {\"type\": \"no_such_event\"}}".into();
    let mut bytes = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if i == 5 {
            bytes.extend_from_slice(b"{\"ts\":1,\"event\":\"\xff\xfe\"}");
        } else {
            bytes.extend_from_slice(l.as_bytes());
        }
        bytes.push(b'\n');
    }
    std::fs::write(&path, &bytes).unwrap();
    let state = e.store.load(&id).unwrap();
    let numbers: Vec<_> = state.warnings.iter().map(|w| (w.line, w.kind)).collect();
    assert_eq!(
        numbers,
        [(3, WarningKind::Malformed), (6, WarningKind::Malformed)]
    );
    assert!(state.warnings[0].to_string().starts_with("line 3: "));
    assert_eq!(state.transcript.len(), sample_events().len() - 2);
    assert_paired(&state.history);
    // The user message is gone but the assistant's answer and both results are there.
    assert_eq!(state.history.len(), 4);
}

#[test]
fn tool_call_cut_off_by_a_crash_gets_an_interrupted_result_and_the_history_stays_valid() {
    let e = env();
    let events = sample_events();
    // Crash after call "a" finished and "b" began.
    let (id, _) = write_journal(&e, &events[..6]);
    let state = e.store.load(&id).unwrap();
    assert_paired(&state.history);
    assert_eq!(state.interrupted.len(), 1);
    assert_eq!(state.interrupted[0].call_id, "b");
    assert!(state.interrupted[0].began);
    let Message::Tool { call_id, content } = state.history.last().unwrap() else {
        panic!("{:?}", state.history)
    };
    assert_eq!(call_id, "b");
    let result: ToolOutcome = serde_json::from_str(content).unwrap();
    assert_eq!(result.error_code(), Some(session::INTERRUPTED_CODE));
    assert!(content.contains("fs_list was interrupted"), "{content}");
    assert!(state.notes().iter().any(|n| n.contains("tool call b")));
}

#[tokio::test]
async fn interrupted_results_stay_where_the_crash_was_after_the_session_continues() {
    let e = env();
    let events = sample_events();
    let (id, _) = write_journal(&e, &events[..4]);
    let (journal, state) = e.store.resume(&id).unwrap();
    assert_eq!(state.interrupted.len(), 2);
    let resumed = Scripted::new(vec![text_reply("ok")]);
    run_turns(
        setup(&e.ws, &id, resumed.clone(), state.history.clone(), journal),
        &["again"],
    )
    .await;
    let mut expected = state.history.clone();
    expected.push(Message::user("again"));
    assert_eq!(resumed.requests()[0].messages, expected);
    let later = e.store.load(&id).unwrap();
    assert_paired(&later.history);
    assert_eq!(later.history[..expected.len()], expected[..]);
    // Those calls belong to the earlier run; nothing is interrupted now.
    assert!(later.interrupted.is_empty());
}

#[tokio::test]
async fn resuming_a_torn_journal_cuts_the_torn_bytes_so_new_lines_stay_whole() {
    let e = env();
    let (id, path) = write_journal(&e, &sample_events());
    let mut bytes = file_bytes(&path);
    bytes.extend_from_slice(br#"{"ts":1,"ev"#);
    std::fs::write(&path, &bytes).unwrap();
    let (journal, state) = e.store.resume(&id).unwrap();
    assert_eq!(state.warnings.len(), 1);
    run_turns(
        setup(
            &e.ws,
            &id,
            Scripted::new(vec![text_reply("fine")]),
            state.history,
            journal,
        ),
        &["more"],
    )
    .await;
    let later = e.store.load(&id).unwrap();
    assert!(later.warnings.is_empty(), "{:?}", later.warnings);
    assert_eq!(later.turns, 2);
}

#[test]
fn resuming_a_session_open_elsewhere_is_refused_and_its_journal_is_untouched() {
    let e = env();
    let (id, path) = write_journal(&e, &sample_events());
    let mut bytes = file_bytes(&path);
    bytes.extend_from_slice(b"{\"torn");
    std::fs::write(&path, &bytes).unwrap();
    let (_held, _) = {
        // The first resume cuts the torn tail; restore it so the second one would have work to do.
        let r = e.store.resume(&id).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"{\"torn"))
            .unwrap();
        r
    };
    let before = file_bytes(&path);
    let err = e.store.resume(&id).unwrap_err();
    assert_eq!(err.code(), "session_busy");
    assert!(err.to_string().contains(&id), "{err}");
    assert_eq!(file_bytes(&path), before);
}

#[test]
fn bad_ids_are_refused_and_nothing_is_created() {
    let e = env();
    std::fs::create_dir_all(e.store.dir()).unwrap();
    for bad in ["../../etc/passwd", "a/b", "", "x.jsonl"] {
        assert_eq!(e.store.load(bad).unwrap_err().code(), "session_invalid_id");
        assert_eq!(
            e.store.resume(bad).unwrap_err().code(),
            "session_invalid_id"
        );
        assert_eq!(
            e.store.artifacts_dir(bad).unwrap_err().code(),
            "session_invalid_id"
        );
        let h = Header::new(bad, "/w", "m", "p");
        assert_eq!(e.store.create(&h).unwrap_err().code(), "session_invalid_id");
    }
    assert_eq!(std::fs::read_dir(e.store.dir()).unwrap().count(), 0);
    let missing = e.store.load("0123").unwrap_err();
    assert_eq!(missing.code(), "session_not_found");
    assert_eq!(std::fs::read_dir(e.store.dir()).unwrap().count(), 0);
}

#[test]
fn creating_a_session_whose_id_exists_is_refused_and_the_old_journal_kept() {
    let e = env();
    let (id, path) = write_journal(&e, &sample_events());
    let before = file_bytes(&path);
    let err = e
        .store
        .create(&Header::new(&id, "/other", "m", "p"))
        .unwrap_err();
    assert_eq!(err.code(), "session_exists");
    assert_eq!(file_bytes(&path), before);
}

#[test]
fn damaged_header_or_newer_format_is_an_error_for_that_session_and_a_warning_in_the_list() {
    let e = env();
    let (good, _) = write_journal(&e, &sample_events());
    let (bad, bad_path) = write_journal(&e, &sample_events());
    let (newer, newer_path) = write_journal(&e, &sample_events());
    let mut bytes = b"#".to_vec();
    bytes.extend(file_bytes(&bad_path));
    std::fs::write(&bad_path, &bytes).unwrap();
    let text = String::from_utf8(file_bytes(&newer_path)).unwrap();
    std::fs::write(
        &newer_path,
        text.replacen("\"format\":1", "\"format\":99", 1),
    )
    .unwrap();
    let bad_before = file_bytes(&bad_path);

    assert_eq!(
        e.store.load(&bad).unwrap_err().code(),
        "session_header_invalid"
    );
    assert_eq!(
        e.store.resume(&bad).unwrap_err().code(),
        "session_header_invalid"
    );
    assert_eq!(file_bytes(&bad_path), bad_before);
    let err = e.store.load(&newer).unwrap_err();
    assert_eq!(err.code(), "session_format_unsupported");
    assert!(err.to_string().contains("99"), "{err}");

    let listing = e.store.list();
    let ids: Vec<_> = listing.sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, [good.as_str()]);
    assert_eq!(listing.warnings.len(), 2, "{:?}", listing.warnings);
    assert!(listing.warnings.iter().any(|w| w.contains(&bad)));
}

#[test]
fn listing_notices_lines_written_after_the_summary_and_rescans() {
    use std::io::Write;
    let e = env();
    let (id, path) = write_journal(&e, &sample_events());
    assert_eq!(e.store.info(&id).unwrap().turns, 1);
    // Another turn lands in the journal but the process dies before it refreshes the summary.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    for ev in [
        Event::UserMessage {
            text: "next".into(),
        },
        Event::PlanUpdate {
            explanation: None,
            items: vec![PlanItem {
                content: "x".into(),
                status: PlanStatus::Completed,
            }],
        },
        Event::TurnCompleted {
            stop_reason: StopReason::EndTurn,
            usage: Usage::default(),
            model_calls: Some(1),
        },
    ] {
        let line = serde_json::json!({"ts": 4_102_444_800_000u64, "event": ev});
        writeln!(f, "{line}").unwrap();
    }
    drop(f);
    let info = e.store.info(&id).unwrap();
    assert_eq!(info.turns, 2);
    assert_eq!(info.progress().as_deref(), Some("1/1"));
    assert_eq!(info.title.as_deref(), Some("hi"));
    assert_eq!(info.updated(), "2100-01-01T00:00:00Z");
}

#[test]
fn ids_resolve_by_unique_prefix_and_the_latest_session_of_a_workspace_is_found() {
    let e = env();
    let (a, _) = write_journal(&e, &sample_events()[..2]);
    std::thread::sleep(Duration::from_millis(5));
    let (b, _) = write_journal(&e, &sample_events()[..3]);
    assert_eq!(e.store.resolve(&a).unwrap(), a);
    assert_eq!(e.store.resolve(&b[..30]).unwrap(), b);
    // UUIDv7 ids created together share their first characters.
    let err = e.store.resolve(&a[..4]).unwrap_err();
    assert_eq!(err.code(), "session_id_ambiguous");
    assert!(err.to_string().contains(&a) && err.to_string().contains(&b));
    let last = e.store.last_for_workspace(&e.ws).unwrap();
    assert_eq!(last.id, b);
    assert!(e.store.last_for_workspace(Path::new("/nowhere")).is_none());
}

#[test]
fn background_sessions_running_at_the_stop_are_reported_lost() {
    let e = env();
    let running = |id: &str| SessionSummary {
        session_id: id.into(),
        command: format!("sleep {id}"),
        running: true,
        exit_code: None,
        pty: false,
        started_ms: 0,
    };
    let (id, _) = write_journal(
        &e,
        &[
            Event::Sessions {
                sessions: vec![running("1"), running("2")],
            },
            Event::SessionExited {
                session_id: "1".into(),
                exit_code: Some(0),
            },
        ],
    );
    let state = e.store.load(&id).unwrap();
    let lost: Vec<_> = state
        .lost_background
        .iter()
        .map(|s| s.session_id.as_str())
        .collect();
    assert_eq!(lost, ["2"]);
    assert!(
        state
            .notes()
            .iter()
            .any(|n| n.contains("background session 2") && n.contains("did not survive"))
    );
}

#[test]
fn allow_always_answers_are_restored_into_the_policy_of_the_resumed_session() {
    let e = env();
    let verdict = pablo::protocol::Verdict::ask("r", "needs approval");
    let (id, _) = write_journal(
        &e,
        &[
            Event::ApprovalRequest {
                call_id: "c1".into(),
                tool: "fs.write".into(),
                preview: Preview::Read { path: "a".into() },
                verdict: verdict.clone(),
            },
            Event::ApprovalResolved {
                call_id: "c1".into(),
                answer: ApprovalAnswer::AllowAlways,
            },
            Event::ApprovalRequest {
                call_id: "c2".into(),
                tool: "shell.run".into(),
                preview: Preview::Read { path: "b".into() },
                verdict,
            },
            Event::ApprovalResolved {
                call_id: "c2".into(),
                answer: ApprovalAnswer::AllowOnce,
            },
        ],
    );
    let state = e.store.load(&id).unwrap();
    assert_eq!(state.approvals.len(), 1);
    let policy = PolicyEngine::default();
    let mut p = Preview::Read { path: "a".into() };
    let kind = pablo::core::ToolKind::Edit;
    assert_eq!(
        policy.decide("fs.write", kind, &mut p).decision,
        pablo::protocol::Decision::Ask
    );
    state.restore_approvals(&policy).unwrap();
    assert_eq!(
        policy.decide("fs.write", kind, &mut p).decision,
        pablo::protocol::Decision::Allow
    );
    assert_eq!(
        policy.decide("shell.run", kind, &mut p).decision,
        pablo::protocol::Decision::Ask
    );
}

#[tokio::test]
async fn long_conversation_is_compacted_and_resume_sends_the_compacted_history() {
    let e = env();
    let journal = new_journal(&e);
    let id = journal.id().to_string();
    let path = journal.path().to_path_buf();
    let long = "the details of the first answer ".repeat(20);
    let model = Scripted::new(vec![
        tool_reply(&[("c1", "update_plan", PLAN_ARGS)]),
        text_reply(&long),
        text_reply("SUMMARY: plan made, first answer given"),
        text_reply("second answer"),
    ]);
    let mut s = setup(&e.ws, &id, model.clone(), vec![], journal);
    s.limits.compact_at_bytes = 1_000;
    let seen = run_turns(s, &["first task", "second task"]).await;
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    // The summary request carries the older turns and no tools.
    let summary_req = &requests[2];
    assert!(summary_req.tools.is_empty());
    assert_eq!(summary_req.messages[..3], requests[1].messages[..]);
    assert_eq!(summary_req.messages.len(), 5);
    assert!(
        matches!(&summary_req.messages[4], Message::User { text, .. } if text.contains("summary"))
    );
    // The turn's own request: the summary in place of the first turn, then the new prompt.
    let Message::User { text: summary, .. } = &requests[3].messages[0] else {
        panic!("{:?}", requests[3].messages)
    };
    assert!(summary.starts_with(pablo_agent::COMPACT_MARK), "{summary}");
    assert!(summary.ends_with("SUMMARY: plan made, first answer given"));
    assert_eq!(requests[3].messages[1..], [Message::user("second task")]);
    assert!(seen.iter().any(|ev| matches!(
        ev,
        Event::ContextCompacted {
            replaced_messages: 4,
            ..
        }
    )));

    // The journal still holds the whole first turn, and resume sends what the model last saw.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("the details of the first answer"));
    assert!(text.contains("\"context_compacted\""));
    let state = e.store.load(&id).unwrap();
    let mut expected = requests[3].messages.clone();
    expected.push(Message::Assistant {
        searches: Vec::new(),
        text: "second answer".into(),
        tool_calls: vec![],
        reasoning: vec![],
    });
    assert_eq!(state.history, expected);
    assert_eq!(state.plan.unwrap().items.len(), 3);
    assert_eq!(state.turns, 2);
}

#[tokio::test]
async fn a_summary_that_fails_leaves_the_conversation_whole_with_a_warning() {
    let e = env();
    let journal = new_journal(&e);
    let id = journal.id().to_string();
    let model = Scripted::new(vec![
        text_reply(&"a long first answer ".repeat(60)),
        // The summary stream stops before it completes.
        vec![StreamEvent::TextDelta("SUMM".into())],
        text_reply("second answer"),
    ]);
    let mut s = setup(&e.ws, &id, model.clone(), vec![], journal);
    s.limits.compact_at_bytes = 1_000;
    let seen = run_turns(s, &["first task", "second task"]).await;
    assert!(seen.iter().any(|ev| matches!(
        ev,
        Event::Warning { message } if message.contains("could not be summarized")
    )));
    assert!(
        !seen
            .iter()
            .any(|ev| matches!(ev, Event::ContextCompacted { .. }))
    );
    let requests = model.requests();
    assert_eq!(requests[2].messages.len(), 3);
    let state = e.store.load(&id).unwrap();
    assert_eq!(state.history[..3], requests[2].messages[..]);
}

/// The library counterpart of the SIGKILL test: the agent task is aborted at random points of a
/// multi-turn session; every journal loads, its history is one providers accept, and a resumed
/// agent sends exactly that history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_stopped_at_random_points_always_leaves_a_resumable_journal() {
    let e = env();
    let mut rng = fastrand::Rng::with_seed(7);
    for round in 0..25 {
        let journal = new_journal(&e);
        let id = journal.id().to_string();
        let mut script = two_turn_script();
        script.extend(two_turn_script());
        let model = Arc::new(Scripted {
            responses: Mutex::new(script.into()),
            requests: Arc::default(),
            pace: Duration::from_millis(1),
        });
        let mut h = pablo_agent::spawn(setup(&e.ws, &id, model, vec![], journal));
        for t in ["one", "two", "three", "four"] {
            h.ops.send(Op::user_turn(t)).unwrap();
        }
        let stop_after = rng.usize(1..60);
        let (mut n, mut turns) = (0, 0);
        while n < stop_after && turns < 4 {
            match tokio::time::timeout(Duration::from_secs(20), h.events.recv()).await {
                Ok(Some(ev)) => {
                    n += 1;
                    turns += usize::from(matches!(ev, Event::TurnCompleted { .. }));
                }
                Ok(None) => break,
                Err(_) => panic!("agent stalled in round {round}"),
            }
        }
        h.task.abort();
        let _ = h.task.await;
        drop(h.events);
        // The journal is closed once the recorder's task sees the channel close.
        let (journal, state) = loop {
            match e.store.resume(&id) {
                Err(err) if err.code() == "session_busy" => {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                r => break r.unwrap(),
            }
        };
        assert!(
            state.warnings.is_empty(),
            "round {round}: {:?}",
            state.warnings
        );
        assert_paired(&state.history);
        let resumed = Scripted::new(vec![text_reply("resumed")]);
        run_turns(
            setup(&e.ws, &id, resumed.clone(), state.history.clone(), journal),
            &["after"],
        )
        .await;
        let mut expected = state.history.clone();
        expected.push(Message::user("after"));
        assert_eq!(resumed.requests()[0].messages, expected, "round {round}");
    }
}
