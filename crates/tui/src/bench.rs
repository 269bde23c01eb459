//! What `benches/tui_render.rs` measures, behind the `bench-support` feature: the bench names this
//! crate's own scene rather than its private modules.
//!
//! The bench times frames of the TUI: it needs a transcript state built from protocol events, a
//! surface to draw it on, and the step each frame takes (a chunk of streamed output, a key). Those
//! are this crate's own types, so they stay private behind [`TuiRenderScene`]; the bench keeps the
//! timing, the percentiles and the figures it prints.

// A bench whose set-up fails should stop loudly; nothing here runs inside pablo.
#![allow(clippy::expect_used)]

use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Size;
use serde_json::json;

use crate::app::{self, InlineSurface, Surface};
use crate::inline::InlineScreen;
use crate::state::{AppState, Setup};
use pablo_core::ToolName;
use pablo_protocol::{
    CommandPreview, Decision, DiffHunk, DiffLine, DiffTag, Event, FileChangePreview, Preview,
    ToolOutcome, Verdict,
};

/// Cells in the streaming transcript; the last one is the command still running.
const CELLS: usize = 2000;
/// Shell output shared by the transcript's commands.
const OUTPUT_BYTES: usize = 10 * 1024 * 1024;

/// A TUI state and the surface its frames are drawn on.
pub struct TuiRenderScene {
    state: AppState,
    target: Target,
}

/// Full screen (ratatui's `TestBackend`, as `app::draw` draws a real terminal), or the inline
/// viewport writing its bytes into memory.
enum Target {
    Full(Terminal<TestBackend>),
    Inline(InlineSurface<Vec<u8>>),
}

impl TuiRenderScene {
    /// The streaming transcript on a `size` screen: full screen, or inline (the default mode),
    /// where the first frame prints the 2,000 finished cells into the scrollback and every later
    /// frame repaints only what changed in the viewport.
    pub fn streaming(size: Size, inline: bool) -> Self {
        let target = if inline {
            Target::Inline(InlineSurface::new(InlineScreen::new(Vec::new(), size, 0)))
        } else {
            match Terminal::new(TestBackend::new(size.width, size.height)) {
                Ok(t) => Target::Full(t),
                Err(e) => match e {},
            }
        };
        Self {
            state: big_state(inline),
            target,
        }
    }

    /// Inline on a `size` screen, with the approval prompt for creating a file of `lines` lines
    /// on top.
    pub fn approval(size: Size, lines: usize) -> Self {
        Self {
            state: approval_state(lines, false),
            target: Target::Inline(InlineSurface::new(InlineScreen::new(Vec::new(), size, 0))),
        }
    }

    /// As [`Self::approval`], for an edit that replaces `lines` lines by as many that differ in a
    /// few words each: the prompt the diff view's word emphasis is drawn in.
    pub fn approval_replacing(size: Size, lines: usize) -> Self {
        Self {
            state: approval_state(lines, true),
            target: Target::Inline(InlineSurface::new(InlineScreen::new(Vec::new(), size, 0))),
        }
    }

    /// Draws a frame of the state as it is (the first frame, which lays everything out).
    pub fn draw(&mut self) {
        match &mut self.target {
            Target::Full(terminal) => {
                app::draw(terminal, &mut self.state).expect("draw the frame");
            }
            Target::Inline(surface) => {
                surface.frame(&mut self.state).expect("draw the frame");
                surface.screen.writer().clear();
            }
        }
    }

    /// One streaming frame: chunk `n` of output arrives for the running command, 16 ms pass, and a
    /// frame is drawn. Returns the bytes the frame wrote to the terminal (inline; 0 full screen,
    /// where the test backend keeps a buffer instead).
    pub fn stream(&mut self, n: usize) -> u64 {
        self.state.apply(Event::ToolOutputDelta {
            call_id: format!("c{}", CELLS - 1),
            chunk: format!("\x1b[31mFAIL\x1b[0m tests::streamed::case_{n}\n"),
        });
        self.state
            .set_now(self.state.now() + Duration::from_millis(16));
        match &mut self.target {
            Target::Full(terminal) => {
                app::draw(terminal, &mut self.state).expect("draw the frame");
                0
            }
            Target::Inline(surface) => {
                let before = surface.screen.bytes_written();
                surface.frame(&mut self.state).expect("draw the frame");
                surface.screen.writer().clear();
                surface.screen.bytes_written() - before
            }
        }
    }

    /// PageDown is pressed, then a frame is drawn.
    pub fn page_down(&mut self) {
        self.state
            .handle_key(KeyEvent::new(KeyCode::PageDown, KeyModifiers::NONE));
        self.draw();
    }
}

fn command(cmd: &str) -> Preview {
    Preview::Command(CommandPreview {
        command: cmd.into(),
        cwd: ".".into(),
        background: false,
        pty: false,
        commands: vec![],
        sandbox: None,
    })
}

/// 2,000 cells: a quarter shell commands sharing 10 MB of coloured output, the rest user turns,
/// markdown answers and file reads. The last command is still running.
fn big_state(inline: bool) -> AppState {
    let now = Instant::now();
    let mut s = AppState::with_setup(
        now,
        Setup {
            inline,
            ..Setup::default()
        },
    );
    let shell_cells = CELLS / 4;
    let per_cell = OUTPUT_BYTES / shell_cells;
    let line = "\x1b[32mPASS\x1b[0m tests::module::case_with_a_longish_name ... ok (0.01s)\n";
    let chunk: String = line.repeat(per_cell / line.len() + 1);
    let mut made = 0;
    let mut i = 0;
    while made < CELLS {
        match i % 4 {
            0 => s.apply(Event::UserMessage {
                text: format!("step {i}: please run the tests and explain the failures"),
            }),
            1 => s.apply(Event::MessageCompleted {
                text: format!(
                    "## Result {i}\n\nThe **tests** ran; `cargo test` reported one failure in \
                     `parser::tests::roundtrip`:\n\n- it expects `Some(3)`\n- it got `None`\n\n\
                     ```rust\nassert_eq!(parse(\"3\"), Some(3));\n```\n"
                ),
                tool_calls: vec![],
            }),
            2 => {
                let id = format!("r{i}");
                s.apply(Event::ToolCallBegin {
                    call_id: id.clone(),
                    tool: ToolName::FsRead.native().into(),
                    arguments: json!({"path": format!("src/module_{i}.rs")}),
                });
                s.apply(Event::ToolCallEnd {
                    call_id: id,
                    tool: ToolName::FsRead.native().into(),
                    result: ToolOutcome::ok(
                        json!({"content": "fn main() {}\n", "revision": "abc"}),
                    ),
                });
            }
            _ => {
                let id = format!("c{i}");
                s.apply(Event::ToolCallBegin {
                    call_id: id.clone(),
                    tool: ToolName::ShellRun.native().into(),
                    arguments: json!({"command": "cargo test"}),
                });
                s.apply(Event::ToolCallRunning {
                    call_id: id.clone(),
                    preview: command("cargo test"),
                });
                s.apply(Event::ToolOutputDelta {
                    call_id: id.clone(),
                    chunk: chunk.clone(),
                });
                if made + 1 < CELLS {
                    s.apply(Event::ToolCallEnd {
                        call_id: id,
                        tool: ToolName::ShellRun.native().into(),
                        result: ToolOutcome::ok(json!({"exit_code": 0})),
                    });
                }
            }
        }
        made += 1;
        i += 1;
    }
    s
}

/// A state whose top layer is the approval prompt for creating a file of `lines` lines, or, when
/// `replacing`, for replacing `lines` lines of one by as many with other words in them.
fn approval_state(lines: usize, replacing: bool) -> AppState {
    let mut s = AppState::with_setup(
        Instant::now(),
        Setup {
            inline: true,
            ..Setup::default()
        },
    );
    let new_line = |i: usize| {
        if replacing {
            format!(
                "    let value_{i} = compute(alpha, gamma, {}) + offset;",
                3 * i
            )
        } else {
            format!("line {i:05} of the generated file")
        }
    };
    let text: Vec<String> = (1..=lines).map(new_line).collect();
    let old: Vec<String> = if replacing {
        (1..=lines)
            .map(|i| format!("    let value_{i} = compute(alpha, beta, {i}) + offset;"))
            .collect()
    } else {
        Vec::new()
    };
    let removed = old.iter().enumerate().map(|(i, t)| DiffLine {
        tag: DiffTag::Removed,
        old_lineno: Some(i + 1),
        new_lineno: None,
        text: t.clone(),
    });
    let added = text.iter().enumerate().map(|(i, t)| DiffLine {
        tag: DiffTag::Added,
        old_lineno: None,
        new_lineno: Some(i + 1),
        text: t.clone(),
    });
    let hunk = DiffHunk {
        header: format!("@@ -{},{} +1,{lines} @@", usize::from(replacing), old.len()),
        old_start: usize::from(replacing),
        old_len: old.len(),
        new_start: 1,
        new_len: lines,
        lines: removed.chain(added).collect(),
    };
    let preview = Preview::FileChange(FileChangePreview {
        path: "big.txt".into(),
        old_revision: replacing.then(|| "1".repeat(64)),
        new_revision: "0".repeat(64),
        new_text: text.join("\n"),
        diff: String::new(),
        added: lines,
        removed: old.len(),
        hunks: vec![hunk],
    });
    let arguments = json!({"path": "big.txt"});
    s.apply(Event::UserMessage {
        text: "write the file".into(),
    });
    s.apply(Event::ToolCallBegin {
        call_id: "w".into(),
        tool: ToolName::FsWrite.native().into(),
        arguments,
    });
    s.apply(Event::ApprovalRequest {
        call_id: "w".into(),
        tool: ToolName::FsWrite.native().into(),
        preview,
        verdict: Verdict {
            decision: Decision::Ask,
            reasons: vec!["edits ask".into()],
            rule_ids: vec![],
            always_rule: None,
        },
    });
    s
}
