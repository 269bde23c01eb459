//! Integration tests: policy — the command corpus, chains, approvals, layers, the static policy.

use std::path::{Path, PathBuf};

use pablo::config::{ConfigFile, Dirs, Layers};
use pablo::core::{Coded, ToolKind};
use pablo::policy::{CliFlags, PolicyEngine, TrustStore, cli};
use pablo::protocol::{Decision, FileChangePreview, Preview};

/// A workspace and XDG directories in one temporary folder, side by side.
struct Env {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    dirs: Dirs,
}

fn env() -> Env {
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

fn explicit(text: &str) -> Layers {
    Layers {
        explicit: Some((
            PathBuf::from("test.toml"),
            ConfigFile::parse(text, Path::new("test.toml")).unwrap(),
        )),
        ..Default::default()
    }
}

const ALLOW_LIST: &str = r#"
[options.shell.commands]
default = "deny"
allow = [
  { id = "t.git-status", executable = "git", args = ["status"], match = "prefix" },
  { id = "t.wc", executable = "wc", args = [], match = "prefix" },
  { id = "t.ls", executable = "ls", args = [], match = "prefix" },
]
"#;

fn strict(e: &Env) -> PolicyEngine {
    PolicyEngine::build(
        &e.ws,
        &e.dirs,
        &explicit(ALLOW_LIST),
        None,
        CliFlags::default(),
    )
    .unwrap()
}

fn interactive(e: &Env) -> PolicyEngine {
    PolicyEngine::build(
        &e.ws,
        &e.dirs,
        &Layers::default(),
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
    let fixed: &[(&str, &str)] = include!("fixtures/policy_corpus.rs");
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
    let corpus: &[(&str, &str)] = include!("fixtures/deny_corpus.rs");
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
    let r = cli::check(&engine, "ls *.rs");
    assert_eq!(r.decision, Decision::Ask);
    assert!(
        r.reasons.iter().any(|x| x.contains("glob")),
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
        PolicyEngine::build(&e.ws, &e.dirs, &explicit(text), None, CliFlags::default()).unwrap()
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
    let r = cli::check(&engine, "for i in a b; do echo x; done");
    let text = r.to_text();
    assert!(
        text.contains("`for i in a b` sets the variable i for the commands of the loop"),
        "{text}"
    );
    assert!(!text.contains("`i=a b`"), "{text}");

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
        "ls $X",
        "ls *.rs",
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
fn allow_always_saves_a_prefix_rule_outside_the_workspace() {
    let e = env();
    let engine = interactive(&e);
    let mut preview = command_preview("cargo test --lib");
    let v = engine.decide("shell.run", ToolKind::Execute, &mut preview);
    assert_eq!(v.decision, Decision::Ask);
    assert!(
        v.always_rule
            .as_deref()
            .is_some_and(|r| r.contains("cargo test")),
        "{v:?}"
    );
    let ids = engine.remember("shell.run", &preview).unwrap();
    assert_eq!(ids.len(), 1);

    let check = |cmd: &str| {
        let mut p = command_preview(cmd);
        engine
            .decide("shell.run", ToolKind::Execute, &mut p)
            .decision
    };
    assert_eq!(check("cargo test --doc"), Decision::Allow);
    assert_eq!(check("cargo build"), Decision::Ask);
    assert_eq!(check("cargo test --doc; rm x"), Decision::Ask);

    let file = engine.rules_file().unwrap().to_path_buf();
    assert!(file.is_file());
    assert!(!file.starts_with(&e.ws), "{file:?} is inside the workspace");
    assert!(file.starts_with(&e.dirs.config));

    // A new engine for the same workspace finds the rule; the CLI lists and removes it.
    let again = interactive(&e);
    assert_eq!(cli::rules(&again).rules.len(), 1);
    let removed = cli::remove_rule(&again, &ids[0]).unwrap();
    assert_eq!(removed.id, ids[0]);
    assert!(cli::rules(&again).rules.is_empty());
    let mut p = command_preview("cargo test --doc");
    assert_eq!(
        again
            .decide("shell.run", ToolKind::Execute, &mut p)
            .decision,
        Decision::Ask
    );
}

#[test]
fn allow_always_for_interpreters_saves_only_the_exact_command() {
    let e = env();
    let engine = interactive(&e);
    let preview = command_preview("python3 tools/gen.py --fast");
    engine.remember("shell.run", &preview).unwrap();
    let check = |cmd: &str| {
        let mut p = command_preview(cmd);
        engine
            .decide("shell.run", ToolKind::Execute, &mut p)
            .decision
    };
    assert_eq!(check("python3 tools/gen.py --fast"), Decision::Allow);
    assert_eq!(check("python3 tools/gen.py --fast --more"), Decision::Ask);
    assert_eq!(check("python3 -c 'import os'"), Decision::Ask);
}

#[test]
fn a_compound_command_saves_one_rule_per_command_that_asked() {
    let e = env();
    let engine = interactive(&e);
    let preview = command_preview("cargo fmt && make lint");
    let ids = engine.remember("shell.run", &preview).unwrap();
    assert_eq!(ids.len(), 2, "{ids:?}");
    let mut p = command_preview("make lint --quiet && cargo fmt --check");
    assert_eq!(
        engine
            .decide("shell.run", ToolKind::Execute, &mut p)
            .decision,
        Decision::Allow
    );
}

#[test]
fn removing_an_unknown_rule_is_refused_and_the_file_is_unchanged() {
    let e = env();
    let engine = interactive(&e);
    engine
        .remember("shell.run", &command_preview("cargo test"))
        .unwrap();
    let file = engine.rules_file().unwrap().to_path_buf();
    let before = std::fs::read(&file).unwrap();
    let err = cli::remove_rule(&engine, "always.nope").unwrap_err();
    assert_eq!(err.code(), "rule_not_found");
    assert!(err.to_string().contains("always.nope"));
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

#[test]
fn allow_always_for_a_file_edit_is_per_path() {
    let e = env();
    let engine = interactive(&e);
    let mut a = edit_preview("src/a.rs");
    assert_eq!(
        engine.decide("fs.write", ToolKind::Edit, &mut a).decision,
        Decision::Ask
    );
    engine.remember("fs.write", &a).unwrap();
    assert_eq!(
        engine.decide("fs.edit", ToolKind::Edit, &mut a).decision,
        Decision::Allow
    );
    let mut b = edit_preview("src/b.rs");
    assert_eq!(
        engine.decide("fs.write", ToolKind::Edit, &mut b).decision,
        Decision::Ask
    );
}

#[test]
fn untrusted_project_layer_cannot_allow_until_the_folder_is_trusted() {
    let e = env();
    std::fs::create_dir_all(e.ws.join(".pablo")).unwrap();
    std::fs::write(
        e.ws.join(".pablo/config.toml"),
        r#"
[options.shell]
enable_deny_patterns = false
custom_deny_patterns = ["\\bmake\\b"]
[options.shell.commands]
default = "allow"
allow = [ { id = "proj.cargo", executable = "cargo", args = ["build"], match = "prefix" } ]
[options.tools]
"fs.write" = "auto"
"#,
    )
    .unwrap();
    let load = || PolicyEngine::load(&e.ws, &e.dirs, None, None, CliFlags::default()).unwrap();
    let engine = load();
    assert!(!engine.warnings().is_empty());
    assert!(
        engine.warnings().iter().any(|w| w.contains("proj.cargo")),
        "{:?}",
        engine.warnings()
    );
    assert_eq!(cli::check(&engine, "cargo build").decision, Decision::Ask);
    assert_eq!(cli::check(&engine, "rm -rf x").decision, Decision::Deny);
    assert_eq!(
        cli::check(&engine, "make").decision,
        Decision::Deny,
        "its denies still count"
    );
    let mut w = edit_preview("a.txt");
    assert_eq!(
        engine.decide("fs.write", ToolKind::Edit, &mut w).decision,
        Decision::Ask
    );

    TrustStore::new(&e.dirs).set_trusted(&e.ws, true).unwrap();
    let trusted = load();
    assert!(trusted.warnings().is_empty(), "{:?}", trusted.warnings());
    assert_eq!(
        cli::check(&trusted, "cargo build").decision,
        Decision::Allow
    );
    assert_eq!(cli::check(&trusted, "make").decision, Decision::Deny);
    let trust_file = TrustStore::new(&e.dirs).path().to_path_buf();
    assert!(!trust_file.starts_with(&e.ws));
}

#[test]
fn layers_intersect_allow_lists_and_keep_every_deny() {
    let e = env();
    let mut layers = explicit(ALLOW_LIST);
    layers.user = Some((
        PathBuf::from("user.toml"),
        ConfigFile::parse(
            r#"
[options.shell.commands]
allow = [ { id = "u.ls", executable = "ls", args = [], match = "prefix" },
          { id = "u.cat", executable = "cat", args = [], match = "prefix" } ]
deny = [ { id = "u.no-ls-R", executable = "/usr/bin/ls", args = ["-R"], match = "prefix" } ]
"#,
            Path::new("user.toml"),
        )
        .unwrap(),
    ));
    let engine = PolicyEngine::build(&e.ws, &e.dirs, &layers, None, CliFlags::default()).unwrap();
    assert_eq!(cli::check(&engine, "ls -la").decision, Decision::Allow);
    assert_eq!(
        cli::check(&engine, "cat x").decision,
        Decision::Deny,
        "not in both lists"
    );
    assert_eq!(
        cli::check(&engine, "wc x").decision,
        Decision::Deny,
        "not in both lists"
    );
    let r = cli::check(&engine, "ls -R");
    assert_eq!(r.decision, Decision::Deny);
    assert_eq!(r.commands[0].rule_id.as_deref(), Some("u.no-ls-R"));
    // A deny rule bites even when a later word cannot be proven.
    let r = cli::check(&engine, "ls -R $X");
    assert_eq!(r.commands[0].rule_id.as_deref(), Some("u.no-ls-R"));
}

#[test]
fn allow_write_cannot_override_a_denied_write_root() {
    let e = env();
    let layers = explicit(
        "[options.filesystem]\nwrite_roots = [\"src/**\", \"docs\"]\ndeny_roots = [\"src/secret\"]\n",
    );
    let flags = CliFlags {
        allow_write: true,
        ..Default::default()
    };
    let engine = PolicyEngine::build(&e.ws, &e.dirs, &layers, None, flags).unwrap();
    let decide = |path: &str| {
        let mut p = edit_preview(path);
        engine.decide("fs.write", ToolKind::Edit, &mut p)
    };
    // The flag grants the tools; an edit inside the roots still asks by default.
    assert_eq!(decide("src/lib.rs").decision, Decision::Ask);
    assert_eq!(decide("docs/a/b.md").decision, Decision::Ask);
    let v = decide("src/secret/key.rs");
    assert_eq!(v.decision, Decision::Deny);
    assert!(v.rule_ids[0].contains("deny_roots"), "{v:?}");
    assert_eq!(
        decide("README.md").decision,
        Decision::Deny,
        "outside the write roots"
    );
    assert_eq!(decide(".git/hooks/pre-commit").decision, Decision::Deny);
    assert_eq!(decide(".pablo/config.toml").decision, Decision::Deny);
    let mut read = Preview::Read {
        path: "src/secret/key.rs".into(),
    };
    assert_eq!(
        engine.decide("fs.read", ToolKind::Read, &mut read).decision,
        Decision::Deny
    );
}

#[test]
fn flags_and_tool_modes_narrow_the_catalog() {
    let e = env();
    let layers = explicit("[options.tools]\n\"plan.update\" = \"deny\"\n\"fs.read\" = \"ask\"\n");
    let flags = CliFlags {
        no_shell: true,
        ..Default::default()
    };
    let engine = PolicyEngine::build(&e.ws, &e.dirs, &layers, None, flags).unwrap();
    let mut p = command_preview("ls");
    let v = engine.decide("shell.run", ToolKind::Execute, &mut p);
    assert_eq!(v.decision, Decision::Deny);
    assert_eq!(v.rule_ids, vec!["flag.no-shell"]);
    let mut internal = Preview::Internal;
    assert_eq!(
        engine
            .decide("plan.update", ToolKind::Think, &mut internal)
            .decision,
        Decision::Deny
    );
    let mut read = Preview::Read { path: "a".into() };
    assert_eq!(
        engine.decide("fs.read", ToolKind::Read, &mut read).decision,
        Decision::Ask
    );

    let mut catalog = pablo::tools::Catalog::new();
    catalog
        .register(std::sync::Arc::new(pablo::tools::plan::PlanUpdate))
        .unwrap();
    let removed = engine.narrow_catalog(&mut catalog);
    assert_eq!(removed, vec!["plan.update"]);
    assert!(catalog.is_empty());
}

#[test]
fn static_policy_limits_tools_launcher_and_roots_with_its_ids() {
    let e = env();
    let file = e.ws.parent().unwrap().join("policy.json");
    std::fs::write(
        &file,
        r#"{
  "version": 1,
  "tools": {"allow": [{"id": "p.read", "tool": "fs.read"}, {"id": "p.shell", "tool": "shell.run"}],
            "deny": [{"id": "p.no-write", "tool": "fs.write"}]},
  "launchers": {"deny": [{"id": "p.no-sh", "path": "/bin/sh"}]},
  "filesystem": {"read": [{"id": "p.src", "glob": "src/**"}]}
}"#,
    )
    .unwrap();
    let engine =
        PolicyEngine::load(&e.ws, &e.dirs, None, Some(&file), CliFlags::default()).unwrap();
    let mut w = edit_preview("src/a.rs");
    let v = engine.decide("fs.write", ToolKind::Edit, &mut w);
    assert_eq!(
        (v.decision, v.rule_ids[0].as_str()),
        (Decision::Deny, "p.no-write")
    );
    let mut plan = Preview::Internal;
    assert_eq!(
        engine
            .decide("plan.update", ToolKind::Think, &mut plan)
            .decision,
        Decision::Deny
    );
    let r = cli::check(&engine, "ls");
    assert_eq!(r.decision, Decision::Deny);
    assert!(r.rule_ids.contains(&"p.no-sh".to_string()), "{r:?}");
    let mut read = Preview::Read {
        path: "docs/x.md".into(),
    };
    let v = engine.decide("fs.read", ToolKind::Read, &mut read);
    assert_eq!(
        (v.decision, v.rule_ids[0].as_str()),
        (Decision::Deny, "p.src")
    );
    let mut read = Preview::Read {
        path: "src/x.rs".into(),
    };
    assert_eq!(
        engine.decide("fs.read", ToolKind::Read, &mut read).decision,
        Decision::Allow
    );
}

#[test]
fn an_invalid_static_policy_is_refused_with_its_code() {
    let e = env();
    let file = e.ws.parent().unwrap().join("bad.json");
    std::fs::write(
        &file,
        r#"{"version": 1, "tools": {"allow": [{"id": "", "tool": "fs.read"}]}}"#,
    )
    .unwrap();
    let err =
        PolicyEngine::load(&e.ws, &e.dirs, None, Some(&file), CliFlags::default()).unwrap_err();
    assert_eq!(err.code(), "policy_invalid");
    assert!(err.to_string().contains("bad.json"), "{err}");
    let missing = e.ws.join("missing.json");
    let err =
        PolicyEngine::load(&e.ws, &e.dirs, None, Some(&missing), CliFlags::default()).unwrap_err();
    assert_eq!(err.code(), "policy_unreadable");
}

#[test]
fn approvals_are_not_kept_inside_the_workspace() {
    let e = env();
    let inside = Dirs {
        config: e.ws.join(".config").join("pablo"),
        ..e.dirs.clone()
    };
    let engine = PolicyEngine::build(
        &e.ws,
        &inside,
        &Layers::default(),
        None,
        CliFlags::default(),
    )
    .unwrap();
    assert!(engine.rules_file().is_none());
    assert!(
        engine
            .warnings()
            .iter()
            .any(|w| w.contains("inside the workspace"))
    );
    engine
        .remember("shell.run", &command_preview("cargo test"))
        .unwrap();
    assert!(
        !e.ws.join(".config").exists(),
        "nothing was written into the workspace"
    );
    let err = TrustStore::new(&inside)
        .set_trusted(&e.ws, true)
        .unwrap_err();
    assert_eq!(err.code(), "policy_store_in_workspace");
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

fn command_preview(cmd: &str) -> Preview {
    Preview::Command(pablo::protocol::CommandPreview {
        command: cmd.into(),
        cwd: ".".into(),
        background: false,
        pty: false,
        commands: Vec::new(),
        sandbox: None,
    })
}

fn edit_preview(path: &str) -> Preview {
    Preview::FileChange(FileChangePreview {
        path: path.into(),
        old_revision: None,
        new_revision: "0".repeat(64),
        new_text: "x".into(),
        diff: String::new(),
        added: 1,
        removed: 0,
        hunks: Vec::new(),
    })
}

#[test]
fn auto_edit_answers_the_builtin_edit_question_and_an_explicit_ask_still_asks() {
    use pablo::protocol::WorkMode;
    let plain = PolicyEngine::new(Default::default());
    let asked = PolicyEngine::new([("fs.write".to_string(), pablo::core::ToolMode::Ask)].into());
    for engine in [&plain, &asked] {
        assert_eq!(engine.mode(), WorkMode::Ask);
        let v = engine.decide("fs.write", ToolKind::Edit, &mut edit_preview("notes.txt"));
        assert_eq!(v.decision, Decision::Ask, "{v:?}");
    }
    for mode in WorkMode::ALL {
        plain.set_mode(mode);
        assert_eq!(plain.mode(), mode);
    }
    plain.set_mode(WorkMode::AutoEdit);
    asked.set_mode(WorkMode::AutoEdit);
    let v = plain.decide("fs.write", ToolKind::Edit, &mut edit_preview("notes.txt"));
    assert_eq!(v.decision, Decision::Allow, "{v:?}");
    assert_eq!(v.rule_ids, ["mode.auto_edit"]);
    let v = asked.decide("fs.write", ToolKind::Edit, &mut edit_preview("notes.txt"));
    assert_eq!(v.decision, Decision::Ask, "{v:?}");
    // Commands are judged as in ask.
    let v = plain.decide(
        "shell.run",
        ToolKind::Execute,
        &mut command_preview("make install"),
    );
    assert_eq!(v.decision, Decision::Ask, "{v:?}");
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

/// `/rules` in the TUI speaks protocol: the agent answers `Op::ListRules` and `Op::RemoveRule`
/// from the policy store, whether idle or while a turn waits for an approval.
mod rules_over_the_protocol {
    use std::sync::Arc;
    use std::time::Duration;

    use pablo::agent::{self, AgentSetup, Limits};
    use pablo::core::ApprovalMode;
    use pablo::model::scripted::ScriptedModel;
    use pablo::protocol::AgentHandle;
    use pablo::protocol::{ApprovalAnswer, Event, Op, RuleSummary};
    use pablo::tools::{Catalog, Host, register_filesystem};
    use pablo::workspace::Workspace;

    use super::{command_preview, env, interactive};

    /// One step that writes a file (an edit, so the interactive policy asks), then an answer.
    const SCRIPT: &str = r#"{
        "model": "scripted",
        "start": "write",
        "after_end": "nothing more",
        "steps": {
            "write": {
                "text": "writing",
                "calls": [{"tool": "fs_write", "arguments": {"path": "new.txt", "text": "x\n", "expected_revision": null}}],
                "next": "done"
            },
            "done": {"text": "finished"}
        }
    }"#;

    async fn next_matching(h: &mut AgentHandle, want: impl Fn(&Event) -> bool) -> Event {
        loop {
            let e = tokio::time::timeout(Duration::from_secs(20), h.events.recv())
                .await
                .expect("agent stalled")
                .expect("agent ended early");
            if want(&e) {
                return e;
            }
        }
    }

    #[tokio::test]
    async fn saved_rules_are_listed_and_removed_through_the_agent_idle_and_mid_turn() {
        let e = env();
        let engine = interactive(&e);
        let id = engine
            .remember("shell.run", &command_preview("cargo test"))
            .unwrap()
            .remove(0);
        let file = engine.rules_file().unwrap().to_path_buf();
        assert!(std::fs::read_to_string(&file).unwrap().contains(&id));

        // A second engine reads the same store, as a later session would.
        let engine = Arc::new(interactive(&e));
        let ws = Arc::new(Workspace::open(&e.ws).unwrap());
        let mut catalog = Catalog::new();
        register_filesystem(&mut catalog, &ws, true).unwrap();
        let mut h = agent::spawn(AgentSetup {
            mode: Default::default(),
            model_switcher: None,
            hooks: pablo::hooks::Hooks::none(),
            session_id: "rules".into(),
            model: Arc::new(ScriptedModel::from_json(SCRIPT).unwrap()),
            catalog,
            policy: engine.clone(),
            host: Arc::new(Host::new(ws, e.dirs.state.clone(), &Default::default())),
            limits: Limits::default(),
            approvals: ApprovalMode::Interactive,
            system_prompt: String::new(),
            history: Vec::new(),
            recorder: None,
            checkpoints: None,
        });

        h.ops.send(Op::ListRules).unwrap();
        let listed = next_matching(&mut h, |e| matches!(e, Event::Rules { .. })).await;
        let Event::Rules { rules, removed } = listed else {
            unreachable!()
        };
        assert_eq!(removed, None);
        assert_eq!(rules.len(), 1, "{rules:?}");
        let RuleSummary {
            id: listed_id,
            allows,
        } = &rules[0];
        assert_eq!(listed_id, &id);
        assert!(
            allows.contains("cargo") && allows.contains("test"),
            "{allows}"
        );

        // Mid-turn: the write waits for an approval while the rule is removed.
        h.ops.send(Op::user_turn("write a file")).unwrap();
        let ask = next_matching(&mut h, |e| matches!(e, Event::ApprovalRequest { .. })).await;
        let Event::ApprovalRequest { call_id, .. } = ask else {
            unreachable!()
        };
        h.ops.send(Op::RemoveRule { id: id.clone() }).unwrap();
        let after = next_matching(&mut h, |e| matches!(e, Event::Rules { .. })).await;
        assert_eq!(
            after,
            Event::Rules {
                rules: Vec::new(),
                removed: Some(id.clone()),
            }
        );
        assert!(engine.saved_rules().is_empty());
        assert!(
            !std::fs::read_to_string(&file).unwrap().contains(&id),
            "the rule file still holds {id}"
        );

        // Removing it again is refused with a warning naming it; the list is still sent.
        h.ops.send(Op::RemoveRule { id: id.clone() }).unwrap();
        let warned = next_matching(&mut h, |e| matches!(e, Event::Warning { .. })).await;
        let Event::Warning { message } = warned else {
            unreachable!()
        };
        assert!(message.contains(&id), "{message}");
        let again = next_matching(&mut h, |e| matches!(e, Event::Rules { .. })).await;
        assert_eq!(
            again,
            Event::Rules {
                rules: Vec::new(),
                removed: None,
            }
        );

        h.ops
            .send(Op::Approval {
                call_id,
                answer: ApprovalAnswer::Reject { note: None },
            })
            .unwrap();
        next_matching(&mut h, |e| matches!(e, Event::TurnCompleted { .. })).await;
        h.ops.send(Op::Shutdown).unwrap();
        next_matching(&mut h, |e| matches!(e, Event::ShutdownComplete)).await;
        assert!(!e.ws.join("new.txt").exists());
    }
}

// ---------------------------------------------------------------- known-safe reads

/// The workspace the known-safe corpus expects (see tests/fixtures/known_safe_corpus.rs).
fn safe_workspace(e: &Env) {
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
    let corpus: &[(&str, &str)] = include!("fixtures/known_safe_corpus.rs");
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
    let engine = PolicyEngine::build(&e.ws, &e.dirs, &deny, None, CliFlags::default()).unwrap();
    assert_eq!(
        cli::check(&engine, "cat README.md").decision,
        Decision::Deny
    );
    assert_eq!(cli::check(&engine, "ls").decision, Decision::Allow);
    let off = explicit("[options.shell]\nknown_safe_reads = false\n");
    let engine = PolicyEngine::build(&e.ws, &e.dirs, &off, None, CliFlags::default()).unwrap();
    assert_eq!(cli::check(&engine, "ls").decision, Decision::Ask);
}

#[test]
fn the_project_layer_can_tighten_the_sandbox_but_never_loosen_it() {
    let e = env();
    let project = |toml: &str| {
        std::fs::create_dir_all(e.ws.join(".pablo")).unwrap();
        std::fs::write(e.ws.join(".pablo/config.toml"), toml).unwrap();
        Layers::load(&e.dirs, &e.ws, None).unwrap()
    };
    let build = |layers: &Layers| {
        PolicyEngine::build(&e.ws, &e.dirs, layers, None, CliFlags::default()).unwrap()
    };
    let engine = build(&project(
        "[options.shell]\nsandbox = \"off\"\nnetwork = true\nwritable_roots = [\"/\"]\n",
    ));
    let s = engine.sandbox_settings();
    assert_eq!(s.profile, pablo::protocol::SandboxProfile::WorkspaceWrite);
    assert!(!s.network);
    assert!(s.writable_roots.is_empty());
    let warnings = engine.warnings().join("\n");
    for key in [
        "sandbox = \"off\" ignored",
        "network = true ignored",
        "writable_roots ignored",
    ] {
        assert!(warnings.contains(key), "{key}: {warnings}");
    }
    let engine = build(&project("[options.shell]\nsandbox = \"read-only\"\n"));
    assert_eq!(
        engine.sandbox_settings().profile,
        pablo::protocol::SandboxProfile::ReadOnly
    );
    // A trusted layer may loosen.
    std::fs::remove_dir_all(e.ws.join(".pablo")).unwrap();
    let layers = explicit(
        "[options.shell]\nsandbox = \"off\"\nnetwork = true\nwritable_roots = [\"/opt/cache\", \"~/.m2\"]\n",
    );
    let engine = build(&layers);
    let s = engine.sandbox_settings();
    assert_eq!(s.profile, pablo::protocol::SandboxProfile::Off);
    assert!(s.network);
    assert_eq!(s.writable_roots[0], PathBuf::from("/opt/cache"));
    assert!(s.writable_roots[1].ends_with(".m2"));
    assert_eq!(
        cli::check(&engine, "cargo build").sandbox.unwrap().profile,
        pablo::protocol::SandboxProfile::Off
    );
}

#[test]
fn a_relative_writable_root_is_a_config_error_naming_it() {
    let err = ConfigFile::parse(
        "[options.shell]\nwritable_roots = [\"cache\"]\n",
        Path::new("c.toml"),
    )
    .unwrap_err();
    assert_eq!(err.code(), "config_invalid");
    assert!(err.to_string().contains("\"cache\""), "{err}");
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

// ---------------------------------------------------------------- through the binary

mod binary {
    use std::time::Duration;

    use serde_json::Value;

    use crate::support::bin::Sandbox;
    use crate::support::http::{ScriptedResponse, ScriptedServer, openai};

    async fn stdout_of(cmd: &mut tokio::process::Command) -> (Option<i32>, String) {
        let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
            .await
            .expect("pablo finished within 60 s")
            .expect("pablo runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    fn write_policy(sandbox: &Sandbox, json: &str) -> String {
        let file = sandbox.root().join("policy.json");
        std::fs::write(&file, json).unwrap();
        file.display().to_string()
    }

    #[tokio::test]
    async fn tools_the_static_policy_denies_are_not_offered_to_the_model() {
        let server = ScriptedServer::start().await;
        server.push(ScriptedResponse::sse(openai::text_answer("ok")));
        let sandbox = Sandbox::new();
        let policy = write_policy(
            &sandbox,
            r#"{"version": 1, "tools": {"deny": [
                {"id": "ci.no-write", "tool": "fs.write"}, {"id": "ci.no-shell", "tool": "shell.run"}]}}"#,
        );
        let mut cmd = sandbox.run_json(&server.base_url(), "hello");
        cmd.args(["--allow-write", "--policy", &policy]);
        let (code, stdout) = stdout_of(&mut cmd).await;
        assert_eq!(code, Some(0), "{stdout}");
        let body = server.requests()[0].json();
        let offered: Vec<&str> = body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert!(!offered.contains(&"fs_write"), "{offered:?}");
        assert!(!offered.contains(&"shell_run"), "{offered:?}");
        assert!(offered.contains(&"fs_edit"), "{offered:?}");
        assert!(offered.contains(&"fs_read"), "{offered:?}");
    }

    #[tokio::test]
    async fn read_roots_bound_known_safe_shell_reads_too() {
        let sandbox = Sandbox::new();
        std::fs::create_dir_all(sandbox.workspace().join("src")).unwrap();
        std::fs::write(sandbox.workspace().join("top.txt"), "x\n").unwrap();
        let policy = write_policy(
            &sandbox,
            r#"{"version": 1, "filesystem": {"read": [{"id": "ci.src", "glob": "src/**"}]}}"#,
        );
        let check = |command: &str| {
            let mut cmd = sandbox.command();
            cmd.args([
                "policy", "check", "--json", "--policy", &policy, "--", command,
            ]);
            cmd
        };
        for command in ["ls", "cat top.txt", "ls src"] {
            let (code, stdout) = stdout_of(&mut check(command)).await;
            let report: Value = serde_json::from_str(stdout.trim()).unwrap();
            assert_ne!(report["decision"], "allow", "{command}: {report}");
            assert_ne!(code, Some(0), "{command}: {report}");
            assert!(
                !report["rule_ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|r| r.as_str().unwrap().starts_with("builtin.safe.")),
                "{command}: {report}"
            );
        }
        // Without roots the same read is known safe.
        let mut cmd = sandbox.command();
        cmd.args(["policy", "check", "--json", "--", "ls"]);
        let (code, stdout) = stdout_of(&mut cmd).await;
        assert_eq!(code, Some(0), "{stdout}");
    }

    #[tokio::test]
    async fn policy_check_json_says_an_unsandboxed_command_reaches_the_network() {
        let sandbox = Sandbox::new();
        sandbox.user_config("[options.shell]\nsandbox = \"off\"\n");
        let mut cmd = sandbox.command();
        cmd.args([
            "policy",
            "check",
            "--json",
            "--",
            "curl https://example.com",
        ]);
        let (_, stdout) = stdout_of(&mut cmd).await;
        let report: Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(report["sandbox"]["profile"], "off", "{report}");
        assert_eq!(report["sandbox"]["network"], true, "{report}");
    }
}
