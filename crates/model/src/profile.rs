//! What pablo knows about a model: its context window, its longest answer, whether it reasons,
//! and what it costs.
//!
//! The agent keeps every request under a share of the window and shows the session's cost, so it
//! needs these numbers before the first call. They come from a table of known models (matched by
//! the longest name prefix, so dated and tagged names such as `claude-sonnet-4-5-20250929` or
//! `qwen3:8b` find their family), overridden field by field by `[model]` in the config. A model
//! the table does not know gets a deliberately small window, so an unknown local model is
//! compacted too early rather than overrun; the provider's reported usage then corrects the
//! token estimate, not the window.
//!
//! Prices are US dollars per million tokens as published by the providers when this table was
//! written; they change, which is why `[model.prices]` overrides them.

use serde::Serialize;

pub use pablo_config::ReasoningLevel;
use pablo_config::{ModelTable, PriceTable};
use pablo_protocol::Usage;

/// The window assumed for a model the table does not know.
pub const UNKNOWN_CONTEXT_WINDOW: u64 = 32_000;
/// The answer bound assumed for a model the table does not know.
pub const UNKNOWN_MAX_OUTPUT: u32 = 8_192;

/// Prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    /// Input read from the prompt cache.
    pub cache_read: f64,
    /// Input written to the prompt cache (Anthropic charges a premium; OpenAI does not).
    pub cache_write: f64,
    /// One thousand searches of the web at the provider (not per million tokens: the providers
    /// price searches by the thousand).
    pub web_search: f64,
}

impl Prices {
    /// What `usage` costs at these prices.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        per(usage.uncached_input_tokens(), self.input)
            + per(usage.cached_input_tokens, self.cache_read)
            + per(usage.cache_write_input_tokens, self.cache_write)
            + per(usage.output_tokens, self.output)
            + usage.web_searches as f64 * self.web_search / 1_000.0
    }
}

/// A model's limits, reasoning and prices.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelProfile {
    /// Tokens one call may read and write together.
    pub context_window: u64,
    /// Longest answer of one call.
    pub max_output_tokens: u32,
    /// An OpenAI reasoning model (o-series, gpt-5): it takes `reasoning.effort` and returns
    /// reasoning items.
    pub reasoning_model: bool,
    /// `None` when unknown: no cost is shown.
    pub prices: Option<Prices>,
    /// The reasoning asked for (`--reasoning`, `[model] reasoning`); `None` leaves the provider's
    /// default.
    pub reasoning: Option<ReasoningLevel>,
    /// Whether the window came from the table or the config rather than the unknown-model
    /// default.
    pub known: bool,
    /// Whether the model takes images in a user message ([`takes_images`], or `[model] images`).
    pub images: bool,
}

impl Default for ModelProfile {
    fn default() -> Self {
        Self {
            context_window: UNKNOWN_CONTEXT_WINDOW,
            max_output_tokens: UNKNOWN_MAX_OUTPUT,
            reasoning_model: false,
            prices: None,
            reasoning: None,
            known: false,
            images: false,
        }
    }
}

/// One row of the table.
struct Known {
    prefix: &'static str,
    window: u64,
    max_output: u32,
    reasoning_model: bool,
    /// input, output, cache read, cache write
    prices: Option<(f64, f64, f64, f64)>,
}

const fn row(
    prefix: &'static str,
    window: u64,
    max_output: u32,
    reasoning_model: bool,
    prices: Option<(f64, f64, f64, f64)>,
) -> Known {
    Known {
        prefix,
        window,
        max_output,
        reasoning_model,
        prices,
    }
}

/// Known models. Names are matched after [`normalize`]; the longest matching prefix wins.
const KNOWN: &[Known] = &[
    // Anthropic (cache writes of 5-minute entries cost 1.25x input, reads 0.1x).
    row(
        "claude-opus-4-5",
        200_000,
        64_000,
        false,
        Some((5.0, 25.0, 0.5, 6.25)),
    ),
    row(
        "claude-opus-4",
        200_000,
        32_000,
        false,
        Some((15.0, 75.0, 1.5, 18.75)),
    ),
    row(
        "claude-sonnet-4",
        200_000,
        64_000,
        false,
        Some((3.0, 15.0, 0.3, 3.75)),
    ),
    row(
        "claude-haiku-4-5",
        200_000,
        64_000,
        false,
        Some((1.0, 5.0, 0.1, 1.25)),
    ),
    row(
        "claude-3-7-sonnet",
        200_000,
        64_000,
        false,
        Some((3.0, 15.0, 0.3, 3.75)),
    ),
    row(
        "claude-3-5-sonnet",
        200_000,
        8_192,
        false,
        Some((3.0, 15.0, 0.3, 3.75)),
    ),
    row(
        "claude-3-5-haiku",
        200_000,
        8_192,
        false,
        Some((0.8, 4.0, 0.08, 1.0)),
    ),
    // OpenAI (cached input is discounted; writes cost nothing extra).
    row(
        "gpt-5-nano",
        400_000,
        128_000,
        true,
        Some((0.05, 0.4, 0.005, 0.0)),
    ),
    row(
        "gpt-5-mini",
        400_000,
        128_000,
        true,
        Some((0.25, 2.0, 0.025, 0.0)),
    ),
    row(
        "gpt-5",
        400_000,
        128_000,
        true,
        Some((1.25, 10.0, 0.125, 0.0)),
    ),
    row(
        "gpt-4-1-nano",
        1_047_576,
        32_768,
        false,
        Some((0.1, 0.4, 0.025, 0.0)),
    ),
    row(
        "gpt-4-1-mini",
        1_047_576,
        32_768,
        false,
        Some((0.4, 1.6, 0.1, 0.0)),
    ),
    row(
        "gpt-4-1",
        1_047_576,
        32_768,
        false,
        Some((2.0, 8.0, 0.5, 0.0)),
    ),
    row(
        "gpt-4o-mini",
        128_000,
        16_384,
        false,
        Some((0.15, 0.6, 0.075, 0.0)),
    ),
    row(
        "gpt-4o",
        128_000,
        16_384,
        false,
        Some((2.5, 10.0, 1.25, 0.0)),
    ),
    row(
        "o4-mini",
        200_000,
        100_000,
        true,
        Some((1.1, 4.4, 0.275, 0.0)),
    ),
    row(
        "o3-mini",
        200_000,
        100_000,
        true,
        Some((1.1, 4.4, 0.55, 0.0)),
    ),
    row("o3", 200_000, 100_000, true, Some((2.0, 8.0, 0.5, 0.0))),
    row("o1", 200_000, 100_000, true, Some((15.0, 60.0, 7.5, 0.0))),
    // DeepSeek's API.
    row(
        "deepseek-chat",
        128_000,
        8_192,
        false,
        Some((0.28, 0.42, 0.028, 0.0)),
    ),
    row(
        "deepseek-reasoner",
        128_000,
        64_000,
        false,
        Some((0.28, 0.42, 0.028, 0.0)),
    ),
    // Open models as served locally (Ollama, llama.cpp, vLLM): the model's own window; the
    // server may run with a smaller one (Ollama's `num_ctx`), which `[model] context_window`
    // states. No price: the cost shown would mean nothing.
    row("gpt-oss", 131_072, 32_768, false, None),
    row("qwen3-coder", 262_144, 32_768, false, None),
    row("qwen3", 40_960, 16_384, false, None),
    row("qwen2-5-coder", 32_768, 8_192, false, None),
    row("llama3-1", 131_072, 8_192, false, None),
    row("llama3-2", 131_072, 8_192, false, None),
    row("llama3-3", 131_072, 8_192, false, None),
    row("deepseek-r1", 131_072, 32_768, false, None),
    row("devstral", 131_072, 16_384, false, None),
    row("mistral-small", 131_072, 16_384, false, None),
];

/// The form names are compared in: lowercase, without a router's `vendor/` prefix, dots as
/// dashes (`anthropic/claude-sonnet-4.5` and `claude-sonnet-4-5` are the same model).
pub fn normalize(name: &str) -> String {
    let name = name.trim().to_ascii_lowercase();
    let base = name.rsplit('/').next().unwrap_or(&name);
    base.replace('.', "-")
}

/// Whether a known model (its name after [`normalize`]) takes images, as its provider documents:
/// every Claude from 3 on, GPT-4o, GPT-4.1, GPT-5 and the o1, o3 and o4-mini reasoning models
/// (not o1-mini or o3-mini). The open models of the table are text-only as usually served; a
/// local vision model says so with `[model] images = true`.
pub fn takes_images(name: &str) -> bool {
    const TEXT_ONLY: [&str; 2] = ["o1-mini", "o3-mini"];
    const VISION: [&str; 7] = [
        "claude-", "gpt-4o", "gpt-4-1", "gpt-5", "o1", "o3", "o4-mini",
    ];
    !TEXT_ONLY.iter().any(|p| name.starts_with(p)) && VISION.iter().any(|p| name.starts_with(p))
}

impl ModelProfile {
    /// The table's entry for `model`, or the unknown-model default.
    pub fn lookup(model: &str) -> Self {
        let name = normalize(model);
        let best = KNOWN
            .iter()
            .filter(|k| name.starts_with(k.prefix))
            .max_by_key(|k| k.prefix.len());
        match best {
            Some(k) => Self {
                context_window: k.window,
                max_output_tokens: k.max_output,
                reasoning_model: k.reasoning_model,
                prices: k
                    .prices
                    .map(|(input, output, cache_read, cache_write)| Prices {
                        input,
                        output,
                        cache_read,
                        cache_write,
                        web_search: web_search_price(&name),
                    }),
                reasoning: None,
                known: true,
                images: takes_images(&name),
            },
            None => Self {
                images: takes_images(&name),
                ..Self::default()
            },
        }
    }

    /// The table's entry with the config's `[model]` settings (and `--reasoning`) over it.
    pub fn resolve(model: &str, settings: &ModelTable) -> Self {
        let mut p = Self::lookup(model);
        if let Some(w) = settings.context_window {
            p.context_window = w;
            p.known = true;
        }
        if let Some(m) = settings.max_output_tokens {
            p.max_output_tokens = m;
        }
        if settings.reasoning.is_some() {
            p.reasoning = settings.reasoning;
        }
        if let Some(images) = settings.images {
            p.images = images;
        }
        p.prices = merge_prices(p.prices, &settings.prices);
        p
    }
}

/// Model names the `/model` picker offers for a provider (by its config name): current names the provider's API takes
/// as they are (the table above matches families; these are what a person would type). Each
/// resolves to a row of the table (a test checks), so the picker can show window and price.
pub fn suggestions(provider: &str) -> &'static [&'static str] {
    match provider {
        "anthropic" => &[
            "claude-opus-4-5",
            "claude-sonnet-4-5",
            "claude-haiku-4-5",
            "claude-opus-4-1",
            "claude-sonnet-4-0",
        ],
        "openai" => &[
            "gpt-5",
            "gpt-5-mini",
            "gpt-5-nano",
            "gpt-4.1",
            "gpt-4.1-mini",
            "gpt-4o",
            "o3",
            "o4-mini",
        ],
        "ollama" => &[
            "qwen3-coder",
            "gpt-oss",
            "devstral",
            "deepseek-r1",
            "llama3.3",
            "mistral-small",
        ],
        _ => &[],
    }
}

/// What a thousand searches of the web cost at the model's provider, in US dollars: Anthropic's
/// `web_search` and OpenAI's Responses `web_search` both charge $10 per 1,000 (the pages a
/// search brings count as input tokens besides). Other models have no search pablo offers.
fn web_search_price(name: &str) -> f64 {
    const SEARCHING: &[&str] = &["claude-", "gpt-", "o1", "o3", "o4"];
    if SEARCHING.iter().any(|p| name.starts_with(p)) {
        10.0
    } else {
        0.0
    }
}

/// Config prices over the table's: a price set in config wins; a model with no table prices
/// gets a cost only once input and output are both given.
fn merge_prices(table: Option<Prices>, config: &PriceTable) -> Option<Prices> {
    match table {
        Some(t) => Some(Prices {
            input: config.input.unwrap_or(t.input),
            output: config.output.unwrap_or(t.output),
            cache_read: config.cache_read.unwrap_or(t.cache_read),
            cache_write: config.cache_write.unwrap_or(t.cache_write),
            web_search: config.web_search.unwrap_or(t.web_search),
        }),
        None => match (config.input, config.output) {
            (Some(input), Some(output)) => Some(Prices {
                input,
                output,
                cache_read: config.cache_read.unwrap_or(input),
                cache_write: config.cache_write.unwrap_or(input),
                web_search: config.web_search.unwrap_or(0.0),
            }),
            _ => None,
        },
    }
}

/// Anthropic's extended-thinking budget for a level, in tokens (the API's minimum is 1024).
pub fn thinking_budget(level: ReasoningLevel) -> Option<u32> {
    match level {
        ReasoningLevel::Off => None,
        ReasoningLevel::Low => Some(4_096),
        ReasoningLevel::Medium => Some(12_288),
        ReasoningLevel::High => Some(32_768),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn dated_tagged_and_routed_names_find_their_family() {
        let p = ModelProfile::lookup("claude-sonnet-4-5-20250929");
        assert_eq!(p.context_window, 200_000);
        assert!(p.known);
        assert_eq!(p.prices.unwrap().cache_read, 0.3);
        assert_eq!(
            ModelProfile::lookup("anthropic/claude-sonnet-4.5"),
            ModelProfile::lookup("claude-sonnet-4-5")
        );
        assert_eq!(ModelProfile::lookup("qwen3:8b").context_window, 40_960);
        assert!(ModelProfile::lookup("qwen3:8b").prices.is_none());
    }

    #[test]
    fn the_longest_prefix_wins() {
        assert_eq!(
            ModelProfile::lookup("gpt-4.1-mini").prices.unwrap().input,
            0.4
        );
        assert_eq!(ModelProfile::lookup("gpt-4.1").prices.unwrap().input, 2.0);
        assert_eq!(
            ModelProfile::lookup("claude-opus-4-5")
                .prices
                .unwrap()
                .input,
            5.0
        );
        assert_eq!(
            ModelProfile::lookup("claude-opus-4-1")
                .prices
                .unwrap()
                .input,
            15.0
        );
        assert!(ModelProfile::lookup("gpt-5-codex").reasoning_model);
        assert!(!ModelProfile::lookup("gpt-4o").reasoning_model);
    }

    #[test]
    fn an_unknown_model_gets_the_small_default_window_and_no_price() {
        let p = ModelProfile::lookup("my-finetune");
        assert_eq!(p.context_window, UNKNOWN_CONTEXT_WINDOW);
        assert!(!p.known && p.prices.is_none());
    }

    #[test]
    fn config_settings_override_the_table_field_by_field() {
        let settings = ModelTable {
            context_window: Some(16_000),
            reasoning: Some(ReasoningLevel::High),
            prices: PriceTable {
                input: Some(1.0),
                ..PriceTable::default()
            },
            ..ModelTable::default()
        };
        let p = ModelProfile::resolve("claude-sonnet-4-5", &settings);
        assert_eq!(p.context_window, 16_000);
        assert_eq!(p.reasoning, Some(ReasoningLevel::High));
        let prices = p.prices.unwrap();
        assert_eq!((prices.input, prices.output), (1.0, 15.0));
        // A model without table prices gets a cost once input and output are given.
        let local = ModelTable {
            prices: PriceTable {
                input: Some(0.5),
                output: Some(1.0),
                ..PriceTable::default()
            },
            ..ModelTable::default()
        };
        let p = ModelProfile::resolve("my-finetune", &local);
        assert_eq!(p.prices.unwrap().cache_read, 0.5);
    }

    #[test]
    fn vision_models_take_images_text_only_ones_do_not_and_config_decides_last() {
        for m in [
            "claude-sonnet-4-5",
            "claude-3-opus-20240229",
            "gpt-4o-mini",
            "gpt-4.1",
            "gpt-5",
            "o3",
            "o4-mini",
        ] {
            assert!(ModelProfile::lookup(m).images, "{m}");
        }
        for m in [
            "o3-mini",
            "o1-mini",
            "qwen3:8b",
            "deepseek-chat",
            "my-finetune",
            "scripted",
        ] {
            assert!(!ModelProfile::lookup(m).images, "{m}");
        }
        let on = ModelTable {
            images: Some(true),
            ..ModelTable::default()
        };
        assert!(ModelProfile::resolve("qwen2.5vl:7b", &on).images);
        let off = ModelTable {
            images: Some(false),
            ..ModelTable::default()
        };
        assert!(!ModelProfile::resolve("gpt-4o", &off).images);
    }

    #[test]
    fn cost_charges_cache_reads_writes_and_the_rest_at_their_prices() {
        let prices = Prices {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
            web_search: 10.0,
        };
        let usage = Usage {
            input_tokens: 1_000_000 + 2_000_000 + 1_000_000,
            output_tokens: 100_000,
            cached_input_tokens: 2_000_000,
            cache_write_input_tokens: 1_000_000,
            web_searches: 3,
        };
        let cost = prices.cost(&usage);
        assert!(
            (cost - (3.0 + 0.6 + 3.75 + 1.5 + 0.03)).abs() < 1e-9,
            "{cost}"
        );
    }

    #[test]
    fn every_suggested_model_is_one_the_table_knows() {
        for provider in ["openai", "anthropic", "ollama"] {
            for name in suggestions(provider) {
                assert!(
                    ModelProfile::lookup(name).known,
                    "{name} is not in the table"
                );
            }
        }
    }
}
