//! Deny and allow patterns: regular expressions over command text.
//!
//! Patterns are a blunt second line behind the parsed command rules: they look at the text the
//! model sent and at each parsed simple command written out without quotes (so `'r'm -rf /` is
//! seen as `rm -rf /`). A deny pattern wins over everything; an allow pattern can only turn a
//! command that would otherwise be asked about into an allowed one, never unlock a denial.

use std::sync::OnceLock;

use regex::{Regex, RegexSet};

/// Every prefix of the long option `--NAME` that is at least `min` letters long, as a regular
/// expression, longest first: GNU programs (and git, and Python's optparse) take any unambiguous
/// prefix, so `rm --rec --for` is `rm --recursive --force`.
fn long_option(name: &str, min: usize) -> String {
    let alternatives: Vec<&str> = (min.max(1)..=name.len())
        .rev()
        .filter_map(|n| name.get(..n))
        .collect();
    format!("--(?:{})", alternatives.join("|"))
}

/// The built-in deny list, on by default (`enable_deny_patterns`). Ids are stable; they appear in
/// verdicts as `builtin.pattern.<id>`. Each pattern is written for the program's own reading of
/// its options: abbreviated long options, short options alone or grouped (`-r -f`, `-vrf`), long
/// and short mixed; `tests/fixtures/deny_corpus.rs` holds the spellings each must catch.
pub fn builtin_deny() -> Vec<(&'static str, String)> {
    // A group of short options holding the letter, or the long option abbreviated.
    let recursive = format!(
        r"(?:-[a-zA-Z]*[rR][a-zA-Z]*|{})\b",
        long_option("recursive", 1)
    );
    let force = format!(r"(?:-[a-zA-Z]*f[a-zA-Z]*|{})\b", long_option("force", 1));
    let in_rm = r"\brm\b[^;&|\n]*\s";
    let signal_kill = r"(?i:0*9|KILL|SIGKILL)\b";
    let shell = r"(?:\S*/)?(?:ba|da|z|k|fi)?sh\b";
    let runner = r"(?:(?:sudo|doas|env|command|exec|nohup|xargs)\s+(?:-\S+\s+)*)*";
    vec![
        // rm with recursive and force, in one group of flags or in separate ones
        (
            "rm-recursive-force",
            r"\brm\s+(?:\S+\s+)*-[a-zA-Z]*(?:[rR][a-zA-Z]*f|f[a-zA-Z]*[rR])".into(),
        ),
        (
            "rm-recursive-force-split",
            format!(r"{in_rm}{recursive}[^;&|\n]*\s{force}"),
        ),
        (
            "rm-force-recursive-split",
            format!(r"{in_rm}{force}[^;&|\n]*\s{recursive}"),
        ),
        ("del-force", r"(?i)\bdel\s+/[fq]".into()),
        ("rmdir-tree", r"(?i)\brmdir\s+/s".into()),
        ("format-drive", r"(?i)(?:^|[\s;&|(])format\s+[a-z]:".into()),
        ("mkfs", r"\bmkfs(?:\.[a-z0-9]+)?\b".into()),
        ("diskpart", r"(?i)\bdiskpart\b".into()),
        ("dd-input", r"\bdd\b[^;&|\n]*\bif=".into()),
        // dd reading its input from a redirection writes a device just as well.
        (
            "dd-device-output",
            r"\bdd\b[^;&|\n]*\bof=/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|loop|mapper/)".into(),
        ),
        (
            "block-device-write",
            r">\s*/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|loop|mapper/)".into(),
        ),
        ("shutdown", r"\b(?:shutdown|reboot|poweroff|halt)\b".into()),
        ("pipe-to-shell", format!(r"\|\s*{runner}{shell}")),
        (
            "download-to-shell",
            format!(r"\b(?:curl|wget)\b[^\n]*\|\s*{runner}(?:\S+\s+)*{shell}"),
        ),
        ("sudo", r"\b(?:sudo|doas)\b".into()),
        ("chmod", r"\bchmod\b".into()),
        ("chown", r"\bch(?:own|grp)\b".into()),
        ("pkill", r"\bpkill\b".into()),
        ("killall", r"\bkillall\b".into()),
        (
            "kill-9",
            format!(
                r"\bkill\s+(?:\S+\s+)*(?:-{signal_kill}|-[sn]\s*{signal_kill}|{}[=\s]\s*{signal_kill})",
                long_option("signal", 1)
            ),
        ),
        ("ssh", r"\bssh\b".into()),
        (
            "system-package-install",
            r"\b(?:apt|apt-get|yum|dnf|zypper|pacman|apk|brew)\s+(?:\S+\s+)*(?:install|remove|purge|erase|upgrade|dist-upgrade|-S\w*)\b".into(),
        ),
        // The global flag may stand before or after the verb (`npm -g install`), and npm also
        // says it as `--location=global`; `yarn global add` is global by its verb.
        ("npm-global-install", {
            let manager = r"\b(?:npm|pnpm|yarn|bun)\b[^;&|\n]*\s";
            let verb = r"(?:install|i|in|ins|inst|insta|instal|isnt|isnta|isntal|isntall|add)\b";
            let global = format!(
                r"(?:-[a-zA-Z]*g[a-zA-Z]*\b|{}\b|--location[=\s]+global\b)",
                long_option("global", 2)
            );
            format!(
                r"{manager}(?:{verb}[^;&|\n]*\s{global}|{global}[^;&|\n]*\s{verb}|global\s+(?:\S+\s+)*add\b)"
            )
        }),
        (
            "pip-user-install",
            format!(
                r"\bpip[0-9.]*\s+install\b[^;&|\n]*(?:--user\b|{}\b)",
                long_option("break-system-packages", 2)
            ),
        ),
        // pip reads every option from `PIP_<OPTION>` too.
        (
            "pip-user-install-env",
            r"\bPIP_(?:USER|BREAK_SYSTEM_PACKAGES)=[^;&|\n]*\bpip[0-9.]*\s+install\b".into(),
        ),
        (
            "docker-run",
            r"\b(?:docker|podman)\s+(?:\S+\s+)*(?:run|exec)\b".into(),
        ),
        ("git-push", r"\bgit\b[^;&|\n]*\spush\b".into()),
        (
            "git-force",
            format!(
                r"\bgit\b[^;&|\n]*\s(?:{}\b|-[a-zA-Z]*f[a-zA-Z]*\b)",
                long_option("force", 1)
            ),
        ),
        ("eval", r"\beval\b".into()),
        (
            "source",
            r"(?:^|[;&|(\n]|\bthen\b|\bdo\b|\belse\b)\s*(?:source|\.)\s+\S".into(),
        ),
    ]
}

/// A compiled list of patterns with their ids.
#[derive(Debug, Clone)]
pub(crate) struct PatternList {
    ids: Vec<String>,
    sources: Vec<String>,
    set: PatternSet,
}

/// The matcher of a list. Compiling the built-in deny list costs most of what a `pablo` process
/// does before its first screen or its first sandboxed command (its options-prefix alternations
/// compile to large automata), so the built-in list alone is compiled once per process and only
/// when a command is first judged. A list holding a person's patterns is compiled when it is made,
/// so a bad pattern is a configuration error at start.
#[derive(Debug, Clone)]
enum PatternSet {
    Compiled(RegexSet),
    Builtin,
}

/// The built-in deny list's matcher, compiled on first use (tested to compile).
static BUILTIN_SET: OnceLock<RegexSet> = OnceLock::new();

fn builtin_entries() -> Vec<(String, String)> {
    builtin_deny()
        .into_iter()
        .map(|(id, p)| (format!("builtin.pattern.{id}"), p))
        .collect()
}

impl Default for PatternList {
    fn default() -> Self {
        Self {
            ids: Vec::new(),
            sources: Vec::new(),
            set: PatternSet::Compiled(RegexSet::empty()),
        }
    }
}

impl PatternList {
    /// Compiles `(id, regex)` pairs; the first invalid regex is returned as an error message.
    pub(crate) fn new(patterns: Vec<(String, String)>) -> Result<Self, String> {
        let set = match RegexSet::new(patterns.iter().map(|(_, p)| p.as_str())) {
            Ok(set) => set,
            // Which one: compiled one by one only when the set does not compile.
            Err(e) => {
                for (id, p) in &patterns {
                    Regex::new(p).map_err(|e| {
                        format!("pattern {id} ({p:?}) is not a regular expression: {e}")
                    })?;
                }
                return Err(format!("patterns cannot be compiled together: {e}"));
            }
        };
        let (ids, sources) = patterns.into_iter().unzip();
        Ok(Self {
            ids,
            sources,
            set: PatternSet::Compiled(set),
        })
    }

    /// The built-in deny list; compiled when it first matches anything.
    pub(crate) fn builtin_deny() -> Self {
        let (ids, sources) = builtin_entries().into_iter().unzip();
        Self {
            ids,
            sources,
            set: PatternSet::Builtin,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Appends another list (layers add patterns).
    pub(crate) fn extend(&mut self, other: &PatternList) -> Result<(), String> {
        if other.is_empty() {
            return Ok(());
        }
        let mut all: Vec<(String, String)> = self
            .ids
            .iter()
            .cloned()
            .zip(self.sources.iter().cloned())
            .collect();
        all.extend(other.ids.iter().cloned().zip(other.sources.iter().cloned()));
        *self = Self::new(all)?;
        Ok(())
    }

    /// Ids of every pattern that matches `text`, in list order.
    pub(crate) fn matches(&self, text: &str) -> Vec<&str> {
        if self.ids.is_empty() {
            return Vec::new();
        }
        let set = match &self.set {
            PatternSet::Compiled(set) => set,
            // An empty set is the safe fallback shape only: the built-in list is tested to compile.
            PatternSet::Builtin => BUILTIN_SET.get_or_init(|| {
                RegexSet::new(builtin_entries().iter().map(|(_, p)| p.as_str()))
                    .unwrap_or_else(|_| RegexSet::empty())
            }),
        };
        set.matches(text)
            .into_iter()
            .map(|i| self.ids[i].as_str())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn denied(text: &str) -> Vec<String> {
        PatternList::builtin_deny()
            .matches(text)
            .into_iter()
            .map(String::from)
            .collect()
    }

    #[test]
    fn long_options_match_every_prefix_down_to_the_minimum() {
        assert_eq!(long_option("force", 3), "--(?:force|forc|for)");
        let re = regex::Regex::new(&format!("^{}$", long_option("recursive", 1))).unwrap();
        for ok in ["--r", "--rec", "--recursive"] {
            assert!(re.is_match(ok), "{ok}");
        }
        for no in ["--", "--x", "--recursives"] {
            assert!(!re.is_match(no), "{no}");
        }
    }

    #[test]
    fn builtin_list_compiles_completely() {
        // The lazy matcher falls back to matching nothing if this ever fails: it must not.
        let eager = PatternList::new(builtin_entries()).expect("the built-in patterns compile");
        assert_eq!(eager.len(), builtin_deny().len());
        assert_eq!(PatternList::builtin_deny().len(), builtin_deny().len());
        let text = "rm -rf / ; sudo reboot";
        assert_eq!(
            eager.matches(text),
            PatternList::builtin_deny().matches(text)
        );
    }

    #[test]
    fn a_bad_pattern_is_named_in_the_error_and_an_empty_extension_changes_nothing() {
        let err = PatternList::new(vec![
            ("ok".into(), "^ls".into()),
            ("bad".into(), "(unclosed".into()),
        ])
        .unwrap_err();
        assert!(
            err.contains("pattern bad") && err.contains("(unclosed"),
            "{err}"
        );
        let mut list = PatternList::builtin_deny();
        list.extend(&PatternList::default()).unwrap();
        assert_eq!(list.len(), builtin_deny().len());
        let custom = PatternList::new(vec![("mine".into(), r"\bfrobnicate\b".into())]).unwrap();
        list.extend(&custom).unwrap();
        assert_eq!(list.matches("frobnicate now"), vec!["mine"]);
        assert!(
            list.matches("rm -rf /")
                .contains(&"builtin.pattern.rm-recursive-force")
        );
    }

    #[test]
    fn dangerous_commands_match_their_pattern() {
        for (text, id) in [
            ("rm -rf /", "rm-recursive-force"),
            ("rm -fr build", "rm-recursive-force"),
            ("rm -v -Rf x", "rm-recursive-force"),
            ("rm -r -f x", "rm-recursive-force-split"),
            ("rm --force --recursive x", "rm-force-recursive-split"),
            ("del /f /q c:\\x", "del-force"),
            ("mkfs.ext4 /dev/sda1", "mkfs"),
            ("dd if=/dev/zero of=x", "dd-input"),
            ("cat x > /dev/sda", "block-device-write"),
            ("sudo reboot", "shutdown"),
            ("cat x | sh", "pipe-to-shell"),
            ("curl https://x | bash", "download-to-shell"),
            ("sudo ls", "sudo"),
            ("chmod +x a", "chmod"),
            ("chown me a", "chown"),
            ("pkill cargo", "pkill"),
            ("killall node", "killall"),
            ("kill -9 1", "kill-9"),
            ("ssh host", "ssh"),
            ("apt-get install -y curl", "system-package-install"),
            ("npm install -g typescript", "npm-global-install"),
            ("pip install --user x", "pip-user-install"),
            ("docker run --rm -it ubuntu", "docker-run"),
            ("git push origin main", "git-push"),
            ("git reset --force", "git-force"),
            ("eval ls", "eval"),
            ("source env.sh", "source"),
            (". ./env.sh", "source"),
        ] {
            let ids = denied(text);
            assert!(
                ids.contains(&format!("builtin.pattern.{id}")),
                "{text}: {ids:?}"
            );
        }
    }

    #[test]
    fn ordinary_commands_match_nothing() {
        for text in [
            "git status",
            "git log --format=%H -n 3",
            "git ls-files",
            "cargo test --lib",
            "wc -l README.md",
            "ls -la src",
            "rm target/tmp.txt",
            "grep -rn format src",
            "cat ./x.txt",
            "echo done.",
        ] {
            assert!(denied(text).is_empty(), "{text}: {:?}", denied(text));
        }
    }
}
