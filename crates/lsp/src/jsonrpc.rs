//! JSON-RPC 2.0 as a language server speaks it: the envelopes of what pablo sends (a request, a
//! notification, the answer to a server's request) and of what it reads, as types.
//!
//! `lsp-types` types the parameters and results of each method but not the envelope around
//! them. Reading that envelope by key (`msg.get("id")`) let a message of the wrong shape pass as
//! another kind (an `id` that is a string was dropped silently, an error without `message`
//! became a made-up text); here a message is one [`Incoming`] variant or it is not read at all.
//! The parameters and results stay [`Value`]s inside the envelope only until the method says
//! which `lsp-types` type they are.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// `"jsonrpc": "2.0"`, which every message carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct V2;

impl Serialize for V2 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("2.0")
    }
}

impl<'de> Deserialize<'de> for V2 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = String::deserialize(d)?;
        if v == "2.0" {
            Ok(V2)
        } else {
            Err(D::Error::custom(format!("jsonrpc is {v:?}, not \"2.0\"")))
        }
    }
}

/// A request's id: pablo's own are numbers, a server's may be either.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub(super) enum Id {
    Number(i64),
    String(String),
}

/// A request pablo sends.
#[derive(Debug, Serialize)]
pub(super) struct Request<'a, P> {
    pub(super) jsonrpc: V2,
    pub(super) id: i64,
    pub(super) method: &'a str,
    pub(super) params: P,
}

/// A notification pablo sends.
#[derive(Debug, Serialize)]
pub(super) struct Notification<'a, P> {
    pub(super) jsonrpc: V2,
    pub(super) method: &'a str,
    pub(super) params: P,
}

/// pablo's answer to a server's request.
#[derive(Debug, Serialize)]
pub(super) struct Response {
    pub(super) jsonrpc: V2,
    pub(super) id: Id,
    #[serde(flatten)]
    pub(super) outcome: Outcome,
}

/// A response's `result`, or its `error`.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub(super) enum Outcome {
    Result(Value),
    Error(ResponseError),
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct ResponseError {
    pub(super) code: i64,
    pub(super) message: String,
}

/// JSON-RPC's code for a method the receiver does not have.
pub(super) const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC's code for parameters the method cannot take.
pub(super) const INVALID_PARAMS: i64 = -32602;

impl ResponseError {
    pub(super) fn method_not_found() -> Self {
        Self {
            code: METHOD_NOT_FOUND,
            message: "not supported by pablo".into(),
        }
    }

    pub(super) fn invalid_params(method: &str, why: &serde_json::Error) -> Self {
        Self {
            code: INVALID_PARAMS,
            message: format!("the params of {method} cannot be read: {why}"),
        }
    }
}

/// One message a server sent.
#[derive(Debug, PartialEq)]
pub(super) enum Incoming {
    /// The server asks pablo something and waits for the answer.
    Request {
        id: Id,
        method: String,
        params: Value,
    },
    /// The server tells pablo something.
    Notification { method: String, params: Value },
    /// The answer to one of pablo's requests.
    Response {
        id: Id,
        outcome: Result<Value, ResponseError>,
    },
}

/// Every member a message may have; which are there says what kind of message it is.
#[derive(Deserialize)]
struct Members {
    #[allow(dead_code)]
    jsonrpc: V2,
    #[serde(default)]
    id: Option<Id>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Value>,
    /// Present and `null` is a result (`Some(Value::Null)`), absent is none.
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    #[serde(default)]
    error: Option<ResponseError>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Why bytes from a server are not a message pablo can act on.
#[derive(Debug, thiserror::Error)]
pub(super) enum MessageError {
    #[error("the message is not a JSON-RPC 2.0 object: {0}")]
    Malformed(#[from] serde_json::Error),
    #[error("the message is neither a request, a notification nor a response")]
    NoKind,
}

impl Incoming {
    /// Reads one message's bytes.
    pub(super) fn parse(body: &[u8]) -> Result<Self, MessageError> {
        let m: Members = serde_json::from_slice(body)?;
        let params = m.params.unwrap_or(Value::Null);
        match (m.method, m.id, m.result, m.error) {
            (Some(method), Some(id), None, None) => Ok(Incoming::Request { id, method, params }),
            (Some(method), None, None, None) => Ok(Incoming::Notification { method, params }),
            (None, Some(id), Some(result), None) => Ok(Incoming::Response {
                id,
                outcome: Ok(result),
            }),
            (None, Some(id), None, Some(error)) => Ok(Incoming::Response {
                id,
                outcome: Err(error),
            }),
            _ => Err(MessageError::NoKind),
        }
    }
}

/// `message` as the bytes of one JSON-RPC body.
pub(super) fn body(message: &impl Serialize) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_notifications_and_responses_read_as_their_kind() {
        let read = |s: &str| Incoming::parse(s.as_bytes()).map_err(|e| e.to_string());
        assert_eq!(
            read(r#"{"jsonrpc":"2.0","id":"a1","method":"workspace/configuration","params":{}}"#),
            Ok(Incoming::Request {
                id: Id::String("a1".into()),
                method: "workspace/configuration".into(),
                params: serde_json::json!({})
            })
        );
        assert_eq!(
            read(r#"{"jsonrpc":"2.0","method":"$/progress"}"#),
            Ok(Incoming::Notification {
                method: "$/progress".into(),
                params: Value::Null
            })
        );
        assert_eq!(
            read(r#"{"jsonrpc":"2.0","id":3,"result":null}"#),
            Ok(Incoming::Response {
                id: Id::Number(3),
                outcome: Ok(Value::Null)
            })
        );
        assert_eq!(
            read(r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32800,"message":"cancelled"}}"#),
            Ok(Incoming::Response {
                id: Id::Number(4),
                outcome: Err(ResponseError {
                    code: -32800,
                    message: "cancelled".into()
                })
            })
        );
    }

    #[test]
    fn a_message_of_no_kind_or_the_wrong_shape_is_refused_with_the_reason() {
        let read = |s: &str| Incoming::parse(s.as_bytes()).map_err(|e| e.to_string());
        // A response with neither result nor error, and one with both.
        assert!(read(r#"{"jsonrpc":"2.0","id":1}"#).is_err());
        assert!(
            read(r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}"#)
                .is_err()
        );
        let e = read(r#"{"jsonrpc":"1.0","id":1,"result":1}"#).unwrap_err();
        assert!(e.contains("not \"2.0\""), "{e}");
        let e = read(r#"{"jsonrpc":"2.0","id":1,"error":{"code":1}}"#).unwrap_err();
        assert!(e.contains("missing field `message`"), "{e}");
        let e = read(r#"{"jsonrpc":"2.0","id":true,"result":1}"#).unwrap_err();
        assert!(e.contains("not a JSON-RPC"), "{e}");
    }

    #[test]
    fn pablos_messages_carry_the_version_and_a_response_its_result_or_error() {
        let text = |v: &dyn Fn() -> Result<Vec<u8>, serde_json::Error>| {
            String::from_utf8(v().unwrap()).unwrap()
        };
        assert_eq!(
            text(&|| body(&Request {
                jsonrpc: V2,
                id: 7,
                method: "shutdown",
                params: ()
            })),
            r#"{"jsonrpc":"2.0","id":7,"method":"shutdown","params":null}"#
        );
        assert_eq!(
            text(&|| body(&Response {
                jsonrpc: V2,
                id: Id::String("x".into()),
                outcome: Outcome::Result(Value::Null)
            })),
            r#"{"jsonrpc":"2.0","id":"x","result":null}"#
        );
        assert_eq!(
            text(&|| body(&Response {
                jsonrpc: V2,
                id: Id::Number(2),
                outcome: Outcome::Error(ResponseError::method_not_found())
            })),
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"not supported by pablo"}}"#
        );
    }
}
