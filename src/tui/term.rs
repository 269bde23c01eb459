//! Entering and leaving full-screen mode, so the person's terminal is always given back intact:
//! on a normal exit, on an error, on a panic (a hook restores before the message prints) and on
//! SIGTERM/SIGHUP (the loop ends and the guard restores).

use std::io::{self, Write};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use futures::{Stream, StreamExt};
use ratatui::crossterm::event::{Event as TermEvent, EventStream};

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use ratatui::crossterm::terminal::{
    Clear, ClearType, EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::crossterm::{cursor, execute};

use super::TuiError;

pub type CrosstermTerminal = Terminal<CrosstermBackend<io::Stdout>>;

/// Alternate-scroll mode: in the alternate screen the terminal turns wheel notches into arrow
/// keys, so the wheel scrolls without pablo capturing the mouse (selection keeps working).
const ALTERNATE_SCROLL_ON: &[u8] = b"\x1b[?1007h";
const ALTERNATE_SCROLL_OFF: &[u8] = b"\x1b[?1007l";

/// Restores the terminal when dropped.
pub struct TerminalGuard {
    active: bool,
}

/// Puts the terminal back: raw mode off, main screen, cursor shown. Safe to call twice.
pub fn restore() {
    let mut out = io::stdout();
    let _ = out.write_all(ALTERNATE_SCROLL_OFF);
    let _ = execute!(
        out,
        PopKeyboardEnhancementFlags,
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = disable_raw_mode();
}

/// Raw mode, the alternate screen and the input modes pablo reads keys with.
fn take_screen() -> io::Result<()> {
    enable_raw_mode()?;
    let mut out = io::stdout();
    execute!(
        out,
        EnterAlternateScreen,
        Clear(ClearType::All),
        EnableBracketedPaste,
        PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
    )?;
    out.write_all(ALTERNATE_SCROLL_ON)?;
    out.flush()
}

/// Enters full-screen mode and installs the panic hook. The guard restores on drop.
pub fn enter() -> Result<(CrosstermTerminal, TerminalGuard), TuiError> {
    let setup = || -> io::Result<CrosstermTerminal> {
        take_screen()?;
        Terminal::new(CrosstermBackend::new(io::stdout()))
    };
    let guard = TerminalGuard { active: true };
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
    match setup() {
        // No `Terminal::clear` here: it asks the terminal for the cursor position and waits for
        // the answer, which costs a round trip (seconds on a terminal that never answers).
        Ok(t) => Ok((t, guard)),
        Err(e) => {
            drop(guard);
            Err(TuiError::Terminal(format!(
                "cannot enter full-screen mode: {e}"
            )))
        }
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        if self.active {
            restore();
            self.active = false;
        }
    }
}

/// Resolves on SIGTERM or SIGHUP.
pub async fn termination() {
    use tokio::signal::unix::{SignalKind, signal};
    let term = signal(SignalKind::terminate());
    let hup = signal(SignalKind::hangup());
    match (term, hup) {
        (Ok(mut t), Ok(mut h)) => {
            tokio::select! {
                _ = t.recv() => {}
                _ = h.recv() => {}
            }
        }
        (Ok(mut t), Err(_)) => {
            t.recv().await;
        }
        (Err(_), Ok(mut h)) => {
            h.recv().await;
        }
        (Err(_), Err(_)) => futures::future::pending::<()>().await,
    }
}

/// Terminal input that can let go of the terminal while another program (the pager) reads it.
///
/// crossterm's event stream keeps a thread reading the terminal while it waits for a key; left
/// running, it would steal the pager's keystrokes. Pausing drops the stream (its thread stops),
/// resuming makes a new one and wakes the loop.
pub struct SharedInput {
    slot: Arc<Mutex<InputSlot>>,
}

#[derive(Default)]
struct InputSlot {
    stream: Option<EventStream>,
    waker: Option<Waker>,
}

/// The side of [`SharedInput`] that pauses and resumes it.
#[derive(Clone)]
pub struct InputPause {
    slot: Arc<Mutex<InputSlot>>,
}

impl SharedInput {
    pub fn new() -> (Self, InputPause) {
        let slot = Arc::new(Mutex::new(InputSlot {
            stream: Some(EventStream::new()),
            waker: None,
        }));
        (Self { slot: slot.clone() }, InputPause { slot })
    }
}

impl Stream for SharedInput {
    type Item = io::Result<TermEvent>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        match slot.stream.as_mut() {
            Some(s) => s.poll_next_unpin(cx),
            None => {
                slot.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl InputPause {
    fn pause(&self) {
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        slot.stream = None;
    }

    fn resume(&self) {
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        slot.stream = Some(EventStream::new());
        if let Some(w) = slot.waker.take() {
            w.wake();
        }
    }
}

/// The pager of the real terminal: input paused, the screen given back, `$PAGER` (else `less`,
/// else `more`) run on the file, then the screen taken again.
pub fn pager(input: InputPause) -> super::app::Pager {
    Box::new(move |path: &str| {
        input.pause();
        restore();
        let status = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(
                "if [ -n \"$PAGER\" ]; then exec $PAGER \"$1\"; \
                 elif command -v less >/dev/null 2>&1; then exec less \"$1\"; \
                 else exec more \"$1\"; fi",
            )
            .arg("pablo-pager")
            .arg(path)
            .status();
        let back = take_screen();
        input.resume();
        back.map_err(|e| format!("cannot take the terminal back: {e}"))?;
        match status {
            Ok(s) if s.success() => Ok(()),
            Ok(s) => Err(format!(
                "the pager exited with {s} (set $PAGER to choose another)"
            )),
            Err(e) => Err(format!("cannot start a pager: {e}")),
        }
    })
}
