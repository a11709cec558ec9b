//! The embedded local model, for real: the provisioned `llama-server` and SmolLM2 (cached under the
//! claimflow cache, made by `claimflow models provision`) started on a loopback port and asked
//! model-arm questions with a `json_schema` response format, the only way this model answers in
//! JSON. `.ci/run` provisions the model first; under CI (or `CLAIMFLOW_REQUIRE_LOCAL_MODEL=1`) a
//! missing model fails these tests instead of skipping them.

use std::time::Duration;

use claimflow::local_model::{LocalServer, Provisioned, ServerOptions, models_dir};
use serde_json::{Value, json};

use crate::common::project::Project;

/// Whether the local model must be there (CI), rather than skipped when it was never provisioned.
fn required() -> bool {
    let set = |name: &str| {
        std::env::var(name).is_ok_and(|value| !value.is_empty() && value != "0" && value != "false")
    };
    set("CI") || set("CLAIMFLOW_REQUIRE_LOCAL_MODEL")
}

/// The provisioned local model, or `None` (with a note) when it is not there and not required.
fn provisioned() -> Option<Provisioned> {
    let models = models_dir();
    match Provisioned::load(&models).expect("the local model's descriptions read") {
        Some(provisioned) => Some(provisioned),
        None if required() => panic!(
            "the local model is not provisioned in {}: run `claimflow models provision` first \
             (.ci/run does)",
            models.display()
        ),
        None => {
            eprintln!(
                "skipped: the local model is not provisioned in {}; `claimflow models provision` makes it",
                models.display()
            );
            None
        }
    }
}

/// A system prompt and a claim + diff message of the size the A6 arms send (~3,000 characters).
fn a6_sized_messages() -> (String, String) {
    let system = "You judge whether a test still passes after a code change. You are shown a \
                  test (CLAIM) written against the parent commit and the source diff of the \
                  commit (DIFF, test files excluded). Answer held if the test still passes \
                  after the change, flipped if it now fails."
        .to_string();
    let test = "def test_lru_cache_evicts_the_least_recently_used():\n    cache = LRUCache(maxsize=2)\n    cache[1] = 1\n    cache[2] = 2\n    cache[1]\n    cache[3] = 3\n    assert 1 in cache\n    assert 2 not in cache\n    assert len(cache) == 2\n";
    let mut diff = String::from(
        "diff --git a/src/cachetools/lru.py b/src/cachetools/lru.py\n--- a/src/cachetools/lru.py\n+++ b/src/cachetools/lru.py\n@@ -10,12 +10,12 @@ class LRUCache(Cache):\n",
    );
    let mut line = 0;
    while diff.len() < 2_600 {
        line += 1;
        diff.push_str(&format!(
            "-    def __getitem__{line}(self, key, cache_getitem=Cache.__getitem__):\n+    def __getitem__{line}(self, key, cache_getitem=Cache.__getitem__, touch=True):\n         value = cache_getitem(self, key)\n-        self.__update(key)\n+        if touch:\n+            self.__update(key)\n"
        ));
    }
    (system, format!("CLAIM:\n{test}\nDIFF:\n{diff}"))
}

/// A chat completion request in the shape the model arms send, with a strict JSON schema.
fn request(model: &str, system: &str, user: &str, schema: Value) -> Value {
    json!({
        "model": model,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ],
        "temperature": 0,
        "seed": 1,
        "max_tokens": 48,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "answer", "strict": true, "schema": schema},
        },
    })
}

fn post(client: &reqwest::blocking::Client, server: &LocalServer, body: &Value) -> (u16, Value) {
    let response = client
        .post(format!("{}/chat/completions", server.base_url()))
        .json(body)
        .send()
        .expect("the local server answers");
    let status = response.status().as_u16();
    (status, response.json().expect("the answer is JSON"))
}

/// The message content of a chat completion, parsed as JSON.
fn content(answer: &Value) -> Value {
    let text = answer["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_else(|| panic!("no message content in {answer}"));
    serde_json::from_str(text).unwrap_or_else(|error| panic!("not JSON ({error}): {text:?}"))
}

#[test]
fn the_local_model_answers_every_arm_question_in_json_under_a_schema() {
    let Some(provisioned) = provisioned() else {
        return;
    };
    let server = LocalServer::start(
        &provisioned,
        &ServerOptions {
            parallel: 2,
            context_per_slot: 2048,
            max_answer_tokens: 256,
            ..ServerOptions::default()
        },
    )
    .unwrap_or_else(|error| panic!("{error}"));
    assert!(server.base_url().starts_with("http://127.0.0.1:"));
    assert!(server.base_url().ends_with("/v1"));
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(300))
        .build()
        .unwrap();
    let (system, user) = a6_sized_messages();

    // A6: {"verdict": "held" | "flipped"}.
    let verdict_schema = json!({
        "type": "object",
        "properties": {"verdict": {"type": "string", "enum": ["held", "flipped"]}},
        "required": ["verdict"],
        "additionalProperties": false,
    });
    let (status, answer) = post(
        &client,
        &server,
        &request(server.model_id(), &system, &user, verdict_schema),
    );
    assert_eq!(status, 200, "{answer}");
    let verdict = content(&answer);
    let object = verdict.as_object().expect("an object");
    assert_eq!(object.len(), 1, "{verdict}");
    assert!(
        ["held", "flipped"].contains(&object["verdict"].as_str().unwrap_or("")),
        "{verdict}"
    );
    assert!(answer["usage"]["prompt_tokens"].as_u64().unwrap() > 500);

    // A5: {"semantics_preserving": true | false}.
    let a5_schema = json!({
        "type": "object",
        "properties": {"semantics_preserving": {"type": "boolean"}},
        "required": ["semantics_preserving"],
        "additionalProperties": false,
    });
    let (status, answer) = post(
        &client,
        &server,
        &request(
            server.model_id(),
            "Does this diff preserve the program's semantics?",
            &user,
            a5_schema,
        ),
    );
    assert_eq!(status, 200, "{answer}");
    let preserving = content(&answer);
    assert!(
        preserving["semantics_preserving"].is_boolean()
            && preserving.as_object().unwrap().len() == 1,
        "{preserving}"
    );
}

#[test]
fn a_prompt_longer_than_a_slot_is_refused_not_truncated() {
    let Some(provisioned) = provisioned() else {
        return;
    };
    let server = LocalServer::start(
        &provisioned,
        &ServerOptions {
            parallel: 1,
            context_per_slot: 1024,
            max_answer_tokens: 64,
            ..ServerOptions::default()
        },
    )
    .unwrap_or_else(|error| panic!("{error}"));
    let client = reqwest::blocking::Client::new();
    let long = "x = 1\n".repeat(2_000);
    let schema = json!({"type": "object", "properties": {"verdict": {"type": "string"}}});
    let (status, answer) = post(
        &client,
        &server,
        &request(server.model_id(), "Answer.", &long, schema),
    );
    assert_eq!(status, 400, "{answer}");
    assert_eq!(
        answer["error"]["type"], "exceed_context_size_error",
        "{answer}"
    );
}

#[test]
fn models_provision_prints_where_the_local_model_is() {
    let Some(provisioned) = provisioned() else {
        return;
    };
    let project = Project::new();
    let ran = project.ok(&["models", "provision"]);
    assert!(
        ran.stdout
            .contains(&format!("server: {}", provisioned.server.display())),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout
            .contains(&format!("model_blake3: {}", provisioned.model_digest)),
        "{}",
        ran.stdout
    );
    // Already there: nothing to say on stderr, nothing rebuilt.
    assert_eq!(ran.stderr, "");
}
