//! Integration tests: policy through the binary — the static policy narrows the tools offered,
//! read roots bound known-safe reads, `policy check --json`. The tests that build a policy engine
//! by hand are in `src/tests/policy_commands.rs` and `src/tests/policy_rules.rs`.

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

    /// The worst texts a model can send reach the binary's parser helper and come back decided:
    /// a command just under the 64 KiB limit, one nested 200 deep (parsed on a big-stack thread
    /// inside the helper), and, over the limits, a longer and a deeper one, denied without parsing.
    #[tokio::test]
    async fn the_longest_and_deepest_commands_are_decided_through_the_helper_and_over_the_limits_denied()
     {
        let sandbox = Sandbox::new();
        let check = |command: String| {
            let mut cmd = sandbox.command();
            cmd.args(["policy", "check", "--json", "--"]).arg(command);
            cmd
        };
        // One quoted word keeps the long text from being split in process as plain words.
        let long = format!("ls 'a' {}", "a ".repeat(29_999));
        let deep = format!("echo {}x{}", "$(".repeat(200), ")".repeat(200));
        let too_long = format!("ls {}", "a ".repeat(40_000));
        let too_deep = format!("echo {}x{}", "$(".repeat(300), ")".repeat(300));
        // The simple commands listed show that the first two were parsed: one `ls`; 200
        // substitutions and the `echo`.
        for (command, decision, rule, parsed) in [
            (long, "allow", "builtin.safe.ls", 1),
            (deep, "deny", "builtin.unprovable.command", 201),
            (too_long, "deny", "builtin.parse.limit", 1),
            (too_deep, "deny", "builtin.parse.limit", 1),
        ] {
            let (_, stdout) = stdout_of(&mut check(command.clone())).await;
            let report: Value =
                serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
            assert_eq!(
                report["decision"],
                decision,
                "{} bytes: {report}",
                command.len()
            );
            assert!(
                report["rule_ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|r| r == rule),
                "{} bytes: {report}",
                command.len()
            );
            let commands = report["commands"].as_array().unwrap();
            assert_eq!(commands.len(), parsed, "{} bytes", command.len());
        }
        let (_, stdout) = stdout_of(&mut check(format!("ls 'a' {}", "a ".repeat(29_999)))).await;
        let report: Value = serde_json::from_str(&stdout).unwrap();
        let argv = report["commands"][0]["argv"].as_array().unwrap();
        assert_eq!(
            argv.len(),
            30_001,
            "every argument of the long command was parsed"
        );
    }

    /// The binary parses commands in a helper process. One that dies on a command (here by
    /// `abort`, as a parser panic ends it under the release profile's `panic = "abort"`; the debug
    /// binary aborts on the text in `PABLO_TEST_ABORT_PARSING`) costs that command alone: it is
    /// refused with the reason, pablo goes on, and the next command is parsed by a new helper.
    #[tokio::test]
    async fn a_shell_parser_that_dies_on_a_command_costs_that_command_and_the_next_one_runs() {
        use crate::support::run::{call, run_within, say};
        let sandbox = Sandbox::new();
        let server = ScriptedServer::start().await;
        // Quoted, so that the text goes to the helper (plain words are split in process).
        let doomed = "echo 'doomed'";
        server.push(call(
            "c1",
            "shell_run",
            &serde_json::json!({"command": doomed}),
        ));
        server.push(call(
            "c2",
            "shell_run",
            &serde_json::json!({"command": "echo second"}),
        ));
        server.push(say("ok"));
        let mut cmd = sandbox.run_json(&server.base_url(), "echo twice");
        cmd.env("PABLO_TEST_ABORT_PARSING", doomed);
        let out = run_within(cmd, Duration::from_secs(60)).await.succeeded();
        let results = out.results();
        assert_eq!(results.len(), 2, "{results:?}");
        let refused = results[0].to_string();
        assert_eq!(
            results[0]["error"]["code"], "approval_required",
            "{refused}"
        );
        assert!(
            refused.contains("the shell parser failed on it"),
            "{refused}"
        );
        assert!(
            !refused.contains("doomed\\n"),
            "the doomed command did not run: {refused}"
        );
        assert_eq!(results[1]["ok"], true, "{}", results[1]);
        assert!(results[1].to_string().contains("second"), "{}", results[1]);
    }

    /// `pablo policy check -- WORDS` judges the command those words are (each word one word),
    /// as a shell would have passed them, and shows that command.
    #[tokio::test]
    async fn policy_check_judges_the_words_after_the_dashes_as_the_words_a_shell_passed() {
        let sandbox = Sandbox::new();
        let check = |words: &[&str]| {
            let mut cmd = sandbox.command();
            cmd.args(["policy", "check", "--json", "--"]).args(words);
            cmd
        };
        let report = |stdout: String| -> Value {
            serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
        };
        // `find . -name '*.rs'` typed at a shell: find gets `*.rs`, no glob is left.
        let (code, words) = stdout_of(&mut check(&["find", ".", "-name", "*.rs"])).await;
        let (_, line) = stdout_of(&mut check(&["find . -name '*.rs'"])).await;
        let (words, line) = (report(words), report(line));
        assert_eq!(words["decision"], line["decision"], "{words}\n{line}");
        assert_eq!(words["commands"], line["commands"], "{words}\n{line}");
        assert_eq!(words["commands"][0]["argv"][3], "*.rs", "{words}");
        assert_eq!(code, Some(0), "{words}");
        // `ls 'my file.txt'` typed at a shell: one file name.
        let (_, out) = stdout_of(&mut check(&["ls", "my file.txt"])).await;
        let out = report(out);
        assert_eq!(
            out["commands"][0]["argv"],
            serde_json::json!(["ls", "my file.txt"]),
            "{out}"
        );
        // A word with a quote in it stays that word.
        let (_, out) = stdout_of(&mut check(&["echo", "it's", "$HOME"])).await;
        let out = report(out);
        assert_eq!(
            out["commands"][0]["argv"],
            serde_json::json!(["echo", "it's", "$HOME"]),
            "{out}"
        );
    }
}
