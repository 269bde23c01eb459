//! SSE framing over arbitrary bytes: no input may panic, hold more than the limit, or frame
//! differently when it arrives in other pieces.
//!
//! The first two bytes choose the limit and where the rest is cut; the rest is the stream. The
//! same property runs in `cargo test` (`model::sse_frame` tests) with a bounded number of cases.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pablo::harness::sse_frame_in_pieces;

fuzz_target!(|data: &[u8]| {
    let [max, piece, rest @ ..] = data else {
        return;
    };
    let max = usize::from(*max) * 16 + 1;
    let whole = sse_frame_in_pieces(rest, rest.len(), max);
    let pieces = sse_frame_in_pieces(rest, usize::from(*piece), max);
    assert_eq!(whole, pieces);
});
