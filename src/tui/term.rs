//! Entering and leaving full-screen mode, so the person's terminal is always given back intact:
//! on a normal exit, on an error, on a panic (a hook restores before the message prints) and on
//! SIGTERM/SIGHUP (the loop ends and the guard restores).

use std::io::{self, Write};

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

/// Enters full-screen mode and installs the panic hook. The guard restores on drop.
pub fn enter() -> Result<(CrosstermTerminal, TerminalGuard), TuiError> {
    let setup = || -> io::Result<CrosstermTerminal> {
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
        out.flush()?;
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
