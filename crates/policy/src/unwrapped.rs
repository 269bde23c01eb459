//! The simple commands a command line runs once its wrappers are looked through, for whoever
//! must match commands the way policy sees them (hooks' `command_matcher`). A guard that matched
//! only the words as written would be passed by `env curl …`, `timeout 5 curl …` or
//! `sh -c 'curl …'`; the unwrapping is the judge's own, so the two never disagree about which
//! program a line runs.

use super::PolicyEngine;
use super::judge::MAX_SHELL_DEPTH;
use super::parses::LineParses;
use super::rules::Resolver;
use super::shell::Word;
use super::wrappers::unwrap;

/// How many wrappers of one simple command are looked through (`exec` restarts the unwrapping).
const MAX_STAGES: usize = 16;

impl PolicyEngine {
    /// Each simple command of `text` as written and, when it runs another program through a
    /// wrapper (`env`, `timeout`, `nice`, `command`, `nohup`, `time -p`, `exec`, `xargs`,
    /// `sh -c`), the command it runs: words as the shell builds them, the program first. `cwd`
    /// is workspace-relative. A line the parser refuses is given as one word, as written.
    pub fn effective_commands(
        &self,
        text: &str,
        cwd: &str,
        parses: &LineParses,
    ) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        collect(text, cwd, &self.resolver, parses, 0, &mut out);
        out
    }
}

fn collect(
    text: &str,
    cwd: &str,
    resolver: &Resolver,
    parses: &LineParses,
    depth: usize,
    out: &mut Vec<Vec<String>>,
) {
    let Ok(parsed) = parses.parse(text) else {
        push(out, vec![text.to_string()]);
        return;
    };
    for cmd in parsed {
        let mut rest: &[Word] = &cmd.words;
        push(out, texts(rest));
        for _ in 0..MAX_STAGES {
            let u = unwrap(resolver, rest, cwd);
            if let Some((_, script)) = &u.shell {
                if depth < MAX_SHELL_DEPTH {
                    collect(script, cwd, resolver, parses, depth + 1, out);
                }
                break;
            }
            let mut start = u.start;
            while rest
                .get(start)
                .is_some_and(|w| w.is_literal() && matches!(w.text.as_str(), "exec" | "builtin"))
            {
                start += 1;
            }
            if start == 0 || start >= rest.len() {
                break;
            }
            rest = &rest[start..];
            push(out, texts(rest));
        }
    }
}

fn texts(words: &[Word]) -> Vec<String> {
    words.iter().map(|w| w.text.clone()).collect()
}

fn push(out: &mut Vec<Vec<String>>, words: Vec<String>) {
    if !words.is_empty() && !out.contains(&words) {
        out.push(words);
    }
}
