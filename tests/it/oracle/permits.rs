//! The engine's pytest permits (`--pytest-slots`) are the only bound on the oracle's pytest
//! processes and worktrees: the oracle keeps no slot count of its own, so no item holds a permit
//! while it waits for a worktree, and a run makes no more worktrees than it has permits.
//!
//! The count is taken by the test processes themselves: each pytest session registers a marker
//! file in its own worktree while it runs, counts the markers of every oracle worktree beside it
//! (the rest of the filesystem is read-only to it, but readable), and writes how many it saw to
//! a FIFO the test reads, so the bound is measured, not inferred from timings.

use std::path::Path;
use std::sync::Arc;

use claimflow::engine::{Engine, Recording, RunOptions};
use claimflow::steps::{FixedEnvironment, OracleStep, Registry};

use super::fixture::{Change, FixtureRepo};
use super::library::Case;
use super::procedure::claims;
use super::python::environment;
use super::step::FixedClaims;

/// How long a session waits for company: long enough that sessions allowed to overlap do, and the
/// count would see one more than the permits if the bound did not hold.
const WAIT_FOR_COMPANY: f64 = 3.0;

/// A conftest that counts the pytest sessions running at once by the markers in the oracle's
/// worktrees. Each session waits (at most [`WAIT_FOR_COMPANY`] seconds) until it sees more than
/// `permits` sessions, writing the largest count it saw to the FIFO `seen`. Names are random: each
/// test process may run in a PID namespace of its own, where process ids repeat.
fn counting_conftest(seen: &Path, permits: usize) -> String {
    format!(
        r#"import glob
import os
import time

SEEN = {seen:?}
PERMITS = {permits}


def pytest_configure(config):
    worktree = str(config.rootpath)
    mine = os.path.join(worktree, "running-" + os.urandom(8).hex())
    open(mine, "w").close()
    config._claimflow_marker = mine
    pattern = os.path.join(os.path.dirname(worktree), "oracle-*", "running-*")
    most = 0
    deadline = time.time() + {WAIT_FOR_COMPANY}
    while True:
        most = max(most, len(glob.glob(pattern)))
        if most > PERMITS or time.time() > deadline:
            break
        time.sleep(0.02)
    with open(SEEN, "a") as seen:
        seen.write("%d\n" % most)


def pytest_unconfigure(config):
    os.remove(config._claimflow_marker)
"#,
        seen = seen.display().to_string(),
    )
}

/// Runs the oracle over `commits` children of one base under `permits` pytest permits; returns
/// the largest number of pytest sessions any session saw at once, how many sessions ran, and how
/// many oracle worktrees the run made.
fn run_with_permits(commits: usize, permits: usize) -> (usize, usize, usize) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let seen = crate::hostile::FifoReader::start(&root.join("seen"));
    let mut repo = FixtureRepo::init(&root.join("repo"));
    let base = repo.commit(
        None,
        "A library whose test sessions count each other",
        &[
            Change::Write("pkg/__init__.py", ""),
            Change::Write("pkg/core.py", "def value():\n    return 1\n"),
            Change::Write(
                "tests/conftest.py",
                &counting_conftest(&root.join("seen"), permits),
            ),
            Change::Write(
                "tests/test_value.py",
                "from pkg.core import value\n\n\ndef test_value():\n    assert value() == 1\n",
            ),
        ],
    );
    let mut all = Vec::new();
    let mut last = base;
    for index in 0..commits {
        let core = format!("def value():\n    return 1\n\n\ndef other():\n    return {index}\n");
        let commit = repo.commit(
            Some(base),
            &format!("change {index}"),
            &[Change::Write("pkg/core.py", &core)],
        );
        all.extend(claims(
            Case {
                parent: base,
                commit,
            },
            &["tests/test_value.py::test_value"],
        ));
        last = commit;
    }
    repo.repository
        .reference("refs/heads/main", last, true, "branch for the pipeline")
        .unwrap();
    let registry = Registry::with(vec![
        Arc::new(FixedClaims(all)),
        Arc::new(OracleStep::new(Arc::new(FixedEnvironment(environment())))),
    ]);
    let file = root.join("pipeline.yaml");
    std::fs::write(
        &file,
        "version: 1\nname: permits\nrepos:\n  - name: demo\n    path: repo\n    branch: main\n\
         steps:\n  claims: {uses: mine-claims}\n  truth: {uses: oracle, needs: [claims], with: {runs: 1}}\n",
    )
    .unwrap();
    let pipeline = claimflow::pipeline::load(&file, root, &registry)
        .unwrap_or_else(|errors| panic!("{errors:?}"));
    let reporter = Recording::default();
    let engine = Engine::new(&pipeline, &registry, &reporter).unwrap();
    let options = RunOptions {
        jobs: commits,
        pytest_slots: permits,
        ..RunOptions::default()
    };
    let summary = engine
        .run(&options)
        .unwrap_or_else(|error| panic!("{error}: {:?}", reporter.events()));
    assert_eq!(summary.computed(), 2 * commits, "{:?}", summary.steps);
    let seen: Vec<usize> = seen
        .finish()
        .lines()
        .map(|line| line.parse().unwrap())
        .collect();
    let worktrees = std::fs::read_dir(root.join(".claimflow/worktrees"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("oracle-"))
        .count();
    (
        seen.iter().copied().max().unwrap_or(0),
        seen.len(),
        worktrees,
    )
}

#[test]
fn pytest_processes_and_worktrees_never_exceed_the_pytest_permits() {
    let commits = 4;
    let permits = 2;
    let (most, sessions, worktrees) = run_with_permits(commits, permits);
    // Every commit ran pytest at its parent and at its child.
    assert!(sessions >= 2 * commits, "{sessions} sessions");
    assert!(
        most <= permits,
        "{most} pytest sessions ran at once under {permits} permits"
    );
    // The permits were used: with four commits to judge, two sessions met.
    assert_eq!(most, permits, "the sessions never overlapped");
    assert!(
        (1..=permits).contains(&worktrees),
        "{worktrees} worktrees under {permits} permits"
    );
}
