//! The child gate runs in an environment with the child's declared requirements: a commit that
//! adds a test dependency and a test that imports it is not a broken child.

use std::sync::Arc;

use claimflow::engine::{Engine, Recording, RunOptions};
use claimflow::steps::{OracleStep, PythonEnvironments, RankCommits, Registry};

use super::fixture::{Change, FixtureRepo};
use super::library::Case;
use super::procedure::claims;
use super::step::FixedClaims;

const CORE: &str = "def add(a, b):\n    return a + b\n";
const TEST_CORE: &str = "from pkg.core import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n    assert add(0, 0) == 0\n";

#[test]
fn a_test_dependency_the_child_adds_is_installed_for_the_childs_own_tests() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut repo = FixtureRepo::init(&root.join("repo"));
    let base = repo.commit(
        None,
        "A small library",
        &[
            Change::Write("pkg/__init__.py", ""),
            Change::Write("pkg/core.py", CORE),
            Change::Write("tests/test_core.py", TEST_CORE),
        ],
    );
    // The commit drops an assertion (so it is ranked), declares `six` for its tests and adds a
    // test that imports it.
    let commit = repo.commit(
        Some(base),
        "Trim a test; test with six",
        &[
            Change::Write(
                "tests/test_core.py",
                &TEST_CORE.replace("    assert add(0, 0) == 0\n", ""),
            ),
            Change::Write("dev-requirements.txt", "six\n"),
            Change::Write(
                "tests/test_six.py",
                "import six\n\nfrom pkg.core import add\n\n\ndef test_text():\n    assert isinstance(six.text_type(add(1, 1)), six.text_type)\n",
            ),
        ],
    );
    repo.repository
        .reference("refs/heads/main", commit, true, "branch for the pipeline")
        .unwrap();
    let case = Case {
        parent: base,
        commit,
    };
    let registry = Registry::with(vec![
        Arc::new(RankCommits),
        Arc::new(FixedClaims(claims(case, &["tests/test_core.py::test_add"]))),
        Arc::new(OracleStep::new(Arc::new(PythonEnvironments))),
    ]);
    let file = root.join("pipeline.yaml");
    std::fs::write(
        &file,
        "version: 1\nname: child\nrepos:\n  - name: demo\n    path: repo\n    branch: main\n    \
         python: [\"3.11\"]\nsteps:\n  rank: {uses: rank-commits, with: {top: 5}}\n  \
         claims: {uses: mine-claims, needs: [rank]}\n  \
         truth: {uses: oracle, needs: [rank, claims], with: {runs: 2}}\n",
    )
    .unwrap();
    let pipeline = claimflow::pipeline::load(&file, root, &registry)
        .unwrap_or_else(|errors| panic!("{errors:?}"));
    let reporter = Recording::default();
    let engine = Engine::new(&pipeline, &registry, &reporter).unwrap();
    engine
        .run(&RunOptions::default())
        .unwrap_or_else(|error| panic!("{error}: {:?}", reporter.events()));
    let truth = std::fs::read_to_string(root.join("results/child/truth.jsonl")).unwrap();
    let labels: Vec<String> = truth
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            format!("{} {} {}", value["label"], value["cause"], value["reason"])
        })
        .collect();
    assert_eq!(labels, ["\"held\" null null"]);
}
