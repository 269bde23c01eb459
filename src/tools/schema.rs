//! Argument validation against each tool's closed JSON Schema, before anything is dispatched.
//!
//! The schemas are closed (`additionalProperties: false` on every object) so that a misspelt key
//! is an error the model can read and fix, not a silently ignored option.

use serde_json::Value;

use crate::core::ErrorCode;

/// A schema that cannot serve as a closed tool schema.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
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
pub struct InvalidArguments {
    pub tool: String,
    pub problems: String,
}

impl super::Coded for InvalidArguments {
    fn code(&self) -> ErrorCode {
        ErrorCode::InvalidArguments
    }
}

/// A compiled closed schema.
pub struct Validator {
    inner: jsonschema::Validator,
}

impl Validator {
    pub fn new(schema: &Value) -> Result<Self, SchemaError> {
        check_closed(schema, "$")?;
        let inner =
            jsonschema::validator_for(schema).map_err(|e| SchemaError::Invalid(e.to_string()))?;
        Ok(Self { inner })
    }

    /// A schema written by someone else (an MCP server's `inputSchema`), taken as it is: it need
    /// not be closed, but arguments are still checked against it before the call is sent.
    pub fn external(schema: &Value) -> Result<Self, SchemaError> {
        let inner =
            jsonschema::validator_for(schema).map_err(|e| SchemaError::Invalid(e.to_string()))?;
        Ok(Self { inner })
    }

    /// Validates `args`; the error lists every problem with its JSON pointer.
    pub fn validate(&self, tool: &str, args: &Value) -> Result<(), InvalidArguments> {
        let problems: Vec<String> = self
            .inner
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
}
