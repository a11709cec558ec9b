//! The `oracle` step kind under the real engine: items per commit, result files, invariants, and a
//! re-run that takes every item from the cache.

use std::path::Path;
use std::sync::Arc;

use claimflow::engine::{
    Engine, ItemOutput, ItemPlan, ItemResult, NoParams, ParamsDecl, Recording, Role, RunOptions,
    StepContext, StepError, StepKind, Upstream,
};
use claimflow::pipeline::StepSpec;
use claimflow::records::ClaimRecord;
use claimflow::steps::{Environments, FixedEnvironment, OracleStep, PythonEnvironments, Registry};

use super::library::{Case, Library};
use super::procedure::{claims, render};
use super::python::environment;

/// Stands in for `mine-claims`: one item per commit, emitting claims fixed by the test.
pub struct FixedClaims(pub Vec<ClaimRecord>);

impl StepKind for FixedClaims {
    fn name(&self) -> &'static str {
        "mine-claims"
    }
    fn version(&self) -> u32 {
        1
    }
    fn about(&self) -> &'static str {
        "claims fixed by the test"
    }
    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<NoParams>()
    }
    fn role(&self, _step: &StepSpec) -> Role {
        Role::Claims
    }
    fn items(&self, _ctx: &StepContext, _upstream: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        let commits: std::collections::BTreeSet<&str> =
            self.0.iter().map(|claim| claim.commit.as_str()).collect();
        Ok(commits.into_iter().map(ItemPlan::new).collect())
    }
    fn run(
        &self,
        _ctx: &StepContext,
        item: &ItemPlan,
        _upstream: &Upstream,
    ) -> Result<ItemOutput, StepError> {
        Ok(ItemOutput::records(
            self.0.iter().filter(|claim| claim.commit == item.id),
        ))
    }
    fn publish(&self, _ctx: &StepContext, _items: &[ItemResult]) -> Result<(), StepError> {
        Ok(())
    }
}

/// The oracle pipeline over the repository `repo`, its `truth` step given `with`.
pub(super) fn pipeline_text(with: &str) -> String {
    format!(
        "version: 1\nname: oracle\nrepos:\n  - name: demo\n    path: repo\n    branch: main\n\
         steps:\n  claims: {{uses: mine-claims}}\n  truth: {{uses: oracle, needs: [claims], with: {with}}}\n"
    )
}

/// A library under `root/repo` whose `main` is its assertion flip, and a registry whose
/// `mine-claims` claims the flip's two core tests and whose oracle runs under `environments`.
pub(super) fn assertion_flip_on_main(
    root: &Path,
    environments: Arc<dyn Environments>,
) -> (Case, Registry) {
    let mut library = Library::create(&root.join("repo"));
    let flip = library.assertion_flip();
    library
        .repo
        .repository
        .reference(
            "refs/heads/main",
            flip.commit,
            true,
            "branch for the pipeline",
        )
        .unwrap();
    let registry = Registry::with(vec![
        Arc::new(FixedClaims(claims(
            flip,
            &[
                "tests/test_core.py::test_add",
                "tests/test_core.py::test_mul",
            ],
        ))),
        Arc::new(OracleStep::new(environments)),
    ]);
    (flip, registry)
}

#[test]
fn step_labels_commits_in_parallel_and_a_rerun_runs_no_pytest() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut library = Library::create(&root.join("repo"));
    let flip = library.assertion_flip();
    let removed = library.removed_api();
    let broken = library.broken_child();
    let import = library.import_error();
    library
        .repo
        .repository
        .reference(
            "refs/heads/main",
            import.commit,
            true,
            "branch for the pipeline",
        )
        .unwrap();
    let mut all = claims(
        flip,
        &[
            "tests/test_core.py::test_add",
            "tests/test_core.py::test_mul",
        ],
    );
    all.extend(claims(removed, &["tests/test_store.py::test_clear"]));
    all.extend(claims(broken, &["tests/test_core.py::test_mul"]));
    all.extend(claims(
        import,
        &[
            "tests/test_legacy.py::test_legacy",
            "tests/test_core.py::test_add",
        ],
    ));
    let registry = Registry::with(vec![
        Arc::new(FixedClaims(all)),
        Arc::new(OracleStep::new(Arc::new(FixedEnvironment(environment())))),
    ]);
    let run = |with: &str, permits: usize| {
        let file = root.join("pipeline.yaml");
        std::fs::write(&file, pipeline_text(with)).unwrap();
        let pipeline = claimflow::pipeline::load(&file, root, &registry)
            .unwrap_or_else(|errors| panic!("{errors:?}"));
        let reporter = Recording::default();
        let engine = Engine::new(&pipeline, &registry, &reporter).unwrap();
        let options = RunOptions {
            pytest_slots: permits,
            ..RunOptions::default()
        };
        engine
            .run(&options)
            .unwrap_or_else(|error| panic!("{error}: {:?}", reporter.events()))
    };

    let first = run("{runs: 3}", 2);
    assert_eq!(first.computed(), 8, "{:?}", first.steps);

    let results = root.join("results/oracle");
    let truth = std::fs::read_to_string(results.join("truth.jsonl")).unwrap();
    let judgements: Vec<_> = truth
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            claimflow::oracle::Judgement {
                truth: serde_json::from_value(value.clone()).unwrap(),
                cause: serde_json::from_value(value["cause"].clone()).unwrap(),
            }
        })
        .collect();
    insta::assert_snapshot!("step_truth", render(&judgements));
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(results.join("oracle_summary.json")).unwrap(),
    )
    .unwrap();
    insta::assert_json_snapshot!("step_summary", summary);

    // The same commits again, with another timeout and permit count: nothing is computed.
    let second = run("{runs: 3, timeout: 60}", 1);
    assert_eq!(second.computed(), 0, "{:?}", second.steps);
    assert_eq!(second.cached(), 8);
    assert_eq!(
        std::fs::read_to_string(results.join("truth.jsonl")).unwrap(),
        truth
    );
}

#[test]
fn key_params_leave_out_timeout_and_write_defaults() {
    let step = OracleStep::new(Arc::new(FixedEnvironment(environment())));
    let key = |with: serde_json::Value| step.params().parse(&with).unwrap().key().clone();
    assert_eq!(
        key(serde_json::json!({"runs": 3, "timeout": 5})),
        key(serde_json::json!({"runs": 3}))
    );
    // The oracle has no slot count of its own: the engine's pytest permits bound it.
    assert!(
        step.params()
            .parse(&serde_json::json!({"runs": 3, "slots": 4}))
            .is_err()
    );
    assert_eq!(
        key(serde_json::json!({})),
        key(serde_json::json!({"runs": 10, "import_errors": "discard"}))
    );
    assert_ne!(
        key(serde_json::json!({})),
        key(serde_json::json!({"import_errors": "flip"}))
    );
}

/// A flipped label over a partial child verdict must never be published.
#[test]
fn an_invariant_failure_fails_the_step_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let library = Library::create(&root.join("repo"));
    library
        .repo
        .repository
        .reference(
            "refs/heads/main",
            library.base,
            true,
            "branch for the pipeline",
        )
        .unwrap();
    let registry = Registry::with(vec![
        Arc::new(FixedClaims(Vec::new())),
        Arc::new(OracleStep::new(Arc::new(FixedEnvironment(environment())))),
    ]);
    let file = root.join("pipeline.yaml");
    std::fs::write(&file, pipeline_text("{runs: 3}")).unwrap();
    let pipeline = claimflow::pipeline::load(&file, root, &registry).unwrap();
    let store = claimflow::cache::Store::open(root.join("cache")).unwrap();
    let ctx = StepContext::new(&pipeline, pipeline.step("truth").unwrap(), &store);
    let record = serde_json::json!({
        "claim": "demo@p::tests/test_core.py::test_add",
        "label": "flipped",
        "reason": "failed 3 of 3 runs at the child: assertion",
        "parent_runs": [
            {"run": 0, "outcome": "passed"}, {"run": 1, "outcome": "passed"},
            {"run": 2, "outcome": "passed"}
        ],
        "child_runs": [
            {"run": 0, "outcome": "failed", "detail": "assertion"},
            {"run": 1, "outcome": "failed", "detail": "assertion"},
            {"run": 2, "outcome": "unknown", "detail": "timeout"}
        ],
        "cause": null
    });
    let output = ItemOutput {
        records: vec![record].into(),
        blobs: Default::default(),
    };
    let item = ItemResult {
        plan: ItemPlan::new("demo@c").params(serde_json::json!({
            "repo": "demo", "parent": "p", "commit": "c",
            "claims": ["demo@p::tests/test_core.py::test_add"]
        })),
        digest: claimflow::cache::Digest::of(b"tampered"),
        output: Arc::new(output),
        cached: false,
        in_place: false,
    };
    let step = OracleStep::new(Arc::new(FixedEnvironment(environment())));
    let error = step.publish(&ctx, &[item]).unwrap_err();
    assert!(matches!(error, StepError::Invariant(_)), "{error}");
    insta::assert_snapshot!(error.to_string());
    assert!(!pipeline.results.join("truth.jsonl").exists());
    assert!(!pipeline.results.join("oracle_summary.json").exists());
}

/// The builtin registry's environments: the interpreter the repository declares, pytest of its
/// era, built once under the user's cache and shared with `mine-claims`.
#[test]
fn builtin_environments_run_the_oracle_under_the_declared_interpreter() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (_, registry) = assertion_flip_on_main(root, Arc::new(PythonEnvironments));
    let file = root.join("pipeline.yaml");
    let text = pipeline_text("{runs: 2}").replace(
        "    branch: main\n",
        "    branch: main\n    python: [\"3.11\"]\n",
    );
    std::fs::write(&file, text).unwrap();
    let pipeline = claimflow::pipeline::load(&file, root, &registry)
        .unwrap_or_else(|errors| panic!("{errors:?}"));
    let reporter = Recording::default();
    let engine = Engine::new(&pipeline, &registry, &reporter).unwrap();
    engine
        .run(&RunOptions::default())
        .unwrap_or_else(|error| panic!("{error}: {:?}", reporter.events()));
    let truth = std::fs::read_to_string(root.join("results/oracle/truth.jsonl")).unwrap();
    let labels: Vec<String> = truth
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            format!(
                "{} {}",
                value["claim"]
                    .as_str()
                    .unwrap()
                    .rsplit("::")
                    .next()
                    .unwrap(),
                value["label"]
            )
        })
        .collect();
    assert_eq!(labels, ["test_add \"flipped\"", "test_mul \"held\""]);
}
