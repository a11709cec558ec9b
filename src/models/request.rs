//! One request to a model, independent of the wire format: a system prompt, a user message and
//! the shape the answer must take.

use serde_json::{Value, json};

/// What the answer must look like.
#[derive(Debug, Clone, PartialEq)]
pub enum AnswerFormat {
    /// Free text (the prose renderer's note).
    Text,
    /// One JSON object matching `schema`; providers with structured output are held to it.
    Json {
        /// A short name for the schema (OpenAI's `json_schema.name`, Anthropic's tool name).
        name: &'static str,
        /// A JSON Schema of an object.
        schema: Value,
    },
}

/// A request: system prompt, user message, answer format.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub system: String,
    pub user: String,
    pub format: AnswerFormat,
}

impl ChatRequest {
    /// A rough token count of the prompt (four characters a token), for rate limits before
    /// the server has counted.
    pub fn estimated_prompt_tokens(&self) -> u64 {
        let characters = self.system.chars().count() + self.user.chars().count();
        u64::try_from(characters.div_ceil(4)).unwrap_or(u64::MAX)
    }
}

/// The schema of `{"<key>": true|false}`.
pub fn boolean_object(key: &str) -> Value {
    json!({
        "type": "object",
        "properties": {key: {"type": "boolean"}},
        "required": [key],
        "additionalProperties": false,
    })
}

/// The schema of `{"<key>": "<one of values>"}`.
pub fn enum_object(key: &str, values: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": {key: {"type": "string", "enum": values}},
        "required": [key],
        "additionalProperties": false,
    })
}
