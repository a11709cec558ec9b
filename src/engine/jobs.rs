//! Where a process puts an item's private directories (checkouts, pytest run files, scratch).
//!
//! In a coordinator, or a local run, they live under the workdir as always
//! (`<workdir>/worktrees/oracle-0`, `<workdir>/scratch/…`). In a worker they live under
//! `<workdir>/jobs/<job id>/`, so two jobs on two nodes never check out into the same slot of a
//! shared filesystem; the worker removes its directory when it ends.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The job this process computes an item for, set once by the worker.
static JOB: OnceLock<String> = OnceLock::new();

/// Marks this process as the worker of job `job` (the Slurm job id, or a process id).
pub fn enter_job(job: &str) {
    let _ = JOB.set(job.to_string());
}

/// The directory under which items of this process keep their private directories.
pub fn private_root(workdir: &Path) -> PathBuf {
    match JOB.get() {
        Some(job) => job_dir(workdir, job),
        None => workdir.to_path_buf(),
    }
}

/// The private directory of job `job`.
pub fn job_dir(workdir: &Path, job: &str) -> PathBuf {
    workdir.join("jobs").join(job)
}
