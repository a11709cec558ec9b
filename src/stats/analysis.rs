//! From the evaluation set to [`StatsDocument`]: every arm's numbers, intervals, comparisons,
//! leave-one-repository-out and the operator's view, in one pure function.

use std::collections::{BTreeMap, BTreeSet};

use super::bootstrap::{ArmIntervals, ClusterCounts, Resample, intervals};
use super::confusion::{Cell, Confusion, ratio};
use super::corpus::{RepositoryCorpus, RepositoryInfo};
use super::document::{
    ArmStats, BootstrapSettings, ControlStats, OnSameClaims, STATS_SCHEMA, Sample, StatsDocument,
};
use super::evaluation::Evaluation;
use super::reweight::{self, NaturalRate};
use super::{loro, mcnemar, operator};
use crate::records::Verdict;

/// How to analyse.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalysisOptions {
    pub resamples: u64,
    pub seed: u64,
    pub resample: Resample,
    pub confidence: f64,
    /// Pairs of arms (first, second) for leave-one-repository-out; pairs naming an absent arm are
    /// skipped.
    pub loro: Vec<(String, String)>,
    pub natural_rate: Option<NaturalRate>,
    pub split: Option<String>,
    /// Which step the labels came from, for the record.
    pub labels_from: String,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        AnalysisOptions {
            resamples: 10_000,
            seed: 0,
            resample: Resample::Claim,
            confidence: 0.95,
            loro: Vec::new(),
            natural_rate: None,
            split: None,
            labels_from: String::new(),
        }
    }
}

/// Analyses `evaluation`; `corpus` and `repositories` are carried into the document as given.
pub fn analyze(
    evaluation: &Evaluation,
    corpus: Vec<RepositoryCorpus>,
    repositories: BTreeMap<String, RepositoryInfo>,
    options: &AnalysisOptions,
) -> StatsDocument {
    let labels = evaluation.labels();
    let steps: Vec<&String> = evaluation.verdicts.keys().collect();
    let paired = arms_beside_controls(evaluation);
    let all_cells: Vec<Vec<Cell>> = steps
        .iter()
        .map(|step| cells(&labels, &evaluation.verdicts[*step]))
        .chain(paired.iter().map(|(_, kept)| cells(&labels, kept)))
        .collect();
    // Rows added after the arms' leave the arms' draws as they were: draws pick clusters only.
    let clusters = ClusterCounts::new(&evaluation.claims, &all_cells, options.resample);
    let totals = clusters.resample(options.resamples as usize, options.seed);
    let mut arm_intervals = intervals(&totals, all_cells.len(), options.confidence);
    let paired_intervals = arm_intervals.split_off(steps.len());
    let on_same_claims: BTreeMap<&str, OnSameClaims> = paired
        .iter()
        .zip(paired_intervals)
        .map(|((control, kept), bounds)| (*control, on_same_claims(&labels, kept, bounds)))
        .collect();

    let natural = options.natural_rate.as_ref().map(|rate| rate.value);
    let mut all: BTreeMap<String, ArmStats> = steps
        .iter()
        .zip(&arm_intervals)
        .map(|(step, bounds)| {
            let stats = arm_stats(evaluation, &labels, step, bounds, natural);
            ((*step).clone(), stats)
        })
        .collect();

    let controls = control_stats(evaluation, &mut all, on_same_claims);
    let arms = all;

    let comparisons = comparisons(evaluation, &labels, &arms);

    let loro = leave_one_out(evaluation, &options.loro, &arms);

    let frontier = frontier(&arms);
    let by_repository = by_repository(evaluation);

    StatsDocument {
        schema: STATS_SCHEMA,
        split: options.split.clone(),
        sample: sample(evaluation, &labels, options),
        natural_rate: options.natural_rate.clone(),
        bootstrap: BootstrapSettings {
            resamples: options.resamples,
            seed: options.seed,
            resample: options.resample,
            confidence: options.confidence,
            clusters: clusters.clusters() as u64,
        },
        arms,
        controls,
        comparisons,
        loro,
        frontier,
        corpus,
        repositories,
        by_repository,
        rankings: None,
        cutoff: None,
        rename_class: None,
        post_cutoff: None,
    }
}

/// A control's arm scored on the claims the control kept, against `labels`.
fn on_same_claims(labels: &[bool], kept: &[Verdict], bounds: ArmIntervals) -> OnSameClaims {
    let confusion = Confusion::count(labels.iter().copied().zip(kept));
    OnSameClaims {
        precision: confusion.precision(),
        precision_ci: bounds.precision,
        fire_rate: confusion.fire_rate(),
    }
}

/// Leave-one-repository-out for each pair of `pairs` whose two arms were both analysed.
fn leave_one_out(
    evaluation: &Evaluation,
    pairs: &[(String, String)],
    arms: &BTreeMap<String, ArmStats>,
) -> Vec<loro::Loro> {
    pairs
        .iter()
        .filter(|(first, second)| arms.contains_key(first) && arms.contains_key(second))
        .map(|(first, second)| {
            loro::leave_one_out(
                first,
                second,
                &evaluation.claims,
                &evaluation.verdicts[first],
                &evaluation.verdicts[second],
            )
        })
        .collect()
}

/// Each claim's cell of the confusion matrix under `verdicts`.
fn cells(labels: &[bool], verdicts: &[Verdict]) -> Vec<Cell> {
    labels
        .iter()
        .zip(verdicts)
        .map(|(&flipped, &verdict)| Cell::of(flipped, verdict))
        .collect()
}

/// Each control's arm again, its verdicts kept only where the control gave one: the control is
/// read against the arm on the same claims (a paraphrase that was refused has no verdict).
fn arms_beside_controls(evaluation: &Evaluation) -> Vec<(&str, Vec<Verdict>)> {
    evaluation
        .controls()
        .filter_map(|(control, arm)| {
            let arm_verdicts = evaluation.verdicts.get(arm)?;
            let kept = arm_verdicts
                .iter()
                .zip(&evaluation.verdicts[control])
                .map(|(&verdict, &other)| match other {
                    Verdict::None => Verdict::None,
                    _ => verdict,
                })
                .collect();
            Some((control, kept))
        })
        .collect()
}

/// Each control's numbers, taken out of `all` (which keeps the arms), with its agreement with
/// its arm and the arm's numbers on the claims the control judged.
fn control_stats(
    evaluation: &Evaluation,
    all: &mut BTreeMap<String, ArmStats>,
    mut on_same_claims: BTreeMap<&str, OnSameClaims>,
) -> BTreeMap<String, ControlStats> {
    let mut controls = BTreeMap::new();
    for (control, arm) in evaluation.controls() {
        let metrics = all.remove(control).expect("every control has stats");
        // Over the claims both gave a verdict on: a missing verdict neither agrees nor disagrees.
        let (agreed, compared) = evaluation
            .verdicts
            .get(arm)
            .map(|arm_verdicts| {
                let both: Vec<(&Verdict, &Verdict)> = arm_verdicts
                    .iter()
                    .zip(&evaluation.verdicts[control])
                    .filter(|(one, two)| **one != Verdict::None && **two != Verdict::None)
                    .collect();
                let agreed = both.iter().filter(|(one, two)| one == two).count();
                (agreed as u64, both.len() as u64)
            })
            .unwrap_or_default();
        let stats = ControlStats {
            of: arm.to_string(),
            by: evaluation.info[control].control.clone(),
            agreement: ratio(agreed, compared),
            compared,
            arm_on_same_claims: on_same_claims.remove(control),
            metrics,
        };
        controls.insert(control.to_string(), stats);
    }
    controls
}

/// McNemar's test for every pair of arms.
fn comparisons(
    evaluation: &Evaluation,
    labels: &[bool],
    arms: &BTreeMap<String, ArmStats>,
) -> Vec<mcnemar::McNemar> {
    let names: Vec<&String> = arms.keys().collect();
    let mut comparisons = Vec::new();
    for (index, first) in names.iter().enumerate() {
        for second in &names[index + 1..] {
            comparisons.push(mcnemar::compare(
                first,
                second,
                labels,
                &evaluation.verdicts[*first],
                &evaluation.verdicts[*second],
            ));
        }
    }
    comparisons
}

/// The operator's frontier over the arms with a cost and a precision.
fn frontier(arms: &BTreeMap<String, ArmStats>) -> Vec<String> {
    let mut points: Vec<(String, f64, f64)> = arms
        .iter()
        .filter_map(|(name, stats)| {
            Some((
                name.clone(),
                stats.cost.as_ref()?.per_claim,
                stats.precision?,
            ))
        })
        .collect();
    points.sort_by(|left, right| left.1.total_cmp(&right.1).then(left.0.cmp(&right.0)));
    operator::frontier(&points)
}

/// Each step's confusion matrix per repository.
fn by_repository(evaluation: &Evaluation) -> BTreeMap<String, BTreeMap<String, Confusion>> {
    let mut by_repository: BTreeMap<String, BTreeMap<String, Confusion>> = BTreeMap::new();
    for (step, verdicts) in &evaluation.verdicts {
        for (claim, verdict) in evaluation.claims.iter().zip(verdicts) {
            by_repository
                .entry(claim.repository.clone())
                .or_default()
                .entry(step.clone())
                .or_default()
                .add(claim.flipped, *verdict);
        }
    }
    by_repository
}

/// What was judged: claims, labels, repositories and commits.
fn sample(evaluation: &Evaluation, labels: &[bool], options: &AnalysisOptions) -> Sample {
    let flipped = labels.iter().filter(|&&flipped| flipped).count() as u64;
    let total = labels.len() as u64;
    let count_distinct = |key: fn(&super::evaluation::Claim) -> &str| {
        evaluation
            .claims
            .iter()
            .map(key)
            .collect::<BTreeSet<_>>()
            .len() as u64
    };
    Sample {
        claims: total,
        flipped,
        held: total - flipped,
        discarded: evaluation.discarded,
        base_rate: ratio(flipped, total),
        repositories: count_distinct(|claim| &claim.repository),
        commits: count_distinct(|claim| &claim.commit),
        labels_from: options.labels_from.clone(),
    }
}

fn arm_stats(
    evaluation: &Evaluation,
    labels: &[bool],
    step: &str,
    bounds: &ArmIntervals,
    natural: Option<f64>,
) -> ArmStats {
    let confusion = Confusion::count(labels.iter().copied().zip(&evaluation.verdicts[step]));
    let judged = Confusion::count(
        labels
            .iter()
            .copied()
            .zip(&evaluation.verdicts[step])
            .filter(|(_, verdict)| **verdict != Verdict::None),
    );
    let claims = confusion.total();
    ArmStats {
        step: evaluation.info[step].clone(),
        claims,
        precision: confusion.precision(),
        recall: confusion.recall(),
        recall_judged: judged.recall(),
        fire_rate: confusion.fire_rate(),
        coverage: confusion.coverage(),
        precision_ci: bounds.precision,
        recall_ci: bounds.recall,
        tp: confusion.true_positives,
        fp: confusion.false_positives,
        false_negatives: confusion.false_negatives,
        tn: confusion.true_negatives,
        none: confusion.no_verdict,
        staleness: confusion.staleness(),
        budget: confusion.fire_rate(),
        natural_precision: natural.and_then(|rate| reweight::precision_at(&confusion, rate)),
        natural_fire_rate: natural.and_then(|rate| reweight::fire_rate_at(&confusion, rate)),
        cost: operator::cost(&evaluation.spend[step], &evaluation.info[step], claims),
        unmatched: evaluation.unmatched.get(step).copied().unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{Label, PredictionRecord, TruthRecord, Verdict, claim_id};
    use crate::stats::evaluation::{ArmInfo, ArmInput, Origins};

    /// Truth for `ids`: the even-numbered claims flipped, the odd-numbered held.
    fn alternating_truth(ids: &[String]) -> Vec<TruthRecord> {
        ids.iter()
            .enumerate()
            .map(|(index, id)| TruthRecord {
                claim: id.clone(),
                label: if index % 2 == 0 {
                    Label::Flipped
                } else {
                    Label::Held
                },
                reason: None,
                parent_runs: vec![],
                child_runs: vec![],
            })
            .collect()
    }

    /// An arm, or the control of `control_of`, giving `ids` the `verdicts` in order.
    fn arm_input(
        ids: &[String],
        verdicts: impl IntoIterator<Item = Verdict>,
        control_of: Option<&str>,
    ) -> ArmInput {
        ArmInput {
            info: ArmInfo {
                control_of: control_of.map(str::to_string),
                ..ArmInfo::default()
            },
            predictions: ids
                .iter()
                .zip(verdicts)
                .map(|(id, verdict)| PredictionRecord {
                    claim: id.clone(),
                    verdict,
                    evidence: serde_json::Value::Null,
                    tokens_in: None,
                    tokens_out: None,
                    cost: None,
                })
                .collect(),
        }
    }

    fn evaluation() -> Evaluation {
        let ids: Vec<String> = (0..6)
            .map(|index| {
                claim_id(
                    if index < 3 { "r" } else { "s" },
                    "p",
                    &format!("t::{index}"),
                )
            })
            .collect();
        let truth = alternating_truth(&ids);
        let arm = |verdict: Verdict, control_of: Option<&str>| {
            arm_input(&ids, std::iter::repeat(verdict), control_of)
        };
        let arms = BTreeMap::from([
            ("a0".to_string(), arm(Verdict::Flipped, None)),
            ("a1".to_string(), arm(Verdict::Held, None)),
            ("a0_null".to_string(), arm(Verdict::Held, Some("a0"))),
        ]);
        Evaluation::build(&truth, &Origins::default(), &arms, None).unwrap()
    }

    #[test]
    fn controls_are_reported_beside_their_arm_and_not_compared() {
        let options = AnalysisOptions {
            resamples: 50,
            loro: vec![("a0".into(), "a1".into()), ("a6_risk".into(), "a4".into())],
            ..AnalysisOptions::default()
        };
        let document = analyze(&evaluation(), vec![], BTreeMap::new(), &options);
        assert_eq!(document.arms.keys().collect::<Vec<_>>(), ["a0", "a1"]);
        assert_eq!(document.controls["a0_null"].of, "a0");
        assert_eq!(document.controls["a0_null"].agreement, Some(0.0));
        assert_eq!(document.comparisons.len(), 1);
        // The pair naming absent arms is skipped, not filled.
        assert_eq!(document.loro.len(), 1);
        assert_eq!(document.sample.repositories, 2);
        assert_eq!(document.by_repository["r"]["a0"].total(), 3);
        assert_eq!(document.arms["a0"].precision, Some(0.5));
        assert_eq!(document.arms["a1"].precision, None);
    }

    /// Regression: a control's agreement counted a claim the control refused (no verdict) as a
    /// disagreement, and two missing verdicts as an agreement, so a paraphrase control that
    /// refused a quarter of the sample agreed at most 0.75 with its arm.
    #[test]
    fn a_control_is_compared_with_its_arm_on_the_claims_both_judged() {
        use Verdict::{Flipped as F, Held as H, None as N};
        let ids: Vec<String> = (0..6)
            .map(|index| claim_id("r", "p", &format!("t::{index}")))
            .collect();
        let truth = alternating_truth(&ids);
        let arm = |verdicts: [Verdict; 6], control_of: Option<&str>| {
            arm_input(&ids, verdicts, control_of)
        };
        let arms = BTreeMap::from([
            ("a4".to_string(), arm([F, F, H, F, H, H], None)),
            ("a4_para".to_string(), arm([F, N, H, N, F, H], Some("a4"))),
        ]);
        let evaluation = Evaluation::build(&truth, &Origins::default(), &arms, None).unwrap();
        let options = AnalysisOptions {
            resamples: 50,
            ..AnalysisOptions::default()
        };
        let document = analyze(&evaluation, vec![], BTreeMap::new(), &options);
        let control = &document.controls["a4_para"];
        // Claims 0, 2, 4, 5 were judged by both; they agree on 0, 2 and 5.
        assert_eq!(control.compared, 4);
        assert_eq!(control.agreement, Some(0.75));
        // The arm on those claims fires on claim 0 alone, a flip; over every claim it also
        // fires on 1 and 3, both held.
        let same = control.arm_on_same_claims.as_ref().unwrap();
        assert_eq!(same.precision, Some(1.0));
        assert_eq!(same.fire_rate, Some(1.0 / 6.0));
        assert_eq!(document.arms["a4"].precision, Some(1.0 / 3.0));
        assert_eq!(control.metrics.fire_rate, Some(2.0 / 6.0));
    }
}
