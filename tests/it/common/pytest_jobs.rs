//! Running pytest over many checkouts in one Python process.
//!
//! Starting an interpreter and importing pytest costs about a second on a loaded machine;
//! a test that runs dozens of suites pays it once through `run_pytest_jobs.py`, which calls
//! `pytest.main` per job and forgets the checkout's modules between runs.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

const DRIVER: &str = include_str!("run_pytest_jobs.py");

/// One pytest invocation, run `repeat` times.
#[derive(Debug, Clone, Serialize)]
pub struct PytestJob {
    /// The checkout to run in (it becomes the working directory).
    pub dir: PathBuf,
    /// pytest arguments: test modules or node ids.
    pub args: Vec<String>,
    pub repeat: usize,
}

/// What one run said.
#[derive(Debug, Clone, Deserialize)]
pub struct PytestRun {
    /// Node id to `passed`, `failed:<exception class>` or `error` (setup or teardown).
    pub outcomes: BTreeMap<String, String>,
    /// Modules (as node ids) that failed to collect, e.g. on an import error.
    pub uncollectable: Vec<String>,
}

#[derive(Serialize)]
struct Request<'a> {
    root: &'a Path,
    jobs: &'a [PytestJob],
}

#[derive(Deserialize)]
struct JobResult {
    runs: Vec<PytestRun>,
}

/// Run every job with `python` (which has pytest); every job's `dir` lies under `root`.
/// Returns each job's runs, in order.
pub fn run_pytest_jobs(python: &Path, root: &Path, jobs: &[PytestJob]) -> Vec<Vec<PytestRun>> {
    // The driver lives outside `root`: modules loaded from under `root` are forgotten between
    // runs, and the driver must not forget itself.
    let mut driver = tempfile::Builder::new()
        .suffix(".py")
        .tempfile()
        .expect("create the pytest driver");
    driver.write_all(DRIVER.as_bytes()).unwrap();
    let mut child = Command::new(python)
        .arg(driver.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the pytest driver");
    let request = serde_json::to_vec(&Request { root, jobs }).unwrap();
    child.stdin.take().unwrap().write_all(&request).unwrap();
    let output = child.wait_with_output().expect("run the pytest driver");
    assert!(
        output.status.success(),
        "the pytest driver failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results: Vec<Vec<PytestRun>> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| {
            serde_json::from_str::<JobResult>(line)
                .unwrap_or_else(|error| panic!("read the driver's line {line:?}: {error}"))
                .runs
        })
        .collect();
    assert_eq!(results.len(), jobs.len(), "one result per job");
    results
}
