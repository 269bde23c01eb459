//! Judging a shell command line: every simple command it would run, one decision each.
//!
//! The line is allowed only when every simple command is; one denial denies the line; anything
//! else asks. For each command the order is: deny patterns, deny rules (which also bite on the
//! literal prefix of a command whose later words are unknown), proof (an unprovable command is
//! never allowed), assignments (a changed environment is never what a plain rule approved), the
//! allow lists, saved approvals and allow patterns, the configured default; finally a write
//! redirection turns an allowed command into a question.
//!
//! Wrappers that only adjust how a program runs are looked through, so `env rm -rf /` is judged
//! as `rm`; `sh -c 'literal'` is parsed again, a bounded number of levels deep.

use super::layers::Compiled;
use super::rules::{CompiledRule, Resolved, Resolver};
use super::safe::SafeReads;
use super::shell::{self, Redirect, SimpleCommand, Word};
use super::store::SavedKind;
use crate::config::{MatchKind, RuleDecision};
use crate::protocol::{Decision, SimpleCommandView};

/// How deep `sh -c 'sh -c …'` is followed.
pub(crate) const MAX_SHELL_DEPTH: usize = 3;

/// The outcome for one line.
#[derive(Debug, Clone)]
pub(crate) struct LineJudgement {
    pub(crate) decision: Decision,
    pub(crate) reasons: Vec<String>,
    pub(crate) rule_ids: Vec<String>,
    pub(crate) views: Vec<SimpleCommandView>,
    /// What "allow always" would save (one rule per command that asked and can be remembered).
    pub(crate) rememberable: Vec<SavedKind>,
    /// Every simple command of the line is a known-safe read (see [`super::safe`]) and nothing
    /// writes: the line runs in the read-only sandbox.
    pub(crate) known_safe: bool,
}

/// One judged simple command.
struct Judged {
    decision: Decision,
    rule_id: String,
    reason: Option<String>,
    remember: Vec<SavedKind>,
    known_safe: bool,
}

pub(crate) struct Judge<'a> {
    pub(crate) compiled: &'a Compiled,
    pub(crate) resolver: &'a Resolver,
    pub(crate) saved: &'a [CompiledRule],
    pub(crate) cwd: &'a str,
    /// The known-safe table, when known-safe reads are on.
    pub(crate) safe: Option<&'a SafeReads>,
    /// Whether a known-safe read can be sandboxed here (the kernel has Landlock); without it a
    /// known-safe read asks like any other command.
    pub(crate) sandboxed: bool,
    /// Whether commands get namespaces (needed to neutralise a repository's git config).
    pub(crate) namespaces: bool,
}

fn worse(a: Decision, b: Decision) -> Decision {
    if b.strictness() > a.strictness() {
        b
    } else {
        a
    }
}

/// Interpreters and wrappers: "allow always" saves only the exact command for them, since their
/// arguments are programs.
fn exact_only(name: &str) -> bool {
    matches!(
        name,
        "sh" | "bash"
            | "dash"
            | "zsh"
            | "ksh"
            | "fish"
            | "csh"
            | "tcsh"
            | "node"
            | "nodejs"
            | "deno"
            | "bun"
            | "ruby"
            | "perl"
            | "php"
            | "lua"
            | "env"
            | "sudo"
            | "doas"
            | "su"
            | "xargs"
            | "eval"
            | "exec"
            | "awk"
            | "gawk"
            | "sed"
            | "find"
            | "nice"
            | "timeout"
            | "nohup"
            | "time"
            | "command"
    ) || name.starts_with("python")
        || name.starts_with("pypy")
}

fn subcommand_like(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':'))
}

fn basename(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or(key)
}

/// The rule "allow always" saves for a command: a prefix of the executable and its leading
/// subcommand word, or the exact command for interpreters, wrappers, `git -c` and programs in
/// the workspace.
pub(crate) fn derive_rule(resolved: &Resolved, args: &[String]) -> SavedKind {
    let name = basename(&resolved.key);
    let git_config = name == "git" && args.first().is_some_and(|a| a == "-c");
    let exact = exact_only(name) || git_config || resolved.in_workspace;
    let (args, match_kind) = match args.first() {
        Some(first) if !exact && subcommand_like(first) => (vec![first.clone()], MatchKind::Prefix),
        _ => (args.to_vec(), MatchKind::Exact),
    };
    SavedKind::Command {
        executable: resolved.key.clone(),
        args,
        match_kind,
    }
}

/// Builtins that run text or redefine how later words are read: never provable.
fn evaluating_builtin(name: &str) -> bool {
    matches!(
        name,
        "eval" | "exec" | "source" | "." | "trap" | "alias" | "unalias" | "builtin" | "enable"
    )
}

/// Builtins that change variables or command lookup for the commands after them.
fn state_builtin(name: &str) -> bool {
    matches!(
        name,
        "export"
            | "readonly"
            | "local"
            | "declare"
            | "typeset"
            | "unset"
            | "read"
            | "getopts"
            | "hash"
            | "shopt"
    )
}

/// The word naming the program a simple command runs, when the shell only knows it by expanding
/// something (`$c`, `"$c"`, `${c}`, a glob, `$(…)`): after wrappers, after `exec`/`builtin`, or
/// the script of `sh -c`. Such a command cannot be proven against any rule, so it is denied, not
/// asked about (`c=rm; $c -rf d` would otherwise be one approval away from running).
fn unknown_command_word<'w>(words: &'w [Word], u: &'w Unwrapped) -> Option<&'w str> {
    if let Some(script) = &u.unknown_script {
        return Some(script);
    }
    let mut i = u.start;
    while let Some(w) = words.get(i) {
        if !w.is_literal() {
            return Some(&w.text);
        }
        if matches!(w.text.as_str(), "exec" | "builtin") {
            i += 1;
            continue;
        }
        return None;
    }
    None
}

/// The result of looking through wrappers.
#[derive(Default)]
pub(super) struct Unwrapped {
    /// Index of the effective command word in `words`.
    pub(super) start: usize,
    /// `env` assignments and options that change the environment.
    env_changes: Vec<String>,
    /// The `xargs …` words before its inner command.
    xargs: Option<(usize, usize)>,
    /// `sh -c SCRIPT`: the shell word index and the script.
    pub(super) shell: Option<(usize, String)>,
    /// Why a wrapper could not be looked through.
    unprovable: Option<String>,
    /// `sh -c WORD` where WORD is not literal: the program the shell would run is unknown.
    unknown_script: Option<String>,
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

fn literal(words: &[Word], i: usize) -> Option<&str> {
    words
        .get(i)
        .filter(|w| w.is_literal())
        .map(|w| w.text.as_str())
}

fn fail(u: &mut Unwrapped, what: String) {
    u.unprovable = Some(what);
}

pub(super) fn unwrap(resolver: &Resolver, words: &[Word], cwd: &str) -> Unwrapped {
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

impl Judge<'_> {
    /// Judges one command line.
    pub(crate) fn line(&self, text: &str) -> LineJudgement {
        let mut out = LineJudgement {
            decision: Decision::Allow,
            reasons: Vec::new(),
            rule_ids: Vec::new(),
            views: Vec::new(),
            rememberable: Vec::new(),
            known_safe: true,
        };
        let c = self.compiled;
        if let Some((id, reason)) = &c.launcher_refusal {
            out.decision = Decision::Deny;
            out.reasons.push(reason.clone());
            out.rule_ids.push(id.clone());
        }
        let hits = c.deny_patterns.matches(text);
        if !hits.is_empty() {
            out.decision = Decision::Deny;
            out.reasons.push(format!(
                "the command text matches deny pattern {}",
                hits.join(", ")
            ));
            out.rule_ids.extend(hits.iter().map(|s| s.to_string()));
        }
        self.commands(text, 0, &[], &[], &mut out);
        if out.views.is_empty() && out.decision == Decision::Allow && out.rule_ids.is_empty() {
            out.rule_ids.push("builtin.empty".into());
        }
        if out.decision != Decision::Ask {
            out.rememberable.clear();
        }
        out.known_safe &= !out.views.is_empty() && out.decision != Decision::Deny;
        out
    }

    fn commands(
        &self,
        text: &str,
        depth: usize,
        env: &[String],
        redirects: &[Redirect],
        out: &mut LineJudgement,
    ) {
        let parsed = match shell::parse(text) {
            Ok(p) => p,
            Err(refusal) => {
                let reason = refusal.reason();
                let (decision, id) = if refusal.is_limit() {
                    (Decision::Deny, "builtin.parse.limit")
                } else {
                    self.unprovable_decision()
                };
                out.decision = worse(out.decision, decision);
                out.known_safe = false;
                out.reasons.push(reason.clone());
                out.rule_ids.push(id.to_string());
                out.views.push(SimpleCommandView {
                    argv: vec![text.chars().take(200).collect()],
                    executable: None,
                    decision,
                    rule_id: Some(id.to_string()),
                    reason: Some(reason),
                });
                return;
            }
        };
        for mut cmd in parsed {
            cmd.redirects.extend(redirects.iter().cloned());
            self.simple(&cmd, depth, env, out);
        }
    }

    fn unprovable_decision(&self) -> (Decision, &'static str) {
        if self.compiled.has_allow_list() || self.compiled.default.0 == RuleDecision::Deny {
            (Decision::Deny, "builtin.unprovable")
        } else {
            (Decision::Ask, "builtin.unprovable")
        }
    }

    fn simple(&self, cmd: &SimpleCommand, depth: usize, env: &[String], out: &mut LineJudgement) {
        let u = unwrap(self.resolver, &cmd.words, self.cwd);
        if let Some((shell_at, script)) = &u.shell {
            // Deny patterns and rules still see the shell command itself.
            let outer = Unwrapped {
                start: *shell_at,
                ..Default::default()
            };
            let stop = self.pre_checks(cmd, &outer).or_else(|| {
                let reasons = cmd.unprovable_reasons();
                let (decision, id) = self.unprovable_decision();
                if !reasons.is_empty() {
                    Some(Judged {
                        decision,
                        rule_id: id.into(),
                        reason: Some(format!("cannot be proven: {}", reasons.join("; "))),
                        remember: Vec::new(),
                        known_safe: false,
                    })
                } else if depth + 1 > MAX_SHELL_DEPTH {
                    Some(Judged {
                        decision,
                        rule_id: id.into(),
                        reason: Some(format!(
                            "`sh -c` is nested more than {MAX_SHELL_DEPTH} levels deep"
                        )),
                        remember: Vec::new(),
                        known_safe: false,
                    })
                } else {
                    None
                }
            });
            if let Some(j) = stop {
                self.push(cmd, None, j, out);
                return;
            }
            let mut inner_env = env.to_vec();
            inner_env.extend(
                cmd.assignments
                    .iter()
                    .map(|(n, v)| format!("{n}={}", v.text)),
            );
            inner_env.extend(u.env_changes.iter().cloned());
            self.commands(script, depth + 1, &inner_env, &cmd.redirects, out);
            return;
        }
        let judged = self.judge(cmd, &u, env);
        let exe = cmd
            .words
            .get(u.start)
            .filter(|w| w.is_literal())
            .and_then(|w| self.resolver.resolve(&w.text, self.cwd).path);
        self.push(cmd, exe, judged, out);
    }

    fn push(&self, cmd: &SimpleCommand, exe: Option<String>, j: Judged, out: &mut LineJudgement) {
        out.decision = worse(out.decision, j.decision);
        out.known_safe &= j.known_safe;
        if let Some(r) = &j.reason
            && j.decision != Decision::Allow
        {
            out.reasons.push(r.clone());
        }
        if !out.rule_ids.contains(&j.rule_id) {
            out.rule_ids.push(j.rule_id.clone());
        }
        if j.decision == Decision::Ask {
            for r in j.remember {
                if !out.rememberable.contains(&r) {
                    out.rememberable.push(r);
                }
            }
        }
        // argv only: assignments and redirections are named in the reason when they matter.
        out.views.push(SimpleCommandView {
            argv: cmd.argv(),
            executable: exe,
            decision: j.decision,
            rule_id: Some(j.rule_id),
            reason: j.reason,
        });
    }

    /// The decision for one simple command after wrappers were looked through.
    fn judge(&self, cmd: &SimpleCommand, u: &Unwrapped, inherited_env: &[String]) -> Judged {
        if let Some(j) = self.pre_checks(cmd, u) {
            return j;
        }
        self.judge_rest(cmd, u, inherited_env)
    }

    /// Deny patterns over the unquoted command and deny rules over its literal prefix.
    fn pre_checks(&self, cmd: &SimpleCommand, u: &Unwrapped) -> Option<Judged> {
        let c = self.compiled;
        let words = &cmd.words;
        // Patterns over the command written without quotes.
        let rendered = cmd.render();
        let hits = c.deny_patterns.matches(&rendered);
        if let Some(first) = hits.first() {
            return Some(Judged {
                decision: Decision::Deny,
                rule_id: first.to_string(),
                reason: Some(format!("`{rendered}` matches deny pattern {first}")),
                remember: Vec::new(),
                known_safe: false,
            });
        }
        if let Some(word) = unknown_command_word(words, u) {
            return Some(Judged {
                decision: Decision::Deny,
                rule_id: "builtin.unprovable.command".into(),
                reason: Some(format!(
                    "the program to run, `{word}`, is only known when the shell expands it, so no \
                     rule can be checked against it"
                )),
                remember: Vec::new(),
                known_safe: false,
            });
        }
        let literal_prefix = |from: usize| -> (Vec<String>, bool) {
            let mut v = Vec::new();
            for w in words.iter().skip(from) {
                if !w.is_literal() {
                    return (v, false);
                }
                v.push(w.text.clone());
            }
            (v, true)
        };
        // Deny rules: on the outer command and on the one inside the wrappers.
        let mut candidates = vec![0];
        if u.start != 0 {
            candidates.push(u.start);
        }
        if let Some((x, _)) = u.xargs {
            candidates.push(x);
        }
        for &at in &candidates {
            let (known, complete) = literal_prefix(at);
            let Some((word, args)) = known.split_first() else {
                continue;
            };
            let key = self.resolver.resolve(word, self.cwd).key;
            for layer in &c.rule_layers {
                if let Some(rule) = layer
                    .deny
                    .iter()
                    .find(|r| r.matches_known(&key, args, complete))
                {
                    return Some(Judged {
                        decision: Decision::Deny,
                        rule_id: rule.id.clone(),
                        reason: Some(format!(
                            "`{}` matches deny rule {} ({}) of {}",
                            known.join(" "),
                            rule.id,
                            rule.describe(),
                            layer.source
                        )),
                        remember: Vec::new(),
                        known_safe: false,
                    });
                }
            }
        }
        None
    }

    fn judge_rest(&self, cmd: &SimpleCommand, u: &Unwrapped, inherited_env: &[String]) -> Judged {
        let words = &cmd.words;
        let mut unprovable = cmd.unprovable_reasons();
        if let Some(why) = &u.unprovable {
            unprovable.push(why.clone());
        }
        if let Some(first) = words.first().filter(|w| w.is_literal()) {
            let name = first.text.as_str();
            if evaluating_builtin(name) {
                unprovable.push(format!(
                    "`{name}` runs code that is only known when it runs"
                ));
            }
        }
        if !unprovable.is_empty() {
            let (decision, id) = self.unprovable_decision();
            return Judged {
                decision,
                rule_id: id.into(),
                reason: Some(format!("cannot be proven: {}", unprovable.join("; "))),
                remember: Vec::new(),
                known_safe: false,
            };
        }
        // From here every word is literal.
        let mut env_changes: Vec<String> = inherited_env.to_vec();
        env_changes.extend(
            cmd.assignments
                .iter()
                .map(|(n, v)| format!("{n}={}", v.text)),
        );
        env_changes.extend(u.env_changes.iter().cloned());
        let argv: Vec<String> = words[u.start..].iter().map(|w| w.text.clone()).collect();
        let writes: Vec<String> = cmd
            .redirects
            .iter()
            .filter(|r| r.writes())
            .map(|r| r.target.text.clone())
            .collect();
        let Some((word, args)) = argv.split_first() else {
            let for_var = cmd
                .context
                .as_deref()
                .and_then(|c| c.strip_prefix("for loop over "));
            let reason = if let (Some(var), Some((_, values))) = (for_var, cmd.assignments.first())
            {
                format!(
                    "`for {var} in {}` sets the variable {var} for the commands of the loop",
                    values.text
                )
            } else if !env_changes.is_empty() {
                format!(
                    "`{}` changes variables for the commands after it",
                    env_changes.join(" ")
                )
            } else if !writes.is_empty() {
                format!(
                    "a redirection without a command writes {}",
                    writes.join(", ")
                )
            } else {
                "a redirection without a command".to_string()
            };
            return self.unmatched(reason, Vec::new(), true);
        };
        if state_builtin(word) {
            return self.unmatched(
                format!("`{word}` changes variables or lookups for the commands after it"),
                Vec::new(),
                true,
            );
        }
        let resolved = self.resolver.resolve(word, self.cwd);
        if !env_changes.is_empty() {
            return self.unmatched(
                format!(
                    "`{}` changes what `{word}` does, so no plain rule approves it",
                    env_changes.join(" ")
                ),
                Vec::new(),
                true,
            );
        }
        // xargs appends words nobody has seen, so its inner command is never known safe.
        let safe = match (self.safe, u.xargs) {
            (Some(table), None) => {
                let reads: Vec<&str> = cmd
                    .redirects
                    .iter()
                    .filter(|r| r.kind == super::shell::RedirectKind::Read)
                    .map(|r| r.target.text.as_str())
                    .collect();
                Some(table.check(&resolved, args, &reads, self.cwd))
            }
            _ => None,
        };
        let safe_name = safe.as_ref().and_then(|r| r.as_ref().ok()).map(|p| p.name);
        // Why a program of the known-safe table is not safe here (a credential, an option that
        // writes): the question says it, so the person sees what made an ordinary read ask.
        let not_safe = safe
            .as_ref()
            .and_then(|r| r.as_ref().err())
            .filter(|_| super::safe::program_named(basename(&resolved.key)).is_some());
        let mut result = self.match_allow(&resolved, word, args, safe_name);
        if let (Some(why), Decision::Ask, Some(reason)) =
            (not_safe, result.decision, result.reason.as_mut())
        {
            reason.push_str(&format!("; not a known-safe read: {why}"));
        }
        result.known_safe = safe_name.is_some() && writes.is_empty();
        if let Some((x, inner)) = u.xargs {
            // xargs appends input to its inner command: it needs a rule of its own as well.
            let xargv: Vec<String> = words[x..].iter().map(|w| w.text.clone()).collect();
            let xres = self.resolver.resolve(&xargv[0], self.cwd);
            let xresult = self.match_allow(&xres, &xargv[0], &xargv[1..], None);
            let _ = inner;
            if xresult.decision.strictness() > result.decision.strictness() {
                let mut remember = xresult.remember;
                remember.extend(result.remember);
                result = Judged {
                    remember,
                    ..xresult
                };
            } else if result.decision == Decision::Ask {
                result.remember.extend(xresult.remember);
            }
        }
        if result.decision == Decision::Allow && !writes.is_empty() {
            return Judged {
                decision: Decision::Ask,
                rule_id: "builtin.redirect.write".into(),
                reason: Some(format!(
                    "`{word}` is allowed, but the command writes {}",
                    writes.join(", ")
                )),
                remember: Vec::new(),
                known_safe: false,
            };
        }
        if result.decision == Decision::Ask
            && !writes.is_empty()
            && let Some(r) = &mut result.reason
        {
            r.push_str(&format!("; it writes {}", writes.join(", ")));
        }
        result
    }

    fn match_allow(
        &self,
        resolved: &Resolved,
        word: &str,
        args: &[String],
        known_safe: Option<&str>,
    ) -> Judged {
        let c = self.compiled;
        let workspace_note = if resolved.in_workspace {
            format!(" (`{word}` is a program in the workspace, not a system command)")
        } else {
            String::new()
        };
        if c.has_allow_list() {
            let mut ids = Vec::new();
            for layer in c.allow_layers() {
                match layer.allow.iter().find(|r| r.matches(&resolved.key, args)) {
                    Some(r) => ids.push(r.id.clone()),
                    None => {
                        return Judged {
                            decision: Decision::Deny,
                            rule_id: layer.id.clone(),
                            reason: Some(format!(
                                "`{word}` with these arguments is not in the allow list of {}{workspace_note}",
                                layer.source
                            )),
                            remember: Vec::new(),
                            known_safe: false,
                        };
                    }
                }
            }
            return Judged {
                decision: Decision::Allow,
                rule_id: ids.join("+"),
                reason: None,
                remember: Vec::new(),
                known_safe: false,
            };
        }
        if let Some(r) = self.saved.iter().find(|r| r.matches(&resolved.key, args)) {
            return Judged {
                decision: Decision::Allow,
                rule_id: r.id.clone(),
                reason: None,
                remember: Vec::new(),
                known_safe: false,
            };
        }
        let mut text = vec![word.to_string()];
        text.extend(args.iter().cloned());
        if let Some(id) = c.allow_patterns.matches(&text.join(" ")).first() {
            return Judged {
                decision: Decision::Allow,
                rule_id: id.to_string(),
                reason: None,
                remember: Vec::new(),
                known_safe: false,
            };
        }
        let remember = vec![derive_rule(resolved, args)];
        let mut unsandboxed_note = String::new();
        if let Some(name) = known_safe {
            // git's repository config is covered by a mount, which needs namespaces.
            let sandboxed = self.sandboxed && (name != "git" || self.namespaces);
            if sandboxed {
                return Judged {
                    decision: Decision::Allow,
                    rule_id: format!("builtin.safe.{name}"),
                    reason: None,
                    remember: Vec::new(),
                    known_safe: true,
                };
            }
            unsandboxed_note = if self.sandboxed {
                format!(
                    " (`{name}` is a known-safe read, but without namespaces its repository's \
                     config cannot be neutralised)"
                )
            } else {
                format!(
                    " (`{name}` is a known-safe read, but without Landlock it cannot be sandboxed)"
                )
            };
        }
        let (decision, id) = (&c.default.0, c.default.1.clone());
        match decision {
            RuleDecision::Allow => Judged {
                decision: Decision::Allow,
                rule_id: id,
                reason: None,
                remember: Vec::new(),
                known_safe: false,
            },
            RuleDecision::Ask => Judged {
                decision: Decision::Ask,
                rule_id: id,
                reason: Some(format!(
                    "`{word}` matches no rule{workspace_note}{unsandboxed_note}"
                )),
                remember,
                known_safe: false,
            },
            RuleDecision::Deny => Judged {
                decision: Decision::Deny,
                rule_id: id,
                reason: Some(format!(
                    "`{word}` matches no rule and the default is deny{workspace_note}"
                )),
                remember: Vec::new(),
                known_safe: false,
            },
        }
    }

    /// A command no plain rule may approve: denied under an allow list or a deny default,
    /// otherwise at most a question.
    fn unmatched(&self, reason: String, remember: Vec<SavedKind>, _cap_at_ask: bool) -> Judged {
        let c = self.compiled;
        if c.has_allow_list() {
            let id = c
                .allow_layers()
                .next()
                .map(|l| l.id.clone())
                .unwrap_or_else(|| "builtin.allow-list".into());
            return Judged {
                decision: Decision::Deny,
                rule_id: id,
                reason: Some(format!("{reason}; not in the allow list")),
                remember: Vec::new(),
                known_safe: false,
            };
        }
        if c.default.0 == RuleDecision::Deny {
            return Judged {
                decision: Decision::Deny,
                rule_id: c.default.1.clone(),
                reason: Some(reason),
                remember: Vec::new(),
                known_safe: false,
            };
        }
        Judged {
            decision: Decision::Ask,
            rule_id: "builtin.unmatched".into(),
            reason: Some(reason),
            remember,
            known_safe: false,
        }
    }
}
