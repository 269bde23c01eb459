//! The questions MCP servers ask the person (`elicitation/create`): each one typed into a form
//! ([`form_of`]), sent to the front-end as [`Event::McpQuestion`], and answered through
//! [`Questions::answer`] when the person submits, declines or dismisses it.
//!
//! Only a front-end with a person in front of it asks: the TUI. `pablo run` and editors (ACP)
//! decline every question at once and say so in a warning, so a server that can go on without
//! the answer does, and one that cannot says why in its result. A question is withdrawn
//! (answered `cancel`) when the server cancels it, and when the tool call it came with ends,
//! interrupted or not: a form must not outlive what it was for.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::oneshot;

use super::client::Elicitation;
use pablo_core::EventSink;
use pablo_protocol::{Event, FieldKind, McpQuestion, QuestionAnswer, QuestionField};

/// How long a server's message may be on screen (a longer one is cut).
const MAX_MESSAGE_CHARS: usize = 2_000;

struct Waiting {
    server: String,
    question: McpQuestion,
    reply: oneshot::Sender<QuestionAnswer>,
}

/// The questions of one session's servers that wait for the person.
pub(crate) struct Questions {
    /// Whether the front-end shows questions (the TUI); otherwise each is declined.
    ask_person: AtomicBool,
    waiting: Mutex<HashMap<String, Waiting>>,
    next: AtomicU64,
}

impl Questions {
    /// Nobody asked until [`Questions::ask_the_person`].
    pub(crate) fn new() -> Self {
        Self {
            ask_person: AtomicBool::new(false),
            waiting: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
        }
    }

    /// Whether questions go to the person (the front-end shows them) or are declined.
    pub(crate) fn ask_the_person(&self, ask: bool) {
        self.ask_person.store(ask, Ordering::Relaxed);
    }

    /// Asks the person `e` on behalf of `server` and waits for the answer (or for the server
    /// to withdraw it). Without a person, or with a form pablo cannot show, the question is
    /// declined and `events` is told why.
    pub(crate) async fn ask(
        &self,
        server: &str,
        e: Elicitation,
        events: Option<EventSink>,
    ) -> QuestionAnswer {
        let warn = |message: String| {
            tracing::info!(server, "mcp question declined");
            if let Some(sink) = &events {
                sink.send(Event::Warning { message });
            }
        };
        let message = clipped(&e.message);
        let fields = match form_of(&e.properties, &e.required) {
            Ok(fields) => fields,
            Err(why) => {
                warn(format!(
                    "MCP server {server} asked a question pablo cannot show ({why}); it was \
                     declined"
                ));
                return QuestionAnswer::Decline;
            }
        };
        let Some(sink) = events
            .as_ref()
            .filter(|_| self.ask_person.load(Ordering::Relaxed))
        else {
            warn(format!(
                "MCP server {server} asked: \"{message}\"; only the TUI shows a server's \
                 questions, so it was declined"
            ));
            return QuestionAnswer::Decline;
        };
        let id = format!("q-{}", self.next.fetch_add(1, Ordering::Relaxed));
        let question = McpQuestion {
            id: id.clone(),
            server: server.to_string(),
            message,
            fields,
        };
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().insert(
            id.clone(),
            Waiting {
                server: server.to_string(),
                question: question.clone(),
                reply: tx,
            },
        );
        sink.send(Event::McpQuestion { question });
        let answer = tokio::select! {
            a = rx => a.unwrap_or(QuestionAnswer::Cancel),
            () = e.withdrawn.cancelled() => {
                self.waiting.lock().remove(&id);
                QuestionAnswer::Cancel
            }
        };
        tracing::info!(server, action = answer.action(), "mcp question answered");
        sink.send(Event::McpQuestionClosed {
            id,
            server: server.to_string(),
            action: answer.action().to_string(),
        });
        answer
    }

    /// The person's answer to the question `id`; `Err` when none such waits. An accepted
    /// answer that does not fill the form is refused (the question keeps waiting).
    pub(crate) fn answer(&self, id: &str, answer: QuestionAnswer) -> Result<(), String> {
        let mut waiting = self.waiting.lock();
        let Some(w) = waiting.get(id) else {
            return Err(format!("no MCP server question {id} is waiting"));
        };
        if let QuestionAnswer::Accept { content } = &answer {
            w.question.check(content).map_err(|why| {
                format!(
                    "the answer to {}'s question does not fill its form: {why}",
                    w.server
                )
            })?;
        }
        if let Some(w) = waiting.remove(id) {
            let _ = w.reply.send(answer);
        }
        Ok(())
    }

    /// Withdraws every question of `server` still waiting (its call ended).
    pub(crate) fn withdraw(&self, server: &str) {
        let mut waiting = self.waiting.lock();
        let ids: Vec<String> = waiting
            .iter()
            .filter(|(_, w)| w.server == server)
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            if let Some(w) = waiting.remove(&id) {
                let _ = w.reply.send(QuestionAnswer::Cancel);
            }
        }
    }
}

fn clipped(text: &str) -> String {
    let mut out: String = text.chars().take(MAX_MESSAGE_CHARS).collect();
    if text.chars().count() > MAX_MESSAGE_CHARS {
        out.push('…');
    }
    out
}

/// The form of a requested schema: one field per property, in the server's order. `Err` names
/// the property pablo cannot show (a nested object, a list, a type the specification does not
/// allow in a form).
pub(crate) fn form_of(
    properties: &[(String, Value)],
    required: &[String],
) -> Result<Vec<QuestionField>, String> {
    properties
        .iter()
        .map(|(name, schema)| field_of(name, schema, required.contains(name)))
        .collect()
}

fn field_of(name: &str, schema: &Value, required: bool) -> Result<QuestionField, String> {
    let text = |k: &str| schema.get(k).and_then(Value::as_str).map(str::to_string);
    let number = |k: &str| schema.get(k).and_then(Value::as_f64);
    let count = |k: &str| {
        schema
            .get(k)
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
    };
    let strings = |v: Option<&Value>| -> Option<Vec<String>> {
        v?.as_array()?
            .iter()
            .map(|x| x.as_str().map(str::to_string))
            .collect()
    };
    let kind = match text("type").as_deref() {
        Some("string") if schema.get("enum").is_some() => FieldKind::Choice {
            options: strings(schema.get("enum"))
                .ok_or_else(|| format!("{name}: enum is not a list of strings"))?,
            labels: strings(schema.get("enumNames")).unwrap_or_default(),
        },
        Some("string") if schema.get("oneOf").is_some() => {
            let choices = schema
                .get("oneOf")
                .and_then(Value::as_array)
                .ok_or_else(|| format!("{name}: oneOf is not a list"))?;
            let mut options = Vec::new();
            let mut labels = Vec::new();
            for c in choices {
                let value = c
                    .get("const")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("{name}: a choice has no const"))?;
                options.push(value.to_string());
                labels.push(
                    c.get("title")
                        .and_then(Value::as_str)
                        .unwrap_or(value)
                        .to_string(),
                );
            }
            FieldKind::Choice { options, labels }
        }
        Some("string") => FieldKind::Text {
            min_length: count("minLength"),
            max_length: count("maxLength"),
            format: text("format"),
        },
        Some(t @ ("number" | "integer")) => FieldKind::Number {
            integer: t == "integer",
            minimum: number("minimum"),
            maximum: number("maximum"),
        },
        Some("boolean") => FieldKind::Boolean,
        Some(other) => return Err(format!("{name} is of type {other}")),
        None => return Err(format!("{name} has no type")),
    };
    if let FieldKind::Choice { options, .. } = &kind
        && options.is_empty()
    {
        return Err(format!("{name} offers no choice"));
    }
    let field = QuestionField {
        name: name.to_string(),
        title: text("title"),
        description: text("description"),
        required,
        kind,
        default: None,
    };
    // A default the field does not take is not offered.
    let default = schema.get("default").filter(|d| field.check(d).is_ok());
    Ok(QuestionField {
        default: default.cloned(),
        ..field
    })
}

/// An accepted answer's content as the server receives it: only the form's fields.
#[cfg(test)]
fn content(pairs: &[(&str, Value)]) -> serde_json::Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    fn booking() -> Elicitation {
        Elicitation {
            message: "Where to?".into(),
            properties: vec![
                ("city".into(), json!({"type": "string", "title": "City"})),
                (
                    "nights".into(),
                    json!({"type": "integer", "minimum": 1, "default": 2}),
                ),
                (
                    "room".into(),
                    json!({"type": "string", "enum": ["single", "double"],
                           "enumNames": ["Single", "Double"]}),
                ),
                ("breakfast".into(), json!({"type": "boolean"})),
            ],
            required: vec!["city".into()],
            withdrawn: CancellationToken::new(),
        }
    }

    #[test]
    fn a_flat_schema_becomes_a_form_in_the_servers_order() {
        let e = booking();
        let form = form_of(&e.properties, &e.required).unwrap();
        let names: Vec<&str> = form.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["city", "nights", "room", "breakfast"]);
        assert!(form[0].required && !form[1].required);
        assert_eq!(form[0].label(), "City");
        assert_eq!(form[1].default, Some(json!(2)));
        assert_eq!(
            form[2].kind,
            FieldKind::Choice {
                options: vec!["single".into(), "double".into()],
                labels: vec!["Single".into(), "Double".into()],
            }
        );
        let nested = [("where".to_string(), json!({"type": "object"}))];
        assert_eq!(
            form_of(&nested, &[]).unwrap_err(),
            "where is of type object"
        );
    }

    #[tokio::test]
    async fn without_a_person_a_question_is_declined_with_a_warning() {
        let questions = Questions::new();
        let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
        let sink = EventSink::new(tx);
        let answer = questions.ask("hotel", booking(), Some(sink)).await;
        assert_eq!(answer, QuestionAnswer::Decline);
        let Some(Event::Warning { message }) = events.recv().await else {
            panic!("a warning")
        };
        assert!(message.contains("hotel asked: \"Where to?\""), "{message}");
    }

    #[tokio::test]
    async fn the_persons_answer_reaches_the_server_only_when_it_fills_the_form() {
        let questions = std::sync::Arc::new(Questions::new());
        questions.ask_the_person(true);
        let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
        let sink = EventSink::new(tx);
        let q = questions.clone();
        let asked = tokio::spawn(async move { q.ask("hotel", booking(), Some(sink)).await });
        let Some(Event::McpQuestion { question }) = events.recv().await else {
            panic!("the question")
        };
        let bad = content(&[("nights", json!(3))]);
        let refused = questions.answer(&question.id, QuestionAnswer::Accept { content: bad });
        assert!(refused.unwrap_err().contains("City is required"));
        let good = content(&[("city", json!("Lyon")), ("nights", json!(3))]);
        questions
            .answer(
                &question.id,
                QuestionAnswer::Accept {
                    content: good.clone(),
                },
            )
            .unwrap();
        assert_eq!(
            asked.await.unwrap(),
            QuestionAnswer::Accept { content: good }
        );
        let Some(Event::McpQuestionClosed { action, .. }) = events.recv().await else {
            panic!("closed")
        };
        assert_eq!(action, "accept");
        assert!(
            questions
                .answer(&question.id, QuestionAnswer::Decline)
                .is_err()
        );
    }

    #[tokio::test]
    async fn a_question_is_withdrawn_when_its_call_ends() {
        let questions = std::sync::Arc::new(Questions::new());
        questions.ask_the_person(true);
        let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
        let sink = EventSink::new(tx);
        let q = questions.clone();
        let asked = tokio::spawn(async move { q.ask("hotel", booking(), Some(sink)).await });
        let Some(Event::McpQuestion { .. }) = events.recv().await else {
            panic!("the question")
        };
        questions.withdraw("other");
        questions.withdraw("hotel");
        assert_eq!(asked.await.unwrap(), QuestionAnswer::Cancel);
    }
}
