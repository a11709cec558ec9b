//! The stratified held-out sample: a split's labelled claims drawn to a target flip rate.
//!
//! Flips are rare (about 2% of labelled claims even after ranking commits), so an evaluation set
//! drawn at the natural rate holds too few positives to measure anything. The paper stratifies
//! each split to 25% flips and records the natural rate, so that precision can be reweighted to
//! what a deployment meets ([`crate::stats::reweight`]).
//!
//! The draw keeps every flip when flips are what is scarce (the usual case) and draws held claims
//! to match the target rate; with a `size`, it draws `size × rate` flips when there are that
//! many. Claims are drawn in their seeded priority order ([`super::priority`]), so a larger sample
//! with the same seed contains the smaller one and a re-run judges only the claims it adds.

use serde::{Deserialize, Serialize};

use super::priority::seeded_order;

/// One labelled claim of the population a sample is drawn from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub claim: String,
    pub repository: String,
    pub flipped: bool,
}

/// What to draw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleSettings {
    /// The share of flips wanted in the sample, strictly between 0 and 1.
    pub flip_rate: f64,
    pub seed: u64,
    /// The number of claims wanted; every flip (and the held claims to match) when `None`.
    pub size: Option<usize>,
}

/// Why a sample cannot be drawn.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SampleError {
    /// The target rate is not a share.
    #[error("draw a sample at flip rate {0}: the rate must lie strictly between 0 and 1")]
    Rate(f64),
    /// A size of zero draws nothing.
    #[error("draw a sample of size 0: ask for at least one claim")]
    EmptySize,
}

/// The drawn sample and how it relates to its population.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The claim ids drawn, flips first, each group in draw order.
    pub claims: Vec<String>,
    /// Flips and held claims in the population.
    pub population_flipped: u64,
    pub population_held: u64,
    /// The population's flip rate: what precision is reweighted to.
    pub natural_rate: Option<f64>,
    /// Flips and held claims drawn.
    pub flipped: u64,
    pub held: u64,
    /// The target rate and the rate the sample has.
    pub target_rate: f64,
    pub achieved_rate: Option<f64>,
    /// Why the sample is smaller than asked or off its target rate, if it is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// Draws the sample of `population` described by `settings`.
pub fn stratify(
    population: &[Candidate],
    settings: &SampleSettings,
) -> Result<Sample, SampleError> {
    let rate = settings.flip_rate;
    if !(rate > 0.0 && rate < 1.0) {
        return Err(SampleError::Rate(rate));
    }
    if settings.size == Some(0) {
        return Err(SampleError::EmptySize);
    }
    let id = |candidate: &&Candidate| candidate.claim.clone();
    let flips = seeded_order(
        population.iter().filter(|candidate| candidate.flipped),
        settings.seed,
        "stratify",
        id,
    );
    let holds = seeded_order(
        population.iter().filter(|candidate| !candidate.flipped),
        settings.seed,
        "stratify",
        id,
    );
    let (available_flips, available_holds) = (flips.len(), holds.len());
    let mut notes = Vec::new();
    // Held claims that go with `f` flips at the target rate, and flips that go with `h` holds.
    let holds_for = |f: usize| (f as f64 * (1.0 - rate) / rate).round() as usize;
    let flips_for = |h: usize| (h as f64 * rate / (1.0 - rate)).round() as usize;
    let (mut wanted_flips, mut wanted_holds) = match settings.size {
        Some(size) => {
            let wanted = ((size as f64) * rate).round().clamp(1.0, size as f64) as usize;
            if wanted <= available_flips {
                (wanted, size - wanted)
            } else {
                notes.push(format!(
                    "a sample of {size} at rate {rate} wants {wanted} flips; the population has \
                     {available_flips}, so every flip is kept and the sample is smaller"
                ));
                (available_flips, holds_for(available_flips))
            }
        }
        None => (available_flips, holds_for(available_flips)),
    };
    if wanted_holds > available_holds {
        notes.push(format!(
            "{wanted_flips} flips at rate {rate} want {wanted_holds} held claims; the population \
             has {available_holds}, so flips are drawn to match them"
        ));
        wanted_holds = available_holds;
        wanted_flips = flips_for(available_holds).min(wanted_flips);
    }
    let mut claims: Vec<String> = flips
        .iter()
        .take(wanted_flips)
        .map(|candidate| candidate.claim.clone())
        .collect();
    claims.extend(
        holds
            .iter()
            .take(wanted_holds)
            .map(|candidate| candidate.claim.clone()),
    );
    let (flipped, held) = (wanted_flips as u64, wanted_holds as u64);
    let (population_flipped, population_held) = (available_flips as u64, available_holds as u64);
    Ok(Sample {
        claims,
        population_flipped,
        population_held,
        natural_rate: share(population_flipped, population_flipped + population_held),
        flipped,
        held,
        target_rate: rate,
        achieved_rate: share(flipped, flipped + held),
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn population(flips: usize, holds: usize) -> Vec<Candidate> {
        let mut all = Vec::new();
        for index in 0..flips {
            all.push(Candidate {
                claim: format!("r@p{}::test_flip_{index}", index % 3),
                repository: "r".into(),
                flipped: true,
            });
        }
        for index in 0..holds {
            all.push(Candidate {
                claim: format!("r@p{}::test_hold_{index}", index % 5),
                repository: "r".into(),
                flipped: false,
            });
        }
        all
    }

    fn settings(size: Option<usize>) -> SampleSettings {
        SampleSettings {
            flip_rate: 0.25,
            seed: 1,
            size,
        }
    }

    #[test]
    fn keeps_every_flip_and_hits_the_target_rate() {
        let sample = stratify(&population(7, 200), &settings(None)).unwrap();
        assert_eq!((sample.flipped, sample.held), (7, 21));
        assert_eq!(sample.achieved_rate, Some(0.25));
        assert_eq!(sample.natural_rate, Some(7.0 / 207.0));
        assert_eq!(sample.claims.len(), 28);
        assert!(sample.notes.is_empty());
    }

    #[test]
    fn a_size_draws_its_share_of_flips_when_there_are_enough() {
        let sample = stratify(&population(40, 200), &settings(Some(40))).unwrap();
        assert_eq!((sample.flipped, sample.held), (10, 30));
        assert_eq!(sample.achieved_rate, Some(0.25));
    }

    #[test]
    fn too_few_flips_for_the_size_keeps_every_flip_at_the_target_rate() {
        let sample = stratify(&population(5, 200), &settings(Some(100))).unwrap();
        assert_eq!((sample.flipped, sample.held), (5, 15));
        assert_eq!(sample.notes.len(), 1, "{:?}", sample.notes);
    }

    #[test]
    fn too_few_holds_draws_flips_to_match_them() {
        let sample = stratify(&population(30, 30), &settings(None)).unwrap();
        assert_eq!((sample.flipped, sample.held), (10, 30));
        assert_eq!(sample.achieved_rate, Some(0.25));
    }

    #[test]
    fn a_larger_sample_with_the_same_seed_contains_the_smaller() {
        let all = population(40, 300);
        let small = stratify(&all, &settings(Some(40))).unwrap();
        let large = stratify(&all, &settings(Some(120))).unwrap();
        for claim in &small.claims {
            assert!(
                large.claims.contains(claim),
                "{claim} left the larger sample"
            );
        }
    }

    #[test]
    fn new_claims_in_the_population_leave_an_unlimited_sample_of_old_flips_alone() {
        let before = stratify(&population(6, 100), &settings(None)).unwrap();
        let after = stratify(&population(7, 100), &settings(None)).unwrap();
        for claim in before.claims.iter().filter(|claim| claim.contains("flip")) {
            assert!(after.claims.contains(claim));
        }
    }

    #[test]
    fn the_seed_changes_which_holds_are_drawn() {
        let all = population(5, 100);
        let one = stratify(&all, &settings(None)).unwrap();
        let two = stratify(
            &all,
            &SampleSettings {
                seed: 2,
                ..settings(None)
            },
        )
        .unwrap();
        assert_ne!(one.claims, two.claims);
        assert_eq!(one.held, two.held);
    }

    #[test]
    fn seeded_draw_is_snapshot_stable() {
        let sample = stratify(&population(3, 12), &settings(None)).unwrap();
        insta::assert_json_snapshot!(sample);
    }

    #[test]
    fn rejects_a_rate_outside_zero_and_one() {
        for rate in [0.0, 1.0, 1.5, f64::NAN] {
            let error = stratify(
                &population(3, 3),
                &SampleSettings {
                    flip_rate: rate,
                    ..settings(None)
                },
            );
            assert!(error.is_err(), "rate {rate} accepted");
        }
        assert_eq!(
            stratify(&population(3, 3), &settings(Some(0))),
            Err(SampleError::EmptySize)
        );
    }
}
