//! Bootstrap percentile intervals for every arm's precision and recall, from one shared set of
//! resamples.
//!
//! Resampling is by cluster: a claim, a commit (claims of one commit share a diff, so they are not
//! independent) or a repository. Every arm sees the same resamples, which keeps arms comparable.
//! The random draws come from a counter-based splitmix64 stream: draw `i` is
//! `mix(seed + (i + 1) * GAMMA)`, so resample `b` draws `b * k .. (b + 1) * k` for `k` clusters.
//! Any thread can compute any draw, so the result does not depend on scheduling, and a numpy
//! script can reproduce the exact index matrix (see `benches/bootstrap/`).

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::confusion::{Cell, Confusion};
use super::evaluation::Claim;

/// What one bootstrap draw picks.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Resample {
    /// Claims, independently.
    #[default]
    Claim,
    /// Whole commits with all their claims.
    Commit,
    /// Whole repositories with all their claims.
    Repo,
}

impl Resample {
    /// The cluster key of a claim.
    fn key<'a>(&self, claim: &'a Claim) -> &'a str {
        match self {
            Resample::Claim => &claim.id,
            Resample::Commit => &claim.commit,
            Resample::Repo => &claim.repository,
        }
    }
}

/// splitmix64 (Steele, Lea and Flood 2014), read as a counter-based generator.
#[derive(Debug, Clone, Copy)]
pub struct SplitMix64 {
    seed: u64,
}

impl SplitMix64 {
    pub const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

    pub fn new(seed: u64) -> Self {
        SplitMix64 { seed }
    }

    /// The `counter`-th output of the stream that starts at `seed`.
    pub fn at(&self, counter: u64) -> u64 {
        let mut z = self
            .seed
            .wrapping_add(counter.wrapping_add(1).wrapping_mul(Self::GAMMA));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The `counter`-th draw of an index below `bound` (modulo; the bias is below 2^-50 for the
    /// cluster counts met here).
    pub fn index(&self, counter: u64, bound: usize) -> usize {
        (self.at(counter) % bound as u64) as usize
    }
}

/// Per-cluster counts, a fixed number per cluster: what one draw of a cluster adds. For the arms,
/// `[tp, fp, fn, tn]` of every arm; other analyses choose their own columns.
#[derive(Debug, Clone)]
pub struct ClusterCounts {
    clusters: usize,
    /// Counts per cluster.
    width: usize,
    /// `counts[cluster * width + column]`; for the arms, column `arm * 4 + cell`.
    counts: Vec<u32>,
}

impl ClusterCounts {
    /// Groups `claims` by `resample` and counts each arm's cells per cluster. `cells[arm][claim]`.
    pub fn new(claims: &[Claim], cells: &[Vec<Cell>], resample: Resample) -> Self {
        let mut cluster_of: BTreeMap<&str, usize> = BTreeMap::new();
        for claim in claims {
            let next = cluster_of.len();
            cluster_of.entry(resample.key(claim)).or_insert(next);
        }
        let clusters = cluster_of.len();
        let arms = cells.len();
        let mut counts = vec![0u32; clusters * arms * 4];
        for (index, claim) in claims.iter().enumerate() {
            let cluster = cluster_of[resample.key(claim)];
            for (arm, arm_cells) in cells.iter().enumerate() {
                counts[(cluster * arms + arm) * 4 + arm_cells[index].index()] += 1;
            }
        }
        ClusterCounts {
            clusters,
            width: arms * 4,
            counts,
        }
    }

    /// `width` counts per cluster, cluster after cluster (`rows.len()` is a multiple of `width`).
    pub fn from_rows(width: usize, rows: Vec<u32>) -> Self {
        assert!(
            width > 0 && rows.len().is_multiple_of(width),
            "cluster rows of width {width} cannot hold {} counts",
            rows.len()
        );
        ClusterCounts {
            clusters: rows.len() / width,
            width,
            counts: rows,
        }
    }

    pub fn clusters(&self) -> usize {
        self.clusters
    }

    /// Runs `resamples` resamples and returns the summed counts of each, flat:
    /// `result[b * width + column]`; for the arms `[tp, fp, fn, tn]` at
    /// `result[(b * arms + arm) * 4 + cell]`.
    pub fn resample(&self, resamples: usize, seed: u64) -> Vec<u32> {
        let stride = self.width;
        let mut out = vec![0u32; resamples * stride];
        if self.clusters == 0 || stride == 0 {
            return out;
        }
        let rng = SplitMix64::new(seed);
        let k = self.clusters;
        out.par_chunks_mut(stride)
            .enumerate()
            .for_each(|(b, totals)| {
                let first = (b as u64) * (k as u64);
                for draw in 0..k as u64 {
                    let cluster = rng.index(first + draw, k);
                    let counts = &self.counts[cluster * stride..(cluster + 1) * stride];
                    for (total, count) in totals.iter_mut().zip(counts) {
                        *total += count;
                    }
                }
            });
        out
    }
}

/// A two-sided percentile interval.
pub type Interval = [f64; 2];

/// Precision and recall intervals of one arm.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ArmIntervals {
    pub precision: Option<Interval>,
    pub recall: Option<Interval>,
}

/// Percentile intervals at `confidence` for each arm, from [`ClusterCounts::resample`] output.
/// Resamples in which a rate is undefined (the arm never fired, nothing flipped) are left out of
/// that rate's interval.
pub fn intervals(totals: &[u32], arms: usize, confidence: f64) -> Vec<ArmIntervals> {
    let stride = arms * 4;
    let resamples = totals.len().checked_div(stride).unwrap_or(0);
    let tail = (1.0 - confidence) / 2.0;
    (0..arms)
        .into_par_iter()
        .map(|arm| {
            let mut precisions = Vec::with_capacity(resamples);
            let mut recalls = Vec::with_capacity(resamples);
            for b in 0..resamples {
                let base = b * stride + arm * 4;
                let cells = std::array::from_fn(|cell| u64::from(totals[base + cell]));
                let confusion = Confusion::from_cells(cells);
                precisions.extend(confusion.precision());
                recalls.extend(confusion.recall());
            }
            ArmIntervals {
                precision: percentile_interval(&mut precisions, tail),
                recall: percentile_interval(&mut recalls, tail),
            }
        })
        .collect()
}

/// The two-sided percentile interval of `values` leaving `tail` out on each side (sorts them);
/// `None` when there are none.
pub fn percentile_interval(values: &mut [f64], tail: f64) -> Option<Interval> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable_by(f64::total_cmp);
    Some([percentile(values, tail), percentile(values, 1.0 - tail)])
}

/// The `q`-quantile (0..=1) of sorted `values`, interpolated linearly between order statistics as
/// numpy's default `percentile` does (which is what `scipy.stats.bootstrap` reports).
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    let position = q * (sorted.len() - 1) as f64;
    let low = position.floor() as usize;
    let high = position.ceil() as usize;
    let fraction = position - low as f64;
    sorted[low] + (sorted[high] - sorted[low]) * fraction
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(id: &str, commit: &str, repository: &str, flipped: bool) -> Claim {
        Claim {
            id: id.into(),
            repository: repository.into(),
            commit: commit.into(),
            flipped,
        }
    }

    #[test]
    fn splitmix_matches_the_reference_stream() {
        // The first outputs of splitmix64 seeded with 0 (Vigna's reference implementation).
        let rng = SplitMix64::new(0);
        assert_eq!(rng.at(0), 0xE220_A839_7B1D_CDAF);
        assert_eq!(rng.at(1), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn percentile_interpolates_like_numpy() {
        let sorted = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&sorted, 0.5), 2.5);
        assert_eq!(percentile(&sorted, 0.025), 1.075);
        assert_eq!(percentile(&sorted, 1.0), 4.0);
    }

    #[test]
    fn a_cluster_draw_adds_every_claim_of_it() {
        let claims = [
            claim("a", "c1", "r", true),
            claim("b", "c1", "r", false),
            claim("c", "c2", "r", false),
        ];
        let cells = vec![vec![
            Cell::TruePositive,
            Cell::FalsePositive,
            Cell::TrueNegative,
        ]];
        let counts = ClusterCounts::new(&claims, &cells, Resample::Commit);
        assert_eq!(counts.clusters(), 2);
        let totals = counts.resample(50, 7);
        for resample in totals.chunks(4) {
            // Every draw is a whole commit: tp and fp always move together.
            assert_eq!(resample[0], resample[1]);
            assert_eq!(resample[0] + resample[3], 2);
        }
    }

    #[test]
    fn resampling_is_deterministic_and_independent_of_threads() {
        let claims: Vec<Claim> = (0..40)
            .map(|index| claim(&format!("c{index}"), "x", "r", index % 3 == 0))
            .collect();
        let cells = vec![
            claims
                .iter()
                .enumerate()
                .map(|(index, claim)| {
                    Cell::of(
                        claim.flipped,
                        if index % 2 == 0 {
                            crate::records::Verdict::Flipped
                        } else {
                            crate::records::Verdict::Held
                        },
                    )
                })
                .collect(),
        ];
        let counts = ClusterCounts::new(&claims, &cells, Resample::Claim);
        let first = counts.resample(200, 3);
        let single = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| counts.resample(200, 3));
        assert_eq!(first, single);
        let arms = intervals(&first, 1, 0.95);
        let precision = arms[0].precision.unwrap();
        assert!(precision[0] <= precision[1]);
    }
}
