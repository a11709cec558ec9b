//! Scripted corpora: repository histories written as text and materialized into git.
//!
//! The demo corpus (`corpus/demo/`) is a small Python library with a dozen commits, each one a
//! case the oracle and the arms must handle; its `EXPECTED.md` documents every claim's label.
//! Shipping it as text keeps it reviewable; materializing it with fixed authors and times gives
//! the same commit ids on every machine, so results and cache keys are comparable.

mod date;
pub mod expected;
mod materialize;
mod script;

use std::path::PathBuf;

pub use date::{Timestamp, format_utc, parse_timestamp};
pub use materialize::{BRANCH, MaterializedCommit, MaterializedRepo, materialize, preview};
pub use script::{DEFAULT_AUTHOR, Person, Script, ScriptCommit, load};

/// Why a corpus could not be read or materialized.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    /// A file or directory of the script could not be read.
    #[error("read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A script file is not valid YAML, or has unknown or missing keys.
    #[error("parse {path}:{line}:{column}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// A script file parsed but describes something that cannot be a commit.
    #[error("read the script {path}{}: {message}", line.map(|line| format!(":{line}")).unwrap_or_default())]
    Invalid {
        path: PathBuf,
        line: Option<usize>,
        message: String,
    },
    /// The script has no commit directories.
    #[error("find a commit in {dir}: it holds no commit directories")]
    NoCommits { dir: PathBuf },
    /// Writing the repository failed.
    #[error("write the git repository {path}")]
    Git {
        path: PathBuf,
        #[source]
        source: git2::Error,
    },
    /// A file system operation around the repository failed.
    #[error("write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The destination holds something claimflow did not materialize.
    #[error(
        "materialize a corpus into {path}: it is not empty and not a corpus claimflow materialized"
    )]
    Occupied { path: PathBuf },
}
