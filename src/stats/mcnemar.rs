//! The exact McNemar test on paired per-claim correctness of two arms.
//!
//! A claim is answered correctly when the arm's verdict matches the label, a `none` reading as
//! held. Only discordant claims carry information: `b` where the first arm is right and the second
//! wrong, `c` the reverse. Under the null they split evenly, so the two-sided p-value is twice the
//! binomial(b + c, 1/2) tail at min(b, c), capped at 1 — the same number as statsmodels'
//! `mcnemar(exact=True)`. The tail is summed in log space, so p-values down to about 1e-300 stay accurate
//! (below what an f64 holds they are 0).

use serde::{Deserialize, Serialize};

use crate::records::Verdict;

/// One paired comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McNemar {
    /// The first arm.
    pub arm: String,
    /// The second arm.
    pub other: String,
    /// Claims the first arm gets right and the second wrong.
    pub b: u64,
    /// Claims the second arm gets right and the first wrong.
    pub c: u64,
    /// Two-sided exact p-value.
    pub p: f64,
}

/// Counts the discordant pairs of two aligned verdict lists.
pub fn discordant(labels: &[bool], first: &[Verdict], second: &[Verdict]) -> (u64, u64) {
    let correct = |flipped: bool, verdict: Verdict| (verdict == Verdict::Flipped) == flipped;
    let mut b = 0;
    let mut c = 0;
    for ((&flipped, &one), &two) in labels.iter().zip(first).zip(second) {
        match (correct(flipped, one), correct(flipped, two)) {
            (true, false) => b += 1,
            (false, true) => c += 1,
            _ => {}
        }
    }
    (b, c)
}

/// The two-sided exact p-value for `b` against `c`.
pub fn exact_p(b: u64, c: u64) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    let smaller = b.min(c);
    // log C(n, k) built up term by term; the tail sum is taken relative to its largest term.
    let mut log_choose = 0.0f64;
    let mut terms = Vec::with_capacity(smaller as usize + 1);
    for k in 0..=smaller {
        if k > 0 {
            log_choose += ((n - k + 1) as f64).ln() - (k as f64).ln();
        }
        terms.push(log_choose);
    }
    let largest = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = terms.iter().map(|term| (term - largest).exp()).sum();
    let log_tail = largest + sum.ln() - n as f64 * std::f64::consts::LN_2;
    (2.0 * log_tail.exp()).min(1.0)
}

/// The comparison of two arms' verdicts.
pub fn compare(
    arm: &str,
    other: &str,
    labels: &[bool],
    first: &[Verdict],
    second: &[Verdict],
) -> McNemar {
    let (b, c) = discordant(labels, first, second);
    McNemar {
        arm: arm.to_string(),
        other: other.to_string(),
        b,
        c,
        p: exact_p(b, c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_tables_match_the_binomial_by_hand() {
        // b=1, c=5: 2 * (1 + 6) / 64.
        assert!((exact_p(1, 5) - 14.0 / 64.0).abs() < 1e-15);
        assert_eq!(exact_p(3, 3), 1.0);
        assert_eq!(exact_p(0, 0), 1.0);
    }

    #[test]
    fn tiny_p_values_keep_their_magnitude() {
        // The paper's A6 against A4: 162 against 35 gives p near 1e-20.
        let p = exact_p(162, 35);
        assert!(p > 1e-22 && p < 1e-18, "{p}");
        assert!(exact_p(0, 990) > 0.0);
    }

    #[test]
    fn none_counts_as_held_when_scoring_correctness() {
        let labels = [true, false, true];
        let first = [Verdict::Flipped, Verdict::None, Verdict::None];
        let second = [Verdict::None, Verdict::Flipped, Verdict::Flipped];
        assert_eq!(discordant(&labels, &first, &second), (2, 1));
    }
}
