//! The repository a claim or a commit names, as the steps that read its history open it.

use crate::engine::{StepContext, StepError};
use crate::pipeline::{Releases, RepoSpec};
use crate::python::ReleaseBound;

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

/// The bound a repository's `releases:` puts on the environment built from a commit committed at
/// `committed` (seconds since the epoch): none under `newest`; under `at-commit`, that time. An
/// unknown time is an error, never an unbounded environment.
pub(super) fn release_bound(
    releases: Releases,
    committed: Option<i64>,
) -> Result<Option<ReleaseBound>, String> {
    match (releases, committed) {
        (Releases::Newest, _) => Ok(None),
        (Releases::AtCommit, Some(seconds)) => Ok(Some(ReleaseBound::at(seconds))),
        (Releases::AtCommit, None) => Err(
            "`releases: at-commit` bounds the environment by the commit's committer time, which \
             git did not give"
                .to_string(),
        ),
    }
}
