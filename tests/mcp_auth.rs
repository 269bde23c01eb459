//! Integration tests: signing in to an HTTP MCP server (OAuth 2.1, docs/mcp.md *Signing in*).
//!
//! The real binary against an MCP server that asks for sign-in and the authorization server it
//! names, both scripted on 127.0.0.1 (`support::oauth`); the test plays the browser, fetching the
//! address `pablo mcp login` prints and following the redirect back to pablo.

use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use crate::support::bin::{Sandbox, files_below, json_lines};
use crate::support::http::ScriptedServer;
use crate::support::mcp::toml_str;
use crate::support::oauth::{OAuthServers, access_token, browser_get, param, refresh_token};
use crate::support::run::{Run, call, output, run_within, say};

fn configure(sandbox: &Sandbox, servers: &OAuthServers) {
    sandbox.user_config(&format!(
        "[mcp_servers.notes]\nurl = {}\ntools.whoami = \"auto\"\n",
        toml_str(&servers.url())
    ));
}

fn token_file(sandbox: &Sandbox) -> std::path::PathBuf {
    sandbox.data_dir().join("mcp-auth").join("notes.json")
}

/// `pablo mcp list --json`: its exit code and the one server's line.
async fn listed(sandbox: &Sandbox) -> (Option<i32>, Value) {
    let mut cmd = sandbox.command();
    cmd.args(["mcp", "list", "--json"]);
    let (code, stdout, stderr) = output(cmd).await;
    let lines = json_lines(stdout.as_bytes());
    assert_eq!(lines.len(), 1, "stdout: {stdout}\nstderr: {stderr}");
    (code, lines[0].clone())
}

/// `pablo mcp login notes` with the test as the browser: it opens the printed address, first
/// comes back to pablo with a state pablo did not send (refused, and pablo keeps waiting), then
/// with the authorization server's redirect. The command's stdout once it has exited.
async fn sign_in(sandbox: &Sandbox) -> String {
    let mut cmd = sandbox.command();
    cmd.args(["mcp", "login", "notes", "--no-browser"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("pablo starts");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = String::new();
    // The address comes on a line of its own (a safety-net timeout, not a timing assertion).
    let address = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = lines.next_line().await {
            printed.push_str(&line);
            printed.push('\n');
            if let Some(a) = line
                .trim()
                .strip_prefix("http")
                .filter(|_| line.contains("state="))
            {
                return format!("http{a}");
            }
        }
        panic!("pablo printed no address to open:\n{printed}");
    })
    .await
    .expect("the address is printed");
    let (status, location, body) = browser_get(&address).await;
    assert_eq!(status, 302, "{body}");
    let back = location.expect("the authorization server redirects back");
    assert!(back.starts_with("http://127.0.0.1:"), "{back}");
    let forged = back.replace("state=", "state=not-");
    let (status, _, body) = browser_get(&forged).await;
    assert_eq!(
        status, 400,
        "a redirect with another state is refused: {body}"
    );
    assert!(body.contains("not the sign-in pablo started"), "{body}");
    let (status, _, body) = browser_get(&back).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Signed in"), "{body}");
    let rest = tokio::time::timeout(Duration::from_secs(30), async {
        let mut rest = String::new();
        while let Ok(Some(line)) = lines.next_line().await {
            rest.push_str(&line);
            rest.push('\n');
        }
        rest
    })
    .await
    .expect("pablo finishes");
    let status = child.wait().await.unwrap();
    let mut stderr = String::new();
    use tokio::io::AsyncReadExt;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .await
        .unwrap();
    assert!(status.success(), "{printed}{rest}\nstderr: {stderr}");
    printed + &rest
}

/// One `pablo run --json` whose model calls `mcp__notes__whoami` once.
async fn call_whoami(sandbox: &Sandbox) -> (Run, ScriptedServer) {
    let model = ScriptedServer::start().await;
    model.push(call("c1", "mcp__notes__whoami", &json!({})));
    model.push(say("Done."));
    let r = run_within(
        sandbox.run_json(&model.base_url(), "who am I on notes?"),
        Duration::from_secs(60),
    )
    .await;
    (r, model)
}

#[tokio::test]
async fn a_server_asking_for_sign_in_says_so_and_after_login_its_tool_is_called_with_the_token() {
    let servers = OAuthServers::start().await;
    let sandbox = Sandbox::new();
    configure(&sandbox, &servers);

    // Before: the server is failed with the code and the command that signs in.
    let (code, server) = listed(&sandbox).await;
    assert_eq!(code, Some(1));
    assert_eq!(server["state"], "failed", "{server}");
    assert_eq!(server["code"], "mcp_needs_login", "{server}");
    assert!(
        server["reason"]
            .as_str()
            .unwrap()
            .contains("run `pablo mcp login notes`"),
        "{server}"
    );

    let said = sign_in(&sandbox).await;
    assert!(said.contains("signed in to notes"), "{said}");

    // The flow was the specification's: pablo registered itself, sent an S256 challenge and
    // the resource, and proved the challenge with its verifier when it took the code.
    let registered = servers.auth_requests("/register");
    assert_eq!(registered.len(), 1);
    let redirects = registered[0].json()["redirect_uris"].clone();
    assert!(
        redirects[0]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:"),
        "{redirects}"
    );
    let tokens = servers.token_requests();
    assert_eq!(tokens.len(), 1);
    assert_eq!(
        param(&tokens[0], "grant_type").as_deref(),
        Some("authorization_code")
    );
    assert_eq!(param(&tokens[0], "client_id").as_deref(), Some("client-1"));
    assert!(param(&tokens[0], "code_verifier").is_some());
    assert_eq!(
        param(&tokens[0], "resource").as_deref(),
        Some(servers.url().as_str())
    );

    // The tokens are kept for this user only.
    let file = token_file(&sandbox);
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");

    let (r, model) = call_whoami(&sandbox).await;
    assert_eq!(r.code, Some(0), "{}\n{:?}", r.stderr, r.lines);
    let results = r.results();
    assert_eq!(results.len(), 1, "{:?}", r.lines);
    assert_eq!(results[0]["ok"], true, "{}", results[0]);
    assert!(
        results[0]["data"]["text"]
            .as_str()
            .unwrap()
            .contains("signed in to notes")
    );
    assert!(
        servers
            .bearers()
            .iter()
            .any(|b| b.as_deref() == Some(access_token(1).as_str())),
        "the server saw the token: {:?}",
        servers.bearers()
    );
    drop(model);

    // No token is written anywhere but its file: not in the journal, a log or the config.
    for f in files_below(sandbox.root()) {
        if f == file {
            continue;
        }
        let bytes = std::fs::read(&f).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        for secret in [access_token(1), refresh_token(1)] {
            assert!(!text.contains(&secret), "{} holds a token", f.display());
        }
    }
}

#[tokio::test]
async fn a_token_the_server_refuses_is_refreshed_and_the_call_goes_on_with_the_new_one() {
    let servers = OAuthServers::start().await;
    let sandbox = Sandbox::new();
    configure(&sandbox, &servers);
    sign_in(&sandbox).await;
    servers.revoke(&access_token(1));

    let (r, _model) = call_whoami(&sandbox).await;
    assert_eq!(r.code, Some(0), "{}\n{:?}", r.stderr, r.lines);
    assert_eq!(r.results()[0]["ok"], true, "{}", r.results()[0]);
    let tokens = servers.token_requests();
    assert_eq!(tokens.len(), 2, "a code, then a refresh");
    assert_eq!(
        param(&tokens[1], "grant_type").as_deref(),
        Some("refresh_token")
    );
    assert_eq!(
        param(&tokens[1], "refresh_token").as_deref(),
        Some(refresh_token(1).as_str())
    );
    assert_eq!(
        param(&tokens[1], "resource").as_deref(),
        Some(servers.url().as_str())
    );
    let bearers = servers.bearers();
    assert!(
        bearers
            .iter()
            .any(|b| b.as_deref() == Some(access_token(2).as_str())),
        "{bearers:?}"
    );
    // The new tokens are the ones kept.
    let kept = std::fs::read_to_string(token_file(&sandbox)).unwrap();
    assert!(kept.contains(&access_token(2)) && !kept.contains(&access_token(1)));
}

#[tokio::test]
async fn an_expired_token_is_refreshed_before_it_is_sent() {
    let servers = OAuthServers::start().await;
    let sandbox = Sandbox::new();
    configure(&sandbox, &servers);
    sign_in(&sandbox).await;
    // The token was received long ago: its hour is over.
    let file = token_file(&sandbox);
    let mut kept: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    kept["credentials"]["token_received_at"] = json!(1_000_000);
    std::fs::write(&file, kept.to_string()).unwrap();
    let before = servers.bearers().len();

    let (r, _model) = call_whoami(&sandbox).await;
    assert_eq!(r.code, Some(0), "{}\n{:?}", r.stderr, r.lines);
    assert_eq!(r.results()[0]["ok"], true, "{}", r.results()[0]);
    let tokens = servers.token_requests();
    assert_eq!(
        param(tokens.last().unwrap(), "grant_type").as_deref(),
        Some("refresh_token")
    );
    let sent: Vec<_> = servers.bearers().split_off(before);
    assert!(
        sent.iter()
            .any(|b| b.as_deref() == Some(access_token(2).as_str())),
        "the new token was sent: {sent:?}"
    );
    assert!(
        !sent
            .iter()
            .any(|b| b.as_deref() == Some(access_token(1).as_str())),
        "the expired one never was: {sent:?}"
    );
}

#[tokio::test]
async fn a_refused_refresh_asks_for_sign_in_again_and_logout_forgets_the_tokens() {
    let servers = OAuthServers::start().await;
    let sandbox = Sandbox::new();
    configure(&sandbox, &servers);
    sign_in(&sandbox).await;
    servers.revoke(&access_token(1));
    servers.grants.lock().unwrap().refuse_refresh = true;

    let (code, server) = listed(&sandbox).await;
    assert_eq!(code, Some(1));
    assert_eq!(server["code"], "mcp_needs_login", "{server}");
    let tokens = servers.token_requests();
    assert_eq!(
        param(tokens.last().unwrap(), "grant_type").as_deref(),
        Some("refresh_token")
    );
    // The refused tokens are forgotten.
    assert!(!token_file(&sandbox).exists());

    // Signing in again works, and logout forgets those tokens.
    servers.grants.lock().unwrap().refuse_refresh = false;
    sign_in(&sandbox).await;
    assert!(token_file(&sandbox).exists());
    let (code, server) = listed(&sandbox).await;
    assert_eq!((code, &server["state"]), (Some(0), &json!("ready")));
    let mut cmd = sandbox.command();
    cmd.args(["mcp", "logout", "notes"]);
    let (code, stdout, _) = output(cmd).await;
    assert_eq!(code, Some(0));
    assert!(stdout.contains("signed out of notes"), "{stdout}");
    assert!(!token_file(&sandbox).exists());
    let mut cmd = sandbox.command();
    cmd.args(["mcp", "logout", "notes"]);
    let (_, stdout, _) = output(cmd).await;
    assert!(stdout.contains("no tokens were kept for notes"), "{stdout}");
}

#[tokio::test]
async fn login_is_refused_for_a_stdio_server_and_one_given_a_bearer_token() {
    let sandbox = Sandbox::new();
    sandbox.user_config(
        "[mcp_servers.local]\ncommand = \"true\"\n\n[mcp_servers.keyed]\n\
         url = \"http://127.0.0.1:9/mcp\"\nbearer_token_env = \"KEYED_TOKEN\"\n",
    );
    for (name, words, code_word) in [
        ("local", "is a stdio server", "(mcp_login_unsupported)"),
        (
            "keyed",
            "is given its token by its table",
            "(mcp_login_unsupported)",
        ),
        ("nobody", "no MCP server named", "(mcp_unknown_server)"),
    ] {
        let mut cmd = sandbox.command();
        cmd.args(["mcp", "login", name, "--no-browser"]);
        let (code, _, stderr) = output(cmd).await;
        assert_ne!(code, Some(0));
        assert!(stderr.contains(words), "{stderr}");
        assert!(stderr.contains(code_word), "{stderr}");
        assert_eq!(stderr.matches(words).count(), 1, "said once: {stderr}");
    }
    // A refused sign-in leaves nothing behind: no token directory, no file.
    assert!(!sandbox.data_dir().join("mcp-auth").exists());
}

#[tokio::test]
async fn a_session_whose_token_is_revoked_and_cannot_be_refreshed_says_the_server_needs_sign_in() {
    let servers = OAuthServers::start().await;
    let sandbox = Sandbox::new();
    configure(&sandbox, &servers);
    sign_in(&sandbox).await;
    let model = ScriptedServer::start().await;
    // The first call works; when the model asks for the second one, the server has revoked the
    // token and the authorization server refuses to refresh it.
    let grants = servers.grants.clone();
    let first = access_token(1);
    model.respond_with(move |_, index| match index {
        0 => call("c1", "mcp__notes__whoami", &json!({})),
        1 => {
            let mut g = grants.lock().unwrap();
            g.valid.retain(|t| *t != first);
            g.refuse_refresh = true;
            call("c2", "mcp__notes__whoami", &json!({}))
        }
        _ => say("Done."),
    });
    let r = run_within(
        sandbox.run_json(&model.base_url(), "who am I, twice?"),
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(r.code, Some(0), "{}\n{:?}", r.stderr, r.lines);
    let results = r.results();
    assert_eq!(results.len(), 2, "{:?}", r.lines);
    assert_eq!(results[0]["ok"], true, "{}", results[0]);
    assert_eq!(results[1]["ok"], false, "{}", results[1]);
    assert_eq!(
        results[1]["error"]["code"], "mcp_needs_login",
        "{}",
        results[1]
    );
    assert!(
        results[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("run `pablo mcp login notes`"),
        "{}",
        results[1]
    );
    assert!(!token_file(&sandbox).exists());
}

#[tokio::test]
async fn mcp_list_names_the_command_that_signs_in() {
    let servers = OAuthServers::start().await;
    let sandbox = Sandbox::new();
    configure(&sandbox, &servers);
    let mut cmd = sandbox.command();
    cmd.args(["mcp", "list"]);
    let (code, stdout, _) = output(cmd).await;
    assert_eq!(code, Some(1));
    assert!(
        stdout.contains("notes  needs sign-in  http  run `pablo mcp login notes`"),
        "{stdout}"
    );
}
