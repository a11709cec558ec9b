//! Where pytest-pool items run when not on this machine: an executor that computes an item
//! elsewhere (one Slurm job each, see `crate::slurm`) and leaves its output in the shared store.
//!
//! The engine knows only this trait; the executor that implements it builds on the engine, and
//! the CLI hands one to the engine when the pipeline's `executor:` asks for it.

use super::step::{ItemPlan, Upstream};
use crate::cache::{Digest, KeyRecord};
use crate::pipeline::StepSpec;

/// Computes items elsewhere; on `Ok` the item's output and action record are in the store.
pub trait RemoteExecutor: Send + Sync {
    /// Items computed at once (the pytest pool's size while this executor runs them).
    fn max_jobs(&self) -> usize;

    /// Computes `plan` (an item of `step`, of kind `kind`), even when the store has it if
    /// `force`. Returns the name of the job that computed it, for messages.
    fn compute(
        &self,
        step: &StepSpec,
        kind: &str,
        plan: &ItemPlan,
        keyed: (&KeyRecord, &Digest),
        upstream: &Upstream,
        force: bool,
    ) -> Result<String, Box<dyn std::error::Error + Send + Sync>>;
}

/// A remote job that reported success but left no result the store can read for its item.
#[derive(Debug, thiserror::Error)]
#[error("slurm job {job} completed but the cache has no readable result for item `{item}`")]
pub struct MissingResult {
    /// The job's name, as [`RemoteExecutor::compute`] returned it.
    pub job: String,
    /// The item's id.
    pub item: String,
}
