//! `claimflow worker KEY`: what a Slurm job runs. It computes one item from the task stored
//! under its key and writes the output and action record into the store exactly as the local
//! engine does (objects through a temp file and a rename, the action record last), so a job
//! killed at any point leaves nothing that is served.
//!
//! The worker loads the pipeline from the text the coordinator stored, rebuilds the item's
//! upstream from the stored manifests, and recomputes the item's key: a node running another
//! build of claimflow, whose key would differ, refuses the task instead of caching a result
//! under a key it did not compute.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::task::{Manifest, Task, TaskError, load_manifest, load_task};
use crate::cache::{Digest, Store, StoreError};
use crate::engine::Registry;
use crate::engine::jobs::job_dir;
use crate::engine::{
    ItemResult, Reduced, Session, StepContext, StepError, StepOutput, Upstream, key_record,
};
use crate::pipeline::{self, Diagnostics};

/// Why a worker could not compute its item.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The task is missing or unreadable.
    #[error(transparent)]
    Task(#[from] TaskError),
    /// The stored pipeline no longer loads here.
    #[error("the pipeline {file} does not load on this node:\n{diagnostics}")]
    Pipeline {
        file: PathBuf,
        diagnostics: Diagnostics,
    },
    /// The task names a step or kind this pipeline or build does not have.
    #[error("the task names {0}, which this claimflow does not know")]
    Unknown(String),
    /// This build computes another key for the item.
    #[error(
        "this claimflow computes key {computed} for item `{item}`, the coordinator {expected}: \
         run the same claimflow build on the nodes as on the coordinator"
    )]
    KeyMismatch {
        item: String,
        expected: Digest,
        computed: Digest,
    },
    /// The item's computation failed.
    #[error("item `{item}` of step `{step}` failed: {source}")]
    Item {
        step: String,
        item: String,
        #[source]
        source: StepError,
    },
}

/// What the worker did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Worked {
    /// The item was computed and stored.
    Computed {
        item: String,
        output: Digest,
        /// Where the job's time went.
        phases: Phases,
    },
    /// The store already had the item (another job or run computed it).
    Cached,
}

/// Where a job's time went: what it costs on top of the item itself is `prepare` and `store`
/// (plus the scheduler's start latency, which the job cannot see).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Phases {
    /// Opening the store, loading the task, the pipeline and the upstream outputs.
    pub prepare: std::time::Duration,
    /// The item's computation.
    pub compute: std::time::Duration,
    /// Writing the output and its action record.
    pub store: std::time::Duration,
}

impl std::fmt::Display for Phases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "prepared in {:.2} s, computed in {:.2} s, stored in {:.2} s",
            self.prepare.as_secs_f64(),
            self.compute.as_secs_f64(),
            self.store.as_secs_f64()
        )
    }
}

/// Computes the item whose content key is `key`, in the workdir `workdir`, as job `job`.
pub fn work(
    workdir: &Path,
    key: &Digest,
    job: &str,
    registry: &Registry,
) -> Result<Worked, WorkerError> {
    let began = Instant::now();
    let store = Store::open(workdir.join("cache"))?;
    // `cache gc` waits for the job as it waits for a run.
    let _lock = store.lock_shared()?;
    let task = load_task(&store, key)?;
    if !task.force && store.cached_output_now(key)?.is_some() {
        return Ok(Worked::Cached);
    }
    let pipeline = load_pipeline(&store, &task, registry)?;
    let step = pipeline
        .step(&task.step)
        .ok_or_else(|| WorkerError::Unknown(format!("step `{}`", task.step)))?;
    let kind = registry
        .get(&step.uses)
        .ok_or_else(|| WorkerError::Unknown(format!("step kind `{}`", step.uses)))?;
    let record = key_record(kind.as_ref(), step, &task.plan);
    let computed = record.digest();
    if computed != *key {
        return Err(WorkerError::KeyMismatch {
            item: task.plan.id.clone(),
            expected: *key,
            computed,
        });
    }
    let upstream = load_upstream(&store, &task, &pipeline)?;

    let private = job_dir(&pipeline.workdir, job);
    // A job computes one blocking item (the pytest pool): nothing cancels it but the cluster, and
    // the run that sent it was not offline (offline runs send no jobs). Its private directories
    // are its job's.
    let mut ctx = StepContext::new(&pipeline, step, &store);
    ctx.session = Session::for_job(job);
    let started = Instant::now();
    let prepare = started - began;
    let outcome = kind.run(&ctx, &task.plan, &upstream);
    let _ = std::fs::remove_dir_all(&private);
    let computed_at = Instant::now();
    let output = outcome.map_err(|source| WorkerError::Item {
        step: step.name.clone(),
        item: task.plan.id.clone(),
        source,
    })?;
    let digest = crate::engine::store_result(
        &store,
        &step.name,
        &task.plan,
        (&record, key),
        &output,
        started.elapsed(),
    )
    .map_err(|source| WorkerError::Item {
        step: step.name.clone(),
        item: task.plan.id.clone(),
        source,
    })?;
    Ok(Worked::Computed {
        item: task.plan.id,
        output: digest,
        phases: Phases {
            prepare,
            compute: computed_at - started,
            store: computed_at.elapsed(),
        },
    })
}

/// The pipeline the coordinator stored with the task, loaded with this build's step kinds.
fn load_pipeline(
    store: &Store,
    task: &Task,
    registry: &Registry,
) -> Result<pipeline::Pipeline, WorkerError> {
    let text = store.get(&task.pipeline.text)?;
    let text = String::from_utf8_lossy(&text);
    pipeline::load_str(&text, &task.pipeline.file, &task.pipeline.root, registry).map_err(
        |diagnostics| WorkerError::Pipeline {
            file: task.pipeline.file.clone(),
            diagnostics,
        },
    )
}

/// The item's upstream, rebuilt from the manifests the task names.
fn load_upstream(
    store: &Store,
    task: &Task,
    pipeline: &pipeline::Pipeline,
) -> Result<Upstream, WorkerError> {
    let mut upstream = Upstream::default();
    for (name, digest) in &task.upstream {
        let manifest = load_manifest(store, digest)?;
        upstream.steps.insert(
            name.clone(),
            Arc::new(step_output(store, manifest, pipeline)?),
        );
    }
    Ok(upstream)
}

/// One upstream step's output, read from its manifest: every item's output and the reduced one.
fn step_output(
    store: &Store,
    manifest: Manifest,
    pipeline: &pipeline::Pipeline,
) -> Result<StepOutput, StoreError> {
    let mut items = Vec::with_capacity(manifest.items.len());
    for item in manifest.items {
        items.push(ItemResult {
            output: Arc::new(store.get_json(&item.output)?),
            digest: item.output,
            plan: item.plan,
            cached: true,
            in_place: false,
        });
    }
    let reduced = manifest
        .reduced
        .map(|digest| -> Result<Reduced, StoreError> {
            Ok(Reduced {
                output: Arc::new(store.get_json(&digest)?),
                digest,
            })
        })
        .transpose()?;
    Ok(StepOutput {
        role: pipeline
            .step(&manifest.step)
            .map_or(crate::engine::Role::Other, |spec| spec.role.clone()),
        step: manifest.step,
        kind: manifest.kind,
        items,
        reduced,
    })
}
