//! The execution oracle: runs each claim N times at the parent and, with the parent's test files
//! restored, N times at the child, and labels it flipped, held or discarded.
//!
//! [`command`] builds the one pytest command, [`runner`] runs it under a timeout in its own process
//! group, [`patience`] sets that timeout and retries a run the machine starved of CPU, [`classify`] turns the plugin's records into per-test verdicts, [`worktree`] gives each
//! slot its own clean checkout, [`procedure`] labels a commit's claims, [`invariants`] checks the
//! result before it is published and [`summary`] counts it.

pub mod classify;
pub mod command;
pub mod invariants;
pub mod lineage;
pub mod patience;
pub mod probe;
pub mod procedure;
pub mod runner;
pub mod summary;
pub mod worktree;

pub use classify::{BatchVerdicts, CollectionError, FailureKind, UnknownReason, Verdict, classify};
pub use probe::{ProbeError, probe_environment};
pub use procedure::{
    Cause, CommitUnderTest, ImportErrorPolicy, Judgement, ProcedureError, Settings, Slot,
    judge_commit,
};
pub use summary::OracleSummary;
pub use worktree::Worktree;
