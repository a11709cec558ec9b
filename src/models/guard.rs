//! The last check before a request leaves: the diff a model is shown holds no test file.
//!
//! The oracle restores the parent's test files at the child, so the commit's own test edits give
//! the answer away. `source_diff` leaves test files out by construction; this guard reads the diff
//! section of every message again, just before sending, and refuses a message in which a test file's
//! path or a claim's assertion appears (the paper's repro_smoke invariant). A refusal fails the item;
//! nothing is sent.

use crate::mining::TestFileRules;
use crate::mining::source_diff::check_no_test_content;

/// Assertion texts shorter than this are not looked for: `assert x` could be anyone's line.
const MIN_ASSERTION_CHARS: usize = 12;

/// What the diff must not contain.
#[derive(Debug, Clone, Default)]
pub struct Forbidden<'a> {
    /// The repository's test-file rules.
    pub rules: Option<&'a TestFileRules>,
    /// Test files the commit touched (the diff's left-out paths).
    pub test_paths: &'a [String],
    /// Assertion statements of the claims the message is about (or of every claim of the commit).
    pub assertions: &'a [String],
}

/// Fails when `diff` (the diff section of a message) shows a test file or a claim's assertion.
pub fn check(diff: &str, forbidden: &Forbidden) -> Result<(), String> {
    let default_rules = TestFileRules::default();
    let rules = forbidden.rules.unwrap_or(&default_rules);
    check_no_test_content(diff, rules, forbidden.test_paths)?;
    for path in forbidden.test_paths {
        if !path.is_empty() && diff.contains(path.as_str()) {
            return Err(format!("test file `{path}` is named in the diff"));
        }
    }
    for assertion in forbidden.assertions {
        let assertion = assertion.trim();
        if assertion.chars().count() < MIN_ASSERTION_CHARS {
            continue;
        }
        if let Some((number, _)) = diff
            .lines()
            .enumerate()
            .find(|(_, line)| line.contains(assertion))
        {
            return Err(format!(
                "line {}: a claim's assertion `{assertion}` is in the diff",
                number + 1
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "diff --git a/pkg/a.py b/pkg/a.py\n--- a/pkg/a.py\n+++ b/pkg/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n";

    #[test]
    fn a_source_diff_passes() {
        let paths = vec!["tests/test_a.py".to_string()];
        let assertions = vec!["assert pkg.a.x == 1".to_string()];
        let forbidden = Forbidden {
            rules: None,
            test_paths: &paths,
            assertions: &assertions,
        };
        check(SOURCE, &forbidden).unwrap();
    }

    #[test]
    fn a_planted_test_file_is_refused() {
        let planted = format!(
            "{SOURCE}diff --git a/tests/test_a.py b/tests/test_a.py\n--- a/tests/test_a.py\n+++ b/tests/test_a.py\n@@ -1 +1 @@\n-    assert f() == 1\n+    assert f() == 2\n"
        );
        let error = check(&planted, &Forbidden::default()).unwrap_err();
        assert!(error.contains("tests/test_a.py"), "{error}");
    }

    #[test]
    fn a_left_out_path_named_anywhere_is_refused() {
        let paths = vec!["checks/spec_a.py".to_string()];
        let text = format!("{SOURCE}+# see checks/spec_a.py\n");
        let forbidden = Forbidden {
            test_paths: &paths,
            ..Forbidden::default()
        };
        assert!(
            check(&text, &forbidden)
                .unwrap_err()
                .contains("checks/spec_a.py")
        );
    }

    #[test]
    fn an_assertion_in_a_source_hunk_is_refused() {
        let assertions = vec!["assert pkg.a.x == 1".to_string(), "assert x".to_string()];
        let text = format!("{SOURCE}+    assert pkg.a.x == 1\n");
        let forbidden = Forbidden {
            assertions: &assertions,
            ..Forbidden::default()
        };
        let error = check(&text, &forbidden).unwrap_err();
        assert!(error.contains("line 7"), "{error}");
    }
}
