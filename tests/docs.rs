//! The documentation a person has with the clone: every `pablo` command it names exists in the
//! binary's `--help`, every TOML snippet is a config `pablo config validate` accepts, every
//! command of a shell example parses, and every flag a synopsis names exists. A doc example
//! that does not work fails here. The checks that need no binary (links, error codes) are in
//! `src/tests/docs.rs`.
//!
//! A snippet that is not meant to be a whole config file (a fragment, a counter-example) says so
//! on its fence: ```` ```toml fragment ````.

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

/// A fenced block of a Markdown file: its info string (`toml`, `sh`), its text and the line its
/// text starts on.
struct Fenced {
    info: String,
    text: String,
    line: usize,
}

fn fenced_blocks(markdown: &str) -> Vec<Fenced> {
    let mut out = Vec::new();
    let mut open: Option<Fenced> = None;
    for (i, line) in markdown.lines().enumerate() {
        match (&mut open, line.trim_start().strip_prefix("```")) {
            (None, Some(info)) => {
                open = Some(Fenced {
                    info: info.trim().to_string(),
                    text: String::new(),
                    line: i + 2,
                });
            }
            (Some(_), Some(_)) => out.extend(open.take()),
            (Some(block), None) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

fn run_pablo(args: &[String], dir: &Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_pablo"))
        .args(args)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .current_dir(dir)
        .output()
        .unwrap()
}

/// The problems of the TOML snippets of `files`: each is written to a file and checked by
/// `pablo config validate`, as a person who copies it would.
fn broken_toml_snippets(files: &[std::path::PathBuf], dir: &Path) -> Vec<String> {
    let mut broken = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        for block in fenced_blocks(&text) {
            let mut info = block.info.split_whitespace();
            if info.next() != Some("toml") || info.any(|w| w == "fragment") {
                continue;
            }
            let snippet = dir.join("snippet.toml");
            std::fs::write(&snippet, &block.text).unwrap();
            let out = run_pablo(
                &[
                    "config".into(),
                    "validate".into(),
                    snippet.display().to_string(),
                ],
                dir,
            );
            if !out.status.success() {
                broken.push(format!(
                    "{}:{}: {}",
                    file.display(),
                    block.line,
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
    }
    broken
}

#[test]
fn every_toml_snippet_of_the_docs_is_a_valid_config() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let broken = broken_toml_snippets(&markdown_files(root), dir.path());
    assert!(
        broken.is_empty(),
        "config snippets that do not validate:\n{}",
        broken.join("\n")
    );
}

#[test]
fn a_broken_toml_snippet_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("doc.md");
    std::fs::write(
        &doc,
        "```toml\n[options.shell]\ntimeout_secs = 5\n```\n\n```toml fragment\nnot = = toml\n```\n",
    )
    .unwrap();
    let broken = broken_toml_snippets(&[doc], dir.path());
    assert_eq!(broken.len(), 1, "{broken:?}");
    assert!(broken[0].contains("timeout_secs"), "{broken:?}");
}

/// `line` split into words as `sh` would (quotes and backslashes; no expansion).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    w.push(c);
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => w.extend(chars.next()),
                        c => w.push(c),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
            '#' if word.is_none() => break,
            c if c.is_whitespace() => words.extend(word.take()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

/// The `pablo` command lines of the shell examples (```` ```sh ````, `bash`, `console`, `shell`)
/// of `files`, as words after `pablo`, with where they are.
fn shell_examples(files: &[std::path::PathBuf]) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        for block in fenced_blocks(&text) {
            let lang = block.info.split_whitespace().next().unwrap_or("");
            if !matches!(lang, "sh" | "bash" | "console" | "shell") {
                continue;
            }
            for (i, line) in block.text.lines().enumerate() {
                let line = line.trim().trim_start_matches("$ ");
                let words = shell_words(line);
                if words.first().map(String::as_str) == Some("pablo") {
                    let at = format!("{}:{}: {line}", file.display(), block.line + i);
                    out.push((at, words[1..].to_vec()));
                }
            }
        }
    }
    out
}

/// Whether clap accepts `words` as a pablo command line: parsed with `--help` added where the
/// options end, which makes pablo print help instead of running once every word before it was
/// understood (an unknown flag, a bad value or an unknown subcommand fails first). What clap
/// checks only after parsing is not seen: flags that exclude each other, a missing argument, the
/// value of a global flag written before the subcommand.
fn parses(words: &[String], dir: &Path) -> Result<(), String> {
    let mut args = words.to_vec();
    let end = args.iter().position(|w| w == "--").unwrap_or(args.len());
    args.insert(end, "--help".into());
    let out = run_pablo(&args, dir);
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

#[test]
fn every_pablo_command_of_a_shell_example_parses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let examples = shell_examples(&markdown_files(root));
    assert!(examples.len() >= 5, "{}", examples.len());
    let wrong: Vec<String> = examples
        .iter()
        .filter_map(|(at, words)| {
            parses(words, dir.path())
                .err()
                .map(|e| format!("{at}\n  {e}"))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "examples pablo does not parse:\n{}",
        wrong.join("\n")
    );
    // The check can fail: a flag pablo does not have, a value it refuses.
    for bad in [
        &["run", "--no-such-flag", "task"][..],
        &["run", "--reasoning", "extreme", "task"],
        &["policy", "chek", "--", "ls"],
    ] {
        let words: Vec<String> = bad.iter().map(|w| w.to_string()).collect();
        assert!(parses(&words, dir.path()).is_err(), "{bad:?}");
    }
    assert_eq!(
        shell_words(r#"pablo -c 'a."b"=x' run "say \"hi\"" # comment"#),
        ["pablo", "-c", r#"a."b"=x"#, "run", r#"say "hi""#]
    );
}

/// The long flags a synopsis line names (`[--json]`, `--format md|json`, `--since=7d`).
fn synopsis_flags(line: &str) -> Vec<String> {
    line.split(|c: char| c.is_whitespace() || "[]|(),".contains(c))
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| w.split('=').next().unwrap_or(w).to_string())
        .collect()
}

#[test]
fn every_flag_a_synopsis_of_the_docs_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut help_of: std::collections::HashMap<Vec<String>, String> = Default::default();
    let mut wrong = Vec::new();
    for file in markdown_files(root) {
        let text = std::fs::read_to_string(&file).unwrap();
        for block in fenced_blocks(&text) {
            for line in block.text.lines() {
                let Some(rest) = line.trim().strip_prefix("pablo ") else {
                    continue;
                };
                // The command's words (up to the first that is not one), then its flags, up to
                // the two spaces before a description or the `--` before a command.
                let words: Vec<String> = rest
                    .split_whitespace()
                    .take_while(|w| {
                        w.chars().all(|c| c.is_ascii_lowercase() || c == '-') && !w.starts_with('-')
                    })
                    .map(str::to_string)
                    .collect();
                let synopsis = rest.split("  ").next().unwrap_or(rest);
                let synopsis = synopsis.split(" -- ").next().unwrap_or(synopsis);
                let help = help_of.entry(words.clone()).or_insert_with(|| {
                    let mut args = words.clone();
                    args.push("--help".into());
                    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pablo"))
                        .args(&args)
                        .output()
                        .unwrap();
                    String::from_utf8_lossy(&out.stdout).into_owned()
                });
                for flag in synopsis_flags(synopsis) {
                    if !help.contains(&flag) {
                        wrong.push(format!("{}: {flag} in `{}`", file.display(), line.trim()));
                    }
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "flags that do not exist:\n{}",
        wrong.join("\n")
    );
    assert_eq!(
        synopsis_flags("pablo export [ID|--last] [--format md|json] [-o FILE] --since=7d"),
        ["--last", "--format", "--since"]
    );
}
