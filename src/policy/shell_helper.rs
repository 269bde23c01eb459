//! The shell parser in a process of its own, so that its failures cannot end pablo.
//!
//! `conch-parser` is third-party code that panics on some malformed input (fuzzing found one:
//! [`shell`] refuses it before parsing) and may hold more. In a build that unwinds, [`shell`]
//! catches such a panic; the release binary is built with `panic = "abort"` (about 2 MB smaller,
//! BENCHMARKS.md), where nothing can catch one. So the binary parses through a helper: itself,
//! started with [`HELPER_ARG`], answering one framed request after another on a socket. A helper
//! that dies mid-request (a panic, a stack overflow, a kill) costs that one command: it is refused
//! with the same reason a caught panic gives, and the next parse starts a new helper.
//!
//! The helper starts at the first command pablo checks, not at launch (the idle prompt has no
//! child), lives as long as pablo (it exits when its socket closes), runs in its own process group
//! (a Ctrl-C at the terminal is pablo's to handle, not the helper's) and writes nothing anywhere
//! else: its stderr is closed, since a panic message would land on the TUI's screen.
//!
//! A library user (tests, benches) that never calls [`isolate_shell_parser`] parses in process,
//! exactly as the helper does.
//!
//! Frames are a 4-byte little-endian length and that many bytes: the command's UTF-8 text one
//! way, the JSON of `Result<Vec<SimpleCommand>, Refusal>` the other.

use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use super::shell::{self, MAX_COMMAND_BYTES, PARSE_DEADLINE, Refusal, SimpleCommand};

/// `argv[1]` of a helper process.
const HELPER_ARG: &str = "__pablo-shell-parser";
/// The helper's answer to one command is bounded: a 64 KiB command cannot expand past this.
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;
/// How long pablo waits for an answer: the helper's own deadline, and a margin for its start.
const ANSWER_DEADLINE: Duration = PARSE_DEADLINE.saturating_add(Duration::from_secs(1));
/// Why a command whose helper died is refused (the same words as a panic caught in process).
const HELPER_DIED: &str = "the shell parser failed on it";

type Answer = Result<Vec<SimpleCommand>, Refusal>;

/// Set once by the binary: the program and arguments that start a helper.
static PROGRAM: OnceLock<(PathBuf, Vec<String>)> = OnceLock::new();
/// The running helper, shared by every thread that checks commands.
static RUNNING: Mutex<Option<Helper>> = Mutex::new(None);

/// The first call of the `pablo` binary. Started as a helper, this serves parse requests until
/// its socket closes and returns the exit code; otherwise it makes every later parse in this
/// process go through a helper, and returns `None`.
pub fn isolate_shell_parser() -> Option<ExitCode> {
    if std::env::args_os().nth(1).is_some_and(|a| a == HELPER_ARG) {
        let served = serve(io::stdin().lock(), io::stdout().lock());
        return Some(if served.is_ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    // `/proc/self/exe` still starts this program if its file was replaced or removed since.
    let _ = PROGRAM.set(("/proc/self/exe".into(), vec![HELPER_ARG.to_string()]));
    None
}

/// Parses through the helper when the binary asked for one; `None` means parse in process.
pub(super) fn parse(text: &str) -> Option<Answer> {
    let (program, args) = PROGRAM.get()?;
    let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    Some(parse_with(
        &mut running,
        program,
        args,
        ANSWER_DEADLINE,
        text,
    ))
}

/// One request on `slot`'s helper, starting one when there is none or the last one has gone.
fn parse_with(
    slot: &mut Option<Helper>,
    program: &PathBuf,
    args: &[String],
    deadline: Duration,
    text: &str,
) -> Answer {
    // A helper that died between requests (killed, out of memory) is replaced before the request:
    // only a death during it is charged to the command.
    if slot.as_mut().is_some_and(|h| !h.is_alive()) {
        *slot = None;
    }
    if slot.is_none() {
        match Helper::start(program, args, deadline) {
            Ok(h) => *slot = Some(h),
            Err(e) => {
                tracing::warn!(error = %e, "the shell parser's helper could not start");
                return Err(Refusal::Syntax(format!(
                    "the shell parser's helper could not start: {e}"
                )));
            }
        }
    }
    let Some(helper) = slot.as_mut() else {
        return Err(Refusal::Syntax(HELPER_DIED.into()));
    };
    match helper.ask(text) {
        Ok(answer) => answer,
        Err(failure) => {
            if let Some(mut dead) = slot.take() {
                dead.stop();
            }
            tracing::warn!(?failure, "the shell parser's helper failed on a command");
            match failure {
                Failure::Late => Err(Refusal::Timeout),
                Failure::Died | Failure::Garbled => Err(Refusal::Syntax(HELPER_DIED.into())),
            }
        }
    }
}

/// How a request went wrong; each ends that helper.
#[derive(Debug)]
enum Failure {
    /// No answer within the deadline.
    Late,
    /// The socket closed or broke: the helper is gone.
    Died,
    /// An answer that is not one: too long, or not the JSON of an answer.
    Garbled,
}

struct Helper {
    child: Child,
    socket: UnixStream,
}

impl Helper {
    fn start(program: &PathBuf, args: &[String], deadline: Duration) -> io::Result<Self> {
        let (ours, theirs) = UnixStream::pair()?;
        ours.set_read_timeout(Some(deadline))?;
        ours.set_write_timeout(Some(deadline))?;
        let theirs = OwnedFd::from(theirs);
        let theirs_out = theirs.try_clone()?;
        let child = Command::new(program)
            .arg0("pablo-shell-parser")
            .args(args)
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::from(theirs_out))
            .stderr(Stdio::null())
            .current_dir("/")
            .process_group(0)
            .spawn()?;
        Ok(Self {
            child,
            socket: ours,
        })
    }

    fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    fn ask(&mut self, text: &str) -> Result<Answer, Failure> {
        write_frame(&mut self.socket, text.as_bytes()).map_err(|e| failure_of(&e))?;
        let bytes = read_frame(&mut self.socket, MAX_ANSWER_BYTES)
            .map_err(|e| failure_of(&e))?
            .ok_or(Failure::Died)?;
        serde_json::from_slice(&bytes).map_err(|_| Failure::Garbled)
    }

    /// Kills and reaps the helper (it may be stuck in a parse that outlived the deadline).
    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        // Closing the socket ends a helper that is waiting for a request; one still parsing is
        // ended here so no process outlives its handle.
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
pub(super) fn serve(mut input: impl Read, mut output: impl Write) -> io::Result<()> {
    while let Some(request) = read_frame(&mut input, MAX_COMMAND_BYTES)? {
        let text = String::from_utf8(request)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a request is not UTF-8"))?;
        abort_if_asked_to(&text);
        let answer: Answer = shell::parse_in_process(&text);
        let bytes = serde_json::to_vec(&answer).map_err(io::Error::other)?;
        write_frame(&mut output, &bytes)?;
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

fn write_frame(out: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    let len = u32::try_from(bytes.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a frame over 4 GiB"))?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(bytes)
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
mod tests {
    use super::*;

    fn request(texts: &[&str]) -> Vec<u8> {
        let mut out = Vec::new();
        for t in texts {
            write_frame(&mut out, t.as_bytes()).unwrap();
        }
        out
    }

    #[test]
    fn the_helper_loop_answers_each_request_as_parsing_in_process_does() {
        let texts = ["ls -la && rm -rf \"$HOME\"", "echo $(", "cat <<E\nx\\"];
        let mut answers = Vec::new();
        serve(&request(&texts)[..], &mut answers).unwrap();
        let mut reader = &answers[..];
        for t in texts {
            let frame = read_frame(&mut reader, MAX_ANSWER_BYTES).unwrap().unwrap();
            let answer: Answer = serde_json::from_slice(&frame).unwrap();
            assert_eq!(answer, shell::parse_in_process(t), "{t}");
        }
        assert!(read_frame(&mut reader, MAX_ANSWER_BYTES).unwrap().is_none());
    }

    #[test]
    fn a_request_over_the_command_limit_ends_the_helper_loop_with_an_error() {
        let mut frame = u32::try_from(MAX_COMMAND_BYTES + 1)
            .unwrap()
            .to_le_bytes()
            .to_vec();
        frame.extend(vec![b'a'; MAX_COMMAND_BYTES + 1]);
        let err = serve(&frame[..], Vec::new()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
    }

    fn sh(script: &str) -> (PathBuf, Vec<String>) {
        ("/bin/sh".into(), vec!["-c".into(), script.into()])
    }

    #[test]
    fn a_helper_that_dies_mid_request_refuses_that_command_and_the_next_starts_another() {
        // A helper that reads the request and exits without answering: what a panic under
        // `panic = "abort"` looks like from pablo's side.
        let (program, args) = sh("head -c 6 >/dev/null; exit 134");
        let mut slot = None;
        let r = parse_with(&mut slot, &program, &args, Duration::from_secs(10), "ls");
        assert_eq!(r, Err(Refusal::Syntax(HELPER_DIED.into())));
        assert!(slot.is_none(), "the dead helper is dropped");
        let r = parse_with(&mut slot, &program, &args, Duration::from_secs(10), "ls");
        assert_eq!(
            r,
            Err(Refusal::Syntax(HELPER_DIED.into())),
            "a new one was asked"
        );
    }

    #[test]
    fn a_helper_gone_between_requests_is_replaced_without_refusing_the_next_command() {
        // Answers one request (`ls`: 6 bytes) with no commands, then waits for the next.
        let (program, args) =
            sh("head -c 6 >/dev/null; printf '\\011\\000\\000\\000{\"Ok\":[]}'; exec sleep 30");
        let mut slot = None;
        let r = parse_with(&mut slot, &program, &args, Duration::from_secs(10), "ls");
        assert_eq!(r, Ok(vec![]));
        let first = slot.as_ref().map(|h: &Helper| h.child.id());
        if let Some(h) = slot.as_mut() {
            h.stop();
        }
        let r = parse_with(&mut slot, &program, &args, Duration::from_secs(10), "ls");
        assert_eq!(
            r,
            Ok(vec![]),
            "the command after the helper's death is parsed"
        );
        assert_ne!(slot.as_ref().map(|h| h.child.id()), first);
    }

    #[test]
    fn a_helper_that_does_not_answer_in_time_is_killed_and_the_command_refused_as_late() {
        let (program, args) = sh("exec sleep 30");
        let mut slot = None;
        let r = parse_with(&mut slot, &program, &args, Duration::from_millis(200), "ls");
        assert_eq!(r, Err(Refusal::Timeout));
        assert!(slot.is_none());
    }

    #[test]
    fn a_helper_that_cannot_start_refuses_the_command_and_says_why() {
        let mut slot = None;
        let r = parse_with(
            &mut slot,
            &PathBuf::from("/nonexistent/pablo"),
            &[],
            Duration::from_secs(1),
            "ls",
        );
        let Err(Refusal::Syntax(why)) = r else {
            panic!("{r:?}")
        };
        assert!(
            why.starts_with("the shell parser's helper could not start"),
            "{why}"
        );
    }

    #[test]
    fn a_garbled_answer_refuses_the_command() {
        // Four bytes of length 2, then two bytes that are not an answer.
        let (program, args) =
            sh("head -c 6 >/dev/null; printf '\\002\\000\\000\\000{]'; exec sleep 5");
        let mut slot = None;
        let r = parse_with(&mut slot, &program, &args, Duration::from_secs(10), "ls");
        assert_eq!(r, Err(Refusal::Syntax(HELPER_DIED.into())));
        assert!(slot.is_none(), "the helper that garbled is stopped");
    }
}
