//! A model that plays a script instead of calling a provider: `pablo demo` and tests run the real
//! agent, tools and front-end with no key and no network.
//!
//! A script is a graph of steps. Each step streams some markdown and may make tool calls; the next
//! step is chosen from how those calls came back (`ok`, `rejected`, `failed`), so the demo adapts
//! when the person rejects an edit. Arguments can quote earlier results (`{{result.0/revision}}`
//! takes the `revision` of the first result of the previous step, `{{done:STEP}}` is a checklist
//! status that is `completed` only if that step's calls succeeded), and texts can quote the
//! rejection note (`{{note}}`). A step whose tools the host did not grant is skipped.

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{
    EventStream, Message, ModelClient, ModelError, ModelRequest, ModelStopReason, StreamEvent,
    ToolCall,
};
use pablo_core::ErrorCode;
use pablo_protocol::Usage;

/// The demo script shipped with pablo.
pub const DEMO_SCRIPT: &str = include_str!("../../../assets/demo/script.json");

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub model: String,
    /// The first user message (the demo sends it on start).
    #[serde(default)]
    pub task: Option<String>,
    pub start: String,
    /// The answer to any user turn after the script has ended.
    pub after_end: String,
    /// Pause between streamed text chunks.
    #[serde(default)]
    pub chunk_delay_ms: u64,
    #[serde(default = "default_chunk_chars")]
    pub chunk_chars: usize,
    pub steps: BTreeMap<String, Step>,
}

fn default_chunk_chars() -> usize {
    6
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub calls: Vec<ScriptedCall>,
    #[serde(default)]
    pub next: Option<Next>,
    /// Where to go instead when a tool of this step is not offered.
    #[serde(default)]
    pub skip: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    /// Provider name of the tool (`fs_read`).
    pub tool: String,
    #[serde(default)]
    pub arguments: Value,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Next {
    Step(String),
    Branch {
        #[serde(default)]
        ok: Option<String>,
        #[serde(default)]
        rejected: Option<String>,
        #[serde(default)]
        failed: Option<String>,
        #[serde(default)]
        otherwise: Option<String>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("demo script: {0}")]
    Parse(String),
    #[error("demo script: step {from:?} leads to unknown step {to:?}")]
    UnknownStep { from: String, to: String },
}

impl pablo_core::Coded for ScriptError {
    fn code(&self) -> ErrorCode {
        ErrorCode::ScriptInvalid
    }
}

#[derive(Debug, Default)]
struct Cursor {
    current: Option<String>,
    finished: bool,
    calls: u64,
    /// For each step whose calls came back, whether all of them succeeded (`{{done:STEP}}`).
    succeeded: BTreeMap<String, bool>,
}

pub struct ScriptedModel {
    script: Script,
    cursor: Mutex<Cursor>,
}

/// How the previous step's calls came back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Ok,
    Rejected,
    Failed,
}

impl ScriptedModel {
    pub fn from_json(text: &str) -> Result<Self, ScriptError> {
        let script: Script =
            serde_json::from_str(text).map_err(|e| ScriptError::Parse(e.to_string()))?;
        let check = |from: &str, to: &Option<String>| -> Result<(), ScriptError> {
            match to {
                Some(t) if !script.steps.contains_key(t) => Err(ScriptError::UnknownStep {
                    from: from.into(),
                    to: t.clone(),
                }),
                _ => Ok(()),
            }
        };
        check("start", &Some(script.start.clone()))?;
        for (id, step) in &script.steps {
            check(id, &step.skip)?;
            match &step.next {
                Some(Next::Step(s)) => check(id, &Some(s.clone()))?,
                Some(Next::Branch {
                    ok,
                    rejected,
                    failed,
                    otherwise,
                }) => {
                    for t in [ok, rejected, failed, otherwise] {
                        check(id, t)?;
                    }
                }
                None => {}
            }
        }
        Ok(Self {
            script,
            cursor: Mutex::new(Cursor::default()),
        })
    }

    /// The demo's script.
    pub fn demo() -> Result<Self, ScriptError> {
        Self::from_json(DEMO_SCRIPT)
    }

    pub fn script(&self) -> &Script {
        &self.script
    }

    fn follow(&self, step: &Step, outcome: Outcome) -> Option<String> {
        match step.next.as_ref()? {
            Next::Step(s) => Some(s.clone()),
            Next::Branch {
                ok,
                rejected,
                failed,
                otherwise,
            } => match outcome {
                Outcome::Ok => ok.clone(),
                Outcome::Rejected => rejected.clone(),
                Outcome::Failed => failed.clone(),
            }
            .or_else(|| otherwise.clone()),
        }
    }

    /// Skips steps that need tools the host did not offer.
    fn offered(&self, mut id: Option<String>, tools: &HashSet<&str>) -> Option<String> {
        let mut hops = 0;
        while let Some(cur) = id.clone() {
            let step = self.script.steps.get(&cur)?;
            if step.calls.iter().all(|c| tools.contains(c.tool.as_str())) || hops > 64 {
                return Some(cur);
            }
            hops += 1;
            id = step.skip.clone().or_else(|| self.follow(step, Outcome::Ok));
        }
        None
    }
}

/// The results of the last assistant message's tool calls, parsed.
fn last_results(messages: &[Message]) -> Vec<Value> {
    let mut out: Vec<Value> = messages
        .iter()
        .rev()
        .take_while(|m| matches!(m, Message::Tool { .. }))
        .filter_map(|m| match m {
            Message::Tool { content, .. } => serde_json::from_str(content).ok(),
            _ => None,
        })
        .collect();
    out.reverse();
    out
}

fn outcome_of(results: &[Value]) -> Outcome {
    let code = |r: &Value| {
        r.pointer("/error/code")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    if results
        .iter()
        .any(|r| code(r).is_some_and(|c| c == ErrorCode::Rejected))
    {
        Outcome::Rejected
    } else if results
        .iter()
        .any(|r| r.get("ok") == Some(&Value::Bool(false)))
    {
        Outcome::Failed
    } else {
        Outcome::Ok
    }
}

/// `{{note}}`: the rejection note, or the error message of the first failure.
fn note_of(results: &[Value]) -> String {
    for r in results {
        if let Some(n) = r.pointer("/error/data/note").and_then(Value::as_str)
            && !n.trim().is_empty()
        {
            return n.trim().to_string();
        }
    }
    results
        .iter()
        .find_map(|r| r.pointer("/error/message").and_then(Value::as_str))
        .unwrap_or("no reason given")
        .to_string()
}

/// Replaces `{{result.N/pointer}}` in every string of `v` with the value at `pointer` in the data
/// of result `N`, and `{{done:STEP}}` with the checklist status of that step: `completed` when
/// its calls succeeded, else `pending` (rejected, failed, or never run), so a checklist never
/// ticks off what the person turned down.
fn fill(v: &Value, results: &[Value], succeeded: &BTreeMap<String, bool>) -> Value {
    match v {
        Value::String(s) => {
            if let Some(step) = s.strip_prefix("{{done:").and_then(|r| r.strip_suffix("}}")) {
                let done = succeeded.get(step).copied().unwrap_or(false);
                return Value::String(if done { "completed" } else { "pending" }.into());
            }
            if let Some(inner) = s
                .strip_prefix("{{result.")
                .and_then(|r| r.strip_suffix("}}"))
            {
                let (idx, ptr) = inner.split_once('/').unwrap_or((inner, ""));
                let data = idx
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| results.get(i))
                    .and_then(|r| r.get("data"));
                let ptr = if ptr.is_empty() {
                    String::new()
                } else {
                    format!("/{ptr}")
                };
                return data
                    .and_then(|d| d.pointer(&ptr))
                    .cloned()
                    .unwrap_or(Value::Null);
            }
            Value::String(s.clone())
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| fill(x, results, succeeded)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), fill(x, results, succeeded)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn estimate_tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

#[async_trait::async_trait]
impl ModelClient for ScriptedModel {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        &self.script.model
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: CancellationToken,
    ) -> Result<EventStream, ModelError> {
        let tools: HashSet<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        let results = last_results(&request.messages);
        let (text, calls) = {
            let mut cur = self.cursor.lock();
            let after_tools = matches!(request.messages.last(), Some(Message::Tool { .. }));
            let next = if cur.finished {
                None
            } else if after_tools {
                let outcome = outcome_of(&results);
                if let Some(id) = cur.current.clone() {
                    cur.succeeded.insert(id, outcome == Outcome::Ok);
                }
                let prev = cur.current.clone().and_then(|c| self.script.steps.get(&c));
                prev.and_then(|p| self.follow(p, outcome))
            } else if cur.current.is_none() {
                Some(self.script.start.clone())
            } else {
                None
            };
            let next = self.offered(next, &tools);
            match next.and_then(|id| self.script.steps.get(&id).map(|s| (id, s))) {
                Some((id, step)) => {
                    cur.current = Some(id);
                    if step.calls.is_empty() {
                        cur.finished = true;
                    }
                    let note = note_of(&results);
                    let text = step.text.replace("{{note}}", &note);
                    let mut calls = Vec::new();
                    for c in &step.calls {
                        cur.calls += 1;
                        let args = fill(&c.arguments, &results, &cur.succeeded);
                        calls.push(ToolCall {
                            id: format!("call_{}", cur.calls),
                            name: c.tool.clone(),
                            arguments: if args.is_null() {
                                "{}".into()
                            } else {
                                args.to_string()
                            },
                        });
                    }
                    (text, calls)
                }
                None => {
                    cur.finished = true;
                    (self.script.after_end.clone(), Vec::new())
                }
            }
        };
        let input_chars: usize = request.system.len()
            + request
                .messages
                .iter()
                .map(|m| match m {
                    Message::User { text, .. } => text.len(),
                    Message::Assistant {
                        text, tool_calls, ..
                    } => text.len() + tool_calls.iter().map(|c| c.arguments.len()).sum::<usize>(),
                    Message::Tool { content, .. } => content.len(),
                })
                .sum::<usize>();
        let output_chars = text.len() + calls.iter().map(|c| c.arguments.len()).sum::<usize>();
        let mut events: VecDeque<StreamEvent> = VecDeque::new();
        let chars: Vec<char> = text.chars().collect();
        for chunk in chars.chunks(self.script.chunk_chars.max(1)) {
            events.push_back(StreamEvent::TextDelta(chunk.iter().collect()));
        }
        let stop = if calls.is_empty() {
            ModelStopReason::EndTurn
        } else {
            ModelStopReason::ToolUse
        };
        events.extend(calls.into_iter().map(StreamEvent::ToolCall));
        events.push_back(StreamEvent::Usage(Usage {
            input_tokens: estimate_tokens(input_chars),
            output_tokens: estimate_tokens(output_chars),
            cached_input_tokens: 0,
            cache_write_input_tokens: 0,
            web_searches: 0,
        }));
        events.push_back(StreamEvent::Completed { stop_reason: stop });
        let delay = Duration::from_millis(self.script.chunk_delay_ms);
        let stream = futures::stream::unfold(
            (events, cancel, false),
            move |(mut events, cancel, done)| async move {
                if done {
                    return None;
                }
                let ev = events.pop_front()?;
                if matches!(ev, StreamEvent::TextDelta(_)) && !delay.is_zero() {
                    tokio::select! {
                        () = tokio::time::sleep(delay) => {}
                        () = cancel.cancelled() => {}
                    }
                }
                if cancel.is_cancelled() {
                    return Some((Err(ModelError::Cancelled), (events, cancel, true)));
                }
                Some((Ok(ev), (events, cancel, false)))
            },
        );
        Ok(Box::pin(stream))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use pablo_core::ToolSpec;
    use serde_json::json;

    const SCRIPT: &str = r#"{
      "model": "test-script", "start": "a", "after_end": "the script is over",
      "steps": {
        "a": {"text": "reading", "calls": [{"tool": "fs_read", "arguments": {"path": "x"}}],
              "next": {"ok": "b", "rejected": "r", "failed": "f"}},
        "b": {"text": "writing", "calls": [{"tool": "fs_write", "arguments": {"path": "x", "expected_revision": "{{result.0/revision}}"}}], "next": "done"},
        "r": {"text": "you said: {{note}}"},
        "f": {"text": "it failed"},
        "done": {"text": "all done"}
      }
    }"#;

    fn req(messages: Vec<Message>) -> ModelRequest {
        ModelRequest {
            system: String::new(),
            messages,
            tools: ["fs_read", "fs_write"]
                .iter()
                .map(|n| ToolSpec {
                    name: n.to_string(),
                    description: String::new(),
                    parameters: json!({}),
                })
                .collect(),
            max_output_tokens: 1000,
            ..ModelRequest::default()
        }
    }

    async fn collect(m: &ScriptedModel, r: &ModelRequest) -> (String, Vec<ToolCall>) {
        let mut s = m.stream(r, CancellationToken::new()).await.unwrap();
        let mut text = String::new();
        let mut calls = Vec::new();
        while let Some(e) = s.next().await {
            match e.unwrap() {
                StreamEvent::TextDelta(t) => text.push_str(&t),
                StreamEvent::ToolCall(c) => calls.push(c),
                _ => {}
            }
        }
        (text, calls)
    }

    fn user(t: &str) -> Message {
        Message::user(t)
    }

    fn tool(content: Value) -> Message {
        Message::Tool {
            call_id: "call_1".into(),
            content: content.to_string(),
        }
    }

    #[tokio::test]
    async fn arguments_quote_the_previous_result() {
        let m = ScriptedModel::from_json(SCRIPT).unwrap();
        let (text, calls) = collect(&m, &req(vec![user("go")])).await;
        assert_eq!(text, "reading");
        assert_eq!(calls[0].name, "fs_read");
        let r = req(vec![
            user("go"),
            tool(json!({"ok": true, "data": {"revision": "abc123"}})),
        ]);
        let (_, calls) = collect(&m, &r).await;
        let args: Value = serde_json::from_str(&calls[0].arguments).unwrap();
        assert_eq!(args["expected_revision"], "abc123");
    }

    #[tokio::test]
    async fn a_rejection_takes_the_rejected_branch_and_quotes_the_note() {
        let m = ScriptedModel::from_json(SCRIPT).unwrap();
        collect(&m, &req(vec![user("go")])).await;
        let r = req(vec![
            user("go"),
            tool(
                json!({"ok": false, "error": {"code": "rejected", "message": "m", "data": {"note": "not that file"}}}),
            ),
        ]);
        let (text, calls) = collect(&m, &r).await;
        assert_eq!(text, "you said: not that file");
        assert!(calls.is_empty());
        let (text, _) = collect(&m, &req(vec![user("more")])).await;
        assert_eq!(text, "the script is over");
    }

    #[tokio::test]
    async fn a_step_whose_tool_is_not_offered_is_skipped() {
        let m = ScriptedModel::from_json(SCRIPT).unwrap();
        let mut r = req(vec![user("go")]);
        r.tools.retain(|t| t.name != "fs_read");
        let (text, _) = collect(&m, &r).await;
        // `a` needs fs_read: its ok-branch `b` needs fs_write, which is offered.
        assert_eq!(text, "writing");
    }

    #[test]
    fn a_script_pointing_at_a_missing_step_is_refused() {
        let bad = r#"{"model": "m", "start": "nope", "after_end": "", "steps": {}}"#;
        let err = ScriptedModel::from_json(bad).err().unwrap();
        assert!(matches!(err, ScriptError::UnknownStep { .. }));
    }

    #[test]
    fn the_demo_script_is_valid() {
        ScriptedModel::demo().unwrap();
    }
}
