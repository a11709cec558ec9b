//! The source-only diff a model is shown: parent to child, every test file left out, truncated.
//!
//! The oracle restores the parent's test files at the child, so the commit's own test edits would
//! reveal the answer; a model must never see them. Test files are left out by construction (a file
//! whose old or new path is a test file contributes nothing), and the finished text is checked again
//! by reading it back: every file header must name a non-test path and every hunk line must belong to
//! such a file. A broken check is [`MiningError::Invariant`], never a diff.

use git2::{Oid, Patch, Repository};
use serde::{Deserialize, Serialize};

use super::MiningError;
use super::test_files::TestFileRules;
use super::tree_diff::{commit_diff, side_path};

/// The length at which a source diff is cut, in characters (the paper's setting).
pub const DEFAULT_DIFF_LIMIT: usize = 12_000;

/// A unified diff of a commit's non-test files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceDiff {
    /// The diff text, with a `[diff truncated: N of M characters shown]` line when cut.
    pub text: String,
    /// Files shown (paths at the child; deleted files at the parent).
    pub files: Vec<String>,
    /// Test files left out.
    pub excluded: Vec<String>,
    /// Characters of the whole diff before truncation.
    pub total_chars: usize,
    pub truncated: bool,
}

/// The diff from `parent` to `child` without test files, cut at `limit` characters.
pub fn source_diff(
    repository: &Repository,
    parent: Oid,
    child: Oid,
    rules: &TestFileRules,
    limit: usize,
) -> Result<SourceDiff, MiningError> {
    let repo = repository.path().display().to_string();
    let find = |oid: Oid| {
        repository
            .find_commit(oid)
            .map_err(MiningError::git(format!("read commit {oid}"), &repo))
    };
    let (parent_commit, child_commit) = (find(parent)?, find(child)?);
    let diff = commit_diff(repository, &repo, Some(&parent_commit), &child_commit, 3)?;
    let mut text = String::new();
    let mut files = Vec::new();
    let mut excluded = Vec::new();
    for (index, delta) in diff.deltas().enumerate() {
        let paths: Vec<String> = [side_path(delta.old_file()), side_path(delta.new_file())]
            .into_iter()
            .flatten()
            .collect();
        let shown = paths.last().cloned().unwrap_or_default();
        if paths.iter().any(|path| rules.is_test(path)) {
            excluded.push(shown);
            continue;
        }
        let Some(mut patch) = Patch::from_diff(&diff, index)
            .map_err(MiningError::git(format!("build a patch of {child}"), &repo))?
        else {
            continue;
        };
        let buffer = patch
            .to_buf()
            .map_err(MiningError::git(format!("print a patch of {child}"), &repo))?;
        text.push_str(&String::from_utf8_lossy(&buffer));
        files.push(shown);
    }
    check_no_test_content(&text, rules, &excluded).map_err(|problem| {
        MiningError::Invariant(format!(
            "source diff {parent}..{child} in {repo}: {problem}"
        ))
    })?;
    Ok(truncate(text, files, excluded, limit))
}

fn truncate(text: String, files: Vec<String>, excluded: Vec<String>, limit: usize) -> SourceDiff {
    let total_chars = text.chars().count();
    if total_chars <= limit {
        return SourceDiff {
            text,
            files,
            excluded,
            total_chars,
            truncated: false,
        };
    }
    let mut cut: String = text.chars().take(limit).collect();
    if !cut.ends_with('\n') {
        cut.push('\n');
    }
    cut.push_str(&format!(
        "[diff truncated: {limit} of {total_chars} characters shown]\n"
    ));
    SourceDiff {
        text: cut,
        files,
        excluded,
        total_chars,
        truncated: true,
    }
}

/// Reads a unified diff back and fails if a header names a test file or a path that was left out, or
/// if a line appears outside a file's header or hunks.
pub fn check_no_test_content(
    text: &str,
    rules: &TestFileRules,
    excluded: &[String],
) -> Result<(), String> {
    let mut in_file = false;
    let mut in_hunk = false;
    for (number, line) in text.lines().enumerate() {
        let number = number + 1;
        if line.starts_with("diff --git ") {
            in_file = true;
            in_hunk = false;
        } else if line.starts_with("@@") {
            if !in_file {
                return Err(format!("line {number}: a hunk outside any file"));
            }
            in_hunk = true;
            continue;
        } else if in_hunk {
            if !line.starts_with([' ', '+', '-', '\\']) && !line.is_empty() {
                return Err(format!("line {number}: `{line}` is not a diff line"));
            }
            continue;
        } else if !in_file {
            return Err(format!("line {number}: content before any file header"));
        }
        for path in header_paths(line) {
            if rules.is_test(&path) || excluded.contains(&path) {
                return Err(format!("line {number}: test file `{path}` in a header"));
            }
        }
    }
    Ok(())
}

/// The paths a header line names (`diff --git a/X b/Y`, `--- a/X`, `+++ b/Y`, `rename from X`, …).
fn header_paths(line: &str) -> Vec<String> {
    let unquote = |path: &str| path.trim_matches('"').to_string();
    if let Some(rest) = line.strip_prefix("diff --git ") {
        return rest
            .split(" b/")
            .map(|part| unquote(part.strip_prefix("a/").unwrap_or(part)))
            .collect();
    }
    for prefix in [
        "--- a/",
        "+++ b/",
        "rename from ",
        "rename to ",
        "copy from ",
        "copy to ",
    ] {
        if let Some(path) = line.strip_prefix(prefix) {
            return vec![unquote(path)];
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_is_marked_with_both_counts() {
        let diff = truncate("abcdef\nghij\n".into(), vec![], vec![], 4);
        assert_eq!(
            diff.text,
            "abcd\n[diff truncated: 4 of 12 characters shown]\n"
        );
        assert!(diff.truncated);
        assert_eq!(diff.total_chars, 12);
    }

    #[test]
    fn a_short_diff_is_kept_whole() {
        let diff = truncate("abc\n".into(), vec![], vec![], 4);
        assert_eq!(diff.text, "abc\n");
        assert!(!diff.truncated);
    }

    #[test]
    fn the_check_rejects_a_test_file_header() {
        let text = "diff --git a/tests/test_a.py b/tests/test_a.py\n--- a/tests/test_a.py\n";
        let error = check_no_test_content(text, &TestFileRules::default(), &[]).unwrap_err();
        assert!(error.contains("tests/test_a.py"), "{error}");
    }

    #[test]
    fn the_check_rejects_hunk_lines_without_a_file() {
        let error =
            check_no_test_content("@@ -1 +1 @@\n-assert x\n", &TestFileRules::default(), &[])
                .unwrap_err();
        assert!(error.contains("outside any file"), "{error}");
    }

    #[test]
    fn the_check_rejects_a_left_out_path_even_if_the_rules_miss_it() {
        let text = "diff --git a/checks/a.py b/checks/a.py\n";
        let error = check_no_test_content(text, &TestFileRules::default(), &["checks/a.py".into()])
            .unwrap_err();
        assert!(error.contains("checks/a.py"), "{error}");
    }

    #[test]
    fn a_source_path_that_ends_like_a_test_path_is_not_a_test() {
        let text = "diff --git a/pkg/myconftest.py b/pkg/myconftest.py\n";
        check_no_test_content(text, &TestFileRules::default(), &["conftest.py".into()]).unwrap();
    }

    #[test]
    fn the_check_accepts_a_source_diff() {
        let text = "diff --git a/pkg/a.py b/pkg/a.py\nindex 1..2 100644\n--- a/pkg/a.py\n+++ b/pkg/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n";
        check_no_test_content(text, &TestFileRules::default(), &["tests/test_a.py".into()])
            .unwrap();
    }
}
