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
    cut.push_str(&cut_marker(limit, total_chars));
    SourceDiff {
        text: cut,
        files,
        excluded,
        total_chars,
        truncated: true,
    }
}

/// The line that ends a cut diff: how much of it the model is shown.
fn cut_marker(shown: usize, total: usize) -> String {
    format!("[diff truncated: {shown} of {total} characters shown]\n")
}

/// A diff as a model is shown it: the kept text, and the cut when there was one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShownDiff<'a> {
    /// The diff's own lines: everything before the marker.
    pub kept: &'a str,
    /// Whether the kept text ends in a line the cut split (its end is not the diff's own).
    pub split_last_line: bool,
    /// `(shown, total)` characters, when the diff was cut.
    pub cut: Option<(usize, usize)>,
}

impl<'a> ShownDiff<'a> {
    /// Tells the cut's marker apart from diff content. Only a last line that is exactly the
    /// marker [`truncate`] writes, with counts that agree with the kept text, is the marker: a
    /// diff line always starts with a header word or a hunk prefix, so none can be mistaken for it.
    pub fn read(text: &'a str) -> Self {
        let whole = ShownDiff {
            kept: text,
            split_last_line: false,
            cut: None,
        };
        let Some(body) = text.strip_suffix(" characters shown]\n") else {
            return whole;
        };
        let Some(start) = body.rfind("[diff truncated: ") else {
            return whole;
        };
        let (kept, counts) = (&text[..start], &body[start + "[diff truncated: ".len()..]);
        if !(kept.is_empty() || kept.ends_with('\n')) {
            return whole;
        }
        let Some((shown, total)) = counts.split_once(" of ") else {
            return whole;
        };
        let (Ok(shown), Ok(total)) = (shown.parse::<usize>(), total.parse::<usize>()) else {
            return whole;
        };
        let kept_chars = kept.chars().count();
        // The cut keeps `shown` characters and ends them with a newline of its own when the cut
        // fell inside a line.
        let split_last_line = kept_chars == shown + 1;
        if shown >= total || !(kept_chars == shown || split_last_line) {
            return whole;
        }
        ShownDiff {
            kept,
            split_last_line,
            cut: Some((shown, total)),
        }
    }
}

/// Reads a unified diff back and fails if a header names a test file or a path that was left out, or
/// if a line appears outside a file's header or hunks. A cut diff is read as [`ShownDiff::read`]
/// splits it: its marker is not diff content, and the line the cut split is checked for the paths
/// it names but not for its shape.
pub fn check_no_test_content(
    text: &str,
    rules: &TestFileRules,
    excluded: &[String],
) -> Result<(), String> {
    let shown = ShownDiff::read(text);
    let last = shown.kept.lines().count();
    let mut in_file = false;
    let mut in_hunk = false;
    for (number, line) in shown.kept.lines().enumerate() {
        let number = number + 1;
        if shown.split_last_line && number == last {
            // The cut fell inside this line: what is left of it may be any prefix of a diff
            // line, so only the paths it names are checked.
            check_header_paths(line, number, rules, excluded)?;
            continue;
        }
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
        check_header_paths(line, number, rules, excluded)?;
    }
    Ok(())
}

fn check_header_paths(
    line: &str,
    number: usize,
    rules: &TestFileRules,
    excluded: &[String],
) -> Result<(), String> {
    for path in header_paths(line) {
        if rules.is_test(&path) || excluded.contains(&path) {
            return Err(format!("line {number}: test file `{path}` in a header"));
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

    const TWO_FILES: &str = "diff --git a/pkg/a.py b/pkg/a.py\n--- a/pkg/a.py\n+++ b/pkg/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\ndiff --git a/pkg/b.py b/pkg/b.py\n--- a/pkg/b.py\n+++ b/pkg/b.py\n@@ -1 +1 @@\n-y = 1\n+y = 2\n";

    #[test]
    fn a_cut_diff_passes_the_check_wherever_the_cut_falls() {
        let rules = TestFileRules::default();
        for limit in 1..TWO_FILES.len() {
            let diff = truncate(TWO_FILES.into(), vec![], vec![], limit);
            assert!(diff.truncated);
            check_no_test_content(&diff.text, &rules, &[])
                .unwrap_or_else(|problem| panic!("cut at {limit}: {problem}\n{}", diff.text));
            let shown = ShownDiff::read(&diff.text);
            assert_eq!(shown.cut, Some((limit, TWO_FILES.len())), "cut at {limit}");
            assert!(TWO_FILES.starts_with(shown.kept.trim_end_matches('\n')));
        }
    }

    #[test]
    fn a_marker_line_inside_a_diff_is_still_not_a_diff_line() {
        let first_file = &TWO_FILES[..TWO_FILES.find("diff --git a/pkg/b.py").unwrap()];
        let forged = format!("{first_file}[diff truncated: 10 of 20 characters shown]\n+z = 3\n");
        let rules = TestFileRules::default();
        assert!(check_no_test_content(&forged, &rules, &[]).is_err());
        // A marker whose counts disagree with the text before it is no marker either.
        let wrong = format!("{TWO_FILES}[diff truncated: 7 of 900 characters shown]\n");
        assert_eq!(ShownDiff::read(&wrong).cut, None);
        assert!(check_no_test_content(&wrong, &rules, &[]).is_err());
    }

    #[test]
    fn an_uncut_diff_reads_whole() {
        let shown = ShownDiff::read(TWO_FILES);
        assert_eq!((shown.kept, shown.cut), (TWO_FILES, None));
    }

    #[test]
    fn the_check_accepts_a_source_diff() {
        let text = "diff --git a/pkg/a.py b/pkg/a.py\nindex 1..2 100644\n--- a/pkg/a.py\n+++ b/pkg/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n";
        check_no_test_content(text, &TestFileRules::default(), &["tests/test_a.py".into()])
            .unwrap();
    }
}
