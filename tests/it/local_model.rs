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

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The model arms of the demo, as `pipelines/demo.yaml` writes them (`judge` falling back to the
/// local model when its key is not set), over a 4-claim seeded sample of a few demo commits.
const DEMO_MODEL_ARMS: &str = r#"version: 1
name: demo
repos:
  - {name: demo, corpus: corpus/demo, branch: main, split: dev, python: ["3.11"]}
models:
  judge: {provider: openai, model: gpt-4.1-mini, api_key_env: CLAIMFLOW_IT_UNSET_KEY, fallback: local}
  local: {provider: llama-server, max_output_tokens: 128}
steps:
  rank:   {uses: rank-commits, with: {top: 4}}
  claims: {uses: mine-claims, needs: [rank]}
  truth:  {uses: oracle, needs: [claims], with: {runs: 2}}
  sample: {uses: stratify, needs: [truth], with: {flip_rate: 0.25, seed: 1, size: 4}}
  a5:      {uses: llm-arm, needs: [claims, sample], with: {question: a5, prompt: prompts/a5.txt, model: judge}}
  a5c:     {uses: llm-arm, needs: [claims, sample], with: {question: a5c, prompt: prompts/a5c.txt, model: judge}}
  a6_base: {uses: llm-arm, needs: [claims, sample], with: {question: a6_base, prompt: prompts/a6_base.txt, model: judge}}
  a6_risk: {uses: llm-arm, needs: [claims, sample], with: {question: a6_risk, prompt: prompts/a6_risk.txt, model: judge}}
  prose_render: {uses: prose-render, needs: [claims, sample], with: {prompt: prompts/prose_render.txt, model: judge}}
  prose:
    uses: llm-arm
    needs: [claims, sample, prose_render]
    with: {question: a6_risk, prompt: prompts/a6_risk.txt, model: judge, notes: prose_render}
  stats:
    uses: stats
    needs: [truth, sample, a5, a5c, a6_base, a6_risk, prose]
    with: {bootstrap: 200, seed: 1}
  report: {uses: report, needs: [stats]}
"#;

/// The one run of the demo's model arms on the real local model: claimflow starts the server
/// itself (no `base_url`), every model arm writes a prediction for each sampled claim, coverage is
/// reported, the server is gone when the run ends, and a second run is all cache hits and starts
/// no server.
#[test]
fn the_demo_model_arms_run_on_the_local_model_claimflow_starts() {
    if provisioned().is_none() {
        return;
    }
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let project = Project::new();
    copy_dir(&manifest.join("corpus/demo"), &project.path("corpus/demo"));
    copy_dir(&manifest.join("prompts"), &project.path("prompts"));
    project.file("pipeline.yaml", DEMO_MODEL_ARMS);
    let ran = project.ok(&["run", "pipeline.yaml", "-j", "2"]);
    assert!(
        ran.stderr.contains(
            "model judge: CLAIMFLOW_IT_UNSET_KEY is not set; using local (llama-server, \
             SmolLM2-135M-Instruct.Q4_1) — set CLAIMFLOW_IT_UNSET_KEY to use gpt-4.1-mini"
        ),
        "{}",
        ran.stderr
    );
    assert_eq!(
        ran.stderr.matches("starting the local model").count(),
        1,
        "one server for every step: {}",
        ran.stderr
    );
    let sampled = project.read("results/demo/sample.jsonl").lines().count();
    assert!(sampled >= 2, "the sample has claims to judge");
    let stats: Value = serde_json::from_str(&project.read("results/demo/stats.json")).unwrap();
    for arm in ["a5", "a5c", "a6_base", "a6_risk", "prose"] {
        let predictions = project.read(&format!("results/demo/predictions/{arm}.jsonl"));
        assert_eq!(predictions.lines().count(), sampled, "{arm}: {predictions}");
        for line in predictions.lines() {
            let prediction: Value = serde_json::from_str(line).unwrap();
            assert!(
                ["held", "flipped", "none"].contains(&prediction["verdict"].as_str().unwrap()),
                "{arm}: {line}"
            );
        }
        let coverage = &stats["arms"][arm]["coverage"];
        assert!(
            coverage.is_number(),
            "{arm}: no coverage in {}",
            stats["arms"][arm]
        );
    }
    let notes = project.read("results/demo/notes/prose_render.jsonl");
    assert_eq!(notes.lines().count(), sampled, "{notes}");
    // The server stopped with the run: its port answers no more.
    let log = std::fs::read_to_string(project.path(".claimflow/logs/llama-server.log")).unwrap();
    let port: u16 = log
        .split("listening on http://127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|digits| digits.parse().ok())
        .expect("the server logged its port");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    // Everything cached: no server is started at all.
    let again = project.ok(&["run", "pipeline.yaml", "-j", "2"]);
    assert!(
        !again.stderr.contains("starting the local model"),
        "{}",
        again.stderr
    );
    assert!(
        again.stderr.contains("run finished: 0 computed"),
        "{}",
        again.stderr
    );
}
