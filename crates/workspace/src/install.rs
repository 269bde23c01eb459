//! Atomic installs: the new bytes go to a private temporary file beside the target, fsynced, and
//! are renamed over it only after the revision and the cancellation token were checked one last
//! time. Temporary files left by a process that died between create and rename are removed the
//! next time their target is written.

use std::ffi::OsStr;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags};
use rustix::io::Errno;
use tokio_util::sync::CancellationToken;

use super::{
    FileBytes, Installed, RelPath, TEMP_SUFFIX, Workspace, WorkspaceError, io_err, revision_of,
};

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Workspace {
    /// Replaces (or creates) `rel` with `bytes`, atomically, if its revision is still
    /// `expected` (`None`: the file must not exist). See the module docs for the steps.
    #[cfg(any(test, feature = "test-support"))]
    pub fn install(
        &self,
        rel: &RelPath,
        bytes: &[u8],
        expected: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<Installed, WorkspaceError> {
        self.install_with(rel, bytes, expected, cancel, &mut |_| Ok(()))
    }

    /// [`Workspace::install`], handing `before` the bytes being replaced (`None`: a new file)
    /// once they have passed the revision check and before anything is written: what `before`
    /// sees is exactly what the rename will replace, or the install fails. An error from `before`
    /// stops the install with nothing written (a checkpoint that cannot be kept).
    pub fn install_with(
        &self,
        rel: &RelPath,
        bytes: &[u8],
        expected: Option<&str>,
        cancel: &CancellationToken,
        before: &mut dyn FnMut(Option<&FileBytes>) -> Result<(), WorkspaceError>,
    ) -> Result<Installed, WorkspaceError> {
        let name = rel.file_name().ok_or_else(|| WorkspaceError::IsDirectory {
            path: ".".to_string(),
        })?;
        self.check_not_credential(rel)?;
        let dir = self.open_parent(rel, expected.is_none())?;
        let current = self.read_in_dir(rel, &dir, name)?;
        check_expected(rel, expected, current.as_ref().map(|c| c.revision.as_str()))?;
        before(current.as_ref())?;
        remove_stale_temps(&dir, name);

        // The original's permission bits; a new file gets the usual 0666 less the umask.
        let mode = current.as_ref().map(|c| c.mode);
        let temp_name = temp_name_for(name);
        // The creation mode is filtered by the umask; the original bits are put back exactly.
        let guard = create_temp(
            rel,
            &dir,
            &temp_name,
            bytes,
            mode.unwrap_or(0o666) & 0o777,
            mode,
        )?;

        // Last checks, as close to the rename as possible.
        if cancel.is_cancelled() {
            return Err(WorkspaceError::Cancelled {
                path: rel.to_string(),
            });
        }
        let now = self.read_in_dir(rel, &dir, name)?;
        check_expected(rel, expected, now.as_ref().map(|c| c.revision.as_str()))?;

        let renamed = if expected.is_none() {
            // A file that appeared since the check must not be clobbered.
            match rustix::fs::renameat_with(
                &dir,
                temp_name.as_str(),
                &dir,
                name,
                RenameFlags::NOREPLACE,
            ) {
                Err(Errno::INVAL) | Err(Errno::NOSYS) => {
                    rustix::fs::renameat(&dir, temp_name.as_str(), &dir, name)
                }
                other => other,
            }
        } else {
            rustix::fs::renameat(&dir, temp_name.as_str(), &dir, name)
        };
        match renamed {
            Ok(()) => {}
            Err(Errno::EXIST) => {
                return Err(WorkspaceError::AlreadyExists {
                    path: rel.to_string(),
                    current: self
                        .read_in_dir(rel, &dir, name)
                        .ok()
                        .flatten()
                        .map(|f| f.revision)
                        .unwrap_or_default(),
                });
            }
            Err(e) => return Err(io_err(rel.display(), "rename into place", e)),
        }
        guard.disarm();
        // Committed from here on; a failed directory fsync only weakens durability.
        let durable = rustix::fs::fsync(&dir).is_ok();
        Ok(Installed {
            revision: revision_of(bytes),
            created: current.is_none(),
            durable,
        })
    }
}

pub(super) fn check_expected(
    rel: &RelPath,
    expected: Option<&str>,
    current: Option<&str>,
) -> Result<(), WorkspaceError> {
    match (expected, current) {
        (None, None) => Ok(()),
        (None, Some(cur)) => Err(WorkspaceError::AlreadyExists {
            path: rel.to_string(),
            current: cur.to_string(),
        }),
        (Some(_), None) => Err(WorkspaceError::RevisionMismatch {
            path: rel.to_string(),
            detail: "the file no longer exists; to create it, pass expected_revision: null"
                .to_string(),
            current: None,
        }),
        (Some(exp), Some(cur)) if exp.eq_ignore_ascii_case(cur) => Ok(()),
        (Some(exp), Some(cur)) => Err(WorkspaceError::RevisionMismatch {
            path: rel.to_string(),
            detail: format!(
                "the file changed: expected revision {exp}, current revision is {cur}; read it \
                 again and redo the change"
            ),
            current: Some(cur.to_string()),
        }),
    }
}

/// Writes `bytes` to a new temporary file `temp_name` in `dir` (created with `create_mode`, then
/// set to exactly `exact_mode` when given) and fsyncs it. The returned guard removes the file
/// unless disarmed after the rename; a failure on the way removes it at once.
pub(super) fn create_temp<'a>(
    rel: &RelPath,
    dir: &'a OwnedFd,
    temp_name: &'a str,
    bytes: &[u8],
    create_mode: u32,
    exact_mode: Option<u32>,
) -> Result<TempGuard<'a>, WorkspaceError> {
    let tmp = rustix::fs::openat(
        dir,
        temp_name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(create_mode),
    )
    .map_err(|e| io_err(rel.display(), "create a temporary file", e))?;
    let guard = TempGuard {
        dir,
        name: temp_name,
        armed: true,
    };
    let mut file = std::fs::File::from(tmp);
    file.write_all(bytes)
        .map_err(|e| io_err(rel.display(), "write the temporary file", e))?;
    if let Some(m) = exact_mode {
        rustix::fs::fchmod(&file, Mode::from_raw_mode(m))
            .map_err(|e| io_err(rel.display(), "set the file mode", e))?;
    }
    file.sync_all()
        .map_err(|e| io_err(rel.display(), "fsync the temporary file", e))?;
    Ok(guard)
}

/// Removes the temporary file unless the rename happened.
pub(super) struct TempGuard<'a> {
    pub(super) dir: &'a OwnedFd,
    pub(super) name: &'a str,
    pub(super) armed: bool,
}

impl TempGuard<'_> {
    pub(super) fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for TempGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = rustix::fs::unlinkat(self.dir, self.name, AtFlags::empty());
        }
    }
}

/// `.NAME.PID-N-RANDOM.pablo-tmp`, kept under the 255-byte name limit.
pub(super) fn temp_name_for(name: &str) -> String {
    let mut stem: String = String::new();
    for ch in name.chars() {
        if stem.len() + ch.len_utf8() > 180 {
            break;
        }
        stem.push(ch);
    }
    format!(
        ".{stem}.{}-{}-{:08x}{TEMP_SUFFIX}",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed),
        fastrand::u32(..)
    )
}

/// The pid in a temporary name made by [`temp_name_for`] for `name`.
fn temp_owner(entry: &str, name: &str) -> Option<u32> {
    let stem_prefix = format!(".{}", name.get(..name.len().min(180)).unwrap_or(name));
    let rest = entry.strip_suffix(TEMP_SUFFIX)?;
    let rest = rest.strip_prefix(stem_prefix.as_str())?;
    let rest = rest.strip_prefix('.')?;
    rest.split('-').next()?.parse().ok()
}

/// Deletes temporary files for `name` left by processes that no longer run (a crash or SIGKILL
/// between create and rename). Files of live processes are theirs to finish.
pub(super) fn remove_stale_temps(dir: &OwnedFd, name: &str) {
    let Ok(entries) = rustix::fs::Dir::read_from(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(entry_name) = entry.file_name().to_str() else {
            continue;
        };
        let Some(pid) = temp_owner(entry_name, name) else {
            continue;
        };
        let alive = pid == std::process::id()
            || rustix::process::Pid::from_raw(pid as i32)
                .map(|p| rustix::process::test_kill_process(p) != Err(Errno::SRCH))
                .unwrap_or(false);
        if !alive {
            let _ = rustix::fs::unlinkat(dir, entry_name, AtFlags::empty());
        }
    }
}

/// Whether `name` (from a directory entry) is a temporary file of ours.
pub fn is_temp_name(name: &OsStr) -> bool {
    name.as_bytes().ends_with(TEMP_SUFFIX.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_carry_the_pid_and_are_recognised() {
        let t = temp_name_for("notes.txt");
        assert!(t.starts_with(".notes.txt."), "{t}");
        assert!(is_temp_name(OsStr::new(&t)));
        assert_eq!(temp_owner(&t, "notes.txt"), Some(std::process::id()));
        assert_eq!(temp_owner(&t, "notes"), None);
        assert_eq!(temp_owner(".notes.txt.x", "notes.txt"), None);
    }

    #[test]
    fn temp_name_of_a_long_name_fits_in_255_bytes() {
        let long = "é".repeat(127);
        let t = temp_name_for(&long);
        assert!(t.len() <= 255, "{}", t.len());
        assert_eq!(temp_owner(&t, &long), Some(std::process::id()));
    }
}
