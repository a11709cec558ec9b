//! Statistics over the oracle's labels and the arms' predictions, and the report built from them.
//!
//! Everything here is a pure function over plain data: [`evaluation`] aligns the labels with each
//! arm's verdicts, [`analysis`] turns that into the [`document::StatsDocument`] written as
//! `stats.json`, and [`report`] and [`figures`] render that document. The step kinds in
//! `crate::steps` only gather the inputs and write the files.

pub mod agreement;
pub mod analysis;
pub mod bootstrap;
pub mod confusion;
pub mod corpus;
pub mod cutoff;
pub mod document;
pub mod evaluation;
pub mod figures;
pub mod loro;
pub mod mcnemar;
pub mod operator;
pub mod rankings;
pub mod rename_class;
pub mod report;
pub mod reweight;

pub use analysis::{AnalysisOptions, analyze};
pub use bootstrap::{Resample, SplitMix64};
pub use confusion::Confusion;
pub use document::StatsDocument;
pub use evaluation::{ArmInfo, Claim, Evaluation, EvaluationError};
