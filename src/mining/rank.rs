//! Ranking a repository's commits as candidates for claim mining.
//!
//! Flips are rare, so commits are ranked by the evidence that an expectation was retired: assertion
//! lines deleted from test files (`assertion-deletions`), or, as the weaker baseline the paper compares
//! against, words like "fix" or "remove" in the subject (`keywords`). Only candidates are ranked: a
//! commit with a parent that touches a Python test file and a non-test Python file. Order is by score,
//! then by history order (newest first), so a ranking is a pure function of the history.

use serde::{Deserialize, Serialize};

use super::history::CommitScore;
use crate::records::CommitRecord;

/// What a commit is ranked by.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum RankBy {
    /// Assertion lines deleted from test files (not those a reformat or move added back).
    #[default]
    AssertionDeletions,
    /// Words of [`KEYWORDS`] in the subject.
    Keywords,
}

impl RankBy {
    /// The name used in pipelines and records.
    pub fn name(self) -> &'static str {
        match self {
            RankBy::AssertionDeletions => "assertion-deletions",
            RankBy::Keywords => "keywords",
        }
    }
}

/// Subject words that count for `keywords` ranking (whole words, any case).
pub const KEYWORDS: &[&str] = &[
    "fix",
    "fixes",
    "fixed",
    "fixing",
    "bug",
    "bugs",
    "bugfix",
    "break",
    "breaks",
    "broke",
    "broken",
    "breaking",
    "remove",
    "removes",
    "removed",
    "removing",
    "drop",
    "drops",
    "dropped",
    "deprecate",
    "deprecates",
    "deprecated",
    "rename",
    "renames",
    "renamed",
    "revert",
    "reverts",
    "reverted",
];

/// The number of [`KEYWORDS`] in `subject`, counting repeats.
pub fn keyword_hits(subject: &str) -> u32 {
    subject
        .split(|character: char| !character.is_alphanumeric())
        .filter(|word| KEYWORDS.contains(&word.to_lowercase().as_str()))
        .count() as u32
}

/// How to choose the ranked commits of one repository.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Selection {
    pub by: RankBy,
    /// Keep at most this many.
    pub top: usize,
    /// Drop candidates scoring below this.
    pub min_score: f64,
}

/// The score of `commit` under `by`.
pub fn score_of(commit: &CommitScore, by: RankBy) -> u32 {
    match by {
        RankBy::AssertionDeletions => commit.assertions_deleted,
        RankBy::Keywords => keyword_hits(&commit.subject),
    }
}

/// Ranks the candidates among `history` (newest first) and returns the top records of repository
/// `repo`, best first, with 1-based ranks.
pub fn rank(repo: &str, history: &[CommitScore], selection: Selection) -> Vec<CommitRecord> {
    let mut scored: Vec<(u32, &CommitScore)> = history
        .iter()
        .filter(|commit| commit.is_candidate())
        .map(|commit| (score_of(commit, selection.by), commit))
        .filter(|(score, _)| f64::from(*score) >= selection.min_score)
        .collect();
    // A stable sort keeps history order (newest first) among equal scores.
    scored.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
    scored
        .into_iter()
        .take(selection.top)
        .enumerate()
        .map(|(index, (score, commit))| record(repo, commit, score, selection.by, index))
        .collect()
}

/// The records of the commits `chosen` (in that order, ranked 1, 2, …) of repository `repo`,
/// scored under `by` like a ranking's. Every chosen commit must be in `history` (the caller has
/// checked it is on the first-parent chain).
pub fn chosen(
    repo: &str,
    history: &[CommitScore],
    chosen: &[git2::Oid],
    by: RankBy,
) -> Result<Vec<CommitRecord>, git2::Oid> {
    chosen
        .iter()
        .enumerate()
        .map(|(index, oid)| {
            let commit = history
                .iter()
                .find(|commit| commit.commit == *oid)
                .ok_or(*oid)?;
            Ok(record(repo, commit, score_of(commit, by), by, index))
        })
        .collect()
}

fn record(repo: &str, commit: &CommitScore, score: u32, by: RankBy, index: usize) -> CommitRecord {
    CommitRecord {
        repo: repo.to_string(),
        commit: commit.commit.to_string(),
        parent: commit
            .parent
            .map(|parent| parent.to_string())
            .unwrap_or_default(),
        score: f64::from(score),
        subject: commit.subject.clone(),
        test_files: commit.test_files.clone(),
        source_files: commit.source_files.clone(),
        by: by.name().to_string(),
        rank: index as u32 + 1,
        assertions_deleted: commit.assertions_deleted,
        deleted_assertion_lines: commit.deleted_assertion_lines,
        keyword_hits: keyword_hits(&commit.subject),
        merge: commit.merge,
        time: commit.time,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_are_whole_words_in_any_case() {
        assert_eq!(keyword_hits("Fix: remove the broken cache"), 3);
        assert_eq!(keyword_hits("fixture refactoring, prefix handling"), 0);
        assert_eq!(keyword_hits("funcutils: forward defaulted args"), 0);
        assert_eq!(keyword_hits("fix fix"), 2);
        assert_eq!(keyword_hits("Revert \"drop py2\""), 2);
    }

    #[test]
    fn rank_by_names_round_trip() {
        for by in [RankBy::AssertionDeletions, RankBy::Keywords] {
            let json = serde_json::to_value(by).unwrap();
            assert_eq!(json, serde_json::json!(by.name()));
        }
    }
}
