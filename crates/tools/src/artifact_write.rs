//! `artifact.write` (provider name `write_artifact`): generated text saved as a file the person
//! can open, outside the workspace.
//!
//! Artifacts (a report, a table, a JSON export) go to the session's own data directory, never into
//! the workspace, so writing one can neither overwrite the person's files nor need a write
//! approval. The name is a bare file name with one of four text types, JSON must parse, and the
//! size is bounded by `limits.max_artifact_bytes`. The location is derived from the session and
//! the tool call (`<session data>/artifacts/<call>/<name>`), so a call that is repeated after a
//! crash writes the same file again instead of leaving a second copy. Files are replaced
//! atomically (a temporary file renamed over the old one), so a reader never sees half of one.

use std::io::Write;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::Digest;

use super::wording::{self, Args as CallArgs};
use super::{Tool, ToolContext, ToolResult, blocking, parse_args};
use pablo_core::{Coded, ErrorCode, ToolFailure, ToolKind, ToolName};
use pablo_protocol::describe::{CallView, ResultFact, ResultView};
use pablo_protocol::{ArtifactSummary, Preview};

/// What `artifact.write` returns: the file that was saved.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ArtifactResult {
    pub(crate) name: String,
    /// Absolute path under the session's data directory.
    pub(crate) path: String,
    pub(crate) bytes: usize,
}

/// The file types an artifact may have.
pub(crate) const EXTENSIONS: [&str; 4] = ["md", "txt", "csv", "json"];
/// Longest artifact name, in bytes.
pub(crate) const MAX_NAME_BYTES: usize = 128;

/// Why an artifact was not written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ArtifactError {
    #[error("artifact name {name:?} is refused: {reason}")]
    Name { name: String, reason: &'static str },
    #[error(
        "artifact name {name:?} has the type {extension:?}; artifacts are .md, .txt, .csv or .json"
    )]
    Type { name: String, extension: String },
    #[error("{name}: the content is not valid JSON ({message}); a .json artifact must parse")]
    Json { name: String, message: String },
    #[error(
        "{name}: {bytes} bytes, over the artifact limit of {limit} bytes (limits.max_artifact_bytes)"
    )]
    TooLarge {
        name: String,
        bytes: usize,
        limit: usize,
    },
    #[error("cannot write artifact {path}: {message}")]
    Io { path: PathBuf, message: String },
}

impl Coded for ArtifactError {
    fn code(&self) -> ErrorCode {
        match self {
            ArtifactError::Name { .. } => ErrorCode::InvalidName,
            ArtifactError::Type { .. } => ErrorCode::UnsupportedFormat,
            ArtifactError::Json { .. } => ErrorCode::InvalidJson,
            ArtifactError::TooLarge { .. } => ErrorCode::ArtifactTooLarge,
            ArtifactError::Io { .. } => ErrorCode::IoError,
        }
    }
}

/// Checks an artifact name: a bare file name, no folders, no leading dot, a known type.
pub(crate) fn check_name(name: &str) -> Result<(), ArtifactError> {
    let refuse = |reason| {
        Err(ArtifactError::Name {
            name: name.to_string(),
            reason,
        })
    };
    if name.is_empty() {
        return refuse("it is empty");
    }
    if name.len() > MAX_NAME_BYTES {
        return refuse("it is longer than 128 bytes");
    }
    if name.contains('/') || name.contains('\\') {
        return refuse("it names a folder; give a bare file name such as report.md");
    }
    if name.starts_with('.') {
        return refuse("it starts with a dot");
    }
    if name.chars().any(|c| c.is_control()) {
        return refuse("it contains a control character");
    }
    if name != name.trim() {
        return refuse("it starts or ends with whitespace");
    }
    if name.contains(':') {
        return refuse("it contains ':'");
    }
    let Some((stem, ext)) = name.rsplit_once('.') else {
        return Err(ArtifactError::Type {
            name: name.to_string(),
            extension: String::new(),
        });
    };
    if stem.is_empty() || stem.ends_with('.') {
        return refuse("it has no name before the type");
    }
    if !EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()) {
        return Err(ArtifactError::Type {
            name: name.to_string(),
            extension: format!(".{ext}"),
        });
    }
    Ok(())
}

/// The folder of one tool call's artifacts: the call id when it is a plain token, else a hash of
/// it, so any id a provider sends maps to one stable, safe folder name.
pub(crate) fn call_dir(artifacts: &Path, call_id: &str) -> PathBuf {
    let plain = !call_id.is_empty()
        && call_id.len() <= 96
        && !call_id.starts_with('.')
        && call_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.');
    if plain {
        artifacts.join(call_id)
    } else {
        let digest = sha2::Sha256::digest(call_id.as_bytes());
        artifacts.join(format!("call-{}", &hex::encode(digest)[..32]))
    }
}

/// The artifact store of a session: `<state dir>/artifacts`.
pub(crate) fn store_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("artifacts")
}

/// Every artifact of a session, oldest first.
pub(crate) fn list(state_dir: &Path) -> Vec<ArtifactSummary> {
    let mut out: Vec<(std::time::SystemTime, ArtifactSummary)> = Vec::new();
    let Ok(calls) = std::fs::read_dir(store_dir(state_dir)) else {
        return Vec::new();
    };
    for call in calls.flatten() {
        let Ok(files) = std::fs::read_dir(call.path()) else {
            continue;
        };
        let call_id = call.file_name().to_string_lossy().into_owned();
        for f in files.flatten() {
            let name = f.file_name().to_string_lossy().into_owned();
            let Ok(meta) = f.metadata() else { continue };
            if !meta.is_file() || name.starts_with('.') {
                continue;
            }
            out.push((
                meta.modified().unwrap_or(std::time::UNIX_EPOCH),
                ArtifactSummary {
                    name,
                    path: f.path().display().to_string(),
                    bytes: meta.len(),
                    call_id: call_id.clone(),
                },
            ));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.path.cmp(&b.1.path)));
    out.into_iter().map(|(_, s)| s).collect()
}

/// Writes `content` to `dir/name` atomically (temporary file, fsync, rename).
fn install(dir: &Path, name: &str, content: &[u8]) -> Result<PathBuf, ArtifactError> {
    let io = |path: &Path, e: std::io::Error| ArtifactError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let target = dir.join(name);
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let mut f = std::fs::File::create(&tmp).map_err(|e| io(&tmp, e))?;
    let written = f.write_all(content).and_then(|()| f.sync_all());
    drop(f);
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, &target)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(&target, e));
    }
    Ok(target)
}

pub struct ArtifactWrite {
    max_bytes: usize,
}

impl ArtifactWrite {
    /// `max_bytes` is `limits.max_artifact_bytes`.
    pub fn new(max_bytes: usize) -> Self {
        Self { max_bytes }
    }

    fn check(&self, args: &Args) -> Result<(), ArtifactError> {
        check_name(&args.name)?;
        if args.content.len() > self.max_bytes {
            return Err(ArtifactError::TooLarge {
                name: args.name.clone(),
                bytes: args.content.len(),
                limit: self.max_bytes,
            });
        }
        if args.name.to_ascii_lowercase().ends_with(".json")
            && let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(&args.content)
        {
            return Err(ArtifactError::Json {
                name: args.name.clone(),
                message: e.to_string(),
            });
        }
        Ok(())
    }
}

#[derive(Deserialize)]
struct Args {
    name: String,
    content: String,
}

#[async_trait]
impl Tool for ArtifactWrite {
    fn name(&self) -> &'static str {
        ToolName::ArtifactWrite.native()
    }

    fn provider_name(&self) -> &'static str {
        ToolName::ArtifactWrite.provider()
    }

    fn kind(&self) -> ToolKind {
        // It writes only into pablo's own store for the session, like the plan: nothing of the
        // person's changes.
        ToolKind::Think
    }

    fn description(&self) -> String {
        format!(
            "Save generated text (a report, a table, an export) as a file the person can open. It \
             is stored with the session, never in the workspace. name is a bare file name ending \
             in .md, .txt, .csv or .json (no folders, no leading dot); .json content must be \
             valid JSON; at most {} bytes. Returns the file's path.",
            self.max_bytes
        )
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Bare file name, e.g. summary.md."},
                "content": {"type": "string", "description": "The whole text of the file."}
            },
            "required": ["name", "content"],
            "additionalProperties": false
        })
    }

    async fn preview(&self, args: &Value, _ctx: &ToolContext) -> Result<Preview, ToolFailure> {
        let args: Args = parse_args(self.name(), args)?;
        self.check(&args)?;
        Ok(Preview::Artifact {
            name: args.name,
            bytes: args.content.len(),
        })
    }

    async fn commit_result(
        &self,
        args: &Value,
        _preview: &Preview,
        ctx: &ToolContext,
    ) -> Result<ToolResult, ToolFailure> {
        let args: Args = parse_args(self.name(), args)?;
        self.check(&args)?;
        if ctx.cancel.is_cancelled() {
            return Err(ToolFailure::new(
                ErrorCode::Cancelled,
                format!("{} was not written: the turn was interrupted", args.name),
            ));
        }
        let dir = call_dir(&store_dir(&ctx.host.state_dir), &ctx.call_id);
        let Args { name, content } = args;
        let bytes = content.len();
        let shown = name.clone();
        let path = blocking(move || install(&dir, &name, content.as_bytes())).await?;
        Ok(ArtifactResult {
            name: shown,
            path: path.display().to_string(),
            bytes,
        }
        .into())
    }
}

pub(crate) fn show_call(args: CallArgs<'_>) -> CallView {
    let title = format!("Save artifact {}", args.clipped("name").unwrap_or_default());
    wording::call(args, title, args.text("name"))
}

/// `saved summary.md (10 bytes)`, and where it is.
pub(crate) fn show_result(data: &Value) -> Option<ResultView> {
    let r: ArtifactResult = wording::typed(data)?;
    let name = if r.name.is_empty() { "?" } else { &r.name };
    let body = data.get("path").is_some().then(|| r.path.clone());
    Some(ResultView {
        fact: Some(ResultFact::ArtifactSaved),
        ..ResultView::lines(
            format!("saved {name} ({} bytes)", r.bytes),
            body.into_iter().collect(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_names_with_known_types_pass() {
        for ok in [
            "report.md",
            "a.txt",
            "T.CSV",
            "data.v2.json",
            "my report.md",
        ] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn call_dirs_are_stable_and_safe_for_any_id() {
        let base = Path::new("/a");
        assert_eq!(call_dir(base, "call_1"), Path::new("/a/call_1"));
        let odd = call_dir(base, "../../etc");
        assert_eq!(odd.parent(), Some(base));
        assert_eq!(odd, call_dir(base, "../../etc"));
        assert_ne!(odd, call_dir(base, "../../etd"));
        assert_eq!(call_dir(base, "").parent(), Some(base));
    }
}
