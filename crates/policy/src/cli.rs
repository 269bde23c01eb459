//! What `pablo policy check` and `pablo policy rules` report, as data.
//!
//! The binary prints; this module only builds the reports (serde structs and their text form),
//! so the same answers are testable without a process and usable by other front-ends.

use serde::Serialize;

use super::{PolicyEngine, PolicyError, SavedRule, decision_label};
use pablo_core::{ToolKind, ToolName};
use pablo_protocol::{CommandPreview, Decision, Preview, SimpleCommandView};

/// The answer of `pablo policy check -- COMMAND`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckReport {
    pub decision: Decision,
    pub commands: Vec<SimpleCommandView>,
    pub reasons: Vec<String>,
    pub rule_ids: Vec<String>,
    /// What "allow always" would save, when the decision is ask.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub always_rule: Option<String>,
    /// The OS sandbox the command would run in (`{"profile": "read-only", "network": false, …}`).
    pub sandbox: Option<pablo_protocol::SandboxChoice>,
    /// The hosts the command could reach through the sandbox's network proxy
    /// (`[options.shell] network_allow`), when its sandbox cuts the network and the list is set.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) network_allow: Vec<String>,
    /// Ignored settings (an untrusted project's allow rules, …).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) warnings: Vec<String>,
    /// The environment the command would get (`--env`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<EnvReport>,
}

/// The environment of a command, as `pablo policy check --env` shows it. Secrets never pass, so
/// every value here is safe to print; what config asked for and was refused is named, never
/// valued.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnvReport {
    pub(crate) vars: Vec<EnvVar>,
    pub(crate) withheld: Vec<WithheldVar>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct EnvVar {
    pub(crate) name: String,
    pub(crate) value: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct WithheldVar {
    pub(crate) name: String,
    pub(crate) reason: String,
}

/// The command line `pablo policy check -- WORDS` judges: one word is a command line as the
/// shell reads it (`"git status"`); several are the words of one command, each quoted for the
/// shell, so `find . -name '*.rs'` typed at a shell is judged with `*.rs` as the one word find
/// receives, not as a glob the shell would expand.
pub fn command_line(words: &[String]) -> String {
    match words {
        [one] => one.clone(),
        words => words
            .iter()
            .map(|w| shell_quote(w))
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// `word` as one shell word: as it is when nothing in it is special, else in single quotes.
fn shell_quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Judges `command` exactly as a `shell.run` call in the workspace root would be.
pub fn check(engine: &PolicyEngine, command: &str) -> CheckReport {
    let mut preview = Preview::Command(CommandPreview {
        command: command.to_string(),
        cwd: ".".into(),
        background: false,
        pty: false,
        commands: Vec::new(),
        sandbox: None,
    });
    let verdict = engine.decide(ToolName::ShellRun.native(), ToolKind::Execute, &mut preview);
    let (commands, sandbox) = match preview {
        Preview::Command(cp) => (cp.commands, cp.sandbox),
        _ => (Vec::new(), None),
    };
    let settings = engine.sandbox_settings();
    let proxied = sandbox
        .as_ref()
        .is_some_and(|s| s.profile == pablo_protocol::SandboxProfile::WorkspaceWrite && !s.network);
    let network_allow = match proxied {
        true => settings
            .network_allow
            .iter()
            .map(|e| e.to_string())
            .collect(),
        false => Vec::new(),
    };
    CheckReport {
        decision: verdict.decision,
        commands,
        reasons: verdict.reasons,
        rule_ids: verdict.rule_ids,
        always_rule: verdict.always_rule,
        sandbox,
        network_allow,
        warnings: engine.warnings().to_vec(),
        env: None,
    }
}

/// The environment a command of this engine's session gets (`pablo policy check --env`).
pub fn env_report(engine: &PolicyEngine) -> EnvReport {
    let env = engine.command_env();
    // A foreground command without a terminal and without additions: what `shell.run` passes.
    let vars = env
        .for_command(&Default::default(), false)
        .unwrap_or_default()
        .into_iter()
        .map(|(name, value)| EnvVar { name, value })
        .collect();
    let withheld = env
        .withheld()
        .iter()
        .map(|w| WithheldVar {
            name: w.name.clone(),
            reason: w.reason.to_string(),
        })
        .collect();
    EnvReport { vars, withheld }
}

impl CheckReport {
    /// Exit status for scripts: 0 allow, 3 ask, 4 deny (2 stays the error status).
    pub fn exit_code(&self) -> u8 {
        match self.decision {
            Decision::Allow => 0,
            Decision::Ask => 3,
            Decision::Deny => 4,
        }
    }

    /// The readable form: the decision, then one block per simple command.
    pub fn to_text(&self) -> String {
        let mut s = format!("decision: {}\n", decision_label(self.decision));
        for r in &self.reasons {
            s.push_str(&format!("  because {r}\n"));
        }
        if !self.rule_ids.is_empty() {
            s.push_str(&format!("  rules: {}\n", self.rule_ids.join(", ")));
        }
        if let Some(sb) = &self.sandbox {
            s.push_str(&format!("  sandbox: {}\n", sb.describe()));
        }
        if !self.network_allow.is_empty() {
            s.push_str(&format!(
                "  network: only {} (through pablo's proxy, [options.shell] network_allow)\n",
                self.network_allow.join(", ")
            ));
        }
        for (i, c) in self.commands.iter().enumerate() {
            let argv: Vec<String> = c
                .argv
                .iter()
                .map(|a| super::plain::quote_for_display(a))
                .collect();
            if argv.is_empty() {
                // `ls &> f` in sh: the second command is only `> f`; its reason says what it does.
                s.push_str(&format!(
                    "command {}: (no command word: only a redirection or a variable assignment)\n",
                    i + 1
                ));
            } else {
                s.push_str(&format!(
                    "command {}: {}\n  executable: {}\n",
                    i + 1,
                    argv.join(" "),
                    c.executable
                        .as_deref()
                        .unwrap_or("(not found on the command's PATH)"),
                ));
            }
            s.push_str(&format!(
                "  decision: {} (rule {})\n",
                decision_label(c.decision),
                c.rule_id.as_deref().unwrap_or("-"),
            ));
            if let Some(r) = &c.reason {
                s.push_str(&format!("  reason: {r}\n"));
            }
        }
        if let Some(a) = &self.always_rule {
            s.push_str(&format!("allow always would save: {a}\n"));
        }
        for w in &self.warnings {
            s.push_str(&format!("warning: {w}\n"));
        }
        if let Some(env) = &self.env {
            s.push_str("environment:\n");
            for v in &env.vars {
                s.push_str(&format!("  {}={}\n", v.name, v.value));
            }
            for w in &env.withheld {
                s.push_str(&format!("  ({} not passed: {})\n", w.name, w.reason));
            }
        }
        s
    }
}

/// The answer of `pablo policy rules`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RulesReport {
    /// The approvals file (outside the workspace), when approvals are saved at all.
    pub(crate) file: Option<String>,
    pub rules: Vec<SavedRule>,
}

pub fn rules(engine: &PolicyEngine) -> RulesReport {
    RulesReport {
        file: engine.rules_file().map(|p| p.display().to_string()),
        rules: engine.saved_rules(),
    }
}

/// `pablo policy rules --remove ID`.
pub fn remove_rule(engine: &PolicyEngine, id: &str) -> Result<SavedRule, PolicyError> {
    engine.forget(id)
}

impl RulesReport {
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        match &self.file {
            Some(f) => s.push_str(&format!("saved approvals: {f}\n")),
            None => s.push_str("saved approvals: kept in memory only\n"),
        }
        if self.rules.is_empty() {
            s.push_str("no saved rules\n");
        }
        for r in &self.rules {
            s.push_str(&format!(
                "{}  {}  (saved {})\n",
                r.id,
                r.kind.describe(),
                r.created
            ));
        }
        s
    }
}
