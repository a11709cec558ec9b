//! The pipeline DSL: the YAML file a user writes, loaded and validated into a [`Pipeline`].
//!
//! Validation reports every problem at once, each with `file:line:col` and a hint ([`Diagnostic`]).

//!
//! The pipeline is the lowest of the layers that know steps: it declares what the loader needs to
//! know about a step kind ([`Kinds`], [`KindDeclaration`]: names, typed parameters, roles) and the
//! sections a pipeline holds (`executor:`, model providers), and the engine, the step kinds and
//! the executors build on it.

mod diagnostic;
pub mod executor;
mod kind;
mod load;
mod model;
pub mod params;
mod provider;
mod role;
pub mod sections;
pub(crate) mod suggest;
pub mod time_limit;
mod validate;
mod yaml;

pub use diagnostic::{Diagnostic, DiagnosticKind, Diagnostics};
pub use executor::{
    DEFAULT_MAX_JOBS, ExecutorKind, ExecutorSpec, SlurmSettings, TimeLimits, reserved_flag,
};
pub use kind::{KindDeclaration, Kinds, PipelineProblem};
pub use load::{load, load_str};
pub use model::{Merges, ModelSpec, Pipeline, Price, Releases, RepoSource, RepoSpec, StepSpec};
pub use params::{
    ListOrGlob, ModelName, NoParams, ParamSpec, ParamType, Params, ParamsDecl, ParsedParams,
    ProjectFile, RepoName, StepName,
};
pub use provider::{Provider, Wire};
pub use role::{Need, Role};
pub use time_limit::TimeLimit;
