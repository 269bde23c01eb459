//! From command text to the simple commands `/bin/sh` would run, each word proven literal or not.
//!
//! Rules can only be matched against words whose value is known before the shell runs. This
//! module parses the text with `conch-parser` and flattens every list, pipeline, compound command
//! and command substitution into [`SimpleCommand`]s. A word is literal when it is made only of
//! plain, quoted or escaped characters; any expansion (parameters, arithmetic, command
//! substitution, globs, tilde, brace lists) keeps its rendered text but records why its value
//! cannot be known.
//!
//! `conch-parser` recurses without a bound: a few hundred nested `$(` overflow the stack and abort
//! the whole process, which no `catch_unwind` can stop. So before parsing, a cheap scan counts
//! every character and keyword that can open a nesting level (ignoring quotes, so it can only
//! over-count). Small counts parse inline; larger ones parse on a thread whose stack is sized for
//! the count and whose answer is awaited with a deadline; beyond a hard cap the text is refused.

use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use conch_parser::ast::{
    self, Arithmetic, ComplexWord, CompoundCommandKind, Parameter, ParameterSubstitution,
    PipeableCommand, RedirectOrCmdWord, RedirectOrEnvVar, SimpleWord, TopLevelCommand,
    TopLevelWord,
};
use conch_parser::lexer::Lexer;
use conch_parser::parse::DefaultParser;

use super::plain;
use super::shell_helper::{self, Failure};

/// Longest command text that is parsed at all.
pub(crate) const MAX_COMMAND_BYTES: usize = 64 * 1024;
/// Most nesting openers (`(`, `{`, backtick, compound keywords) a command may contain.
pub(crate) const MAX_NESTING_UNITS: usize = 256;
/// Up to this many openers (and this many bytes) the parse runs on the caller's stack: measured
/// in a debug build without optimisation, conch-parser needs under 32 KiB of stack per level.
const INLINE_UNITS: usize = 16;
const INLINE_BYTES: usize = 4096;
/// Stack granted per opener when parsing on a helper thread (twice the measured worst case).
const STACK_PER_UNIT: usize = 64 * 1024;
const BASE_STACK: usize = 1024 * 1024;
/// A parse that takes longer than this is refused.
pub(crate) const PARSE_DEADLINE: Duration = Duration::from_secs(2);

/// One word of a command: its value when literal, its shell rendering otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Word {
    pub text: String,
    /// Why the value cannot be known before the shell runs; `None` for a literal word.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) unprovable: Option<String>,
    /// For a word that is not literal: its pieces, so that pablo can expand the ones it knows
    /// how to (globs, `$NAME`, arithmetic) the way the shell will (see [`super::expand`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) parts: Vec<Part>,
}

/// A piece of a word that is not literal as a whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Part {
    /// Text that stands as it is (quoted, or unquoted without glob characters).
    Text(String),
    /// An unquoted glob character: `*`, `?`, `[` or `]`.
    Glob(char),
    /// `$NAME` or `${NAME}` (also `$?`, `$#`, `$1`…); `quoted` inside double quotes, where the
    /// value is neither split into fields nor globbed.
    Param { name: String, quoted: bool },
    /// `$((…))` or `${#NAME}`: a number, computed from these variables without assigning any.
    Number { reads: Vec<String> },
    /// Anything pablo does not expand: a command substitution, `${x:-y}`, a `~`, bash quoting,
    /// a brace list, an arithmetic assignment.
    Opaque,
}

impl Word {
    pub(crate) fn literal(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            unprovable: None,
            parts: Vec::new(),
        }
    }

    pub(crate) fn is_literal(&self) -> bool {
        self.unprovable.is_none()
    }
}

/// How a redirection uses its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum RedirectKind {
    Read,
    Write,
    Append,
    Clobber,
    ReadWrite,
    Heredoc,
    DupRead,
    DupWrite,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Redirect {
    pub(crate) kind: RedirectKind,
    pub(crate) fd: Option<u16>,
    /// The file (or fd number, or here-document body).
    pub(crate) target: Word,
}

impl Redirect {
    /// Whether this redirection creates or changes a file. `/dev/null` and fd duplications
    /// (`2>&1`, `>&-`) do not; `>&name` is a file write in bash, so it counts.
    pub(crate) fn writes(&self) -> bool {
        match self.kind {
            RedirectKind::Write
            | RedirectKind::Append
            | RedirectKind::Clobber
            | RedirectKind::ReadWrite => !is_harmless_sink(&self.target),
            RedirectKind::DupWrite => {
                let t = &self.target.text;
                !(self.target.is_literal()
                    && (t == "-" || (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))))
            }
            RedirectKind::Read | RedirectKind::Heredoc | RedirectKind::DupRead => false,
        }
    }

    /// `2>/dev/null`, `>&2`: shell notation, for display.
    pub(crate) fn render(&self) -> String {
        let op = match self.kind {
            RedirectKind::Read => "<",
            RedirectKind::Write => ">",
            RedirectKind::Append => ">>",
            RedirectKind::Clobber => ">|",
            RedirectKind::ReadWrite => "<>",
            RedirectKind::Heredoc => "<<",
            RedirectKind::DupRead => "<&",
            RedirectKind::DupWrite => ">&",
        };
        let fd = self.fd.map(|f| f.to_string()).unwrap_or_default();
        if self.kind == RedirectKind::Heredoc {
            return format!("{fd}<<here-document");
        }
        format!("{fd}{op}{}", self.target.text)
    }
}

fn is_harmless_sink(target: &Word) -> bool {
    target.is_literal() && matches!(target.text.as_str(), "/dev/null")
}

/// One simple command: assignments, words and redirections, plus what the walk learned about it.
/// Sent by the parser's helper with empty fields left out (most commands have none of them).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimpleCommand {
    /// `NAME=value` prefixes (they change what the command does).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) assignments: Vec<(String, Word)>,
    /// argv as the shell builds it (before looking through wrappers).
    pub words: Vec<Word>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) redirects: Vec<Redirect>,
    /// Reasons not tied to one word: a function definition, a `for` variable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) unprovable: Vec<String>,
    /// Where the command sits when that matters for the reader (`in $(…)`, `for loop`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) context: Option<String>,
    /// For the `for VAR in WORDS` of a loop: the words the variable takes in turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) loop_values: Vec<Word>,
}

impl SimpleCommand {
    /// Every reason this command cannot be proven, words first.
    pub(crate) fn unprovable_reasons(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut push = |r: String| {
            if !out.contains(&r) {
                out.push(r);
            }
        };
        for (name, value) in &self.assignments {
            if let Some(why) = &value.unprovable {
                push(format!("{why} in the value of {name}"));
            }
        }
        for w in &self.words {
            if let Some(why) = &w.unprovable {
                push(format!("{why} in `{}`", w.text));
            }
        }
        for r in &self.redirects {
            if let Some(why) = &r.target.unprovable {
                if r.kind == RedirectKind::Heredoc {
                    push(format!("{why} in a here-document body"));
                } else {
                    push(format!("{why} in redirection target `{}`", r.target.text));
                }
            }
        }
        for r in &self.unprovable {
            push(r.clone());
        }
        out
    }

    pub(crate) fn argv(&self) -> Vec<String> {
        self.words.iter().map(|w| w.text.clone()).collect()
    }

    /// The command as one line of plain words (quotes removed): what deny patterns also see.
    pub(crate) fn render(&self) -> String {
        let mut parts: Vec<String> = self
            .assignments
            .iter()
            .map(|(n, v)| format!("{n}={}", v.text))
            .collect();
        parts.extend(self.words.iter().map(|w| w.text.clone()));
        parts.extend(self.redirects.iter().map(Redirect::render));
        parts.join(" ")
    }
}

/// Why a text was not parsed at all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Refusal {
    TooLong { bytes: usize },
    TooNested { units: usize },
    Timeout,
    Syntax(String),
}

impl Refusal {
    pub(crate) fn reason(&self) -> String {
        match self {
            Refusal::TooLong { bytes } => format!(
                "the command is {bytes} bytes long; commands over {MAX_COMMAND_BYTES} bytes are \
                 not checked"
            ),
            Refusal::TooNested { units } => format!(
                "the command opens {units} nested groups or substitutions; more than \
                 {MAX_NESTING_UNITS} are not checked"
            ),
            Refusal::Timeout => format!(
                "parsing the command took longer than {} s",
                PARSE_DEADLINE.as_secs()
            ),
            Refusal::Syntax(e) => format!("the command could not be parsed: {e}"),
        }
    }

    /// True when the text is refused for its size, so no rule or answer can make it run.
    pub(crate) fn is_limit(&self) -> bool {
        !matches!(self, Refusal::Syntax(_))
    }
}

/// Parses `text` into the simple commands it would run, in source order (a command
/// substitution's commands come before the command that uses them): plain words here
/// ([`plain`]), anything else in the helper process when the binary asked for one
/// ([`shell_helper`]), else here.
pub fn parse(text: &str) -> Result<Vec<SimpleCommand>, Refusal> {
    #[cfg(test)]
    counted::count(text);
    if text.len() > MAX_COMMAND_BYTES {
        return Err(Refusal::TooLong { bytes: text.len() });
    }
    if let Some(words) = plain::plain_words(text) {
        let words = words.into_iter().map(Word::literal).collect();
        return Ok(vec![SimpleCommand {
            words,
            ..SimpleCommand::default()
        }]);
    }
    settle(shell_helper::ask(text), text)
}

/// The answer to `text` from what the helper said, or from parsing here when there is no helper:
/// none was asked for, or none could start (no `/proc`, no processes left). Parsing here keeps
/// commands checkable where a helper cannot run, at the cost of the isolation.
fn settle(
    asked: Option<Result<Vec<u8>, Failure>>,
    text: &str,
) -> Result<Vec<SimpleCommand>, Refusal> {
    match asked {
        None => parse_in_process(text),
        Some(Ok(bytes)) => serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Err(Refusal::Syntax(PARSER_FAILED.into()))),
        Some(Err(Failure::Late)) => Err(Refusal::Timeout),
        Some(Err(Failure::NotStarted(why))) => {
            tracing::warn!(%why, "no shell parser helper could start; parsing in process");
            parse_in_process(text)
        }
        Some(Err(Failure::Died | Failure::Garbled)) => Err(Refusal::Syntax(PARSER_FAILED.into())),
    }
}

/// How often each text was parsed, for the tests that show a tool call parses its command once
/// (by text, so that tests running side by side do not count each other's parses).
#[cfg(test)]
pub(crate) mod counted {
    use std::collections::HashMap;
    use std::sync::{LazyLock, Mutex};

    static PARSED: LazyLock<Mutex<HashMap<String, usize>>> = LazyLock::new(Default::default);

    pub(super) fn count(text: &str) {
        if let Ok(mut m) = PARSED.lock() {
            *m.entry(text.to_string()).or_default() += 1;
        }
    }

    /// How many times `text` went to the parser in this process.
    pub(crate) fn times(text: &str) -> usize {
        PARSED
            .lock()
            .map(|m| m.get(text).copied().unwrap_or(0))
            .unwrap_or(0)
    }
}

/// Why a command is refused when the parser failed on it: a panic caught in process, or the
/// helper's death while parsing it.
const PARSER_FAILED: &str = "the shell parser failed on it";

/// The first call of the `pablo` binary. Started as the shell parser's helper, this serves parse
/// requests until its socket closes and returns the exit code; otherwise it makes every later
/// [`parse`] in this process go through a helper ([`shell_helper`]), and returns `None`.
pub fn isolate_shell_parser() -> Option<ExitCode> {
    // The helper's own deadline, and a margin for its start.
    shell_helper::serve_or_isolate(encoded_answer, PARSE_DEADLINE + Duration::from_secs(1))
}

/// What the helper sends back for `text`: [`parse_in_process`]'s answer as JSON.
fn encoded_answer(text: &str) -> Vec<u8> {
    // Nothing in an answer fails to encode; an empty reply would be refused by the reader anyway.
    serde_json::to_vec(&parse_in_process(text)).unwrap_or_default()
}

/// [`parse`] in this process: what the helper runs, and what a library user without one runs.
pub(super) fn parse_in_process(text: &str) -> Result<Vec<SimpleCommand>, Refusal> {
    if text.len() > MAX_COMMAND_BYTES {
        return Err(Refusal::TooLong { bytes: text.len() });
    }
    if text.contains('\r') {
        // sh reads a carriage return as part of a word; conch-parser as a blank.
        return Err(Refusal::Syntax(
            "it contains a carriage return, which sh and this parser read differently".into(),
        ));
    }
    let units = nesting_units(text);
    if units > MAX_NESTING_UNITS {
        return Err(Refusal::TooNested { units });
    }
    let joined = join_continued_lines(text);
    if units <= INLINE_UNITS && joined.len() <= INLINE_BYTES {
        return parse_guarded(&joined);
    }
    let (tx, rx) = mpsc::channel();
    let stack = BASE_STACK + units * STACK_PER_UNIT;
    let spawned = std::thread::Builder::new()
        .name("pablo-policy-parse".into())
        .stack_size(stack)
        .spawn(move || {
            let _ = tx.send(parse_guarded(&joined));
        });
    if spawned.is_err() {
        return Err(Refusal::Syntax(
            "no thread could be started to parse it".into(),
        ));
    }
    // On timeout the thread is left to finish on its own: the input is bounded, so it does.
    rx.recv_timeout(PARSE_DEADLINE)
        .unwrap_or(Err(Refusal::Timeout))
}

/// Counts everything that can make the parser recurse, quotes ignored (an over-count is safe).
pub(crate) fn nesting_units(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut units = bytes
        .iter()
        .filter(|b| matches!(b, b'(' | b'{' | b'`'))
        .count();
    // Compound-command keywords nest without brackets.
    for word in text.split(|c: char| !c.is_ascii_alphanumeric() && c != '_') {
        if matches!(word, "if" | "while" | "until" | "for" | "case") {
            units += 1;
        }
    }
    // Arithmetic recurses on prefix operators (`$((- - - 1))`) and right-associative ones.
    if text.contains("((") {
        units += bytes
            .iter()
            .filter(|b| matches!(b, b'-' | b'+' | b'!' | b'~' | b'*' | b'?' | b'=' | b':'))
            .count();
    }
    units
}

/// Removes backslash-newline pairs outside single quotes, as the shell does before splitting
/// words (conch-parser would otherwise read `r\<newline>m` as two words where sh runs `rm`).
fn join_continued_lines(text: &str) -> String {
    if !text.contains("\\\n") {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut single = false;
    let mut double = false;
    let mut comment = false;
    let mut prev_blank = true;
    while let Some(c) = chars.next() {
        if comment {
            if c == '\n' {
                comment = false;
            }
            out.push(c);
            prev_blank = c == '\n';
            continue;
        }
        if single {
            single = c != '\'';
            out.push(c);
            prev_blank = false;
            continue;
        }
        match c {
            '\\' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                    continue;
                }
                out.push(c);
                if let Some(n) = chars.next() {
                    out.push(n);
                }
                prev_blank = false;
                continue;
            }
            '\'' if !double => single = true,
            '"' => double = !double,
            '#' if !double && prev_blank => comment = true,
            _ => {}
        }
        out.push(c);
        prev_blank = !double && matches!(c, ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')');
    }
    out
}

/// conch-parser can panic on some malformed input (found by fuzzing: a here-document body that
/// ends the text with a backslash unwraps a `None`). A text ending in a backslash is refused before
/// parsing, so the usual case prints nothing. Any other panic is caught and refused the same way
/// in a build that unwinds; under `panic = "abort"` (the release binary) it ends the process, which
/// is why the binary parses in a helper process ([`shell_helper`]).
fn parse_guarded(text: &str) -> Result<Vec<SimpleCommand>, Refusal> {
    let trailing = text.bytes().rev().take_while(|b| *b == b'\\').count();
    if trailing % 2 == 1 {
        return Err(Refusal::Syntax("it ends with a lone backslash".into()));
    }
    std::panic::catch_unwind(|| parse_and_walk(text))
        .unwrap_or_else(|_| Err(Refusal::Syntax(PARSER_FAILED.into())))
}

fn parse_and_walk(text: &str) -> Result<Vec<SimpleCommand>, Refusal> {
    let parser = DefaultParser::new(Lexer::new(text.chars()));
    let mut walker = Walker::default();
    for cmd in parser {
        match cmd {
            Ok(c) => walker.top(&c, &[]),
            Err(e) => return Err(Refusal::Syntax(e.to_string())),
        }
    }
    Ok(walker.out)
}

type Cmd = TopLevelCommand<String>;
type Wd = TopLevelWord<String>;
type AstRedirect = ast::Redirect<Wd>;
type AstSimple = ast::SimpleCommand<String, Wd, AstRedirect>;
type AstSimpleWord = SimpleWord<
    String,
    Parameter<String>,
    Box<ParameterSubstitution<Parameter<String>, Wd, Cmd, Arithmetic<String>>>,
>;
type AstCompound = ast::CompoundCommand<CompoundCommandKind<String, Wd, Cmd>, AstRedirect>;

#[derive(Default)]
struct Walker {
    out: Vec<SimpleCommand>,
    /// Nesting context labels (`in $(…)`), innermost last.
    context: Vec<&'static str>,
}

impl Walker {
    fn top(&mut self, cmd: &Cmd, inherited: &[Redirect]) {
        let list = match &cmd.0 {
            ast::Command::Job(l) | ast::Command::List(l) => l,
        };
        self.listable(&list.first, inherited);
        for next in &list.rest {
            match next {
                ast::AndOr::And(c) | ast::AndOr::Or(c) => self.listable(c, inherited),
            }
        }
    }

    fn listable(
        &mut self,
        cmd: &ast::ListableCommand<ast::DefaultPipeableCommand>,
        inherited: &[Redirect],
    ) {
        match cmd {
            ast::ListableCommand::Single(p) => self.pipeable(p, inherited),
            ast::ListableCommand::Pipe(_, ps) => {
                for p in ps {
                    self.pipeable(p, inherited);
                }
            }
        }
    }

    fn pipeable(&mut self, cmd: &ast::DefaultPipeableCommand, inherited: &[Redirect]) {
        match cmd {
            PipeableCommand::Simple(s) => self.simple(s, inherited),
            PipeableCommand::Compound(c) => self.compound(c, inherited),
            PipeableCommand::FunctionDef(name, body) => {
                // The body runs whenever `name` is called later, and `name` may shadow any
                // command, so the definition itself is what gets judged.
                let mut def = SimpleCommand {
                    words: vec![Word::literal(format!("{name}()"))],
                    unprovable: vec![format!(
                        "defines the shell function `{name}`, which can stand in for any command"
                    )],
                    context: Some("function definition".into()),
                    ..Default::default()
                };
                def.redirects.extend(inherited.iter().cloned());
                self.out.push(def);
                self.context.push("function body");
                self.compound(body, inherited);
                self.context.pop();
            }
        }
    }

    fn compound(&mut self, cmd: &AstCompound, inherited: &[Redirect]) {
        let mut redirects = inherited.to_vec();
        for r in &cmd.io {
            redirects.push(self.redirect(r));
        }
        match &cmd.kind {
            CompoundCommandKind::Brace(cmds) | CompoundCommandKind::Subshell(cmds) => {
                self.list(cmds, &redirects);
            }
            CompoundCommandKind::While(gb) | CompoundCommandKind::Until(gb) => {
                self.list(&gb.guard, &redirects);
                self.list(&gb.body, &redirects);
            }
            CompoundCommandKind::If {
                conditionals,
                else_branch,
            } => {
                for gb in conditionals {
                    self.list(&gb.guard, &redirects);
                    self.list(&gb.body, &redirects);
                }
                if let Some(e) = else_branch {
                    self.list(e, &redirects);
                }
            }
            CompoundCommandKind::For { var, words, body } => {
                // The loop variable is a shell assignment (even `PATH`), so it is judged like one.
                let values: Vec<Word> = words
                    .iter()
                    .flatten()
                    .map(|w| self.word(w, WordPosition::Argument))
                    .collect();
                let joined = Word {
                    text: values
                        .iter()
                        .map(|w| w.text.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                    unprovable: values.iter().find_map(|w| w.unprovable.clone()),
                    parts: Vec::new(),
                };
                self.out.push(SimpleCommand {
                    assignments: vec![(var.clone(), joined)],
                    redirects: redirects.clone(),
                    context: Some(format!("for loop over {var}")),
                    loop_values: values,
                    ..Default::default()
                });
                self.list(body, &redirects);
            }
            CompoundCommandKind::Case { word, arms } => {
                // The subject and patterns only run something through substitutions, which
                // `word` collects as commands of their own.
                let _ = self.word(word, WordPosition::Argument);
                for arm in arms {
                    for p in &arm.patterns {
                        let _ = self.word(p, WordPosition::Pattern);
                    }
                    self.list(&arm.body, &redirects);
                }
            }
        }
    }

    fn list(&mut self, cmds: &[Cmd], inherited: &[Redirect]) {
        for c in cmds {
            self.top(c, inherited);
        }
    }

    fn simple(&mut self, cmd: &AstSimple, inherited: &[Redirect]) {
        let mut out = SimpleCommand {
            context: self.context.last().map(|c| (*c).to_string()),
            ..Default::default()
        };
        for item in &cmd.redirects_or_env_vars {
            match item {
                RedirectOrEnvVar::Redirect(r) => {
                    let r = self.redirect(r);
                    out.redirects.push(r);
                }
                RedirectOrEnvVar::EnvVar(name, value) => {
                    let value = match value {
                        Some(v) => self.word(v, WordPosition::Assignment),
                        None => Word::literal(""),
                    };
                    out.assignments.push((name.clone(), value));
                }
            }
        }
        for item in &cmd.redirects_or_cmd_words {
            match item {
                RedirectOrCmdWord::Redirect(r) => {
                    let r = self.redirect(r);
                    out.redirects.push(r);
                }
                RedirectOrCmdWord::CmdWord(w) => {
                    let w = self.word(w, WordPosition::Argument);
                    out.words.push(w);
                }
            }
        }
        out.redirects.extend(inherited.iter().cloned());
        self.out.push(out);
    }

    fn redirect(&mut self, r: &AstRedirect) -> Redirect {
        let (kind, fd, w) = match r {
            ast::Redirect::Read(fd, w) => (RedirectKind::Read, fd, w),
            ast::Redirect::Write(fd, w) => (RedirectKind::Write, fd, w),
            ast::Redirect::ReadWrite(fd, w) => (RedirectKind::ReadWrite, fd, w),
            ast::Redirect::Append(fd, w) => (RedirectKind::Append, fd, w),
            ast::Redirect::Clobber(fd, w) => (RedirectKind::Clobber, fd, w),
            ast::Redirect::Heredoc(fd, w) => (RedirectKind::Heredoc, fd, w),
            ast::Redirect::DupRead(fd, w) => (RedirectKind::DupRead, fd, w),
            ast::Redirect::DupWrite(fd, w) => (RedirectKind::DupWrite, fd, w),
        };
        let position = if kind == RedirectKind::Heredoc {
            WordPosition::HeredocBody
        } else {
            WordPosition::Argument
        };
        Redirect {
            kind,
            fd: *fd,
            target: self.word(w, position),
        }
    }

    /// Renders a word and proves it literal (or says why not). Commands inside substitutions
    /// are collected as simple commands of their own: they run too.
    fn word(&mut self, w: &Wd, position: WordPosition) -> Word {
        let mut acc = WordAcc::default();
        let parts: &[ast::Word<String, AstSimpleWord>] = match &w.0 {
            ComplexWord::Concat(v) => v,
            ComplexWord::Single(one) => std::slice::from_ref(one),
        };
        let mut after_dollar = false;
        for part in parts {
            match part {
                // `$'…'` and `$"…"`: bash's quoting forms, shown as written (not as `$…`).
                ast::Word::SingleQuoted(s) if after_dollar => {
                    acc.text.push_str(&format!("'{s}'"));
                    acc.name_dollar_quote("bash's `$'…'` quoting (sh does not know its escapes)");
                }
                ast::Word::SingleQuoted(s) => acc.push_text(s),
                ast::Word::DoubleQuoted(inner) => {
                    if after_dollar {
                        acc.text.push('"');
                    }
                    for sw in inner {
                        self.simple_word(sw, &mut acc, true, position);
                    }
                    if after_dollar {
                        acc.text.push('"');
                        acc.name_dollar_quote("bash's `$\"…\"` quoting (a translated string)");
                    }
                }
                ast::Word::Simple(sw) => self.simple_word(sw, &mut acc, false, position),
            }
            after_dollar = position != WordPosition::HeredocBody
                && matches!(part, ast::Word::Simple(SimpleWord::Literal(l)) if l.ends_with('$'));
        }
        if position == WordPosition::Argument
            && acc.square_open
            && acc.square_close
            && acc.why.is_none()
        {
            acc.why = Some("a glob pattern".into());
        }
        let parts = if acc.why.is_some() {
            acc.parts
        } else {
            Vec::new()
        };
        Word {
            text: acc.text,
            unprovable: acc.why,
            parts,
        }
    }

    fn simple_word(
        &mut self,
        sw: &AstSimpleWord,
        acc: &mut WordAcc,
        quoted: bool,
        position: WordPosition,
    ) {
        let glob_matters = position == WordPosition::Argument && !quoted;
        match sw {
            SimpleWord::Literal(s) => {
                let mut opaque = false;
                if !quoted && position != WordPosition::HeredocBody {
                    if s.contains('$') {
                        // `$'…'` and `$"…"` are quoting forms of bash with their own escapes.
                        acc.set_why(BARE_DOLLAR);
                        opaque = true;
                    }
                    if position != WordPosition::Pattern && has_brace_expansion(s) {
                        acc.set_why("a brace expansion");
                        opaque = true;
                    }
                }
                acc.push_text(s);
                if opaque {
                    acc.parts.push(Part::Opaque);
                }
            }
            SimpleWord::Escaped(s) => acc.push_text(s),
            SimpleWord::Colon => acc.push_text(":"),
            SimpleWord::Tilde => {
                // Only a `~` that begins a word (or follows `:` or `=`, where assignments
                // expand it) is an expansion; `HEAD~1` is a literal.
                let expands = acc.text.is_empty() || acc.text.ends_with([':', '=']);
                if quoted || position == WordPosition::HeredocBody || !expands {
                    acc.push_text("~");
                } else {
                    acc.set_why("tilde expansion");
                    acc.text.push('~');
                    acc.parts.push(Part::Opaque);
                }
            }
            SimpleWord::Star | SimpleWord::Question => {
                let c = if matches!(sw, SimpleWord::Star) {
                    '*'
                } else {
                    '?'
                };
                if glob_matters {
                    acc.set_why("a glob pattern");
                    acc.text.push(c);
                    acc.parts.push(Part::Glob(c));
                } else {
                    acc.push_text(&c.to_string());
                }
            }
            SimpleWord::SquareOpen | SimpleWord::SquareClose => {
                let c = if matches!(sw, SimpleWord::SquareOpen) {
                    '['
                } else {
                    ']'
                };
                if glob_matters {
                    if c == '[' {
                        acc.square_open = true;
                    } else {
                        acc.square_close = true;
                    }
                    acc.text.push(c);
                    acc.parts.push(Part::Glob(c));
                } else {
                    acc.push_text(&c.to_string());
                }
            }
            SimpleWord::Param(p) => {
                acc.text.push_str(&render_param(p));
                acc.set_why("a parameter expansion");
                acc.parts.push(Part::Param {
                    name: param_name(p),
                    quoted,
                });
            }
            SimpleWord::Subst(s) => self.substitution(s, acc),
        }
    }

    fn substitution(
        &mut self,
        s: &ParameterSubstitution<Parameter<String>, Wd, Cmd, Arithmetic<String>>,
        acc: &mut WordAcc,
    ) {
        match s {
            ParameterSubstitution::Command(cmds) => {
                acc.text.push_str("$(…)");
                acc.set_why("a command substitution");
                acc.parts.push(Part::Opaque);
                self.context.push("command substitution");
                self.list(cmds, &[]);
                self.context.pop();
            }
            ParameterSubstitution::Arith(a) => {
                acc.text.push_str("$((…))");
                acc.set_why("an arithmetic expansion");
                let mut reads = Vec::new();
                let part = match a {
                    Some(a) if arithmetic_reads(a, &mut reads) => Part::Number { reads },
                    None => Part::Number { reads },
                    Some(_) => Part::Opaque,
                };
                acc.parts.push(part);
            }
            ParameterSubstitution::Len(p) => {
                acc.text.push_str(&format!("${{#{}}}", param_name(p)));
                acc.set_why("a parameter expansion");
                acc.parts.push(Part::Number {
                    reads: vec![param_name(p)],
                });
            }
            ParameterSubstitution::Default(_, p, w)
            | ParameterSubstitution::Assign(_, p, w)
            | ParameterSubstitution::Error(_, p, w)
            | ParameterSubstitution::Alternative(_, p, w)
            | ParameterSubstitution::RemoveSmallestSuffix(p, w)
            | ParameterSubstitution::RemoveLargestSuffix(p, w)
            | ParameterSubstitution::RemoveSmallestPrefix(p, w)
            | ParameterSubstitution::RemoveLargestPrefix(p, w) => {
                acc.text.push_str(&format!("${{{}…}}", param_name(p)));
                acc.set_why("a parameter expansion");
                acc.parts.push(Part::Opaque);
                if let Some(w) = w {
                    // The word may hold command substitutions; collect them.
                    let _ = self.word(w, WordPosition::Argument);
                }
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WordPosition {
    Argument,
    Assignment,
    Pattern,
    HeredocBody,
}

#[derive(Default)]
struct WordAcc {
    text: String,
    why: Option<String>,
    square_open: bool,
    square_close: bool,
    parts: Vec<Part>,
}

/// Why a word with a `$` that is not an expansion sh knows is not literal.
const BARE_DOLLAR: &str = "a `$` that bash would expand";

impl WordAcc {
    fn set_why(&mut self, why: &str) {
        if self.why.is_none() {
            self.why = Some(why.to_string());
        }
    }

    /// The `$` was a bash quote after all: say so instead of the generic reason.
    fn name_dollar_quote(&mut self, why: &str) {
        if self.why.as_deref().is_none_or(|w| w == BARE_DOLLAR) {
            self.why = Some(why.to_string());
        }
        self.parts.push(Part::Opaque);
    }

    /// Text that stands as it is, in the rendering and in the parts.
    fn push_text(&mut self, s: &str) {
        self.text.push_str(s);
        match self.parts.last_mut() {
            Some(Part::Text(t)) => t.push_str(s),
            _ => self.parts.push(Part::Text(s.to_string())),
        }
    }
}

/// Collects the variables an arithmetic expression reads into `reads`; `false` when it assigns
/// one (`$((i=1))`, `$((i++))`), which changes the shell's state for later commands.
fn arithmetic_reads(a: &Arithmetic<String>, reads: &mut Vec<String>) -> bool {
    use Arithmetic as A;
    match a {
        A::Var(v) => {
            reads.push(v.clone());
            true
        }
        A::Literal(_) => true,
        A::PostIncr(_) | A::PostDecr(_) | A::PreIncr(_) | A::PreDecr(_) | A::Assign(..) => false,
        A::UnaryPlus(x) | A::UnaryMinus(x) | A::LogicalNot(x) | A::BitwiseNot(x) => {
            arithmetic_reads(x, reads)
        }
        A::Pow(x, y)
        | A::Mult(x, y)
        | A::Div(x, y)
        | A::Modulo(x, y)
        | A::Add(x, y)
        | A::Sub(x, y)
        | A::ShiftLeft(x, y)
        | A::ShiftRight(x, y)
        | A::Less(x, y)
        | A::LessEq(x, y)
        | A::Great(x, y)
        | A::GreatEq(x, y)
        | A::Eq(x, y)
        | A::NotEq(x, y)
        | A::BitwiseAnd(x, y)
        | A::BitwiseXor(x, y)
        | A::BitwiseOr(x, y)
        | A::LogicalAnd(x, y)
        | A::LogicalOr(x, y) => arithmetic_reads(x, reads) && arithmetic_reads(y, reads),
        A::Ternary(x, y, z) => {
            arithmetic_reads(x, reads) && arithmetic_reads(y, reads) && arithmetic_reads(z, reads)
        }
        A::Sequence(xs) => xs.iter().all(|x| arithmetic_reads(x, reads)),
    }
}

/// `{a,b}` and `{1..3}` expand in bash (not in POSIX sh); they are never taken as literal.
fn has_brace_expansion(s: &str) -> bool {
    let Some(open) = s.find('{') else {
        return false;
    };
    let rest = &s[open..];
    match rest.find('}') {
        Some(close) => {
            let inner = &rest[1..close];
            inner.contains(',') || inner.contains("..")
        }
        None => false,
    }
}

fn param_name(p: &Parameter<String>) -> String {
    match p {
        Parameter::At => "@".into(),
        Parameter::Star => "*".into(),
        Parameter::Pound => "#".into(),
        Parameter::Question => "?".into(),
        Parameter::Dash => "-".into(),
        Parameter::Dollar => "$".into(),
        Parameter::Bang => "!".into(),
        Parameter::Positional(n) => n.to_string(),
        Parameter::Var(v) => v.clone(),
    }
}

fn render_param(p: &Parameter<String>) -> String {
    format!("${}", param_name(p))
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;
