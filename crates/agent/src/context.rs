//! What the model is told before the conversation: the system prompt from `assets/` and the
//! project's own instructions from `AGENTS.md` files.
//!
//! `AGENTS.md` files are collected from the repository root (the nearest ancestor holding `.git`)
//! down to the workspace directory and joined root first, so the file nearest the work has the
//! last word. The total is capped so a huge file cannot crowd out the conversation. A file above
//! the workspace that another user owns is left out: it is not the person's, nor the project's.

use std::path::{Path, PathBuf};

/// The bundled system prompt.
pub const SYSTEM_PROMPT: &str = include_str!("../../../assets/system_prompt.md");

/// Cap on the joined project instructions.
pub const MAX_PROJECT_INSTRUCTIONS: usize = 32 * 1024;

/// Project instructions and what happened while collecting them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProjectInstructions {
    /// The files' text, joined root first.
    pub text: String,
    /// The files that were read, in that order.
    pub files: Vec<PathBuf>,
    /// Set when the cap cut the text.
    pub truncated: bool,
}

/// The repository root: the nearest ancestor (or `dir` itself) that holds `.git`.
pub(crate) fn repository_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The last `cap` bytes of `file` at most (all of it when it is smaller), read without
/// following a link and without reading the rest: only the end of an instructions file can
/// survive the cut below, so a 3 GiB file (sparse, costing no disk) costs `cap` bytes to read.
/// A file that is more than `cap` bytes gets one more byte, so the cut is noticed.
fn read_tail(file: &Path, cap: u64) -> Option<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(file)
        .ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let len = meta.len();
    let want = cap + 1;
    if len > want {
        f.seek(SeekFrom::Start(len - want)).ok()?;
    }
    let mut bytes = Vec::with_capacity(len.min(want) as usize);
    f.take(want).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// Collects `AGENTS.md` from the repository root down to `workspace` (just the workspace when it
/// is not inside a repository).
pub fn project_instructions(workspace: &Path) -> ProjectInstructions {
    let root = repository_root(workspace).unwrap_or_else(|| workspace.to_path_buf());
    let mut dirs: Vec<&Path> = workspace
        .ancestors()
        .take_while(|d| d.starts_with(&root))
        .collect();
    dirs.reverse();
    let mut out = ProjectInstructions::default();
    for dir in dirs {
        let file = dir.join("AGENTS.md");
        // Symlinked or special files are not followed: instructions come from the tree itself.
        let Ok(meta) = std::fs::symlink_metadata(&file) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        // Above the workspace, a file is the person's only if they (or root) own it: another
        // user may own a directory the repository root lies in (a shared `/tmp`, a colleague's
        // checkout) and write instructions there.
        if dir != workspace && !owned_by_me_or_root(&meta) {
            continue;
        }
        let Some(bytes) = read_tail(&file, MAX_PROJECT_INSTRUCTIONS as u64) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        if !out.text.is_empty() {
            out.text.push_str("\n\n");
        }
        out.text.push_str(&format!("<!-- {} -->\n", file.display()));
        out.text.push_str(text.trim_end());
        out.files.push(file);
    }
    if out.text.len() > MAX_PROJECT_INSTRUCTIONS {
        // The nearest file has the last word, so what goes is the start: the files nearest the
        // repository root. The cut moves forward to a line start, or at least a character.
        let excess = out.text.len() - MAX_PROJECT_INSTRUCTIONS;
        let mut cut = excess;
        while !out.text.is_char_boundary(cut) {
            cut += 1;
        }
        if let Some(nl) = out.text[cut..].find('\n')
            && nl < 1024
        {
            cut += nl + 1;
        }
        out.text = format!(
            "[project instructions cut: the first {cut} bytes, from the files nearest the \
             repository root, were left out to stay within {MAX_PROJECT_INSTRUCTIONS} bytes]\n{}",
            &out.text[cut..]
        );
        out.truncated = true;
    }
    out
}

/// Whether the person pablo runs as, or root, owns the file `meta` describes.
fn owned_by_me_or_root(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    let owner = meta.uid();
    owner == 0 || owner == rustix::process::geteuid().as_raw()
}

/// The full system prompt for a workspace.
pub fn system_prompt(workspace: &Path, project: &ProjectInstructions) -> String {
    let mut s = SYSTEM_PROMPT.trim_end().to_string();
    s.push_str(&format!(
        "\n\n# Environment\n\nWorkspace: {}\nAll paths you pass to tools are relative to it, with forward slashes.\n",
        workspace.display()
    ));
    if !project.text.is_empty() {
        s.push_str("\n# Project instructions (AGENTS.md)\n\n");
        s.push_str(&project.text);
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_agents_file_comes_last() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("AGENTS.md"), "root rules").unwrap();
        std::fs::write(root.join("a/b/AGENTS.md"), "leaf rules").unwrap();
        let p = project_instructions(&root.join("a/b"));
        assert_eq!(p.files.len(), 2);
        let r = p.text.find("root rules").unwrap();
        let l = p.text.find("leaf rules").unwrap();
        assert!(r < l);
        assert!(!p.truncated);
    }

    #[test]
    fn huge_instructions_are_capped_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "é".repeat(40_000)).unwrap();
        let p = project_instructions(dir.path());
        assert!(p.truncated);
        assert!(p.text.len() < MAX_PROJECT_INSTRUCTIONS + 200);
        assert!(
            p.text.starts_with("[project instructions cut"),
            "{}",
            &p.text[..100]
        );
        assert!(p.text.ends_with('é'));
    }

    #[test]
    fn over_the_cap_the_root_file_is_cut_and_the_nearest_is_kept_whole() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("crate")).unwrap();
        let root_rules: String = (0..4_000).map(|i| format!("root rule {i}\n")).collect();
        std::fs::write(root.join("AGENTS.md"), &root_rules).unwrap();
        std::fs::write(root.join("crate/AGENTS.md"), "nearest rule: use tabs\n").unwrap();
        let p = project_instructions(&root.join("crate"));
        assert!(p.truncated);
        assert!(p.text.len() <= MAX_PROJECT_INSTRUCTIONS + 200);
        assert!(
            p.text.ends_with("nearest rule: use tabs"),
            "{}",
            &p.text[p.text.len() - 80..]
        );
        assert!(p.text.contains("root rule 3999"));
        assert!(!p.text.contains("root rule 0\n"));
    }

    #[test]
    fn files_above_the_repository_root_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "outside").unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        let p = project_instructions(&repo);
        assert!(!p.text.contains("outside"));
    }
}
