//! Environments and claim mining against real interpreters. Environments are built once under the
//! claimflow cache (`$CLAIMFLOW_CACHE_DIR` or `~/.cache/claimflow`) and shared by every test that
//! asks for the same requirements, so a second run is fast.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use claimflow::cache::Store;
use claimflow::engine::{
    ItemOutput, ItemPlan, ItemResult, StepContext, StepKind, StepOutput, Upstream,
};
use claimflow::pipeline::{Pipeline, RepoSource, RepoSpec, StepSpec};
use claimflow::python::{self, ClaimSummary, EnvironmentRequest};
use claimflow::records::{ClaimRecord, CommitRecord, ExclusionKind, ExclusionRecord, MinedClaim};
use claimflow::steps::MineClaims;
use serde_json::json;

use crate::common::git::FixtureRepo;

fn interpreter(minor: &str) -> python::Interpreter {
    python::installed_interpreters()
        .iter()
        .find(|interpreter| interpreter.version.minor_string() == minor)
        .cloned()
        .unwrap_or_else(|| panic!("python {minor} is installed on claimflow's test machines"))
}

#[test]
fn an_environment_is_content_addressed_and_reused() {
    let worktree = tempfile::tempdir().unwrap();
    std::fs::write(worktree.path().join("requirements-test.txt"), "-e .\nsix\n").unwrap();
    let request = EnvironmentRequest::for_commit(&interpreter("3.11"), worktree.path(), &[]);
    assert_eq!(python::interpreter_for("3.11.7"), Some(interpreter("3.11")));
    assert_eq!(request.specs(), ["pytest>=8,<9", "six"]);
    let environment = python::ensure_environment(&request, &Default::default()).unwrap();
    assert_eq!(environment.interpreter, "3.11.7");
    assert!(
        environment.pytest.starts_with("8."),
        "{}",
        environment.pytest
    );
    assert!(environment.has_distribution("six"));
    assert!(environment.python.is_file());
    assert_eq!(
        environment.root,
        python::cache_dir()
            .join("envs")
            .join(request.digest().hex())
    );
    let fingerprint = environment.fingerprint();
    assert_eq!(fingerprint["python"], "3.11.7");
    assert_eq!(fingerprint["environment"], request.digest().hex());
    let again = python::ensure_environment(&request, &Default::default()).unwrap();
    assert_eq!(again, environment);
    let for_claim =
        python::environment_for_interpreter("3.11.7", worktree.path(), &[], &Default::default())
            .unwrap();
    assert_eq!(for_claim, environment);
    let missing =
        python::environment_for_interpreter("3.1.0", worktree.path(), &[], &Default::default())
            .unwrap_err();
    assert_eq!(
        missing.to_string(),
        "find python 3.1.0: it is not installed here"
    );
}

#[test]
fn a_declared_requirement_that_will_not_install_is_dropped_and_recorded() {
    let worktree = tempfile::tempdir().unwrap();
    std::fs::write(
        worktree.path().join("requirements-test.txt"),
        "six\nclaimflow-no-such-distribution==9.9\n",
    )
    .unwrap();
    let request = EnvironmentRequest::for_commit(&interpreter("3.11"), worktree.path(), &[]);
    let environment = python::ensure_environment(&request, &Default::default()).unwrap();
    let dropped: Vec<&str> = environment
        .dropped
        .iter()
        .map(|d| d.spec.as_str())
        .collect();
    assert_eq!(dropped, ["claimflow-no-such-distribution==9.9"]);
    assert_eq!(environment.dropped[0].source, "requirements-test.txt");
    assert!(environment.has_distribution("six"));

    let pinned = vec!["claimflow-no-such-distribution==9.9".to_string()];
    let request = EnvironmentRequest::for_commit(&interpreter("3.11"), worktree.path(), &pinned);
    let error = python::ensure_environment(&request, &Default::default()).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("install `claimflow-no-such-distribution` for python 3.11.7: "),
        "a repository's pin is never dropped: {error}"
    );
}

const DEMO: &str = "def add(a, b):\n    return a + b\n";
const DEMO_V2: &str = "def add(a, b):\n    return a + b + 0\n";
const DEMO_V2_SUB: &str =
    "def add(a, b):\n    return a + b + 0\n\n\ndef sub(a, b):\n    return a - b\n";

const PYPROJECT: &str = "[project]\nname = \"demo\"\nrequires-python = \">=3.8\"\n\n\
[project.optional-dependencies]\ntest = [\"six\"]\n";

const HELPERS: &str = "\
from demo import add


class AdditionMixin(object):
    def test_add_mixin(self):
        self.assertEqual(add(1, 2), 3)
        with self.assertRaises(TypeError):
            add(1, None)
";

const TEST_DEMO: &str = "\
import unittest

import pytest

from demo import add
from tests.helpers import AdditionMixin


@pytest.fixture(name=\"cr\")
def calculator_result():
    return add(2, 2)


def test_plain():
    assert add(1, 1) == 2


def test_fixture(cr, tmp_path):
    assert cr == 4, \"two and two\"


@pytest.mark.parametrize(\"a,b\", [(1, 2), (3, 4)])
def test_param(a, b):
    for _ in range(2):
        assert add(a, b) == a + b


def test_no_assert():
    add(1, 2)


def test_raises():
    with pytest.raises(TypeError):
        add(1, None)


class TestAddition(AdditionMixin, unittest.TestCase):
    pass
";

const TEST_BROKEN: &str =
    "import nosuchmodule_claimflow\n\n\ndef test_it():\n    assert nosuchmodule_claimflow\n";

/// Three commits after the first: one to mine, one whose parent cannot be collected, and one
/// whose touched test file does not exist at its parent.
fn history() -> FixtureRepo {
    let mut repo = FixtureRepo::new();
    repo.commit(
        "Initial demo",
        &[
            ("pyproject.toml", Some(PYPROJECT)),
            // Options that would break collection if the repository's addopts were honoured.
            (
                "setup.cfg",
                Some("[tool:pytest]\naddopts = --cov=demo -x -n 4\n"),
            ),
            ("demo/__init__.py", Some(DEMO)),
            ("tests/__init__.py", Some("")),
            ("tests/helpers.py", Some(HELPERS)),
            ("tests/test_demo.py", Some(TEST_DEMO)),
        ],
    )
    .commit(
        "Change add",
        &[
            ("demo/__init__.py", Some(DEMO_V2)),
            (
                "tests/test_demo.py",
                Some(&TEST_DEMO.replace("== 2\n", "== 2 + 0\n")),
            ),
            ("tests/test_broken.py", Some(TEST_BROKEN)),
        ],
    )
    .commit(
        "Fix the broken test",
        &[
            ("tests/test_broken.py", Some("def test_it():\n    pass\n")),
            ("demo/__init__.py", Some(DEMO_V2_SUB)),
        ],
    );
    repo
}

fn commit_record(repo: &FixtureRepo, index: usize, test_files: &[&str]) -> CommitRecord {
    let commits = repo.commits();
    serde_json::from_value(json!({
        "repo": "demo",
        "commit": commits[index].to_string(),
        "parent": commits[index - 1].to_string(),
        "score": 1.0,
        "subject": format!("commit {index}"),
        "test_files": test_files,
        "source_files": ["demo/__init__.py"],
    }))
    .unwrap()
}

fn pipeline(root: &Path, repo: RepoSpec) -> Pipeline {
    Pipeline {
        file: "pipeline.yaml".into(),
        root: root.to_path_buf(),
        version: 1,
        name: "test".into(),
        workdir: root.join(".claimflow"),
        results: root.join("results"),
        repos: vec![repo],
        models: BTreeMap::new(),
        executor: Default::default(),
        steps: vec![
            StepSpec::parsed(
                "claims",
                "mine-claims",
                &["rank"],
                json!({}),
                &claimflow::steps::Registry::builtin(),
            )
            .unwrap(),
        ],
    }
}

fn repo_spec(path: PathBuf, python: &[&str]) -> RepoSpec {
    RepoSpec {
        name: "demo".into(),
        source: RepoSource::Path(path),
        branch: "main".into(),
        split: None,
        python: python.iter().map(|version| version.to_string()).collect(),
        test_patterns: None,
        dependencies: Vec::new(),
        merges: None,
        releases: claimflow::pipeline::Releases::Newest,
    }
}

/// What the step published.
struct Published {
    items: Vec<ItemResult>,
    claims: Vec<MinedClaim>,
    excluded: Vec<ExclusionRecord>,
    summaries: Vec<ClaimSummary>,
    claims_text: String,
}

/// Plans, computes and publishes `mine-claims` like the engine does, over hand-made commit records.
fn mine(pipeline: &Pipeline, records: Vec<CommitRecord>) -> Published {
    let store = Store::open(pipeline.workdir.join("cache")).unwrap();
    let ctx = StepContext::new(pipeline, &pipeline.steps[0], &store);
    let ranked = ItemOutput::records(&records);
    let ranked = StepOutput {
        step: "rank".into(),
        kind: "rank-commits".into(),
        role: claimflow::engine::Role::Commits,
        items: vec![ItemResult {
            plan: ItemPlan::new("demo"),
            digest: store.put_json(&ranked).unwrap(),
            output: Arc::new(ranked),
            cached: false,
            in_place: false,
        }],
        reduced: None,
    };
    let upstream = Upstream {
        steps: BTreeMap::from([("rank".to_string(), Arc::new(ranked))]),
    };
    let items: Vec<ItemResult> = MineClaims
        .items(&ctx, &upstream)
        .unwrap()
        .into_iter()
        .map(|plan| {
            let output = MineClaims.run(&ctx, &plan, &upstream).unwrap();
            ItemResult {
                digest: store.put_json(&output).unwrap(),
                plan,
                output: Arc::new(output),
                cached: false,
                in_place: false,
            }
        })
        .collect();
    MineClaims.publish(&ctx, &items).unwrap();
    let read = |name: &str| std::fs::read_to_string(pipeline.results.join(name)).unwrap();
    let lines = |text: String| -> Vec<serde_json::Value> {
        text.lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    };
    let decode = |values: Vec<serde_json::Value>| values.into_iter();
    Published {
        items,
        claims: decode(lines(read("claims.jsonl")))
            .map(|v| serde_json::from_value(v).unwrap())
            .collect(),
        excluded: decode(lines(read("excluded.jsonl")))
            .map(|v| serde_json::from_value(v).unwrap())
            .collect(),
        summaries: decode(lines(read("claims-summary.jsonl")))
            .map(|v| serde_json::from_value(v).unwrap())
            .collect(),
        claims_text: read("claims.jsonl"),
    }
}

/// The parts of a claim a person checks, with commit ids shortened.
fn claim_view(claim: &MinedClaim) -> serde_json::Value {
    json!({
        "id": claim.id,
        "node": claim.node,
        "assertions": claim.assertions,
        "fixtures": claim.fixtures,
        "fixture_functions": claim.fixture_functions,
        "class": claim.class,
        "function": claim.function,
        "owner": claim.owner,
        "file": claim.file,
        "source_file": claim.source_file,
        "origin": claim.origin,
        "interpreter": claim.interpreter,
    })
}

#[test]
fn mines_claims_at_the_parent_and_excludes_what_cannot_be_collected() {
    let repo = history();
    let root = tempfile::tempdir().unwrap();
    let pipeline = pipeline(root.path(), repo_spec(repo.path_buf(), &["3.11"]));
    let records = vec![
        commit_record(
            &repo,
            1,
            &[
                "tests/helpers.py",
                "tests/test_broken.py",
                "tests/test_demo.py",
            ],
        ),
        commit_record(&repo, 2, &["tests/test_broken.py"]),
    ];
    let published = mine(&pipeline, records.clone());

    let ids: Vec<&str> = published
        .items
        .iter()
        .map(|item| item.plan.id.as_str())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(ids[0].starts_with("demo@") && ids[0].len() == "demo@".len() + 12);
    let plan = &published.items[0].plan;
    assert!(plan.tools["interpreters"].contains("3.11.7"));
    assert!(plan.tools.contains_key("collect_plugin"));
    assert!(plan.reads.contains_key("commit"));

    // The claims snapshot: ids, nodes, assertions, fixtures.
    let parent = records[0].parent.clone();
    let views: Vec<serde_json::Value> = published.claims.iter().map(claim_view).collect();
    insta::with_settings!({filters => vec![(parent.as_str(), "[parent]")]}, {
        insta::assert_json_snapshot!("mined_claims", views);
    });

    // An inherited test's source is the mixin's method text.
    let inherited = published
        .claims
        .iter()
        .find(|claim| claim.node.ends_with("TestAddition::test_add_mixin"))
        .unwrap();
    let mixin_method = HELPERS
        .split("class AdditionMixin(object):\n")
        .nth(1)
        .unwrap();
    assert_eq!(inherited.source, mixin_method);

    // Every line decodes as the contract record too.
    for line in published.claims_text.lines() {
        let claim: ClaimRecord = serde_json::from_str(line).unwrap();
        assert!(!claim.assertions.is_empty());
    }

    let summary = &published.summaries[0];
    assert_eq!(
        summary.without_assertions,
        ["tests/test_demo.py::test_no_assert"]
    );
    assert_eq!(
        summary.files,
        ["tests/test_demo.py"],
        "test_broken.py is added by the commit"
    );
    assert_eq!(summary.claims, published.claims.len());
    assert_eq!(summary.interpreter, "3.11.7");

    assert_eq!(published.excluded.len(), 1);
    let excluded = &published.excluded[0];
    assert_eq!(excluded.commit, records[1].commit);
    assert_eq!(excluded.kind, ExclusionKind::Collection);
    assert!(
        excluded.reason.contains("nosuchmodule_claimflow"),
        "the reason names the import that failed: {}",
        excluded.reason
    );
    assert_eq!(excluded.attempts.len(), 1, "{:?}", excluded.attempts);
    assert_eq!(excluded.attempts[0].interpreter, "3.11.7");
    assert!(
        !root
            .path()
            .join(".claimflow/worktrees")
            .read_dir()
            .unwrap()
            .any(|_| true)
    );
}

/// Regression: a commit that touched only a helper module lost the tests it defines, because the
/// test module inheriting them (`TestAddition` in `tests/test_demo.py`) was not touched.
#[test]
fn tests_inherited_from_a_touched_helper_are_mined_from_the_untouched_module() {
    let repo = history();
    let root = tempfile::tempdir().unwrap();
    let records = vec![commit_record(
        &repo,
        1,
        &["tests/helpers.py", "tests/test_broken.py"],
    )];
    let published = mine(
        &pipeline(root.path(), repo_spec(repo.path_buf(), &["3.11"])),
        records,
    );
    assert!(published.excluded.is_empty(), "{:?}", published.excluded);
    let claims: Vec<serde_json::Value> = published
        .claims
        .iter()
        .map(|claim| {
            json!({
                "node": claim.node,
                "origin": claim.origin,
                "file": claim.file,
                "source_file": claim.source_file,
                "owner": claim.owner,
            })
        })
        .collect();
    assert_eq!(
        claims,
        [json!({
            "node": "tests/test_demo.py::TestAddition::test_add_mixin",
            "origin": "inherited-from-touched-file",
            "file": "tests/test_demo.py",
            "source_file": "tests/helpers.py",
            "owner": "AdditionMixin",
        })],
        "only the test defined in the touched helper, none of test_demo.py's own"
    );
    let line: serde_json::Value =
        serde_json::from_str(published.claims_text.lines().next().unwrap()).unwrap();
    assert_eq!(line["origin"], "inherited-from-touched-file");
    let summary = &published.summaries[0];
    assert!(summary.files.is_empty(), "{:?}", summary.files);
    assert_eq!(summary.importers, ["tests/test_demo.py"]);
    assert_eq!(summary.collected, 1);
}

/// An untouched module collected only for what it inherits, which fails to collect for a reason of
/// its own, is left out; the touched module's claims are still mined.
#[test]
fn an_importer_that_fails_to_collect_does_not_cost_the_touched_modules_claims() {
    let mut repo = FixtureRepo::new();
    let other = "from tests.helpers import AdditionMixin\n\n\
                 raise RuntimeError(\"this module needs a display\")\n";
    repo.commit(
        "Initial demo",
        &[
            ("pyproject.toml", Some(PYPROJECT)),
            ("demo/__init__.py", Some(DEMO)),
            ("tests/__init__.py", Some("")),
            ("tests/helpers.py", Some(HELPERS)),
            ("tests/test_demo.py", Some(TEST_DEMO)),
            ("tests/test_other.py", Some(other)),
        ],
    )
    .commit(
        "Change add",
        &[
            ("demo/__init__.py", Some(DEMO_V2)),
            ("tests/helpers.py", Some(&format!("{HELPERS}\n# Shared.\n"))),
        ],
    );
    let root = tempfile::tempdir().unwrap();
    let published = mine(
        &pipeline(root.path(), repo_spec(repo.path_buf(), &["3.11"])),
        vec![commit_record(&repo, 1, &["tests/helpers.py"])],
    );
    assert!(published.excluded.is_empty(), "{:?}", published.excluded);
    let nodes: Vec<&str> = published.claims.iter().map(|c| c.node.as_str()).collect();
    assert_eq!(nodes, ["tests/test_demo.py::TestAddition::test_add_mixin"]);
    let summary = &published.summaries[0];
    assert_eq!(
        summary.importers,
        ["tests/test_demo.py"],
        "the failing one is left out"
    );
    let left_out: Vec<&str> = summary.left_out.iter().map(|a| a.error.as_str()).collect();
    assert_eq!(left_out.len(), 1, "{left_out:?}");
    assert!(
        left_out[0].starts_with("tests/test_other.py: ") && left_out[0].contains("RuntimeError"),
        "{left_out:?}"
    );
}

#[test]
fn a_commit_without_test_modules_or_interpreters_is_excluded_with_its_reason() {
    let repo = history();
    let root = tempfile::tempdir().unwrap();
    // test_broken.py is added by the commit: at the parent there is nothing to collect, and no
    // test module imports it.
    let records = vec![commit_record(&repo, 1, &["tests/test_broken.py"])];
    let published = mine(
        &pipeline(root.path(), repo_spec(repo.path_buf(), &["3.11"])),
        records.clone(),
    );
    assert!(published.claims.is_empty());
    assert_eq!(published.excluded[0].kind, ExclusionKind::NoTestModules);
    assert_eq!(
        published.excluded[0].reason,
        "none of the touched test files (tests/test_broken.py) is a test module at the parent or imported by one"
    );

    let root = tempfile::tempdir().unwrap();
    let published = mine(
        &pipeline(root.path(), repo_spec(repo.path_buf(), &["2.7"])),
        records,
    );
    assert_eq!(published.excluded[0].kind, ExclusionKind::NoInterpreter);
    assert!(
        published.excluded[0]
            .reason
            .contains(">=3.8 from pyproject.toml"),
        "{}",
        published.excluded[0].reason
    );
}

const TEST_PY2: &str = "\
import unittest


class TestOld(unittest.TestCase):
    def test_print(self):
        print 'old style'
        self.assertEqual(1 + 1, 2)
        assert 2 > 1, 'two'
";

/// Nothing declares the era; the test module's Python 2 syntax puts Python 2 first.
#[test]
fn python_2_tests_are_mined_under_python_2() {
    let mut repo = FixtureRepo::new();
    repo.commit(
        "Initial",
        &[
            (
                "setup.py",
                Some("from setuptools import setup\nsetup(name='old', tests_require=['six'])\n"),
            ),
            ("tests/test_old.py", Some(TEST_PY2)),
        ],
    )
    .commit(
        "Touch",
        &[("tests/test_old.py", Some(&TEST_PY2.replace("1 + 1", "2")))],
    );
    let root = tempfile::tempdir().unwrap();
    let records = vec![commit_record(&repo, 1, &["tests/test_old.py"])];
    let published = mine(
        &pipeline(root.path(), repo_spec(repo.path_buf(), &[])),
        records,
    );
    assert_eq!(published.excluded, []);
    assert_eq!(
        published.summaries[0].attempts,
        [],
        "python 2.7 was tried first"
    );
    let claim = &published.claims[0];
    assert_eq!(claim.node, "tests/test_old.py::TestOld::test_print");
    assert_eq!(
        claim.assertions,
        ["self.assertEqual(1 + 1, 2)", "assert 2 > 1, 'two'"]
    );
    assert_eq!(claim.interpreter, "2.7.18");
    assert!(claim.pytest.starts_with("4.6."), "{}", claim.pytest);
    assert_eq!(published.summaries[0].assertions_from_interpreter, 1);
}

/// A decorator as freezegun's `freeze_time` writes it: on Python 2, `functools.wraps` sets no
/// `__wrapped__`, so the function pytest holds is the wrapper.
const PY2_DECORATOR: &str = "\
import functools


def frozen(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        return function(*args, **kwargs)
    return wrapper
";

const TEST_PY2_DECORATED: &str = "\
import unittest

from tests.helpers import frozen


@frozen
def test_frozen():
    print 'frozen'
    assert 1 + 1 == 2


class TestFrozen(unittest.TestCase):
    @frozen
    def test_method(self):
        self.assertEqual(2 * 2, 4)
";

/// The claims' source is the tests' own, never the decorator's wrapper (which asserts nothing).
#[test]
fn python_2_decorated_tests_are_mined_from_their_own_source() {
    let mut repo = FixtureRepo::new();
    repo.commit(
        "Initial",
        &[
            (
                "setup.py",
                Some("from setuptools import setup\nsetup(name='old')\n"),
            ),
            ("tests/__init__.py", Some("")),
            ("tests/helpers.py", Some(PY2_DECORATOR)),
            ("tests/test_frozen.py", Some(TEST_PY2_DECORATED)),
        ],
    )
    .commit(
        "Touch",
        &[(
            "tests/test_frozen.py",
            Some(&TEST_PY2_DECORATED.replace("1 + 1", "2")),
        )],
    );
    let root = tempfile::tempdir().unwrap();
    let records = vec![commit_record(&repo, 1, &["tests/test_frozen.py"])];
    let published = mine(
        &pipeline(root.path(), repo_spec(repo.path_buf(), &["2.7"])),
        records,
    );
    assert_eq!(published.excluded, []);
    let mined: Vec<(String, Vec<String>, Option<String>)> = published
        .claims
        .iter()
        .map(|claim| {
            (
                claim.node.clone(),
                claim.assertions.clone(),
                claim.source_file.clone(),
            )
        })
        .collect();
    let own = Some("tests/test_frozen.py".to_string());
    assert_eq!(
        mined,
        [
            (
                "tests/test_frozen.py::test_frozen".to_string(),
                vec!["assert 1 + 1 == 2".to_string()],
                own.clone()
            ),
            (
                "tests/test_frozen.py::TestFrozen::test_method".to_string(),
                vec!["self.assertEqual(2 * 2, 4)".to_string()],
                own
            ),
        ]
    );
    assert!(
        published.claims[0].source.contains("def test_frozen():"),
        "{}",
        published.claims[0].source
    );
    assert_eq!(published.claims[0].interpreter, "2.7.18");
}

#[test]
fn the_binary_ranks_then_mines_and_a_second_run_computes_nothing() {
    let repo = history();
    let project = crate::common::project::Project::new();
    project.file(
        "pipeline.yaml",
        &format!(
            "version: 1\nname: mined\nrepos:\n  - name: demo\n    path: {}\n    branch: main\n    \
             python: [\"3.11\"]\nsteps:\n  rank: {{uses: rank-commits, with: {{top: 5}}}}\n  \
             claims: {{uses: mine-claims, needs: [rank], with: {{limit_claims_per_commit: 3}}}}\n",
            repo.path().display()
        ),
    );
    project.ok(&["run", "pipeline.yaml"]);
    let claims: Vec<ClaimRecord> = project
        .read("results/mined/claims.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let nodes: Vec<&str> = claims.iter().map(|claim| claim.node.as_str()).collect();
    assert_eq!(
        nodes,
        [
            "tests/test_demo.py::test_plain",
            "tests/test_demo.py::test_fixture",
            "tests/test_demo.py::test_param[1-2]"
        ]
    );
    let excluded = project.read("results/mined/excluded.jsonl");
    assert_eq!(excluded.lines().count(), 1, "{excluded}");
    assert!(excluded.contains("\"kind\":\"collection\""), "{excluded}");
    let plan = project.plan("pipeline.yaml");
    assert_eq!(
        plan,
        [
            ("rank".to_string(), Some(1), Some(0)),
            ("claims".to_string(), Some(2), Some(0))
        ]
    );
}

#[test]
fn a_broken_conftest_is_an_explained_exclusion_not_an_empty_result() {
    let mut repo = FixtureRepo::new();
    repo.commit(
        "Initial",
        &[
            ("pyproject.toml", Some(PYPROJECT)),
            ("demo/__init__.py", Some(DEMO)),
            (
                "tests/conftest.py",
                Some("import missing_plugin_claimflow\n"),
            ),
            ("tests/test_one.py", Some("def test_one():\n    assert 1\n")),
        ],
    )
    .commit(
        "Touch",
        &[("tests/test_one.py", Some("def test_one():\n    assert 2\n"))],
    );
    let root = tempfile::tempdir().unwrap();
    let records = vec![commit_record(&repo, 1, &["tests/test_one.py"])];
    let published = mine(
        &pipeline(root.path(), repo_spec(repo.path_buf(), &["3.11"])),
        records,
    );
    assert!(published.claims.is_empty());
    let excluded = &published.excluded[0];
    assert_eq!(excluded.kind, ExclusionKind::Collection);
    assert!(
        excluded.reason.contains("missing_plugin_claimflow"),
        "{}",
        excluded.reason
    );
}

/// Regression: a worktree without pytest configuration of its own picked up the first one above it
/// (here the project's, demanding a pytest that does not exist) and collected nothing.
#[test]
fn configuration_above_the_worktree_is_never_used() {
    let mut repo = FixtureRepo::new();
    repo.commit(
        "Initial",
        &[
            ("pyproject.toml", Some(PYPROJECT)),
            ("demo/__init__.py", Some(DEMO)),
            ("tests/test_one.py", Some("def test_one():\n    assert 1\n")),
        ],
    )
    .commit(
        "Touch",
        &[("tests/test_one.py", Some("def test_one():\n    assert 2\n"))],
    );
    let root = tempfile::tempdir().unwrap();
    std::fs::write(
        root.path().join("pytest.ini"),
        "[pytest]\nminversion = 99\n",
    )
    .unwrap();
    let records = vec![commit_record(&repo, 1, &["tests/test_one.py"])];
    let published = mine(
        &pipeline(root.path(), repo_spec(repo.path_buf(), &["3.11"])),
        records,
    );
    assert_eq!(published.excluded, []);
    assert_eq!(published.claims[0].node, "tests/test_one.py::test_one");
}
