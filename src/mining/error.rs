//! Why mining a repository failed: every message names the repository, branch, commit or path.

use std::path::PathBuf;

use crate::engine::StepError;

/// A failure while opening, walking or diffing a repository.
#[derive(Debug, thiserror::Error)]
pub enum MiningError {
    /// libgit2 refused an operation on a repository.
    #[error("{action} in repository `{repo}`: {source}")]
    Git {
        action: String,
        repo: String,
        #[source]
        source: git2::Error,
    },
    /// The branch a `repos:` entry names does not exist there.
    #[error(
        "branch `{branch}` not found in repository `{repo}` (looked for refs/heads/{branch} and refs/remotes/origin/{branch}; HEAD is never used){hint}"
    )]
    BranchNotFound {
        repo: String,
        branch: String,
        /// What to do: the branches there are (empty when none could be listed).
        hint: String,
    },
    /// A `url:` repository could not be fetched (the URL does not answer, or is not a repository).
    #[error(
        "repository `{repo}`: cannot fetch branch `{branch}` from {url}: {message} (check the URL and the network; a `path:` entry reads a local clone instead)"
    )]
    Unreachable {
        repo: String,
        url: String,
        branch: String,
        message: String,
    },
    /// A directory for a clone could not be created.
    #[error("create {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A test-file pattern is not a valid glob.
    #[error("test file pattern `{pattern}` is not a valid glob: {message}")]
    Pattern { pattern: String, message: String },
    /// A repository's mining setting (`RepoSpec::extra`) has the wrong shape.
    #[error("repository `{repo}`: {message}")]
    Setting { repo: String, message: String },
    /// The repository's source is not available (a corpus without the corpus builder).
    #[error("repository `{repo}`: {message}")]
    Source { repo: String, message: String },
    /// A listed commit cannot be mined: not a commit of the repository, not on the branch's
    /// first-parent history, a root, a skipped merge, or listed twice.
    #[error("repository `{repo}`: {message}")]
    Chosen { repo: String, message: String },
    /// A source-only diff would have shown a test file (never written anywhere).
    #[error("{0}")]
    Invariant(String),
}

impl MiningError {
    /// A closure turning a libgit2 error into [`MiningError::Git`], for `map_err`.
    pub(crate) fn git(
        action: impl Into<String>,
        repo: impl Into<String>,
    ) -> impl FnOnce(git2::Error) -> MiningError {
        let action = action.into();
        let repo = repo.into();
        move |source| MiningError::Git {
            action,
            repo,
            source,
        }
    }
}

impl From<MiningError> for StepError {
    fn from(error: MiningError) -> Self {
        match error {
            MiningError::Invariant(message) => StepError::Invariant(message),
            MiningError::Pattern { .. }
            | MiningError::Setting { .. }
            | MiningError::Chosen { .. }
            | MiningError::Unreachable { .. }
            | MiningError::BranchNotFound { .. } => StepError::InputCause(Box::new(error)),
            other => StepError::Cause(Box::new(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_diff_invariant_stays_an_invariant_for_the_engine() {
        let error = StepError::from(MiningError::Invariant("test file `tests/a.py`".into()));
        assert!(matches!(error, StepError::Invariant(_)), "{error:?}");
    }

    #[test]
    fn a_missing_branch_is_the_users_error() {
        let error = StepError::from(MiningError::BranchNotFound {
            repo: "r".into(),
            branch: "release".into(),
            hint: String::new(),
        });
        assert!(matches!(error, StepError::InputCause(_)), "{error:?}");
        assert_eq!(error.class(), crate::engine::ErrorClass::Input);
    }

    #[test]
    fn a_git_failure_keeps_libgit2s_error_as_its_cause() {
        let error = StepError::from(MiningError::Git {
            action: "open".into(),
            repo: "r".into(),
            source: git2::Error::from_str("not a repository"),
        });
        assert_eq!(error.class(), crate::engine::ErrorClass::Failure);
        let cause = std::error::Error::source(&error).expect("the error keeps its cause");
        assert!(cause.downcast_ref::<git2::Error>().is_some(), "{cause:?}");
        assert_eq!(error.chain(), "open in repository `r`: not a repository");
    }
}
