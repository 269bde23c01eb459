//! Workspace-relative paths as the model writes them, checked before anything touches the disk.
//!
//! These rules are lexical: they refuse spellings that can never name a file inside the workspace
//! (or that mean something else on another system). Symlinks and escapes that only show up on disk
//! are caught later, by the no-follow open itself, never by a check on the path string.

use std::fmt;

/// Which rule refused a path. The `Display` text goes into the `path_refused` message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathRule {
    Empty,
    Absolute,
    ParentComponent,
    NulByte,
    DriveLetter,
    Backslash,
    ReservedName(String),
    NameTooLong,
    PathTooLong,
    /// A component is a symbolic link (found while opening).
    Symlink,
    /// The kernel said the path resolves outside the workspace.
    Outside,
}

impl fmt::Display for PathRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathRule::Empty => write!(f, "the path is empty; name a file inside the workspace"),
            PathRule::Absolute => write!(
                f,
                "absolute paths are not accepted; use a path relative to the workspace"
            ),
            PathRule::ParentComponent => {
                write!(f, "a `..` component could leave the workspace")
            }
            PathRule::NulByte => write!(f, "the path contains a NUL byte"),
            PathRule::DriveLetter => write!(f, "drive letters (`C:`) are not workspace paths"),
            PathRule::Backslash => {
                write!(f, "backslashes are not path separators here; use `/`")
            }
            PathRule::ReservedName(name) => {
                write!(f, "`{name}` is a reserved device name")
            }
            PathRule::NameTooLong => write!(f, "a path component is longer than 255 bytes"),
            PathRule::PathTooLong => write!(f, "the path is longer than 4095 bytes"),
            PathRule::Symlink => write!(
                f,
                "the path passes through a symbolic link, and links are never followed"
            ),
            PathRule::Outside => write!(f, "the path resolves outside the workspace"),
        }
    }
}

/// A checked path relative to the workspace root: no empty, `.` or `..` components, `/`-joined.
/// The empty path (no components) is the workspace root itself.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelPath {
    joined: String,
}

const RESERVED: &[&str] = &[
    "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$", "COM0", "COM1", "COM2", "COM3", "COM4",
    "COM5", "COM6", "COM7", "COM8", "COM9", "COM¹", "COM²", "COM³", "LPT0", "LPT1", "LPT2", "LPT3",
    "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9", "LPT¹", "LPT²", "LPT³",
];

/// The device name a component would open on Windows, if any: the part before the first dot,
/// with trailing spaces and dots dropped, compared without case.
fn reserved_device(component: &str) -> Option<&'static str> {
    let stem = component.split('.').next().unwrap_or(component);
    let stem = stem.trim_end_matches([' ', '.']);
    RESERVED
        .iter()
        .copied()
        .find(|r| r.eq_ignore_ascii_case(stem))
}

fn has_drive_prefix(component: &str) -> bool {
    let b = component.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

impl RelPath {
    /// The workspace root.
    pub fn root() -> Self {
        Self {
            joined: String::new(),
        }
    }

    /// Checks a path as the model wrote it. `""` and `"."` are the root; callers that need a
    /// file refuse the root themselves.
    pub fn parse(raw: &str) -> Result<Self, PathRule> {
        if raw.contains('\0') {
            return Err(PathRule::NulByte);
        }
        if raw.len() > 4095 {
            return Err(PathRule::PathTooLong);
        }
        if raw.contains('\\') {
            return Err(PathRule::Backslash);
        }
        if raw.starts_with('/') {
            return Err(PathRule::Absolute);
        }
        let mut parts: Vec<&str> = Vec::new();
        for component in raw.split('/') {
            match component {
                "" | "." => continue,
                ".." => return Err(PathRule::ParentComponent),
                c => {
                    if has_drive_prefix(c) {
                        return Err(PathRule::DriveLetter);
                    }
                    if c.len() > 255 {
                        return Err(PathRule::NameTooLong);
                    }
                    if let Some(dev) = reserved_device(c) {
                        return Err(PathRule::ReservedName(dev.to_string()));
                    }
                    parts.push(c);
                }
            }
        }
        Ok(Self {
            joined: parts.join("/"),
        })
    }

    /// Same as [`RelPath::parse`], but the root is refused (a file is needed).
    pub fn parse_file(raw: &str) -> Result<Self, PathRule> {
        let p = Self::parse(raw)?;
        if p.is_root() {
            return Err(PathRule::Empty);
        }
        Ok(p)
    }

    pub fn is_root(&self) -> bool {
        self.joined.is_empty()
    }

    /// `a/b/c`, or `""` for the root.
    pub fn as_str(&self) -> &str {
        &self.joined
    }

    /// `.` for the root, the joined path otherwise (for messages and previews).
    pub fn display(&self) -> &str {
        if self.joined.is_empty() {
            "."
        } else {
            &self.joined
        }
    }

    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.joined.split('/').filter(|c| !c.is_empty())
    }

    /// The last component (`None` for the root).
    pub fn file_name(&self) -> Option<&str> {
        self.components().last()
    }

    /// The path without its last component (the root for a top-level name).
    pub fn parent(&self) -> RelPath {
        match self.joined.rfind('/') {
            Some(i) => RelPath {
                joined: self.joined[..i].to_string(),
            },
            None => RelPath::root(),
        }
    }

    /// `self/name` (for names read from a directory, which never contain `/`).
    pub fn join(&self, name: &str) -> RelPath {
        if self.joined.is_empty() {
            RelPath {
                joined: name.to_string(),
            }
        } else {
            RelPath {
                joined: format!("{}/{}", self.joined, name),
            }
        }
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(p: &str) -> PathRule {
        RelPath::parse(p).unwrap_err()
    }

    #[test]
    fn plain_relative_paths_are_normalised() {
        assert_eq!(
            RelPath::parse("src/main.rs").unwrap().as_str(),
            "src/main.rs"
        );
        assert_eq!(
            RelPath::parse("./src//main.rs/").unwrap().as_str(),
            "src/main.rs"
        );
        assert!(RelPath::parse("").unwrap().is_root());
        assert!(RelPath::parse(".").unwrap().is_root());
        assert!(RelPath::parse("./").unwrap().is_root());
    }

    #[test]
    fn names_that_only_look_odd_are_accepted() {
        for ok in [
            "..foo",
            "foo..",
            "...",
            ".hidden",
            "a/.b/c",
            "con_notes.txt",
            "COM10",
            "~",
            "a b",
        ] {
            assert!(RelPath::parse(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn absolute_paths_are_refused() {
        assert_eq!(rule("/etc/passwd"), PathRule::Absolute);
        assert_eq!(rule("//server/share"), PathRule::Absolute);
    }

    #[test]
    fn parent_components_are_refused_anywhere() {
        for p in ["..", "../x", "a/../b", "a/..", "./../x", "a/b/../../.."] {
            assert_eq!(rule(p), PathRule::ParentComponent, "{p}");
        }
    }

    #[test]
    fn nul_bytes_are_refused() {
        assert_eq!(rule("a\0b"), PathRule::NulByte);
    }

    #[test]
    fn drive_letters_are_refused() {
        assert_eq!(rule("C:"), PathRule::DriveLetter);
        assert_eq!(rule("c:foo"), PathRule::DriveLetter);
        assert_eq!(rule("a/D:/x"), PathRule::DriveLetter);
    }

    #[test]
    fn backslashes_are_refused() {
        assert_eq!(rule("a\\b"), PathRule::Backslash);
        assert_eq!(rule("..\\x"), PathRule::Backslash);
        assert_eq!(rule("C:\\Windows"), PathRule::Backslash);
    }

    #[test]
    fn reserved_device_names_are_refused_with_or_without_extension() {
        for (p, dev) in [
            ("CON", "CON"),
            ("con", "CON"),
            ("nul.txt", "NUL"),
            ("a/aux.c", "AUX"),
            ("PRN.tar.gz", "PRN"),
            ("com1", "COM1"),
            ("LPT9.log", "LPT9"),
            ("COM¹", "COM¹"),
            ("con .txt", "CON"),
        ] {
            assert_eq!(rule(p), PathRule::ReservedName(dev.to_string()), "{p}");
        }
    }

    #[test]
    fn overlong_names_are_refused() {
        assert_eq!(rule(&"a".repeat(256)), PathRule::NameTooLong);
        assert_eq!(rule(&"abc/".repeat(1100)), PathRule::PathTooLong);
    }

    #[test]
    fn parse_file_refuses_the_root() {
        assert_eq!(RelPath::parse_file("./").unwrap_err(), PathRule::Empty);
    }

    #[test]
    fn parent_and_join_round_trip() {
        let p = RelPath::parse("a/b/c.txt").unwrap();
        assert_eq!(p.parent().as_str(), "a/b");
        assert_eq!(p.file_name(), Some("c.txt"));
        assert_eq!(p.parent().join("c.txt"), p);
        assert!(RelPath::parse("x").unwrap().parent().is_root());
    }

    #[test]
    fn every_rule_message_says_why() {
        let msg = PathRule::ParentComponent.to_string();
        assert!(msg.contains(".."), "{msg}");
        assert!(PathRule::Symlink.to_string().contains("symbolic link"));
    }
}
