//! Snapshots of commands: running and finished, their approval prompts (parsed parts, sandbox
//! retry), and background sessions.

use super::*;

pub(super) fn command_preview(cmd: &str, pty: bool, background: bool) -> Preview {
    Preview::Command(CommandPreview {
        command: cmd.into(),
        cwd: ".".into(),
        background,
        pty,
        commands: vec![],
        sandbox: None,
    })
}

#[test]
fn running_and_finished_commands() {
    let (mut s, t0) = state();
    user_turn(&mut s, "run the tests");
    s.apply(Event::ToolCallBegin {
        call_id: "c1".into(),
        tool: "shell.run".into(),
        arguments: json!({"command": "sh tests/run.sh"}),
    });
    s.apply(Event::ToolCallRunning {
        call_id: "c1".into(),
        preview: command_preview("sh tests/run.sh", false, false),
    });
    s.apply(Event::ToolOutputDelta {
        call_id: "c1".into(),
        chunk: "running 3 tests\n\x1b[32mPASS\x1b[0m max\n\x1b[31mFAIL\x1b[0m mean: expected 2.5, got 2\n".into(),
    });
    s.set_now(t0 + Duration::from_millis(3400));
    snap!("command_running", draw(&mut s, 80, 16));
    s.apply(Event::ToolOutputDelta {
        call_id: "c1".into(),
        chunk: "\x1b[32mPASS\x1b[0m usage\n2 passed, 1 failed\n".into(),
    });
    s.set_now(t0 + Duration::from_millis(4100));
    s.apply(Event::ToolCallEnd {
        call_id: "c1".into(),
        tool: "shell.run".into(),
        result: ToolOutcome::ok(json!({"exit_code": 1, "output": "…"})),
    });
    s.apply(Event::TurnCompleted {
        stop_reason: StopReason::EndTurn,
        usage: Usage {
            web_searches: 0,
            input_tokens: 1200,
            output_tokens: 340,
            cached_input_tokens: 0,
            cache_write_input_tokens: 0,
        },
        model_calls: Some(2),
    });
    snap!("command_finished", draw(&mut s, 80, 16));
}

#[test]
fn diff_in_the_approval_prompt() {
    let (mut s, _) = state();
    user_turn(&mut s, "fix mean");
    s.apply(Event::ToolCallBegin {
        call_id: "w1".into(),
        tool: "fs.write".into(),
        arguments: json!({"path": "bin/stats.sh"}),
    });
    s.apply(Event::ApprovalRequest {
        call_id: "w1".into(),
        tool: "fs.write".into(),
        preview: Preview::FileChange(two_hunk_change()),
        verdict: ask("allow fs.write for this session"),
    });
    snap!("approval_diff", draw(&mut s, 100, 30));
    // Per-hunk selection: reject the second hunk.
    s.handle_key(key(KeyCode::Char(']')));
    s.handle_key(key(KeyCode::Char(' ')));
    let screen = draw(&mut s, 100, 30);
    // The header counts what will land: one hunk of one line each way, out of two.
    assert!(screen.contains("+1 −1 (of +2 −2)"), "{screen}");
    snap!("approval_per_hunk", screen);
    s.handle_key(key(KeyCode::Char('y')));
    assert_eq!(
        s.take_ops().pop(),
        Some(Op::Approval {
            call_id: "w1".into(),
            answer: ApprovalAnswer::AllowHunks {
                hunks: vec![0],
                notes: vec![]
            }
        })
    );
}

#[test]
fn the_approval_prompt_shows_what_the_change_breaks_and_checks_a_hunk_subset_again() {
    use pablo_protocol::{Diagnostic, DiagnosticsDelta, PreviewDiagnostics, Severity};
    let (mut s, _) = state();
    user_turn(&mut s, "fix mean");
    s.apply(Event::ToolCallBegin {
        call_id: "w1".into(),
        tool: "fs.edit".into(),
        arguments: json!({"path": "bin/stats.sh"}),
    });
    s.apply(Event::ApprovalRequest {
        call_id: "w1".into(),
        tool: "fs.edit".into(),
        preview: Preview::FileChange(two_hunk_change()),
        verdict: ask("allow fs.edit for this session"),
    });
    let diagnostics =
        |d: PreviewDiagnostics, hunks: Option<Vec<usize>>| Event::PreviewDiagnostics {
            call_id: "w1".into(),
            hunks,
            diagnostics: d,
        };
    s.apply(diagnostics(
        PreviewDiagnostics::Checking {
            servers: vec!["bash-language-server".into()],
        },
        None,
    ));
    let screen = draw(&mut s, 100, 30);
    assert!(
        screen.contains("diagnostics: checking… (bash-language-server)"),
        "{screen}"
    );
    let error = |line, message: &str| Diagnostic {
        line,
        column: 3,
        severity: Severity::Error,
        message: message.into(),
        source: Some("shellcheck".into()),
        code: Some("SC1009".into()),
    };
    s.apply(diagnostics(
        PreviewDiagnostics::Ready(DiagnosticsDelta {
            introduced: vec![error(12, "the mentioned syntax error was in this function")],
            fixed: vec![error(5, "unquoted expansion")],
            servers: vec!["bash-language-server".into()],
            ..Default::default()
        }),
        None,
    ));
    let screen = draw(&mut s, 100, 30);
    assert!(screen.contains("introduces 1 error · fixes 1"), "{screen}");
    snap!("approval_diagnostics", screen);
    // Dropping the second hunk asks the servers about the first alone; until they answer the
    // line says so, then it shows their answer for that subset.
    s.handle_key(key(KeyCode::Char(']')));
    s.handle_key(key(KeyCode::Char(' ')));
    assert_eq!(
        s.take_ops().pop(),
        Some(Op::CheckHunks {
            call_id: "w1".into(),
            hunks: vec![0]
        })
    );
    assert!(draw(&mut s, 100, 30).contains("diagnostics: checking…"));
    s.apply(diagnostics(
        PreviewDiagnostics::Ready(DiagnosticsDelta {
            servers: vec!["bash-language-server".into()],
            ..Default::default()
        }),
        Some(vec![0]),
    ));
    let screen = draw(&mut s, 100, 30);
    assert!(
        screen.contains("diagnostics: no new errors or warnings"),
        "{screen}"
    );
    // Taking the hunk back shows the whole change's answer again, without asking.
    s.handle_key(key(KeyCode::Char(' ')));
    assert!(s.take_ops().is_empty());
    for _ in 0..20 {
        s.handle_key(key(KeyCode::Up));
    }
    let screen = draw(&mut s, 100, 30);
    assert!(screen.contains("introduces 1 error"), "{screen}");
}

#[test]
fn a_commands_reason_shown_under_it_is_not_repeated_as_the_prompts_why() {
    let (mut s, _) = state();
    user_turn(&mut s, "show the env file");
    s.apply(Event::ToolCallBegin {
        call_id: "e1".into(),
        tool: "shell.run".into(),
        arguments: json!({"command": "cat .env"}),
    });
    let reason = "`.env` looks like a credential file";
    s.apply(Event::ApprovalRequest {
        call_id: "e1".into(),
        tool: "shell.run".into(),
        preview: Preview::Command(CommandPreview {
            command: "cat .env".into(),
            cwd: ".".into(),
            background: false,
            pty: false,
            commands: vec![SimpleCommandView {
                argv: vec!["cat".into(), ".env".into()],
                executable: Some("/usr/bin/cat".into()),
                decision: Decision::Ask,
                rule_id: Some("builtin.commands.default".into()),
                reason: Some(reason.into()),
            }],
            sandbox: None,
        }),
        verdict: Verdict::ask("builtin.commands.default", reason),
    });
    let screen = draw(&mut s, 100, 24);
    assert_eq!(screen.matches(reason).count(), 1, "{screen}");
    assert!(!screen.contains("why:"), "{screen}");
}

#[test]
fn command_prompt_shows_the_parsed_parts() {
    let (mut s, _) = state();
    user_turn(&mut s, "run the tests and count lines");
    s.apply(Event::ToolCallBegin {
        call_id: "s1".into(),
        tool: "shell.run".into(),
        arguments: json!({"command": "sh tests/run.sh && wc -l bin/stats.sh"}),
    });
    let mut v = Verdict::ask(
        "builtin.shell.default",
        "sh is not covered by an allow rule",
    );
    v.always_rule = Some("prefix /usr/bin/sh tests/run.sh".into());
    s.apply(Event::ApprovalRequest {
        call_id: "s1".into(),
        tool: "shell.run".into(),
        preview: Preview::Command(CommandPreview {
            command: "sh tests/run.sh && wc -l bin/stats.sh".into(),
            cwd: ".".into(),
            background: false,
            pty: false,
            commands: vec![
                SimpleCommandView {
                    argv: vec!["sh".into(), "tests/run.sh".into()],
                    executable: Some("/usr/bin/sh".into()),
                    decision: Decision::Ask,
                    rule_id: Some("builtin.shell.default".into()),
                    reason: Some("no allow rule matches /usr/bin/sh".into()),
                },
                SimpleCommandView {
                    argv: vec!["wc".into(), "-l".into(), "bin/stats.sh".into()],
                    executable: Some("/usr/bin/wc".into()),
                    decision: Decision::Allow,
                    rule_id: Some("builtin.readonly.wc".into()),
                    reason: None,
                },
            ],
            sandbox: Some(pablo_protocol::SandboxChoice {
                profile: pablo_protocol::SandboxProfile::WorkspaceWrite,
                network: false,
                known_safe: false,
                credentials_masked: false,
                degraded: None,
            }),
        }),
        verdict: v,
    });
    snap!("approval_command", draw(&mut s, 90, 24));
    s.handle_key(key(KeyCode::Char('n')));
    for c in "use make test".chars() {
        s.handle_key(key(KeyCode::Char(c)));
    }
    snap!("approval_reject_note", draw(&mut s, 90, 24));
    s.handle_key(key(KeyCode::Enter));
    assert_eq!(
        s.take_ops().pop(),
        Some(Op::Approval {
            call_id: "s1".into(),
            answer: ApprovalAnswer::Reject {
                note: Some("use make test".into())
            }
        })
    );
}

/// After a sandbox denial the agent asks once more: the same command, without the sandbox. The
/// prompt says so in its title and offers no "always".
#[test]
fn sandbox_retry_prompt_offers_once_or_reject() {
    let (mut s, _) = state();
    user_turn(&mut s, "install the hook");
    s.apply(Event::ToolCallBegin {
        call_id: "r1".into(),
        tool: "shell.run".into(),
        arguments: json!({"command": "cp hook ../shared/hooks/"}),
    });
    let verdict = Verdict::ask(
        pablo_protocol::SANDBOX_RETRY_RULE,
        "the command failed and /work/shared/hooks is outside what the workspace-write sandbox \
         lets it write: cp: cannot create regular file '../shared/hooks/hook': Permission \
         denied; run it again without the sandbox?",
    );
    let mut preview = command_preview("cp hook ../shared/hooks/", false, false);
    if let Preview::Command(cp) = &mut preview {
        cp.sandbox = Some(pablo_protocol::SandboxChoice {
            profile: pablo_protocol::SandboxProfile::Off,
            network: true,
            known_safe: false,
            credentials_masked: false,
            degraded: None,
        });
    }
    s.apply(Event::ApprovalRequest {
        call_id: "r1".into(),
        tool: "shell.run".into(),
        preview,
        verdict,
    });
    snap!("approval_sandbox_retry", draw(&mut s, 90, 24));
    // "always" is not offered, and its key does nothing.
    s.handle_key(key(KeyCode::Char('a')));
    assert_eq!(s.take_ops().pop(), None);
    s.handle_key(key(KeyCode::Char('y')));
    assert_eq!(
        s.take_ops().pop(),
        Some(Op::Approval {
            call_id: "r1".into(),
            answer: ApprovalAnswer::AllowOnce
        })
    );
}

#[test]
fn background_session_list_and_output() {
    let (mut s, _) = state();
    s.apply(Event::Sessions {
        sessions: vec![
            SessionSummary {
                session_id: "bg-1".into(),
                command: "sh bin/watch.sh".into(),
                running: true,
                exit_code: None,
                pty: true,
                started_ms: 1_700_000_088_000,
            },
            SessionSummary {
                session_id: "bg-2".into(),
                command: "python3 -m http.server 8000".into(),
                running: false,
                exit_code: Some(0),
                pty: false,
                started_ms: 1_700_000_000_000,
            },
        ],
    });
    s.apply(Event::SessionOutput {
        session_id: "bg-1".into(),
        chunk: "\x1b[1mwatching\x1b[0m data.txt\r\ntick 1\r\ntick 2\r\n".into(),
    });
    s.handle_key(KeyEvent::new(KeyCode::Char('b'), KeyModifiers::CONTROL));
    snap!("sessions_list", draw(&mut s, 100, 20));
    s.handle_key(key(KeyCode::Enter));
    snap!("session_output", draw(&mut s, 100, 20));
    s.handle_key(key(KeyCode::Char('k')));
    assert_eq!(
        s.take_ops().pop(),
        Some(Op::KillSession {
            session_id: "bg-1".into()
        })
    );
}

#[test]
fn the_diagnostics_summary_stays_in_sight_while_a_later_hunk_is_reviewed() {
    let (mut s, _) = state();
    user_turn(&mut s, "fix the mean");
    s.apply(Event::ToolCallBegin {
        call_id: "w1".into(),
        tool: "fs.edit".into(),
        arguments: json!({"path": "bin/stats.sh"}),
    });
    s.apply(Event::ApprovalRequest {
        call_id: "w1".into(),
        tool: "fs.edit".into(),
        preview: Preview::FileChange(two_hunk_change()),
        verdict: ask("allow fs.edit for this session"),
    });
    s.apply(Event::PreviewDiagnostics {
        call_id: "w1".into(),
        hunks: None,
        diagnostics: PreviewDiagnostics::Ready(DiagnosticsDelta {
            introduced: vec![Diagnostic {
                line: 12,
                column: 3,
                severity: Severity::Error,
                message: "the mentioned syntax error was in this function".into(),
                source: Some("shellcheck".into()),
                code: Some("SC1009".into()),
            }],
            servers: vec!["bash-language-server".into()],
            ..Default::default()
        }),
    });
    // The second hunk, on a screen too short for the whole body: the body scrolls to it.
    s.handle_key(key(KeyCode::Char(']')));
    let screen = draw(&mut s, 100, 20);
    assert!(
        screen.contains("diagnostics: introduces 1 error"),
        "{screen}"
    );
    snap!("approval_diagnostics_on_a_later_hunk", screen);
}
