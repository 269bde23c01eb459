//! The `model` key and `[model]` table: a name, or what pablo should know about the model.

use serde::{Deserialize, Serialize};

/// The `model` key: a plain name, or a table of settings about the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ModelSetting {
    Name(String),
    Table(ModelTable),
}

impl ModelSetting {
    pub fn table(&self) -> ModelTable {
        match self {
            ModelSetting::Name(name) => ModelTable {
                name: Some(name.clone()),
                ..ModelTable::default()
            },
            ModelSetting::Table(t) => t.clone(),
        }
    }
}

impl<'de> Deserialize<'de> for ModelSetting {
    // By hand rather than `untagged`, so that a bad key inside `[model]` is reported by name
    // (untagged enums only say that no variant matched).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = ModelSetting;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a model name or a [model] table")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ModelSetting, E> {
                Ok(ModelSetting::Name(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<ModelSetting, A::Error> {
                ModelTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(ModelSetting::Table)
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// `[model]`: what pablo should know about the model beyond its name. Unset fields come from
/// the table of known models (docs/providers.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelTable {
    pub name: Option<String>,
    /// Tokens the model reads and writes in one call.
    pub context_window: Option<u64>,
    /// Largest answer of one call, in tokens.
    pub max_output_tokens: Option<u32>,
    pub reasoning: Option<ReasoningLevel>,
    /// For `provider = "openai"`: `chat` (Chat Completions) or `responses` (the Responses API).
    pub wire_api: Option<WireApi>,
    /// Whether the model takes images (`@shot.png`); unset, the table of known models says.
    pub images: Option<bool>,
    #[serde(default)]
    pub prices: PriceTable,
}

/// How much the model is asked to reason: `off`, `low`, `medium`, `high`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningLevel {
    Off,
    Low,
    Medium,
    High,
}

impl ReasoningLevel {
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "off" | "none" => Ok(Self::Off),
            "low" => Ok(Self::Low),
            "medium" => Ok(Self::Medium),
            "high" => Ok(Self::High),
            other => Err(format!(
                "unknown reasoning level {other:?}: use off, low, medium or high"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

/// The wire format of an OpenAI-compatible endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireApi {
    /// `POST /chat/completions`: OpenAI and every server that copies it.
    Chat,
    /// `POST /responses`: OpenAI's own API, where reasoning survives tool calls.
    Responses,
}

/// `[model.prices]`, in US dollars per million tokens; unset entries come from the table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceTable {
    pub input: Option<f64>,
    pub output: Option<f64>,
    pub cache_read: Option<f64>,
    pub cache_write: Option<f64>,
    /// US dollars per 1,000 searches of the web at the provider (`[options.web_search]`).
    pub web_search: Option<f64>,
}

impl PriceTable {
    pub(super) fn is_empty(&self) -> bool {
        self.input.is_none()
            && self.output.is_none()
            && self.cache_read.is_none()
            && self.cache_write.is_none()
            && self.web_search.is_none()
    }
}
