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

use super::expand::Expanded;
use super::layers::Compiled;
use super::links::canonical_beneath;
use super::parses::LineParses;
use super::remember::derive_rule;
use super::rules::{CompiledRule, Resolved, Resolver};
use super::safe::SafeReads;
use super::shell::{Redirect, SimpleCommand, Word};
use super::store::SavedKind;
use super::wrappers::{Unwrapped, unwrap};
use pablo_config::RuleDecision;
use pablo_protocol::{Decision, SimpleCommandView};

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
    /// Some command of the line is safe only with the credentials masked (a recursive read with
    /// a credential file below, a glob, a `--version`): the line runs read-only and masked.
    pub(crate) masked: bool,
}

/// One judged simple command.
struct Judged {
    decision: Decision,
    rule_id: String,
    reason: Option<String>,
    remember: Vec<SavedKind>,
    known_safe: bool,
    masked: bool,
}

impl Judged {
    /// The stricter of two judgements of one command (in two directories, for two values of a
    /// loop variable); safe only when both are, masked when either is.
    fn worst(self, other: Judged) -> Judged {
        let known_safe = self.known_safe && other.known_safe;
        let masked = self.masked || other.masked;
        let mut out = if other.decision.strictness() > self.decision.strictness() {
            other
        } else {
            self
        };
        out.known_safe = known_safe;
        out.masked = masked;
        out
    }
}

/// What earlier commands of a line changed for the later ones: the directories a `cd` may have
/// moved to, and the values of `for` loop variables.
struct Scope {
    cwds: Vec<String>,
    loops: Vec<(String, Vec<String>)>,
}

/// Programs whose operands are all text: a number pablo does not compute may stand in.
fn text_only(program: &str) -> bool {
    matches!(
        program,
        "echo"
            | "printf"
            | "test"
            | "["
            | "true"
            | "false"
            | "exit"
            | "return"
            | ":"
            | "basename"
            | "dirname"
    )
}

#[derive(Clone, Copy)]
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
    /// The workspace root (canonical), against which globs are matched; `None` without one.
    pub(crate) workspace: Option<&'a std::path::Path>,
    /// The clean environment commands get, from which `$NAME` is expanded.
    pub(crate) vars: &'a [(String, String)],
    /// The call's parses: each text is parsed once, however often it is judged.
    pub(crate) parses: &'a LineParses,
}

fn worse(a: Decision, b: Decision) -> Decision {
    if b.strictness() > a.strictness() {
        b
    } else {
        a
    }
}

fn basename(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or(key)
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
            masked: false,
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
        out.masked &= out.known_safe;
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
        let parsed = match self.parses.parse(text) {
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
        let mut scope = Scope {
            cwds: vec![self.cwd.to_string()],
            loops: Vec::new(),
        };
        for mut cmd in parsed {
            cmd.redirects.extend(redirects.iter().cloned());
            self.simple(&cmd, depth, env, &mut scope, out);
        }
    }

    fn unprovable_decision(&self) -> (Decision, &'static str) {
        if self.compiled.has_allow_list() || self.compiled.default.0 == RuleDecision::Deny {
            (Decision::Deny, "builtin.unprovable")
        } else {
            (Decision::Ask, "builtin.unprovable")
        }
    }

    fn simple(
        &self,
        cmd: &SimpleCommand,
        depth: usize,
        env: &[String],
        scope: &mut Scope,
        out: &mut LineJudgement,
    ) {
        if !cmd.loop_values.is_empty() {
            self.loop_head(cmd, env, scope, out);
            return;
        }
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
                        masked: false,
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
                        masked: false,
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
        // After a `cd`, the line may be in any of the directories it went to: the command is
        // judged in each, the strictest judgement wins.
        let mut judged: Option<Judged> = None;
        let mut moved_to = Vec::new();
        for cwd in &scope.cwds {
            let here = Judge { cwd, ..*self };
            let u = unwrap(here.resolver, &cmd.words, cwd);
            let one = here.judge_expanding(cmd, &u, env, &scope.loops);
            if one.decision == Decision::Allow
                && let Some(dir) = here.cd_target(cmd, &u)
            {
                moved_to.push(dir);
            }
            judged = Some(match judged {
                None => one,
                Some(prev) => prev.worst(one),
            });
        }
        for dir in moved_to {
            if !scope.cwds.contains(&dir) {
                scope.cwds.push(dir);
            }
        }
        let Some(judged) = judged else { return };
        let exe = cmd
            .words
            .get(u.start)
            .filter(|w| w.is_literal())
            .and_then(|w| self.resolver.resolve(&w.text, self.cwd).path);
        self.push(cmd, exe, judged, out);
    }

    /// The workspace-relative directory an allowed `cd DIR` goes to.
    fn cd_target(&self, cmd: &SimpleCommand, u: &Unwrapped) -> Option<String> {
        let words = &cmd.words[u.start..];
        if words.first().map(|w| w.text.as_str()) != Some("cd") {
            return None;
        }
        let workspace = self.workspace?;
        let dir = words
            .iter()
            .skip(1)
            .map(|w| w.text.as_str())
            .find(|a| !matches!(*a, "-L" | "-P" | "--"))?;
        let real = canonical_beneath(workspace, &std::path::Path::new(self.cwd).join(dir))?;
        let rel = real.strip_prefix(workspace).ok()?;
        Some(rel.to_string_lossy().into_owned())
    }

    /// `for VAR in WORDS`: the variable takes the words' values (globs matched) for the commands
    /// after it, which are judged with each value. A loop variable that names something the
    /// environment uses (`PATH`, `IFS`, any upper-case name) changes what later commands do.
    fn loop_head(
        &self,
        cmd: &SimpleCommand,
        env: &[String],
        scope: &mut Scope,
        out: &mut LineJudgement,
    ) {
        let var = cmd
            .assignments
            .first()
            .map(|(n, _)| n.clone())
            .unwrap_or_default();
        let plain_name = !var.is_empty()
            && var
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && !var.starts_with(|c: char| c.is_ascii_digit());
        let expanded = self.workspace.map(|ws| {
            super::expand::Expander {
                workspace: ws,
                vars: self.vars,
            }
            .loop_values(&cmd.loop_values, self.cwd)
        });
        let no_writes = cmd.redirects.iter().all(|r| !r.writes());
        if let (true, true, Some(Expanded::Words { words, globbed })) =
            (plain_name, no_writes, expanded)
            && words.len() <= super::expand::MAX_LOOP_VALUES
            && (!globbed || self.masking())
        {
            scope.loops.push((var.clone(), words));
            let judged = Judged {
                decision: Decision::Allow,
                rule_id: "builtin.loop".into(),
                reason: None,
                remember: Vec::new(),
                known_safe: true,
                masked: globbed,
            };
            self.push(cmd, None, judged, out);
            return;
        }
        let u = unwrap(self.resolver, &cmd.words, self.cwd);
        let judged = self.judge(cmd, &u, env);
        self.push(cmd, None, judged, out);
    }

    /// Whether commands can run with the credentials masked.
    fn masking(&self) -> bool {
        self.safe.is_some_and(SafeReads::masking)
    }

    /// Judges a command whose words the shell expands by expanding them first (see
    /// [`super::expand`]), once per value of a loop variable it refers to.
    fn judge_expanding(
        &self,
        cmd: &SimpleCommand,
        u: &Unwrapped,
        env: &[String],
        loops: &[(String, Vec<String>)],
    ) -> Judged {
        if let Some(j) = self.pre_checks(cmd, u) {
            return j;
        }
        let expandable = cmd.words.iter().any(|w| !w.is_literal())
            && u.unprovable.is_none()
            && cmd.unprovable.is_empty()
            && cmd.assignments.iter().all(|(_, v)| v.is_literal())
            && cmd.redirects.iter().all(|r| r.target.is_literal());
        let Some(workspace) = self.workspace.filter(|_| expandable) else {
            return self.judge_rest(cmd, u, env);
        };
        let program = cmd
            .words
            .get(u.start)
            .filter(|w| w.is_literal())
            .map(|w| basename(&w.text).to_string())
            .unwrap_or_default();
        let mut referenced: Vec<&(String, Vec<String>)> = loops
            .iter()
            .filter(|(var, _)| {
                cmd.words.iter().any(|w| {
                    w.parts
                        .iter()
                        .any(|p| matches!(p, super::shell::Part::Param { name, .. } if name == var))
                })
            })
            .collect();
        referenced.dedup_by(|a, b| a.0 == b.0);
        if referenced.len() > 1 {
            return self.cannot_prove("it refers to the variables of two loops".into());
        }
        let bindings: Vec<Option<(&str, &str)>> = match referenced.first() {
            None => vec![None],
            Some((var, values)) => values
                .iter()
                .map(|v| Some((var.as_str(), v.as_str())))
                .collect(),
        };
        let expander = super::expand::Expander {
            workspace,
            vars: self.vars,
        };
        let mut result: Option<Judged> = None;
        for bound in bindings {
            let one = match expander.words(&cmd.words, self.cwd, bound, text_only(&program)) {
                Expanded::Secret(why) => {
                    let mut j = self.unmatched(why, Vec::new(), true);
                    j.rule_id = "builtin.secret_variable".into();
                    j
                }
                Expanded::Unknown(why) => self.cannot_prove(why),
                Expanded::Words { words, globbed } => {
                    let mut literal = cmd.clone();
                    literal.words = words.into_iter().map(Word::literal).collect();
                    let lu = unwrap(self.resolver, &literal.words, self.cwd);
                    let mut j = self
                        .pre_checks(&literal, &lu)
                        .unwrap_or_else(|| self.judge_rest(&literal, &lu, env));
                    if globbed && j.known_safe {
                        // The shell matches the glob again when it runs; a credential file that
                        // appeared in between is empty under the mask.
                        if self.masking() {
                            j.masked = true;
                        } else {
                            j = self.cannot_prove(
                                "a glob, which the shell matches again when it runs (and \
                                 credentials cannot be masked here: no namespaces)"
                                    .into(),
                            );
                        }
                    }
                    j
                }
            };
            result = Some(match result {
                None => one,
                Some(prev) => prev.worst(one),
            });
        }
        result.unwrap_or_else(|| self.judge_rest(cmd, u, env))
    }

    /// A command whose words are only known when it runs: asked (denied under an allow list).
    fn cannot_prove(&self, why: String) -> Judged {
        let (decision, id) = self.unprovable_decision();
        Judged {
            decision,
            rule_id: id.into(),
            reason: Some(format!("cannot be proven: {why}")),
            remember: Vec::new(),
            known_safe: false,
            masked: false,
        }
    }

    fn push(&self, cmd: &SimpleCommand, exe: Option<String>, j: Judged, out: &mut LineJudgement) {
        out.decision = worse(out.decision, j.decision);
        out.known_safe &= j.known_safe;
        out.masked |= j.masked;
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
                masked: false,
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
                masked: false,
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
                        masked: false,
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
                masked: false,
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
                // The builtins, reporters and script readers first, then the table.
                let name = basename(&resolved.key);
                let more = super::safe_more::check(table, &resolved, name, args, self.cwd);
                Some(match more {
                    Some(result) => result.and_then(|proof| {
                        reads
                            .iter()
                            .try_for_each(|r| table.path_inside(r, self.cwd))
                            .map(|()| proof)
                    }),
                    None => table.check(&resolved, args, &reads, self.cwd),
                })
            }
            _ => None,
        };
        let proof = safe.as_ref().and_then(|r| r.as_ref().ok());
        let safe_name = proof.map(|p| p.name.as_str());
        // Why a command the person would call a read is not safe here (a credential, an option
        // that writes, a script that runs a program): the question says just that.
        let not_safe = safe.as_ref().and_then(|r| r.as_ref().err()).filter(|_| {
            let name = basename(&resolved.key);
            super::safe::program_named(name).is_some() || super::safe_more::knows(name)
        });
        let mut result = self.match_allow(&resolved, word, args, safe_name);
        if let (Some(why), Decision::Ask) = (not_safe, result.decision)
            && result.rule_id == self.compiled.default.1
        {
            result.reason = Some(why.clone());
        }
        result.known_safe = safe_name.is_some() && writes.is_empty();
        result.masked = result.known_safe && proof.is_some_and(|p| p.masked);
        if let Some((x, _)) = u.xargs {
            result = self.with_xargs(result, &words[x..]);
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
                masked: false,
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

    /// xargs appends its input to its inner command: it needs a rule of its own as well, and
    /// the stricter of the two judgements stands.
    fn with_xargs(&self, mut result: Judged, xargs_words: &[Word]) -> Judged {
        let xargv: Vec<String> = xargs_words.iter().map(|w| w.text.clone()).collect();
        let Some((word, args)) = xargv.split_first() else {
            return result;
        };
        let xres = self.resolver.resolve(word, self.cwd);
        let xresult = self.match_allow(&xres, word, args, None);
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
                            masked: false,
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
                masked: false,
            };
        }
        if let Some(r) = self.saved.iter().find(|r| r.matches(&resolved.key, args)) {
            return Judged {
                decision: Decision::Allow,
                rule_id: r.id.clone(),
                reason: None,
                remember: Vec::new(),
                known_safe: false,
                masked: false,
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
                masked: false,
            };
        }
        let remember = vec![derive_rule(resolved, word, args)];
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
                    masked: false,
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
                masked: false,
            },
            RuleDecision::Ask => Judged {
                decision: Decision::Ask,
                rule_id: id,
                reason: Some(format!(
                    "`{word}` matches no rule{workspace_note}{unsandboxed_note}"
                )),
                remember,
                known_safe: false,
                masked: false,
            },
            RuleDecision::Deny => Judged {
                decision: Decision::Deny,
                rule_id: id,
                reason: Some(format!(
                    "`{word}` matches no rule and the default is deny{workspace_note}"
                )),
                remember: Vec::new(),
                known_safe: false,
                masked: false,
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
                masked: false,
            };
        }
        if c.default.0 == RuleDecision::Deny {
            return Judged {
                decision: Decision::Deny,
                rule_id: c.default.1.clone(),
                reason: Some(reason),
                remember: Vec::new(),
                known_safe: false,
                masked: false,
            };
        }
        Judged {
            decision: Decision::Ask,
            rule_id: "builtin.unmatched".into(),
            reason: Some(reason),
            remember,
            known_safe: false,
            masked: false,
        }
    }
}
