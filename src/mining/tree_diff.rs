//! The diff of one commit against its first parent, with renames found, as ranking and the source-only
//! diff both read it.
//!
//! Rename detection matters for ranking: without it a test file moved to another directory reads as
//! "every assertion deleted". The settings mirror `git diff -M` (50% similarity, exact renames, a rename
//! limit of 1000 file pairs) so counts agree with tools built on git's own diff.

use git2::{Commit, Diff, DiffFindOptions, DiffOptions, Repository};

use super::MiningError;

/// The diff from `parent` (the empty tree when `None`) to `commit`, renames detected.
pub fn commit_diff<'repo>(
    repository: &'repo Repository,
    repo: &str,
    parent: Option<&Commit<'_>>,
    commit: &Commit<'_>,
    context_lines: u32,
) -> Result<Diff<'repo>, MiningError> {
    let mut diff = tree_diff(repository, repo, parent, commit, context_lines)?;
    find_renames(&mut diff, repo, commit)?;
    Ok(diff)
}

/// The diff from `parent` (the empty tree when `None`) to `commit`, without rename detection: a
/// renamed file reads as deleted and added. For a caller that finds renames only when they matter.
pub fn tree_diff<'repo>(
    repository: &'repo Repository,
    repo: &str,
    parent: Option<&Commit<'_>>,
    commit: &Commit<'_>,
    context_lines: u32,
) -> Result<Diff<'repo>, MiningError> {
    let describe = |what: &str| format!("{what} of commit {}", commit.id());
    let new_tree = commit
        .tree()
        .map_err(MiningError::git(describe("read the tree"), repo))?;
    let old_tree = parent
        .map(Commit::tree)
        .transpose()
        .map_err(MiningError::git(describe("read the parent tree"), repo))?;
    let mut options = DiffOptions::new();
    options.context_lines(context_lines);
    repository
        .diff_tree_to_tree(old_tree.as_ref(), Some(&new_tree), Some(&mut options))
        .map_err(MiningError::git(describe("diff"), repo))
}

/// Pairs deleted and added files of `diff` into renames, as `git diff -M` does.
pub fn find_renames(
    diff: &mut Diff<'_>,
    repo: &str,
    commit: &Commit<'_>,
) -> Result<(), MiningError> {
    let mut find = DiffFindOptions::new();
    find.renames(true).rename_threshold(50).rename_limit(1000);
    diff.find_similar(Some(&mut find)).map_err(MiningError::git(
        format!("find renames of commit {}", commit.id()),
        repo,
    ))
}

/// The repository-relative path of one side of a delta, `/`-separated.
pub fn side_path(file: git2::DiffFile<'_>) -> Option<String> {
    file.path_bytes()
        .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
}
