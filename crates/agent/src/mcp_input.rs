//! What the person types that names an MCP server: `/SERVER:PROMPT ARGS…` runs the server's prompt
//! and sends its text as the turn; `@SERVER:URI` attaches the server's resource to the turn. Both
//! are resolved here, in the engine, so every front-end (the TUI, an editor over ACP, `pablo
//! run`) gets them the same way; the front-ends only offer completions.
//!
//! Only names of configured servers count: `@src/main.rs` and `/help` are left alone.

use pablo_core::ToolFailure;
use pablo_tools::mcp::McpHub;

/// The text of the turn once prompts are run and resources attached; unchanged when it names no
/// MCP server.
pub(crate) async fn expand(hub: &McpHub, text: &str) -> Result<String, ToolFailure> {
    if hub.is_empty() {
        return Ok(text.to_string());
    }
    let mut text = text.to_string();
    if let Some((server, prompt, args)) = prompt_command(hub, &text) {
        text = hub.prompt_text(&server, &prompt, &args).await?;
    }
    let mut attached = Vec::new();
    for (server, uri) in resource_mentions(hub, &text) {
        if attached.iter().any(|(s, u, _)| *s == server && *u == uri) {
            continue;
        }
        let body = hub.resource_text(&server, &uri).await?;
        attached.push((server, uri, body));
    }
    for (server, uri, body) in attached {
        text.push_str(&format!(
            "\n\n<resource server=\"{server}\" uri=\"{uri}\">\n{body}\n</resource>"
        ));
    }
    Ok(text)
}

/// `/SERVER:PROMPT a b key=value` → (server, prompt, arguments), when SERVER is configured.
fn prompt_command(hub: &McpHub, text: &str) -> Option<(String, String, Vec<String>)> {
    let rest = text.trim_start().strip_prefix('/')?;
    let mut words = rest.split_whitespace();
    let head = words.next()?;
    let (server, prompt) = head.split_once(':')?;
    hub.server(server)?;
    Some((
        server.to_string(),
        prompt.to_string(),
        words.map(str::to_string).collect(),
    ))
}

/// Every `@SERVER:URI` word whose SERVER is configured, in order.
fn resource_mentions(hub: &McpHub, text: &str) -> Vec<(String, String)> {
    text.split_whitespace()
        .filter_map(|w| w.strip_prefix('@'))
        .filter_map(|w| {
            let (server, uri) = w.split_once(':')?;
            let uri = uri.trim_end_matches([',', '.', ';', ')', '?', '!']);
            (hub.server(server).is_some() && !uri.is_empty())
                .then(|| (server.to_string(), uri.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pablo_tools::mcp::ServerSpec;
    use pablo_tools::mcp::client::Endpoint;
    use std::time::Duration;

    fn hub() -> McpHub {
        McpHub::new(
            "/w".into(),
            vec![ServerSpec {
                name: "docs".into(),
                endpoint: Endpoint::Http {
                    url: "http://127.0.0.1:1/mcp".into(),
                    bearer_token: None,
                    headers: Default::default(),
                    oauth: None,
                },
                required: false,
                startup_timeout: Duration::from_secs(1),
                tool_timeout: Duration::from_secs(1),
                enabled_tools: None,
                disabled_tools: Vec::new(),
                refused: None,
            }],
        )
    }

    #[test]
    fn a_prompt_command_names_a_configured_server() {
        let h = hub();
        assert_eq!(
            prompt_command(&h, "/docs:summarize src city=Paris"),
            Some((
                "docs".into(),
                "summarize".into(),
                vec!["src".into(), "city=Paris".into()]
            ))
        );
        assert_eq!(prompt_command(&h, "/help"), None);
        assert_eq!(prompt_command(&h, "/other:x"), None);
    }

    #[test]
    fn resource_mentions_skip_paths_and_unknown_servers() {
        let h = hub();
        assert_eq!(
            resource_mentions(&h, "read @docs:file:///a.md, and @src/main.rs and @x:y"),
            [("docs".to_string(), "file:///a.md".to_string())]
        );
    }
}
