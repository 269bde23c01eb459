//! Splitting inline `<think>…</think>` reasoning out of streamed answer text.
//!
//! Some OpenAI-compatible servers (llama.cpp without a reasoning parser, older Ollama builds,
//! some vLLM setups) stream a reasoning model's thinking inside the answer, wrapped in
//! `<think>` tags. Shown as the answer it would read as the answer, and sent back it would be
//! read by the model as something it said. [`ThinkSplitter`] routes it to reasoning as the bytes
//! arrive, holding back only what could be the start of a tag split across two deltas.
//!
//! A `<think>` tag counts only where an answer has not started yet (at the start of the message,
//! or right after a previous think block): once real text has been streamed, the same characters
//! are literal text, so an answer that talks about the tag is left alone. Whitespace before the
//! answer proper (the blank lines models put after `</think>`) is dropped.

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// A piece of streamed text, routed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Reasoning(String),
}

/// The splitter's state across deltas of one message.
#[derive(Debug, Default)]
pub struct ThinkSplitter {
    inside: bool,
    /// Non-whitespace answer text has been emitted since the last think block.
    started: bool,
    /// Text held back because it may be the start of a tag.
    pending: String,
}

impl ThinkSplitter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Routes one delta; completed pieces are appended to `out`.
    pub fn push(&mut self, delta: &str, out: &mut Vec<Piece>) {
        let mut buf = std::mem::take(&mut self.pending);
        buf.push_str(delta);
        loop {
            if self.inside {
                match buf.find(CLOSE) {
                    Some(i) => {
                        push_piece(out, Piece::Reasoning(buf[..i].to_string()));
                        self.inside = false;
                        self.started = false;
                        buf = buf[i + CLOSE.len()..].to_string();
                    }
                    None => {
                        let ready = buf.len() - partial_tag_len(&buf, CLOSE);
                        push_piece(out, Piece::Reasoning(buf[..ready].to_string()));
                        self.pending = buf[ready..].to_string();
                        return;
                    }
                }
            } else if self.started {
                self.emit_text(&buf, out);
                return;
            } else {
                // Before the answer starts: whitespace, then perhaps an opening tag.
                let trimmed = buf.trim_start();
                if let Some(rest) = trimmed.strip_prefix(OPEN) {
                    self.inside = true;
                    buf = rest.to_string();
                } else if OPEN.starts_with(trimmed) {
                    // Possibly the start of a tag: wait for more. The whitespace before it
                    // would be trimmed from the answer anyway.
                    self.pending = trimmed.to_string();
                    return;
                } else {
                    self.emit_text(&buf, out);
                    return;
                }
            }
        }
    }

    /// Flushes what was held back at the end of the message (an unfinished tag is text, an
    /// unclosed think block is reasoning).
    pub fn finish(&mut self, out: &mut Vec<Piece>) {
        let rest = std::mem::take(&mut self.pending);
        if self.inside {
            push_piece(out, Piece::Reasoning(rest));
        } else {
            self.emit_text(&rest, out);
        }
    }

    fn emit_text(&mut self, text: &str, out: &mut Vec<Piece>) {
        let text = if self.started {
            text
        } else {
            text.trim_start()
        };
        if text.is_empty() {
            return;
        }
        self.started = true;
        push_piece(out, Piece::Text(text.to_string()));
    }
}

fn push_piece(out: &mut Vec<Piece>, piece: Piece) {
    let empty = match &piece {
        Piece::Text(t) | Piece::Reasoning(t) => t.is_empty(),
    };
    if !empty {
        out.push(piece);
    }
}

/// The length of the longest suffix of `buf` that is a proper prefix of `tag` (a tag that may
/// be completed by the next delta). Tags are ASCII, so the cut is a char boundary.
fn partial_tag_len(buf: &str, tag: &str) -> usize {
    let bytes = buf.as_bytes();
    (1..tag.len())
        .rev()
        .find(|&n| n <= bytes.len() && tag.as_bytes().starts_with(&bytes[bytes.len() - n..]))
        .unwrap_or(0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn split(chunks: &[&str]) -> (String, String) {
        let mut s = ThinkSplitter::new();
        let mut out = Vec::new();
        for c in chunks {
            s.push(c, &mut out);
        }
        s.finish(&mut out);
        let mut text = String::new();
        let mut reasoning = String::new();
        for p in out {
            match p {
                Piece::Text(t) => text.push_str(&t),
                Piece::Reasoning(r) => reasoning.push_str(&r),
            }
        }
        (text, reasoning)
    }

    #[test]
    fn a_think_block_at_the_start_is_reasoning_and_the_answer_is_text() {
        let (text, reasoning) = split(&["<think>\nthe user wants x\n</think>\n\nHere is x."]);
        assert_eq!(text, "Here is x.");
        assert_eq!(reasoning, "\nthe user wants x\n");
    }

    #[test]
    fn tags_split_across_deltas_are_recognised() {
        let (text, reasoning) = split(&["\n<th", "ink>hm", "m</thi", "nk>", "ok"]);
        assert_eq!((text.as_str(), reasoning.as_str()), ("ok", "hmm"));
    }

    #[test]
    fn a_tag_after_the_answer_started_is_literal_text() {
        let (text, reasoning) = split(&["Use a <think> tag like <think>this</think>."]);
        assert_eq!(text, "Use a <think> tag like <think>this</think>.");
        assert!(reasoning.is_empty());
    }

    #[test]
    fn plain_text_passes_through_and_an_unclosed_block_stays_reasoning() {
        assert_eq!(
            split(&["hello ", "world"]),
            ("hello world".into(), String::new())
        );
        assert_eq!(
            split(&["<think>cut off"]),
            (String::new(), "cut off".into())
        );
        assert_eq!(split(&["<thin"]), ("<thin".into(), String::new()));
    }

    proptest! {
        #[test]
        fn every_chunking_routes_the_same_text(cuts in proptest::collection::vec(0usize..60, 0..8)) {
            let whole = "  <think>plan: read a.rs, then b</think>\n\nDone: a < b and </think> stays.";
            let mut points: Vec<usize> = cuts.into_iter().map(|c| c.min(whole.len())).collect();
            points.sort_unstable();
            let mut chunks = Vec::new();
            let mut last = 0;
            for p in points {
                chunks.push(&whole[last..p]);
                last = p;
            }
            chunks.push(&whole[last..]);
            prop_assert_eq!(
                split(&chunks),
                ("Done: a < b and </think> stays.".to_string(), "plan: read a.rs, then b".to_string())
            );
        }
    }
}
