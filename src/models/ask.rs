//! One arm question, end to end: the user message built from a claim and a source-only diff, the
//! guard run on it, the request sent, the answer read. Also the prose renderer's request and note.

use serde::{Deserialize, Serialize};

use super::answer::{Reading, read};
use super::client::{Completion, ModelClient};
use super::error::ModelError;
use super::guard::{self, Forbidden};
use super::question::Question;
use super::request::{AnswerFormat, ChatRequest};

/// A question's request: `prompt` (the prompt file's text) as the system message and the
/// question's user message, after the guard has read the diff. A refusal names what it found.
pub fn question_request(
    question: Question,
    prompt: &str,
    claim: &str,
    diff: &str,
    forbidden: &Forbidden,
) -> Result<ChatRequest, String> {
    guard::check(diff, forbidden)?;
    Ok(ChatRequest {
        system: system_prompt(prompt),
        user: question.user_message(claim, diff),
        format: question.format(),
    })
}

/// The prose renderer's request: the parent's test source alone, answered in free text.
pub fn render_request(prompt: &str, test_source: &str) -> ChatRequest {
    ChatRequest {
        system: system_prompt(prompt),
        user: test_source.to_string(),
        format: AnswerFormat::Text,
    }
}

/// A prompt file's text as sent: the file's trailing newline is not part of the prompt.
pub fn system_prompt(file_text: &str) -> String {
    file_text.trim_end().to_string()
}

/// An answered question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answered {
    pub completion: Completion,
    pub reading: Reading,
}

/// Asks `question` about `claim` and `diff`; a message the guard refuses is never sent.
pub async fn ask(
    client: &ModelClient,
    question: Question,
    prompt: &str,
    claim: &str,
    diff: &str,
    forbidden: &Forbidden<'_>,
) -> Result<Answered, ModelError> {
    let request =
        question_request(question, prompt, claim, diff, forbidden).map_err(|problem| {
            ModelError::Leak {
                model: client.name().to_string(),
                problem,
            }
        })?;
    let completion = client.complete(&request).await?;
    let reading = read(question, &completion.text);
    Ok(Answered {
        completion,
        reading,
    })
}

/// The note in a renderer's answer, or why there is none.
pub fn note(answer: &str) -> Result<String, String> {
    let note = answer.trim();
    if note.is_empty() {
        return Err("the renderer gave an empty note".to_string());
    }
    Ok(note.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_file_is_sent_without_its_final_newline() {
        let request = question_request(
            Question::A6Risk,
            "Answer ONLY with JSON.\n",
            "def test_a(): assert f() == 1",
            "diff --git a/pkg/a.py b/pkg/a.py\n",
            &Forbidden::default(),
        )
        .unwrap();
        assert_eq!(request.system, "Answer ONLY with JSON.");
        assert!(request.user.starts_with("CLAIM:\ndef test_a()"));
    }

    #[test]
    fn a_refused_message_is_not_built() {
        let error = question_request(
            Question::A5,
            "p",
            "",
            "diff --git a/tests/test_a.py b/tests/test_a.py\n",
            &Forbidden::default(),
        )
        .unwrap_err();
        assert!(error.contains("tests/test_a.py"), "{error}");
    }

    #[test]
    fn an_empty_note_is_a_failure() {
        assert!(note("  \n").is_err());
        assert_eq!(
            note(" The parser returns a tuple.\n").unwrap(),
            "The parser returns a tuple."
        );
    }
}
