//! The interpreter the oracle runs pytest with, and what is installed in it.
//!
//! The oracle asks the interpreter once (a probe) for its version, pytest's version and the pytest
//! plugins registered through entry points. The versions enter every oracle key (a new pytest can
//! change a verdict); the plugin names decide which `-p no:<plugin>` flags are safe to pass.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

/// Runs under Python 2.7 and every Python 3: prints one JSON object.
const PROBE: &str = r#"
import json, sys
import pytest
names = set()
try:
    from importlib import metadata
    points = metadata.entry_points()
    if hasattr(points, "select"):
        group = points.select(group="pytest11")
    else:
        group = points.get("pytest11", [])
    for point in group:
        names.add(point.name)
except ImportError:
    import pkg_resources
    for point in pkg_resources.iter_entry_points("pytest11"):
        names.add(point.name)
sys.stdout.write(json.dumps({
    "python": "%d.%d.%d" % tuple(sys.version_info[:3]),
    "pytest": pytest.__version__,
    "plugins": sorted(names),
}))
"#;

/// Failures to find out what an interpreter offers.
#[derive(Debug, thiserror::Error)]
pub enum ToolchainError {
    /// The interpreter could not be started.
    #[error("start the interpreter {path}: {source}")]
    Spawn {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The probe ran but failed (usually: pytest is not installed).
    #[error("probe the interpreter {path} for pytest: {stderr}")]
    Probe { path: PathBuf, stderr: String },
}

/// An interpreter with pytest, as the oracle runs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Toolchain {
    /// The interpreter (usually a virtual environment's `bin/python`).
    pub python: PathBuf,
    /// `major.minor.micro`.
    pub python_version: String,
    pub pytest_version: String,
    /// Entry-point names of the installed pytest plugins.
    pub plugins: BTreeSet<String>,
    /// Extra `PYTHONPATH` entries the environment needs (before the worktree's own).
    pub extra_paths: Vec<PathBuf>,
}

#[derive(Deserialize)]
struct ProbeAnswer {
    python: String,
    pytest: String,
    plugins: BTreeSet<String>,
}

impl Toolchain {
    /// Asks `python` for its version, pytest's version and the installed pytest plugins.
    pub fn probe(python: &Path) -> Result<Self, ToolchainError> {
        Self::probe_with_paths(python, Vec::new())
    }

    /// Like [`Toolchain::probe`], for an environment whose packages live in `extra_paths` (a
    /// `pip install --target` directory, as Python 2 environments are built).
    pub fn probe_with_paths(
        python: &Path,
        extra_paths: Vec<PathBuf>,
    ) -> Result<Self, ToolchainError> {
        let python_path = std::env::join_paths(&extra_paths).unwrap_or_default();
        let output = Command::new(python)
            .arg("-c")
            .arg(PROBE)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("PYTHONPATH", python_path)
            .stdin(Stdio::null())
            .output()
            .map_err(|source| ToolchainError::Spawn {
                path: python.to_path_buf(),
                source,
            })?;
        let answer = output
            .status
            .success()
            .then(|| serde_json::from_slice::<ProbeAnswer>(&output.stdout).ok())
            .flatten()
            .ok_or_else(|| ToolchainError::Probe {
                path: python.to_path_buf(),
                stderr: String::from_utf8_lossy(&output.stderr)
                    .lines()
                    .last()
                    .unwrap_or("no output")
                    .to_string(),
            })?;
        Ok(Toolchain {
            python: python.to_path_buf(),
            python_version: answer.python,
            pytest_version: answer.pytest,
            plugins: answer.plugins,
            extra_paths,
        })
    }

    /// The fingerprint that enters oracle keys: versions and plugins, never the path.
    pub fn fingerprint(&self) -> String {
        let plugins: Vec<&str> = self.plugins.iter().map(String::as_str).collect();
        format!(
            "python {} pytest {} plugins [{}]",
            self.python_version,
            self.pytest_version,
            plugins.join(",")
        )
    }

    /// The major version of the interpreter (2 or 3).
    pub fn python_major(&self) -> u32 {
        self.python_version
            .split('.')
            .next()
            .and_then(|major| major.parse().ok())
            .unwrap_or(3)
    }
}
