//! Walking a branch's first-parent history and scoring what each commit changed.
//!
//! Every commit on the first-parent chain is diffed against its first parent (a merge included, unless
//! merges are skipped): that is the change the mainline saw. Scoring reads the tree diff for every
//! commit but diffs lines only for test files that are Python and existed at the parent, which is
//! where deleted assertions can be. A deleted assertion counts only when it really went away, not
//! when the same commit added it back reformatted or moved ([`super::reformat`]); the raw count is
//! kept beside it. Renames are looked for only when a Python test file was deleted and another file
//! added, the one case where pairing them changes a count (the file lists name both paths either
//! way). Commits are scored in parallel, in short runs of consecutive commits, with one
//! `git2::Repository` per worker (a repository handle is not `Sync`); within a run, a file version
//! read for one commit is reused by the next.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Once;

use git2::{Blob, Delta, DiffFile, FileMode, Oid, Repository};
use rayon::prelude::*;

use super::MiningError;
use super::assertions::is_assertion_line;
use super::line_diff::line_changes;
use super::reformat::AddedText;
use super::test_files::{FileClass, TestFileRules, is_python};
use super::tree_diff::{find_renames, side_path, tree_diff};

pub use crate::pipeline::Merges;

/// What one first-parent commit changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitScore {
    pub commit: Oid,
    /// The first parent; `None` for a root commit.
    pub parent: Option<Oid>,
    /// The first line of the message.
    pub subject: String,
    /// Committer time, seconds since the epoch.
    pub time: i64,
    pub merge: bool,
    /// Test files touched: paths at the child, deleted files at the parent, both paths of a rename.
    pub test_files: Vec<String>,
    /// Non-test Python files touched (the same sides).
    pub source_files: Vec<String>,
    /// Assertion lines deleted from Python test files that the commit did not add back, reformatted
    /// or moved, to the same file (what ranking scores).
    pub assertions_deleted: u32,
    /// Assertion lines deleted from Python test files, reformatted and moved ones included.
    pub deleted_assertion_lines: u32,
}

impl CommitScore {
    /// A candidate has a parent and touches a Python test file and a non-test Python file.
    pub fn is_candidate(&self) -> bool {
        self.parent.is_some()
            && !self.source_files.is_empty()
            && self.test_files.iter().any(|path| is_python(path))
    }
}

/// The first-parent chain from `tip`, newest first.
pub fn first_parent_chain(
    repository: &Repository,
    repo: &str,
    tip: Oid,
) -> Result<Vec<Oid>, MiningError> {
    let mut walk = repository
        .revwalk()
        .map_err(MiningError::git("start a history walk", repo))?;
    walk.simplify_first_parent()
        .and_then(|()| walk.push(tip))
        .map_err(MiningError::git(format!("walk from {tip}"), repo))?;
    walk.map(|oid| oid.map_err(MiningError::git(format!("walk from {tip}"), repo)))
        .collect()
}

/// Turns off libgit2's re-hashing of every object it reads. git itself does not re-hash on read (it
/// checks objects when they are fetched and on `fsck`), and on a history with large merge diffs the
/// re-hashing was over a quarter of ranking's time. The switch is process-wide and is only ever
/// turned off, so doing it once cannot surprise another user of libgit2 in the process.
fn skip_rehashing_objects() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| git2::opts::strict_hash_verification(false));
}

/// Scores every commit of the first-parent chain from `tip` (merges per `merges`), newest first.
pub fn score_history(
    path: &Path,
    repo: &str,
    tip: Oid,
    rules: &TestFileRules,
    merges: Merges,
) -> Result<Vec<CommitScore>, MiningError> {
    let open = || {
        Repository::open(path).map_err(MiningError::git(format!("open {}", path.display()), repo))
    };
    skip_rehashing_objects();
    let chain = first_parent_chain(&open()?, repo, tip)?;
    let scores: Vec<Vec<Option<CommitScore>>> = chain
        .par_chunks(RUN)
        .map_init(open, |repository, run| {
            let repository = repository.as_ref().map_err(|error| MiningError::Source {
                repo: repo.to_string(),
                message: error.to_string(),
            })?;
            let mut blobs = RecentBlobs::default();
            run.iter()
                .map(|&oid| {
                    let score = score_commit(repository, &mut blobs, repo, oid, rules, merges);
                    blobs.next_commit();
                    score
                })
                .collect()
        })
        .collect::<Result<_, _>>()?;
    Ok(scores.into_iter().flatten().flatten().collect())
}

/// Commits a worker scores in a row, newest first, so that [`RecentBlobs`] finds the versions the
/// previous commit read; small enough that two workers still share a short history evenly.
const RUN: usize = 16;

/// The blobs read for the commit scored just before, and for this one. Walking newest first, a
/// file's old side in one commit is its new side in the next (its parent), so a run of commits
/// touching the same large test module reads each version once instead of twice.
#[derive(Default)]
struct RecentBlobs<'repo> {
    previous: HashMap<Oid, Blob<'repo>>,
    current: HashMap<Oid, Blob<'repo>>,
}

impl<'repo> RecentBlobs<'repo> {
    fn find(&mut self, repository: &'repo Repository, id: Oid) -> Result<Blob<'repo>, git2::Error> {
        if let Some(blob) = self.previous.get(&id).or_else(|| self.current.get(&id)) {
            return Ok(blob.clone());
        }
        let blob = repository.find_blob(id)?;
        self.current.insert(id, blob.clone());
        Ok(blob)
    }

    /// Forgets all but the blobs of the commit just scored.
    fn next_commit(&mut self) {
        self.previous = std::mem::take(&mut self.current);
    }
}

/// Scores one commit against its first parent; `None` for a merge when merges are skipped.
fn score_commit<'repo>(
    repository: &'repo Repository,
    blobs: &mut RecentBlobs<'repo>,
    repo: &str,
    oid: Oid,
    rules: &TestFileRules,
    merges: Merges,
) -> Result<Option<CommitScore>, MiningError> {
    let commit = repository
        .find_commit(oid)
        .map_err(MiningError::git(format!("read commit {oid}"), repo))?;
    let merge = commit.parent_count() > 1;
    if merge && merges == Merges::Skip {
        return Ok(None);
    }
    let subject = String::from_utf8_lossy(commit.message_bytes())
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    let mut score = CommitScore {
        commit: oid,
        parent: None,
        subject,
        time: commit.time().seconds(),
        merge,
        test_files: Vec::new(),
        source_files: Vec::new(),
        assertions_deleted: 0,
        deleted_assertion_lines: 0,
    };
    // A root commit only adds files: nothing is deleted and there is no parent to be a claim's t.
    let Ok(parent) = commit.parent(0) else {
        return Ok(Some(score));
    };
    score.parent = Some(parent.id());
    let mut diff = tree_diff(repository, repo, Some(&parent), &commit, 0)?;
    if renames_can_matter(&diff, rules) {
        find_renames(&mut diff, repo, &commit)?;
    }
    for delta in diff.deltas() {
        // libgit2 names both sides of every delta; only a side that exists was touched. Both sides
        // of a rename are listed: claims live at the old path at the parent.
        let old_path = (delta.status() != Delta::Added)
            .then(|| side_path(delta.old_file()))
            .flatten();
        let new_path = (delta.status() != Delta::Deleted)
            .then(|| side_path(delta.new_file()))
            .flatten();
        for path in [&old_path, &new_path].into_iter().flatten() {
            match rules.classify(path) {
                FileClass::Test => score.test_files.push(path.clone()),
                FileClass::Source => score.source_files.push(path.clone()),
                FileClass::Other => {}
            }
        }
        let old_is_python_test = old_path
            .as_deref()
            .is_some_and(|path| is_python(path) && rules.is_test(path));
        if old_is_python_test {
            let deleted = deleted_assertions(repository, blobs, &delta, repo, oid)?;
            score.assertions_deleted += deleted.gone;
            score.deleted_assertion_lines += deleted.lines;
        }
    }
    score.test_files.sort();
    score.test_files.dedup();
    score.source_files.sort();
    score.source_files.dedup();
    Ok(Some(score))
}

/// True when `diff` deletes a Python test file and adds some file: only then can pairing files into
/// renames change a count (a moved test file would otherwise read as every assertion deleted).
fn renames_can_matter(diff: &git2::Diff<'_>, rules: &TestFileRules) -> bool {
    let mut deletes_a_test = false;
    let mut adds = false;
    for delta in diff.deltas() {
        match delta.status() {
            Delta::Added => adds = true,
            Delta::Deleted => {
                deletes_a_test |= side_path(delta.old_file())
                    .is_some_and(|path| is_python(&path) && rules.is_test(&path));
            }
            _ => {}
        }
        if deletes_a_test && adds {
            return true;
        }
    }
    false
}

/// The assertion lines one file's change deleted: all of them, and those that really went away.
struct Deleted {
    lines: u32,
    gone: u32,
}

fn deleted_assertions<'repo>(
    repository: &'repo Repository,
    blobs: &mut RecentBlobs<'repo>,
    delta: &git2::DiffDelta<'_>,
    repo: &str,
    oid: Oid,
) -> Result<Deleted, MiningError> {
    let mut read = |file: DiffFile<'_>, exists: bool| -> Result<Option<Blob<'repo>>, MiningError> {
        let is_blob = matches!(
            file.mode(),
            FileMode::Blob
                | FileMode::BlobExecutable
                | FileMode::BlobGroupWritable
                | FileMode::Link
        );
        if !exists || !is_blob {
            return Ok(None);
        }
        blobs
            .find(repository, file.id())
            .map(Some)
            .map_err(MiningError::git(
                format!("read a file of commit {oid}"),
                repo,
            ))
    };
    let old = read(delta.old_file(), true)?;
    let new = read(delta.new_file(), delta.status() != Delta::Deleted)?;
    // `git diff` shows no lines for a binary file, so nothing in one counts.
    if [&old, &new]
        .into_iter()
        .flatten()
        .any(|blob| blob.is_binary())
    {
        return Ok(Deleted { lines: 0, gone: 0 });
    }
    let changes = line_changes(old.as_ref(), new.as_ref()).map_err(MiningError::git(
        format!("diff a file of commit {oid}"),
        repo,
    ))?;
    let assertions: Vec<&str> = changes
        .deleted
        .iter()
        .map(String::as_str)
        .filter(|line| is_assertion_line(line))
        .collect();
    if assertions.is_empty() {
        return Ok(Deleted { lines: 0, gone: 0 });
    }
    let added = AddedText::new(changes.added.iter().map(String::as_str));
    let gone = assertions
        .iter()
        .filter(|line| !added.still_has(line))
        .count();
    Ok(Deleted {
        lines: assertions.len() as u32,
        gone: gone as u32,
    })
}
