//! A training cutoff and the comparison across it (Table IX), as `stats.json` holds it; computed
//! by `crate::controls::cutoff`.
//!
//! A model may have read a commit in training; a claim whose child commit is dated after the
//! model's training cutoff cannot have been. [`Cutoff`] is that date, read from `models:`
//! (`cutoff:`) or given on a step, and [`Cutoff::side`] says on which side a commit falls.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::bootstrap::Interval;
use super::confusion::Confusion;

/// A training cutoff: commits after it are unseen by the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cutoff {
    /// As written (`2024-05-01` or `2024-05-01T00:00:00Z`).
    pub text: String,
    /// The first second, since the epoch, that counts as after the cutoff.
    pub after_from: i64,
}

impl Cutoff {
    /// Reads `YYYY-MM-DD` (the whole day is before the cutoff) or an RFC 3339 time (the moment
    /// itself is before it).
    pub fn parse(text: &str) -> Result<Self, CutoffError> {
        let error = || CutoffError {
            text: text.to_string(),
        };
        let trimmed = text.trim();
        let after_from = if trimmed.len() == 10 {
            crate::corpus::parse_timestamp(&format!("{trimmed}T00:00:00Z"))
                .map_err(|_| error())?
                .seconds
                + 86_400
        } else {
            crate::corpus::parse_timestamp(trimmed)
                .map_err(|_| error())?
                .seconds
                + 1
        };
        Ok(Cutoff {
            text: trimmed.to_string(),
            after_from,
        })
    }

    /// The side of a commit made at `time` (seconds since the epoch).
    pub fn side(&self, time: i64) -> Side {
        if time >= self.after_from {
            Side::After
        } else {
            Side::Before
        }
    }
}

/// Why a cutoff could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "read the cutoff `{text}`: write a date like 2024-05-01 or a time like 2024-05-01T12:00:00Z"
)]
pub struct CutoffError {
    pub text: String,
}

/// Which side of a cutoff a commit falls on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Before,
    After,
}

/// One arm on one side: its counts, rates and intervals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmSide {
    #[serde(flatten)]
    pub confusion: Confusion,
    pub precision: Option<f64>,
    pub recall: Option<f64>,
    pub precision_ci: Option<Interval>,
    pub recall_ci: Option<Interval>,
}

/// The claims on one side (of one repository, or of all) and every arm on them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideSummary {
    pub claims: u64,
    pub flipped: u64,
    pub flip_rate: Option<f64>,
    pub arms: BTreeMap<String, ArmSide>,
}

/// A repository with labelled claims on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepositoryAcross {
    pub repository: String,
    pub before: SideSummary,
    pub after: SideSummary,
}

/// The arms ordered by precision on each side, and what carries a difference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ordering {
    pub before: Vec<String>,
    pub after: Vec<String>,
    pub reordered: bool,
    /// Repositories whose removal gives both sides the same order.
    pub carried_by: Vec<String>,
}

/// Table IX: the same arms across the cutoff, over all repositories and per shared repository.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CutoffComparison {
    pub cutoff: Cutoff,
    pub before: SideSummary,
    pub after: SideSummary,
    pub repositories: Vec<RepositoryAcross>,
    /// Repositories with labelled claims on one side only.
    pub only_before: Vec<String>,
    pub only_after: Vec<String>,
    pub ordering: Ordering,
}
