//! Which files of a repository are test files.
//!
//! Ranking counts assertions only in test files, the oracle restores the parent's test files, and the
//! source-only diff must never show one, so all three read the same [`TestFileRules`]. A rule is a glob
//! over the repository-relative path (`/`-separated; `*` stays within one directory, `**` crosses them).

use glob::{MatchOptions, Pattern};

use super::MiningError;
use crate::pipeline::RepoSpec;

/// The patterns used when neither the step nor the repository names its own: everything under a
/// `test/`, `tests/` or `testing/` directory at any depth (helpers and `__init__.py` included, since
/// shared tests live there), and `test_*.py`, `*_test.py`, `tests.py`, `conftest.py` anywhere.
pub const DEFAULT_TEST_PATTERNS: &[&str] = &[
    "**/test/**",
    "**/tests/**",
    "**/testing/**",
    "**/test_*.py",
    "**/*_test.py",
    "**/tests.py",
    "**/conftest.py",
];

const MATCH: MatchOptions = MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: false,
};

/// How a path counts for mining.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileClass {
    /// Matches a test pattern (any extension: test data is test content too).
    Test,
    /// A Python file that is not a test file.
    Source,
    /// Anything else (documentation, configuration, data outside test directories).
    Other,
}

/// The set of globs that make a path a test file.
#[derive(Debug, Clone)]
pub struct TestFileRules {
    patterns: Vec<Pattern>,
}

impl Default for TestFileRules {
    fn default() -> Self {
        Self::new(DEFAULT_TEST_PATTERNS).expect("the default test patterns are valid globs")
    }
}

impl TestFileRules {
    /// Rules from glob patterns; an empty list means the defaults.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self, MiningError> {
        if patterns.is_empty() {
            return Ok(Self::default());
        }
        let patterns = patterns
            .iter()
            .map(|pattern| {
                let pattern = pattern.as_ref();
                Pattern::new(pattern).map_err(|error| MiningError::Pattern {
                    pattern: pattern.to_string(),
                    message: error.msg.to_string(),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(TestFileRules { patterns })
    }

    /// The rules for one repository: its own `test_patterns` when it names them,
    /// else `step_patterns` (a step's `with: test_patterns`), else the defaults. Every step that
    /// asks "is this a test file" about a repository should ask through this, so ranking, the
    /// oracle and the source-only diff agree.
    pub fn for_repository(spec: &RepoSpec, step_patterns: &[String]) -> Result<Self, MiningError> {
        Self::new(spec.test_patterns.as_deref().unwrap_or(step_patterns))
    }

    /// The patterns as written, in order (for keys and records).
    pub fn patterns(&self) -> Vec<String> {
        self.patterns
            .iter()
            .map(|pattern| pattern.to_string())
            .collect()
    }

    /// True when `path` (repository-relative, `/`-separated) is a test file.
    pub fn is_test(&self, path: &str) -> bool {
        self.patterns
            .iter()
            .any(|pattern| pattern.matches_with(path, MATCH))
    }

    /// Classifies `path`.
    pub fn classify(&self, path: &str) -> FileClass {
        if self.is_test(path) {
            FileClass::Test
        } else if is_python(path) {
            FileClass::Source
        } else {
            FileClass::Other
        }
    }
}

/// True for a Python source file.
pub fn is_python(path: &str) -> bool {
    path.ends_with(".py")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_cover_test_directories_at_any_depth() {
        let rules = TestFileRules::default();
        for path in [
            "tests/test_cache.py",
            "tests/__init__.py",
            "tests/helpers.py",
            "tests/data/input.json",
            "test/unit/helpers.py",
            "src/pkg/testing/fixtures.py",
            "pkg/tests/deep/more/check.py",
        ] {
            assert_eq!(rules.classify(path), FileClass::Test, "{path}");
        }
    }

    #[test]
    fn defaults_cover_test_file_names_anywhere() {
        let rules = TestFileRules::default();
        for path in [
            "test_top.py",
            "pkg/test_module.py",
            "pkg/module_test.py",
            "conftest.py",
            "src/conftest.py",
            "app/tests.py",
        ] {
            assert_eq!(rules.classify(path), FileClass::Test, "{path}");
        }
    }

    #[test]
    fn source_and_other_files_are_not_tests() {
        let rules = TestFileRules::default();
        assert_eq!(rules.classify("boltons/funcutils.py"), FileClass::Source);
        assert_eq!(rules.classify("pkg/testsuite.py"), FileClass::Source);
        assert_eq!(rules.classify("pkg/contest.py"), FileClass::Source);
        assert_eq!(rules.classify("pkg/latest/module.py"), FileClass::Source);
        assert_eq!(rules.classify("pkg/attestation.py"), FileClass::Source);
        assert_eq!(rules.classify("docs/testing.rst"), FileClass::Other);
        assert_eq!(rules.classify("README.md"), FileClass::Other);
    }

    #[test]
    fn star_does_not_cross_directories() {
        let rules = TestFileRules::new(&["test_*.py"]).unwrap();
        assert!(rules.is_test("test_a.py"));
        assert!(!rules.is_test("pkg/test_a.py"));
    }

    #[test]
    fn custom_patterns_replace_the_defaults() {
        let rules = TestFileRules::new(&["checks/**"]).unwrap();
        assert!(rules.is_test("checks/a.py"));
        assert!(!rules.is_test("tests/test_a.py"));
        assert_eq!(rules.patterns(), vec!["checks/**".to_string()]);
    }

    #[test]
    fn an_empty_list_means_the_defaults() {
        let rules = TestFileRules::new::<&str>(&[]).unwrap();
        assert_eq!(rules.patterns().len(), DEFAULT_TEST_PATTERNS.len());
    }

    #[test]
    fn a_bad_glob_names_itself() {
        let error = TestFileRules::new(&["tests/[abc"]).unwrap_err();
        assert!(error.to_string().contains("tests/[abc"), "{error}");
    }
}
