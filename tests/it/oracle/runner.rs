//! The runner against real pytest processes: what mined code sees of the environment, the process
//! group killed at the end of a run and at a timeout, the plugin under Python 2.7.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use claimflow::oracle::command::RunFiles;
use claimflow::oracle::runner::{RunRequest, run_pytest};
use claimflow::oracle::{UnknownReason, Verdict, classify};
use claimflow::process::Outcome;
use claimflow::python::Environment;

use super::python::{environment, environment_python2};

fn write(dir: &Path, relative: &str, content: &str) {
    let path = dir.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn run(
    environment: &Environment,
    dir: &Path,
    files: &[&str],
    nodes: &[&str],
    timeout: Duration,
) -> (Outcome, Vec<(String, Verdict)>) {
    let files: Vec<String> = files.iter().map(|file| file.to_string()).collect();
    let nodes: Vec<String> = nodes.iter().map(|node| node.to_string()).collect();
    let report = run_pytest(&RunRequest {
        environment,
        worktree: &dir.join("worktree"),
        files: &RunFiles::new(dir.join("run")),
        test_files: &files,
        nodes: &nodes,
        run: 1,
        timeout,
    })
    .expect("pytest runs");
    let verdicts = classify(&nodes, &report.outcome, &report.records)
        .verdicts
        .into_iter()
        .collect();
    (report.outcome, verdicts)
}

/// A helper module whose `spawn()` starts a sleeper marked with `marker` on its command line (its
/// pid would be of no use: the test process may run in a PID namespace of its own).
fn spawn_sleeper(marker: &Path) -> String {
    format!(
        r#"import subprocess, sys


def spawn():
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", {marker:?}])
    with open("sleeper.started", "w") as handle:
        handle.write("yes")
"#,
        marker = marker.display().to_string()
    )
}

/// True once no process has `marker` on its command line (a zombie does not count).
fn none_running(marker: &Path) -> bool {
    let marker = marker.display().to_string();
    gone_when(|| {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|entry| {
                std::fs::read(entry.path().join("cmdline"))
                    .is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(&marker))
            })
            .all(|entry| {
                std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|stat| {
                    stat.split(") ")
                        .nth(1)
                        .is_some_and(|rest| rest.starts_with('Z'))
                })
            })
    })
}

fn gone_when(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..50 {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

#[test]
fn mined_code_sees_only_the_allow_listed_environment() {
    let dir = tempfile::tempdir().unwrap();
    let worktree = dir.path().join("worktree");
    write(
        &worktree,
        "tests/test_env.py",
        "import json, os\n\n\ndef test_env():\n    with open('env.json', 'w') as handle:\n        json.dump(dict(os.environ), handle)\n",
    );
    let (outcome, verdicts) = run(
        &environment(),
        dir.path(),
        &["tests/test_env.py"],
        &["tests/test_env.py::test_env"],
        Duration::from_secs(60),
    );
    assert_eq!(outcome, Outcome::Exited(0));
    assert_eq!(verdicts[0].1, Verdict::Passed);
    let seen: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(worktree.join("env.json")).unwrap()).unwrap();
    let names: BTreeSet<&str> = seen.keys().map(String::as_str).collect();
    for name in &names {
        assert!(!name.starts_with("CARGO"), "{name} leaked into mined code");
        assert!(!claimflow::oracle::command::looks_secret(name), "{name}");
    }
    assert!(!names.contains("PYTEST_ADDOPTS"));
    assert_eq!(seen["PYTHONHASHSEED"], "1");
    assert_eq!(seen["PYTHONDONTWRITEBYTECODE"], "1");
    let home = Path::new(seen["HOME"].as_str().unwrap());
    assert!(home.starts_with(dir.path().join("run")), "{home:?}");
    assert!(Path::new(seen["TMPDIR"].as_str().unwrap()).starts_with(dir.path().join("run")));
}

#[test]
fn a_process_started_by_a_test_does_not_outlive_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let worktree = dir.path().join("worktree");
    write(&worktree, "tests/helper.py", &spawn_sleeper(dir.path()));
    write(
        &worktree,
        "tests/test_spawn.py",
        "from helper import spawn\n\n\ndef test_spawn():\n    spawn()\n",
    );
    let (outcome, verdicts) = run(
        &environment(),
        dir.path(),
        &["tests/test_spawn.py"],
        &["tests/test_spawn.py::test_spawn"],
        Duration::from_secs(60),
    );
    assert_eq!(outcome, Outcome::Exited(0));
    assert_eq!(verdicts[0].1, Verdict::Passed);
    assert!(worktree.join("sleeper.started").is_file());
    assert!(none_running(dir.path()), "the sleeper survived the run");
}

#[test]
fn a_hanging_test_times_out_with_no_verdict_and_its_group_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let worktree = dir.path().join("worktree");
    write(&worktree, "tests/helper.py", &spawn_sleeper(dir.path()));
    write(
        &worktree,
        "tests/test_hang.py",
        "import time\n\nfrom helper import spawn\n\n\ndef test_hang():\n    spawn()\n    time.sleep(600)\n",
    );
    let started = std::time::Instant::now();
    let (outcome, verdicts) = run(
        &environment(),
        dir.path(),
        &["tests/test_hang.py"],
        &["tests/test_hang.py::test_hang"],
        Duration::from_secs(3),
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(outcome, Outcome::TimedOut);
    assert_eq!(verdicts[0].1, Verdict::Unknown(UnknownReason::Timeout));
    assert!(worktree.join("sleeper.started").is_file());
    assert!(none_running(dir.path()), "the sleeper survived the timeout");
}

/// The real-pytest counterpart of the classifier's regression test of the same name.
#[test]
fn collection_error_aborting_a_batch_yields_no_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let worktree = dir.path().join("worktree");
    write(
        &worktree,
        "tests/test_good.py",
        "def test_good():\n    assert True\n",
    );
    write(
        &worktree,
        "tests/test_bad.py",
        "from nowhere import something\n\n\ndef test_bad():\n    assert something\n",
    );
    let (outcome, verdicts) = run(
        &environment(),
        dir.path(),
        &["tests/test_bad.py", "tests/test_good.py"],
        &[
            "tests/test_good.py::test_good",
            "tests/test_bad.py::test_bad",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(outcome, Outcome::Exited(2));
    for (node, verdict) in verdicts {
        assert_eq!(
            verdict,
            Verdict::Unknown(UnknownReason::CollectionError),
            "{node}"
        );
    }
}

#[test]
fn the_result_plugin_runs_under_python_2() {
    let dir = tempfile::tempdir().unwrap();
    let worktree = dir.path().join("worktree");
    write(
        &worktree,
        "tests/test_old.py",
        "def test_passes():\n    assert 1 + 1 == 2\n\n\ndef test_fails():\n    assert 1 + 1 == 3\n\n\ndef test_raises():\n    {}.pop('missing')\n\n\ndef test_unselected():\n    assert False\n",
    );
    let python2 = environment_python2();
    assert!(python2.interpreter.starts_with("2.7"));
    let (outcome, verdicts) = run(
        &python2,
        dir.path(),
        &["tests/test_old.py"],
        &[
            "tests/test_old.py::test_passes",
            "tests/test_old.py::test_fails",
            "tests/test_old.py::test_raises",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(outcome, Outcome::Exited(1));
    let rendered: Vec<String> = verdicts
        .iter()
        .map(|(node, verdict)| format!("{node}: {verdict:?}"))
        .collect();
    insta::assert_snapshot!(rendered.join("\n"));
}
