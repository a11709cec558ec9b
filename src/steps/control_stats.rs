//! The statistics of the splits and controls, gathered for `stats`: the fixed-repository
//! comparison across a `cutoff` step's date (Table IX) and the rename class of a `rename-class`
//! step. Both read the oracle's whole population, not the scored sample: a cutoff comparison
//! needs both sides, and the rename class is too rare to find in a sample.

use std::collections::{BTreeMap, BTreeSet};

use crate::controls::cutoff::{IntervalSettings, compare_across};
use crate::controls::rename::{RenameClaim, rename_class};
use crate::engine::StepOutput;
use crate::records::{Label, TruthRecord, Verdict};
use crate::stats::corpus::RepositoryInfo;
use crate::stats::cutoff::CutoffComparison;
use crate::stats::evaluation::{ArmInput, Origins};
use crate::stats::rename_class::RenameClassStats;
use crate::stats::{Evaluation, Resample};

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
    pub fn cutoff(&self, split: &StepOutput) -> Result<Option<CutoffComparison>, String> {
        if self.population.is_empty() {
            return Ok(None);
        }
        let summary = super::cutoff::summary_of(split).map_err(|error| error.chain())?;
        let evaluation = Evaluation::build(self.population, self.origins, self.arms, self.in_split)
            .map_err(|error| error.to_string())?;
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
    pub fn rename_class(&self, renames: &StepOutput) -> Result<RenameClassStats, String> {
        let members: Vec<RenameClaim> = renames
            .decode_all()
            .map_err(|error| format!("read step `{}`: {error}", renames.step))?;
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
