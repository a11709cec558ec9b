//! The oracle's procedure on real pytest runs over the fixture library's cases.

use std::path::Path;
use std::time::Duration;

use claimflow::mining::TestFileRules;
use claimflow::oracle::invariants::check_judgements;
use claimflow::oracle::{
    CommitUnderTest, ImportErrorPolicy, Judgement, Settings, Slot, Worktree, judge_commit,
};
use claimflow::python::Environment;
use claimflow::records::{ClaimRecord, Outcome, claim_id};
use git2::Repository;

use super::library::{Case, Library};
use super::python::environment;

/// Claims for `nodes` of a case, as mining would write them.
pub fn claims(case: Case, nodes: &[&str]) -> Vec<ClaimRecord> {
    nodes
        .iter()
        .map(|node| ClaimRecord {
            id: claim_id("demo", &case.parent.to_string(), node),
            repo: "demo".into(),
            parent: case.parent.to_string(),
            commit: case.commit.to_string(),
            node: node.to_string(),
            source: format!("def {}(): ...", node.rsplit("::").next().unwrap()),
            assertions: vec!["assert result".into()],
            fixtures: Vec::new(),
        })
        .collect()
}

fn judge(
    library: &Library,
    workdir: &Path,
    case: Case,
    nodes: &[&str],
    runs: u32,
    policy: ImportErrorPolicy,
) -> Vec<Judgement> {
    judge_in(
        &library.repo.repository,
        &environment(),
        workdir,
        case,
        nodes,
        runs,
        policy,
    )
}

/// Judges `case` of `repository` in one slot under `workdir`, and checks the oracle's invariants.
pub fn judge_in(
    repository: &Repository,
    environment: &Environment,
    workdir: &Path,
    case: Case,
    nodes: &[&str],
    runs: u32,
    policy: ImportErrorPolicy,
) -> Vec<Judgement> {
    let claims = claims(case, nodes);
    let settings = Settings {
        runs,
        timeout: Duration::from_secs(120),
        import_errors: policy,
        test_files: TestFileRules::default(),
    };
    let mut slot = Slot {
        worktree: Worktree::new(workdir.join("worktrees/oracle-0")),
        runs: workdir.join("oracle/slot-0"),
    };
    let parent = case.parent.to_string();
    let commit = case.commit.to_string();
    let judgements = judge_commit(
        &settings,
        environment,
        &mut slot,
        &CommitUnderTest {
            repository,
            parent: &parent,
            commit: &commit,
            test_files: &[],
            claims: &claims,
        },
    )
    .expect("judge the commit");
    let ids: Vec<String> = claims.iter().map(|claim| claim.id.clone()).collect();
    let problems = check_judgements(&ids, &judgements, runs, policy);
    assert!(problems.is_empty(), "{problems:?}");
    judgements
}

/// One line per claim: node, label, cause, reason, and the runs as P/F/U.
pub fn render(judgements: &[Judgement]) -> String {
    let runs = |records: &[claimflow::records::RunRecord]| -> String {
        records
            .iter()
            .map(|run| match run.outcome {
                Outcome::Passed => 'P',
                Outcome::Failed => 'F',
                Outcome::Unknown => 'U',
            })
            .collect()
    };
    judgements
        .iter()
        .map(|judgement| {
            let truth = &judgement.truth;
            let node = truth
                .claim
                .split("::")
                .skip(1)
                .collect::<Vec<_>>()
                .join("::");
            format!(
                "{node}\n  label: {:?}\n  cause: {:?}\n  reason: {}\n  parent: {}\n  child: {}\n",
                truth.label,
                judgement.cause,
                truth.reason.as_deref().unwrap_or("-"),
                runs(&truth.parent_runs),
                runs(&truth.child_runs),
            )
        })
        .collect()
}

fn setup() -> (tempfile::TempDir, Library) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let library = Library::create(&dir.path().join("repo"));
    (dir, library)
}

#[test]
fn assertion_flip_with_the_test_updated_in_the_same_commit_is_flipped() {
    let (dir, mut library) = setup();
    let case = library.assertion_flip();
    let judgements = judge(
        &library,
        dir.path(),
        case,
        &[
            "tests/test_core.py::test_add",
            "tests/test_core.py::test_mul",
        ],
        3,
        ImportErrorPolicy::Discard,
    );
    insta::assert_snapshot!(render(&judgements));
}

#[test]
fn a_test_the_child_skips_does_not_make_its_own_check_inconclusive() {
    let (dir, mut library) = setup();
    let case = library.assertion_flip_with_a_skipped_test();
    let judgements = judge(
        &library,
        dir.path(),
        case,
        &[
            "tests/test_core.py::test_add",
            "tests/test_core.py::test_mul",
        ],
        3,
        ImportErrorPolicy::Discard,
    );
    insta::assert_snapshot!(render(&judgements));
}

#[test]
fn removed_api_is_an_exception_flip_naming_the_class() {
    let (dir, mut library) = setup();
    let case = library.removed_api();
    let judgements = judge(
        &library,
        dir.path(),
        case,
        &["tests/test_store.py::test_clear"],
        3,
        ImportErrorPolicy::Discard,
    );
    insta::assert_snapshot!(render(&judgements));
}

/// The one test with the default N = 10.
#[test]
fn unrelated_change_is_held_over_the_default_ten_runs() {
    let (dir, mut library) = setup();
    let case = library.unrelated();
    let judgements = judge(
        &library,
        dir.path(),
        case,
        &[
            "tests/test_core.py::test_add",
            "tests/test_core.py::test_mul",
            "tests/test_seed.py::test_even_seed",
        ],
        10,
        ImportErrorPolicy::Discard,
    );
    insta::assert_snapshot!(render(&judgements));
}

#[test]
fn broken_child_is_excluded_with_the_reason() {
    let (dir, mut library) = setup();
    let case = library.broken_child();
    let judgements = judge(
        &library,
        dir.path(),
        case,
        &[
            "tests/test_core.py::test_add",
            "tests/test_core.py::test_mul",
        ],
        3,
        ImportErrorPolicy::Discard,
    );
    insta::assert_snapshot!(render(&judgements));
}

#[test]
fn nondeterministic_child_is_discarded_as_flaky() {
    let (dir, mut library) = setup();
    let case = library.nondeterministic();
    let judgements = judge(
        &library,
        dir.path(),
        case,
        &["tests/test_core.py::test_pick"],
        3,
        ImportErrorPolicy::Discard,
    );
    insta::assert_snapshot!(render(&judgements));
}

#[test]
fn test_file_that_no_longer_imports_gets_the_import_error_label_while_others_get_verdicts() {
    let (dir, mut library) = setup();
    let case = library.import_error();
    let nodes = [
        "tests/test_legacy.py::test_legacy",
        "tests/test_core.py::test_add",
    ];
    let discard = judge(
        &library,
        dir.path(),
        case,
        &nodes,
        3,
        ImportErrorPolicy::Discard,
    );
    insta::assert_snapshot!("import_error_discard", render(&discard));
    let flip = judge(
        &library,
        dir.path(),
        case,
        &nodes,
        3,
        ImportErrorPolicy::Flip,
    );
    insta::assert_snapshot!("import_error_flip", render(&flip));
}

#[test]
fn collection_error_batch_yields_no_verdicts_never_failures() {
    let (dir, mut library) = setup();
    let case = library.conftest_error();
    let judgements = judge(
        &library,
        dir.path(),
        case,
        &[
            "tests/test_core.py::test_add",
            "tests/test_core.py::test_mul",
        ],
        3,
        ImportErrorPolicy::Discard,
    );
    insta::assert_snapshot!(render(&judgements));
}

#[test]
fn collection_error_at_the_parent_drops_only_that_file() {
    let (dir, mut library) = setup();
    let case = library.parent_collection_error();
    let judgements = judge(
        &library,
        dir.path(),
        case,
        &[
            "tests/test_optional.py::test_optional",
            "tests/test_core.py::test_add",
        ],
        3,
        ImportErrorPolicy::Discard,
    );
    insta::assert_snapshot!(render(&judgements));
}
