//! Stable error codes: every engine error names itself with an [`ErrorCode`], and a refused tool
//! call reaches the model as exactly that code and message.

use serde_json::Value;

use super::ErrorCode;
use pablo_protocol::{ToolErrorBody, ToolOutcome};

/// An error that carries a stable snake_case code. Every engine error enum implements it.
pub trait Coded: std::error::Error {
    fn code(&self) -> ErrorCode;
    /// Structured details given to the model next to the message (e.g. the current revision).
    fn data(&self) -> Option<Value> {
        None
    }
}

/// A refused or failed tool call, as the model will see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolFailure {
    pub code: ErrorCode,
    pub message: String,
    pub data: Option<Value>,
}

impl ToolFailure {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
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
            ok: pablo_protocol::False,
            error: ToolErrorBody {
                code: self.code.into(),
                message: self.message,
                data: self.data,
            },
        }
    }
}

impl<E: Coded> From<E> for ToolFailure {
    fn from(e: E) -> Self {
        ToolFailure {
            code: e.code(),
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

/// A tool result as the content of the tool message the model receives: its JSON, byte for byte
/// what `pablo run --json` prints and what a resumed session sends again.
pub fn tool_message(outcome: &ToolOutcome) -> String {
    serde_json::to_string(outcome).unwrap_or_else(|_| {
        let failure = ToolFailure::new(ErrorCode::Internal, "result not serializable");
        serde_json::to_string(&failure.into_outcome()).unwrap_or_default()
    })
}
