//! From pablo's [`Event`]s to ACP `session/update` payloads, and from ACP prompts to text.
//!
//! Kept free of any connection so that the mapping (what an editor is shown for each engine
//! event) can be tested on its own. The [`Translator`] remembers, per tool call, what the editor
//! has already been told (the diff that was previewed, the output so far), because ACP tool-call
//! updates replace a call's whole `content` list rather than appending to it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema as acp;
use serde_json::{Value, json};

use pablo_core::ToolKind;
use pablo_protocol::{
    CommandPreview, Decision, DiffTag, Event, FileChangePreview, PlanItem, PlanStatus, Preview,
    ToolOutcome, Usage, Verdict, WorkMode,
};

mod calls;
mod diagnostics;

/// Output kept per running command, as shown to the editor (the tail wins).
pub(crate) const MAX_SHOWN_OUTPUT_BYTES: usize = 64 * 1024;

/// What the editor knows about one tool call.
#[derive(Debug, Clone, Default)]
struct CallView {
    tool: String,
    /// Content built from the preview (a diff, a parsed command), kept across updates.
    preview_content: Vec<acp::ToolCallContent>,
    /// Command output so far (ANSI stripped, bounded).
    output: String,
    /// The editor terminal the command runs in, embedded in every later update of the call
    /// (updates replace the whole content list).
    terminal: Option<String>,
}

/// Maps engine events of one session to ACP session updates.
#[derive(Debug, Clone)]
pub(crate) struct Translator {
    workspace: PathBuf,
    kinds: HashMap<String, ToolKind>,
    /// Tokens the host lets a request carry; the context size reported until the engine names
    /// the model's window.
    context_tokens: u64,
    calls: HashMap<String, CallView>,
    /// The usage of the model call whose context report has not come yet.
    usage: Option<(Usage, Usage)>,
    /// The working mode the client was last told of (in the session's answer or an update).
    mode: WorkMode,
}

impl Translator {
    /// `kinds` maps native tool names to their kind (from the session's catalog);
    /// `context_tokens` is what `usage_update` reports as the window size.
    pub(crate) fn new(
        workspace: PathBuf,
        kinds: HashMap<String, ToolKind>,
        context_tokens: u64,
    ) -> Self {
        Self {
            workspace,
            kinds,
            context_tokens,
            calls: HashMap::new(),
            usage: None,
            mode: WorkMode::Ask,
        }
    }

    /// The mode the session starts in, as its `session/new` or `session/load` answer says.
    pub(crate) fn with_mode(mut self, mode: WorkMode) -> Self {
        self.mode = mode;
        self
    }

    /// The ACP kind of a tool, by native name.
    pub(crate) fn kind_of(&self, tool: &str) -> acp::ToolKind {
        match self.kinds.get(tool) {
            Some(k) => acp_kind(*k),
            None => acp::ToolKind::Other,
        }
    }

    /// The updates for one engine event (often none). Approval requests and turn ends are the
    /// caller's business; this only keeps the editor's picture of the session current.
    pub(crate) fn updates(&mut self, event: &Event) -> Vec<acp::SessionUpdate> {
        match event {
            Event::MessageDelta { text } if !text.is_empty() => {
                vec![acp::SessionUpdate::AgentMessageChunk(
                    acp::ContentChunk::new(text.as_str().into()),
                )]
            }
            Event::ReasoningDelta { text } if !text.is_empty() => {
                vec![acp::SessionUpdate::AgentThoughtChunk(
                    acp::ContentChunk::new(text.as_str().into()),
                )]
            }
            Event::ToolCallBegin {
                call_id,
                tool,
                arguments,
            } => self.call_began(call_id, tool, arguments),
            Event::ToolCallRunning { call_id, preview } => {
                let content = self.preview_content(preview);
                let view = self.calls.entry(call_id.clone()).or_default();
                view.preview_content = content.clone();
                let mut fields = acp::ToolCallUpdateFields::new()
                    .status(acp::ToolCallStatus::InProgress)
                    .content(content);
                if let Some(loc) = self.preview_location(preview) {
                    fields = fields.locations(vec![loc]);
                }
                vec![acp::SessionUpdate::ToolCallUpdate(
                    acp::ToolCallUpdate::new(call_id.clone(), fields),
                )]
            }
            Event::ToolOutputDelta { call_id, chunk } => {
                let view = self.calls.entry(call_id.clone()).or_default();
                view.output.push_str(&strip_ansi_escapes::strip_str(chunk));
                keep_tail(&mut view.output, MAX_SHOWN_OUTPUT_BYTES);
                let content = call_content(view);
                vec![acp::SessionUpdate::ToolCallUpdate(
                    acp::ToolCallUpdate::new(
                        call_id.clone(),
                        acp::ToolCallUpdateFields::new().content(content),
                    ),
                )]
            }
            Event::ToolTerminal {
                call_id,
                terminal_id,
            } => {
                let view = self.calls.entry(call_id.clone()).or_default();
                view.terminal = Some(terminal_id.clone());
                let content = call_content(view);
                vec![acp::SessionUpdate::ToolCallUpdate(
                    acp::ToolCallUpdate::new(
                        call_id.clone(),
                        acp::ToolCallUpdateFields::new().content(content),
                    ),
                )]
            }
            Event::ToolCallEnd {
                call_id, result, ..
            } => {
                let view = self.calls.remove(call_id).unwrap_or_default();
                let mut content = call_content(&view);
                let status = match result {
                    ToolOutcome::Ok { .. } => acp::ToolCallStatus::Completed,
                    ToolOutcome::Err { error, .. } => {
                        content.push(text_content(format!("{} ({})", error.message, error.code)));
                        acp::ToolCallStatus::Failed
                    }
                };
                vec![acp::SessionUpdate::ToolCallUpdate(
                    acp::ToolCallUpdate::new(
                        call_id.clone(),
                        acp::ToolCallUpdateFields::new()
                            .status(status)
                            .content(content)
                            .raw_output(result.to_json()),
                    ),
                )]
            }
            Event::PlanUpdate { items, .. } => vec![acp::SessionUpdate::Plan(plan(items))],
            // A subagent's calls are shown as calls of their own, under the ids its approvals
            // are asked with.
            Event::Subagent { call_id, event } => {
                match pablo_protocol::subagent::as_own_call(call_id, event) {
                    Some(e) => self.updates(&e),
                    None => Vec::new(),
                }
            }
            // The agent confirms every switch, the client's own included; the client hears of
            // one only when it changes what it was told.
            Event::ModeChanged { mode } if *mode != self.mode => {
                self.mode = *mode;
                vec![acp::SessionUpdate::CurrentModeUpdate(
                    acp::CurrentModeUpdate::new(mode.name()),
                )]
            }
            Event::AnswerRetried { reason, .. } => thought(format!(
                "the answer was cut off ({reason}); asking again, once"
            )),
            // A retry is said as a thought: every client shows those, and it is not the answer.
            Event::Retry {
                attempt,
                max_attempts,
                wait_ms,
                reason,
                ..
            } => thought(pablo_protocol::retry_words(
                *attempt,
                *max_attempts,
                wait_ms.div_ceil(1000),
                reason,
            )),
            // A hook's decision is said as a thought, like a retry: seen, and not the answer.
            hook @ Event::Hook { .. } => pablo_protocol::describe::hook_words(hook)
                .map(thought)
                .unwrap_or_default(),
            // The usage of a call is reported with the context report that follows it, which
            // names the model's window and the session's cost.
            Event::Usage { last, total } => {
                self.usage = Some((*last, *total));
                Vec::new()
            }
            Event::ContextUsage {
                used_tokens,
                window_tokens,
                cost_usd,
            } => {
                self.context_tokens = *window_tokens;
                let (last, total) = self.usage.take().unwrap_or_else(|| {
                    let used = Usage {
                        input_tokens: *used_tokens,
                        ..Usage::default()
                    };
                    (used, Usage::default())
                });
                let mut update = usage_update(&last, &total, *window_tokens);
                if let Some(c) = cost_usd {
                    update = update.cost(acp::Cost::new(*c, "USD"));
                }
                vec![acp::SessionUpdate::UsageUpdate(update)]
            }
            _ => Vec::new(),
        }
    }

    /// The updates that redraw a saved session in the editor (`session/load`): the person's
    /// messages, the agent's messages (whole, as journaled), tool calls with their final state,
    /// the checklist. Live-only events (deltas, usage, approvals) are left out.
    pub(crate) fn replay(&mut self, transcript: &[Event]) -> Vec<acp::SessionUpdate> {
        let mut out = Vec::new();
        for event in transcript {
            match event {
                Event::UserMessage { text } => out.push(acp::SessionUpdate::UserMessageChunk(
                    acp::ContentChunk::new(text.as_str().into()),
                )),
                Event::MessageCompleted { text, .. } if !text.is_empty() => {
                    out.push(acp::SessionUpdate::AgentMessageChunk(
                        acp::ContentChunk::new(text.as_str().into()),
                    ))
                }
                Event::ReasoningCompleted { blocks } => {
                    let text = pablo_protocol::reasoning_text(blocks);
                    if !text.is_empty() {
                        out.push(acp::SessionUpdate::AgentThoughtChunk(
                            acp::ContentChunk::new(text.as_str().into()),
                        ));
                    }
                }
                // Usage is journaled (for the session's totals) but not redrawn.
                Event::Usage { .. } | Event::ContextUsage { .. } => {}
                e if e.is_live_only() => {}
                other => out.extend(self.updates(other)),
            }
        }
        out
    }

    /// The tool call as shown in a `session/request_permission`: title, kind and the preview
    /// (a diff for file changes, the parsed command with each part's decision for commands).
    pub(crate) fn permission_tool_call(
        &mut self,
        call_id: &str,
        tool: &str,
        preview: &Preview,
        verdict: &Verdict,
    ) -> acp::ToolCallUpdate {
        let shown = self.preview_content(preview);
        let mut content = shown.clone();
        if !verdict.reasons.is_empty() {
            content.push(text_content(verdict.reasons.join("; ")));
        }
        let view = self.calls.entry(call_id.to_string()).or_default();
        view.tool = tool.to_string();
        view.preview_content = shown;
        let mut fields = acp::ToolCallUpdateFields::new()
            .kind(self.kind_of(tool))
            .status(acp::ToolCallStatus::Pending)
            .title(permission_title(tool, preview))
            .content(content);
        if let Some(loc) = self.preview_location(preview) {
            fields = fields.locations(vec![loc]);
        }
        acp::ToolCallUpdate::new(call_id.to_string(), fields)
    }

    fn preview_location(&self, preview: &Preview) -> Option<acp::ToolCallLocation> {
        match preview {
            Preview::Read { path } => Some(acp::ToolCallLocation::new(self.workspace.join(path))),
            Preview::FileChange(fc) => {
                let mut loc = acp::ToolCallLocation::new(self.workspace.join(&fc.path));
                if let Some(line) = fc
                    .hunks
                    .first()
                    .and_then(|h| u32::try_from(h.new_start).ok())
                {
                    loc = loc.line(line);
                }
                Some(loc)
            }
            _ => None,
        }
    }

    fn preview_content(&self, preview: &Preview) -> Vec<acp::ToolCallContent> {
        match preview {
            Preview::FileChange(fc) => vec![file_change_content(&self.workspace, fc)],
            Preview::Command(cmd) => vec![text_content(command_text(cmd))],
            Preview::Session { action, session_id } => vec![text_content(match session_id {
                Some(id) => format!("{action} background session {id}"),
                None => format!("{action} background sessions"),
            })],
            Preview::Fetch { url, .. } => vec![text_content(format!("GET {url}"))],
            Preview::Artifact { name, bytes } => {
                vec![text_content(format!(
                    "save artifact {name} ({bytes} bytes)"
                ))]
            }
            Preview::Mcp(m) => vec![text_content(format!(
                "MCP server {}, tool {}, arguments: {}",
                m.server, m.tool, m.arguments
            ))],
            Preview::Read { .. } | Preview::Internal => Vec::new(),
        }
    }
}

/// pablo's tool kinds in ACP terms.
pub(crate) fn acp_kind(kind: ToolKind) -> acp::ToolKind {
    match kind {
        ToolKind::Read => acp::ToolKind::Read,
        ToolKind::Search => acp::ToolKind::Search,
        ToolKind::Edit => acp::ToolKind::Edit,
        ToolKind::Execute => acp::ToolKind::Execute,
        ToolKind::Fetch => acp::ToolKind::Fetch,
        ToolKind::Think => acp::ToolKind::Think,
    }
}

fn permission_title(tool: &str, preview: &Preview) -> String {
    match preview {
        Preview::FileChange(fc) => match fc.old_revision {
            None => format!("Create {} (+{})", fc.path, fc.added),
            Some(_) => format!("Edit {} (+{} −{})", fc.path, fc.added, fc.removed),
        },
        Preview::Command(cmd) => format!("Run {}", clip(&cmd.command)),
        Preview::Read { path } => format!("{tool} {path}"),
        Preview::Session { action, .. } => format!("Background session: {action}"),
        Preview::Fetch { url, .. } => format!("Fetch {}", clip(url)),
        Preview::Artifact { name, .. } => format!("Save artifact {name}"),
        Preview::Internal => tool.to_string(),
        Preview::Mcp(m) => format!("{} ({} MCP server)", m.tool, m.server),
    }
}

fn clip(s: &str) -> String {
    pablo_protocol::describe::first_line_clipped(s, 120, true)
}

fn text_content(text: impl Into<String>) -> acp::ToolCallContent {
    acp::ToolCallContent::from(text.into())
}

/// A file change as an ACP `diff` block: absolute path, the text being replaced (rebuilt from
/// the hunks) and the complete new text — exactly the bytes that will be committed. When the old
/// text cannot be rebuilt, the unified diff is shown as text instead.
pub(crate) fn file_change_content(
    workspace: &Path,
    fc: &FileChangePreview,
) -> acp::ToolCallContent {
    let path = workspace.join(&fc.path);
    if fc.old_revision.is_none() {
        return acp::ToolCallContent::Diff(acp::Diff::new(path, fc.new_text.clone()));
    }
    match old_text_from_hunks(fc) {
        Some(old) => {
            acp::ToolCallContent::Diff(acp::Diff::new(path, fc.new_text.clone()).old_text(old))
        }
        None => text_content(format!("```diff\n{}\n```", fc.diff.trim_end())),
    }
}

/// Rebuilds the replaced text by applying the hunks backwards onto the new text. `None` when
/// there are no hunks to apply or they do not fit the new text.
pub(crate) fn old_text_from_hunks(fc: &FileChangePreview) -> Option<String> {
    if fc.hunks.is_empty() {
        return None;
    }
    let eol = if fc.new_text.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let new_lines: Vec<&str> = fc.new_text.split_inclusive('\n').collect();
    let mut old = String::with_capacity(fc.new_text.len());
    let mut next = 0usize; // index into new_lines
    for hunk in &fc.hunks {
        // `new_start` is 1-based; an empty range names the line before it.
        let start = if hunk.new_len == 0 {
            hunk.new_start
        } else {
            hunk.new_start.checked_sub(1)?
        };
        if start < next || start > new_lines.len() {
            return None;
        }
        for line in &new_lines[next..start] {
            old.push_str(line);
        }
        let end = start.checked_add(hunk.new_len)?;
        if end > new_lines.len() {
            return None;
        }
        let last_new_unterminated = end == new_lines.len()
            && new_lines.last().is_some_and(|l| !l.ends_with('\n'))
            && hunk.new_len > 0;
        let old_lines: Vec<&str> = hunk
            .lines
            .iter()
            .filter(|l| l.tag != DiffTag::Added)
            .map(|l| l.text.as_str())
            .collect();
        let last_is_context = hunk
            .lines
            .iter()
            .rev()
            .find(|l| l.tag != DiffTag::Added)
            .is_some_and(|l| l.tag == DiffTag::Context);
        for (i, line) in old_lines.iter().enumerate() {
            old.push_str(line);
            let is_last = i + 1 == old_lines.len();
            if !(is_last && last_new_unterminated && last_is_context) {
                old.push_str(eol);
            }
        }
        next = end;
    }
    for line in &new_lines[next..] {
        old.push_str(line);
    }
    Some(old)
}

/// A command as the policy understood it: the command line, then each simple command with its
/// decision and the rule that made it.
pub(crate) fn command_text(cmd: &CommandPreview) -> String {
    let mut s = format!("```sh\n{}\n```\n", cmd.command.trim_end());
    if cmd.cwd != "." && !cmd.cwd.is_empty() {
        s.push_str(&format!("in `{}`\n", cmd.cwd));
    }
    if cmd.background {
        s.push_str("runs in the background\n");
    }
    for c in &cmd.commands {
        let decision = match c.decision {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        };
        let exe = c
            .executable
            .clone()
            .unwrap_or_else(|| c.argv.first().cloned().unwrap_or_default());
        s.push_str(&format!("- `{exe}`"));
        if c.argv.len() > 1 {
            s.push_str(&format!(" {}", c.argv[1..].join(" ")));
        }
        s.push_str(&format!(" — {decision}"));
        if let Some(rule) = &c.rule_id {
            s.push_str(&format!(" ({rule})"));
        }
        if let Some(reason) = &c.reason {
            s.push_str(&format!(": {reason}"));
        }
        s.push('\n');
    }
    s.trim_end().to_string()
}

fn call_content(view: &CallView) -> Vec<acp::ToolCallContent> {
    let mut content = view.preview_content.clone();
    if let Some(id) = &view.terminal {
        content.push(acp::ToolCallContent::Terminal(acp::Terminal::new(
            id.clone(),
        )));
    }
    if !view.output.is_empty() {
        content.push(text_content(format!(
            "```\n{}\n```",
            view.output.trim_end_matches('\n')
        )));
    }
    content
}

/// Drops the front of `s` so that at most `max` bytes remain, on a character boundary.
fn keep_tail(s: &mut String, max: usize) {
    if s.len() <= max {
        return;
    }
    let mut cut = s.len() - max;
    while !s.is_char_boundary(cut) {
        cut += 1;
    }
    s.drain(..cut);
}

pub(crate) fn plan(items: &[PlanItem]) -> acp::Plan {
    acp::Plan::new(
        items
            .iter()
            .map(|i| {
                acp::PlanEntry::new(
                    i.content.clone(),
                    acp::PlanEntryPriority::Medium,
                    match i.status {
                        PlanStatus::Pending => acp::PlanEntryStatus::Pending,
                        PlanStatus::InProgress => acp::PlanEntryStatus::InProgress,
                        PlanStatus::Completed => acp::PlanEntryStatus::Completed,
                    },
                )
            })
            .collect(),
    )
}

/// `used` is what the last model call carried (its input and output); the exact token counts go
/// in `_meta.pablo` for clients that want them.
pub(crate) fn usage_update(last: &Usage, total: &Usage, context_tokens: u64) -> acp::UsageUpdate {
    let meta = json!({"pablo": {
        "last": {"inputTokens": last.input_tokens, "outputTokens": last.output_tokens,
                 "cachedInputTokens": last.cached_input_tokens},
        "total": {"inputTokens": total.input_tokens, "outputTokens": total.output_tokens,
                  "cachedInputTokens": total.cached_input_tokens},
    }});
    let update = acp::UsageUpdate::new(last.total(), context_tokens.max(last.total()));
    match meta {
        Value::Object(map) => update.meta(map),
        _ => update,
    }
}

/// The text of a prompt and the images that came with it. Text is taken as is, embedded text
/// resources are quoted with their URI, resource links are named; an image block must be a PNG,
/// JPEG, GIF or WebP (by its bytes) within the size bound of `@path` images. Whether the model
/// takes images is the agent's to say (it refuses the turn with `image_not_accepted_by_model`).
pub(crate) fn prompt_parts(
    blocks: &[acp::ContentBlock],
) -> Result<(String, Vec<pablo_protocol::ImageAttachment>), String> {
    use base64::Engine as _;
    let mut parts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    for block in blocks {
        match block {
            acp::ContentBlock::Text(t) => parts.push(t.text.clone()),
            acp::ContentBlock::ResourceLink(link) => {
                parts.push(format!("[{}]({})", link.name, link.uri));
            }
            acp::ContentBlock::Resource(res) => match &res.resource {
                acp::EmbeddedResourceResource::TextResourceContents(t) => {
                    parts.push(format!(
                        "<context uri=\"{}\">\n{}\n</context>",
                        t.uri,
                        t.text.trim_end_matches('\n')
                    ));
                }
                _ => return Err("binary embedded resources are not supported".into()),
            },
            acp::ContentBlock::Image(img) => {
                let name = img
                    .uri
                    .clone()
                    .unwrap_or_else(|| format!("{} of the prompt", ordinal(images.len() + 1)));
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(img.data.trim())
                    .map_err(|e| format!("the image {name} is not valid base64 ({e})"))?;
                if bytes.len() > pablo_protocol::image::MAX_IMAGE_BYTES {
                    return Err(format!(
                        "the image {name} is {} bytes, more than the {} bytes one image may be",
                        bytes.len(),
                        pablo_protocol::image::MAX_IMAGE_BYTES
                    ));
                }
                let image = pablo_protocol::Image::from_bytes(&bytes).ok_or_else(|| {
                    format!(
                        "the image {name} ({}) is not a PNG, JPEG, GIF or WebP image",
                        img.mime_type
                    )
                })?;
                images.push(pablo_protocol::ImageAttachment { path: name, image });
            }
            acp::ContentBlock::Audio(_) => return Err("audio prompts are not supported".into()),
            _ => return Err("this kind of prompt content is not supported".into()),
        }
    }
    let text = parts.join("\n\n");
    if text.trim().is_empty() && images.is_empty() {
        return Err("the prompt has no text".into());
    }
    Ok((text, images))
}

fn ordinal(n: usize) -> String {
    match n {
        1 => "first".into(),
        2 => "second".into(),
        3 => "third".into(),
        n => format!("number {n}"),
    }
}

/// The modes a session offers, for the `session/new` and `session/load` answers: the TUI's
/// Shift-Tab modes, by the names `--mode` and config take.
pub(crate) fn session_modes(current: WorkMode) -> acp::SessionModeState {
    let available = WorkMode::ALL
        .into_iter()
        .map(|m| {
            let (name, about) = match m {
                WorkMode::Ask => (
                    "Ask",
                    "Asks before file changes and commands the policy does not allow",
                ),
                WorkMode::AutoEdit => (
                    "Auto-edit",
                    "File changes inside the write roots apply without asking; commands as in Ask",
                ),
                WorkMode::Plan => (
                    "Plan",
                    "Read-only: no file changes, only commands the policy allows without asking",
                ),
            };
            acp::SessionMode::new(m.name(), name).description(about)
        })
        .collect();
    acp::SessionModeState::new(current.name(), available)
}

/// A line said as a thought: every client shows those, and they are not the answer.
fn thought(words: String) -> Vec<acp::SessionUpdate> {
    vec![acp::SessionUpdate::AgentThoughtChunk(
        acp::ContentChunk::new(format!("{words}\n").into()),
    )]
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use pablo_protocol::{DiffHunk, DiffLine};

    fn line(tag: DiffTag, text: &str) -> DiffLine {
        DiffLine {
            tag,
            old_lineno: None,
            new_lineno: None,
            text: text.into(),
        }
    }

    fn change(new_text: &str, hunks: Vec<DiffHunk>) -> FileChangePreview {
        FileChangePreview {
            path: "src/a.txt".into(),
            old_revision: Some("old".into()),
            new_revision: "new".into(),
            new_text: new_text.into(),
            diff: "--- a\n+++ b\n".into(),
            added: 1,
            removed: 1,
            hunks,
        }
    }

    #[test]
    fn old_text_is_rebuilt_from_hunks_of_a_middle_edit() {
        let fc = change(
            "one\ntwo\nTHREE\nfour\nfive\n",
            vec![DiffHunk {
                header: "@@ -2,3 +2,3 @@".into(),
                old_start: 2,
                old_len: 3,
                new_start: 2,
                new_len: 3,
                lines: vec![
                    line(DiffTag::Context, "two"),
                    line(DiffTag::Removed, "three"),
                    line(DiffTag::Added, "THREE"),
                    line(DiffTag::Context, "four"),
                ],
            }],
        );
        assert_eq!(
            old_text_from_hunks(&fc).unwrap(),
            "one\ntwo\nthree\nfour\nfive\n"
        );
    }

    #[test]
    fn old_text_is_rebuilt_for_a_pure_insertion_and_an_unterminated_last_line() {
        let fc = change(
            "a\nb\nc",
            vec![DiffHunk {
                header: "@@ -1,2 +1,3 @@".into(),
                old_start: 1,
                old_len: 2,
                new_start: 1,
                new_len: 3,
                lines: vec![
                    line(DiffTag::Context, "a"),
                    line(DiffTag::Added, "b"),
                    line(DiffTag::Context, "c"),
                ],
            }],
        );
        assert_eq!(old_text_from_hunks(&fc).unwrap(), "a\nc");
    }

    #[test]
    fn hunks_that_do_not_fit_the_new_text_give_no_old_text() {
        let fc = change(
            "a\n",
            vec![DiffHunk {
                header: "@@ -5,1 +5,1 @@".into(),
                old_start: 5,
                old_len: 1,
                new_start: 5,
                new_len: 1,
                lines: vec![line(DiffTag::Context, "x")],
            }],
        );
        assert_eq!(old_text_from_hunks(&fc), None);
        // … and the editor is shown the unified diff instead.
        let content = file_change_content(Path::new("/ws"), &fc);
        let v = serde_json::to_value(&content).unwrap();
        assert_eq!(v["type"], "content");
        assert!(
            v["content"]["text"]
                .as_str()
                .unwrap()
                .starts_with("```diff")
        );
    }

    #[test]
    fn a_created_file_is_a_diff_without_old_text() {
        let mut fc = change("new\n", Vec::new());
        fc.old_revision = None;
        let v = serde_json::to_value(file_change_content(Path::new("/ws"), &fc)).unwrap();
        assert_eq!(v["type"], "diff");
        assert_eq!(v["path"], "/ws/src/a.txt");
        assert_eq!(v["newText"], "new\n");
        assert!(v.get("oldText").is_none() || v["oldText"].is_null());
    }

    #[test]
    fn a_command_in_an_editor_terminal_embeds_the_terminal_until_the_call_ends() {
        let mut t = Translator::new("/ws".into(), HashMap::new(), 1000);
        t.updates(&Event::ToolCallBegin {
            call_id: "c1".into(),
            tool: "shell.run".into(),
            arguments: json!({"command": "make"}),
        });
        let u = t.updates(&Event::ToolTerminal {
            call_id: "c1".into(),
            terminal_id: "term-7".into(),
        });
        let v = serde_json::to_value(&u[0]).unwrap();
        assert_eq!(v["sessionUpdate"], "tool_call_update");
        assert_eq!(v["toolCallId"], "c1");
        assert_eq!(v["content"][0]["type"], "terminal");
        assert_eq!(v["content"][0]["terminalId"], "term-7");
        // Updates replace the content list, so the last one must still carry the terminal.
        let end = t.updates(&Event::ToolCallEnd {
            call_id: "c1".into(),
            tool: "shell.run".into(),
            result: ToolOutcome::Ok {
                ok: pablo_protocol::True,
                data: json!({"exit_code": 0}),
            },
        });
        let v = serde_json::to_value(&end[0]).unwrap();
        assert_eq!(v["status"], "completed");
        assert!(
            v["content"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["type"] == "terminal" && c["terminalId"] == "term-7"),
            "{v}"
        );
    }

    #[test]
    fn command_output_is_stripped_of_ansi_and_bounded() {
        let mut t = Translator::new("/ws".into(), HashMap::new(), 1000);
        t.updates(&Event::ToolCallBegin {
            call_id: "c1".into(),
            tool: "shell.run".into(),
            arguments: json!({"command": "ls"}),
        });
        let u = t.updates(&Event::ToolOutputDelta {
            call_id: "c1".into(),
            chunk: "\u{1b}[31mred\u{1b}[0m\n".into(),
        });
        let v = serde_json::to_value(&u[0]).unwrap();
        assert_eq!(v["sessionUpdate"], "tool_call_update");
        assert_eq!(v["content"][0]["content"]["text"], "```\nred\n```");
        let big = "x".repeat(MAX_SHOWN_OUTPUT_BYTES + 10);
        t.updates(&Event::ToolOutputDelta {
            call_id: "c1".into(),
            chunk: big,
        });
        assert!(t.calls["c1"].output.len() <= MAX_SHOWN_OUTPUT_BYTES);
    }

    #[test]
    fn a_retry_reaches_the_editor_as_a_thought_in_the_words_of_every_front_end() {
        let mut t = Translator::new("/ws".into(), HashMap::new(), 1000);
        let u = t.updates(&Event::Retry {
            attempt: 2,
            max_attempts: 5,
            wait_ms: 11_500,
            reason: "503 from api.example.com".into(),
            code: "model_http_error".into(),
        });
        let v = serde_json::to_value(&u[0]).unwrap();
        assert_eq!(v["sessionUpdate"], "agent_thought_chunk");
        assert_eq!(
            v["content"]["text"],
            "retrying in 12 s, attempt 2 of 5: 503 from api.example.com\n"
        );
    }

    #[test]
    fn a_hooks_decision_reaches_the_editor_as_a_thought_and_a_silent_run_as_nothing() {
        let mut t = Translator::new("/ws".into(), HashMap::new(), 1000);
        let hook = |decision: &str, message: Option<&str>| Event::Hook {
            event: "post_tool_use".into(),
            hook: "lint-guard".into(),
            decision: decision.into(),
            call_id: Some("c1".into()),
            path: None,
            message: message.map(str::to_string),
            context: None,
            duration_ms: 3,
        };
        let u = t.updates(&hook(
            "failed_open",
            Some("the hook failed: it exited with status 1"),
        ));
        let v = serde_json::to_value(&u[0]).unwrap();
        assert_eq!(v["sessionUpdate"], "agent_thought_chunk");
        assert_eq!(
            v["content"]["text"],
            "hook lint-guard (post_tool_use) failed, going ahead: the hook failed: it exited with \
             status 1\n"
        );
        assert!(t.updates(&hook("continue", None)).is_empty());
    }

    #[test]
    fn a_replayed_transcript_shows_user_and_agent_messages_and_finished_calls() {
        let mut t = Translator::new("/ws".into(), HashMap::new(), 1);
        let transcript = vec![
            Event::UserMessage {
                text: "fix it".into(),
            },
            Event::MessageDelta {
                text: "On it".into(),
            },
            Event::MessageCompleted {
                text: "On it".into(),
                tool_calls: Vec::new(),
            },
            Event::ToolCallBegin {
                call_id: "c1".into(),
                tool: "fs.read".into(),
                arguments: json!({"path": "a.rs"}),
            },
            Event::ToolCallEnd {
                call_id: "c1".into(),
                tool: "fs.read".into(),
                result: ToolOutcome::ok(json!({"text": "x"})),
            },
            Event::Usage {
                last: Usage::default(),
                total: Usage::default(),
            },
            Event::ReasoningCompleted {
                blocks: vec![pablo_protocol::ReasoningBlock::Thinking {
                    text: "check the tests".into(),
                    signature: "s".into(),
                }],
            },
        ];
        let v: Vec<Value> = t
            .replay(&transcript)
            .iter()
            .map(|u| serde_json::to_value(u).unwrap())
            .collect();
        let kinds: Vec<&str> = v
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "user_message_chunk",
                "agent_message_chunk",
                "tool_call",
                "tool_call_update",
                "agent_thought_chunk"
            ]
        );
        assert_eq!(v[4]["content"]["text"], "check the tests");
        assert_eq!(v[0]["content"]["text"], "fix it");
        assert_eq!(v[1]["content"]["text"], "On it");
        assert_eq!(v[2]["locations"][0]["path"], "/ws/a.rs");
        assert_eq!(v[3]["status"], "completed");
    }

    #[test]
    fn tool_kinds_come_from_the_catalog() {
        let kinds = HashMap::from([
            ("fs.read".to_string(), ToolKind::Read),
            ("shell.run".to_string(), ToolKind::Execute),
            ("plan.update".to_string(), ToolKind::Think),
            ("web.fetch".to_string(), ToolKind::Fetch),
        ]);
        let t = Translator::new("/ws".into(), kinds, 1);
        assert_eq!(t.kind_of("fs.read"), acp::ToolKind::Read);
        assert_eq!(t.kind_of("shell.run"), acp::ToolKind::Execute);
        assert_eq!(t.kind_of("plan.update"), acp::ToolKind::Think);
        assert_eq!(t.kind_of("web.fetch"), acp::ToolKind::Fetch);
        assert_eq!(t.kind_of("nope"), acp::ToolKind::Other);
    }

    #[test]
    fn prompt_images_must_be_real_images_and_resources_are_quoted() {
        let img = |data: &str| -> acp::ContentBlock {
            serde_json::from_value(json!({"type": "image", "data": data, "mimeType": "image/png"}))
                .unwrap()
        };
        let err = prompt_parts(&[img("AAAA")]).unwrap_err();
        assert!(err.contains("not a PNG, JPEG, GIF or WebP"), "{err}");
        assert!(prompt_parts(&[img("not base64!")]).is_err());
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
        let (text, images) = prompt_parts(&["what is this?".into(), img(png)]).unwrap();
        assert_eq!(text, "what is this?");
        assert_eq!(images.len(), 1);
        assert_eq!(images[0].path, "first of the prompt");
        assert_eq!(images[0].image.media_type, "image/png");
        assert_eq!(&*images[0].image.base64, png);
        let res: acp::ContentBlock = serde_json::from_value(json!({
            "type": "resource",
            "resource": {"uri": "file:///ws/a.rs", "text": "fn a() {}\n"}
        }))
        .unwrap();
        let (text, _) = prompt_parts(&["look at this".into(), res]).unwrap();
        assert_eq!(
            text,
            "look at this\n\n<context uri=\"file:///ws/a.rs\">\nfn a() {}\n</context>"
        );
    }
}
