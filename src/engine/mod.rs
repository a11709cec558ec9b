//! The engine: plans a pipeline against the cache and runs what is missing.
//!
//! A step kind ([`StepKind`]) splits its work into items ([`ItemPlan`]); the engine keys each item
//! ([`crate::cache::KeyRecord`]), looks it up, computes only the misses under resource pools, and
//! then lets the step kind publish its result files from every item's output.

mod dag;
mod step;

pub use dag::{Dag, DagError};
pub use step::{
    ItemOutput, ItemPlan, ItemResult, ParamSpec, ParamType, PipelineProblem, Pool, StepContext,
    StepError, StepKind, StepOutput, Upstream,
};

mod events;
mod executor;
mod plan;
mod pools;
mod state;

pub use events::{Event, Recording, Reporter, Silent};
pub use executor::{
    Engine, EngineError, RunOptions, RunSummary, StepStatus, key_record, store_result,
};
pub use plan::{ItemExplanation, Plan, StepPlan};
pub use pools::{PoolSizes, Pools};
pub use state::{ItemState, RunState, StepState, live_set};

static OFFLINE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Forbids network access for the rest of the process (`run --offline`): step kinds that would
/// fetch a repository or call a model check [`offline`] and use only what is cached.
pub fn set_offline(offline: bool) {
    OFFLINE.store(offline, std::sync::atomic::Ordering::SeqCst);
}

/// True when the run must make no network requests.
pub fn offline() -> bool {
    OFFLINE.load(std::sync::atomic::Ordering::SeqCst)
}
