//! Agreement between runs of verdicts, as `stats.json` holds it (computed by
//! `crate::controls::agreement`): the yardstick every other agreement figure is read against.

use serde::{Deserialize, Serialize};

/// Agreement of two runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairAgreement {
    pub first: String,
    pub second: String,
    /// Claims both runs judged.
    pub compared: u64,
    pub agreed: u64,
    pub agreement: Option<f64>,
    /// Claims present in both runs on which at least one gave no verdict.
    pub without_verdict: u64,
    /// Claims that fired in the first run only, and in the second only.
    pub first_only_flipped: u64,
    pub second_only_flipped: u64,
}

/// Pairwise agreement over several runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    pub runs: Vec<String>,
    pub pairs: Vec<PairAgreement>,
    /// Agreements pooled over every pair (agreed / compared).
    pub pooled: Option<f64>,
    pub lowest: Option<f64>,
}
