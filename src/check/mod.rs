//! `claimflow check`: after a commit (or a range), which of the claims a coding agent keeps about the
//! repository did the change make false. Claims are read from the memory files people keep
//! ([`claim::MemoryClaim`]), decided by a cascade of stages, cheapest first, and reported (and, on
//! request, marked where they live).
//!
//! [`command`] runs a check; [`cascade`] passes each claim through the stages: [`exec`] (the
//! claim's own test or check command), [`anchors`] (A4: untouched anchors clear a claim) and
//! [`model_stage`] (a model arm, through the pipeline engine); [`report`], [`github`] and
//! [`sarif`] print the results.

pub mod anchors;
pub mod cascade;
pub mod claim;
pub mod command;
pub mod discover;
pub mod error;
pub mod exec;
pub mod github;
pub mod memory_file;
pub mod model_stage;
pub mod range;
pub mod report;
pub mod sarif;
pub mod sources;
pub mod verb;
pub mod write_back;

pub use command::{CheckOptions, CheckOutcome, check, check_claims};
pub use error::CheckError;
