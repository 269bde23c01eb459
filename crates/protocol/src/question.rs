//! A question an MCP server asks the person while it works (MCP `elicitation/create`, form mode):
//! a message and a flat form of typed fields, answered with values, declined or cancelled.
//!
//! The form is typed here, once, from the server's `requestedSchema` (the engine builds it), so
//! a front-end draws fields and checks what is typed against them without reading JSON Schema;
//! the engine checks an accepted answer again with the same [`McpQuestion::check`] before it
//! goes back to the server. Only what the specification allows is a field: strings (with length
//! bounds and a format), numbers and integers (with bounds), booleans, and single-choice enums.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One question of one server, waiting for the person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpQuestion {
    /// pablo's id for it, what [`crate::Op::AnswerMcpQuestion`] names.
    pub id: String,
    /// The server's name in the config (`[mcp_servers.NAME]`).
    pub server: String,
    /// What the server says it needs, in its own words (untrusted text).
    pub message: String,
    /// The fields, in the order the server listed them.
    pub fields: Vec<QuestionField>,
}

/// One field of the form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionField {
    /// The property name the answer uses.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub required: bool,
    pub kind: FieldKind,
    /// The value the server suggests (of the field's type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
}

/// What a field holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FieldKind {
    Text {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min_length: Option<usize>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_length: Option<usize>,
        /// `email`, `uri`, `date` or `date-time`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        format: Option<String>,
    },
    Number {
        /// Whole numbers only (`"type": "integer"`).
        integer: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        minimum: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        maximum: Option<f64>,
    },
    Boolean,
    /// One of `options` (the values sent back), shown as `labels` when the server gave them.
    Choice {
        options: Vec<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        labels: Vec<String>,
    },
}

/// How the person answered a question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum QuestionAnswer {
    /// The values, by field name (optional fields left empty are absent).
    Accept { content: Map<String, Value> },
    /// The person said no to the question (the server may go on without it).
    Decline,
    /// The person dismissed it without choosing (or it was withdrawn).
    Cancel,
}

impl QuestionAnswer {
    /// `accept`, `decline` or `cancel`, as the protocol spells the action.
    pub fn action(&self) -> &'static str {
        match self {
            QuestionAnswer::Accept { .. } => "accept",
            QuestionAnswer::Decline => "decline",
            QuestionAnswer::Cancel => "cancel",
        }
    }
}

impl QuestionField {
    /// The label a front-end shows: the title, else the property name.
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }

    /// The value typed as `text`, checked against the field: `Ok(None)` for an optional field
    /// left empty, `Err` says what is wrong in the person's words. A boolean reads
    /// `true`/`false`, a choice one of its options.
    pub fn parse(&self, text: &str) -> Result<Option<Value>, String> {
        let text = text.trim();
        if text.is_empty() {
            return if self.required {
                Err(format!("{} is required", self.label()))
            } else {
                Ok(None)
            };
        }
        let value = match &self.kind {
            FieldKind::Text { .. } => Value::String(text.to_string()),
            FieldKind::Boolean => match text {
                "true" | "yes" => Value::Bool(true),
                "false" | "no" => Value::Bool(false),
                _ => return Err(format!("{} is yes or no", self.label())),
            },
            FieldKind::Choice { .. } => Value::String(text.to_string()),
            FieldKind::Number { integer: true, .. } => match text.parse::<i64>() {
                Ok(n) => Value::from(n),
                Err(_) => return Err(format!("{} is a whole number", self.label())),
            },
            FieldKind::Number { integer: false, .. } => {
                match text
                    .parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                {
                    Some(n) => Value::Number(n),
                    None => return Err(format!("{} is a number", self.label())),
                }
            }
        };
        self.check(&value)?;
        Ok(Some(value))
    }

    /// Whether `value` is one this field takes.
    pub fn check(&self, value: &Value) -> Result<(), String> {
        let label = self.label();
        match (&self.kind, value) {
            (
                FieldKind::Text {
                    min_length,
                    max_length,
                    format,
                },
                Value::String(s),
            ) => {
                let n = s.chars().count();
                if let Some(min) = min_length
                    && n < *min
                {
                    return Err(format!("{label} needs at least {min} characters"));
                }
                if let Some(max) = max_length
                    && n > *max
                {
                    return Err(format!("{label} takes at most {max} characters"));
                }
                match format.as_deref() {
                    Some(f) if !matches_format(f, s) => {
                        Err(format!("{label} is not a valid {}", format_words(f)))
                    }
                    _ => Ok(()),
                }
            }
            (
                FieldKind::Number {
                    integer,
                    minimum,
                    maximum,
                },
                Value::Number(n),
            ) => {
                if *integer && !(n.is_i64() || n.is_u64()) {
                    return Err(format!("{label} is a whole number"));
                }
                let x = n.as_f64().unwrap_or(f64::NAN);
                if let Some(min) = minimum
                    && x < *min
                {
                    return Err(format!("{label} is at least {min}"));
                }
                if let Some(max) = maximum
                    && x > *max
                {
                    return Err(format!("{label} is at most {max}"));
                }
                Ok(())
            }
            (FieldKind::Boolean, Value::Bool(_)) => Ok(()),
            (FieldKind::Choice { options, .. }, Value::String(s)) if options.contains(s) => Ok(()),
            (FieldKind::Choice { options, .. }, _) => {
                Err(format!("{label} is one of: {}", options.join(", ")))
            }
            _ => Err(format!("{label} has a value of the wrong type")),
        }
    }
}

impl McpQuestion {
    /// Whether `content` answers the form: every required field present, no field the form
    /// does not have, every value of its field's type and within its bounds.
    pub fn check(&self, content: &Map<String, Value>) -> Result<(), String> {
        for key in content.keys() {
            if !self.fields.iter().any(|f| &f.name == key) {
                return Err(format!("the form has no field {key:?}"));
            }
        }
        for f in &self.fields {
            match content.get(&f.name) {
                Some(v) => f.check(v)?,
                None if f.required => return Err(format!("{} is required", f.label())),
                None => {}
            }
        }
        Ok(())
    }
}

fn format_words(format: &str) -> &str {
    match format {
        "email" => "email address",
        "uri" => "URI",
        "date" => "date (YYYY-MM-DD)",
        "date-time" => "date and time (RFC 3339)",
        other => other,
    }
}

/// The formats of the specification, checked as far as a form needs: the shape, not whether the
/// address exists.
fn matches_format(format: &str, s: &str) -> bool {
    match format {
        "email" => s
            .split_once('@')
            .is_some_and(|(user, host)| !user.is_empty() && host.contains('.') && !s.contains(' ')),
        "uri" => url::Url::parse(s).is_ok(),
        "date" => {
            time::Date::parse(s, time::macros::format_description!("[year]-[month]-[day]")).is_ok()
        }
        "date-time" => {
            time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).is_ok()
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(name: &str, required: bool, kind: FieldKind) -> QuestionField {
        QuestionField {
            name: name.into(),
            title: None,
            description: None,
            required,
            kind,
            default: None,
        }
    }

    fn text() -> FieldKind {
        FieldKind::Text {
            min_length: None,
            max_length: None,
            format: None,
        }
    }

    #[test]
    fn typed_text_becomes_the_fields_type_or_says_what_is_wrong() {
        let n = field(
            "guests",
            true,
            FieldKind::Number {
                integer: true,
                minimum: Some(1.0),
                maximum: Some(8.0),
            },
        );
        assert_eq!(n.parse(" 3 ").unwrap(), Some(json!(3)));
        assert_eq!(n.parse("3.5").unwrap_err(), "guests is a whole number");
        assert_eq!(n.parse("9").unwrap_err(), "guests is at most 8");
        assert_eq!(n.parse("").unwrap_err(), "guests is required");
        let b = field("ok", false, FieldKind::Boolean);
        assert_eq!(b.parse("yes").unwrap(), Some(json!(true)));
        assert_eq!(b.parse("").unwrap(), None);
        let email = field(
            "mail",
            true,
            FieldKind::Text {
                min_length: None,
                max_length: None,
                format: Some("email".into()),
            },
        );
        assert!(email.parse("a@b.example").is_ok());
        assert_eq!(
            email.parse("nobody").unwrap_err(),
            "mail is not a valid email address"
        );
        let date = field(
            "day",
            true,
            FieldKind::Text {
                min_length: None,
                max_length: None,
                format: Some("date".into()),
            },
        );
        assert!(date.parse("2025-06-18").is_ok());
        assert!(date.parse("18/06/2025").is_err());
    }

    #[test]
    fn an_answer_must_fill_the_required_fields_and_only_the_forms_fields() {
        let q = McpQuestion {
            id: "q-1".into(),
            server: "s".into(),
            message: "who?".into(),
            fields: vec![
                field("name", true, text()),
                field(
                    "size",
                    false,
                    FieldKind::Choice {
                        options: vec!["s".into(), "m".into()],
                        labels: vec![],
                    },
                ),
            ],
        };
        let ok = json!({"name": "Ada"});
        assert!(q.check(ok.as_object().unwrap()).is_ok());
        let missing = json!({"size": "m"});
        assert_eq!(
            q.check(missing.as_object().unwrap()).unwrap_err(),
            "name is required"
        );
        let extra = json!({"name": "Ada", "age": 3});
        assert!(q.check(extra.as_object().unwrap()).is_err());
        let wrong = json!({"name": "Ada", "size": "xl"});
        assert_eq!(
            q.check(wrong.as_object().unwrap()).unwrap_err(),
            "size is one of: s, m"
        );
    }
}
