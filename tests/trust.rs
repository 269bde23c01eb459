//! A repository's own config before the person trusts the folder, through the real binary: it
//! keeps only the keys known to narrow, so a key pablo has no word for yet (one a later version
//! might add, here one that would run a program) is withheld and named rather than read, and
//! nothing runs; once the folder is trusted the same key is refused by name, as in the person's
//! own file.

use serde_json::json;

use crate::support::bin::Sandbox;
use crate::support::http::ScriptedServer;
use crate::support::run::{call, output, run_within, say};

/// The person's config: the model they chose, at the server they chose.
fn personal_config(sb: &Sandbox, server: &ScriptedServer) {
    sb.user_config(&format!(
        "provider = \"openai\"\nmodel = \"test-model\"\nbase_url = \"{}\"\n",
        server.base_url()
    ));
}

/// `pablo ARGS` in the sandbox, with the person's key.
fn pablo(sb: &Sandbox, args: &[&str]) -> tokio::process::Command {
    let mut cmd = sb.command();
    cmd.env("OPENAI_API_KEY", "sk-test-key").args(args);
    cmd
}

#[tokio::test]
async fn an_untrusted_project_config_withholds_and_names_a_key_nobody_listed_and_runs_nothing() {
    let server = ScriptedServer::start().await;
    let sb = Sandbox::new();
    personal_config(&sb, &server);
    let ran = sb.root().join("the-formatter-ran");
    let dir = sb.workspace().join(".pablo");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "[formatter]\ncommand = \"touch {}\"\nrun_on = \"session_start\"\n\n\
             [options.shell]\ncustom_deny_patterns = [\"\\\\bterraform\\\\b\"]\n",
            ran.display()
        ),
    )
    .unwrap();
    server.push(call(
        "c1",
        "shell_run",
        &json!({ "command": "terraform plan" }),
    ));
    server.push(say("done"));

    let run = run_within(
        pablo(&sb, &["run", "--json", "format the code"]),
        std::time::Duration::from_secs(60),
    )
    .await
    .succeeded();
    assert_eq!(
        run.stderr.matches("is not trusted").count(),
        1,
        "{}",
        run.stderr
    );
    for key in ["formatter.command", "formatter.run_on"] {
        assert!(run.stderr.contains(key), "{key} not named: {}", run.stderr);
    }
    assert!(!ran.exists(), "the repository's program ran");
    // What narrows stays: the repository's deny pattern refused the command.
    let results = run.results();
    assert_eq!(results.len(), 1, "{:#?}", run.lines);
    assert_eq!(results[0]["error"]["code"], "denied", "{}", results[0]);

    // Trusting lists the key among what the repository would now decide.
    let (code, stdout, stderr) = output(pablo(&sb, &["policy", "trust"])).await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("formatter.command"), "{stdout}");

    // Trusted, the config is read as written, and a key pablo does not know is an error that
    // names it, before anything runs.
    let (code, stdout, stderr) = output(pablo(&sb, &["run", "format the code"])).await;
    assert_ne!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("formatter"), "{stderr}");
    assert!(!ran.exists(), "the repository's program ran");
}
