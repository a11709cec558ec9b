//! The child gate: a failure of the child's own tests sinks the commit only when it is the child's.
//! A test that already failed at the parent (a claim or not: tests without assertions are never
//! claims), a test the commit renamed (its file, or the function under a new name with the same
//! body), and a test that fails only on some runs are not the child's; a test the child added that
//! fails, and a test that passed at the parent and fails every time at the child, are.

use std::path::Path;

use claimflow::oracle::{Cause, ImportErrorPolicy, Judgement};
use claimflow::records::Label;
use git2::Oid;

use super::fixture::{Change, FixtureRepo};
use super::library::Case;
use super::procedure::{judge_in, render};
use super::python::environment;

const CORE: &str = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n";

/// Two claims, and a test without assertions that fails wherever a module is missing (a
/// type-checking or time-zone test broken by the machine, not by a commit).
const TEST_CORE: &str = r#"from pkg.core import add, mul


def test_add():
    assert add(1, 2) == 3


def test_mul():
    assert mul(2, 3) == 6


def test_environment_check():
    import not_installed_module
    not_installed_module.check(add)
"#;

/// A test file of one failing test without assertions.
const TEST_CHECKS: &str = r#"from pkg.core import add


def test_type_check():
    add(1)
"#;

/// Fails at run 0 (`PYTHONHASHSEED=0`), passes at run 1: a test that fails one run in two.
const FLAKY_TEST: &str = r#"

def test_sometimes():
    import os
    assert int(os.environ["PYTHONHASHSEED"]) % 2 == 1
"#;

struct Gate {
    repo: FixtureRepo,
    base: Oid,
}

impl Gate {
    fn create(dir: &Path) -> Self {
        let mut repo = FixtureRepo::init(dir);
        let base = repo.commit(
            None,
            "A library whose suite has two failing tests without assertions",
            &[
                Change::Write("pkg/__init__.py", ""),
                Change::Write("pkg/core.py", CORE),
                Change::Write("tests/test_core.py", TEST_CORE),
                Change::Write("tests/test_checks.py", TEST_CHECKS),
            ],
        );
        Gate { repo, base }
    }

    fn case(&mut self, message: &str, changes: &[Change]) -> Case {
        let commit = self.repo.commit(Some(self.base), message, changes);
        Case {
            parent: self.base,
            commit,
        }
    }

    fn judge(&self, dir: &Path, case: Case) -> Vec<Judgement> {
        judge_in(
            &self.repo.repository,
            &environment(),
            dir,
            case,
            &[
                "tests/test_core.py::test_add",
                "tests/test_core.py::test_mul",
            ],
            3,
            ImportErrorPolicy::Discard,
        )
    }
}

fn setup() -> (tempfile::TempDir, Gate) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let gate = Gate::create(&dir.path().join("repo"));
    (dir, gate)
}

#[test]
fn tests_that_already_failed_at_the_parent_do_not_make_the_child_broken() {
    let (dir, mut gate) = setup();
    // The commit touches both test files; both still hold a test that failed at the parent.
    let case = gate.case(
        "Document add, comment the checks",
        &[
            Change::Write("pkg/core.py", &format!("# Arithmetic.\n{CORE}")),
            Change::Write("tests/test_core.py", &format!("# Core.\n{TEST_CORE}")),
            Change::Write("tests/test_checks.py", &format!("# Checks.\n{TEST_CHECKS}")),
        ],
    );
    insta::assert_snapshot!(render(&gate.judge(dir.path(), case)));
}

#[test]
fn renamed_tests_that_already_failed_do_not_make_the_child_broken() {
    let (dir, mut gate) = setup();
    // git renames the checks' file; the environment check keeps its body under a new name.
    let case = gate.case(
        "Rename the checks",
        &[
            Change::Write("pkg/core.py", &format!("# Arithmetic.\n{CORE}")),
            Change::Write(
                "tests/test_core.py",
                &TEST_CORE.replace("test_environment_check", "test_environment_is_checked"),
            ),
            Change::Remove("tests/test_checks.py"),
            Change::Write("tests/test_type_checks.py", TEST_CHECKS),
        ],
    );
    insta::assert_snapshot!(render(&gate.judge(dir.path(), case)));
}

/// Regression (arrow 2b3dfe42b4, a suite moved from nose-era `tests/*_tests.py` to pytest's
/// `tests/test_*.py`, classes renamed): a test that already failed at the parent, moved by the
/// commit to a new file git does not see as a rename and into a class, was called new, and the
/// child broken (387 claims). A failing test is now also looked up, by its function name and
/// parameters, in the test files the commit deleted.
#[test]
fn a_test_moved_from_a_deleted_file_that_already_failed_does_not_make_the_child_broken() {
    let (dir, mut gate) = setup();
    let moved = "import unittest\n\nfrom pkg.core import add, mul\n\n\nclass TestChecks(unittest.TestCase):\n    \
                 \"\"\"The checks, reorganised as a class with more of them.\"\"\"\n\n    \
                 def test_type_check(self):\n        add(1)\n\n    \
                 def test_mul_is_commutative(self):\n        self.assertEqual(mul(2, 3), mul(3, 2))\n\n    \
                 def test_add_is_commutative(self):\n        self.assertEqual(add(2, 3), add(3, 2))\n";
    let case = gate.case(
        "Reorganise the checks",
        &[
            Change::Write("pkg/core.py", &format!("# Arithmetic.\n{CORE}")),
            Change::Remove("tests/test_checks.py"),
            Change::Write("tests/test_reorganised.py", moved),
        ],
    );
    let rendered = render(&gate.judge(dir.path(), case));
    let held = "tests/test_core.py::test_add\n  label: Held\n  cause: None\n  reason: -\n  parent: PPP\n  \
                child: PPP\ntests/test_core.py::test_mul\n  label: Held\n  cause: None\n  reason: -\n  \
                parent: PPP\n  child: PPP";
    assert_eq!(rendered.trim_end(), held, "{rendered}");
}

#[test]
fn a_failing_test_the_child_adds_makes_the_child_broken() {
    let (dir, mut gate) = setup();
    // The new file is only in the diff: the claims name no test of it.
    let case = gate.case(
        "Document add, with a new test that expects too much",
        &[
            Change::Write("pkg/core.py", &format!("# Arithmetic.\n{CORE}")),
            Change::Write(
                "tests/test_more.py",
                "from pkg.core import add\n\n\ndef test_add_negative():\n    assert add(-1, 1) == 1\n",
            ),
        ],
    );
    insta::assert_snapshot!(render(&gate.judge(dir.path(), case)));
}

/// The branch of the merge tests below: `add` counts from one, its test updated, and a new test
/// that fails at the branch's own tip.
const FROM_ONE_TEST_MORE: &str =
    "from pkg.core import add\n\n\ndef test_add_zero():\n    assert add(0, 0) == 0\n";

impl Gate {
    /// A mainline commit and a branch (`add` counts from one, with `extra` files), both on the
    /// base; returns the mainline commit and the merge of the branch into it, whose tree is the
    /// branch's files over the mainline, plus `in_merge`, written by the merge itself.
    fn merge_of_a_branch(&mut self, extra: &[Change], in_merge: &[Change]) -> Case {
        let from_one = CORE.replace("return a + b", "return a + b + 1");
        let test_core = TEST_CORE.replace("add(1, 2) == 3", "add(1, 2) == 4");
        let mut branch_changes = vec![
            Change::Write("pkg/core.py", &from_one),
            Change::Write("tests/test_core.py", &test_core),
        ];
        branch_changes.extend_from_slice(extra);
        let branch = self
            .repo
            .commit(Some(self.base), "add counts from one", &branch_changes);
        let mainline = self.repo.commit(
            Some(self.base),
            "Document the package",
            &[Change::Write("pkg/__init__.py", "# Arithmetic.\n")],
        );
        branch_changes.extend_from_slice(in_merge);
        let merge = self.repo.merge(
            &[mainline, branch],
            "Merge branch 'from-one'",
            &branch_changes,
        );
        Case {
            parent: mainline,
            commit: merge,
        }
    }
}

/// Regression (marshmallow 8237781990, "Merge branch 'deserialization-and-refactor' into dev",
/// 183 claims discarded): the merge's own tests failed only where the merged branch's tip already
/// failed them, the same way (four tests of its new `tests/test_serializer.py`), and the gate,
/// which looked failures up at the first parent alone, called the merge broken. A failure the
/// merge shares with another of its parents came in with that parent: the merge did not cause it.
#[test]
fn a_failure_a_merge_brings_in_from_its_other_parent_does_not_make_the_merge_broken() {
    let (dir, mut gate) = setup();
    let case = gate.merge_of_a_branch(
        &[Change::Write("tests/test_more.py", FROM_ONE_TEST_MORE)],
        &[],
    );
    let judgements = gate.judge(dir.path(), case);
    let rendered = render(&judgements);
    let labels: Vec<(&str, Label, Option<Cause>)> = judgements
        .iter()
        .map(|judgement| {
            let node = judgement
                .truth
                .claim
                .split_once("::")
                .map_or("", |(_, node)| node);
            (node, judgement.truth.label, judgement.cause)
        })
        .collect();
    assert_eq!(
        labels,
        [
            ("tests/test_core.py::test_add", Label::Flipped, None),
            ("tests/test_core.py::test_mul", Label::Held, None),
        ],
        "{rendered}"
    );
}

/// A failure that neither parent has, written by the merge itself (the marshmallow a8f1024206
/// merge left a test calling a helper whose import the other side had removed), is the merge's.
#[test]
fn a_failure_the_merge_itself_introduces_makes_the_merge_broken() {
    let (dir, mut gate) = setup();
    let case = gate.merge_of_a_branch(
        &[],
        &[Change::Write("tests/test_more.py", FROM_ONE_TEST_MORE)],
    );
    let judgements = gate.judge(dir.path(), case);
    let rendered = render(&judgements);
    assert_eq!(judgements.len(), 2, "{rendered}");
    for judgement in &judgements {
        assert_eq!(judgement.cause, Some(Cause::BrokenChild), "{rendered}");
        assert!(
            judgement
                .truth
                .reason
                .as_deref()
                .is_some_and(|reason| reason.contains("tests/test_more.py::test_add_zero fails")),
            "{rendered}"
        );
    }
}

#[test]
fn a_child_test_that_fails_only_on_some_runs_does_not_make_the_child_broken() {
    let (dir, mut gate) = setup();
    let case = gate.case(
        "add counts from one; a test that depends on the hash seed",
        &[
            Change::Write(
                "pkg/core.py",
                &CORE.replace("return a + b", "return a + b + 1"),
            ),
            Change::Write(
                "tests/test_core.py",
                &format!(
                    "{}{FLAKY_TEST}",
                    TEST_CORE.replace("add(1, 2) == 3", "add(1, 2) == 4")
                ),
            ),
        ],
    );
    insta::assert_snapshot!(render(&gate.judge(dir.path(), case)));
}

#[test]
fn a_broken_child_names_its_flaky_tests_apart() {
    let (dir, mut gate) = setup();
    let case = gate.case(
        "Break mul; a test that depends on the hash seed",
        &[
            Change::Write(
                "pkg/core.py",
                &CORE.replace("return a * b", "return a * b + 1"),
            ),
            Change::Write("tests/test_core.py", &format!("{TEST_CORE}{FLAKY_TEST}")),
        ],
    );
    insta::assert_snapshot!(render(&gate.judge(dir.path(), case)));
}

#[test]
fn a_package_that_reads_its_own_installed_version_is_not_a_broken_child() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut repo = FixtureRepo::init(&dir.path().join("repo"));
    let base = repo.commit(
        None,
        "A packaged library",
        &[
            Change::Write(
                "pyproject.toml",
                "[project]\nname = \"demo-pkg\"\nrequires-python = \">=3.8\"\n",
            ),
            Change::Write("pkg/__init__.py", ""),
            Change::Write("pkg/core.py", CORE),
            Change::Write("tests/test_core.py", TEST_CORE),
        ],
    );
    let commit = repo.commit(
        Some(base),
        "Tell the version from the installed metadata",
        &[
            Change::Write(
                "pkg/__init__.py",
                "from importlib.metadata import version\n\n__version__ = version(\"demo-pkg\")\n",
            ),
            Change::Write(
                "tests/test_core.py",
                &format!(
                    "import pkg\n{TEST_CORE}\n\ndef test_version():\n    assert pkg.__version__\n"
                ),
            ),
        ],
    );
    let gate = Gate { repo, base };
    let case = Case {
        parent: base,
        commit,
    };
    insta::assert_snapshot!(render(&gate.judge(dir.path(), case)));
}

/// A library that finds its plugins through entry points it declares itself (stevedore's own
/// tests load `stevedore.test.extension` plugins from its `pyproject.toml`).
const PLUGINS_CORE: &str = r#"from importlib.metadata import entry_points


def load(name):
    found = {point.name: point for point in entry_points(group="demo.plugins")}
    return found[name].load()
"#;

const TEST_PLUGINS: &str = r#"from pkg.core import load


def test_double():
    assert load("double")(2) == 4


def test_triple():
    assert load("triple")(2) == 6
"#;

/// A fresh repository of a `base` commit and a child of it, with the `claims` judged at the child
/// (3 runs), rendered.
fn judge_history(
    base_message: &str,
    base_changes: &[Change],
    message: &str,
    changes: &[Change],
    claims: &[&str],
) -> String {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut repo = FixtureRepo::init(&dir.path().join("repo"));
    let base = repo.commit(None, base_message, base_changes);
    let commit = repo.commit(Some(base), message, changes);
    let judgements = judge_in(
        &repo.repository,
        &environment(),
        dir.path(),
        Case {
            parent: base,
            commit,
        },
        claims,
        3,
        ImportErrorPolicy::Discard,
    );
    render(&judgements)
}

#[test]
fn a_projects_own_entry_points_are_seen_by_its_tests() {
    let rendered = judge_history(
        "A library with plugins it declares itself",
        &[
            Change::Write(
                "pyproject.toml",
                "[project]\nname = \"demo-plugins\"\nrequires-python = \">=3.10\"\n\n\
                 [project.entry-points.\"demo.plugins\"]\n\
                 double = \"pkg.plugins:double\"\ntriple = \"pkg.plugins:triple\"\n",
            ),
            Change::Write("pkg/__init__.py", ""),
            Change::Write("pkg/core.py", PLUGINS_CORE),
            Change::Write(
                "pkg/plugins.py",
                "def double(x):\n    return 2 * x\n\n\ndef triple(x):\n    return 3 * x\n",
            ),
            Change::Write("tests/test_plugins.py", TEST_PLUGINS),
        ],
        "Triple repeats",
        &[
            Change::Write(
                "pkg/plugins.py",
                "def double(x):\n    return 2 * x\n\n\ndef triple(x):\n    return [x] * 3\n",
            ),
            Change::Write(
                "tests/test_plugins.py",
                &TEST_PLUGINS.replace("(2) == 6", "(2) == [2, 2, 2]"),
            ),
        ],
        &[
            "tests/test_plugins.py::test_double",
            "tests/test_plugins.py::test_triple",
        ],
    );
    assert_eq!(
        rendered,
        "tests/test_plugins.py::test_double\n  label: Held\n  cause: None\n  reason: -\n  \
         parent: PPP\n  child: PPP\n\
         tests/test_plugins.py::test_triple\n  label: Flipped\n  cause: None\n  \
         reason: failed 3 of 3 runs at the child: assertion\n  parent: PPP\n  child: FFF\n"
    );
}

/// A package whose version module its build writes (humanize's `src/humanize/_version.py`, from
/// hatch-vcs), imported by the package and by its tests.
const VERSIONED_TEST: &str = r#"from pkg._version import __version__, version_tuple
from pkg.core import add


def test_version():
    assert __version__ == "0.0.0" and version_tuple[:2] == (0, 0)


def test_add():
    assert add(1, 2) == 3
"#;

/// Regression (humanize 2ddb5903cd, excluded): its tests import `humanize._version`, which
/// hatch-vcs writes when the package is built; claimflow imports the package from its checkout
/// and never builds it, so nothing collected. The file is now written into every checkout the
/// way the build backend writes it.
#[test]
fn a_version_file_the_build_backend_writes_is_there_for_the_tests() {
    let rendered = judge_history(
        "A library versioned by hatch-vcs",
        &[
            Change::Write(
                "pyproject.toml",
                "[build-system]\nrequires = [\"hatch-vcs\", \"hatchling\"]\n\
                 build-backend = \"hatchling.build\"\n\n[project]\nname = \"demo-versioned\"\n\
                 dynamic = [\"version\"]\n\n[tool.hatch.version]\nsource = \"vcs\"\n\n\
                 [tool.hatch.build.hooks.vcs]\nversion-file = \"pkg/_version.py\"\n",
            ),
            Change::Write("pkg/__init__.py", "from ._version import __version__\n"),
            Change::Write("pkg/core.py", CORE),
            Change::Write("tests/test_core.py", VERSIONED_TEST),
        ],
        "Add counts from one",
        &[
            Change::Write("pkg/core.py", &CORE.replace("a + b", "a + b + 1")),
            Change::Write(
                "tests/test_core.py",
                &VERSIONED_TEST.replace("add(1, 2) == 3", "add(1, 2) == 4"),
            ),
        ],
        &[
            "tests/test_core.py::test_version",
            "tests/test_core.py::test_add",
        ],
    );
    assert_eq!(
        rendered,
        "tests/test_core.py::test_version\n  label: Held\n  cause: None\n  reason: -\n  \
         parent: PPP\n  child: PPP\n\
         tests/test_core.py::test_add\n  label: Flipped\n  cause: None\n  \
         reason: failed 3 of 3 runs at the child: assertion\n  parent: PPP\n  child: FFF\n"
    );
}

/// Each claim's node id (without its file) and label, and the first discard reason.
fn labels(judgements: &[Judgement]) -> (Vec<(String, Label)>, Option<String>) {
    let labels = judgements
        .iter()
        .map(|judgement| {
            let node = judgement.truth.claim.rsplit("::").next().unwrap();
            (node.to_string(), judgement.truth.label)
        })
        .collect();
    let reason = judgements
        .iter()
        .find_map(|judgement| judgement.truth.reason.clone());
    (labels, reason)
}

/// Seen on a real repository: marshmallow a8f1024206 merged a test calling `assert_raises` into a
/// file that no longer imported it, and all 134 claims of the commit were discarded as
/// `broken_child`. The test's own code fails whatever the library does: the claims are labelled.
#[test]
fn a_test_that_uses_a_name_its_own_file_never_defines_does_not_make_the_child_broken() {
    let (dir, mut gate) = setup();
    let case = gate.case(
        "mul adds one, its test updated, with a new test that forgot an import",
        &[
            Change::Write(
                "pkg/core.py",
                &CORE.replace("return a * b", "return a * b + 1"),
            ),
            Change::Write(
                "tests/test_core.py",
                &TEST_CORE.replace("mul(2, 3) == 6", "mul(2, 3) == 7"),
            ),
            Change::Write(
                "tests/test_more.py",
                "from pkg.core import add\n\n\ndef test_add_rejects_one_argument():\n    \
                 assert_raises(TypeError, add, 1)\n",
            ),
        ],
    );
    let (labels, reason) = labels(&gate.judge(dir.path(), case));
    assert_eq!(
        labels,
        [
            ("test_add".to_string(), Label::Held),
            ("test_mul".to_string(), Label::Flipped)
        ],
        "{reason:?}"
    );
}

/// Judges a commit of `changes` and asserts every claim is discarded for the child's failure
/// `named` in the reason.
fn assert_broken_by(message: &str, changes: &[Change], named: &str) {
    let (dir, mut gate) = setup();
    let case = gate.case(message, changes);
    let (labels, reason) = labels(&gate.judge(dir.path(), case));
    assert!(
        labels.iter().all(|(_, label)| *label == Label::Discarded),
        "{labels:?}"
    );
    let reason = reason.unwrap();
    assert!(reason.contains(named), "{reason}");
}

/// The same `NameError` raised in the library's code is the child's: the child is broken.
#[test]
fn a_name_error_the_library_raises_makes_the_child_broken() {
    assert_broken_by(
        "Add sub, misspelled, with its test",
        &[
            Change::Write(
                "pkg/core.py",
                &format!("{CORE}\n\ndef sub(a, b):\n    return a - bb\n"),
            ),
            Change::Write(
                "tests/test_more.py",
                "from pkg.core import sub\n\n\ndef test_sub():\n    assert sub(3, 2) == 1\n",
            ),
        ],
        "tests/test_more.py::test_sub fails (NameError)",
    );
}

/// A test file that imports the library with `*` sees a name the child removed as a `NameError`
/// in its own code: that failure is the child's.
#[test]
fn a_name_error_behind_a_star_import_makes_the_child_broken() {
    assert_broken_by(
        "Rename mul to times; a new test still calls mul",
        &[
            Change::Write("pkg/core.py", &CORE.replace("def mul(", "def times(")),
            Change::Write(
                "tests/test_more.py",
                "from pkg.core import *\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
            ),
        ],
        "tests/test_more.py::test_mul fails (NameError)",
    );
}
