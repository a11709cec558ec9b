//! The oracle at the end of the real chain, through the binary: `rank-commits` picks the commits,
//! `mine-claims` collects the claims at their parents, the oracle labels them; a second run computes
//! nothing.

use claimflow::records::ClaimRecord;

use super::fixture::{Change, FixtureRepo};

const CORE: &str = "def add(a, b):\n    return a + b\n\n\nclass Store(object):\n    def __init__(self):\n        self.items = {}\n\n    def clear(self):\n        self.items = {}\n";
const TEST_CORE: &str = "from pkg.core import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_add_zero():\n    assert add(0, 0) == 0\n";
const TEST_STORE: &str = "from pkg.core import Store\n\n\ndef test_clear():\n    store = Store()\n    store.clear()\n    assert store.items == {}\n";

#[test]
fn rank_mine_and_judge_through_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let mut repo = FixtureRepo::init(&dir.path().join("repo"));
    let base = repo.commit(
        None,
        "A small library",
        &[
            Change::Write("pkg/__init__.py", ""),
            Change::Write("pkg/core.py", CORE),
            Change::Write("tests/test_core.py", TEST_CORE),
            Change::Write("tests/test_store.py", TEST_STORE),
        ],
    );
    let flip = repo.commit(
        Some(base),
        "add counts from one",
        &[
            Change::Write(
                "pkg/core.py",
                &CORE.replace("return a + b", "return a + b + 1"),
            ),
            Change::Write(
                "tests/test_core.py",
                &TEST_CORE
                    .replace("add(1, 2) == 3", "add(1, 2) == 4")
                    .replace("add(0, 0) == 0", "add(0, 0) == 1"),
            ),
        ],
    );
    let core = CORE.replace("return a + b", "return a + b + 1");
    let removed = repo.commit(
        Some(flip),
        "Rename Store.clear to reset",
        &[
            Change::Write("pkg/core.py", &core.replace("def clear", "def reset")),
            Change::Write(
                "tests/test_store.py",
                &TEST_STORE
                    .replace("clear", "reset")
                    .replace("assert store.items == {}", "assert not store.items"),
            ),
        ],
    );
    repo.repository
        .reference("refs/heads/main", removed, true, "branch for the pipeline")
        .unwrap();

    let project = crate::common::project::Project::new();
    project.file(
        "pipeline.yaml",
        &format!(
            "version: 1\nname: chain\nrepos:\n  - name: demo\n    path: {}\n    branch: main\n    \
             python: [\"3.11\"]\nsteps:\n  rank: {{uses: rank-commits, with: {{top: 5}}}}\n  \
             claims: {{uses: mine-claims, needs: [rank]}}\n  \
             truth: {{uses: oracle, needs: [claims, rank], with: {{runs: 2}}}}\n",
            dir.path().join("repo").display()
        ),
    );
    project.ok(&["run", "pipeline.yaml"]);
    let claims: Vec<ClaimRecord> = project
        .read("results/chain/claims.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let truth = project.read("results/chain/truth.jsonl");
    let mut labels: Vec<String> = truth
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            let claim = claims
                .iter()
                .find(|claim| claim.id == value["claim"])
                .expect("every truth record names a mined claim");
            let commit = if claim.commit == flip.to_string() {
                "flip"
            } else {
                "removed"
            };
            format!(
                "{commit} {} {} {}",
                claim.node,
                value["label"].as_str().unwrap(),
                value["reason"].as_str().unwrap_or("-")
            )
        })
        .collect();
    labels.sort();
    assert_eq!(labels.len(), claims.len());
    insta::assert_snapshot!(labels.join("\n"));

    let plan = project.plan("pipeline.yaml");
    assert!(
        plan.iter().all(|(_, _, to_compute)| *to_compute == Some(0)),
        "{plan:?}"
    );
}
