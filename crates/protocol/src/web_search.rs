//! A web search the provider ran on its own servers (Anthropic's `web_search` server tool,
//! OpenAI Responses' `web_search` tool), as front-ends show it and the conversation keeps it.
//!
//! pablo runs nothing here: the model asks its provider to search, the provider searches and
//! reads the results, and the stream reports what it did. The search is kept whole because
//! Anthropic wants the search blocks back, unaltered, with the assistant message that made them
//! (the encrypted content of each result carries what the model read), and a resumed session
//! must send the same conversation.

use serde::{Deserialize, Serialize};

/// Which provider ran a search: its blocks go back only to that provider's wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchProvider {
    Anthropic,
    OpenAi,
}

/// One search of the web at the provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebSearch {
    /// The provider's id of the search (`srvtoolu_…`, `ws_…`).
    pub id: String,
    pub provider: SearchProvider,
    /// What was searched for (empty when the provider did not say).
    pub query: String,
    /// The pages found, in the provider's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<WebSearchResult>,
    /// The provider's error code when the search failed (`max_uses_exceeded`,
    /// `too_many_requests`, `unavailable`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The provider's status of the search (`completed`, `failed`; OpenAI only), sent back as
    /// it came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// One page a search found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebSearchResult {
    pub url: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
    /// How old the page is, as the provider put it (`2 days ago`, a date).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_age: Option<String>,
    /// What the model read of the page, encrypted by the provider: opaque to pablo, sent back
    /// with the conversation (Anthropic).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub encrypted_content: String,
}

impl WebSearch {
    /// A line for the person: the query, or the error.
    pub fn summary(&self) -> String {
        let query = if self.query.is_empty() {
            "(no query given)".to_string()
        } else {
            format!("\"{}\"", self.query)
        };
        match &self.error {
            Some(code) => format!("{query}: failed ({code})"),
            None => {
                let n = self.results.len();
                let s = if n == 1 { "" } else { "s" };
                format!("{query}: {n} result{s}")
            }
        }
    }
}
