//! Reading a model's answer as a verdict, and nothing more.
//!
//! A structured answer is one JSON object; an unstructured one may wrap it in prose or a code
//! fence, so the reader finds every JSON object in the text and accepts exactly one. No object,
//! two objects, a missing key or a value outside the question's is no verdict (`none`), with the
//! reason kept: an answer is never guessed, and a question is never asked again.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::question::{Question, SEMANTICS_PRESERVING, VERDICT};
use crate::records::Verdict;

/// What an answer says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    pub verdict: Verdict,
    /// Why there is no verdict (`None` when there is one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl Reading {
    fn none(problem: impl Into<String>) -> Self {
        Reading {
            verdict: Verdict::None,
            problem: Some(problem.into()),
        }
    }
}

/// Reads `text` as an answer to `question`.
pub fn read(question: Question, text: &str) -> Reading {
    let object = match one_object(text) {
        Ok(object) => object,
        Err(problem) => return Reading::none(problem),
    };
    if question.about_behaviour() {
        match object.get(SEMANTICS_PRESERVING) {
            Some(Value::Bool(true)) => verdict(Verdict::Held),
            Some(Value::Bool(false)) => verdict(Verdict::Flipped),
            Some(other) => Reading::none(format!(
                "`{SEMANTICS_PRESERVING}` is {other}, not true or false"
            )),
            None => Reading::none(format!("the answer has no `{SEMANTICS_PRESERVING}`")),
        }
    } else {
        match object.get(VERDICT) {
            Some(Value::String(word)) => match word.trim().to_ascii_lowercase().as_str() {
                "held" => verdict(Verdict::Held),
                "flipped" => verdict(Verdict::Flipped),
                _ => Reading::none(format!(
                    "`{VERDICT}` is {word:?}, not \"held\" or \"flipped\""
                )),
            },
            Some(other) => Reading::none(format!("`{VERDICT}` is {other}, not a string")),
            None => Reading::none(format!("the answer has no `{VERDICT}`")),
        }
    }
}

fn verdict(verdict: Verdict) -> Reading {
    Reading {
        verdict,
        problem: None,
    }
}

/// The one JSON object in `text`, wherever it sits; an error says how many there were.
pub fn one_object(text: &str) -> Result<Map<String, Value>, String> {
    let mut objects = Vec::new();
    let mut position = 0;
    while let Some(offset) = text[position..].find('{') {
        let start = position + offset;
        let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(Value::Object(object))) => {
                objects.push(object);
                position = start + stream.byte_offset();
            }
            _ => position = start + 1,
        }
    }
    match objects.len() {
        1 => Ok(objects.pop().expect("one object")),
        0 if text.trim().is_empty() => Err("the answer is empty".to_string()),
        0 => Err("the answer holds no JSON object".to_string()),
        count => Err(format!("the answer holds {count} JSON objects, not one")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_answers_read_directly() {
        assert_eq!(
            read(Question::A5, r#"{"semantics_preserving": true}"#).verdict,
            Verdict::Held
        );
        assert_eq!(
            read(Question::A5c, r#"{"semantics_preserving":false}"#).verdict,
            Verdict::Flipped
        );
        assert_eq!(
            read(Question::A6Risk, r#"{"verdict": "flipped"}"#).verdict,
            Verdict::Flipped
        );
        assert_eq!(
            read(Question::A6Base, r#"{"verdict": "held"}"#).verdict,
            Verdict::Held
        );
    }

    #[test]
    fn an_object_in_prose_or_a_fence_is_found() {
        let text = "Sure.\n```json\n{\"verdict\": \"Held\"}\n```\nHope that helps {not json";
        assert_eq!(read(Question::A6Risk, text).verdict, Verdict::Held);
    }

    #[test]
    fn nested_objects_count_once() {
        let text = r#"{"verdict": "flipped", "why": {"name": "f"}}"#;
        assert_eq!(read(Question::A6Risk, text).verdict, Verdict::Flipped);
    }

    #[test]
    fn anything_else_is_no_verdict_with_a_reason() {
        let cases = [
            (Question::A6Risk, "", "empty"),
            (Question::A6Risk, "held", "no JSON object"),
            (
                Question::A6Risk,
                r#"{"verdict": "held"} {"verdict": "flipped"}"#,
                "2 JSON objects",
            ),
            (Question::A6Risk, r#"{"verdict": "maybe"}"#, "not \"held\""),
            (Question::A6Risk, r#"{"answer": "held"}"#, "no `verdict`"),
            (
                Question::A5,
                r#"{"semantics_preserving": "true"}"#,
                "not true or false",
            ),
            (
                Question::A5,
                r#"{"verdict": "held"}"#,
                "no `semantics_preserving`",
            ),
        ];
        for (question, text, problem) in cases {
            let reading = read(question, text);
            assert_eq!(reading.verdict, Verdict::None, "{text}");
            let reason = reading.problem.unwrap();
            assert!(reason.contains(problem), "{text}: {reason}");
        }
    }
}
