//! `stats.json`: everything the report is built from, as users read it.
//!
//! `arms.<step>` holds the contract fields (`precision`, `recall`, `fire_rate`, `coverage`,
//! `precision_ci`, `recall_ci`, `tp`, `fp`, `fn`, `tn`); fields may be added, never renamed.
//! A rate that cannot be computed (an arm that never fired) is `null`, never a number.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::bootstrap::{Interval, Resample};
use super::confusion::Confusion;
use super::corpus::{RepositoryCorpus, RepositoryInfo};
use super::evaluation::ArmInfo;
use super::loro::Loro;
use super::mcnemar::McNemar;
use super::operator::Cost;
use super::rankings::RankingComparison;
use super::reweight::NaturalRate;

/// Bumped when a field changes meaning.
pub const STATS_SCHEMA: u32 = 1;

/// The whole `stats.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatsDocument {
    pub schema: u32,
    /// The split evaluated (`with: {split: …}`), or every labelled claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<String>,
    pub sample: Sample,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub natural_rate: Option<NaturalRate>,
    pub bootstrap: BootstrapSettings,
    pub arms: BTreeMap<String, ArmStats>,
    /// Controls, by step: an arm run under a manipulation (shuffled diffs, paraphrases), with its
    /// agreement with the arm it wraps.
    pub controls: BTreeMap<String, ControlStats>,
    /// Exact McNemar on every pair of arms (first name before second).
    pub comparisons: Vec<McNemar>,
    /// Leave-one-repository-out, for the pairs asked for.
    pub loro: Vec<Loro>,
    /// Arms on the cost/precision frontier, cheapest first.
    pub frontier: Vec<String>,
    /// The mined corpus by repository (all splits).
    pub corpus: Vec<RepositoryCorpus>,
    /// The pipeline's repositories.
    pub repositories: BTreeMap<String, RepositoryInfo>,
    /// Per evaluated repository, each arm's confusion matrix.
    pub by_repository: BTreeMap<String, BTreeMap<String, Confusion>>,
    /// Flip density of each commit ranking the pipeline labels (`with: {rankings: […]}`), and
    /// how they differ; absent when the stats step compares no rankings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rankings: Option<RankingComparison>,
    /// The same arms before and after a training cutoff, over all repositories and per repository
    /// on both sides (Table IX); present when a `cutoff` step is needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cutoff: Option<crate::stats::cutoff::CutoffComparison>,
    /// Flips caused by a pure rename of a symbol the claim references, per split, with each
    /// arm's recall on them; present when a `rename-class` step is needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rename_class: Option<crate::stats::rename_class::RenameClassStats>,
    /// The whole analysis again on the claims after a training cutoff; present when a `cutoff`
    /// step is needed and the claims scored above are not already that split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_cutoff: Option<Box<PostCutoff>>,
}

/// Every number of [`StatsDocument`] again, restricted to the claims whose child commit is dated
/// after a training cutoff: what the report renders a second time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PostCutoff {
    /// The `cutoff` step that drew the split.
    pub step: String,
    pub cutoff: crate::stats::cutoff::Cutoff,
    pub document: StatsDocument,
}

/// The evaluated claims.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Labelled claims scored (flipped + held).
    pub claims: u64,
    pub flipped: u64,
    pub held: u64,
    /// Claims of the split the oracle discarded; excluded.
    pub discarded: u64,
    pub base_rate: Option<f64>,
    pub repositories: u64,
    pub commits: u64,
    /// Where the labels came from (the oracle, or a sampling step).
    pub labels_from: String,
}

/// How the intervals were made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BootstrapSettings {
    pub resamples: u64,
    pub seed: u64,
    pub resample: Resample,
    pub confidence: f64,
    /// The number of clusters each resample draws.
    pub clusters: u64,
}

/// One arm's numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmStats {
    pub step: ArmInfo,
    pub claims: u64,
    pub precision: Option<f64>,
    pub recall: Option<f64>,
    /// Recall over the claims the arm gave a verdict on: what it catches where it answers, beside
    /// `recall`, which charges a missing verdict as a hold.
    #[serde(default)]
    pub recall_judged: Option<f64>,
    pub fire_rate: Option<f64>,
    pub coverage: Option<f64>,
    pub precision_ci: Option<Interval>,
    pub recall_ci: Option<Interval>,
    pub tp: u64,
    pub fp: u64,
    #[serde(rename = "fn")]
    pub false_negatives: u64,
    pub tn: u64,
    /// Claims without a verdict, charged as holds (inside `fn` and `tn`).
    pub none: u64,
    /// Flipped claims served as held: 1 − recall.
    pub staleness: Option<f64>,
    /// The share of the store re-verified: the fire rate.
    pub budget: Option<f64>,
    /// Precision and fire rate at the natural flip rate.
    pub natural_precision: Option<f64>,
    pub natural_fire_rate: Option<f64>,
    pub cost: Option<Cost>,
    /// Predictions for claims outside the evaluated set (other splits, discarded claims).
    pub unmatched: u64,
}

impl ArmStats {
    /// The confusion matrix back.
    pub fn confusion(&self) -> Confusion {
        Confusion {
            true_positives: self.tp,
            false_positives: self.fp,
            false_negatives: self.false_negatives,
            true_negatives: self.tn,
            no_verdict: self.none,
        }
    }
}

/// A control beside the arm it wraps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControlStats {
    /// The arm step it wraps.
    pub of: String,
    /// The manipulation it runs under (`shuffled-diff`, `paraphrase`), when a step declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The share of the claims both gave a verdict on where the control's verdict equals the
    /// arm's (a missing verdict neither agrees nor disagrees).
    pub agreement: Option<f64>,
    /// How many claims both gave a verdict on.
    #[serde(default)]
    pub compared: u64,
    /// The arm scored on the claims the control gave a verdict on, to read the control against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arm_on_same_claims: Option<OnSameClaims>,
    pub metrics: ArmStats,
}

/// An arm scored on the claims one of its controls gave a verdict on (its other verdicts taken
/// as missing): a paraphrase control that refused some claims is compared on the rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OnSameClaims {
    pub precision: Option<f64>,
    pub precision_ci: Option<Interval>,
    /// Fired claims over the same claims the control's fire rate counts.
    pub fire_rate: Option<f64>,
}
