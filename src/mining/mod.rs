//! Mining: walking a repository's history, ranking candidate commits, and building the source-only
//! diffs a model is shown.

pub mod assertions;
pub mod chosen;
mod error;
pub mod history;
mod line_diff;
pub mod rank;
pub mod reformat;
pub mod repository;
pub mod source_diff;
pub mod test_files;
mod tree_diff;

pub use error::MiningError;
pub use history::{CommitScore, Merges, score_history};
pub use rank::{RankBy, Selection, rank};
pub use repository::{PreparedRepository, locate, prepare};
pub use source_diff::{DEFAULT_DIFF_LIMIT, SourceDiff, source_diff};
pub use test_files::{DEFAULT_TEST_PATTERNS, FileClass, TestFileRules};
