//! Following a path's symbolic links without asking about the names already known to hold none.
//!
//! The known-safe checks follow the links of every operand and of the program itself, once per
//! command. `std::fs::canonicalize` (glibc's `realpath`) asks the kernel about each name of the
//! path, from `/` down: for `src/main.rs` in `/home/me/code/project` that is six questions, four of
//! them about the workspace's own directories, whose canonical form pablo already holds. Each
//! question is a system call (about a microsecond on a virtual machine, where a whole decision
//! costs 15–20), and a workspace deep in the home directory pays more of them than a shallow one.
//!
//! So a path beneath a directory already canonical is followed from that directory: only the
//! names below it are asked about (`readlink`, which says "not a link" for a directory or file).
//! A name that does not exist ends the questions (nothing below it can be a link); anything
//! unusual — a link, a `..`, a trailing `/`, an error — falls back to the full walk. Either way
//! the answer is the one the full walk gives (the tests compare them). The canonical directory
//! is trusted to stay what it was: the workspace root (every check of "inside the workspace"
//! compares against its text already) or a `PATH` directory the resolver canonicalised, which a
//! sandboxed command cannot replace (it writes beneath the workspace, not beside it).

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

/// What following `rel` from a canonical `root` found without the full walk.
#[derive(Debug, PartialEq)]
enum Beneath {
    /// Every name exists and none is a link: the path is its own canonical form.
    Plain(PathBuf),
    /// No link up to a name that does not exist: the path as written, the missing names
    /// included (what [`resolve_existing`] gives), or `None` when a missing part holds `..`.
    Missing(Option<PathBuf>),
    /// Ask the full walk: a link, `..`, an absolute `rel`, a trailing `/`, an error.
    Unsure,
}

fn beneath(root: &Path, rel: &Path) -> Beneath {
    if rel.is_absolute() || rel.as_os_str().as_encoded_bytes().ends_with(b"/") {
        // `file/` is an error for the full walk when `file` is not a directory.
        return Beneath::Unsure;
    }
    let mut out = root.to_path_buf();
    let mut components = rel.components();
    while let Some(component) = components.next() {
        match component {
            Component::CurDir => {}
            Component::Normal(name) => {
                out.push(name);
                // `readlink` answers `EINVAL` for a name that exists and is not a link.
                match rustix::fs::readlink(&out, Vec::new()) {
                    Err(rustix::io::Errno::INVAL) => {}
                    Err(rustix::io::Errno::NOENT) => {
                        return Beneath::Missing(missing(out, components));
                    }
                    _ => return Beneath::Unsure,
                }
            }
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Beneath::Unsure;
            }
        }
    }
    Beneath::Plain(out)
}

/// `out` followed by names that do not exist (so hold no link); `None` past a `..`.
fn missing(mut out: PathBuf, rest: std::path::Components<'_>) -> Option<PathBuf> {
    for component in rest {
        match component {
            Component::CurDir => {}
            Component::Normal(name) => out.push(name),
            _ => return None,
        }
    }
    Some(out)
}

/// [`std::fs::canonicalize`] of `root.join(rel)` for a canonical `root`.
pub(crate) fn canonical_beneath(root: &Path, rel: &Path) -> Option<PathBuf> {
    match beneath(root, rel) {
        Beneath::Plain(path) => Some(path),
        Beneath::Missing(_) => None,
        Beneath::Unsure => std::fs::canonicalize(root.join(rel)).ok(),
    }
}

/// [`resolve_existing`] of `root.join(rel)` for a canonical `root`.
pub(crate) fn existing_beneath(root: &Path, rel: &Path) -> Option<PathBuf> {
    match beneath(root, rel) {
        Beneath::Plain(path) => Some(path),
        Beneath::Missing(path) => path,
        Beneath::Unsure => resolve_existing(&root.join(rel)),
    }
}

/// The file `path` leads to, for a `path` whose directory is canonical: one question about its
/// last name instead of one per name.
pub(crate) fn canonical_in_canonical_dir(path: &Path) -> std::io::Result<PathBuf> {
    if let (Some(dir), Some(name)) = (path.parent(), path.file_name())
        && let Beneath::Plain(plain) = beneath(dir, Path::new(name))
    {
        return Ok(plain);
    }
    std::fs::canonicalize(path)
}

/// `path` with every link resolved: the path itself when it exists, otherwise its nearest
/// existing ancestor resolved plus the missing names (which, not existing, hold no link). `None`
/// when a missing part contains `..` (what it would resolve to cannot be known).
pub(crate) fn resolve_existing(path: &Path) -> Option<PathBuf> {
    if let Ok(p) = std::fs::canonicalize(path) {
        return Some(p);
    }
    let mut missing: Vec<&OsStr> = Vec::new();
    let mut cur = path;
    loop {
        let name = cur.file_name()?;
        if name == ".." {
            return None;
        }
        missing.push(name);
        cur = cur.parent()?;
        if let Ok(mut out) = std::fs::canonicalize(cur) {
            for m in missing.iter().rev() {
                if *m == "." {
                    continue;
                }
                if *m == ".." {
                    return None;
                }
                out.push(m);
            }
            return Some(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// Every way of asking gives what the full walk gives.
    fn agree(root: &Path, rel: &str) {
        let rel = Path::new(rel);
        assert_eq!(
            canonical_beneath(root, rel),
            std::fs::canonicalize(root.join(rel)).ok(),
            "canonical {rel:?}"
        );
        assert_eq!(
            existing_beneath(root, rel),
            resolve_existing(&root.join(rel)),
            "existing {rel:?}"
        );
    }

    #[test]
    fn following_from_a_canonical_root_agrees_with_the_full_walk_on_links_and_missing_names() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::write(root.join("src/main.rs"), "").unwrap();
        std::fs::write(outside.path().join("secret"), "").unwrap();
        symlink(outside.path(), root.join("out")).unwrap();
        symlink("src", root.join("alias")).unwrap();
        symlink(outside.path().join("secret"), root.join("src/deep/key")).unwrap();
        symlink("nowhere", root.join("dangling")).unwrap();
        for rel in [
            "",
            ".",
            "src",
            "./src/main.rs",
            "src/deep",
            "src/main.rs/",
            "src/",
            "out/secret",
            "alias/main.rs",
            "src/deep/key",
            "dangling",
            "dangling/x",
            "missing",
            "missing/a/b",
            "src/../out/secret",
            "missing/../x",
            "missing/./x",
            "./missing",
            "src/main.rs/x",
            "/etc/hostname",
        ] {
            agree(&root, rel);
        }
    }

    #[test]
    fn a_link_as_the_last_name_in_a_canonical_directory_is_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::write(dir.join("real"), "").unwrap();
        symlink(dir.join("real"), dir.join("link")).unwrap();
        assert_eq!(
            canonical_in_canonical_dir(&dir.join("link")).unwrap(),
            dir.join("real")
        );
        assert_eq!(
            canonical_in_canonical_dir(&dir.join("real")).unwrap(),
            dir.join("real")
        );
        assert!(canonical_in_canonical_dir(&dir.join("gone")).is_err());
    }
}
