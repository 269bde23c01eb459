//! SSE framing over arbitrary bytes: no input may panic, hold more than the limit, or frame
//! differently when it arrives in other pieces.
//!
//! The first two bytes choose the limit and where the rest is cut; the rest is the stream. The
//! same property runs in `cargo test` (`model::sse_frame` tests) with a bounded number of cases.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pablo::model::sse_frame::{FrameError, SseEvent, SseParser};

fn frame(bytes: &[u8], piece: usize, max: usize) -> (Vec<SseEvent>, Option<FrameError>) {
    let mut parser = SseParser::new(max);
    let mut out = Vec::new();
    for chunk in bytes.chunks(piece.max(1)) {
        if let Err(e) = parser.feed(chunk, &mut out) {
            return (out, Some(e));
        }
        assert!(parser.held() <= max, "{} bytes held over {max}", parser.held());
    }
    (out, None)
}

fuzz_target!(|data: &[u8]| {
    let [max, piece, rest @ ..] = data else {
        return;
    };
    let max = usize::from(*max) * 16 + 1;
    let whole = frame(rest, rest.len(), max);
    let pieces = frame(rest, usize::from(*piece), max);
    assert_eq!(whole, pieces);
});
