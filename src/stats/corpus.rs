//! The mined corpus by repository: commits, claims, flips and discards (the paper's Table I).
//!
//! Repositories that produced no flips are kept: how often mining comes up empty is part of what
//! the construction costs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::evaluation::{EvaluationError, Origins};
use crate::records::{ClaimRecord, CommitRecord, Label, TruthRecord};

/// One repository's row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RepositoryCorpus {
    pub repository: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<String>,
    /// Candidate commits ranked (known when `rank-commits` output was available).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commits: Option<u64>,
    /// Commits that yielded at least one claim.
    pub claim_commits: u64,
    /// Claims mined (claim records when available, else the oracle's records).
    pub claims: u64,
    pub flipped: u64,
    pub held: u64,
    pub discarded: u64,
}

impl RepositoryCorpus {
    /// Flips among labelled claims.
    pub fn flip_rate(&self) -> Option<f64> {
        super::confusion::ratio(self.flipped, self.flipped + self.held)
    }
}

/// A `repos:` entry as the corpus table needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepositoryInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<String>,
    /// Where it comes from (a URL or path): the same source under two names is one repository.
    pub source: String,
}

/// Counts per repository, for every repository of the pipeline and any other the data names.
pub fn corpus(
    repositories: &BTreeMap<String, RepositoryInfo>,
    truth: &[TruthRecord],
    origins: &Origins,
    claims: Option<&[ClaimRecord]>,
    commits: Option<&[CommitRecord]>,
) -> Result<Vec<RepositoryCorpus>, EvaluationError> {
    let mut rows: BTreeMap<String, RepositoryCorpus> = repositories
        .iter()
        .map(|(name, info)| {
            let row = RepositoryCorpus {
                repository: name.clone(),
                split: info.split.clone(),
                commits: commits.map(|_| 0),
                ..RepositoryCorpus::default()
            };
            (name.clone(), row)
        })
        .collect();
    for commit in commits.unwrap_or_default() {
        *row(&mut rows, &commit.repo, commits.is_some())
            .commits
            .get_or_insert(0) += 1;
    }
    let mut parents: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    match claims {
        Some(claims) => {
            for claim in claims {
                row(&mut rows, &claim.repo, commits.is_some()).claims += 1;
                parents
                    .entry(claim.repo.clone())
                    .or_default()
                    .insert(claim.parent.clone());
            }
        }
        None => {
            for record in truth {
                let origin = origins.of(&record.claim)?;
                row(&mut rows, &origin.repository, commits.is_some()).claims += 1;
                parents
                    .entry(origin.repository)
                    .or_default()
                    .insert(origin.parent);
            }
        }
    }
    for (repository, parents) in parents {
        row(&mut rows, &repository, commits.is_some()).claim_commits = parents.len() as u64;
    }
    for record in truth {
        let origin = origins.of(&record.claim)?;
        let entry = row(&mut rows, &origin.repository, commits.is_some());
        match record.label {
            Label::Flipped => entry.flipped += 1,
            Label::Held => entry.held += 1,
            Label::Discarded => entry.discarded += 1,
        }
    }
    Ok(rows.into_values().collect())
}

/// The row of `name`, added for a repository the pipeline does not list.
fn row<'a>(
    rows: &'a mut BTreeMap<String, RepositoryCorpus>,
    name: &str,
    ranked: bool,
) -> &'a mut RepositoryCorpus {
    rows.entry(name.to_string())
        .or_insert_with(|| RepositoryCorpus {
            repository: name.to_string(),
            commits: ranked.then_some(0),
            ..RepositoryCorpus::default()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::claim_id;

    #[test]
    fn empty_repositories_are_listed() {
        let repositories = BTreeMap::from([
            (
                "full".to_string(),
                RepositoryInfo {
                    split: Some("heldout".into()),
                    source: "u1".into(),
                },
            ),
            (
                "empty".to_string(),
                RepositoryInfo {
                    split: Some("heldout".into()),
                    source: "u2".into(),
                },
            ),
        ]);
        let truth = [
            TruthRecord {
                claim: claim_id("full", "p", "t.py::a"),
                label: Label::Flipped,
                reason: None,
                parent_runs: vec![],
                child_runs: vec![],
            },
            TruthRecord {
                claim: claim_id("full", "q", "t.py::b"),
                label: Label::Discarded,
                reason: Some("flaky".into()),
                parent_runs: vec![],
                child_runs: vec![],
            },
        ];
        let rows = corpus(&repositories, &truth, &Origins::default(), None, None).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].repository, "empty");
        assert_eq!(rows[0].claims, 0);
        assert_eq!(rows[1].claims, 2);
        assert_eq!(rows[1].claim_commits, 2);
        assert_eq!((rows[1].flipped, rows[1].discarded), (1, 1));
        assert_eq!(rows[1].commits, None);
    }
}
