//! `repro_smoke`: one fixture repository, three ranked commits, the whole chain through the binary
//! (ranking, mining, the oracle, two model arms against a fake OpenAI-compatible server), and the
//! invariants that once broke silently checked on what it wrote: every claim carries its assertion
//! text; every claim that kept a label passed N of N at the parent; no partial verdict at the child
//! is kept; no diff handed to a model contains a test file.

use std::collections::BTreeMap;

use claimflow::records::{ClaimRecord, Label, Outcome, TruthRecord};
use serde_json::Value;

use crate::common::git::FixtureRepo;
use crate::common::project::Project;
use crate::models::fake_server::{FakeServer, Recorded, Reply};

/// Runs at the parent and at the child.
const RUNS: usize = 5;
/// The variable the pipeline names for its key, and the key: no request may carry it elsewhere
/// than in its authorization header.
const KEY_VARIABLE: &str = "CLAIMFLOW_REPRO_SMOKE_KEY";
const KEY: &str = "sk-repro-smoke-0b6e1d2c";

const CORE: &str = "import os\n\n\ndef add(a, b):\n    return a + b\n";
const TEST_CORE: &str = "import os\n\nfrom pkg.core import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\ndef test_add_zero():\n    assert add(0, 0) == 0\n\n\ndef test_seeded():\n    # passes on even hash seeds only: never N of N at the parent\n    assert int(os.environ.get(\"PYTHONHASHSEED\", \"0\")) % 2 == 0\n";
const TEXT: &str = "def shout(text):\n    return text.upper()\n\n\ndef coin():\n    return True\n";
const TEST_TEXT: &str = "from pkg.text import coin, shout\n\n\ndef test_shout():\n    assert shout(\"hi\") == \"HI\"\n\n\ndef test_coin():\n    assert coin()\n";
const STORE: &str = "class Store(object):\n    def __init__(self):\n        self.items = {}\n\n    def clear(self):\n        self.items = {}\n\n    def size(self):\n        return len(self.items)\n";
const TEST_STORE: &str = "from pkg.store import Store\n\n\ndef test_clear():\n    store = Store()\n    store.clear()\n    assert store.items == {}\n\n\ndef test_size():\n    assert Store().size() == 0\n";

/// The fixture's history: a base and three commits that each delete assertions.
pub(crate) fn fixture() -> FixtureRepo {
    let mut repository = FixtureRepo::new();
    repository
        .commit(
            "A small library",
            &[
                ("pkg/__init__.py", Some("")),
                ("pkg/core.py", Some(CORE)),
                ("pkg/text.py", Some(TEXT)),
                ("pkg/store.py", Some(STORE)),
                ("tests/test_core.py", Some(TEST_CORE)),
                ("tests/test_text.py", Some(TEST_TEXT)),
                ("tests/test_store.py", Some(TEST_STORE)),
            ],
        )
        .commit(
            "add counts from one",
            &[
                (
                    "pkg/core.py",
                    Some(&CORE.replace("return a + b", "return a + b + 1")),
                ),
                (
                    "tests/test_core.py",
                    Some(
                        &TEST_CORE
                            .replace("add(1, 2) == 3", "add(1, 2) == 4")
                            .replace("add(0, 0) == 0", "add(0, 0) == 1"),
                    ),
                ),
            ],
        )
        .commit(
            "shout louder, and coins land on their edge",
            &[
                (
                    "pkg/text.py",
                    Some(
                        &TEXT
                            .replace("text.upper()", "text.upper() + \"!\"")
                            .replace(
                                "return True",
                                "import os\n    return int(os.environ.get(\"PYTHONHASHSEED\", \"0\")) % 2 == 0",
                            ),
                    ),
                ),
                (
                    "tests/test_text.py",
                    Some(
                        "from pkg.text import shout\n\n\ndef test_shout():\n    assert shout(\"hi\") == \"HI!\"\n",
                    ),
                ),
            ],
        )
        .commit(
            "Rename Store.clear to reset",
            &[
                ("pkg/store.py", Some(&STORE.replace("def clear", "def reset"))),
                (
                    "tests/test_store.py",
                    Some(
                        &TEST_STORE
                            .replace("clear", "reset")
                            .replace("assert store.items == {}", "assert not store.items"),
                    ),
                ),
            ],
        );
    repository
}

/// Answers as a model would: A5 "not semantics preserving", A6 "flipped".
fn model(_: usize, request: &Recorded) -> Reply {
    let system = request.json()["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let text = if system.contains("semantics_preserving") {
        r#"{"semantics_preserving": false}"#
    } else {
        r#"{"verdict": "flipped"}"#
    };
    Reply::json(crate::models::answer(
        claimflow::pipeline::Provider::Openai,
        text,
    ))
}

fn jsonl<T: serde::de::DeserializeOwned>(text: &str) -> Vec<T> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: {line}")))
        .collect()
}

#[test]
fn repro_smoke() {
    let repository = fixture();
    let server = FakeServer::start(model);
    let project = Project::new();
    for name in ["a5", "a6_risk"] {
        project.file(
            &format!("prompts/{name}.txt"),
            &crate::models::prompt(&format!("{name}.txt")),
        );
    }
    project.file(
        "pipelines/repro.yaml",
        &format!(
            r#"version: 1
name: repro
repos:
  - {{name: fixture, path: "{repository}", branch: main, python: ["3.11"]}}
models:
  judge: {{provider: openai, model: test-model, base_url: "{url}", api_key_env: {KEY_VARIABLE}}}
steps:
  rank:    {{uses: rank-commits, with: {{by: assertion-deletions, top: 3}}}}
  claims:  {{uses: mine-claims, needs: [rank]}}
  truth:   {{uses: oracle, needs: [claims], with: {{runs: {RUNS}}}}}
  a5:      {{uses: llm-arm, needs: [claims], with: {{question: a5, prompt: prompts/a5.txt, model: judge}}}}
  a6_risk: {{uses: llm-arm, needs: [claims], with: {{question: a6_risk, prompt: prompts/a6_risk.txt, model: judge}}}}
"#,
            repository = repository.path().display(),
            url = server.url("/v1"),
        ),
    );
    let ran = project
        .command(&["run", "pipelines/repro.yaml"])
        .env(KEY_VARIABLE, KEY)
        .output()
        .expect("claimflow runs");
    crate::common::assert_ran(&ran, "the run");

    let commits: Vec<Value> = jsonl(&project.read("results/repro/commits.jsonl"));
    assert_eq!(commits.len(), 3, "three commits ranked");
    let claims: Vec<ClaimRecord> = jsonl(&project.read("results/repro/claims.jsonl"));
    let truth: Vec<TruthRecord> = jsonl(&project.read("results/repro/truth.jsonl"));
    let subject_of: BTreeMap<String, String> = commits
        .iter()
        .map(|commit| {
            (
                commit["commit"].as_str().unwrap().to_string(),
                commit["subject"].as_str().unwrap().to_string(),
            )
        })
        .collect();

    // Every claim carries its assertion text, and that text is in the claim's source.
    for claim in &claims {
        assert!(
            !claim.assertions.is_empty(),
            "{} has no assertion",
            claim.id
        );
        for assertion in &claim.assertions {
            assert!(
                !assertion.trim().is_empty(),
                "{}: a blank assertion",
                claim.id
            );
            assert!(
                claim.source.contains(assertion.trim()),
                "{}: `{assertion}` is not in its source",
                claim.id
            );
        }
    }

    // Every claim has exactly one truth record; a kept label passed N of N at the parent; a
    // flipped claim failed N of N at the child and a held one passed N of N: nothing partial kept.
    let mut records: BTreeMap<&str, Vec<&TruthRecord>> = BTreeMap::new();
    for record in &truth {
        records
            .entry(record.claim.as_str())
            .or_default()
            .push(record);
    }
    assert_eq!(records.len(), claims.len(), "one truth record per claim");
    let all = |runs: &[claimflow::records::RunRecord], outcome: Outcome| {
        runs.len() == RUNS && runs.iter().all(|run| run.outcome == outcome)
    };
    let mut table = Vec::new();
    for claim in &claims {
        let [record] = records[claim.id.as_str()].as_slice() else {
            panic!("{} has several truth records", claim.id);
        };
        match record.label {
            Label::Flipped => {
                assert!(all(&record.parent_runs, Outcome::Passed), "{}", claim.id);
                assert!(all(&record.child_runs, Outcome::Failed), "{}", claim.id);
            }
            Label::Held => {
                assert!(all(&record.parent_runs, Outcome::Passed), "{}", claim.id);
                assert!(all(&record.child_runs, Outcome::Passed), "{}", claim.id);
            }
            Label::Discarded => assert!(record.reason.is_some(), "{}", claim.id),
        }
        table.push(format!(
            "{} | {} | {:?} | parent {} | child {}",
            subject_of[&claim.commit],
            claim.node,
            record.label,
            outcomes(&record.parent_runs),
            outcomes(&record.child_runs),
        ));
    }
    table.sort();
    // The fixture's traps were sprung: a claim flaky at the parent and one flaky at the child are
    // in the corpus, both discarded.
    let label_of = |node: &str| {
        let claim = claims
            .iter()
            .find(|claim| claim.node == node)
            .unwrap_or_else(|| panic!("{node} was mined"));
        records[claim.id.as_str()][0].label
    };
    assert_eq!(
        label_of("tests/test_core.py::test_seeded"),
        Label::Discarded
    );
    assert_eq!(label_of("tests/test_text.py::test_coin"), Label::Discarded);
    assert_eq!(label_of("tests/test_store.py::test_clear"), Label::Flipped);
    assert_eq!(label_of("tests/test_store.py::test_size"), Label::Held);

    // No diff handed to a model contains a test file: every request's diff is read back and
    // searched for each commit's test files and for any test file header.
    let requests = server.requests();
    let per_claim = claims.len();
    let per_commit = commits.len();
    assert_eq!(
        requests.len(),
        per_claim + per_commit,
        "A6 per claim, A5 per commit"
    );
    let test_files: Vec<String> = commits
        .iter()
        .flat_map(|commit| commit["test_files"].as_array().unwrap().clone())
        .map(|file| file.as_str().unwrap().to_string())
        .collect();
    assert!(!test_files.is_empty());
    for request in &requests {
        assert!(!request.body.contains(KEY), "the key is in a request body");
        let user = request.json()["messages"][1]["content"]
            .as_str()
            .expect("a user message")
            .to_string();
        let diff = match user.split_once("\n\nDIFF:\n") {
            Some((_, diff)) => diff.to_string(),
            None => user,
        };
        assert!(diff.contains("diff --git a/pkg/"), "a source diff: {diff}");
        for file in &test_files {
            assert!(!diff.contains(file.as_str()), "{file} in a diff: {diff}");
        }
        for header in diff.lines().filter(|line| line.starts_with("diff --git")) {
            assert!(!header.contains("tests/"), "{header}");
        }
    }

    super::in_top_level_snapshots(|| insta::assert_snapshot!("repro_smoke", table.join("\n")));
}

fn outcomes(runs: &[claimflow::records::RunRecord]) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for run in runs {
        *counts
            .entry(format!("{:?}", run.outcome).to_lowercase())
            .or_default() += 1;
    }
    if counts.is_empty() {
        return "-".to_string();
    }
    counts
        .iter()
        .map(|(outcome, count)| format!("{count} {outcome}"))
        .collect::<Vec<_>>()
        .join(", ")
}
