//! What the model step kinds (`llm-arm`, `prose-render`) share: one client per model entry and
//! run (so an entry's limits hold across steps; its requests run on the engine's runtime, as async
//! items),
//! the part of a model entry that enters a call's key, prompt files, and the record a call leaves
//! in the cache.
//!
//! A call's item key holds the provider, model id, the entry's `base_url` as written (none for the
//! local model claimflow starts: its pinned fingerprint instead), the sampling settings, the
//! prompt file's content, the user message's digests and the sample index; never the key, the
//! entry's name, its concurrency, rates, timeout or retries.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::cache::Digest;
use crate::engine::{Spend, StepContext, StepError};
use crate::models::{
    ChatRequest, Completion, ErrorClass, ModelClient, ModelError, Reading, Totals,
};
use crate::pipeline::ModelSpec;

/// Clients by entry name and settings, shared by every step of a run (held in its session).
#[derive(Default)]
struct Clients(Mutex<BTreeMap<String, Arc<ModelClient>>>);

/// The model entry a step's `model:` names.
pub fn model_spec<'a>(ctx: &'a StepContext, name: &str) -> Result<&'a ModelSpec, StepError> {
    ctx.pipeline.models.get(name).ok_or_else(|| {
        StepError::Input(format!(
            "step `{}`: no model `{name}` under `models:`",
            ctx.step.name
        ))
    })
}

/// What of a model entry enters a call's key. The local model claimflow starts itself is named by
/// its pinned fingerprint (model file digest, llama.cpp source), never by the port it listens on.
pub fn call_params(spec: &ModelSpec) -> Value {
    let mut params = json!({
        "provider": spec.provider,
        "model": spec.model,
        "base_url": spec.base_url,
        "temperature": spec.temperature,
        "max_output_tokens": spec.max_output_tokens,
        "structured_output": spec.structured_output,
    });
    if spec.is_embedded() {
        params["local_model"] = json!(crate::local_model::pinned_fingerprint());
    }
    params
}

/// A prompt file's text and its content digest.
pub fn prompt_file(ctx: &StepContext, path: &str) -> Result<(String, Digest), StepError> {
    let full = ctx.root.join(path);
    let bytes = std::fs::read(&full).map_err(|source| StepError::Io {
        context: format!("step `{}`: read prompt {}", ctx.step.name, full.display()),
        source,
    })?;
    let text = String::from_utf8(bytes.clone()).map_err(|_| {
        StepError::Input(format!(
            "step `{}`: prompt {path} is not UTF-8 text",
            ctx.step.name
        ))
    })?;
    Ok((text, Digest::of(&bytes)))
}

/// Sends `request` to the entry `name` and awaits the answer. Under `--offline` nothing is sent:
/// the item was not in the cache, and that is the error.
pub async fn complete(
    ctx: &StepContext<'_>,
    name: &str,
    item: &str,
    request: &ChatRequest,
) -> Result<Completion, StepError> {
    if ctx.offline {
        return Err(StepError::Input(format!(
            "step `{}` item {item}: --offline and no cached answer of model `{name}`; run \
             without --offline, or import a cache that has it (`claimflow cache import`)",
            ctx.step.name
        )));
    }
    let client = client(ctx, name)?;
    let completion = client
        .complete(request)
        .await
        .map_err(|error| model_error(ctx, item, error))?;
    let price = model_spec(ctx, name)?.price_per_mtok;
    let usage = &completion.usage;
    ctx.spent(Spend {
        calls: 1,
        tokens_in: usage.tokens_in,
        tokens_out: usage.tokens_out,
        cost: usage.cost(price),
    });
    Ok(completion)
}

/// `12 calls (3 cached), 10,234 tokens in, 512 out, $0.0041`.
pub fn describe(totals: &Totals, cached: Option<usize>) -> String {
    let cached = cached.map_or(String::new(), |cached| format!(" ({cached} cached)"));
    format!(
        "{} calls{cached}, {} tokens in, {} out, ${:.4}",
        totals.calls, totals.tokens_in, totals.tokens_out, totals.cost
    )
}

/// The shared client of entry `name`.
fn client(ctx: &StepContext, name: &str) -> Result<Arc<ModelClient>, StepError> {
    let spec = model_spec(ctx, name)?;
    // The embedded server is started by the first call that needs it; its address (a new one for
    // each server) names the client, so a later run's server gets a client of its own.
    let started = if spec.is_embedded() {
        let log = ctx.workdir.join("logs").join("llama-server.log");
        // Starting (or provisioning) the server blocks the thread the step's items are polled on;
        // they all wait for it anyway.
        let local = ctx
            .session
            .get::<crate::local_model::embedded::LocalModel>();
        let url = local
            .base_url(&log, &|line| ctx.note(line))
            .map_err(|error| {
                StepError::failed(format!("step `{}`: model `{name}`", ctx.step.name), error)
            })?;
        Some(url)
    } else {
        None
    };
    let identity = format!(
        "{name}\n{}\n{}",
        serde_json::to_string(spec).expect("a spec serializes"),
        started.as_deref().unwrap_or("")
    );
    let clients = ctx.session.get::<Clients>();
    let mut clients = clients.0.lock().expect("clients lock");
    if let Some(client) = clients.get(&identity) {
        return Ok(Arc::clone(client));
    }
    let client = Arc::new(
        ModelClient::from_spec(name, spec, started.as_deref())
            .map_err(|error| model_error(ctx, name, error))?,
    );
    clients.insert(identity, Arc::clone(&client));
    Ok(client)
}

/// A model error as a step error of the same class.
pub fn model_error(ctx: &StepContext, item: &str, error: ModelError) -> StepError {
    let context = format!("step `{}` item {item}", ctx.step.name);
    match error.class() {
        ErrorClass::Input => StepError::input(context, error),
        ErrorClass::Leak => StepError::Invariant(format!("{context}: {error}")),
        // The client has already retried within the entry's `retries:`; what is left fails the
        // item, its cause kept.
        ErrorClass::Transient | ErrorClass::Failure => StepError::failed(context, error),
    }
}

/// What one call leaves in the cache: the answer verbatim, its usage, and how it was read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    pub provider: String,
    pub model: String,
    pub completion: Completion,
    /// The verdict read from the answer (arms), or `None` (the prose renderer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reading: Option<Reading>,
}
