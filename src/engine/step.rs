//! The contract between the engine and a step kind.

use std::any::Any;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

pub use super::blobs::Blobs;
use super::events::{Event, Reporter, Spend};
pub use super::output_records::Records;
use super::session::Session;
use crate::cache::{Digest, JsonText, Store, StoreError};
use crate::pipeline::{Need, Params, ParamsDecl, Pipeline, PipelineProblem, Role, StepSpec};

/// The resource pool an item's computation runs in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Pool {
    /// CPU-bound work, capped by `-j`.
    Cpu,
    /// pytest processes, capped by `--pytest-slots`: the only bound on them (the oracle's
    /// worktrees included).
    Pytest,
    /// Request slots of one `models:` entry, capped by its `concurrency`.
    Model(String),
}

/// One unit of a step's work, cached on its own. Everything in it except `pool` enters the key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemPlan {
    /// The item's identity within its step (a commit id, a claim id, a foreach element).
    pub id: String,
    /// Per-item parameters the computation reads (held as canonical text until read).
    pub params: JsonText,
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
            params: JsonText::default(),
            reads: BTreeMap::new(),
            files: BTreeMap::new(),
            tools: BTreeMap::new(),
            replicate: 0,
            pool: Pool::Cpu,
        }
    }

    /// Per-item parameters: a value, or [`JsonText::of`] a canonical serialization.
    pub fn params(mut self, params: impl Into<JsonText>) -> Self {
        self.params = params.into();
        self
    }

    pub fn read(mut self, name: impl Into<String>, digest: Digest) -> Self {
        self.reads.insert(name.into(), digest);
        self
    }

    /// Reads every item of each of `outputs`, under `<step>/<item>`: the single item that gathers
    /// whole upstream steps (a sample, a split, a pairing, the statistics, the report) reruns
    /// exactly when one of their outputs changed.
    /// A step whose items are reduced ([`StepKind::reduction`]) is read as its reduction alone,
    /// under `<step>`: what its kind derived from the items is all a reader reads of it, so an
    /// item whose change leaves the reduction as it was reruns nothing downstream.
    pub fn read_outputs<'o>(mut self, outputs: impl IntoIterator<Item = &'o StepOutput>) -> Self {
        for output in outputs {
            if let Some(reduced) = &output.reduced {
                self.reads.insert(output.step.clone(), reduced.digest);
                continue;
            }
            for item in &output.items {
                self.reads
                    .insert(format!("{}/{}", output.step, item.plan.id), item.digest);
            }
        }
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

/// What a kind's [`StepKind::plan`] made of a step: its items, and what it planned beyond them
/// (the claims each call answers, the prompt every call sends) for the engine to hand to the item
/// runs, the reduction and `publish` ([`StepContext::plan`]), typed as the kind planned it.
pub struct Planned {
    pub items: Vec<ItemPlan>,
    pub(crate) plan: Option<Arc<dyn Any + Send + Sync>>,
    /// The digest of what the reduction reads of the plan: it enters the reduction's key.
    pub(crate) digest: Digest,
}

impl Planned {
    /// Items alone, with nothing planned beyond them.
    pub fn items(items: Vec<ItemPlan>) -> Self {
        Planned {
            items,
            plan: None,
            digest: Digest::of(b""),
        }
    }

    /// With the step's plan: what the item runs, the reduction and `publish` read beyond the
    /// items ([`StepContext::plan`]).
    pub fn with_plan<T: Any + Send + Sync>(mut self, plan: T) -> Self {
        self.plan = Some(Arc::new(plan));
        self
    }

    /// With the digest of what [`StepKind::reduce`] reads of the plan, which enters the
    /// reduction's key (whatever else shapes the reduction is in the items' keys already).
    pub fn reduction_reads(mut self, digest: Digest) -> Self {
        self.digest = digest;
        self
    }
}

/// What one item produced: records (JSON values, one result-file line each) and named blobs stored
/// in the cache by digest (a diff, a test database, a command's output file).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ItemOutput {
    pub records: Records,
    pub blobs: Blobs,
}

impl ItemOutput {
    /// An output of records alone.
    pub fn records<T: Serialize>(records: impl IntoIterator<Item = T>) -> Self {
        ItemOutput {
            records: records
                .into_iter()
                .map(|record| serde_json::to_value(record).expect("records serialize"))
                .collect(),
            blobs: Blobs::default(),
        }
    }

    /// The records decoded as `T`.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<Vec<T>, StepError> {
        self.records.decode().map_err(|error| StepError::Failed {
            context: "decode an upstream record".to_string(),
            source: Box::new(error),
        })
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
    /// True when every blob is in the workspace already, so publishing has nothing to restore: a
    /// cached item's, as the kind's [`StepKind::blob_in_workspace`] found them at the lookup; a
    /// computed item's, when its kind [computes in place](StepKind::computes_in_place).
    pub in_place: bool,
}

/// All item results of one finished step, in item order.
#[derive(Debug, Clone)]
pub struct StepOutput {
    pub step: String,
    pub kind: String,
    /// What its records are, as its kind declares.
    pub role: Role,
    pub items: Vec<ItemResult>,
    /// What its kind reduced the items into ([`StepKind::reduction`]), when it reduces them:
    /// what downstream steps read of it instead of the items.
    pub reduced: Option<Reduced>,
}

/// A step's items reduced into one output ([`StepKind::reduce`]), cached under a key of the
/// items' output digests and the step's plan digest ([`Planned::reduction_reads`]).
#[derive(Debug, Clone)]
pub struct Reduced {
    /// The digest of the output's canonical bytes: what downstream keys read.
    pub digest: Digest,
    pub output: Arc<ItemOutput>,
}

impl Reduced {
    /// The reduction of step `step` as its single record of type `T`.
    pub fn decode<T: DeserializeOwned>(&self, step: &str) -> Result<T, StepError> {
        let mut records = self.output.decode::<T>()?.into_iter();
        match (records.next(), records.next()) {
            (Some(only), None) => Ok(only),
            _ => Err(StepError::Invariant(format!(
                "the reduction of step `{step}` is not one record"
            ))),
        }
    }
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
    /// The outputs of the needed steps whose role matches, in name order.
    pub fn with_role(&self, matches: impl Fn(&Role) -> bool) -> impl Iterator<Item = &StepOutput> {
        self.all().filter(move |output| matches(&output.role))
    }

    /// The output of the first needed step whose role matches.
    pub fn first_with_role(&self, matches: impl Fn(&Role) -> bool) -> Option<&StepOutput> {
        self.with_role(matches).next()
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
    /// Fired on Ctrl-C or SIGTERM (or by the caller): in-flight work stops, and nothing it did
    /// half is cached.
    pub cancel: CancellationToken,
    /// The run must make no network requests (`run --offline`): use only what is cached.
    pub offline: bool,
    /// Where notes and progress go.
    pub reporter: &'a dyn Reporter,
    /// What the run holds while it lasts (model clients, the local model's server): see
    /// [`Session`].
    pub session: Arc<Session>,
    /// What the kind planned for the step beyond its items ([`Planned`]), once it is planned:
    /// read with [`StepContext::plan`].
    pub planned: Option<Arc<dyn Any + Send + Sync>>,
    /// The step's reduction ([`StepKind::reduce`]), once it is made: what `publish` writes from.
    pub reduced: Option<Reduced>,
}

impl<'a> StepContext<'a> {
    /// The context of `step` of `pipeline`, paths taken from the pipeline: nothing cancelled,
    /// network allowed, notes dropped (the engine sets its own; tests and tools use this).
    pub fn new(pipeline: &'a Pipeline, step: &'a StepSpec, store: &'a Store) -> Self {
        StepContext {
            pipeline,
            step,
            root: &pipeline.root,
            workdir: &pipeline.workdir,
            results: &pipeline.results,
            store,
            cancel: CancellationToken::new(),
            offline: false,
            reporter: &super::events::Silent,
            session: Session::new(),
            planned: None,
            reduced: None,
        }
    }

    /// What the kind's [`StepKind::plan`] planned for this step beyond its items, as the type it
    /// planned.
    pub fn plan<T: Any + Send + Sync>(&self) -> Result<&T, StepError> {
        self.planned
            .as_deref()
            .and_then(|planned| planned.downcast_ref::<T>())
            .ok_or_else(|| {
                StepError::Invariant(format!(
                    "step `{}` has no plan of type `{}`: it ran before it was planned",
                    self.step.name,
                    std::any::type_name::<T>()
                ))
            })
    }

    /// The step's reduction ([`StepKind::reduce`]), decoded as the kind reduced it.
    pub fn reduced<T: DeserializeOwned>(&self) -> Result<T, StepError> {
        let reduced = self.reduced.as_ref().ok_or_else(|| {
            StepError::Invariant(format!(
                "step `{}` is published before its items were reduced",
                self.step.name
            ))
        })?;
        reduced.decode(&self.step.name)
    }

    /// The step's parameters, parsed when the pipeline loaded, as the kind's struct.
    pub fn params<P: Params>(&self) -> Result<&P, StepError> {
        self.step.params.get::<P>().ok_or_else(|| {
            StepError::Invariant(format!(
                "step `{}`: its parameters were not parsed as `{}`",
                self.step.name,
                std::any::type_name::<P>()
            ))
        })
    }

    /// The directory under which this run's items keep their private directories
    /// ([`Session::private_root`]).
    pub fn private_root(&self) -> PathBuf {
        self.session.private_root(self.workdir)
    }

    /// Tells the user that an item paid for a model call.
    pub fn spent(&self, spend: Spend) {
        self.reporter.event(&Event::Spent {
            step: self.step.name.clone(),
            spend,
        });
    }

    /// Tells the user `message` while an item runs (a fallback taken, a slow download).
    pub fn note(&self, message: &str) {
        self.reporter.event(&Event::Note {
            step: self.step.name.clone(),
            message: message.to_string(),
        });
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
        let dir = self
            .private_root()
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

/// Why a step kind failed; the message names the step, item or path. The class of the error
/// ([`StepError::class`]) decides what happens next: input errors exit 2 wherever they are found,
/// transient ones are retried by the engine, the rest fail the step (exit 1). Sources are kept, and
/// the message the user sees is the whole chain ([`StepError::chain`]).
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// A computation failed, because of `source`.
    #[error("{context}")]
    Failed {
        context: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
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
    /// The user's input is wrong, as `source` says (exit code 2).
    #[error("{context}")]
    InputBecause {
        context: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A computation failed, as the error of another module says in full (its message and
    /// its sources are the error's own).
    #[error(transparent)]
    Cause(Box<dyn std::error::Error + Send + Sync>),
    /// The user's input is wrong, as the error of another module says in full (exit code 2).
    #[error(transparent)]
    InputCause(Box<dyn std::error::Error + Send + Sync>),
    /// Worth trying again (a rate limit, a dropped connection, an index that did not answer): the
    /// engine retries the item with backoff, after `retry_after` when the other side said so.
    #[error("{message}")]
    Transient {
        message: String,
        retry_after: Option<Duration>,
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// A step scored as an arm has records that are not predictions (exit code 2: the pipeline
    /// scores a step that is not an arm).
    #[error(
        "needed step `{step}` (uses: {kind}) is scored as an arm but its records are not predictions"
    )]
    NotPredictions {
        step: String,
        kind: String,
        #[source]
        source: Box<StepError>,
    },
    /// The step kind's code panicked (a bug): the run fails, naming the step and item, instead of
    /// losing the thread that computed it.
    #[error("panicked: {0}")]
    Panicked(String),
    /// The executor that computes an item elsewhere (a Slurm job) failed.
    #[error(transparent)]
    Remote(Box<dyn std::error::Error + Send + Sync>),
    /// A record of step `step` does not decode as what its role says it is.
    #[error("a record of step `{step}` does not decode")]
    Record {
        step: String,
        #[source]
        source: serde_json::Error,
    },
    /// The run was stopped (Ctrl-C, SIGTERM) while the item ran.
    #[error("stopped before it finished")]
    Cancelled,
    /// The cache failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub use super::events::ErrorClass;

impl StepError {
    /// A failure with its cause kept.
    pub fn failed(
        context: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        StepError::Failed {
            context: context.into(),
            source: source.into(),
        }
    }

    /// An error in the user's input, with its cause kept (exit code 2).
    pub fn input(
        context: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        StepError::InputBecause {
            context: context.into(),
            source: source.into(),
        }
    }

    /// The failure of code that panicked with `payload`.
    pub fn panicked(payload: &(dyn Any + Send)) -> Self {
        let message = payload
            .downcast_ref::<&str>()
            .map(|text| text.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string());
        StepError::Panicked(message)
    }

    /// A transient failure, retried after `retry_after` if given, else with backoff.
    pub fn transient(message: impl Into<String>, retry_after: Option<Duration>) -> Self {
        StepError::Transient {
            message: message.into(),
            retry_after,
            source: None,
        }
    }

    /// What the failure means for the run.
    pub fn class(&self) -> ErrorClass {
        match self {
            StepError::Input(_)
            | StepError::InputBecause { .. }
            | StepError::InputCause(_)
            | StepError::NotPredictions { .. } => ErrorClass::Input,
            StepError::Transient { .. } => ErrorClass::Transient,
            StepError::Cancelled => ErrorClass::Cancelled,
            _ => ErrorClass::Failure,
        }
    }

    /// The message with every cause it carries, outermost first (`a: b: c`); a cause the message
    /// already quotes is not repeated.
    pub fn chain(&self) -> String {
        let mut message = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            let text = cause.to_string();
            if !message.contains(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            source = cause.source();
        }
        message
    }
}

/// A future computing one item (see [`StepKind::run_async`]).
pub type ItemFuture<'a> = Pin<Box<dyn Future<Output = Result<ItemOutput, StepError>> + Send + 'a>>;

/// How the engine computes a kind's items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Execution {
    /// [`StepKind::run`] on a thread of the item's pool (CPU work, a child process).
    Blocking,
    /// [`StepKind::run_async`] on the engine's tokio runtime: many items in flight at once (HTTP
    /// requests), each holding a permit of its pool (`Pool::Model(name)`: the model's
    /// `concurrency`) while it runs.
    Async,
}

/// A kind of step: what `uses:` names.
///
/// The engine calls [`items`](StepKind::items) once the needed steps have finished, computes each
/// item whose key is missing with [`run`](StepKind::run) or [`run_async`](StepKind::run_async)
/// (concurrently, in the item's pool), and then calls [`publish`](StepKind::publish) with every
/// item's output, cached or fresh.
///
/// # Writing a new kind
/// - **Parameters**: one struct deriving `Deserialize`, `Serialize` and `JsonSchema` (see
///   [`crate::pipeline::params`] for defaults, ranges, help and fields kept out of the key);
///   `fn params(&self) -> ParamsDecl { ParamsDecl::of::<MyParams>() }`. The loader checks and parses
///   it; the code reads it with `ctx.params::<MyParams>()?`, never `with:`.
/// - **Role**: [`role`](StepKind::role) says what the records are, from the parsed parameters. A
///   strategy that predicts (a model arm, a prose arm) returns [`Role::Predictions`] with its
///   paper strategy id (`a5`, `a6_risk`) and its model; a control returns [`Role::Control`] naming
///   the arm step it wraps; a step that samples labels returns [`Role::LabelSample`]. `stats` and
///   `report` read roles only, so a new arm needs no edit there.
/// - **Async items**: return [`Execution::Async`] from [`execution`](StepKind::execution) and
///   implement [`run_async`](StepKind::run_async); give items `Pool::Model(name)`. Return
///   [`StepError::Transient`] for what is worth retrying (the engine backs off, never caches it)
///   and watch `ctx.cancel` in long waits.
/// - **Version**: [`version`](StepKind::version) enters every key of the kind; bump it when its
///   output for the same inputs may change. An arm kind that holds several strategies versions
///   each one with [`strategy_version`](StepKind::strategy_version), so changing one does not
///   invalidate the others.
pub trait StepKind: Send + Sync {
    /// The name used in `uses:`.
    fn name(&self) -> &'static str;

    /// Bump whenever the kind's output for the same inputs may change: it enters every key.
    fn version(&self) -> u32;

    /// One line describing the kind.
    fn about(&self) -> &'static str;

    /// The struct its `with:` parses into.
    fn params(&self) -> ParamsDecl;

    /// What the records of `step` (a step of this kind, parameters parsed) are.
    fn role(&self, _step: &StepSpec) -> Role {
        Role::Other
    }

    /// The version of the strategy `step` runs, for a kind that holds several (the `arm` kind's
    /// a0…a4b, `llm-arm`'s questions): it enters the step's key as `arm_version`, beside
    /// [`version`](StepKind::version), so bumping one strategy invalidates only its items.
    /// `None` (the default) when the kind's own version says it all.
    fn strategy_version(&self, _step: &StepSpec) -> Option<u32> {
        None
    }

    /// The records `step` reads from the steps it needs, by role: the loader reports a step none
    /// of whose `needs` meets one of them, at its `needs:`, before anything runs. None by default.
    fn requires(&self, _step: &StepSpec) -> &'static [Need] {
        &[]
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

    /// Whether items are computed by [`run`](StepKind::run) or [`run_async`](StepKind::run_async).
    fn execution(&self) -> Execution {
        Execution::Blocking
    }

    /// Splits the step into items, given the outputs of the steps it needs. A kind that plans
    /// more than its items implements [`plan`](StepKind::plan) instead.
    fn items(&self, ctx: &StepContext, _upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        Err(StepError::Invariant(format!(
            "step `{}`: its kind `{}` plans neither items nor a plan",
            ctx.step.name,
            self.name()
        )))
    }

    /// Splits the step into items and what the item runs, the reduction and `publish` read of
    /// the planning beyond them ([`Planned::with_plan`], read back with [`StepContext::plan`]).
    /// The items alone by default.
    fn plan(&self, ctx: &StepContext, upstream: &Upstream) -> Result<Planned, StepError> {
        self.items(ctx, upstream).map(Planned::items)
    }

    /// For a kind whose items are not what downstream steps read (a model arm's items are its
    /// calls; what it predicts, claim by claim, is derived from them and its plan): the version
    /// of its [`reduce`](StepKind::reduce), which enters the reduction's key beside the items'
    /// output digests and the plan's digest. Bump it when the reduction of the same items and plan
    /// may change. None, the default: the items are the step's output.
    fn reduction(&self, _step: &StepSpec) -> Option<u32> {
        None
    }

    /// Reduces every item's output (cached or fresh, in item order) into the step's one output,
    /// for a kind with a [`reduction`](StepKind::reduction). Called only when the reduction is
    /// not cached; must not write result files.
    fn reduce(&self, ctx: &StepContext, _items: &[ItemResult]) -> Result<ItemOutput, StepError> {
        Err(StepError::Invariant(format!(
            "step `{}`: its kind `{}` declares no reduction",
            ctx.step.name,
            self.name()
        )))
    }

    /// Computes one item. Called only on a cache miss; must not write result files.
    fn run(
        &self,
        _ctx: &StepContext,
        item: &ItemPlan,
        _upstream: &Upstream,
    ) -> Result<ItemOutput, StepError> {
        Err(StepError::Invariant(format!(
            "`{}` computes item {} as a future, not on a thread",
            self.name(),
            item.id
        )))
    }

    /// Computes one item as a future ([`Execution::Async`]). Called only on a cache miss.
    fn run_async<'a>(
        &'a self,
        ctx: &'a StepContext<'a>,
        item: &'a ItemPlan,
        upstream: &'a Upstream,
    ) -> ItemFuture<'a> {
        Box::pin(std::future::ready(self.run(ctx, item, upstream)))
    }

    /// Writes the step's result files from all its items' outputs (cached or fresh), in item
    /// order, and its reduction ([`StepContext::reduced`]) when it has one.
    fn publish(&self, ctx: &StepContext, items: &[ItemResult]) -> Result<(), StepError>;

    /// For a kind whose [`publish`](StepKind::publish) writes its blobs out as workspace files
    /// (`command`'s outputs): the digest of the file that blob `name` is published as, as it is
    /// now. A cached output whose blobs the workspace already holds is served without looking for
    /// their objects in the store (a stat each), since nothing needs restoring from them; any
    /// other blob's object must be in the store and intact, or the item is a miss. None, the
    /// default: nothing of the workspace stands for a blob.
    fn blob_in_workspace(&self, _ctx: &StepContext, _name: &str) -> Option<Digest> {
        None
    }

    /// True for a kind whose [`run`](StepKind::run) takes its blobs from the workspace files its
    /// publish would write (`command`'s outputs): an item computed here leaves them in place, and
    /// publishing does not read them again. False, the default.
    fn computes_in_place(&self) -> bool {
        false
    }
}
