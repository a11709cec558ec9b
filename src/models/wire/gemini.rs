//! Gemini's `generateContent`. Structured output is `responseSchema`, in Gemini's OpenAPI dialect
//! of JSON Schema (upper-case type names, no `additionalProperties`).

use serde_json::{Map, Value, json};

use super::{WireAnswer, count};
use crate::models::request::{AnswerFormat, ChatRequest};
use crate::pipeline::ModelSpec;

pub fn body(spec: &ModelSpec, request: &ChatRequest) -> Value {
    let mut generation = json!({
        "temperature": spec.temperature,
        "maxOutputTokens": spec.max_output_tokens,
    });
    if let (AnswerFormat::Json { schema, .. }, true) = (&request.format, spec.structured_output) {
        generation["responseMimeType"] = json!("application/json");
        generation["responseSchema"] = dialect(schema);
    }
    json!({
        "systemInstruction": {"parts": [{"text": request.system}]},
        "contents": [{"role": "user", "parts": [{"text": request.user}]}],
        "generationConfig": generation,
    })
}

/// A JSON Schema rewritten in Gemini's dialect.
fn dialect(schema: &Value) -> Value {
    match schema {
        Value::Object(fields) => {
            let mut out = Map::new();
            for (key, value) in fields {
                match (key.as_str(), value) {
                    ("additionalProperties", _) => {}
                    ("type", Value::String(name)) => {
                        out.insert(key.clone(), json!(name.to_uppercase()));
                    }
                    _ => {
                        out.insert(key.clone(), dialect(value));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(dialect).collect()),
        other => other.clone(),
    }
}

pub fn answer(body: &Value) -> Result<WireAnswer, String> {
    let candidate = body
        .pointer("/candidates/0")
        .ok_or("the answer has no `candidates[0]`")?;
    let text = candidate
        .pointer("/content/parts")
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter(|part| part.get("thought").and_then(Value::as_bool) != Some(true))
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect::<String>()
        })
        .unwrap_or_default();
    let usage = body.get("usageMetadata");
    let thoughts = count(usage.and_then(|usage| usage.get("thoughtsTokenCount")));
    Ok(WireAnswer {
        text,
        tokens_in: count(usage.and_then(|usage| usage.get("promptTokenCount"))),
        // Thinking tokens are billed as output.
        tokens_out: count(usage.and_then(|usage| usage.get("candidatesTokenCount"))) + thoughts,
        stop: candidate
            .get("finishReason")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::request::enum_object;

    #[test]
    fn the_schema_is_rewritten_in_gemini_terms() {
        let schema = dialect(&enum_object("verdict", &["held", "flipped"]));
        assert_eq!(
            schema,
            json!({"type": "OBJECT", "properties": {"verdict": {"type": "STRING",
                   "enum": ["held", "flipped"]}}, "required": ["verdict"]})
        );
    }

    #[test]
    fn reads_parts_and_usage() {
        let body = json!({
            "candidates": [{"content": {"parts": [{"text": "{\"verdict\":"}, {"text": "\"held\"}"}]},
                            "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 5},
        });
        let answer = answer(&body).unwrap();
        assert_eq!(answer.text, "{\"verdict\":\"held\"}");
        assert_eq!((answer.tokens_in, answer.tokens_out), (50, 5));
    }
}
