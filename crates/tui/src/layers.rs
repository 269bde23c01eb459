//! Modal layers over the transcript: the approval prompt, an MCP server's question and the
//! background-session browser.
//!
//! Input goes to the top layer first; a layer answers with an [`Intent`] (what the person wants,
//! never a reach into the app) or says it ignored the key. Drawing goes bottom-up.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::{Line, Span};

use super::diff::{HunkMarks, render_hunks};
use super::memo::Memo;
use super::text::wrap_line;
use super::theme;
use pablo_protocol::{
    ApprovalAnswer, ArtifactSummary, CommandPreview, Decision, DiffTag, FileChangePreview,
    McpCallPreview, MemoryProposal, MemoryStatus, Preview, Verdict,
};

/// What a layer asks the app to do.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Intent {
    None,
    Answer {
        call_id: String,
        answer: ApprovalAnswer,
    },
    Interrupt,
    /// Ask the language servers about only these hunks of the change under review.
    CheckHunks {
        call_id: String,
        hunks: Vec<usize>,
    },
    SessionInput {
        session_id: String,
        data: String,
    },
    KillSession {
        session_id: String,
    },
    Close,
    /// Leave the TUI and resume this saved session.
    Resume(String),
    /// Switch to this model from the next turn (`provider` when it is another one).
    SwitchModel {
        provider: Option<String>,
        model: String,
    },
    /// Open this artifact file in `$PAGER`.
    OpenArtifact(String),
    /// Accept or dismiss a memory proposal.
    ResolveMemory {
        id: String,
        accept: bool,
    },
    /// The person's answer to an MCP server's question.
    AnswerQuestion {
        id: String,
        server: String,
        answer: pablo_protocol::QuestionAnswer,
    },
}

#[derive(Debug)]
pub(crate) enum Layer {
    Approval(Box<ApprovalView>),
    /// An MCP server's question (`elicitation/create`).
    Question(Box<super::question::QuestionView>),
    Sessions(SessionsView),
    Resume(ResumeView),
    /// `/model`'s list of models.
    Model(super::model_picker::ModelView),
    Artifacts(ArtifactsView),
    Memory(MemoryView),
    /// `/rewind`'s list of turns.
    Rewind(super::restore::RewindView),
    /// A restore preview (`/undo`, `/rewind`) or the `/diff` review.
    Restore(Box<super::restore::RestoreView>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalMode {
    Choosing,
    /// Typing the optional note that goes back with a rejection.
    Note(String),
    /// Typing why this dropped hunk is dropped (it goes to the model with the hunk).
    HunkNote(usize, String),
}

#[derive(Debug)]
pub(crate) struct ApprovalView {
    pub(crate) call_id: String,
    pub(crate) tool: String,
    pub(crate) summary: String,
    pub(crate) preview: Preview,
    pub(crate) verdict: Verdict,
    pub(crate) accepted: Vec<bool>,
    /// The person's note on each dropped hunk, when they left one.
    pub(crate) hunk_notes: Vec<Option<String>>,
    pub(crate) focused: usize,
    pub(crate) scroll: usize,
    pub(crate) fullscreen: bool,
    pub(crate) mode: ApprovalMode,
    /// The subagent that asks (`general: map the parser`), when not the main conversation.
    pub(crate) from: Option<String>,
    /// What the language servers say of the change (file changes only).
    pub(crate) diagnostics: super::diagnostics::ApprovalDiagnostics,
    /// The body as last laid out, for the width and hunk selection it was laid out for: drawn
    /// every frame (and measured for the prompt's height), it is styled and wrapped once.
    body_memo: Memo<BodyKey, ApprovalBody>,
}

/// What the body's lines depend on besides the preview and verdict, which do not change while
/// the prompt is open: the width, which hunks are accepted and which one has focus.
type BodyKey = (usize, Vec<bool>, usize, u64);

/// The approval prompt's scrollable body: its lines, and where each hunk starts among them.
#[derive(Debug, Default)]
pub(crate) struct ApprovalBody {
    pub(crate) lines: Vec<Line<'static>>,
    pub(crate) hunk_starts: Vec<usize>,
}

impl ApprovalView {
    pub(crate) fn new(
        call_id: String,
        tool: String,
        summary: String,
        preview: Preview,
        verdict: Verdict,
    ) -> Self {
        let hunks = match &preview {
            Preview::FileChange(fc) => fc.hunks.len(),
            _ => 0,
        };
        Self {
            call_id,
            tool,
            summary,
            preview,
            verdict,
            accepted: vec![true; hunks],
            hunk_notes: vec![None; hunks],
            focused: 0,
            scroll: 0,
            fullscreen: false,
            mode: ApprovalMode::Choosing,
            body_memo: Memo::default(),
            from: None,
            diagnostics: Default::default(),
        }
    }

    fn hunk_count(&self) -> usize {
        self.accepted.len()
    }

    fn partial(&self) -> bool {
        self.accepted.iter().any(|a| !a)
    }

    fn answer(&self, answer: ApprovalAnswer) -> Intent {
        Intent::Answer {
            call_id: self.call_id.clone(),
            answer,
        }
    }

    /// A key typed into the note of one hunk: it edits the note, never acts on the prompt.
    fn hunk_note_key(&mut self, key: KeyEvent) {
        let ApprovalMode::HunkNote(hunk, note) = &mut self.mode else {
            return;
        };
        match key.code {
            KeyCode::Enter => {
                let note = note.trim().to_string();
                if let Some(slot) = self.hunk_notes.get_mut(*hunk) {
                    *slot = (!note.is_empty()).then_some(note);
                }
                self.mode = ApprovalMode::Choosing;
            }
            KeyCode::Esc => self.mode = ApprovalMode::Choosing,
            KeyCode::Backspace => {
                note.pop();
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => note.push(c),
            _ => {}
        }
    }

    pub(crate) fn handle_key(&mut self, key: KeyEvent, body_width: usize) -> Intent {
        if matches!(self.mode, ApprovalMode::HunkNote(..)) {
            self.hunk_note_key(key);
            return Intent::None;
        }
        if let ApprovalMode::Note(note) = &mut self.mode {
            match key.code {
                KeyCode::Enter => {
                    let note = note.trim().to_string();
                    return self.answer(ApprovalAnswer::Reject {
                        note: (!note.is_empty()).then_some(note),
                    });
                }
                KeyCode::Esc => self.mode = ApprovalMode::Choosing,
                KeyCode::Backspace => {
                    note.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => note.push(c),
                _ => {}
            }
            return Intent::None;
        }
        match key.code {
            KeyCode::Char('y') | KeyCode::Char('Y') => {
                if self.partial() {
                    let hunks: Vec<usize> = self
                        .accepted
                        .iter()
                        .enumerate()
                        .filter(|(_, a)| **a)
                        .map(|(i, _)| i)
                        .collect();
                    if hunks.is_empty() {
                        return self.answer(ApprovalAnswer::Reject {
                            note: Some("every hunk was rejected".into()),
                        });
                    }
                    let notes = self
                        .hunk_notes
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| !self.accepted[*i])
                        .filter_map(|(hunk, n)| {
                            n.clone()
                                .map(|note| pablo_protocol::HunkNote { hunk, note })
                        })
                        .collect();
                    return self.answer(ApprovalAnswer::AllowHunks { hunks, notes });
                }
                self.answer(ApprovalAnswer::AllowOnce)
            }
            // Only when policy says what "always" would save (a fetch, or a command that cannot
            // be proven, saves nothing: the answer would be a lie), and never for the sandbox
            // retry (an unsandboxed run is answered once).
            KeyCode::Char('a') | KeyCode::Char('A')
                if !self.partial()
                    && !self.is_sandbox_retry()
                    && self.verdict.always_rule.is_some() =>
            {
                self.answer(ApprovalAnswer::AllowAlways)
            }
            KeyCode::Char('n') | KeyCode::Char('N') => {
                self.mode = ApprovalMode::Note(String::new());
                Intent::None
            }
            KeyCode::Char(' ') if self.hunk_count() > 0 => {
                if let Some(a) = self.accepted.get_mut(self.focused) {
                    *a = !*a;
                    // A hunk taken back needs no reason for being dropped.
                    if *a && let Some(n) = self.hunk_notes.get_mut(self.focused) {
                        *n = None;
                    }
                }
                // The servers check what would land now (the whole change's verdict is kept).
                let hunks: Vec<usize> = (0..self.accepted.len())
                    .filter(|i| self.accepted[*i])
                    .collect();
                if self.diagnostics.active() && self.partial() && !hunks.is_empty() {
                    return Intent::CheckHunks {
                        call_id: self.call_id.clone(),
                        hunks,
                    };
                }
                Intent::None
            }
            // Why the focused hunk is dropped, for the model.
            // Why the focused hunk is dropped, for the model; on a hunk still accepted, `e`
            // drops it first (so what is typed next is always the note, never an answer).
            KeyCode::Char('e') | KeyCode::Char('E') if self.hunk_count() > 1 => {
                let note = self
                    .hunk_notes
                    .get(self.focused)
                    .cloned()
                    .flatten()
                    .unwrap_or_default();
                let dropping = self.accepted.get(self.focused) == Some(&true);
                if let Some(a) = self.accepted.get_mut(self.focused) {
                    *a = false;
                }
                self.mode = ApprovalMode::HunkNote(self.focused, note);
                let hunks: Vec<usize> = (0..self.accepted.len())
                    .filter(|i| self.accepted[*i])
                    .collect();
                if dropping && self.diagnostics.active() && !hunks.is_empty() {
                    return Intent::CheckHunks {
                        call_id: self.call_id.clone(),
                        hunks,
                    };
                }
                Intent::None
            }
            // The hunk keys stop at the ends: past the last hunk is not the first one again.
            KeyCode::Char(']') | KeyCode::Tab if self.hunk_count() > 0 => {
                self.focused = (self.focused + 1).min(self.hunk_count() - 1);
                self.scroll_to_hunk(body_width);
                Intent::None
            }
            KeyCode::Char('[') | KeyCode::BackTab if self.hunk_count() > 0 => {
                self.focused = self.focused.saturating_sub(1);
                self.scroll_to_hunk(body_width);
                Intent::None
            }
            KeyCode::Char('f') | KeyCode::Char('F') => {
                self.fullscreen = !self.fullscreen;
                Intent::None
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.scroll += 1;
                Intent::None
            }
            KeyCode::Up | KeyCode::Char('k') => {
                self.scroll = self.scroll.saturating_sub(1);
                Intent::None
            }
            KeyCode::PageDown => {
                self.scroll += 10;
                Intent::None
            }
            KeyCode::PageUp => {
                self.scroll = self.scroll.saturating_sub(10);
                Intent::None
            }
            KeyCode::Esc if self.fullscreen => {
                self.fullscreen = false;
                Intent::None
            }
            KeyCode::Esc => Intent::Interrupt,
            _ => Intent::None,
        }
    }

    fn scroll_to_hunk(&mut self, width: usize) {
        if let Some(&s) = self.body(width).hunk_starts.get(self.focused) {
            self.scroll = s;
        }
    }

    /// The question after a sandboxed command failed: "run it again without the sandbox?". It
    /// is answered once or not at all (no rule is saved for it).
    pub(crate) fn is_sandbox_retry(&self) -> bool {
        self.verdict
            .rule_ids
            .iter()
            .any(|r| r == pablo_protocol::SANDBOX_RETRY_RULE)
    }

    /// Title of the prompt.
    pub(crate) fn title(&self) -> String {
        match &self.preview {
            Preview::FileChange(fc) => {
                if fc.old_revision.is_none() {
                    format!(" Create {}? ", fc.path)
                } else {
                    format!(" Apply this change to {}? ", fc.path)
                }
            }
            Preview::Command(_) if self.is_sandbox_retry() => {
                " Run again without the sandbox? ".to_string()
            }
            Preview::Command(c) if c.background => " Start this background command? ".to_string(),
            Preview::Command(_) => " Run this command? ".to_string(),
            Preview::Fetch { host, .. } => format!(" Fetch from {host}? "),
            Preview::Mcp(m) => format!(" Call {} on the MCP server {}? ", m.tool, m.server),
            _ => format!(" Allow {}? ", self.tool),
        }
    }

    /// The scrollable body, and where each hunk starts in it; laid out again only when the width
    /// or the hunk selection changed since the last call.
    pub(crate) fn body(&self, width: usize) -> std::sync::Arc<ApprovalBody> {
        let key = (
            width,
            self.accepted.clone(),
            self.focused,
            self.diagnostics.version,
        );
        self.body_memo.get(key, || {
            let (lines, hunk_starts) = self.lay_out_body(width);
            ApprovalBody { lines, hunk_starts }
        })
    }

    fn lay_out_body(&self, width: usize) -> (Vec<Line<'static>>, Vec<usize>) {
        let mut out: Vec<Line<'static>> = Vec::new();
        let mut starts = Vec::new();
        if let Some(from) = &self.from {
            out.push(Line::from(Span::styled(
                format!("asked by the subagent {from}"),
                theme::warn(),
            )));
        }
        match &self.preview {
            Preview::FileChange(fc) => starts = self.lay_out_file_change(fc, width, &mut out),
            Preview::Command(c) => lay_out_command(c, width, &mut out),
            Preview::Read { path } => out.push(Line::from(vec![
                Span::styled(format!("{} ", self.tool), theme::bold()),
                Span::raw(path.clone()),
            ])),
            Preview::Session { action, session_id } => out.push(Line::from(vec![
                Span::styled(format!("{} ", self.tool), theme::bold()),
                Span::raw(format!(
                    "{action} {}",
                    session_id.clone().unwrap_or_default()
                )),
            ])),
            Preview::Fetch { url, host } => {
                let l = Line::from(vec![
                    Span::styled("GET ", theme::bold()),
                    Span::styled(url.clone(), theme::inline_code()),
                ]);
                wrap_line(&l, width, 4, &mut out);
                out.push(Line::from(Span::styled(
                    format!("  host {host}; its addresses are checked again before connecting"),
                    theme::dim(),
                )));
            }
            Preview::Artifact { name, bytes } => out.push(Line::from(vec![
                Span::styled(format!("{} ", self.tool), theme::bold()),
                Span::raw(format!("{name}  ")),
                Span::styled(
                    format!("{bytes} bytes, stored with the session"),
                    theme::dim(),
                ),
            ])),
            Preview::Internal => out.push(Line::from(vec![
                Span::styled(format!("{} ", self.tool), theme::bold()),
                Span::raw(self.summary.clone()),
            ])),
            Preview::Mcp(m) => lay_out_mcp(m, width, &mut out),
        }
        // A command's reason is already on its own line under the parsed command: said once.
        let shown: Vec<&str> = match &self.preview {
            Preview::Command(c) => c
                .commands
                .iter()
                .filter_map(|sc| sc.reason.as_deref())
                .collect(),
            _ => Vec::new(),
        };
        let reasons: Vec<&str> = (self.verdict.reasons.iter())
            .map(String::as_str)
            .filter(|r| !shown.contains(r))
            .collect();
        if !reasons.is_empty() {
            out.push(Line::default());
            let l = Line::from(vec![
                Span::styled("why: ", theme::warn()),
                Span::raw(reasons.join("; ")),
            ]);
            wrap_line(&l, width, 5, &mut out);
        }
        (out, starts)
    }

    /// A file change: its header (counts of what will land), diagnostics and hunks; returns
    /// the line where each hunk starts.
    fn lay_out_file_change(
        &self,
        fc: &FileChangePreview,
        width: usize,
        out: &mut Vec<Line<'static>>,
    ) -> Vec<usize> {
        let rev = match &fc.old_revision {
            Some(r) => format!("replaces revision {}", &r[..r.len().min(12)]),
            None => "new file".to_string(),
        };
        // With hunks dropped, the counts are those of what will land.
        let subset = self.hunk_count() > 1 && self.accepted.iter().any(|a| !a);
        let (added, removed) = if subset {
            let mut counts = (0, 0);
            for (h, _) in fc.hunks.iter().zip(&self.accepted).filter(|(_, a)| **a) {
                for l in &h.lines {
                    match l.tag {
                        DiffTag::Added => counts.0 += 1,
                        DiffTag::Removed => counts.1 += 1,
                        DiffTag::Context => {}
                    }
                }
            }
            counts
        } else {
            (fc.added, fc.removed)
        };
        let mut header = vec![
            Span::styled(format!("{} ", self.tool), theme::bold()),
            Span::raw(fc.path.clone()),
            Span::raw("  "),
            Span::styled(format!("+{added}"), theme::ok()),
            Span::raw(" "),
            Span::styled(format!("−{removed}"), theme::error()),
        ];
        if subset {
            header.push(Span::styled(
                format!(" (of +{} −{})", fc.added, fc.removed),
                theme::dim(),
            ));
        }
        header.push(Span::styled(format!("  {rev}"), theme::dim()));
        out.push(Line::from(header));
        out.extend(self.diagnostics.lines(&self.accepted, width));
        let marks = (self.hunk_count() > 1).then_some(HunkMarks {
            accepted: &self.accepted,
            focused: self.focused,
        });
        let offset = out.len();
        let d = render_hunks(&fc.hunks, width, marks);
        out.extend(d.lines);
        d.hunk_starts.iter().map(|s| s + offset).collect()
    }

    /// The fixed footer: the answers (or the note being typed).
    pub(crate) fn footer(&self, width: usize) -> Vec<Line<'static>> {
        let mut out = Vec::new();
        // Once the body scrolls past the language servers' verdict, its first line stays here,
        // in sight while the later hunks are reviewed.
        if self.scroll > 0
            && let Some(summary) = self
                .diagnostics
                .lines(&self.accepted, width)
                .into_iter()
                .next()
        {
            out.push(summary);
        }
        if let ApprovalMode::HunkNote(hunk, note) = &self.mode {
            let l = Line::from(vec![
                Span::styled(
                    format!(
                        "Why is hunk {} dropped? (for the model, optional): ",
                        hunk + 1
                    ),
                    theme::warn(),
                ),
                Span::raw(note.clone()),
                Span::styled("▍", theme::accent()),
            ]);
            wrap_line(&l, width, 2, &mut out);
            out.push(Line::from(vec![
                Span::styled("enter", theme::key()),
                Span::styled(" keep the note  ", theme::dim()),
                Span::styled("esc", theme::key()),
                Span::styled(" back", theme::dim()),
            ]));
            return out;
        }
        if let Some(Some(note)) = self
            .hunk_notes
            .get(self.focused)
            .filter(|_| self.accepted.get(self.focused) == Some(&false))
        {
            let l = Line::from(vec![
                Span::styled(
                    format!("hunk {} dropped: ", self.focused + 1),
                    theme::warn(),
                ),
                Span::styled(note.clone(), theme::dim()),
            ]);
            wrap_line(&l, width, 2, &mut out);
        }
        if let ApprovalMode::Note(note) = &self.mode {
            let l = Line::from(vec![
                Span::styled("Reject. Note to the model (optional): ", theme::warn()),
                Span::raw(note.clone()),
                Span::styled("▍", theme::accent()),
            ]);
            wrap_line(&l, width, 2, &mut out);
            out.push(Line::from(vec![
                Span::styled("enter", theme::key()),
                Span::styled(" send rejection  ", theme::dim()),
                Span::styled("esc", theme::key()),
                Span::styled(" back", theme::dim()),
            ]));
            return out;
        }
        let once = if self.partial() {
            let n = self.accepted.iter().filter(|a| **a).count();
            format!(" Allow once ({n} of {} hunks)", self.hunk_count())
        } else {
            " Allow once".to_string()
        };
        let mut spans = vec![
            Span::styled("[y]", theme::key()),
            Span::raw(once),
            Span::raw("   "),
        ];
        if self.is_sandbox_retry() {
            // Once only: an unsandboxed run is never saved as a rule.
        } else if self.partial() {
            spans.push(Span::styled(
                "[a] Allow always (not with a hunk subset)",
                theme::dim(),
            ));
        } else if self.verdict.always_rule.is_none() {
            spans.push(Span::styled(
                "[a] Allow always (not offered for this call)",
                theme::dim(),
            ));
        } else {
            spans.push(Span::styled("[a]", theme::key()));
            spans.push(Span::raw(" Allow always"));
        }
        if !self.is_sandbox_retry() {
            spans.push(Span::raw("   "));
        }
        spans.push(Span::styled("[n]", theme::key()));
        spans.push(Span::raw(" Reject"));
        wrap_line(&Line::from(spans), width, 0, &mut out);
        if !self.partial()
            && let Some(rule) = &self.verdict.always_rule
        {
            let l = Line::from(vec![
                Span::styled("    always saves: ", theme::dim()),
                Span::styled(rule.clone(), theme::accent()),
            ]);
            wrap_line(&l, width, 4, &mut out);
        }
        let mut keys = Vec::new();
        if self.hunk_count() > 1 {
            keys.push(("space", "toggle hunk"));
            keys.push(("[ ]", "prev/next hunk"));
            if self.accepted.get(self.focused) == Some(&false) {
                keys.push(("e", "why dropped"));
            } else {
                keys.push(("e", "drop + note"));
            }
        }
        keys.push((
            "f",
            if self.fullscreen {
                "leave full screen"
            } else {
                "full screen"
            },
        ));
        keys.push(("↑↓", "scroll"));
        keys.push(("esc", "interrupt"));
        wrap_line(&theme::keys_line(&keys), width, 0, &mut out);
        out
    }
}

/// A command: its text, where and how it runs, and the verdict on each simple command.
fn lay_out_command(c: &CommandPreview, width: usize, out: &mut Vec<Line<'static>>) {
    let line = Line::from(vec![
        Span::styled("$ ", theme::dim()),
        Span::styled(c.command.clone(), theme::inline_code()),
    ]);
    wrap_line(&line, width, 2, out);
    let mut flags = vec![Span::styled(format!("  in {}", c.cwd), theme::dim())];
    if c.background {
        flags.push(Span::styled("  background", theme::warn()));
    }
    if c.pty {
        flags.push(Span::styled("  pty", theme::warn()));
    }
    // The profile shares the cwd's line so the reason below stays on a 24-row screen.
    if let Some(sb) = &c.sandbox {
        let style = if sb.profile == pablo_protocol::SandboxProfile::Off {
            theme::warn()
        } else {
            theme::dim()
        };
        flags.push(Span::styled(format!("  sandbox: {}", sb.describe()), style));
    }
    wrap_line(&Line::from(flags), width, 2, out);
    if !c.commands.is_empty() {
        out.push(Line::from(Span::styled(
            format!(
                "parsed into {} simple command{}:",
                c.commands.len(),
                if c.commands.len() == 1 { "" } else { "s" }
            ),
            theme::dim(),
        )));
    }
    for sc in &c.commands {
        let (mark, style, word) = match sc.decision {
            Decision::Allow => ("✓", theme::ok(), "allow"),
            Decision::Ask => ("?", theme::warn(), "ask"),
            Decision::Deny => ("✗", theme::error(), "deny"),
        };
        let words = if sc.argv.is_empty() {
            "(no command word)".to_string()
        } else {
            sc.argv.join(" ")
        };
        let mut spans = vec![Span::styled(format!("  {mark} "), style), Span::raw(words)];
        if let Some(exe) = &sc.executable
            && sc.argv.first() != Some(exe)
        {
            spans.push(Span::styled(format!("  ({exe})"), theme::dim()));
        }
        spans.push(Span::styled(format!("  {word}"), style));
        wrap_line(&Line::from(spans), width, 4, out);
        let mut why = Vec::new();
        if let Some(rule) = &sc.rule_id {
            why.push(format!("rule {rule}"));
        }
        if let Some(reason) = &sc.reason {
            why.push(reason.clone());
        }
        if !why.is_empty() {
            let l = Line::from(Span::styled(
                format!("    {}", why.join(" — ")),
                theme::dim(),
            ));
            wrap_line(&l, width, 4, out);
        }
    }
}

/// An MCP call: the server, the tool and its arguments.
fn lay_out_mcp(m: &McpCallPreview, width: usize, out: &mut Vec<Line<'static>>) {
    let mut head = vec![
        Span::styled("server ", theme::dim()),
        Span::styled(m.server.clone(), theme::bold()),
        Span::styled("  tool ", theme::dim()),
        Span::styled(m.tool.clone(), theme::bold()),
    ];
    if let Some(t) = m.title.as_ref().filter(|t| **t != m.tool) {
        head.push(Span::styled(format!("  ({t})"), theme::dim()));
    }
    wrap_line(&Line::from(head), width, 2, out);
    if m.read_only_hint == Some(true) {
        out.push(Line::from(Span::styled(
            "the server says this tool only reads",
            theme::dim(),
        )));
    }
    out.push(Line::from(Span::styled("arguments:", theme::dim())));
    let pretty =
        serde_json::to_string_pretty(&m.arguments).unwrap_or_else(|_| m.arguments.to_string());
    for l in pretty.lines() {
        let line = Line::from(Span::styled(format!("  {l}"), theme::inline_code()));
        wrap_line(&line, width, 4, out);
    }
}

/// The background-session browser.
#[derive(Debug, Default)]
pub(crate) struct SessionsView {
    pub(crate) selected: usize,
    /// The session whose output is open.
    pub(crate) open: Option<String>,
    /// Input being typed for the open session.
    pub(crate) input: Option<String>,
}

impl SessionsView {
    pub(crate) fn handle_key(&mut self, key: KeyEvent, ids: &[String]) -> Intent {
        if let (Some(input), Some(id)) = (&mut self.input, &self.open) {
            match key.code {
                KeyCode::Enter => {
                    let data = format!("{input}\n");
                    let id = id.clone();
                    self.input = None;
                    return Intent::SessionInput {
                        session_id: id,
                        data,
                    };
                }
                KeyCode::Esc => self.input = None,
                KeyCode::Backspace => {
                    input.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => input.push(c),
                _ => {}
            }
            return Intent::None;
        }
        if let Some(id) = &self.open {
            return match key.code {
                KeyCode::Esc | KeyCode::Left | KeyCode::Char('q') => {
                    self.open = None;
                    Intent::None
                }
                KeyCode::Char('i') => {
                    self.input = Some(String::new());
                    Intent::None
                }
                KeyCode::Char('k') | KeyCode::Char('x') => Intent::KillSession {
                    session_id: id.clone(),
                },
                _ => Intent::None,
            };
        }
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => Intent::Close,
            KeyCode::Down | KeyCode::Char('j') if !ids.is_empty() => {
                self.selected = (self.selected + 1).min(ids.len() - 1);
                Intent::None
            }
            KeyCode::Up => {
                self.selected = self.selected.saturating_sub(1);
                Intent::None
            }
            KeyCode::Enter | KeyCode::Right => {
                if let Some(id) = ids.get(self.selected) {
                    self.open = Some(id.clone());
                }
                Intent::None
            }
            KeyCode::Char('k') | KeyCode::Char('x') => match ids.get(self.selected) {
                Some(id) => Intent::KillSession {
                    session_id: id.clone(),
                },
                None => Intent::None,
            },
            _ => Intent::None,
        }
    }
}

/// The `/resume` picker: saved sessions of this workspace, most recent first.
#[derive(Debug, Default)]
pub(crate) struct ResumeView {
    pub(crate) rows: Vec<pablo_launch::SessionInfo>,
    pub(crate) selected: usize,
    /// When the picker opened (Unix ms): rows say how long ago each session was used.
    pub(crate) now_ms: u64,
}

impl ResumeView {
    pub(crate) fn handle_key(&mut self, key: KeyEvent) -> Intent {
        if super::restore::move_selection(key.code, &mut self.selected, self.rows.len()) {
            return Intent::None;
        }
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => Intent::Close,
            KeyCode::Enter => match self.rows.get(self.selected) {
                Some(info) => Intent::Resume(info.id.clone()),
                None => Intent::Close,
            },
            _ => Intent::None,
        }
    }
}

/// The `/artifacts` picker: the files this session saved, opened in `$PAGER`.
#[derive(Debug, Default)]
pub(crate) struct ArtifactsView {
    pub(crate) rows: Vec<ArtifactSummary>,
    pub(crate) selected: usize,
}

impl ArtifactsView {
    pub(crate) fn handle_key(&mut self, key: KeyEvent) -> Intent {
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => Intent::Close,
            KeyCode::Down | KeyCode::Char('j') if !self.rows.is_empty() => {
                self.selected = (self.selected + 1).min(self.rows.len() - 1);
                Intent::None
            }
            KeyCode::Up | KeyCode::Char('k') => {
                self.selected = self.selected.saturating_sub(1);
                Intent::None
            }
            KeyCode::Enter => match self.rows.get(self.selected) {
                Some(a) => Intent::OpenArtifact(a.path.clone()),
                None => Intent::Close,
            },
            _ => Intent::None,
        }
    }
}

/// The `/memory` list: this session's proposals; the person accepts or dismisses each.
#[derive(Debug, Default)]
pub(crate) struct MemoryView {
    pub(crate) rows: Vec<MemoryProposal>,
    pub(crate) selected: usize,
}

impl MemoryView {
    pub(crate) fn handle_key(&mut self, key: KeyEvent) -> Intent {
        let pending = |p: &MemoryProposal| p.status == MemoryStatus::Proposed;
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => Intent::Close,
            KeyCode::Down | KeyCode::Char('j') if !self.rows.is_empty() => {
                self.selected = (self.selected + 1).min(self.rows.len() - 1);
                Intent::None
            }
            KeyCode::Up | KeyCode::Char('k') => {
                self.selected = self.selected.saturating_sub(1);
                Intent::None
            }
            KeyCode::Char(c @ ('a' | 'd')) => match self.rows.get(self.selected) {
                Some(p) if pending(p) => Intent::ResolveMemory {
                    id: p.id.clone(),
                    accept: c == 'a',
                },
                _ => Intent::None,
            },
            _ => Intent::None,
        }
    }
}
