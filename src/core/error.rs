//! Stable error codes: every engine error names itself in snake_case, and a refused tool call
//! reaches the model as exactly that code and message.

use serde_json::Value;

use crate::protocol::{ToolErrorBody, ToolOutcome};

/// An error that carries a stable snake_case code. Every engine error enum implements it.
pub trait Coded: std::error::Error {
    fn code(&self) -> &'static str;
    /// Structured details given to the model next to the message (e.g. the current revision).
    fn data(&self) -> Option<Value> {
        None
    }
}

/// A refused or failed tool call, as the model will see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolFailure {
    pub code: String,
    pub message: String,
    pub data: Option<Value>,
}

impl ToolFailure {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub fn into_outcome(self) -> ToolOutcome {
        ToolOutcome::Err {
            ok: crate::protocol::False,
            error: ToolErrorBody {
                code: self.code,
                message: self.message,
                data: self.data,
            },
        }
    }
}

impl<E: Coded> From<E> for ToolFailure {
    fn from(e: E) -> Self {
        ToolFailure {
            code: e.code().to_string(),
            message: e.to_string(),
            data: e.data(),
        }
    }
}

impl std::fmt::Display for ToolFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}
