//! The oracle's labels do not depend on how the pipeline is wired: with `needs: [claims]` (as
//! documented) and with `needs: [rank, claims]` the child gate runs the same test files, the ones
//! the commit added included.

use std::path::Path;
use std::sync::Arc;

use claimflow::engine::{Engine, Recording, RunOptions};
use claimflow::steps::{FixedEnvironment, OracleStep, RankCommits, Registry};

use super::fixture::{Change, FixtureRepo};
use super::library::Case;
use super::procedure::claims;
use super::python::environment;
use super::step::FixedClaims;

const CORE: &str = "def add(a, b):\n    return a + b\n";
const TEST_CORE: &str = "from pkg.core import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n    assert add(0, 0) == 0\n";

/// The labels of one pipeline run whose oracle step has `needs`.
fn labels(root: &Path, repo: &Path, case: Case, needs: &str) -> Vec<String> {
    let registry = Registry::with(vec![
        Arc::new(RankCommits),
        Arc::new(FixedClaims(claims(case, &["tests/test_core.py::test_add"]))),
        Arc::new(OracleStep::new(Arc::new(FixedEnvironment(environment())))),
    ]);
    std::fs::create_dir_all(root).unwrap();
    let file = root.join("pipeline.yaml");
    std::fs::write(
        &file,
        format!(
            "version: 1\nname: wiring\nrepos:\n  - name: demo\n    path: {}\n    branch: main\n\
             steps:\n  rank: {{uses: rank-commits, with: {{top: 5}}}}\n  \
             claims: {{uses: mine-claims, needs: [rank]}}\n  \
             truth: {{uses: oracle, needs: {needs}, with: {{runs: 2}}}}\n",
            repo.display()
        ),
    )
    .unwrap();
    let pipeline = claimflow::pipeline::load(&file, root, &registry)
        .unwrap_or_else(|errors| panic!("{errors:?}"));
    let reporter = Recording::default();
    let engine = Engine::new(&pipeline, &registry, &reporter).unwrap();
    engine
        .run(&RunOptions::default())
        .unwrap_or_else(|error| panic!("{error}: {:?}", reporter.events()));
    std::fs::read_to_string(root.join("results/wiring/truth.jsonl"))
        .unwrap()
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            format!("{} {} {}", value["label"], value["cause"], value["reason"])
        })
        .collect()
}

#[test]
fn the_gate_runs_the_added_test_files_whether_or_not_the_oracle_needs_the_ranking() {
    let dir = tempfile::tempdir().unwrap();
    let repo_dir = dir.path().join("repo");
    let mut repo = FixtureRepo::init(&repo_dir);
    let base = repo.commit(
        None,
        "A small library",
        &[
            Change::Write("pkg/__init__.py", ""),
            Change::Write("pkg/core.py", CORE),
            Change::Write("tests/test_core.py", TEST_CORE),
        ],
    );
    // The commit drops an assertion (so it is ranked) and adds a test file whose test fails.
    let commit = repo.commit(
        Some(base),
        "Trim a test; test negative numbers",
        &[
            Change::Write(
                "tests/test_core.py",
                &TEST_CORE.replace("    assert add(0, 0) == 0\n", ""),
            ),
            Change::Write(
                "tests/test_negative.py",
                "from pkg.core import add\n\n\ndef test_add_negative():\n    assert add(-1, 1) == 1\n",
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
    let documented = labels(&dir.path().join("a"), &repo_dir, case, "[claims]");
    let with_rank = labels(&dir.path().join("b"), &repo_dir, case, "[rank, claims]");
    assert_eq!(documented, with_rank);
    assert_eq!(documented.len(), 1);
    assert!(
        documented[0].starts_with("\"discarded\" \"broken_child\"")
            && documented[0].contains("tests/test_negative.py::test_add_negative fails"),
        "{documented:?}"
    );
}
