//! The repository's own Markdown, which the docs tests read.

use std::path::{Path, PathBuf};

pub fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md"), root.join("BENCHMARKS.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "md") {
            files.push(p);
        }
    }
    files
}
