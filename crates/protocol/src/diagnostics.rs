//! What a language server said about a file, as it crosses to front-ends and the model: in the
//! approval prompt (what an edit would introduce and fix, before it lands) and in a file
//! change's result (what the file holds once it landed).

use serde::{Deserialize, Serialize};

/// How bad one diagnostic is (the LSP severities; a server that gives none means an error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
    Information,
    Hint,
}

impl Severity {
    pub fn label(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "information",
            Severity::Hint => "hint",
        }
    }
}

/// One diagnostic of one file: where (1-based line and column of its start), how bad, what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub line: u32,
    pub column: u32,
    pub severity: Severity,
    pub message: String,
    /// Who said it (`Pyright`, `Ruff`): the server's own `source`, else its config name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The rule or error code, when the server gives one (`reportAttributeAccessIssue`, `F401`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// An edit's diagnostics against the file's current ones: what the new text introduces and what
/// it fixes. Only errors and warnings count.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiagnosticsDelta {
    /// In the new text and not in the current one, at their lines in the new text.
    pub introduced: Vec<Diagnostic>,
    /// In the current text and not in the new one, at their lines in the current text.
    pub fixed: Vec<Diagnostic>,
    /// How many of each list were left out to keep the report bounded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub introduced_omitted: usize,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fixed_omitted: usize,
    /// The servers that answered (config names).
    pub servers: Vec<String>,
    /// Servers that did not answer, and why (`pyright: no answer within 1.5 s`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl DiagnosticsDelta {
    /// `introduces 2 errors · fixes 1`, `no new errors or warnings`.
    pub fn summary(&self) -> String {
        let count = |list: &[Diagnostic], omitted: usize, sev: Severity| {
            list.iter().filter(|d| d.severity == sev).count()
                + if sev == Severity::Error { omitted } else { 0 }
        };
        let errors = count(&self.introduced, self.introduced_omitted, Severity::Error);
        let warnings = count(&self.introduced, 0, Severity::Warning);
        let fixed = self.fixed.len() + self.fixed_omitted;
        let plural = |n: usize, word: &str| {
            if n == 1 {
                format!("1 {word}")
            } else {
                format!("{n} {word}s")
            }
        };
        let mut parts = Vec::new();
        match (errors, warnings) {
            (0, 0) => {}
            (e, 0) => parts.push(format!("introduces {}", plural(e, "error"))),
            (0, w) => parts.push(format!("introduces {}", plural(w, "warning"))),
            (e, w) => parts.push(format!(
                "introduces {} and {}",
                plural(e, "error"),
                plural(w, "warning")
            )),
        }
        if fixed > 0 {
            parts.push(format!("fixes {fixed}"));
        }
        if parts.is_empty() {
            if self.servers.is_empty() {
                return "not checked".into();
            }
            return "no new errors or warnings".into();
        }
        parts.join(" · ")
    }
}

/// Where the check of a previewed file change stands, as the approval prompt shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum PreviewDiagnostics {
    /// The servers have the new text; their answer is awaited.
    Checking { servers: Vec<String> },
    /// What the servers answered.
    Ready(DiagnosticsDelta),
    /// No server could check it (it crashed, hung, or would not start), and why.
    Unavailable { reason: String },
}

/// The diagnostics a committed file change's result carries: the errors and warnings of the file
/// as it now is, bounded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDiagnostics {
    pub diagnostics: Vec<Diagnostic>,
    /// How many more there were than the result holds.
    pub omitted: usize,
    /// The servers that answered.
    pub servers: Vec<String>,
    /// Servers that did not answer, and why.
    pub unavailable: Vec<String>,
}

impl PreviewDiagnostics {
    /// Plain text for front-ends without a screen of their own (an editor's tool call content):
    /// the summary, then one line per diagnostic with its line.
    pub fn describe(&self) -> String {
        match self {
            PreviewDiagnostics::Checking { servers } => {
                format!("diagnostics: checking… ({})", servers.join(", "))
            }
            PreviewDiagnostics::Unavailable { reason } => {
                format!("diagnostics: not checked: {reason}")
            }
            PreviewDiagnostics::Ready(r) => {
                let mut out = format!("diagnostics: {} ({})", r.summary(), r.servers.join(", "));
                let line = |mark: &str, d: &Diagnostic| {
                    let first = d.message.lines().next().unwrap_or_default();
                    let source = d
                        .source
                        .as_deref()
                        .map(|s| format!(" ({s})"))
                        .unwrap_or_default();
                    format!(
                        "\n{mark} line {} {}: {first}{source}",
                        d.line,
                        d.severity.label()
                    )
                };
                for d in &r.introduced {
                    out.push_str(&line("+", d));
                }
                for d in &r.fixed {
                    out.push_str(&line("fixed", d));
                }
                for u in &r.unavailable {
                    out.push_str(&format!("\n{u}"));
                }
                out
            }
        }
    }
}

/// Where a language server is in its life, as `/status` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LspState {
    /// Found, not needed yet (a server starts with the first file of its kind).
    NotStarted,
    Ready,
    /// It could not start, or exited too often: not started again in this session.
    Failed,
    /// Left out until the folder is trusted (it runs the project's code).
    Withheld,
}

/// One language server of the session: its name, state and, when it failed, why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LspServerView {
    pub name: String,
    pub state: LspState,
    /// Times it was started again after exiting (it is started again when next needed, at
    /// most three times).
    #[serde(default)]
    pub restarts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
