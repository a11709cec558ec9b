//! The Python side: interpreters, per-repository virtual environments, and the pytest plugin the
//! crate writes out at run time to ask pytest what only pytest knows.
//!
//! How the pieces fit, for a step that runs a commit's tests:
//!
//! ```text
//! let interpreters = choose_interpreters(&ProjectMetadata::read(worktree), &declared, installed_interpreters())?;
//! let request = EnvironmentRequest::for_commit(&interpreters[0], worktree, &pinned);
//! let environment = ensure_environment(&request, &failed)?; // <cache>/envs/<digest>, built once
//! let command = PytestLaunch::new(&environment, worktree, private)
//!     .hash_seed(run)
//!     .plugin_dir(plugins)
//!     .command(&arguments)?;                               // the one place pytest is spawned
//! ```
//!
//! A claim records the interpreter it was mined with (`MinedClaim::interpreter`);
//! [`environment_for_interpreter`] gives the environment to run it in again. `environment.fingerprint()`
//! is what enters item keys. Mining one commit end to end is [`mine_commit`].

mod assertions;
mod build_error;
mod claims;
mod collect;
mod command;
mod config_files;
mod dated_index;
mod dated_install;
mod environment;
mod environment_request;
mod gettext_catalogue;
mod importers;
mod install;
mod interpreters;
mod metadata;
mod mine;
mod optional_requirements;
mod pytest_era;
mod requirements;
mod setup_script;
mod specifier;
mod test_imports;
mod testmon_pin;
mod version;
mod version_file;
mod worktree;

pub use assertions::{assertion_statements, dedent};
pub use build_error::{BuildFailure, PythonError};
pub use claims::{ClaimSummary, CommitClaims, check_claim, claims_from_collection};
pub use collect::{
    COLLECT_PLUGIN, CollectError, CollectRequest, CollectedTest, Collection, CollectionProblem,
    collect_tests, is_nose_test_module, python_files_patterns, runs_under_nose, test_modules,
};
pub use command::{PytestLaunch, pytest_config_file, python_path_variable};
pub use dated_index::{
    DatedIndex, IndexProblem, IndexedFile, PageError, ProjectFiles, ReleaseBound, ReleaseCutoff,
};
pub use environment::{
    DISCOVERY_RULES, FailedBuilds, cache_dir, ensure_environment, ensure_environment_in,
    environment_for_interpreter,
};
pub use environment_request::{
    DroppedRequirement, Environment, EnvironmentRequest, Installer, ReleasedBefore,
    declared_requirements,
};
pub use importers::files_reaching;
pub use interpreters::{
    Interpreter, SelectionError, choose_interpreters, choose_interpreters_at,
    installed_interpreters, interpreter_for, query_version, select_interpreters,
};
pub use metadata::{ProjectMetadata, RequiresPython};
pub use mine::{DEFAULT_INTERPRETERS, MineError, MineSettings, MinedCommit, mine_commit};
pub use pytest_era::{
    FLOOR as PYTEST_FLOOR, pytest_for, series_fingerprint as pytest_series_fingerprint,
};
pub use requirements::{
    Requirement, declared_pytest, discover_requirements, pytest_requirement, requirement_name,
};
pub use specifier::{SpecifierParseError, SpecifierSet};
pub use testmon_pin::{
    NoTestmonRelease, TestmonRelease, fingerprint as testmon_fingerprint, lowest_pytest,
    testmon_for,
};
pub use version::{PythonVersion, VersionParseError};
pub use worktree::{
    CheckoutError, checkout_commit, clear as clear_directory, prepare_checkout, register_project,
};
