//! Why an environment could not be made or used, and what kind of failure that is: shared by
//! the environment cache ([`super::environment`]) and the builder ([`super::install`]).

use std::path::PathBuf;

/// Why an environment could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum PythonError {
    /// A file or directory could not be read or written.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// The interpreter could not create a virtual environment.
    #[error("create a python {interpreter} environment in {path}: {tail}")]
    Create {
        interpreter: String,
        path: PathBuf,
        tail: String,
    },
    /// pip could not install a requirement the environment cannot do without.
    #[error("install `{requirement}` for python {interpreter}: {tail}")]
    Install {
        requirement: String,
        interpreter: String,
        tail: String,
        /// Whether another interpreter, or a later run, may do better.
        failure: BuildFailure,
    },
    /// The same environment failed to build earlier in this process; it is not built again.
    #[error("{reason} (the same environment failed earlier in this run)")]
    FailedBefore {
        reason: String,
        requirement: Option<String>,
        failure: BuildFailure,
    },
    /// A subprocess outlived its deadline.
    #[error("{what} timed out after {seconds}s")]
    Timeout { what: String, seconds: u64 },
    /// No installed interpreter has the version a claim was mined with.
    #[error("find python {version}: it is not installed here")]
    NotInstalled { version: String },
    /// The releases installed could not be kept to those uploaded before a commit (a repository's
    /// `releases: at-commit`): the package index does not say when a file was uploaded, does not
    /// answer, or pip looked beyond it. The build fails rather than install unbounded.
    #[error("install only what was uploaded before {cutoff}: {reason}")]
    ReleaseBound { cutoff: String, reason: String },
    /// A finished environment does not answer as it should (pytest missing, description unreadable).
    #[error("use the environment in {path}: {reason}")]
    Broken { path: PathBuf, reason: String },
}

/// What kind of failure an environment build met, which decides what its caller does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuildFailure {
    /// The machine or the network: the index unreachable, a timeout, a disk error. Retrying later
    /// may work; it is never a result.
    Infrastructure,
    /// A requirement the environment cannot do without has no release on the index at all:
    /// no interpreter can fix that.
    NoSuchRequirement,
    /// Anything else (a build error, a conflict, a venv that would not start): another
    /// interpreter may do better.
    Interpreter,
}

impl PythonError {
    /// What kind of failure this is (see [`BuildFailure`]).
    pub fn failure(&self) -> BuildFailure {
        match self {
            // An index that cannot bound releases is the setup's fault, never a result.
            PythonError::Io { .. }
            | PythonError::Timeout { .. }
            | PythonError::ReleaseBound { .. } => BuildFailure::Infrastructure,
            PythonError::Install { failure, .. } | PythonError::FailedBefore { failure, .. } => {
                *failure
            }
            PythonError::Create { .. }
            | PythonError::NotInstalled { .. }
            | PythonError::Broken { .. } => BuildFailure::Interpreter,
        }
    }

    /// The requirement pip blamed, when it blamed one.
    pub fn requirement(&self) -> Option<&str> {
        match self {
            PythonError::Install { requirement, .. } => Some(requirement),
            PythonError::FailedBefore { requirement, .. } => requirement.as_deref(),
            _ => None,
        }
    }
}

pub(super) fn io_error(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> PythonError {
    let context = context.into();
    move |source| PythonError::Io { context, source }
}
