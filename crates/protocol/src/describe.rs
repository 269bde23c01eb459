//! Tool calls and results in words, as every front-end shows them: a title and a one-line
//! summary of a call, and for its result one line a person reads first (`wait s1: still running
//! after 3.0 s, 4 new lines`) with the lines of output beneath it. The words are each tool's own
//! (the catalog writes them from the tool's typed result; front-ends ask `launch` for them), so a
//! result never appears as raw JSON and reads the same in the TUI, over ACP and in `pablo run`.
//! The model gets the JSON itself; this is only for eyes.

use std::time::Duration;

use super::{ToolErrorBody, ToolOutcome};

/// How one tool call is shown before it has a result.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CallView {
    /// A title with its verb, for editors: `Read src/main.rs`, `Run cargo test`.
    pub title: String,
    /// What a person reads first beside the tool's name: the path, the command, the pattern.
    pub summary: String,
    /// The summary is a command line (shown as code).
    pub command: bool,
    /// The file the call is about, for an editor that opens it beside the call.
    pub location: Option<CallLocation>,
}

/// A file a call is about: its path as the model gave it (workspace-relative or absolute) and,
/// when the call names one, the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallLocation {
    pub path: String,
    pub line: Option<u32>,
}

/// How one tool result is shown.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResultView {
    /// The one line: what happened (without how long it took; see [`ResultView::headline`]).
    pub headline: String,
    /// Where ` after 3.0 s` goes in the headline when the front-end knows how long the call
    /// took (a wait that is still running); `None`: the duration is not part of the line.
    pub elapsed_at: Option<usize>,
    /// Output or entries beneath it, in order (possibly many: the front-end shows a tail).
    pub body: Vec<String>,
    /// Replaces the call's summary once the result is in (`2/3 done` for a checklist).
    pub summary: Option<String>,
    /// Shown only when the call is expanded (a checklist is on screen already).
    pub only_expanded: bool,
    /// The exit code the result reports, when it reports one.
    pub exit_code: Option<i64>,
    /// What a front-end may act on besides showing the result.
    pub fact: Option<ResultFact>,
}

/// Something a result did that a front-end acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultFact {
    /// A file was saved to the session's artifact store.
    ArtifactSaved,
    /// The model proposed a memory; it waits for the person's decision.
    MemoryProposed { proposal_id: String },
}

impl ResultView {
    /// A result of one line and nothing beneath it.
    pub fn line(headline: impl Into<String>) -> Self {
        Self {
            headline: headline.into(),
            ..Self::default()
        }
    }

    /// A result of one line and the lines beneath it.
    pub fn lines(headline: impl Into<String>, body: Vec<String>) -> Self {
        Self {
            headline: headline.into(),
            body,
            ..Self::default()
        }
    }

    /// A refusal or failure: its message and its code.
    pub fn failure(error: &ToolErrorBody) -> Self {
        Self::line(format!("{} ({})", error.message, error.code))
    }

    /// The headline, with how long the call took where the result has a place for it.
    pub fn headline(&self, elapsed: Option<Duration>) -> String {
        match (self.elapsed_at, elapsed) {
            (Some(at), Some(e)) if self.headline.is_char_boundary(at) => format!(
                "{} after {}{}",
                &self.headline[..at],
                seconds(e),
                &self.headline[at..]
            ),
            _ => self.headline.clone(),
        }
    }
}

/// The view of `outcome` when it is a failure; `None` for a success (whose words are the tool's).
pub fn failure_view(outcome: &ToolOutcome) -> Option<ResultView> {
    match outcome {
        ToolOutcome::Err { error, .. } => Some(ResultView::failure(error)),
        ToolOutcome::Ok { .. } => None,
    }
}

/// One line for an MCP server's state change (`mcp everything: ready, 12 tools`), or `None` for
/// one not worth a line of its own (starting, stopped).
pub fn mcp_server(view: &super::McpServerView) -> Option<String> {
    use super::McpState;
    match view.state {
        McpState::Ready => {
            let mut parts = vec![plural(view.tools.len() as u64, "tool")];
            if !view.prompts.is_empty() {
                parts.push(plural(view.prompts.len() as u64, "prompt"));
            }
            if !view.resources.is_empty() {
                parts.push(plural(view.resources.len() as u64, "resource"));
            }
            Some(format!("mcp {}: ready, {}", view.name, parts.join(", ")))
        }
        McpState::Failed => Some(format!(
            "mcp {}: failed: {}",
            view.name,
            view.reason.as_deref().unwrap_or("no reason given")
        )),
        McpState::Starting | McpState::Stopped => None,
    }
}

/// How the person answered an MCP server's question, in a line for the transcript (the values
/// are not repeated: the tool's result says what the server made of them).
pub fn question_answered(server: &str, answer: &super::QuestionAnswer) -> String {
    match answer {
        super::QuestionAnswer::Accept { content } => format!(
            "mcp {server}: question answered ({})",
            plural(content.len() as u64, "field")
        ),
        super::QuestionAnswer::Decline => format!("mcp {server}: question declined"),
        super::QuestionAnswer::Cancel => format!("mcp {server}: question dismissed"),
    }
}

/// One hook's run in words, as every front-end shows it (`hook fmt (post_tool_use) added context
/// for the model`); `None` for a run that decided nothing and gave the model nothing, and for a
/// `pre_tool_use` block, which the tool call's own result says (`shell.run was blocked by hook
/// lint-guard: …`).
pub fn hook_words(event: &super::Event) -> Option<String> {
    let super::Event::Hook {
        event,
        hook,
        decision,
        message,
        context,
        path,
        ..
    } = event
    else {
        return None;
    };
    if event == "pre_tool_use" && matches!(decision.as_str(), "block" | "failed_closed") {
        return None;
    }
    let why = message
        .as_deref()
        .map(|m| format!(": {m}"))
        .unwrap_or_default();
    let what = match event.as_str() {
        "user_prompt_submit" => "the prompt was ",
        _ => "",
    };
    Some(match decision.as_str() {
        "block" if event == "stop" => format!("hook {hook} sent the model back to work{why}"),
        "block" | "failed_closed" => format!("{what}blocked by hook {hook}{why}"),
        "failed_open" => format!("hook {hook} ({event}) failed, going ahead{why}"),
        "allow" => format!("allowed by hook {hook}"),
        "ask" => format!("hook {hook} asks for approval{why}"),
        "rewrite" => format!("arguments rewritten by hook {hook}"),
        _ => match (context, path) {
            (Some(_), Some(p)) => format!("hook {hook} ({event}) on {p} left a note for the model"),
            (Some(_), None) => format!("hook {hook} ({event}) added context for the model"),
            _ => return None,
        },
    })
}

/// `1 line`, `3 lines`.
pub fn plural(n: u64, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

/// The first line of `text`, at most `max` characters, ending in `…` when the line was cut, and
/// also when `text` had more lines and `mark_rest` is set (a title for a command says that it
/// goes on; a description's first line does not need to).
pub fn first_line_clipped(text: &str, max: usize, mark_rest: bool) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut out: String = line.chars().take(max).collect();
    if line.chars().count() > max || (mark_rest && text.lines().nth(1).is_some()) {
        out.push('…');
    }
    out
}

/// `1.2 s`, `350 ms`, `2 min 5 s`.
pub fn seconds(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{} min {} s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

/// The message the model receives: the person's words, then each attached file.
pub fn with_attachments(text: &str, files: &[super::Attachment]) -> String {
    let mut out = text.to_string();
    for f in files {
        out.push_str(&format!(
            "\n\n<attached-file path=\"{}\">\n{}\n</attached-file>",
            f.path, f.text
        ));
        if f.truncated {
            out.push_str(&format!(
                "\n[only the first {} of the {} bytes of {} are attached]",
                f.text.len(),
                f.bytes,
                f.path
            ));
        }
    }
    out
}

/// The message's text with a line naming each attached image (the image itself goes beside the
/// text as an image part), so the model knows which picture is which file.
pub fn with_images(text: &str, images: &[super::ImageAttachment]) -> String {
    let mut out = text.to_string();
    for i in images {
        out.push_str(&format!(
            "\n\n<attached-image path=\"{}\" type=\"{}\" bytes=\"{}\"/>",
            i.path, i.image.media_type, i.image.bytes
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_duration_goes_where_the_result_keeps_a_place_for_it_and_only_there() {
        let view = ResultView {
            headline: "wait s1: still running, 4 new lines".into(),
            elapsed_at: Some("wait s1: still running".len()),
            ..ResultView::default()
        };
        assert_eq!(
            view.headline(Some(Duration::from_millis(3000))),
            "wait s1: still running after 3.0 s, 4 new lines"
        );
        assert_eq!(view.headline(None), "wait s1: still running, 4 new lines");
        let plain = ResultView::line("3 lines");
        assert_eq!(plain.headline(Some(Duration::from_secs(2))), "3 lines");
    }
}
