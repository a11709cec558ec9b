//! Precision at the natural flip rate.
//!
//! Evaluation sets are stratified (e.g. to 25% flips) so that arms meet enough positives; a
//! deployment meets the natural rate, where held claims outnumber flipped ones many times over.
//! Recall (the true-positive rate) and the false-positive rate do not depend on the mix, so the
//! precision a deployment would see is `π·TPR / (π·TPR + (1 − π)·FPR)` at the natural rate `π`.

use serde::{Deserialize, Serialize};

use super::confusion::Confusion;

/// Where the natural flip rate came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NaturalRate {
    pub value: f64,
    /// `param`, `step:<name>` (recorded by an upstream step) or `computed:<name>` (the flip rate
    /// of that step's labelled claims).
    pub source: String,
}

/// Precision reweighted to the flip rate `natural`; unknown when the arm never fires or a rate is.
pub fn precision_at(confusion: &Confusion, natural: f64) -> Option<f64> {
    let true_positive_rate = confusion.recall()?;
    let false_positive_rate = confusion.false_positive_rate()?;
    let fired = natural * true_positive_rate + (1.0 - natural) * false_positive_rate;
    (fired > 0.0).then(|| natural * true_positive_rate / fired)
}

/// The share of the store an arm would re-verify at the flip rate `natural`.
pub fn fire_rate_at(confusion: &Confusion, natural: f64) -> Option<f64> {
    Some(natural * confusion.recall()? + (1.0 - natural) * confusion.false_positive_rate()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reweighting_to_the_sample_rate_changes_nothing() {
        let confusion = Confusion::from_cells([30, 10, 20, 140]);
        let rate = confusion.base_rate().unwrap();
        let reweighted = precision_at(&confusion, rate).unwrap();
        assert!((reweighted - confusion.precision().unwrap()).abs() < 1e-12);
    }

    #[test]
    fn always_invalidating_reweights_to_the_natural_rate() {
        let confusion = Confusion::from_cells([50, 150, 0, 0]);
        assert!((precision_at(&confusion, 0.0178).unwrap() - 0.0178).abs() < 1e-12);
        assert_eq!(fire_rate_at(&confusion, 0.0178), Some(1.0));
    }

    #[test]
    fn an_arm_that_never_fires_has_no_reweighted_precision() {
        assert_eq!(
            precision_at(&Confusion::from_cells([0, 0, 5, 15]), 0.02),
            None
        );
    }
}
