//! The three wire formats: how a [`ChatRequest`] becomes a request body, and how an answer body
//! becomes text and token counts.
//!
//! Everything here is a pure function of the request and the model entry, so request bodies can be
//! pinned in snapshots and answer parsing tested without a server. The key is added to headers by
//! the client alone.

mod anthropic;
mod gemini;
mod openai;

use serde_json::Value;

use super::ApiKey;
use super::request::ChatRequest;
use crate::pipeline::ModelSpec;
use crate::pipeline::Wire;

/// The answer a server gave, before it is read as a verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct WireAnswer {
    /// The model's text (for a forced tool, the tool input as JSON).
    pub text: String,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// Why the model stopped, as the API says it (`stop`, `length`, `end_turn`, `MAX_TOKENS`, …).
    pub stop: Option<String>,
}

/// Where to send a request and what to send.
#[derive(Debug, Clone, PartialEq)]
pub struct WireRequest {
    pub url: String,
    pub body: Value,
}

/// The request for `request` to the model `spec` at `base_url`.
pub fn build(spec: &ModelSpec, base_url: &str, request: &ChatRequest) -> WireRequest {
    let base = base_url.trim_end_matches('/');
    match spec.provider.wire() {
        Wire::OpenaiChat => WireRequest {
            url: format!("{base}/chat/completions"),
            body: openai::body(spec, request),
        },
        Wire::AnthropicMessages => WireRequest {
            url: format!("{base}/messages"),
            body: anthropic::body(spec, request),
        },
        Wire::GeminiGenerate => WireRequest {
            url: format!("{base}/models/{}:generateContent", spec.model),
            body: gemini::body(spec, request),
        },
    }
}

/// The headers that carry the key, for `wire`.
pub fn auth_headers(wire: Wire, key: &ApiKey) -> Vec<(&'static str, String)> {
    match wire {
        Wire::OpenaiChat => vec![("authorization", format!("Bearer {}", key.expose()))],
        Wire::AnthropicMessages => vec![("x-api-key", key.expose().to_string())],
        Wire::GeminiGenerate => vec![("x-goog-api-key", key.expose().to_string())],
    }
}

/// Headers every request of `wire` carries.
pub fn fixed_headers(wire: Wire) -> Vec<(&'static str, &'static str)> {
    match wire {
        Wire::AnthropicMessages => vec![("anthropic-version", "2023-06-01")],
        Wire::OpenaiChat | Wire::GeminiGenerate => Vec::new(),
    }
}

/// Reads an answer body of `wire`; an error says what is missing.
pub fn parse(wire: Wire, body: &Value) -> Result<WireAnswer, String> {
    match wire {
        Wire::OpenaiChat => openai::answer(body),
        Wire::AnthropicMessages => anthropic::answer(body),
        Wire::GeminiGenerate => gemini::answer(body),
    }
}

/// A non-negative integer field, 0 when absent.
fn count(value: Option<&Value>) -> u64 {
    value.and_then(Value::as_u64).unwrap_or(0)
}
