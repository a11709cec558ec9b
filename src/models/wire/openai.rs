//! OpenAI chat completions, spoken by hosted gateways, vLLM, Ollama and llama.cpp's `llama-server`.

use serde_json::{Value, json};

use super::{WireAnswer, count};
use crate::models::request::{AnswerFormat, ChatRequest};
use crate::pipeline::ModelSpec;

pub fn body(spec: &ModelSpec, request: &ChatRequest) -> Value {
    let mut body = json!({
        "model": spec.model,
        "messages": [
            {"role": "system", "content": request.system},
            {"role": "user", "content": request.user},
        ],
        "temperature": spec.temperature,
        "max_tokens": spec.max_output_tokens,
    });
    if let (AnswerFormat::Json { name, schema }, true) = (&request.format, spec.structured_output) {
        body["response_format"] = json!({
            "type": "json_schema",
            "json_schema": {"name": name, "strict": true, "schema": schema},
        });
    }
    body
}

pub fn answer(body: &Value) -> Result<WireAnswer, String> {
    let choice = body
        .pointer("/choices/0")
        .ok_or("the answer has no `choices[0]`")?;
    let message = choice
        .get("message")
        .ok_or("the answer's `choices[0]` has no `message`")?;
    // A refusal is the model's answer too: it is kept as text and read as no verdict.
    let text = match (message.get("content"), message.get("refusal")) {
        (Some(Value::String(text)), _) => text.clone(),
        (_, Some(Value::String(refusal))) => refusal.clone(),
        (Some(Value::Null) | None, _) => String::new(),
        (Some(other), _) => other.to_string(),
    };
    Ok(WireAnswer {
        text,
        tokens_in: count(body.pointer("/usage/prompt_tokens")),
        tokens_out: count(body.pointer("/usage/completion_tokens")),
        stop: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_content_usage_and_finish_reason() {
        let body = json!({
            "choices": [{"message": {"role": "assistant", "content": "{\"verdict\": \"held\"}"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 7},
        });
        let answer = answer(&body).unwrap();
        assert_eq!(answer.text, "{\"verdict\": \"held\"}");
        assert_eq!((answer.tokens_in, answer.tokens_out), (120, 7));
        assert_eq!(answer.stop.as_deref(), Some("stop"));
    }

    #[test]
    fn a_body_without_choices_is_an_error() {
        assert!(answer(&json!({"error": "x"})).is_err());
    }
}
