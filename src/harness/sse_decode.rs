//! What `benches/sse_decode.rs` and `fuzz/fuzz_targets/sse_frame.rs` run: the client's SSE
//! decoding path and its framing alone; see [`super`].

use bytes::Bytes;
use futures::StreamExt;
use futures::executor::block_on;

use crate::model::StreamEvent;
use crate::model::openai::OpenAiDecoder;
use crate::model::sse::{ByteError, decode};
use crate::model::sse_frame::{FrameError, SseEvent, SseParser};

/// Decodes `chunks` as an OpenAI Chat Completions stream, through the same path the client uses,
/// and returns the bytes of tool-call arguments it yields.
///
/// # Panics
/// When the stream fails to decode (the bench's stream is well formed).
pub fn sse_decode_openai(chunks: Vec<Bytes>) -> usize {
    let bytes = futures::stream::iter(chunks.into_iter().map(Ok::<_, ByteError>));
    let events = decode(bytes, OpenAiDecoder::new("openai"), usize::MAX);
    block_on(events.fold(0usize, |n, e| async move {
        match e {
            Ok(StreamEvent::ToolCall(c)) => n + c.arguments.len(),
            Ok(_) => n,
            Err(f) => panic!("decode failed: {f:?}"),
        }
    }))
}

/// Frames `chunks` with pablo's parser (no limit) and returns the data bytes it dispatched.
///
/// # Panics
/// When framing fails, which without a limit it cannot.
pub fn sse_frame_data_bytes(chunks: &[Bytes]) -> usize {
    let mut parser = SseParser::new(usize::MAX);
    let mut out = Vec::new();
    let mut n = 0;
    for c in chunks {
        parser
            .feed(c, &mut out)
            .expect("framing without a limit cannot fail");
        n += out.drain(..).map(|e| e.data.len()).sum::<usize>();
    }
    n
}

/// What framing a stream gave: its events, and the refusal that stopped it, if one did.
#[derive(Debug, PartialEq)]
pub struct SseFramed {
    events: Vec<SseEvent>,
    error: Option<FrameError>,
}

/// Frames `bytes` arriving in pieces of `piece` bytes, with the limit `max`.
///
/// # Panics
/// When the parser ever holds more than `max` bytes (the property the fuzz target checks).
pub fn sse_frame_in_pieces(bytes: &[u8], piece: usize, max: usize) -> SseFramed {
    let mut parser = SseParser::new(max);
    let mut events = Vec::new();
    for chunk in bytes.chunks(piece.max(1)) {
        if let Err(e) = parser.feed(chunk, &mut events) {
            return SseFramed {
                events,
                error: Some(e),
            };
        }
        assert!(
            parser.held() <= max,
            "{} bytes held over {max}",
            parser.held()
        );
    }
    SseFramed {
        events,
        error: None,
    }
}
