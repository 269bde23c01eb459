//! Log files that a program pablo starts writes its stderr into (MCP and language servers).
//!
//! Such a program writes for as long as it runs, and a broken or hostile one writes without
//! end: gigabytes in seconds. Handing it the log file itself would let it fill the disk, so it
//! gets a pipe, and a thread of pablo's copies what arrives into the file up to a fixed size,
//! then writes one line saying the rest was dropped, and goes on reading (and dropping) so the
//! program never blocks on a full pipe. A log already at its size when the program starts is
//! moved aside to `NAME.log.old` (replacing the one before), so the earlier output is kept once
//! and the pair never holds more than twice the size.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// The most a server's log file holds (the truncation line apart).
pub const MAX_LOG_BYTES: u64 = 8 * 1024 * 1024;

/// Where a started program's stderr goes, and where in the log its output begins.
#[derive(Debug)]
pub struct LogSink {
    /// The write end of the pipe: the program's stderr.
    pub stderr: File,
    /// The log's length before the program wrote anything (its own output starts there).
    pub start: u64,
}

/// Opens `path` (appending) for a program's stderr, bounded to `cap` bytes (see the module
/// docs).
pub fn bounded_log(path: &Path, cap: u64) -> std::io::Result<LogSink> {
    let open = || {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
    };
    let mut file = open()?;
    let mut len = file.metadata()?.len();
    if len >= cap {
        let mut old = PathBuf::from(path);
        old.as_mut_os_string().push(".old");
        std::fs::rename(path, &old)?;
        file = open()?;
        len = file.metadata()?.len();
    }
    let (reader, writer) = std::io::pipe()?;
    let room = cap.saturating_sub(len);
    std::thread::Builder::new()
        .name("pablo-log".into())
        .spawn(move || copy_bounded(reader, file, room, cap))?;
    Ok(LogSink {
        stderr: File::from(OwnedFd::from(writer)),
        start: len,
    })
}

/// Copies `from` into `log` until `room` bytes were written, then says so once and drops the
/// rest until the writer closes its end.
fn copy_bounded(mut from: impl Read, mut log: File, mut room: u64, cap: u64) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut said = false;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        if room > 0 {
            let take = (n as u64).min(room) as usize;
            if log.write_all(&buf[..take]).is_err() {
                // A log that cannot be written (disk full) drops the rest like a full one.
                room = 0;
                said = true;
                continue;
            }
            room -= take as u64;
        }
        if room == 0 && !said {
            said = true;
            let _ = writeln!(
                log,
                "\n[pablo: this log reached its limit of {cap} bytes; the rest of the program's \
                 stderr was dropped]"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_is_cut_at_the_cap_with_a_note_and_an_old_log_is_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.log");
        std::fs::write(&path, vec![b'o'; 200]).unwrap();
        let sink = bounded_log(&path, 100).unwrap();
        assert_eq!(sink.start, 0);
        assert_eq!(
            std::fs::read(dir.path().join("s.log.old")).unwrap().len(),
            200
        );
        let mut w = sink.stderr;
        w.write_all(&vec![b'x'; 10_000]).unwrap();
        drop(w);
        // The copier ends when the writer is gone; wait for its note.
        let mut text = String::new();
        for _ in 0..200 {
            text = std::fs::read_to_string(&path).unwrap();
            if text.contains("limit") {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(text.starts_with(&"x".repeat(100)), "{text}");
        assert!(text.contains("limit of 100 bytes"), "{text}");
        assert!(text.len() < 300, "{}", text.len());
    }
}
