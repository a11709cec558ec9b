//! Agreement between runs of verdicts: the yardstick every other agreement figure is read against.
//!
//! A model arm run twice on unchanged inputs does not always answer the same; the paraphrase
//! control's agreement with the original verdicts means something only next to that run-to-run
//! agreement. Agreement is counted over the claims both runs gave a verdict on; a `none` is no
//! verdict, so it neither agrees nor disagrees, and is counted apart.

use std::collections::BTreeMap;

use crate::stats::agreement::{Agreement, PairAgreement};

use crate::records::Verdict;

/// The agreement of `first` and `second` (verdicts by claim id).
pub fn pair(
    (first_name, first): (&str, &BTreeMap<String, Verdict>),
    (second_name, second): (&str, &BTreeMap<String, Verdict>),
) -> PairAgreement {
    let mut result = PairAgreement {
        first: first_name.to_string(),
        second: second_name.to_string(),
        compared: 0,
        agreed: 0,
        agreement: None,
        without_verdict: 0,
        first_only_flipped: 0,
        second_only_flipped: 0,
    };
    for (claim, verdict) in first {
        let Some(other) = second.get(claim) else {
            continue;
        };
        if *verdict == Verdict::None || *other == Verdict::None {
            result.without_verdict += 1;
            continue;
        }
        result.compared += 1;
        if verdict == other {
            result.agreed += 1;
        } else if *verdict == Verdict::Flipped {
            result.first_only_flipped += 1;
        } else {
            result.second_only_flipped += 1;
        }
    }
    result.agreement = crate::stats::confusion::ratio(result.agreed, result.compared);
    result
}

/// Pairwise agreement of every two of `runs` (name, verdicts by claim id), in the given order.
pub fn pairwise(runs: &[(String, BTreeMap<String, Verdict>)]) -> Agreement {
    let mut pairs = Vec::new();
    for (index, first) in runs.iter().enumerate() {
        for second in &runs[index + 1..] {
            pairs.push(pair((&first.0, &first.1), (&second.0, &second.1)));
        }
    }
    let (agreed, compared) = pairs.iter().fold((0, 0), |(agreed, compared), pair| {
        (agreed + pair.agreed, compared + pair.compared)
    });
    Agreement {
        runs: runs.iter().map(|(name, _)| name.clone()).collect(),
        pooled: crate::stats::confusion::ratio(agreed, compared),
        lowest: pairs
            .iter()
            .filter_map(|pair| pair.agreement)
            .min_by(f64::total_cmp),
        pairs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Verdict::{Flipped as F, Held as H, None as N};

    fn run(verdicts: &[Verdict]) -> BTreeMap<String, Verdict> {
        verdicts
            .iter()
            .enumerate()
            .map(|(index, verdict)| (format!("c{index}"), *verdict))
            .collect()
    }

    #[test]
    fn a_missing_verdict_neither_agrees_nor_disagrees() {
        let agreement = pair(("a", &run(&[F, H, N, H])), ("b", &run(&[F, F, N, N])));
        assert_eq!((agreement.compared, agreement.agreed), (2, 1));
        assert_eq!(agreement.without_verdict, 2);
        assert_eq!(agreement.second_only_flipped, 1);
        assert_eq!(agreement.agreement, Some(0.5));
    }

    #[test]
    fn pairwise_pools_every_pair_and_names_the_lowest() {
        let runs = vec![
            ("r0".to_string(), run(&[F, H, H, H])),
            ("r1".to_string(), run(&[F, H, H, H])),
            ("r2".to_string(), run(&[F, F, H, H])),
        ];
        let agreement = pairwise(&runs);
        assert_eq!(agreement.pairs.len(), 3);
        assert_eq!(agreement.pooled, Some(10.0 / 12.0));
        assert_eq!(agreement.lowest, Some(0.75));
    }

    #[test]
    fn identical_runs_agree_fully() {
        let runs = vec![
            ("r0".to_string(), run(&[F, H])),
            ("r1".to_string(), run(&[F, H])),
        ];
        assert_eq!(pairwise(&runs).pooled, Some(1.0));
    }
}
