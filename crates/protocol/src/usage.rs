//! What one model call used, as the provider counted it: the figures the session's cost and the
//! context window's estimate come from.

use serde::{Deserialize, Serialize};

/// Token counts reported by the provider.
///
/// `input_tokens` counts every input token of the call, whether the provider read it from its
/// prompt cache (`cached_input_tokens`), wrote it to the cache (`cache_write_input_tokens`,
/// Anthropic only) or neither.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Input tokens written to the provider's prompt cache by this call.
    #[serde(default)]
    pub cache_write_input_tokens: u64,
    /// Searches of the web the provider ran for this call (priced per search).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub web_searches: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.cache_write_input_tokens += other.cache_write_input_tokens;
        self.web_searches += other.web_searches;
    }

    /// Input tokens neither read from nor written to the cache.
    pub fn uncached_input_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_sub(self.cached_input_tokens)
            .saturating_sub(self.cache_write_input_tokens)
    }

    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}
