//! The questions the model arms ask (the paper's Appendix A), their user messages and answers.
//!
//! Every arm is one system prompt (a file under `prompts/`) over one user message: the
//! source-only diff alone for A5; `CLAIM:\n<test source>\n\nDIFF:\n<diff>` for A5C, A6 base and
//! A6 risk. The prose arm asks A6 risk's question with a prose note in place of the test source.

use serde::{Deserialize, Serialize};

use super::request::{AnswerFormat, boolean_object, enum_object};

/// The question a model arm asks.
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
#[serde(rename_all = "snake_case")]
pub enum Question {
    /// Does the diff preserve behaviour? Diff only, one call per commit.
    A5,
    /// A5's question, shown the claim too (the information control).
    A5c,
    /// Does the claim still hold? Binary form.
    A6Base,
    /// Does the claim still hold? Risk-framed.
    A6Risk,
}

/// The key of A5 and A5C's answer.
pub const SEMANTICS_PRESERVING: &str = "semantics_preserving";
/// The key of A6's answer.
pub const VERDICT: &str = "verdict";

impl Question {
    /// Every question, in the paper's order.
    pub const ALL: [Question; 4] = [
        Question::A5,
        Question::A5c,
        Question::A6Base,
        Question::A6Risk,
    ];

    /// The name a pipeline writes (`question: a6_risk`).
    pub fn name(self) -> &'static str {
        match self {
            Question::A5 => "a5",
            Question::A5c => "a5c",
            Question::A6Base => "a6_base",
            Question::A6Risk => "a6_risk",
        }
    }

    /// Every name a pipeline may write.
    pub fn names() -> Vec<&'static str> {
        Question::ALL
            .iter()
            .map(|question| question.name())
            .collect()
    }

    /// The question a pipeline names.
    pub fn parse(name: &str) -> Option<Question> {
        Question::ALL
            .into_iter()
            .find(|question| question.name() == name)
    }

    /// The prompt file the shipped pipelines use for it.
    pub fn default_prompt(self) -> &'static str {
        match self {
            Question::A5 => "prompts/a5.txt",
            Question::A5c => "prompts/a5c.txt",
            Question::A6Base => "prompts/a6_base.txt",
            Question::A6Risk => "prompts/a6_risk.txt",
        }
    }

    /// True when the model is shown the claim (every question but A5).
    pub fn sees_claim(self) -> bool {
        !matches!(self, Question::A5)
    }

    /// True when the question is about the commit alone, so one answer serves all its claims.
    pub fn per_commit(self) -> bool {
        !self.sees_claim()
    }

    /// Is the question about behaviour (A5, A5C) rather than about the claim (A6)?
    pub fn about_behaviour(self) -> bool {
        matches!(self, Question::A5 | Question::A5c)
    }

    /// The user message: the diff alone, or the claim and the diff. The claim's trailing newlines
    /// are dropped so that one blank line separates it from `DIFF:`, as the paper writes it.
    pub fn user_message(self, claim: &str, diff: &str) -> String {
        if self.sees_claim() {
            format!("CLAIM:\n{}\n\nDIFF:\n{diff}", claim.trim_end())
        } else {
            diff.to_string()
        }
    }

    /// The answer's shape.
    pub fn format(self) -> AnswerFormat {
        if self.about_behaviour() {
            AnswerFormat::Json {
                name: SEMANTICS_PRESERVING,
                schema: boolean_object(SEMANTICS_PRESERVING),
            }
        } else {
            AnswerFormat::Json {
                name: VERDICT,
                schema: enum_object(VERDICT, &["held", "flipped"]),
            }
        }
    }
}

impl std::fmt::Display for Question {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_follow_the_paper() {
        assert_eq!(Question::A5.user_message("def test_x(): ...", "D"), "D");
        for question in [Question::A5c, Question::A6Base, Question::A6Risk] {
            assert_eq!(
                question.user_message("def test_x():\n    assert f()\n", "diff --git a/x b/x\n"),
                "CLAIM:\ndef test_x():\n    assert f()\n\nDIFF:\ndiff --git a/x b/x\n"
            );
        }
    }

    #[test]
    fn names_round_trip_and_match_serde() {
        for question in Question::ALL {
            assert_eq!(Question::parse(question.name()), Some(question));
            assert_eq!(
                serde_json::to_value(question).unwrap(),
                serde_json::json!(question.name())
            );
        }
    }
}
