//! The oracle when a commit's environment cannot be rebuilt: that commit's claims are discarded
//! with the reason (never labelled, never dropped), the other commits are judged, and a step where
//! no commit gets an environment fails as a broken setup.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use claimflow::engine::{Engine, Recording, RunOptions, Session, StepError};
use claimflow::pipeline::RepoSpec;
use claimflow::python::Environment;
use claimflow::records::ClaimRecord;
use claimflow::steps::{EnvironmentFailure, Environments, OracleStep, Registry};

use super::library::Library;
use super::procedure::claims;
use super::python::environment;
use super::step::FixedClaims;

/// The test environment, except for parents with a `tests/conftest.py`, whose environment
/// "will not build" (as a pinned requirement with no release would not).
struct NoEnvironmentWithConftest;

impl Environments for NoEnvironmentWithConftest {
    fn fingerprint(&self, _repo: &RepoSpec) -> Result<BTreeMap<String, String>, StepError> {
        Ok(environment().fingerprint())
    }

    fn environment(
        &self,
        _repo: &RepoSpec,
        worktree: &Path,
        _interpreter: Option<&str>,
        _date: Option<i64>,
        _child: &[claimflow::python::Requirement],
        _session: &Session,
    ) -> Result<Environment, EnvironmentFailure> {
        if worktree.join("tests/conftest.py").is_file() {
            return Err(EnvironmentFailure::Unbuildable(
                "install `claimflow-no-such-distribution` for python 3.11.7: no release".into(),
            ));
        }
        Ok(environment())
    }
}

fn run(root: &Path, all: Vec<ClaimRecord>) -> (Result<(), String>, Recording) {
    let registry = Registry::with(vec![
        Arc::new(FixedClaims(all)),
        Arc::new(OracleStep::new(Arc::new(NoEnvironmentWithConftest))),
    ]);
    let file = root.join("pipeline.yaml");
    std::fs::write(
        &file,
        "version: 1\nname: oracle\nrepos:\n  - name: demo\n    path: repo\n    branch: main\n\
         steps:\n  claims: {uses: mine-claims}\n  truth: {uses: oracle, needs: [claims], with: {runs: 2}}\n",
    )
    .unwrap();
    let pipeline = claimflow::pipeline::load(&file, root, &registry)
        .unwrap_or_else(|errors| panic!("{errors:?}"));
    let reporter = Recording::default();
    let engine = Engine::new(&pipeline, &registry, &reporter).unwrap();
    let result = engine
        .run(&RunOptions::default())
        .map(|_| ())
        .map_err(|error| error.to_string());
    (result, reporter)
}

#[test]
fn a_commit_without_an_environment_has_its_claims_discarded_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut library = Library::create(&root.join("repo"));
    let flip = library.assertion_flip();
    let conftest = library.conftest_error();
    library
        .repo
        .repository
        .reference("refs/heads/main", conftest.commit, true, "branch")
        .unwrap();
    let mut all = claims(flip, &["tests/test_core.py::test_add"]);
    all.extend(claims(conftest, &["tests/test_core.py::test_add"]));
    let (result, reporter) = run(root, all.clone());
    result.unwrap_or_else(|error| panic!("{error}: {:?}", reporter.events()));
    let truth: Vec<serde_json::Value> =
        std::fs::read_to_string(root.join("results/oracle/truth.jsonl"))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
    let by_claim = |claim: &ClaimRecord| {
        truth
            .iter()
            .find(|line| line["claim"] == claim.id.as_str())
            .unwrap_or_else(|| panic!("{} has a truth record: {truth:?}", claim.id))
    };
    assert_eq!(by_claim(&all[0])["label"], "flipped");
    let unbuilt = by_claim(&all[1]);
    assert_eq!(unbuilt["label"], "discarded");
    assert_eq!(unbuilt["cause"], "no_environment");
    assert_eq!(
        unbuilt["reason"],
        "install `claimflow-no-such-distribution` for python 3.11.7: no release"
    );
    assert_eq!(unbuilt["parent_runs"], serde_json::json!([]));

    // Only commits without an environment: a broken setup, not a result.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut library = Library::create(&root.join("repo"));
    let conftest = library.conftest_error();
    library
        .repo
        .repository
        .reference("refs/heads/main", conftest.commit, true, "branch")
        .unwrap();
    let (result, reporter) = run(root, claims(conftest, &["tests/test_core.py::test_add"]));
    assert!(result.is_err());
    let failure = reporter
        .events()
        .into_iter()
        .find_map(|event| match event {
            claimflow::engine::Event::StepFailed { step, error, .. } if step == "truth" => {
                Some(error)
            }
            _ => None,
        })
        .expect("the oracle step failed");
    assert!(
        failure.contains(
            "no environment could be rebuilt for any of its 1 commits, which is a broken setup \
             rather than a result"
        ),
        "{failure}"
    );
    assert!(!root.join("results/oracle/truth.jsonl").exists());
}
