//! `@path` in a person's message attaches that workspace file: its text goes to the model with
//! the message, so "explain @src/lib.rs" needs no read call first. The person named the file, so
//! no question is asked, but everything else a read obeys still holds: the workspace's path rules,
//! credential files, the policy's deny and read roots, the file-size limit. Each file is bounded
//! and the whole message too, so a mention cannot flood the context.

use crate::core::ToolKind;
use crate::policy::PolicyEngine;
use crate::protocol::{Attachment, Decision, Preview};
use crate::tools::Host;

/// Most bytes of one attached file that reach the model (the rest is cut, and said to be).
pub const MAX_ATTACHED_FILE_BYTES: usize = 64 * 1024;
/// Most files attached to one message.
pub const MAX_ATTACHED_FILES: usize = 10;

const IMAGE_EXTENSIONS: [&str; 5] = ["png", "jpg", "jpeg", "gif", "webp"];

/// The `@path` mentions of `text`: an `@` at the start or after whitespace, up to the next
/// whitespace, without trailing punctuation. `@server:uri` (a colon) is not a path.
pub fn mentions(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        let Some(path) = word.strip_prefix('@') else {
            continue;
        };
        let path = path.trim_end_matches([',', '.', ';', ':', ')', '!', '?', '"', '\'']);
        if path.is_empty() || path.contains(':') || out.iter().any(|p| p == path) {
            continue;
        }
        out.push(path.to_string());
    }
    out
}

/// Reads the files `text` mentions. A mention that names no file is just a word (an e-mail
/// handle, a decorator); a file that is there but may not be attached gets a note saying why.
pub fn attach(host: &Host, policy: &PolicyEngine, text: &str) -> (Vec<Attachment>, Vec<String>) {
    let mut files = Vec::new();
    let mut notes = Vec::new();
    for raw in mentions(text) {
        let Ok(rel) = host.workspace.parse_file(&raw) else {
            continue;
        };
        if !host.workspace_root.join(rel.to_string()).is_file() {
            continue;
        }
        if files.len() == MAX_ATTACHED_FILES {
            notes.push(format!(
                "@{raw} was not attached: at most {MAX_ATTACHED_FILES} files go with one message"
            ));
            continue;
        }
        let extension = std::path::Path::new(&raw)
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .unwrap_or_default();
        if IMAGE_EXTENSIONS.contains(&extension.as_str()) {
            notes.push(format!(
                "@{raw} was not attached: pablo does not send images to the model yet"
            ));
            continue;
        }
        if let Err(e) = host.workspace.check_not_credential(&rel) {
            notes.push(format!("@{raw} was not attached: {e}"));
            continue;
        }
        let mut preview = Preview::Read {
            path: rel.to_string(),
        };
        let verdict = policy.decide("fs.read", ToolKind::Read, &mut preview);
        let readable = host.readable.as_ref().is_none_or(|r| r(&rel.to_string()));
        if verdict.decision == Decision::Deny || !readable {
            let why = if verdict.reasons.is_empty() {
                "the policy does not let pablo read it".to_string()
            } else {
                verdict.reasons.join("; ")
            };
            notes.push(format!("@{raw} was not attached: {why}"));
            continue;
        }
        match host.workspace.read_text(&rel) {
            Ok((text, file)) => {
                let bytes = file.bytes.len();
                let (text, truncated) = cut(text, MAX_ATTACHED_FILE_BYTES);
                if truncated {
                    notes.push(format!(
                        "@{raw} is {bytes} bytes: its first {MAX_ATTACHED_FILE_BYTES} bytes were attached"
                    ));
                }
                files.push(Attachment {
                    path: rel.to_string(),
                    bytes,
                    truncated,
                    text,
                });
            }
            Err(e) => notes.push(format!("@{raw} was not attached: {e}")),
        }
    }
    (files, notes)
}

/// `text` cut to at most `max` bytes at a character boundary.
fn cut(mut text: String, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    (text, true)
}

pub use crate::protocol::describe::with_attachments;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_are_at_words_without_trailing_punctuation_or_colons() {
        assert_eq!(
            mentions(
                "explain @src/lib.rs, then @README.md. mail me@example.com @mcp:res @src/lib.rs"
            ),
            ["src/lib.rs", "README.md"]
        );
    }

    #[test]
    fn a_long_file_is_cut_at_a_character_boundary() {
        let (t, cut_) = cut("é".repeat(10), 5);
        assert!(cut_);
        assert_eq!(t, "éé");
    }
}
