//! The pipeline DSL: the YAML file a user writes, loaded and validated into a [`Pipeline`].
//!
//! Validation reports every problem at once, each with `file:line:col` and a hint ([`Diagnostic`]).

mod diagnostic;
mod load;
mod model;
pub(crate) mod suggest;
mod validate;
mod yaml;

pub use diagnostic::{Diagnostic, DiagnosticKind, Diagnostics};
pub use load::{load, load_str};
pub use model::{Merges, ModelSpec, Pipeline, Price, RepoSource, RepoSpec, StepSpec};
