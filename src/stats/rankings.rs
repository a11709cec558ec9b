//! Flip density by ranking: how many claims flip per commit mined and per claim labelled, for
//! each commit ranking a pipeline labels (assertion deletions, subject keywords), and how two
//! rankings differ.
//!
//! Each ranking counts every commit it picked; a commit two rankings both picked counts in each,
//! and the overlap is reported. Intervals come from one set of seeded bootstrap resamples of the
//! union of ranked commits (a commit is drawn with all its claims), so a commit both rankings
//! picked moves in both at once and the difference between two rankings is paired on it. A
//! resample in which a rate is undefined (no commit of that ranking drawn, no labelled claim) is
//! left out of that rate's interval.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::bootstrap::{ClusterCounts, Interval, percentile_interval};
use super::confusion::ratio;
use super::evaluation::{EvaluationError, Origins};
use crate::records::{CommitRecord, Label, TruthRecord};

/// Counts per ranking per commit: ranked (0 or 1), labelled claims, flipped, flipped at all.
const COLUMNS: usize = 4;

/// One ranking's input: its ranked commits and its oracle's labels.
#[derive(Debug, Clone, Copy)]
pub struct RankingInput<'a> {
    /// The `rank-commits` step.
    pub step: &'a str,
    /// What it ranks by.
    pub by: &'a str,
    /// The oracle step whose labels are counted.
    pub labels_from: &'a str,
    pub commits: &'a [CommitRecord],
    pub truth: &'a [TruthRecord],
}

/// How the intervals are made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DensitySettings {
    pub resamples: u64,
    pub seed: u64,
    pub confidence: f64,
}

/// The `rankings` section of `stats.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankingComparison {
    /// Distinct commits ranked by any ranking: what each resample draws from.
    pub commits: u64,
    /// Every ranking, in the order `rankings:` lists them.
    pub steps: Vec<RankingStats>,
    /// Every pair of rankings, earlier minus later.
    pub differences: Vec<RankingDifference>,
}

/// One ranking's flip density.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankingStats {
    /// The `rank-commits` step.
    pub step: String,
    /// What it ranks by (`assertion-deletions`, `keywords`).
    pub by: String,
    /// The oracle step its labels come from.
    pub labels_from: String,
    /// Commits ranked.
    pub commits: u64,
    /// Commits with at least one labelled (flipped or held) claim.
    pub commits_labelled: u64,
    /// Commits with at least one flipped claim.
    pub commits_with_flips: u64,
    /// Labelled claims: flipped + held.
    pub claims: u64,
    pub flipped: u64,
    pub held: u64,
    /// Claims the oracle discarded; excluded from the rates.
    pub discarded: u64,
    /// Flipped claims per commit ranked.
    pub flips_per_commit: Option<f64>,
    pub flips_per_commit_ci: Option<Interval>,
    /// Flipped claims per labelled claim.
    pub flip_rate: Option<f64>,
    pub flip_rate_ci: Option<Interval>,
    /// The share of commits ranked with at least one flipped claim.
    pub flip_commit_share: Option<f64>,
    pub flip_commit_share_ci: Option<Interval>,
}

/// `ranking` minus `other`, with paired bootstrap intervals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankingDifference {
    pub ranking: String,
    pub other: String,
    /// Commits both rankings picked (counted in each).
    pub shared_commits: u64,
    pub flips_per_commit: Option<f64>,
    pub flips_per_commit_ci: Option<Interval>,
    pub flip_rate: Option<f64>,
    pub flip_rate_ci: Option<Interval>,
    pub flip_commit_share: Option<f64>,
    pub flip_commit_share_ci: Option<Interval>,
}

/// Why the rankings could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum RankingError {
    /// A claim id is malformed.
    #[error(transparent)]
    Claim(#[from] EvaluationError),
    /// The oracle labelled a claim of a commit its ranking never picked.
    #[error(
        "claim `{claim}` labelled by `{oracle}` comes from no commit ranked by `{ranking}`; the \
         oracle step must label claims mined from that ranking"
    )]
    Unranked {
        claim: String,
        oracle: String,
        ranking: String,
    },
    /// The oracle labelled one claim twice.
    #[error("claim `{claim}` has two labels from `{oracle}`")]
    DuplicateLabel { claim: String, oracle: String },
}

/// The three densities of one ranking, from summed counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Density {
    pub flips_per_commit: Option<f64>,
    pub flip_rate: Option<f64>,
    pub flip_commit_share: Option<f64>,
}

impl Density {
    /// The densities of ranking `ranking` from one row of summed counts (`COLUMNS` per ranking).
    pub fn of(totals: &[u32], ranking: usize) -> Self {
        let at = |column: usize| u64::from(totals[ranking * COLUMNS + column]);
        let (commits, labelled, flipped, flip_commits) = (at(0), at(1), at(2), at(3));
        Density {
            flips_per_commit: ratio(flipped, commits),
            flip_rate: ratio(flipped, labelled),
            flip_commit_share: ratio(flip_commits, commits),
        }
    }

    fn rates(self) -> [Option<f64>; 3] {
        [
            self.flips_per_commit,
            self.flip_rate,
            self.flip_commit_share,
        ]
    }
}

/// Per-ranking counts of one commit.
#[derive(Debug, Clone, Copy, Default)]
struct CommitCounts {
    flipped: u32,
    held: u32,
    discarded: u32,
}

/// Compares `rankings`; when `repositories` is given, only their commits and claims count.
pub fn compare(
    rankings: &[RankingInput],
    repositories: Option<&BTreeSet<String>>,
    settings: &DensitySettings,
) -> Result<RankingComparison, RankingError> {
    let keep = |repository: &str| repositories.is_none_or(|keep| keep.contains(repository));
    let origins = Origins::default();
    // Per ranking, its commits (`repo@commit`) with their counts.
    let per_ranking = rankings
        .iter()
        .map(|ranking| commit_counts(ranking, &keep, &origins))
        .collect::<Result<Vec<_>, _>>()?;
    let union: BTreeSet<&String> = per_ranking.iter().flat_map(BTreeMap::keys).collect();
    let samples = Samples::draw(&per_ranking, &union, settings);
    let steps = rankings
        .iter()
        .zip(&per_ranking)
        .enumerate()
        .map(|(index, (ranking, counts))| ranking_stats(ranking, counts, index, &samples))
        .collect();
    let mut differences = Vec::new();
    for first in 0..rankings.len() {
        for second in first + 1..rankings.len() {
            let shared = per_ranking[first]
                .keys()
                .filter(|commit| per_ranking[second].contains_key(*commit))
                .count();
            let pair = [rankings[first].step, rankings[second].step];
            differences.push(difference(pair, (first, second), shared, &samples));
        }
    }
    Ok(RankingComparison {
        commits: union.len() as u64,
        steps,
        differences,
    })
}

/// One ranking's commits (`repo@commit`, those `keep` accepts) with the counts of its oracle's
/// labels.
fn commit_counts(
    ranking: &RankingInput,
    keep: &impl Fn(&str) -> bool,
    origins: &Origins,
) -> Result<BTreeMap<String, CommitCounts>, RankingError> {
    let mut by_parent: BTreeMap<(&str, &str), String> = BTreeMap::new();
    let mut counts: BTreeMap<String, CommitCounts> = BTreeMap::new();
    for commit in ranking.commits.iter().filter(|commit| keep(&commit.repo)) {
        let key = format!("{}@{}", commit.repo, commit.commit);
        by_parent.insert((&commit.repo, &commit.parent), key.clone());
        counts.entry(key).or_default();
    }
    let mut seen = BTreeSet::new();
    for record in ranking.truth {
        let origin = origins.of(&record.claim)?;
        if !keep(&origin.repository) {
            continue;
        }
        if !seen.insert(record.claim.as_str()) {
            return Err(RankingError::DuplicateLabel {
                claim: record.claim.clone(),
                oracle: ranking.labels_from.to_string(),
            });
        }
        let key = by_parent
            .get(&(origin.repository.as_str(), origin.parent.as_str()))
            .ok_or_else(|| RankingError::Unranked {
                claim: record.claim.clone(),
                oracle: ranking.labels_from.to_string(),
                ranking: ranking.step.to_string(),
            })?;
        let entry = counts.get_mut(key).expect("every ranked commit has counts");
        match record.label {
            Label::Flipped => entry.flipped += 1,
            Label::Held => entry.held += 1,
            Label::Discarded => entry.discarded += 1,
        }
    }
    Ok(counts)
}

/// The summed counts of every ranking and their bootstrap resamples: rows of `width` counts,
/// `COLUMNS` per ranking.
struct Samples {
    width: usize,
    totals: Vec<u32>,
    resampled: Vec<u32>,
    /// The share left out on each side of an interval.
    tail: f64,
}

impl Samples {
    /// One row per commit of `union` (zeros for a ranking that did not pick it), summed and
    /// resampled by commit.
    fn draw(
        per_ranking: &[BTreeMap<String, CommitCounts>],
        union: &BTreeSet<&String>,
        settings: &DensitySettings,
    ) -> Self {
        let width = COLUMNS * per_ranking.len();
        let mut rows = Vec::with_capacity(union.len() * width);
        for commit in union {
            for counts in per_ranking {
                match counts.get(*commit) {
                    Some(found) => rows.extend([
                        1,
                        found.flipped + found.held,
                        found.flipped,
                        u32::from(found.flipped > 0),
                    ]),
                    None => rows.extend([0; COLUMNS]),
                }
            }
        }
        let mut totals = vec![0u32; width];
        for row in rows.chunks(width.max(1)) {
            for (total, count) in totals.iter_mut().zip(row) {
                *total += count;
            }
        }
        let resampled = if width == 0 {
            Vec::new()
        } else {
            ClusterCounts::from_rows(width, rows)
                .resample(settings.resamples as usize, settings.seed)
        };
        Samples {
            width,
            totals,
            resampled,
            tail: (1.0 - settings.confidence) / 2.0,
        }
    }

    /// Intervals of three rates over the resamples (see [`rate_intervals`]).
    fn intervals(&self, rates: impl Fn(&[u32]) -> [Option<f64>; 3]) -> [Option<Interval>; 3] {
        rate_intervals(&self.resampled, self.width, self.tail, rates)
    }
}

/// The flip density of the ranking at `index`, with its counts.
fn ranking_stats(
    ranking: &RankingInput,
    counts: &BTreeMap<String, CommitCounts>,
    index: usize,
    samples: &Samples,
) -> RankingStats {
    let point = Density::of(&samples.totals, index);
    let [flips_per_commit_ci, flip_rate_ci, flip_commit_share_ci] =
        samples.intervals(|row| Density::of(row, index).rates());
    let sum =
        |pick: fn(&CommitCounts) -> u32| counts.values().map(|found| u64::from(pick(found))).sum();
    let flipped = sum(|found| found.flipped);
    let held = sum(|found| found.held);
    RankingStats {
        step: ranking.step.to_string(),
        by: ranking.by.to_string(),
        labels_from: ranking.labels_from.to_string(),
        commits: counts.len() as u64,
        commits_labelled: counts
            .values()
            .filter(|found| found.flipped + found.held > 0)
            .count() as u64,
        commits_with_flips: counts.values().filter(|found| found.flipped > 0).count() as u64,
        claims: flipped + held,
        flipped,
        held,
        discarded: sum(|found| found.discarded),
        flips_per_commit: point.flips_per_commit,
        flips_per_commit_ci,
        flip_rate: point.flip_rate,
        flip_rate_ci,
        flip_commit_share: point.flip_commit_share,
        flip_commit_share_ci,
    }
}

/// The ranking at index `first` minus the one at `second` (named `ranking` and `other`), which picked
/// `shared` commits in common.
fn difference(
    [ranking, other]: [&str; 2],
    (first, second): (usize, usize),
    shared: usize,
    samples: &Samples,
) -> RankingDifference {
    let gap = |row: &[u32]| {
        let (one, two) = (Density::of(row, first), Density::of(row, second));
        let minus = |left: Option<f64>, right: Option<f64>| Some(left? - right?);
        [
            minus(one.flips_per_commit, two.flips_per_commit),
            minus(one.flip_rate, two.flip_rate),
            minus(one.flip_commit_share, two.flip_commit_share),
        ]
    };
    let [flips_per_commit, flip_rate, flip_commit_share] = gap(&samples.totals);
    let [flips_per_commit_ci, flip_rate_ci, flip_commit_share_ci] = samples.intervals(gap);
    RankingDifference {
        ranking: ranking.to_string(),
        other: other.to_string(),
        shared_commits: shared as u64,
        flips_per_commit,
        flips_per_commit_ci,
        flip_rate,
        flip_rate_ci,
        flip_commit_share,
        flip_commit_share_ci,
    }
}

/// Percentile intervals of three rates over resampled count rows of `width`, leaving `tail` out
/// on each side; a resample in which a rate is undefined is left out of that rate's interval.
pub fn rate_intervals(
    resampled: &[u32],
    width: usize,
    tail: f64,
    rates: impl Fn(&[u32]) -> [Option<f64>; 3],
) -> [Option<Interval>; 3] {
    let mut values: [Vec<f64>; 3] = Default::default();
    if width > 0 {
        for row in resampled.chunks(width) {
            for (found, rate) in values.iter_mut().zip(rates(row)) {
                found.extend(rate);
            }
        }
    }
    values.map(|mut found| percentile_interval(&mut found, tail))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::claim_id;

    fn commit(name: &str) -> CommitRecord {
        CommitRecord {
            repo: "r".into(),
            commit: format!("c{name}"),
            parent: format!("p{name}"),
            score: 1.0,
            subject: String::new(),
            test_files: vec![],
            source_files: vec![],
            by: String::new(),
            rank: 0,
            assertions_deleted: 0,
            deleted_assertion_lines: 0,
            keyword_hits: 0,
            merge: false,
            time: 0,
        }
    }

    /// `count` claims of commit `name` with `label`, numbered from `first`.
    fn labels(name: &str, first: usize, count: usize, label: Label) -> Vec<TruthRecord> {
        (first..first + count)
            .map(|index| TruthRecord {
                claim: claim_id("r", &format!("p{name}"), &format!("t.py::test_{index}")),
                label,
                reason: None,
                parent_runs: vec![],
                child_runs: vec![],
            })
            .collect()
    }

    const SETTINGS: DensitySettings = DensitySettings {
        resamples: 2000,
        seed: 1,
        confidence: 0.95,
    };

    fn input<'a>(
        step: &'a str,
        commits: &'a [CommitRecord],
        truth: &'a [TruthRecord],
    ) -> RankingInput<'a> {
        RankingInput {
            step,
            by: if step == "rank" {
                "assertion-deletions"
            } else {
                "keywords"
            },
            labels_from: if step == "rank" { "truth" } else { "truth_kw" },
            commits,
            truth,
        }
    }

    #[test]
    fn counts_and_rates_of_two_overlapping_rankings() {
        // `rank` picked 1, 2 and 3: commit 1 has 3 flips and 1 hold, commit 2 two holds and a
        // discarded claim, commit 3 no claims. `rank_kw` picked 2 (labelled the same) and 4 (one
        // flip, one hold).
        let ranked = [commit("1"), commit("2"), commit("3")];
        let ranked_kw = [commit("2"), commit("4")];
        let truth: Vec<TruthRecord> = [
            labels("1", 0, 3, Label::Flipped),
            labels("1", 3, 1, Label::Held),
            labels("2", 0, 2, Label::Held),
            labels("2", 2, 1, Label::Discarded),
        ]
        .concat();
        let truth_kw: Vec<TruthRecord> = [
            labels("2", 0, 2, Label::Held),
            labels("2", 2, 1, Label::Discarded),
            labels("4", 0, 1, Label::Flipped),
            labels("4", 1, 1, Label::Held),
        ]
        .concat();
        let comparison = compare(
            &[
                input("rank", &ranked, &truth),
                input("rank_kw", &ranked_kw, &truth_kw),
            ],
            None,
            &SETTINGS,
        )
        .unwrap();
        assert_eq!(comparison.commits, 4, "commits 1, 2, 3 and 4");

        let rank = &comparison.steps[0];
        assert_eq!(
            (rank.step.as_str(), rank.by.as_str()),
            ("rank", "assertion-deletions")
        );
        assert_eq!(
            (rank.commits, rank.commits_labelled, rank.commits_with_flips),
            (3, 2, 1)
        );
        assert_eq!(
            (rank.claims, rank.flipped, rank.held, rank.discarded),
            (6, 3, 3, 1)
        );
        // 3 flips / 3 commits; 3 flips / 6 labelled claims; 1 of 3 commits flipped anything.
        assert_eq!(rank.flips_per_commit, Some(1.0));
        assert_eq!(rank.flip_rate, Some(0.5));
        assert_eq!(rank.flip_commit_share, Some(1.0 / 3.0));

        let keywords = &comparison.steps[1];
        assert_eq!(
            (
                keywords.commits,
                keywords.commits_labelled,
                keywords.commits_with_flips
            ),
            (2, 2, 1)
        );
        assert_eq!(
            (
                keywords.claims,
                keywords.flipped,
                keywords.held,
                keywords.discarded
            ),
            (4, 1, 3, 1)
        );
        // 1 flip / 2 commits; 1 / 4 labelled; 1 of 2 commits.
        assert_eq!(keywords.flips_per_commit, Some(0.5));
        assert_eq!(keywords.flip_rate, Some(0.25));
        assert_eq!(keywords.flip_commit_share, Some(0.5));

        let difference = &comparison.differences[0];
        assert_eq!(
            (difference.ranking.as_str(), difference.other.as_str()),
            ("rank", "rank_kw")
        );
        assert_eq!(difference.shared_commits, 1, "commit 2");
        assert_eq!(difference.flips_per_commit, Some(0.5));
        assert_eq!(difference.flip_rate, Some(0.25));
        assert_eq!(difference.flip_commit_share, Some(1.0 / 3.0 - 0.5));

        // Every interval brackets its point estimate and stays within what resampling four
        // commits can give: at most 3 flips per drawn commit, rates in 0..=1.
        for stats in &comparison.steps {
            for (point, interval, top) in [
                (stats.flips_per_commit, stats.flips_per_commit_ci, 3.0),
                (stats.flip_rate, stats.flip_rate_ci, 1.0),
                (stats.flip_commit_share, stats.flip_commit_share_ci, 1.0),
            ] {
                let ([low, high], point) = (interval.unwrap(), point.unwrap());
                assert!(0.0 <= low && low <= point && point <= high && high <= top);
                assert!(low < high, "{} varies across resamples", stats.step);
            }
        }
        let [low, high] = difference.flip_rate_ci.unwrap();
        assert!(low < 0.25 && 0.25 < high);
    }

    #[test]
    fn intervals_are_numpy_percentiles_of_the_defined_resamples() {
        // Five resamples of one ranking: [commits, labelled, flipped, commits with flips].
        let resampled = [
            2, 4, 2, 1, // 1.0 flips per commit, rate 0.5, share 0.5
            3, 6, 3, 1, // 1.0, 0.5, 1/3
            1, 0, 0, 0, // 0.0, undefined, 0.0
            4, 8, 2, 2, // 0.5, 0.25, 0.5
            0, 0, 0, 0, // nothing drawn: every rate undefined
        ];
        let [per_commit, rate, share] =
            rate_intervals(&resampled, 4, 0.025, |row| Density::of(row, 0).rates());
        let close = |found: Option<Interval>, [low, high]: Interval| {
            let [found_low, found_high] = found.expect("an interval");
            assert!(
                (found_low - low).abs() < 1e-12 && (found_high - high).abs() < 1e-12,
                "{found_low} {found_high} against {low} {high}"
            );
        };
        // Flips per commit, sorted [0, 0.5, 1, 1]: the 2.5% point sits 0.075 of the way from
        // 0 to 0.5, the 97.5% point between the two ones.
        close(per_commit, [0.0375, 1.0]);
        // Rate, sorted [0.25, 0.5, 0.5]: 0.25 + 0.05 × 0.25, and 0.5.
        close(rate, [0.2625, 0.5]);
        // Share, sorted [0, 1/3, 0.5, 0.5]: 0.075 × 1/3, and 0.5.
        close(share, [0.025, 0.5]);
    }

    #[test]
    fn identical_rankings_differ_by_exactly_zero_in_every_resample() {
        // Paired resampling: a commit both rankings picked is drawn for both at once, so two
        // rankings of the same commits never differ, and a ranking whose commits all look alike
        // has an interval of one point.
        let ranked = [commit("1"), commit("2")];
        let truth: Vec<TruthRecord> = [
            labels("1", 0, 1, Label::Flipped),
            labels("1", 1, 1, Label::Held),
            labels("2", 0, 1, Label::Flipped),
            labels("2", 1, 1, Label::Held),
        ]
        .concat();
        let comparison = compare(
            &[
                input("rank", &ranked, &truth),
                input("rank_kw", &ranked, &truth),
            ],
            None,
            &SETTINGS,
        )
        .unwrap();
        assert_eq!(comparison.steps[0].flips_per_commit_ci, Some([1.0, 1.0]));
        assert_eq!(comparison.steps[0].flip_rate_ci, Some([0.5, 0.5]));
        let difference = &comparison.differences[0];
        assert_eq!(difference.shared_commits, 2);
        assert_eq!(difference.flips_per_commit_ci, Some([0.0, 0.0]));
        assert_eq!(difference.flip_rate_ci, Some([0.0, 0.0]));
        assert_eq!(difference.flip_commit_share_ci, Some([0.0, 0.0]));
    }

    #[test]
    fn a_label_of_an_unranked_commit_names_the_claim_and_both_steps() {
        let ranked = [commit("1")];
        let truth = labels("9", 0, 1, Label::Held);
        let error = compare(&[input("rank", &ranked, &truth)], None, &SETTINGS).unwrap_err();
        assert_eq!(
            error.to_string(),
            "claim `r@p9::t.py::test_0` labelled by `truth` comes from no commit ranked by \
             `rank`; the oracle step must label claims mined from that ranking"
        );
    }

    #[test]
    fn a_split_keeps_only_its_repositories_commits() {
        let mut other = commit("2");
        other.repo = "s".into();
        let ranked = [commit("1"), other];
        let truth = labels("1", 0, 1, Label::Flipped);
        let keep = BTreeSet::from(["r".to_string()]);
        let comparison =
            compare(&[input("rank", &ranked, &truth)], Some(&keep), &SETTINGS).unwrap();
        assert_eq!(comparison.steps[0].commits, 1);
        assert_eq!(comparison.steps[0].flips_per_commit, Some(1.0));
    }
}
