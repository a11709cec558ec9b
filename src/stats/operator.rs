//! The operator's view of an arm: what it costs to run and which arms are worth their price.
//!
//! Staleness (flipped claims served as held) and the verification budget (claims re-verified, the
//! fire rate) are read off the confusion matrix. Cost per claim comes from the predictions: the
//! recorded `cost` when every metered prediction has one, else tokens times the model's price.

use serde::{Deserialize, Serialize};

use super::evaluation::{ArmInfo, Spend};

/// What running an arm over the evaluated claims cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// Dollars over all evaluated claims.
    pub total: f64,
    /// Dollars per evaluated claim.
    pub per_claim: f64,
    /// `recorded` (the predictions' `cost`) or `tokens x price` (the model's `price_per_mtok`).
    pub source: String,
}

/// The cost of an arm over `claims` evaluated claims; unknown for arms that record neither costs
/// nor tokens with a priced model.
pub fn cost(spend: &Spend, info: &ArmInfo, claims: u64) -> Option<Cost> {
    if claims == 0 {
        return None;
    }
    let (total, source) = if spend.priced > 0 {
        (spend.cost, "recorded")
    } else if spend.metered > 0 {
        let input = info.price_input?;
        let output = info.price_output?;
        let total = (spend.tokens_in as f64 * input + spend.tokens_out as f64 * output) / 1e6;
        (total, "tokens x price")
    } else {
        return None;
    };
    Some(Cost {
        tokens_in: spend.tokens_in,
        tokens_out: spend.tokens_out,
        total,
        per_claim: total / claims as f64,
        source: source.to_string(),
    })
}

/// The arms on the cost/precision frontier: no other arm is at most as expensive and at least as
/// precise while strictly better on one of the two. Input: `(arm, cost per claim, precision)`.
pub fn frontier(points: &[(String, f64, f64)]) -> Vec<String> {
    points
        .iter()
        .filter(|(_, cost, precision)| {
            !points.iter().any(|(_, other_cost, other_precision)| {
                other_cost <= cost
                    && other_precision >= precision
                    && (other_cost < cost || other_precision > precision)
            })
        })
        .map(|(arm, _, _)| arm.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_priced_when_no_cost_is_recorded() {
        let spend = Spend {
            tokens_in: 2_000_000,
            tokens_out: 100_000,
            metered: 4,
            ..Spend::default()
        };
        let info = ArmInfo {
            price_input: Some(0.025),
            price_output: Some(0.10),
            ..ArmInfo::default()
        };
        let cost = cost(&spend, &info, 4).unwrap();
        assert!((cost.total - 0.06).abs() < 1e-12);
        assert!((cost.per_claim - 0.015).abs() < 1e-12);
        assert_eq!(cost.source, "tokens x price");
        assert_eq!(super::cost(&Spend::default(), &info, 4), None);
    }

    #[test]
    fn the_frontier_drops_dominated_arms() {
        let points = vec![
            ("cheap".to_string(), 0.001, 0.79),
            ("dear".to_string(), 0.04, 0.97),
            ("worse".to_string(), 0.01, 0.70),
        ];
        assert_eq!(frontier(&points), vec!["cheap", "dear"]);
    }
}
