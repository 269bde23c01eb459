//! The documentation a person has with the clone: every `pablo` command it names exists in the
//! binary's `--help`. The checks that need no binary (links, error codes) are in
//! `src/tests/docs.rs`.

use crate::support::repo_docs::markdown_files;
use std::path::Path;

/// The subcommands `pablo [WORDS…] --help` lists under `Commands:`.
fn subcommands(words: &[&str]) -> Vec<String> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pablo"))
        .args(words)
        .arg("--help")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// The words after `pablo` in each inline code span that starts with `pablo ` (`pablo policy
/// trust` gives `["policy", "trust"]`), up to the first that is not a lowercase word.
fn pablo_commands(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for span in text.split('`').skip(1).step_by(2) {
        let Some(rest) = span.strip_prefix("pablo ") else {
            continue;
        };
        let words: Vec<String> = rest
            .split_whitespace()
            .take_while(|w| {
                w.chars().all(|c| c.is_ascii_lowercase() || c == '-') && !w.starts_with('-')
            })
            .map(str::to_string)
            .collect();
        if !words.is_empty() {
            out.push(words);
        }
    }
    out
}

#[test]
fn every_pablo_command_the_docs_name_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let top = subcommands(&[]);
    assert!(top.contains(&"run".to_string()), "{top:?}");
    let mut nested_of: std::collections::HashMap<String, Vec<String>> = Default::default();
    let mut wrong = Vec::new();
    for file in markdown_files(root) {
        let text = std::fs::read_to_string(&file).unwrap();
        for words in pablo_commands(&text) {
            if !top.contains(&words[0]) {
                wrong.push(format!("{}: `pablo {}`", file.display(), words.join(" ")));
                continue;
            }
            let nested = nested_of
                .entry(words[0].clone())
                .or_insert_with(|| subcommands(&[words[0].as_str()]));
            if !nested.is_empty()
                && let Some(second) = words.get(1)
                && !nested.contains(second)
            {
                wrong.push(format!("{}: `pablo {}`", file.display(), words.join(" ")));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "commands that do not exist:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_command_finder_reads_inline_code_only() {
    assert_eq!(
        pablo_commands("run `pablo policy trust --revoke` or `pablo run TASK`, not pablo trust"),
        [vec!["policy", "trust"], vec!["run"]]
    );
}
