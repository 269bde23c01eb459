//! Argument validation against each tool's closed JSON Schema, before anything is dispatched.
//!
//! The schemas are closed (`additionalProperties: false` on every object) so that a misspelt key
//! is an error the model can read and fix, not a silently ignored option.

use std::sync::OnceLock;

use serde_json::Value;

use pablo_core::ErrorCode;

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
pub struct Validator {
    schema: Value,
    inner: OnceLock<Result<Compiled, String>>,
}

/// A schema compiled by `boon`: the set it was compiled into and its index there. `boon` rather
/// than `jsonschema`, which pablo used before: it passes the JSON-Schema-Test-Suite (optional
/// tests aside) for drafts 4 to 2020-12, translates ECMA-262 patterns to the `regex` crate pablo
/// already has, and makes the release binary smaller (BENCHMARKS.md, issue 29). A pattern with
/// look-around, which `regex` cannot run, makes its schema fail to compile: no native schema has
/// one, and an MCP tool whose schema fails is checked as "an object" (the server checks the rest).
struct Compiled {
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
}

/// Where a tool's schema is filed while it compiles. A `$ref` to another document has nothing
/// here to resolve against (or resolves, under the schema's own `$id`, to a URL the loader
/// refuses), so only references inside the schema compile.
const SCHEMA_URL: &str = "urn:pablo:tool-arguments";

fn compile(schema: &Value) -> Result<Compiled, String> {
    let mut compiler = boon::Compiler::new();
    // A schema is untrusted input (an MCP server writes it): nothing it names is fetched or read.
    // The drafts' own metaschemas are built into `boon` and need no loader.
    compiler.use_loader(Box::new(NothingOutside));
    compiler
        .add_resource(SCHEMA_URL, schema.clone())
        .map_err(|e| e.to_string())?;
    let mut schemas = boon::Schemas::new();
    let index = compiler
        .compile(SCHEMA_URL, &mut schemas)
        .map_err(|e| format!("{e:#}"))?;
    Ok(Compiled { schemas, index })
}

/// Refuses every URL a schema refers to outside itself.
struct NothingOutside;

impl boon::UrlLoader for NothingOutside {
    fn load(&self, url: &str) -> Result<Value, Box<dyn std::error::Error>> {
        Err(format!("{url} is outside the schema, and is not fetched").into())
    }
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
        let inner = compile(schema).map_err(SchemaError::Invalid)?;
        Ok(Self {
            schema: schema.clone(),
            inner: OnceLock::from(Ok(inner)),
        })
    }

    fn compiled(&self) -> Result<&Compiled, &str> {
        self.inner
            .get_or_init(|| compile(&self.schema))
            .as_ref()
            .map_err(String::as_str)
    }

    /// Compiles the schema now (tests check every native schema this way).
    #[cfg(any(test, feature = "test-support"))]
    pub(crate) fn compile(&self) -> Result<(), SchemaError> {
        self.compiled()
            .map(|_| ())
            .map_err(|e| SchemaError::Invalid(e.to_string()))
    }

    /// Validates `args`; the error lists every problem with its JSON pointer.
    pub fn validate(&self, tool: &str, args: &Value) -> Result<(), InvalidArguments> {
        // A schema that does not compile admits nothing: the call is refused, never let through.
        let compiled = self.compiled().map_err(|e| InvalidArguments {
            tool: tool.to_string(),
            problems: format!("the tool's own schema does not compile: {e}"),
        })?;
        let Err(error) = compiled.schemas.validate(args, compiled.index) else {
            return Ok(());
        };
        let mut problems = Vec::new();
        leaf_problems(&error, &mut problems);
        Err(InvalidArguments {
            tool: tool.to_string(),
            problems: problems.join("; "),
        })
    }
}

/// At most this many problems are listed for one call.
const MAX_PROBLEMS: usize = 8;

/// The innermost causes of `error`, each as "at POINTER: what is wrong" (no pointer at the top).
fn leaf_problems(error: &boon::ValidationError<'_, '_>, out: &mut Vec<String>) {
    if out.len() >= MAX_PROBLEMS {
        return;
    }
    if error.causes.is_empty() {
        let at = error.instance_location.to_string();
        out.push(if at.is_empty() {
            error.kind.to_string()
        } else {
            format!("at {at}: {}", error.kind)
        });
        return;
    }
    for cause in &error.causes {
        leaf_problems(cause, out);
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

    #[test]
    fn each_problem_is_listed_with_its_pointer_and_what_is_wrong() {
        let v = Validator::new(&plan_like()).unwrap();
        let err = v
            .validate(
                "t",
                &json!({"nmae": 1, "items": [{"x": 1}, {"x": "no", "y": 2}]}),
            )
            .unwrap_err();
        let problems: Vec<&str> = err.problems.split("; ").collect();
        assert_eq!(problems.len(), 4, "{problems:?}");
        for (needle, pointer) in [
            ("name", ""),
            ("nmae", ""),
            ("y", "/items/1"),
            ("integer", "/items/1/x"),
        ] {
            assert!(
                problems.iter().any(|p| p.contains(needle)
                    && (pointer.is_empty() || p.starts_with(&format!("at {pointer}:")))),
                "{needle} at {pointer:?} in {problems:?}"
            );
        }
    }

    #[test]
    fn a_schema_that_names_a_file_or_url_outside_itself_does_not_compile_and_reads_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret.json");
        std::fs::write(&secret, r#"{"type": "string"}"#).unwrap();
        for reference in [
            format!("file://{}", secret.display()),
            "http://127.0.0.1:9/schema.json".to_string(),
        ] {
            let schema = json!({"type": "object", "properties": {"a": {"$ref": reference}}});
            let err = Validator::external(&schema).err().map(|e| e.to_string());
            assert!(
                err.as_deref()
                    .is_some_and(|e| e.contains("is outside the schema")),
                "{reference}: {err:?}"
            );
        }
        // A relative reference has nothing to resolve against but the schema's own name.
        let schema = json!({"type": "object", "properties": {"a": {"$ref": "secret.json"}}});
        assert!(Validator::external(&schema).is_err());
    }

    #[test]
    fn a_pattern_with_look_around_does_not_compile() {
        let schema =
            json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "^(?!x)"}}});
        assert!(Validator::external(&schema).is_err());
    }

    #[test]
    fn a_schema_of_an_older_draft_and_its_internal_refs_compile_without_a_loader() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "definitions": {"n": {"type": "integer", "minimum": 1}},
            "properties": {"a": {"$ref": "#/definitions/n"}, "b": {"type": "string", "pattern": "^[a-z]+$"}},
            "required": ["a"]
        });
        let v = Validator::external(&schema).unwrap();
        assert!(v.validate("t", &json!({"a": 2, "b": "xy"})).is_ok());
        let err = v.validate("t", &json!({"a": 0, "b": "X"})).unwrap_err();
        assert!(err.problems.contains("at /a:"), "{err}");
        assert!(err.problems.contains("at /b:"), "{err}");
    }
}
