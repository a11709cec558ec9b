//! The key reaches the auth header and nothing else: not an error message (even when a server
//! echoes it), not a completion, not a debug print.

use claimflow::models::guard::Forbidden;
use claimflow::models::{ModelClient, ModelError, Question, ask};
use claimflow::pipeline::ModelSpec;
use claimflow::pipeline::Provider;

use super::fake_server::{FakeServer, Reply};
use super::{CLAIM, DIFF, KEY, answer, block_on, client, prompt, spec};

#[test]
fn the_key_is_only_in_the_auth_header() {
    for provider in [Provider::Openai, Provider::Anthropic, Provider::Gemini] {
        let echo = format!(r#"{{"error": "bad key {KEY}"}}"#);
        let server = FakeServer::start(move |index, _| match index {
            0 => Reply::status(401, &echo),
            1 => Reply::status(400, &echo),
            2 => Reply::status(500, &echo),
            _ => Reply::json(answer(provider, r#"{"verdict": "held"}"#)),
        });
        let spec = ModelSpec {
            retries: 0,
            ..spec(provider)
        };
        let client = client(&server, &spec);
        let mut written = format!("{client:?}");
        for _ in 0..4 {
            match block_on(ask(
                &client,
                Question::A6Risk,
                &prompt("a6_risk.txt"),
                CLAIM,
                DIFF,
                &Forbidden::default(),
            )) {
                Ok(answered) => {
                    written.push_str(&serde_json::to_string(&answered).unwrap());
                    written.push_str(&format!("{answered:?}"));
                }
                Err(error) => {
                    written.push_str(&format!("{error} {error:?}"));
                }
            }
        }
        assert!(
            !written.contains(KEY),
            "{provider}: the key leaked into {written}"
        );
        assert!(written.contains("[redacted]"), "{provider}: {written}");
        let requests = server.requests();
        assert_eq!(requests.len(), 4);
        for request in requests {
            assert!(!request.body.contains(KEY));
            assert!(!request.path.contains(KEY), "{}", request.path);
            let carriers: Vec<_> = request
                .headers
                .iter()
                .filter(|(_, value)| value.contains(KEY))
                .map(|(name, _)| name.as_str())
                .collect();
            let expected = match provider {
                Provider::Anthropic => "x-api-key",
                Provider::Gemini => "x-goog-api-key",
                _ => "authorization",
            };
            assert_eq!(carriers, [expected]);
        }
    }
}

#[test]
fn a_named_key_variable_that_is_unset_fails_before_any_request() {
    let spec = ModelSpec {
        api_key_env: Some("CLAIMFLOW_TEST_KEY_THAT_IS_NEVER_SET".into()),
        ..spec(Provider::Openai)
    };
    let error = ModelClient::from_spec("judge", &spec, None).unwrap_err();
    assert!(matches!(error, ModelError::MissingKey { .. }));
    insta::assert_snapshot!(error.to_string(), @"model `judge`: the variable `CLAIMFLOW_TEST_KEY_THAT_IS_NEVER_SET` named by `api_key_env` is not set; export the key in it");
}

#[test]
fn a_command_step_never_sees_a_models_key_variable() {
    let project = crate::common::project::Project::new();
    project.file(
        "pipeline.yaml",
        r#"version: 1
name: keys
models:
  judge: {provider: openai, model: m, api_key_env: CLAIMFLOW_IT_COMMAND_KEY}
steps:
  env:
    uses: command
    with:
      run: echo "key=${CLAIMFLOW_IT_COMMAND_KEY:-unset} other=${CLAIMFLOW_IT_OTHER:-unset}" > env.txt
      outputs: [env.txt]
      # Named, the other variable passes; the model's key never does, even when named.
      env: [CLAIMFLOW_IT_OTHER, CLAIMFLOW_IT_COMMAND_KEY]
"#,
    );
    let ran = project
        .command(&["run", "pipeline.yaml"])
        .env("CLAIMFLOW_IT_COMMAND_KEY", KEY)
        .env("CLAIMFLOW_IT_OTHER", "kept")
        .output()
        .expect("claimflow runs");
    crate::common::assert_ran(&ran, "the run");
    assert_eq!(project.read("env.txt"), "key=unset other=kept\n");
}
