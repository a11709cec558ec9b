//! Sub-tests end to end: the oracle runs tests made of sub-tests (unittest's `self.subTest`, and
//! pytest-subtests' `subtests` fixture) at a parent and a child, under plain pytest 8 and with
//! pytest-subtests installed. Each test is one claim whatever its sub-tests: flipped when a sub-test
//! fails at the child, with the sub-test named in the reason; held when all pass; flaky when a
//! sub-test fails in some runs only.

use std::path::Path;

use claimflow::oracle::{ImportErrorPolicy, Judgement};
use claimflow::python::Environment;

use super::fixture::{Change, FixtureRepo};
use super::library::Case;
use super::procedure::{judge_in, render};
use super::python::{environment, environment_with_subtests};

const VALUES: &str = r#"import os


def double(x):
    return 2 * x


def halve(x):
    return x // 2


def triple(x):
    return 3 * x
"#;

const TEST_VALUES: &str = r#"import unittest

from pkg.values import double, halve, triple


class TestValues(unittest.TestCase):
    def test_doubles(self):
        for x in (1, 2, 3):
            with self.subTest(x=x):
                self.assertEqual(double(x), 2 * x)

    def test_halves(self):
        for x in (2, 4, 6):
            with self.subTest("even", x=x):
                self.assertEqual(halve(x) * 2, x)

    def test_triples(self):
        for x in (1, 2):
            with self.subTest(x=x):
                self.assertEqual(triple(x), 3 * x)
"#;

const TEST_FIXTURE: &str = r#"from pkg.values import double, halve


def test_doubles(subtests):
    for x in (1, 2, 3):
        with subtests.test(msg="double", x=x):
            assert double(x) == 2 * x


def test_halves(subtests):
    for x in (2, 4, 6):
        with subtests.test(x=x):
            assert halve(x) * 2 == x
"#;

/// A library whose child breaks `double` for 2 only and makes `triple` depend on the hash seed for
/// 2 only; the child's own tests are updated to its behaviour, as a CI-gated commit's are.
fn library(dir: &Path) -> (FixtureRepo, Case) {
    let mut repo = FixtureRepo::init(dir);
    let parent = repo.commit(
        None,
        "Values with sub-tests",
        &[
            Change::Write("pkg/__init__.py", ""),
            Change::Write("pkg/values.py", VALUES),
            Change::Write("tests/test_values.py", TEST_VALUES),
            Change::Write("tests/test_fixture.py", TEST_FIXTURE),
        ],
    );
    let values = VALUES
        .replace("return 2 * x", "return 5 if x == 2 else 2 * x")
        .replace(
            "return 3 * x",
            "odd = int(os.environ.get(\"PYTHONHASHSEED\", \"0\")) % 2\n    return 3 * x + (odd if x == 2 else 0)",
        );
    let commit = repo.commit(
        Some(parent),
        "double(2) is five",
        &[
            Change::Write("pkg/values.py", &values),
            Change::Write(
                "tests/test_values.py",
                &TEST_VALUES.replace(
                    "self.assertEqual(double(x), 2 * x)",
                    "self.assertEqual(double(x), 5 if x == 2 else 2 * x)",
                ),
            ),
            Change::Write(
                "tests/test_fixture.py",
                &TEST_FIXTURE.replace(
                    "assert double(x) == 2 * x",
                    "assert double(x) == (5 if x == 2 else 2 * x)",
                ),
            ),
        ],
    );
    (repo, Case { parent, commit })
}

fn judge(
    repo: &FixtureRepo,
    workdir: &Path,
    case: Case,
    nodes: &[&str],
    environment: &Environment,
) -> Vec<Judgement> {
    let runs = 4;
    judge_in(
        &repo.repository,
        environment,
        workdir,
        case,
        nodes,
        runs,
        ImportErrorPolicy::Discard,
    )
}

/// Plain pytest 8 knows nothing of sub-tests: the first failing one ends the test, and the result
/// plugin names it.
#[test]
fn unittest_subtests_under_plain_pytest_are_one_claim_each() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (repo, case) = library(&dir.path().join("repo"));
    let judgements = judge(
        &repo,
        dir.path(),
        case,
        &[
            "tests/test_values.py::TestValues::test_doubles",
            "tests/test_values.py::TestValues::test_halves",
            "tests/test_values.py::TestValues::test_triples",
        ],
        &environment(),
    );
    insta::assert_snapshot!(render(&judgements));
}

/// pytest-subtests reports every sub-test; they are grouped under their test all the same, for
/// unittest's `subTest` and for the `subtests` fixture.
#[test]
fn pytest_subtests_reports_are_grouped_into_one_claim_each() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (repo, case) = library(&dir.path().join("repo"));
    let judgements = judge(
        &repo,
        dir.path(),
        case,
        &[
            "tests/test_values.py::TestValues::test_doubles",
            "tests/test_values.py::TestValues::test_halves",
            "tests/test_values.py::TestValues::test_triples",
            "tests/test_fixture.py::test_doubles",
            "tests/test_fixture.py::test_halves",
        ],
        &environment_with_subtests(),
    );
    insta::assert_snapshot!(render(&judgements));
}
