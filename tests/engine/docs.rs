//! The documentation a person has with the clone: every relative link in README.md, docs/ and
//! BENCHMARKS.md resolves to a file inside the repository, and the error codes the docs list are
//! the ones pablo gives. The check of the commands the docs name runs the binary, in
//! `tests/docs.rs`.

use crate::support::repo_docs::markdown_files;
use std::path::Path;

/// The targets of `[text](target)` links.
fn link_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(end) = rest.find(')') {
            out.push(rest[..end].trim().to_string());
            rest = &rest[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_in_the_docs_resolves_inside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let canonical_root = root.canonicalize().unwrap();
    let mut broken = Vec::new();
    for file in markdown_files(root) {
        let text = std::fs::read_to_string(&file).unwrap();
        for target in link_targets(&text) {
            if target.starts_with("http://")
                || target.starts_with("https://")
                || target.starts_with('#')
                || target.starts_with("mailto:")
            {
                continue;
            }
            let path = target.split('#').next().unwrap_or("");
            let resolved = file.parent().unwrap().join(path);
            let inside = resolved
                .canonicalize()
                .is_ok_and(|p| p.starts_with(&canonical_root));
            if !inside {
                broken.push(format!("{}: ({target})", file.display()));
            }
        }
        assert!(
            !text.contains("../shared/"),
            "{} points outside the repository (../shared/)",
            file.display()
        );
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_finder_sees_links_and_their_targets() {
    assert_eq!(
        link_targets("see [a](docs/a.md) and [b](https://x.org/) [c](#top)"),
        ["docs/a.md", "https://x.org/", "#top"]
    );
}

#[test]
fn every_web_fetch_error_code_is_documented_in_the_tools_doc() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(root.join("crates/tools/src/fetch_rules.rs")).unwrap();
    let doc = std::fs::read_to_string(root.join("docs/tools.md")).unwrap();
    // `FetchError::X { .. } => ErrorCode::Y,` in its `Coded` impl.
    let codes: Vec<&str> = source
        .lines()
        .filter(|l| l.trim_start().starts_with("FetchError::"))
        .filter_map(|l| l.split_once("=> ErrorCode::"))
        .map(|(_, variant)| variant.trim_end_matches(',').trim())
        .map(|variant| {
            pablo::core::ErrorCode::ALL
                .iter()
                .find(|c| format!("{c:?}") == variant)
                .unwrap_or_else(|| panic!("no ErrorCode::{variant}"))
                .as_str()
        })
        .collect();
    assert!(codes.contains(&"dns_failed"), "{codes:?}");
    let missing: Vec<&&str> = codes
        .iter()
        .filter(|c| !doc.contains(&format!("`{c}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "undocumented web.fetch codes: {missing:?}"
    );
}

/// The codes of the tables in docs/errors.md: the first cell of every row, in backticks.
fn documented_codes(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`'))
        .map(|(code, _)| code.to_string())
        .collect()
}

#[test]
fn the_error_code_table_lists_every_code_once_and_nothing_else() {
    use std::collections::BTreeSet;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("docs/errors.md")).unwrap();
    let documented = documented_codes(&text);
    let unique: BTreeSet<&str> = documented.iter().map(String::as_str).collect();
    assert_eq!(unique.len(), documented.len(), "a code is listed twice");
    let codes: BTreeSet<&str> = pablo::core::ErrorCode::ALL
        .iter()
        .map(|c| c.as_str())
        .collect();
    let undocumented: Vec<_> = codes.difference(&unique).collect();
    let unknown: Vec<_> = unique.difference(&codes).collect();
    assert!(
        undocumented.is_empty() && unknown.is_empty(),
        "codes missing from docs/errors.md: {undocumented:?}; codes in it that pablo never \
         gives: {unknown:?}"
    );
}

#[test]
fn the_code_table_reader_sees_the_first_cell_of_each_row() {
    let text = "| code | meaning |\n|---|---|\n| `a_b` | x |\n| `c` | `d` y |\nprose `e`\n";
    assert_eq!(documented_codes(text), ["a_b", "c"]);
}
