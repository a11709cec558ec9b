//! A step over commits in which no commit got its environment: that is a broken setup (the package
//! index unreachable, dependencies that no interpreter installs), not a result, and the step fails
//! saying so, with the first commits' reasons.

/// Every commit of the step failed for its environment.
#[derive(Debug, thiserror::Error)]
pub enum BrokenSetup {
    /// No commit of a mining step got an environment to collect its tests in.
    #[error(
        "step `{step}`: no environment could be built for any of its {commits} commits, which is a \
         broken setup rather than a result (is the package index reachable, are the repository's \
         `dependencies:` installable?); first reasons: {}",
        .first_reasons.join(" | ")
    )]
    Mining {
        step: String,
        commits: usize,
        /// `commit: reason` for the first few commits.
        first_reasons: Vec<String>,
    },
    /// No commit of an oracle step got its environment rebuilt.
    #[error(
        "step `{step}`: no environment could be rebuilt for any of its {commits} commits, which is \
         a broken setup rather than a result; first reasons: {}",
        .first_reasons.join(" | ")
    )]
    Oracle {
        step: String,
        commits: usize,
        /// `commit: reason` for the first few commits.
        first_reasons: Vec<String>,
    },
}
