//! Commands made of plain words, split here rather than sent to the parser's helper.
//!
//! Most commands a model runs (`cargo test`, `git status -s`, `ls -la src`) are words of letters,
//! digits and a few punctuation marks that mean nothing to the shell, separated by blanks. For such
//! a text the shell's answer is not in doubt: one simple command whose words are the text split
//! on blanks, every word literal. Splitting it here costs well under a microsecond, where the
//! round trip to the helper process ([`super::shell_helper`]) costs the parse plus about five
//! microseconds of pipes and wake-ups (issue 46 item 3). conch-parser is never run on such a text,
//! so nothing here can hit one of its panics either.
//!
//! The class is kept narrow on purpose, and anything outside it goes to the real parser:
//! - every character before a comment is an ASCII letter or digit, one of `_ . / : = @ % + , -`,
//!   a space or a tab (no quotes, escapes, expansions, globs, operators, braces, tildes, newlines);
//! - the first word holds no `=` (an assignment), and no word is a reserved word of sh or bash
//!   (`if`, `do`, `time` and the rest; the list below holds a few more than either needs);
//! - a word that starts with `#` starts a comment, which runs to the end of the text, and the text
//!   holds no newline or carriage return anywhere (the real parser joins continued lines and
//!   refuses carriage returns, so such a text must meet it);
//! - at least one word.
//!
//! A property test holds this module to the real parser on generated texts of the class and near
//! it: whatever it answers, conch-parser answers the same.

use super::shell::{SimpleCommand, Word};

/// Reserved words of sh and bash, and a few words other shells reserve: any one of them anywhere
/// in the text sends it to the real parser.
const RESERVED: &[&str] = &[
    "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for", "function", "if", "in",
    "select", "then", "time", "until", "while",
];

/// The simple command a text of plain words is, or `None` when the text needs the real parser.
pub(crate) fn plain_command(text: &str) -> Option<SimpleCommand> {
    if text.contains(['\n', '\r']) {
        return None;
    }
    let mut words = Vec::new();
    for word in text.split([' ', '\t']).filter(|w| !w.is_empty()) {
        if word.starts_with('#') {
            break;
        }
        if !word.bytes().all(is_plain) || RESERVED.contains(&word) {
            return None;
        }
        if words.is_empty() && word.contains('=') {
            return None;
        }
        words.push(Word::literal(word));
    }
    if words.is_empty() {
        return None;
    }
    Some(SimpleCommand {
        words,
        ..SimpleCommand::default()
    })
}

fn is_plain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"_./:=@%+,-".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::parse_in_process;
    use proptest::prelude::*;

    #[test]
    fn everyday_commands_are_split_here() {
        for (text, argv) in [
            ("git status", &["git", "status"][..]),
            (
                "cargo test --features=otel -p pablo-core",
                &["cargo", "test", "--features=otel", "-p", "pablo-core"],
            ),
            ("  ls\t-la   src/  ", &["ls", "-la", "src/"]),
            ("ls # a comment; rm -rf / $(x)", &["ls"]),
            (
                "npx @scope/pkg@1.2 a:b c,d 50%",
                &["npx", "@scope/pkg@1.2", "a:b", "c,d", "50%"],
            ),
        ] {
            let command = plain_command(text).unwrap_or_else(|| panic!("{text} is plain"));
            assert_eq!(command.argv(), argv, "{text}");
            assert_eq!(Ok(vec![command]), parse_in_process(text), "{text}");
        }
    }

    #[test]
    fn anything_the_shell_could_read_otherwise_goes_to_the_parser() {
        for text in [
            "",
            "   ",
            "# only a comment",
            "FOO=1 ls",
            "ls *.rs",
            "ls ~/x",
            "ls $HOME",
            "echo 'a b'",
            "ls; rm x",
            "ls | wc",
            "ls > out",
            "ls && wc",
            "ls {a,b}",
            "if ls",
            "time ls",
            "ls do",
            "ls\nwc",
            "ls\r",
            "ls a#b\\",
            "ls\\ x",
            "(ls)",
            "! ls",
        ] {
            assert_eq!(plain_command(text), None, "{text:?}");
        }
    }

    /// Words that change a parse in command position, listed apart from [`RESERVED`] so that a word
    /// missing there is found.
    const KEYWORDS: &[&str] = &[
        "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for",
        "in", "function", "select", "time", "{", "}", "!", "[[", "]]",
    ];

    /// Characters of the class, characters just outside it, and the words that change a parse.
    fn near_plain() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            8 => "[a-zA-Z0-9_./:=@%+,-]{1,6}",
            3 => Just(" ".to_string()),
            1 => Just("\t".to_string()),
            1 => prop::sample::select(KEYWORDS).prop_map(str::to_string),
            1 => Just("#".to_string()),
            1 => "[#;|&<>()$`'\"\\\\*?~{}!\\[\\]\n\r ]",
        ];
        prop::collection::vec(piece, 0..12).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn what_is_split_here_is_what_the_parser_answers(text in near_plain()) {
            if let Some(command) = plain_command(&text) {
                prop_assert_eq!(Ok(vec![command]), parse_in_process(&text), "{:?}", text);
            }
        }
    }
}
