//! The model layer against scripted fake servers, one per wire format: request bodies per arm,
//! answers good and bad, transport faults, limits, the test-file guard and the key.

mod answers;
pub(crate) mod fake_server;
mod requests;
mod secrets;
mod steps;
mod transport;
mod variance;

use std::future::Future;
use std::path::Path;

use claimflow::models::{ApiKey, ModelClient};
use claimflow::pipeline::ModelSpec;
use claimflow::pipeline::Provider;
use serde_json::{Value, json};

use fake_server::FakeServer;

/// A key no test output may ever contain.
pub const KEY: &str = "sk-test-7f3a9c1e5b2d4068af1c3e5b7d9f2a4c";

/// Runs a future on a fresh runtime.
pub fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(future)
}

/// An entry of `provider` with a price and short timeouts.
pub fn spec(provider: Provider) -> ModelSpec {
    ModelSpec {
        price_per_mtok: Some(claimflow::pipeline::Price {
            input: 0.25,
            output: 1.0,
        }),
        timeout: 5.0,
        ..ModelSpec::new(provider, "test-model")
    }
}

/// A client of `spec` talking to `server`, with the test key (none for `llama-server`) and a
/// backoff short enough for tests.
pub fn client(server: &FakeServer, spec: &ModelSpec) -> ModelClient {
    let key = (spec.provider != Provider::LlamaServer).then(|| ApiKey::new(KEY));
    ModelClient::new("judge", spec, &server.url("/v1"), key)
        .expect("a client")
        .with_backoff(claimflow::models::Backoff {
            base: std::time::Duration::from_millis(20),
            cap: std::time::Duration::from_millis(200),
        })
}

/// A successful answer body of `provider` whose text is `text`.
pub fn answer(provider: Provider, text: &str) -> Value {
    match provider {
        Provider::Openai | Provider::LlamaServer => json!({
            "id": "chatcmpl-1",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 10, "total_tokens": 1010},
        }),
        Provider::Anthropic => json!({
            "id": "msg_1",
            "type": "message",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 1000, "output_tokens": 10},
        }),
        Provider::Gemini => json!({
            "candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                            "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 1000, "candidatesTokenCount": 10},
        }),
    }
}

/// A prompt file of the repository.
pub fn prompt(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("prompts")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// A claim as a model sees it.
pub const CLAIM: &str = "def test_parse_url_returns_a_tuple():\n    assert parse_url(\"http://a/b\") == (\"http\", \"a\", \"/b\")\n";

/// A source-only diff.
pub const DIFF: &str = "diff --git a/pkg/urls.py b/pkg/urls.py\nindex 1111111..2222222 100644\n--- a/pkg/urls.py\n+++ b/pkg/urls.py\n@@ -1,3 +1,3 @@\n def parse_url(url):\n-    return tuple(split(url))\n+    return Url(*split(url))\n";
