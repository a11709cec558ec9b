//! The interpreter the oracle tests run: a virtual environment with a pinned pytest, created once
//! under the user's cache (`$CLAIMFLOW_CACHE_DIR` or `~/.cache/claimflow`), never in the repository,
//! so a second run of the tests, or CI on a clean clone, reuses it.

use std::fs::{self, File};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use claimflow::oracle::probe_environment;
use claimflow::python::Environment;

const INTERPRETER: &str = "/root/.pyenv/versions/3.11.7/bin/python";
const PYTEST: &str = "pytest==8.3.5";
/// pytest-subtests, which reports each sub-test of `subtests.test` and `self.subTest` on its own.
const PYTEST_SUBTESTS: &str = "pytest-subtests==0.15.0";
const PYTHON2: &str = "/root/.pyenv/versions/2.7.18/bin/python";

fn cache_dir() -> PathBuf {
    match std::env::var_os("CLAIMFLOW_CACHE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/claimflow")
        }
    }
}

/// The shared test environment, created on first use.
pub fn environment() -> Environment {
    static ENVIRONMENT: OnceLock<Environment> = OnceLock::new();
    ENVIRONMENT
        .get_or_init(|| {
            let python = ensure_venv("py3.11-pytest8.3.5", &[PYTEST]);
            probe_environment(&python, Vec::new()).expect("probe the test environment")
        })
        .clone()
}

/// The shared test environment with pytest-subtests beside pytest, created on first use.
pub fn environment_with_subtests() -> Environment {
    static ENVIRONMENT: OnceLock<Environment> = OnceLock::new();
    ENVIRONMENT
        .get_or_init(|| {
            let python = ensure_venv(
                "py3.11-pytest8.3.5-subtests0.15.0",
                &[PYTEST, PYTEST_SUBTESTS],
            );
            probe_environment(&python, Vec::new()).expect("probe the test environment")
        })
        .clone()
}

fn ensure_venv(name: &str, requirements: &[&str]) -> PathBuf {
    let root = cache_dir().join("oracle-tests");
    fs::create_dir_all(&root).expect("create the test cache");
    let venv = root.join(name);
    let python = venv.join("bin/python");
    let ready = venv.join("claimflow-ready");
    // Test binaries may run side by side; one creates the environment, the others wait.
    let lock = File::create(root.join("lock")).expect("create the lock file");
    lock.lock().expect("lock the test cache");
    if !ready.exists() {
        let _ = fs::remove_dir_all(&venv);
        let status = Command::new(INTERPRETER)
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .expect("run venv");
        assert!(status.success(), "create {}", venv.display());
        let status = Command::new(&python)
            .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
            .args(requirements)
            .status()
            .expect("run pip");
        assert!(status.success(), "install {requirements:?}");
        fs::write(&ready, requirements.join("\n")).expect("mark the environment ready");
    }
    python
}

/// A Python 2.7 environment (pytest 4.6 installed with `--target`, as old environments are built):
/// the result plugin must keep running there.
pub fn environment_python2() -> Environment {
    static ENVIRONMENT: OnceLock<Environment> = OnceLock::new();
    ENVIRONMENT
        .get_or_init(|| {
            let root = cache_dir().join("oracle-tests");
            fs::create_dir_all(&root).expect("create the test cache");
            let target = root.join("py2.7-pytest4.6.11");
            let ready = target.join("claimflow-ready");
            let lock = File::create(root.join("lock")).expect("create the lock file");
            lock.lock().expect("lock the test cache");
            if !ready.exists() {
                let _ = fs::remove_dir_all(&target);
                let status = Command::new(PYTHON2)
                    .args([
                        "-m",
                        "pip",
                        "install",
                        "-q",
                        "--disable-pip-version-check",
                        "--target",
                    ])
                    .arg(&target)
                    .arg("pytest==4.6.11")
                    .status()
                    .expect("run pip");
                assert!(status.success(), "install pytest 4.6.11 for Python 2.7");
                fs::write(&ready, "pytest==4.6.11").expect("mark the environment ready");
            }
            probe_environment(std::path::Path::new(PYTHON2), vec![target])
                .expect("probe the Python 2.7 environment")
        })
        .clone()
}
