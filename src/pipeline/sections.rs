//! The `models:`, `repos:` and `executor:` sections as a pipeline writes them: one typed struct
//! each, the single source of their keys, types, ranges and help, as a step kind's parameter
//! struct is for its `with:` ([`super::params`]).
//!
//! The loader checks an entry against its struct's schema with the machinery that checks step
//! parameters (every problem at its line and column, the field's doc comment as the hint), then
//! deserializes it once. What a schema cannot say — that a URL is one git clones, that a
//! directory exists, that fallbacks do not go round in a cycle — the section's own module under
//! `validate/` checks on top. `claimflow schema` prints these schemas beside the steps'.

use schemars::JsonSchema;
use serde::Deserialize;

use super::executor::ExecutorKind;
use super::model::{Merges, Releases};
use super::params::ModelName;
use super::provider::Provider;

/// A `models:` entry as written.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    /// The API the entry talks to (`openai` speaks to any OpenAI-compatible server).
    pub provider: Provider,
    /// The provider's model id (for `llama-server` without `base_url`, the local model's own).
    #[serde(default)]
    pub model: Option<String>,
    /// The API's address, `http://` or `https://`, e.g. `http://localhost:8080/v1`; default: the
    /// provider's, or for `llama-server` the server claimflow starts.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The name of the environment variable holding the key, e.g. `CLAIMFLOW_API_KEY`; never the
    /// key itself.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// 0 answers the same prompt the same way; the paper samples at 0.
    #[serde(default)]
    #[schemars(range(min = 0, max = 2))]
    pub temperature: Option<f64>,
    /// The most tokens one answer may have, e.g. `512`.
    #[serde(default)]
    #[schemars(range(min = 1, max = 1_000_000))]
    pub max_output_tokens: Option<u32>,
    /// Ask for a JSON-schema-constrained answer where the API has it; `false` for servers that
    /// reject it (default `true`).
    #[serde(default)]
    pub structured_output: Option<bool>,
    /// Dollars per million tokens, e.g. `{input: 0.25, output: 1.0}`; the local model costs nothing.
    #[serde(default)]
    pub price_per_mtok: Option<PriceEntry>,
    /// It is the number of requests sent to this model at once.
    #[serde(default)]
    #[schemars(range(min = 1, max = 4096))]
    pub concurrency: Option<usize>,
    /// The provider's request limit per minute, e.g. `500`; leave it out for no limit.
    #[serde(default)]
    #[schemars(range(min = 1, max = 10_000_000))]
    pub requests_per_minute: Option<u32>,
    /// The provider's token limit per minute, e.g. `200000`; leave it out for no limit.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub tokens_per_minute: Option<u64>,
    /// Seconds one request may take, e.g. `120`.
    #[serde(default)]
    #[schemars(range(min = 0.001, max = 86_400))]
    pub timeout: Option<f64>,
    /// Transport retries of one request (429, 5xx, timeouts), e.g. `6`.
    #[serde(default)]
    #[schemars(range(min = 0, max = 20))]
    pub retries: Option<u32>,
    /// The model's training cutoff as published, written YYYY-MM-DD, e.g. `2024-06-01`.
    #[serde(default)]
    pub cutoff: Option<String>,
    /// The entry used instead when the variable `api_key_env` names is unset or empty.
    #[serde(default)]
    pub fallback: Option<ModelName>,
}

/// Dollars per million tokens.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PriceEntry {
    /// Dollars per million prompt tokens; `0` for a free model.
    #[schemars(range(min = 0))]
    pub input: f64,
    /// Dollars per million answer tokens; `0` for a free model.
    #[schemars(range(min = 0))]
    pub output: f64,
}

/// A `repos:` entry as written. Exactly one of `url`, `path` and `corpus` says where it comes from.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RepoEntry {
    /// A short name, e.g. `cachetools`; it names the repository in results and cache entries.
    pub name: String,
    /// A URL git can clone, e.g. `https://github.com/owner/name.git`; cloned into the workdir.
    #[serde(default)]
    pub url: Option<String>,
    /// A local repository, relative to the project root; read in place, never modified.
    #[serde(default)]
    pub path: Option<String>,
    /// A scripted history shipped as text (the demo corpus), relative to the project root.
    #[serde(default)]
    pub corpus: Option<String>,
    /// The branch to walk, e.g. `main`; HEAD is never walked.
    pub branch: String,
    /// `dev` or `heldout`, or a split of your own.
    #[serde(default)]
    pub split: Option<String>,
    /// Interpreters to try, newest first, quoted: `["3.11", "3.10"]`.
    #[serde(default)]
    pub python: Option<Vec<String>>,
    /// Globs that make a path a test file here, e.g. `tests/**/*.py`; they win over a step's own.
    #[serde(default)]
    pub test_patterns: Option<Vec<String>>,
    /// Requirement specifiers pinned into every environment built for it.
    #[serde(default)]
    pub dependencies: Option<Vec<String>>,
    /// Whether merge commits are scored against their first parent; wins over a step's own.
    #[serde(default)]
    pub merges: Option<Merges>,
    /// Which releases environments install: `newest` (default), or `at-commit` for only those
    /// uploaded before the commit's committer time.
    #[serde(default)]
    pub releases: Option<Releases>,
}

/// The `executor:` block as written (`executor: slurm` is short for `{kind: slurm}`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecutorEntry {
    /// Where the items that run pytest are computed; `run --executor` wins.
    #[serde(default)]
    pub kind: ExecutorKind,
    /// The Slurm partition, one name, e.g. `batch`; `sinfo` lists them.
    #[serde(default)]
    pub partition: Option<String>,
    /// The Slurm account, one name, e.g. `my-lab`; `sacctmgr show assoc user=$USER` lists them.
    #[serde(default)]
    pub account: Option<String>,
    /// Each job's time limit in Slurm's form (minutes, `MM:SS`, `HH:MM:SS`, `D-HH:MM:SS`,
    /// `UNLIMITED`): one for every step kind, or a map by step kind with an optional `default`.
    #[serde(default)]
    pub time: Option<serde_json::Value>,
    /// Memory per job, e.g. `4G` or `500M` (megabytes without a unit).
    #[serde(default)]
    pub memory: Option<serde_json::Value>,
    /// It is the CPUs each job asks for.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub cpus: Option<u32>,
    /// It is the number of jobs queued or running at once.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_jobs: Option<usize>,
    /// Other sbatch options, one per item, e.g. `["--qos=short"]`.
    #[serde(default)]
    pub sbatch: Option<Vec<String>>,
}

/// A JSON Schema of a whole pipeline file: its top-level keys, the sections as their structs
/// describe them, and `steps:` mapping names to `step` (one entry of `steps:`, as the registry of
/// step kinds describes it).
pub fn file_schema(step: serde_json::Value) -> serde_json::Value {
    let schema = |mut schema: serde_json::Value| {
        if let Some(map) = schema.as_object_mut() {
            map.remove("$schema");
        }
        schema
    };
    let model = schema(super::params::schema_for::<ModelEntry>());
    let repository = schema(super::params::schema_for::<RepoEntry>());
    let executor = schema(super::params::schema_for::<ExecutorEntry>());
    let kind = executor["properties"]["kind"].clone();
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "a claimflow pipeline",
        "type": "object",
        "properties": {
            "version": {"const": 1, "description": "The DSL version; 1."},
            "name": {"type": "string", "description": "The pipeline's name; results go to `results/<name>` unless `results:` says otherwise."},
            "workdir": {"type": "string", "description": "Cache, worktrees and logs (default `.claimflow`)."},
            "results": {"type": "string", "description": "Where result files are written."},
            "repos": {"type": "array", "items": repository},
            "models": {"type": "object", "additionalProperties": model},
            "executor": {"anyOf": [executor, kind]},
            "steps": {"type": "object", "additionalProperties": schema(step)},
        },
        "required": ["version", "name", "steps"],
        "additionalProperties": false,
    })
}
