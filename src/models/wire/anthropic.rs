//! Anthropic's Messages API. Structured output is a forced tool whose input schema is the answer's.

use serde_json::{Value, json};

use super::{WireAnswer, count};
use crate::models::request::{AnswerFormat, ChatRequest};
use crate::pipeline::ModelSpec;

pub fn body(spec: &ModelSpec, request: &ChatRequest) -> Value {
    let mut body = json!({
        "model": spec.model,
        "system": request.system,
        "messages": [{"role": "user", "content": request.user}],
        "max_tokens": spec.max_output_tokens,
        "temperature": spec.temperature,
    });
    if let (AnswerFormat::Json { name, schema }, true) = (&request.format, spec.structured_output) {
        body["tools"] = json!([{
            "name": name,
            "description": "Record the answer.",
            "input_schema": schema,
        }]);
        body["tool_choice"] = json!({"type": "tool", "name": name});
    }
    body
}

pub fn answer(body: &Value) -> Result<WireAnswer, String> {
    let blocks = body
        .get("content")
        .and_then(Value::as_array)
        .ok_or("the answer has no `content` list")?;
    let mut text = String::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("tool_use") => {
                let input = block.get("input").cloned().unwrap_or(Value::Null);
                text.push_str(&input.to_string());
            }
            _ => {}
        }
    }
    Ok(WireAnswer {
        text,
        tokens_in: count(body.pointer("/usage/input_tokens")),
        tokens_out: count(body.pointer("/usage/output_tokens")),
        stop: body
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forced_tool_answers_with_its_input() {
        let body = json!({
            "content": [{"type": "tool_use", "id": "t", "name": "verdict",
                         "input": {"verdict": "flipped"}}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 300, "output_tokens": 12},
        });
        let answer = answer(&body).unwrap();
        assert_eq!(answer.text, r#"{"verdict":"flipped"}"#);
        assert_eq!((answer.tokens_in, answer.tokens_out), (300, 12));
    }
}
