//! Which model client a launch builds, for the start and for `/model NAME`, and the spend cap
//! its calls are counted against: the part of [`Launch`] that speaks to `model::select`.

use std::sync::Arc;

use super::{Launch, LaunchError};
use pablo_model::ModelClient;
use pablo_model::search::WebSearchTool;

impl Launch {
    /// The model client chosen by flags over config layers, then the environment
    /// (`model::select`). Async because autodetection may probe a local Ollama.
    pub async fn model(&self) -> Result<Arc<dyn ModelClient>, LaunchError> {
        use pablo_model::http::HttpOptions;
        use pablo_model::select::select;
        let options = HttpOptions::for_limits(
            self.limits.stream_idle_timeout,
            self.limits.max_model_output_bytes,
        )
        .with_progress_timeout(self.limits.stream_progress_timeout)
        .with_web_search(self.web_search_tool());
        let client = select(&self.provider_settings(), &options).await?;
        // A cap is kept in dollars, so the model's price must be known before the first call.
        if let Some(cap) = self.limits.max_budget_usd
            && client.profile().prices.is_none()
        {
            return Err(LaunchError::PriceUnknown {
                model: client.model().to_string(),
                cap,
            });
        }
        Ok(client)
    }

    /// The provider settings of flags over config layers, before the environment is read (what
    /// [`Launch::model`] builds a client from, and what `pablo doctor` checks).
    pub(crate) fn provider_settings(&self) -> pablo_model::select::ProviderSettings {
        use pablo_model::select::ProviderSettings;
        let model = self.layers.model();
        let config = ProviderSettings {
            provider: self.layers.last(|c| c.provider.clone()),
            model: model.name.clone(),
            base_url: self.layers.last(|c| c.base_url.clone()),
            api_key_env: self.layers.last(|c| c.api_key_env.clone()),
            reasoning: model.reasoning,
            wire_api: model.wire_api,
            model_settings: model,
        };
        let flags = ProviderSettings {
            provider: self.options.provider.clone(),
            model: self.options.model.clone(),
            base_url: self.options.base_url.clone(),
            reasoning: self.options.reasoning,
            ..ProviderSettings::default()
        };
        flags.over(config)
    }

    /// The provider's web search, when `[options.web_search] enabled = true` (docs/web.md).
    pub(crate) fn web_search_tool(&self) -> Option<WebSearchTool> {
        let w = self.layers.web_search();
        (w.enabled == Some(true)).then_some(WebSearchTool {
            max_uses: w.max_uses,
            allowed_domains: w.allowed_domains,
            blocked_domains: w.blocked_domains,
        })
    }

    /// What the person is told about web search settings the provider cannot honour: Chat
    /// Completions (Ollama, another OpenAI-compatible server, `wire_api = "chat"`) has no
    /// server-side search, and OpenAI's Responses takes no `max_uses` or `blocked_domains`.
    /// Decided from the settings before the environment is read, so a provider left to
    /// autodetection is not judged.
    pub(crate) fn web_search_warnings(&self) -> Vec<String> {
        use pablo_config::WireApi;
        use pablo_model::select::{OPENAI_BASE_URL, is_openai_api};
        let Some(tool) = self.web_search_tool() else {
            return Vec::new();
        };
        let s = self.provider_settings();
        let wire = match (s.provider.as_deref(), s.wire_api) {
            (Some("anthropic"), _) | (None, _) => return Vec::new(),
            (_, Some(w)) => w,
            (Some("openai"), None)
                if is_openai_api(s.base_url.as_deref().unwrap_or(OPENAI_BASE_URL)) =>
            {
                WireApi::Responses
            }
            _ => WireApi::Chat,
        };
        let provider = s.provider.unwrap_or_default();
        if wire == WireApi::Chat {
            return vec![format!(
                "[options.web_search] is on, but {provider} is spoken over Chat Completions, \
                 which has no server-side web search: the model is not offered one (web search \
                 needs anthropic, or OpenAI's Responses API)"
            )];
        }
        let mut ignored = Vec::new();
        if tool.max_uses.is_some() {
            ignored.push("max_uses");
        }
        if !tool.blocked_domains.is_empty() {
            ignored.push("blocked_domains");
        }
        if ignored.is_empty() {
            return Vec::new();
        }
        vec![format!(
            "[options.web_search] {} ignored: OpenAI's Responses web search does not take it",
            ignored.join(" and ")
        )]
    }

    /// The spend cap in US dollars (`--max-budget-usd`, `[limits] max_budget_usd`), for the
    /// status line.
    pub fn spend_cap_usd(&self) -> Option<f64> {
        self.limits.max_budget_usd
    }

    /// Builds clients for `/model NAME` (`Op::SetModel`): the same settings as at start with
    /// another model; another provider drops the base URL and key variable that were set for
    /// the first one.
    pub(crate) fn model_switcher(&self) -> pablo_agent::ModelSwitcher {
        use pablo_model::http::HttpOptions;
        use pablo_model::select::{ProviderSettings, select};
        // The `[model]` table describes the configured model (its window, prices); another
        // model gets what pablo knows of it by name. The reasoning level carries over.
        let table = self.layers.model();
        let start = ProviderSettings {
            provider: self.options.provider.clone(),
            base_url: self.options.base_url.clone(),
            reasoning: self.options.reasoning,
            ..ProviderSettings::default()
        }
        .over(ProviderSettings {
            provider: self.layers.last(|c| c.provider.clone()),
            base_url: self.layers.last(|c| c.base_url.clone()),
            api_key_env: self.layers.last(|c| c.api_key_env.clone()),
            reasoning: table.reasoning,
            ..ProviderSettings::default()
        });
        let options = HttpOptions::for_limits(
            self.limits.stream_idle_timeout,
            self.limits.max_model_output_bytes,
        )
        .with_progress_timeout(self.limits.stream_progress_timeout)
        .with_web_search(self.web_search_tool());
        Arc::new(move |provider: Option<String>, model: String| {
            let same_provider = provider.is_none() || provider == start.provider;
            let settings = if same_provider {
                ProviderSettings {
                    model: Some(model),
                    ..start.clone()
                }
            } else {
                ProviderSettings {
                    provider,
                    model: Some(model),
                    reasoning: start.reasoning,
                    ..ProviderSettings::default()
                }
            };
            let options = options.clone();
            Box::pin(async move { select(&settings, &options).await })
        })
    }
}

/// What pablo's table says of one model, for the `/model` picker: its context window and its
/// input and output prices per million tokens, each `None` when unknown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelFacts {
    pub window: Option<u64>,
    pub prices: Option<(f64, f64)>,
}

/// [`ModelFacts`] of `model`.
pub fn model_facts(model: &str) -> ModelFacts {
    let p = pablo_model::profile::ModelProfile::lookup(model);
    ModelFacts {
        window: p.known.then_some(p.context_window),
        prices: p.prices.map(|p| (p.input, p.output)),
    }
}

/// The model names pablo suggests for `provider` (its config name: `openai`, `anthropic`,
/// `ollama`; none for another).
pub fn suggested_models(provider: &str) -> &'static [&'static str] {
    pablo_model::profile::suggestions(provider)
}
