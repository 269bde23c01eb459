//! From response bytes to [`StreamEvent`]s: the decoding path both providers share.
//!
//! Bytes go through the `eventsource-stream` SSE parser, each SSE event through a provider's
//! [`SseDecoder`], and out come provider-neutral events. The same [`decode`] function serves the
//! live client and the benchmark, so the figure in BENCHMARKS.md is the cost of the real path.
//!
//! Two details matter for robustness. The SSE parser re-copies its buffer once per line, so a
//! large network chunk full of short lines costs time quadratic in the chunk size; [`decode`]
//! slices chunks to at most [`MAX_PARSE_CHUNK`] bytes first, which bounds that copy. And the idle
//! timeout ([`idle_guard`]) watches bytes, not events, so keep-alive comments count as life.

use std::collections::VecDeque;
use std::fmt::Display;
use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::{EventStreamError, Eventsource};
use futures::{Stream, StreamExt};

use super::{ModelError, StreamEvent};

/// Largest slice of bytes handed to the SSE parser at once (see the module docs).
pub const MAX_PARSE_CHUNK: usize = 8 * 1024;

/// A provider's interpretation of SSE events.
pub trait SseDecoder: Send {
    /// Handles one SSE event, appending whatever it completes to `out`.
    fn event(
        &mut self,
        event: &eventsource_stream::Event,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeFailure>;

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
/// before the terminal event yields [`DecodeFailure::Cut`].
pub fn decode<S, D>(
    bytes: S,
    decoder: D,
) -> impl Stream<Item = Result<StreamEvent, DecodeFailure>> + Send
where
    S: Stream<Item = Result<Bytes, ByteError>> + Send + 'static,
    D: SseDecoder,
{
    let sliced = bytes.flat_map(|item| {
        let pieces: Vec<Result<Bytes, ByteError>> = match item {
            Ok(b) if b.len() > MAX_PARSE_CHUNK => (0..b.len())
                .step_by(MAX_PARSE_CHUNK)
                .map(|i| Ok(b.slice(i..(i + MAX_PARSE_CHUNK).min(b.len()))))
                .collect(),
            other => vec![other],
        };
        futures::stream::iter(pieces)
    });
    let state = DecodeState {
        events: Box::pin(sliced.eventsource()),
        decoder,
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
            let failure = match st.events.next().await {
                Some(Ok(event)) => {
                    let mut out = std::mem::take(&mut st.scratch);
                    let r = st.decoder.event(&event, &mut out);
                    st.ready.extend(out.drain(..));
                    st.scratch = out;
                    match r {
                        Ok(()) => continue,
                        Err(f) => f,
                    }
                }
                Some(Err(EventStreamError::Transport(ByteError::Idle(d)))) => {
                    DecodeFailure::Idle(d)
                }
                Some(Err(EventStreamError::Transport(ByteError::Transport(_)))) | None => {
                    DecodeFailure::Cut
                }
                Some(Err(EventStreamError::Utf8(e))) => {
                    DecodeFailure::Fatal(ModelError::Malformed {
                        provider: st.decoder.provider().to_string(),
                        message: format!("the event stream is not UTF-8: {e}"),
                    })
                }
                Some(Err(EventStreamError::Parser(e))) => {
                    DecodeFailure::Fatal(ModelError::Malformed {
                        provider: st.decoder.provider().to_string(),
                        message: format!("the event stream cannot be parsed: {e}"),
                    })
                }
            };
            // Events completed before the failure are still delivered, then the failure.
            st.done = true;
            st.failure = Some(failure);
        }
    })
}

struct DecodeState<D> {
    events: std::pin::Pin<
        Box<
            dyn Stream<Item = Result<eventsource_stream::Event, EventStreamError<ByteError>>>
                + Send,
        >,
    >,
    decoder: D,
    ready: VecDeque<StreamEvent>,
    scratch: Vec<StreamEvent>,
    failure: Option<DecodeFailure>,
    done: bool,
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use futures::executor::block_on;

    use super::*;
    use crate::model::openai::OpenAiDecoder;
    use crate::model::{ModelStopReason, ToolCall};

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
            decode(bytes, OpenAiDecoder::new("openai"))
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
    fn a_chunk_larger_than_the_parse_slice_is_decoded_whole() {
        let filler = format!(": {}\n\n", "x".repeat(MAX_PARSE_CHUNK * 3));
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
