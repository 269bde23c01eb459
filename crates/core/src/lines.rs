//! Newline-delimited messages read from bytes that are never trusted: the one framer of the
//! JSON-RPC that runs over stdio lines, ACP from an editor (`acp::transport`) and MCP from a
//! server's stdout (`tools::mcp::client`).
//!
//! Both read a peer that may send a line without an end, or bytes that are not UTF-8. Reading
//! with `AsyncBufReadExt::lines` buffered a line without limit and ended the stream on the first
//! byte that was not UTF-8; here a line is read as bytes, at most `max` of them are kept, a
//! longer line is consumed to its end and reported as [`LineRead::TooLong`], and each byte is
//! looked at once (`memchr` per buffer). What a caller does with a line it cannot use is its
//! own: ACP answers it with a parse error, MCP fails a server that printed it before its first
//! message.
//!
//! The other framers pablo has are not this one and stay apart: LSP's `Content-Length` headers
//! (`lsp::frame`), the shell parser helper's 4-byte length prefix (`policy::shell_helper`) and a
//! model's server-sent events (`model::sse_frame`), each bounded in its own module.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// One read of a peer's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineRead {
    /// A whole line is in the buffer (its `\n`, if any, included).
    Line,
    /// A line longer than the limit went by; nothing of it was kept.
    TooLong,
    /// The peer closed its end.
    End,
}

/// Reads one line into `buf` (cleared first), keeping at most `max` bytes of it (its own `\n`
/// does not count): a longer line is consumed to its end and reported as
/// [`LineRead::TooLong`]. A last line without a `\n` is a line.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<LineRead> {
    buf.clear();
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (too_long, buf.is_empty()) {
                (true, _) => LineRead::TooLong,
                (false, true) => LineRead::End,
                (false, false) => LineRead::Line,
            });
        }
        let (take, done) = match memchr::memchr(b'\n', available) {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        if !too_long {
            let content = buf.len() + take - usize::from(done);
            if content > max {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(&available[..take]);
            }
        }
        reader.consume(take);
        if done {
            return Ok(if too_long {
                LineRead::TooLong
            } else {
                LineRead::Line
            });
        }
    }
}

/// A line without its `\n` and a `\r` before it.
pub fn content(line: &[u8]) -> &[u8] {
    let text = line.strip_suffix(b"\n").unwrap_or(line);
    text.strip_suffix(b"\r").unwrap_or(text)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    async fn lines(input: &[u8], max: usize) -> Vec<(LineRead, Vec<u8>)> {
        // A small buffer, so that lines span several reads.
        let mut reader = BufReader::with_capacity(7, input);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            let r = read_line(&mut reader, &mut buf, max).await.unwrap();
            if r == LineRead::End {
                return out;
            }
            out.push((r, buf.clone()));
        }
    }

    #[tokio::test]
    async fn lines_are_read_whole_up_to_the_limit_and_a_longer_one_is_skipped_to_its_end() {
        let got = lines(b"short\n0123456789abc\nok\nlast", 10).await;
        assert_eq!(
            got,
            vec![
                (LineRead::Line, b"short\n".to_vec()),
                (LineRead::TooLong, vec![]),
                (LineRead::Line, b"ok\n".to_vec()),
                (LineRead::Line, b"last".to_vec()),
            ]
        );
        // Exactly the limit fits, with or without its newline.
        assert_eq!(lines(b"0123456789\n", 10).await[0].0, LineRead::Line);
        assert_eq!(lines(b"0123456789", 10).await[0].0, LineRead::Line);
        assert_eq!(lines(b"0123456789a", 10).await[0].0, LineRead::TooLong);
        // A line that ends the input over the limit is refused too.
        assert_eq!(lines(b"ok\n0123456789a", 10).await[1].0, LineRead::TooLong);
    }

    #[test]
    fn a_lines_content_has_no_line_end() {
        assert_eq!(content(b"{}\r\n"), b"{}");
        assert_eq!(content(b"{}\n"), b"{}");
        assert_eq!(content(b"{}"), b"{}");
        assert_eq!(content(b"a\rb\n"), b"a\rb");
    }
}
