//! From response bytes to [`StreamEvent`]s: the decoding path both providers share.
//!
//! Bytes go through the SSE framing ([`super::sse_frame`]), each SSE event through a provider's
//! [`SseDecoder`], and out come provider-neutral events. The same [`decode`] function serves the
//! live client and the benchmark, so the figure in BENCHMARKS.md is the cost of the real path.
//!
//! Two details matter for robustness. The framing is linear in the bytes and refuses an event
//! larger than the session's model-output limit (`limits.max_model_output_bytes`, 4 MiB by
//! default) with `model_output_too_large`, so a server that never ends a line can cost neither
//! quadratic time nor unbounded memory. And the idle timeout ([`idle_guard`]) watches bytes, not
//! events, so keep-alive comments count as life.

use std::collections::VecDeque;
use std::fmt::Display;
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};

use super::sse_frame::{FrameError, SseParser};
use super::{ModelError, StreamEvent};

pub use super::sse_frame::SseEvent;

/// A provider's interpretation of SSE events.
pub trait SseDecoder: Send {
    /// Handles one SSE event, appending whatever it completes to `out`.
    fn event(&mut self, event: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), DecodeFailure>;

    /// True once the provider's terminal event has been handled; the stream is then complete.
    fn finished(&self) -> bool;

    /// The provider name for messages.
    fn provider(&self) -> &str;
}

/// Why decoding stopped early.
#[derive(Debug, Clone)]
pub enum DecodeFailure {
    /// The provider reported an error that is worth retrying if nothing was streamed yet
    /// (Anthropic's `overloaded_error`).
    Retryable(ModelError),
    /// Anything else the provider or the bytes said that ends the call.
    Fatal(ModelError),
    /// The body ended (or broke) before the terminal event.
    Cut,
    /// No bytes for the idle timeout.
    Idle(Duration),
}

/// What can go wrong below the SSE layer.
#[derive(Debug, Clone)]
pub enum ByteError {
    /// The connection failed while reading the body.
    Transport(String),
    /// Nothing arrived for this long.
    Idle(Duration),
}

impl Display for ByteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ByteError::Transport(m) => f.write_str(m),
            ByteError::Idle(d) => write!(f, "no data for {} s", d.as_secs()),
        }
    }
}

/// Ends a byte stream with [`ByteError::Idle`] when no chunk arrives within `idle`.
pub fn idle_guard<S, E>(
    bytes: S,
    idle: Duration,
) -> impl Stream<Item = Result<Bytes, ByteError>> + Send + 'static
where
    S: Stream<Item = Result<Bytes, E>> + Send + Unpin + 'static,
    E: Display,
{
    futures::stream::unfold(Some(bytes), move |state| async move {
        let mut bytes = state?;
        match tokio::time::timeout(idle, bytes.next()).await {
            Ok(Some(Ok(b))) => Some((Ok(b), Some(bytes))),
            Ok(Some(Err(e))) => Some((Err(ByteError::Transport(e.to_string())), None)),
            Ok(None) => None,
            Err(_) => Some((Err(ByteError::Idle(idle)), None)),
        }
    })
}

/// Decodes a byte stream with `decoder`. The stream yields events until the decoder reports its
/// terminal event (then it ends), or yields one [`DecodeFailure`] and ends. A body that ends
/// before the terminal event yields [`DecodeFailure::Cut`]; an SSE event larger than
/// `max_event_bytes` yields [`ModelError::OutputTooLarge`].
pub fn decode<S, D>(
    bytes: S,
    decoder: D,
    max_event_bytes: usize,
) -> impl Stream<Item = Result<StreamEvent, DecodeFailure>> + Send
where
    S: Stream<Item = Result<Bytes, ByteError>> + Send + 'static,
    D: SseDecoder,
{
    let state = DecodeState {
        bytes: Box::pin(bytes),
        parser: SseParser::new(max_event_bytes),
        decoder,
        framed: Vec::new(),
        ready: VecDeque::new(),
        scratch: Vec::new(),
        failure: None,
        done: false,
    };
    futures::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(ev) = st.ready.pop_front() {
                return Some((Ok(ev), st));
            }
            if let Some(f) = st.failure.take() {
                return Some((Err(f), st));
            }
            if st.done {
                return None;
            }
            if st.decoder.finished() {
                st.done = true;
                continue;
            }
            let failure = match st.bytes.next().await {
                Some(Ok(chunk)) => {
                    let framed = st.parser.feed(&chunk, &mut st.framed);
                    // Events completed before a framing error are still decoded and delivered.
                    let decoded = st.decode_framed();
                    match (framed, decoded) {
                        (Ok(()), Ok(())) => continue,
                        (_, Err(f)) => f,
                        (Err(e), Ok(())) => st.frame_failure(e),
                    }
                }
                Some(Err(ByteError::Idle(d))) => DecodeFailure::Idle(d),
                Some(Err(ByteError::Transport(_))) | None => DecodeFailure::Cut,
            };
            // Events completed before the failure are still delivered, then the failure.
            st.done = true;
            st.failure = Some(failure);
        }
    })
}

struct DecodeState<D> {
    bytes: std::pin::Pin<Box<dyn Stream<Item = Result<Bytes, ByteError>> + Send>>,
    parser: SseParser,
    decoder: D,
    /// SSE events framed and not yet decoded.
    framed: Vec<SseEvent>,
    ready: VecDeque<StreamEvent>,
    scratch: Vec<StreamEvent>,
    failure: Option<DecodeFailure>,
    done: bool,
}

impl<D: SseDecoder> DecodeState<D> {
    /// Hands the framed events to the decoder, stopping at its terminal event or its first
    /// failure (what follows either is never read).
    fn decode_framed(&mut self) -> Result<(), DecodeFailure> {
        let mut out = std::mem::take(&mut self.scratch);
        let mut result = Ok(());
        for event in self.framed.drain(..) {
            if self.decoder.finished() {
                break;
            }
            result = self.decoder.event(&event, &mut out);
            self.ready.extend(out.drain(..));
            if result.is_err() {
                break;
            }
        }
        self.framed.clear();
        self.scratch = out;
        result
    }

    fn frame_failure(&self, e: FrameError) -> DecodeFailure {
        DecodeFailure::Fatal(match e {
            FrameError::TooLarge { limit } => ModelError::OutputTooLarge { limit },
            FrameError::NotUtf8 { .. } => ModelError::Malformed {
                provider: self.decoder.provider().to_string(),
                message: e.to_string(),
            },
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use futures::executor::block_on;

    use super::*;
    use crate::openai::OpenAiDecoder;
    use crate::{ModelStopReason, ToolCall};

    fn stream_text() -> String {
        let mut s = String::from(": keep-alive comment\n\n");
        for part in ["Grüße, ", "naïve ", "😀 ", "done"] {
            s.push_str(&format!(
                "data: {}\n\n",
                serde_json::json!({"choices":[{"index":0,"delta":{"content":part}}]})
            ));
        }
        for frag in ["{\"pa", "th\":\"é", "\"}"] {
            s.push_str(&format!(
                "data: {}\r\n\r\n",
                serde_json::json!({"choices":[{"index":0,"delta":{"tool_calls":[
                    {"index":0,"id":"c","function":{"name":"fs_read","arguments":frag}}]}}]})
            ));
        }
        s.push_str(
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        );
        s.push_str("data: [DONE]\n\n");
        s
    }

    fn run(chunks: Vec<Vec<u8>>) -> Vec<Result<StreamEvent, String>> {
        let bytes = futures::stream::iter(chunks.into_iter().map(|c| Ok(Bytes::from(c))));
        block_on(
            decode(bytes, OpenAiDecoder::new("openai"), 4 * 1024 * 1024)
                .map(|r| r.map_err(|e| format!("{e:?}")))
                .collect(),
        )
    }

    fn expected() -> Vec<Result<StreamEvent, String>> {
        vec![
            Ok(StreamEvent::TextDelta("Grüße, ".into())),
            Ok(StreamEvent::TextDelta("naïve ".into())),
            Ok(StreamEvent::TextDelta("😀 ".into())),
            Ok(StreamEvent::TextDelta("done".into())),
            Ok(StreamEvent::ToolCall(ToolCall {
                id: "c".into(),
                name: "fs_read".into(),
                arguments: "{\"path\":\"é\"}".into(),
            })),
            Ok(StreamEvent::Completed {
                stop_reason: ModelStopReason::ToolUse,
            }),
        ]
    }

    #[test]
    fn every_chunking_of_the_bytes_decodes_to_the_same_events() {
        let text = stream_text().into_bytes();
        // One chunk, larger than the parse slice once repeated below, and every split point
        // (including inside multi-byte characters and between CR and LF).
        assert_eq!(run(vec![text.clone()]), expected());
        for cut in 1..text.len() {
            let chunks = vec![text[..cut].to_vec(), text[cut..].to_vec()];
            assert_eq!(run(chunks), expected(), "split at byte {cut}");
        }
        let singles: Vec<Vec<u8>> = text.iter().map(|b| vec![*b]).collect();
        assert_eq!(run(singles), expected());
    }

    #[test]
    fn a_chunk_of_many_lines_is_decoded_whole() {
        let filler = format!(": {}\n\n", "x".repeat(64 * 1024)).repeat(4);
        let text = format!("{filler}{}", stream_text()).into_bytes();
        assert_eq!(run(vec![text]), expected());
    }

    #[test]
    fn a_body_ending_before_done_is_cut_after_the_events_it_completed() {
        let text = stream_text();
        let cut = text.find("data: [DONE]").unwrap();
        let out = run(vec![text.as_bytes()[..cut].to_vec()]);
        assert_eq!(out[..5], expected()[..5]);
        assert_eq!(out.len(), 6);
        assert!(out[5].as_ref().is_err_and(|e| e == "Cut"), "{:?}", out[5]);
    }

    #[test]
    fn invalid_utf8_is_a_malformed_response() {
        let mut text = b"data: {\"choices\":[]}\n\n".to_vec();
        text.extend_from_slice(b"data: \xff\xfe\n\n");
        let out = run(vec![text]);
        assert!(
            out.last()
                .unwrap()
                .as_ref()
                .is_err_and(|e| e.contains("Malformed") && e.contains("not UTF-8")),
            "{out:?}"
        );
    }
}
