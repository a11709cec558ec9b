//! Transport faults: retried with backoff, Retry-After waited out, bounded; timeouts; limits.

use std::sync::Arc;
use std::time::{Duration, Instant};

use claimflow::models::{ChatRequest, ErrorClass, ModelError, Question};
use claimflow::pipeline::ModelSpec;
use claimflow::pipeline::Provider;

use super::fake_server::{FakeServer, Reply};
use super::{answer, block_on, client, spec};

const HELD: &str = r#"{"verdict": "held"}"#;

fn request() -> ChatRequest {
    ChatRequest {
        system: "Answer ONLY with JSON.".into(),
        user: "CLAIM:\nx\n\nDIFF:\ny".into(),
        format: Question::A6Risk.format(),
    }
}

#[test]
fn a_429_with_retry_after_is_waited_out_then_retried() {
    let server = FakeServer::start(|index, _| match index {
        0 => Reply::status(429, r#"{"error": "slow down"}"#).header("retry-after", "1"),
        _ => Reply::json(answer(Provider::Openai, HELD)),
    });
    let client = client(&server, &spec(Provider::Openai));
    let started = Instant::now();
    let completion = block_on(client.complete(&request())).unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(completion.attempts, 2);
    assert_eq!(completion.text, HELD);
    assert_eq!(server.count(), 2);
}

#[test]
fn server_errors_and_dropped_connections_are_retried() {
    for provider in [Provider::Openai, Provider::Anthropic, Provider::Gemini] {
        let server = FakeServer::start(move |index, _| match index {
            0 => Reply::status(500, "internal"),
            1 => Reply::dropped(),
            2 => Reply::status(503, "overloaded"),
            _ => Reply::json(answer(provider, HELD)),
        });
        let client = client(&server, &spec(provider));
        let completion = block_on(client.complete(&request())).unwrap();
        assert_eq!(completion.attempts, 4, "{provider}");
        assert_eq!(
            (completion.usage.tokens_in, completion.usage.tokens_out),
            (1000, 10)
        );
        assert_eq!(server.count(), 4);
    }
}

#[test]
fn retries_are_bounded_and_the_failure_is_transient() {
    let server = FakeServer::always(Reply::status(502, "bad gateway"));
    let spec = ModelSpec {
        retries: 2,
        ..spec(Provider::Openai)
    };
    let error = block_on(client(&server, &spec).complete(&request())).unwrap_err();
    assert_eq!(server.count(), 3);
    assert_eq!(error.class(), ErrorClass::Transient);
    assert_eq!(
        error.to_string(),
        "model `judge`: gave up after 3 attempts: status 502: bad gateway"
    );
}

#[test]
fn a_slow_answer_hits_the_timeout_and_is_retried() {
    let server = FakeServer::start(|index, _| {
        let reply = Reply::json(answer(Provider::Openai, HELD));
        if index == 0 {
            reply.after(Duration::from_secs(3))
        } else {
            reply
        }
    });
    let spec = ModelSpec {
        timeout: 0.3,
        ..spec(Provider::Openai)
    };
    let started = Instant::now();
    let completion = block_on(client(&server, &spec).complete(&request())).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(completion.attempts, 2);

    let slow = FakeServer::always(
        Reply::json(answer(Provider::Openai, HELD)).after(Duration::from_secs(3)),
    );
    let spec = ModelSpec {
        timeout: 0.2,
        retries: 1,
        ..spec
    };
    let error = block_on(client(&slow, &spec).complete(&request())).unwrap_err();
    assert_eq!(
        error.to_string(),
        "model `judge`: gave up after 2 attempts: no answer within 0.2 s"
    );
}

#[test]
fn a_refused_request_is_not_retried() {
    let server = FakeServer::always(Reply::status(400, r#"{"error": "unknown field"}"#));
    let error =
        block_on(client(&server, &spec(Provider::Openai)).complete(&request())).unwrap_err();
    assert_eq!(server.count(), 1);
    assert!(
        matches!(error, ModelError::Refused { status: 400, .. }),
        "{error}"
    );
    assert_eq!(error.class(), ErrorClass::Failure);
}

#[test]
fn a_rejected_key_is_the_users_to_fix() {
    let server = FakeServer::always(Reply::status(401, r#"{"error": "invalid key"}"#));
    let error =
        block_on(client(&server, &spec(Provider::Anthropic)).complete(&request())).unwrap_err();
    assert_eq!(server.count(), 1);
    assert_eq!(error.class(), ErrorClass::Input);
    assert!(error.to_string().contains("api_key_env"), "{error}");
}

#[test]
fn concurrency_never_exceeds_the_limit() {
    let server = FakeServer::always(
        Reply::json(answer(Provider::Openai, HELD)).after(Duration::from_millis(100)),
    );
    let spec = ModelSpec {
        concurrency: 3,
        ..spec(Provider::Openai)
    };
    let client = Arc::new(client(&server, &spec));
    block_on(async {
        let mut calls = tokio::task::JoinSet::new();
        for _ in 0..12 {
            let client = Arc::clone(&client);
            calls.spawn(async move { client.complete(&request()).await });
        }
        while let Some(done) = calls.join_next().await {
            done.unwrap().unwrap();
        }
    });
    assert_eq!(server.count(), 12);
    assert_eq!(server.most_in_flight(), 3);
}
