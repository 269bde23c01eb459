//! The shell parser in a process of its own, so that its failures cannot end pablo.
//!
//! `conch-parser` is third-party code that panics on some malformed input (fuzzing found one:
//! [`shell`] refuses it before parsing) and may hold more. In a build that unwinds, [`shell`]
//! catches such a panic; the release binary is built with `panic = "abort"` (about 2 MB smaller,
//! BENCHMARKS.md), where nothing can catch one. So the binary parses through a helper: itself,
//! started with [`HELPER_ARG`], answering one framed request after another on its stdin. A helper
//! that dies mid-request (a panic, a stack overflow, a kill) costs that one command: it is refused
//! with the same reason a caught panic gives, and the next parse starts a new helper.
//!
//! The helper starts at the first command pablo checks, not at launch (the idle prompt has no
//! child), lives as long as pablo (it exits when its requests pipe closes), runs in its own
//! process group (a Ctrl-C at the terminal is pablo's to handle, not the helper's) and writes
//! nothing anywhere else: its stderr is closed, since a panic message would land on the TUI's
//! screen.
//!
//! A library user (tests, benches) that never calls [`super::isolate_shell_parser`] parses in
//! process, exactly as the helper does.
//!
//! This module only moves bytes: frames of a 4-byte little-endian length and that many bytes, the
//! command's UTF-8 text one way and [`shell`](super::shell)'s encoded answer the other, over two
//! pipes (the helper's stdin and stdout). Pipes rather than one socket pair: a pipe's write and
//! read skip the socket layer's buffer allocation, and a round trip took 1.7 µs against 3.9 µs on
//! the 2-vCPU VM of BENCHMARKS.md (issue 46 item 3). The helper's death closes the answers pipe,
//! which pablo reads as the end of input.
//!
//! A round trip costs more than the parse itself when the other side sleeps (a wake-up of the
//! other process), and the same text is parsed again and again: a
//! command's preview, its decision and the re-check before it runs, the model's retries, the
//! same `cargo test` all session. So answers are kept by text ([`Answers`]: the most recently
//! used [`CACHE_ENTRIES`], at most [`CACHE_BYTES`] of text and answer), and a text asked again
//! costs a lookup. A parse is a pure function of the text, so a kept answer is the answer; only
//! answers are kept, never a failure (a helper that died or was late is asked again next time).
//!
//! A text not kept costs the round trip, and on a virtual machine most of that is waking the
//! other side: a process asleep in `read` on an idle virtual CPU is woken through the hypervisor
//! (about 50 µs on the 2-vCPU VM of BENCHMARKS.md, against 5 µs when it was awake). So each side
//! that is waiting for the other keeps asking without sleeping for a short while ([`SPIN`]): pablo
//! after a request (most parses take a few microseconds), the helper after an answer (the next
//! command of a batch follows within microseconds). A side that is still waiting then sleeps in
//! `read` as before; an idle session costs nothing, and a command at most [`SPIN`] of CPU on each
//! side.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fs::OFlags;
use rustix::io::Errno;

/// `argv[1]` of a helper process.
const HELPER_ARG: &str = "__pablo-shell-parser";
/// The longest request read: the shell module refuses longer commands before asking.
const MAX_REQUEST_BYTES: usize = 1024 * 1024;
/// The helper's answer to one command is bounded: a 64 KiB command cannot expand past this.
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;
/// The most answers kept.
const CACHE_ENTRIES: usize = 1024;
/// The most bytes (texts and answers) kept; a larger pair is not kept at all.
const CACHE_BYTES: usize = 8 * 1024 * 1024;
/// How long a side waiting for the other asks again without sleeping (module docs).
const SPIN: Duration = Duration::from_micros(200);

/// How the helper of this process is started, and how long an answer may take.
struct Spec {
    program: PathBuf,
    args: Vec<String>,
    deadline: Duration,
}

/// Set once by the binary.
static SPEC: OnceLock<Spec> = OnceLock::new();
/// The running helper, shared by every thread that checks commands.
static RUNNING: Mutex<Option<Helper>> = Mutex::new(None);
/// The helper's answers, by text (a lock of its own: a lookup never waits for a parse).
static ANSWERS: Mutex<Option<Answers>> = Mutex::new(None);

/// Started as a helper, serves `answer` until the requests pipe closes and returns the exit code;
/// otherwise makes every later [`ask`] in this process go through a helper that answers within
/// `deadline`, and returns `None`.
pub(super) fn serve_or_isolate(
    answer: fn(&str) -> Vec<u8>,
    deadline: Duration,
) -> Option<ExitCode> {
    if std::env::args_os().nth(1).is_some_and(|a| a == HELPER_ARG) {
        // stdin and stdout are the pipes pablo made: read requests spinning, and write each answer
        // with one unbuffered write (a line-buffered stdout would split a frame at a newline and
        // wake pablo for half an answer).
        let served = match (
            io::stdin().as_fd().try_clone_to_owned(),
            io::stdout().as_fd().try_clone_to_owned(),
        ) {
            (Ok(input), Ok(out)) => requests_pipe(input).and_then(|input| {
                serve(
                    Spinning::buffered(input, None),
                    std::fs::File::from(out),
                    answer,
                )
            }),
            (Err(e), _) | (_, Err(e)) => Err(e),
        };
        return Some(if served.is_ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    let _ = SPEC.set(Spec {
        // `/proc/self/exe` still starts this program if its file was replaced or removed since.
        program: "/proc/self/exe".into(),
        args: vec![HELPER_ARG.to_string()],
        deadline,
    });
    None
}

/// The helper's answer to `text`, when this process parses through one; `None` means parse in
/// process.
pub(super) fn ask(text: &str) -> Option<Result<Vec<u8>, Failure>> {
    let spec = SPEC.get()?;
    let kept = ANSWERS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(|| Answers::new(CACHE_ENTRIES, CACHE_BYTES))
        .get(text);
    tracing::debug!(
        target: "pablo::shell_parser",
        round_trip = kept.is_none(),
        "a command's parse"
    );
    if let Some(answer) = kept {
        return Some(Ok(answer));
    }
    let answer = {
        let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        ask_on(&mut running, spec, text)
    };
    if let Ok(bytes) = &answer {
        ANSWERS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(|| Answers::new(CACHE_ENTRIES, CACHE_BYTES))
            .put(text, bytes);
    }
    Some(answer)
}

/// Answers by text, the least recently used dropped first when a bound is reached.
struct Answers {
    /// Each kept text's answer and the stamp of its last use.
    map: HashMap<Arc<str>, (Vec<u8>, u64)>,
    /// The same texts by the stamp of their last use: the first is the one to drop. A lookup or a
    /// drop costs a logarithm, not a scan (a text never seen before, the case a burst of new
    /// commands hits, drops one every time once the table is full).
    by_use: BTreeMap<u64, Arc<str>>,
    /// Use counter: each lookup or insert stamps its entry with the next value.
    clock: u64,
    bytes: usize,
    max_entries: usize,
    max_bytes: usize,
}

impl Answers {
    fn new(max_entries: usize, max_bytes: usize) -> Self {
        Self {
            map: HashMap::new(),
            by_use: BTreeMap::new(),
            clock: 0,
            bytes: 0,
            max_entries,
            max_bytes,
        }
    }

    fn get(&mut self, text: &str) -> Option<Vec<u8>> {
        self.clock += 1;
        let clock = self.clock;
        let (answer, used) = self.map.get_mut(text)?;
        let last = std::mem::replace(used, clock);
        let answer = answer.clone();
        if let Some(key) = self.by_use.remove(&last) {
            self.by_use.insert(clock, key);
        }
        Some(answer)
    }

    fn put(&mut self, text: &str, answer: &[u8]) {
        let size = text.len() + answer.len();
        if size > self.max_bytes / 16 || self.map.contains_key(text) {
            return;
        }
        while self.map.len() >= self.max_entries || self.bytes + size > self.max_bytes {
            let Some((_, oldest)) = self.by_use.pop_first() else {
                break;
            };
            if let Some((a, _)) = self.map.remove(&oldest) {
                self.bytes -= oldest.len() + a.len();
            }
        }
        self.clock += 1;
        self.bytes += size;
        let key: Arc<str> = Arc::from(text);
        self.by_use.insert(self.clock, Arc::clone(&key));
        self.map.insert(key, (answer.to_vec(), self.clock));
    }
}

/// One request on `slot`'s helper, starting one when there is none or the last one has gone.
fn ask_on(slot: &mut Option<Helper>, spec: &Spec, text: &str) -> Result<Vec<u8>, Failure> {
    // A helper that died between requests (killed, out of memory) is found out by the request
    // failing, which is then asked once more of a new helper: only a helper that dies on this
    // very text charges it to the command (a parse is a function of the text alone, so a text
    // that ended one helper ends the next one too). Asking the system whether the helper still
    // lives before every request would cost a system call each time.
    let had_one = slot.is_some();
    match ask_once(slot, spec, text) {
        Err(Failure::Died) if had_one => ask_once(slot, spec, text),
        answer => answer,
    }
}

fn ask_once(slot: &mut Option<Helper>, spec: &Spec, text: &str) -> Result<Vec<u8>, Failure> {
    if slot.is_none() {
        let started = Helper::start(spec).map_err(|e| {
            tracing::warn!(error = %e, "the shell parser's helper could not start");
            Failure::NotStarted(e.to_string())
        })?;
        *slot = Some(started);
    }
    let Some(helper) = slot.as_mut() else {
        return Err(Failure::Died);
    };
    helper.ask(text).inspect_err(|failure| {
        if let Some(mut dead) = slot.take() {
            dead.stop();
        }
        tracing::warn!(?failure, "the shell parser's helper failed on a command");
    })
}

/// Why a request got no answer. Each but `NotStarted` ends that helper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Failure {
    /// No helper could be started (the error says why).
    NotStarted(String),
    /// No answer within the deadline.
    Late,
    /// A pipe closed or broke: the helper is gone.
    Died,
    /// An answer that is not one: longer than any answer can be.
    Garbled,
}

struct Helper {
    child: Child,
    /// The requests pipe's write end (non-blocking: a request the helper does not take in time
    /// is late, not a hang).
    requests: OwnedFd,
    /// The answers pipe's read end, read a buffer at a time (a frame's length and its bytes in
    /// one read).
    answers: io::BufReader<Spinning>,
    deadline: Duration,
}

impl Helper {
    fn start(spec: &Spec) -> io::Result<Self> {
        let (their_input, requests) = io::pipe()?;
        let (answers, their_output) = io::pipe()?;
        // Only pablo's ends are made non-blocking: each end is a file description of its own, so
        // the helper's ends stay as a plain program expects them (a test's `sh` helper reads a
        // blocking stdin).
        let requests = non_blocking(OwnedFd::from(requests))?;
        let answers = non_blocking(OwnedFd::from(answers))?;
        let child = Command::new(&spec.program)
            .arg0("pablo-shell-parser")
            .args(&spec.args)
            .stdin(Stdio::from(their_input))
            .stdout(Stdio::from(their_output))
            .stderr(Stdio::null())
            .current_dir("/")
            .process_group(0)
            .spawn()?;
        Ok(Self {
            child,
            requests,
            answers: Spinning::buffered(answers, Some(spec.deadline)),
            deadline: spec.deadline,
        })
    }

    fn ask(&mut self, text: &str) -> Result<Vec<u8>, Failure> {
        send_frame(&self.requests, text.as_bytes(), self.deadline).map_err(|e| failure_of(&e))?;
        read_frame(&mut self.answers, MAX_ANSWER_BYTES)
            .map_err(|e| failure_of(&e))?
            .ok_or(Failure::Died)
    }

    /// Kills and reaps the helper (it may be stuck in a parse that outlived the deadline).
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        // Closing the requests pipe ends a helper that is waiting for a request; one still
        // parsing is ended here so no process outlives its handle.
        self.stop();
    }
}

fn failure_of(e: &io::Error) -> Failure {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Failure::Late,
        io::ErrorKind::InvalidData => Failure::Garbled,
        _ => Failure::Died,
    }
}

/// The helper's loop: one answer per request, until the other end closes.
pub(super) fn serve(
    mut input: impl Read,
    mut output: impl Write,
    answer: impl Fn(&str) -> Vec<u8>,
) -> io::Result<()> {
    while let Some(request) = read_frame(&mut input, MAX_REQUEST_BYTES)? {
        let text = String::from_utf8(request)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a request is not UTF-8"))?;
        abort_if_asked_to(&text);
        write_frame(&mut output, &answer(&text))?;
        output.flush()?;
    }
    Ok(())
}

/// Test builds only: the helper dies as a panic would end it under `panic = "abort"` when asked to
/// parse the text in `PABLO_TEST_ABORT_PARSING`, so the binary's tests can see a helper die
/// mid-request.
fn abort_if_asked_to(text: &str) {
    if cfg!(debug_assertions) && std::env::var("PABLO_TEST_ABORT_PARSING").is_ok_and(|t| t == text)
    {
        std::process::abort();
    }
}

/// `fd` with `O_NONBLOCK` set on its file description.
fn non_blocking(fd: OwnedFd) -> io::Result<OwnedFd> {
    let flags = rustix::fs::fcntl_getfl(&fd)?;
    rustix::fs::fcntl_setfl(&fd, flags | OFlags::NONBLOCK)?;
    Ok(fd)
}

/// The helper's stdin, made non-blocking, when it is the pipe pablo made: a helper started by
/// hand on a terminal refuses rather than change the terminal's flags under its shell.
fn requests_pipe(input: OwnedFd) -> io::Result<OwnedFd> {
    if rustix::fs::FileType::from_raw_mode(rustix::fs::fstat(&input)?.st_mode)
        != rustix::fs::FileType::Fifo
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the shell parser's helper reads requests from a pipe",
        ));
    }
    non_blocking(input)
}

/// Waits until `fd` is ready for `flags`, for at most `left` (`None`: for as long as it takes).
fn wait_until_ready(fd: impl AsFd, flags: PollFlags, left: Option<Duration>) -> io::Result<()> {
    let timeout = match left {
        Some(left) if left.is_zero() => return Err(io::ErrorKind::TimedOut.into()),
        Some(left) => Some(Timespec::try_from(left).map_err(|_| io::ErrorKind::InvalidInput)?),
        None => None,
    };
    loop {
        // A closed other end counts as ready: the read or write that follows says so.
        match rustix::event::poll(&mut [PollFd::new(&fd, flags)], timeout.as_ref()) {
            Ok(0) => return Err(io::ErrorKind::TimedOut.into()),
            Ok(_) => return Ok(()),
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Reads a non-blocking pipe, asking again without sleeping for up to [`SPIN`] before waiting in
/// `poll`, for at most `deadline` per read when there is one.
struct Spinning {
    fd: OwnedFd,
    deadline: Option<Duration>,
}

impl Spinning {
    /// Frames are read through a buffer: one read takes a frame's length and its bytes (each
    /// system call costs a microsecond or so on a virtual machine), where two reads would.
    fn buffered(fd: OwnedFd, deadline: Option<Duration>) -> io::BufReader<Self> {
        io::BufReader::with_capacity(64 * 1024, Self { fd, deadline })
    }
}

impl Read for Spinning {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let start = Instant::now();
        loop {
            match rustix::io::read(&self.fd, &mut *buf) {
                Ok(n) => return Ok(n),
                Err(Errno::INTR) => {}
                // Yielding rather than spinning flat out: on a busy machine, the other side may
                // be waiting for this very CPU.
                Err(Errno::AGAIN) if start.elapsed() < SPIN => std::thread::yield_now(),
                Err(Errno::AGAIN) => {
                    let left = self.deadline.map(|d| d.saturating_sub(start.elapsed()));
                    wait_until_ready(&self.fd, PollFlags::IN, left)?;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// One frame to a non-blocking pipe, within `deadline`; a frame that fits the pipe's buffer goes
/// in one write, so the other side, reading as it spins, is not woken for half of it.
fn send_frame(fd: &OwnedFd, bytes: &[u8], deadline: Duration) -> io::Result<()> {
    let start = Instant::now();
    let frame = framed(bytes)?;
    let mut left = &frame[..];
    while !left.is_empty() {
        match rustix::io::write(fd, left) {
            Ok(n) => left = &left[n..],
            Err(Errno::INTR) => {}
            Err(Errno::AGAIN) => {
                let time = deadline.saturating_sub(start.elapsed());
                wait_until_ready(fd, PollFlags::OUT, Some(time))?;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// One frame in one write: the other side, reading as it spins, is not woken for half of it.
fn write_frame(out: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    out.write_all(&framed(bytes)?)
}

/// `bytes` after their length.
fn framed(bytes: &[u8]) -> io::Result<Vec<u8>> {
    let len = u32::try_from(bytes.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a frame over 4 GiB"))?;
    let mut frame = Vec::with_capacity(4 + bytes.len());
    frame.extend_from_slice(&len.to_le_bytes());
    frame.extend_from_slice(bytes);
    Ok(frame)
}

/// One frame, or `None` at a clean end of input (before a frame's first byte).
fn read_frame(input: &mut impl Read, limit: usize) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < len.len() {
        match input.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes; at most {limit} are read"),
        ));
    }
    let mut bytes = vec![0; len];
    input.read_exact(&mut bytes)?;
    Ok(Some(bytes))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// `texts` as the frames of requests.
    pub(crate) fn requests(texts: &[&str]) -> Vec<u8> {
        let mut out = Vec::new();
        for t in texts {
            write_frame(&mut out, t.as_bytes()).unwrap();
        }
        out
    }

    /// The frames in `bytes`, in order.
    pub(crate) fn frames(mut bytes: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while let Some(f) = read_frame(&mut bytes, MAX_ANSWER_BYTES).unwrap() {
            out.push(f);
        }
        out
    }

    #[test]
    fn a_request_over_the_limit_ends_the_helper_loop_with_an_error() {
        let mut frame = u32::try_from(MAX_REQUEST_BYTES + 1)
            .unwrap()
            .to_le_bytes()
            .to_vec();
        frame.extend(vec![b'a'; MAX_REQUEST_BYTES + 1]);
        let err = serve(&frame[..], Vec::new(), |t| t.as_bytes().to_vec()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
    }

    /// A helper that reads one request (`ls`: 6 bytes), writes `reply` (printf escapes) and waits.
    fn replying(reply: &str) -> Spec {
        sh(
            &format!("head -c 6 >/dev/null; printf '{reply}'; exec sleep 30"),
            Duration::from_secs(10),
        )
    }

    fn sh(script: &str, deadline: Duration) -> Spec {
        Spec {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            deadline,
        }
    }

    /// A pipe whose read end is pablo's: non-blocking.
    fn pipe() -> (OwnedFd, io::PipeWriter) {
        let (read, write) = io::pipe().unwrap();
        (non_blocking(OwnedFd::from(read)).unwrap(), write)
    }

    #[test]
    fn an_answer_split_by_a_pause_longer_than_the_spin_is_still_read_whole() {
        let (ours, mut theirs) = pipe();
        let writer = std::thread::spawn(move || {
            theirs.write_all(&[3, 0, 0, 0, b'y']).unwrap();
            // Long enough that the reader has stopped spinning and waits in `poll`.
            std::thread::sleep(SPIN * 10);
            theirs.write_all(b"es").unwrap();
        });
        let got = read_frame(&mut Spinning::buffered(ours, None), 16).unwrap();
        assert_eq!(got, Some(b"yes".to_vec()));
        writer.join().unwrap();
    }

    #[test]
    fn a_read_with_a_deadline_that_gets_nothing_is_late_and_a_closed_pipe_is_the_end() {
        let (ours, theirs) = pipe();
        let deadline = Some(SPIN * 5);
        let err = read_frame(&mut Spinning::buffered(ours, deadline), 16).unwrap_err();
        assert_eq!(failure_of(&err), Failure::Late, "{err}");
        let (ours, closed) = pipe();
        drop((theirs, closed));
        let got = read_frame(&mut Spinning::buffered(ours, deadline), 16).unwrap();
        assert_eq!(got, None);
    }

    #[test]
    fn a_request_the_helper_does_not_take_in_time_is_late() {
        // Nobody reads: the pipe's buffer fills and the rest of the request cannot go.
        let (_unread, ours) = io::pipe().unwrap();
        let ours = non_blocking(OwnedFd::from(ours)).unwrap();
        let big = vec![b'a'; MAX_REQUEST_BYTES];
        let err = send_frame(&ours, &big, Duration::from_millis(50)).unwrap_err();
        assert_eq!(failure_of(&err), Failure::Late, "{err}");
    }

    #[test]
    fn a_request_sixteen_times_a_pipes_buffer_goes_whole_to_a_helper_that_reads_it() {
        // The longest request read (1 MiB) against a 64 KiB pipe: the write waits in `poll` for
        // the helper to take each part, and the answer comes after the last byte.
        let text = "a".repeat(MAX_REQUEST_BYTES);
        let script = format!(
            "head -c {} >/dev/null; printf '\\003\\000\\000\\000yes'; exec sleep 30",
            MAX_REQUEST_BYTES + 4
        );
        let mut slot = None;
        let spec = sh(&script, Duration::from_secs(10));
        assert_eq!(ask_on(&mut slot, &spec, &text), Ok(b"yes".to_vec()));
    }

    #[test]
    fn a_helper_serving_over_pipes_answers_each_request_in_order_until_they_close() {
        let (their_input, mut requests) = pipe_pair();
        let (answers, their_output) = pipe();
        let helper = std::thread::spawn(move || {
            serve(Spinning::buffered(their_input, None), their_output, |t| {
                t.to_uppercase().into_bytes()
            })
        });
        let mut answers = Spinning::buffered(answers, None);
        for text in ["ls", "git status", "echo ünïcode"] {
            write_frame(&mut requests, text.as_bytes()).unwrap();
            let got = read_frame(&mut answers, 64).unwrap();
            assert_eq!(got, Some(text.to_uppercase().into_bytes()), "{text}");
        }
        drop((requests, answers));
        assert!(
            helper.join().unwrap().is_ok(),
            "a closed pipe ends the loop cleanly"
        );
    }

    /// A pipe whose read end is the helper's, made non-blocking as the helper makes its stdin.
    fn pipe_pair() -> (OwnedFd, io::PipeWriter) {
        let (read, write) = io::pipe().unwrap();
        (requests_pipe(OwnedFd::from(read)).unwrap(), write)
    }

    #[test]
    fn a_helper_whose_stdin_is_not_a_pipe_refuses_to_serve() {
        let file = tempfile::tempfile().unwrap();
        let err = requests_pipe(OwnedFd::from(file)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
    }

    #[test]
    fn a_helper_that_dies_mid_request_fails_that_request_and_the_next_starts_another() {
        // A helper that reads the request (`ls`: 6 bytes) and exits without answering: what a
        // panic under `panic = "abort"` looks like from pablo's side.
        let spec = sh("head -c 6 >/dev/null; exit 134", Duration::from_secs(10));
        let mut slot = None;
        assert_eq!(ask_on(&mut slot, &spec, "ls"), Err(Failure::Died));
        assert!(slot.is_none(), "the dead helper is dropped");
        assert_eq!(
            ask_on(&mut slot, &spec, "ls"),
            Err(Failure::Died),
            "a new one was asked"
        );
    }

    #[test]
    fn a_text_that_ends_a_running_helper_is_charged_after_one_more_try_and_the_next_text_runs() {
        // A helper that answers `ok` to every text but `boom`, which ends it as a panic under
        // `panic = "abort"` would; each start is noted in a file.
        let dir = tempfile::tempdir().unwrap();
        let starts = dir.path().join("starts");
        let script = format!(
            "import struct, sys\n\
             open({starts:?}, 'a').write('start\\n')\n\
             while True:\n\
             \x20   head = sys.stdin.buffer.read(4)\n\
             \x20   if len(head) < 4: sys.exit(0)\n\
             \x20   text = sys.stdin.buffer.read(struct.unpack('<I', head)[0])\n\
             \x20   if text == b'boom': sys.exit(134)\n\
             \x20   sys.stdout.buffer.write(struct.pack('<I', 2) + b'ok')\n\
             \x20   sys.stdout.buffer.flush()\n"
        );
        let spec = Spec {
            program: "python3".into(),
            args: vec!["-c".into(), script],
            deadline: Duration::from_secs(10),
        };
        let mut slot = None;
        assert_eq!(ask_on(&mut slot, &spec, "ls"), Ok(b"ok".to_vec()));
        // The running helper dies on the text; so does the one it is asked of again.
        assert_eq!(ask_on(&mut slot, &spec, "boom"), Err(Failure::Died));
        assert!(slot.is_none());
        assert_eq!(ask_on(&mut slot, &spec, "git status"), Ok(b"ok".to_vec()));
        let started = std::fs::read_to_string(&starts).unwrap().lines().count();
        assert_eq!(
            started, 3,
            "the first helper, the retry's, and the one after"
        );
    }

    #[test]
    fn a_helper_gone_between_requests_is_replaced_without_failing_the_next_request() {
        // Answers one request with the three bytes `yes`.
        let spec = replying("\\003\\000\\000\\000yes");
        let mut slot = None;
        assert_eq!(ask_on(&mut slot, &spec, "ls"), Ok(b"yes".to_vec()));
        let first = slot.as_ref().map(|h: &Helper| h.child.id());
        if let Some(h) = slot.as_mut() {
            h.stop();
        }
        assert_eq!(ask_on(&mut slot, &spec, "ls"), Ok(b"yes".to_vec()));
        assert_ne!(
            slot.as_ref().map(|h| h.child.id()),
            first,
            "a new helper answered"
        );
    }

    #[test]
    fn a_helper_that_does_not_answer_in_time_is_killed_and_the_request_is_late() {
        let spec = sh("exec sleep 30", Duration::from_millis(200));
        let mut slot = None;
        assert_eq!(ask_on(&mut slot, &spec, "ls"), Err(Failure::Late));
        assert!(slot.is_none());
    }

    #[test]
    fn a_helper_that_cannot_start_says_why() {
        let spec = Spec {
            program: "/nonexistent/pablo".into(),
            args: vec![],
            deadline: Duration::from_secs(1),
        };
        let mut slot = None;
        let r = ask_on(&mut slot, &spec, "ls");
        assert!(
            matches!(&r, Err(Failure::NotStarted(why)) if why.contains("No such file")),
            "{r:?}"
        );
    }

    #[test]
    fn kept_answers_are_bounded_and_the_least_recently_used_goes_first() {
        let mut a = Answers::new(3, 1600);
        a.put("one", b"1");
        a.put("two", b"2");
        a.put("three", b"3");
        assert_eq!(a.get("one"), Some(b"1".to_vec()));
        a.put("four", b"4");
        assert_eq!(a.get("two"), None, "the least recently used went");
        assert_eq!(a.get("one"), Some(b"1".to_vec()));
        assert_eq!(a.map.len(), 3);
        // Too large for a sixteenth of the byte budget: not kept.
        a.put("big", &[0u8; 200]);
        assert_eq!(a.get("big"), None);
        a.put("five", &[5u8; 90]);
        a.put("six", &[6u8; 90]);
        assert!(
            a.bytes <= 1600 && a.map.len() <= 3,
            "{} {}",
            a.bytes,
            a.map.len()
        );
    }

    #[test]
    fn kept_answers_drop_the_same_texts_as_a_scan_for_the_least_recently_used_would() {
        // The reference: a list in order of use, the front dropped first.
        let mut reference: Vec<String> = Vec::new();
        let mut a = Answers::new(8, 1 << 20);
        let mut seed = 7u64;
        for _ in 0..2_000 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let text = format!("cmd {}", (seed >> 33) % 13);
            if (seed >> 20).is_multiple_of(3) {
                a.put(&text, text.as_bytes());
                if !reference.contains(&text) {
                    if reference.len() == 8 {
                        reference.remove(0);
                    }
                    reference.push(text);
                }
            } else {
                let got = a.get(&text);
                let kept = reference.iter().position(|t| *t == text);
                assert_eq!(got.is_some(), kept.is_some(), "{text}");
                if let Some(i) = kept {
                    let t = reference.remove(i);
                    reference.push(t);
                }
            }
            assert_eq!(a.by_use.len(), a.map.len());
        }
        let mut kept: Vec<&str> = a.map.keys().map(|k| &**k).collect();
        kept.sort_unstable();
        reference.sort_unstable();
        assert_eq!(kept, reference);
    }

    #[test]
    fn an_answer_longer_than_any_answer_can_be_is_garbled_and_ends_the_helper() {
        // A length of 0x7f000000 bytes.
        let spec = replying("\\000\\000\\000\\177");
        let mut slot = None;
        assert_eq!(ask_on(&mut slot, &spec, "ls"), Err(Failure::Garbled));
        assert!(slot.is_none(), "the helper that garbled is stopped");
    }
}
