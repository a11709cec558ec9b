//! The baseline arms end to end through the engine: a fixture repository, claims from a stand-in
//! `mine-claims` step, and each arm's `predictions/<step>.jsonl` with its evidence.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use claimflow::engine::{
    Engine, ItemOutput, ItemPlan, ItemResult, ParamsDecl, Recording, Role, RunOptions, Silent,
    StepContext, StepError, StepKind, StepStatus, Upstream,
};
use claimflow::pipeline::{Pipeline, RepoSource, RepoSpec, StepSpec};
use claimflow::records::{ClaimRecord, claim_id};
use claimflow::steps::Registry;
use claimflow::steps::arm::{Arm, ArmName};
use serde_json::json;

use crate::common::git::FixtureRepo;

/// Stands in for `mine-claims` (not merged yet): emits the claim records in its `with.claims`.
struct GivenClaims;

/// The claims a [`GivenClaims`] step emits.
#[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct GivenClaimsParams {
    /// The claim records.
    claims: serde_json::Value,
}

impl StepKind for GivenClaims {
    fn name(&self) -> &'static str {
        "mine-claims"
    }
    fn version(&self) -> u32 {
        1
    }
    fn about(&self) -> &'static str {
        "claims given in the pipeline (tests)"
    }
    fn params(&self) -> ParamsDecl {
        ParamsDecl::of::<GivenClaimsParams>()
    }
    fn role(&self, _step: &StepSpec) -> Role {
        Role::Claims
    }
    fn items(&self, ctx: &StepContext, _: &Upstream) -> Result<Vec<ItemPlan>, StepError> {
        let params: &GivenClaimsParams = ctx.params()?;
        Ok(vec![ItemPlan::new("all").params(params.claims.clone())])
    }
    fn run(&self, _: &StepContext, item: &ItemPlan, _: &Upstream) -> Result<ItemOutput, StepError> {
        let records = item.params.as_array().cloned().unwrap_or_default();
        Ok(ItemOutput {
            records: records.into(),
            blobs: Default::default(),
        })
    }
    fn publish(&self, _: &StepContext, _: &[ItemResult]) -> Result<(), StepError> {
        Ok(())
    }
}

const INIT: &str = "from .cache import Cache\nfrom .stack import Stack\n";
const CACHE: &str = "\
class Cache:
    def __init__(self, maxsize=2):
        self.data = {}

    def get(self, key):
        return self.data.get(key)

    def pop(self, key):
        return self.data.pop(key)
";
const STACK: &str = "\
class Stack:
    def __init__(self):
        self.items = []

    def pop(self):
        return self.items.pop()

    def push(self, item):
        self.items.append(item)
";
const UTIL: &str = "def helper():\n    return 1\n";
const CONFTEST: &str = "\
import pytest
from demo import Cache


@pytest.fixture(name=\"cr\")
def make_cache():
    return Cache()
";
const TEST_CACHE: &str = "\
from demo import Cache


def test_get(cr):
    assert cr.get(\"x\") is None


def test_pop_missing():
    cache = Cache()
    cache.data[1] = 2
    assert cache.pop(1) == 2
";
const TEST_STACK: &str = "\
from demo.stack import Stack


def test_pop():
    s = Stack()
    s.push(1)
    assert s.pop() == 1
";
const TEST_UTIL: &str = "\
from demo.util import helper


def test_helper():
    assert helper() == 1
";

/// The fixture history: the child edits `Cache.get`, adds a function to `util`, and edits a test.
fn history() -> (FixtureRepo, String, String) {
    let mut repository = FixtureRepo::new();
    let parent = repository
        .commit(
            "parent",
            &[
                ("src/demo/__init__.py", Some(INIT)),
                ("src/demo/cache.py", Some(CACHE)),
                ("src/demo/stack.py", Some(STACK)),
                ("src/demo/util.py", Some(UTIL)),
                ("tests/conftest.py", Some(CONFTEST)),
                ("tests/test_cache.py", Some(TEST_CACHE)),
                ("tests/test_stack.py", Some(TEST_STACK)),
                ("tests/test_util.py", Some(TEST_UTIL)),
            ],
        )
        .head()
        .to_string();
    let child = repository
        .commit(
            "cache: a missing key reads as 0",
            &[
                (
                    "src/demo/cache.py",
                    Some(&CACHE.replace("self.data.get(key)", "self.data.get(key, 0)")),
                ),
                (
                    "src/demo/util.py",
                    Some(&format!("{UTIL}\n\ndef other():\n    return 2\n")),
                ),
                (
                    "tests/test_cache.py",
                    Some(&TEST_CACHE.replace("is None", "== 0")),
                ),
            ],
        )
        .head()
        .to_string();
    (repository, parent, child)
}

/// The test function named `name` in `file_text`, as the claim's source.
fn function_source(file_text: &str, name: &str) -> String {
    let start = file_text
        .find(&format!("def {name}("))
        .expect("the test is in the file");
    let rest = &file_text[start..];
    let end = rest.find("\n\n\n").map(|end| end + 1).unwrap_or(rest.len());
    rest[..end].to_string()
}

fn claims(parent: &str, child: &str) -> serde_json::Value {
    let tests = [
        ("tests/test_cache.py", TEST_CACHE, "test_get", vec!["cr"]),
        (
            "tests/test_cache.py",
            TEST_CACHE,
            "test_pop_missing",
            vec![],
        ),
        ("tests/test_stack.py", TEST_STACK, "test_pop", vec![]),
        ("tests/test_util.py", TEST_UTIL, "test_helper", vec![]),
    ];
    let records: Vec<ClaimRecord> = tests
        .iter()
        .map(|(file, text, name, fixtures)| {
            let node = format!("{file}::{name}");
            let source = function_source(text, name);
            ClaimRecord {
                id: claim_id("demo", parent, &node),
                repo: "demo".into(),
                parent: parent.into(),
                commit: child.into(),
                node,
                assertions: source
                    .lines()
                    .filter(|line| line.trim_start().starts_with("assert"))
                    .map(|line| line.trim().to_string())
                    .collect(),
                source,
                fixtures: fixtures.iter().map(|fixture| fixture.to_string()).collect(),
            }
        })
        .collect();
    serde_json::to_value(records).unwrap()
}

fn pipeline(root: &Path, repository: &Path, claims: serde_json::Value) -> Pipeline {
    let registry = Registry::with(vec![Arc::new(GivenClaims), Arc::new(Arm::default())]);
    pipeline_of(root, repository, claims, &registry)
}

/// The pipeline with its steps' parameters parsed by `registry`'s kinds.
fn pipeline_of(
    root: &Path,
    repository: &Path,
    claims: serde_json::Value,
    registry: &Registry,
) -> Pipeline {
    let step = |name: &str, uses: &str, needs: &[&str], with: serde_json::Value| {
        StepSpec::parsed(name, uses, needs, with, registry).unwrap()
    };
    Pipeline {
        file: root.join("pipeline.yaml"),
        root: root.to_path_buf(),
        version: 1,
        name: "arms".into(),
        workdir: root.join(".claimflow"),
        results: root.join("results"),
        repos: vec![RepoSpec {
            name: "demo".into(),
            source: RepoSource::Path(repository.to_path_buf()),
            branch: "main".into(),
            split: None,
            python: Vec::new(),
            test_patterns: None,
            dependencies: Vec::new(),
            merges: None,
            releases: claimflow::pipeline::Releases::Newest,
        }],
        models: BTreeMap::new(),
        executor: Default::default(),
        steps: vec![
            step("claims", "mine-claims", &[], json!({ "claims": claims })),
            step("a0", "arm", &["claims"], json!({"arm": "a0"})),
            step("a1", "arm", &["claims"], json!({"arm": "a1"})),
            step("a3", "arm", &["claims"], json!({"arm": "file-anchoring"})),
            step(
                "a3_transitive",
                "arm",
                &["claims"],
                json!({"arm": "file-anchoring", "transitive": true}),
            ),
            step("a4", "arm", &["claims"], json!({"arm": "symbol-anchoring"})),
        ],
    }
}

/// Each line of a predictions file, pretty-printed, with the parent commit id named.
fn readable(path: &Path, parent: &str) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            serde_json::to_string_pretty(&value).unwrap()
        })
        .collect::<Vec<_>>()
        .join("\n")
        .replace(parent, "<parent>")
}

#[test]
fn each_arm_writes_its_predictions_with_evidence_and_reruns_from_the_cache() {
    let (repository, parent, child) = history();
    let project = tempfile::tempdir().unwrap();
    let pipeline = pipeline(project.path(), repository.path(), claims(&parent, &child));
    let registry = Registry::with(vec![Arc::new(GivenClaims), Arc::new(Arm::default())]);
    let options = RunOptions {
        jobs: 1,
        pytest_slots: 1,
        ..RunOptions::default()
    };
    let engine = Engine::new(&pipeline, &registry, &Silent).unwrap();
    let first = engine.run(&options).unwrap();
    // claims: 1 item; a0 and a1: 1 each; a3, a3_transitive, a4: one per claim.
    assert_eq!(first.computed(), 1 + 2 + 3 * 4);

    for step in ["a0", "a1", "a3", "a3_transitive", "a4"] {
        let path = pipeline.results.join(format!("predictions/{step}.jsonl"));
        insta::assert_snapshot!(format!("arms_{step}"), readable(&path, &parent));
    }

    let engine = Engine::new(&pipeline, &registry, &Silent).unwrap();
    let second = engine.run(&options).unwrap();
    assert_eq!(second.computed(), 0, "a re-run computes nothing");
}

#[test]
fn bumping_one_arms_version_recomputes_that_arm_only() {
    let (repository, parent, child) = history();
    let project = tempfile::tempdir().unwrap();
    let options = RunOptions {
        jobs: 1,
        pytest_slots: 1,
        ..RunOptions::default()
    };
    let shipped = Registry::with(vec![Arc::new(GivenClaims), Arc::new(Arm::default())]);
    let pipeline = pipeline_of(
        project.path(),
        repository.path(),
        claims(&parent, &child),
        &shipped,
    );
    Engine::new(&pipeline, &shipped, &Silent)
        .unwrap()
        .run(&options)
        .unwrap();

    let bumped = Registry::with(vec![
        Arc::new(GivenClaims),
        Arc::new(Arm::default().with_version(ArmName::SymbolAnchoring, 2)),
    ]);
    let pipeline = pipeline_of(
        project.path(),
        repository.path(),
        claims(&parent, &child),
        &bumped,
    );
    let summary = Engine::new(&pipeline, &bumped, &Silent)
        .unwrap()
        .run(&options)
        .unwrap();
    let computed: BTreeMap<&str, usize> = summary
        .steps
        .iter()
        .map(|(step, status)| match status {
            StepStatus::Done { computed, .. } => (step.as_str(), *computed),
            other => panic!("step `{step}` did not finish: {other:?}"),
        })
        .collect();
    assert_eq!(
        computed,
        BTreeMap::from([
            ("claims", 0),
            ("a0", 0),
            ("a1", 0),
            ("a3", 0),
            ("a3_transitive", 0),
            ("a4", 4),
        ]),
        "only the bumped arm's items are computed again"
    );
}

#[test]
fn an_arm_without_claims_upstream_is_an_input_error() {
    let (repository, _, _) = history();
    let project = tempfile::tempdir().unwrap();
    let mut pipeline = pipeline(project.path(), repository.path(), json!([]));
    pipeline.steps[1].needs.clear();
    pipeline.steps.truncate(2);
    let registry = Registry::with(vec![Arc::new(GivenClaims), Arc::new(Arm::default())]);
    let engine = Engine::new(&pipeline, &registry, &Silent).unwrap();
    let error = engine.run(&RunOptions::default()).unwrap_err();
    // An input error found while running is still the user's to fix: exit 2, not 1.
    assert!(
        matches!(error, claimflow::engine::EngineError::StepsRejectedInput(_)),
        "{error}"
    );
    assert_eq!(error.to_string(), "1 step found the input wrong: a0");
}

const CALC: &str = "\
def add(a, b):
    return a + b


def mul(a, b):
    return a * b
";
const TEST_CALC: &str = "\
from demo.calc import add, mul


def test_add():
    assert add(1, 2) == 3


def test_mul():
    assert mul(2, 3) == 6


def test_both():
    assert add(1, mul(2, 3)) == 7
";
const TEST_OTHER: &str = "\
def test_other():
    assert [1, 2][-1] == 2
";

/// Pretty predictions with the measured seconds replaced, for a stable snapshot.
fn without_seconds(path: &Path, parent: &str) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|line| {
            let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
            for field in ["build_seconds", "query_seconds"] {
                let seconds = &mut value["evidence"][field];
                assert!(
                    seconds.as_f64().is_some_and(|seconds| seconds > 0.0),
                    "{line}"
                );
                *seconds = json!("[seconds]");
            }
            let version = &mut value["evidence"]["testmon"];
            assert!(
                version.as_str().is_some_and(|version| !version.is_empty()),
                "{line}"
            );
            *version = json!("[version]");
            serde_json::to_string_pretty(&value).unwrap()
        })
        .collect::<Vec<_>>()
        .join("\n")
        .replace(parent, "<parent>")
}

/// The testmon arms' history: a parent with `calc.py`, `tests/test_calc.py` and `extra` files,
/// and a child that multiplies the other way round. Returns the repository, parent and child.
fn calc_history(extra: &[(&str, &str)]) -> (FixtureRepo, String, String) {
    let mut repository = FixtureRepo::new();
    let mut files: Vec<(&str, Option<&str>)> = vec![
        ("src/demo/__init__.py", Some("")),
        ("src/demo/calc.py", Some(CALC)),
        ("tests/test_calc.py", Some(TEST_CALC)),
    ];
    files.extend(extra.iter().map(|(path, text)| (*path, Some(*text))));
    let parent = repository.commit("parent", &files).head().to_string();
    let child = repository
        .commit(
            "calc: multiply the other way round",
            &[(
                "src/demo/calc.py",
                Some(&CALC.replace("return a * b", "return b * a")),
            )],
        )
        .head()
        .to_string();
    (repository, parent, child)
}

/// A claim record of `node` at `parent` for the given claims step.
fn claim_record(parent: &str, child: &str, node: &str) -> serde_json::Value {
    let name = node.rsplit("::").next().unwrap();
    json!({
        "id": claim_id("demo", parent, node),
        "repo": "demo", "parent": parent, "commit": child, "node": node,
        "source": format!("def {name}():\n    pass\n"),
        "assertions": ["assert True"], "fixtures": [],
    })
}

/// Runs the claims step and a testmon arm `a4b` over `records` under Python 3.11; returns the
/// pipeline (for its results) and how many items were computed.
fn run_testmon(
    project: &Path,
    repository: &FixtureRepo,
    records: Vec<serde_json::Value>,
) -> (Pipeline, usize) {
    run_testmon_allowing(project, repository, records, &["3.11"])
}

/// [`run_testmon`] with the repository's `python:` list.
fn run_testmon_allowing(
    project: &Path,
    repository: &FixtureRepo,
    records: Vec<serde_json::Value>,
    python: &[&str],
) -> (Pipeline, usize) {
    let mut pipeline = pipeline(project, repository.path(), json!(records));
    pipeline.repos[0].python = python.iter().map(|version| version.to_string()).collect();
    pipeline.steps.truncate(1);
    let registry = Registry::with(vec![Arc::new(GivenClaims), Arc::new(Arm::default())]);
    pipeline.steps.push(
        StepSpec::parsed(
            "a4b",
            "arm",
            &["claims"],
            json!({"arm": "testmon"}),
            &registry,
        )
        .unwrap(),
    );
    let events = Recording::default();
    let engine = Engine::new(&pipeline, &registry, &events).unwrap();
    let summary = engine
        .run(&RunOptions::default())
        .unwrap_or_else(|error| panic!("{error}: {:#?}", events.events()));
    (pipeline, summary.computed())
}

#[test]
fn testmon_selects_exactly_the_tests_that_execute_the_changed_function() {
    let (repository, parent, child) = calc_history(&[("tests/test_other.py", TEST_OTHER)]);
    let mut records: Vec<serde_json::Value> = [
        "tests/test_calc.py::test_add",
        "tests/test_calc.py::test_mul",
        "tests/test_calc.py::test_both",
        "tests/test_other.py::test_other",
    ]
    .iter()
    .map(|node| claim_record(&parent, &child, node))
    .collect();
    // A claim whose test testmon never saw (no such test at the parent) gets no verdict.
    records.push(claim_record(
        &parent,
        &child,
        "tests/test_other.py::test_missing",
    ));
    let project = tempfile::tempdir().unwrap();
    let (pipeline, computed) = run_testmon(project.path(), &repository, records);
    // One item for the claims, one for the commit.
    assert_eq!(computed, 2);
    let path = pipeline.results.join("predictions/a4b.jsonl");
    insta::assert_snapshot!("arms_a4b", without_seconds(&path, &parent));
}

/// Seen on cachetools, more-itertools, marshmallow, sortedcontainers and boltons: under an old
/// interpreter's pytest, `pytest --testmon` stopped at start-up (`option names {'--lf'} already
/// added`), and the item's error failed the whole `a4b` step, so `stats` and the report never ran.
/// Here a repository's `conftest.py` adds the option testmon's plugins also add, the same failure.
#[test]
fn testmon_that_cannot_start_at_the_parent_gives_no_verdict_and_the_step_finishes() {
    let conftest =
        "def pytest_addoption(parser):\n    parser.addoption('--lf', action='store_true')\n";
    let (repository, parent, child) = calc_history(&[("tests/conftest.py", conftest)]);
    let records = vec![claim_record(
        &parent,
        &child,
        "tests/test_calc.py::test_mul",
    )];
    let project = tempfile::tempdir().unwrap();
    let (pipeline, _) = run_testmon(project.path(), &repository, records);
    let text = std::fs::read_to_string(pipeline.results.join("predictions/a4b.jsonl")).unwrap();
    let predictions: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(predictions.len(), 1, "{text}");
    assert_eq!(predictions[0]["verdict"], "none", "{text}");
    let why = predictions[0]["evidence"]["unjudged"].as_str().unwrap();
    assert!(why.starts_with("pytest --testmon at "), "{why}");
    assert!(why.contains("gave no report (Exited("), "{why}");
    let log = predictions[0]["evidence"]["log"].as_str().unwrap();
    assert!(log.contains("--lf"), "{log}");
}

/// The predictions file of the testmon arm, one JSON value per line.
fn testmon_predictions(pipeline: &Pipeline) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(pipeline.results.join("predictions/a4b.jsonl")).unwrap();
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Seen on real repositories: A4b built testmon's environment with the repository's first allowed
/// interpreter and the newest pytest-testmon, not where the claims were mined and labelled. On a
/// Python 2.7 / pytest 3.5 commit testmon could not start, and only about half the claims were
/// judged. Here the code is Python 2 only, the repository allows 3.11 first, and the claims say
/// they were mined under 2.7.18 with pytest 3.5.1: testmon 0.9.19 judges them there.
#[test]
fn testmon_runs_under_the_interpreter_and_pytest_the_claims_were_mined_under() {
    testmon_judges_a_python_2_calc(&[]);
}

/// A project that is itself a dependency of the test tooling (more-itertools, which pytest 3.5
/// requires at `>=4.0.0`) is registered in its checkout under its own older version. testmon must
/// still start: its plugin is loaded by module, not through the `pytest11` entry point whose
/// requirements `pkg_resources` checks (and refuses with `VersionConflict`).
#[test]
fn testmon_starts_when_the_project_is_a_dependency_of_pytest_at_an_older_version() {
    testmon_judges_a_python_2_calc(&[(
        "setup.py",
        "from setuptools import setup\n\
         setup(name='more-itertools', version='3.2.0', packages=['demo'], \
         package_dir={'': 'src'})\n",
    )]);
}

/// Claim records of `nodes` as mined under `(interpreter, pytest)`.
fn mined_under(
    parent: &str,
    child: &str,
    nodes: &[&str],
    (interpreter, pytest): (&str, &str),
) -> Vec<serde_json::Value> {
    nodes
        .iter()
        .map(|node| {
            let mut record = claim_record(parent, child, node);
            record["interpreter"] = json!(interpreter);
            record["pytest"] = json!(pytest);
            record
        })
        .collect()
}

/// A Python 2 calculator whose child swaps a multiplication's operands, with `extra` files in the
/// parent: testmon 0.9.19 under Python 2.7 and pytest 3.5.1 selects the two tests that multiply.
fn testmon_judges_a_python_2_calc(extra: &[(&str, &str)]) {
    let python_2_calc = CALC.replace(
        "    return a + b",
        "    try:\n        return a + b\n    except TypeError, error:\n        raise error",
    );
    let mut files = vec![
        ("src/demo/__init__.py", Some("")),
        ("src/demo/calc.py", Some(python_2_calc.as_str())),
        ("tests/test_calc.py", Some(TEST_CALC)),
    ];
    files.extend(extra.iter().map(|(path, content)| (*path, Some(*content))));
    let mut repository = FixtureRepo::new();
    let parent = repository.commit("parent", &files).head().to_string();
    let child = repository
        .commit(
            "calc: multiply the other way round",
            &[(
                "src/demo/calc.py",
                Some(&python_2_calc.replace("return a * b", "return b * a")),
            )],
        )
        .head()
        .to_string();
    let records = mined_under(
        &parent,
        &child,
        &[
            "tests/test_calc.py::test_add",
            "tests/test_calc.py::test_mul",
            "tests/test_calc.py::test_both",
        ],
        ("2.7.18", "3.5.1"),
    );
    let project = tempfile::tempdir().unwrap();
    let (pipeline, _) =
        run_testmon_allowing(project.path(), &repository, records, &["3.11", "2.7"]);
    let predictions = testmon_predictions(&pipeline);
    let verdicts: BTreeMap<&str, &str> = predictions
        .iter()
        .map(|prediction| {
            let claim = prediction["claim"].as_str().unwrap();
            let node = claim.rsplit("::").next().unwrap();
            (node, prediction["verdict"].as_str().unwrap())
        })
        .collect();
    assert_eq!(
        verdicts,
        BTreeMap::from([
            ("test_add", "held"),
            ("test_both", "flipped"),
            ("test_mul", "flipped"),
        ]),
        "{predictions:#?}"
    );
    for prediction in &predictions {
        assert_eq!(prediction["evidence"]["testmon"], "0.9.19", "{prediction}");
    }
}

/// A commit whose claims were mined where no pytest-testmon release installs (pytest 6.1 on
/// Python 3.5: 0.9.19 stops before pytest 6, 1.x starts at Python 3.6) is not judged, and each of
/// its claims says why; nothing is built for it.
#[test]
fn claims_mined_where_no_testmon_release_runs_are_unjudged_with_the_reason() {
    let (repository, parent, child) = calc_history(&[]);
    let records = mined_under(
        &parent,
        &child,
        &[
            "tests/test_calc.py::test_add",
            "tests/test_calc.py::test_mul",
        ],
        ("3.5.10", "6.1.2"),
    );
    let project = tempfile::tempdir().unwrap();
    let (pipeline, _) = run_testmon(project.path(), &repository, records);
    let predictions = testmon_predictions(&pipeline);
    assert_eq!(predictions.len(), 2, "{predictions:#?}");
    for prediction in &predictions {
        assert_eq!(prediction["verdict"], "none", "{prediction}");
        let why = prediction["evidence"]["unjudged"].as_str().unwrap();
        assert!(
            why.contains("no pytest-testmon release runs under python 3.5.10 with pytest 6.1.2"),
            "{why}"
        );
    }
}

#[test]
fn a_repositorys_test_patterns_decide_which_touched_files_carry_no_change() {
    let (repository, parent, child) = history();
    let project = tempfile::tempdir().unwrap();
    let mut pipeline = pipeline(project.path(), repository.path(), claims(&parent, &child));
    // Counting `util.py` as test code (restored by the oracle) leaves `test_helper` unanchored.
    pipeline.repos[0].test_patterns = Some(vec!["tests/**".into(), "src/demo/util.py".into()]);
    pipeline
        .steps
        .retain(|step| ["claims", "a3"].contains(&step.name.as_str()));
    let registry = Registry::with(vec![Arc::new(GivenClaims), Arc::new(Arm::default())]);
    let engine = Engine::new(&pipeline, &registry, &Silent).unwrap();
    engine.run(&RunOptions::default()).unwrap();
    let text = std::fs::read_to_string(pipeline.results.join("predictions/a3.jsonl")).unwrap();
    let helper = text
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|value| value["claim"].as_str().unwrap().ends_with("test_helper"))
        .unwrap();
    assert_eq!(helper["verdict"], "held");
    assert_eq!(helper["evidence"]["touched_modules"], json!(["demo.cache"]));
}

/// The source of test `name` in `text` (a `def` and its indented body), if the file defines it.
fn test_source(text: &str, name: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|line| line.trim_start().starts_with(&format!("def {name}(")))?;
    let indent = lines[start].len() - lines[start].trim_start().len();
    let body = lines[start + 1..]
        .iter()
        .take_while(|line| line.trim().is_empty() || line.len() - line.trim_start().len() > indent)
        .count();
    Some(
        lines[start..=start + body]
            .join("\n")
            .trim_end()
            .to_string()
            + "\n",
    )
}

/// A3 and A4 on every claim the demo corpus documents, next to the oracle's label: the table a
/// reader checks the anchoring arms against (the rename, the aliased fixture, the inherited test).
#[test]
fn anchoring_arms_on_the_demo_corpus() {
    use claimflow::arms::{Change, Claim, FileAnchoring, SymbolAnchoring};
    use claimflow::corpus::expected::load_expected;
    use claimflow::records::{Label, Verdict};

    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/demo");
    let directory = tempfile::tempdir().unwrap();
    let materialized =
        claimflow::corpus::materialize(&demo, &directory.path().join("demo")).unwrap();
    let expected = load_expected(&demo.join("EXPECTED.md")).unwrap();
    let repository = git2::Repository::open(&materialized.path).unwrap();
    let verdict = |verdict: Verdict| match verdict {
        Verdict::Flipped => "flipped",
        Verdict::Held => "held",
        Verdict::None => "none",
    };
    let mut table = vec!["commit | claim | oracle | A3 | A4 | A4 changed".to_string()];
    for claim in &expected.claims {
        if claim.label == Label::Discarded {
            continue;
        }
        let index = materialized
            .commits
            .iter()
            .position(|commit| commit.name == claim.commit)
            .unwrap();
        let (parent, child) = (
            &materialized.commits[index - 1].id,
            &materialized.commits[index].id,
        );
        let change = Change::load(&repository, parent, child).unwrap();
        let name = claim.node.rsplit("::").next().unwrap();
        // The test file first, then the helper modules an inherited test may live in.
        let file = claim.node.split("::").next().unwrap();
        let mut candidates = vec![file.to_string()];
        candidates.extend(
            change
                .parent
                .python_files()
                .unwrap()
                .into_iter()
                .filter(|path| path.starts_with("tests/")),
        );
        let source = candidates
            .iter()
            .find_map(|path| test_source(&change.parent.read(path).unwrap()?, name))
            .unwrap_or_else(|| panic!("no source for {}", claim.node));
        let record = Claim {
            id: claim_id("demo", parent, &claim.node),
            repo: "demo".into(),
            parent: parent.clone(),
            commit: child.clone(),
            node: claim.node.clone(),
            source,
            fixtures: Vec::new(),
            file: None,
        };
        let a3 = FileAnchoring::default().predict(&record, &change).unwrap();
        let a4 = SymbolAnchoring.predict(&record, &change).unwrap();
        let label = match claim.label {
            Label::Flipped => "flipped",
            _ => "held",
        };
        table.push(format!(
            "{} | {} | {label} | {} | {} | {}",
            claim.commit,
            claim.node,
            verdict(a3.verdict),
            verdict(a4.verdict),
            a4.evidence["changed"]
                .as_array()
                .unwrap()
                .iter()
                .map(|name| name.as_str().unwrap())
                .collect::<Vec<_>>()
                .join(", "),
        ));
    }
    insta::assert_snapshot!("arms_demo_corpus", table.join("\n"));
}
