use super::*;
use std::path::PathBuf;

use pablo_core::ToolMode;

#[test]
fn seed_shell_shape_parses() {
    let text = r#"
[options.shell]
enabled = true
timeout_seconds = 60
max_output_chars = 50000
enable_deny_patterns = true
custom_deny_patterns = []
custom_allow_patterns = []

[options.shell.commands]
default = "deny"
allow = [
  { id = "docs.git-status", executable = "/usr/bin/git", args = ["status"], match = "prefix" },
  { id = "docs.wc", executable = "/usr/bin/wc", args = [], match = "prefix" }
]
deny = [
  { id = "docs.no-force", executable = "/usr/bin/git", args = ["push", "--force"], match = "exact" }
]

[options.tools]
"fs.write" = "ask"
"#;
    let c = ConfigFile::parse(text, Path::new("c.toml")).unwrap();
    assert_eq!(c.options.shell.commands.allow.len(), 2);
    assert_eq!(
        c.options.shell.commands.deny[0].match_kind,
        MatchKind::Exact
    );
    assert_eq!(c.options.tools.get("fs.write"), Some(&ToolMode::Ask));
}

#[test]
fn unknown_key_names_file_line_and_key() {
    let text = "model = \"x\"\n\n[options.shell]\ntimeout_secs = 5\n";
    let err = ConfigFile::parse(text, Path::new("/tmp/p.toml")).unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with("/tmp/p.toml:4:"), "{msg}");
    assert!(msg.contains("timeout_secs"), "{msg}");
}

#[test]
fn bad_value_names_the_key() {
    let text = "[options.tools]\n\"fs.write\" = \"sometimes\"\n";
    let msg = ConfigFile::parse(text, Path::new("c.toml"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("c.toml:2"), "{msg}");
    assert!(msg.contains("sometimes"), "{msg}");
}

#[test]
fn bad_regex_is_refused_with_its_key() {
    let text = "[options.shell]\ncustom_deny_patterns = [\"(unclosed\"]\n";
    let msg = ConfigFile::parse(text, Path::new("c.toml"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("custom_deny_patterns"), "{msg}");
}

#[test]
fn fetch_domains_and_memory_parse_and_a_url_is_refused_as_a_domain() {
    let text = "[memory]\nenabled = true\n[options.fetch]\nallowed_domains = [\"docs.rs\"]\n[limits]\nmax_network_requests = 3\nmax_artifact_bytes = 10\n";
    let c = ConfigFile::parse(text, Path::new("c.toml")).unwrap();
    assert_eq!(c.memory.enabled, Some(true));
    assert_eq!(c.options.fetch.allowed_domains, vec!["docs.rs".to_string()]);
    assert_eq!(c.limits.max_network_requests, Some(3));
    let msg = ConfigFile::parse(
        "[options.fetch]\nallowed_domains = [\"https://docs.rs/\"]\n",
        Path::new("c.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(msg.contains("https://docs.rs/"), "{msg}");
    assert!(msg.contains("allowed_domains"), "{msg}");
}

#[test]
fn an_mcp_server_table_parses_with_every_key() {
    let text = r#"
[mcp_servers.everything]
command = "node"
args = ["server.js", "stdio"]
env = { LOG_LEVEL = "debug" }
env_vars = ["GITHUB_TOKEN"]
cwd = "tools"
enabled = true
required = false
startup_timeout_seconds = 10
tool_timeout_seconds = 60
enabled_tools = ["echo", "get-sum"]
disabled_tools = ["get-env"]
tools.echo = "auto"
tools.get-sum = "deny"

[mcp_servers.remote]
url = "http://127.0.0.1:3001/mcp"
bearer_token_env = "REMOTE_TOKEN"
headers = { X-Team = "core" }
"#;
    let c = ConfigFile::parse(text, Path::new("c.toml")).unwrap();
    let e = &c.mcp_servers["everything"];
    assert_eq!(e.args, ["server.js", "stdio"]);
    assert_eq!(e.tools.get("get-sum"), Some(&ToolMode::Deny));
    assert_eq!(e.tool_timeout(), std::time::Duration::from_secs(60));
    let r = &c.mcp_servers["remote"];
    assert_eq!(r.startup_timeout(), std::time::Duration::from_secs(30));
    assert_eq!(r.headers["X-Team"], "core");
}

#[test]
fn an_unknown_mcp_key_names_file_line_and_key() {
    let text = "[mcp_servers.fs]\ncommand = \"node\"\nstartup_timeout = 5\n";
    let msg = ConfigFile::parse(text, Path::new("/tmp/c.toml"))
        .unwrap_err()
        .to_string();
    assert!(msg.starts_with("/tmp/c.toml:3:"), "{msg}");
    assert!(msg.contains("startup_timeout"), "{msg}");
}

#[test]
fn an_mcp_server_with_both_command_and_url_is_refused() {
    let text = "[mcp_servers.x]\ncommand = \"node\"\nurl = \"http://127.0.0.1/\"\n";
    let msg = ConfigFile::parse(text, Path::new("c.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("mcp_servers.x: has both command and url"),
        "{msg}"
    );
    let text = "[mcp_servers.x]\nargs = [\"a\"]\n";
    let msg = ConfigFile::parse(text, Path::new("c.toml"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("needs a command"), "{msg}");
    let text = "[mcp_servers.x]\ncommand = \"node\"\nheaders = { A = \"b\" }\n";
    let msg = ConfigFile::parse(text, Path::new("c.toml"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("headers is for a url server"), "{msg}");
    let text = "[mcp_servers.\"a b\"]\ncommand = \"node\"\n";
    let msg = ConfigFile::parse(text, Path::new("c.toml"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("server name"), "{msg}");
}

#[test]
fn an_oauth_table_belongs_to_a_url_server_that_has_no_bearer_token() {
    let ok = "[mcp_servers.x]\nurl = \"https://mcp.example/mcp\"\n\
              oauth = { client_id = \"pablo-cli\", scopes = [\"read\", \"write\"] }\n";
    let c = ConfigFile::parse(ok, Path::new("c.toml")).unwrap();
    let o = c.mcp_servers["x"].oauth.clone().unwrap();
    assert_eq!(o.client_id.as_deref(), Some("pablo-cli"));
    assert_eq!(o.scopes, ["read", "write"]);
    for (text, says) in [
        (
            "[mcp_servers.x]\ncommand = \"node\"\noauth = {}\n",
            "oauth is for a url server",
        ),
        (
            "[mcp_servers.x]\nurl = \"https://a.example/\"\nbearer_token_env = \"T\"\noauth = {}\n",
            "has both oauth and bearer_token_env",
        ),
        (
            "[mcp_servers.x]\nurl = \"https://a.example/\"\noauth = { scopes = [\"a b\"] }\n",
            "a scope is one word",
        ),
        (
            "[mcp_servers.x]\nurl = \"https://a.example/\"\noauth = { client = \"c\" }\n",
            "client",
        ),
    ] {
        let msg = ConfigFile::parse(text, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains(says), "{msg}");
    }
}

#[test]
fn an_untrusted_project_layer_cannot_say_how_a_server_signs_in() {
    let text = "[mcp_servers.notes]\noauth = { client_id = \"theirs\" }\nenabled_tools = [\"a\"]\n";
    let (c, withheld) = ConfigFile::parse_untrusted(text, Path::new("p.toml")).unwrap();
    assert!(c.mcp_servers["notes"].oauth.is_none());
    assert_eq!(
        c.mcp_servers["notes"].enabled_tools.as_deref(),
        Some(&["a".to_string()][..])
    );
    assert!(
        withheld
            .iter()
            .any(|w| w.contains("mcp_servers.notes.oauth")),
        "{withheld:?}"
    );
}

fn layer(text: &str, name: &str) -> Option<(PathBuf, ConfigFile)> {
    Some((
        PathBuf::from(name),
        ConfigFile::parse(text, Path::new(name)).unwrap(),
    ))
}

#[test]
fn an_untrusted_project_layer_starts_no_mcp_server_but_may_switch_one_off() {
    let layers = Layers {
        user: layer(
            "[mcp_servers.a]\ncommand = \"a\"\n[mcp_servers.b]\ncommand = \"b\"\n",
            "user.toml",
        ),
        project: layer(
            "[mcp_servers.evil]\ncommand = \"curl\"\n[mcp_servers.b]\nenabled = false\n\
             [mcp_servers.a]\ndisabled_tools = [\"x\"]\nrequired = true\n",
            "project.toml",
        ),
        explicit: None,
        ..Default::default()
    };
    let (servers, warnings) = layers.mcp_servers(Trust::UNTRUSTED);
    let names: Vec<_> = servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a"]);
    assert_eq!(servers[0].config.disabled_tools, ["x"]);
    assert_eq!(
        servers[0].config.required, None,
        "untrusted cannot make it required"
    );
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].contains("MCP server evil not started"),
        "{warnings:?}"
    );
    let (servers, warnings) = layers.mcp_servers(Trust::decided(true));
    let names: Vec<_> = servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a", "evil"]);
    assert!(warnings.is_empty());
}

#[test]
fn a_plain_model_name_still_parses() {
    let c = ConfigFile::parse("model = \"gpt-4.1\"\n", Path::new("c.toml")).unwrap();
    assert_eq!(c.model.unwrap().table().name.as_deref(), Some("gpt-4.1"));
}

#[test]
fn the_model_table_parses_every_setting() {
    let text = "[model]\nname = \"claude-sonnet-4-5\"\ncontext_window = 16000\n\
                max_output_tokens = 4096\nreasoning = \"high\"\nwire_api = \"responses\"\n\
                [model.prices]\ninput = 3.0\ncache_read = 0.3\n";
    let m = ConfigFile::parse(text, Path::new("c.toml"))
        .unwrap()
        .model
        .unwrap()
        .table();
    assert_eq!(m.name.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(m.context_window, Some(16000));
    assert_eq!(m.max_output_tokens, Some(4096));
    assert_eq!(m.reasoning, Some(ReasoningLevel::High));
    assert_eq!(m.wire_api, Some(WireApi::Responses));
    assert_eq!(m.prices.input, Some(3.0));
    assert_eq!(m.prices.cache_read, Some(0.3));
    assert_eq!(m.prices.output, None);
}

#[test]
fn an_unknown_key_in_the_model_table_is_named_with_its_line() {
    let text = "[model]\nname = \"x\"\ncontext_windw = 5\n";
    let msg = ConfigFile::parse(text, Path::new("c.toml"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("context_windw"), "{msg}");
    assert!(msg.starts_with("c.toml:"), "{msg}");
}

#[test]
fn a_bad_reasoning_level_and_a_tiny_window_are_refused_by_key() {
    let msg = ConfigFile::parse("[model]\nreasoning = \"max\"\n", Path::new("c.toml"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("max"), "{msg}");
    let msg = ConfigFile::parse("[model]\ncontext_window = 10\n", Path::new("c.toml"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("model.context_window"), "{msg}");
    let msg = ConfigFile::parse("[model.prices]\ninput = -1.0\n", Path::new("c.toml"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("model.prices.input"), "{msg}");
}

#[test]
fn model_settings_merge_field_by_field_across_layers() {
    let user = ConfigFile::parse("model = \"gpt-5\"\n", Path::new("u.toml")).unwrap();
    let project =
        ConfigFile::parse("[model]\ncontext_window = 50000\n", Path::new("p.toml")).unwrap();
    let layers = Layers {
        user: Some((PathBuf::from("u.toml"), user)),
        project: Some((PathBuf::from("p.toml"), project)),
        explicit: None,
        ..Default::default()
    };
    let m = layers.model();
    assert_eq!(m.name.as_deref(), Some("gpt-5"));
    assert_eq!(m.context_window, Some(50000));
}

#[test]
fn every_problem_is_reported_with_its_line_and_key() {
    let text = "provider = \"foo\"\nmodel = 3\n\n[limits]\nmax_tool_calls = \"soon\"\n\n\
                [options.shell]\ntimeout_secs = 5\ncustom_deny_patterns = [\"ok\", \"(x\"]\n\n\
                [options.shell.commands]\nallow = [{ id = \"a\" }, { id = \"b\", executable = \"git\" }]\n";
    let err = ConfigFile::parse(text, Path::new("c.toml")).unwrap_err();
    let ConfigError::Invalid { problems, .. } = &err else {
        panic!("{err}");
    };
    let got: Vec<(usize, Option<&str>)> = problems
        .iter()
        .map(|p| (p.line, p.key.as_deref()))
        .collect();
    assert_eq!(
        got,
        vec![
            (1, Some("provider")),
            (2, Some("model")),
            (5, Some("limits.max_tool_calls")),
            (8, Some("options.shell.timeout_secs")),
            (9, Some("options.shell.custom_deny_patterns[1]")),
            (12, Some("options.shell.commands.allow[0]")),
        ],
        "{err}"
    );
    let shown = err.to_string();
    assert_eq!(shown.lines().count(), 6, "{shown}");
    assert!(
        shown.contains("c.toml:5: limits.max_tool_calls: invalid type: string \"soon\""),
        "{shown}"
    );
    assert!(
        shown.contains("c.toml:1: provider: unknown provider \"foo\""),
        "{shown}"
    );
    assert!(shown.contains("missing field `executable`"), "{shown}");
}

#[test]
fn a_syntax_error_is_reported_with_its_line() {
    let err = ConfigFile::parse("model = \"x\"\nprovider = \n", Path::new("c.toml")).unwrap_err();
    assert!(err.to_string().starts_with("c.toml:2:"), "{err}");
}

#[test]
fn unknown_provider_is_refused() {
    let msg = ConfigFile::parse("provider = \"gemini\"\n", Path::new("c.toml"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("gemini"), "{msg}");
}
