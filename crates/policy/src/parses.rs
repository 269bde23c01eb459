//! A command line's parses, made once per tool call.
//!
//! One tool call looks at its command several times: the hooks' `command_matcher` sees its
//! simple commands, policy judges it, "allow always" remembers it, and the final check judges
//! it again just before it runs. The parse is a pure function of the text, and when the binary
//! runs it is a round trip to the parser's helper process; the rules, the saved approvals and
//! the mode are not, and may change while a question waits. So the parses are kept (by text:
//! `sh -c 'literal'` adds the literal's) for the life of the call, and every look at the command
//! re-applies the rules to them.

use parking_lot::Mutex;

use super::shell::{self, Refusal, SimpleCommand};

/// One text's parse: its simple commands, or why it has none.
type Parsed = Result<Vec<SimpleCommand>, Refusal>;

/// The parses one tool call has made, by text.
#[derive(Default)]
pub struct LineParses {
    made: Mutex<Vec<(String, Parsed)>>,
}

impl LineParses {
    /// `text`'s simple commands (or why it cannot be parsed), parsed on the first ask only.
    pub fn parse(&self, text: &str) -> Parsed {
        if let Some((_, parsed)) = self.made.lock().iter().find(|(t, _)| t == text) {
            return parsed.clone();
        }
        // Parsed outside the lock: a parse may take up to its deadline.
        let parsed = shell::parse(text);
        self.made.lock().push((text.to_string(), parsed.clone()));
        parsed
    }

    /// How many texts were parsed (each once): what a trace and a test count.
    pub fn count(&self) -> usize {
        self.made.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CliFlags, PolicyEngine};
    use pablo_config::{Dirs, Layers};
    use pablo_core::ToolKind;
    use pablo_protocol::{CommandPreview, Decision, Preview};

    fn engine(root: &std::path::Path) -> PolicyEngine {
        let ws = root.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let dirs = Dirs {
            config: root.join("config"),
            data: root.join("data"),
            state: root.join("state"),
        };
        let trust = pablo_config::Trust::UNTRUSTED;
        PolicyEngine::build(
            &ws,
            &dirs,
            &Layers::default(),
            trust,
            None,
            CliFlags::default(),
        )
        .unwrap()
    }

    fn command(text: &str) -> Preview {
        Preview::Command(CommandPreview {
            command: text.into(),
            cwd: ".".into(),
            background: false,
            pty: false,
            commands: Vec::new(),
            sandbox: None,
        })
    }

    #[test]
    fn every_look_a_call_takes_at_its_command_shares_one_parse() {
        let tmp = tempfile::tempdir().unwrap();
        let policy = engine(tmp.path());
        // A text no other test parses, and one that asks (so "allow always" has a rule to save).
        let text = "make -C parses-once-dir all";
        let parses = LineParses::default();
        // What the hooks' command matcher sees, the judgement, the final check, "allow always".
        let seen = policy.effective_commands(text, ".", &parses);
        assert!(seen.iter().any(|words| words[0] == "make"), "{seen:?}");
        let mut preview = command(text);
        let judgement = policy.judge("shell.run", ToolKind::Execute, &mut preview, &parses);
        assert_eq!(judgement.verdict.decision, Decision::Ask);
        let again = policy.judge("shell.run", ToolKind::Execute, &mut command(text), &parses);
        assert_eq!(again.verdict.decision, Decision::Ask);
        let saved = policy.remember_judged(&judgement).unwrap();
        assert!(!saved.is_empty());
        assert_eq!(shell::counted::times(text), 1);
        assert_eq!(parses.count(), 1);
        // The rules are read each time: what was just saved allows the next look.
        let after = policy.judge("shell.run", ToolKind::Execute, &mut command(text), &parses);
        assert_eq!(
            after.verdict.decision,
            Decision::Allow,
            "{:?}",
            after.verdict
        );
        assert_eq!(shell::counted::times(text), 1);
    }

    #[test]
    fn a_text_asked_for_again_is_answered_from_its_first_parse() {
        let parses = LineParses::default();
        let first = parses.parse("ls -la src").unwrap();
        let again = parses.parse("ls -la src").unwrap();
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].argv(), again[0].argv());
        assert_eq!(parses.count(), 1);
        assert!(parses.parse("ls 'unterminated").is_err());
        assert!(parses.parse("ls 'unterminated").is_err());
        assert_eq!(parses.count(), 2);
    }
}
