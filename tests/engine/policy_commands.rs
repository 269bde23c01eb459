//! The policy on shell command text: the command corpus, chains, the deny patterns, arbitrary
//! text, deep nesting, and the known-safe reads (what `policy check` decides and why).

use std::path::{Path, PathBuf};

use pablo::config::{ConfigFile, Dirs, Layers};
use pablo::policy::{CliFlags, PolicyEngine, cli};
use pablo::protocol::Decision;

/// A workspace and XDG directories in one temporary folder, side by side.
pub(super) struct Env {
    _tmp: tempfile::TempDir,
    pub(super) ws: PathBuf,
    pub(super) dirs: Dirs,
}

pub(super) fn env() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let ws = root.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let dirs = Dirs {
        config: root.join("xdg-config").join("pablo"),
        data: root.join("xdg-data").join("pablo"),
        state: root.join("xdg-state").join("pablo"),
    };
    Env {
        _tmp: tmp,
        ws,
        dirs,
    }
}

pub(super) fn explicit(text: &str) -> Layers {
    Layers {
        explicit: Some((
            PathBuf::from("test.toml"),
            ConfigFile::parse(text, Path::new("test.toml")).unwrap(),
        )),
        ..Default::default()
    }
}

pub(super) const ALLOW_LIST: &str = include_str!("../../tests/fixtures/policy_allow_list.toml");

pub(super) fn strict(e: &Env) -> PolicyEngine {
    PolicyEngine::build(
        &e.ws,
        &e.dirs,
        &explicit(ALLOW_LIST),
        pablo::config::Trust::UNTRUSTED,
        None,
        CliFlags::default(),
    )
    .unwrap()
}

pub(super) fn interactive(e: &Env) -> PolicyEngine {
    PolicyEngine::build(
        &e.ws,
        &e.dirs,
        &Layers::default(),
        pablo::config::Trust::UNTRUSTED,
        None,
        CliFlags::default(),
    )
    .unwrap()
}

fn label(d: Decision) -> &'static str {
    pablo::policy::decision_label(d)
}

/// The corpus: command text and the decision under the deny-by-default allow list
/// (`git status` prefix, `wc`, `ls`), deny patterns on.
fn corpus() -> Vec<(String, &'static str)> {
    let fixed: &[(&str, &str)] = include!("../../tests/fixtures/policy_corpus.rs");
    let mut out: Vec<(String, &'static str)> =
        fixed.iter().map(|(c, d)| (c.to_string(), *d)).collect();
    // long and deeply nested inputs
    out.push((format!("ls {}", "a ".repeat(20_000)), "allow"));
    out.push(("ls; ".repeat(5000), "allow"));
    out.push((format!("{}wc", "ls | ".repeat(1000)), "allow"));
    out.push((format!("{}rm x", "ls && ".repeat(2000)), "deny"));
    out.push((format!("ls {}", "a".repeat(70_000)), "deny"));
    out.push((format!("{}ls{}", "(".repeat(100), ")".repeat(100)), "allow"));
    out.push((format!("{}ls{}", "(".repeat(400), ")".repeat(400)), "deny"));
    out.push((
        format!("{}ls{}", "{ ".repeat(60), "; }".repeat(60)),
        "allow",
    ));
    out.push((
        format!("ls {}x{}", "$(".repeat(1000), ")".repeat(1000)),
        "deny",
    ));
    out.push((format!("{}x{}", "$(".repeat(200), ")".repeat(200)), "deny"));
    out.push((format!("ls \"{}\"", "`".repeat(3000)), "deny"));
    out.push((
        format!("{}ls; {}", "if ls; then ".repeat(40), "fi; ".repeat(40)),
        "allow",
    ));
    out.push((
        format!("{}ls; {}", "if ls; then ".repeat(300), "fi; ".repeat(300)),
        "deny",
    ));
    out.push((format!("echo $(({}1))", "-".repeat(5000)), "deny"));
    out.push((format!("ls {}", "${a:-".repeat(300)), "deny"));
    out
}

#[test]
fn corpus_decisions_under_a_deny_by_default_allow_list() {
    let e = env();
    let engine = strict(&e);
    let corpus = corpus();
    assert!(corpus.len() >= 150, "corpus has {} commands", corpus.len());
    let mut wrong = Vec::new();
    for (cmd, want) in &corpus {
        let r = cli::check(&engine, cmd);
        if label(r.decision) != *want {
            let shown: String = cmd.chars().take(80).collect();
            wrong.push(format!(
                "{shown:?}: want {want}, got {} ({:?})",
                label(r.decision),
                r.reasons
            ));
        }
        if *want == "deny" {
            assert_ne!(
                r.decision,
                Decision::Allow,
                "a denied command was allowed: {cmd:?}"
            );
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn check_report_lists_each_simple_command_with_its_rule() {
    let e = env();
    let engine = strict(&e);
    let r = cli::check(&engine, "'g'it status -s && cat x");
    assert_eq!(r.decision, Decision::Deny);
    assert_eq!(r.commands.len(), 2);
    assert_eq!(r.commands[0].argv, vec!["git", "status", "-s"]);
    // Resolved through the clean PATH (this machine may have /usr/local/bin/git first).
    let exe = r.commands[0].executable.clone().unwrap();
    assert!(exe.starts_with('/') && exe.ends_with("/git"), "{exe}");
    assert_eq!(r.commands[0].decision, Decision::Allow);
    assert_eq!(r.commands[0].rule_id.as_deref(), Some("t.git-status"));
    assert_eq!(r.commands[1].decision, Decision::Deny);
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["decision"], "deny");
    assert_eq!(json["commands"][0]["argv"][1], "status");
    assert!(json["reasons"].as_array().is_some_and(|a| !a.is_empty()));
    assert!(r.to_text().contains("decision: deny"));
}

/// Every spelling of tests/fixtures/deny_corpus.rs is denied by its rule under the built-in
/// defaults (where anything else only asks), and every built-in pattern has spellings there.
#[test]
fn each_deny_pattern_catches_every_spelling_of_its_corpus() {
    let e = env();
    let engine = interactive(&e);
    let corpus: &[(&str, &str)] = include!("../../tests/fixtures/deny_corpus.rs");
    let mut wrong = Vec::new();
    for (cmd, id) in corpus {
        let r = cli::check(&engine, cmd);
        if r.decision != Decision::Deny || !r.rule_ids.iter().any(|x| x == id) {
            wrong.push(format!(
                "{cmd:?}: want deny by {id}, got {} by {:?}",
                label(r.decision),
                r.rule_ids
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    for (id, _) in pablo::policy::patterns::builtin_deny() {
        let full = format!("builtin.pattern.{id}");
        assert!(
            corpus.iter().filter(|(_, i)| *i == full).count() >= 1,
            "no spelling of {full} in the corpus"
        );
    }
}

#[test]
fn interactive_default_asks_and_says_why_a_command_is_unprovable() {
    let e = env();
    let engine = interactive(&e);
    let r = cli::check(&engine, "ls ${X:-*.rs}");
    assert_eq!(r.decision, Decision::Ask);
    assert!(
        r.reasons.iter().any(|x| x.contains("parameter expansion")),
        "{:?}",
        r.reasons
    );
    assert!(
        r.always_rule.is_none(),
        "an unprovable command cannot be remembered"
    );
    let r = cli::check(&engine, "GIT_PAGER=cat git status");
    assert_eq!(r.decision, Decision::Ask);
    assert!(
        r.reasons.iter().any(|x| x.contains("GIT_PAGER=cat")),
        "{:?}",
        r.reasons
    );
    // Deny patterns still deny in the interactive default.
    assert_eq!(cli::check(&engine, "rm -rf /").decision, Decision::Deny);
}

#[test]
fn a_rule_naming_a_bare_program_matches_whatever_the_command_path_resolves_it_to() {
    let e = env();
    // A git that is not /usr/bin/git, first on the PATH commands get.
    let bin = e.ws.parent().unwrap().join("tools-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let git = bin.join("git");
    std::fs::write(&git, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&git, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let config = |executable: &str| {
        format!(
            "[options.shell.env]\nset = {{ PATH = \"{}:/usr/bin:/bin\" }}\n\n\
             [options.shell.commands]\ndefault = \"deny\"\n\
             allow = [ {{ id = \"t.git-status\", executable = \"{executable}\", args = [\"status\"] }} ]\n",
            bin.display()
        )
    };
    let build = |text: &str| {
        PolicyEngine::build(
            &e.ws,
            &e.dirs,
            &explicit(text),
            pablo::config::Trust::UNTRUSTED,
            None,
            CliFlags::default(),
        )
        .unwrap()
    };
    let bare = build(&config("git"));
    let r = cli::check(&bare, "git status");
    assert_eq!(r.decision, Decision::Allow, "{}", r.to_text());
    assert_eq!(r.commands[0].executable.as_deref(), git.to_str());
    assert_eq!(r.commands[0].rule_id.as_deref(), Some("t.git-status"));
    // A rule naming another file is another program: `git` here is not /usr/bin/git.
    let absolute = build(&config("/usr/bin/git"));
    assert_eq!(cli::check(&absolute, "git status").decision, Decision::Deny);
    // And the full path of the program the PATH finds is the same program as the bare word.
    let full = build(&config(git.to_str().unwrap()));
    assert_eq!(cli::check(&full, "git status").decision, Decision::Allow);
}

#[test]
fn explanations_say_what_a_for_loop_a_bash_quote_and_a_bare_redirection_are() {
    let e = env();
    let engine = interactive(&e);
    // A loop over an upper-case name changes the environment of the loop's commands.
    let r = cli::check(&engine, "for I in a b; do echo x; done");
    let text = r.to_text();
    assert!(
        text.contains("`for I in a b` sets the variable I for the commands of the loop"),
        "{text}"
    );
    assert!(!text.contains("`I=a b`"), "{text}");
    // Over a lower-case one, its values are known and the loop is a read.
    let r = cli::check(&engine, "for i in a b; do echo \"$i\"; done");
    assert_eq!(r.decision, Decision::Allow, "{}", r.to_text());

    let r = cli::check(&engine, "ls $'a'");
    let text = r.to_text();
    assert!(text.contains("command 1: ls $'a'"), "{text}");
    assert!(text.contains("`$'…'` quoting"), "{text}");
    assert!(!text.contains("$a"), "{text}");

    // dash reads `ls &> f` as `ls &` and then `> f`, a redirection without a command.
    let r = cli::check(&engine, "ls &> f");
    let text = r.to_text();
    assert!(!text.contains("command 2: \n"), "{text}");
    assert!(
        text.contains("command 2: (no command word: only a redirection or a variable assignment)"),
        "{text}"
    );
    assert!(
        text.contains("a redirection without a command writes f"),
        "{text}"
    );
}

mod chains {
    use super::*;
    use proptest::prelude::*;

    const ALLOWED: &[&str] = &[
        "git status",
        "git status -s",
        "wc -l a",
        "ls",
        "ls -la src",
        "'g'it status",
        "wc",
        "nice ls",
        "timeout 5 wc",
        "env git status",
    ];
    const BAD: &[&str] = &[
        // (`ls $X` and `ls *.rs` are `ls` once expanded: X is unset, no file matches)
        "ls \"$(pwd)\"",
        "ls $OPENAI_API_KEY",
        "wc ~/x",
        "cat x",
        "rm y",
        "./wc",
        "GIT_PAGER=x git status",
        "git diff",
        "eval ls",
        "xargs wc",
        "f() { ls; }",
        "env -i ls",
        "sh -c \"$Y\"",
    ];
    const SEPS: &[&str] = &[" && ", "; ", " | ", "\n", " || "];

    fn join(parts: &[&str], seps: &[usize]) -> String {
        let mut s = String::new();
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                s.push_str(SEPS[seps[i - 1] % SEPS.len()]);
            }
            s.push_str(p);
        }
        s
    }

    fn engine() -> (Env, PolicyEngine) {
        let e = env();
        let p = strict(&e);
        (e, p)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn any_chain_of_allowed_commands_is_allowed(
            picks in prop::collection::vec(0..ALLOWED.len(), 1..8),
            seps in prop::collection::vec(0..SEPS.len(), 8),
        ) {
            let (_e, p) = engine();
            let parts: Vec<&str> = picks.iter().map(|i| ALLOWED[*i]).collect();
            let line = join(&parts, &seps);
            let r = cli::check(&p, &line);
            prop_assert_eq!(r.decision, Decision::Allow, "{:?}: {:?}", line, r.reasons);
        }

        #[test]
        fn inserting_a_bad_command_anywhere_spoils_the_chain(
            picks in prop::collection::vec(0..ALLOWED.len(), 0..7),
            bad in 0..BAD.len(),
            at in 0usize..8,
            seps in prop::collection::vec(0..SEPS.len(), 8),
        ) {
            let (_e, p) = engine();
            let mut parts: Vec<&str> = picks.iter().map(|i| ALLOWED[*i]).collect();
            let at = at.min(parts.len());
            parts.insert(at, BAD[bad]);
            let line = join(&parts, &seps);
            let r = cli::check(&p, &line);
            prop_assert_ne!(r.decision, Decision::Allow, "{:?}", line);
        }
    }
}

#[test]
fn deep_nesting_does_not_crash_on_a_small_stack() {
    // Tokio workers and test threads have 2 MiB stacks; the parser must not overflow there.
    let handle = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(|| {
            let e = env();
            let engine = strict(&e);
            let mut worst = Decision::Allow;
            for text in [
                "$(".repeat(5000),
                format!("{}x{}", "$(".repeat(250), ")".repeat(250)),
                format!("{}x{}", "\"$(".repeat(250), ")\"".repeat(250)),
                format!("{}x{}", "${a:-".repeat(250), "}".repeat(250)),
                "(".repeat(250) + "ls" + &")".repeat(250),
                "{ ".repeat(250) + "ls" + &"; }".repeat(250),
                "if a; then ".repeat(250) + "ls" + &"; fi".repeat(250),
                format!("echo $(({}1))", "- ".repeat(250)),
                "`\\`".repeat(250),
                "! ".repeat(10_000) + "ls",
                "ls | ".repeat(10_000) + "ls",
                "a=b ".repeat(10_000) + "ls",
                "ls ".to_string() + &"<<E ".repeat(5000),
            ] {
                let r = cli::check(&engine, &text);
                if r.decision == Decision::Deny {
                    worst = Decision::Deny;
                }
            }
            worst
        })
        .unwrap();
    assert_eq!(handle.join().unwrap(), Decision::Deny);
}

mod arbitrary_text {
    use super::*;
    use proptest::prelude::*;

    fn engines() -> (Env, PolicyEngine, PolicyEngine) {
        let e = env();
        let s = strict(&e);
        let i = interactive(&e);
        (e, s, i)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Shell-flavoured noise: no panic, and an allowed line has only allowed commands.
        #[test]
        fn shell_like_text_never_panics_and_allow_means_every_command_allowed(
            text in "[a-z $(){}`'\"\\\\;&|<>!*?~#=\\n\t-]{0,120}"
        ) {
            let (_e, s, i) = engines();
            let r = cli::check(&s, &text);
            if r.decision == Decision::Allow {
                prop_assert!(r.commands.iter().all(|c| c.decision == Decision::Allow), "{:?}", text);
            }
            let _ = cli::check(&i, &text);
        }

        #[test]
        fn arbitrary_unicode_never_panics(text in any::<String>()) {
            let (_e, s, _i) = engines();
            let _ = cli::check(&s, &text);
        }
    }
}

// ---------------------------------------------------------------- known-safe reads

/// The workspace the known-safe corpus expects (see tests/fixtures/known_safe_corpus.rs).
pub(super) fn safe_workspace(e: &Env) {
    let ws = &e.ws;
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("README.md"), "readme\n").unwrap();
    std::fs::write(ws.join("data.csv"), "a,b\n").unwrap();
    std::fs::write(ws.join("src/main.rs"), "fn main() {}\n").unwrap();
    for secret in [".env", "key.pem", "id_rsa"] {
        std::fs::write(ws.join(secret), "secret\n").unwrap();
    }
    std::os::unix::fs::symlink("/etc/passwd", ws.join("link")).unwrap();
    std::os::unix::fs::symlink("src", ws.join("inner")).unwrap();
    // Two directories to compare, one holding a link that leads out (`diff docs/a docs/b`).
    std::fs::create_dir_all(ws.join("docs/a")).unwrap();
    std::fs::create_dir_all(ws.join("docs/b")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", ws.join("docs/a/ref")).unwrap();
    std::fs::write(ws.join("docs/b/ref"), "ref\n").unwrap();
    std::fs::write(ws.join("cat"), "#!/bin/sh\necho planted\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(ws.join("cat"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(ws)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q"]);
}

#[test]
fn known_safe_corpus_under_the_built_in_defaults() {
    assert!(
        pablo::process::support().landlock(),
        "known-safe reads are allowed only where they can be sandboxed; this machine can"
    );
    let e = env();
    safe_workspace(&e);
    let engine = interactive(&e);
    let corpus: &[(&str, &str)] = include!("../../tests/fixtures/known_safe_corpus.rs");
    assert!(corpus.len() >= 150, "corpus has {} commands", corpus.len());
    let mut wrong = Vec::new();
    for (cmd, want) in corpus {
        let r = cli::check(&engine, cmd);
        let sandbox = r.sandbox.clone().unwrap();
        if label(r.decision) != *want {
            wrong.push(format!(
                "{cmd:?}: want {want}, got {} ({:?})",
                label(r.decision),
                r.reasons
            ));
        } else if *want == "allow"
            && (sandbox.profile != pablo::protocol::SandboxProfile::ReadOnly || !sandbox.known_safe)
        {
            wrong.push(format!(
                "{cmd:?}: allowed but not in read-only: {sandbox:?}"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn a_known_safe_read_says_so_and_an_approved_command_gets_workspace_write() {
    let e = env();
    safe_workspace(&e);
    let engine = interactive(&e);
    let r = cli::check(&engine, "ls -la");
    assert_eq!(r.decision, Decision::Allow);
    assert_eq!(r.rule_ids, vec!["builtin.safe.ls"]);
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["sandbox"]["profile"], "read-only", "{json}");
    assert_eq!(json["sandbox"]["known_safe"], true);
    let r = cli::check(&engine, "cargo test");
    assert_eq!(r.decision, Decision::Ask);
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["sandbox"]["profile"], "workspace-write", "{json}");
    assert_eq!(json["sandbox"]["network"], false);
    assert!(
        r.to_text().contains("sandbox: workspace-write, no network"),
        "{}",
        r.to_text()
    );
}

#[test]
fn allow_lists_and_deny_rules_still_win_over_known_safe_reads() {
    let e = env();
    safe_workspace(&e);
    let engine = strict(&e);
    // Not in the allow list: denied, known safe or not.
    assert_eq!(
        cli::check(&engine, "cat README.md").decision,
        Decision::Deny
    );
    let deny = explicit(
        r#"
[options.shell.commands]
deny = [ { id = "t.no-cat", executable = "cat", args = [], match = "prefix" } ]
"#,
    );
    let engine = PolicyEngine::build(
        &e.ws,
        &e.dirs,
        &deny,
        pablo::config::Trust::UNTRUSTED,
        None,
        CliFlags::default(),
    )
    .unwrap();
    assert_eq!(
        cli::check(&engine, "cat README.md").decision,
        Decision::Deny
    );
    assert_eq!(cli::check(&engine, "ls").decision, Decision::Allow);
    let off = explicit("[options.shell]\nknown_safe_reads = false\n");
    let engine = PolicyEngine::build(
        &e.ws,
        &e.dirs,
        &off,
        pablo::config::Trust::UNTRUSTED,
        None,
        CliFlags::default(),
    )
    .unwrap();
    assert_eq!(cli::check(&engine, "ls").decision, Decision::Ask);
}

mod known_safe_property {
    use super::*;
    use proptest::prelude::*;

    /// Safe parts, and whether their operands are paths (so an outside path spoils them; the
    /// operands of `echo` are text, and a word after find's expression is no starting point).
    const SAFE: &[(&str, bool)] = &[
        ("ls -la", true),
        ("cat README.md", true),
        ("head -n 3 README.md", true),
        ("wc -l src/main.rs", true),
        ("grep -n main src", true),
        ("rg main src", true),
        ("sort README.md", true),
        ("git status", true),
        ("git log --oneline -3", true),
        ("git diff", true),
        ("sed -n 1p README.md", true),
        ("echo hi", false),
        ("find . -name x", false),
        ("du -s src", true),
    ];
    const JOIN: &[&str] = &[" | ", " && ", "; ", " || "];
    /// Each turns a safe part into one that must ask: a write redirection, an option that writes
    /// or runs something, a path outside the workspace, a credential.
    const REDIRECTS: &[&str] = &[" > out.txt", " >> log", " 2> err", " >| out"];
    const PATHS: &[&str] = &[" /etc/passwd", " ../x", " .env", " link", " key.pem"];
    const BAD_COMMANDS: &[&str] = &[
        "sort -o out README.md",
        "find . -delete",
        "rg --pre cat x",
        "sed -i s/a/b/ README.md",
        "git branch newname",
        "git diff --output=x",
        "./cat README.md",
        "tee out",
    ];

    fn line(parts: &[usize], joins: &[usize]) -> String {
        let mut s = String::new();
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                s.push_str(JOIN[joins[i - 1] % JOIN.len()]);
            }
            s.push_str(SAFE[*p % SAFE.len()].0);
        }
        s
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[test]
        fn a_safe_line_stays_safe_only_while_every_part_is(
            parts in prop::collection::vec(0usize..100, 1..5),
            joins in prop::collection::vec(0usize..100, 4),
            at in 0usize..100,
            spoil in 0usize..100,
            bad in 0usize..100,
            spoil_kind in 0usize..3,
        ) {
            let e = env();
            safe_workspace(&e);
            let engine = interactive(&e);
            let clean = line(&parts, &joins);
            let r = cli::check(&engine, &clean);
            prop_assert_eq!(r.decision, Decision::Allow, "{}: {:?}", clean, r.reasons);
            prop_assert_eq!(r.sandbox.unwrap().profile, pablo::protocol::SandboxProfile::ReadOnly);
            // Spoil exactly one part.
            let k = at % parts.len();
            let mut pieces: Vec<String> =
                parts.iter().map(|p| SAFE[*p % SAFE.len()].0.to_string()).collect();
            let takes_paths = SAFE[parts[k] % SAFE.len()].1;
            match spoil_kind {
                0 => pieces[k].push_str(REDIRECTS[spoil % REDIRECTS.len()]),
                1 if takes_paths => pieces[k].push_str(PATHS[spoil % PATHS.len()]),
                _ => pieces[k] = BAD_COMMANDS[bad % BAD_COMMANDS.len()].to_string(),
            }
            let mut spoiled = String::new();
            for (i, p) in pieces.iter().enumerate() {
                if i > 0 {
                    spoiled.push_str(JOIN[joins[i - 1] % JOIN.len()]);
                }
                spoiled.push_str(p);
            }
            let r = cli::check(&engine, &spoiled);
            prop_assert_ne!(r.decision, Decision::Allow, "{} was allowed", spoiled);
            prop_assert!(!r.sandbox.unwrap().known_safe, "{} is still known safe", spoiled);
        }
    }
}

/// The shortcut that follows an operand's links from the canonical workspace (`policy::links`)
/// decides as the full walk did at its worst: a link hidden beneath real directories, a
/// directory link a `cd` enters, a link to a credential inside, a name that does not exist.
#[test]
fn links_beneath_real_directories_are_followed_as_the_full_walk_follows_them() {
    let e = env();
    safe_workspace(&e);
    let ws = &e.ws;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("notes"), "private\n").unwrap();
    std::fs::create_dir_all(ws.join("src/deep/er")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("notes"), ws.join("src/deep/er/notes")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.join("src/deep/away")).unwrap();
    std::os::unix::fs::symlink("../../.env", ws.join("src/deep/dotenv")).unwrap();
    let engine = interactive(&e);
    let decide = |cmd: &str| cli::check(&engine, cmd).decision;
    assert_eq!(decide("cat src/deep/er/notes"), Decision::Ask);
    assert_eq!(decide("cd src/deep/away && cat notes"), Decision::Ask);
    assert_eq!(decide("cat src/deep/away/notes"), Decision::Ask);
    assert_eq!(decide("cat src/deep/dotenv"), Decision::Ask);
    // Plain names beneath real directories, and a name that does not exist, read unasked.
    assert_eq!(decide("cat src/main.rs"), Decision::Allow);
    assert_eq!(decide("cd src/deep && ls er"), Decision::Allow);
    assert_eq!(decide("cat src/deep/missing/file"), Decision::Allow);
    // Nothing on disk changed by judging.
    assert_eq!(
        std::fs::read_to_string(outside.path().join("notes")).unwrap(),
        "private\n"
    );
}
