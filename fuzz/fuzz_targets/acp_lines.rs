//! The ACP transport's framing over arbitrary bytes: no input may panic, and every line becomes
//! exactly one message (UTF-8, within the limit) or one refusal.
//!
//! The first byte chooses the limit; the rest is what a client sends. The same property runs in
//! `cargo test` (`acp::transport` tests) with a bounded number of cases.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pablo_acp::transport::{Framed, frame_all};

fuzz_target!(|data: &[u8]| {
    let [max, rest @ ..] = data else {
        return;
    };
    let max = usize::from(*max);
    let framed = frame_all(rest, max);
    let mut lines: Vec<&[u8]> = rest.split(|b| *b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    assert_eq!(framed.len(), lines.len());
    for (frame, line) in framed.iter().zip(&lines) {
        let text = line.strip_suffix(b"\r").unwrap_or(line);
        match frame {
            Framed::Message(m) => {
                assert!(line.len() <= max);
                // An `initialize` may be rewritten to version 1; anything else passes as it is.
                if !m.contains("\"initialize\"") {
                    assert_eq!(m.as_bytes(), text);
                }
            }
            Framed::Unreadable { code, .. } => {
                assert!(line.len() > max || std::str::from_utf8(text).is_err(), "{code}");
            }
        }
    }
});
