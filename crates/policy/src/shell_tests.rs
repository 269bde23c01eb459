//! The shell parser's tests: what each construct becomes, and the limits that keep it bounded.

use super::*;

fn one(text: &str) -> SimpleCommand {
    let mut v = parse(text).unwrap();
    assert_eq!(v.len(), 1, "{v:?}");
    v.remove(0)
}

#[test]
fn quoted_and_escaped_command_words_are_the_same_literal() {
    for t in [
        "git status",
        "'g'it status",
        "\\git status",
        "\"git\" 'status'",
    ] {
        let c = one(t);
        assert_eq!(c.argv(), vec!["git", "status"], "{t}");
        assert!(c.unprovable_reasons().is_empty(), "{t}");
    }
}

#[test]
fn expansions_are_unprovable_with_a_reason() {
    for (t, why) in [
        ("ls $HOME", "parameter"),
        ("ls \"$(pwd)\"", "command substitution"),
        ("ls `pwd`", "command substitution"),
        ("ls *.rs", "glob"),
        ("ls ~/x", "tilde"),
        ("PATH=/a:~/bin ls", "tilde"),
        ("ls $((1+2))", "arithmetic"),
        ("ls {a,b}", "brace"),
        ("ls $'\\x41'", "bash"),
        ("ls [ab]", "glob"),
    ] {
        let v = parse(t).unwrap();
        let outer = v.iter().find(|c| c.words[0].text == "ls").unwrap();
        let reasons = outer.unprovable_reasons().join(";");
        assert!(reasons.contains(why), "{t}: {reasons}");
    }
}

#[test]
fn a_tilde_inside_a_word_is_a_literal() {
    let c = one("git log HEAD~1 a~b");
    assert!(c.unprovable_reasons().is_empty(), "{c:?}");
    assert_eq!(c.argv(), vec!["git", "log", "HEAD~1", "a~b"]);
}

#[test]
fn bash_dollar_quotes_are_shown_as_written_and_named() {
    let c = one("ls $'a' $\"b\"");
    assert_eq!(c.argv(), vec!["ls", "$'a'", "$\"b\""]);
    let reasons = c.unprovable_reasons().join("; ");
    assert!(reasons.contains("`$'…'` quoting"), "{reasons}");
    assert!(!reasons.contains("would expand"), "{reasons}");
    assert_eq!(crate::plain::quote_for_display("$'a'"), "$'a'");
    // A plain `$` word is still a parameter, and an odd one is quoted for sh.
    assert_eq!(crate::plain::quote_for_display("a b"), "'a b'");
}

#[test]
fn lone_brackets_are_literal() {
    let c = one("[ -f x ]");
    assert!(c.unprovable_reasons().is_empty(), "{c:?}");
}

#[test]
fn command_substitutions_contribute_their_commands() {
    let v = parse("echo $(rm -rf /)").unwrap();
    let argvs: Vec<_> = v.iter().map(|c| c.argv()).collect();
    assert!(argvs.contains(&vec!["rm".into(), "-rf".into(), "/".into()]));
}

#[test]
fn ampersand_redirect_is_a_job_and_a_truncating_redirect() {
    let v = parse("ls &> f").unwrap();
    assert_eq!(v.len(), 2);
    assert!(v[1].words.is_empty());
    assert!(v[1].redirects[0].writes());
}

#[test]
fn line_continuations_join_words_like_sh() {
    let c = one("gi\\\nt status");
    assert_eq!(c.argv(), vec!["git", "status"]);
    let c = one("echo 'a\\\nb'");
    assert_eq!(c.argv()[1], "a\\\nb");
}

#[test]
fn expanding_heredoc_body_is_unprovable_and_quoted_one_is_not() {
    let c = one("cat <<EOF\n$x\nEOF\n");
    assert!(!c.unprovable_reasons().is_empty());
    let c = one("cat <<'EOF'\n$x\nEOF\n");
    assert!(c.unprovable_reasons().is_empty(), "{c:?}");
}

#[test]
fn deep_nesting_is_refused_without_crashing() {
    let deep = "$(".repeat(5000) + &")".repeat(5000);
    assert!(matches!(parse(&deep), Err(Refusal::TooNested { .. })));
    let medium = "echo ".to_string() + &"$(".repeat(200) + "x" + &")".repeat(200);
    assert!(parse(&medium).is_ok());
}

/// The helper's encoding leaves empty fields out: every text of the policy corpus, and texts with
/// each field filled, read back as the parse that was encoded.
#[test]
fn every_answer_the_helper_encodes_reads_back_as_the_same_parse() {
    const CORPUS: &[(&str, &str)] = include!("../../../tests/fixtures/policy_corpus.rs");
    let filled = [
        "A=1 B=$x cmd 2>/dev/null <in >>out",
        "for f in a b; do cat \"$f\"; done",
        "echo $(ls *.rs) `id`",
        "f() { rm -rf /; }; f",
        "cat <<EOF\nbody\nEOF",
    ];
    let texts = CORPUS.iter().map(|(text, _)| *text).chain(filled);
    for text in texts {
        let here = parse_in_process(text);
        assert_eq!(settle(Some(Ok(encoded_answer(text))), text), here, "{text}");
    }
}

#[test]
fn what_the_helper_said_becomes_the_answer_and_no_helper_means_parsing_here() {
    let text = "ls | wc -l";
    let here = parse_in_process(text);
    assert!(here.is_ok());
    assert_eq!(settle(None, text), here);
    let started = Failure::NotStarted("no /proc".into());
    assert_eq!(settle(Some(Err(started)), text), here);
    assert_eq!(settle(Some(Ok(encoded_answer(text))), text), here);
    let failed = Err(Refusal::Syntax(PARSER_FAILED.into()));
    assert_eq!(settle(Some(Err(Failure::Died)), text), failed);
    assert_eq!(settle(Some(Err(Failure::Garbled)), text), failed);
    assert_eq!(settle(Some(Ok(b"{]".to_vec())), text), failed);
    assert_eq!(
        settle(Some(Err(Failure::Late)), text),
        Err(Refusal::Timeout)
    );
}

#[test]
fn the_helper_answers_each_request_as_parsing_in_process_does() {
    use crate::shell_helper::{
        serve,
        tests::{frames, requests},
    };
    let texts = [
        "ls -la && rm -rf \"$HOME\"",
        "echo $(",
        "cat <<E\nx\\",
        "a 'b' >c",
    ];
    let mut answers = Vec::new();
    serve(&requests(&texts)[..], &mut answers, encoded_answer).unwrap();
    let answers = frames(&answers);
    assert_eq!(answers.len(), texts.len());
    for (t, a) in texts.iter().zip(answers) {
        let decoded: Result<Vec<SimpleCommand>, Refusal> = serde_json::from_slice(&a).unwrap();
        assert_eq!(decoded, parse_in_process(t), "{t}");
    }
}

#[test]
fn fuzz_finding_heredoc_ending_in_a_backslash_is_refused_not_a_panic() {
    // crash-71291ab0: conch-parser unwraps `None` here.
    let r = parse("egwc <<EOFc \n\n$ei\\");
    assert!(matches!(r, Err(Refusal::Syntax(_))), "{r:?}");
    let r = parse("cat <<E\nx\\");
    assert!(matches!(r, Err(Refusal::Syntax(_))), "{r:?}");
}

#[test]
fn redirect_writes_exclude_dev_null_and_fd_duplication() {
    let c = one("ls 2>/dev/null >&2 2>&1");
    assert!(c.redirects.iter().all(|r| !r.writes()), "{c:?}");
    let c = one("ls > out 2>> log");
    assert!(c.redirects.iter().all(Redirect::writes));
}
