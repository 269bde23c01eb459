//! Expanding the words the shell would expand, before judging them: `*.py`, `src/*.rs`, `$PATH`,
//! `"$PWD"`, `$((1+2))`, the variable of a `for` loop.
//!
//! A command used to be judged only when every word was literal; `ls *.py` and `echo $PATH` asked
//! although nothing about them is unknown to pablo: the glob is matched against the workspace, the
//! variable is read from the clean environment the command gets. So the words are expanded here
//! the way `sh` will (fields split, globs matched, hidden names left out of `*`), and the result
//! is judged like any literal command: a glob that matches `.env` is a read of `.env`, a file
//! named `--pre=x` is an option. What cannot be known before the command runs (a command
//! substitution, `${x:-y}`, `~`, bash quoting) is not expanded, and a reference to a variable
//! whose name looks secret is never expanded, even when the clean environment lacks it: that is a
//! command reaching for a secret.
//!
//! A glob is matched now and again by the shell when the command runs; between the two a file can
//! appear. So a line whose words were globbed runs with the credentials masked (see
//! `process::mask`), where a credential file that appeared meanwhile is empty.

use std::path::{Path, PathBuf};

use super::shell::{Part, Word};
use pablo_core::secrets::looks_secret;

/// The most names a glob may match, and the most directory entries its matching may read.
const MAX_MATCHES: usize = 1_000;
const MAX_LISTED: usize = 20_000;
/// The most values a `for` loop's variable may take for its body to be judged value by value.
pub(crate) const MAX_LOOP_VALUES: usize = 64;

/// What the words of a command expand to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expanded {
    /// The words the shell will pass; `globbed` when a glob was matched against the files.
    Words { words: Vec<String>, globbed: bool },
    /// A word whose value is only known when the command runs (the reason).
    Unknown(String),
    /// A word that refers to a variable whose name looks secret (the reason).
    Secret(String),
}

/// Expands words for one command line.
pub(crate) struct Expander<'a> {
    /// The workspace root (canonical).
    pub(crate) workspace: &'a Path,
    /// The clean environment the command gets.
    pub(crate) vars: &'a [(String, String)],
}

/// One field being built: its value, and the glob pattern it stands for when it holds an
/// unquoted glob character.
#[derive(Default)]
struct Field {
    text: String,
    pattern: String,
    glob: bool,
}

impl Expander<'_> {
    /// Expands `words` for a command run in `cwd` (workspace-relative), with the loop variable
    /// `bound` set to a value. `text_only`: every operand of the program is text, so a number
    /// pablo does not compute (`$((1+2))`, `$?`) may stand as `0`.
    pub(crate) fn words(
        &self,
        words: &[Word],
        cwd: &str,
        bound: Option<(&str, &str)>,
        text_only: bool,
    ) -> Expanded {
        let mut out = Vec::new();
        let mut globbed = false;
        for w in words {
            if w.is_literal() {
                out.push(w.text.clone());
                continue;
            }
            match self.word(w, cwd, bound, text_only) {
                Ok((fields, g)) => {
                    globbed |= g;
                    out.extend(fields);
                }
                Err(e) => return e,
            }
        }
        Expanded::Words {
            words: out,
            globbed,
        }
    }

    /// The values a `for` loop's variable takes: its words, expanded.
    pub(crate) fn loop_values(&self, words: &[Word], cwd: &str) -> Expanded {
        self.words(words, cwd, None, false)
    }

    fn word(
        &self,
        w: &Word,
        cwd: &str,
        bound: Option<(&str, &str)>,
        text_only: bool,
    ) -> Result<(Vec<String>, bool), Expanded> {
        let why = || {
            Expanded::Unknown(format!(
                "{} in `{}`",
                w.unprovable.as_deref().unwrap_or("an expansion"),
                w.text
            ))
        };
        if w.parts.is_empty() {
            return Err(why());
        }
        let mut fields: Vec<Field> = Vec::new();
        // Whether the current field exists even when empty (a quoted part was seen).
        let mut current: Option<Field> = None;
        for part in &w.parts {
            match part {
                Part::Text(t) => push(&mut current, t, false),
                Part::Glob(c) => {
                    let f = current.get_or_insert_with(Field::default);
                    f.text.push(*c);
                    f.pattern.push(*c);
                    f.glob = true;
                }
                Part::Param { name, quoted } => {
                    let value = self.param(name, cwd, bound, text_only, &w.text)?;
                    if *quoted {
                        push(&mut current, &value, true);
                    } else {
                        if value.contains(['*', '?', '[']) {
                            return Err(Expanded::Unknown(format!(
                                "the value of ${name} holds glob characters, in `{}`",
                                w.text
                            )));
                        }
                        split_into(&mut fields, &mut current, &value);
                    }
                }
                Part::Number { reads } => {
                    if let Some(secret) = reads.iter().find(|r| looks_secret(r)) {
                        return Err(secret_reason(secret, &w.text));
                    }
                    if !text_only {
                        return Err(Expanded::Unknown(format!(
                            "an arithmetic expansion in `{}` (its number is only known when it \
                             runs)",
                            w.text
                        )));
                    }
                    push(&mut current, "0", true);
                }
                Part::Opaque => return Err(why()),
            }
        }
        fields.extend(current);
        let mut out = Vec::new();
        let mut globbed = false;
        for f in fields {
            if f.glob {
                globbed = true;
                let matches = self
                    .glob(&f.pattern, cwd)
                    .map_err(|e| Expanded::Unknown(format!("the glob `{}` {e}", w.text)))?;
                if matches.is_empty() {
                    // sh passes a pattern that matches nothing as it is.
                    out.push(f.text);
                } else {
                    out.extend(matches);
                }
            } else {
                out.push(f.text);
            }
        }
        Ok((out, globbed))
    }

    /// The value of `$name`.
    fn param(
        &self,
        name: &str,
        cwd: &str,
        bound: Option<(&str, &str)>,
        text_only: bool,
        word: &str,
    ) -> Result<String, Expanded> {
        if looks_secret(name) {
            return Err(secret_reason(name, word));
        }
        if let Some((var, value)) = bound
            && var == name
        {
            return Ok(value.to_string());
        }
        match name {
            // `sh -c` gets no arguments.
            "@" | "*" | "#" => return Ok(if name == "#" { "0" } else { "" }.to_string()),
            n if n.len() == 1 && n.as_bytes()[0].is_ascii_digit() && n != "0" => {
                return Ok(String::new());
            }
            "?" | "$" | "!" if text_only => return Ok("0".to_string()),
            "PWD" => {
                let dir = self.workspace.join(cwd);
                let dir = normalize(&dir);
                return Ok(dir.to_string_lossy().into_owned());
            }
            _ => {}
        }
        let plain = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !plain || matches!(name, "OLDPWD" | "RANDOM" | "LINENO" | "PPID" | "IFS") {
            return Err(Expanded::Unknown(format!(
                "${name} in `{word}` is only known when the command runs"
            )));
        }
        Ok(self
            .vars
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default())
    }

    /// The names `pattern` matches, relative as written (sorted); empty when none.
    fn glob(&self, pattern: &str, cwd: &str) -> Result<Vec<String>, String> {
        let absolute = pattern.starts_with('/');
        let base = if absolute {
            PathBuf::from("/")
        } else {
            self.workspace.join(cwd)
        };
        // (the path to read, the text written so far)
        let mut paths: Vec<(PathBuf, String)> = vec![(base, String::new())];
        let mut listed = 0usize;
        let components: Vec<&str> = pattern.split('/').filter(|c| !c.is_empty()).collect();
        for (i, comp) in components.iter().enumerate() {
            let last = i + 1 == components.len();
            let mut next = Vec::new();
            let has_glob = comp.contains(['*', '?', '[']);
            for (dir, written) in &paths {
                let join = |name: &str| {
                    let text = if written.is_empty() {
                        if absolute {
                            format!("/{name}")
                        } else {
                            name.to_string()
                        }
                    } else {
                        format!("{written}/{name}")
                    };
                    (dir.join(name), text)
                };
                if !has_glob {
                    let name = unescape(comp);
                    let (p, t) = join(&name);
                    if (last && p.symlink_metadata().is_ok()) || (!last && p.is_dir()) {
                        next.push((p, t));
                    }
                    continue;
                }
                let matcher = globset::GlobBuilder::new(comp)
                    .literal_separator(true)
                    .backslash_escape(true)
                    .build()
                    .map_err(|e| format!("does not parse: {e}"))?
                    .compile_matcher();
                let hidden_ok = comp.starts_with('.') || comp.starts_with("\\.");
                let Ok(entries) = std::fs::read_dir(dir) else {
                    continue;
                };
                for e in entries.flatten() {
                    listed += 1;
                    if listed > MAX_LISTED {
                        return Err(format!("reads more than {MAX_LISTED} directory entries"));
                    }
                    let name = e.file_name().to_string_lossy().into_owned();
                    if name.starts_with('.') && !hidden_ok {
                        continue;
                    }
                    if !matcher.is_match(&name) {
                        continue;
                    }
                    let (p, t) = join(&name);
                    if last || p.is_dir() {
                        next.push((p, t));
                    }
                }
            }
            paths = next;
            if paths.len() > MAX_MATCHES {
                return Err(format!("matches more than {MAX_MATCHES} names"));
            }
        }
        if pattern.ends_with('/') {
            for (_, t) in paths.iter_mut() {
                t.push('/');
            }
        }
        let mut out: Vec<String> = paths.into_iter().map(|(_, t)| t).collect();
        out.sort();
        Ok(out)
    }
}

fn secret_reason(name: &str, word: &str) -> Expanded {
    Expanded::Secret(format!(
        "`{word}` refers to ${name}, a variable whose name looks secret"
    ))
}

/// Appends text to the current field (creating it); `quoted` text makes the field exist even
/// when empty.
fn push(current: &mut Option<Field>, text: &str, quoted: bool) {
    if text.is_empty() && !quoted {
        return;
    }
    let f = current.get_or_insert_with(Field::default);
    f.text.push_str(text);
    f.pattern.push_str(&escape(text));
}

/// An unquoted value: split at blanks into fields, the first joined to the current field.
fn split_into(fields: &mut Vec<Field>, current: &mut Option<Field>, value: &str) {
    let blank = |c: char| matches!(c, ' ' | '\t' | '\n');
    if value.starts_with(blank) {
        fields.extend(current.take());
    }
    let mut pieces = value.split(blank).filter(|p| !p.is_empty()).peekable();
    while let Some(p) = pieces.next() {
        push(current, p, false);
        if pieces.peek().is_some() {
            fields.extend(current.take());
        }
    }
    if value.ends_with(blank) && !value.trim_matches(blank).is_empty() {
        fields.extend(current.take());
    }
}

/// Text made safe to put in a glob pattern.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\' | '!') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `a/./b/../c` as `a/c`, without touching the file system.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::parse_in_process;

    fn expand(ws: &Path, vars: &[(String, String)], text: &str) -> Expanded {
        // A substitution's commands come first; the command itself is the last.
        let cmd = parse_in_process(text).unwrap().pop().unwrap();
        Expander {
            workspace: ws,
            vars,
        }
        .words(&cmd.words, "", None, true)
    }

    fn words(e: Expanded) -> Vec<String> {
        match e {
            Expanded::Words { words, .. } => words,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn globs_match_the_workspace_and_leave_hidden_names_out() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir(ws.join("src")).unwrap();
        for f in [
            "a.py",
            "b.py",
            ".hidden.py",
            "src/x.rs",
            "src/y.rs",
            "c.txt",
        ] {
            std::fs::write(ws.join(f), "").unwrap();
        }
        assert_eq!(words(expand(ws, &[], "ls *.py")), ["ls", "a.py", "b.py"]);
        assert_eq!(
            words(expand(ws, &[], "cat src/*.rs")),
            ["cat", "src/x.rs", "src/y.rs"]
        );
        assert_eq!(words(expand(ws, &[], "ls .*.py")), ["ls", ".hidden.py"]);
        assert_eq!(words(expand(ws, &[], "ls *.md")), ["ls", "*.md"]);
        assert_eq!(words(expand(ws, &[], "ls '*'.py")), ["ls", "*.py"]);
        assert_eq!(words(expand(ws, &[], "ls ?.txt")), ["ls", "c.txt"]);
    }

    #[test]
    fn variables_come_from_the_clean_environment_and_secret_names_are_never_expanded() {
        let dir = tempfile::tempdir().unwrap();
        let vars = vec![
            ("PATH".to_string(), "/usr/bin:/bin".to_string()),
            ("WORDS".to_string(), "one two".to_string()),
        ];
        let ws = dir.path();
        assert_eq!(
            words(expand(ws, &vars, "echo $PATH")),
            ["echo", "/usr/bin:/bin"]
        );
        assert_eq!(
            words(expand(ws, &vars, "echo $WORDS")),
            ["echo", "one", "two"]
        );
        assert_eq!(
            words(expand(ws, &vars, "echo \"$WORDS\"")),
            ["echo", "one two"]
        );
        assert_eq!(words(expand(ws, &vars, "echo $NOPE x")), ["echo", "x"]);
        assert_eq!(words(expand(ws, &vars, "echo $((1+2))")), ["echo", "0"]);
        assert_eq!(
            words(expand(ws, &vars, "basename $PWD")),
            ["basename", ws.to_string_lossy().as_ref()]
        );
        for secret in [
            "echo $OPENAI_API_KEY",
            "echo \"${GITHUB_TOKEN}\"",
            "echo $((DB_PASSWORD+1))",
            "echo ${#AWS_SECRET_ACCESS_KEY}",
        ] {
            assert!(
                matches!(expand(ws, &vars, secret), Expanded::Secret(_)),
                "{secret}"
            );
        }
        for unknown in ["echo $(id)", "echo ${X:-y}", "ls ~", "echo $((i=2))"] {
            assert!(
                matches!(expand(ws, &vars, unknown), Expanded::Unknown(_)),
                "{unknown}"
            );
        }
    }
}
