//! Server-sent events framing: bytes in, events out, in time linear in the bytes and in memory
//! bounded by one limit.
//!
//! A provider's answer is an SSE body, and the body is untrusted input: a proxy or a broken
//! server can send one `data:` line of many megabytes without a newline. The crate pablo used
//! before (`eventsource-stream`) parsed its whole buffer again for every chunk that arrived, so
//! such a line cost time quadratic in its length (20 MiB took 33 s of CPU, 40 MiB 128 s), and it
//! buffered without a limit. `sse-stream` also buffers without a limit, and refuses lines the
//! format allows (a field name without a colon). The format itself is small (WHATWG HTML,
//! "Server-sent events", the event stream interpretation), so this parser follows it directly:
//! every byte is looked at once (`memchr` finds the line ends) and copied at most twice (into
//! the unfinished line, then into the event's data), and the unfinished line plus the event's
//! data never exceed `max_event_bytes`.
//!
//! What pablo needs of an event is its type and its data; `id` and `retry` are read and
//! ignored (pablo never reconnects a model stream: a cut stream is an error, see
//! `model::http`).

/// One dispatched event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, `message` when the event had none.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Why the bytes cannot be framed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// One event (its unfinished line and the data gathered so far) passed the limit.
    TooLarge { limit: usize },
    /// A line is not UTF-8.
    NotUtf8 { line: u64, valid_up_to: usize },
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::TooLarge { limit } => {
                write!(f, "one event of the stream is larger than {limit} bytes")
            }
            FrameError::NotUtf8 { line, valid_up_to } => write!(
                f,
                "line {line} of the event stream is not UTF-8 (an invalid byte after {valid_up_to} bytes)"
            ),
        }
    }
}

/// The UTF-8 byte order mark a stream may begin with (ignored once, at the start).
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// An incremental SSE parser (see the module docs).
#[derive(Debug)]
pub struct SseParser {
    max_event_bytes: usize,
    /// The bytes of a line whose end has not arrived yet.
    line: Vec<u8>,
    /// The last line ended with CR: an LF at the start of the next chunk belongs to it.
    after_cr: bool,
    /// Lines completed so far (for messages).
    lines: u64,
    event: String,
    data: String,
    /// Whether a `data` field was seen since the last dispatch (an empty one counts).
    has_data: bool,
}

impl SseParser {
    pub fn new(max_event_bytes: usize) -> Self {
        Self {
            max_event_bytes,
            line: Vec::new(),
            after_cr: false,
            lines: 0,
            event: String::new(),
            data: String::new(),
            has_data: false,
        }
    }

    /// Parses `bytes`, the next piece of the stream, and appends every event it completes to
    /// `out`. After an error the parser must not be fed again.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), FrameError> {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', bytes) {
            if self.line.is_empty() {
                self.check_size(end)?;
                self.line_done(&bytes[..end], out)?;
            } else {
                self.check_size(self.line.len() + end)?;
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&bytes[..end]);
                self.line_done(&line, out)?;
                line.clear();
                self.line = line;
            }
            let cr = bytes[end] == b'\r';
            bytes = &bytes[end + 1..];
            if cr {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.check_size(self.line.len() + bytes.len())?;
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    /// The bytes held between calls (the unfinished line and the event's data so far): never
    /// more than the limit.
    pub fn held(&self) -> usize {
        self.line.len() + self.data.len()
    }

    #[cfg(test)]
    /// Whether an unfinished line (or an event not yet dispatched) is pending: the stream ended
    /// in the middle of something.
    pub fn pending(&self) -> bool {
        !self.line.is_empty() || self.has_data
    }

    /// An unfinished line of `line_bytes` bytes beside the data gathered so far must fit.
    fn check_size(&self, line_bytes: usize) -> Result<(), FrameError> {
        if line_bytes.saturating_add(self.data.len()) > self.max_event_bytes {
            return Err(FrameError::TooLarge {
                limit: self.max_event_bytes,
            });
        }
        Ok(())
    }

    /// Interprets one complete line (without its end).
    fn line_done(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), FrameError> {
        self.lines += 1;
        let line = match self.lines {
            1 => line.strip_prefix(BOM).unwrap_or(line),
            _ => line,
        };
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                let value = self.text(value)?;
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
                self.check_size(0)?;
            }
            b"event" => {
                let value = self.text(value)?;
                self.event.clear();
                self.event.push_str(value);
            }
            // `id`, `retry` and unknown fields change nothing pablo uses.
            _ => {}
        }
        Ok(())
    }

    fn text<'a>(&self, bytes: &'a [u8]) -> Result<&'a str, FrameError> {
        std::str::from_utf8(bytes).map_err(|e| FrameError::NotUtf8 {
            line: self.lines,
            valid_up_to: e.valid_up_to(),
        })
    }

    /// An empty line ends an event; an event without data is dropped, as the format says.
    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = std::mem::take(&mut self.event);
        if !std::mem::take(&mut self.has_data) {
            return;
        }
        out.push(SseEvent {
            event: if event.is_empty() {
                "message".into()
            } else {
                event
            },
            data: std::mem::take(&mut self.data),
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn parse(chunks: &[&[u8]], max: usize) -> Result<Vec<SseEvent>, FrameError> {
        let mut p = SseParser::new(max);
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, &mut out)?;
        }
        Ok(out)
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn fields_comments_and_every_line_end_are_read_as_the_format_says() {
        let text = b"\xEF\xBB\xBF: hello\r\nevent: delta\rdata: a\ndata:b\r\nid: 7\nretry: 10\n\n\
                     data\n\nevent: x\n\ndata: last\n\n";
        let want = vec![
            ev("delta", "a\nb"),
            ev("message", ""),
            ev("message", "last"),
        ];
        assert_eq!(parse(&[text], 1024).unwrap(), want);
        // Byte by byte, including a CR and its LF in two chunks.
        let singles: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(parse(&singles, 1024).unwrap(), want);
    }

    #[test]
    fn a_cr_at_the_end_of_a_chunk_does_not_make_the_next_lf_an_empty_line() {
        let out = parse(&[b"data: a\r", b"\ndata: b\n\n"], 64).unwrap();
        assert_eq!(out, vec![ev("message", "a\nb")]);
    }

    #[test]
    fn an_unterminated_line_past_the_limit_is_refused_without_buffering_it() {
        let chunk = vec![b'x'; 1000];
        let mut p = SseParser::new(4096);
        let mut out = Vec::new();
        p.feed(b"data: ", &mut out).unwrap();
        let mut fed = 6;
        let err = loop {
            match p.feed(&chunk, &mut out) {
                Ok(()) => fed += chunk.len(),
                Err(e) => break e,
            }
        };
        assert_eq!(err, FrameError::TooLarge { limit: 4096 });
        assert!(fed <= 4096, "{fed} bytes were buffered");
    }

    #[test]
    fn many_data_lines_of_one_event_count_together_against_the_limit() {
        let line = format!("data: {}\n", "y".repeat(100));
        let text = line.repeat(50);
        assert_eq!(
            parse(&[text.as_bytes()], 1000),
            Err(FrameError::TooLarge { limit: 1000 })
        );
        // Each event on its own fits.
        let text = format!("{line}\n").repeat(50);
        assert_eq!(parse(&[text.as_bytes()], 1000).unwrap().len(), 50);
    }

    #[test]
    fn invalid_utf8_in_a_field_is_an_error_naming_the_line() {
        let err = parse(&[b"data: ok\n\ndata: \xff\n\n"], 64).unwrap_err();
        assert_eq!(
            err,
            FrameError::NotUtf8 {
                line: 3,
                valid_up_to: 0
            }
        );
        // A comment is never decoded.
        assert_eq!(parse(&[b": \xff\n"], 64).unwrap(), vec![]);
    }

    #[test]
    fn the_end_of_the_stream_in_the_middle_of_an_event_is_pending() {
        let mut p = SseParser::new(64);
        let mut out = Vec::new();
        p.feed(b"data: a\n", &mut out).unwrap();
        assert!(p.pending());
        p.feed(b"\n", &mut out).unwrap();
        assert!(!p.pending());
        p.feed(b"dat", &mut out).unwrap();
        assert!(p.pending());
    }

    /// Properties over arbitrary input, run by `cargo test` with a bounded size and number of
    /// cases (the cargo-fuzz target `sse_frame` runs the first one for as long as it is given).
    mod properties {
        use proptest::prelude::*;

        use super::super::*;

        /// Feeds `bytes` in the pieces `cuts` make (positions taken modulo the length), checking
        /// after every piece that no more than `max` bytes are held.
        fn feed_in_pieces(
            bytes: &[u8],
            cuts: &[usize],
            max: usize,
        ) -> (Vec<SseEvent>, Option<FrameError>) {
            let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
            points.sort_unstable();
            points.push(bytes.len());
            let mut parser = SseParser::new(max);
            let mut out = Vec::new();
            let mut at = 0;
            for point in points {
                if let Err(e) = parser.feed(&bytes[at..point], &mut out) {
                    return (out, Some(e));
                }
                assert!(
                    parser.held() <= max,
                    "{} bytes held over a limit of {max}",
                    parser.held()
                );
                at = point;
            }
            (out, None)
        }

        /// Arbitrary bytes, mostly the ones the format gives a meaning to.
        fn stream_bytes() -> impl Strategy<Value = Vec<u8>> {
            let meaningful: Vec<u8> = b"data:event :\r\n\n\n x{}\xff\xc3\xa9\xef\xbb\xbf".to_vec();
            prop::collection::vec(
                prop_oneof![4 => prop::sample::select(meaningful), 1 => any::<u8>()],
                0..2048,
            )
        }

        /// One event: its type (empty: none given) and its data lines.
        fn events() -> impl Strategy<Value = Vec<(String, Vec<String>)>> {
            prop::collection::vec(
                ("[a-z_.]{0,8}", prop::collection::vec("[^\r\n]{0,24}", 1..4)),
                0..8,
            )
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

            #[test]
            fn any_bytes_in_any_pieces_frame_alike_and_within_the_limit(
                bytes in stream_bytes(),
                cuts in prop::collection::vec(any::<usize>(), 0..12),
                max in 1usize..600,
            ) {
                let whole = feed_in_pieces(&bytes, &[], max);
                let pieces = feed_in_pieces(&bytes, &cuts, max);
                prop_assert_eq!(whole, pieces);
            }

            #[test]
            fn events_written_with_any_line_ends_and_comments_are_read_back(
                events in events(),
                ends in prop::collection::vec(0usize..3, 8),
                comments in prop::collection::vec(any::<bool>(), 8),
                bom in any::<bool>(),
                cuts in prop::collection::vec(any::<usize>(), 0..12),
            ) {
                let mut text = String::new();
                if bom {
                    text.push('\u{feff}');
                }
                for (i, (name, lines)) in events.iter().enumerate() {
                    // One line end per event: a CR followed by an empty line ending in LF would
                    // be one CRLF, which is the format's own ambiguity, not the parser's.
                    let end = ["\n", "\r", "\r\n"][ends[i % ends.len()]];
                    if comments[i % comments.len()] {
                        text.push_str(&format!(": note {i}{end}"));
                    }
                    if !name.is_empty() {
                        text.push_str(&format!("event: {name}{end}"));
                    }
                    for l in lines {
                        text.push_str(&format!("data: {l}{end}"));
                    }
                    text.push_str(end);
                }
                let want: Vec<SseEvent> = events
                    .iter()
                    .map(|(name, lines)| SseEvent {
                        event: if name.is_empty() { "message".into() } else { name.clone() },
                        data: lines.join("\n"),
                    })
                    .collect();
                let (got, error) = feed_in_pieces(text.as_bytes(), &cuts, 1 << 20);
                prop_assert_eq!(error, None);
                prop_assert_eq!(got, want);
            }
        }
    }
}
