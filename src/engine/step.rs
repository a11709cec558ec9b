//! The contract between the engine and a step kind.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::cache::{Digest, Store, StoreError};
use crate::pipeline::{Pipeline, StepSpec};

/// The type a `with:` parameter must have; the loader checks it with positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    String,
    Integer,
    Number,
    Bool,
    /// One of the listed strings.
    Enum(&'static [&'static str]),
    /// A list of strings.
    StringList,
    /// A project-relative file that must exist; its content enters the keys of the step's items.
    File,
    /// The name of a `models:` entry.
    Model,
    /// The name of a step (a control naming the arm it wraps).
    Step,
    /// The name of a `repos:` entry.
    Repo,
    /// A list of step names.
    StepList,
    /// A list of strings, or a single string (a glob): `foreach:`.
    StringOrList,
    /// A map or any value the step kind checks itself.
    Any,
}

/// One parameter a step kind accepts under `with:`.
#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    pub name: &'static str,
    pub ty: ParamType,
    pub required: bool,
    /// One line for `--help`-style listings and hints.
    pub help: &'static str,
}

impl ParamSpec {
    /// An optional parameter.
    pub const fn optional(name: &'static str, ty: ParamType, help: &'static str) -> Self {
        ParamSpec {
            name,
            ty,
            required: false,
            help,
        }
    }

    /// A required parameter.
    pub const fn required(name: &'static str, ty: ParamType, help: &'static str) -> Self {
        ParamSpec {
            name,
            ty,
            required: true,
            help,
        }
    }
}

/// The resource pool an item's computation runs in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Pool {
    /// CPU-bound work, capped by `-j`.
    Cpu,
    /// pytest processes, capped by the oracle's slots.
    Pytest,
    /// Request slots of one `models:` entry, capped by its `concurrency`.
    Model(String),
}

/// One unit of a step's work, cached on its own. Everything in it except `pool` enters the key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemPlan {
    /// The item's identity within its step (a commit id, a claim id, a foreach element).
    pub id: String,
    /// Per-item parameters the computation reads.
    pub params: serde_json::Value,
    /// Output digests of the upstream items it reads, under names the step kind chooses.
    pub reads: BTreeMap<String, Digest>,
    /// Contents of files it reads, by project-relative path.
    pub files: BTreeMap<String, Digest>,
    /// Tool fingerprints (interpreter, pytest, repository commit ids).
    pub tools: BTreeMap<String, String>,
    pub replicate: u32,
    pub pool: Pool,
}

impl ItemPlan {
    /// A CPU item with no inputs yet.
    pub fn new(id: impl Into<String>) -> Self {
        ItemPlan {
            id: id.into(),
            params: serde_json::Value::Null,
            reads: BTreeMap::new(),
            files: BTreeMap::new(),
            tools: BTreeMap::new(),
            replicate: 0,
            pool: Pool::Cpu,
        }
    }

    pub fn params(mut self, params: serde_json::Value) -> Self {
        self.params = params;
        self
    }

    pub fn read(mut self, name: impl Into<String>, digest: Digest) -> Self {
        self.reads.insert(name.into(), digest);
        self
    }

    pub fn file(mut self, path: impl Into<String>, digest: Digest) -> Self {
        self.files.insert(path.into(), digest);
        self
    }

    pub fn tool(mut self, name: impl Into<String>, fingerprint: impl Into<String>) -> Self {
        self.tools.insert(name.into(), fingerprint.into());
        self
    }

    pub fn replicate(mut self, replicate: u32) -> Self {
        self.replicate = replicate;
        self
    }

    pub fn pool(mut self, pool: Pool) -> Self {
        self.pool = pool;
        self
    }
}

/// What one item produced: records (JSON values, one result-file line each) and named blobs stored
/// in the cache by digest (a diff, a test database, a command's output file).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ItemOutput {
    pub records: Vec<serde_json::Value>,
    pub blobs: BTreeMap<String, Digest>,
}

impl ItemOutput {
    /// An output of records alone.
    pub fn records<T: Serialize>(records: impl IntoIterator<Item = T>) -> Self {
        ItemOutput {
            records: records
                .into_iter()
                .map(|record| serde_json::to_value(record).expect("records serialize"))
                .collect(),
            blobs: BTreeMap::new(),
        }
    }

    /// The records decoded as `T`.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<Vec<T>, StepError> {
        self.records
            .iter()
            .map(|record| {
                T::deserialize(record).map_err(|error| {
                    StepError::Message(format!("decode an upstream record: {error}"))
                })
            })
            .collect()
    }
}

/// A computed (or cached) item: its plan, the digest of its output, and the output.
#[derive(Debug, Clone)]
pub struct ItemResult {
    pub plan: ItemPlan,
    /// The digest of the output's canonical bytes: what downstream keys read.
    pub digest: Digest,
    pub output: Arc<ItemOutput>,
    /// True when it came from the cache.
    pub cached: bool,
}

/// All item results of one finished step, in item order.
#[derive(Debug, Clone)]
pub struct StepOutput {
    pub step: String,
    pub kind: String,
    pub items: Vec<ItemResult>,
}

impl StepOutput {
    /// Every record of every item, in order, decoded as `T`.
    pub fn decode_all<T: DeserializeOwned>(&self) -> Result<Vec<T>, StepError> {
        let mut all = Vec::new();
        for item in &self.items {
            all.extend(item.output.decode::<T>()?);
        }
        Ok(all)
    }
}

/// The outputs of the steps a step `needs`, by step name.
#[derive(Debug, Clone, Default)]
pub struct Upstream {
    pub steps: BTreeMap<String, Arc<StepOutput>>,
}

impl Upstream {
    /// The outputs of the first needed step of kind `kind`.
    pub fn of_kind(&self, kind: &str) -> Option<&StepOutput> {
        self.steps
            .values()
            .find(|output| output.kind == kind)
            .map(Arc::as_ref)
    }

    /// Every needed step's output, in name order.
    pub fn all(&self) -> impl Iterator<Item = &StepOutput> {
        self.steps.values().map(Arc::as_ref)
    }
}

/// What a step kind sees while it plans, computes and publishes.
pub struct StepContext<'a> {
    pub pipeline: &'a Pipeline,
    pub step: &'a StepSpec,
    /// The project root (relative paths resolve here).
    pub root: &'a Path,
    /// The workdir (absolute; never part of a key).
    pub workdir: &'a Path,
    /// The pipeline's results directory.
    pub results: &'a Path,
    pub store: &'a Store,
}

impl StepContext<'_> {
    /// The step's `with:` parameters decoded as the kind's params type.
    pub fn params<T: DeserializeOwned>(&self) -> Result<T, StepError> {
        T::deserialize(&self.step.with).map_err(|error| {
            StepError::Input(format!(
                "step `{}`: invalid `with`: {error}",
                self.step.name
            ))
        })
    }

    /// Where a step's own result file named `file` goes, relative to the results directory:
    /// `file` for the first step of its kind in the pipeline, `<step>/<file>` for any later one,
    /// so two chains side by side (a second ranking's `rank-commits`, `mine-claims` and `oracle`
    /// steps) never overwrite each other's files.
    pub fn own_result(&self, file: &str) -> String {
        let first = self
            .pipeline
            .steps
            .iter()
            .find(|step| step.uses == self.step.uses)
            .is_none_or(|step| step.name == self.step.name);
        if first {
            file.to_string()
        } else {
            format!("{}/{file}", self.step.name)
        }
    }

    /// Writes a result file (path relative to the results directory) atomically.
    pub fn write_result(&self, relative: &str, bytes: &[u8]) -> Result<(), StepError> {
        let path = self.results.join(relative);
        crate::cache::write_atomic_in(&self.workdir.join("tmp"), &path, bytes)?;
        Ok(())
    }

    /// Writes records as JSON lines to a result file (path relative to the results directory).
    pub fn write_jsonl<T: Serialize>(
        &self,
        relative: &str,
        records: impl IntoIterator<Item = T>,
    ) -> Result<(), StepError> {
        let mut bytes = Vec::new();
        for record in records {
            serde_json::to_writer(&mut bytes, &record).expect("records serialize");
            bytes.push(b'\n');
        }
        self.write_result(relative, &bytes)
    }

    /// A scratch directory for this step under the workdir, created on demand.
    pub fn scratch(&self, name: &str) -> Result<PathBuf, StepError> {
        // In a Slurm worker, under the job's own directory.
        let dir = crate::slurm::private_root(self.workdir)
            .join("scratch")
            .join(&self.step.name)
            .join(name);
        std::fs::create_dir_all(&dir).map_err(|source| StepError::Io {
            context: format!("create {}", dir.display()),
            source,
        })?;
        Ok(dir)
    }
}

/// Why a step kind failed; the message names the step, item or path.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// A computation failed.
    #[error("{0}")]
    Message(String),
    /// A file could not be read or written.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// A data invariant broke (never written to the cache or results).
    #[error("invariant broken: {0}")]
    Invariant(String),
    /// The user's input is wrong (exit code 2).
    #[error("{0}")]
    Input(String),
    /// The cache failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A problem a step kind finds, at load time, in how one of its steps fits the rest of the
/// pipeline (a parameter naming a step of the wrong kind). The validator places it at the
/// parameter, or at the list element, it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineProblem {
    /// The `with:` parameter it is about; the step itself when `None`.
    pub param: Option<String>,
    /// The element of a list parameter it is about.
    pub index: Option<usize>,
    /// What is wrong, naming the steps involved.
    pub message: String,
    /// What to do about it.
    pub hint: String,
}

/// A kind of step: what `uses:` names.
///
/// The engine calls [`items`](StepKind::items) once the needed steps have finished, computes each item
/// whose key is missing with [`run`](StepKind::run) (concurrently, in the item's pool), and then
/// calls [`publish`](StepKind::publish) with every item's output, cached or fresh.
pub trait StepKind: Send + Sync {
    /// The name used in `uses:`.
    fn name(&self) -> &'static str;

    /// Bump whenever the kind's output for the same inputs may change: it enters every key.
    fn version(&self) -> u32;

    /// One line describing the kind.
    fn about(&self) -> &'static str;

    /// The parameters accepted under `with:`.
    fn params(&self) -> &'static [ParamSpec];

    /// The `with:` parameters that enter keys. By default all of them; a kind drops those that
    /// cannot change results (timeouts, slot counts).
    fn key_params(&self, with: &serde_json::Value) -> serde_json::Value {
        with.clone()
    }

    /// Checks, when the pipeline loads, what the parameter types cannot: how `step` relates to
    /// the other steps of `pipeline` (already valid on its own). None by default.
    fn check_pipeline(&self, _step: &StepSpec, _pipeline: &Pipeline) -> Vec<PipelineProblem> {
        Vec::new()
    }

    /// Checks, before any step of a run computes anything, what only the world can say: a
    /// repository's URL answers, its branch exists, a listed commit is on it. An error here is
    /// the user's input (exit code 2). Nothing to check by default.
    fn preflight(&self, _ctx: &StepContext) -> Result<(), StepError> {
        Ok(())
    }

    /// Splits the step into items, given the outputs of the steps it needs.
    fn items(&self, ctx: &StepContext, upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError>;

    /// Computes one item. Called only on a cache miss; must not write result files.
    fn run(
        &self,
        ctx: &StepContext,
        item: &ItemPlan,
        upstream: &Upstream,
    ) -> Result<ItemOutput, StepError>;

    /// Writes the step's result files from all its items' outputs (cached or fresh), in item order.
    fn publish(&self, ctx: &StepContext, items: &[ItemResult]) -> Result<(), StepError>;
}
