//! Plain words: the words the shell reads exactly as written, and the commands made only of them.
//!
//! Most commands a model runs (`cargo test`, `git status -s`, `ls -la src`) are words of letters,
//! digits and a few punctuation marks that mean nothing to the shell, separated by blanks. For such
//! a text the shell's answer is not in doubt: one simple command whose words are the text split
//! on blanks, every word literal. So [`shell::parse`](super::shell::parse) splits it in pablo
//! ([`plain_words`]), which costs well under a microsecond, where the round trip to the parser's
//! helper process costs the parse plus about five microseconds of pipes and wake-ups (issue 46
//! item 3). conch-parser never sees such a text, so none of its panics can be met on one either.
//! The same class of words is what a word shown to a person needs no quotes for
//! ([`quote_for_display`]).
//!
//! The class is kept narrow on purpose, and anything outside it goes to the real parser:
//! - every character before a comment is an ASCII letter or digit, one of `_ . / : = @ % + , -`,
//!   a space or a tab (no quotes, escapes, expansions, globs, operators, braces, tildes, newlines);
//! - the first word holds no `=` (an assignment), and no word is a reserved word of sh or bash
//!   (`if`, `do`, `time` and the rest; the list below holds a few more than either needs);
//! - a word that starts with `#` starts a comment, which runs to the end of the text and holds
//!   plain words too; the text holds no newline or carriage return anywhere (the real parser joins
//!   continued lines, refuses carriage returns and a trailing backslash, and counts a comment's
//!   parentheses towards its nesting limit, so such a text must meet it);
//! - at least one word.
//!
//! A property test holds this module to the real parser on generated texts of the class and near
//! it: whatever it answers, conch-parser answers the same.

/// Reserved words of sh and bash, and a few words other shells reserve: any one of them anywhere
/// in the text sends it to the real parser.
const RESERVED: &[&str] = &[
    "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for", "function", "if", "in",
    "select", "then", "time", "until", "while",
];

/// The words of the one simple command `text` is, each literal, or `None` when the text needs the
/// real parser.
pub(crate) fn plain_words(text: &str) -> Option<Vec<&str>> {
    if text.contains(['\n', '\r']) {
        return None;
    }
    let mut words = Vec::new();
    for word in text.split([' ', '\t']).filter(|w| !w.is_empty()) {
        if word.starts_with('#') {
            // The real parser's checks read the whole text, the comment too (a text ending in a
            // backslash is refused; every `(` counts towards the nesting limit): a comment of
            // anything but plain words sends the text there, so both paths answer alike.
            let rest = &text[text.find('#').unwrap_or(0)..];
            if !rest
                .bytes()
                .all(|b| is_plain_byte(b) || b" \t#".contains(&b))
            {
                return None;
            }
            break;
        }
        if !word.bytes().all(is_plain_byte) || RESERVED.contains(&word) {
            return None;
        }
        if words.is_empty() && word.contains('=') {
            return None;
        }
        words.push(word);
    }
    (!words.is_empty()).then_some(words)
}

/// Whether [`shell::parse`](super::shell::parse) splits `text` itself as plain words, with neither
/// the helper nor conch-parser (for the benches that measure both paths apart).
pub fn is_plain(text: &str) -> bool {
    plain_words(text).is_some()
}

/// Quotes a word for display so that what a person reads can be pasted back into a shell.
pub(crate) fn quote_for_display(word: &str) -> String {
    // A bash `$'…'` word is shown as it was written, not re-quoted into something else.
    let bash_quoted = word.len() > 2
        && (word.starts_with("$'") && word.ends_with('\'')
            || word.starts_with("$\"") && word.ends_with('"'));
    if bash_quoted || !word.is_empty() && word.bytes().all(is_plain_byte) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

fn is_plain_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"_./:=@%+,-".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::{parse, parse_in_process};
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
            ("ls # a comment # 12", &["ls"]),
            (
                "npx @scope/pkg@1.2 a:b c,d 50%",
                &["npx", "@scope/pkg@1.2", "a:b", "c,d", "50%"],
            ),
        ] {
            assert_eq!(plain_words(text).as_deref(), Some(argv), "{text}");
            // What `parse` makes of the words here is what conch-parser makes of the text.
            assert_eq!(parse(text), parse_in_process(text), "{text}");
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
            "A #\\",
            "ls\u{a0}-la",
            "ls\u{3000}src",
            "ls # a comment; rm x",
            "ls # ((((",
            "(ls)",
            "! ls",
        ] {
            assert_eq!(plain_words(text), None, "{text:?}");
        }
    }

    #[test]
    fn plain_words_over_the_length_limit_are_refused_as_any_text_is() {
        let long = format!("ls {}", "a ".repeat(40_000));
        assert!(is_plain(&long));
        assert!(matches!(
            parse(&long),
            Err(crate::shell::Refusal::TooLong { .. })
        ));
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
            if is_plain(&text) {
                prop_assert_eq!(parse(&text), parse_in_process(&text), "{:?}", text);
            }
        }
    }
}
