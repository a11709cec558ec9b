//! The exact request each arm sends, per wire format: the prompt file as the system message, the
//! user message of the paper, the structured-output part, the headers (the key shown as `[KEY]`).

use claimflow::models::guard::Forbidden;
use claimflow::models::{Question, ask, render_request};
use claimflow::pipeline::Provider;

use super::fake_server::{FakeServer, Recorded, Reply};
use super::{CLAIM, DIFF, KEY, answer, block_on, client, prompt, spec};

/// The request as a reviewer reads it: method, path, the headers that matter, the body.
fn render(request: &Recorded) -> String {
    let mut text = format!("{} {}\n", request.method, request.path);
    for name in [
        "authorization",
        "x-api-key",
        "x-goog-api-key",
        "anthropic-version",
        "content-type",
    ] {
        if let Some(value) = request.header(name) {
            text.push_str(&format!("{name}: {}\n", value.replace(KEY, "[KEY]")));
        }
    }
    let body = serde_json::to_string_pretty(&request.json()).expect("JSON prints");
    text.push('\n');
    text.push_str(&body);
    text
}

fn sent(provider: Provider, question: Question, structured: bool) -> Recorded {
    let text = match question {
        Question::A5 | Question::A5c => r#"{"semantics_preserving": true}"#,
        Question::A6Base | Question::A6Risk => r#"{"verdict": "held"}"#,
    };
    let server = FakeServer::always(Reply::json(answer(provider, text)));
    let spec = claimflow::pipeline::ModelSpec {
        structured_output: structured,
        ..spec(provider)
    };
    let client = client(&server, &spec);
    let prompt = prompt(&format!("{}.txt", question.name()));
    block_on(ask(
        &client,
        question,
        &prompt,
        CLAIM,
        DIFF,
        &Forbidden::default(),
    ))
    .expect("the call succeeds");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    requests.into_iter().next().unwrap()
}

#[test]
fn request_bodies_per_arm_and_wire_format() {
    for provider in Provider::ALL {
        for question in Question::ALL {
            let request = sent(provider, question, true);
            insta::assert_snapshot!(
                format!("{}_{}", provider.name(), question.name()),
                render(&request)
            );
        }
    }
}

#[test]
fn without_structured_output_the_prompt_alone_asks_for_json() {
    for provider in [Provider::Openai, Provider::Anthropic, Provider::Gemini] {
        let request = sent(provider, Question::A6Risk, false);
        let body = request.body;
        for structured in ["response_format", "tool_choice", "responseSchema"] {
            assert!(!body.contains(structured), "{provider}: {body}");
        }
    }
}

#[test]
fn the_prose_renderer_sees_the_test_source_alone() {
    let server = FakeServer::always(Reply::json(answer(
        Provider::Openai,
        "parse_url splits a URL into a tuple.",
    )));
    let client = client(&server, &spec(Provider::Openai));
    let request = render_request(&prompt("prose_render.txt"), CLAIM);
    let completion = block_on(client.complete(&request)).unwrap();
    assert_eq!(completion.text, "parse_url splits a URL into a tuple.");
    insta::assert_snapshot!(render(&server.requests()[0]));
}
