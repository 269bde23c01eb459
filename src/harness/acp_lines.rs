//! What `fuzz/fuzz_targets/acp_lines.rs` frames: the ACP transport's lines; see [`super`].

use crate::acp::transport::{Framed, frame_all};

/// One line of what a client sent, as the transport framed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcpLine {
    /// A message, as it goes on to the protocol (an `initialize` may be rewritten).
    Message(String),
    /// A refusal and its code (too long, not UTF-8).
    Unreadable(&'static str),
}

/// Every line of `input`, framed with the limit `max`.
pub fn acp_frame_lines(input: &[u8], max: usize) -> Vec<AcpLine> {
    frame_all(input, max)
        .into_iter()
        .map(|f| match f {
            Framed::Message(m) => AcpLine::Message(m),
            Framed::Unreadable { code, .. } => AcpLine::Unreadable(code),
        })
        .collect()
}
