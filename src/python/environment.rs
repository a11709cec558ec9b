//! Virtual environments for running a repository's tests, content-addressed and shared:
//! `<cache>/envs/<digest>`, where the digest is blake3 over the interpreter's version, the sorted
//! requirement specs and the installer. An environment is built in a scratch directory and renamed
//! into place, so a half-built one is never used and two processes racing to build the same one
//! both end up using whichever rename won. The package under test is never installed: it is
//! imported from the checked-out worktree (see [`super::command`]).
//!
//! Python 3 environments are `venv`s. Python 2 has no `venv` module, so its environments are a
//! `pip install --target` directory put on `PYTHONPATH` in front of the base interpreter. From
//! Python 3.8 on, uv builds them when it runs (`$CLAIMFLOW_UV`, else `uv` on the `PATH`).
//!
//! A failed build is never stored: its scratch directory goes, and the failure is only remembered
//! for the rest of the run ([`FailedBuilds`], held by the run's session), so the next commit asking
//! for the same digest is answered at once and the next run tries again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::build_error::{BuildFailure, PythonError, io_error};
use super::environment_request::{Environment, EnvironmentRequest};
use super::install::build;
use super::interpreters::interpreter_for;

/// Bump when the way a commit's interpreters or declared requirements are found changes (which
/// files are read, which extras count, the order interpreters are tried in): it enters the keys of
/// the steps that build environments, so their results are computed again. Environments
/// themselves are addressed by what they contain and need no bump.
/// 2: extras and dependency groups named `test…`/`dev` or installed by tox, dotted TOML keys,
/// tox's `-r` files, `requirements.txt` entries the tests import; interpreters released more than
/// a year after the parent commit tried last.
/// 3: what the tests import optionally and the project declares anywhere is installed where it can
/// be; the version files a build backend writes are written into each checkout.
pub const DISCOVERY_RULES: u32 = 3;
/// A scratch build this old was abandoned by a killed process.
const ABANDONED_AFTER: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);
/// The file that describes a finished environment; written last, before the rename.
const DESCRIPTION: &str = "claimflow-environment.json";

/// The cache directory: `$CLAIMFLOW_CACHE_DIR`, else `~/.cache/claimflow`.
pub fn cache_dir() -> PathBuf {
    if let Some(directory) =
        std::env::var_os("CLAIMFLOW_CACHE_DIR").filter(|value| !value.is_empty())
    {
        return PathBuf::from(directory);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    home.join(".cache").join("claimflow")
}

/// The environment for `request` under [`cache_dir`], built if missing; a build that already
/// failed in `failed` (this run's) fails again at once.
pub fn ensure_environment(
    request: &EnvironmentRequest,
    failed: &FailedBuilds,
) -> Result<Environment, PythonError> {
    ensure_environment_in(&cache_dir(), request, failed)
}

/// The environment for running `worktree`'s tests under the interpreter of `version` (a claim's
/// `interpreter`, `3.11.7`), so the oracle runs a claim where it was mined; built if missing.
pub fn environment_for_interpreter(
    version: &str,
    worktree: &Path,
    pinned: &[String],
    failed: &FailedBuilds,
) -> Result<Environment, PythonError> {
    let interpreter = interpreter_for(version).ok_or_else(|| PythonError::NotInstalled {
        version: version.to_string(),
    })?;
    ensure_environment(
        &EnvironmentRequest::for_commit(&interpreter, worktree, pinned),
        failed,
    )
}

/// The environment for `request` under `cache`, built if missing; a build that already failed in
/// `failed` (this run's) fails again at once.
pub fn ensure_environment_in(
    cache: &Path,
    request: &EnvironmentRequest,
    failed: &FailedBuilds,
) -> Result<Environment, PythonError> {
    let digest = request.digest().hex();
    let root = cache.join("envs").join(&digest);
    if let Some(environment) = load(&root)?
        && environment.python.is_file()
    {
        return Ok(environment);
    }
    // Threads of one process build an environment once; other processes race safely via rename.
    let guard = build_lock(&digest);
    let _held = guard
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    match load(&root)? {
        Some(environment) if environment.python.is_file() => return Ok(environment),
        // Its interpreter is gone (a pyenv version reinstalled or removed): build it again.
        Some(_) => std::fs::remove_dir_all(&root).map_err(io_error(format!(
            "remove the broken environment {}",
            root.display()
        )))?,
        None => {}
    }
    if let Some(before) = failed.before(&digest) {
        return Err(before);
    }
    let scratch_parent = cache.join("envs").join(".building");
    std::fs::create_dir_all(&scratch_parent)
        .map_err(io_error(format!("create {}", scratch_parent.display())))?;
    prune_abandoned(&scratch_parent, ABANDONED_AFTER);
    let scratch = tempfile::Builder::new()
        .prefix(&format!("{digest}-"))
        .tempdir_in(&scratch_parent)
        .map_err(io_error(format!(
            "create a directory in {}",
            scratch_parent.display()
        )))?;
    // Removed if claimflow is stopped half-way through the build.
    let _recorded = crate::process_groups::scratch(scratch.path());
    let pip_cache = cache.join("pip");
    let built = build(request, scratch.path(), &pip_cache, &digest).inspect_err(|error| {
        failed.remember(&digest, error);
    })?;
    let description = serde_json::to_vec_pretty(&built).expect("environments serialize");
    std::fs::write(scratch.path().join(DESCRIPTION), description).map_err(io_error(format!(
        "write {}",
        scratch.path().join(DESCRIPTION).display()
    )))?;
    let scratch = scratch.keep();
    if std::fs::rename(&scratch, &root).is_err() {
        // Another process finished first; its environment is equivalent by construction.
        let _ = std::fs::remove_dir_all(&scratch);
    }
    load(&root)?.ok_or_else(|| PythonError::Broken {
        path: root.clone(),
        reason: "missing after it was built".into(),
    })
}

/// Removes builds left behind by killed processes: scratch directories not modified for `age`. A
/// build in progress is far younger, since every install it runs times out within minutes.
fn prune_abandoned(scratch_parent: &Path, age: std::time::Duration) {
    let Ok(entries) = std::fs::read_dir(scratch_parent) else {
        return;
    };
    for entry in entries.flatten() {
        let abandoned = entry
            .metadata()
            .and_then(|metadata| metadata.modified())
            .is_ok_and(|modified| modified.elapsed().is_ok_and(|elapsed| elapsed > age));
        if abandoned {
            // Best effort: another process may be pruning the same directory.
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A build that failed in this run: what [`PythonError::FailedBefore`] repeats.
#[derive(Debug, Clone)]
struct FailedBuild {
    reason: String,
    requirement: Option<String>,
    failure: BuildFailure,
}

/// Builds that failed in one run, by digest: the same inputs fail the same way, so the next commit
/// asking for the environment gets the failure at once. A run's session holds one, so the next run
/// (in this process or another) tries the build again. Failures of the machine or the network are
/// not remembered (they may pass a minute later), and nothing is remembered on disk.
#[derive(Debug, Default)]
pub struct FailedBuilds(Mutex<BTreeMap<String, FailedBuild>>);

impl FailedBuilds {
    fn remember(&self, digest: &str, error: &PythonError) {
        if error.failure() == BuildFailure::Infrastructure {
            return;
        }
        let reason = match error {
            PythonError::FailedBefore { reason, .. } => reason.clone(),
            other => other.to_string(),
        };
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(
                digest.to_string(),
                FailedBuild {
                    reason,
                    requirement: error.requirement().map(str::to_string),
                    failure: error.failure(),
                },
            );
    }

    fn before(&self, digest: &str) -> Option<PythonError> {
        let failed = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(digest)
            .cloned()?;
        Some(PythonError::FailedBefore {
            reason: failed.reason,
            requirement: failed.requirement,
            failure: failed.failure,
        })
    }
}

/// One lock per digest for the life of the process: it only serializes threads building the same
/// environment (a fact of the machine's cache directory, not of a run), and holds no result.
fn build_lock(digest: &str) -> Arc<Mutex<()>> {
    static LOCKS: OnceLock<Mutex<BTreeMap<String, Arc<Mutex<()>>>>> = OnceLock::new();
    let mut locks = LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    locks.entry(digest.to_string()).or_default().clone()
}

/// Reads a finished environment's description, rebasing its paths on `root` (environments move
/// from their scratch directory into place, and caches may be copied between machines).
fn load(root: &Path) -> Result<Option<Environment>, PythonError> {
    let path = root.join(DESCRIPTION);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(PythonError::Io {
                context: format!("read {}", path.display()),
                source,
            });
        }
    };
    let mut environment: Environment =
        serde_json::from_slice(&bytes).map_err(|error| PythonError::Broken {
            path: root.to_path_buf(),
            reason: format!("unreadable {DESCRIPTION}: {error}"),
        })?;
    let old_root = environment.root.clone();
    let rebase = |path: &Path| match path.strip_prefix(&old_root) {
        Ok(relative) => root.join(relative),
        Err(_) => path.to_path_buf(),
    };
    environment.python = rebase(&environment.python);
    environment.site_packages = rebase(&environment.site_packages);
    environment.python_path = environment
        .python_path
        .iter()
        .map(|path| rebase(path))
        .collect();
    environment.root = root.to_path_buf();
    Ok(Some(environment))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::python::{Installer, Interpreter, PythonVersion, Requirement};

    fn request(specs: &[&str]) -> EnvironmentRequest {
        EnvironmentRequest {
            interpreter: Interpreter {
                version: "3.11.7".parse().unwrap(),
                path: PathBuf::from("/pythons/3.11.7/bin/python"),
            },
            pytest: "pytest>=8,<9".into(),
            requirements: specs
                .iter()
                .map(|spec| Requirement {
                    spec: spec.to_string(),
                    source: "test extras".into(),
                })
                .collect(),
            optional: vec![],
            installer: Installer::Pip,
            released_before: None,
        }
    }

    #[test]
    fn the_digest_ignores_order_and_sources_but_not_specs() {
        let one = request(&["attrs", "six>=1.9"]);
        let mut other = request(&["six>=1.9", "attrs"]);
        other.requirements[0].source = "tox.ini".into();
        assert_eq!(one.digest(), other.digest());
        assert_ne!(one.digest(), request(&["attrs", "six>=1.10"]).digest());
        let mut pinned = request(&["attrs", "six>=1.9"]);
        pinned.requirements[0].source = "repository".into();
        assert_ne!(one.digest(), pinned.digest(), "a pin is built differently");
        let mut older = request(&["attrs", "six>=1.9"]);
        older.interpreter.version = "3.11.6".parse().unwrap();
        assert_ne!(one.digest(), older.digest());
    }

    #[test]
    fn a_bound_on_releases_enters_the_digest_only_when_set() {
        use crate::python::ReleaseBound;
        let newest = request(&["six"]);
        // Unbounded, the key holds nothing of it (`skip_serializing_if`): addresses stay as they were.
        assert_eq!(
            newest.clone().released_before(None).digest(),
            newest.digest()
        );
        let at = |seconds| {
            request(&["six"])
                .released_before(Some(ReleaseBound::at(seconds)))
                .digest()
        };
        assert_ne!(at(1_559_347_200), newest.digest());
        assert_ne!(at(1_559_347_200), at(1_559_347_260));
        let with_testmon = request(&["six"])
            .released_before(Some(
                ReleaseBound::at(1_559_347_200).with_tool("pytest-testmon==0.9.19"),
            ))
            .digest();
        assert_ne!(with_testmon, at(1_559_347_200));
    }

    #[test]
    fn a_repository_pin_replaces_the_era_pytest_and_discovered_specs() {
        let worktree = tempfile::tempdir().unwrap();
        std::fs::write(
            worktree.path().join("test-requirements.txt"),
            "six==1.10\nmock\n",
        )
        .unwrap();
        let interpreter = request(&[]).interpreter;
        let plain = EnvironmentRequest::for_commit(&interpreter, worktree.path(), &[]);
        // A discovered pin of one of pytest's own dependencies gives way to the era's pytest.
        assert_eq!(plain.specs(), ["mock", "pytest>=8,<9", "six"]);
        let pinned = vec!["pytest==8.0.2".to_string(), "Six>=1.16".to_string()];
        let request = EnvironmentRequest::for_commit(&interpreter, worktree.path(), &pinned);
        assert_eq!(request.pytest, "pytest==8.0.2");
        assert_eq!(request.specs(), ["Six>=1.16", "mock", "pytest==8.0.2"]);
        assert_eq!(request.requirements[0].source, "repository");
    }

    #[test]
    fn uv_builds_python_3_8_and_later_pip_the_rest() {
        let version = |text: &str| text.parse::<PythonVersion>().unwrap();
        assert_eq!(
            Installer::Uv.for_interpreter(version("2.7.18")),
            Installer::Pip
        );
        assert_eq!(
            Installer::Uv.for_interpreter(version("3.7.16")),
            Installer::Pip
        );
        assert_eq!(
            Installer::Uv.for_interpreter(version("3.8.18")),
            Installer::Uv
        );
        assert_eq!(
            Installer::Uv.for_interpreter(version("3.13.0")),
            Installer::Uv
        );
        assert_eq!(
            Installer::Pip.for_interpreter(version("3.13.0")),
            Installer::Pip
        );
    }

    #[test]
    fn abandoned_builds_are_pruned_and_fresh_ones_kept() {
        let directory = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(directory.path().join("abc-1/bin")).unwrap();
        prune_abandoned(directory.path(), std::time::Duration::from_secs(3600));
        assert!(directory.path().join("abc-1").exists());
        std::thread::sleep(std::time::Duration::from_millis(20));
        prune_abandoned(directory.path(), std::time::Duration::from_millis(1));
        assert!(!directory.path().join("abc-1").exists());
    }

    #[test]
    fn a_moved_environment_answers_with_its_new_paths() {
        let directory = tempfile::tempdir().unwrap();
        let built = directory.path().join(".building/abc-1");
        let environment = Environment {
            root: built.clone(),
            python: built.join("bin/python"),
            interpreter: "3.11.7".into(),
            pytest: "8.3.4".into(),
            installer: "pip".into(),
            digest: "abc".into(),
            site_packages: built.join("lib/python3.11/site-packages"),
            python_path: vec![built.join("site")],
            distributions: BTreeMap::from([("pytest".to_string(), "8.3.4".to_string())]),
            dropped: vec![],
            released_before: None,
        };
        let root = directory.path().join("envs/abc");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(
            root.join(DESCRIPTION),
            serde_json::to_vec(&environment).unwrap(),
        )
        .unwrap();
        let loaded = load(&root).unwrap().unwrap();
        assert_eq!(loaded.root, root);
        assert_eq!(loaded.python, root.join("bin/python"));
        assert_eq!(
            loaded.site_packages,
            root.join("lib/python3.11/site-packages")
        );
        assert_eq!(loaded.python_path, [root.join("site")]);
        assert!(loaded.has_distribution("PyTest"));
        assert_eq!(load(&directory.path().join("envs/missing")).unwrap(), None);
    }

    #[test]
    fn cache_dir_respects_the_variable() {
        // Read only: the variable may be set by the test runner; either way the answer follows it.
        let expected = match std::env::var_os("CLAIMFLOW_CACHE_DIR").filter(|v| !v.is_empty()) {
            Some(directory) => PathBuf::from(directory),
            None => PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/claimflow"),
        };
        assert_eq!(cache_dir(), expected);
    }
}
