//! Where a worker puts an item's private directories (checkouts, pytest run files, scratch).
//!
//! In a coordinator, or a local run, they live under the workdir as always
//! (`<workdir>/worktrees/oracle-0`, `<workdir>/scratch/…`). In a worker they live under
//! `<workdir>/jobs/<job id>/`, so two jobs on two nodes never check out into the same slot of a
//! shared filesystem; the worker removes its directory when it ends. Which job a run computes for
//! is its session's ([`super::Session::for_job`]).

use std::path::{Path, PathBuf};

/// The private directory of job `job`.
pub fn job_dir(workdir: &Path, job: &str) -> PathBuf {
    workdir.join("jobs").join(job)
}
