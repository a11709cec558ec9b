//! Answers good, odd and garbage, over each wire format: a verdict only from exactly one JSON
//! object with the question's key; anything else is `none` with the raw answer kept.

use claimflow::models::guard::Forbidden;
use claimflow::models::{ModelError, Question, ask};
use claimflow::pipeline::Provider;
use claimflow::records::Verdict;

use super::fake_server::{FakeServer, Reply};
use super::{CLAIM, DIFF, answer, block_on, client, prompt, spec};

fn verdict_of(
    provider: Provider,
    question: Question,
    text: &str,
) -> (Verdict, Option<String>, String) {
    let server = FakeServer::always(Reply::json(answer(provider, text)));
    let answered = block_on(ask(
        &client(&server, &spec(provider)),
        question,
        &prompt("a6_risk.txt"),
        CLAIM,
        DIFF,
        &Forbidden::default(),
    ))
    .expect("the call succeeds");
    (
        answered.reading.verdict,
        answered.reading.problem,
        answered.completion.text,
    )
}

#[test]
fn good_and_odd_answers_give_verdicts() {
    for provider in Provider::ALL {
        let cases = [
            (
                Question::A6Risk,
                r#"{"verdict": "flipped"}"#,
                Verdict::Flipped,
            ),
            (
                Question::A6Base,
                "```json\n{\"verdict\": \"held\"}\n```",
                Verdict::Held,
            ),
            (
                Question::A5,
                r#"{"semantics_preserving": false}"#,
                Verdict::Flipped,
            ),
            (
                Question::A5c,
                "The answer is {\"semantics_preserving\": true}.",
                Verdict::Held,
            ),
        ];
        for (question, text, expected) in cases {
            let (verdict, problem, _) = verdict_of(provider, question, text);
            assert_eq!(verdict, expected, "{provider} {question}: {text}");
            assert_eq!(problem, None);
        }
    }
}

#[test]
fn garbage_is_no_verdict_and_the_raw_answer_is_kept() {
    let cases = [
        "I think it still holds.",
        r#"{"verdict": "probably held"}"#,
        r#"{"verdict": "held"}{"verdict": "flipped"}"#,
        "",
        "{\"verdict\": ",
    ];
    for text in cases {
        let (verdict, problem, raw) = verdict_of(Provider::Openai, Question::A6Risk, text);
        assert_eq!(verdict, Verdict::None, "{text}");
        assert!(problem.is_some(), "{text}");
        assert_eq!(raw, text);
    }
}

#[test]
fn a_planted_test_file_is_refused_before_sending() {
    let server = FakeServer::always(Reply::json(answer(Provider::Openai, "{}")));
    let planted = format!(
        "{DIFF}diff --git a/tests/test_urls.py b/tests/test_urls.py\n--- a/tests/test_urls.py\n+++ b/tests/test_urls.py\n@@ -1 +1 @@\n-    assert parse_url(\"x\") == ()\n+    assert parse_url(\"x\") == Url()\n"
    );
    for question in Question::ALL {
        let error = block_on(ask(
            &client(&server, &spec(Provider::Openai)),
            question,
            &prompt("a6_risk.txt"),
            CLAIM,
            &planted,
            &Forbidden::default(),
        ))
        .unwrap_err();
        assert!(matches!(error, ModelError::Leak { .. }), "{error}");
        assert!(error.to_string().contains("tests/test_urls.py"), "{error}");
    }
    assert_eq!(server.count(), 0, "nothing may be sent");
}
