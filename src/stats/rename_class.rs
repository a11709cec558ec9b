//! The rename class per split, as `stats.json` holds it (`rename_class`); computed by
//! `crate::controls::rename`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The rename class of one split and each arm's recall on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RenameSplit {
    /// The split (`dev`, `heldout`), or `all` for repositories without one.
    pub split: String,
    /// Flipped claims in the class.
    pub flipped: Vec<String>,
    /// Held claims that reference a renamed symbol too (the rename did not reach them).
    pub held: u64,
    /// Per arm, how many of the flipped claims it fired on.
    pub detected: BTreeMap<String, u64>,
    /// Per arm, recall on the class; absent when fewer than `min_evaluable` claims flipped.
    pub recall: BTreeMap<String, Option<f64>>,
    pub evaluable: bool,
}

/// The rename class per split (`stats.json` `rename_class`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RenameClassStats {
    pub min_evaluable: u64,
    pub splits: Vec<RenameSplit>,
}
