//! The only contract between the engine and its front-ends.
//!
//! A front-end (the TUI, `pablo run`, the ACP agent) sends [`Op`]s to the agent task and receives
//! [`Event`]s back. Everything here is plain serde data so that the same stream can be printed as
//! JSON lines, journaled to disk, replayed on resume, or rendered on screen.

pub mod checkpoint;
pub mod describe;
mod diagnostics;
pub mod image;
mod mcp;
mod outcome;
mod question;
mod sandbox;
pub mod subagent;
#[macro_use]
mod tagged;
#[cfg(test)]
mod tagged_tests;
mod usage;
mod verdict;
mod web_search;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use checkpoint::{
    FileChange, FileState, HunkSource, RestoreAction, RestoreChoice, RestoreFile, RestorePlan,
    RestoreReport, RestoreScope, RestoreStatus, RestoredFile, SkippedFile, TurnCheckpoint,
};
pub use diagnostics::{
    Diagnostic, DiagnosticsDelta, FileDiagnostics, LspServerView, LspState, PreviewDiagnostics,
    Severity,
};
pub use image::{Image, ImageAttachment, ImageFormat};
pub use mcp::{
    McpCallPreview, McpPromptArgument, McpPromptView, McpResourceView, McpServerView, McpState,
    McpToolView,
};
pub use question::{FieldKind, QuestionField};
pub use question::{McpQuestion, QuestionAnswer};
pub use sandbox::{SandboxChoice, SandboxProfile};
pub use usage::Usage;
pub use verdict::{Decision, Verdict};
pub use web_search::WebSearch;
pub use web_search::{SearchProvider, WebSearchResult};

/// A complete tool call as the model made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    /// The provider name of the tool (`fs_read`).
    pub name: String,
    /// The raw JSON text of the arguments, exactly as streamed (may be malformed).
    pub arguments: String,
}

/// A task run in a subcontext ([`Op::Subtask`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Subtask {
    /// `/review [base]`: the working tree against HEAD (or `base`), read-only; findings with
    /// file and line, most severe first.
    Review {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base: Option<String>,
    },
    /// `/init`: study the repository read-only and propose an AGENTS.md (an existing one
    /// improved), the change previewed and decided like any edit.
    Init,
}

/// How the prompt of each subtask begins: its command, then what it asks for on the same line.
pub const SUBTASK_PROMPT_STARTS: [&str; 2] = ["/review: ", "/init: "];

/// What a transcript shows of a user message that is a subtask's prompt (its first line, not
/// the instructions after it, which the person did not write); `None` for any other message.
/// A person cannot send such a text: `/review:` is no command they can run.
pub fn subtask_echo(text: &str) -> Option<&str> {
    SUBTASK_PROMPT_STARTS
        .iter()
        .any(|start| text.starts_with(start))
        .then(|| text.lines().next().unwrap_or(text))
}

/// What a front-end asks the agent to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Op {
    /// A new user message; starts a turn. `images` are those that came with it rather than by
    /// `@path` (an ACP prompt's image blocks); their bytes are not serialized (see [`Image`]),
    /// so only in-process front-ends send any.
    UserTurn {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageAttachment>,
    },
    /// The person's answer to an [`Event::ApprovalRequest`].
    Approval {
        call_id: String,
        answer: ApprovalAnswer,
    },
    /// Check only these hunks of the file change an approval shows (the person toggled hunks);
    /// answered by [`Event::PreviewDiagnostics`] with the same `hunks`. Nothing is written.
    CheckHunks { call_id: String, hunks: Vec<usize> },
    /// The person's answer to an [`Event::McpQuestion`] (an MCP server's `elicitation/create`).
    AnswerMcpQuestion { id: String, answer: QuestionAnswer },
    /// Cancel the running turn (Esc / Ctrl-C). The turn ends with a terminal event.
    Interrupt,
    /// Write bytes to a background session's stdin (TUI session view).
    SessionInput { session_id: String, data: String },
    /// Kill a background session (TUI session view, `/kill ID`).
    KillSession { session_id: String },
    /// List the approvals saved with "allow always" for this workspace (`/rules`); answered by
    /// [`Event::Rules`].
    ListRules,
    /// Remove one saved approval by id (`/rules remove ID`); answered by [`Event::Rules`].
    RemoveRule { id: String },
    /// List the artifacts this session wrote (`/artifacts`); answered by [`Event::Artifacts`].
    ListArtifacts,
    /// List this session's memory proposals (`/memory`); answered by [`Event::Memory`].
    ListMemory,
    /// The person's decision on a memory proposal: `accept` appends it to their memory file,
    /// otherwise it is dismissed. Answered by [`Event::Memory`].
    ResolveMemory { proposal_id: String, accept: bool },
    /// List the turns that can be taken back (`/rewind`); answered by [`Event::Checkpoints`].
    ListCheckpoints,
    /// Work out what a restore would do (`/undo`, `/rewind`, `/diff`); answered by
    /// [`Event::RestorePlan`]. Nothing is written.
    PlanRestore { scope: RestoreScope },
    /// Restore the chosen files of the plan `plan_id`, each only if it is still as the plan showed
    /// it; answered by [`Event::Restored`] (and [`Event::SessionForked`] for a rewind).
    Restore {
        plan_id: String,
        files: Vec<RestoreChoice>,
    },
    /// Switch the working mode (Shift-Tab in the TUI); applies from the next tool call on and is
    /// confirmed by [`Event::ModeChanged`].
    SetMode { mode: WorkMode },
    /// A task the person names by command (`/review`, `/init`): one turn in a subcontext of its
    /// own (a fresh conversation with a narrower catalog), queued like a prompt; what it did
    /// joins the conversation when it ends.
    Subtask { task: Subtask },
    /// Summarize the conversation now (`/compact [focus]`), between turns; answered by
    /// [`Event::ContextCompacted`] or a warning saying why not.
    Compact {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        focus: Option<String>,
    },
    /// Switch the model (and the provider when given) from the next turn on (`/model NAME`);
    /// confirmed by [`Event::ModelChanged`], or refused with an [`Event::Error`].
    SetModel {
        model: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider: Option<String>,
    },
    /// Stop the agent: cancels any running turn, kills background sessions, then closes.
    Shutdown,
}

impl Op {
    /// A user turn of text alone.
    pub fn user_turn(text: impl Into<String>) -> Self {
        Op::UserTurn {
            text: text.into(),
            images: Vec::new(),
        }
    }
}

/// `[tui] notifications`: `off` (nothing), `bell` (the terminal bell), `desktop` (the bell, and a
/// desktop notification when the terminal window is not focused).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Notifications {
    Off,
    Bell,
    #[default]
    Desktop,
}

/// A workspace file attached to a message with `@path`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    pub path: String,
    /// The file's size.
    pub bytes: usize,
    /// Only the first part of the file is in `text`.
    #[serde(default)]
    pub truncated: bool,
    pub text: String,
}

/// How much the agent may do without asking, switched during a session (Shift-Tab).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkMode {
    /// The policy decides; what it says to ask is asked (the default).
    #[default]
    Ask,
    /// File changes inside the write roots apply without a prompt (the built-in ask for edits
    /// becomes allow); commands are judged as in `ask`.
    AutoEdit,
    /// Read-only planning: no file changes, only calls the policy allows without asking; the
    /// model is told it is planning.
    Plan,
}

impl WorkMode {
    pub const ALL: [WorkMode; 3] = [WorkMode::Ask, WorkMode::AutoEdit, WorkMode::Plan];

    /// The name used by `--mode`, config and the status line.
    pub fn name(self) -> &'static str {
        match self {
            WorkMode::Ask => "ask",
            WorkMode::AutoEdit => "auto-edit",
            WorkMode::Plan => "plan",
        }
    }

    /// The mode after this one on Shift-Tab.
    pub fn next(self) -> WorkMode {
        match self {
            WorkMode::Ask => WorkMode::AutoEdit,
            WorkMode::AutoEdit => WorkMode::Plan,
            WorkMode::Plan => WorkMode::Ask,
        }
    }

    /// Parses `ask`, `auto-edit` (or `auto_edit`) and `plan`.
    pub fn parse(text: &str) -> Option<WorkMode> {
        let t = text.trim().replace('_', "-");
        WorkMode::ALL.into_iter().find(|m| m.name() == t)
    }
}

/// How the person answered an approval prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum ApprovalAnswer {
    /// Run this call, ask again next time.
    AllowOnce,
    /// Run this call and save a rule (shown in the prompt) so that similar calls run unasked.
    AllowAlways,
    /// Commit only the listed hunks (indices into [`FileChangePreview::hunks`]) of a file change.
    /// The engine rebuilds the preview from the accepted subset; that new preview is what lands.
    /// `notes` say why some of the others were dropped; the model reads each with its hunk.
    AllowHunks {
        hunks: Vec<usize>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        notes: Vec<HunkNote>,
    },
    /// Do not run; the note (if any) goes back to the model with code `rejected`.
    Reject { note: Option<String> },
}

/// Why the person dropped one hunk of a file change (index into [`FileChangePreview::hunks`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HunkNote {
    pub hunk: usize,
    pub note: String,
}

/// The rule id of the question a front-end gets when a sandboxed command failed the way the
/// sandbox makes commands fail: "run it again without the sandbox?" (answered once or not at
/// all).
pub const SANDBOX_RETRY_RULE: &str = "builtin.sandbox.retry";

/// The dry run of a tool call: exactly what will be committed if it is allowed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Preview {
    /// Reads, lists, searches: the resolved path (relative to the workspace).
    Read { path: String },
    /// `fs.write` / `fs.edit`.
    FileChange(FileChangePreview),
    /// `shell.run`: the command as the policy engine understood it.
    Command(CommandPreview),
    /// `shell.session` actions on an existing background session.
    Session {
        action: String,
        session_id: Option<String>,
    },
    /// `web.fetch`: the one GET request that will be sent (redirects on the same host may follow).
    Fetch {
        url: String,
        /// The host as it was parsed (lowercase; an IP address in its canonical spelling).
        host: String,
    },
    /// `artifact.write`: a file in the session's artifact store (never the workspace).
    Artifact { name: String, bytes: usize },
    /// Tools that touch nothing outside the session (`plan.update`).
    Internal,
    /// A tool of an MCP server: who will be asked to do what.
    Mcp(McpCallPreview),
}

/// A file change, complete: the reviewer approves these bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileChangePreview {
    /// Workspace-relative path, forward slashes.
    pub path: String,
    /// Revision (SHA-256 hex) of the bytes being replaced; `None` when the file is created.
    pub old_revision: Option<String>,
    /// Revision of `new_text`.
    pub new_revision: String,
    /// The full new content of the file.
    pub new_text: String,
    /// Unified diff with hunk headers (`similar`), relative path in the `---`/`+++` lines.
    pub diff: String,
    pub added: usize,
    pub removed: usize,
    /// The hunks of `diff`, for per-hunk review.
    #[serde(default)]
    pub hunks: Vec<DiffHunk>,
}

/// One hunk of a unified diff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffHunk {
    /// `@@ -a,b +c,d @@`
    pub header: String,
    pub old_start: usize,
    pub old_len: usize,
    pub new_start: usize,
    pub new_len: usize,
    pub lines: Vec<DiffLine>,
}

/// One line of a hunk with its line numbers on each side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffLine {
    pub tag: DiffTag,
    pub old_lineno: Option<usize>,
    pub new_lineno: Option<usize>,
    /// The line without its terminator.
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiffTag {
    Context,
    Added,
    Removed,
}

/// A shell command parsed into the simple commands it would run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandPreview {
    pub command: String,
    /// Workspace-relative working directory.
    pub cwd: String,
    pub background: bool,
    pub pty: bool,
    #[serde(default)]
    pub commands: Vec<SimpleCommandView>,
    /// The OS sandbox the command will run in, chosen by the policy engine (`None` until it has
    /// decided; a tool committing without a decision uses the configured profile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxChoice>,
}

/// One simple command of a command line, as judged by the policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimpleCommandView {
    pub argv: Vec<String>,
    /// The command word resolved through the clean `PATH`, when it could be.
    pub executable: Option<String>,
    pub decision: Decision,
    pub rule_id: Option<String>,
    pub reason: Option<String>,
}

/// A tool result exactly as the model receives it. Read by `outcome`'s reader, which gives what
/// serde's derived one would, without copying the data first.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ToolOutcome {
    Ok { ok: True, data: Value },
    Err { ok: False, error: ToolErrorBody },
}

/// Serde helper: the literal `true`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct True;
/// Serde helper: the literal `false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct False;

macro_rules! literal_bool {
    ($ty:ident, $value:literal) => {
        impl Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bool($value)
            }
        }
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let b = bool::deserialize(d)?;
                if b == $value {
                    Ok($ty)
                } else {
                    Err(serde::de::Error::custom(concat!("expected ", $value)))
                }
            }
        }
    };
}
literal_bool!(True, true);
literal_bool!(False, false);

/// `{"code": …, "message": …, "data"?: …}`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolErrorBody {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ToolOutcome {
    pub fn ok(data: Value) -> Self {
        ToolOutcome::Ok { ok: True, data }
    }

    #[cfg(any(test, feature = "test-support"))]
    pub fn err(code: impl Into<String>, message: impl Into<String>) -> Self {
        ToolOutcome::Err {
            ok: False,
            error: ToolErrorBody {
                code: code.into(),
                message: message.into(),
                data: None,
            },
        }
    }

    pub fn is_ok(&self) -> bool {
        matches!(self, ToolOutcome::Ok { .. })
    }

    /// The error code, when this is a failure.
    pub fn error_code(&self) -> Option<&str> {
        match self {
            ToolOutcome::Ok { .. } => None,
            ToolOutcome::Err { error, .. } => Some(&error.code),
        }
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// One entry of the todo checklist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanItem {
    pub content: String,
    pub status: PlanStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    Pending,
    InProgress,
    Completed,
}

/// Reasoning that came with one model call, kept so it can go back to the provider that wrote
/// it (Anthropic refuses a tool loop whose thinking blocks are missing or altered; OpenAI's
/// reasoning models keep their train of thought across tool calls only through these items).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReasoningBlock {
    /// An Anthropic `thinking` block: its text and the signature the API checks.
    Thinking { text: String, signature: String },
    /// An Anthropic `redacted_thinking` block: encrypted by the provider, opaque to pablo.
    Redacted { data: String },
    /// An OpenAI Responses `reasoning` item: the summary shown to the person and the encrypted
    /// content that carries the reasoning across calls (`store: false`).
    Encrypted {
        id: String,
        #[serde(default)]
        summary: Vec<String>,
        #[serde(default)]
        encrypted_content: Option<String>,
    },
    /// Reasoning text of an OpenAI-compatible server (`reasoning_content`, `reasoning`, or an
    /// inline `<think>` block): shown and journaled, never sent back.
    Text { text: String },
}

impl ReasoningBlock {
    /// What a person may read of it (nothing for redacted thinking).
    pub fn visible_text(&self) -> String {
        match self {
            ReasoningBlock::Thinking { text, .. } | ReasoningBlock::Text { text } => text.clone(),
            ReasoningBlock::Redacted { .. } => String::new(),
            ReasoningBlock::Encrypted { summary, .. } => summary.join("\n\n"),
        }
    }
}

/// The visible text of a model call's reasoning blocks, joined.
pub fn reasoning_text(blocks: &[ReasoningBlock]) -> String {
    let parts: Vec<String> = blocks
        .iter()
        .map(ReasoningBlock::visible_text)
        .filter(|t| !t.trim().is_empty())
        .collect();
    parts.join("\n\n")
}

/// One tool result taken out of the conversation to make room, and what the model reads in its
/// place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClearedResult {
    pub call_id: String,
    /// The tool message content that replaces the result, exactly as the model receives it.
    pub content: String,
}

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model answered without asking for more tools.
    EndTurn,
    /// The model hit its output-token limit.
    MaxTokens,
    /// The person (or the host) cancelled the turn.
    Cancelled,
    /// A model-call or tool-call budget, or the run deadline, ran out.
    BudgetExhausted,
    /// The turn failed; an [`Event::Error`] precedes this.
    Error,
}

/// State of a background shell session, as shown in lists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    pub session_id: String,
    pub command: String,
    pub running: bool,
    pub exit_code: Option<i32>,
    pub pty: bool,
    /// Unix milliseconds.
    pub started_ms: u64,
}

/// One saved approval as front-ends show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleSummary {
    /// Stable id (`always.cargo-test-1f2e3d4c`), what `/rules remove` takes.
    pub id: String,
    /// What the rule allows, in words (`prefix /usr/bin/cargo test`).
    pub allows: String,
}

/// One file of the session's artifact store, as front-ends list it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactSummary {
    pub name: String,
    /// Absolute path under the session's data directory (what a pager opens).
    pub path: String,
    pub bytes: u64,
    /// The tool call that wrote it.
    pub call_id: String,
}

/// Where a memory proposal stands. Only `accepted` text ever reaches a system prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryStatus {
    Proposed,
    Accepted,
    Dismissed,
}

/// One memory proposal of this session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryProposal {
    /// Stable id (`mem-…`), what `/memory accept ID` takes.
    pub id: String,
    pub text: String,
    pub status: MemoryStatus,
}

tagged_event! {
    /// What the agent tells front-ends. Read by `tagged`'s reader, which gives what serde's derived
    /// one would, without copying each event first.
    #[derive(Debug, Clone, PartialEq, Serialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    pub enum Event {
        SessionStarted {
            session_id: String,
            provider: String,
            model: String,
            workspace: String,
        },
        /// A user turn was accepted (echoed so journals and transcripts see it in order).
        UserMessage { text: String },
        /// Text pablo added after the person's prompt for the model (the working mode changed, a
        /// `$NAME` asks for a skill): journaled so a resumed conversation has the same message.
        PromptNote { note: String },
        /// A piece of the assistant's text as it streams.
        MessageDelta { text: String },
        /// A piece of the model's reasoning (thinking) as it streams; never part of the answer
        /// text.
        ReasoningDelta { text: String },
        /// The reasoning of one model call, whole, just before its [`Event::MessageCompleted`]; the
        /// blocks go back into the conversation with that message (journals rebuild history from
        /// both).
        ReasoningCompleted { blocks: Vec<ReasoningBlock> },
        /// A search of the web the provider ran during a model call (no tool pablo runs), whole
        /// once its results came; the searches go back into the conversation with the next
        /// [`Event::MessageCompleted`] (journals rebuild history from both).
        WebSearch { search: WebSearch },
        /// The assistant's whole message of one model call: its text and the tool calls it made,
        /// exactly as they go back into the conversation (journals rebuild history from this).
        MessageCompleted {
            text: String,
            #[serde(default)]
            tool_calls: Vec<ToolCall>,
        },
        /// The model asked for a tool; validation and policy follow.
        ToolCallBegin {
            call_id: String,
            tool: String,
            arguments: Value,
        },
        /// Policy says ask: the front-end must answer with [`Op::Approval`] for this `call_id`.
        ApprovalRequest {
            call_id: String,
            tool: String,
            preview: Preview,
            verdict: Verdict,
        },
        /// What the language servers say of the file change an [`Event::ApprovalRequest`] shows
        /// (`hunks`: of the accepted subset the person asked about with [`Op::CheckHunks`]; `None`:
        /// of the whole change). Comes after the request, first `checking`, then the answer.
        PreviewDiagnostics {
            call_id: String,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            hunks: Option<Vec<usize>>,
            diagnostics: PreviewDiagnostics,
        },
        /// How an approval was answered (for journals and transcripts).
        ApprovalResolved {
            call_id: String,
            answer: ApprovalAnswer,
        },
        /// The call passed policy and is running (shell output may follow).
        ToolCallRunning { call_id: String, preview: Preview },
        /// Live output of a running command (coalesced; raw bytes, lossy UTF-8; may hold ANSI).
        ToolOutputDelta { call_id: String, chunk: String },
        /// The call's command runs in the front-end's own terminal `terminal_id` (an editor's, over
        /// ACP): its output is shown there, not as [`Event::ToolOutputDelta`]. Live only.
        ToolTerminal {
            call_id: String,
            terminal_id: String,
        },
        /// The tool finished; `result` is exactly what the model receives.
        ToolCallEnd {
            call_id: String,
            tool: String,
            result: ToolOutcome,
        },
        PlanUpdate {
            explanation: Option<String>,
            items: Vec<PlanItem>,
        },
        /// Usage of one model call, and the session total so far.
        Usage { last: Usage, total: Usage },
        /// How full the model's context window is after a model call, and what the session has cost
        /// so far (when the model's prices are known).
        ContextUsage {
            /// Input tokens of the last request, as the provider counted them.
            used_tokens: u64,
            /// The model's context window.
            window_tokens: u64,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            cost_usd: Option<f64>,
        },
        /// Live output of a background session (raw bytes as lossy UTF-8).
        SessionOutput { session_id: String, chunk: String },
        /// A background session exited (sent for `notify: true` and for every session the TUI
        /// shows).
        SessionExited {
            session_id: String,
            exit_code: Option<i32>,
        },
        /// The background sessions changed (started, exited, killed).
        Sessions { sessions: Vec<SessionSummary> },
        /// The saved "allow always" approvals of this workspace, answering [`Op::ListRules`] and
        /// [`Op::RemoveRule`] (`removed` names the rule just removed). Live only: never journaled.
        Rules {
            rules: Vec<RuleSummary>,
            #[serde(default)]
            removed: Option<String>,
        },
        /// The artifacts of this session, answering [`Op::ListArtifacts`]. Live only.
        Artifacts { artifacts: Vec<ArtifactSummary> },
        /// The memory proposals of this session, answering [`Op::ListMemory`] and
        /// [`Op::ResolveMemory`] (`resolved` names the proposal just decided). Live only.
        Memory {
            proposals: Vec<MemoryProposal>,
            #[serde(default)]
            resolved: Option<String>,
            /// The memory file an accepted proposal was appended to.
            #[serde(default)]
            file: Option<String>,
        },
        /// Files a tool call changed, with what they were before and after (the turn's checkpoint
        /// grows by these). Journaled: undo and `/diff` are rebuilt from them.
        FilesChanged {
            turn: u32,
            call_id: String,
            tool: String,
            changes: Vec<FileChange>,
        },
        /// The turns that can be taken back, answering [`Op::ListCheckpoints`]. Live only.
        Checkpoints { turns: Vec<TurnCheckpoint> },
        /// A restore to review, answering [`Op::PlanRestore`]. Live only.
        RestorePlan { plan: RestorePlan },
        /// Files were restored (or skipped), answering [`Op::Restore`] or `pablo undo`.
        Restored { report: RestoreReport },
        /// The conversation went back to the start of `turn` and continues as the new session
        /// `session_id`; the turns from `turn` on stay in the journal of `from_session`. `text` is
        /// the prompt of that turn, for the person to edit and send again.
        SessionForked {
            session_id: String,
            from_session: String,
            turn: u32,
            text: String,
        },
        /// An MCP server started, became ready (its tools, prompts and resources), failed (with the
        /// reason) or stopped. Sent whenever that changes. Live only: never journaled.
        McpServer { server: McpServerView },
        /// An MCP server asks the person something while it works (`elicitation/create`): the
        /// front-end shows the form and answers with [`Op::AnswerMcpQuestion`]. Only front-ends
        /// that can ask get these (the TUI); elsewhere the question is declined and a warning says
        /// so. Live only: never journaled (an answer may be personal).
        McpQuestion { question: McpQuestion },
        /// The question `id` is no longer waiting: answered (`action` as the protocol spells it),
        /// or withdrawn (`cancel`: the call ended, the turn was interrupted). Live only.
        McpQuestionClosed {
            id: String,
            server: String,
            action: String,
        },
        /// The session's language servers and their states: sent at start when there are any, and
        /// whenever one starts, exits or fails. Live only: never journaled.
        LanguageServers { servers: Vec<LspServerView> },
        /// Something non-fatal the person should know (a torn journal line, a truncated AGENTS.md).
        Warning { message: String },
        /// The working mode now in force (after [`Op::SetMode`], or at start when not `ask`).
        ModeChanged { mode: WorkMode },
        /// Files the person attached with `@path` to the message just sent (their text went to the
        /// model with it; journals keep it so a resumed conversation is the same). Images are
        /// journaled as their description and hash; the journal stores their bytes beside it.
        Attachments {
            files: Vec<Attachment>,
            #[serde(default, skip_serializing_if = "Vec::is_empty")]
            images: Vec<ImageAttachment>,
        },
        /// The turn was not started: something in the prompt cannot be sent (an image the model
        /// does not take, a file that only claims to be an image, one too large). Nothing was sent
        /// or journaled; `text` is the prompt as written, for the front-end to give back to the
        /// person. Ends the turn like [`Event::TurnCompleted`] would. Live only: never journaled.
        TurnRefused {
            code: String,
            message: String,
            text: String,
        },
        /// The model the next turn uses (after [`Op::SetModel`]).
        ModelChanged { provider: String, model: String },
        /// A model request failed before anything of it streamed and is sent again after
        /// `wait_ms` (the front-end says that it waits, and why). Live only: never journaled.
        Retry {
            /// The attempt that comes next (2 for the first retry).
            attempt: u32,
            /// How many attempts there are in all.
            max_attempts: u32,
            wait_ms: u64,
            /// What failed, in a few words (`503 from api.example.com`).
            reason: String,
            /// The failed attempt's error code (`model_http_error`, `model_unreachable`).
            code: String,
        },
        /// The answer streaming now was cut off by the server before any tool call of it came
        /// whole, and the same request is sent again, once: the new answer streams in its place,
        /// and the `shown_chars` characters of the cut one do not join the conversation. Live only.
        AnswerRetried {
            /// Why, with its code (`model_stream_cut: openai: the stream ended before …`).
            reason: String,
            shown_chars: usize,
        },
        /// One of the person's hooks ran (docs/hooks.md): for which event, what it decided, and
        /// why. Journaled, so every hook run is on record.
        Hook {
            /// `pre_tool_use`, `file_changed`, …
            event: String,
            /// The hook's name (its `name`, or the start of its command).
            hook: String,
            /// `continue`, `allow`, `ask`, `block`, `rewrite`, `failed_open`, `failed_closed`.
            decision: String,
            /// The tool call it was about, for the tool events.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            call_id: Option<String>,
            /// The changed path, for `file_changed`.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            path: Option<String>,
            /// Why it blocked or failed, or its note for the person.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            message: Option<String>,
            /// Text it gave the model: appended to the prompt (`user_prompt_submit`), sent as the
            /// next message (`stop`, `session_start`, `file_changed`), or added to the tool result.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            context: Option<String>,
            duration_ms: u64,
        },
        /// The turn (or the agent) failed.
        Error { code: String, message: String },
        /// The turn ended. `usage` is the session's so far.
        TurnCompleted {
            stop_reason: StopReason,
            usage: Usage,
            /// The requests the turn sent to the model: its own calls, its subagents', a summary's,
            /// and each request sent again after a transient failure or a cut stream. `None` in a
            /// journal written before pablo counted them.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            model_calls: Option<u64>,
        },
        /// The conversation neared the context window: its first `replaced_messages` messages were
        /// replaced by one user message holding `summary`. The journal keeps every original event;
        /// resume applies the same replacement.
        ContextCompacted {
            summary: String,
            replaced_messages: usize,
        },
        /// Old tool results were taken out of the conversation to keep the request within the
        /// context window (newest kept); the model reads a note in their place. The journal keeps
        /// the originals; resume applies the same replacement.
        ContextCleared {
            cleared: Vec<ClearedResult>,
            /// Estimated request tokens before and after.
            tokens_before: u64,
            tokens_after: u64,
        },
        /// A subagent started for the `agent.task` call `call_id` (its label is the call's
        /// `description`): a conversation of its own, whose events follow as [`Event::Subagent`].
        SubagentStarted {
            call_id: String,
            agent: String,
            description: String,
            model: String,
        },
        /// One event of the subagent of the call `call_id`, from its own conversation (its message,
        /// its tool calls and their results, its usage). Its approvals and the files it changed are
        /// sent as themselves, not wrapped: the person answers them and `/undo` takes them back
        /// like the main conversation's.
        Subagent { call_id: String, event: Box<Event> },
        /// The subagent of the call `call_id` ended; its answer is that call's result.
        SubagentFinished {
            call_id: String,
            stop_reason: StopReason,
            usage: Usage,
            tool_calls: u64,
            elapsed_ms: u64,
        },
        /// The agent task has stopped; nothing follows.
        ShutdownComplete,
    }
}

impl Event {
    /// Whether the event is for the screen only, never journaled: streaming deltas and live
    /// output (the whole message, the tool result and a session's own log keep what resume
    /// needs), and the answers to listings and reviews (`/rules`, `/artifacts`, `/memory`,
    /// `/rewind`, a restore plan), an MCP server's state, and a refused turn.
    pub fn is_live_only(&self) -> bool {
        matches!(
            self,
            Event::MessageDelta { .. }
                | Event::ReasoningDelta { .. }
                | Event::ToolOutputDelta { .. }
                | Event::ToolTerminal { .. }
                | Event::SessionOutput { .. }
                | Event::Rules { .. }
                | Event::Artifacts { .. }
                | Event::Memory { .. }
                | Event::Checkpoints { .. }
                | Event::RestorePlan { .. }
                | Event::McpServer { .. }
                | Event::McpQuestion { .. }
                | Event::McpQuestionClosed { .. }
                | Event::LanguageServers { .. }
                | Event::TurnRefused { .. }
                | Event::Retry { .. }
                | Event::AnswerRetried { .. }
        )
    }
}

/// The front-end's side of a running agent: ops go in, events come out, and the task ends after
/// [`Event::ShutdownComplete`].
pub struct AgentHandle {
    pub ops: tokio::sync::mpsc::UnboundedSender<Op>,
    pub events: tokio::sync::mpsc::UnboundedReceiver<Event>,
    pub task: tokio::task::JoinHandle<()>,
}

/// What a front-end says of a retry ([`Event::Retry`]), `secs` before it:
/// `retrying in 12 s, attempt 2 of 5: 503 from api.example.com`.
pub fn retry_words(attempt: u32, max_attempts: u32, secs: u64, reason: &str) -> String {
    format!("retrying in {secs} s, attempt {attempt} of {max_attempts}: {reason}")
}

/// A one-line summary of tool arguments for readable output: the path or command, not content.
/// A memory proposal's `text` is the call's whole point (the person decides on it later), so it
/// is shown, cut like the rest.
pub fn summarize_arguments(arguments: &Value) -> String {
    for key in ["command", "path", "query", "action", "url", "name", "text"] {
        if let Some(v) = arguments.get(key).and_then(Value::as_str) {
            let mut s: String = v.chars().take(120).collect();
            if v.chars().count() > 120 {
                s.push('…');
            }
            return s;
        }
    }
    String::new()
}

/// An installed Agent Skill as `/skills` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillSummary {
    pub name: String,
    pub description: String,
    /// The folder it was found in (`~/.agents/skills`, `.claude/skills`…).
    pub source: String,
}

/// A slash command written by the person as a markdown file (`launch::commands`): `/name args`
/// sends `text` with `$ARGUMENTS` replaced by `args`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CustomCommand {
    pub name: String,
    /// The first non-empty line, for the popup and `/help`.
    pub description: String,
    pub text: String,
    /// `user` or `project`.
    pub source: String,
}

impl CustomCommand {
    /// The prompt for `/name args`.
    pub fn expand(&self, args: &str) -> String {
        // The file's last newline is not part of the prompt.
        self.text
            .replace("$ARGUMENTS", args.trim())
            .trim_end()
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_names_the_path_or_command_and_a_memory_proposal_its_text() {
        let s = |v: Value| summarize_arguments(&v);
        assert_eq!(s(serde_json::json!({"path": "a.csv"})), "a.csv");
        assert_eq!(
            s(serde_json::json!({"name": "r.md", "content": "body"})),
            "r.md"
        );
        assert_eq!(
            s(serde_json::json!({"text": "The person prefers tabs."})),
            "The person prefers tabs."
        );
        let long = "x".repeat(200);
        assert_eq!(
            s(serde_json::json!({ "text": long })),
            format!("{}…", "x".repeat(120))
        );
        assert_eq!(s(serde_json::json!({"items": []})), "");
    }
}
