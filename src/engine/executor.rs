//! Running a pipeline: every step waits for the steps it needs, splits into items, takes what the
//! cache has, computes the rest in their pools, stores each output before its action record, and
//! then publishes its result files. A failed item is never cached; a step whose need failed is
//! skipped; the run reports every failure at the end.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::cache::{Digest, KEY_SCHEMA, KeyParts, KeyRecord, OutputBytes, Store, StoreError};
use crate::engine::dag::Dag;
use crate::engine::events::{Event, Reporter, Spend, Tally};
use crate::engine::pools::{PoolSizes, Pools};
use crate::engine::remote::MissingResult;
use crate::engine::session::Session;
use crate::engine::state::RunState;
use crate::engine::{
    ErrorClass, Execution, ItemOutput, ItemPlan, ItemResult, Planned, Pool, Reduced, Registry,
    RemoteExecutor, RetryPolicy, StepContext, StepError, StepKind, StepOutput, Upstream,
};
use crate::pipeline::{Pipeline, StepSpec};
use futures_util::stream::FuturesUnordered;
use futures_util::{FutureExt, StreamExt};
use std::panic::AssertUnwindSafe;
use tokio_util::sync::CancellationToken;

mod reduction;
mod schedule;

/// How a run is carried out. None of it enters a key.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Cap on CPU-bound items at once (`-j`).
    pub jobs: usize,
    /// Cap on pytest processes at once.
    pub pytest_slots: usize,
    /// Steps whose items are recomputed even when cached (`--force`).
    pub force: BTreeSet<String>,
    /// Run only this step and the steps it needs (`--until`).
    pub until: Option<String>,
    /// How transient failures are retried.
    pub retry: RetryPolicy,
    /// Fired to stop the run (Ctrl-C, SIGTERM): in-flight items stop and are not cached.
    pub cancel: CancellationToken,
    /// No network requests (`--offline`).
    pub offline: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        RunOptions {
            jobs: cores,
            pytest_slots: cores,
            force: BTreeSet::new(),
            until: None,
            retry: RetryPolicy::default(),
            cancel: CancellationToken::new(),
            offline: false,
        }
    }
}

/// Why the engine could not run a pipeline.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The cache could not be opened or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The user named something that does not exist (exit code 2).
    #[error("{0}")]
    Input(String),
    /// One or more steps failed (exit code 1); their errors were reported as events.
    #[error("{} step{} failed: {}", .0.len(), if .0.len() == 1 { "" } else { "s" }, .0.join(", "))]
    StepsFailed(Vec<String>),
    /// One or more steps found the user's input wrong while running (exit code 2); their errors
    /// were reported as events.
    #[error("{} step{} found the input wrong: {}", .0.len(), if .0.len() == 1 { "" } else { "s" }, .0.join(", "))]
    StepsRejectedInput(Vec<String>),
}

/// What happened to one step in a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepStatus {
    Done {
        computed: usize,
        cached: usize,
    },
    /// The step failed; its error's class says whether the input was wrong.
    Failed(String, ErrorClass),
    Skipped(String),
}

/// The outcome of a run, step by step in file order.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub steps: Vec<(String, StepStatus)>,
    /// What this run's model calls used (none served from the cache).
    pub spent: Spend,
}

impl RunSummary {
    /// Items computed across all steps.
    pub fn computed(&self) -> usize {
        self.steps
            .iter()
            .map(|(_, status)| match status {
                StepStatus::Done { computed, .. } => *computed,
                _ => 0,
            })
            .sum()
    }

    /// Items taken from the cache across all steps.
    pub fn cached(&self) -> usize {
        self.steps
            .iter()
            .map(|(_, status)| match status {
                StepStatus::Done { cached, .. } => *cached,
                _ => 0,
            })
            .sum()
    }
}

/// A pipeline bound to its registry, cache and reporter.
pub struct Engine<'a> {
    pub pipeline: &'a Pipeline,
    pub registry: &'a Registry,
    pub store: Store,
    pub state: RunState,
    pub reporter: &'a dyn Reporter,
    /// Where pytest-pool items run when not here: one Slurm job each.
    pub slurm: Option<Arc<dyn RemoteExecutor>>,
}

/// What the steps of one run share: its session, its reporter, whether it is stopped or offline.
pub(crate) struct Scope<'r> {
    session: Arc<Session>,
    reporter: &'r dyn Reporter,
    cancel: CancellationToken,
    offline: bool,
}

/// Why a step failed, with its class.
struct Failure {
    message: String,
    class: ErrorClass,
}

impl Failure {
    fn of(error: &StepError) -> Self {
        Failure {
            message: error.chain(),
            class: error.class(),
        }
    }
}

impl From<StoreError> for Failure {
    fn from(error: StoreError) -> Self {
        Failure::of(&StepError::Store(error))
    }
}

enum Finished {
    Done(Arc<StepOutput>),
    Failed,
    Skipped,
}

/// Where a run's step threads wait for the steps they need and record how each ended.
struct Board {
    finished: Mutex<BTreeMap<String, Finished>>,
    changed: Condvar,
    statuses: Mutex<BTreeMap<String, StepStatus>>,
}

impl Board {
    /// Waits until every step `step` needs has ended; its upstream, or why it is not run.
    fn upstream_of(
        &self,
        step: &StepSpec,
        selected: &BTreeSet<String>,
    ) -> Result<Upstream, String> {
        let mut done = self.finished.lock().expect("run lock");
        while !step.needs.iter().all(|need| done.contains_key(need)) {
            done = self.changed.wait(done).expect("run lock");
        }
        let mut upstream = Upstream::default();
        let mut blocked = None;
        for need in &step.needs {
            match &done[need] {
                Finished::Done(output) => {
                    upstream.steps.insert(need.clone(), Arc::clone(output));
                }
                _ => blocked = Some(need.clone()),
            }
        }
        if !selected.contains(&step.name) {
            Err("left out by --until".to_string())
        } else if let Some(need) = blocked {
            Err(format!("step `{need}` did not finish"))
        } else {
            Ok(upstream)
        }
    }

    /// Records how step `name` ended, and wakes the steps waiting for it.
    fn finish(&self, name: &str, result: Finished, status: StepStatus) {
        self.statuses
            .lock()
            .expect("run lock")
            .insert(name.to_string(), status);
        self.finished
            .lock()
            .expect("run lock")
            .insert(name.to_string(), result);
        self.changed.notify_all();
    }
}

impl<'a> Engine<'a> {
    /// Opens the pipeline's cache (creating the workdir).
    pub fn new(
        pipeline: &'a Pipeline,
        registry: &'a Registry,
        reporter: &'a dyn Reporter,
    ) -> Result<Self, EngineError> {
        let store = Store::open(pipeline.workdir.join("cache"))?;
        let state = RunState::new(&pipeline.workdir, &pipeline.name);
        Ok(Engine {
            pipeline,
            registry,
            store,
            state,
            reporter,
            slurm: None,
        })
    }

    pub(crate) fn kind(&self, step: &StepSpec) -> Result<Arc<dyn StepKind>, EngineError> {
        self.registry.get(&step.uses).ok_or_else(|| {
            EngineError::Input(format!(
                "step `{}` uses unknown kind `{}`",
                step.name, step.uses
            ))
        })
    }

    pub(crate) fn context<'c>(&'c self, step: &'c StepSpec, scope: &Scope<'c>) -> StepContext<'c> {
        StepContext {
            pipeline: self.pipeline,
            step,
            root: &self.pipeline.root,
            workdir: &self.pipeline.workdir,
            results: &self.pipeline.results,
            store: &self.store,
            cancel: scope.cancel.clone(),
            offline: scope.offline,
            reporter: scope.reporter,
            session: Arc::clone(&scope.session),
            planned: None,
            reduced: None,
        }
    }

    /// The scope of a look at the pipeline that computes nothing (preflight, plan, explain).
    pub(crate) fn looking(&self, offline: bool) -> Scope<'_> {
        Scope {
            session: Session::new(),
            reporter: self.reporter,
            cancel: CancellationToken::new(),
            offline,
        }
    }

    /// Step names in dependency order, ties broken by file order.
    pub fn order(&self) -> Result<Vec<String>, EngineError> {
        let dag = Dag::new(self.pipeline).map_err(|error| EngineError::Input(error.to_string()))?;
        Ok(dag.topological().into_iter().map(str::to_string).collect())
    }

    /// The steps a run with `until` covers: `until` and everything it needs, or every step.
    pub fn selected(&self, until: Option<&str>) -> Result<BTreeSet<String>, EngineError> {
        let dag = Dag::new(self.pipeline).map_err(|error| EngineError::Input(error.to_string()))?;
        let Some(until) = until else {
            return Ok(dag.topological().into_iter().map(str::to_string).collect());
        };
        let ancestors = dag
            .ancestors(until)
            .map_err(|error| EngineError::Input(format!("--until: {error}")))?;
        Ok(ancestors
            .into_iter()
            .chain([until])
            .map(str::to_string)
            .collect())
    }

    /// Runs the preflight check of every selected step, in file order, before anything is
    /// computed: a repository that cannot be fetched, a missing branch or a listed commit that is
    /// not on it stops the run here with exit code 2.
    pub fn preflight(&self, selected: &BTreeSet<String>, offline: bool) -> Result<(), EngineError> {
        let scope = self.looking(offline);
        for step in &self.pipeline.steps {
            if !selected.contains(&step.name) {
                continue;
            }
            self.kind(step)?
                .preflight(&self.context(step, &scope))
                .map_err(|error| EngineError::Input(format!("step `{}`: {error}", step.name)))?;
        }
        Ok(())
    }

    /// Runs the pipeline.
    pub fn run(&self, options: &RunOptions) -> Result<RunSummary, EngineError> {
        for forced in &options.force {
            if self.pipeline.step(forced).is_none() {
                return Err(EngineError::Input(format!(
                    "--force names no step `{forced}`"
                )));
            }
        }
        let selected = self.selected(options.until.as_deref())?;
        let _lock = self.store.lock_shared()?;
        self.preflight(&selected, options.offline)?;
        // What the run's steps start (the local model's server, model clients) ends with it.
        let tally = Tally::new(self.reporter);
        let run = Scope {
            session: Session::new(),
            reporter: &tally,
            cancel: options.cancel.clone(),
            offline: options.offline,
        };
        let pools = self.pools(options);
        let board = Board {
            finished: Mutex::new(BTreeMap::new()),
            changed: Condvar::new(),
            statuses: Mutex::new(BTreeMap::new()),
        };
        std::thread::scope(|scope| {
            for step in &self.pipeline.steps {
                let (board, pools, selected, run) = (&board, &pools, &selected, &run);
                scope.spawn(move || self.run_on_board(step, board, pools, selected, options, run));
            }
        });
        // Only a shortcut for the next run: failing to write it fails nothing.
        let _ = self.store.save_file_digests();
        self.summarize(
            board.statuses.into_inner().expect("run lock"),
            tally.spent(),
        )
    }

    /// The run's pools: `--jobs` CPU slots, the pytest slots (on Slurm, the jobs in flight; the
    /// cluster schedules them), and each model's concurrency.
    fn pools(&self, options: &RunOptions) -> Pools {
        Pools::new(PoolSizes {
            cpu: options.jobs,
            pytest: self
                .slurm
                .as_ref()
                .map_or(options.pytest_slots, |slurm| slurm.max_jobs()),
            models: self
                .pipeline
                .models
                .iter()
                .map(|(name, model)| (name.clone(), model.concurrency))
                .collect(),
        })
    }

    /// Runs `step` once every step it needs has ended, or skips it (left out by `--until`, or a
    /// step it needs did not finish), and posts how it ended on `board`.
    fn run_on_board(
        &self,
        step: &StepSpec,
        board: &Board,
        pools: &Pools,
        selected: &BTreeSet<String>,
        options: &RunOptions,
        run: &Scope,
    ) {
        let (result, status) = match board.upstream_of(step, selected) {
            Err(because) => {
                self.reporter.event(&Event::StepSkipped {
                    step: step.name.clone(),
                    because: because.clone(),
                });
                (Finished::Skipped, StepStatus::Skipped(because))
            }
            Ok(upstream) => match self.run_step_unwinding(step, &upstream, pools, options, run) {
                Ok((output, computed, cached)) => (
                    Finished::Done(Arc::new(output)),
                    StepStatus::Done { computed, cached },
                ),
                Err(failure) => {
                    self.reporter.event(&Event::StepFailed {
                        step: step.name.clone(),
                        error: failure.message.clone(),
                        class: failure.class,
                    });
                    (
                        Finished::Failed,
                        StepStatus::Failed(failure.message, failure.class),
                    )
                }
            },
        };
        board.finish(&step.name, result, status);
    }

    /// The run's outcome from how each step ended: the steps that rejected the input (exit 2)
    /// or failed (exit 1), else the summary.
    fn summarize(
        &self,
        mut statuses: BTreeMap<String, StepStatus>,
        spent: Spend,
    ) -> Result<RunSummary, EngineError> {
        let steps: Vec<(String, StepStatus)> = self
            .pipeline
            .steps
            .iter()
            .map(|step| {
                (
                    step.name.clone(),
                    statuses.remove(&step.name).expect("every step finishes"),
                )
            })
            .collect();
        let failed = |input: bool| -> Vec<String> {
            steps
                .iter()
                .filter(|(_, status)| match status {
                    StepStatus::Failed(_, class) => (*class == ErrorClass::Input) == input,
                    _ => false,
                })
                .map(|(name, _)| name.clone())
                .collect()
        };
        let (rejected, failed) = (failed(true), failed(false));
        if !rejected.is_empty() {
            Err(EngineError::StepsRejectedInput(rejected))
        } else if !failed.is_empty() {
            Err(EngineError::StepsFailed(failed))
        } else {
            Ok(RunSummary { steps, spent })
        }
    }

    /// [`Self::run_step`], a panic in the step's kind (planning, reducing, publishing) taken as the
    /// step's failure: the step's thread always records its end, so no step waits forever for it.
    fn run_step_unwinding(
        &self,
        step: &StepSpec,
        upstream: &Upstream,
        pools: &Pools,
        options: &RunOptions,
        scope: &Scope,
    ) -> Result<(StepOutput, usize, usize), Failure> {
        std::panic::catch_unwind(AssertUnwindSafe(|| {
            self.run_step(step, upstream, pools, options, scope)
        }))
        .unwrap_or_else(|payload| Err(Failure::of(&StepError::panicked(payload.as_ref()))))
    }

    /// Plans, computes and publishes one step: [plans](StepKind::plan) it, looks its items up,
    /// schedules the misses in their pools, and publishes. Returns its output and (computed,
    /// cached) counts, or the failure (already specific) with its class.
    fn run_step(
        &self,
        step: &StepSpec,
        upstream: &Upstream,
        pools: &Pools,
        options: &RunOptions,
        scope: &Scope,
    ) -> Result<(StepOutput, usize, usize), Failure> {
        let force = options.force.contains(&step.name);
        let started = Instant::now();
        let kind = self.kind(step).map_err(|error| Failure {
            message: error.to_string(),
            class: ErrorClass::Input,
        })?;
        let mut ctx = self.context(step, scope);
        let Planned {
            items: plans,
            plan,
            digest: plan_digest,
        } = kind
            .plan(&ctx, upstream)
            .map_err(|error| Failure::of(&error))?;
        ctx.planned = plan;
        check_unique_ids(&plans).map_err(|error| Failure::of(&error))?;
        // Each item is hashed once: the lookup, the computation and the run state share the key.
        // The key is hashed from parts borrowed from the plan; the owned key record is made only for
        // an item that is computed.
        // The plans stay where the kind put them until the results are made: a big fan-out's
        // plans are megabytes, and every vector they were moved into was fresh memory.
        let keys: Vec<Digest> = plans
            .iter()
            .map(|plan| key_parts(kind.as_ref(), step.params.key(), plan).digest())
            .collect();
        let (hits, misses) = self.look_up(kind.as_ref(), &ctx, &keys, force)?;
        let job = Job {
            kind: kind.as_ref(),
            ctx: &ctx,
            step,
            upstream,
            pools,
            force,
            retry: options.retry,
        };
        let computed = self.schedule(&job, &plans, &keys, &misses)?;
        let mut computed = computed.into_iter();
        // A cached item's plan moves into its result, uncopied.
        let items: Vec<ItemResult> = plans
            .into_iter()
            .zip(hits)
            .map(|(plan, hit)| match hit {
                Some((digest, output, in_place)) => ItemResult {
                    plan,
                    digest,
                    output,
                    cached: true,
                    in_place,
                },
                None => computed.next().expect("every item has a result"),
            })
            .collect();
        ctx.reduced = self
            .reduce(kind.as_ref(), &ctx, plan_digest, &items, force)
            .map_err(|error| Failure {
                message: format!("reduce: {}", error.chain()),
                class: error.class(),
            })?;
        self.publish(kind.as_ref(), &ctx, items, &keys, started)
    }

    /// Looks every item's key up (none for a forced step): the cached outputs, and the indices of
    /// the items to compute. Tells the reporter how many are cached.
    fn look_up(
        &self,
        kind: &dyn StepKind,
        ctx: &StepContext,
        keys: &[Digest],
        force: bool,
    ) -> Result<(Vec<Option<Hit>>, Vec<usize>), Failure> {
        let mut hits: Vec<Option<Hit>> = Vec::with_capacity(keys.len());
        let mut misses = Vec::new();
        for (index, key) in keys.iter().enumerate() {
            let hit = (!force)
                .then(|| self.lookup(kind, ctx, key))
                .transpose()?
                .flatten();
            if hit.is_none() {
                misses.push(index);
            }
            hits.push(hit.map(|(digest, output, in_place)| (digest, Arc::new(output), in_place)));
        }
        // The cached items are counted here, not one event each: a reporter starts the step's
        // progress at `cached`.
        self.reporter.event(&Event::StepPlanned {
            step: ctx.step.name.clone(),
            total: keys.len(),
            cached: keys.len() - misses.len(),
        });
        Ok((hits, misses))
    }

    /// Publishes a step's result files from its items (and reduction), records its run state,
    /// and reports it finished.
    fn publish(
        &self,
        kind: &dyn StepKind,
        ctx: &StepContext,
        items: Vec<ItemResult>,
        keys: &[Digest],
        started: Instant,
    ) -> Result<(StepOutput, usize, usize), Failure> {
        let step = ctx.step;
        kind.publish(ctx, &items).map_err(|error| Failure {
            message: format!("publish: {}", error.chain()),
            class: error.class(),
        })?;
        let state = items
            .iter()
            .zip(keys)
            .map(|(item, key)| (item.plan.id.as_str(), *key, item.digest));
        self.state
            .save_items(&step.name, &step.uses, state)
            .map_err(|error| Failure {
                message: error.to_string(),
                class: ErrorClass::Failure,
            })?;
        // An item another run computed while this one waited for its lock was not computed here.
        let computed_count = items.iter().filter(|item| !item.cached).count();
        let cached = items.len() - computed_count;
        self.reporter.event(&Event::StepFinished {
            step: step.name.clone(),
            computed: computed_count,
            cached,
            elapsed: started.elapsed(),
        });
        let output = StepOutput {
            step: step.name.clone(),
            kind: step.uses.clone(),
            role: step.role.clone(),
            items,
            reduced: ctx.reduced.clone(),
        };
        Ok((output, computed_count, cached))
    }

    /// The cached output of a content key of a step of `kind`, if present, and whether its blobs
    /// are all in the workspace already ([`decode_output`]).
    pub(crate) fn lookup(
        &self,
        kind: &dyn StepKind,
        ctx: &StepContext,
        key: &Digest,
    ) -> Result<Option<(Digest, ItemOutput, bool)>, StoreError> {
        decode_output(&self.store, self.store.cached_output(key)?, &|name| {
            kind.blob_in_workspace(ctx, name)
        })
    }

    /// The cached result of `key`, taken under its lock: another run may have computed the item
    /// while this one waited for the lock (a forced step computes it regardless).
    fn cached_under_lock(
        &self,
        job: &Job,
        plan: &ItemPlan,
        key: &Digest,
    ) -> Result<Option<ItemResult>, StepError> {
        let found = if job.force {
            None
        } else {
            decode_output(&self.store, self.store.cached_output_now(key)?, &|name| {
                job.kind.blob_in_workspace(job.ctx, name)
            })?
        };
        Ok(found.map(|(digest, output, in_place)| ItemResult {
            plan: plan.clone(),
            digest,
            output: Arc::new(output),
            cached: true,
            in_place,
        }))
    }

    /// The delay before retrying `plan` after `error`, reported as a progress event; `None` when
    /// the error is not transient or the retries are spent.
    fn retry_delay(
        &self,
        job: &Job,
        plan: &ItemPlan,
        attempt: u32,
        error: &StepError,
    ) -> Option<Duration> {
        let StepError::Transient { retry_after, .. } = error else {
            return None;
        };
        let delay = job.retry.delay(attempt, *retry_after, &plan.id)?;
        self.reporter.event(&Event::ItemRetry {
            step: job.step.name.clone(),
            item: plan.id.clone(),
            attempt,
            delay,
            error: error.chain(),
        });
        Some(delay)
    }

    /// Computes one item on this thread and caches it: output object first, action record last.
    /// It holds the key's lock while it does, and takes the cache's result instead if another run
    /// computed the item while this one waited for the lock. A transient failure is retried with
    /// backoff, the pool's slot given back while it waits.
    fn compute(
        &self,
        job: &Job,
        plan: &ItemPlan,
        (record, key): (&KeyRecord, &Digest),
    ) -> Result<ItemResult, StepError> {
        // The key's lock comes before the pool's slot: an item another step or run is computing
        // is waited for without holding a slot (two rankings share commits, and the oracle's
        // slots are pytest processes), and the order is the same everywhere, so no two workers
        // each hold what the other waits for.
        let _lock = self.store.lock_key(key)?;
        if let Some(result) = self.cached_under_lock(job, plan, key)? {
            return Ok(result);
        }
        let mut attempt = 0;
        loop {
            if job.ctx.cancel.is_cancelled() {
                return Err(StepError::Cancelled);
            }
            let slot = job.pools.acquire(&plan.pool);
            if plan.pool == Pool::Pytest
                && let Some(slurm) = &self.slurm
            {
                let result = self.compute_on_slurm(
                    slurm.as_ref(),
                    (job.kind, job.step, plan),
                    (record, key),
                    job.upstream,
                    job.force,
                );
                drop(slot);
                return result;
            }
            let started = Instant::now();
            // A panicking item fails alone: unwinding through the step's worker scope would take
            // down the step's thread, and the steps waiting for it would wait forever.
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
                job.kind.run(job.ctx, plan, job.upstream)
            }))
            .unwrap_or_else(|payload| Err(StepError::panicked(payload.as_ref())));
            drop(slot);
            match outcome {
                Ok(output) => return self.store_output(job, plan, record, key, output, started),
                Err(error) => {
                    attempt += 1;
                    let delay = self.retry_delay(job, plan, attempt, &error).ok_or(error)?;
                    let until = Instant::now() + delay;
                    while Instant::now() < until {
                        if job.ctx.cancel.is_cancelled() {
                            return Err(StepError::Cancelled);
                        }
                        std::thread::sleep(
                            until
                                .saturating_duration_since(Instant::now())
                                .min(Duration::from_millis(50)),
                        );
                    }
                }
            }
        }
    }

    /// [`Self::compute`] for an item computed as a future: the pool's permit is awaited, and the
    /// cancellation token stops the item wherever it waits; a stopped item caches nothing.
    async fn compute_async(
        &self,
        job: &Job<'_>,
        plan: &ItemPlan,
        (record, key): (&KeyRecord, &Digest),
    ) -> Result<ItemResult, StepError> {
        let cancel = &job.ctx.cancel;
        let _lock = self.store.lock_key(key)?;
        if let Some(result) = self.cached_under_lock(job, plan, key)? {
            return Ok(result);
        }
        let mut attempt = 0;
        loop {
            let slot = tokio::select! {
                slot = job.pools.acquire_async(&plan.pool) => slot,
                () = cancel.cancelled() => return Err(StepError::Cancelled),
            };
            let started = Instant::now();
            let outcome = tokio::select! {
                outcome = AssertUnwindSafe(job.kind.run_async(job.ctx, plan, job.upstream))
                    .catch_unwind() => outcome
                    .unwrap_or_else(|payload| Err(StepError::panicked(payload.as_ref()))),
                () = cancel.cancelled() => return Err(StepError::Cancelled),
            };
            drop(slot);
            match outcome {
                Ok(output) => return self.store_output(job, plan, record, key, output, started),
                Err(error) => {
                    attempt += 1;
                    let delay = self.retry_delay(job, plan, attempt, &error).ok_or(error)?;
                    tokio::select! {
                        () = tokio::time::sleep(delay) => {}
                        () = cancel.cancelled() => return Err(StepError::Cancelled),
                    }
                }
            }
        }
    }

    /// Checks an item's output and stores it: output object first, action record last.
    fn store_output(
        &self,
        job: &Job,
        plan: &ItemPlan,
        record: &KeyRecord,
        key: &Digest,
        output: ItemOutput,
        started: Instant,
    ) -> Result<ItemResult, StepError> {
        let digest = store_result(
            &self.store,
            &job.step.name,
            plan,
            (record, key),
            &output,
            started.elapsed(),
        )?;
        Ok(ItemResult {
            plan: plan.clone(),
            digest,
            output: Arc::new(output),
            cached: false,
            in_place: job.kind.computes_in_place(),
        })
    }
}

/// A stored output as an item's result, or None (a miss: the item is computed again) when it does
/// not decode (a format change without a version bump) or one of its blobs is neither in the
/// workspace (`in_workspace`: [`StepKind::blob_in_workspace`]) nor in the store with bytes that hash
/// to its digest. A cached output whose blobs are gone is never served: publishing it would fail
/// on every later run. The flag is true when every blob was found in the workspace.
fn decode_output(
    store: &Store,
    stored: Option<(Digest, OutputBytes)>,
    in_workspace: &dyn Fn(&str) -> Option<Digest>,
) -> Result<Option<(Digest, ItemOutput, bool)>, StoreError> {
    let Some((digest, output)) = stored.and_then(|(digest, bytes)| {
        serde_json::from_slice::<ItemOutput>(&bytes)
            .ok()
            .map(|output| (digest, output))
    }) else {
        return Ok(None);
    };
    let mut in_place = true;
    for (name, blob) in &output.blobs {
        if in_workspace(name) == Some(*blob) {
            continue;
        }
        in_place = false;
        // Through the stat cache: an unchanged blob is not read again on every re-run.
        if !store.has_intact(blob)? {
            return Ok(None);
        }
    }
    Ok(Some((digest, output, in_place)))
}

impl Engine<'_> {
    /// Computes an item in a Slurm job, which stores it; takes the result from the store.
    fn compute_on_slurm(
        &self,
        slurm: &dyn RemoteExecutor,
        (kind, step, plan): (&dyn StepKind, &StepSpec, &ItemPlan),
        (record, key): (&KeyRecord, &Digest),
        upstream: &Upstream,
        force: bool,
    ) -> Result<ItemResult, StepError> {
        let job = slurm
            .compute(step, kind.name(), plan, (record, key), upstream, force)
            .map_err(StepError::Remote)?;
        // The job appended its action record from another process: read the log again.
        // The job stored the item's blobs as objects: they are what is looked for.
        let (digest, output, _) =
            decode_output(&self.store, self.store.cached_output_now(key)?, &|_| None)?.ok_or_else(
                || {
                    StepError::Remote(Box::new(MissingResult {
                        job,
                        item: plan.id.clone(),
                    }))
                },
            )?;
        Ok(ItemResult {
            plan: plan.clone(),
            digest,
            output: Arc::new(output),
            cached: false,
            in_place: false,
        })
    }
}

/// Stores a computed item: appends the action record with the output, which carries the small
/// blobs the output names ([`Store::hold`]) and is refused if one is neither held, carried nor an
/// object, so a process killed before leaves nothing that is served. The engine and
/// `claimflow worker` both store items through it. Returns the output's digest.
pub fn store_result(
    store: &Store,
    step: &str,
    plan: &ItemPlan,
    (record, key): (&KeyRecord, &Digest),
    output: &ItemOutput,
    took: Duration,
) -> Result<Digest, StepError> {
    debug_assert_eq!(record.digest(), *key, "the key is the digest of its record");
    let bytes = serde_json::to_vec(output).expect("item outputs serialize");
    let blobs: Vec<Digest> = output.blobs.values().copied().collect();
    match store.record_action(record, (&bytes, &blobs), step, took.as_secs_f64()) {
        Err(StoreError::Missing(blob)) => {
            let name = output
                .blobs
                .iter()
                .find(|(_, digest)| **digest == blob)
                .map_or("?", |(name, _)| name.as_str());
            Err(StepError::Invariant(format!(
                "item `{}` names blob `{name}` ({blob}) that it did not store",
                plan.id
            )))
        }
        result => Ok(result?),
    }
}

/// A cached item's output digest, output, and whether its blobs are all in the workspace.
type Hit = (Digest, Arc<ItemOutput>, bool);

/// What a scheduler reports each computed item to: its index, its outcome, when it started.
type Finish<'f> = dyn Fn(usize, Result<ItemResult, StepError>, Instant) + Sync + 'f;

/// A step's items as the schedulers read them: plans and keys by index, and the indices to
/// compute.
struct Items<'a> {
    plans: &'a [ItemPlan],
    keys: &'a [Digest],
    misses: &'a [usize],
}

/// What every item of one step's computation shares.
struct Job<'a> {
    kind: &'a dyn StepKind,
    ctx: &'a StepContext<'a>,
    step: &'a StepSpec,
    upstream: &'a Upstream,
    pools: &'a Pools,
    force: bool,
    retry: RetryPolicy,
}

/// The key record of an item of `step`.
pub fn key_record(kind: &dyn StepKind, step: &StepSpec, plan: &ItemPlan) -> KeyRecord {
    key_parts(kind, step.params.key(), plan).to_record()
}

/// The parts of an item's key record, borrowed from its plan; `params` is the step's
/// [`StepKind::key_params`], computed once per step.
pub fn key_parts<'a>(
    kind: &'a dyn StepKind,
    params: &'a serde_json::Value,
    plan: &'a ItemPlan,
) -> KeyParts<'a> {
    KeyParts {
        schema: KEY_SCHEMA,
        kind: kind.name(),
        version: kind.version(),
        params,
        item: &plan.id,
        item_params: &plan.params,
        reads: &plan.reads,
        files: &plan.files,
        tools: &plan.tools,
        replicate: plan.replicate,
    }
}

/// The item id of a step's reduction in its key record (which also names the reduction's version
/// among its tools, as no item's record does).
const REDUCTION: &str = "";

/// The key record of the reduction of `step`'s `items` under the plan whose digest is `plan`, for
/// a kind that reduces ([`StepKind::reduction`]; None for one that does not).
pub(crate) fn reduction_record(
    kind: &dyn StepKind,
    step: &StepSpec,
    plan: Digest,
    items: &[ItemResult],
) -> Option<KeyRecord> {
    let version = kind.reduction(step)?;
    let reads: BTreeMap<String, Digest> = items
        .iter()
        .map(|item| (item.plan.id.clone(), item.digest))
        .collect();
    let tools = BTreeMap::from([("reduction".to_string(), version.to_string())]);
    let item_params = crate::cache::JsonText::of(&serde_json::json!({ "plan": plan }));
    Some(
        KeyParts {
            schema: KEY_SCHEMA,
            kind: kind.name(),
            version: kind.version(),
            params: step.params.key(),
            item: REDUCTION,
            item_params: &item_params,
            reads: &reads,
            files: &BTreeMap::new(),
            tools: &tools,
            replicate: 0,
        }
        .to_record(),
    )
}

fn check_unique_ids(plans: &[ItemPlan]) -> Result<(), StepError> {
    let mut seen = BTreeSet::new();
    for plan in plans {
        if !seen.insert(plan.id.as_str()) {
            return Err(StepError::Invariant(format!(
                "two items share the id `{}`",
                plan.id
            )));
        }
    }
    Ok(())
}
