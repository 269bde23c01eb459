//! The provider's own web search, on the wire: the tool a request offers when
//! `[options.web_search]` turns it on, and the searches of earlier messages as each provider
//! wants them back.
//!
//! Anthropic offers `web_search_20250305` as a server tool; its stream reports a search as a
//! `server_tool_use` block (the query) and a `web_search_tool_result` block (the pages, each with
//! encrypted content, or an error), and counts searches in `usage.server_tool_use`. Those blocks
//! must go back in the assistant message that made them. OpenAI Responses offers `web_search`;
//! its stream reports a `web_search_call` output item (status, and an action with the query and
//! the sources when asked for with `include`); the items go back as input items. Chat
//! Completions has no server-side search: the launch says so when it is configured there.
//!
//! A request that offers no tools (a compaction summary, `--max-tool-calls 0`) offers no search
//! either.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{SearchProvider, WebSearch, WebSearchResult};

/// The search a client offers, from `[options.web_search]` with `enabled = true`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebSearchTool {
    /// The most searches one model call may run (Anthropic only).
    pub max_uses: Option<u32>,
    pub allowed_domains: Vec<String>,
    /// Anthropic only.
    pub blocked_domains: Vec<String>,
}

/// The name both providers give the search.
pub const TOOL_NAME: &str = "web_search";

/// Anthropic's server tool definition.
pub fn anthropic_tool(tool: &WebSearchTool) -> Value {
    let mut t = json!({"type": "web_search_20250305", "name": TOOL_NAME});
    if let Some(n) = tool.max_uses {
        t["max_uses"] = json!(n);
    }
    if !tool.allowed_domains.is_empty() {
        t["allowed_domains"] = json!(tool.allowed_domains);
    }
    if !tool.blocked_domains.is_empty() {
        t["blocked_domains"] = json!(tool.blocked_domains);
    }
    t
}

/// The blocks of Anthropic's searches, in order, for the assistant message that ran them: each
/// `server_tool_use` followed by its `web_search_tool_result`. Searches another provider ran are
/// not sent.
pub fn anthropic_blocks(searches: &[WebSearch]) -> Vec<Value> {
    let mut blocks = Vec::new();
    for s in searches
        .iter()
        .filter(|s| s.provider == SearchProvider::Anthropic)
    {
        blocks.push(
            json!({"type": "server_tool_use", "id": s.id, "name": TOOL_NAME,
            "input": {"query": s.query}}),
        );
        let content = match &s.error {
            Some(code) => json!({"type": "web_search_tool_result_error", "error_code": code}),
            None => Value::Array(
                s.results
                    .iter()
                    .map(|r| {
                        let mut item = json!({"type": "web_search_result", "url": r.url,
                            "title": r.title, "encrypted_content": r.encrypted_content});
                        if let Some(age) = &r.page_age {
                            item["page_age"] = json!(age);
                        }
                        item
                    })
                    .collect(),
            ),
        };
        blocks.push(
            json!({"type": "web_search_tool_result", "tool_use_id": s.id,
            "content": content}),
        );
    }
    blocks
}

/// The Responses tool definition (`max_uses` and `blocked_domains` have no equivalent there;
/// the launch says so).
pub fn responses_tool(tool: &WebSearchTool) -> Value {
    let mut t = json!({"type": TOOL_NAME});
    if !tool.allowed_domains.is_empty() {
        t["filters"] = json!({"allowed_domains": tool.allowed_domains});
    }
    t
}

/// What a Responses request adds to `include` so that a search reports the pages it found.
pub const RESPONSES_SOURCES: &str = "web_search_call.action.sources";

/// The `web_search_call` input items of OpenAI's searches, to go back before the message they
/// led to.
pub fn responses_items(searches: &[WebSearch]) -> Vec<Value> {
    // Only searches go back: the wire takes an action, and pablo keeps a search's query, not an
    // opened page's action.
    searches
        .iter()
        .filter(|s| s.provider == SearchProvider::OpenAi && !s.query.is_empty())
        .map(|s| {
            json!({"type": "web_search_call", "id": s.id,
                "status": s.status.as_deref().unwrap_or("completed"),
                "action": {"type": "search", "query": s.query}})
        })
        .collect()
}

/// A Responses `web_search_call` output item.
#[derive(Debug, Deserialize)]
struct ResponsesCall {
    #[serde(default)]
    id: String,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    action: Option<ResponsesAction>,
}

/// What a `web_search_call` did: a search (`query`, and `sources` when included), or opening or
/// searching a page (`url`).
#[derive(Debug, Deserialize)]
struct ResponsesAction {
    /// `search`, `open_page`, `find`.
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    query: String,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    sources: Vec<ResponsesSource>,
}

#[derive(Debug, Deserialize)]
struct ResponsesSource {
    #[serde(default)]
    url: String,
    #[serde(default)]
    title: String,
}

/// The search a `web_search_call` item reports, once done, and whether it is billed (OpenAI
/// charges for `search` actions, not for opening or searching a page). A page the model opened
/// is shown as a result of a search with no query.
pub fn responses_search(item: &Value) -> Option<(WebSearch, bool)> {
    let call: ResponsesCall = serde_json::from_value(item.clone()).ok()?;
    let action = call.action;
    let billed = action.as_ref().is_none_or(|a| a.kind == "search");
    let (query, mut results) = match action {
        Some(a) => {
            let results: Vec<WebSearchResult> = a
                .sources
                .into_iter()
                .filter(|s| !s.url.is_empty())
                .map(|s| WebSearchResult {
                    url: s.url,
                    title: s.title,
                    page_age: None,
                    encrypted_content: String::new(),
                })
                .collect();
            let opened = a.url.map(|url| WebSearchResult {
                url,
                title: String::new(),
                page_age: None,
                encrypted_content: String::new(),
            });
            (a.query, results.into_iter().chain(opened).collect())
        }
        None => (String::new(), Vec::new()),
    };
    results.dedup_by(|a, b| a.url == b.url);
    let failed = call.status.as_deref() == Some("failed");
    let search = WebSearch {
        id: call.id,
        provider: SearchProvider::OpenAi,
        query,
        results,
        error: failed.then(|| "failed".to_string()),
        status: call.status,
    };
    Some((search, billed))
}

/// The content of Anthropic's `web_search_tool_result` block: the pages, or an error.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum AnthropicResultContent {
    Results(Vec<AnthropicResult>),
    Error(AnthropicResultError),
}

#[derive(Debug, Deserialize)]
pub struct AnthropicResult {
    #[serde(default)]
    url: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    page_age: Option<String>,
    #[serde(default)]
    encrypted_content: String,
}

#[derive(Debug, Deserialize)]
pub struct AnthropicResultError {
    #[serde(default)]
    error_code: String,
}

/// The query of a `server_tool_use` input.
#[derive(Debug, Deserialize)]
struct AnthropicQuery {
    #[serde(default)]
    query: String,
}

/// Anthropic's searches as they stream: the `server_tool_use` blocks whose input is still
/// arriving (by block index), then their queries until the result block names them.
#[derive(Debug, Default)]
pub struct AnthropicSearches {
    open: HashMap<u32, (String, String)>,
    queries: HashMap<String, String>,
}

impl AnthropicSearches {
    /// A `server_tool_use` block begins (its input may come whole here or in deltas).
    pub fn begin(&mut self, index: u32, id: String, input: Option<&Value>) {
        let json = input
            .filter(|v| v.as_object().is_some_and(|o| !o.is_empty()))
            .map(Value::to_string)
            .unwrap_or_default();
        self.open.insert(index, (id, json));
    }

    /// A piece of the input JSON of block `index` (ignored when the block is not a search).
    pub fn input(&mut self, index: u32, partial: &str) {
        if let Some((_, json)) = self.open.get_mut(&index) {
            json.push_str(partial);
        }
    }

    /// Block `index` stopped: a search's query is whole.
    pub fn stop(&mut self, index: u32) {
        if let Some((id, json)) = self.open.remove(&index) {
            let query = serde_json::from_str::<AnthropicQuery>(&json)
                .map(|q| q.query)
                .unwrap_or_default();
            self.queries.insert(id, query);
        }
    }

    /// The result block of search `tool_use_id`: the search, whole.
    pub fn result(&mut self, tool_use_id: String, content: AnthropicResultContent) -> WebSearch {
        let query = self.queries.remove(&tool_use_id).unwrap_or_default();
        let (results, error) = match content {
            AnthropicResultContent::Results(r) => (
                r.into_iter()
                    .map(|r| WebSearchResult {
                        url: r.url,
                        title: r.title,
                        page_age: r.page_age,
                        encrypted_content: r.encrypted_content,
                    })
                    .collect(),
                None,
            ),
            AnthropicResultContent::Error(e) => (Vec::new(), Some(e.error_code)),
        };
        WebSearch {
            id: tool_use_id,
            provider: SearchProvider::Anthropic,
            query,
            results,
            error,
            status: None,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pablo_protocol::WebSearchResult;

    fn search(provider: SearchProvider, error: Option<&str>) -> WebSearch {
        WebSearch {
            id: "s1".into(),
            provider,
            query: "rust 2024".into(),
            results: vec![WebSearchResult {
                url: "https://blog.rust-lang.org/".into(),
                title: "Rust Blog".into(),
                page_age: Some("2 days ago".into()),
                encrypted_content: "enc".into(),
            }],
            error: error.map(str::to_string),
            status: None,
        }
    }

    #[test]
    fn anthropic_gets_back_its_query_and_its_results_or_its_error_in_pairs() {
        let blocks = anthropic_blocks(&[
            search(SearchProvider::Anthropic, None),
            search(SearchProvider::OpenAi, None),
        ]);
        assert_eq!(blocks.len(), 2, "OpenAI's search is not sent to Anthropic");
        assert_eq!(
            blocks[0],
            json!({"type": "server_tool_use", "id": "s1", "name": "web_search",
                "input": {"query": "rust 2024"}})
        );
        assert_eq!(blocks[1]["tool_use_id"], "s1");
        assert_eq!(blocks[1]["content"][0]["encrypted_content"], "enc");
        assert_eq!(blocks[1]["content"][0]["page_age"], "2 days ago");
        let failed =
            anthropic_blocks(&[search(SearchProvider::Anthropic, Some("max_uses_exceeded"))]);
        assert_eq!(
            failed[1]["content"],
            json!({"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"})
        );
    }

    #[test]
    fn the_tools_carry_only_what_each_provider_takes() {
        let tool = WebSearchTool {
            max_uses: Some(3),
            allowed_domains: vec!["docs.rs".into()],
            blocked_domains: Vec::new(),
        };
        assert_eq!(
            anthropic_tool(&tool),
            json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 3,
                "allowed_domains": ["docs.rs"]})
        );
        assert_eq!(
            responses_tool(&tool),
            json!({"type": "web_search", "filters": {"allowed_domains": ["docs.rs"]}})
        );
        assert_eq!(
            responses_items(&[search(SearchProvider::OpenAi, None)])[0],
            json!({"type": "web_search_call", "id": "s1", "status": "completed",
                "action": {"type": "search", "query": "rust 2024"}})
        );
    }
}
