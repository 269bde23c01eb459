//! The workspace handle: no-follow, directory-relative file access, revisions, atomic install.
