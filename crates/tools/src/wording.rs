//! What the tools' words are made of: reading a call's arguments for a title, falling back when
//! a call has no summary of its own, reading a typed result back from its JSON, and the phrases
//! several tools share. It knows no tool; each tool's file writes its own words with it.

use serde::de::DeserializeOwned;
use serde_json::Value;

use pablo_protocol::describe::{CallLocation, CallView, first_line_clipped};

/// A call's arguments, read for its words (never for what the call does: that is validated
/// against the schema first).
#[derive(Clone, Copy)]
pub(crate) struct Args<'a>(pub &'a Value);

impl Args<'_> {
    /// The string argument `key`, as given.
    pub(crate) fn text(&self, key: &str) -> Option<String> {
        self.0.get(key).and_then(Value::as_str).map(str::to_string)
    }

    /// The string argument `key` cut for a title: its first line, at most 120 characters, with
    /// `…` when anything was left out.
    pub(crate) fn clipped(&self, key: &str) -> Option<String> {
        self.0
            .get(key)
            .and_then(Value::as_str)
            .map(|s| first_line_clipped(s, 120, true))
    }

    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }
}

/// A call's view from its title and summary; a call without a summary of its own shows its
/// arguments as they came (nothing for none).
pub(crate) fn call(args: Args<'_>, title: String, summary: Option<String>) -> CallView {
    CallView {
        title: title.trim_end().to_string(),
        summary: summary.unwrap_or_else(|| match args.0 {
            Value::Object(m) if m.is_empty() => String::new(),
            Value::String(raw) => raw.clone(),
            other => other.to_string(),
        }),
        command: false,
        location: location(args),
    }
}

/// The file a call names in its `path` argument, at the line its `line` (or `offset`) names.
/// Every tool that is about one file says so with these names, so one reading serves them all,
/// an MCP server's tools included.
fn location(args: Args<'_>) -> Option<CallLocation> {
    let path = args.text("path")?;
    let line = args
        .get("line")
        .or_else(|| args.get("offset"))
        .and_then(Value::as_u64)
        .and_then(|l| u32::try_from(l).ok());
    Some(CallLocation { path, line })
}

/// A tool's typed result read back from its JSON (a result of this session or of a journal), or
/// `None` when the JSON is not that tool's.
pub(crate) fn typed<T: DeserializeOwned>(data: &Value) -> Option<T> {
    T::deserialize(data).ok()
}

/// [`typed`] for a view that borrows from `data` (its strings as `Cow`s with `#[serde(borrow)]`).
pub(crate) fn typed_borrowed<'a, T: serde::Deserialize<'a>>(data: &'a Value) -> Option<T> {
    T::deserialize(data).ok()
}

/// `exited 0`, `exited on SIGTERM`, `exited`.
pub(crate) fn exit_words(exit_code: Option<i32>, signal: Option<&str>) -> String {
    match (exit_code, signal) {
        (Some(code), _) => format!("exited {code}"),
        (None, Some(signal)) => format!("exited on {signal}"),
        (None, None) => "exited".to_string(),
    }
}

/// How many lines `text` has, as `text.lines().count()` says (a last line without its newline
/// counts), found by searching for the newlines: a resumed session counts those of every result
/// it replays, whole files among them.
pub(crate) fn line_count(text: &str) -> usize {
    memchr::memchr_iter(b'\n', text.as_bytes()).count()
        + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

pub(crate) fn lines_of(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

/// Why an edit bound to revision `expected` is refused when the file is at `current`. A
/// revision copied with something around it (`sha256:…`, quotes) would otherwise read as the same
/// text on both sides of "but"; the message says what differs.
pub(crate) fn revision_mismatch(expected: &str, current: &str) -> String {
    let lower = expected.to_ascii_lowercase();
    let current_lower = current.to_ascii_lowercase();
    if lower != current_lower && lower.contains(&current_lower) {
        return format!(
            "expected_revision {expected:?} holds the current revision with other characters \
             around it; pass exactly the 64 hex digits fs.read gave: {current}"
        );
    }
    format!(
        "expected revision {expected}, but the current revision is {current}; read the file again"
    )
}

#[cfg(test)]
mod revision_tests {
    use super::revision_mismatch;

    #[test]
    fn a_revision_with_a_prefix_is_told_apart_from_a_stale_one() {
        let rev = "8b9ad32e8c9a26d41e9bc7f57767c228404f570ac4d55a2ad9060c38a6edac38";
        let said = revision_mismatch(&format!("sha256:{rev}"), rev);
        assert!(said.contains("other characters around it"), "{said}");
        assert!(said.ends_with(rev), "{said}");
        let stale = revision_mismatch(&"0".repeat(64), rev);
        assert!(stale.contains("read the file again"), "{stale}");
    }
}
