//! An environment described from an interpreter that already has pytest: for users who bring their
//! own environment, and for tests. Pipelines get theirs from [`crate::python::ensure_environment`].
//!
//! The probe asks the interpreter once for its version, pytest's version, the installed
//! distributions and its site-packages directory, so the oracle can fingerprint it and block only
//! the plugins that are installed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

use crate::cache::Digest;
use crate::process::ChildEnvironment;
use crate::python::Environment;

/// Runs under Python 2.7 and every Python 3: prints one JSON object.
const PROBE: &str = r#"
import json, re, sys
import pytest
names = {}
try:
    from importlib import metadata
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            names[name] = dist.version
except ImportError:
    import pkg_resources
    for dist in pkg_resources.working_set:
        names[dist.project_name] = dist.version
try:
    import sysconfig
    site = sysconfig.get_paths()["purelib"]
except Exception:
    site = ""
sys.stdout.write(json.dumps({
    "python": "%d.%d.%d" % tuple(sys.version_info[:3]),
    "pytest": pytest.__version__,
    "site": site,
    "distributions": dict((re.sub(r"[-_.]+", "-", name).lower(), version) for name, version in names.items()),
}))
"#;

/// Failures to find out what an interpreter offers.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
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

#[derive(Deserialize)]
struct ProbeAnswer {
    python: String,
    pytest: String,
    site: String,
    distributions: BTreeMap<String, String>,
}

/// How long the probe may take (it imports pytest and lists the distributions).
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// Describes the environment of `python` with `extra_paths` on `PYTHONPATH` (a `pip install
/// --target` directory, as Python 2 environments are built).
pub fn probe_environment(
    python: &Path,
    extra_paths: Vec<PathBuf>,
) -> Result<Environment, ProbeError> {
    let spawn_error = |source| ProbeError::Spawn {
        path: python.to_path_buf(),
        source,
    };
    let python_path = std::env::join_paths(&extra_paths).map_err(|error| {
        spawn_error(std::io::Error::new(std::io::ErrorKind::InvalidInput, error))
    })?;
    let mut command = Command::new(python);
    // What the probe sees is what pytest will: no user site, no variable of the caller's.
    ChildEnvironment::scrubbed()
        .set("PATH", "/usr/bin:/bin")
        .python_quiet()
        .set("PYTHONPATH", python_path)
        .apply(&mut command);
    command.arg("-c").arg(PROBE);
    let output = crate::process::output(&mut command, PROBE_TIMEOUT).map_err(spawn_error)?;
    let answer = output
        .outcome
        .success()
        .then(|| serde_json::from_slice::<ProbeAnswer>(&output.stdout).ok())
        .flatten()
        .ok_or_else(|| ProbeError::Probe {
            path: python.to_path_buf(),
            stderr: String::from_utf8_lossy(&output.stderr)
                .lines()
                .last()
                .unwrap_or("no output")
                .to_string(),
        })?;
    // The digest names what the environment holds, never where it is.
    let identity = serde_json::to_vec(&(&answer.python, &answer.pytest, &answer.distributions))
        .expect("probe answers serialize");
    Ok(Environment {
        root: python
            .parent()
            .and_then(Path::parent)
            .unwrap_or(python)
            .to_path_buf(),
        python: python.to_path_buf(),
        interpreter: answer.python,
        pytest: answer.pytest,
        installer: "existing".into(),
        digest: Digest::of(&identity).hex(),
        site_packages: PathBuf::from(answer.site),
        python_path: extra_paths,
        distributions: answer.distributions,
        dropped: Vec::new(),
        released_before: None,
    })
}
