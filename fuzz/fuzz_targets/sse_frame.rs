//! SSE framing over arbitrary bytes: no input may panic, hold more than the limit, or frame
//! differently when it arrives in other pieces.
//!
//! The first two bytes choose the limit and where the rest is cut; the rest is the stream. The
//! same property runs in `cargo test` (`model::sse_frame` tests) with a bounded number of cases.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pablo_model::sse_frame::{FrameError, SseEvent, SseParser};

/// What framing a stream gave: its events, and the refusal that stopped it, if one did.
#[derive(Debug, PartialEq)]
struct SseFramed {
    events: Vec<SseEvent>,
    error: Option<FrameError>,
}

/// Frames `bytes` arriving in pieces of `piece` bytes, with the limit `max`; panics when the
/// parser ever holds more than `max` bytes.
fn sse_frame_in_pieces(bytes: &[u8], piece: usize, max: usize) -> SseFramed {
    let mut parser = SseParser::new(max);
    let mut events = Vec::new();
    for chunk in bytes.chunks(piece.max(1)) {
        if let Err(e) = parser.feed(chunk, &mut events) {
            return SseFramed {
                events,
                error: Some(e),
            };
        }
        assert!(parser.held() <= max, "{} bytes held over {max}", parser.held());
    }
    SseFramed {
        events,
        error: None,
    }
}

fuzz_target!(|data: &[u8]| {
    let [max, piece, rest @ ..] = data else {
        return;
    };
    let max = usize::from(*max) * 16 + 1;
    let whole = sse_frame_in_pieces(rest, rest.len(), max);
    let pieces = sse_frame_in_pieces(rest, usize::from(*piece), max);
    assert_eq!(whole, pieces);
});
