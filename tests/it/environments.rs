//! Environments on old commits: a bounded interpreter fallback, environment failures as
//! exclusions, and pytest chosen by the parent commit's date. The failing environments here fail
//! at pip's first question to the index (a release that does not exist), so they cost a venv each.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use claimflow::cache::Store;
use claimflow::engine::{
    Event, ItemOutput, ItemPlan, ItemResult, Recording, Session, StepContext, StepError, StepKind,
    StepOutput, Upstream,
};
use claimflow::pipeline::{Pipeline, RepoSource, RepoSpec, StepSpec};
use claimflow::python::{BuildFailure, EnvironmentRequest, FailedBuilds, PythonError};
use claimflow::records::{CommitRecord, ExclusionKind, ExclusionRecord};
use claimflow::steps::MineClaims;
use git2::{Repository, Signature, Time};
use serde_json::json;

use crate::common::project::Project;

const SOURCE: &str = "def add(a, b):\n    return a + b\n";

/// A repository of two commits at `time` (seconds since the epoch): the parent with `test`
/// under `tests/test_demo.py`, and a child where `add` adds one more and the test's assertions
/// say so, one of them deleted.
pub(crate) fn dated_repository(directory: &Path, time: i64, test: &str) -> (String, String) {
    let repository = Repository::init(directory).unwrap();
    let mut parent = None;
    let child_test = test.trim_end().rsplit_once('\n').unwrap().0.to_string() + "\n";
    let versions = [
        (SOURCE.to_string(), test.to_string()),
        (
            SOURCE.replace("a + b", "a + b + 1"),
            child_test.replace("== 3", "== 4"),
        ),
    ];
    let mut ids = Vec::new();
    for (index, (source, test)) in versions.iter().enumerate() {
        let mut files = BTreeMap::new();
        files.insert("demo/__init__.py", source.as_str());
        files.insert("tests/__init__.py", "");
        files.insert("tests/test_demo.py", test.as_str());
        let tree = write_tree(&repository, &files);
        let tree = repository.find_tree(tree).unwrap();
        let when = Time::new(time + 60 * index as i64, 0);
        let signature = Signature::new("claimflow", "test@claimflow.invalid", &when).unwrap();
        let parents: Vec<git2::Commit> = parent
            .iter()
            .map(|oid| repository.find_commit(*oid).unwrap())
            .collect();
        let parents: Vec<&git2::Commit> = parents.iter().collect();
        let oid = repository
            .commit(
                Some("refs/heads/main"),
                &signature,
                &signature,
                &format!("commit {index}\n"),
                &tree,
                &parents,
            )
            .unwrap();
        parent = Some(oid);
        ids.push(oid.to_string());
    }
    (ids[0].clone(), ids[1].clone())
}

/// Writes `files` (paths with at most one directory) as a tree.
fn write_tree(repository: &Repository, files: &BTreeMap<&str, &str>) -> git2::Oid {
    let mut directories: BTreeMap<&str, git2::TreeBuilder> = BTreeMap::new();
    let mut root = repository.treebuilder(None).unwrap();
    for (path, content) in files {
        let blob = repository.blob(content.as_bytes()).unwrap();
        match path.split_once('/') {
            Some((directory, name)) => {
                directories
                    .entry(directory)
                    .or_insert_with(|| repository.treebuilder(None).unwrap())
                    .insert(name, blob, 0o100644)
                    .unwrap();
            }
            None => {
                root.insert(path, blob, 0o100644).unwrap();
            }
        }
    }
    for (directory, builder) in directories {
        root.insert(directory, builder.write().unwrap(), 0o040000)
            .unwrap();
    }
    root.write().unwrap()
}

pub(crate) const TEST: &str = "\
from demo import add


def test_add():
    assert add(1, 2) == 3
    assert add(2, 2) == 4
";

fn repo_spec(name: &str, path: &Path, python: &[&str], dependencies: &[&str]) -> RepoSpec {
    RepoSpec {
        name: name.into(),
        source: RepoSource::Path(path.to_path_buf()),
        branch: "main".into(),
        split: None,
        python: python.iter().map(|version| version.to_string()).collect(),
        test_patterns: None,
        dependencies: dependencies.iter().map(|spec| spec.to_string()).collect(),
        merges: None,
        releases: claimflow::pipeline::Releases::Newest,
    }
}

fn record(repo: &str, (parent, commit): &(String, String)) -> CommitRecord {
    serde_json::from_value(json!({
        "repo": repo, "commit": commit, "parent": parent, "score": 1.0, "subject": "s",
        "test_files": ["tests/test_demo.py"], "source_files": ["demo/__init__.py"],
    }))
    .unwrap()
}

/// What `mine-claims` published, or how publishing failed.
struct Mined {
    published: Result<(), StepError>,
    excluded: Vec<ExclusionRecord>,
    claims: usize,
}

/// Plans, runs and publishes `mine-claims` with `with` over hand-made commit records.
fn mine(
    root: &Path,
    repos: Vec<RepoSpec>,
    with: serde_json::Value,
    records: &[CommitRecord],
) -> Mined {
    mine_noting(root, repos, with, records, &claimflow::engine::Silent)
}

/// [`mine`], its notes sent to `reporter`.
fn mine_noting(
    root: &Path,
    repos: Vec<RepoSpec>,
    with: serde_json::Value,
    records: &[CommitRecord],
    reporter: &dyn claimflow::engine::Reporter,
) -> Mined {
    let pipeline = Pipeline {
        file: "pipeline.yaml".into(),
        root: root.to_path_buf(),
        version: 1,
        name: "test".into(),
        workdir: root.join(".claimflow"),
        results: root.join("results"),
        repos,
        models: BTreeMap::new(),
        executor: Default::default(),
        steps: vec![
            StepSpec::parsed(
                "claims",
                "mine-claims",
                &["rank"],
                with,
                &claimflow::steps::Registry::builtin(),
            )
            .unwrap(),
        ],
    };
    let store = Store::open(pipeline.workdir.join("cache")).unwrap();
    let mut ctx = StepContext::new(&pipeline, &pipeline.steps[0], &store);
    ctx.reporter = reporter;
    let ranked = ItemOutput::records(records);
    let upstream = Upstream {
        steps: BTreeMap::from([(
            "rank".to_string(),
            Arc::new(StepOutput {
                step: "rank".into(),
                kind: "rank-commits".into(),
                role: claimflow::engine::Role::Commits,
                items: vec![ItemResult {
                    plan: ItemPlan::new("ranked"),
                    digest: store.put_json(&ranked).unwrap(),
                    output: Arc::new(ranked),
                    cached: false,
                    in_place: false,
                }],
                reduced: None,
            }),
        )]),
    };
    let mut excluded = Vec::new();
    let mut claims = 0;
    let mut items = Vec::new();
    let plans = match MineClaims.items(&ctx, &upstream) {
        Ok(plans) => plans,
        Err(error) => {
            return Mined {
                published: Err(error),
                excluded,
                claims,
            };
        }
    };
    for plan in plans {
        let output = MineClaims.run(&ctx, &plan, &upstream).unwrap();
        if let Some(digest) = output.blobs.get("exclusion") {
            excluded.push(store.get_json(digest).unwrap());
        }
        claims += output.records.len();
        items.push(ItemResult {
            digest: store.put_json(&output).unwrap(),
            plan,
            output: Arc::new(output),
            cached: false,
            in_place: false,
        });
    }
    Mined {
        published: MineClaims.publish(&ctx, &items),
        excluded,
        claims,
    }
}

/// Regression: a pinned requirement that will not install failed the whole step
/// (`MineError::NoEnvironment`); it now excludes its commits, and only a step where every commit
/// fails that way fails, as a broken setup.
#[test]
fn a_pin_with_no_release_excludes_the_commit_without_trying_every_interpreter() {
    let good = tempfile::tempdir().unwrap();
    let bad = tempfile::tempdir().unwrap();
    let good_commits = dated_repository(good.path(), 1_700_000_000, TEST);
    let bad_commits = dated_repository(bad.path(), 1_700_000_000, TEST);
    let root = tempfile::tempdir().unwrap();
    let repos = vec![
        repo_spec("good", good.path(), &["3.11"], &[]),
        // No `python:`: every installed interpreter is allowed, newest first.
        repo_spec(
            "bad",
            bad.path(),
            &[],
            &["claimflow-no-such-distribution==9.9"],
        ),
    ];
    let mined = mine(
        root.path(),
        repos.clone(),
        json!({}),
        &[record("good", &good_commits), record("bad", &bad_commits)],
    );
    mined.published.unwrap();
    assert_eq!(mined.claims, 1, "the good repository's commit is mined");
    let [exclusion] = mined.excluded.as_slice() else {
        panic!("one exclusion: {:?}", mined.excluded);
    };
    assert_eq!(exclusion.repo, "bad");
    assert_eq!(exclusion.kind, ExclusionKind::Environment);
    assert_eq!(
        exclusion.attempts.len(),
        1,
        "a release that does not exist stops the fallback: {exclusion:?}"
    );
    assert!(
        exclusion.attempts[0]
            .error
            .starts_with("environment: install `claimflow-no-such-distribution` for python "),
        "{exclusion:?}"
    );
    assert!(
        exclusion.reason.ends_with(
            "stopped: `claimflow-no-such-distribution` has no release on the package index, \
             which no interpreter can fix"
        ),
        "{}",
        exclusion.reason
    );
    let written = std::fs::read_to_string(root.path().join("results/excluded.jsonl")).unwrap();
    assert!(written.contains("\"kind\":\"environment\""), "{written}");

    // Every commit of the step failing for its environment is a broken setup, not a result.
    let root = tempfile::tempdir().unwrap();
    let mined = mine(
        root.path(),
        repos,
        json!({}),
        &[record("bad", &bad_commits)],
    );
    let error = mined.published.unwrap_err().to_string();
    assert!(
        error.starts_with(
            "step `claims`: no environment could be built for any of its 1 commits, which is a \
             broken setup rather than a result"
        ),
        "{error}"
    );
    assert!(error.contains("claimflow-no-such-distribution"), "{error}");
}

/// Regression: structlog's 2013 commits built a fresh environment under every interpreter from
/// 3.13 down (20 minutes for two commits). Two interpreters failing to install the same pin stop
/// the fallback, `interpreters:` caps it, each fallback is announced, and an environment that
/// failed is not built again for the next commit.
#[test]
fn the_fallback_stops_when_interpreters_fail_the_same_way_and_at_the_cap() {
    let recording = Recording::default();
    let directory = tempfile::tempdir().unwrap();
    let commits = dated_repository(directory.path(), 1_700_000_000, TEST);
    let declared = ["3.13", "3.12", "3.11", "3.10"];
    // `six` exists, this release of it does not: pip lists the others, so it may be the
    // interpreter's fault, until a second interpreter fails the same way.
    let repos = vec![repo_spec(
        "old",
        directory.path(),
        &declared,
        &["six==0.0.1"],
    )];
    let root = tempfile::tempdir().unwrap();
    let mined = mine_noting(
        root.path(),
        repos.clone(),
        json!({}),
        &[record("old", &commits)],
        &recording,
    );
    assert!(mined.published.is_err(), "the only commit was excluded");
    let exclusion = &mined.excluded[0];
    assert_eq!(exclusion.kind, ExclusionKind::Environment);
    let tried: Vec<&str> = exclusion
        .attempts
        .iter()
        .map(|attempt| attempt.interpreter.as_str())
        .collect();
    assert_eq!(tried.len(), 2, "{exclusion:?}");
    assert!(tried[0].starts_with("3.13.") && tried[1].starts_with("3.12."));
    assert!(
        exclusion.reason.contains(&format!(
            "stopped: `six` failed to install the same way under python {} and {}",
            tried[0], tried[1]
        )),
        "{}",
        exclusion.reason
    );
    let notes: Vec<String> = recording
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::Note { step, message } if message.starts_with("old@") => {
                Some(format!("{step}: {message}"))
            }
            _ => None,
        })
        .collect();
    let short = &commits.1[..10];
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with(&format!(
            "claims: old@{short}: trying python {} (2 of at most 3) after python {} failed: \
             environment: install `six` for python",
            tried[1], tried[0]
        )),
        "{notes:?}"
    );

    // None at all is not a way to mine: the parameters are refused before anything runs.
    let error = StepSpec::parsed(
        "claims",
        "mine-claims",
        &["rank"],
        json!({"interpreters": 0}),
        &claimflow::steps::Registry::builtin(),
    )
    .unwrap_err();
    assert_eq!(error, "`interpreters` must be at least 1, found 0");

    // At most one interpreter. This is a run of its own, so the build that failed in the run
    // above is tried again (the memo of failed builds is the run's), and fails the same way.
    let root = tempfile::tempdir().unwrap();
    let mined = mine(
        root.path(),
        repos,
        json!({"interpreters": 1}),
        &[record("old", &commits)],
    );
    let exclusion = &mined.excluded[0];
    assert_eq!(exclusion.attempts.len(), 1, "{exclusion:?}");
    assert!(
        exclusion.attempts[0]
            .error
            .starts_with("environment: install `six` for python")
            && !exclusion.attempts[0].error.contains("failed earlier"),
        "{exclusion:?}"
    );
    assert!(
        exclusion.reason.contains(&format!(
            "stopped: 3 more interpreter(s) allowed but not tried ({}, ",
            tried[1]
        )),
        "{}",
        exclusion.reason
    );
    assert!(
        exclusion
            .reason
            .ends_with("at most 1 per commit (raise mine-claims' `interpreters` to try more)"),
        "{}",
        exclusion.reason
    );
}

/// A test that calls a fixture directly: legal before pytest 4, an error since.
const CALLS_A_FIXTURE: &str = "\
import pytest

from demo import add


@pytest.fixture
def numbers():
    return (1, 2)


def test_add():
    a, b = numbers()
    assert add(a, b) == 3
    assert add(b, a) == 3
";

/// A pipeline `name` that ranks (`top` commits, else the default), mines and labels (2 runs) the
/// repository at `path` under Python `python`.
fn labelling_pipeline(name: &str, path: &Path, python: &str, top: Option<usize>) -> String {
    let rank = top.map_or(String::new(), |top| format!(", with: {{top: {top}}}"));
    format!(
        "version: 1\nname: {name}\nrepos:\n  - name: demo\n    path: {}\n    branch: main\n    \
         python: [\"{python}\"]\nsteps:\n  rank: {{uses: rank-commits{rank}}}\n  \
         claims: {{uses: mine-claims, needs: [rank]}}\n  \
         truth: {{uses: oracle, needs: [claims], with: {{runs: 2}}}}\n",
        path.display()
    )
}

/// `rank -> claims -> truth` through the binary on a repository dated `time`; truth.jsonl's lines.
fn label_dated(time: i64) -> (Vec<serde_json::Value>, Vec<serde_json::Value>, String) {
    let repository = tempfile::tempdir().unwrap();
    dated_repository(repository.path(), time, CALLS_A_FIXTURE);
    let project = Project::new();
    project.file(
        "pipeline.yaml",
        &labelling_pipeline("era", repository.path(), "3.6", Some(5)),
    );
    project.ok(&["run", "pipeline.yaml"]);
    let lines = |name: &str| -> Vec<serde_json::Value> {
        project
            .read(&format!("results/era/{name}"))
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    };
    let excluded = project.read("results/era/excluded.jsonl");
    (lines("claims.jsonl"), lines("truth.jsonl"), excluded)
}

/// Regression: structlog's 2013 suite ran under pytest 4.6 and every claim calling a fixture
/// directly came out "broken child". A 2015 commit gets the pytest of 2018 (the oldest the
/// plugins support), under which the test runs and its flip is labelled; the same code dated
/// 2024 gets pytest 7.0 and the claim does not pass at the parent.
#[test]
fn pytest_follows_the_parent_commits_date() {
    // 2015-06-01 and 2024-06-01.
    let (claims, truth, excluded) = label_dated(1_433_116_800);
    assert_eq!(claims.len(), 1, "{excluded}");
    assert!(
        claims[0]["pytest"].as_str().unwrap().starts_with("3.5."),
        "{claims:?}"
    );
    assert_eq!(truth[0]["label"], "flipped", "{truth:?}");

    let (claims, truth, excluded) = label_dated(1_717_200_000);
    assert_eq!(claims.len(), 1, "{excluded}");
    assert!(
        claims[0]["pytest"].as_str().unwrap().starts_with("7.0."),
        "{claims:?}"
    );
    assert_eq!(truth[0]["label"], "discarded", "{truth:?}");
    assert_eq!(truth[0]["cause"], "not_passing_at_parent", "{truth:?}");
    // pytest's own `Failed` ("Fixture \"numbers\" called directly"), not the test's assertion.
    assert_eq!(
        truth[0]["reason"],
        "did not pass 2 of 2 runs at the parent: 0 passed, then it failed (Failed)"
    );
}

/// `rank -> claims -> truth` through the binary on a repository dated 2024, under Python 3.11,
/// with `environment` added to claimflow's environment; the claims, truth lines and the
/// descriptions of the environments built (a fresh cache, so only this run's).
fn label_with(
    environment: &[(&str, &Path)],
) -> (
    Vec<serde_json::Value>,
    Vec<serde_json::Value>,
    Vec<serde_json::Value>,
) {
    let repository = tempfile::tempdir().unwrap();
    dated_repository(repository.path(), 1_717_200_000, TEST);
    let cache = tempfile::tempdir().unwrap();
    let project = Project::new();
    project.file(
        "pipeline.yaml",
        &labelling_pipeline("uv", repository.path(), "3.11", None),
    );
    let mut command = project.command(&["run", "pipeline.yaml"]);
    command.env("CLAIMFLOW_CACHE_DIR", cache.path());
    for (name, value) in environment {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    crate::common::assert_ran(&output, "the run");
    let lines = |name: &str| -> Vec<serde_json::Value> {
        project
            .read(&format!("results/uv/{name}"))
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    };
    let environments = std::fs::read_dir(cache.path().join("envs"))
        .unwrap()
        .flatten()
        .filter_map(|entry| std::fs::read(entry.path().join("claimflow-environment.json")).ok())
        .map(|bytes| serde_json::from_slice(&bytes).unwrap())
        .collect();
    (lines("claims.jsonl"), lines("truth.jsonl"), environments)
}

/// `CLAIMFLOW_UV` points claimflow at uv; the environment it builds is used as a pip one is:
/// the same claims, the same labels.
#[test]
fn an_environment_built_by_uv_mines_and_labels_like_one_built_by_pip() {
    let uv = crate::common::python_env::uv_binary();
    let (claims, truth, environments) = label_with(&[("CLAIMFLOW_UV", &uv)]);
    let [environment] = environments.as_slice() else {
        panic!("one environment: {environments:?}");
    };
    assert_eq!(environment["installer"], "uv");
    assert!(
        environment["pytest"].as_str().unwrap().starts_with("8."),
        "{environment}"
    );
    assert_eq!(claims.len(), 1, "{claims:?}");
    assert_eq!(truth[0]["label"], "flipped", "{truth:?}");

    // A uv that does not run leaves pip in charge.
    let (pip_claims, pip_truth, environments) =
        label_with(&[("CLAIMFLOW_UV", Path::new("/nonexistent/uv"))]);
    assert_eq!(environments[0]["installer"], "pip");
    let view = |lines: &[serde_json::Value], fields: &[&str]| -> Vec<Vec<serde_json::Value>> {
        lines
            .iter()
            .map(|line| fields.iter().map(|field| line[field].clone()).collect())
            .collect()
    };
    assert_eq!(
        view(
            &claims,
            &["id", "node", "assertions", "interpreter", "pytest"]
        ),
        view(
            &pip_claims,
            &["id", "node", "assertions", "interpreter", "pytest"]
        )
    );
    assert_eq!(
        view(&truth, &["claim", "label", "reason", "cause"]),
        view(&pip_truth, &["claim", "label", "reason", "cause"])
    );
}

/// A request whose build fails: a pinned requirement no index has.
fn unbuildable_request(worktree: &Path) -> EnvironmentRequest {
    let interpreter = claimflow::python::installed_interpreters()
        .iter()
        .find(|interpreter| interpreter.version.minor_string() == "3.12")
        .cloned()
        .expect("python 3.12 is installed on claimflow's test machines");
    let pinned = ["claimflow-no-such-distribution==9.8".to_string()];
    EnvironmentRequest::for_commit(&interpreter, worktree, &pinned)
}

/// A failed build leaves nothing in the cache that could pass for an environment, and the same
/// request in the same run fails at once with the first failure's reason.
#[test]
fn a_failed_build_is_not_stored_and_not_tried_twice() {
    let cache = tempfile::tempdir().unwrap();
    let worktree = tempfile::tempdir().unwrap();
    let request = unbuildable_request(worktree.path());
    let failed = FailedBuilds::default();
    let first =
        claimflow::python::ensure_environment_in(cache.path(), &request, &failed).unwrap_err();
    assert_eq!(first.failure(), BuildFailure::NoSuchRequirement, "{first}");
    let envs = cache.path().join("envs");
    assert!(!envs.join(request.digest().hex()).exists());
    assert_eq!(
        std::fs::read_dir(envs.join(".building")).unwrap().count(),
        0
    );
    let second =
        claimflow::python::ensure_environment_in(cache.path(), &request, &failed).unwrap_err();
    assert_eq!(
        second.to_string(),
        format!("{first} (the same environment failed earlier in this run)")
    );
    assert_eq!(second.requirement(), Some("claimflow-no-such-distribution"));
    assert_eq!(second.failure(), BuildFailure::NoSuchRequirement);
}

/// The memo of failed builds lasted as long as the process, so a second run in one process (a
/// test, a tool driving the engine) got the first run's failure without trying: it belongs to the
/// run's session, and the next run builds again.
#[test]
fn a_build_that_failed_in_one_run_is_tried_again_in_the_next() {
    let cache = tempfile::tempdir().unwrap();
    let worktree = tempfile::tempdir().unwrap();
    let request = unbuildable_request(worktree.path());
    let build = |session: &Session| {
        claimflow::python::ensure_environment_in(
            cache.path(),
            &request,
            &session.get::<FailedBuilds>(),
        )
        .unwrap_err()
    };
    let first_run = Session::new();
    assert!(!matches!(
        build(&first_run),
        PythonError::FailedBefore { .. }
    ));
    assert!(matches!(
        build(&first_run),
        PythonError::FailedBefore { .. }
    ));
    drop(first_run);
    let again = build(&Session::new());
    assert!(
        !matches!(again, PythonError::FailedBefore { .. }),
        "the next run repeated the first run's failure: {again}"
    );
    assert_eq!(again.failure(), BuildFailure::NoSuchRequirement, "{again}");
}

/// The environment request for the last commit of `files` (one commit) under python `version`,
/// for a parent dated `date`, read from a checkout of a git fixture.
fn request_for(files: &[(&str, Option<&str>)], version: &str, date: i64) -> EnvironmentRequest {
    let mut repo = crate::common::git::FixtureRepo::new();
    repo.commit("The project", files);
    let checkout = tempfile::tempdir().unwrap();
    let worktree = checkout.path().join("worktree");
    claimflow::python::checkout_commit(repo.repository(), &repo.head().to_string(), &worktree)
        .unwrap();
    let interpreter = claimflow::python::interpreter_for(version)
        .unwrap_or_else(|| panic!("python {version} is installed"));
    EnvironmentRequest::for_commit_at(&interpreter, &worktree, &[], Some(date))
}

/// Regression: pytest 3.5 on Python 3.6 failed to start (`implprefix` TypeError) beside the
/// pluggy 1.x pip chose for a repository's bare or uncapped `pluggy`: the requirement now carries
/// the bounds that pytest release declares for it.
#[test]
fn a_declared_pytest_dependency_is_held_to_what_the_chosen_pytest_supports() {
    // 2018-04-01: pytest 3.5 for Python 3.6.
    let request = request_for(
        &[
            ("requirements-test.txt", Some("pluggy>=0.3\nsix==1.4.1\n")),
            ("tests/test_demo.py", Some(TEST)),
        ],
        "3.6",
        1_522_540_800,
    );
    assert_eq!(request.pytest, "pytest>=3.5,<3.6");
    let spec = |name: &str| {
        let spec = request
            .requirements
            .iter()
            .find(|requirement| {
                claimflow::python::requirement_name(&requirement.spec).as_deref() == Some(name)
            })
            .unwrap_or_else(|| panic!("{name} in {:?}", request.requirements))
            .spec
            .clone();
        claimflow::python::SpecifierSet::parse(spec.trim_start_matches(name)).unwrap()
    };
    let version = |text: &str| text.parse().unwrap();
    let pluggy = spec("pluggy");
    assert!(pluggy.allows(version("0.6.0")), "{pluggy:?}");
    assert!(!pluggy.allows(version("1.0.0")), "{pluggy:?}");
    assert!(!pluggy.allows(version("0.4.0")), "{pluggy:?}");
    // The repository's pin of six predates pytest: pytest's lower bound decides.
    let six = spec("six");
    assert!(
        six.allows(version("1.16.0")) && !six.allows(version("1.4.1")),
        "{six:?}"
    );
}

/// Regression: a pbr project declares its runtime dependencies only in `requirements.txt`; no
/// environment had them, and every interpreter failed to collect.
#[test]
fn a_project_that_installs_from_requirements_txt_gets_its_requirements() {
    let specs = |request: EnvironmentRequest| -> Vec<(String, String)> {
        request
            .requirements
            .into_iter()
            .map(|requirement| (requirement.spec, requirement.source))
            .collect()
    };
    let pbr = request_for(
        &[
            (
                "setup.cfg",
                Some("[metadata]\nname = pbrdemo\n\n[files]\npackages = pbrdemo\n"),
            ),
            (
                "setup.py",
                Some("import setuptools\n\nsetuptools.setup(setup_requires=['pbr'], pbr=True)\n"),
            ),
            ("requirements.txt", Some("pbr>=1.6\nsix>=1.9.0 # MIT\n")),
            ("tests/test_demo.py", Some(TEST)),
        ],
        "3.11",
        1_700_000_000,
    );
    let pbr = specs(pbr);
    assert!(
        pbr.contains(&("six>=1.9.0".to_string(), "requirements.txt".to_string())),
        "{pbr:?}"
    );
    let reading = request_for(
        &[
            (
                "setup.py",
                Some(
                    "from setuptools import setup\n\nwith open('requirements.txt') as f:\n    \
                     requires = f.read().splitlines()\n\nsetup(name='reader', install_requires=requires)\n",
                ),
            ),
            ("requirements.txt", Some("attrs>=19.1\n")),
            ("tests/test_demo.py", Some(TEST)),
        ],
        "3.11",
        1_700_000_000,
    );
    let reading = specs(reading);
    assert!(
        reading.contains(&("attrs>=19.1".to_string(), "requirements.txt".to_string())),
        "{reading:?}"
    );
}

/// Regression (humanize, attrs, sortedcontainers, arrow on the held-out run): test dependencies
/// declared where the project's own CI installs them, but not where claimflow looked, were never
/// installed, and the touched test modules did not collect (`freezegun`, `hypothesis`, `nose`).
#[test]
fn test_dependencies_where_the_projects_ci_installs_them_enter_the_environment() {
    let names = |request: &EnvironmentRequest| -> Vec<String> {
        request
            .requirements
            .iter()
            .filter_map(|requirement| claimflow::python::requirement_name(&requirement.spec))
            .collect()
    };
    // humanize 2025: a dotted key of `[project]`.
    let humanize = request_for(
        &[
            (
                "pyproject.toml",
                Some(
                    "[project]\nname = \"humanize\"\noptional-dependencies.tests = [\n  \"freezegun\",\n  \"pytest\",\n]\n\
                     urls.\"Issue tracker\" = \"https://example.org\"\n",
                ),
            ),
            ("tests/test_demo.py", Some(TEST)),
        ],
        "3.11",
        1_700_000_000,
    );
    assert!(
        names(&humanize).contains(&"freezegun".to_string()),
        "{humanize:?}"
    );
    // attrs 2021: an extra named `tests_no_zope`, bound at module level; and one tox installs.
    let attrs = request_for(
        &[
            (
                "setup.py",
                Some(
                    "from setuptools import setup\n\nEXTRAS_REQUIRE = {\n    \"docs\": [\"furo\"],\n    \
                     \"tests_no_zope\": [\"hypothesis\", \"pytest>=4.3.0\"],\n    \"ci\": [\"pympler\"],\n}\n\n\
                     setup(name=\"attrs\", extras_require=EXTRAS_REQUIRE)\n",
                ),
            ),
            (
                "tox.ini",
                Some(
                    "[testenv]\nextras = {env:TOX_AP_TEST_EXTRAS:ci}\ncommands = python -m pytest\n",
                ),
            ),
            ("tests/test_demo.py", Some(TEST)),
        ],
        "3.11",
        1_700_000_000,
    );
    let attrs_names = names(&attrs);
    assert!(attrs_names.contains(&"hypothesis".to_string()), "{attrs:?}");
    assert!(attrs_names.contains(&"pympler".to_string()), "{attrs:?}");
    assert!(!attrs_names.contains(&"furo".to_string()), "{attrs:?}");
    // sortedcontainers 2018: `nose` only in a general requirements.txt full of other pins; the
    // tests import it, so it is installed, and the rest of the file is not.
    let sorted = request_for(
        &[
            (
                "requirements.txt",
                Some("Sphinx==1.2\nipython==1.1.0\nnose==1.3.7\n"),
            ),
            (
                "tests/test_demo.py",
                Some(
                    "from nose.tools import raises\nfrom demo import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
                ),
            ),
        ],
        "3.11",
        1_700_000_000,
    );
    assert_eq!(names(&sorted), ["nose"], "{sorted:?}");
    // A tox `-r` file and a PEP 735 dependency group.
    let grouped = request_for(
        &[
            (
                "tox.ini",
                Some("[testenv]\ndeps = -r{toxinidir}/ci/tests.txt\n"),
            ),
            ("ci/tests.txt", Some("mock>=2\n")),
            (
                "pyproject.toml",
                Some(
                    "[project]\nname = \"grouped\"\n\n[dependency-groups]\ntest = [\"freezegun\", {include-group = \"lint\"}]\nlint = [\"ruff\"]\n",
                ),
            ),
            ("tests/test_demo.py", Some(TEST)),
        ],
        "3.11",
        1_700_000_000,
    );
    let grouped_names = names(&grouped);
    assert!(grouped_names.contains(&"mock".to_string()), "{grouped:?}");
    assert!(
        grouped_names.contains(&"freezegun".to_string()),
        "{grouped:?}"
    );
    assert!(!grouped_names.contains(&"lint".to_string()), "{grouped:?}");
}

/// Regression (toolz 06c75df42e, May 2016): with no `python_requires` or classifiers, the newest
/// interpreters were tried first, and the 2016 test module does not collect on Python 3.11 to
/// 3.13; after three interpreters the commit was excluded. Interpreters released more than a
/// year after the parent commit are now tried last, so it is mined under its era's Python.
#[test]
fn an_old_commit_is_mined_under_an_interpreter_of_its_era() {
    // 2016-05-07; the module fails at import on Python 3.11 and later, as toolz's did.
    let test = format!(
        "import sys\n\nif sys.version_info >= (3, 11):\n    raise RuntimeError('not this era')\n\n{TEST}"
    );
    let directory = tempfile::tempdir().unwrap();
    let commits = dated_repository(directory.path(), 1_462_579_200, &test);
    let root = tempfile::tempdir().unwrap();
    let mined = mine(
        root.path(),
        vec![repo_spec("toolz", directory.path(), &[], &[])],
        json!({}),
        &[record("toolz", &commits)],
    );
    assert!(mined.excluded.is_empty(), "{:?}", mined.excluded);
    assert_eq!(mined.claims, 1);
    let summary =
        std::fs::read_to_string(root.path().join("results/claims-summary.jsonl")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(summary.lines().next().unwrap()).unwrap();
    let interpreter = summary["interpreter"].as_str().unwrap();
    assert!(interpreter.starts_with("3.6."), "{summary}");
    assert!(
        summary["attempts"].as_array().unwrap().is_empty(),
        "{summary}"
    );
}

/// Commits `versions` (path -> text, paths with at most one directory) one after the other on
/// `main`, a minute apart from `time`.
pub(crate) fn commit_versions(directory: &Path, time: i64, versions: &[BTreeMap<&str, &str>]) {
    let repository = Repository::init(directory).unwrap();
    let mut parent: Option<git2::Oid> = None;
    for (index, files) in versions.iter().enumerate() {
        let tree = repository
            .find_tree(write_tree(&repository, files))
            .unwrap();
        let when = Time::new(time + 60 * index as i64, 0);
        let signature = Signature::new("claimflow", "test@claimflow.invalid", &when).unwrap();
        let parents: Vec<git2::Commit> = parent
            .iter()
            .map(|oid| repository.find_commit(*oid).unwrap())
            .collect();
        let parents: Vec<&git2::Commit> = parents.iter().collect();
        let message = format!("commit {index}\n");
        let oid = repository
            .commit(
                Some("refs/heads/main"),
                &signature,
                &signature,
                &message,
                &tree,
                &parents,
            )
            .unwrap();
        parent = Some(oid);
    }
}

/// Regression (arrow 2019 and 2020, the two top-ranked commits of the development split): a
/// project that ran its tests with nose kept them in `tests/*_tests.py`, which pytest's default
/// `python_files` does not name, so the commits were excluded as `no-test-modules`. Such a
/// project's test modules are now named by nose's rule, for mining and for the child's own check.
#[test]
fn a_nose_projects_test_modules_are_mined_and_labelled() {
    let test = "import unittest\n\nfrom demo import add\n\n\nclass AddTests(unittest.TestCase):\n    \
                def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n        self.assertEqual(add(2, 2), 4)\n";
    let parent = BTreeMap::from([
        ("demo/__init__.py", SOURCE),
        ("tests/__init__.py", ""),
        ("tests/demo_tests.py", test),
        ("tox.ini", "[testenv]\ndeps = nose\ncommands = nosetests\n"),
    ]);
    let source = SOURCE.replace("a + b", "a + b + 1");
    // The child adds one more, and its own test says so (one assertion deleted).
    let child_test = test
        .replace("        self.assertEqual(add(2, 2), 4)\n", "")
        .replace("add(1, 2), 3)", "add(1, 2), 4)");
    let mut child = parent.clone();
    child.insert("demo/__init__.py", &source);
    child.insert("tests/demo_tests.py", &child_test);
    let repository = tempfile::tempdir().unwrap();
    commit_versions(repository.path(), 1_700_000_000, &[parent, child]);
    let project = Project::new();
    project.file(
        "pipeline.yaml",
        &labelling_pipeline("nose", repository.path(), "3.11", Some(5)),
    );
    project.ok(&["run", "pipeline.yaml"]);
    let excluded = project.read("results/nose/excluded.jsonl");
    let truth: Vec<serde_json::Value> = project
        .read("results/nose/truth.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(truth.len(), 1, "{excluded}");
    assert_eq!(
        truth[0]["claim"]
            .as_str()
            .unwrap()
            .rsplit_once('@')
            .unwrap()
            .1
            .split_once("::")
            .unwrap()
            .1,
        "tests/demo_tests.py::AddTests::test_add"
    );
    assert_eq!(truth[0]["label"], "flipped", "{truth:?}");
}

/// A test module that runs more tests when `six` and a distribution that does not exist are
/// importable, the way tabulate's tests use numpy, pandas and wcwidth.
const OPTIONAL_TEST: &str = "\
import pytest

try:
    import claimflow_no_such_distribution
except ImportError:
    claimflow_no_such_distribution = None

from demo import add


def test_add():
    assert add(1, 2) == 3


def test_six():
    six = pytest.importorskip(\"six\")
    assert six.PY3
";

/// The project's files for [`OPTIONAL_TEST`]: its optional dependencies are declared only by a
/// CI variant of tox (tabulate's `py3X-extra`) and by an extra no test environment installs.
fn optional_project(extra: &str) -> Vec<(&'static str, Option<String>)> {
    vec![
        (
            "tox.ini",
            Some(format!(
                "[tox]\nenvlist = py312\n\n[testenv]\ndeps = pytest\n\n\
                 [testenv:py312-extra]\ndeps =\n    pytest\n    {extra}\n"
            )),
        ),
        (
            "pyproject.toml",
            Some(
                "[project]\nname = \"demo\"\n\n[project.optional-dependencies]\n\
                 compat = [\"six>=1.10\"]\n"
                    .to_string(),
            ),
        ),
        ("demo.py", Some(SOURCE.to_string())),
        ("tests/test_demo.py", Some(OPTIONAL_TEST.to_string())),
    ]
}

fn optional_request(extra: &str) -> EnvironmentRequest {
    let files = optional_project(extra);
    let files: Vec<(&str, Option<&str>)> = files
        .iter()
        .map(|(path, text)| (*path, text.as_deref()))
        .collect();
    request_for(&files, "3.12", 1_700_000_000)
}

/// Regression (tabulate, 69 claims `unknown_at_parent`): tests that skip themselves when numpy,
/// pandas or wcwidth is missing were skipped at the parent, since those are declared only by a
/// CI variant of tox and an extra, and a skipped test is no claim. What the tests import
/// optionally and the project declares anywhere is now asked for, apart from the requirements,
/// and enters the environment's address.
#[test]
fn optional_dependencies_the_tests_import_are_requested() {
    let request = optional_request("claimflow-no-such-distribution==9.9");
    let optional: Vec<(&str, &str)> = request
        .optional
        .iter()
        .map(|requirement| (requirement.spec.as_str(), requirement.source.as_str()))
        .collect();
    assert_eq!(
        optional,
        [
            (
                "claimflow-no-such-distribution==9.9",
                "tox.ini [testenv:py312-extra], imported optionally by tests/test_demo.py"
            ),
            (
                "six>=1.10",
                "pyproject.toml extra `compat`, imported optionally by tests/test_demo.py"
            ),
        ]
    );
    assert!(
        request
            .requirements
            .iter()
            .all(|requirement| !requirement.spec.contains("six")),
        "{request:?}"
    );
    let mut without = request.clone();
    without.optional.clear();
    assert_ne!(request.digest(), without.digest());
}

/// An optional dependency without a build for the interpreter (here: without any release) is left
/// out and named in the environment's description; the others are installed, and the
/// environment is built.
#[test]
fn an_optional_dependency_that_will_not_install_does_not_fail_the_environment() {
    let cache = tempfile::tempdir().unwrap();
    let request = optional_request("claimflow-no-such-distribution==9.9");
    let environment =
        claimflow::python::ensure_environment_in(cache.path(), &request, &FailedBuilds::default())
            .unwrap_or_else(|error| panic!("the environment is built: {error}"));
    assert!(environment.has_distribution("six"), "{environment:?}");
    let dropped: Vec<(&str, &str)> = environment
        .dropped
        .iter()
        .map(|dropped| (dropped.spec.as_str(), dropped.source.as_str()))
        .collect();
    assert_eq!(
        dropped,
        [(
            "claimflow-no-such-distribution==9.9",
            "optional: tox.ini [testenv:py312-extra], imported optionally by tests/test_demo.py"
        )]
    );
    let description = std::fs::read_to_string(
        cache
            .path()
            .join("envs")
            .join(request.digest().hex())
            .join("claimflow-environment.json"),
    )
    .unwrap();
    assert!(
        description.contains("claimflow-no-such-distribution==9.9"),
        "{description}"
    );
}
