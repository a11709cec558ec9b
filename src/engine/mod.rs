//! The engine: plans a pipeline against the cache and runs what is missing.
//!
//! A step kind ([`StepKind`]) splits its work into items ([`ItemPlan`]); the engine keys each item
//! ([`crate::cache::KeyRecord`]), looks it up, computes only the misses under resource pools, and
//! then lets the step kind publish its result files from every item's output.

mod dag;
mod step;

pub use dag::{Dag, DagError};
pub use step::{
    ItemOutput, ItemPlan, ItemResult, ParamSpec, ParamType, Pool, StepContext, StepError, StepKind,
    StepOutput, Upstream,
};
