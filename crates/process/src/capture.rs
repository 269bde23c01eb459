//! Bounded capture of a command's output: the inline 40/60 view, the spill file, the live buffer.
//!
//! A command may print gigabytes; pablo must hold only a fixed amount of it. [`Capture`] keeps the
//! first 40% of the inline budget and a ring of the last 60%, counts everything, and copies the
//! first [`ARTIFACT_MAX_BYTES`] bytes to a file once the budget is exceeded, so the omitted middle
//! stays readable. Every buffer here has a fixed upper size, whatever the command prints.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

/// The spill file holds at most this many bytes of the stream.
pub const ARTIFACT_MAX_BYTES: u64 = 5_000_000;

/// How much of a live chunk is kept between two flushes to the front-end.
pub const LIVE_MAX_BYTES: usize = 16 * 1024;

/// Bytes kept at the head of the inline view: 40% of the budget, rounded down.
pub fn head_budget(max_bytes: usize) -> usize {
    max_bytes / 5 * 2 + (max_bytes % 5) * 2 / 5
}

/// Bytes kept at the tail of the inline view: the rest of the budget (60%, rounded up).
pub fn tail_budget(max_bytes: usize) -> usize {
    max_bytes - head_budget(max_bytes)
}

/// The length of the longest prefix of `bytes` that does not end inside a UTF-8 sequence.
///
/// Only a trailing, incomplete multi-byte sequence is cut; invalid bytes elsewhere are left for
/// lossy decoding, which replaces them one by one.
pub fn utf8_prefix_len(bytes: &[u8]) -> usize {
    let n = bytes.len();
    // A sequence is at most 4 bytes: look back at most 3 bytes for its lead byte.
    for back in 1..=n.min(3) {
        let b = bytes[n - back];
        if b & 0xC0 == 0x80 {
            continue; // continuation byte: keep looking for the lead
        }
        let need = if b >= 0xF0 {
            4
        } else if b >= 0xE0 {
            3
        } else if b >= 0xC0 {
            2
        } else {
            1
        };
        return if need > back { n - back } else { n };
    }
    n
}

/// How many leading bytes of `bytes` are continuation bytes of a sequence that began earlier.
pub fn utf8_skip_len(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(3)
        .take_while(|b| *b & 0xC0 == 0x80)
        .count()
}

/// The notice that replaces the omitted middle. The wording is the one the models know; the
/// numbers count bytes.
pub fn truncation_notice(omitted: u64, total: u64) -> String {
    format!("[OUTPUT TRUNCATED - {omitted} chars omitted out of {total} total]")
}

/// The inline view of a stream, built by [`Capture::finish`] or [`inline_view`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineView {
    /// Head and tail bytes with the notice between them when truncated (not yet decoded).
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
    pub total: u64,
    pub truncated: bool,
}

impl InlineView {
    /// Bytes omitted between head and tail.
    pub fn omitted(&self) -> u64 {
        self.total - self.head.len() as u64 - self.tail.len() as u64
    }

    /// The text given to the model: lossy UTF-8, with the notice on its own line when truncated.
    pub fn render(&self, clean: impl Fn(&[u8]) -> String) -> String {
        if !self.truncated {
            return clean(&self.head);
        }
        format!(
            "{}\n{}\n{}",
            clean(&self.head),
            truncation_notice(self.omitted(), self.total),
            clean(&self.tail)
        )
    }
}

#[cfg(test)]
/// The inline view of a complete buffer (used for small outputs and in tests).
pub fn inline_view(bytes: &[u8], max_bytes: usize) -> InlineView {
    if bytes.len() <= max_bytes {
        return InlineView {
            head: bytes.to_vec(),
            tail: Vec::new(),
            total: bytes.len() as u64,
            truncated: false,
        };
    }
    let head = &bytes[..head_budget(max_bytes)];
    let tail = &bytes[bytes.len() - tail_budget(max_bytes)..];
    InlineView {
        head: head[..utf8_prefix_len(head)].to_vec(),
        tail: tail[utf8_skip_len(tail)..].to_vec(),
        total: bytes.len() as u64,
        truncated: true,
    }
}

/// A fixed-size ring holding the most recent bytes of a stream.
#[derive(Debug)]
pub struct TailRing {
    buf: Vec<u8>,
    cap: usize,
    /// Next write position once the ring is full.
    pos: usize,
}

impl TailRing {
    pub fn new(cap: usize) -> Self {
        Self {
            buf: Vec::with_capacity(cap.min(1 << 20)),
            cap,
            pos: 0,
        }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        if self.cap == 0 {
            return;
        }
        if bytes.len() >= self.cap {
            // Only the last `cap` bytes can survive.
            bytes = &bytes[bytes.len() - self.cap..];
            self.buf.clear();
            self.buf.extend_from_slice(bytes);
            self.pos = 0;
            return;
        }
        if self.buf.len() < self.cap {
            let room = self.cap - self.buf.len();
            let now = bytes.len().min(room);
            self.buf.extend_from_slice(&bytes[..now]);
            bytes = &bytes[now..];
        }
        while !bytes.is_empty() {
            let now = bytes.len().min(self.cap - self.pos);
            self.buf[self.pos..self.pos + now].copy_from_slice(&bytes[..now]);
            self.pos = (self.pos + now) % self.cap;
            bytes = &bytes[now..];
        }
    }

    /// The retained bytes, oldest first.
    pub fn contents(&self) -> Vec<u8> {
        if self.buf.len() < self.cap {
            return self.buf.clone();
        }
        let mut out = Vec::with_capacity(self.cap);
        out.extend_from_slice(&self.buf[self.pos..]);
        out.extend_from_slice(&self.buf[..self.pos]);
        out
    }

    #[cfg(test)]
    /// Bytes of memory held (for the bounded-memory checks).
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }
}

/// The spill file: opened when the inline budget is first exceeded.
#[derive(Debug)]
enum Spill {
    NotNeeded,
    Open {
        path: PathBuf,
        out: BufWriter<File>,
        written: u64,
    },
    Failed(String),
}

/// The capture of one command's output stream.
#[derive(Debug)]
pub struct Capture {
    max_bytes: usize,
    head: Vec<u8>,
    head_cap: usize,
    tail: TailRing,
    total: u64,
    artifact_path: PathBuf,
    spill: Spill,
}

/// What a finished capture hands back.
#[derive(Debug)]
pub struct CaptureResult {
    pub view: InlineView,
    /// The spill file, when the output exceeded the budget and the file could be written.
    pub artifact: Option<PathBuf>,
    /// Why the spill file could not be written, if it could not.
    pub artifact_error: Option<String>,
}

impl Capture {
    /// `artifact_path` is only created if the output exceeds `max_bytes`.
    pub fn new(max_bytes: usize, artifact_path: PathBuf) -> Self {
        let head_cap = head_budget(max_bytes);
        Self {
            max_bytes,
            head: Vec::with_capacity(head_cap.min(1 << 20)),
            head_cap,
            tail: TailRing::new(tail_budget(max_bytes)),
            total: 0,
            artifact_path,
            spill: Spill::NotNeeded,
        }
    }

    /// How many of the latest bytes the tail ring keeps.
    pub fn tail_capacity(&self) -> usize {
        self.tail.cap
    }

    #[cfg(test)]
    /// Bytes of memory held by the capture's buffers; fixed by `max_bytes`, never by the stream.
    pub fn buffered_capacity(&self) -> usize {
        self.head.capacity() + self.tail.capacity()
    }

    pub fn push(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let before = self.total;
        self.total += bytes.len() as u64;
        if matches!(self.spill, Spill::NotNeeded) && self.total > self.max_bytes as u64 {
            // Everything seen so far still fits in head + tail (nothing was evicted yet), so the
            // spill file can start from byte 0.
            self.open_spill(before);
        }
        self.write_spill(bytes);
        let mut rest = bytes;
        if self.head.len() < self.head_cap {
            let now = rest.len().min(self.head_cap - self.head.len());
            self.head.extend_from_slice(&rest[..now]);
            rest = &rest[now..];
        }
        self.tail.push(rest);
    }

    /// The last `n` bytes of the stream, or as many of them as the capture still holds (the tail
    /// ring, and the end of the head while nothing between them was dropped).
    pub fn latest(&self, n: usize) -> Vec<u8> {
        let ring = self.tail.contents();
        if ring.len() >= n {
            return ring[ring.len() - n..].to_vec();
        }
        let held = (self.head.len() + ring.len()) as u64;
        if self.total > held {
            return ring;
        }
        let from_head = (n - ring.len()).min(self.head.len());
        let mut out = Vec::with_capacity(from_head + ring.len());
        out.extend_from_slice(&self.head[self.head.len() - from_head..]);
        out.extend_from_slice(&ring);
        out
    }

    fn open_spill(&mut self, seen: u64) {
        let path = self.artifact_path.clone();
        let opened = (|| -> std::io::Result<BufWriter<File>> {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let file = File::create(&path)?;
            let mut out = BufWriter::with_capacity(64 * 1024, file);
            out.write_all(&self.head)?;
            out.write_all(&self.tail.contents())?;
            Ok(out)
        })();
        self.spill = match opened {
            Ok(out) => Spill::Open {
                path,
                out,
                written: seen.min(ARTIFACT_MAX_BYTES),
            },
            Err(e) => Spill::Failed(format!("cannot write {}: {e}", path.display())),
        };
    }

    fn write_spill(&mut self, bytes: &[u8]) {
        let Spill::Open { out, written, path } = &mut self.spill else {
            return;
        };
        let room = ARTIFACT_MAX_BYTES.saturating_sub(*written);
        if room == 0 {
            return;
        }
        let now = (bytes.len() as u64).min(room) as usize;
        if let Err(e) = out.write_all(&bytes[..now]) {
            self.spill = Spill::Failed(format!("cannot write {}: {e}", path.display()));
            return;
        }
        *written += now as u64;
    }

    /// Ends the capture: flushes the spill file and builds the inline view.
    pub fn finish(mut self) -> CaptureResult {
        let spill = std::mem::replace(&mut self.spill, Spill::NotNeeded);
        let (artifact, artifact_error) = match spill {
            Spill::NotNeeded => (None, None),
            Spill::Failed(e) => (None, Some(e)),
            Spill::Open { path, mut out, .. } => match out.flush() {
                Ok(()) => (Some(path), None),
                Err(e) => (None, Some(format!("cannot write {}: {e}", path.display()))),
            },
        };
        let truncated = self.total > self.max_bytes as u64;
        let view = if truncated {
            let tail = self.tail.contents();
            InlineView {
                head: self.head[..utf8_prefix_len(&self.head)].to_vec(),
                tail: tail[utf8_skip_len(&tail)..].to_vec(),
                total: self.total,
                truncated: true,
            }
        } else {
            let mut all = std::mem::take(&mut self.head);
            all.extend_from_slice(&self.tail.contents());
            InlineView {
                head: all,
                tail: Vec::new(),
                total: self.total,
                truncated: false,
            }
        };
        CaptureResult {
            view,
            artifact,
            artifact_error,
        }
    }
}

/// Output waiting to be sent to the front-end: coalesced between flushes, bounded in size.
///
/// When more than [`LIVE_MAX_BYTES`] arrive between two flushes only the latest are kept and the
/// flush says how many were not shown; the complete stream is in the result and the artifact.
#[derive(Debug, Default)]
pub struct LiveBuffer {
    ring: Option<TailRing>,
    pending: u64,
    /// Bytes of an incomplete UTF-8 sequence held back for the next chunk.
    carry: Vec<u8>,
}

impl LiveBuffer {
    pub fn push(&mut self, bytes: &[u8]) {
        self.ring
            .get_or_insert_with(|| TailRing::new(LIVE_MAX_BYTES))
            .push(bytes);
        self.pending += bytes.len() as u64;
    }

    /// Counts bytes without keeping them: [`LiveBuffer::flush_from`] then takes the latest ones
    /// from where the caller keeps them anyway (a foreground capture's tail), which spares the
    /// reader a second copy of every chunk.
    pub fn count(&mut self, len: usize) {
        self.pending += len as u64;
    }

    /// The coalesced chunk since the last flush, as text (lossy UTF-8, raw escapes kept).
    pub fn flush(&mut self) -> Option<String> {
        if self.pending == 0 {
            return None;
        }
        let ring = self.ring.take()?;
        let kept = ring.contents();
        self.flush_kept(kept)
    }

    /// Like [`LiveBuffer::flush`] for bytes that were only [`counted`](LiveBuffer::count):
    /// `latest(n)` returns the last `n` bytes of the stream, or as many as it still has.
    pub fn flush_from(&mut self, latest: impl FnOnce(usize) -> Vec<u8>) -> Option<String> {
        if self.pending == 0 {
            return None;
        }
        let want = usize::try_from(self.pending)
            .unwrap_or(usize::MAX)
            .min(LIVE_MAX_BYTES);
        let kept = latest(want);
        self.flush_kept(kept)
    }

    fn flush_kept(&mut self, kept: Vec<u8>) -> Option<String> {
        let skipped = self.pending - kept.len() as u64;
        self.pending = 0;
        let mut bytes = Vec::with_capacity(self.carry.len() + kept.len());
        if skipped == 0 {
            bytes.append(&mut self.carry);
        } else {
            self.carry.clear();
        }
        let start = if skipped == 0 {
            0
        } else {
            utf8_skip_len(&kept)
        };
        bytes.extend_from_slice(&kept[start..]);
        let complete = utf8_prefix_len(&bytes);
        self.carry = bytes.split_off(complete);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Some(if skipped > 0 {
            format!("[... {skipped} bytes not shown live ...]\n{text}")
        } else {
            text
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_split_forty_sixty_and_add_up() {
        assert_eq!(head_budget(50_000), 20_000);
        assert_eq!(tail_budget(50_000), 30_000);
        for n in 0..200 {
            assert_eq!(head_budget(n) + tail_budget(n), n);
            assert_eq!(head_budget(n), n * 2 / 5, "n={n}");
        }
        // No overflow near the top of the range.
        assert_eq!(head_budget(usize::MAX), usize::MAX / 5 * 2);
    }

    #[test]
    fn short_output_is_inline_and_whole() {
        let v = inline_view(b"hello", 10);
        assert!(!v.truncated);
        assert_eq!(
            v.render(|b| String::from_utf8_lossy(b).into_owned()),
            "hello"
        );
    }

    #[test]
    fn output_of_exactly_the_budget_is_not_truncated() {
        let data = vec![b'x'; 100];
        let mut c = Capture::new(100, PathBuf::from("/nonexistent/never"));
        c.push(&data);
        let r = c.finish();
        assert!(!r.view.truncated);
        assert_eq!(r.view.head, data);
        assert!(r.artifact.is_none() && r.artifact_error.is_none());
    }

    #[test]
    fn long_output_keeps_first_forty_and_last_sixty_percent() {
        let data: Vec<u8> = (0..1000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let v = inline_view(&data, 100);
        assert!(v.truncated);
        assert_eq!(v.head, &data[..40]);
        assert_eq!(v.tail, &data[940..]);
        assert_eq!(v.omitted(), 900);
        let text = v.render(|b| String::from_utf8_lossy(b).into_owned());
        assert!(text.contains("\n[OUTPUT TRUNCATED - 900 chars omitted out of 1000 total]\n"));
    }

    #[test]
    fn cut_never_splits_a_code_point() {
        // "€" is 3 bytes; the head budget of 10 bytes ends inside the fourth euro sign.
        let data = "€".repeat(100);
        let v = inline_view(data.as_bytes(), 25);
        assert_eq!(head_budget(25), 10);
        assert_eq!(v.head.len(), 9);
        assert_eq!(v.tail.len(), 15);
        assert!(std::str::from_utf8(&v.head).is_ok());
        assert!(std::str::from_utf8(&v.tail).is_ok());
        assert_eq!(v.omitted(), 300 - 9 - 15);
        // Tail budget 16 starts one byte into a sign: skip its two continuation bytes.
        let v = inline_view(data.as_bytes(), 27);
        assert_eq!(tail_budget(27), 17);
        assert_eq!(v.tail.len(), 15);
        assert!(std::str::from_utf8(&v.tail).is_ok());
    }

    #[test]
    fn utf8_prefix_handles_every_sequence_length() {
        assert_eq!(utf8_prefix_len(b"ab"), 2);
        assert_eq!(utf8_prefix_len("aé".as_bytes()), 3);
        assert_eq!(utf8_prefix_len(&"aé".as_bytes()[..2]), 1);
        assert_eq!(utf8_prefix_len(&"a😀".as_bytes()[..4]), 1);
        assert_eq!(utf8_prefix_len("a😀".as_bytes()), 5);
        // Stray continuation bytes are not a sequence in progress: leave them to lossy decoding.
        assert_eq!(utf8_prefix_len(&[0x80, 0x80, 0x80, 0x80]), 4);
        assert_eq!(utf8_skip_len(&"😀".as_bytes()[1..]), 3);
        assert_eq!(utf8_skip_len(b"abc"), 0);
    }

    #[test]
    fn streamed_capture_matches_whole_buffer_view() {
        let data: Vec<u8> = "x€yz😀\n".repeat(5000).into_bytes();
        for chunk in [1usize, 7, 4096, 100_000] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("a/out.log");
            let mut c = Capture::new(1000, path.clone());
            for part in data.chunks(chunk) {
                c.push(part);
            }
            let r = c.finish();
            assert_eq!(r.view, inline_view(&data, 1000), "chunk {chunk}");
            assert_eq!(r.artifact.as_deref(), Some(path.as_path()));
            assert_eq!(std::fs::read(&path).unwrap(), data);
        }
    }

    #[test]
    fn spill_file_stops_at_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.log");
        let mut c = Capture::new(10, path.clone());
        let chunk = vec![b'q'; 1 << 20];
        for _ in 0..6 {
            c.push(&chunk);
        }
        let r = c.finish();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), ARTIFACT_MAX_BYTES);
        assert_eq!(r.view.total, 6 << 20);
    }

    #[test]
    fn capture_memory_does_not_grow_with_the_stream() {
        let mut c = Capture::new(1000, PathBuf::from("/dev/null"));
        let chunk = vec![b'z'; 65536];
        c.push(&chunk);
        let after_one = c.buffered_capacity();
        for _ in 0..200 {
            c.push(&chunk);
        }
        assert_eq!(c.buffered_capacity(), after_one);
        assert!(after_one <= 2000);
    }

    #[test]
    fn live_buffer_keeps_the_latest_bytes_and_says_how_many_it_skipped() {
        let mut l = LiveBuffer::default();
        assert_eq!(l.flush(), None);
        l.push(b"hello ");
        l.push(b"world");
        assert_eq!(l.flush().as_deref(), Some("hello world"));
        l.push(&vec![b'a'; LIVE_MAX_BYTES + 10]);
        let text = l.flush().unwrap();
        assert!(
            text.starts_with("[... 10 bytes not shown live ...]\n"),
            "{text}"
        );
        assert_eq!(text.len() - text.find('\n').unwrap() - 1, LIVE_MAX_BYTES);
    }

    #[test]
    fn live_buffer_carries_a_split_code_point_to_the_next_chunk() {
        let mut l = LiveBuffer::default();
        let euro = "€".as_bytes();
        l.push(&euro[..1]);
        assert_eq!(l.flush().as_deref(), Some(""));
        l.push(&euro[1..]);
        assert_eq!(l.flush().as_deref(), Some("€"));
    }

    #[test]
    fn tail_ring_keeps_the_last_bytes_across_wraps() {
        let mut r = TailRing::new(5);
        r.push(b"abc");
        assert_eq!(r.contents(), b"abc");
        r.push(b"defg");
        assert_eq!(r.contents(), b"cdefg");
        r.push(b"h");
        assert_eq!(r.contents(), b"defgh");
        r.push(b"0123456789");
        assert_eq!(r.contents(), b"56789");
        r.push(b"xy");
        assert_eq!(r.contents(), b"789xy");
    }

    proptest::proptest! {
        /// Counting chunks and taking the latest bytes from the capture at flush time shows the
        /// person exactly what keeping a second copy of every chunk showed, whenever the
        /// capture's tail holds a live flush's worth (the only case run_foreground uses it).
        #[test]
        fn live_view_from_the_capture_equals_the_copied_live_view(
            sizes in proptest::collection::vec(1usize..40_000, 1..40),
            flush_after in proptest::collection::vec(proptest::bool::ANY, 40),
            max in (LIVE_MAX_BYTES * 5 / 3 + 1)..200_000usize,
        ) {
            let data: Vec<u8> = (0..sizes.iter().sum::<usize>())
                .map(|i| "ab€😀\n".as_bytes()[i % 9])
                .collect();
            let mut capture = Capture::new(max, PathBuf::from("/dev/null"));
            let (mut copied, mut counted) = (LiveBuffer::default(), LiveBuffer::default());
            let mut at = 0;
            for (i, n) in sizes.iter().enumerate() {
                let chunk = &data[at..at + n];
                at += n;
                capture.push(chunk);
                copied.push(chunk);
                counted.count(chunk.len());
                if flush_after[i] || i + 1 == sizes.len() {
                    proptest::prop_assert_eq!(
                        counted.flush_from(|n| capture.latest(n)),
                        copied.flush()
                    );
                }
            }
        }
    }

    #[test]
    fn latest_reaches_back_into_the_head_until_something_was_dropped() {
        let mut c = Capture::new(10, PathBuf::from("/dev/null"));
        c.push(b"abcdef");
        // Head is 4 bytes (abcd), the ring holds ef: nothing dropped yet.
        assert_eq!(c.latest(3), b"def");
        assert_eq!(c.latest(100), b"abcdef");
        c.push(b"ghijklmn");
        // The ring (6 bytes) now holds ijklmn; e..h were dropped, so the head is not adjacent.
        assert_eq!(c.latest(4), b"klmn");
        assert_eq!(c.latest(100), b"ijklmn");
    }
}
