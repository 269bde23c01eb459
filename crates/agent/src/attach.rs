//! `@path` in a person's message attaches that workspace file: its text goes to the model with
//! the message, so "explain @src/lib.rs" needs no read call first. The person named the file, so
//! no question is asked, but everything else a read obeys still holds: the workspace's path rules,
//! credential files, the policy's deny and read roots, the file-size limit. Each file is bounded
//! and the whole message too, so a mention cannot flood the context.
//!
//! A PNG, JPEG, GIF or WebP file (told by its first bytes, not its name) goes as an image, when
//! the model takes images. An image that cannot go (the model takes none, the file only claims to
//! be an image by its name, it is larger than [`MAX_IMAGE_BYTES`]) refuses the whole turn before
//! anything is sent: the person meant the model to see it, and a turn without it would answer a
//! different question. A text file that cannot be attached is only a note, as it always was.

use pablo_core::{Coded, ErrorCode, ToolKind, ToolName};
use pablo_policy::PolicyEngine;
use pablo_protocol::{Attachment, Decision, Image, ImageAttachment, Preview};
use pablo_tools::Host;

/// Most bytes of one attached file that reach the model (the rest is cut, and said to be).
pub(crate) const MAX_ATTACHED_FILE_BYTES: usize = 64 * 1024;
/// Most files attached to one message.
pub(crate) const MAX_ATTACHED_FILES: usize = 10;
pub use pablo_protocol::image::MAX_IMAGE_BYTES;

const IMAGE_EXTENSIONS: [&str; 5] = ["png", "jpg", "jpeg", "gif", "webp"];

/// What the mentions of one message attach, and what was left out and why.
#[derive(Debug, Default)]
pub(crate) struct Attached {
    pub(crate) files: Vec<Attachment>,
    pub(crate) images: Vec<ImageAttachment>,
    pub(crate) notes: Vec<String>,
}

/// The model the message goes to, as far as attaching cares.
#[derive(Debug, Clone)]
pub(crate) struct Target<'a> {
    pub(crate) provider: &'a str,
    pub(crate) model: &'a str,
    pub(crate) takes_images: bool,
}

/// An image mention that stops the turn.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum AttachError {
    #[error(
        "{what} was not sent: the model {model} (provider {provider}) does not take images; \
         remove the mention, choose a model that takes them (`--model`, or `/model` in the \
         TUI), or set `images = true` under [model] in the config if this model does take them"
    )]
    ImagesNotAccepted {
        /// `@shot.png`, or how else the image came.
        what: String,
        provider: String,
        model: String,
    },
    #[error(
        "@{path} was not sent: its name says image but its content is not a PNG, JPEG, GIF or \
         WebP image"
    )]
    NotAnImage { path: String },
    #[error(
        "@{path} was not sent: it begins like a {format} image, but no header giving the image's \
         size follows"
    )]
    BrokenImage { path: String, format: &'static str },
    #[error(
        "@{path} was not sent: the image is {bytes} bytes, more than the {limit} bytes one image \
         may be"
    )]
    ImageTooLarge {
        path: String,
        bytes: u64,
        limit: usize,
    },
}

impl Coded for AttachError {
    fn code(&self) -> ErrorCode {
        match self {
            AttachError::ImagesNotAccepted { .. } => ErrorCode::ImageNotAcceptedByModel,
            AttachError::NotAnImage { .. } | AttachError::BrokenImage { .. } => {
                ErrorCode::ImageUnrecognized
            }
            AttachError::ImageTooLarge { .. } => ErrorCode::ImageTooLarge,
        }
    }
}

/// The `@path` mentions of `text`: an `@` at the start or after whitespace, up to the next
/// whitespace, without trailing punctuation. `@server:uri` (a colon) is not a path.
pub(crate) fn mentions(text: &str) -> Vec<String> {
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

/// Whether a mention is spelled like a path: a directory in it, or a file extension.
fn looks_like_a_path(raw: &str) -> bool {
    let name = raw.rsplit('/').next().unwrap_or(raw);
    raw.contains('/')
        || name.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && (1..=5).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
        })
}

/// Reads the files `text` mentions. A mention that names no file is just a word (an e-mail
/// handle, a decorator) unless it is spelled like a path, which gets a note; a file that is
/// there but may not be attached gets a note saying why; an image that cannot go is an error
/// (see the module docs).
pub(crate) fn attach(
    host: &Host,
    policy: &PolicyEngine,
    text: &str,
    target: &Target<'_>,
) -> Result<Attached, AttachError> {
    let mut out = Attached::default();
    for raw in mentions(text) {
        let Ok(rel) = host.workspace.parse_file(&raw) else {
            continue;
        };
        if !host.workspace_root.join(rel.to_string()).is_file() {
            // A word is just a word (`@property`); what is spelled like a file (`@notes.txt`,
            // `@src/lib`) was meant as one, and the person is told it did not go.
            if looks_like_a_path(&raw) {
                out.notes.push(format!(
                    "@{raw} was not attached: there is no such file in the workspace"
                ));
            }
            continue;
        }
        if out.files.len() + out.images.len() == MAX_ATTACHED_FILES {
            out.notes.push(format!(
                "@{raw} was not attached: at most {MAX_ATTACHED_FILES} files go with one message"
            ));
            continue;
        }
        let extension = std::path::Path::new(&raw)
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .unwrap_or_default();
        let named_image = IMAGE_EXTENSIONS.contains(&extension.as_str());
        if let Err(e) = host.workspace.check_not_credential(&rel) {
            out.notes.push(format!("@{raw} was not attached: {e}"));
            continue;
        }
        let mut preview = Preview::Read {
            path: rel.to_string(),
        };
        let verdict = policy.decide(ToolName::FsRead.native(), ToolKind::Read, &mut preview);
        let readable = host.readable.as_ref().is_none_or(|r| r(&rel.to_string()));
        if verdict.decision == Decision::Deny || !readable {
            let why = if verdict.reasons.is_empty() {
                "the policy does not let pablo read it".to_string()
            } else {
                verdict.reasons.join("; ")
            };
            out.notes.push(format!("@{raw} was not attached: {why}"));
            continue;
        }
        let file = match host.workspace.read_file(&rel) {
            Ok(file) => file,
            Err(pablo_workspace::WorkspaceError::FileTooLarge { size, .. }) if named_image => {
                return Err(AttachError::ImageTooLarge {
                    path: rel.to_string(),
                    bytes: size,
                    limit: MAX_IMAGE_BYTES,
                });
            }
            Err(e) => {
                out.notes.push(format!("@{raw} was not attached: {e}"));
                continue;
            }
        };
        let path = rel.to_string();
        if let Some(format) = pablo_protocol::ImageFormat::sniff(&file.bytes) {
            if file.bytes.len() > MAX_IMAGE_BYTES {
                return Err(AttachError::ImageTooLarge {
                    path,
                    bytes: file.bytes.len() as u64,
                    limit: MAX_IMAGE_BYTES,
                });
            }
            if !target.takes_images {
                return Err(AttachError::ImagesNotAccepted {
                    what: format!("@{path}"),
                    provider: target.provider.to_string(),
                    model: target.model.to_string(),
                });
            }
            let Some(image) = Image::from_bytes(&file.bytes) else {
                return Err(AttachError::BrokenImage {
                    path,
                    format: format.name(),
                });
            };
            out.images.push(ImageAttachment { path, image });
            continue;
        }
        if named_image {
            return Err(AttachError::NotAnImage { path });
        }
        let bytes = file.bytes.len();
        match pablo_workspace::text_of(&rel, &file.bytes) {
            Ok(text) => {
                let (text, truncated) = cut(text.to_string(), MAX_ATTACHED_FILE_BYTES);
                if truncated {
                    out.notes.push(format!(
                        "@{raw} is {bytes} bytes: its first {MAX_ATTACHED_FILE_BYTES} bytes were attached"
                    ));
                }
                out.files.push(Attachment {
                    path,
                    bytes,
                    truncated,
                    text,
                });
            }
            Err(e) => out.notes.push(format!("@{raw} was not attached: {e}")),
        }
    }
    Ok(out)
}

/// Adds images that came with the prompt itself (an ACP image block) to what the mentions
/// attached: they go only to a model that takes images, like any other.
pub(crate) fn with_given_images(
    mut attached: Attached,
    given: Vec<ImageAttachment>,
    target: &Target<'_>,
) -> Result<Attached, AttachError> {
    if let Some(first) = given.first()
        && !target.takes_images
    {
        return Err(AttachError::ImagesNotAccepted {
            what: format!("the image {}", first.path),
            provider: target.provider.to_string(),
            model: target.model.to_string(),
        });
    }
    attached.images.extend(given);
    Ok(attached)
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

pub(crate) use pablo_protocol::describe::{with_attachments, with_images};

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
