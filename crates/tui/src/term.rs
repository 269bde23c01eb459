//! Entering and leaving full-screen mode, so the person's terminal is always given back intact:
//! on a normal exit, on an error, on a panic (a hook restores before the message prints) and on
//! SIGTERM/SIGHUP (the loop ends and the guard restores).

use std::io::{self, Write};

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, DisableMouseCapture, EnableBracketedPaste,
    EnableFocusChange, KeyboardEnhancementFlags, PopKeyboardEnhancementFlags,
    PushKeyboardEnhancementFlags,
};
use ratatui::crossterm::terminal::{
    Clear, ClearType, EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::crossterm::{cursor, execute};

use super::TuiError;

pub(crate) type CrosstermTerminal = Terminal<CrosstermBackend<io::Stdout>>;

/// Alternate-scroll mode: in the alternate screen the terminal turns wheel notches into arrow
/// keys, so the wheel scrolls without pablo capturing the mouse (selection keeps working).
const ALTERNATE_SCROLL_ON: &[u8] = b"\x1b[?1007h";
const ALTERNATE_SCROLL_OFF: &[u8] = b"\x1b[?1007l";

/// Restores the terminal when dropped.
pub(crate) struct TerminalGuard {
    active: bool,
}

/// The input modes pablo turns on for itself: bracketed paste, focus reports, disambiguated
/// keys. Sent after any switch to the alternate screen (some terminals keep the key flags per
/// screen).
fn input_modes_on(out: &mut impl Write) -> io::Result<()> {
    execute!(
        out,
        EnableBracketedPaste,
        EnableFocusChange,
        PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
    )
}

/// Undoes [`input_modes_on`] (and a mouse capture), and shows the cursor.
fn input_modes_off(out: &mut impl Write) -> io::Result<()> {
    execute!(
        out,
        PopKeyboardEnhancementFlags,
        DisableBracketedPaste,
        DisableFocusChange,
        DisableMouseCapture,
        cursor::Show
    )
}

/// Puts the terminal back: raw mode off, main screen, cursor shown. Safe to call twice.
pub(crate) fn restore() {
    let mut out = io::stdout();
    let _ = out.write_all(ALTERNATE_SCROLL_OFF);
    let _ = input_modes_off(&mut out);
    let _ = execute!(out, LeaveAlternateScreen);
    let _ = disable_raw_mode();
}

/// Enters full-screen mode and installs the panic hook. The guard restores on drop.
pub(crate) fn enter() -> Result<(CrosstermTerminal, TerminalGuard), TuiError> {
    let setup = || -> io::Result<CrosstermTerminal> {
        enable_raw_mode()?;
        let mut out = io::stdout();
        execute!(out, EnterAlternateScreen, Clear(ClearType::All))?;
        input_modes_on(&mut out)?;
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

/// Puts the terminal back after inline mode: raw mode off, the cursor shown, the keyboard and
/// paste modes popped. The normal screen is not touched (it holds the conversation), and no
/// leave-alternate-screen is sent unless an overlay was open (it would also move the cursor).
pub(crate) fn restore_inline(alternate_open: bool) {
    let mut out = io::stdout();
    if alternate_open {
        let _ = execute!(out, LeaveAlternateScreen);
    }
    let _ = input_modes_off(&mut out);
    let _ = disable_raw_mode();
}

/// Gives the terminal to another program for a while (the person's editor): cooked mode, the
/// cursor shown, our keyboard and paste modes popped. [`take_back_modes`] undoes it.
pub(crate) fn lend_modes() -> io::Result<()> {
    input_modes_off(&mut io::stdout())?;
    disable_raw_mode()
}

pub(crate) fn take_back_modes() -> io::Result<()> {
    enable_raw_mode()?;
    input_modes_on(&mut io::stdout())
}

/// Restores the terminal after inline mode when dropped.
pub(crate) struct InlineGuard {
    active: bool,
}

impl Drop for InlineGuard {
    fn drop(&mut self) {
        if self.active {
            restore_inline(false);
            self.active = false;
        }
    }
}

/// Enters inline mode: raw input, bracketed paste, no alternate screen. The viewport starts where
/// the shell left the cursor (asked once; a terminal that does not answer within crossterm's
/// timeout gets the viewport at the bottom).
pub(crate) fn enter_inline()
-> Result<(super::inline::InlineScreen<io::Stdout>, InlineGuard), TuiError> {
    let setup = || -> io::Result<super::inline::InlineScreen<io::Stdout>> {
        enable_raw_mode()?;
        let (cols, rows) = ratatui::crossterm::terminal::size()?;
        let (col, row) = cursor::position().unwrap_or((0, rows.saturating_sub(1)));
        let mut out = io::stdout();
        input_modes_on(&mut out)?;
        // Start on a line of our own: the shell may have left the cursor mid-line.
        let col0_row = if col == 0 {
            row
        } else {
            out.write_all(b"\r\n")?;
            (row + 1).min(rows.saturating_sub(1))
        };
        out.flush()?;
        Ok(super::inline::InlineScreen::new(
            io::stdout(),
            ratatui::layout::Size::new(cols, rows),
            col0_row,
        ))
    };
    let guard = InlineGuard { active: true };
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore_inline(true);
        previous(info);
    }));
    match setup() {
        Ok(screen) => Ok((screen, guard)),
        Err(e) => {
            drop(guard);
            Err(TuiError::Terminal(format!(
                "cannot start the inline screen: {e}"
            )))
        }
    }
}

/// Ctrl-Z: stops pablo as the shell's job control would (the terminal is lent first); returns
/// once the shell continues it (`fg`). A process group the kernel considers orphaned (pablo
/// started as a session of its own, without a job-control shell) is not stopped, and this
/// returns at once.
pub(crate) fn suspend_self() {
    let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::TSTP);
}

/// Resolves on SIGTERM or SIGHUP.
pub(crate) async fn termination() {
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

/// The escape sequence of a desktop notification: OSC 777 where that is the terminal's own
/// convention (urxvt, foot), OSC 9 elsewhere (iTerm2, WezTerm, Ghostty, kitty, Windows Terminal).
/// Control characters are dropped so the text cannot end the sequence early.
pub(crate) fn notification(text: &str) -> Vec<u8> {
    let term = std::env::var("TERM").unwrap_or_default();
    notification_for(&term, text)
}

fn notification_for(term: &str, text: &str) -> Vec<u8> {
    let clean: String = text.chars().filter(|c| !c.is_control()).collect();
    if term.starts_with("rxvt") || term.starts_with("foot") {
        format!("\x1b]777;notify;pablo;{clean}\x07").into_bytes()
    } else {
        format!("\x1b]9;{clean}\x07").into_bytes()
    }
}

/// OSC 52: `text` onto the system clipboard, through the terminal (works over ssh).
pub(crate) fn clipboard(text: &str) -> Vec<u8> {
    use base64::Engine;
    let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    format!("\x1b]52;c;{encoded}\x07").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notification_cannot_break_out_of_its_sequence() {
        let bytes = notification_for("xterm-256color", "done\x07\x1b]52;c;evil\x07");
        assert_eq!(bytes, b"\x1b]9;done]52;c;evil\x07");
        assert!(notification_for("foot", "x").starts_with(b"\x1b]777;notify;pablo;x"));
    }

    #[test]
    fn the_clipboard_sequence_carries_the_text_in_base64() {
        assert_eq!(clipboard("héllo"), b"\x1b]52;c;aMOpbGxv\x07");
    }
}
