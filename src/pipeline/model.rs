//! The validated pipeline, as the engine and the step kinds see it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::params::ParsedParams;
use super::role::Role;
use crate::pipeline::Provider;

/// A loaded and validated pipeline.
#[derive(Debug, Clone, Serialize)]
pub struct Pipeline {
    /// The file it was loaded from, as the user named it (for messages).
    pub file: PathBuf,
    /// The project root: relative paths in the pipeline resolve against it.
    pub root: PathBuf,
    pub version: u32,
    pub name: String,
    /// Cache, worktrees and environments; absolute (resolved against `root`).
    pub workdir: PathBuf,
    /// Where result files are written; absolute.
    pub results: PathBuf,
    pub repos: Vec<RepoSpec>,
    pub models: BTreeMap<String, ModelSpec>,
    /// Where the pytest-pool items run (`executor:`); never part of a key.
    #[serde(skip_serializing_if = "crate::pipeline::ExecutorSpec::is_default")]
    pub executor: crate::pipeline::ExecutorSpec,
    /// Steps in the order the file declares them.
    pub steps: Vec<StepSpec>,
}

impl Pipeline {
    /// The step named `name`.
    pub fn step(&self, name: &str) -> Option<&StepSpec> {
        self.steps.iter().find(|step| step.name == name)
    }

    /// The repository named `name`.
    pub fn repo(&self, name: &str) -> Option<&RepoSpec> {
        self.repos.iter().find(|repo| repo.name == name)
    }

    /// What a run says once at its start: each model entry replaced by its `fallback:`.
    pub fn notices(&self) -> Vec<String> {
        self.models
            .values()
            .filter_map(|spec| spec.stands_in.clone())
            .collect()
    }

    /// Resolves a project-relative path.
    pub fn resolve(&self, path: impl AsRef<Path>) -> PathBuf {
        self.root.join(path)
    }
}

/// A `repos:` entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RepoSpec {
    pub name: String,
    pub source: RepoSource,
    /// The branch walked; `HEAD` is never used.
    pub branch: String,
    /// `dev` or `heldout` (free text is allowed for user-defined splits).
    pub split: Option<String>,
    /// Interpreters to try, newest first; empty means choose automatically.
    pub python: Vec<String>,
    /// Globs that make a path a test file in this repository; they win over a step's own.
    pub test_patterns: Option<Vec<String>>,
    /// Requirement specifiers pinned into every environment built for it.
    pub dependencies: Vec<String>,
    /// Whether merge commits are scored; wins over a step's own `merges`.
    pub merges: Option<Merges>,
    /// Which releases of its requirements an environment installs. Left out of the pipeline's
    /// JSON at the default, so pipelines that do not set it read as before.
    #[serde(skip_serializing_if = "Releases::is_newest")]
    pub releases: Releases,
}

/// Which releases of a repository's requirements its environments install.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Releases {
    /// The newest release each requirement allows, whenever the environment is built.
    #[default]
    Newest,
    /// Only files uploaded to the index before the committer time of the commit the environment
    /// is built for (never before the first release of the pytest it runs), as they were then.
    AtCommit,
}

impl Releases {
    /// True for the default, [`Releases::Newest`].
    pub fn is_newest(&self) -> bool {
        *self == Releases::Newest
    }
}

/// Whether merge commits on the first-parent chain are scored (against their first parent).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Merges {
    #[default]
    Include,
    Skip,
}

/// Where a repository comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RepoSource {
    /// Cloned into the workdir, fetched on later runs.
    Url(String),
    /// A local repository read in place (absolute), never modified.
    Path(PathBuf),
    /// A scripted history shipped as text files (the demo corpus), materialized by claimflow into a
    /// git repository under the workdir with fixed authors and times (absolute path of the script).
    Corpus(PathBuf),
}

/// A `models:` entry: where requests go, how they are sampled, and what they may cost.
///
/// Only `provider`, `model`, `base_url`, `temperature`, `max_output_tokens` and `structured_output`
/// can change an answer, so only they enter a call's key; slots, rates, timeouts and retries never do.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelSpec {
    pub provider: Provider,
    /// The provider's model id.
    pub model: String,
    /// The API's address; `None` means the provider's default (or, for `llama-server`, the
    /// server claimflow starts).
    pub base_url: Option<String>,
    /// The name of the environment variable holding the key; the key itself never enters a pipeline.
    pub api_key_env: Option<String>,
    /// Sampling temperature; 0 unless the entry says otherwise.
    pub temperature: f64,
    /// The most tokens one answer may have.
    pub max_output_tokens: u32,
    /// Ask for a JSON-schema-constrained answer where the API has it (`response_format`, a forced
    /// tool, `responseSchema`); `false` for servers that reject it.
    pub structured_output: bool,
    pub price_per_mtok: Option<Price>,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Requests started per minute at most.
    pub requests_per_minute: Option<u32>,
    /// Tokens (prompt and answer, estimated before sending) per minute at most.
    pub tokens_per_minute: Option<u64>,
    /// Seconds one request may take before it is abandoned (and retried).
    pub timeout: f64,
    /// Transport retries of one request (429, 5xx, timeouts, dropped connections).
    pub retries: u32,
    /// The model's training cutoff (`YYYY-MM-DD`); the post-cutoff split reads it.
    pub cutoff: Option<String>,
    /// The entry used instead when the variable `api_key_env` names is unset or empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// Set when this entry stands in for another whose key is not set: what the run says about it
    /// once at its start. Never part of a key.
    #[serde(skip)]
    pub stands_in: Option<String>,
}

impl ModelSpec {
    /// Request slots when the pipeline does not say.
    pub const DEFAULT_CONCURRENCY: usize = 4;
    /// Answer tokens when the pipeline does not say: a verdict needs a few, a prose note a few dozen.
    pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 512;
    /// Seconds per request when the pipeline does not say.
    pub const DEFAULT_TIMEOUT: f64 = 120.0;
    /// Seconds per request to the local model claimflow starts, when the pipeline does not say: on
    /// a busy 2-core machine one ~1,000-token request can take minutes.
    pub const EMBEDDED_TIMEOUT: f64 = 600.0;
    /// Transport retries when the pipeline does not say.
    pub const DEFAULT_RETRIES: u32 = 6;

    /// An entry with every optional setting at its default.
    pub fn new(provider: Provider, model: impl Into<String>) -> Self {
        ModelSpec {
            provider,
            model: model.into(),
            base_url: None,
            api_key_env: None,
            temperature: 0.0,
            max_output_tokens: Self::DEFAULT_MAX_OUTPUT_TOKENS,
            structured_output: true,
            price_per_mtok: None,
            concurrency: Self::DEFAULT_CONCURRENCY,
            requests_per_minute: None,
            tokens_per_minute: None,
            timeout: Self::DEFAULT_TIMEOUT,
            retries: Self::DEFAULT_RETRIES,
            cutoff: None,
            fallback: None,
            stands_in: None,
        }
    }

    /// True for the local model claimflow starts itself: `llama-server` with no `base_url`.
    pub fn is_embedded(&self) -> bool {
        self.provider == Provider::LlamaServer && self.base_url.is_none()
    }
}

/// Dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Price {
    pub input: f64,
    pub output: f64,
}

/// One step of the DAG.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepSpec {
    pub name: String,
    /// The step kind.
    pub uses: String,
    pub needs: Vec<String>,
    /// The `with:` parameters as written, as JSON (maps sorted, so canonical).
    pub with: serde_json::Value,
    /// The parameters parsed into the kind's struct, once, when the pipeline loaded.
    #[serde(skip)]
    pub params: ParsedParams,
    /// What the step's records are, as its kind declares from the parameters.
    #[serde(skip)]
    pub role: Role,
    /// 1-based line of the step's name in the file, for messages.
    pub line: usize,
}
