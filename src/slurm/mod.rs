//! Computing the expensive items of a run on a Slurm cluster.
//!
//! The items that run Python (the pytest pool: `mine-claims`, `oracle`, the testmon arm) can be
//! sent to Slurm, one job per item, while every cheap item stays in the coordinating process.
//! The coordinator stores each item's task (its plan, key record and the digests of what it
//! reads) in the content-addressed store and submits a job that runs `claimflow worker KEY`;
//! the worker computes the item exactly as the local engine would and writes its output and
//! action record into the same store. The workdir and the Python environment cache must be on
//! a filesystem every node sees ([`shared`]).
//!
//! - [`executor`]: the coordinator's side, the engine's `RemoteExecutor` for Slurm.
//! - [`scheduler`]: `sbatch`, `squeue`, `sacct` and `scancel`, behind a trait.
//! - [`watch`]: the jobs in flight, capped, polled by one thread, cancelled on Ctrl-C.
//! - [`script`]: the batch script of one job and the environment it gets.
//! - [`task`]: what a worker needs, stored by the item's key.
//! - [`journal`]: the jobs a coordinator submitted, so a later run adopts them.
//! - [`shared`]: checks that the paths jobs use are not node-local.
//! - [`worker`]: `claimflow worker KEY`, one item in a job.
//!
//! The `executor:` block and Slurm time limits are part of the pipeline
//! ([`crate::pipeline::executor`], [`crate::pipeline::time_limit`]); per-job private directories
//! are the engine's ([`crate::engine::jobs`]).

pub mod executor;
pub mod journal;
pub mod scheduler;
pub mod script;
pub mod shared;
pub mod simulated;
pub mod task;
pub mod watch;
pub mod worker;
