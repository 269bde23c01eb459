//! `pablo import-config`: a Claude Code and a Codex setup (tests/fixtures/import, written from
//! the documented formats) become a pablo config that `pablo config validate` accepts and that
//! pablo then acts on; the person's own settings go to their user config, a project's only to
//! the project's config and only when asked; `--dry-run` writes nothing; an existing config is
//! never replaced; what cannot be mapped is reported.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use crate::support::bin::Sandbox;
use crate::support::run::output;

/// A sandbox whose home and workspace are copies of the fixture setup `name`.
fn setup(name: &str) -> Sandbox {
    let sandbox = Sandbox::new();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name);
    copy_tree(&fixture.join("home"), &sandbox.root().join("home"));
    copy_tree(&fixture.join("workspace"), &sandbox.workspace());
    sandbox
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn user_config(sandbox: &Sandbox) -> PathBuf {
    sandbox.config_dir().join("config.toml")
}

fn project_config(sandbox: &Sandbox) -> PathBuf {
    sandbox.workspace().join(".pablo/config.toml")
}

async fn pablo(sandbox: &Sandbox, args: &[&str]) -> (Option<i32>, String, String) {
    let mut cmd = sandbox.command();
    cmd.args(args);
    output(cmd).await
}

/// `pablo config validate` of the user's and the project's config, as a person would run it.
async fn validates(sandbox: &Sandbox) {
    let (code, stdout, stderr) = pablo(sandbox, &["config", "validate"]).await;
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains(": ok"), "{stdout}");
}

#[tokio::test]
async fn a_claude_code_setup_becomes_a_user_config_that_validates_and_that_pablo_acts_on() {
    let sandbox = setup("claude");
    let (code, stdout, stderr) = pablo(&sandbox, &["import-config", "--from", "claude"]).await;
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let written = std::fs::read_to_string(user_config(&sandbox)).unwrap();
    validates(&sandbox).await;
    // Hooks with their matchers translated, servers, the model.
    for expected in [
        "matcher = 'shell\\.run'",
        "matcher = 'fs\\.(edit|write)'",
        "[mcp_servers.github]",
        "bearer_token_env = \"GITHUB_PAT\"",
        "model = \"claude-sonnet-4-5\"",
        "statusline_command",
    ] {
        assert!(written.contains(expected), "{expected} in:\n{written}");
    }
    // The project's settings stay out of the person's own config (they would apply everywhere),
    // and no secret is copied.
    assert!(!written.contains("format.sh"), "{written}");
    assert!(!written.contains("ghp_"), "{written}");
    assert!(!project_config(&sandbox).exists());
    // The report: each mapping, what could not be mapped and why, agents and skills.
    assert!(stdout.contains("Bash(npm run test:*)"), "{stdout}");
    assert!(
        stdout.contains("WebSearch\": pablo has no tool like WebSearch"),
        "{stdout}"
    );
    assert!(
        stdout.contains("hooks.SubagentStop[0]: pablo has no such event"),
        "{stdout}"
    );
    assert!(
        stdout.contains("mcpServers.legacy: pablo speaks streamable HTTP"),
        "{stdout}"
    );
    assert!(stdout.contains("skills already load"), "{stdout}");
    assert!(
        stdout.contains("1 agent file(s) in ~/.claude/agents"),
        "{stdout}"
    );
    assert!(stdout.contains("--project"), "{stdout}");
    // The imported rules decide: the allowed test command runs, curl is denied.
    let (code, out, err) =
        pablo(&sandbox, &["policy", "check", "--", "npm run test -- --ci"]).await;
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, err) = pablo(&sandbox, &["policy", "check", "--", "curl https://x.dev"]).await;
    assert_eq!(code, Some(4), "{out}{err}");
    assert!(out.contains("claude.deny.curl"), "{out}");
}

#[tokio::test]
async fn a_codex_setup_becomes_a_user_config_that_validates() {
    let sandbox = setup("codex");
    let (code, stdout, stderr) = pablo(&sandbox, &["import-config", "--from", "codex"]).await;
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    validates(&sandbox).await;
    let written = std::fs::read_to_string(user_config(&sandbox)).unwrap();
    for expected in [
        "base_url = \"http://localhost:8000/v1\"",
        "api_key_env = \"LAB_API_KEY\"",
        "wire_api = \"chat\"",
        "sandbox = \"workspace-write\"",
        "[mcp_servers.tracker]",
        "tool_timeout_seconds = 91",
    ] {
        assert!(written.contains(expected), "{expected} in:\n{written}");
    }
    assert!(!written.contains("NPM_TOKEN"), "{written}");
    assert!(
        stdout.contains("approval_policy \"never\": pablo never skips"),
        "{stdout}"
    );
    assert!(
        stdout.contains("profiles: pablo has no profiles"),
        "{stdout}"
    );
    assert!(
        stdout.contains("pablo reads this project's AGENTS.md"),
        "{stdout}"
    );
}

#[tokio::test]
async fn a_project_setup_goes_to_the_project_config_only_when_asked() {
    let sandbox = setup("claude");
    let args = ["import-config", "--from", "claude", "--project"];
    let (code, stdout, stderr) = pablo(&sandbox, &args).await;
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let written = std::fs::read_to_string(project_config(&sandbox)).unwrap();
    assert!(written.contains("format.sh"), "{written}");
    assert!(
        written.contains("deny_roots = [\"config/production.json\"]"),
        "{written}"
    );
    assert!(written.contains("env_vars = [\"API_TOKEN\"]"), "{written}");
    assert!(!user_config(&sandbox).exists());
    assert!(stdout.contains("pablo policy trust"), "{stdout}");
    validates(&sandbox).await;
}

#[tokio::test]
async fn a_dry_run_prints_the_config_and_the_report_and_writes_nothing() {
    let sandbox = setup("claude");
    let args = ["import-config", "--from", "claude", "--dry-run"];
    let (code, stdout, stderr) = pablo(&sandbox, &args).await;
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.starts_with("# pablo config imported from Claude Code"),
        "{stdout}"
    );
    assert!(stdout.contains("[[hooks.pre_tool_use]]"), "{stdout}");
    assert!(stderr.contains("not mapped ("), "{stderr}");
    assert!(!user_config(&sandbox).exists());
    assert!(!project_config(&sandbox).exists());
    // What it printed is a config pablo accepts.
    let printed = sandbox.root().join("printed.toml");
    std::fs::write(&printed, &stdout).unwrap();
    let (code, out, err) =
        pablo(&sandbox, &["config", "validate", printed.to_str().unwrap()]).await;
    assert_eq!(code, Some(0), "{out}{err}");
}

#[tokio::test]
async fn an_existing_config_is_left_as_it_was_and_the_refusal_says_how_to_go_on() {
    let sandbox = setup("codex");
    sandbox.user_config("model = \"mine\"\n");
    let (code, stdout, stderr) = pablo(&sandbox, &["import-config", "--from", "codex"]).await;
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(stderr.trim_end().ends_with("(config_exists)"), "{stderr}");
    assert!(stderr.contains("--output FILE"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(user_config(&sandbox)).unwrap(),
        "model = \"mine\"\n"
    );
    // Written elsewhere, it can be used beside the person's own.
    let other = sandbox.root().join("codex.toml");
    let args = [
        "import-config",
        "--from",
        "codex",
        "--output",
        other.to_str().unwrap(),
    ];
    let (code, stdout, stderr) = pablo(&sandbox, &args).await;
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let (code, out, err) = pablo(&sandbox, &["config", "validate", other.to_str().unwrap()]).await;
    assert_eq!(code, Some(0), "{out}{err}");
}

#[tokio::test]
async fn a_missing_or_broken_setup_is_refused_with_its_code() {
    let sandbox = Sandbox::new();
    let (code, stdout, stderr) = pablo(&sandbox, &["import-config", "--from", "claude"]).await;
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stderr.trim_end().ends_with("(import_source_missing)"),
        "{stderr}"
    );
    assert!(stderr.contains(".claude/settings.json"), "{stderr}");
    let codex = sandbox.root().join("home/.codex");
    std::fs::create_dir_all(&codex).unwrap();
    std::fs::write(codex.join("config.toml"), "model = [\n").unwrap();
    let (code, stdout, stderr) = pablo(&sandbox, &["import-config", "--from", "codex"]).await;
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stderr.trim_end().ends_with("(import_source_invalid)"),
        "{stderr}"
    );
    assert!(
        stderr.contains(".codex/config.toml: cannot import"),
        "{stderr}"
    );
    assert!(!user_config(&sandbox).exists());
}
