//! The APIs a `models:` entry can name, and the wire format each speaks.

use serde::{Deserialize, Serialize};

/// Which API a model entry talks to.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    /// Any OpenAI-compatible chat-completions server (hosted gateways, vLLM, llama.cpp, Ollama).
    Openai,
    /// Anthropic's Messages API.
    Anthropic,
    /// Google's Gemini `generateContent` API.
    Gemini,
    /// llama.cpp's `llama-server` run by claimflow on a loopback port (OpenAI wire format).
    LlamaServer,
}

/// The request and answer shapes a provider uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// `POST {base}/chat/completions`.
    OpenaiChat,
    /// `POST {base}/messages`.
    AnthropicMessages,
    /// `POST {base}/models/{model}:generateContent`.
    GeminiGenerate,
}

impl Provider {
    /// The model a `llama-server` entry without `base_url` or `model` names: the id the local
    /// model claimflow provisions and starts answers to (its file's name without `.gguf`). It lives
    /// here, not with the local model, so that loading a pipeline needs nothing built on it.
    pub const EMBEDDED_MODEL: &str = "SmolLM2-135M-Instruct.Q4_1";

    /// Every provider, in the order the documentation lists them.
    pub const ALL: [Provider; 4] = [
        Provider::Openai,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::LlamaServer,
    ];

    /// The name a pipeline writes.
    pub fn name(self) -> &'static str {
        match self {
            Provider::Openai => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
            Provider::LlamaServer => "llama-server",
        }
    }

    /// Every name a pipeline may write.
    pub fn names() -> Vec<&'static str> {
        Provider::ALL
            .iter()
            .map(|provider| provider.name())
            .collect()
    }

    /// The provider a pipeline names.
    pub fn parse(name: &str) -> Option<Provider> {
        Provider::ALL
            .into_iter()
            .find(|provider| provider.name() == name)
    }

    /// The wire format it speaks.
    pub fn wire(self) -> Wire {
        match self {
            Provider::Openai | Provider::LlamaServer => Wire::OpenaiChat,
            Provider::Anthropic => Wire::AnthropicMessages,
            Provider::Gemini => Wire::GeminiGenerate,
        }
    }

    /// The address used when an entry gives no `base_url`; `llama-server` has none (claimflow
    /// starts it on a free port).
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            Provider::Openai => Some("https://api.openai.com/v1"),
            Provider::Anthropic => Some("https://api.anthropic.com/v1"),
            Provider::Gemini => Some("https://generativelanguage.googleapis.com/v1beta"),
            Provider::LlamaServer => None,
        }
    }

    /// True when a request without a key is normal (a local server).
    pub fn needs_key(self) -> bool {
        !matches!(self, Provider::LlamaServer)
    }
}

impl std::fmt::Display for Provider {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_serde() {
        for provider in Provider::ALL {
            assert_eq!(Provider::parse(provider.name()), Some(provider));
            let json = serde_json::to_value(provider).unwrap();
            assert_eq!(json, serde_json::json!(provider.name()));
        }
        assert_eq!(Provider::parse("openia"), None);
    }
}
