//! The policy's remembered rules, layers, static policy, tool modes and sandbox settings, and
//! the saved rules over the protocol.

use std::path::{Path, PathBuf};

use pablo::config::{ConfigFile, Dirs, Layers};
use pablo::core::{Coded, ToolKind};
use pablo::policy::{CliFlags, PolicyEngine, TrustStore, cli};
use pablo::protocol::{Decision, FileChangePreview, Preview};

use super::policy_commands::{ALLOW_LIST, env, explicit, interactive};

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
    let engine = PolicyEngine::build(
        &e.ws,
        &e.dirs,
        &layers,
        pablo::config::Trust::UNTRUSTED,
        None,
        CliFlags::default(),
    )
    .unwrap();
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
    let engine = PolicyEngine::build(
        &e.ws,
        &e.dirs,
        &layers,
        pablo::config::Trust::UNTRUSTED,
        None,
        flags,
    )
    .unwrap();
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
    let engine = PolicyEngine::build(
        &e.ws,
        &e.dirs,
        &layers,
        pablo::config::Trust::UNTRUSTED,
        None,
        flags,
    )
    .unwrap();
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

    let mut catalog = pablo_tools::Catalog::new();
    catalog
        .register(std::sync::Arc::new(pablo_tools::plan::PlanUpdate))
        .unwrap();
    let removed = narrow_catalog(&engine, &mut catalog);
    assert_eq!(removed, vec!["plan.update"]);
    assert!(catalog.is_empty());
}

/// Removes from the catalog every tool that policy denies outright, so the model is never offered
/// it. Returns the names removed. (It was `PolicyEngine::narrow_catalog`, a test-only method, until
/// policy became a crate of its own: `offers` is the engine's own test.)
fn narrow_catalog(engine: &PolicyEngine, catalog: &mut pablo_tools::Catalog) -> Vec<String> {
    let names: Vec<String> = catalog.names().map(str::to_string).collect();
    let mut removed = Vec::new();
    for name in names {
        let kind = catalog
            .get(&name)
            .map(|t| t.kind())
            .unwrap_or(ToolKind::Execute);
        if !engine.offers(&name, kind) {
            catalog.remove(&name);
            removed.push(name);
        }
    }
    removed
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
        pablo::config::Trust::UNTRUSTED,
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

/// `/rules` in the TUI speaks protocol: the agent answers `Op::ListRules` and `Op::RemoveRule`
/// from the policy store, whether idle or while a turn waits for an approval.
mod rules_over_the_protocol {
    use std::sync::Arc;
    use std::time::Duration;

    use pablo::core::ApprovalMode;
    use pablo::model::scripted::ScriptedModel;
    use pablo::protocol::AgentHandle;
    use pablo::protocol::{ApprovalAnswer, Event, Op, RuleSummary};
    use pablo::workspace::Workspace;
    use pablo_agent::{self, AgentSetup, Limits};
    use pablo_tools::{Catalog, Host, register_filesystem};

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
        let mut h = pablo_agent::spawn(AgentSetup {
            mode: Default::default(),
            model_switcher: None,
            isolator: None,
            hooks: pablo_hooks::Hooks::none(),
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

#[test]
fn the_project_layer_can_tighten_the_sandbox_but_never_loosen_it() {
    let e = env();
    let project = |toml: &str| {
        std::fs::create_dir_all(e.ws.join(".pablo")).unwrap();
        std::fs::write(e.ws.join(".pablo/config.toml"), toml).unwrap();
        // Read as written: these are policy's own rules, the second line behind the withholding
        // of an untrusted project layer's keys at load.
        Layers::load(&e.dirs, &e.ws, None, pablo::config::Trust::decided(true)).unwrap()
    };
    let build = |layers: &Layers| {
        PolicyEngine::build(
            &e.ws,
            &e.dirs,
            layers,
            pablo::config::Trust::UNTRUSTED,
            None,
            CliFlags::default(),
        )
        .unwrap()
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
fn the_project_layer_may_lower_the_search_for_repositories_to_protect_but_never_raise_it() {
    let e = env();
    let project = |toml: &str| {
        std::fs::create_dir_all(e.ws.join(".pablo")).unwrap();
        std::fs::write(e.ws.join(".pablo/config.toml"), toml).unwrap();
        // Read as written: these are policy's own rules, the second line behind the withholding
        // of an untrusted project layer's keys at load.
        Layers::load(&e.dirs, &e.ws, None, pablo::config::Trust::decided(true)).unwrap()
    };
    let build = |layers: &Layers| {
        PolicyEngine::build(
            &e.ws,
            &e.dirs,
            layers,
            pablo::config::Trust::UNTRUSTED,
            None,
            CliFlags::default(),
        )
        .unwrap()
    };
    let limit = |engine: &PolicyEngine| engine.sandbox_settings().protect_max_dirs;
    assert_eq!(
        limit(&build(&project(
            "[options.shell]\nprotect_max_dirs = 900000\n"
        ))),
        200_000
    );
    assert_eq!(
        limit(&build(&project(
            "[options.shell]\nprotect_max_dirs = 5000\n"
        ))),
        5_000
    );
    std::fs::remove_dir_all(e.ws.join(".pablo")).unwrap();
    assert_eq!(
        limit(&build(&explicit(
            "[options.shell]\nprotect_max_dirs = 900000\n"
        ))),
        900_000
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
