//! Wrappers that only adjust how a program runs, looked through before a command is judged:
//! `env rm -rf /` is `rm`, `timeout 5 cat f` is `cat`, `sh -c 'literal'` is its script. Kept
//! apart from the judge because hooks match commands the same way (`command_matcher`), and a
//! second copy of these rules would drift from the first.

use super::rules::Resolver;
use super::shell::Word;

/// The result of looking through wrappers.
#[derive(Default)]
pub(crate) struct Unwrapped {
    /// Index of the effective command word in `words`.
    pub(crate) start: usize,
    /// `env` assignments and options that change the environment.
    pub(crate) env_changes: Vec<String>,
    /// The `xargs …` words before its inner command.
    pub(crate) xargs: Option<(usize, usize)>,
    /// `sh -c SCRIPT`: the shell word index and the script.
    pub(crate) shell: Option<(usize, String)>,
    /// Why a wrapper could not be looked through.
    pub(crate) unprovable: Option<String>,
    /// `sh -c WORD` where WORD is not literal: the program the shell would run is unknown.
    pub(crate) unknown_script: Option<String>,
}

fn wrapper_name<'w>(resolver: &Resolver, word: &'w Word, cwd: &str) -> Option<&'w str> {
    if !word.is_literal() {
        return None;
    }
    let text = word.text.as_str();
    if text.contains('/') && resolver.resolve(text, cwd).in_workspace {
        return None;
    }
    Some(text.rsplit('/').next().unwrap_or(text))
}

/// Where [`unwrap`] goes after one wrapper: on at the word that follows it, or done.
enum Step {
    Next(usize),
    Done,
}

pub(crate) fn literal(words: &[Word], i: usize) -> Option<&str> {
    words
        .get(i)
        .filter(|w| w.is_literal())
        .map(|w| w.text.as_str())
}

fn fail(u: &mut Unwrapped, what: String) {
    u.unprovable = Some(what);
}

pub(crate) fn unwrap(resolver: &Resolver, words: &[Word], cwd: &str) -> Unwrapped {
    let mut u = Unwrapped::default();
    let mut i = 0;
    // Each pass consumes one wrapper; the bound keeps a pathological chain finite.
    for _ in 0..64 {
        let Some(name) = words.get(i).and_then(|w| wrapper_name(resolver, w, cwd)) else {
            return u;
        };
        let j = i + 1;
        let step = match name {
            "env" => past_env(words, &mut u, j),
            "nice" => past_nice(words, &mut u, j),
            "timeout" => past_timeout(words, &mut u, j),
            "nohup" => Step::Next(j),
            "time" => past_time(words, &mut u, j),
            "command" => past_command(words, &mut u, j),
            "xargs" => past_xargs(words, &mut u, i, j),
            "sh" | "bash" | "dash" => shell_script(words, &mut u, name, i, j),
            _ => Step::Done,
        };
        let Step::Next(j) = step else {
            return u;
        };
        if j >= words.len() {
            // A wrapper with nothing to run (`env` printing the environment): judged as itself.
            return u;
        }
        i = j;
        u.start = i;
    }
    u
}

/// `env [-i] [-u NAME] [NAME=VALUE]… COMMAND`: the changes are kept to be judged.
fn past_env(words: &[Word], u: &mut Unwrapped, mut j: usize) -> Step {
    let lit = |k: usize| literal(words, k);
    while let Some(a) = lit(j) {
        if a == "--" {
            j += 1;
            break;
        } else if a == "-i" || a == "--ignore-environment" || a == "-" {
            u.env_changes.push(a.to_string());
            j += 1;
        } else if a == "-u" {
            u.env_changes
                .push(format!("-u {}", lit(j + 1).unwrap_or("")));
            j += 2;
        } else if a.starts_with("--unset=") || (a.starts_with("-u") && a.len() > 2) {
            u.env_changes.push(a.to_string());
            j += 1;
        } else if a.starts_with('-') {
            fail(u, format!("`env {a}` is not looked through"));
            return Step::Done;
        } else if a.contains('=') {
            u.env_changes.push(a.to_string());
            j += 1;
        } else {
            break;
        }
    }

    Step::Next(j)
}

/// `nice [-n N] COMMAND`.
fn past_nice(words: &[Word], u: &mut Unwrapped, mut j: usize) -> Step {
    let lit = |k: usize| literal(words, k);
    if let Some(a) = lit(j) {
        if a == "-n" {
            j += 2;
        } else if a.starts_with("--adjustment=")
            || (a.starts_with('-') && a[1..].chars().all(|c| c.is_ascii_digit()) && a.len() > 1)
            || (a.starts_with("-n") && a.len() > 2)
        {
            j += 1;
        } else if a.starts_with('-') {
            fail(u, format!("`nice {a}` is not looked through"));
            return Step::Done;
        }
    }

    Step::Next(j)
}

/// `timeout [OPTIONS] DURATION COMMAND`.
fn past_timeout(words: &[Word], u: &mut Unwrapped, mut j: usize) -> Step {
    let lit = |k: usize| literal(words, k);
    loop {
        match lit(j) {
            Some("-s" | "-k" | "--signal" | "--kill-after") => j += 2,
            Some("--preserve-status" | "--foreground" | "-v" | "--verbose" | "-f") => j += 1,
            Some(a) if a.starts_with("--signal=") || a.starts_with("--kill-after=") => j += 1,
            Some(a) if a.starts_with('-') => {
                fail(u, format!("`timeout {a}` is not looked through"));
                return Step::Done;
            }
            _ => break,
        }
    }
    // The duration.
    j += 1;

    Step::Next(j)
}

/// `time [-p] COMMAND`.
fn past_time(words: &[Word], u: &mut Unwrapped, mut j: usize) -> Step {
    let lit = |k: usize| literal(words, k);
    if lit(j) == Some("-p") {
        j += 1;
    } else if lit(j).is_some_and(|a| a.starts_with('-')) {
        fail(u, "`time` with options is not looked through".into());
        return Step::Done;
    }

    Step::Next(j)
}

/// `command [-p] COMMAND`; `command -v` only prints.
fn past_command(words: &[Word], u: &mut Unwrapped, mut j: usize) -> Step {
    let lit = |k: usize| literal(words, k);
    match lit(j) {
        Some("-p") => j += 1,
        Some("-v" | "-V") => return Step::Done,
        Some("--") => j += 1,
        Some(a) if a.starts_with('-') => {
            fail(u, format!("`command {a}` is not looked through"));
            return Step::Done;
        }
        _ => {}
    }
    Step::Next(j)
}

/// `xargs [OPTIONS] COMMAND`: the command runs with arguments from stdin, kept in `u.xargs`.
fn past_xargs(words: &[Word], u: &mut Unwrapped, i: usize, mut j: usize) -> Step {
    let lit = |k: usize| literal(words, k);
    loop {
        match lit(j) {
            Some(
                "-0" | "--null" | "-r" | "--no-run-if-empty" | "-t" | "--verbose" | "-x" | "--exit"
                | "-p" | "--interactive",
            ) => j += 1,
            Some("-n" | "-L" | "-P" | "-I" | "-d" | "-E" | "-s" | "-a") => j += 2,
            Some(a)
                if (a.starts_with("-n")
                    || a.starts_with("-L")
                    || a.starts_with("-P")
                    || a.starts_with("-I")
                    || a.starts_with("-d")
                    || a.starts_with("-s")
                    || a.starts_with("--max-args=")
                    || a.starts_with("--max-procs=")
                    || a.starts_with("--delimiter=")
                    || a.starts_with("--replace="))
                    && a.len() > 2 =>
            {
                j += 1
            }
            Some("--") => {
                j += 1;
                break;
            }
            Some(a) if a.starts_with('-') => {
                fail(u, format!("`xargs {a}` is not looked through"));
                return Step::Done;
            }
            _ => break,
        }
    }
    if j >= words.len() {
        // `xargs` alone runs `echo`: judged as xargs itself.
        return Step::Done;
    }
    u.xargs = Some((i, j));
    Step::Next(j)
}

/// `sh -c SCRIPT`: the script is judged as the command; any other use of the shell as itself.
fn shell_script(words: &[Word], u: &mut Unwrapped, name: &str, i: usize, mut j: usize) -> Step {
    let lit = |k: usize| literal(words, k);
    let mut script_at = None;
    while let Some(a) = lit(j) {
        if let Some(flags) = a.strip_prefix('-').filter(|f| !f.is_empty()) {
            if flags.starts_with('-') || !flags.chars().all(|c| "ceuxvfna".contains(c)) {
                fail(u, format!("`{name} {a}` is not looked through"));
                return Step::Done;
            }
            j += 1;
            if flags.contains('c') {
                script_at = Some(j);
                break;
            }
        } else {
            break;
        }
    }
    // Without `-c` (`sh file`, or `sh` reading stdin) it is an interpreter, judged as itself.
    if let Some(s) = script_at {
        match words.get(s) {
            Some(w) if w.is_literal() => {
                u.shell = Some((i, w.text.clone()));
                u.start = i;
            }
            Some(w) => u.unknown_script = Some(w.text.clone()),
            None => {}
        }
    }
    Step::Done
}
