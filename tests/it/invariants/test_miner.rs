//! `test_miner`: a pytest batch that a collection error aborts yields no verdict at all — not a
//! failure for the tests it never ran, not a pass for the ones that would have passed.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use claimflow::oracle::command::RunFiles;
use claimflow::oracle::runner::{RunRequest, run_pytest};
use claimflow::oracle::{UnknownReason, Verdict, classify};
use claimflow::process::Outcome;

use crate::oracle::python::environment;

fn write(dir: &Path, relative: &str, content: &str) {
    let path = dir.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

#[test]
fn test_miner() {
    let dir = tempfile::tempdir().unwrap();
    let worktree = dir.path().join("worktree");
    write(&worktree, "pkg/__init__.py", "");
    write(
        &worktree,
        "pkg/core.py",
        "def add(a, b):\n    return a + b\n",
    );
    // Three kinds of test in one batch: one that passes, one that fails, and a module whose import
    // fails at collection, which makes pytest abort the whole batch before running anything.
    write(
        &worktree,
        "tests/test_pass.py",
        "from pkg.core import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    );
    write(
        &worktree,
        "tests/test_fail.py",
        "from pkg.core import add\n\n\ndef test_add_wrong():\n    assert add(1, 2) == 4\n",
    );
    write(
        &worktree,
        "tests/test_broken.py",
        "from pkg.core import subtract\n\n\ndef test_subtract():\n    assert subtract(2, 1) == 1\n",
    );
    let files: Vec<String> = [
        "tests/test_broken.py",
        "tests/test_fail.py",
        "tests/test_pass.py",
    ]
    .map(String::from)
    .to_vec();
    let nodes: Vec<String> = [
        "tests/test_broken.py::test_subtract",
        "tests/test_fail.py::test_add_wrong",
        "tests/test_pass.py::test_add",
    ]
    .map(String::from)
    .to_vec();
    let environment = environment();
    let report = run_pytest(&RunRequest {
        environment: &environment,
        worktree: &worktree,
        files: &RunFiles::new(dir.path().join("run")),
        test_files: &files,
        nodes: &nodes,
        run: 0,
        timeout: Duration::from_secs(120),
    })
    .expect("pytest runs");
    // pytest's own exit code for "interrupted": the batch ran nothing.
    assert_eq!(report.outcome, Outcome::Exited(2));
    // The result plugin recorded no test event: nothing ran, so nothing can be read as a verdict.
    for line in report.records.lines() {
        let record: serde_json::Value = serde_json::from_str(line).expect("a JSON record");
        assert_ne!(
            record["event"], "test",
            "a test ran in an aborted batch: {line}"
        );
    }
    let verdicts: BTreeMap<String, Verdict> = classify(&nodes, &report.outcome, &report.records)
        .verdicts
        .into_iter()
        .collect();
    assert_eq!(verdicts.len(), nodes.len(), "every node is accounted for");
    for (node, verdict) in &verdicts {
        assert_eq!(
            *verdict,
            Verdict::Unknown(UnknownReason::CollectionError),
            "{node} got a verdict from an aborted batch"
        );
    }
    let lines: Vec<String> = verdicts
        .iter()
        .map(|(node, verdict)| format!("{node}: {verdict:?}"))
        .collect();
    super::in_top_level_snapshots(|| {
        insta::assert_snapshot!(
            "test_miner",
            format!("outcome: {:?}\n{}", report.outcome, lines.join("\n"))
        )
    });
}
