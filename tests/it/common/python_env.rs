//! A Python with pytest for tests that run real test suites.
//!
//! The virtual environment is created once, under the claimflow cache outside the repository
//! (`$CLAIMFLOW_CACHE_DIR`, else `~/.cache/claimflow`), so a second test run, or a CI run on a
//! clean clone after the first, does not reinstall. It is built in a scratch directory and
//! renamed into place, so a run interrupted half-way never leaves a broken environment behind.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::pytools::cache_dir;

/// The version of the base interpreter and the pytest requirement the environment holds.
const PYTHON_VERSION: &str = "3.11";
const PYTEST_REQUIREMENT: &str = "pytest>=8,<9";
const ENVIRONMENT_NAME: &str = "py3.11-pytest8";
/// Written last, so its presence means the environment is complete.
const READY_MARKER: &str = "claimflow-ready";

/// The `python` of a virtual environment with Python 3.11 and pytest 8, created on first use.
pub fn pytest_python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(create_environment).clone()
}

fn create_environment() -> PathBuf {
    let environments = cache_dir().join("test-venvs");
    let environment = environments.join(ENVIRONMENT_NAME);
    let python = environment.join("bin/python");
    if environment.join(READY_MARKER).is_file() {
        return python;
    }
    fs::create_dir_all(&environments).expect("create the test environment cache");
    let scratch = environments.join(format!(".{ENVIRONMENT_NAME}.{}", std::process::id()));
    let _ = fs::remove_dir_all(&scratch);

    let base = base_python();
    run(Command::new(&base).arg("-m").arg("venv").arg(&scratch));
    run(pip_command(&scratch.join("bin/python")).args([
        "install",
        "--quiet",
        "--disable-pip-version-check",
        PYTEST_REQUIREMENT,
    ]));
    fs::write(scratch.join(READY_MARKER), "").expect("mark the test environment ready");

    if fs::rename(&scratch, &environment).is_err() {
        // Another test process finished first; its environment is as good as ours.
        let _ = fs::remove_dir_all(&scratch);
        assert!(
            environment.join(READY_MARKER).is_file(),
            "could not move the test environment into {}",
            environment.display()
        );
    }
    python
}

/// pip with only what it needs from our environment: a path, a home, and the proxy and
/// certificate settings of the machine. Nothing else (no tokens) reaches it.
fn pip_command(python: &Path) -> Command {
    let mut command = Command::new(python);
    command.args(["-m", "pip"]).env_clear();
    for (name, value) in env::vars_os() {
        let name_text = name.to_string_lossy().to_ascii_uppercase();
        let wanted = matches!(name_text.as_str(), "PATH" | "HOME")
            || name_text.ends_with("_PROXY")
            || matches!(
                name_text.as_str(),
                "SSL_CERT_FILE" | "SSL_CERT_DIR" | "PIP_INDEX_URL" | "PIP_CERT"
            );
        if wanted {
            command.env(name, value);
        }
    }
    command
}

/// A Python 3.11 interpreter: pyenv's if installed, else `python3.11` on the PATH.
fn base_python() -> PathBuf {
    let pyenv_root = env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|home| Path::new(&home).join(".pyenv")));
    if let Some(root) = pyenv_root {
        let mut candidates: Vec<PathBuf> = fs::read_dir(root.join("versions"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                name.strip_prefix(PYTHON_VERSION)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
            })
            .map(|entry| entry.path())
            .filter(|version| version.join("bin/python").is_file())
            .collect();
        // Newest patch release: compare "3.11.10" and "3.11.7" as numbers, not text.
        candidates.sort_by_key(|version| {
            let name = version.file_name().unwrap_or_default().to_string_lossy();
            name.split('.')
                .map(|part| part.parse::<u32>().unwrap_or(0))
                .collect::<Vec<_>>()
        });
        if let Some(newest) = candidates.pop() {
            return newest.join("bin/python");
        }
    }
    let on_path = env::var_os("PATH").and_then(|path| {
        env::split_paths(&path)
            .map(|dir| dir.join(format!("python{PYTHON_VERSION}")))
            .find(|python| python.is_file())
    });
    on_path.unwrap_or_else(|| panic!("these tests need Python {PYTHON_VERSION} (pyenv or PATH)"))
}

fn run(command: &mut Command) {
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("could not start {command:?}: {error}"));
    assert!(
        output.status.success(),
        "{command:?} failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The version of uv the tests build environments with.
const UV_REQUIREMENT: &str = "uv==0.13.8";

/// A `uv` executable, installed from PyPI into `<cache>/tools/uv` on first use (a venv of its
/// own, built in a scratch directory and renamed into place like the environment above).
pub fn uv_binary() -> PathBuf {
    static UV: OnceLock<PathBuf> = OnceLock::new();
    UV.get_or_init(|| {
        let tools = cache_dir().join("tools");
        let directory = tools.join(UV_REQUIREMENT.replace("==", "-"));
        let uv = directory.join("bin/uv");
        if directory.join(READY_MARKER).is_file() {
            return uv;
        }
        fs::create_dir_all(&tools).expect("create the tools cache");
        let scratch = tools.join(format!(".uv.{}", std::process::id()));
        let _ = fs::remove_dir_all(&scratch);
        run(Command::new(base_python())
            .arg("-m")
            .arg("venv")
            .arg(&scratch));
        run(pip_command(&scratch.join("bin/python")).args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            UV_REQUIREMENT,
        ]));
        fs::write(scratch.join(READY_MARKER), "").expect("mark uv ready");
        if fs::rename(&scratch, &directory).is_err() {
            let _ = fs::remove_dir_all(&scratch);
            assert!(
                directory.join(READY_MARKER).is_file(),
                "uv is not installed"
            );
        }
        uv
    })
    .clone()
}
