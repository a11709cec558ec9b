//! The post-cutoff split and the fixed-repository comparison across a cutoff (Table IX).
//!
//! The cutoff and the comparison's records are stats' ([`crate::stats::cutoff`]); this computes them.
//!
//! Two things differ between the claims before and after a cutoff: their dates and, usually, their
//! repositories. [`compare_across`] separates them the way the paper's Table IX does: for each
//! repository with labelled claims on both sides, every arm's precision and recall per side (with
//! bootstrap intervals) and the flip rate per side; the same over all repositories; and, when the
//! arms' order by precision differs between the sides, the repositories whose removal restores it,
//! which carry the reordering.

use std::collections::{BTreeMap, BTreeSet};

use crate::stats::bootstrap::{ClusterCounts, intervals};
use crate::stats::confusion::{Cell, Confusion, ratio};
use crate::stats::cutoff::{
    ArmSide, Cutoff, CutoffComparison, Ordering, RepositoryAcross, Side, SideSummary,
};
use crate::stats::{Evaluation, Resample};

/// How intervals are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalSettings {
    pub resamples: usize,
    pub seed: u64,
    pub resample: Resample,
    pub confidence: f64,
}

/// Summarises the claims of `evaluation` at `indices` for every arm in `arms`.
fn summarize(
    evaluation: &Evaluation,
    arms: &[String],
    indices: &[usize],
    settings: &IntervalSettings,
) -> SideSummary {
    let claims: Vec<_> = indices
        .iter()
        .map(|&index| evaluation.claims[index].clone())
        .collect();
    let cells: Vec<Vec<Cell>> = arms
        .iter()
        .map(|arm| {
            indices
                .iter()
                .map(|&index| {
                    Cell::of(
                        evaluation.claims[index].flipped,
                        evaluation.verdicts[arm][index],
                    )
                })
                .collect()
        })
        .collect();
    let totals = ClusterCounts::new(&claims, &cells, settings.resample)
        .resample(settings.resamples, settings.seed);
    let bounds = intervals(&totals, arms.len(), settings.confidence);
    let flipped = claims.iter().filter(|claim| claim.flipped).count() as u64;
    let arms = arms
        .iter()
        .enumerate()
        .map(|(position, arm)| {
            let confusion = Confusion::count(indices.iter().map(|&index| {
                (
                    evaluation.claims[index].flipped,
                    &evaluation.verdicts[arm][index],
                )
            }));
            let side = ArmSide {
                precision: confusion.precision(),
                recall: confusion.recall(),
                precision_ci: bounds[position].precision,
                recall_ci: bounds[position].recall,
                confusion,
            };
            (arm.clone(), side)
        })
        .collect();
    SideSummary {
        claims: claims.len() as u64,
        flipped,
        flip_rate: ratio(flipped, claims.len() as u64),
        arms,
    }
}

/// The arms by precision, best first; arms that never fired last; ties by name.
fn order(evaluation: &Evaluation, arms: &[String], indices: &[usize]) -> Vec<String> {
    let mut ranked: Vec<(Option<f64>, &String)> = arms
        .iter()
        .map(|arm| {
            let confusion = Confusion::count(indices.iter().map(|&index| {
                (
                    evaluation.claims[index].flipped,
                    &evaluation.verdicts[arm][index],
                )
            }));
            (confusion.precision(), arm)
        })
        .collect();
    ranked.sort_by(|a, b| {
        let by_precision = match (a.0, b.0) {
            (Some(x), Some(y)) => y.total_cmp(&x),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        };
        by_precision.then_with(|| a.1.cmp(b.1))
    });
    ranked.into_iter().map(|(_, arm)| arm.clone()).collect()
}

/// Compares `arms` of `evaluation` across `cutoff`; `sides` gives each claim id's side (claims
/// without one are left out).
pub fn compare_across(
    evaluation: &Evaluation,
    arms: &[String],
    cutoff: &Cutoff,
    sides: &BTreeMap<String, Side>,
    settings: &IntervalSettings,
) -> CutoffComparison {
    let mut by_side: BTreeMap<Side, Vec<usize>> = BTreeMap::new();
    let mut by_repository: BTreeMap<(&str, Side), Vec<usize>> = BTreeMap::new();
    for (index, claim) in evaluation.claims.iter().enumerate() {
        let Some(&side) = sides.get(&claim.id) else {
            continue;
        };
        by_side.entry(side).or_default().push(index);
        by_repository
            .entry((claim.repository.as_str(), side))
            .or_default()
            .push(index);
    }
    let empty = Vec::new();
    let of = |side: Side| by_side.get(&side).unwrap_or(&empty);
    let repositories_on = |side: Side| -> BTreeSet<&str> {
        by_repository
            .keys()
            .filter(|(_, on)| *on == side)
            .map(|(repository, _)| *repository)
            .collect()
    };
    let (before_repos, after_repos) = (repositories_on(Side::Before), repositories_on(Side::After));
    let repositories = before_repos
        .intersection(&after_repos)
        .map(|repository| RepositoryAcross {
            repository: repository.to_string(),
            before: summarize(
                evaluation,
                arms,
                &by_repository[&(*repository, Side::Before)],
                settings,
            ),
            after: summarize(
                evaluation,
                arms,
                &by_repository[&(*repository, Side::After)],
                settings,
            ),
        })
        .collect();
    let before_order = order(evaluation, arms, of(Side::Before));
    let after_order = order(evaluation, arms, of(Side::After));
    let reordered = before_order != after_order;
    let mut carried_by = Vec::new();
    if reordered {
        for repository in before_repos.union(&after_repos) {
            let without = |side: Side| -> Vec<usize> {
                of(side)
                    .iter()
                    .copied()
                    .filter(|&index| evaluation.claims[index].repository != *repository)
                    .collect()
            };
            let (before, after) = (without(Side::Before), without(Side::After));
            if !before.is_empty()
                && !after.is_empty()
                && order(evaluation, arms, &before) == order(evaluation, arms, &after)
            {
                carried_by.push(repository.to_string());
            }
        }
    }
    CutoffComparison {
        cutoff: cutoff.clone(),
        before: summarize(evaluation, arms, of(Side::Before), settings),
        after: summarize(evaluation, arms, of(Side::After), settings),
        repositories,
        only_before: before_repos
            .difference(&after_repos)
            .map(|name| name.to_string())
            .collect(),
        only_after: after_repos
            .difference(&before_repos)
            .map(|name| name.to_string())
            .collect(),
        ordering: Ordering {
            before: before_order,
            after: after_order,
            reordered,
            carried_by,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::Verdict;
    use crate::stats::Claim;

    #[test]
    fn a_date_puts_its_whole_day_before_the_cutoff() {
        let cutoff = Cutoff::parse("2024-03-10").unwrap();
        let day = crate::corpus::parse_timestamp("2024-03-10T23:59:59Z").unwrap();
        let next = crate::corpus::parse_timestamp("2024-03-11T00:00:00Z").unwrap();
        assert_eq!(cutoff.side(day.seconds), Side::Before);
        assert_eq!(cutoff.side(next.seconds), Side::After);
    }

    #[test]
    fn a_time_is_itself_before_the_cutoff() {
        let cutoff = Cutoff::parse("2024-03-10T12:00:00+01:00").unwrap();
        let moment = crate::corpus::parse_timestamp("2024-03-10T11:00:00Z").unwrap();
        assert_eq!(cutoff.side(moment.seconds), Side::Before);
        assert_eq!(cutoff.side(moment.seconds + 1), Side::After);
    }

    #[test]
    fn a_malformed_cutoff_says_how_to_write_one() {
        let error = Cutoff::parse("May 2024").unwrap_err();
        assert!(error.to_string().contains("2024-05-01"), "{error}");
    }

    /// Claims of repository `shared` on both sides and `late` after the cutoff only; `late` makes
    /// arm `b` look better after the cutoff.
    fn evaluation() -> (Evaluation, BTreeMap<String, Side>) {
        use Verdict::{Flipped as F, Held as H};
        let rows: &[(&str, Side, bool, Verdict, Verdict)] = &[
            ("shared", Side::Before, true, F, F),
            ("shared", Side::Before, false, H, F),
            ("shared", Side::Before, false, H, F),
            ("shared", Side::Before, true, F, H),
            ("shared", Side::After, true, F, F),
            ("shared", Side::After, false, H, F),
            ("shared", Side::After, false, F, H),
            ("late", Side::After, true, H, F),
            ("late", Side::After, true, H, F),
            ("late", Side::After, true, H, F),
            ("late", Side::After, false, F, H),
        ];
        let mut evaluation = Evaluation::default();
        let mut sides = BTreeMap::new();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for (index, (repository, side, flipped, verdict_a, verdict_b)) in rows.iter().enumerate() {
            let id = format!("{repository}@p{index}::t");
            evaluation.claims.push(Claim {
                id: id.clone(),
                repository: repository.to_string(),
                commit: format!("{repository}@p{index}"),
                flipped: *flipped,
            });
            sides.insert(id, *side);
            a.push(*verdict_a);
            b.push(*verdict_b);
        }
        evaluation.verdicts.insert("a".into(), a);
        evaluation.verdicts.insert("b".into(), b);
        (evaluation, sides)
    }

    fn settings() -> IntervalSettings {
        IntervalSettings {
            resamples: 200,
            seed: 1,
            resample: Resample::Claim,
            confidence: 0.95,
        }
    }

    #[test]
    fn the_repository_unique_to_one_side_carries_the_reordering() {
        let (evaluation, sides) = evaluation();
        let cutoff = Cutoff::parse("2024-05-01").unwrap();
        let arms = vec!["a".to_string(), "b".to_string()];
        let comparison = compare_across(&evaluation, &arms, &cutoff, &sides, &settings());
        assert_eq!(comparison.only_after, vec!["late".to_string()]);
        assert_eq!(comparison.repositories.len(), 1);
        let shared = &comparison.repositories[0];
        assert_eq!(shared.repository, "shared");
        assert_eq!((shared.before.claims, shared.after.claims), (4, 3));
        assert_eq!(shared.before.flip_rate, Some(0.5));
        assert_eq!(comparison.ordering.before, vec!["a", "b"]);
        assert_eq!(comparison.ordering.after, vec!["b", "a"]);
        assert!(comparison.ordering.reordered);
        assert_eq!(comparison.ordering.carried_by, vec!["late".to_string()]);
        assert_eq!(comparison.after.arms["b"].precision, Some(4.0 / 5.0));
        assert!(comparison.after.arms["b"].precision_ci.is_some());
    }
}
