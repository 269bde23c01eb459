//! Argument validation against each tool's closed JSON Schema, before anything is dispatched.
//!
//! The schemas are closed (`additionalProperties: false` on every object) so that a misspelt key
//! is an error the model can read and fix, not a silently ignored option.

use std::sync::OnceLock;

use serde_json::Value;

use crate::core::ErrorCode;

/// A schema that cannot serve as a closed tool schema.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SchemaError {
    #[error("tool schema is not a closed object schema: {0}")]
    NotClosed(String),
    #[error("tool schema does not compile: {0}")]
    Invalid(String),
}

impl super::Coded for SchemaError {
    fn code(&self) -> ErrorCode {
        ErrorCode::InvalidSchema
    }
}

/// Arguments that do not fit the schema.
#[derive(Debug, thiserror::Error)]
#[error("invalid arguments for {tool}: {problems}")]
pub(crate) struct InvalidArguments {
    pub(crate) tool: String,
    pub(crate) problems: String,
}

impl super::Coded for InvalidArguments {
    fn code(&self) -> ErrorCode {
        ErrorCode::InvalidArguments
    }
}

/// A closed schema, compiled when it first validates something. Compiling every native tool's
/// schema was a fifth of the work before pablo's first screen; a session calls a few of them.
pub(crate) struct Validator {
    schema: Value,
    inner: OnceLock<Result<jsonschema::Validator, String>>,
}

impl Validator {
    /// Checks that the schema is closed; compiling waits for the first call (or [`Self::compile`]).
    pub(crate) fn new(schema: &Value) -> Result<Self, SchemaError> {
        check_closed(schema, "$")?;
        Ok(Self {
            schema: schema.clone(),
            inner: OnceLock::new(),
        })
    }

    /// A schema written by someone else (an MCP server's `inputSchema`), taken as it is: it need
    /// not be closed, but arguments are still checked against it before the call is sent. It is
    /// compiled now, so a server's schema that does not compile is known when its tools are listed.
    pub(crate) fn external(schema: &Value) -> Result<Self, SchemaError> {
        let inner =
            jsonschema::validator_for(schema).map_err(|e| SchemaError::Invalid(e.to_string()))?;
        Ok(Self {
            schema: schema.clone(),
            inner: OnceLock::from(Ok(inner)),
        })
    }

    fn compiled(&self) -> Result<&jsonschema::Validator, &str> {
        self.inner
            .get_or_init(|| jsonschema::validator_for(&self.schema).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(String::as_str)
    }

    /// Compiles the schema now (tests check every native schema this way).
    #[cfg(test)]
    pub(crate) fn compile(&self) -> Result<(), SchemaError> {
        self.compiled()
            .map(|_| ())
            .map_err(|e| SchemaError::Invalid(e.to_string()))
    }

    /// Validates `args`; the error lists every problem with its JSON pointer.
    pub(crate) fn validate(&self, tool: &str, args: &Value) -> Result<(), InvalidArguments> {
        // A schema that does not compile admits nothing: the call is refused, never let through.
        let validator = self.compiled().map_err(|e| InvalidArguments {
            tool: tool.to_string(),
            problems: format!("the tool's own schema does not compile: {e}"),
        })?;
        let problems: Vec<String> = validator
            .iter_errors(args)
            .take(8)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("at {at}: {e}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(InvalidArguments {
                tool: tool.to_string(),
                problems: problems.join("; "),
            })
        }
    }
}

/// Every object in the schema must forbid unknown keys.
fn check_closed(schema: &Value, at: &str) -> Result<(), SchemaError> {
    let Some(obj) = schema.as_object() else {
        return Ok(());
    };
    let is_object =
        obj.get("type").and_then(Value::as_str) == Some("object") || obj.contains_key("properties");
    if is_object && obj.get("additionalProperties") != Some(&Value::Bool(false)) {
        return Err(SchemaError::NotClosed(format!(
            "{at} lacks additionalProperties: false"
        )));
    }
    if let Some(props) = obj.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            check_closed(v, &format!("{at}.{k}"))?;
        }
    }
    if let Some(items) = obj.get("items") {
        check_closed(items, &format!("{at}[]"))?;
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(list) = obj.get(key).and_then(Value::as_array) {
            for (i, v) in list.iter().enumerate() {
                check_closed(v, &format!("{at}.{key}[{i}]"))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan_like() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "items": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"x": {"type": "integer"}},
                    "required": ["x"],
                    "additionalProperties": false
                }}
            },
            "required": ["name"],
            "additionalProperties": false
        })
    }

    #[test]
    fn unknown_key_is_invalid_arguments() {
        let v = Validator::new(&plan_like()).unwrap();
        let err = v
            .validate("t", &json!({"name": "a", "nmae": "b"}))
            .unwrap_err();
        assert!(err.problems.contains("nmae"), "{err}");
    }

    #[test]
    fn missing_required_key_is_invalid_arguments() {
        let v = Validator::new(&plan_like()).unwrap();
        let err = v.validate("t", &json!({})).unwrap_err();
        assert!(err.problems.contains("name"), "{err}");
    }

    #[test]
    fn nested_problem_names_its_pointer() {
        let v = Validator::new(&plan_like()).unwrap();
        let err = v
            .validate("t", &json!({"name": "a", "items": [{"x": "no"}]}))
            .unwrap_err();
        assert!(err.problems.contains("/items/0/x"), "{err}");
    }

    #[test]
    fn open_schema_is_refused_at_registration() {
        let open = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        assert!(matches!(
            Validator::new(&open),
            Err(SchemaError::NotClosed(_))
        ));
    }

    #[test]
    fn a_schema_that_does_not_compile_refuses_every_call() {
        let bad = json!({"type": "object", "properties": {"a": {"type": "no-such-type"}},
                         "additionalProperties": false});
        let v = Validator::new(&bad).unwrap();
        assert!(v.compile().is_err());
        let err = v.validate("t", &json!({})).unwrap_err();
        assert!(err.problems.contains("does not compile"), "{err}");
    }
}
