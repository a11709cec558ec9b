//! The model stage: the claims no cheaper stage decided are asked of a model arm (`a6_risk` by
//! default), by running the pipeline engine on a small pipeline generated in memory: a step that
//! hands the engine the claims ([`claims_kind`]), and an `llm-arm` step asking the question
//! ([`ask`]). So the calls are the engine's own: keyed exactly as a pipeline's `llm-arm` keys them
//! (the question, the model's settings, the prompt's content, the claim's text and the
//! source-only diff of the range), kept in the content-addressed cache (a repeated check asks
//! nothing), refused by the same guard when a message would show a test file, retried, priced
//! and made offline the same way. [`models`] says which model is asked and where the cache is.
//!
//! This is the one module of `check` that calls into the engine, the step kinds and the models.
//!
//! The engine opens repositories by branch; the range's end may be a detached commit, so the
//! pipeline's repository is a bare repository in the check's workdir that borrows the user's
//! objects (git's `alternates`) and has one branch, `check`, at `--to` ([`mirror`]). Nothing is
//! written to the user's repository.

mod ask;
mod claims_kind;
mod mirror;
mod models;

pub use ask::decide;
pub use models::{ModelSettings, Models};
