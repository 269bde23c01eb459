//! The bytes of images attached in sessions, stored once each beside the journals.
//!
//! A journal line describes an attached image by its SHA-256 and the bytes live in
//! `images/<sha256>.<ext>` in the sessions directory, not inline as base64: every listing, resume
//! and fork would otherwise parse megabytes per image, and the same screenshot attached twice (or
//! carried into a fork) would be stored twice. The directory is shared by all sessions of the
//! store, so a fork, which copies journal lines into a new session, needs no copy of the bytes.
//! The name is the hash of the content, so writing is idempotent, and loading checks the hash: a
//! damaged or missing copy leaves the image unloaded, which resume tells the model about.

use std::path::{Path, PathBuf};

use pablo_protocol::{Event, Image};

/// `images/` beside the journal at `journal`.
pub(crate) fn dir_for(journal: &Path) -> PathBuf {
    journal
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
        .join("images")
}

fn file_name(image: &Image) -> Option<String> {
    // The hash names the file; anything but hex would be a path the journal could steer.
    if image.sha256.len() != 64 || !image.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let ext = image.format().map_or("bin", |f| f.extension());
    Some(format!("{}.{ext}", image.sha256))
}

/// Writes the images an event attaches into `dir`, each once (a copy already there is kept).
/// Written to a temporary name and renamed, so a crash leaves no half image under the real name.
pub(crate) fn store(dir: &Path, event: &Event) -> std::io::Result<()> {
    let Event::Attachments { images, .. } = event else {
        return Ok(());
    };
    for a in images {
        let Some(name) = file_name(&a.image) else {
            continue;
        };
        let path = dir.join(&name);
        if path.is_file() {
            continue;
        }
        let Some(bytes) = a.image.decode() else {
            continue;
        };
        std::fs::create_dir_all(dir)?;
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        std::fs::write(&tmp, &bytes)?;
        std::fs::rename(&tmp, &path)?;
    }
    Ok(())
}

/// Reads back the bytes of every image the events attach.
pub(crate) fn restore<'a>(dir: &Path, events: impl IntoIterator<Item = &'a mut Event>) {
    for event in events {
        let Event::Attachments { images, .. } = event else {
            continue;
        };
        for a in images {
            if let Some(name) = file_name(&a.image)
                && let Ok(bytes) = std::fs::read(dir.join(name))
            {
                a.image.load(&bytes);
            }
        }
    }
}
