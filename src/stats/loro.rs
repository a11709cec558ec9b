//! Leave-one-repository-out: does one repository carry a gap between two arms?
//!
//! Flips cluster in a few repositories, so a gap in precision between two arms may be one
//! repository in disguise. The gap is recomputed with each repository removed in turn.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::confusion::Confusion;
use super::evaluation::Claim;
use crate::records::Verdict;

/// The gap with one repository left out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoroRow {
    /// The repository removed.
    pub repository: String,
    /// Its labelled claims and flips (what was removed).
    pub claims: u64,
    pub flips: u64,
    pub precision: Option<f64>,
    pub other_precision: Option<f64>,
    /// `precision − other_precision` without it.
    pub gap: Option<f64>,
}

/// The leave-one-repository-out analysis of `arm` against `other`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Loro {
    pub arm: String,
    pub other: String,
    /// The gap on every repository.
    pub gap: Option<f64>,
    pub rows: Vec<LoroRow>,
    /// The repository whose removal leaves the smallest gap.
    pub smallest: Option<String>,
    pub smallest_gap: Option<f64>,
}

fn precision(claims: &[Claim], verdicts: &[Verdict], left_out: Option<&str>) -> Option<f64> {
    let pairs = claims
        .iter()
        .zip(verdicts)
        .filter(|(claim, _)| Some(claim.repository.as_str()) != left_out)
        .map(|(claim, verdict)| (claim.flipped, verdict));
    Confusion::count(pairs).precision()
}

fn gap(first: Option<f64>, second: Option<f64>) -> Option<f64> {
    Some(first? - second?)
}

/// Leaves each repository of `claims` out in turn.
pub fn leave_one_out(
    arm: &str,
    other: &str,
    claims: &[Claim],
    first: &[Verdict],
    second: &[Verdict],
) -> Loro {
    let repositories: BTreeSet<&str> = claims
        .iter()
        .map(|claim| claim.repository.as_str())
        .collect();
    let rows: Vec<LoroRow> = repositories
        .into_iter()
        .map(|repository| {
            let removed = claims.iter().filter(|claim| claim.repository == repository);
            let (count, flips) = removed.fold((0, 0), |(count, flips), claim| {
                (count + 1, flips + u64::from(claim.flipped))
            });
            let precision_without = precision(claims, first, Some(repository));
            let other_without = precision(claims, second, Some(repository));
            LoroRow {
                repository: repository.to_string(),
                claims: count,
                flips,
                precision: precision_without,
                other_precision: other_without,
                gap: gap(precision_without, other_without),
            }
        })
        .collect();
    let smallest = rows
        .iter()
        .filter_map(|row| row.gap.map(|gap| (gap, &row.repository)))
        .min_by(|left, right| left.0.total_cmp(&right.0));
    Loro {
        arm: arm.to_string(),
        other: other.to_string(),
        gap: gap(
            precision(claims, first, None),
            precision(claims, second, None),
        ),
        smallest: smallest.map(|(_, repository)| repository.clone()),
        smallest_gap: smallest.map(|(gap, _)| gap),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(id: &str, repository: &str, flipped: bool) -> Claim {
        Claim {
            id: id.into(),
            repository: repository.into(),
            commit: format!("{repository}@p"),
            flipped,
        }
    }

    #[test]
    fn removing_the_repository_that_carries_the_gap_shrinks_it() {
        use Verdict::{Flipped, Held};
        let claims = [
            claim("1", "big", true),
            claim("2", "big", false),
            claim("3", "small", true),
            claim("4", "small", false),
        ];
        // The first arm is right everywhere; the second only on `small`.
        let first = [Flipped, Held, Flipped, Held];
        let second = [Flipped, Flipped, Flipped, Held];
        let loro = leave_one_out("a6", "a4", &claims, &first, &second);
        assert!((loro.gap.unwrap() - (1.0 - 2.0 / 3.0)).abs() < 1e-12);
        assert_eq!(loro.rows.len(), 2);
        assert_eq!(loro.rows[0].repository, "big");
        assert_eq!(loro.rows[0].gap, Some(0.0));
        assert_eq!(loro.rows[1].gap, Some(0.5));
        assert_eq!(loro.smallest.as_deref(), Some("big"));
        assert_eq!((loro.rows[0].claims, loro.rows[0].flips), (2, 1));
    }
}
