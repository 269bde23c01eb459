//! LSP's base protocol: each message is a header block (`Content-Length: N`, an optional
//! `Content-Type`, a blank line) and N bytes of JSON.
//!
//! pablo frames messages itself rather than through a crate: it is forty lines, and the bound
//! matters more than the parsing — a server is a program that runs the project's code, so a
//! header that never ends or a length of gigabytes is refused before anything is allocated.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

/// The largest message pablo accepts from a server (a workspace's symbol list can be megabytes).
pub const MAX_MESSAGE_BYTES: usize = 32 << 20;
/// The longest header line; real ones are under 60 bytes.
const MAX_HEADER_LINE: usize = 1024;

/// Why the stream from a server cannot be read any further.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    #[error("the server's output ended")]
    Closed,
    #[error("the server sent a malformed header: {0}")]
    BadHeader(String),
    #[error("the server sent a message of {0} bytes, over the limit of {MAX_MESSAGE_BYTES}")]
    TooLarge(usize),
    #[error("reading the server's output failed: {0}")]
    Io(String),
}

/// One message's bytes, or end of stream (`Closed`).
pub async fn read_message<R: AsyncBufRead + Unpin>(r: &mut R) -> Result<Vec<u8>, FrameError> {
    let mut length = None;
    loop {
        let mut line = Vec::new();
        let n = (&mut *r)
            .take(MAX_HEADER_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await
            .map_err(|e| FrameError::Io(e.to_string()))?;
        if n == 0 {
            return Err(FrameError::Closed);
        }
        if !line.ends_with(b"\n") {
            return Err(FrameError::BadHeader("a header line without an end".into()));
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            break;
        }
        let Some((name, value)) = text.split_once(':') else {
            return Err(FrameError::BadHeader(format!("{text:?}")));
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            let n: usize = value
                .trim()
                .parse()
                .map_err(|_| FrameError::BadHeader(format!("{text:?}")))?;
            length = Some(n);
        }
    }
    let length = length.ok_or_else(|| FrameError::BadHeader("no Content-Length".into()))?;
    if length > MAX_MESSAGE_BYTES {
        return Err(FrameError::TooLarge(length));
    }
    let mut body = vec![0; length];
    r.read_exact(&mut body)
        .await
        .map_err(|e| FrameError::Io(e.to_string()))?;
    Ok(body)
}

/// `body` framed for a server's stdin.
pub fn encode(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read_all(bytes: &[u8]) -> Vec<Result<Vec<u8>, FrameError>> {
        let mut r = tokio::io::BufReader::new(bytes);
        let mut out = Vec::new();
        loop {
            let m = read_message(&mut r).await;
            let end = m.is_err();
            out.push(m);
            if end {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn two_framed_messages_read_back_in_order_then_closed() {
        let mut bytes = encode(b"{\"a\":1}");
        bytes.extend(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n");
        bytes.extend(encode(b"[]"));
        let got = read_all(&bytes).await;
        assert_eq!(got[0], Ok(b"{\"a\":1}".to_vec()));
        assert_eq!(got[1], Ok(b"[]".to_vec()));
        assert_eq!(got[2], Err(FrameError::Closed));
    }

    #[tokio::test]
    async fn a_huge_length_is_refused_before_allocating() {
        let got = read_all(b"Content-Length: 99999999999\r\n\r\n").await;
        assert_eq!(got[0], Err(FrameError::TooLarge(99_999_999_999)));
    }

    #[tokio::test]
    async fn an_endless_header_line_and_a_missing_length_are_refused() {
        let long = vec![b'x'; 5000];
        assert!(matches!(
            read_all(&long).await[0],
            Err(FrameError::BadHeader(_))
        ));
        let got = read_all(b"X-Other: 1\r\n\r\n{}").await;
        assert!(matches!(got[0], Err(FrameError::BadHeader(_))));
    }
}
