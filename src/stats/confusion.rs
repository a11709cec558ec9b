//! The confusion matrix of one arm against the oracle, and the rates read off it.
//!
//! An arm's `none` (no verdict) is charged as a hold: a deployment that gets no answer keeps serving
//! the claim. It is counted separately too, so coverage can be reported beside the rates.

use serde::{Deserialize, Serialize};

use crate::records::Verdict;

/// Where one claim lands for one arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    TruePositive,
    FalsePositive,
    FalseNegative,
    TrueNegative,
}

impl Cell {
    /// The cell of a claim whose label is `flipped` given the arm's `verdict` (`none` reads as held).
    pub fn of(flipped: bool, verdict: Verdict) -> Self {
        let fired = verdict == Verdict::Flipped;
        match (fired, flipped) {
            (true, true) => Cell::TruePositive,
            (true, false) => Cell::FalsePositive,
            (false, true) => Cell::FalseNegative,
            (false, false) => Cell::TrueNegative,
        }
    }

    /// The cell's position in a `[tp, fp, fn, tn]` count array.
    pub fn index(self) -> usize {
        match self {
            Cell::TruePositive => 0,
            Cell::FalsePositive => 1,
            Cell::FalseNegative => 2,
            Cell::TrueNegative => 3,
        }
    }
}

/// Counts of one arm's verdicts against the labels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confusion {
    #[serde(rename = "tp")]
    pub true_positives: u64,
    #[serde(rename = "fp")]
    pub false_positives: u64,
    #[serde(rename = "fn")]
    pub false_negatives: u64,
    #[serde(rename = "tn")]
    pub true_negatives: u64,
    /// Claims the arm gave no verdict on (already inside `fn`/`tn` as holds).
    #[serde(rename = "none")]
    pub no_verdict: u64,
}

impl Confusion {
    /// Counts over aligned labels and verdicts.
    pub fn count<'a>(pairs: impl IntoIterator<Item = (bool, &'a Verdict)>) -> Self {
        let mut confusion = Confusion::default();
        for (flipped, verdict) in pairs {
            confusion.add(flipped, *verdict);
        }
        confusion
    }

    /// Adds one claim.
    pub fn add(&mut self, flipped: bool, verdict: Verdict) {
        if verdict == Verdict::None {
            self.no_verdict += 1;
        }
        match Cell::of(flipped, verdict) {
            Cell::TruePositive => self.true_positives += 1,
            Cell::FalsePositive => self.false_positives += 1,
            Cell::FalseNegative => self.false_negatives += 1,
            Cell::TrueNegative => self.true_negatives += 1,
        }
    }

    /// From `[tp, fp, fn, tn]` counts (as the bootstrap accumulates them).
    pub fn from_cells(cells: [u64; 4]) -> Self {
        Confusion {
            true_positives: cells[0],
            false_positives: cells[1],
            false_negatives: cells[2],
            true_negatives: cells[3],
            no_verdict: 0,
        }
    }

    /// Every claim counted.
    pub fn total(&self) -> u64 {
        self.true_positives + self.false_positives + self.false_negatives + self.true_negatives
    }

    /// Claims labelled flipped.
    pub fn flipped(&self) -> u64 {
        self.true_positives + self.false_negatives
    }

    /// Claims the arm invalidated.
    pub fn fired(&self) -> u64 {
        self.true_positives + self.false_positives
    }

    /// tp / (tp + fp); unknown when the arm never fired.
    pub fn precision(&self) -> Option<f64> {
        ratio(self.true_positives, self.fired())
    }

    /// tp / (tp + fn); unknown when nothing flipped.
    pub fn recall(&self) -> Option<f64> {
        ratio(self.true_positives, self.flipped())
    }

    /// The share of claims invalidated: the verification budget.
    pub fn fire_rate(&self) -> Option<f64> {
        ratio(self.fired(), self.total())
    }

    /// The share of claims with a verdict.
    pub fn coverage(&self) -> Option<f64> {
        ratio(self.total() - self.no_verdict, self.total())
    }

    /// fp / (fp + tn): how often a held claim is invalidated.
    pub fn false_positive_rate(&self) -> Option<f64> {
        ratio(
            self.false_positives,
            self.false_positives + self.true_negatives,
        )
    }

    /// The share of flipped claims served as held (`none` included): 1 − recall.
    pub fn staleness(&self) -> Option<f64> {
        ratio(self.false_negatives, self.flipped())
    }

    /// The share of claims labelled flipped.
    pub fn base_rate(&self) -> Option<f64> {
        ratio(self.flipped(), self.total())
    }
}

/// `numerator / denominator`, unknown when the denominator is zero.
pub fn ratio(numerator: u64, denominator: u64) -> Option<f64> {
    (denominator > 0).then(|| numerator as f64 / denominator as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_is_charged_as_a_hold_and_counted() {
        let labels = [true, true, false, false, true];
        let verdicts = [
            Verdict::Flipped,
            Verdict::None,
            Verdict::Flipped,
            Verdict::None,
            Verdict::Held,
        ];
        let confusion = Confusion::count(labels.into_iter().zip(verdicts.iter()));
        assert_eq!(
            confusion,
            Confusion {
                true_positives: 1,
                false_positives: 1,
                false_negatives: 2,
                true_negatives: 1,
                no_verdict: 2,
            }
        );
        assert_eq!(confusion.precision(), Some(0.5));
        assert_eq!(confusion.recall(), Some(1.0 / 3.0));
        assert_eq!(confusion.fire_rate(), Some(0.4));
        assert_eq!(confusion.coverage(), Some(0.6));
        assert_eq!(confusion.staleness(), Some(2.0 / 3.0));
    }

    #[test]
    fn an_arm_that_never_fires_has_unknown_precision() {
        let confusion = Confusion::count([(true, &Verdict::Held), (false, &Verdict::Held)]);
        assert_eq!(confusion.precision(), None);
        assert_eq!(confusion.recall(), Some(0.0));
    }

    #[test]
    fn serializes_with_the_contract_names() {
        let json = serde_json::to_value(Confusion::from_cells([1, 2, 3, 4])).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"tp": 1, "fp": 2, "fn": 3, "tn": 4, "none": 0})
        );
    }
}
