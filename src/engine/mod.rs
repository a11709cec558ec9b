//! The engine: plans a pipeline against the cache and runs what is missing.
//!
//! A step kind ([`StepKind`]) splits its work into items ([`ItemPlan`]); the engine keys each item
//! ([`crate::cache::KeyRecord`]), looks it up, computes only the misses under resource pools, and
//! then lets the step kind publish its result files from every item's output.

mod blobs;
mod dag;
pub mod jobs;
mod output_records;
mod registry;
mod remote;
mod retry;
mod runtime;
mod session;
mod step;

pub use dag::{Dag, DagError};
pub use registry::Registry;
pub use remote::RemoteExecutor;
pub use retry::RetryPolicy;
pub use runtime::runtime;
pub use session::Session;
pub use step::{
    Blobs, ErrorClass, Execution, ItemFuture, ItemOutput, ItemPlan, ItemResult, Planned, Pool,
    Records, Reduced, StepContext, StepError, StepKind, StepOutput, Upstream,
};
// What a step kind declares to the loader lives in the layer below, the pipeline; a step kind
// implements [`StepKind`] with these, so they are named here beside it.
pub use crate::pipeline::{
    ListOrGlob, ModelName, Need, NoParams, ParamSpec, ParamType, Params, ParamsDecl, ParsedParams,
    PipelineProblem, ProjectFile, RepoName, Role, StepName,
};

mod events;
mod executor;
mod plan;
mod pools;
mod state;

pub use events::{Event, Recording, Reporter, Silent, Spend};
pub use executor::{
    Engine, EngineError, RunOptions, RunSummary, StepStatus, key_record, store_result,
};
pub use plan::{ItemExplanation, Plan, StepPlan};
pub use pools::{PoolSizes, Pools};
pub use state::{ItemState, LiveSet, MissingBlob, RunState, StepState, live_set};
