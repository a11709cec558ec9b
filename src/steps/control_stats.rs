//! The statistics of the splits and controls, gathered for `stats`: the fixed-repository
//! comparison across a `cutoff` step's date (Table IX) and the rename class of a `rename-class`
//! step. Both read the oracle's whole population, not the scored sample: a cutoff comparison
//! needs both sides, and the rename class is too rare to find in a sample.

use std::collections::{BTreeMap, BTreeSet};

use crate::controls::cutoff::{IntervalSettings, compare_across};
use crate::controls::rename::{RenameClaim, rename_class};
use crate::engine::{StepError, StepOutput};
use crate::records::{Label, TruthRecord, Verdict};
use crate::stats::corpus::RepositoryInfo;
use crate::stats::cutoff::CutoffComparison;
use crate::stats::evaluation::{ArmInput, EvaluationError, Origins};
use crate::stats::rename_class::RenameClassStats;
use crate::stats::{Evaluation, Resample};

/// Why the statistics of a split or a control could not be gathered (the user's input: `stats`
/// needs a step whose records do not serve).
#[derive(Debug, thiserror::Error)]
pub enum ControlStatsError {
    /// The records of the `cutoff` step do not read as a labelled split.
    #[error("read the split of step `{step}`")]
    Split {
        step: String,
        #[source]
        source: StepError,
    },
    /// The `cutoff` step's records hold no summary record.
    #[error("step `{step}` has no cutoff summary record")]
    NoSummary { step: String },
    /// The labels and the arms' predictions do not make an evaluation.
    #[error(transparent)]
    Evaluation(#[from] EvaluationError),
    /// The records of the `rename-class` step do not decode.
    #[error("read step `{step}`")]
    Renames {
        step: String,
        #[source]
        source: StepError,
    },
}

/// What both analyses read.
#[derive(Clone)]
pub struct ControlInputs<'a> {
    pub population: &'a [TruthRecord],
    pub origins: &'a Origins,
    pub arms: &'a BTreeMap<String, ArmInput>,
    pub in_split: Option<&'a BTreeSet<String>>,
    pub repositories: &'a BTreeMap<String, RepositoryInfo>,
    pub resamples: u64,
    pub seed: u64,
    pub resample: Resample,
    /// Arms that judged only a sample or a split: left out of both analyses.
    pub judged_a_selection: BTreeSet<String>,
}

impl ControlInputs<'_> {
    /// Table IX from the `cutoff` step `split`; `None` when `stats` does not need the oracle
    /// (the comparison needs the claims before the cutoff too).
    pub fn cutoff(
        &self,
        split: &StepOutput,
    ) -> Result<Option<CutoffComparison>, ControlStatsError> {
        if self.population.is_empty() {
            return Ok(None);
        }
        let summary =
            super::cutoff::summary_of(split).map_err(|source| ControlStatsError::Split {
                step: split.step.clone(),
                source,
            })?;
        let evaluation =
            Evaluation::build(self.population, self.origins, self.arms, self.in_split)?;
        let arms: Vec<String> = evaluation
            .arms()
            .filter(|arm| !self.judged_a_selection.contains(*arm))
            .map(str::to_string)
            .collect();
        let settings = IntervalSettings {
            resamples: self.resamples as usize,
            seed: self.seed,
            resample: self.resample,
            confidence: 0.95,
        };
        Ok(Some(compare_across(
            &evaluation,
            &arms,
            &summary.cutoff,
            &summary.sides,
            &settings,
        )))
    }

    /// The rename class per split from the `rename-class` step `renames`.
    pub fn rename_class(
        &self,
        renames: &StepOutput,
    ) -> Result<RenameClassStats, ControlStatsError> {
        let members: Vec<RenameClaim> =
            renames
                .decode_all()
                .map_err(|source| ControlStatsError::Renames {
                    step: renames.step.clone(),
                    source,
                })?;
        let labels: BTreeMap<String, bool> = self
            .population
            .iter()
            .filter(|record| record.label != Label::Discarded)
            .map(|record| (record.claim.clone(), record.label == Label::Flipped))
            .collect();
        let fired: BTreeMap<String, BTreeSet<String>> = self
            .arms
            .iter()
            .filter(|(arm, input)| {
                input.info.control_of.is_none() && !self.judged_a_selection.contains(*arm)
            })
            .map(|(arm, input)| {
                let claims = input
                    .predictions
                    .iter()
                    .filter(|prediction| prediction.verdict == Verdict::Flipped)
                    .map(|prediction| prediction.claim.clone())
                    .collect();
                (arm.clone(), claims)
            })
            .collect();
        let split_of = |claim: &str| {
            self.origins
                .of(claim)
                .ok()
                .and_then(|origin| self.repositories.get(&origin.repository))
                .and_then(|info| info.split.clone())
                .unwrap_or_else(|| "all".to_string())
        };
        let members: Vec<RenameClaim> = members
            .into_iter()
            .filter(|member| {
                self.in_split.is_none_or(|keep| {
                    self.origins
                        .of(&member.claim)
                        .is_ok_and(|origin| keep.contains(&origin.repository))
                })
            })
            .collect();
        Ok(rename_class(&members, &labels, split_of, &fired))
    }
}
