//! The repository a claim or a commit names, as the steps that read its history open it.

use crate::engine::{StepContext, StepError};
use crate::pipeline::RepoSpec;

/// The pipeline's repository `repo`, which `what` (`claim x`, `commit y`) names, and its clone
/// opened. A name the pipeline does not declare is an invariant error (mining only writes the
/// names it was given); a clone that will not open is handed to `failed`.
pub(super) fn open<'c>(
    ctx: &'c StepContext,
    repo: &str,
    what: &str,
    failed: impl Fn(Box<dyn std::error::Error + Send + Sync>) -> StepError,
) -> Result<(&'c RepoSpec, git2::Repository), StepError> {
    let spec = ctx.pipeline.repo(repo).ok_or_else(|| {
        StepError::Invariant(format!(
            "step `{}`: {what} names repository `{repo}`, which the pipeline does not declare",
            ctx.step.name
        ))
    })?;
    let repository = crate::mining::repository::locate(spec, ctx.workdir)
        .and_then(|prepared| prepared.open())
        .map_err(|error| failed(error.into()))?;
    Ok((spec, repository))
}
