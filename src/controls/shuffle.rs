//! The shuffled-diff null: each claim paired with the source-only diff of another commit.
//!
//! An arm that reads a genuine dependence between a claim and a diff should stop firing when the
//! diff is an unrelated one; an arm that fires regardless is reading the diff alone (or nothing).
//! Each claim is paired with a commit that is never its own and, when the corpus has more than one
//! repository, from another repository, so the paired diff cannot touch what the claim tests by
//! accident of shared code. The choice is seeded per claim: among the eligible commits, the one of
//! lowest priority under `(seed, claim, commit)` ([`super::priority`]), so adding commits or claims
//! to the corpus moves only the pairs a new commit wins.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::priority::priority;

/// A commit whose source-only diff a claim can be paired with.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CommitRef {
    pub repo: String,
    pub parent: String,
    pub commit: String,
}

impl CommitRef {
    /// `repo@parent..commit`, the commit's name in a pairing's key.
    pub fn name(&self) -> String {
        format!("{}@{}..{}", self.repo, self.parent, self.commit)
    }
}

/// A claim to pair: its id and its own commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShuffleClaim {
    pub claim: String,
    pub own: CommitRef,
}

/// One claim and the other commit whose diff it is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pairing {
    pub claim: String,
    /// The claim's own commit.
    pub own: CommitRef,
    /// The commit whose diff stands in for the claim's own.
    pub paired: CommitRef,
    /// True when the paired commit is from another repository.
    pub other_repository: bool,
}

/// A claim no other commit could be paired with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unpaired {
    pub claim: String,
    pub reason: String,
}

/// Every claim's pairing, or why it has none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shuffle {
    pub pairings: Vec<Pairing>,
    pub unpaired: Vec<Unpaired>,
}

/// Pairs each of `claims` with one of `commits` (the corpus's candidate commits) under `seed`.
pub fn shuffle(claims: &[ShuffleClaim], commits: &[CommitRef], seed: u64) -> Shuffle {
    let commits: BTreeSet<&CommitRef> = commits.iter().collect();
    let mut result = Shuffle::default();
    for claim in claims {
        let others = || {
            commits
                .iter()
                .copied()
                .filter(|commit| commit.commit != claim.own.commit || commit.repo != claim.own.repo)
        };
        let elsewhere: Vec<&CommitRef> = others()
            .filter(|commit| commit.repo != claim.own.repo)
            .collect();
        let eligible: Vec<&CommitRef> = if elsewhere.is_empty() {
            others().collect()
        } else {
            elsewhere
        };
        let chosen = eligible.into_iter().min_by_key(|commit| {
            (
                priority(
                    seed,
                    "shuffle",
                    &format!("{}\0{}", claim.claim, commit.name()),
                ),
                commit.name(),
            )
        });
        match chosen {
            Some(paired) => result.pairings.push(Pairing {
                claim: claim.claim.clone(),
                own: claim.own.clone(),
                paired: paired.clone(),
                other_repository: paired.repo != claim.own.repo,
            }),
            None => result.unpaired.push(Unpaired {
                claim: claim.claim.clone(),
                reason: "no other commit in the corpus to pair it with".into(),
            }),
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(repo: &str, number: u32) -> CommitRef {
        CommitRef {
            repo: repo.into(),
            parent: format!("{repo}-p{number}"),
            commit: format!("{repo}-c{number}"),
        }
    }

    fn claims_of(commit: &CommitRef, count: u32) -> Vec<ShuffleClaim> {
        (0..count)
            .map(|index| ShuffleClaim {
                claim: format!("{}@{}::test_{index}", commit.repo, commit.parent),
                own: commit.clone(),
            })
            .collect()
    }

    #[test]
    fn never_pairs_a_claim_with_its_own_commit() {
        let commits: Vec<CommitRef> = (0..4).map(|n| commit("solo", n)).collect();
        let claims: Vec<ShuffleClaim> = commits.iter().flat_map(|c| claims_of(c, 5)).collect();
        for seed in 0..20 {
            let shuffle = shuffle(&claims, &commits, seed);
            assert_eq!(shuffle.pairings.len(), claims.len());
            for pairing in &shuffle.pairings {
                assert_ne!(pairing.paired, pairing.own, "seed {seed}: {pairing:?}");
                assert!(!pairing.other_repository);
            }
        }
    }

    #[test]
    fn prefers_another_repository_when_one_exists() {
        let commits = vec![
            commit("a", 0),
            commit("a", 1),
            commit("a", 2),
            commit("b", 0),
        ];
        let claims: Vec<ShuffleClaim> = commits.iter().flat_map(|c| claims_of(c, 6)).collect();
        for seed in 0..20 {
            for pairing in shuffle(&claims, &commits, seed).pairings {
                assert!(pairing.other_repository, "seed {seed}: {pairing:?}");
                assert_ne!(pairing.paired.repo, pairing.own.repo);
            }
        }
    }

    /// Over many seeded corpora of one to four repositories with one to four commits each: a
    /// claim is paired with another repository's commit whenever another repository offers one,
    /// never with its own commit, and left unpaired only when no other commit exists.
    #[test]
    fn pairs_across_repositories_whenever_another_offers_a_commit() {
        let generator = crate::stats::SplitMix64::new(7);
        let mut counter = 0;
        let mut below = |bound: usize| {
            counter += 1;
            1 + generator.index(counter, bound)
        };
        for corpus in 0..200 {
            let commits: Vec<CommitRef> = (0..below(4))
                .flat_map(|repo| {
                    let name = format!("r{repo}");
                    let count = below(4);
                    (0..count).map(move |n| commit(&name, n as u32))
                })
                .collect();
            let claims: Vec<ShuffleClaim> = commits.iter().flat_map(|c| claims_of(c, 3)).collect();
            let result = shuffle(&claims, &commits, corpus as u64);
            assert_eq!(result.pairings.len() + result.unpaired.len(), claims.len());
            for pairing in &result.pairings {
                let elsewhere = commits.iter().any(|c| c.repo != pairing.own.repo);
                assert_ne!(pairing.paired, pairing.own, "corpus {corpus}: {pairing:?}");
                assert!(commits.contains(&pairing.paired));
                assert_eq!(pairing.other_repository, elsewhere, "corpus {corpus}");
                assert_eq!(pairing.paired.repo != pairing.own.repo, elsewhere);
            }
            for unpaired in &result.unpaired {
                assert_eq!(commits.len(), 1, "corpus {corpus}: {unpaired:?}");
            }
        }
    }

    #[test]
    fn a_lone_commit_leaves_its_claims_unpaired_with_why() {
        let only = commit("a", 0);
        let shuffle = shuffle(&claims_of(&only, 2), std::slice::from_ref(&only), 1);
        assert!(shuffle.pairings.is_empty());
        assert_eq!(shuffle.unpaired.len(), 2);
    }

    #[test]
    fn the_pairing_spreads_claims_over_the_other_commits() {
        let commits: Vec<CommitRef> = (0..5).map(|n| commit("a", n)).collect();
        let claims = claims_of(&commits[0], 40);
        let paired: BTreeSet<CommitRef> = shuffle(&claims, &commits, 3)
            .pairings
            .into_iter()
            .map(|pairing| pairing.paired)
            .collect();
        assert_eq!(paired.len(), 4, "{paired:?}");
    }

    #[test]
    fn seeded_pairing_is_snapshot_stable() {
        let commits = vec![
            commit("a", 0),
            commit("a", 1),
            commit("b", 0),
            commit("b", 1),
        ];
        let claims: Vec<ShuffleClaim> = commits.iter().flat_map(|c| claims_of(c, 2)).collect();
        let pairs: Vec<String> = shuffle(&claims, &commits, 1)
            .pairings
            .iter()
            .map(|pairing| format!("{} -> {}", pairing.claim, pairing.paired.name()))
            .collect();
        insta::assert_yaml_snapshot!(pairs);
    }
}
