//! Which provider, which model, which endpoint, which key.
//!
//! Settings come from CLI flags over config files ([`ProviderSettings::over`]). When no provider
//! is named, the environment decides: `ANTHROPIC_API_KEY` → Anthropic, `OPENAI_API_KEY` → OpenAI,
//! otherwise a local Ollama if one answers. Keys are read from the environment only — the
//! variable named by `api_key_env` or the provider's standard one — and travel inside an
//! [`ApiKey`], which never prints; messages name variables, never values.
//!
//! `provider = "openai"` speaks the Responses API to OpenAI's own endpoint and Chat Completions to
//! any other base URL (the compatible servers); `[model] wire_api` overrides the choice. The
//! model's profile (window, prices, reasoning) is resolved here too, from the known-models table
//! and the `[model]` settings, and travels with the client.

use std::sync::Arc;
use std::time::Duration;

use super::anthropic::{AnthropicClient, AnthropicConfig};
use super::http::{ApiKey, HttpOptions};
use super::openai::{OpenAiClient, OpenAiConfig};
use super::profile::ModelProfile;
use super::responses::ResponsesClient;
use super::{ModelClient, ModelError};
use pablo_config::{ModelTable, ReasoningLevel, WireApi};

pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com/v1";
pub const OLLAMA_BASE_URL: &str = "http://localhost:11434/v1";

pub const OPENAI_KEY_ENV: &str = "OPENAI_API_KEY";
pub const ANTHROPIC_KEY_ENV: &str = "ANTHROPIC_API_KEY";

pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4.1";
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
pub const DEFAULT_OLLAMA_MODEL: &str = "qwen3:8b";

/// How long autodetection waits for a local Ollama to answer.
const OLLAMA_PROBE_TIMEOUT: Duration = Duration::from_millis(800);

/// The provider-related settings, from any layer. `None` means "not set here".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderSettings {
    /// `openai`, `anthropic` or `ollama`.
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// The environment variable holding the key (never the key itself).
    pub api_key_env: Option<String>,
    /// `--reasoning`, or `[model] reasoning`.
    pub reasoning: Option<ReasoningLevel>,
    /// `[model] wire_api`.
    pub wire_api: Option<WireApi>,
    /// The rest of `[model]`: window, output bound, prices.
    pub model_settings: ModelTable,
}

impl ProviderSettings {
    /// `self` (e.g. CLI flags) over `lower` (e.g. the merged config): each field set here wins.
    pub fn over(self, lower: ProviderSettings) -> Self {
        let m = self.model_settings;
        let l = lower.model_settings;
        Self {
            provider: self.provider.or(lower.provider),
            model: self.model.or(lower.model),
            base_url: self.base_url.or(lower.base_url),
            api_key_env: self.api_key_env.or(lower.api_key_env),
            reasoning: self.reasoning.or(lower.reasoning),
            wire_api: self.wire_api.or(lower.wire_api),
            model_settings: ModelTable {
                name: m.name.or(l.name),
                context_window: m.context_window.or(l.context_window),
                max_output_tokens: m.max_output_tokens.or(l.max_output_tokens),
                reasoning: m.reasoning.or(l.reasoning),
                wire_api: m.wire_api.or(l.wire_api),
                images: m.images.or(l.images),
                prices: pablo_config::PriceTable {
                    input: m.prices.input.or(l.prices.input),
                    output: m.prices.output.or(l.prices.output),
                    cache_read: m.prices.cache_read.or(l.prices.cache_read),
                    cache_write: m.prices.cache_write.or(l.prices.cache_write),
                    web_search: m.prices.web_search.or(l.prices.web_search),
                },
            },
        }
    }
}

/// The providers pablo speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    OpenAi,
    Anthropic,
    Ollama,
}

impl ProviderKind {
    pub fn parse(name: &str) -> Result<Self, ModelError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "openai" => Ok(Self::OpenAi),
            "anthropic" => Ok(Self::Anthropic),
            "ollama" => Ok(Self::Ollama),
            other => Err(ModelError::Config(format!(
                "unknown provider {other:?}: use openai, anthropic or ollama (for llama.cpp, vLLM, \
                 LM Studio or OpenRouter use openai with --base-url)"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
            Self::Ollama => "ollama",
        }
    }

    pub fn default_model(self) -> &'static str {
        match self {
            Self::OpenAi => DEFAULT_OPENAI_MODEL,
            Self::Anthropic => DEFAULT_ANTHROPIC_MODEL,
            Self::Ollama => DEFAULT_OLLAMA_MODEL,
        }
    }

    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::OpenAi => OPENAI_BASE_URL,
            Self::Anthropic => ANTHROPIC_BASE_URL,
            Self::Ollama => OLLAMA_BASE_URL,
        }
    }

    fn standard_key_env(self) -> Option<&'static str> {
        match self {
            Self::OpenAi => Some(OPENAI_KEY_ENV),
            Self::Anthropic => Some(ANTHROPIC_KEY_ENV),
            Self::Ollama => None,
        }
    }
}

/// What [`select`] decided, without the key (safe to print).
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    pub kind: ProviderKind,
    pub model: String,
    pub base_url: String,
    /// The variable the key was read from, if any.
    pub key_env: Option<String>,
    /// The wire format (OpenAI-compatible providers; Anthropic speaks Messages).
    pub wire: WireApi,
    pub profile: ModelProfile,
}

/// Whether `base_url` is OpenAI's own API.
pub fn is_openai_api(base_url: &str) -> bool {
    reqwest::Url::parse(base_url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
        .is_some_and(|h| h == "api.openai.com")
}

/// Builds the client the settings describe, reading keys from the process environment.
pub async fn select(
    settings: &ProviderSettings,
    options: &HttpOptions,
) -> Result<Arc<dyn ModelClient>, ModelError> {
    // Keys moved out of the environment block at start are held in `core::secrets`.
    let (selection, key) = resolve(settings, &pablo_core::secrets::var).await?;
    if let (Some(key), Some(var)) = (&key, &selection.key_env) {
        key.hold(var);
        // A key variable whose name does not look secret (`api_key_env = "LLM"`) was left in
        // the environment block at start; commands must not read it there either.
        let _ = pablo_process::protect::wipe(std::slice::from_ref(var));
    }
    build(selection, key, options)
}

/// [`select`] with the environment given as a lookup function (tests use a map, so they need
/// not touch the process environment).
#[cfg(any(test, feature = "test-support"))]
pub async fn select_with_env(
    settings: &ProviderSettings,
    options: &HttpOptions,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<Arc<dyn ModelClient>, ModelError> {
    let (selection, key) = resolve(settings, env).await?;
    build(selection, key, options)
}

/// Decides the provider, model, URL and key.
pub async fn resolve(
    settings: &ProviderSettings,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<(Selection, Option<ApiKey>), ModelError> {
    let non_empty = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    // A URL that cannot be one is the person's mistake, said at once: sent, it would be retried
    // as if the server were down and end as `model_unreachable`.
    if let Some(url) = &settings.base_url {
        check_base_url(url)?;
    }
    let kind = match settings.provider.as_deref() {
        Some(name) => ProviderKind::parse(name)?,
        None => autodetect(settings, &non_empty).await?,
    };
    let base_url = settings
        .base_url
        .clone()
        .unwrap_or_else(|| default_base_url(kind, &non_empty));
    check_base_url(&base_url)?;
    let model = settings
        .model
        .clone()
        .unwrap_or_else(|| kind.default_model().to_string());
    let key_env = settings
        .api_key_env
        .clone()
        .or_else(|| kind.standard_key_env().map(str::to_string));
    let key = key_env
        .as_deref()
        .and_then(|var| non_empty(var).map(|k| ApiKey::from_var(var, k)));
    if key.is_none() {
        let custom_var = settings.api_key_env.is_some();
        // A local OpenAI-compatible server needs no key; the real services do.
        let needs_key = match kind {
            ProviderKind::Anthropic => true,
            ProviderKind::OpenAi => custom_var || base_url == OPENAI_BASE_URL,
            ProviderKind::Ollama => custom_var,
        };
        if needs_key {
            let var = key_env.as_deref().unwrap_or(OPENAI_KEY_ENV);
            return Err(ModelError::MissingKey {
                provider: kind.name().to_string(),
                var: var.to_string(),
                hint: if custom_var {
                    " (named by api_key_env in the config)"
                } else {
                    " (or name another variable with api_key_env in the config)"
                },
            });
        }
    }
    let key_env = key.as_ref().and(key_env);
    let wire = match (kind, settings.wire_api) {
        (ProviderKind::Anthropic, Some(WireApi::Responses)) => {
            return Err(ModelError::Config(
                "wire_api = \"responses\" is for OpenAI-compatible providers; anthropic speaks \
                 its own Messages API"
                    .into(),
            ));
        }
        (_, Some(w)) => w,
        (ProviderKind::OpenAi, None) if is_openai_api(&base_url) => WireApi::Responses,
        _ => WireApi::Chat,
    };
    let mut profile = ModelProfile::resolve(&model, &settings.model_settings);
    if settings.reasoning.is_some() {
        profile.reasoning = settings.reasoning;
    }
    Ok((
        Selection {
            kind,
            model,
            base_url,
            key_env,
            wire,
            profile,
        },
        key,
    ))
}

/// Refuses a base URL no request can be sent to: not a URL, not `http:`/`https:`, no host, or
/// an empty port (`http://127.0.0.1:/v1`).
fn check_base_url(url: &str) -> Result<(), ModelError> {
    let refuse = |why: String| {
        ModelError::Config(format!(
            "the base URL {url:?} {why}: give one like http://127.0.0.1:8080/v1 (--base-url, or \
             base_url in the config)"
        ))
    };
    if url.trim().is_empty() {
        return Err(refuse("is empty".into()));
    }
    let parsed = reqwest::Url::parse(url).map_err(|e| refuse(format!("is not a URL ({e})")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(refuse(format!(
            "uses the scheme {}:, not http: or https:",
            parsed.scheme()
        )));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(refuse("names no host".into()));
    }
    // The parser reads `host:` as the default port; a person who typed the colon meant one.
    let authority = url
        .split_once("://")
        .map(|(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or(""))
        .unwrap_or("");
    if authority.ends_with(':') {
        return Err(refuse("has an empty port".into()));
    }
    Ok(())
}

/// Builds the client for a resolved selection.
pub fn build(
    selection: Selection,
    key: Option<ApiKey>,
    options: &HttpOptions,
) -> Result<Arc<dyn ModelClient>, ModelError> {
    Ok(match selection.kind {
        ProviderKind::Anthropic => {
            let Some(api_key) = key else {
                return Err(ModelError::Config(format!(
                    "anthropic needs an API key: set the environment variable {ANTHROPIC_KEY_ENV}"
                )));
            };
            Arc::new(AnthropicClient::new(AnthropicConfig {
                base_url: selection.base_url,
                model: selection.model,
                api_key,
                options: options.clone(),
                profile: selection.profile,
            })?)
        }
        ProviderKind::OpenAi | ProviderKind::Ollama => {
            let config = OpenAiConfig {
                provider: selection.kind.name().to_string(),
                official: is_openai_api(&selection.base_url),
                base_url: selection.base_url,
                model: selection.model,
                api_key: key,
                options: options.clone(),
                profile: selection.profile,
            };
            match selection.wire {
                WireApi::Chat => Arc::new(OpenAiClient::new(config)?),
                WireApi::Responses => Arc::new(ResponsesClient::new(config)?),
            }
        }
    })
}

/// `OLLAMA_HOST` (Ollama's own variable, `host:port` or a URL) or the default.
fn default_base_url(kind: ProviderKind, env: &dyn Fn(&str) -> Option<String>) -> String {
    if kind == ProviderKind::Ollama
        && let Some(host) = env("OLLAMA_HOST")
    {
        let host = host.trim().trim_end_matches('/');
        let host = if host.contains("://") {
            host.to_string()
        } else {
            format!("http://{host}")
        };
        return format!("{host}/v1");
    }
    kind.default_base_url().to_string()
}

async fn autodetect(
    settings: &ProviderSettings,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<ProviderKind, ModelError> {
    if let Some(var) = &settings.api_key_env
        && env(var).is_some()
    {
        // A named key with no named provider: an OpenAI-compatible service (OpenRouter, …),
        // unless the variable says otherwise.
        return Ok(if var.to_ascii_uppercase().contains("ANTHROPIC") {
            ProviderKind::Anthropic
        } else {
            ProviderKind::OpenAi
        });
    }
    if env(ANTHROPIC_KEY_ENV).is_some() {
        return Ok(ProviderKind::Anthropic);
    }
    if env(OPENAI_KEY_ENV).is_some() {
        return Ok(ProviderKind::OpenAi);
    }
    let url = settings
        .base_url
        .clone()
        .unwrap_or_else(|| default_base_url(ProviderKind::Ollama, env));
    if probe(&url).await {
        return Ok(ProviderKind::Ollama);
    }
    Err(ModelError::Config(format!(
        "no model provider is available: set {ANTHROPIC_KEY_ENV} or {OPENAI_API_KEY_ENV} in the \
         environment, or start Ollama (nothing answered at {url}), or choose explicitly with \
         --provider openai|anthropic|ollama, --model NAME and --base-url URL (config keys: \
         provider, model, base_url, api_key_env)",
        OPENAI_API_KEY_ENV = OPENAI_KEY_ENV
    )))
}

/// True when an OpenAI-compatible server answers `GET {base}/models` quickly.
async fn probe(base_url: &str) -> bool {
    let url = format!("{}/models", base_url.trim_end_matches('/'));
    let Ok(client) = super::http::client_for(&url) else {
        return false;
    };
    let req = client.get(url).send();
    matches!(
        tokio::time::timeout(OLLAMA_PROBE_TIMEOUT, req).await,
        Ok(Ok(r)) if r.status().is_success()
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + Sync + use<> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    fn settings(provider: Option<&str>) -> ProviderSettings {
        ProviderSettings {
            provider: provider.map(str::to_string),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn anthropic_key_wins_autodetect_over_openai_key() {
        let env = env_of(&[("ANTHROPIC_API_KEY", "a-key"), ("OPENAI_API_KEY", "o-key")]);
        let (s, key) = resolve(&settings(None), &env).await.unwrap();
        assert_eq!(s.kind, ProviderKind::Anthropic);
        assert_eq!(s.model, DEFAULT_ANTHROPIC_MODEL);
        assert_eq!(s.base_url, ANTHROPIC_BASE_URL);
        assert_eq!(s.key_env.as_deref(), Some("ANTHROPIC_API_KEY"));
        assert_eq!(key, Some(ApiKey::new("a-key")));
    }

    #[tokio::test]
    async fn openai_key_alone_selects_openai_with_its_defaults() {
        let env = env_of(&[("OPENAI_API_KEY", "o-key")]);
        let (s, _) = resolve(&settings(None), &env).await.unwrap();
        assert_eq!(s.kind, ProviderKind::OpenAi);
        assert_eq!(s.model, DEFAULT_OPENAI_MODEL);
        assert_eq!(s.base_url, OPENAI_BASE_URL);
    }

    #[tokio::test]
    async fn cli_settings_override_config_settings_field_by_field() {
        let cli = ProviderSettings {
            model: Some("m-cli".into()),
            ..Default::default()
        };
        let config = ProviderSettings {
            provider: Some("ollama".into()),
            model: Some("m-config".into()),
            base_url: Some("http://10.0.0.2:11434/v1".into()),
            ..Default::default()
        };
        let merged = cli.over(config);
        let (s, key) = resolve(&merged, &env_of(&[])).await.unwrap();
        assert_eq!(s.kind, ProviderKind::Ollama);
        assert_eq!(s.model, "m-cli");
        assert_eq!(s.base_url, "http://10.0.0.2:11434/v1");
        assert!(key.is_none());
    }

    #[tokio::test]
    async fn ollama_host_sets_the_default_ollama_url() {
        let env = env_of(&[("OLLAMA_HOST", "127.0.0.1:9999")]);
        let (s, _) = resolve(&settings(Some("ollama")), &env).await.unwrap();
        assert_eq!(s.base_url, "http://127.0.0.1:9999/v1");
    }

    #[tokio::test]
    async fn an_unknown_provider_name_is_refused_naming_the_choices() {
        let err = resolve(&settings(Some("gemini")), &env_of(&[]))
            .await
            .unwrap_err();
        assert_eq!(pablo_core::Coded::code(&err), "model_config");
        let m = err.to_string();
        assert!(
            m.contains("\"gemini\"") && m.contains("openai, anthropic or ollama"),
            "{m}"
        );
    }

    #[tokio::test]
    async fn anthropic_without_its_key_says_which_variable_to_set() {
        let err = resolve(&settings(Some("anthropic")), &env_of(&[]))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");
    }

    #[tokio::test]
    async fn a_named_key_variable_is_read_and_missing_it_names_that_variable() {
        let s = ProviderSettings {
            provider: Some("openai".into()),
            base_url: Some("https://openrouter.ai/api/v1".into()),
            api_key_env: Some("OPENROUTER_API_KEY".into()),
            ..Default::default()
        };
        let err = resolve(&s, &env_of(&[("OPENAI_API_KEY", "other")]))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("OPENROUTER_API_KEY"), "{err}");
        let (sel, key) = resolve(&s, &env_of(&[("OPENROUTER_API_KEY", "or-key")]))
            .await
            .unwrap();
        assert_eq!(sel.key_env.as_deref(), Some("OPENROUTER_API_KEY"));
        assert_eq!(key, Some(ApiKey::new("or-key")));
    }

    #[tokio::test]
    async fn a_local_openai_compatible_server_needs_no_key() {
        let s = ProviderSettings {
            provider: Some("openai".into()),
            base_url: Some("http://127.0.0.1:8080/v1".into()),
            ..Default::default()
        };
        let (sel, key) = resolve(&s, &env_of(&[])).await.unwrap();
        assert_eq!(sel.kind, ProviderKind::OpenAi);
        assert!(key.is_none() && sel.key_env.is_none());
    }

    #[tokio::test]
    async fn openai_speaks_responses_to_its_own_api_and_chat_elsewhere_unless_told() {
        let env = env_of(&[("OPENAI_API_KEY", "k")]);
        let (s, _) = resolve(&settings(Some("openai")), &env).await.unwrap();
        assert_eq!(s.wire, WireApi::Responses);
        let local = ProviderSettings {
            provider: Some("openai".into()),
            base_url: Some("http://127.0.0.1:8080/v1".into()),
            ..Default::default()
        };
        assert_eq!(resolve(&local, &env).await.unwrap().0.wire, WireApi::Chat);
        let forced = ProviderSettings {
            wire_api: Some(WireApi::Responses),
            ..local.clone()
        };
        assert_eq!(
            resolve(&forced, &env).await.unwrap().0.wire,
            WireApi::Responses
        );
        let official_chat = ProviderSettings {
            wire_api: Some(WireApi::Chat),
            ..settings(Some("openai"))
        };
        assert_eq!(
            resolve(&official_chat, &env).await.unwrap().0.wire,
            WireApi::Chat
        );
        let anthropic_responses = ProviderSettings {
            wire_api: Some(WireApi::Responses),
            ..settings(Some("anthropic"))
        };
        let err = resolve(&anthropic_responses, &env_of(&[("ANTHROPIC_API_KEY", "a")]))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("wire_api"), "{err}");
    }

    #[tokio::test]
    async fn the_profile_takes_the_table_then_the_config_then_the_reasoning_flag() {
        let config = ProviderSettings {
            provider: Some("anthropic".into()),
            model: Some("claude-sonnet-4-5".into()),
            reasoning: Some(ReasoningLevel::Low),
            model_settings: ModelTable {
                context_window: Some(16_000),
                ..ModelTable::default()
            },
            ..Default::default()
        };
        let flags = ProviderSettings {
            reasoning: Some(ReasoningLevel::High),
            ..Default::default()
        };
        let env = env_of(&[("ANTHROPIC_API_KEY", "a")]);
        let (s, _) = resolve(&flags.over(config), &env).await.unwrap();
        assert_eq!(s.profile.context_window, 16_000);
        assert_eq!(s.profile.reasoning, Some(ReasoningLevel::High));
        assert_eq!(s.profile.prices.unwrap().input, 3.0);
    }
}
