//! Keeping every request inside the model's context window, also in the middle of a long turn.
//!
//! Before each model call the agent estimates the request's size in tokens from its serialized
//! size in bytes. The bytes-per-token ratio starts at a cautious [`DEFAULT_BYTES_PER_TOKEN`] and
//! is corrected after every call by what the provider reports it counted ([`ContextWindow::
//! observe`]), so the estimate follows the real tokenizer after the first call.
//!
//! When the estimate passes [`FILL_LIMIT`] of the window, old tool results are cleared first:
//! oldest first, in one large chunk that brings the request down to [`CLEAR_TARGET`] of the
//! window, never those of the newest step. A large chunk matters because every clearing changes
//! the conversation at the first cleared result, and the provider's prompt cache can serve
//! nothing after that point on the next call; clearing a little at every call would cost the
//! cache at every call. The model reads a note in place of each cleared result saying what it
//! was and how to get it again. Only if that is not enough is the conversation summarized (the
//! agent's compaction). Everything here is a pure function of the conversation, so the agent,
//! resume and the benchmark compute the same thing.

use pablo_core::ToolSpec;
use pablo_model::Message;
use pablo_protocol::{ClearedResult, ToolCall};

/// The share of the window a request may fill before room is made.
pub(crate) const FILL_LIMIT: f64 = 0.85;
/// The share of the window clearing brings a request down to.
pub(crate) const CLEAR_TARGET: f64 = 0.5;
/// The assumed bytes per token until the provider reports usage: cautious for JSON and code,
/// which tokenize denser than prose.
pub(crate) const DEFAULT_BYTES_PER_TOKEN: f64 = 3.0;
/// Results smaller than this are not worth clearing.
pub(crate) const MIN_CLEARABLE_BYTES: usize = 512;
/// The first bytes of every note that replaces a cleared result (so one is never cleared again).
pub(crate) const CLEARED_MARK: &str = r#"{"ok":true,"data":{"cleared":"#;

/// The window of one session's model and what has been learned about its tokenizer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ContextWindow {
    window_tokens: u64,
    bytes_per_token: f64,
}

impl ContextWindow {
    pub(crate) fn new(window_tokens: u64) -> Self {
        Self {
            window_tokens: window_tokens.max(1),
            bytes_per_token: DEFAULT_BYTES_PER_TOKEN,
        }
    }

    pub(crate) fn window_tokens(&self) -> u64 {
        self.window_tokens
    }

    #[cfg(test)]
    pub(crate) fn bytes_per_token(&self) -> f64 {
        self.bytes_per_token
    }

    /// The estimated tokens of a request of `bytes` serialized bytes.
    pub(crate) fn estimate(&self, bytes: usize) -> u64 {
        (bytes as f64 / self.bytes_per_token).ceil() as u64
    }

    /// The most tokens a request may have before room is made.
    pub(crate) fn limit(&self) -> u64 {
        (self.window_tokens as f64 * FILL_LIMIT) as u64
    }

    /// What clearing aims for.
    pub(crate) fn clear_target(&self) -> u64 {
        (self.window_tokens as f64 * CLEAR_TARGET) as u64
    }

    /// Learns from a call: a request of `bytes` bytes was counted as `input_tokens` tokens. The
    /// ratio is bounded so that a server that under-reports (one that counts only the tokens it
    /// did not have cached) cannot make the estimate absurdly low.
    pub(crate) fn observe(&mut self, bytes: usize, input_tokens: u64) {
        if input_tokens == 0 || bytes == 0 {
            return;
        }
        self.bytes_per_token = (bytes as f64 / input_tokens as f64).clamp(1.0, 5.0);
    }

    /// Learns from a "context too long" refusal of a request of `bytes` bytes: it did not fit,
    /// so the window is at most its size, and when the provider said how many tokens it was,
    /// that fixes the ratio.
    pub(crate) fn refused(&mut self, bytes: usize, reported_tokens: Option<u64>) {
        if let Some(t) = reported_tokens {
            self.observe(bytes, t);
        }
        let estimate = self.estimate(bytes);
        if estimate > 0 && estimate < self.window_tokens {
            self.window_tokens = estimate;
        }
    }
}

/// The serialized size of a request's parts, as the agent measures it.
pub fn request_bytes(system: &str, tools: &[ToolSpec], messages: &[Message]) -> usize {
    let tools = serde_json::to_vec(tools).map(|v| v.len()).unwrap_or(0);
    system.len() + tools + messages.iter().map(message_bytes).sum::<usize>()
}

/// The serialized size of one message. An image serializes as its short description, so it
/// counts as the bytes its estimated tokens would be at [`DEFAULT_BYTES_PER_TOKEN`]
/// ([`pablo_protocol::Image::estimated_tokens`]: providers bill images by their pixels, not by
/// the length of their base64).
pub(crate) fn message_bytes(m: &Message) -> usize {
    let images = match m {
        Message::User { images, .. } => images
            .iter()
            .map(|i| (i.estimated_tokens() as f64 * DEFAULT_BYTES_PER_TOKEN) as usize)
            .sum(),
        _ => 0,
    };
    serde_json::to_vec(m).map(|v| v.len()).unwrap_or(0) + images
}

/// Replaces every image of `messages` by a note in its message's text, for a model that takes
/// none (the person switched to it with `/model` after images were sent to another).
pub(crate) fn drop_images(messages: &mut [Message]) {
    pablo_model::drop_images(messages, "this model does not take images");
}

/// The note the model reads in place of a cleared result of `tool` that was `bytes` long.
pub(crate) fn cleared_note(tool: &str, bytes: usize) -> String {
    // Short on purpose: every cleared result keeps its note, and the notes add up.
    let again = if is_repeatable(tool) {
        "repeat the call to see it again"
    } else {
        "its effects stand; repeat the call only if that is safe"
    };
    let text = format!("{tool} result ({bytes} bytes) cleared to fit the context window; {again}");
    let quoted = serde_json::to_string(&text).unwrap_or_else(|_| "\"\"".into());
    format!("{CLEARED_MARK}{quoted}}}}}")
}

/// Reads that may be repeated without effect (provider and native names; `web.fetch` only in its
/// provider spelling, the one the conversation holds).
fn is_repeatable(tool: &str) -> bool {
    use pablo_core::ToolName;
    [ToolName::FsRead, ToolName::FsList, ToolName::FsSearch]
        .iter()
        .any(|t| t.is(tool))
        || tool == ToolName::WebFetch.provider()
}

/// The tool results to clear so that a request of `bytes` bytes (with `messages` as its
/// conversation) comes down to the clear target: the oldest first, skipping those of the newest
/// step and those too small to matter. Empty when nothing can be cleared.
pub(crate) fn plan_clearing(
    messages: &[Message],
    bytes: usize,
    window: &ContextWindow,
) -> Vec<ClearedResult> {
    let newest_step = messages
        .iter()
        .rposition(|m| matches!(m, Message::Assistant { .. }))
        .unwrap_or(0);
    let target = window.clear_target();
    let mut remaining = bytes;
    let mut out = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        if window.estimate(remaining) <= target || i >= newest_step {
            break;
        }
        let Message::Tool { call_id, content } = m else {
            continue;
        };
        if content.len() < MIN_CLEARABLE_BYTES || content.starts_with(CLEARED_MARK) {
            continue;
        }
        let tool = tool_name(&messages[..i], call_id).unwrap_or("tool");
        let note = cleared_note(tool, content.len());
        let before = message_bytes(m);
        let after = message_bytes(&Message::Tool {
            call_id: call_id.clone(),
            content: note.clone(),
        });
        remaining = remaining.saturating_sub(before.saturating_sub(after));
        out.push(ClearedResult {
            call_id: call_id.clone(),
            content: note,
        });
    }
    out
}

/// The name of the tool call `call_id`, from the assistant messages before its result.
fn tool_name<'a>(before: &'a [Message], call_id: &str) -> Option<&'a str> {
    before.iter().rev().find_map(|m| match m {
        Message::Assistant { tool_calls, .. } => tool_calls
            .iter()
            .find(|c: &&ToolCall| c.id == call_id)
            .map(|c| c.name.as_str()),
        _ => None,
    })
}

pub(crate) use pablo_model::apply_clearing;

/// Where a compaction cuts the conversation: the start of the current turn when what follows
/// fits the clear target, otherwise the start of the newest step (so a single long turn can be
/// summarized too). A cut always falls before a user or assistant message, so tool calls stay
/// with their results. `None` when there is nothing worth summarizing before it.
pub(crate) fn compaction_cut(
    messages: &[Message],
    fixed_bytes: usize,
    window: &ContextWindow,
) -> Option<usize> {
    let turn = messages
        .iter()
        .rposition(|m| matches!(m, Message::User { .. }));
    let step = messages
        .iter()
        .rposition(|m| matches!(m, Message::Assistant { .. }));
    let tail =
        |from: usize| fixed_bytes + messages[from..].iter().map(message_bytes).sum::<usize>();
    if let Some(t) = turn.filter(|&t| t >= 2)
        && (window.estimate(tail(t)) <= window.clear_target() || step.is_none_or(|s| s < t))
    {
        return Some(t);
    }
    step.filter(|&s| s >= 2)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> pablo_protocol::Image {
        let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        bytes.extend(width.to_be_bytes());
        bytes.extend(height.to_be_bytes());
        bytes.extend([8, 6, 0, 0, 0]);
        pablo_protocol::Image::from_bytes(&bytes).unwrap()
    }

    #[test]
    fn an_image_counts_as_its_estimated_tokens_not_its_base64() {
        let text = Message::user("look");
        let with = |i| Message::User {
            text: "look".into(),
            images: vec![i],
        };
        let small = message_bytes(&with(png(100, 100))) - message_bytes(&text);
        let large = message_bytes(&with(png(4000, 3000))) - message_bytes(&text);
        let w = ContextWindow::new(100_000);
        // 100 x 100 is below the floor of 85 tokens; 4000 x 3000 is capped at 1,600.
        assert!(
            (85..85 + 60).contains(&w.estimate(small)),
            "{}",
            w.estimate(small)
        );
        assert!(
            (1_600..1_600 + 60).contains(&w.estimate(large)),
            "{}",
            w.estimate(large)
        );
    }

    #[test]
    fn dropping_images_leaves_a_note_in_their_place() {
        let mut m = vec![Message::User {
            text: "look".into(),
            images: vec![png(2, 3)],
        }];
        drop_images(&mut m);
        let Message::User { text, images } = &m[0] else {
            panic!()
        };
        assert!(images.is_empty());
        assert!(text.contains("an image (PNG 2×3"), "{text}");
    }

    fn call(id: &str, name: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: "{}".into(),
        }
    }

    /// A turn of `n` steps, each one call whose result is `size` bytes.
    fn long_turn(n: usize, size: usize) -> Vec<Message> {
        let mut m = vec![Message::user("go")];
        for i in 0..n {
            let id = format!("c{i}");
            m.push(Message::Assistant {
                searches: Vec::new(),
                text: String::new(),
                tool_calls: vec![call(&id, if i % 2 == 0 { "fs_read" } else { "shell_run" })],
                reasoning: Vec::new(),
            });
            m.push(Message::Tool {
                call_id: id,
                content: format!("{{\"ok\":true,\"data\":\"{}\"}}", "x".repeat(size)),
            });
        }
        m
    }

    #[test]
    fn usage_corrects_the_estimate_within_bounds() {
        let mut w = ContextWindow::new(10_000);
        assert_eq!(w.estimate(3_000), 1_000);
        w.observe(4_000, 1_000);
        assert_eq!(w.estimate(4_000), 1_000);
        w.observe(100_000, 10);
        assert_eq!(w.bytes_per_token(), 5.0);
    }

    #[test]
    fn clearing_takes_the_oldest_results_in_one_chunk_and_keeps_the_newest_step() {
        let messages = long_turn(10, 3_000);
        let w = ContextWindow::new(10_000);
        let bytes = request_bytes("", &[], &messages);
        assert!(w.estimate(bytes) > w.limit());
        let cleared = plan_clearing(&messages, bytes, &w);
        let ids: Vec<&str> = cleared.iter().map(|c| c.call_id.as_str()).collect();
        assert!(!ids.is_empty() && ids[0] == "c0", "{ids:?}");
        assert!(!ids.contains(&"c9"), "the newest step is kept");
        let mut after = messages.clone();
        apply_clearing(&mut after, &cleared);
        assert!(w.estimate(request_bytes("", &[], &after)) <= w.clear_target());
        // Oldest first and contiguous: the cleared ids are c0, c1, … in order.
        for (n, id) in ids.iter().enumerate() {
            assert_eq!(*id, format!("c{n}"));
        }
        // A note is never cleared again.
        assert!(plan_clearing(&after, request_bytes("", &[], &after), &w).is_empty());
    }

    #[test]
    fn the_note_names_the_tool_and_says_how_to_get_the_result_again() {
        let read = cleared_note("fs_read", 6_000);
        let v: serde_json::Value = serde_json::from_str(&read).unwrap();
        assert_eq!(v["ok"], true);
        let text = v["data"]["cleared"].as_str().unwrap();
        assert!(
            text.contains("fs_read") && text.contains("6000 bytes"),
            "{text}"
        );
        assert!(text.contains("repeat the call to see it again"), "{text}");
        let shell = cleared_note("shell_run", 10);
        assert!(shell.contains("only if that is safe"), "{shell}");
        assert!(read.starts_with(CLEARED_MARK));
    }

    #[test]
    fn a_refusal_shrinks_the_window_to_what_did_not_fit() {
        let mut w = ContextWindow::new(200_000);
        w.refused(300_000, Some(150_000));
        assert_eq!(w.bytes_per_token(), 2.0);
        assert_eq!(w.window_tokens(), 150_000);
        let mut w = ContextWindow::new(200_000);
        w.refused(30_000, None);
        assert_eq!(w.window_tokens(), 10_000);
    }

    #[test]
    fn compaction_cuts_at_the_turn_start_when_that_suffices_else_at_the_newest_step() {
        let w = ContextWindow::new(100_000);
        let mut m = long_turn(2, 100);
        m.push(Message::user("next"));
        assert_eq!(compaction_cut(&m, 0, &w), Some(5));
        let one_turn = long_turn(20, 3_000);
        let small = ContextWindow::new(10_000);
        assert_eq!(compaction_cut(&one_turn, 0, &small), Some(39));
        assert_eq!(compaction_cut(&long_turn(0, 0), 0, &w), None);
    }
}
