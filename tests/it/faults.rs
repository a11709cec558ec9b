//! Faults, each a named test on the real chain (ranking, mining, the oracle, two static arms) over
//! the `repro_smoke` fixture: SIGKILL at seeded random moments, a corrupted cache, two runs at
//! once, and tests that hang, kill their interpreter, leave a daemon behind or flood stdout.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::git::FixtureRepo;
use crate::common::project::Project;

fn pipeline(repository: &Path, runs: u32, timeout: u32) -> String {
    format!(
        r#"version: 1
name: faults
repos:
  - {{name: fixture, path: "{repository}", branch: main, python: ["3.11"]}}
steps:
  rank:   {{uses: rank-commits, with: {{by: assertion-deletions, top: 3}}}}
  claims: {{uses: mine-claims, needs: [rank]}}
  truth:  {{uses: oracle, needs: [claims], with: {{runs: {runs}, timeout: {timeout}}}}}
  a3:     {{uses: arm, needs: [claims], with: {{arm: file-anchoring}}}}
  a4:     {{uses: arm, needs: [claims], with: {{arm: symbol-anchoring}}}}
"#,
        repository = repository.display()
    )
}

fn project(repository: &Path) -> Project {
    let project = Project::new();
    project.file("pipeline.yaml", &pipeline(repository, 3, 60));
    project
}

/// The result files that must not depend on how a run got there.
const RESULTS: &[&str] = &[
    "results/faults/commits.jsonl",
    "results/faults/claims.jsonl",
    "results/faults/truth.jsonl",
    "results/faults/predictions/a3.jsonl",
    "results/faults/predictions/a4.jsonl",
];

/// The result files with what may differ between runs taken out: how long a run took.
fn results(project: &Project) -> Vec<(String, String)> {
    RESULTS
        .iter()
        .map(|file| {
            let text = project.read(file);
            let lines: Vec<String> = text
                .lines()
                .map(|line| {
                    let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
                    strip_timings(&mut value);
                    value.to_string()
                })
                .collect();
            (file.to_string(), lines.join("\n"))
        })
        .collect()
}

fn strip_timings(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.retain(|key, _| !key.contains("seconds") && !key.contains("elapsed"));
            map.values_mut().for_each(strip_timings);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_timings),
        _ => {}
    }
}

/// Processes whose working directory or command line is inside `root` (claimflow runs there, and
/// pytest in its worktrees), except zombies.
fn processes_in(root: &Path) -> Vec<String> {
    let root_text = root.display().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .map(|stat| {
                stat.split(") ")
                    .nth(1)
                    .is_some_and(|rest| rest.starts_with('Z'))
            })
            .unwrap_or(true);
        if zombie {
            continue;
        }
        let cwd = std::fs::read_link(entry.path().join("cwd")).ok();
        let cmdline = std::fs::read(entry.path().join("cmdline"))
            .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " "))
            .unwrap_or_default();
        if cwd.is_some_and(|cwd| cwd.starts_with(root)) || cmdline.contains(&root_text) {
            found.push(format!("{name}: {cmdline}"));
        }
    }
    found
}

/// Waits up to 10 s for every process in `root` to be gone; returns those left.
fn left_running(root: &Path) -> Vec<String> {
    let started = Instant::now();
    loop {
        let left = processes_in(root);
        if left.is_empty() || started.elapsed() > Duration::from_secs(10) {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn verify(project: &Project) -> crate::common::project::Ran {
    project.run(&["cache", "verify", "pipeline.yaml"])
}

#[test]
fn sigkill_at_twenty_seeded_moments_leaves_the_results_of_an_uninterrupted_run() {
    let repository = crate::invariants::repro_smoke::fixture();
    let reference = project(repository.path());
    let started = Instant::now();
    reference.ok(&["run", "pipeline.yaml"]);
    // The moments are drawn over the length of an uninterrupted run of a fresh workdir.
    let length = started.elapsed().max(Duration::from_millis(500));
    let expected = results(&reference);

    let killed = project(repository.path());
    let mut random = fastrand::Rng::with_seed(14);
    let mut completed_before_the_kill = 0;
    for moment in 0..20 {
        let delay = Duration::from_millis(random.u64(0..length.as_millis() as u64));
        let mut child = killed
            .command(&["run", "pipeline.yaml", "-q"])
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        if child.try_wait().unwrap().is_some() {
            completed_before_the_kill += 1;
        }
        // SAFETY: signalling a child this test started and has not reaped.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) };
        let _ = child.wait();
        let left = left_running(killed.root());
        assert!(
            left.is_empty(),
            "after the kill at {delay:?} (moment {moment}): {left:#?}"
        );
        let verified = verify(&killed);
        assert_eq!(
            verified.code, 0,
            "after the kill at {delay:?} (moment {moment}): {}{}",
            verified.stdout, verified.stderr
        );
    }
    eprintln!(
        "20 kills over {length:?}; {completed_before_the_kill} runs had completed before theirs"
    );
    killed.ok(&["run", "pipeline.yaml"]);
    assert_eq!(results(&killed), expected);
    let verified = verify(&killed);
    assert_eq!(verified.code, 0, "{}", verified.stdout);
    assert!(left_running(killed.root()).is_empty());
}

#[test]
fn a_corrupted_cache_object_is_found_recomputed_and_never_served() {
    let repository = crate::invariants::repro_smoke::fixture();
    let project = project(repository.path());
    project.ok(&["run", "pipeline.yaml"]);
    let expected = results(&project);
    let objects: Vec<std::path::PathBuf> = files_under(&project.path(".claimflow/cache/objects"));
    assert!(objects.len() >= 3, "{objects:?}");
    // A flipped byte, a truncated file, a deleted object.
    let mut flipped = std::fs::read(&objects[0]).unwrap();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x20;
    std::fs::write(&objects[0], &flipped).unwrap();
    let truncated = std::fs::read(&objects[1]).unwrap();
    std::fs::write(&objects[1], &truncated[..truncated.len() / 2]).unwrap();
    std::fs::remove_file(&objects[2]).unwrap();
    // And a record whose output sits inline in the action log: a byte flipped in its middle.
    let log = project.path(".claimflow/cache/actions.log");
    let mut bytes = std::fs::read(&log).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&log, &bytes).unwrap();

    let verified = verify(&project);
    assert_eq!(verified.code, 1, "{}", verified.stdout);
    for object in &objects[..2] {
        let name = object.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            verified.stdout.contains(&name),
            "{name}: {}",
            verified.stdout
        );
    }
    assert!(
        verified.stdout.contains("torn"),
        "the flipped log record: {}",
        verified.stdout
    );

    let ran = project.ok(&["run", "pipeline.yaml"]);
    assert!(
        !ran.stderr.contains("run finished: 0 computed"),
        "nothing was recomputed: {}",
        ran.stderr
    );
    assert_eq!(results(&project), expected);
    project.ok(&["cache", "gc", "pipeline.yaml"]);
    let verified = verify(&project);
    assert_eq!(verified.code, 0, "{}", verified.stdout);
}

/// Regression: two runs on one workdir shared the oracle's slot worktrees (`worktrees/oracle-0`),
/// so one checked a commit out under the other's pytest run, and a label from that mix ("no
/// verdict at the child ... crash") was cached. Slots are now claimed with a lock per process.
#[test]
fn two_runs_of_one_pipeline_at_once_agree_and_corrupt_nothing() {
    let repository = crate::invariants::repro_smoke::fixture();
    let reference = project(repository.path());
    reference.ok(&["run", "pipeline.yaml"]);
    let project = project(repository.path());
    let first = project
        .command(&["run", "pipeline.yaml", "-q"])
        .spawn()
        .unwrap();
    let second = project
        .command(&["run", "pipeline.yaml", "-q"])
        .spawn()
        .unwrap();
    let first = first.wait_with_output().unwrap();
    let second = second.wait_with_output().unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    assert_eq!(results(&project), results(&reference));
    let verified = verify(&project);
    assert_eq!(verified.code, 0, "{}", verified.stdout);
}

/// A test that hangs, one that kills its interpreter, one that leaves a daemon behind (out of the
/// process group, with `setsid`), one that writes 1 GB to stdout: each gets no verdict, nothing is
/// left running, memory stays bounded, and the run goes on to label the commit beside them.
#[test]
fn hostile_tests_get_no_verdict_leave_nothing_running_and_the_run_goes_on() {
    let marker = tempfile::tempdir().unwrap();
    let daemon = format!(
        "import os, subprocess, sys\n\n\ndef test_daemon():\n    subprocess.Popen([sys.executable, \"-c\", \"import time; time.sleep(600)\", {:?}], start_new_session=True)\n    assert True\n",
        marker.path().display().to_string()
    );
    let hostile: [(&str, String); 4] = [
        (
            "tests/test_hang.py",
            "import time\n\n\ndef test_hang():\n    time.sleep(600)\n    assert True\n".into(),
        ),
        (
            "tests/test_suicide.py",
            "import os\n\n\ndef test_suicide():\n    os.kill(os.getpid(), 9)\n    assert True\n".into(),
        ),
        ("tests/test_daemon.py", daemon),
        (
            "tests/test_flood.py",
            "import sys\n\n\ndef test_flood():\n    block = \"x\" * (1024 * 1024)\n    for _ in range(1024):\n        sys.stdout.write(block)\n    assert True\n".into(),
        ),
    ];
    let mut repository = FixtureRepo::new();
    let mut base: Vec<(&str, Option<&str>)> = vec![
        ("pkg/__init__.py", Some("")),
        ("pkg/core.py", Some("def one():\n    return 1\n")),
        (
            "tests/test_core.py",
            Some("from pkg.core import one\n\n\ndef test_one():\n    assert one() == 1\n"),
        ),
    ];
    base.extend(
        hostile
            .iter()
            .map(|(path, text)| (*path, Some(text.as_str()))),
    );
    repository.commit("A library with hostile tests", &base);
    // One commit touches the hostile test files (each deletes its assertion), another the plain one.
    let touched: Vec<(String, String)> = hostile
        .iter()
        .map(|(path, text)| (path.to_string(), text.replace("    assert True\n", "")))
        .collect();
    let mut changes: Vec<(&str, Option<&str>)> = touched
        .iter()
        .map(|(path, text)| (path.as_str(), Some(text.as_str())))
        .collect();
    changes.push((
        "pkg/core.py",
        Some("def one():\n    return 1\n\n\ndef two():\n    return 2\n"),
    ));
    repository.commit("hostile tests lose their assertions", &changes);
    repository.commit(
        "one is two",
        &[
            (
                "pkg/core.py",
                Some("def one():\n    return 2\n\n\ndef two():\n    return 2\n"),
            ),
            (
                "tests/test_core.py",
                Some("from pkg.core import one\n\n\ndef test_one():\n    assert one() == 2\n"),
            ),
        ],
    );
    let project = Project::new();
    project.file("pipeline.yaml", &pipeline(repository.path(), 2, 10));
    let started = Instant::now();
    let ran = project.ok(&["run", "pipeline.yaml"]);
    let elapsed = started.elapsed();
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let truth: Vec<serde_json::Value> = project
        .read("results/faults/truth.jsonl")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let label = |node: &str| {
        truth
            .iter()
            .find(|record| record["claim"].as_str().unwrap().ends_with(node))
            .unwrap_or_else(|| panic!("{node} has a truth record: {truth:#?}"))
    };
    for node in [
        "tests/test_hang.py::test_hang",
        "tests/test_suicide.py::test_suicide",
        "tests/test_daemon.py::test_daemon",
        "tests/test_flood.py::test_flood",
    ] {
        let record = label(node);
        assert_eq!(record["label"], "discarded", "{record}");
        let runs = record["parent_runs"].as_array().unwrap();
        assert!(
            runs.iter().any(|run| run["outcome"] == "unknown"),
            "{node}: no run without a verdict: {record}"
        );
    }
    // The plain claim beside them got its label.
    assert_eq!(label("tests/test_core.py::test_one")["label"], "flipped");
    assert!(
        left_running(project.root()).is_empty() && left_running(marker.path()).is_empty(),
        "{:?}",
        processes_in(marker.path())
    );
    // The largest process claimflow waited for (pytest included) stayed far below the gigabyte
    // written (ru_maxrss is in KiB).
    assert!(
        usage.ru_maxrss < 512 * 1024,
        "a process grew to {} KiB",
        usage.ru_maxrss
    );
    eprintln!(
        "{elapsed:?}, peak resident {} KiB\n{}",
        usage.ru_maxrss, ran.stderr
    );
}

fn files_under(root: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).unwrap().flatten() {
            if entry.file_type().unwrap().is_dir() {
                pending.push(entry.path());
            } else {
                files.push(entry.path());
            }
        }
    }
    files.sort();
    files
}
