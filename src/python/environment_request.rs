//! What an environment is made of ([`EnvironmentRequest`]: everything that enters its digest)
//! and what a finished one is ([`Environment`]): the types the environment cache
//! ([`super::environment`]) and the builder ([`super::install`]) share.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::dated_index::ReleaseBound;
use super::interpreters::Interpreter;
use super::metadata::ProjectMetadata;
use super::optional_requirements::optional_requirements;
use super::pytest_era::pytest_for_project;
use super::requirements::{
    Requirement, declared_pytest, discover_requirements, hold_to_pytest, requirement_name,
};
use super::version::PythonVersion;
use crate::cache::Digest;

/// Bump when the layout or the way environments are built changes: it enters every digest.
const ENVIRONMENT_SCHEMA: u32 = 1;

/// The installer environments are built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Installer {
    Pip,
    /// `$CLAIMFLOW_UV`, else `uv` on the `PATH`, when it answers `--version` (see [`uv_program`]).
    Uv,
}

/// The oldest interpreter uv builds environments for; older ones (Python 2's `--target`
/// directories above all, which uv cannot make) are built with pip.
const OLDEST_FOR_UV: (u32, u32) = (3, 8);

impl Installer {
    /// `uv` when it is installed, pip otherwise (decided once per process: a fact of the machine,
    /// not of a run).
    pub fn detect() -> Installer {
        static DETECTED: OnceLock<Installer> = OnceLock::new();
        *DETECTED.get_or_init(|| {
            let works = crate::process::output(
                Command::new(uv_program()).arg("--version"),
                std::time::Duration::from_secs(60),
            )
            .is_ok_and(|output| output.outcome.success());
            if works { Installer::Uv } else { Installer::Pip }
        })
    }

    /// The installer that builds an environment for `version`: uv only from Python 3.8 on.
    pub fn for_interpreter(self, version: PythonVersion) -> Installer {
        match self {
            Installer::Uv if (version.major, version.minor) < OLDEST_FOR_UV => Installer::Pip,
            installer => installer,
        }
    }
}

/// The uv executable: `$CLAIMFLOW_UV` when set (a path), else `uv` as found on the `PATH`.
pub fn uv_program() -> PathBuf {
    std::env::var_os("CLAIMFLOW_UV")
        .filter(|value| !value.is_empty())
        .map_or_else(|| PathBuf::from("uv"), PathBuf::from)
}

/// What an environment is made of: everything that enters its digest, plus where each requirement
/// came from (for messages).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnvironmentRequest {
    pub interpreter: Interpreter,
    /// The pytest spec: the repository's pin, or the era-appropriate series for the interpreter.
    pub pytest: String,
    /// Further requirements: the repository's pins first, then those the commit declares.
    pub requirements: Vec<Requirement>,
    /// What the tests import optionally and the project declares somewhere (see
    /// [`super::optional_requirements`]): installed after the rest where a build exists, left out
    /// where none does.
    pub optional: Vec<Requirement>,
    pub installer: Installer,
    /// Only releases uploaded before the commit are installed (a repository's
    /// `releases: at-commit`); `None` installs the newest each requirement allows.
    pub released_before: Option<ReleaseBound>,
}

impl EnvironmentRequest {
    /// The request for running `worktree`'s tests under `interpreter` when the commit's date is
    /// not known (see [`EnvironmentRequest::for_commit_at`]).
    pub fn for_commit(interpreter: &Interpreter, worktree: &Path, pinned: &[String]) -> Self {
        Self::for_commit_at(interpreter, worktree, pinned, None)
    }

    /// The request for running `worktree`'s tests under `interpreter`: the commit's declared test
    /// dependencies plus `pinned` (a repository's `dependencies:` list, which may pin pytest).
    /// pytest is, in order: the pipeline's pin, the commit's own pin of it, or the series of the
    /// parent commit's `date` (seconds since the epoch) for the interpreter.
    pub fn for_commit_at(
        interpreter: &Interpreter,
        worktree: &Path,
        pinned: &[String],
        date: Option<i64>,
    ) -> Self {
        let metadata = ProjectMetadata::read(worktree);
        let project = metadata.name.as_deref().and_then(requirement_name);
        let mut pytest = declared_pytest(worktree, &metadata).unwrap_or_else(|| {
            pytest_for_project(interpreter.version, date, project.as_deref()).to_string()
        });
        let mut requirements = Vec::new();
        for spec in pinned {
            if requirement_name(spec).as_deref() == Some("pytest") {
                pytest = spec.clone();
            } else {
                requirements.push(Requirement {
                    spec: spec.clone(),
                    source: "repository".into(),
                });
            }
        }
        let pinned_names: Vec<Option<String>> = requirements
            .iter()
            .map(|r| requirement_name(&r.spec))
            .collect();
        requirements.extend(
            discover_requirements(worktree, &metadata)
                .into_iter()
                .filter(|found| !pinned_names.contains(&requirement_name(&found.spec))),
        );
        let requirements = hold_to_pytest(requirements, &pytest, interpreter.version);
        let optional = hold_to_pytest(
            optional_requirements(worktree, &metadata, &requirements),
            &pytest,
            interpreter.version,
        );
        EnvironmentRequest {
            interpreter: interpreter.clone(),
            pytest,
            requirements,
            optional,
            installer: Installer::detect().for_interpreter(interpreter.version),
            released_before: None,
        }
    }

    /// The request bounded to the releases uploaded before `bound`'s commit (see
    /// [`ReleaseBound`]); `None` leaves it installing the newest releases.
    pub fn released_before(mut self, bound: Option<ReleaseBound>) -> Self {
        self.released_before = bound;
        self
    }

    /// The request with the child commit's `declared` requirements added where the parent
    /// declares nothing of that name (a test dependency the commit adds, as `six` to
    /// `dev-requirements.txt`): one environment satisfies both the parent's declarations and the
    /// child's additions. A requirement both declare keeps the parent's spec, so the claims run
    /// under what the parent asked for. Additions may be dropped like any declared requirement
    /// when they will not install.
    pub fn with_additions(mut self, declared: Vec<Requirement>) -> Self {
        let mut names: Vec<Option<String>> = self
            .requirements
            .iter()
            .map(|requirement| requirement_name(&requirement.spec))
            .collect();
        names.push(Some("pytest".to_string()));
        let added: Vec<Requirement> = declared
            .into_iter()
            .filter(|requirement| !names.contains(&requirement_name(&requirement.spec)))
            .map(|requirement| Requirement {
                spec: requirement.spec,
                source: format!("the child's {}", requirement.source),
            })
            .collect();
        self.requirements.extend(hold_to_pytest(
            added,
            &self.pytest,
            self.interpreter.version,
        ));
        let required: Vec<Option<String>> = self
            .requirements
            .iter()
            .map(|requirement| requirement_name(&requirement.spec))
            .collect();
        self.optional
            .retain(|optional| !required.contains(&requirement_name(&optional.spec)));
        self
    }

    /// The sorted specs pip is asked for, pytest included.
    pub fn specs(&self) -> Vec<String> {
        let mut specs: Vec<String> = self.requirements.iter().map(|r| r.spec.clone()).collect();
        specs.push(self.pytest.clone());
        specs.sort();
        specs.dedup();
        specs
    }

    /// The content address: blake3 over the interpreter version, the sorted specs, the installer,
    /// which specs are the repository's pins (those are never dropped when they will not
    /// install, so an environment with them is built differently), the optional specs, and the
    /// bound on releases when there is one.
    pub fn digest(&self) -> Digest {
        #[derive(Serialize)]
        struct Key<'a> {
            schema: u32,
            python: String,
            requirements: Vec<String>,
            // Left out when empty, so environments without pins keep their addresses.
            #[serde(skip_serializing_if = "Vec::is_empty")]
            pinned: Vec<&'a str>,
            installer: &'a Installer,
            // Left out when empty, so environments without optional requirements keep theirs.
            #[serde(skip_serializing_if = "Vec::is_empty")]
            optional: Vec<&'a str>,
            // Left out when unbounded, so environments of the newest releases keep theirs.
            #[serde(skip_serializing_if = "Option::is_none")]
            released_before: Option<&'a ReleaseBound>,
        }
        let mut pinned: Vec<&str> = self
            .requirements
            .iter()
            .filter(|requirement| requirement.source == "repository")
            .map(|requirement| requirement.spec.as_str())
            .collect();
        pinned.sort_unstable();
        let mut optional: Vec<&str> = self
            .optional
            .iter()
            .map(|requirement| requirement.spec.as_str())
            .collect();
        optional.sort_unstable();
        optional.dedup();
        let key = Key {
            schema: ENVIRONMENT_SCHEMA,
            python: self.interpreter.version.to_string(),
            requirements: self.specs(),
            pinned,
            installer: &self.installer,
            optional,
            released_before: self.released_before.as_ref(),
        };
        Digest::of(&serde_json::to_vec(&key).expect("keys serialize"))
    }
}

/// The requirements the commit checked out at `worktree` declares (see [`discover_requirements`]).
pub fn declared_requirements(worktree: &Path) -> Vec<Requirement> {
    discover_requirements(worktree, &ProjectMetadata::read(worktree))
}

/// A requirement left out of an environment because it would not install.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DroppedRequirement {
    pub spec: String,
    pub source: String,
    /// The tail of pip's output.
    pub reason: String,
}

/// A finished environment, as the collector and the oracle use it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    /// `<cache>/envs/<digest>`.
    pub root: PathBuf,
    /// The executable to run: the venv's python (the base interpreter for Python 2 environments).
    pub python: PathBuf,
    /// The interpreter's version, `3.11.7`.
    pub interpreter: String,
    /// The installed pytest's version, `8.3.4`.
    pub pytest: String,
    pub installer: String,
    /// The environment's digest (hex).
    pub digest: String,
    /// Where the requirements are installed.
    pub site_packages: PathBuf,
    /// Entries to put on `PYTHONPATH` after the worktree (the `--target` directory on Python 2).
    pub python_path: Vec<PathBuf>,
    /// Installed distributions, normalized name -> version.
    pub distributions: BTreeMap<String, String>,
    /// Discovered requirements that would not install and were left out.
    pub dropped: Vec<DroppedRequirement>,
    /// How the releases installed were bounded by date, when they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub released_before: Option<ReleasedBefore>,
}

/// How an environment's releases were bounded by date (a repository's `releases: at-commit`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleasedBefore {
    /// Only files uploaded before this moment were offered (`2019-06-01T00:00:00Z`): the commit's
    /// committer time, or just after the first release of a tool the commit predates.
    pub cutoff: String,
    /// Installed distributions none of whose files the index dates before the cutoff (all
    /// uploaded again later, or first released after it), so offered whole: the index could not
    /// bound them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undated: Vec<String>,
}

impl Environment {
    /// The tool fingerprints for item keys: `python`, `pytest`, `environment` (the digest).
    pub fn fingerprint(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("python".to_string(), self.interpreter.clone()),
            ("pytest".to_string(), self.pytest.clone()),
            ("environment".to_string(), self.digest.clone()),
        ])
    }

    /// True when a distribution (any spelling of its name) is installed.
    pub fn has_distribution(&self, name: &str) -> bool {
        requirement_name(name).is_some_and(|name| self.distributions.contains_key(&name))
    }
}
