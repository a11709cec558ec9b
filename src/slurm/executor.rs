//! The coordinator's side: computes an item by submitting a job that runs `claimflow worker`,
//! waiting for it, and reporting a job that did not complete as the item's error.
//!
//! For each item it stores the task ([`super::task`]), adopts a job a stopped run left queued or
//! running for the same key ([`super::journal`]) or submits a new one ([`super::watch`]), and
//! waits. A job that ends `COMPLETED` has written the item's output and action record into the
//! store; any other end (failed, cancelled, timed out, preempted, lost with its node) is an item
//! error carrying the job id and the tail of its log, and nothing of it is cached.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use super::journal::{Journal, Submission};
use super::scheduler::{JobId, JobState, Scheduler, SlurmCommands};
use super::script::{JobRequest, job_environment, render};
use super::shared::{SharedPathError, check_shared};
use super::task::{
    PipelineSource, TASK_SCHEMA, Task, TaskError, forget_task, store_manifest, store_task,
};
use super::watch::{DispatchStats, Dispatcher, WatchError};
use crate::cache::{Digest, KeyRecord, Store, StoreError, write_atomic_in};
use crate::engine::{ItemPlan, RemoteExecutor, Upstream};
use crate::pipeline::SlurmSettings;
use crate::pipeline::{Pipeline, StepSpec};

/// Lines of a failed job's log shown with its error.
const TAIL_LINES: usize = 20;

/// Why the Slurm executor could not start, or an item's job did not complete.
#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    /// Slurm's client commands are missing or the controller does not answer.
    #[error(
        "no Slurm cluster answers here (`sinfo` failed); run where `sinfo` works, or use \
         `--executor local`"
    )]
    Unavailable,
    /// A path jobs need is node-local or missing.
    #[error(transparent)]
    Shared(#[from] SharedPathError),
    /// The pipeline file could not be read again to hand to the jobs.
    #[error("read the pipeline {path} for the jobs: {source}")]
    Pipeline {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The Python environment cache cannot be created.
    #[error("create the Python environment cache {path}: {source}")]
    Cache {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The claimflow binary's path is not known.
    #[error("find the claimflow binary to run on the nodes: {0}")]
    Binary(#[source] std::io::Error),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The task could not be stored.
    #[error(transparent)]
    Task(#[from] TaskError),
    /// Submitting or watching failed.
    #[error(transparent)]
    Watch(#[from] WatchError),
    /// The job ended without completing: nothing of it is cached.
    #[error("slurm job {job} ended {state}{}; log {}{}", meaning(state), log.display(), render_tail(tail))]
    Job {
        job: JobId,
        state: JobState,
        log: PathBuf,
        tail: Vec<String>,
    },
    /// The job completed but the item's result is not in the store.
    #[error("slurm job {job} completed but stored no result; log {}{}", log.display(), render_tail(tail))]
    NoResult {
        job: JobId,
        log: PathBuf,
        tail: Vec<String>,
    },
}

fn meaning(state: &JobState) -> &'static str {
    match state {
        JobState::Failed => " (the worker exited with an error or was killed)",
        JobState::Cancelled => " (cancelled with scancel)",
        JobState::Timeout => " (its time limit; raise `time:` under `executor:`)",
        JobState::Preempted => " (preempted; the next run submits it again)",
        JobState::Lost(_) => " (the next run submits it again)",
        _ => "",
    }
}

fn render_tail(tail: &[String]) -> String {
    if tail.is_empty() {
        return " (empty)".to_string();
    }
    let mut text = String::from(", which ends:");
    for line in tail {
        text.push_str("\n    ");
        text.push_str(line);
    }
    text
}

/// The last lines of a job's log (each cut at 300 characters).
pub fn log_tail(log: &Path, lines: usize) -> Vec<String> {
    let text = std::fs::read(log).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..]
        .iter()
        .map(|line| line.chars().take(300).collect())
        .collect()
}

/// What to tell the user to do about a node-local path.
const SHARED_HINT: &str = "Set `workdir:` in the pipeline (and $CLAIMFLOW_CACHE_DIR, and the \
                           project) on a filesystem every node mounts, such as your home or \
                           project space, or run with `--executor local`.";

/// Sends pytest-pool items of one run to Slurm.
pub struct SlurmExecutor {
    settings: SlurmSettings,
    dispatcher: Dispatcher,
    journal: Journal,
    store: Store,
    root: PathBuf,
    workdir: PathBuf,
    binary: PathBuf,
    pipeline: PipelineSource,
    /// Manifest digests of each step's needs, stored once per step.
    manifests: Mutex<BTreeMap<String, BTreeMap<String, Digest>>>,
}

impl SlurmExecutor {
    /// Checks the cluster and the shared paths, and prepares to submit `pipeline`'s items. The
    /// pipeline's workdir must exist (the engine creates it).
    pub fn new(pipeline: &Pipeline, store: &Store) -> Result<Self, SlurmError> {
        if !SlurmCommands::available() {
            return Err(SlurmError::Unavailable);
        }
        let binary = std::env::current_exe().map_err(SlurmError::Binary)?;
        let cache = crate::python::cache_dir();
        std::fs::create_dir_all(&cache).map_err(|source| SlurmError::Cache {
            path: cache.clone(),
            source,
        })?;
        let cache = cache.canonicalize().map_err(|source| SlurmError::Cache {
            path: cache.clone(),
            source,
        })?;
        let environment = job_environment(&cache);
        let scheduler: Arc<dyn Scheduler> = Arc::new(SlurmCommands::new(environment));
        Self::with_scheduler(pipeline, store, scheduler, &binary)
    }

    /// As [`new`](Self::new), on any scheduler (a simulated one in benches and tests), with the
    /// shared-path checks but without asking for `sinfo`.
    pub fn with_scheduler(
        pipeline: &Pipeline,
        store: &Store,
        scheduler: Arc<dyn Scheduler>,
        binary: &Path,
    ) -> Result<Self, SlurmError> {
        check_shared("workdir", &pipeline.workdir, SHARED_HINT)?;
        check_shared("project root", &pipeline.root, SHARED_HINT)?;
        check_shared("claimflow binary", binary, SHARED_HINT)?;
        let cache = crate::python::cache_dir();
        check_shared("Python environment cache", &cache, SHARED_HINT)?;
        let path = pipeline.root.join(&pipeline.file);
        let text = std::fs::read(&path).map_err(|source| SlurmError::Pipeline { path, source })?;
        let settings = pipeline.executor.slurm.clone();
        Ok(SlurmExecutor {
            dispatcher: Dispatcher::new(scheduler, settings.max_jobs),
            settings,
            journal: Journal::new(&pipeline.workdir),
            store: store.clone(),
            root: pipeline.root.clone(),
            workdir: pipeline.workdir.clone(),
            binary: binary.to_path_buf(),
            pipeline: PipelineSource {
                file: pipeline.file.clone(),
                root: pipeline.root.clone(),
                text: store.put(&text)?,
            },
            manifests: Mutex::new(BTreeMap::new()),
        })
    }

    /// Jobs queued or running at once.
    pub fn max_jobs(&self) -> usize {
        self.settings.max_jobs
    }

    /// What the executor's dispatcher has done.
    pub fn stats(&self) -> DispatchStats {
        self.dispatcher.stats()
    }

    /// Cancels every job in flight; no more are submitted.
    pub fn stop(&self) -> Vec<JobId> {
        self.dispatcher.stop()
    }

    fn manifests(
        &self,
        step: &StepSpec,
        upstream: &Upstream,
    ) -> Result<BTreeMap<String, Digest>, StoreError> {
        let mut manifests = self.manifests.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = manifests.get(&step.name) {
            return Ok(found.clone());
        }
        let mut digests = BTreeMap::new();
        for (name, output) in &upstream.steps {
            digests.insert(name.clone(), store_manifest(&self.store, output)?);
        }
        manifests.insert(step.name.clone(), digests.clone());
        Ok(digests)
    }

    /// Computes `plan` (an item of `step`, of kind `kind`) in a Slurm job, even when the store
    /// has it if `force`. On `Ok` the item's output and action record are in the store under
    /// `key`.
    pub fn compute(
        &self,
        step: &StepSpec,
        kind: &str,
        plan: &ItemPlan,
        (record, key): (&KeyRecord, &Digest),
        upstream: &Upstream,
        force: bool,
    ) -> Result<JobId, SlurmError> {
        let task = Task {
            schema: TASK_SCHEMA,
            pipeline: self.pipeline.clone(),
            step: step.name.clone(),
            plan: plan.clone(),
            key: *key,
            record: record.clone(),
            upstream: self.manifests(step, upstream)?,
            force,
        };
        store_task(&self.store, &task)?;
        let (job, log) = match self.adoptable(key)? {
            Some(submission) => (submission.job, submission.log),
            None => self.submit(step, kind, plan, key)?,
        };
        let state = self.dispatcher.wait(job);
        self.journal.forget(key);
        forget_task(&self.store, key);
        match state {
            JobState::Completed if self.store.cached_output_now(key)?.is_some() => Ok(job),
            JobState::Completed => Err(SlurmError::NoResult {
                job,
                tail: log_tail(&log, TAIL_LINES),
                log,
            }),
            state => Err(SlurmError::Job {
                job,
                state,
                tail: log_tail(&log, TAIL_LINES),
                log,
            }),
        }
    }

    /// A job a stopped run submitted for `key` that is still queued or running, now watched.
    fn adoptable(&self, key: &Digest) -> Result<Option<Submission>, SlurmError> {
        let Some(submission) = self.journal.find(key) else {
            return Ok(None);
        };
        let states = self.dispatcher.states(&[submission.job])?;
        match states.get(&submission.job) {
            Some(state) if !state.is_final() => {
                self.dispatcher.adopt(submission.job)?;
                Ok(Some(submission))
            }
            _ => {
                self.journal.forget(key);
                Ok(None)
            }
        }
    }

    fn submit(
        &self,
        step: &StepSpec,
        kind: &str,
        plan: &ItemPlan,
        key: &Digest,
    ) -> Result<(JobId, PathBuf), SlurmError> {
        let log = self
            .workdir
            .join("logs/slurm")
            .join(&step.name)
            .join(format!("{}.%j.log", file_name(&plan.id, key)));
        if let Some(parent) = log.parent() {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::Io {
                action: "create",
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let request = JobRequest {
            name: format!("claimflow:{}", step.name),
            binary: &self.binary,
            root: &self.root,
            workdir: &self.workdir,
            key: key.to_string(),
            log: log.clone(),
            kind,
        };
        let script = self
            .workdir
            .join("slurm/scripts")
            .join(format!("{}.sh", key.hex()));
        write_atomic_in(
            &self.workdir.join("slurm/tmp"),
            &script,
            render(&request, &self.settings).as_bytes(),
        )?;
        let job = self.dispatcher.submit(&script)?;
        let log = PathBuf::from(log.to_string_lossy().replace("%j", &job.to_string()));
        self.journal.record(&Submission {
            job,
            key: *key,
            step: step.name.clone(),
            item: plan.id.clone(),
            log: log.clone(),
            submitted: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_secs()),
        })?;
        Ok((job, log))
    }
}

/// An item id as a file name: readable, and unique through the key's first digits.
fn file_name(item: &str, key: &Digest) -> String {
    let readable: String = item
        .chars()
        .map(|character| {
            if character.is_ascii_alphanumeric() || matches!(character, '-' | '.') {
                character
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    format!("{readable}-{}", &key.hex()[..8])
}

impl RemoteExecutor for SlurmExecutor {
    fn max_jobs(&self) -> usize {
        SlurmExecutor::max_jobs(self)
    }

    fn compute(
        &self,
        step: &StepSpec,
        kind: &str,
        plan: &ItemPlan,
        keyed: (&KeyRecord, &Digest),
        upstream: &Upstream,
        force: bool,
    ) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
        SlurmExecutor::compute(self, step, kind, plan, keyed, upstream, force)
            .map(|job| job.to_string())
            .map_err(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_ids_become_file_names() {
        let key = Digest::of(b"k");
        let name = file_name("demo/x@0123::tests/test_a.py::test b", &key);
        assert!(
            name.starts_with("demo_x_0123__tests_test_a.py__test_b-"),
            "{name}"
        );
        assert!(!name.contains('/'));
    }

    #[test]
    fn the_tail_is_the_last_lines() {
        let directory = tempfile::tempdir().unwrap();
        let log = directory.path().join("job.log");
        std::fs::write(&log, "one\ntwo\nthree\n").unwrap();
        assert_eq!(log_tail(&log, 2), vec!["two", "three"]);
        assert!(log_tail(&directory.path().join("missing"), 2).is_empty());
    }

    #[test]
    fn a_failed_job_names_its_id_state_and_log() {
        let error = SlurmError::Job {
            job: JobId(17),
            state: JobState::Timeout,
            log: PathBuf::from("/w/logs/slurm/truth/x.17.log"),
            tail: vec![
                "collecting".into(),
                "slurmstepd: CANCELLED DUE TO TIME LIMIT".into(),
            ],
        };
        insta::assert_snapshot!(error.to_string(), @r"
        slurm job 17 ended TIMEOUT (its time limit; raise `time:` under `executor:`); log /w/logs/slurm/truth/x.17.log, which ends:
            collecting
            slurmstepd: CANCELLED DUE TO TIME LIMIT
        ");
    }
}
